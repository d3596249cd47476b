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
#include "ops/fast_params.h"
#include "ops/fast_rules.h"
#include "ops/prim.h"

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

static int rms_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                   struct lc_node **out);
static int rms_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out);
static int ln_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                  struct lc_node **out);
static int ln_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out);
static int norm_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                     struct lc_node **out, int *out_ax);

/* Shapeless compile: x's shape; weight and bias must match its new last
 * extent (the builder checks them). */
static int norm_output_shape(const void *params, int nin, struct lc_node *const *in, int ndim,
                             int *shape) {
  const struct lc_node *x = in[0];
  for (int k = 1; k < nin; k++)
    if (in[k]->ndim != 1 || x->ndim < 1 || in[k]->shape[0] != x->shape[x->ndim - 1]) return 1;
  return lc_prim_shape_of_input0(params, nin, in, ndim, shape);
}

const struct lc_prim lc_prim_fast_rms_norm = {.name = "rms_norm",
                                              .eval_cpu = rms_eval,
                                              .eval_cuda = LC_CUDA(lc_cuda_eval_rms_norm),
                                              .describe = norm_describe,
                                              .vjp = rms_vjp,
                                              .jvp = rms_jvp,
                                              .vmap = norm_vmap,
                                              .output_shape = norm_output_shape};
const struct lc_prim lc_prim_fast_layer_norm = {.name = "layer_norm",
                                                .eval_cpu = ln_eval,
                                                .eval_cuda = LC_CUDA(lc_cuda_eval_layer_norm),
                                                .describe = norm_describe,
                                                .vjp = ln_vjp,
                                                .jvp = ln_jvp,
                                                .vmap = norm_vmap,
                                                .output_shape = norm_output_shape};

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

/* ---- transformation rules ----
 * With r = rsqrt(mean(x^2) + eps) (rms) or r = rsqrt(var(x) + eps) and
 * xc = x - mean(x) (layer), over the last axis; w = 1 and b = 0 when absent:
 *   rms:   y = x r w,   dy = w (dx r - x r^3 mean(x dx)) + x r dw
 *   layer: y = xc r w + b, with h = xc r:
 *          dy = w r (dxc - h mean(h dxc)) + h dw + db,  dxc = dx - mean(dx).
 * The vjps are the adjoints of these maps. */

/* Input index of the weight and of the bias (-1: absent). */
static int weight_index(const struct lc_node *n) {
  return ((const struct norm_params *)n->params)->has_weight ? 1 : -1;
}
static int bias_index(const struct lc_node *n) {
  const struct norm_params *p = n->params;
  return p->has_bias ? 1 + p->has_weight : -1;
}

/* r of the rms norm over x's last axis. */
static struct lc_node *rms_scale(struct lc_fx *s, struct lc_node *n) {
  struct lc_node *x = n->in[0];
  const struct norm_params *p = n->params;
  return lc_fx_rsqrt(s, lc_fx_add(s, lc_fx_mean_last(s, lc_fx_mul(s, x, x)),
                                  lc_fx_const(s, x, p->eps)));
}

/* The weight, or NULL when the node has none. */
static struct lc_node *weight_of(const struct lc_node *n) {
  int k = weight_index(n);
  return k < 0 ? NULL : n->in[k];
}

/* Hands out res[0..nargs) (scope nodes or borrowed; NULL = zero) as new
 * references, unless a builder failed. Ends the scope. */
static int hand_out(struct lc_fx *s, struct lc_node *const *res, int nargs, struct lc_node **out) {
  bool ok = !s->failed;
  for (int j = 0; j < nargs; j++) out[j] = ok ? lc_fx_keep(res[j]) : NULL;
  lc_fx_end(s);
  return !ok;
}

static int rms_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                   struct lc_node **out) {
  struct lc_fx s = {.failed = false};
  struct lc_node *x = n->in[0], *g = cot[0], *w = weight_of(n), *res[2] = {NULL, NULL};
  struct lc_node *r = rms_scale(&s, n);
  struct lc_node *gw = w ? lc_fx_mul(&s, g, w) : g;
  for (int j = 0; j < nargs; j++) {
    if (argnums[j] == 0) {
      struct lc_node *r3 = lc_fx_mul(&s, r, lc_fx_mul(&s, r, r));
      struct lc_node *m = lc_fx_mean_last(&s, lc_fx_mul(&s, gw, x));
      res[j] = lc_fx_sub(&s, lc_fx_mul(&s, gw, r), lc_fx_mul(&s, x, lc_fx_mul(&s, r3, m)));
    } else {
      res[j] = lc_fx_sum_lead(&s, lc_fx_mul(&s, g, lc_fx_mul(&s, x, r)));
    }
  }
  return hand_out(&s, res, nargs, out);
}

static int rms_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  struct lc_fx s = {.failed = false};
  struct lc_node *x = n->in[0], *w = weight_of(n), *acc = NULL;
  struct lc_node *r = rms_scale(&s, n);
  if (tan[0]) {
    struct lc_node *r3 = lc_fx_mul(&s, r, lc_fx_mul(&s, r, r));
    struct lc_node *m = lc_fx_mean_last(&s, lc_fx_mul(&s, x, tan[0]));
    acc = lc_fx_sub(&s, lc_fx_mul(&s, tan[0], r), lc_fx_mul(&s, x, lc_fx_mul(&s, r3, m)));
    if (w) acc = lc_fx_mul(&s, acc, w);
  }
  if (w && tan[1]) acc = lc_fx_add0(&s, acc, lc_fx_mul(&s, lc_fx_mul(&s, x, r), tan[1]));
  return hand_out(&s, &acc, 1, out);
}

