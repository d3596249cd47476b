/* Rotary positional embedding (MLX's fast::rope).
 * Inputs: x (floating, ndim >= 3), offset (integer, 1 or x.shape[0]
 * elements), then freqs (float32, dims/2) when given. Rows are the vectors
 * along the last axis; row r sits at sequence index t = r % T (T = extent of
 * axis -2) of batch b = r / (rows / B). Angles are computed in double into a
 * cos/sin table per position, then the rotation runs in float (double for
 * float64), rounding once to x's dtype. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/parallel.h"
#include "ops/dtype_dispatch.h"
#include "ops/elementwise.h"
#include "ops/fast.h"
#include "ops/fast_params.h"
#include "ops/fast_rules.h"
#include "ops/prim.h"

struct rope_job {
  const struct lc_node *xn;
  const char *x;
  int64_t sx; /* stride along the last axis */
  char *out;
  const void *table; /* rows of [cos half | sin half] of the compute type */
  const int64_t *rowbase; /* per offset: the table row of sequence index 0 */
  int64_t rows, rows_per_batch, T, D;
  int half, noff, traditional;
  bool contig;
};

#define ROPE_KERNEL(DT, S, C)                                                                 \
  static void rope_rows_##DT(void *ctx, int64_t lo, int64_t hi) {                             \
    const struct rope_job *j = ctx;                                                           \
    const int64_t sx = j->sx, half = j->half;                                                 \
    for (int64_t r = lo; r < hi; r++) {                                                       \
      int64_t off = j->contig ? r * j->D : lc_fast_row_offset(j->xn, j->xn->ndim - 1, r);     \
      const S *x = (const S *)j->x + off;                                                     \
      S *o = (S *)j->out + r * j->D;                                                          \
      int64_t t = r % j->T, b = j->noff > 1 ? r / j->rows_per_batch : 0;                      \
      const C *cs = (const C *)j->table + (j->rowbase[b] + t) * 2 * half, *sn = cs + half;    \
      if (j->traditional)                                                                     \
        for (int64_t i = 0; i < half; i++) {                                                  \
          C x1 = lc_ld_##DT(x[2 * i * sx]), x2 = lc_ld_##DT(x[(2 * i + 1) * sx]);             \
          o[2 * i] = lc_st_##DT(x1 * cs[i] - x2 * sn[i]);                                     \
          o[2 * i + 1] = lc_st_##DT(x1 * sn[i] + x2 * cs[i]);                                 \
        }                                                                                     \
      else                                                                                    \
        for (int64_t i = 0; i < half; i++) {                                                  \
          C x1 = lc_ld_##DT(x[i * sx]), x2 = lc_ld_##DT(x[(i + half) * sx]);                  \
          o[i] = lc_st_##DT(x1 * cs[i] - x2 * sn[i]);                                         \
          o[i + half] = lc_st_##DT(x1 * sn[i] + x2 * cs[i]);                                  \
        }                                                                                     \
      for (int64_t i = 2 * half; i < j->D; i++) o[i] = x[i * sx];                             \
    }                                                                                         \
  }
LC_FOR_FLOAT_DTYPES(ROPE_KERNEL)

