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
#include "ops/fast_params.h"
#include "ops/fast_rules.h"
#include "ops/fast_sdpa.h"
#include "ops/prim.h"
#include "ops/creation.h"
#include "ops/softmax.h"

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

static int sdpa_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                    struct lc_node **out);
static int sdpa_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out);
static int sdpa_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                     struct lc_node **out, int *out_ax);

/* Shapeless compile: (B, n_heads, L, D_v) from the queries and values;
 * the builder's shape checks must still hold (a mask must already have the
 * (B, n_heads, L, S) shape it was broadcast to, sinks n_heads). */
static int sdpa_output_shape(const void *params, int nin, struct lc_node *const *in, int ndim,
                             int *shape) {
  const struct sdpa_params *p = params;
  struct lc_node *q = in[0], *k = in[1], *v = in[2];
  if (nin < 3 || ndim != 4 || q->ndim != 4 || k->ndim != 4 || v->ndim != 4) return 1;
  if (k->shape[0] != q->shape[0] || v->shape[0] != q->shape[0] || q->shape[3] != k->shape[3] ||
      k->shape[1] != v->shape[1] || k->shape[2] != v->shape[2] || k->shape[1] == 0 ||
      q->shape[1] % k->shape[1])
    return 1;
  int m = 3;
  if (p->has_mask) {
    const int want[4] = {q->shape[0], q->shape[1], q->shape[2], k->shape[2]};
    if (nin <= m || !lc_shape_equal(in[m]->ndim, in[m]->shape, 4, want)) return 1;
    m++;
  }
  if (p->has_sinks && (nin <= m || in[m]->ndim != 1 || in[m]->shape[0] != q->shape[1])) return 1;
  shape[0] = q->shape[0];
  shape[1] = q->shape[1];
  shape[2] = q->shape[2];
  shape[3] = v->shape[3];
  return 0;
}

const struct lc_prim lc_prim_fast_sdpa = {.name = "scaled_dot_product_attention",
                                          .eval_cpu = sdpa_eval,
                                          .eval_cuda = LC_CUDA(lc_cuda_eval_sdpa),
                                          .describe = sdpa_describe,
                                          .vjp = sdpa_vjp,
                                          .jvp = sdpa_jvp,
                                          .vmap = sdpa_vmap,
                                          .output_shape = sdpa_output_shape};

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

/* ---- transformation rules ----
 * The rules recompute the attention probabilities with plain ops, query
 * heads grouped by kv head: q as (B, Hkv, R, qL, D) (R = Hq / Hkv), k and v
 * as (B, Hkv, 1, kL, .), so every kv head serves its R query heads by
 * broadcasting. With S = scale q k^T (+ additive mask; bool and causal
 * masks replace masked scores by a constant), P = softmax over the keys
 * (and the sink, whose column is then dropped), O = P v:
 *   dV = sum_R P^T dO,  dP = dO v^T,  dS = P (dP - rowsum(P dP)),
 *   dQ = scale dS k,  dK = sum_R scale dS^T q,  d(mask) = dS,
 *   d(sink) = -sum_{B, qL} P_sink rowsum(P dP);
 * dS is zero where a bool / causal mask replaced the score. */

struct sdpa_fwd {
  int B, Hq, Hkv, R, qL, kL, D, Dv;
  int mask_in, sinks_in;      /* input indices, -1 when absent */
  bool additive;              /* the mask is added to the scores */
  struct lc_node *q5, *k5, *v5;
  struct lc_node *keep;       /* bool, broadcastable to the scores: real scores; NULL: all */
  struct lc_node *p, *psink;  /* probabilities (B, Hkv, R, qL, kL), sink's (.., 1) or NULL */
};

/* x as (B, Hkv, r, L, d) from (B, Hkv r, L, d). */
static struct lc_node *heads5(struct lc_fx *s, struct lc_node *x, int Hkv) {
  if (!x) return NULL;
  int sh[5] = {x->shape[0], Hkv, x->shape[1] / Hkv, x->shape[2], x->shape[3]};
  return lc_fx_reshape(s, x, 5, sh);
}

/* The inverse of heads5 for a (B, Hkv, r, L, d) x: (B, Hkv r, L, d). */
static struct lc_node *heads4(struct lc_fx *s, struct lc_node *x) {
  if (!x) return NULL;
  int sh[4] = {x->shape[0], x->shape[1] * x->shape[2], x->shape[3], x->shape[4]};
  return lc_fx_reshape(s, x, 4, sh);
}

/* Sum over the R axis (2) of a 5-d x, to the 4-d kv layout. */
static struct lc_node *sum_groups(struct lc_fx *s, struct lc_node *x) {
  int ax = 2;
  return lc_fx_sum(s, x, &ax, 1, false);
}

