/* The FFT primitive's row, its builders and its transformation rules
 * (see fft.h; evaluation is in fft_exec.c). */
#include "fft/fft.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "fft/fft_internal.h"
#include "ops/binary.h"
#include "ops/dtype_dispatch.h"
#include "ops/elementwise.h"
#include "ops/prim.h"
#include "ops/shape.h"

static int fft_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                   struct lc_node **out);
static int fft_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out);
static int fft_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                    struct lc_node **out, int *out_ax);

static int fft_describe(const struct lc_node *n, char *buf, size_t len) {
  const int *p = n->params;
  int k = snprintf(buf, len, "%s%s axes=[", p[FP_REAL] ? "r" : "", p[FP_INVERSE] ? "ifft" : "fft");
  for (int i = 0; i < p[FP_NAXES] && k >= 0 && (size_t)k < len; i++)
    k += snprintf(buf + k, len - (size_t)k, i ? ",%d" : "%d", p[FP_AXES + i]);
  if (k >= 0 && (size_t)k < len) k += snprintf(buf + k, len - (size_t)k, "]");
  return k;
}

/* The output extent along the last transformed axis, from the input's. */
static int last_extent(const int *p, int in_extent) {
  if (!p[FP_REAL]) return in_extent;
  return p[FP_INVERSE] ? p[FP_NOUT] : in_extent / 2 + 1;
}

static int fft_output_shape(const void *params, int nin, struct lc_node *const *in, int ndim,
                            int *shape) {
  const int *p = params;
  if (nin != 1 || in[0]->ndim != ndim) return 1;
  memcpy(shape, in[0]->shape, sizeof(int) * (size_t)ndim);
  int last = p[FP_AXES + p[FP_NAXES] - 1];
  shape[last] = last_extent(p, shape[last]);
  return 0;
}

const struct lc_prim lc_prim_fft = {.name = "fft",
                                    .eval_cpu = lc_fft_eval,
                                    .eval_cuda = LC_CUDA(lc_cuda_eval_fft),
                                    .describe = fft_describe,
                                    .vjp = fft_vjp,
                                    .jvp = fft_jvp,
                                    .vmap = fft_vmap,
                                    .output_shape = fft_output_shape};

/* ---- builders ---- */

/* The FFT node over x (already of the input dtype and cut or padded) with
 * params p; the output shape follows from x's. */
static struct lc_node *fft_node(struct lc_node *x, const int *p) {
  int shape[x->ndim];
  fft_output_shape(p, 1, &x, x->ndim, shape);
  mlx_dtype t = p[FP_REAL] && p[FP_INVERSE] ? MLX_FLOAT32 : MLX_COMPLEX64;
  size_t bytes = sizeof(int) * (size_t)(FP_AXES + p[FP_NAXES]);
  return lc_node_new_op(LC_OP_FFT, t, x->ndim, shape, 1, &x, p, bytes);
}

/* Multiplies x (consumed) by v in x's dtype; v == 1 returns x. */
static struct lc_node *scaled(struct lc_node *x, double v) {
  if (!x || v == 1.0) return x;
  struct lc_node *s = lc_node_new_scalar(x->dtype, v);
  struct lc_node *r = s ? lc_multiply(x, s) : NULL;
  lc_node_release(s);
  lc_node_release(x);
  return r;
}

/* Normalised, in-range, distinct axes into out. 0, or 1 after reporting. */
static int check_axes(const char *fn, int ndim, int naxes, const int *axes, int *out) {
  for (int i = 0; i < naxes; i++) {
    int ax = axes[i] < 0 ? axes[i] + ndim : axes[i];
    if (ax < 0 || ax >= ndim)
      return lc_error("%s: axis %d is out of bounds for an array with %d dimensions", fn,
                      axes[i], ndim);
    for (int j = 0; j < i; j++)
      if (out[j] == ax) return lc_error("%s: axis %d is given twice", fn, axes[i]);
    out[i] = ax;
  }
  return 0;
}

/* a cut (to the first sz[d] elements) or zero-padded to shape sz. The
 * axes are padded one at a time: lc_pad over two leading axes at once
 * overflows a sentinel sum in ops/shape_remap.c (reported). */
