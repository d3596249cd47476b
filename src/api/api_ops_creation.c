/* Public creation ops: argument checks, then the builders in ops/creation.h. */
#include <limits.h>

#include "api/api.h"
#include "ops/creation.h"
#include "ops/elementwise.h"

static int check_shape_num(const char *fn, const int *shape, size_t shape_num) {
  if (shape_num > INT_MAX) return lc_error("%s: too many dimensions (%zu)", fn, shape_num);
  if (shape_num && !shape) return lc_error("%s: shape is NULL", fn);
  return 0;
}

#define PROLOGUE(fn)                                 \
  LC_CHECK_RES(fn, res);                             \
  if (lc_api_check_stream(fn, s)) return 1

int mlx_zeros(mlx_array *res, const int *shape, size_t shape_num, mlx_dtype dtype,
              const mlx_stream s) {
  PROLOGUE("mlx_zeros");
  if (check_shape_num("mlx_zeros", shape, shape_num)) return 1;
  return lc_api_set(res, lc_zeros((int)shape_num, shape, dtype));
}

int mlx_ones(mlx_array *res, const int *shape, size_t shape_num, mlx_dtype dtype,
             const mlx_stream s) {
  PROLOGUE("mlx_ones");
  if (check_shape_num("mlx_ones", shape, shape_num)) return 1;
  return lc_api_set(res, lc_ones((int)shape_num, shape, dtype));
}

int mlx_full(mlx_array *res, const int *shape, size_t shape_num, const mlx_array vals,
             mlx_dtype dtype, const mlx_stream s) {
  PROLOGUE("mlx_full");
  LC_CHECK_ARR("mlx_full", vals);
  if (check_shape_num("mlx_full", shape, shape_num)) return 1;
  return lc_api_set(res, lc_full_array((int)shape_num, shape, lc_arr(vals), dtype));
}

int mlx_zeros_like(mlx_array *res, const mlx_array a, const mlx_stream s) {
  PROLOGUE("mlx_zeros_like");
  LC_CHECK_ARR("mlx_zeros_like", a);
  return lc_api_set(res, lc_zeros_like(lc_arr(a)));
}

int mlx_ones_like(mlx_array *res, const mlx_array a, const mlx_stream s) {
  PROLOGUE("mlx_ones_like");
  LC_CHECK_ARR("mlx_ones_like", a);
  return lc_api_set(res, lc_ones_like(lc_arr(a)));
}

/* MLX: the result has the broadcast shape of a and vals. */
int mlx_full_like(mlx_array *res, const mlx_array a, const mlx_array vals, mlx_dtype dtype,
                  const mlx_stream s) {
  PROLOGUE("mlx_full_like");
  LC_CHECK_ARR("mlx_full_like", a);
  LC_CHECK_ARR("mlx_full_like", vals);
  return lc_api_set(res, lc_full_like("mlx_full_like", lc_arr(a), lc_arr(vals), dtype));
}

int mlx_arange(mlx_array *res, double start, double stop, double step, mlx_dtype dtype,
               const mlx_stream s) {
  PROLOGUE("mlx_arange");
  return lc_api_set(res, lc_arange(start, stop, step, dtype));
}

int mlx_linspace(mlx_array *res, double start, double stop, int num, mlx_dtype dtype,
                 const mlx_stream s) {
  PROLOGUE("mlx_linspace");
  return lc_api_set(res, lc_linspace(start, stop, num, dtype));
}

int mlx_eye(mlx_array *res, int n, int m, int k, mlx_dtype dtype, const mlx_stream s) {
  PROLOGUE("mlx_eye");
  return lc_api_set(res, lc_eye(n, m, k, dtype));
}

int mlx_identity(mlx_array *res, int n, mlx_dtype dtype, const mlx_stream s) {
  PROLOGUE("mlx_identity");
  return lc_api_set(res, lc_eye(n, n, 0, dtype));
}

int mlx_tri(mlx_array *res, int n, int m, int k, mlx_dtype type, const mlx_stream s) {
  PROLOGUE("mlx_tri");
  return lc_api_set(res, lc_tri(n, m, k, type));
}

int mlx_tril(mlx_array *res, const mlx_array x, int k, const mlx_stream s) {
  PROLOGUE("mlx_tril");
  LC_CHECK_ARR("mlx_tril", x);
  return lc_api_set(res, lc_tril(lc_arr(x), k, false));
}

int mlx_triu(mlx_array *res, const mlx_array x, int k, const mlx_stream s) {
  PROLOGUE("mlx_triu");
  LC_CHECK_ARR("mlx_triu", x);
  return lc_api_set(res, lc_tril(lc_arr(x), k, true));
}
