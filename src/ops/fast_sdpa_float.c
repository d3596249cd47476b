/* The float kernel of scaled dot-product attention (see fast_sdpa.h).
 * A task takes one (batch, kv head) and a block of query positions for
 * every query head of that kv head's group. It converts the keys it needs
 * into a transposed float copy Kt (D x n, so that one query's scores are
 * axpy's over contiguous keys) and the values into a float copy (n x Dv),
 * then per query row: scores, mask, softmax (vectorised exp), weighted sum
 * of values. Semantics are those described in fast_attention.c. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-math-errno", "no-trapping-math")
#endif
#include <math.h>
#include <stdlib.h>

#include "core/parallel.h"
#include "ops/dtype_dispatch.h"
#include "ops/fast_sdpa.h"
#include "ops/vmath.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(LACE_NO_CLONES)
#define HOT __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define HOT
#endif

enum { QBLOCK = 32 }; /* query positions per task */

/* n elements of dtype dt from p (element stride st) into out as float. */
static void load_f(const char *p, mlx_dtype dt, int64_t st, int64_t n, float *out) {
  switch (dt) {
    case MLX_FLOAT16:
      for (int64_t i = 0; i < n; i++) out[i] = lc_f16_to_f32(((const uint16_t *)p)[i * st]);
      break;
    case MLX_BFLOAT16:
      for (int64_t i = 0; i < n; i++) out[i] = lc_bf16_to_f32(((const uint16_t *)p)[i * st]);
      break;
    default:
      for (int64_t i = 0; i < n; i++) out[i] = ((const float *)p)[i * st];
  }
}

static void store_f(char *p, mlx_dtype dt, int64_t n, const float *in) {
  switch (dt) {
    case MLX_FLOAT16:
      for (int64_t i = 0; i < n; i++) ((uint16_t *)p)[i] = lc_f32_to_f16(in[i]);
      break;
    case MLX_BFLOAT16:
      for (int64_t i = 0; i < n; i++) ((uint16_t *)p)[i] = lc_f32_to_bf16(in[i]);
      break;
    default:
      for (int64_t i = 0; i < n; i++) ((float *)p)[i] = in[i];
  }
}

enum { LANES = 32 }; /* accumulators kept in registers by the blocked loops */

/* s[t] = sum_d q[d] * kt[d * ldk + t] for t < n, LANES keys at a time
 * (four partial sums over d to shorten the dependency chains). */
HOT static void scores(int D, int n, const float *restrict q, const float *restrict kt,
                       int64_t ldk, float *restrict s) {
  int t0 = 0;
  for (; t0 + LANES <= n; t0 += LANES) {
    float a0[LANES] = {0}, a1[LANES] = {0}, a2[LANES] = {0}, a3[LANES] = {0};
    int d = 0;
    for (; d + 4 <= D; d += 4)
      for (int u = 0; u < LANES; u++) {
        a0[u] += q[d] * kt[d * ldk + t0 + u];
        a1[u] += q[d + 1] * kt[(d + 1) * ldk + t0 + u];
        a2[u] += q[d + 2] * kt[(d + 2) * ldk + t0 + u];
        a3[u] += q[d + 3] * kt[(d + 3) * ldk + t0 + u];
      }
    for (; d < D; d++)
      for (int u = 0; u < LANES; u++) a0[u] += q[d] * kt[d * ldk + t0 + u];
    for (int u = 0; u < LANES; u++) s[t0 + u] = (a0[u] + a1[u]) + (a2[u] + a3[u]);
  }
  for (int t = t0; t < n; t++) s[t] = 0;
  for (int d = 0; d < D; d++)
    for (int t = t0; t < n; t++) s[t] += q[d] * kt[d * ldk + t];
}

/* s[t] = exp(s[t] - mx); returns the sum. */
HOT static float exp_sum(int n, float *restrict s, float mx) {
  float acc[16] = {0};
  int t = 0;
  for (; t + 16 <= n; t += 16)
    for (int u = 0; u < 16; u++) {
      s[t + u] = lc_vexpf(s[t + u] - mx);
      acc[u] += s[t + u];
    }
  for (; t < n; t++) {
    s[t] = lc_vexpf(s[t] - mx);
    acc[0] += s[t];
  }
  float sum = 0;
  for (int u = 0; u < 16; u++) sum += acc[u];
  return sum;
}

/* o[d] = sum_t p[t] * v[t * ldv + d] for d < Dv, LANES features at a time
 * (four partial sums over t to shorten the dependency chains). */
HOT static void weighted_sum(int n, int Dv, const float *restrict p, const float *restrict v,
                             int64_t ldv, float *restrict o) {
  int d0 = 0;
  for (; d0 + LANES <= Dv; d0 += LANES) {
    float a0[LANES] = {0}, a1[LANES] = {0}, a2[LANES] = {0}, a3[LANES] = {0};
    int t = 0;
    for (; t + 4 <= n; t += 4)
      for (int u = 0; u < LANES; u++) {
        a0[u] += p[t] * v[t * ldv + d0 + u];
        a1[u] += p[t + 1] * v[(t + 1) * ldv + d0 + u];
        a2[u] += p[t + 2] * v[(t + 2) * ldv + d0 + u];
        a3[u] += p[t + 3] * v[(t + 3) * ldv + d0 + u];
      }
    for (; t < n; t++)
      for (int u = 0; u < LANES; u++) a0[u] += p[t] * v[t * ldv + d0 + u];
    for (int u = 0; u < LANES; u++) o[d0 + u] = (a0[u] + a1[u]) + (a2[u] + a3[u]);
  }
  for (int d = d0; d < Dv; d++) o[d] = 0;
  for (int t = 0; t < n; t++)
    for (int d = d0; d < Dv; d++) o[d] += p[t] * v[t * ldv + d];
}