static int rope_eval(struct lc_node *n) {
  const struct rope_params *p = n->params;
  const struct lc_node *x = n->in[0], *offn = n->in[1];
  if (lc_node_alloc_data(n)) return 1;
  if (n->size == 0) return 0;
  struct rope_job j = {.xn = x, .x = lc_node_data(x), .sx = x->strides[x->ndim - 1],
                       .out = n->buf->data, .T = x->shape[x->ndim - 2],
                       .D = x->shape[x->ndim - 1], .half = p->dims / 2,
                       .noff = (int)offn->size, .traditional = p->traditional,
                       .contig = lc_fast_row_major(x)};
  j.rows = n->size / j.D;
  j.rows_per_batch = j.rows / x->shape[0];
  bool dbl = n->dtype == MLX_FLOAT64;
  size_t csz = dbl ? sizeof(double) : sizeof(float);
  /* Table rows: one per distinct position when the offsets lie close
   * together (batched decoding), else T per offset. Never more rows than
   * there are vectors to rotate. */
  int64_t *offv = malloc(sizeof(int64_t) * 2 * (size_t)j.noff), *rowbase = offv + j.noff;
  double *inv = malloc(sizeof(double) * (size_t)(j.half ? j.half : 1));
  if (!offv || !inv) {
    free(offv);
    free(inv);
    return lc_error("rope: out of memory");
  }
  const char *offs = lc_node_data(offn);
  int64_t ostride = offn->ndim ? offn->strides[0] : 0, omin = 0, omax = 0;
  size_t oisz = lc_dtype_size(offn->dtype);
  for (int o = 0; o < j.noff; o++) {
    offv[o] = lc_sat_d_i64(lc_dtype_load(offs + o * ostride * (int64_t)oisz, offn->dtype));
    if (!o || offv[o] < omin) omin = offv[o];
    if (!o || offv[o] > omax) omax = offv[o];
  }
  bool shared = j.noff > 1 && (omax - omin) < (int64_t)(j.noff - 1) * j.T;
  int64_t trows = shared ? omax - omin + j.T : (int64_t)j.noff * j.T;
  for (int o = 0; o < j.noff; o++) rowbase[o] = shared ? offv[o] - omin : (int64_t)o * j.T;
  void *table = malloc(csz * (size_t)(trows ? trows : 1) * 2 * (size_t)(j.half ? j.half : 1));
  if (!table) {
    free(offv);
    free(inv);
    return lc_error("rope: out of memory");
  }
  for (int i = 0; i < j.half; i++) {
    if (p->has_freqs) {
      const struct lc_node *fr = n->in[2];
      inv[i] = 1.0 / (double)((const float *)lc_node_data(fr))[i * fr->strides[0]];
    } else {
      inv[i] = exp(-(double)i * log((double)p->base) / j.half);
    }
  }
  for (int64_t row = 0; row < trows; row++) {
    int64_t ipos = shared ? omin + row : offv[row / j.T] + row % j.T;
    double pos = (double)ipos * (double)p->scale;
    size_t base = (size_t)row * 2 * (size_t)j.half;
    for (int i = 0; i < j.half; i++) {
      double th = pos * inv[i], c = cos(th), s = p->forward ? sin(th) : -sin(th);
      if (dbl) {
        ((double *)table)[base + i] = c;
        ((double *)table)[base + j.half + i] = s;
      } else {
        ((float *)table)[base + i] = (float)c;
        ((float *)table)[base + j.half + i] = (float)s;
      }
    }
  }
  j.rowbase = rowbase;
  free(inv);
  j.table = table;
  int64_t chunk = j.D >= 4096 ? 1 : 4096 / j.D;
  int rc = 0;
  switch (n->dtype) {
#define CASE(DT, S, C)                                                                        \
  case DT: lc_parallel_for(j.rows, chunk, rope_rows_##DT, &j); break;
    LC_FOR_FLOAT_DTYPES(CASE)
#undef CASE
    default: rc = lc_error("rope: unsupported dtype %s", lc_dtype_name(n->dtype));
  }
  free(table);
  free(offv);
  return rc;
}

static int rope_describe(const struct lc_node *n, char *buf, size_t len) {
  const struct rope_params *p = n->params;
  return snprintf(buf, len, "dims=%d traditional=%d base=%g scale=%g freqs=%d forward=%d",
                  p->dims, p->traditional, (double)p->base, (double)p->scale, p->has_freqs,
                  p->forward);
}

static int rope_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                    struct lc_node **out);
static int rope_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out);
static int rope_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                     struct lc_node **out, int *out_ax);

/* Shapeless compile (beyond MLX, whose CPU rope is sliced ops): x's shape,
 * while the rotated dims fit its last axis and the offsets its batch. */
static int rope_output_shape(const void *params, int nin, struct lc_node *const *in, int ndim,
                             int *shape) {
  const struct rope_params *p = params;
  const struct lc_node *x = in[0], *off = in[1];
  if (nin < 2 || ndim < 3 || x->ndim != ndim || p->dims > x->shape[ndim - 1] ||
      (off->size != 1 && off->size != x->shape[0]))
    return 1;
  return lc_prim_shape_of_input0(params, nin, in, ndim, shape);
}

const struct lc_prim lc_prim_fast_rope = {.name = "rope",
                                          .eval_cpu = rope_eval,
                                          .eval_cuda = LC_CUDA(lc_cuda_eval_rope),
                                          .describe = rope_describe,
                                          .vjp = rope_vjp,
                                          .jvp = rope_jvp,
                                          .vmap = rope_vmap,
                                          .output_shape = rope_output_shape};