static struct lc_node *sdpa_probs(struct lc_fx *s, struct lc_node *n, struct sdpa_fwd *f) {
  const struct sdpa_params *p = n->params;
  struct lc_node *q = n->in[0], *k = n->in[1], *v = n->in[2];
  f->B = q->shape[0], f->Hq = q->shape[1], f->qL = q->shape[2], f->D = q->shape[3];
  f->Hkv = k->shape[1], f->kL = k->shape[2], f->Dv = v->shape[3], f->R = f->Hq / f->Hkv;
  f->mask_in = p->has_mask ? 3 : -1;
  f->sinks_in = p->has_sinks ? 3 + p->has_mask : -1;
  f->additive = p->has_mask && n->in[3]->dtype != MLX_BOOL;
  f->keep = f->psink = NULL;
  f->q5 = heads5(s, q, f->Hkv);
  f->k5 = heads5(s, k, f->Hkv);
  f->v5 = heads5(s, v, f->Hkv);
  struct lc_node *sc = lc_fx_scale(s, lc_fx_mm(s, f->q5, lc_fx_swap_last(s, f->k5)), p->scale);
  if (p->has_mask) {
    struct lc_node *m5 = heads5(s, n->in[3], f->Hkv);
    if (f->additive)
      sc = lc_fx_add(s, sc, m5);
    else
      f->keep = m5;
  } else if (p->causal) {
    int qs[2] = {f->qL, 1}, ks[2] = {1, f->kL};
    struct lc_node *qi = lc_fx_own(s, lc_arange(f->kL - f->qL, f->kL, 1, MLX_INT32));
    struct lc_node *kj = lc_fx_own(s, lc_arange(0, f->kL, 1, MLX_INT32));
    qi = lc_fx_reshape(s, qi, 2, qs);
    kj = lc_fx_reshape(s, kj, 2, ks);
    f->keep = qi && kj ? lc_fx_own(s, lc_greater_equal(qi, kj)) : NULL;
  }
  if (f->keep) sc = lc_fx_where(s, f->keep, sc, lc_fx_const(s, sc, lowest_of(n->dtype)));
  int last = 4;
  if (!sc) return NULL;
  if (!p->has_sinks) return f->p = lc_fx_own(s, lc_softmax(sc, &last, 1, true));
  int ss[5] = {1, f->Hkv, f->R, 1, 1}, bs[5] = {f->B, f->Hkv, f->R, f->qL, 1};
  struct lc_node *sk = lc_fx_reshape(s, n->in[f->sinks_in], 5, ss);
  sk = sk ? lc_fx_own(s, lc_broadcast_to(sk, 5, bs)) : NULL;
  struct lc_node *parts[2] = {sk, sc};
  struct lc_node *full = sk ? lc_fx_own(s, lc_concatenate(2, parts, 4)) : NULL;
  struct lc_node *pf = full ? lc_fx_own(s, lc_softmax(full, &last, 1, true)) : NULL;
  f->psink = pf ? lc_fx_own(s, lc_slice_axis(pf, 4, 0, 1)) : NULL;
  f->p = pf ? lc_fx_own(s, lc_slice_axis(pf, 4, 1, f->kL + 1)) : NULL;
  return f->psink ? f->p : NULL;
}

/* x where a bool / causal mask kept the score, 0 elsewhere. */
static struct lc_node *kept(struct lc_fx *s, const struct sdpa_fwd *f, struct lc_node *x) {
  return f->keep && x ? lc_fx_where(s, f->keep, x, lc_fx_const(s, x, 0)) : x;
}

static int sdpa_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                    struct lc_node **out) {
  const struct sdpa_params *p = n->params;
  struct lc_fx s = {.failed = false};
  struct sdpa_fwd f;
  struct lc_node *P = sdpa_probs(&s, n, &f), *res[5] = {NULL};
  struct lc_node *g5 = heads5(&s, cot[0], f.Hkv);
  struct lc_node *dP = lc_fx_mm(&s, g5, lc_fx_swap_last(&s, f.v5));
  struct lc_node *rowdot = lc_fx_sum_last(&s, lc_fx_mul(&s, dP, P));
  struct lc_node *dS = kept(&s, &f, lc_fx_mul(&s, P, lc_fx_sub(&s, dP, rowdot)));
  bool ok = !s.failed;
  for (int j = 0; ok && j < nargs; j++) {
    int k = argnums[j];
    if (k == 0) {
      res[j] = heads4(&s, lc_fx_scale(&s, lc_fx_mm(&s, dS, f.k5), p->scale));
    } else if (k == 1) {
      struct lc_node *t = lc_fx_mm(&s, lc_fx_swap_last(&s, dS), f.q5);
      res[j] = sum_groups(&s, lc_fx_scale(&s, t, p->scale));
    } else if (k == 2) {
      res[j] = sum_groups(&s, lc_fx_mm(&s, lc_fx_swap_last(&s, P), g5));
    } else if (k == f.mask_in) {
      if (!f.additive) { /* a bool mask: no cotangent */
        res[j] = lc_fx_own(&s, lc_zeros_like(n->in[k]));
        continue;
      }
      res[j] = heads4(&s, dS);
    } else if (k == f.sinks_in) {
      int axes[3] = {0, 3, 4};
      struct lc_node *t = lc_fx_mul(&s, f.psink, rowdot);
      t = lc_fx_sum(&s, lc_fx_scale(&s, t, -1.0), axes, 3, false);
      res[j] = lc_fx_reshape(&s, t, 1, &f.Hq);
    }
    ok = res[j] != NULL && !s.failed;
  }
  for (int j = 0; j < nargs; j++) out[j] = ok ? lc_fx_keep(res[j]) : NULL;
  lc_fx_end(&s);
  return !ok;
}