/* Keys [0, n) this task needs: for causal attention only those some row of
 * the block sees, unless a row sees none (qL > kL: it averages all values). */
static int keys_needed(const struct lc_sdpa_job *j, int i_end) {
  if (!j->causal || j->qL > j->kL) return j->kL;
  int lim = i_end - 1 + j->kL - j->qL + 1;
  return lim < j->kL ? lim : j->kL;
}

static void one_row(const struct lc_sdpa_job *j, int b, int h, int i, int n, const float *kt,
                    const float *vf, int64_t ldv, float *q, float *s, float *o) {
  const int64_t *qs = j->q->strides;
  mlx_dtype dt = j->q->dtype;
  size_t isz = dt == MLX_FLOAT32 ? 4 : 2;
  load_f(j->qd + (b * qs[0] + h * qs[1] + i * qs[2]) * (int64_t)isz, dt, qs[3], j->D, q);
  for (int d = 0; d < j->D; d++) q[d] *= j->scale;
  int kend = n, all_masked = 0;
  if (j->causal) {
    int lim = i + j->kL - j->qL;
    if (lim < 0) all_masked = 1;
    else if (lim + 1 < kend) kend = lim + 1;
  }
  float low = (float)j->lowest;
  if (all_masked)
    for (int t = 0; t < kend; t++) s[t] = low;
  else
    scores(j->D, kend, q, kt, n, s);
  if (j->mask) {
    const int64_t *ms = j->mask->strides;
    int64_t mo = b * ms[0] + h * ms[1] + i * ms[2];
    if (j->mask->dtype == MLX_BOOL) {
      const bool *m = (const bool *)j->md + mo;
      for (int t = 0; t < kend; t++)
        if (!m[t * ms[3]]) s[t] = low;
    } else {
      for (int t = 0; t < kend; t++) {
        float a;
        load_f(j->md + (mo + t * ms[3]) * (int64_t)isz, dt, 1, 1, &a);
        s[t] += a;
      }
    }
  }
  float mx = -INFINITY, sink = 0;
  for (int t = 0; t < kend; t++) mx = s[t] > mx ? s[t] : mx;
  if (j->sinks) {
    load_f(j->sd + h * j->sinks->strides[0] * (int64_t)isz, dt, 1, 1, &sink);
    mx = sink > mx ? sink : mx;
  }
  float den = exp_sum(kend, s, mx) + (j->sinks ? expf(sink - mx) : 0.0f);
  weighted_sum(kend, j->Dv, s, vf, ldv, o);
  float inv = kend ? 1.0f / den : 0.0f;
  for (int d = 0; d < j->Dv; d++) o[d] *= inv;
  store_f(j->out + (((int64_t)b * j->Hq + h) * j->qL + i) * j->Dv * (int64_t)isz, dt, j->Dv, o);
}

static void tasks(void *ctx, int64_t lo, int64_t hi) {
  struct lc_sdpa_job *j = ctx;
  int nblk = (j->qL + QBLOCK - 1) / QBLOCK, group = j->Hq / j->Hkv;
  int D = j->D, Dv = j->Dv, kL = j->kL;
  mlx_dtype dt = j->q->dtype;
  size_t isz = dt == MLX_FLOAT32 ? 4 : 2;
  const int64_t *ks = j->k->strides, *vs = j->v->strides;
  size_t need = (size_t)D * kL + (size_t)kL * Dv + (size_t)kL + (size_t)D + (size_t)Dv + 1;
  float *buf = malloc(sizeof(float) * need);
  if (!buf) {
    atomic_store(&j->failed, 1);
    return;
  }
  for (int64_t task = lo; task < hi; task++) {
    int blk = (int)(task % nblk), hk = (int)(task / nblk % j->Hkv), b = (int)(task / nblk / j->Hkv);
    int i0 = blk * QBLOCK, i1 = i0 + QBLOCK < j->qL ? i0 + QBLOCK : j->qL;
    int n = keys_needed(j, i1);
    float *kt = buf, *vf = kt + (size_t)D * n, *s = vf + (size_t)n * Dv, *q = s + n, *o = q + D;
    const char *kb = j->kd + (b * ks[0] + hk * ks[1]) * (int64_t)isz;
    const char *vb = j->vd + (b * vs[0] + hk * vs[1]) * (int64_t)isz;
    for (int d = 0; d < D; d++)
      load_f(kb + d * ks[3] * (int64_t)isz, dt, ks[2], n, kt + (size_t)d * n);
    const float *vp = vf;
    int64_t ldv = Dv;
    if (dt == MLX_FLOAT32 && vs[3] == 1) {
      vp = (const float *)vb;
      ldv = vs[2];
    } else {
      for (int t = 0; t < n; t++)
        load_f(vb + t * vs[2] * (int64_t)isz, dt, vs[3], Dv, vf + (size_t)t * Dv);
    }
    for (int hh = 0; hh < group; hh++)
      for (int i = i0; i < i1; i++) one_row(j, b, hk * group + hh, i, n, kt, vp, ldv, q, s, o);
  }
  free(buf);
}

void lc_sdpa_float(struct lc_sdpa_job *j) {
  int nblk = (j->qL + QBLOCK - 1) / QBLOCK;
  int64_t ntasks = (int64_t)j->B * j->Hkv * nblk;
  int64_t work = (int64_t)(j->Hq / j->Hkv) * (j->qL < QBLOCK ? j->qL : QBLOCK) * j->kL *
                 (j->D + j->Dv);
  lc_parallel_for(ntasks, work >= 65536 ? 1 : 65536 / (work + 1) + 1, tasks, j);
}
