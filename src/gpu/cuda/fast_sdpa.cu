// Scaled dot-product attention on the GPU (lc_cu_sdpa, fast.h), one
// split-kv kernel for every query length (flash-decoding style):
//
// A block takes RT query vectors, RH heads of one kv head's group (GQA:
// they share every key and value the block loads) times QR consecutive
// query rows of one batch, and one split, a range of ksplit keys. Its
// warps take keys in turn; a key is read by a group of LPK lanes, each
// holding P 16-byte packs of the row (lane li has packs li, li + LPK, ...),
// so a warp reads 32 / LPK keys per step. Keys and values may differ in
// head dim (D and Dv): the lanes cover the longer of the two rows, each
// load guarded by its own row's pack count. Each group keeps an online
// softmax per vector (running max m, sum l, weighted values acc); groups
// merge by shuffles, warps through shared memory. With one split the
// block writes the output; with several it writes its (acc, m, l) to the
// scratch and sdpa_combine merges the splits.
//
// Numerics follow the CPU kernel (ops/fast_sdpa_float.c): float
// arithmetic, q scaled before the dot products, keys past a row's causal
// limit left out, masked scores set to the dtype's lowest value (a fully
// masked row averages v), the sink only in the denominator, the output
// o * (1 / den) rounded once. exp(-inf) terms are taken as 0 explicitly,
// so rows of -inf scores give NaN as on the CPU.
#include <cuda_runtime.h>
#include <math.h>

#include "gpu/cuda/cu_types.cuh"
#include "gpu/cuda/pdl.cuh"
#include "gpu/cuda/fast.h"
#include "gpu/cuda/fast_common.cuh"

