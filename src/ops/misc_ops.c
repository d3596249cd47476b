/* Window functions, median, depends, hadamard_transform (see misc.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ops/binary.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/misc.h"
#include "ops/prim.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/sort.h"
#include "ops/ternary.h"
#include "ops/unary.h"
#include "transforms/transforms.h"

/* ---- windows: computed in double, stored as float32 ---- */

struct lc_node *lc_window(int kind, int M) {
  int len = M < 1 ? 0 : M;
  float *v = malloc(sizeof(float) * (size_t)(len ? len : 1));
  if (!v) {
    lc_error("out of memory");
    return NULL;
  }
  for (int i = 0; i < len; i++) {
    double r = 1.0;
    if (M > 1) {
      double d = (double)(M - 1), x = 2.0 * M_PI * i / d;
      switch (kind) {
      case LC_WIN_BARTLETT: r = 1.0 - fabs(2.0 * i / d - 1.0); break;
      case LC_WIN_HANNING: r = sin(M_PI * i / d) * sin(M_PI * i / d); break;
      case LC_WIN_HAMMING: r = 0.54 - 0.46 * cos(x); break;
      default: r = 0.42 - 0.5 * cos(x) + 0.08 * cos(2.0 * x); break;
      }
    }
    v[i] = (float)r;
  }
  struct lc_node *n = lc_node_new_data(MLX_FLOAT32, 1, &len, v);
  free(v);
  return n;
}

/* ---- median ---- */

struct lc_node *lc_median(struct lc_node *a, const int *axes, int naxes, bool keepdims) {
  if (naxes > a->ndim && naxes > 64) {
    lc_error("mlx_median: %d axes given for an array with %d dimensions", naxes, a->ndim);
    return NULL;
  }
  int nd = a->ndim, cap = (naxes > nd ? naxes : nd) + 1;
  int all[cap], sorted[cap], perm[cap];
  for (int i = 0; i < cap; i++) all[i] = i, sorted[i] = perm[i] = 0;
  if (naxes < 0) {
    axes = all;
    naxes = nd;
  }
  if (lc_reduce_check_axes("mlx_median", nd, axes, naxes, sorted)) return NULL;
  int k = 0;
  for (int i = 0, j = 0; i < nd; i++) {
    if (j < naxes && sorted[j] == i) {
      j++;
      continue;
    }
    perm[k++] = i;
  }
  int keep = k;
  for (int j = 0; j < naxes; j++) perm[k++] = sorted[j];
  struct lc_node *t = lc_transpose(a, perm);
  if (!t) return NULL;
  /* (kept..., flat) with flat = product of the median axes (1 for none) */
  int fshape[nd + 1];
  int64_t flat = 1;
  for (int i = 0; i < keep; i++) fshape[i] = t->shape[i];
  for (int i = keep; i < nd; i++) flat *= t->shape[i];
  if (flat == 0) {
    lc_node_release(t);
    lc_error("mlx_median: cannot take the median along an empty axis");
    return NULL;
  }
  fshape[keep] = (int)flat;
  struct lc_node *f = lc_reshape(t, keep + 1, fshape);
  lc_node_release(t);
  if (!f) return NULL;
  mlx_dtype dt = lc_dtype_is_inexact(a->dtype) ? a->dtype : MLX_FLOAT32;
  struct lc_node *s = lc_sort(f, keep);
  int mp = (int)(flat / 2);
  struct lc_node *hi = s ? lc_slice_axis(s, keep, mp, mp + 1) : NULL;
  struct lc_node *m = hi ? lc_astype(hi, dt) : NULL;
  lc_node_release(hi);
  if (m && flat % 2 == 0) {
    struct lc_node *lo = lc_slice_axis(s, keep, mp - 1, mp);
    struct lc_node *loc = lo ? lc_astype(lo, dt) : NULL;
    lc_node_release(lo);
    struct lc_node *sum = lc_take2(lc_add, m, loc);
    m = sum ? lc_take2(lc_multiply, sum, lc_node_new_scalar(dt, 0.5)) : NULL;
  }
  lc_node_release(s);
  if (m && lc_dtype_is_inexact(a->dtype)) {
    struct lc_node *nan = lc_isnan(f);
    int ax = keep;
    struct lc_node *any = nan ? lc_any(nan, &ax, 1, true) : NULL;
    lc_node_release(nan);
    struct lc_node *q = any ? lc_node_new_scalar(dt, NAN) : NULL;
    struct lc_node *w = q ? lc_where(any, q, m) : NULL;
    lc_node_release(any);
    lc_node_release(q);
    lc_node_release(m);
    m = w;
  }
  lc_node_release(f);
  if (!m) return NULL;
  int last = keep;
  struct lc_node *r = lc_squeeze(m, 1, &last);
  lc_node_release(m);
  if (r && keepdims && naxes) {
    struct lc_node *e = lc_expand_dims(r, naxes, sorted);
    lc_node_release(r);
    r = e;
  }
  return r;
}

/* ---- depends: a view of input 0; inputs 1.. are dependencies ---- */

static int depends_eval(struct lc_node *n) {
  const struct lc_node *x = n->in[0];
  lc_node_set_view(n, x, x->strides, x->offset);
  return 0;
}

/* The value is input 0's: its cotangent / tangent passes through, the
 * dependencies get none (MLX's Depends::vjp gives them zeros). */
static int depends_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                       int nargs, struct lc_node **out) {
  (void)n;
  for (int j = 0; j < nargs; j++) out[j] = argnums[j] == 0 ? lc_node_retain(cot[0]) : NULL;
  return 0;
}

static int depends_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  (void)n;
  out[0] = lc_node_retain(tan[0]);
  return 0;
}

