/* Creation primitives and builders: full (broadcast scalar), arange,
 * linspace, eye/tri, tril/triu. */
#include "ops/creation.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ops/dtype_dispatch.h"
#include "ops/elementwise.h"
#include "ops/prim.h"
#include "transforms/transforms.h"

static int check_dtype(const char *fn, mlx_dtype t) {
  if (!lc_dtype_valid(t)) return lc_error("%s: invalid dtype %d", fn, (int)t);
  return 0;
}

/* ---- full ---- */

struct lc_node *lc_full(int ndim, const int *shape, mlx_dtype t, double value) {
  if (check_dtype("full", t) || lc_shape_check("full", ndim, shape)) return NULL;
  struct lc_node *s = lc_node_new_scalar(t, value);
  if (!s) return NULL;
  struct lc_node *r = lc_broadcast_to(s, ndim, shape);
  lc_node_release(s);
  return r;
}

struct lc_node *lc_full_array(int ndim, const int *shape, struct lc_node *vals, mlx_dtype t) {
  if (check_dtype("full", t) || lc_shape_check("full", ndim, shape)) return NULL;
  struct lc_node *c = lc_astype(vals, t);
  if (!c) return NULL;
  struct lc_node *r = lc_broadcast_to(c, ndim, shape);
  lc_node_release(c);
  return r;
}

struct lc_node *lc_zeros(int ndim, const int *shape, mlx_dtype t) {
  return lc_full(ndim, shape, t, 0.0);
}

struct lc_node *lc_ones(int ndim, const int *shape, mlx_dtype t) {
  return lc_full(ndim, shape, t, 1.0);
}

struct lc_node *lc_full_like(const char *fn, struct lc_node *a, struct lc_node *vals, mlx_dtype t) {
  if (check_dtype(fn, t)) return NULL;
  struct lc_node *c = lc_astype(vals, t);
  struct lc_node *r = c ? lc_broadcast_like(fn, c, a) : NULL;
  lc_node_release(c);
  return r;
}

static struct lc_node *scalar_like(struct lc_node *a, double value) {
  struct lc_node *s = lc_node_new_scalar(a->dtype, value);
  struct lc_node *r = s ? lc_broadcast_like("full_like", s, a) : NULL;
  lc_node_release(s);
  return r;
}

struct lc_node *lc_zeros_like(struct lc_node *a) { return scalar_like(a, 0.0); }

struct lc_node *lc_ones_like(struct lc_node *a) { return scalar_like(a, 1.0); }

/* ---- arange ---- */

struct arange_params {
  double start, step;
};

/* double to a 64-bit pattern whose low bits are C++'s conversion to a
 * narrower integer type (values in range convert exactly). */
static uint64_t dbl_bits(double v) {
  if (isnan(v)) return 0;
  if (v >= 9223372036854775808.0) return v >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)v;
  if (v < -9223372036854775808.0) return (uint64_t)INT64_MIN;
  return (uint64_t)(int64_t)v;
}

#define ARANGE_INT(DT, S, C)                                                     \
  static void arange_##DT(void *out, int64_t n, double start, double step) {    \
    S *o = out;                                                                  \
    S s0 = (S)dbl_bits(start), s1 = (S)dbl_bits(start + step);                 \
    uint64_t a = (uint64_t)s0, d = (uint64_t)s1 - a;                            \
    for (int64_t i = 0; i < n; i++) o[i] = (S)(a + (uint64_t)i * d);            \
  }
LC_FOR_INT_DTYPES(ARANGE_INT)

#define ARANGE_FLOAT(NAME, S, C, ROUND)                                          \
  static void arange_##NAME(void *out, int64_t n, double start, double step) {  \
    S *o = out;                                                                  \
    C cur = ROUND((C)start), d = ROUND(ROUND((C)(start + step)) - cur);         \
    for (int64_t i = 0; i < n; i++) {                                            \
      o[i] = (S)cur;                                                             \
      cur = ROUND(cur + d);                                                      \
    }                                                                            \
  }
#define NOROUND(x) (x)
#define F16ROUND(x) lc_f16_to_f32(lc_f32_to_f16(x))
#define BF16ROUND(x) lc_bf16_to_f32(lc_f32_to_bf16(x))
ARANGE_FLOAT(f32, float, float, NOROUND)
ARANGE_FLOAT(f64, double, double, NOROUND)
ARANGE_FLOAT(c64, lc_c64, float, NOROUND)
ARANGE_FLOAT(f16_tmp, float, float, F16ROUND)
ARANGE_FLOAT(bf16_tmp, float, float, BF16ROUND)