namespace {

constexpr int kWarps = 4;
constexpr int kMinKeysPerSplit = 32;
constexpr int kFillBlocks = 528; /* about 4 blocks per SM of an H200 */

struct Plan {
  int V, npk, LPK, P, RT, RH, QR, nsub, ntile, nsplit, ksplit;
};

// The launch shape for a, or false when the kernel does not cover it.
bool make_plan(const struct lc_cu_sdpa *a, Plan *p) {
  int sz = a->dt == MLX_FLOAT32 ? 4 : (a->dt == MLX_FLOAT16 || a->dt == MLX_BFLOAT16) ? 2 : 0;
  if (!sz || a->D <= 0 || a->Dv <= 0 || a->kL <= 0 || a->Hkv <= 0 || a->Hq % a->Hkv) return false;
  p->V = 16 / sz;
  if (a->D % p->V || a->Dv % p->V) return false;
  p->npk = (a->D > a->Dv ? a->D : a->Dv) / p->V; /* packs per lane group: the longer row */
  p->LPK = 1;
  while (p->LPK < p->npk && p->LPK < 32) p->LPK <<= 1;
  p->P = (p->npk + p->LPK - 1) / p->LPK;
  if (p->P > 2) return false;
  int G = a->Hq / a->Hkv, most_rt = 8 / p->P;
  p->RH = most_rt;
  while (p->RH > 1 && G % p->RH) p->RH >>= 1;
  p->QR = 1;
  while (p->RH * p->QR * 2 <= most_rt && p->QR * 2 <= a->qL) p->QR <<= 1;
  p->RT = p->RH * p->QR;
  p->nsub = G / p->RH;
  p->ntile = (a->qL + p->QR - 1) / p->QR;
  int64_t tiles = (int64_t)a->B * p->ntile * a->Hkv * p->nsub;
  if ((int64_t)a->Hkv * p->nsub > 65535 || tiles == 0) return false;
  int64_t ns = 1;
  if (tiles < kFillBlocks) {
    int64_t want = (kFillBlocks + tiles - 1) / tiles;
    int64_t most = (a->kL + kMinKeysPerSplit - 1) / kMinKeysPerSplit;
    ns = want < most ? want : most;
  }
  p->ksplit = (int)((a->kL + ns - 1) / ns);
  p->nsplit = (a->kL + p->ksplit - 1) / p->ksplit;
  return (int64_t)a->B * p->ntile * p->nsplit <= 0x7fffffff;
}

__device__ __forceinline__ float ex(float x, float m) { return x == -INFINITY ? 0.f : expf(x - m); }

template <class T, int P, int RT>
__global__ void __launch_bounds__(kWarps * 32)
    sdpa_split(struct lc_cu_sdpa a, int LPK, int RH, int nsub, int ntile, int nsplit, int ksplit) {
  lc_pdl_begin();
  constexpr int V = 16 / sizeof(T);
  extern __shared__ float smem[];
  const int npk = a.D / V, npv = a.Dv / V, Dv = a.Dv, Dp = LPK * P * V, QR = RT / RH;
  const int split = blockIdx.x % nsplit, tile = (int)(blockIdx.x / nsplit % ntile);
  const int b = (int)(blockIdx.x / nsplit / ntile);
  const int hkv = blockIdx.y / nsub, h0 = hkv * (a.Hq / a.Hkv) + (blockIdx.y % nsub) * RH;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, kpw = 32 / LPK;
  const int grp = lane / LPK, li = lane % LPK;

  /* vector r: head h0 + r % RH, query row tile * QR + r / RH */
  int kend[RT];
  bool live[RT], all_masked[RT];
  int kmax = 0;
#pragma unroll
  for (int r = 0; r < RT; r++) {
    int i = tile * QR + r / RH;
    live[r] = i < a.qL;
    kend[r] = live[r] ? a.kL : 0;
    all_masked[r] = false;
    if (a.causal && live[r]) {
      int lim = i + a.kL - a.qL;
      if (lim < 0) all_masked[r] = true;
      else if (lim + 1 < kend[r]) kend[r] = lim + 1;
    }
    kmax = kend[r] > kmax ? kend[r] : kmax;
  }
  const int t0 = split * ksplit, t1 = t0 + ksplit < kmax ? t0 + ksplit : kmax;

  float q[RT][P][V], acc[RT][P][V], m[RT], l[RT];
#pragma unroll
  for (int r = 0; r < RT; r++) {
    const int i = tile * QR + r / RH;
    const T *qp = (const T *)a.q + b * a.qs[0] + (int64_t)(h0 + r % RH) * a.qs[1] +
                  (int64_t)i * a.qs[2];
    m[r] = -INFINITY;
    l[r] = 0;
#pragma unroll
    for (int j = 0; j < P; j++) {
      int pk = li + j * LPK;
      bool in = live[r] && pk < npk;
      lc_pack<T> u;
      if (in) u = lc_pack<T>::load(qp + pk * V);
#pragma unroll
      for (int k = 0; k < V; k++) {
        q[r][j][k] = in ? lc_ld(u.e[k]) * a.scale : 0.f;
        acc[r][j][k] = 0;
      }
    }
  }
  const T *kb = (const T *)a.k + b * a.ks[0] + hkv * a.ks[1];
  const T *vb = (const T *)a.v + b * a.vs[0] + hkv * a.vs[1];
  /* warp-uniform trip count: the shuffles below need every lane */
  for (int base = t0 + warp * kpw; base < t1; base += kWarps * kpw) {
    const int t = base + grp;
    const bool valid = t < t1;
    float kf[P][V], vf[P][V], s[RT], madd[RT];
    bool keep[RT];
    /* the mask's values for this key, loaded with k and v (not after the
     * shuffles: one memory latency per step, not two) */
#pragma unroll
    for (int r = 0; r < RT; r++) {
      madd[r] = 0.f;
      keep[r] = true;
      if (a.mask && valid && t < kend[r]) {
        int64_t mo = b * a.ms[0] + (int64_t)(h0 + r % RH) * a.ms[1] +
                     (int64_t)(tile * QR + r / RH) * a.ms[2] + t * a.ms[3];
        if (a.mask_bool) keep[r] = ((const bool *)a.mask)[mo];
        else madd[r] = lc_ld(((const T *)a.mask)[mo]);
      }
    }
#pragma unroll
    for (int j = 0; j < P; j++) { /* both loads in flight before the shuffles */
      int pk = li + j * LPK;
      bool ink = valid && pk < npk, inv = valid && pk < npv;
      lc_pack<T> u, w;
      if (ink) u = lc_pack<T>::load(kb + t * a.ks[2] + pk * V);
      if (inv) w = lc_pack<T>::load(vb + t * a.vs[2] + pk * V);
#pragma unroll
      for (int k = 0; k < V; k++) {
        kf[j][k] = ink ? lc_ld(u.e[k]) : 0.f;
        vf[j][k] = inv ? lc_ld(w.e[k]) : 0.f;
      }
    }
#pragma unroll
    for (int r = 0; r < RT; r++) {
      float dot = 0;
#pragma unroll
      for (int j = 0; j < P; j++)
#pragma unroll
        for (int k = 0; k < V; k++) dot += q[r][j][k] * kf[j][k];
      s[r] = dot;
    }
    for (int o = LPK / 2; o > 0; o >>= 1)
#pragma unroll
      for (int r = 0; r < RT; r++) s[r] += __shfl_xor_sync(0xffffffffu, s[r], o);
    if (!valid) continue;
#pragma unroll
    for (int r = 0; r < RT; r++) {
      if (t >= kend[r]) continue; /* past the causal limit (or a dead row) */
      if (all_masked[r]) s[r] = a.lowest;
      if (a.mask) {
        if (a.mask_bool) {
          if (!keep[r]) s[r] = a.lowest;
        } else {
          s[r] += madd[r];
        }
      }
      float mn = fmaxf(m[r], s[r]);
      float c = ex(m[r], mn), e = ex(s[r], mn);
      l[r] = l[r] * c + e;
#pragma unroll
      for (int j = 0; j < P; j++)
#pragma unroll
        for (int k = 0; k < V; k++) acc[r][j][k] = acc[r][j][k] * c + e * vf[j][k];
      m[r] = mn;
    }
  }
  /* merge the groups of the warp (a butterfly: every lane ends with it) */
  for (int o = LPK; o < 32; o <<= 1)
#pragma unroll
    for (int r = 0; r < RT; r++) {
      float mo = __shfl_xor_sync(0xffffffffu, m[r], o), lo = __shfl_xor_sync(0xffffffffu, l[r], o);
      float mn = fmaxf(m[r], mo), ca = ex(m[r], mn), cb = ex(mo, mn);
      l[r] = l[r] * ca + lo * cb;
#pragma unroll
      for (int j = 0; j < P; j++)
#pragma unroll
        for (int k = 0; k < V; k++) {
          float ao = __shfl_xor_sync(0xffffffffu, acc[r][j][k], o);
          acc[r][j][k] = acc[r][j][k] * ca + ao * cb;
        }
      m[r] = mn;
    }
  const int rs = Dp + 2; /* per (warp, vector): acc[Dp], m, l */
  if (lane < LPK)
#pragma unroll
    for (int r = 0; r < RT; r++) {
      float *w = smem + (warp * RT + r) * rs;
#pragma unroll
      for (int j = 0; j < P; j++)
#pragma unroll
        for (int k = 0; k < V; k++) w[(li + j * LPK) * V + k] = acc[r][j][k];
      if (lane == 0) {
        w[Dp] = m[r];
        w[Dp + 1] = l[r];
      }
    }
  __syncthreads();
  for (int e = threadIdx.x; e < RT * Dv; e += blockDim.x) {
    const int r = e / Dv, d = e % Dv, h = h0 + r % RH, i = tile * QR + r / RH;
    if (i >= a.qL) continue;
    float M = -INFINITY;
    for (int w = 0; w < kWarps; w++) M = fmaxf(M, smem[(w * RT + r) * rs + Dp]);
    float sink = 0;
    bool has_sink = a.sinks && nsplit == 1;
    if (has_sink) {
      sink = lc_ld(((const T *)a.sinks)[h * a.ss]);
      M = fmaxf(M, sink);
    }
    float L = 0, A = 0;
    for (int w = 0; w < kWarps; w++) {
      const float *src = smem + (w * RT + r) * rs;
      float c = ex(src[Dp], M);
      L += src[Dp + 1] * c;
      A += src[d] * c;
    }
    if (nsplit == 1) {
      if (has_sink) L += ex(sink, M);
      T *o = (T *)a.out + (((int64_t)b * a.Hq + h) * a.qL + i) * Dv;
      o[d] = lc_st<T>::f(A * (1.0f / L));
    } else {
      float *pp = a.work + ((((int64_t)b * a.qL + i) * a.Hq + h) * nsplit + split) * (Dv + 2);
      pp[d] = A;
      if (d == 0) {
        pp[Dv] = M;
        pp[Dv + 1] = L;
      }
    }
  }
}

// Merges the nsplit partial states of one (row, head) into the output:
// the splits' maxima and weights first, spread over the threads (shared
// memory: nsplit weights, then kCombineThreads / 32 partials), then each
// output element's sum over the splits with its loads independent of one
// another. The order of every sum is fixed: the result does not depend on
// scheduling.
constexpr int kCombineThreads = 128;

// The sum (max) of v over the block, every thread's answer; red holds
// kCombineThreads / 32 floats and is free again when it returns.
template <bool Max> __device__ float block_fold(float v, float *red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = Max ? fmaxf(v, w) : v + w;
  }
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  v = red[0];
  for (int w = 1; w < kCombineThreads / 32; w++) v = Max ? fmaxf(v, red[w]) : v + red[w];
  __syncthreads();
  return v;
}

