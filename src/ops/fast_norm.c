/* rms_norm and layer_norm: one task per row of the last axis.
 * Inputs (after the builder's casts, all of the output dtype): x, then the
 * weight and the bias when present. A row is read with any strides; sums
 * run in double with 8 partial accumulators (two passes for layer_norm:
 * mean, then the centred variance), and the normalised value is rounded to
 * the output dtype before the weight and bias are applied (as MLX). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/parallel.h"
#include "ops/dtype_dispatch.h"
#include "ops/elementwise.h"
#include "ops/fast.h"
#include "ops/prim.h"

struct norm_params {
  float eps;
  int has_weight;
  int has_bias;
};

struct norm_job {
  const char *x, *w, *b; /* element 0 of each operand */
  int64_t sx, sw, sb;    /* strides along the last axis */
  char *out;
  const struct lc_node *xn;
  int nlead; /* leading dimensions enumerating the rows */
  int64_t d; /* row length */
  bool contig;
  float eps;
};

#define NORM_KERNELS(DT, S, C)                                                                \
  static double sum_sq_##DT(const S *x, int64_t sx, int64_t d, double mu) {                   \
    double p[8] = {0};                                                                        \
    int64_t i = 0;                                                                            \
    for (; i + 8 <= d; i += 8)                                                                \
      for (int k = 0; k < 8; k++) {                                                           \
        double v = (double)lc_ld_##DT(x[(i + k) * sx]) - mu;                                  \
        p[k] += v * v;                                                                        \
      }                                                                                       \
    for (; i < d; i++) {                                                                      \
      double v = (double)lc_ld_##DT(x[i * sx]) - mu;                                          \
      p[0] += v * v;                                                                          \
    }                                                                                         \
    return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));                 \
  }                                                                                           \
  static double sum_##DT(const S *x, int64_t sx, int64_t d) {                                 \
    double p[8] = {0};                                                                        \
    int64_t i = 0;                                                                            \
    for (; i + 8 <= d; i += 8)                                                                \
      for (int k = 0; k < 8; k++) p[k] += (double)lc_ld_##DT(x[(i + k) * sx]);                \
    for (; i < d; i++) p[0] += (double)lc_ld_##DT(x[i * sx]);                                 \
    return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));                 \
  }                                                                                           \
  /* y = round(round((x - mu) * inv) [* w]) [+ b], rounding to S each step. */                \
  static void affine_##DT(const struct norm_job *j, const S *x, S *o, double mu, double inv) { \
    const S *w = (const S *)j->w, *b = (const S *)j->b;                                       \
    for (int64_t i = 0; i < j->d; i++) {                                                      \
      S y = lc_st_##DT(((double)lc_ld_##DT(x[i * j->sx]) - mu) * inv);                        \
      if (w) y = lc_st_##DT((C)lc_ld_##DT(y) * (C)lc_ld_##DT(w[i * j->sw]));                  \
      if (b) y = lc_st_##DT((C)lc_ld_##DT(y) + (C)lc_ld_##DT(b[i * j->sb]));                  \
      o[i] = y;                                                                               \
    }                                                                                         \
  }                                                                                           \
  static void rms_rows_##DT(void *ctx, int64_t lo, int64_t hi) {                              \
    const struct norm_job *j = ctx;                                                           \
    for (int64_t r = lo; r < hi; r++) {                                                       \
      int64_t off = j->contig ? r * j->d : lc_fast_row_offset(j->xn, j->nlead, r);            \
      const S *x = (const S *)j->x + off;                                                     \
      double ms = sum_sq_##DT(x, j->sx, j->d, 0) / (double)j->d;                              \
      double inv = 1 / sqrt(ms + (double)j->eps);                                             \
      affine_##DT(j, x, (S *)j->out + r * j->d, 0, inv);                                      \
    }                                                                                         \
  }                                                                                           \
  static void ln_rows_##DT(void *ctx, int64_t lo, int64_t hi) {                               \
    const struct norm_job *j = ctx;                                                           \
    for (int64_t r = lo; r < hi; r++) {                                                       \
      int64_t off = j->contig ? r * j->d : lc_fast_row_offset(j->xn, j->nlead, r);            \
      const S *x = (const S *)j->x + off;                                                     \
      double mu = sum_##DT(x, j->sx, j->d) / (double)j->d;                                    \
      double var = sum_sq_##DT(x, j->sx, j->d, mu) / (double)j->d;                            \
      double inv = 1 / sqrt(var + (double)j->eps);                                            \
      affine_##DT(j, x, (S *)j->out + r * j->d, mu, inv);                                     \
    }                                                                                         \
  }
LC_FOR_FLOAT_DTYPES(NORM_KERNELS)

