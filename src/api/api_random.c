/* Public random functions (random.h): checks, then ops/random.h.
 * An empty key handle means: the next key of the global sequence.
 * multivariate_normal is built in linalg/mvn.c (it needs an SVD). */
#include <limits.h>

#include "api/api.h"
#include "linalg/linalg.h"
#include "ops/random.h"
#include "ops/shape.h"

#define KEY(k) ((struct lc_node *)(k).ctx)

static int shape_arg(const char *fn, const int *shape, size_t num) {
  if (num > INT_MAX) return lc_error("%s: too many dimensions (%zu)", fn, num);
  if (num && !shape) return lc_error("%s: shape is NULL", fn);
  return 0;
}

#define PROLOGUE(fn)     \
  LC_CHECK_RES(fn, res); \
  if (lc_api_check_stream(fn, s)) return 1

int mlx_random_key(mlx_array *res, uint64_t seed) {
  LC_CHECK_RES("mlx_random_key", res);
  return lc_api_set(res, lc_random_key(seed));
}

int mlx_random_seed(uint64_t seed) {
  lc_random_seed(seed);
  return 0;
}

int mlx_random_bits(mlx_array *res, const int *shape, size_t shape_num, int width,
                    const mlx_array key, const mlx_stream s) {
  PROLOGUE("mlx_random_bits");
  if (shape_arg("mlx_random_bits", shape, shape_num)) return 1;
  return lc_api_set(res, lc_random_bits((int)shape_num, shape, width, KEY(key)));
}

int mlx_random_split_num(mlx_array *res, const mlx_array key, int num, const mlx_stream s) {
  PROLOGUE("mlx_random_split_num");
  LC_CHECK_ARR("mlx_random_split_num", key);
  return lc_api_set(res, lc_random_split(KEY(key), num));
}

int mlx_random_split(mlx_array *res_0, mlx_array *res_1, const mlx_array key, const mlx_stream s) {
  LC_CHECK_RES("mlx_random_split", res_0);
  LC_CHECK_RES("mlx_random_split", res_1);
  LC_CHECK_ARR("mlx_random_split", key);
  if (lc_api_check_stream("mlx_random_split", s)) return 1;
  struct lc_node *keys = lc_random_split(KEY(key), 2);
  if (!keys) return 1;
  int two = 2;
  struct lc_node *r0 = lc_slice_axis(keys, 0, 0, 1), *r1 = lc_slice_axis(keys, 0, 1, 2);
  struct lc_node *k0 = r0 ? lc_reshape(r0, 1, &two) : NULL;
  struct lc_node *k1 = r1 ? lc_reshape(r1, 1, &two) : NULL;
  lc_node_release(keys);
  lc_node_release(r0);
  lc_node_release(r1);
  if (!k0 || !k1) {
    lc_node_release(k0);
    lc_node_release(k1);
    return 1;
  }
  lc_api_set(res_0, k0);
  return lc_api_set(res_1, k1);
}

int mlx_random_uniform(mlx_array *res, const mlx_array low, const mlx_array high, const int *shape,
                       size_t shape_num, mlx_dtype dtype, const mlx_array key, const mlx_stream s) {
  PROLOGUE("mlx_random_uniform");
  LC_CHECK_ARR("mlx_random_uniform", low);
  LC_CHECK_ARR("mlx_random_uniform", high);
  if (shape_arg("mlx_random_uniform", shape, shape_num)) return 1;
  return lc_api_set(res, lc_random_uniform(lc_arr(low), lc_arr(high), (int)shape_num, shape,
                                           dtype, KEY(key)));
}

