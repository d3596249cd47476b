/* Scaled dot-product attention (MLX's fast::scaled_dot_product_attention)
 * as one primitive with direct kernels (no score matrix in memory).
 * Inputs (all of the output dtype T except a bool mask): q (B, Hq, qL, D),
 * k (B, Hkv, kL, D), v (B, Hkv, kL, Dv), then the mask broadcast to
 * (B, Hq, qL, kL) when present, then sinks (Hq,) when present. Query head h
 * reads kv head h / (Hq / Hkv). float16/bfloat16/float32 run the blocked
 * float kernel of fast_sdpa_float.c; float64 runs the row kernel below
 * (one task per query row, in double). Both: scores, softmax with the max
 * subtracted, weighted sum of v.
 * Masking follows MLX: causal keeps key j for query i iff
 * j <= i + kL - qL; a false boolean (or causal) entry sets the score to the
 * lowest finite value of T (so a fully masked row averages v uniformly); an
 * additive mask is added. A sink adds exp(sink) to the denominator only. */
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/parallel.h"
#include "ops/elementwise.h"
#include "ops/fast.h"
#include "ops/fast_sdpa.h"
#include "ops/prim.h"

struct sdpa_params {
  float scale;
  int causal;
  int has_mask;
  int has_sinks;
};

static double lowest_of(mlx_dtype t) {
  switch (t) {
    case MLX_FLOAT16: return -65504.0;
    case MLX_BFLOAT16: return -3.3895313892515355e38;
    case MLX_FLOAT64: return -DBL_MAX;
    default: return -FLT_MAX;
  }
}

/* n doubles from p (stride st); p itself when contiguous. */
static const double *load_d(const double *p, int64_t st, int n, double *buf) {
  if (st == 1) return p;
  for (int i = 0; i < n; i++) buf[i] = p[i * st];
  return buf;
}

/* The float64 kernel: one query row (b, h, i) per task, in double. */
static void sdpa_rows_f64(void *ctx, int64_t lo, int64_t hi) {
  struct lc_sdpa_job *j = ctx;
  const int D = j->D, Dv = j->Dv, kL = j->kL, qL = j->qL;
  int dmax = D > Dv ? D : Dv;
  double *sc = malloc(sizeof(double) * (size_t)(kL + Dv + D + dmax + 1));
  if (!sc) {
    atomic_store(&j->failed, 1);
    return;
  }
  double *acc = sc + kL, *qb = acc + Dv, *tmp = qb + D;
  const int64_t *qs = j->q->strides, *ks = j->k->strides, *vs = j->v->strides;
  int group = j->Hq / j->Hkv;
  for (int64_t r = lo; r < hi; r++) {
    int i = (int)(r % qL), h = (int)((r / qL) % j->Hq), b = (int)(r / qL / j->Hq);
    int hk = h / group;
    const double *qp = (const double *)j->qd + b * qs[0] + h * qs[1] + i * qs[2];
    for (int d = 0; d < D; d++) qb[d] = (double)j->scale * qp[d * qs[3]];
    const double *kbase = (const double *)j->kd + b * ks[0] + hk * ks[1];
    const double *vbase = (const double *)j->vd + b * vs[0] + hk * vs[1];
    /* causal: keys past i + kL - qL score lowest, so exp() gives exactly 0
     * for them unless the whole row is masked; skip them in that case. */
    int kend = kL, all_masked = 0;
    if (j->causal) {
      int lim = i + kL - qL;
      if (lim < 0)
        all_masked = 1;
      else if (lim + 1 < kL)
        kend = lim + 1;
    }
    double mx = -INFINITY;
    for (int t = 0; t < kend; t++) {
      const double *kr = load_d(kbase + t * ks[2], ks[3], D, tmp);
      double s = 0;
      for (int d = 0; d < D; d++) s += qb[d] * kr[d];
      if (all_masked) s = j->lowest;
      if (j->mask) {
        const int64_t *ms = j->mask->strides;
        int64_t mo = b * ms[0] + h * ms[1] + i * ms[2] + t * ms[3];
        if (j->mask->dtype == MLX_BOOL) {
          if (!((const bool *)j->md)[mo]) s = j->lowest;
        } else {
          s += ((const double *)j->md)[mo];
        }
      }
      sc[t] = s;
      if (s > mx) mx = s;
    }
    double sink = 0;
    if (j->sinks) {
      sink = ((const double *)j->sd)[h * j->sinks->strides[0]];
      if (sink > mx) mx = sink;
    }
    double den = j->sinks ? exp(sink - mx) : 0;
    for (int d = 0; d < Dv; d++) acc[d] = 0;
    for (int t = 0; t < kend; t++) {
      double w = exp(sc[t] - mx);
      den += w;
      const double *vr = load_d(vbase + t * vs[2], vs[3], Dv, tmp);
      for (int d = 0; d < Dv; d++) acc[d] += w * vr[d];
    }
    double *o = (double *)j->out + r * Dv;
    for (int d = 0; d < Dv; d++) o[d] = kL ? acc[d] / den : 0;
  }
  free(sc);
}