static struct lc_node *fit_to(struct lc_node *a, const int *sz) {
  int nd = a->ndim, start[nd], stop[nd];
  bool cut = false;
  for (int d = 0; d < nd; d++) {
    start[d] = 0;
    stop[d] = sz[d] < a->shape[d] ? sz[d] : a->shape[d];
    cut |= sz[d] < a->shape[d];
  }
  struct lc_node *x = cut ? lc_slice(a, start, stop, NULL) : lc_node_retain(a);
  for (int d = 0; d < nd && x; d++) {
    if (sz[d] <= x->shape[d]) continue;
    int lo = 0, hi = sz[d] - x->shape[d];
    struct lc_node *p = lc_pad(x, 1, &d, &lo, &hi, NULL, LC_PAD_CONSTANT);
    lc_node_release(x);
    x = p;
  }
  return x;
}

double lc_fft_norm_factor(double count, bool inverse, mlx_fft_norm norm) {
  if (norm == MLX_FFT_NORM_ORTHO) return inverse ? sqrt(count) : 1.0 / sqrt(count);
  if (norm == MLX_FFT_NORM_FORWARD) return inverse ? count : 1.0 / count;
  return 1.0;
}

double lc_fft_count(const struct lc_node *n) {
  const int *p = n->params;
  const struct lc_node *src = p[FP_REAL] && !p[FP_INVERSE] ? n->in[0] : n;
  double c = 1;
  for (int i = 0; i < p[FP_NAXES]; i++) c *= src->shape[p[FP_AXES + i]];
  return c;
}

struct lc_node *lc_fftn(const char *fn, struct lc_node *a, int naxes, const int *n,
                        const int *axes, bool real, bool inverse, mlx_fft_norm norm) {
  if (a->ndim < 1) {
    lc_error("%s: the array needs at least one dimension", fn);
    return NULL;
  }
  if (norm != MLX_FFT_NORM_BACKWARD && norm != MLX_FFT_NORM_ORTHO &&
      norm != MLX_FFT_NORM_FORWARD) {
    lc_error("%s: invalid norm %d", fn, (int)norm);
    return NULL;
  }
  if (naxes == 0) return lc_node_retain(a);
  int nd = a->ndim, p[FP_AXES + naxes], sz[nd];
  if (check_axes(fn, nd, naxes, axes, p + FP_AXES)) return NULL;
  const int *ax = p + FP_AXES;
  memcpy(sz, a->shape, sizeof sz);
  for (int i = 0; i < naxes; i++) {
    int e = a->shape[ax[i]];
    int len = n ? n[i] : real && inverse && i == naxes - 1 ? 2 * (e - 1) : e;
    if (len <= 0) {
      lc_error("%s: invalid transform size %d along axis %d", fn, len, ax[i]);
      return NULL;
    }
    sz[ax[i]] = len;
  }
  int last = ax[naxes - 1];
  p[FP_INVERSE] = inverse;
  p[FP_REAL] = real;
  p[FP_NORM] = (int)norm;
  p[FP_NOUT] = real && inverse ? sz[last] : 0;
  p[FP_NAXES] = naxes;
  if (real && inverse) sz[last] = sz[last] / 2 + 1;
  struct lc_node *x = fit_to(a, sz);
  mlx_dtype in_t = real && !inverse ? MLX_FLOAT32 : MLX_COMPLEX64;
  struct lc_node *xc = x ? lc_astype(x, in_t) : NULL;
  struct lc_node *r = xc ? fft_node(xc, p) : NULL;
  lc_node_release(x);
  lc_node_release(xc);
  return r;
}

struct lc_node *lc_fftfreq(const char *fn, int n, double d, bool real) {
  if (n <= 0) {
    lc_error("%s: n must be greater than 0 (got %d)", fn, n);
    return NULL;
  }
  if (d == 0.0) {
    lc_error("%s: d must be non-zero", fn);
    return NULL;
  }
  int len = real ? n / 2 + 1 : n;
  float *v = malloc(sizeof(float) * (size_t)len);
  if (!v) {
    lc_error("%s: out of memory", fn);
    return NULL;
  }
  float scale = (float)(1.0 / ((double)n * d));
  for (int i = 0; i < len; i++) v[i] = (float)(i < (n + 1) / 2 || real ? i : i - n) * scale;
  struct lc_node *r = lc_node_new_data(MLX_FLOAT32, 1, &len, v);
  free(v);
  return r;
}

/* ---- transformation rules ----
 * The primitive is linear: its jvp is itself on the tangent, its vmap
 * itself over shifted axes. The vjps are MLX's (FFT::vjp): the opposite
 * transform of the cotangent, rescaled; a real transform's half spectrum
 * counts its inner bins twice, hence a mask along the last axis. */