int mlx_random_normal(mlx_array *res, const int *shape, size_t shape_num, mlx_dtype dtype,
                      float loc, float scale, const mlx_array key, const mlx_stream s) {
  PROLOGUE("mlx_random_normal");
  if (shape_arg("mlx_random_normal", shape, shape_num)) return 1;
  if (!lc_dtype_valid(dtype)) return lc_error("mlx_random_normal: invalid dtype %d", (int)dtype);
  /* as MLX: loc 0 and scale 1 are left out of the computation */
  struct lc_node *l = loc != 0 ? lc_node_new_scalar(dtype, loc) : NULL;
  struct lc_node *sc = scale != 1 ? lc_node_new_scalar(dtype, scale) : NULL;
  if ((loc != 0 && !l) || (scale != 1 && !sc)) {
    lc_node_release(l);
    lc_node_release(sc);
    return 1;
  }
  struct lc_node *r = lc_random_normal((int)shape_num, shape, dtype, l, sc, KEY(key));
  lc_node_release(l);
  lc_node_release(sc);
  return lc_api_set(res, r);
}

int mlx_random_normal_broadcast(mlx_array *res, const int *shape, size_t shape_num,
                                mlx_dtype dtype, const mlx_array loc, const mlx_array scale,
                                const mlx_array key, const mlx_stream s) {
  PROLOGUE("mlx_random_normal_broadcast");
  if (shape_arg("mlx_random_normal_broadcast", shape, shape_num)) return 1;
  return lc_api_set(res, lc_random_normal((int)shape_num, shape, dtype, lc_arr(loc),
                                          lc_arr(scale), KEY(key)));
}

int mlx_random_randint(mlx_array *res, const mlx_array low, const mlx_array high, const int *shape,
                       size_t shape_num, mlx_dtype dtype, const mlx_array key, const mlx_stream s) {
  PROLOGUE("mlx_random_randint");
  LC_CHECK_ARR("mlx_random_randint", low);
  LC_CHECK_ARR("mlx_random_randint", high);
  if (shape_arg("mlx_random_randint", shape, shape_num)) return 1;
  return lc_api_set(res, lc_random_randint(lc_arr(low), lc_arr(high), (int)shape_num, shape,
                                           dtype, KEY(key)));
}

int mlx_random_bernoulli(mlx_array *res, const mlx_array p, const int *shape, size_t shape_num,
                         const mlx_array key, const mlx_stream s) {
  PROLOGUE("mlx_random_bernoulli");
  LC_CHECK_ARR("mlx_random_bernoulli", p);
  if (shape_arg("mlx_random_bernoulli", shape, shape_num)) return 1;
  return lc_api_set(res, lc_random_bernoulli(lc_arr(p), (int)shape_num, shape, KEY(key)));
}

int mlx_random_truncated_normal(mlx_array *res, const mlx_array lower, const mlx_array upper,
                                const int *shape, size_t shape_num, mlx_dtype dtype,
                                const mlx_array key, const mlx_stream s) {
  PROLOGUE("mlx_random_truncated_normal");
  LC_CHECK_ARR("mlx_random_truncated_normal", lower);
  LC_CHECK_ARR("mlx_random_truncated_normal", upper);
  if (shape_arg("mlx_random_truncated_normal", shape, shape_num)) return 1;
  return lc_api_set(res, lc_random_truncated_normal(lc_arr(lower), lc_arr(upper), (int)shape_num,
                                                    shape, dtype, KEY(key)));
}

int mlx_random_gumbel(mlx_array *res, const int *shape, size_t shape_num, mlx_dtype dtype,
                      const mlx_array key, const mlx_stream s) {
  PROLOGUE("mlx_random_gumbel");
  if (shape_arg("mlx_random_gumbel", shape, shape_num)) return 1;
  return lc_api_set(res, lc_random_gumbel((int)shape_num, shape, dtype, KEY(key)));
}

int mlx_random_laplace(mlx_array *res, const int *shape, size_t shape_num, mlx_dtype dtype,
                       float loc, float scale, const mlx_array key, const mlx_stream s) {
  PROLOGUE("mlx_random_laplace");
  if (shape_arg("mlx_random_laplace", shape, shape_num)) return 1;
  return lc_api_set(res, lc_random_laplace((int)shape_num, shape, dtype, loc, scale, KEY(key)));
}