template <class T> __global__ void __launch_bounds__(kCombineThreads)
    sdpa_combine(struct lc_cu_sdpa a, int nsplit) {
  lc_pdl_begin();
  extern __shared__ float wts[]; /* nsplit weights, then the fold's partials */
  float *red = wts + nsplit;
  const int D = a.Dv; /* the partial states hold value rows */
  const int64_t rh = blockIdx.x, row = rh / a.Hq; /* (b * qL + i) * Hq + h */
  const int h = (int)(rh % a.Hq), b = (int)(row / a.qL), i = (int)(row % a.qL);
  const float *pp = a.work + rh * nsplit * (int64_t)(D + 2);
  float M = -INFINITY, sink = 0;
  for (int s = threadIdx.x; s < nsplit; s += kCombineThreads) M = fmaxf(M, pp[s * (D + 2) + D]);
  M = block_fold<true>(M, red);
  if (a.sinks) {
    sink = lc_ld(((const T *)a.sinks)[h * a.ss]);
    M = fmaxf(M, sink);
  }
  float L = 0;
  for (int s = threadIdx.x; s < nsplit; s += kCombineThreads) {
    float c = ex(pp[s * (D + 2) + D], M);
    wts[s] = c;
    L += pp[s * (D + 2) + D + 1] * c;
  }
  L = block_fold<false>(L, red); /* its barrier also publishes wts */
  if (a.sinks) L += ex(sink, M);
  const float inv = 1.0f / L;
  T *o = (T *)a.out + (((int64_t)b * a.Hq + h) * a.qL + i) * D;
  for (int d = threadIdx.x; d < D; d += kCombineThreads) {
    float A = 0;
    int s = 0;
    for (; s + 4 <= nsplit; s += 4) {
      float x0 = pp[(s + 0) * (D + 2) + d], x1 = pp[(s + 1) * (D + 2) + d];
      float x2 = pp[(s + 2) * (D + 2) + d], x3 = pp[(s + 3) * (D + 2) + d];
      A += x0 * wts[s];
      A += x1 * wts[s + 1];
      A += x2 * wts[s + 2];
      A += x3 * wts[s + 3];
    }
    for (; s < nsplit; s++) A += pp[s * (D + 2) + d] * wts[s];
    o[d] = lc_st<T>::f(A * inv);
  }
}