static int arange_eval(struct lc_node *n) {
  const struct arange_params *p = n->params;
  if (lc_node_alloc_data(n)) return 1;
  void *o = n->buf->data;
  int64_t len = n->size;
  switch (n->dtype) {
#define CASE(DT, S, C) \
  case DT: arange_##DT(o, len, p->start, p->step); break;
    LC_FOR_INT_DTYPES(CASE)
#undef CASE
  case MLX_FLOAT32: arange_f32(o, len, p->start, p->step); break;
  case MLX_FLOAT64: arange_f64(o, len, p->start, p->step); break;
  case MLX_COMPLEX64: arange_c64(o, len, p->start, p->step); break;
  case MLX_FLOAT16:
  case MLX_BFLOAT16: {
    /* values are exactly representable after rounding: compute, then narrow */
    float *tmp = malloc(sizeof(float) * (size_t)(len > 0 ? len : 1));
    if (!tmp) return lc_error("arange: out of memory");
    if (n->dtype == MLX_FLOAT16)
      arange_f16_tmp(tmp, len, p->start, p->step);
    else
      arange_bf16_tmp(tmp, len, p->start, p->step);
    lc_convert(len, o, n->dtype, tmp, 1, MLX_FLOAT32);
    free(tmp);
    break;
  }
  default: return lc_error("arange: %s is not supported", lc_dtype_name(n->dtype));
  }
  return 0;
}

const struct lc_prim lc_prim_arange = {.name = "arange",
                                      .eval_cpu = arange_eval,
                                      .eval_cuda = LC_CUDA(lc_cuda_eval_arange)};

struct lc_node *lc_arange(double start, double stop, double step, mlx_dtype t) {
  if (check_dtype("arange", t)) return NULL;
  if (t == MLX_BOOL) {
    lc_error("arange: bool is not supported for arange");
    return NULL;
  }
  if (isnan(start) || isnan(stop) || isnan(step) || isinf(start) || isinf(stop)) {
    lc_error("arange: cannot compute length (start %g, stop %g, step %g)", start, stop, step);
    return NULL;
  }
  if (step == 0) {
    lc_error("arange: step must be nonzero");
    return NULL;
  }
  int len;
  if (isinf(step))
    len = (step > 0 && start < stop) || (step < 0 && start > stop) ? 1 : 0;
  else {
    double real = ceil((stop - start) / step);
    if (real > INT_MAX) {
      lc_error("arange: maximum size exceeded (%g elements)", real);
      return NULL;
    }
    len = real > 0 ? (int)real : 0;
  }
  struct arange_params p = {start, isinf(step) ? 0.0 : step};
  return lc_node_new_op(LC_OP_ARANGE, t, 1, &len, 0, NULL, &p, sizeof p);
}

/* ---- linspace ---- */

struct linspace_params {
  double start, stop;
  int den;
};

static int linspace_eval(struct lc_node *n) {
  const struct linspace_params *p = n->params;
  if (lc_node_alloc_data(n)) return 1;
  int64_t len = n->size;
  bool f64 = n->dtype == MLX_FLOAT64;
  void *tmp = f64 ? n->buf->data : malloc(sizeof(float) * (size_t)(len > 0 ? len : 1));
  if (!tmp) return lc_error("linspace: out of memory");
  if (len == 1) {
    lc_dtype_store(n->buf->data, n->dtype, p->start);
    if (!f64) free(tmp);
    return 0;
  }
  if (f64) {
    double *o = tmp, a = p->start, b = p->stop, den = p->den;
    for (int64_t i = 0; i < len; i++) {
      double t = (double)i / den;
      o[i] = (1.0 - t) * a + t * b;
    }
  } else {
    float *o = tmp, a = (float)p->start, b = (float)p->stop, den = (float)p->den;
    for (int64_t i = 0; i < len; i++) {
      float t = (float)i / den;
      float tb = 1.0f - t, x = tb * a, y = t * b;
      o[i] = x + y;
    }
    lc_convert(len, n->buf->data, n->dtype, tmp, 1, MLX_FLOAT32);
    free(tmp);
  }
  return 0;
}

const struct lc_prim lc_prim_linspace = {.name = "linspace",
                                         .eval_cpu = linspace_eval,
                                         .eval_cuda = LC_CUDA(lc_cuda_eval_linspace)};

struct lc_node *lc_linspace(double start, double stop, int num, mlx_dtype t) {
  if (check_dtype("linspace", t)) return NULL;
  if (num < 0) {
    lc_error("linspace: number of samples, %d, must be non-negative", num);
    return NULL;
  }
  struct linspace_params p = {start, stop, num - 1};
  return lc_node_new_op(LC_OP_LINSPACE, t, 1, &num, 0, NULL, &p, sizeof p);
}