int mlx_random_categorical_shape(mlx_array *res, const mlx_array logits, int axis,
                                 const int *shape, size_t shape_num, const mlx_array key,
                                 const mlx_stream s) {
  PROLOGUE("mlx_random_categorical_shape");
  LC_CHECK_ARR("mlx_random_categorical_shape", logits);
  if (shape_arg("mlx_random_categorical_shape", shape, shape_num)) return 1;
  return lc_api_set(res,
                    lc_random_categorical(lc_arr(logits), axis, (int)shape_num, shape, KEY(key)));
}

int mlx_random_categorical_num_samples(mlx_array *res, const mlx_array logits_, int axis,
                                       int num_samples, const mlx_array key, const mlx_stream s) {
  const char *fn = "mlx_random_categorical_num_samples";
  PROLOGUE(fn);
  LC_CHECK_ARR(fn, logits_);
  struct lc_node *lg = lc_arr(logits_);
  int ax = axis;
  if (lc_axis_check(fn, &ax, lg->ndim)) return 1;
  if (num_samples < 0) return lc_error("%s: num_samples must be non-negative", fn);
  /* MLX: logits gain a trailing axis; samples replace logits' axis */
  int last = -1;
  struct lc_node *ex = lc_expand_dims(lg, 1, &last);
  if (!ex) return 1;
  int nd = ex->ndim - 1, shape[nd > 0 ? nd : 1];
  for (int i = 0, k = 0; i < ex->ndim; i++)
    if (i != ax) shape[k++] = ex->shape[i];
  shape[nd - 1] = num_samples;
  struct lc_node *r = lc_random_categorical(ex, ax, nd, shape, KEY(key));
  lc_node_release(ex);
  return lc_api_set(res, r);
}

int mlx_random_categorical(mlx_array *res, const mlx_array logits, int axis, const mlx_array key,
                           const mlx_stream s) {
  const char *fn = "mlx_random_categorical";
  PROLOGUE(fn);
  LC_CHECK_ARR(fn, logits);
  struct lc_node *lg = lc_arr(logits);
  int ax = axis;
  if (lc_axis_check(fn, &ax, lg->ndim)) return 1;
  int nd = lg->ndim - 1, shape[nd > 0 ? nd : 1];
  for (int i = 0, k = 0; i < lg->ndim; i++)
    if (i != ax) shape[k++] = lg->shape[i];
  return lc_api_set(res, lc_random_categorical(lg, ax, nd, shape, KEY(key)));
}

int mlx_random_permutation_arange(mlx_array *res, int x, const mlx_array key, const mlx_stream s) {
  PROLOGUE("mlx_random_permutation_arange");
  return lc_api_set(res, lc_random_permutation_arange(x, KEY(key)));
}

int mlx_random_permutation(mlx_array *res, const mlx_array x, int axis, const mlx_array key,
                           const mlx_stream s) {
  PROLOGUE("mlx_random_permutation");
  LC_CHECK_ARR("mlx_random_permutation", x);
  return lc_api_set(res, lc_random_permutation(lc_arr(x), axis, KEY(key)));
}

int mlx_random_multivariate_normal(mlx_array *res, const mlx_array mean, const mlx_array cov,
                                   const int *shape, size_t shape_num, mlx_dtype dtype,
                                   const mlx_array key, const mlx_stream s) {
  PROLOGUE("mlx_random_multivariate_normal");
  LC_CHECK_ARR("mlx_random_multivariate_normal", mean);
  LC_CHECK_ARR("mlx_random_multivariate_normal", cov);
  if (shape_arg("mlx_random_multivariate_normal", shape, shape_num)) return 1;
  return lc_api_set(res, lc_linalg_multivariate_normal(lc_arr(mean), lc_arr(cov), (int)shape_num,
                                                       shape, dtype, KEY(key)));
}