static void params_axes(const struct lc_node *n, int *naxes, const int **axes) {
  const int *p = n->params;
  *naxes = p[FP_NAXES];
  *axes = p + FP_AXES;
}

/* The product of x's extents along the axes. */
static double extent_product(const struct lc_node *x, int naxes, const int *axes) {
  double c = 1;
  for (int i = 0; i < naxes; i++) c *= x->shape[axes[i]];
  return c;
}

/* A constant of dtype t and shape (1, ..., len at axis, ..., 1) holding
 * `inner` at indices 0 < k < last and `edge` elsewhere. */
static struct lc_node *edge_mask(mlx_dtype t, int ndim, int axis, int len, int last, double edge,
                                 double inner) {
  int shape[ndim];
  for (int d = 0; d < ndim; d++) shape[d] = d == axis ? len : 1;
  size_t isz = lc_dtype_size(t);
  char *v = malloc(isz * (size_t)len);
  if (!v) {
    lc_error("fft: out of memory");
    return NULL;
  }
  for (int k = 0; k < len; k++) lc_dtype_store(v + isz * (size_t)k, t, k > 0 && k < last ? inner : edge);
  struct lc_node *r = lc_node_new_data(t, ndim, shape, v);
  free(v);
  return r;
}

/* The vjp of the "backward" transform with n's params. */
static int backward_vjp(struct lc_node *n, struct lc_node *const *cot, struct lc_node **out) {
  const int *p = n->params;
  struct lc_node *x = n->in[0], *c = cot[0];
  int na;
  const int *axes;
  params_axes(n, &na, &axes);
  int last = axes[na - 1];
  const mlx_fft_norm B = MLX_FFT_NORM_BACKWARD;
  if (!p[FP_REAL]) {
    struct lc_node *g = lc_fftn("fft", c, na, NULL, axes, false, !p[FP_INVERSE], B);
    double s = p[FP_INVERSE] ? 1.0 / extent_product(c, na, axes) : extent_product(x, na, axes);
    out[0] = scaled(g, s);
  } else if (!p[FP_INVERSE]) {
    int len = c->shape[last], sizes[na];
    for (int i = 0; i < na; i++) sizes[i] = x->shape[axes[i]];
    struct lc_node *m =
        edge_mask(MLX_COMPLEX64, c->ndim, last, len, len - 1 + x->shape[last] % 2, 1.0, 0.5);
    struct lc_node *cm = m ? lc_multiply(c, m) : NULL;
    struct lc_node *g = cm ? lc_fftn("fft", cm, na, sizes, axes, true, true, B) : NULL;
    out[0] = scaled(g, extent_product(x, na, axes));
    lc_node_release(m);
    lc_node_release(cm);
  } else {
    int len = x->shape[last];
    double cnt = extent_product(c, na, axes);
    struct lc_node *m = edge_mask(MLX_COMPLEX64, x->ndim, last, len,
                                  len - 1 + c->shape[last] % 2, 1.0 / cnt, 2.0 / cnt);
    struct lc_node *g = m ? lc_fftn("fft", c, na, NULL, axes, true, false, B) : NULL;
    out[0] = g ? lc_multiply(g, m) : NULL;
    lc_node_release(m);
    lc_node_release(g);
  }
  return !out[0];
}

/* A transform under another norm is the backward one times a constant. */
static int fft_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                   struct lc_node **out) {
  (void)argnums, (void)nargs;
  const int *p = n->params;
  if (backward_vjp(n, cot, out)) return 1;
  out[0] = scaled(out[0], lc_fft_norm_factor(lc_fft_count(n), p[FP_INVERSE], p[FP_NORM]));
  return !out[0];
}

/* Beyond MLX: the jvp of a complex-to-real transform keeps its output
 * length (MLX's rebuilds it from the tangent, giving 2(m-1) for odd n). */
static int fft_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  out[0] = fft_node(tan[0], n->params);
  return !out[0];
}

static int fft_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                    struct lc_node **out, int *out_ax) {
  const int *p = n->params;
  int na = p[FP_NAXES], q[FP_AXES + na];
  memcpy(q, p, sizeof q);
  for (int i = 0; i < na; i++) q[FP_AXES + i] += q[FP_AXES + i] >= ax[0];
  out[0] = fft_node(in[0], q);
  *out_ax = ax[0];
  return !out[0];
}