/* A depends node over the batched inputs; the batch axis of input 0 (or
 * none) is the output's. */
static int depends_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                        struct lc_node **out, int *out_ax) {
  *out_ax = ax[0];
  return lc_depends(1, in, n->nin - 1, in + 1, out);
}

const struct lc_prim lc_prim_depends = {.name = "depends",
                                        .flags = LC_PF_VIEW | LC_PF_NOCSE,
                                        .eval_cpu = depends_eval,
                                        .vjp = depends_vjp,
                                        .jvp = depends_jvp,
                                        .vmap = depends_vmap};

int lc_depends(int nin, struct lc_node *const *in, int ndep, struct lc_node *const *dep,
               struct lc_node **out) {
  struct lc_node **ins = malloc(sizeof *ins * (size_t)(ndep + 1));
  if (!ins) return lc_error("out of memory");
  for (int j = 0; j < ndep; j++) ins[j + 1] = dep[j];
  for (int i = 0; i < nin; i++) {
    ins[0] = in[i];
    out[i] = lc_node_new_op(LC_OP_DEPENDS, in[i]->dtype, in[i]->ndim, in[i]->shape, ndep + 1, ins,
                            NULL, 0);
    if (!out[i]) {
      for (int j = 0; j < i; j++) lc_node_release(out[j]);
      free(ins);
      return 1;
    }
  }
  free(ins);
  return 0;
}

/* ---- hadamard ---- */

#define FWHT(T, NAME)                                                          \
  static void NAME(T *v, int64_t rows, int64_t len, double scale) {           \
    for (int64_t r = 0; r < rows; r++) {                                       \
      T *x = v + r * len;                                                      \
      for (int64_t h = 1; h < len; h *= 2)                                     \
        for (int64_t i = 0; i < len; i += 2 * h)                               \
          for (int64_t j = i; j < i + h; j++) {                                \
            T a = x[j], b = x[j + h];                                          \
            x[j] = a + b;                                                      \
            x[j + h] = a - b;                                                  \
          }                                                                    \
      for (int64_t i = 0; i < len; i++) x[i] = (T)(x[i] * scale);              \
    }                                                                          \
  }
FWHT(float, fwht_f32)
FWHT(double, fwht_f64)

static int hadamard_eval(struct lc_node *n) {
  const float *scale = n->params;
  if (lc_node_alloc_data(n)) return 1;
  lc_node_copy_out(n->in[0], lc_node_data(n));
  int64_t len = n->ndim ? n->shape[n->ndim - 1] : 1, rows = len ? n->size / len : 0;
  if (n->dtype == MLX_FLOAT64)
    fwht_f64(lc_node_data(n), rows, len, *scale);
  else
    fwht_f32(lc_node_data(n), rows, len, *scale);
  return 0;
}

/* The transform of x (same dtype and shape as n's input), n's scale. */
static struct lc_node *hadamard_like(struct lc_node *n, struct lc_node *x) {
  return lc_node_new_op(LC_OP_HADAMARD, x->dtype, x->ndim, x->shape, 1, &x, n->params,
                        n->params_size);
}

/* Linear with a symmetric matrix (scale * Sylvester H): the vjp and the
 * jvp are the same transform of the cotangent / tangent. */
static int hadamard_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                        int nargs, struct lc_node **out) {
  (void)argnums, (void)nargs;
  return !(out[0] = hadamard_like(n, cot[0]));
}

static int hadamard_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  return !(out[0] = hadamard_like(n, tan[0]));
}

/* Rows along the last axis: the batch axis stays where it is unless it is
 * the last one. */
static int hadamard_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                         struct lc_node **out, int *out_ax) {
  bool last = ax[0] == in[0]->ndim - 1;
  struct lc_node *x = last ? lc_moveaxis(in[0], ax[0], 0) : lc_node_retain(in[0]);
  if (!x) return 1;
  out[0] = hadamard_like(n, x);
  lc_node_release(x);
  *out_ax = last ? 0 : ax[0];
  return !out[0];
}

const struct lc_prim lc_prim_hadamard = {.name = "hadamard",
                                         .eval_cpu = hadamard_eval,
                                         .eval_cuda = LC_CUDA(lc_cuda_eval_hadamard),
                                         .vjp = hadamard_vjp,
                                         .jvp = hadamard_jvp,
                                         .vmap = hadamard_vmap};

struct lc_node *lc_hadamard(struct lc_node *a, bool has_scale, float scale) {
  if (a->size == 0) {
    lc_error("mlx_hadamard_transform: empty arrays are not supported");
    return NULL;
  }
  if (lc_dtype_is_complex(a->dtype)) {
    lc_error("mlx_hadamard_transform: complex64 is not supported");
    return NULL;
  }
  int len = a->ndim ? a->shape[a->ndim - 1] : 1;
  if (len & (len - 1)) {
    lc_error("mlx_hadamard_transform: the last dimension (%d) must be a power of two (sizes "
             "m * 2^k with m in 12, 20, 28 are not supported)", len);
    return NULL;
  }
  float sc = has_scale ? scale : (float)(1.0 / sqrt((double)len));
  mlx_dtype dt = lc_dtype_is_float(a->dtype) ? a->dtype : MLX_FLOAT32;
  mlx_dtype ct = dt == MLX_FLOAT64 ? MLX_FLOAT64 : MLX_FLOAT32;
  struct lc_node *x = lc_astype(a, ct);
  if (!x) return NULL;
  struct lc_node *r = lc_node_new_op(LC_OP_HADAMARD, ct, x->ndim, x->shape, 1, &x, &sc, sizeof sc);
  lc_node_release(x);
  if (r && ct != dt) {
    struct lc_node *c = lc_astype(r, dt);
    lc_node_release(r);
    r = c;
  }
  return r;
}