/* xc and h = xc r of the layer norm. */
static void ln_parts(struct lc_fx *s, struct lc_node *n, struct lc_node **xc, struct lc_node **h,
                     struct lc_node **r) {
  struct lc_node *x = n->in[0];
  const struct norm_params *p = n->params;
  *xc = lc_fx_sub(s, x, lc_fx_mean_last(s, x));
  struct lc_node *var = lc_fx_mean_last(s, lc_fx_mul(s, *xc, *xc));
  *r = lc_fx_rsqrt(s, lc_fx_add(s, var, lc_fx_const(s, x, p->eps)));
  *h = lc_fx_mul(s, *xc, *r);
}

static int ln_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                  struct lc_node **out) {
  struct lc_fx s = {.failed = false};
  struct lc_node *g = cot[0], *w = weight_of(n), *xc, *h, *r, *res[3] = {NULL, NULL, NULL};
  ln_parts(&s, n, &xc, &h, &r);
  int wi = weight_index(n), bi = bias_index(n);
  for (int j = 0; j < nargs; j++) {
    if (argnums[j] == 0) {
      struct lc_node *wg = w ? lc_fx_mul(&s, g, w) : g;
      struct lc_node *c = lc_fx_sub(&s, wg, lc_fx_mean_last(&s, wg));
      c = lc_fx_sub(&s, c, lc_fx_mul(&s, h, lc_fx_mean_last(&s, lc_fx_mul(&s, wg, h))));
      res[j] = lc_fx_mul(&s, r, c);
    } else if (argnums[j] == wi) {
      res[j] = lc_fx_sum_lead(&s, lc_fx_mul(&s, g, h));
    } else if (argnums[j] == bi) {
      res[j] = lc_fx_sum_lead(&s, g);
    }
  }
  return hand_out(&s, res, nargs, out);
}

static int ln_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  struct lc_fx s = {.failed = false};
  struct lc_node *w = weight_of(n), *xc, *h, *r, *acc = NULL;
  ln_parts(&s, n, &xc, &h, &r);
  int wi = weight_index(n), bi = bias_index(n);
  if (tan[0]) {
    struct lc_node *dxc = lc_fx_sub(&s, tan[0], lc_fx_mean_last(&s, tan[0]));
    struct lc_node *m = lc_fx_mean_last(&s, lc_fx_mul(&s, h, dxc));
    acc = lc_fx_mul(&s, r, lc_fx_sub(&s, dxc, lc_fx_mul(&s, h, m)));
    if (w) acc = lc_fx_mul(&s, acc, w);
  }
  if (wi >= 0 && tan[wi]) acc = lc_fx_add0(&s, acc, lc_fx_mul(&s, h, tan[wi]));
  if (bi >= 0 && tan[bi]) acc = lc_fx_add0(&s, acc, tan[bi]);
  return hand_out(&s, &acc, 1, out);
}

/* A batched weight or bias (B, D) as (B, 1, ..., 1, D) of rank nd. */
static struct lc_node *affine_batched(struct lc_fx *s, struct lc_node *v, int ax, int nd) {
  struct lc_node *f = lc_fx_own(s, lc_rule_batch_front(v, ax, false));
  if (!f) return NULL;
  int sh[nd];
  sh[0] = f->shape[0];
  for (int d = 1; d < nd - 1; d++) sh[d] = 1;
  sh[nd - 1] = f->shape[1];
  return lc_fx_reshape(s, f, nd, sh);
}

/* x's batch goes first (the normalised axis stays last); an unbatched
 * weight / bias stays in the fused op, a batched one is applied after it
 * (in the op's order: the bias only after the weight). */
static int norm_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                     struct lc_node **out, int *out_ax) {
  const struct norm_params *p = n->params;
  bool layer = n->op == LC_OP_FAST_LAYER_NORM;
  int wi = weight_index(n), bi = bias_index(n);
  struct lc_fx s = {.failed = false};
  struct lc_node *x = lc_fx_own(&s, lc_rule_batch_front(in[0], ax[0], false));
  int nd = n->ndim + 1;
  bool w_in = wi >= 0 && ax[wi] == -1, b_in = bi >= 0 && ax[bi] == -1 && (wi < 0 || w_in);
  struct lc_node *w = w_in ? in[wi] : NULL, *b = b_in ? in[bi] : NULL, *y = NULL;
  if (x)
    y = lc_fx_own(&s, layer ? lc_fast_layer_norm(x, w, b, p->eps) : lc_fast_rms_norm(x, w, p->eps));
  if (wi >= 0 && !w_in) y = lc_fx_mul(&s, y, affine_batched(&s, in[wi], ax[wi], nd));
  if (bi >= 0 && !b_in)
    y = lc_fx_add(&s, y, ax[bi] == -1 ? in[bi] : affine_batched(&s, in[bi], ax[bi], nd));
  *out_ax = 0;
  return hand_out(&s, &y, 1, out);
}