static int sdpa_eval(struct lc_node *n) {
  const struct sdpa_params *p = n->params;
  if (lc_node_alloc_data(n)) return 1;
  if (n->size == 0) return 0;
  struct lc_sdpa_job j = {.q = n->in[0], .k = n->in[1], .v = n->in[2], .out = n->buf->data,
                       .scale = p->scale, .causal = p->causal, .lowest = lowest_of(n->dtype)};
  int k = 3;
  if (p->has_mask) j.mask = n->in[k++];
  if (p->has_sinks) j.sinks = n->in[k];
  j.qd = lc_node_data(j.q);
  j.kd = lc_node_data(j.k);
  j.vd = lc_node_data(j.v);
  if (j.mask) j.md = lc_node_data(j.mask);
  if (j.sinks) j.sd = lc_node_data(j.sinks);
  j.B = j.q->shape[0];
  j.Hq = j.q->shape[1];
  j.qL = j.q->shape[2];
  j.D = j.q->shape[3];
  j.Hkv = j.k->shape[1];
  j.kL = j.k->shape[2];
  j.Dv = j.v->shape[3];
  atomic_init(&j.failed, 0);
  int64_t rows = (int64_t)j.B * j.Hq * j.qL;
  int64_t work = (int64_t)j.kL * (j.D + j.Dv) + 1;
  int64_t chunk = work >= 8192 ? 1 : 8192 / work;
  if (n->dtype == MLX_FLOAT64)
    lc_parallel_for(rows, chunk, sdpa_rows_f64, &j);
  else
    lc_sdpa_float(&j);
  if (atomic_load(&j.failed)) return lc_error("scaled_dot_product_attention: out of memory");
  return 0;
}

static int sdpa_describe(const struct lc_node *n, char *buf, size_t len) {
  const struct sdpa_params *p = n->params;
  return snprintf(buf, len, "scale=%g causal=%d mask=%d sinks=%d", (double)p->scale, p->causal,
                  p->has_mask, p->has_sinks);
}

const struct lc_prim lc_prim_fast_sdpa = {
    .name = "scaled_dot_product_attention", .eval_cpu = sdpa_eval, .describe = sdpa_describe};

#define FN "mlx_fast_scaled_dot_product_attention"

static int check_inputs(struct lc_node *q, struct lc_node *k, struct lc_node *v) {
  char sa[128], sb[128];
  struct lc_node *t[3] = {q, k, v};
  for (int i = 0; i < 3; i++)
    if (t[i]->ndim != 4)
      return lc_error(FN ": input with shape %s expected to be rank 4",
                      lc_shape_str(t[i]->ndim, t[i]->shape, sa, sizeof sa));
  for (int i = 1; i < 3; i++)
    if (t[i]->shape[0] != q->shape[0])
      return lc_error(FN ": mismatching batch dimension for input with shape %s (queries have "
                      "batch %d)", lc_shape_str(4, t[i]->shape, sa, sizeof sa), q->shape[0]);
  if (q->shape[3] != k->shape[3])
    return lc_error(FN ": query, keys expected to have matching last dimension; found query "
                    "shape %s for keys shape %s", lc_shape_str(4, q->shape, sa, sizeof sa),
                    lc_shape_str(4, k->shape, sb, sizeof sb));
  if (k->shape[1] != v->shape[1])
    return lc_error(FN ": keys, values expected to have matching n_kv_heads; found keys with "
                    "n_heads %d for values with n_heads %d", k->shape[1], v->shape[1]);
  if (k->shape[2] != v->shape[2])
    return lc_error(FN ": keys, values expected to have matching sequence length; found %d "
                    "and %d", k->shape[2], v->shape[2]);
  if (k->shape[1] == 0 || q->shape[1] % k->shape[1])
    return lc_error(FN ": n_heads must be a multiple of n_kv_heads, found n_heads %d for "
                    "n_kv_heads %d", q->shape[1], k->shape[1]);
  return 0;
}