static int norm_eval(struct lc_node *n, bool layer) {
  const struct norm_params *p = n->params;
  if (lc_node_alloc_data(n)) return 1;
  const struct lc_node *x = n->in[0];
  struct norm_job j = {.xn = x, .nlead = x->ndim - 1, .d = x->shape[x->ndim - 1],
                       .out = n->buf->data, .eps = p->eps, .contig = lc_fast_row_major(x)};
  if (n->size == 0) return 0;
  j.x = lc_node_data(x);
  j.sx = x->strides[x->ndim - 1];
  int k = 1;
  if (p->has_weight) {
    j.w = lc_node_data(n->in[k]);
    j.sw = n->in[k++]->strides[0];
  }
  if (p->has_bias) {
    j.b = lc_node_data(n->in[k]);
    j.sb = n->in[k]->strides[0];
  }
  int64_t rows = n->size / j.d, chunk = j.d >= 4096 ? 1 : 4096 / j.d;
  switch (n->dtype) {
#define CASE(DT, S, C)                                                                        \
  case DT: lc_parallel_for(rows, chunk, layer ? ln_rows_##DT : rms_rows_##DT, &j); break;
    LC_FOR_FLOAT_DTYPES(CASE)
#undef CASE
    default: return lc_error("%s: unsupported dtype %s", lc_prims[n->op]->name,
                             lc_dtype_name(n->dtype));
  }
  return 0;
}

static int rms_eval(struct lc_node *n) { return norm_eval(n, false); }
static int ln_eval(struct lc_node *n) { return norm_eval(n, true); }

static int norm_describe(const struct lc_node *n, char *buf, size_t len) {
  const struct norm_params *p = n->params;
  return snprintf(buf, len, "eps=%g weight=%d bias=%d", (double)p->eps, p->has_weight,
                  p->has_bias);
}

const struct lc_prim lc_prim_fast_rms_norm = {
    .name = "rms_norm", .eval_cpu = rms_eval, .describe = norm_describe};
const struct lc_prim lc_prim_fast_layer_norm = {
    .name = "layer_norm", .eval_cpu = ln_eval, .describe = norm_describe};

/* ---- builders ---- */

static int check_affine(const char *fn, const char *what, const struct lc_node *x,
                        const struct lc_node *w) {
  if (w->ndim != 1)
    return lc_error("%s: %s must have 1 dimension but has %d dimensions", fn, what, w->ndim);
  if (w->shape[0] != x->shape[x->ndim - 1])
    return lc_error("%s: %s must have the same size as the last dimension of x (%d) but has %d "
                    "elements", fn, what, x->shape[x->ndim - 1], w->shape[0]);
  return 0;
}

static struct lc_node *norm_build(const char *fn, int op, struct lc_node *x, struct lc_node *w,
                                  struct lc_node *b, float eps) {
  if (x->ndim == 0)
    return lc_error("%s: input must have at least 1 dimension but got input with 0 dimensions",
                    fn), NULL;
  if (w && check_affine(fn, "weight", x, w)) return NULL;
  if (b && check_affine(fn, "bias", x, b)) return NULL;
  mlx_dtype t = x->dtype;
  if (w) t = lc_dtype_promote(t, w->dtype);
  if (b) t = lc_dtype_promote(t, b->dtype);
  if (!lc_dtype_is_float(t))
    return lc_error("%s: received unsupported type %s (a floating type is required)", fn,
                    lc_dtype_name(t)), NULL;
  struct lc_node *in[3] = {NULL, NULL, NULL};
  int nin = 0;
  struct lc_node *src[3] = {x, w, b};
  struct lc_node *r = NULL;
  for (int i = 0; i < 3; i++) {
    if (!src[i]) continue;
    if (!(in[nin++] = lc_astype(src[i], t))) goto done;
  }
  struct norm_params p;
  memset(&p, 0, sizeof p);
  p.eps = eps;
  p.has_weight = w != NULL;
  p.has_bias = b != NULL;
  r = lc_node_new_op(op, t, x->ndim, x->shape, nin, in, &p, sizeof p);
done:
  for (int i = 0; i < nin; i++) lc_node_release(in[i]);
  return r;
}

struct lc_node *lc_fast_rms_norm(struct lc_node *x, struct lc_node *weight, float eps) {
  return norm_build("mlx_fast_rms_norm", LC_OP_FAST_RMS_NORM, x, weight, NULL, eps);
}

struct lc_node *lc_fast_layer_norm(struct lc_node *x, struct lc_node *weight, struct lc_node *bias,
                                   float eps) {
  return norm_build("mlx_fast_layer_norm", LC_OP_FAST_LAYER_NORM, x, weight, bias, eps);
}