bool rows_fit(const void *p, const int64_t *st, int V) {
  if (((uintptr_t)p & 15) || st[3] != 1) return false;
  for (int d = 0; d < 3; d++)
    if (st[d] % V) return false;
  return true;
}

template <class T, int P, int RT>
void launch_split(const struct lc_cu_sdpa &a, const Plan &p, cudaStream_t s) {
  size_t shm = sizeof(float) * kWarps * RT * (p.LPK * P * p.V + 2);
  dim3 grid((unsigned)((int64_t)a.B * p.ntile * p.nsplit), (unsigned)(a.Hkv * p.nsub));
  lc_launch(sdpa_split<T, P, RT>, dim3(grid), dim3(kWarps * 32), shm, s, a, p.LPK, p.RH, p.nsub,
            p.ntile, p.nsplit, p.ksplit);
}

template <class T> void launch(const struct lc_cu_sdpa &a, const Plan &p, cudaStream_t s) {
  switch (p.P * 16 + p.RT) {
    case 16 + 1: launch_split<T, 1, 1>(a, p, s); break;
    case 16 + 2: launch_split<T, 1, 2>(a, p, s); break;
    case 16 + 4: launch_split<T, 1, 4>(a, p, s); break;
    case 16 + 8: launch_split<T, 1, 8>(a, p, s); break;
    case 32 + 1: launch_split<T, 2, 1>(a, p, s); break;
    case 32 + 2: launch_split<T, 2, 2>(a, p, s); break;
    default: launch_split<T, 2, 4>(a, p, s); break;
  }
  if (p.nsplit > 1) {
    size_t shm = sizeof(float) * ((size_t)p.nsplit + kCombineThreads / 32);
    lc_launch(sdpa_combine<T>, dim3((unsigned)((int64_t)a.B * a.qL * a.Hq)),
              dim3(kCombineThreads), shm, s, a, p.nsplit);
  }
}

}  // namespace

extern "C" int64_t lc_cu_sdpa_work_floats(const struct lc_cu_sdpa *a) {
  Plan p;
  if (!make_plan(a, &p)) return -1;
  return p.nsplit > 1 ? (int64_t)a->B * a->Hq * a->qL * p.nsplit * (a->Dv + 2) : 0;
}

extern "C" int lc_cu_sdpa(const struct lc_cu_sdpa *a, void *stream) {
  Plan p;
  if ((int64_t)a->B * a->Hq * a->qL == 0) return 0;
  if (!make_plan(a, &p) || (p.nsplit > 1 && !a->work)) return LC_CU_UNSUPPORTED;
  if (!rows_fit(a->q, a->qs, p.V) || !rows_fit(a->k, a->ks, p.V) || !rows_fit(a->v, a->vs, p.V))
    return LC_CU_UNSUPPORTED;
  cudaStream_t s = (cudaStream_t)stream;
  switch (a->dt) {
    case MLX_FLOAT16: launch<__half>(*a, p, s); break;
    case MLX_BFLOAT16: launch<__nv_bfloat16>(*a, p, s); break;
    default: launch<float>(*a, p, s); break;
  }
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : -(int)e;
}