struct lc_node *lc_fast_sdpa(struct lc_node *q, struct lc_node *k, struct lc_node *v, float scale,
                             const char *mask_mode, struct lc_node *mask, struct lc_node *sinks) {
  char sa[128];
  if (!mask_mode) mask_mode = "";
  bool causal = !strcmp(mask_mode, "causal");
  if (!causal && strcmp(mask_mode, "") && strcmp(mask_mode, "array"))
    return lc_error(FN ": invalid mask_mode '%s'; mask_mode must be 'causal', 'array' or ''",
                    mask_mode), NULL;
  if (causal && mask)
    return lc_error(FN ": invalid mask_arr for mask_mode 'causal'; no array mask should be "
                    "passed"), NULL;
  if (mask && mask->ndim > 4)
    return lc_error(FN ": the mask with shape %s expected to have at most rank 4",
                    lc_shape_str(mask->ndim, mask->shape, sa, sizeof sa)), NULL;
  if (check_inputs(q, k, v)) return NULL;
  mlx_dtype t = lc_dtype_promote(lc_dtype_promote(q->dtype, k->dtype), v->dtype);
  if (!lc_dtype_is_float(t))
    return lc_error(FN ": received unsupported type %s (a floating type is required)",
                    lc_dtype_name(t)), NULL;
  int mshape[4] = {q->shape[0], q->shape[1], q->shape[2], k->shape[2]};
  if (mask) {
    if (lc_dtype_promote(mask->dtype, t) != t)
      return lc_error(FN ": mask type %s must promote to output type %s",
                      lc_dtype_name(mask->dtype), lc_dtype_name(t)), NULL;
    for (int i = 0; i < mask->ndim; i++) {
      int d = mask->shape[i], want = mshape[4 - mask->ndim + i];
      if (d != want && d != 1) {
        char sb[128];
        return lc_error(FN ": mask with shape %s cannot be broadcast to %s",
                        lc_shape_str(mask->ndim, mask->shape, sa, sizeof sa),
                        lc_shape_str(4, mshape, sb, sizeof sb)), NULL;
      }
    }
  }
  if (sinks) {
    if (lc_dtype_promote(sinks->dtype, t) != t)
      return lc_error(FN ": type of sinks %s must promote to output type %s",
                      lc_dtype_name(sinks->dtype), lc_dtype_name(t)), NULL;
    if (sinks->ndim != 1 || sinks->shape[0] != q->shape[1])
      return lc_error(FN ": received invalid shape for sinks %s (expected [%d])",
                      lc_shape_str(sinks->ndim, sinks->shape, sa, sizeof sa), q->shape[1]),
             NULL;
  }
  struct lc_node *in[5] = {NULL};
  int nin = 0;
  struct lc_node *r = NULL;
  if (!(in[nin++] = lc_astype(q, t)) || !(in[nin++] = lc_astype(k, t)) ||
      !(in[nin++] = lc_astype(v, t)))
    goto done;
  if (mask) {
    struct lc_node *m = mask->dtype == MLX_BOOL ? lc_node_retain(mask) : lc_astype(mask, t);
    if (!m) goto done;
    in[nin++] = lc_broadcast_to(m, 4, mshape);
    lc_node_release(m);
    if (!in[nin - 1]) goto done;
  }
  if (sinks && !(in[nin++] = lc_astype(sinks, t))) goto done;
  struct sdpa_params p;
  memset(&p, 0, sizeof p);
  p.scale = scale;
  p.causal = causal;
  p.has_mask = mask != NULL;
  p.has_sinks = sinks != NULL;
  int oshape[4] = {q->shape[0], q->shape[1], q->shape[2], v->shape[3]};
  r = lc_node_new_op(LC_OP_FAST_SDPA, t, 4, oshape, nin, in, &p, sizeof p);
done:
  for (int i = 0; i < nin; i++) lc_node_release(in[i]);
  return r;
}