/* dO = dP v + P dv with dP = P (dS - rowsum(P dS) - P_sink d(sink)),
 * dS = scale (dq k^T + q dk^T) (+ d(mask)), zero where masked. */
static int sdpa_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  const struct sdpa_params *p = n->params;
  struct lc_fx s = {.failed = false};
  struct sdpa_fwd f;
  struct lc_node *P = sdpa_probs(&s, n, &f), *dS = NULL, *row = NULL, *dO = NULL;
  bool ok = !s.failed;
  if (ok && tan[0])
    dS = lc_fx_mm(&s, heads5(&s, tan[0], f.Hkv), lc_fx_swap_last(&s, f.k5));
  if (ok && tan[1])
    dS = lc_fx_add0(&s, dS, lc_fx_mm(&s, f.q5, lc_fx_swap_last(&s, heads5(&s, tan[1], f.Hkv))));
  if (dS) dS = lc_fx_scale(&s, dS, p->scale);
  if (ok && f.additive && tan[f.mask_in]) dS = lc_fx_add0(&s, dS, heads5(&s, tan[f.mask_in], f.Hkv));
  dS = kept(&s, &f, dS);
  if (dS) row = lc_fx_sum_last(&s, lc_fx_mul(&s, P, dS));
  if (ok && f.sinks_in >= 0 && tan[f.sinks_in]) {
    int ss[5] = {1, f.Hkv, f.R, 1, 1};
    row = lc_fx_add0(&s, row, lc_fx_mul(&s, f.psink, lc_fx_reshape(&s, tan[f.sinks_in], 5, ss)));
  }
  if (row) {
    struct lc_node *c = dS ? lc_fx_sub(&s, dS, row) : lc_fx_scale(&s, row, -1.0);
    dO = lc_fx_mm(&s, lc_fx_mul(&s, P, c), f.v5);
  }
  if (ok && tan[2]) dO = lc_fx_add0(&s, dO, lc_fx_mm(&s, P, heads5(&s, tan[2], f.Hkv)));
  struct lc_node *r = heads4(&s, dO);
  ok = !s.failed;
  out[0] = ok ? lc_fx_keep(r) : NULL;
  lc_fx_end(&s);
  return !ok;
}

/* x with its batch (extent B) at axis `at`, broadcast when unbatched. */
static struct lc_node *batch_at(struct lc_fx *s, struct lc_node *x, int ax, int at, int B) {
  struct lc_node *f;
  if (ax == -1)
    f = lc_fx_own(s, lc_expand_dims(x, 1, &at));
  else
    f = ax == at ? x : lc_fx_own(s, lc_moveaxis(x, ax, at));
  if (!f || f->shape[at] == B) return f;
  int sh[f->ndim];
  memcpy(sh, f->shape, sizeof(int) * (size_t)f->ndim);
  sh[at] = B;
  return lc_fx_own(s, lc_broadcast_to(f, f->ndim, sh));
}

/* The batch is folded into the heads, (Bv, H) -> Bv H, for q, k, v, the
 * mask and the sinks alike: query head b Hq + h then reads kv head
 * (b Hq + h) / R = b Hkv + h / R, its own example's. */
static int sdpa_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                     struct lc_node **out, int *out_ax) {
  const struct sdpa_params *p = n->params;
  int B = lc_rule_batch_size(n->nin, in, ax);
  struct lc_fx s = {.failed = false};
  struct lc_node *ins[5] = {NULL};
  for (int k = 0; k < n->nin; k++) {
    bool sinks = p->has_sinks && k == n->nin - 1;
    struct lc_node *b = batch_at(&s, in[k], ax[k], sinks ? 0 : 1, B);
    ins[k] = b ? lc_fx_own(&s, sinks ? lc_flatten(b, 0, 1) : lc_flatten(b, 1, 2)) : NULL;
  }
  struct lc_node *r = NULL;
  if (!s.failed) {
    int sh[4] = {n->shape[0], B * n->shape[1], n->shape[2], n->shape[3]}, hs[2] = {B, n->shape[1]};
    struct lc_node *o =
        lc_fx_own(&s, lc_node_new_op(LC_OP_FAST_SDPA, n->dtype, 4, sh, n->nin, ins, p, sizeof *p));
    r = o ? lc_unflatten(o, 1, 2, hs) : NULL;
  }
  lc_fx_end(&s);
  out[0] = r;
  *out_ax = 1;
  return r == NULL;
}