/* ---- eye, tri ---- */

struct tri_params {
  int k;
  int eye; /* 1: only the diagonal */
};

static int tri_eval(struct lc_node *n) {
  const struct tri_params *p = n->params;
  if (lc_node_alloc_data(n)) return 1;
  size_t isz = lc_dtype_size(n->dtype);
  char one[16];
  lc_dtype_store(one, n->dtype, 1.0);
  char *o = n->buf->data;
  int64_t rows = n->shape[0], cols = n->shape[1];
  memset(o, 0, (size_t)n->size * isz);
  for (int64_t i = 0; i < rows; i++) {
    int64_t last = i + p->k; /* columns j <= last are set (tri) */
    if (last < 0) continue;
    int64_t lo = p->eye ? last : 0, hi = last < cols - 1 ? last : cols - 1;
    for (int64_t j = lo; j <= hi; j++) memcpy(o + (i * cols + j) * (int64_t)isz, one, isz);
  }
  return 0;
}

const struct lc_prim lc_prim_tri = {.name = "tri",
                                    .eval_cpu = tri_eval,
                                    .eval_cuda = LC_CUDA(lc_cuda_eval_tri)};

static struct lc_node *tri_new(const char *fn, int n, int m, int k, mlx_dtype t, int eye) {
  if (check_dtype(fn, t)) return NULL;
  if (n < 0 || m < 0) {
    lc_error("%s: N and M must be non-negative (got %d and %d)", fn, n, m);
    return NULL;
  }
  int shape[2] = {n, m};
  struct tri_params p = {k, eye};
  return lc_node_new_op(LC_OP_TRI, t, 2, shape, 0, NULL, &p, sizeof p);
}

struct lc_node *lc_eye(int n, int m, int k, mlx_dtype t) { return tri_new("eye", n, m, k, t, 1); }

struct lc_node *lc_tri(int n, int m, int k, mlx_dtype t) { return tri_new("tri", n, m, k, t, 0); }

/* ---- tril, triu ---- */

struct tril_params {
  int k;
  int upper;
};

static int tril_eval(struct lc_node *n) {
  const struct tril_params *p = n->params;
  if (lc_node_alloc_data(n)) return 1;
  lc_node_copy_out(n->in[0], n->buf->data);
  size_t isz = lc_dtype_size(n->dtype);
  int64_t rows = n->shape[n->ndim - 2], cols = n->shape[n->ndim - 1];
  int64_t mats = rows > 0 && cols > 0 ? n->size / (rows * cols) : 0;
  char *o = n->buf->data;
  for (int64_t b = 0; b < mats; b++)
    for (int64_t i = 0; i < rows; i++) {
      char *row = o + ((b * rows + i) * cols) * (int64_t)isz;
      int64_t edge = i + p->k; /* tril keeps j <= edge; triu keeps j >= edge */
      int64_t lo = p->upper ? 0 : edge + 1, hi = p->upper ? edge : cols;
      if (lo < 0) lo = 0;
      if (hi > cols) hi = cols;
      if (hi > lo) memset(row + lo * (int64_t)isz, 0, (size_t)(hi - lo) * isz);
    }
  return 0;
}

/* Linear masking: the cotangent / tangent masked alike. */
static int tril_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                    struct lc_node **out) {
  (void)argnums, (void)nargs;
  return !(out[0] = lc_rule_clone(n, cot));
}

static int tril_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  return !(out[0] = lc_rule_clone(n, tan));
}

/* The batch goes first, out of the two matrix axes. */
static int tril_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                     struct lc_node **out, int *out_ax) {
  const struct tril_params *p = n->params;
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  if (!x) return 1;
  out[0] = lc_tril(x, p->k, p->upper);
  lc_node_release(x);
  *out_ax = 0;
  return !out[0];
}

const struct lc_prim lc_prim_tril = {.name = "tril",
                                     .eval_cpu = tril_eval,
                                     .eval_cuda = LC_CUDA(lc_cuda_eval_tril),
                                     .vjp = tril_vjp,
                                     .jvp = tril_jvp,
                                     .vmap = tril_vmap};

struct lc_node *lc_tril(struct lc_node *x, int k, bool upper) {
  if (x->ndim < 2) {
    lc_error("%s: array must be at least 2-D (got %d dimensions)", upper ? "triu" : "tril",
             x->ndim);
    return NULL;
  }
  struct tril_params p = {k, upper};
  return lc_node_new_op(LC_OP_TRIL, x->dtype, x->ndim, x->shape, 1, &x, &p, sizeof p);
}