struct lc_node *lc_fast_rope(struct lc_node *x, int dims, bool traditional, bool has_base,
                             float base, float scale, struct lc_node *offset,
                             struct lc_node *freqs) {
  const char *fn = "mlx_fast_rope";
  char sb[128];
  if (x->ndim < 3)
    return lc_error("%s: input must have at least 3 dimensions but got input with %d dimensions",
                    fn, x->ndim), NULL;
  if (!lc_dtype_is_float(x->dtype))
    return lc_error("%s: input must be a floating type but got %s", fn,
                    lc_dtype_name(x->dtype)), NULL;
  if (offset->ndim > 1)
    return lc_error("%s: offset must have at most one dimension but has shape %s", fn,
                    lc_shape_str(offset->ndim, offset->shape, sb, sizeof sb)), NULL;
  if (offset->size != 1 && offset->size != x->shape[0])
    return lc_error("%s: offset must be a scalar or vector with %d elements but has shape %s",
                    fn, x->shape[0], lc_shape_str(offset->ndim, offset->shape, sb, sizeof sb)),
           NULL;
  if (!lc_dtype_is_int(offset->dtype))
    return lc_error("%s: offset must be an integer but got type %s", fn,
                    lc_dtype_name(offset->dtype)), NULL;
  if (dims <= 0) return lc_error("%s: dims must be positive but got %d", fn, dims), NULL;
  if (dims % 2) return lc_error("%s: dims must be even but got %d", fn, dims), NULL;
  if (dims > x->shape[x->ndim - 1])
    return lc_error("%s: dims must not exceed the input's last dimension (%d) but got %d", fn,
                    x->shape[x->ndim - 1], dims), NULL;
  if (freqs && has_base)
    return lc_error("%s: only one of base or freqs can have a value", fn), NULL;
  if (!freqs && !has_base) return lc_error("%s: neither base nor freqs has a value", fn), NULL;
  if (freqs && (freqs->ndim != 1 || freqs->shape[0] != dims / 2))
    return lc_error("%s: freqs must be one dimensional with size %d but got shape %s", fn,
                    dims / 2, lc_shape_str(freqs->ndim, freqs->shape, sb, sizeof sb)), NULL;
  struct lc_node *in[3] = {x, offset, NULL};
  struct lc_node *f = NULL;
  if (freqs && !(f = in[2] = lc_astype(freqs, MLX_FLOAT32))) return NULL;
  struct rope_params p;
  memset(&p, 0, sizeof p);
  p.dims = dims;
  p.traditional = traditional;
  p.has_freqs = freqs != NULL;
  p.forward = 1;
  p.base = has_base ? base : 1.0f;
  p.scale = scale;
  struct lc_node *r =
      lc_node_new_op(LC_OP_FAST_ROPE, x->dtype, x->ndim, x->shape, f ? 3 : 2, in, &p, sizeof p);
  lc_node_release(f);
  return r;
}

/* ---- transformation rules ----
 * rope is a rotation of x (linear, orthogonal): its tangent is the same
 * rotation of x's tangent, its vjp the inverse rotation (the angles
 * negated, MLX's forward = false) of the cotangent. Offsets are integers
 * (no tangent); differentiating the frequencies is not supported (MLX). */

/* A rope node like n over x (any leading shape), offset, n's freqs;
 * inverse: rotation by the negated angles. */
static struct lc_node *rope_like(struct lc_node *n, struct lc_node *x, struct lc_node *off,
                                 bool inverse) {
  struct rope_params p = *(const struct rope_params *)n->params;
  if (inverse) p.forward = !p.forward;
  struct lc_node *in[3] = {x, off, p.has_freqs ? n->in[2] : NULL};
  return lc_node_new_op(LC_OP_FAST_ROPE, x->dtype, x->ndim, x->shape, p.has_freqs ? 3 : 2, in,
                        &p, sizeof p);
}

static int rope_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                    struct lc_node **out) {
  if (nargs != 1 || argnums[0] != 0)
    return lc_error("vjp: rope cannot be differentiated with respect to its offset or "
                    "frequencies");
  return !(out[0] = rope_like(n, cot[0], n->in[1], true));
}

static int rope_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  const struct rope_params *p = n->params;
  if (p->has_freqs && tan[2])
    return lc_error("jvp: rope cannot be differentiated with respect to its frequencies");
  out[0] = tan[0] ? rope_like(n, tan[0], n->in[1], false) : NULL;
  return tan[0] && !out[0];
}

/* The batch goes in front of x's axis 0. With one offset for every row the
 * batch is just another leading axis; otherwise (per-row offsets, or
 * batched offsets) it is folded into axis 0 and the offsets are spread to
 * match. Batched frequencies are not supported. */
static int rope_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                     struct lc_node **out, int *out_ax) {
  const struct rope_params *p = n->params;
  if (p->has_freqs && ax[2] != -1)
    return lc_error("vmap: rope with batched frequencies is not supported");
  int B = lc_rule_batch_size(n->nin, in, ax);
  struct lc_fx s = {.failed = false};
  struct lc_node *x = lc_fx_own(&s, lc_rule_batch_front_full(in[0], ax[0], B)), *r = NULL;
  *out_ax = 0;
  if (!x) goto done;
  if (ax[1] == -1 && n->in[1]->size == 1) {
    r = rope_like(n, x, in[1], false);
    goto done;
  }
  int rows = n->shape[0], osh[2] = {B, rows}, r2[2] = {1, (int)n->in[1]->size};
  struct lc_node *off = lc_fx_own(&s, lc_rule_batch_front(in[1], ax[1], true));
  if (off) r2[0] = off->shape[0];
  off = lc_fx_reshape(&s, off, 2, r2);
  off = off ? lc_fx_own(&s, lc_broadcast_to(off, 2, osh)) : NULL;
  off = off ? lc_fx_own(&s, lc_flatten(off, 0, 1)) : NULL;
  struct lc_node *xf = lc_fx_own(&s, lc_flatten(x, 0, 1));
  struct lc_node *y = xf && off ? lc_fx_own(&s, rope_like(n, xf, off, false)) : NULL;
  if (y) r = lc_unflatten(y, 0, 2, osh);
done:
  lc_fx_end(&s);
  out[0] = r;
  return r == NULL;
}
