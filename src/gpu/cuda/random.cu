// Random kernels: threefry bits, the distributions of RANDOM_DIST,
// categorical (argmax of gumbel noise + logits), the permutation's stable
// argsort (CUB's radix sort) and the reordering along an axis. Each follows
// its CPU evaluator (ops/random.c, ops/random_dist.c) operation for
// operation, with every float operation spelled as its round-to-nearest
// intrinsic so that nvcc cannot fuse or reorder it: bits, uniform,
// bernoulli, randint and categorical on given noise agree bit for bit;
// where the CPU calls libm (logf, expf, log1pf in normal, gumbel, laplace,
// truncated normal), the GPU evaluates the function in double and rounds
// once, which agrees with glibc's float functions except in rare last-ulp
// cases.
#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>

#include "gpu/cuda/cu_types.cuh"
#include "gpu/cuda/cx.cuh"
#include "gpu/cuda/random.h"
#include "gpu/cuda/launch.cuh"

namespace {

// ---- threefry ----

__device__ __forceinline__ uint32_t rotl(uint32_t x, unsigned r) {
  return (x << r) | (x >> (32 - r));
}

// Threefry-2x32, 20 rounds: the CPU's threefry2x32.
__device__ void threefry(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1, uint32_t *o0,
                         uint32_t *o1) {
  const unsigned rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  uint32_t x0 = c0 + ks[0], x1 = c1 + ks[1];
#pragma unroll
  for (int i = 0; i < 5; i++) {
#pragma unroll
    for (int j = 0; j < 4; j++) {
      x0 += x1;
      x1 = rotl(x1, rot[i % 2][j]);
      x1 ^= x0;
    }
    x0 += ks[(i + 1) % 3];
    x1 += ks[(i + 2) % 3] + (uint32_t)i + 1;
  }
  *o0 = x0;
  *o1 = x1;
}

// Word w of a key's stream of `bytes` bytes at o: its leading bytes when
// the stream ends inside it (little-endian, as the CPU's memcpy).
__device__ __forceinline__ void put_word(uint8_t *o, int64_t bytes, int64_t w, uint32_t v) {
  int64_t at = 4 * w;
  if (at + 4 <= bytes && ((uintptr_t)(o + at) & 3) == 0) {
    *(uint32_t *)(o + at) = v;
    return;
  }
  for (int b = 0; b < 4 && at + b < bytes; b++) o[at + b] = (uint8_t)(v >> (8 * b));
}

// One thread per counter pair: pairs j < half fill words j and
// j + half + odd; with an odd word count, pair `half` (counter (half, 0))
// fills the middle word.
__global__ void bits_kernel(const uint32_t *keys, lc_cu_view kv, int64_t bpk, uint8_t *out,
                            int64_t half, int64_t odd, int64_t total) {
  const int64_t per = half + odd;
  GRID_LOOP(t, total) {
    int64_t key = t / per, j = t - key * per;
    uint32_t k0 = keys[view_off(kv, 2 * key)], k1 = keys[view_off(kv, 2 * key + 1)];
    uint8_t *o = out + key * bpk;
    uint32_t a, b;
    if (j < half) {
      threefry(k0, k1, (uint32_t)j, (uint32_t)(j + half + odd), &a, &b);
      put_word(o, bpk, j, a);
      put_word(o, bpk, j + half + odd, b);
    } else {
      threefry(k0, k1, (uint32_t)half, 0u, &a, &b);
      put_word(o, bpk, half, a);
    }
  }
}

// ---- distributions ----

__device__ __forceinline__ double ld(const void *p, int dt, int64_t off) {
  switch (dt) {
    case MLX_FLOAT16: return __half2float(((const __half *)p)[off]);
    case MLX_BFLOAT16: return __bfloat162float(((const __nv_bfloat16 *)p)[off]);
    case MLX_FLOAT32: return ((const float *)p)[off];
    case MLX_FLOAT64: return ((const double *)p)[off];
    case MLX_UINT32: return ((const uint32_t *)p)[off];
    default: return 0;
  }
}

// x rounded to dtype t (float types), as the CPU's rt.
__device__ __forceinline__ double rt(int t, double x) {
  switch (t) {
    case MLX_FLOAT32: return __double2float_rn(x);
    case MLX_FLOAT16: return __half2float(__float2half_rn(__double2float_rn(x)));
    case MLX_BFLOAT16: return __bfloat162float(__float2bfloat16_rn(__double2float_rn(x)));
    default: return x;
  }
}

// The largest value below 1 in t (float32's for the others).
__device__ __forceinline__ float below_one(int t) {
  switch (t) {
    case MLX_FLOAT16: return 0.99951171875f;  // 0x3bff
    case MLX_BFLOAT16: return 0.99609375f;    // 0x3f7f
    default: return __int_as_float(0x3f7fffff);
  }
}

__device__ __forceinline__ float unit(uint32_t b, float upper) {
  float u = __fdiv_rn(__uint2float_rn(b), 4294967296.0f);
  return u < upper ? u : upper;
}

__device__ __forceinline__ double uniform_t(int t, uint32_t b, double lo, double hi) {
  double u = rt(t, unit(b, below_one(t)));
  double range = rt(t, __dsub_rn(hi, lo));
  return rt(t, __dadd_rn(rt(t, __dmul_rn(range, u)), lo));
}

// libm's float functions, rounded once from double.
__device__ __forceinline__ float logf_1r(float x) { return __double2float_rn(log((double)x)); }
__device__ __forceinline__ float expf_1r(float x) { return __double2float_rn(exp((double)x)); }
__device__ __forceinline__ float log1pf_1r(float x) {
  return __double2float_rn(log1p((double)x));
}

__device__ float erfinv_f32(float a) {
  float t = logf_1r(fmaf(a, __fsub_rn(0.0f, a), 1.0f)), p;
  if (fabsf(t) > 6.125f) {
    p = 3.03697567e-10f;
    p = fmaf(p, t, 2.93243101e-8f);
    p = fmaf(p, t, 1.22150334e-6f);
    p = fmaf(p, t, 2.84108955e-5f);
    p = fmaf(p, t, 3.93552968e-4f);
    p = fmaf(p, t, 3.02698812e-3f);
    p = fmaf(p, t, 4.83185798e-3f);
    p = fmaf(p, t, -2.64646143e-1f);
    p = fmaf(p, t, 8.40016484e-1f);
  } else {
    p = 5.43877832e-9f;
    p = fmaf(p, t, 1.43285448e-7f);
    p = fmaf(p, t, 1.22774793e-6f);
    p = fmaf(p, t, 1.12963626e-7f);
    p = fmaf(p, t, -5.61530760e-5f);
    p = fmaf(p, t, -1.47697632e-4f);
    p = fmaf(p, t, 2.31468678e-3f);
    p = fmaf(p, t, 1.15392581e-2f);
    p = fmaf(p, t, -2.32015476e-1f);
    p = fmaf(p, t, 8.86226892e-1f);
  }
  return __fmul_rn(a, p);
}

__device__ float erf_f32(float x) {
  float v = fabsf(x);
  float t = __fdiv_rn(1.0f, fmaf(0.3275911f, v, 1.0f));
  float r = fmaf(1.061405429f, t, -1.453152027f);
  r = fmaf(r, t, 1.421413741f);
  r = fmaf(r, t, -0.284496736f);
  r = fmaf(r, t, 0.254829592f);
  float e = -expf_1r(__fmul_rn(-x, x));
  float res = fmaf(__fmul_rn(e, t), r, 1.0f);
  return x > 0 ? res : -res;
}

__device__ __forceinline__ float symmetric_unit(uint32_t b) {
  const float lo = __int_as_float(0xbf7fffff);  // nextafter(-1, 0)
  float range = __fsub_rn(1.0f, lo);
  float u = __fmul_rn(range, unit(b, below_one(MLX_FLOAT32)));
  return __fadd_rn(u, lo);
}

// Stores v into element i of out, as lc_dtype_store.
template <class T> __device__ __forceinline__ void st_int(void *out, int64_t i, double v) {
  constexpr bool is_signed = (T)(-1) < (T)0;
  double iv = v != v ? 0.0 : v;
  T r;
  if (iv < 0x1p63 && iv >= -0x1p63) {
    long long s = (long long)iv;
    if constexpr (sizeof(T) == 8 && !is_signed)
      r = iv < 0 ? (T)s : (T)(unsigned long long)iv;
    else
      r = (T)s;
  } else if (iv > 0) {
    if constexpr (sizeof(T) == 8 && !is_signed)
      r = iv < 0x1p64 ? (T)(unsigned long long)iv : (T)~0ull;
    else
      r = is_signed ? (T)((1ull << (8 * sizeof(T) - 1)) - 1) : (T)~0ull;
  } else {
    r = is_signed ? (T)(1ull << (8 * sizeof(T) - 1)) : (T)0;
  }
  ((T *)out)[i] = r;
}

__device__ void store(int dt, void *out, int64_t i, double v) {
  switch (dt) {
    case MLX_BOOL: ((bool *)out)[i] = v != 0; break;
    case MLX_UINT8: st_int<uint8_t>(out, i, v); break;
    case MLX_UINT16: st_int<uint16_t>(out, i, v); break;
    case MLX_UINT32: st_int<uint32_t>(out, i, v); break;
    case MLX_UINT64: st_int<unsigned long long>(out, i, v); break;
    case MLX_INT8: st_int<int8_t>(out, i, v); break;
    case MLX_INT16: st_int<int16_t>(out, i, v); break;
    case MLX_INT32: st_int<int32_t>(out, i, v); break;
    case MLX_INT64: st_int<long long>(out, i, v); break;
    case MLX_FLOAT16: ((__half *)out)[i] = __float2half_rn(__double2float_rn(v)); break;
    case MLX_FLOAT32: ((float *)out)[i] = __double2float_rn(v); break;
    case MLX_FLOAT64: ((double *)out)[i] = v; break;
    case MLX_BFLOAT16:
      ((__nv_bfloat16 *)out)[i] = __float2bfloat16_rn(__double2float_rn(v));
      break;
    default: break;
  }
}

// The CPU's float32 fast path (dist_f32_fast): float arithmetic only.
__device__ float dist_f32(const lc_cu_dist &a, uint32_t b, const int64_t *off) {
  const float *x = (const float *)a.in[1], *y = (const float *)a.in[2];
  if (a.kind == LC_CU_DIST_UNIFORM) {
    float lo = x[off[1]], range = __fsub_rn(y[off[2]], lo);
    return __fadd_rn(__fmul_rn(range, unit(b, below_one(MLX_FLOAT32))), lo);
  }
  const float s2 = 1.41421356237309515f;  // (float)sqrt(2.0)
  float e = erfinv_f32(symmetric_unit(b));
  float sc = a.has_scale ? __fmul_rn(s2, x[off[1]]) : s2, v = __fmul_rn(sc, e);
  return a.has_loc ? __fadd_rn(y[off[2]], v) : v;
}

// The CPU's generic path (dist_kernel's switch), in double with each
// intermediate rounded to the output dtype ot.
__device__ double dist_any(const lc_cu_dist &a, uint32_t b, const int64_t *off) {
  const int ot = a.out_dt;
  const double sqrt2 = 1.4142135623730951;  // sqrt(2.0)
#define LD(k) ld(a.in[k], a.in_dt[k], off[k])
  switch (a.kind) {
    case LC_CU_DIST_UNIFORM: return uniform_t(ot, b, LD(1), LD(2));
    case LC_CU_DIST_NORMAL: {
      double e = rt(ot, erfinv_f32(symmetric_unit(b)));
      double s = rt(ot, sqrt2);
      if (a.has_scale) s = rt(ot, __dmul_rn(s, LD(1)));
      double v = rt(ot, __dmul_rn(s, e));
      if (a.has_loc) v = rt(ot, __dadd_rn(LD(2), v));
      return v;
    }
    case LC_CU_DIST_LAPLACE: {
      float u = symmetric_unit(b);
      double sg = u > 0 ? 1.0 : (u < 0 ? -1.0 : 0.0), v;
      if (ot == MLX_FLOAT64)
        v = __dmul_rn(sg, log1p(-1.0 * fabs((double)u)));
      else
        v = __double2float_rn(__dmul_rn(sg, (double)log1pf_1r(-1.0f * fabsf(u))));
      v = rt(ot, v);
      if (a.scale != 1.0f) v = rt(ot, __dmul_rn(rt(ot, a.scale), v));
      if (a.loc != 0.0f) v = rt(ot, __dadd_rn(rt(ot, a.loc), v));
      return v;
    }
    case LC_CU_DIST_GUMBEL: {
      double u = rt(ot, unit(b, below_one(ot)));
      double l1 = rt(ot, logf_1r(__double2float_rn(u)));
      double l2 = rt(ot, logf_1r(__double2float_rn(-l1)));
      return -l2;
    }
    case LC_CU_DIST_TRUNC: {
      double lower = LD(1), upper = LD(2), s = rt(ot, sqrt2);
      double lo = rt(ot, erf_f32(__double2float_rn(rt(ot, __ddiv_rn(lower, s)))));
      double hi = rt(ot, erf_f32(__double2float_rn(rt(ot, __ddiv_rn(upper, s)))));
      double u = uniform_t(ot, b, lo, hi);
      double v = rt(ot, __dmul_rn(s, rt(ot, erfinv_f32(__double2float_rn(u)))));
      v = upper < v ? upper : v;
      return v > lower ? v : lower;
    }
    case LC_CU_DIST_BERNOULLI: {
      const float upper = 4294967808.0f;  // nextafter(float(UINT32_MAX), +inf)
      double pr = LD(1);
      if (a.p_f64) return (double)b < __dmul_rn(pr, (double)upper);
      return __uint2float_rn(b) < __double2float_rn(__dmul_rn(pr, (double)upper));
    }
    case LC_CU_DIST_RANDINT: {
      float lo = __double2float_rn(LD(1)), hi = __double2float_rn(LD(2));
      float range = __fsub_rn(hi, lo);
      float u = __fmul_rn(range, unit(b, below_one(MLX_FLOAT32)));
      u = __fadd_rn(u, lo);
      double f = floorf(u), h = trunc(__dsub_rn(LD(4), 1.0)), l = trunc(LD(3));
      double v = f < h ? f : h;
      return v > l ? v : l;
    }
    default: return 0;
  }
#undef LD
}

// off[k] = the offset in input k of output element i (row-major over
// shape[0..ndim)), through strides[k].
__device__ __forceinline__ void offsets_of(int64_t i, int ndim, const int *shape,
                                           const int64_t (*strides)[LC_CU_MAX_DIMS], int nin,
                                           int64_t *off) {
  for (int k = 0; k < nin; k++) off[k] = 0;
  for (int d = ndim - 1; d >= 0; d--) {
    int64_t q = i / shape[d], c = i - q * shape[d];
    for (int k = 0; k < nin; k++) off[k] += c * strides[k][d];
    i = q;
  }
}

__global__ void dist_kernel(lc_cu_dist a) {
  const uint32_t *bits = (const uint32_t *)a.in[0];
  const bool fast = a.out_dt == MLX_FLOAT32 &&
                    (a.kind == LC_CU_DIST_UNIFORM || a.kind == LC_CU_DIST_NORMAL);
  GRID_LOOP(i, a.n) {
    int64_t off[LC_CU_DIST_IN] = {0, 0, 0, 0, 0}; /* past nin: 0 */
    offsets_of(i, a.ndim, a.shape, a.strides, a.nin, off);
    uint32_t b = bits[off[0]];
    if (fast)
      ((float *)a.out)[i] = dist_f32(a, b, off);
    else
      store(a.out_dt, a.out, i, dist_any(a, b, off));
  }
}

// The CPU's cnormal_eval: the pair as (re, im), then scale * z as C's
// complex product, then loc + z part by part.
__global__ void cnormal_kernel(lc_cu_cnormal a) {
  const Cx *sc = (const Cx *)a.in[0], *lo = (const Cx *)a.in[1];
  GRID_LOOP(i, a.n) {
    int64_t off[2];
    offsets_of(i, a.ndim, a.shape, a.strides, 2, off);
    Cx z = cx(erfinv_f32(symmetric_unit(a.bits[2 * i])),
              erfinv_f32(symmetric_unit(a.bits[2 * i + 1])));
    if (sc) z = mul(sc[off[0]], z);
    if (lo) z = cx(__fadd_rn(lo[off[1]].re, z.re), __fadd_rn(lo[off[1]].im, z.im));
    ((Cx *)a.out)[i] = z;
  }
}

// ---- categorical ----

// Offset in v of the element with coordinate `lead` over dims [0, axis),
// 0 on axis, and `trail` over dims (axis, ndim).
__device__ __forceinline__ int64_t split_off(const lc_cu_view &v, int axis, int64_t lead,
                                             int64_t trail) {
  int64_t off = 0;
  for (int d = v.ndim - 1; d > axis; d--) {
    int64_t q = trail / v.shape[d];
    off += (trail - q * v.shape[d]) * v.strides[d];
    trail = q;
  }
  for (int d = axis - 1; d >= 0; d--) {
    int64_t q = lead / v.shape[d];
    off += (lead - q * v.shape[d]) * v.strides[d];
    lead = q;
  }
  return off;
}

__global__ void categorical_kernel(lc_cu_categorical a) {
  const bool f64 = a.l_dt == MLX_FLOAT64;
  GRID_LOOP(t, a.outer * a.inner) {
    int64_t o = t / a.inner, j = t - o * a.inner;
    int64_t og = split_off(a.gv, a.axis, o, j), ol = split_off(a.lv, a.axis, o, j);
    const int64_t sg = a.gv.strides[a.axis], sl = a.lv.strides[a.axis];
    double best = 0;
    uint32_t arg = 0;
    for (int64_t k = 0; k < a.K; k++) {
      double s = __dadd_rn(ld(a.g, a.g_dt, og + k * sg), ld(a.l, a.l_dt, ol + k * sl));
      if (!f64) s = __double2float_rn(s);
      if (k == 0 || s > best || (isnan(s) && !isnan(best))) {
        best = s;
        arg = (uint32_t)k;
      }
    }
    a.out[t] = arg;
  }
}

// ---- permutation ----

__global__ void argsort_prepare(const uint32_t *x, int64_t stride, int64_t n, uint32_t *keys,
                                uint32_t *vals) {
  GRID_LOOP(i, n) {
    keys[i] = x[i * stride];
    vals[i] = (uint32_t)i;
  }
}

constexpr size_t kAlign = 256;
size_t aligned(size_t b) { return (b + kAlign - 1) / kAlign * kAlign; }

size_t cub_bytes(int n) {
  size_t temp = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, temp, (const uint32_t *)nullptr, (uint32_t *)nullptr,
                                  (const uint32_t *)nullptr, (uint32_t *)nullptr, n);
  return temp;
}

template <class U>
__global__ void take_kernel(const U *x, lc_cu_view xv, int axis, const uint32_t *idx,
                            int64_t istride, int64_t n, U *out) {
  GRID_LOOP(i, n) {
    int64_t off = 0, r = i;
    bool bad = false;
    for (int d = xv.ndim - 1; d >= 0; d--) {
      int64_t q = r / xv.shape[d], c = r - q * xv.shape[d];
      if (d == axis) {
        c = idx[c * istride];
        bad |= c >= xv.shape[d];
      }
      off += c * xv.strides[d];
      r = q;
    }
    out[i] = bad ? U() : x[off];
  }
}

}  // namespace

extern "C" int lc_cu_random_bits(const uint32_t *keys, const struct lc_cu_view *kv,
                                 int64_t nkeys, int64_t bytes_per_key, void *out, void *stream) {
  if (nkeys <= 0 || bytes_per_key <= 0) return 0;
  int64_t words = (bytes_per_key + 3) / 4, half = words / 2, odd = words % 2;
  if (words > 0xffffffffll) return LC_CU_UNSUPPORTED;
  int64_t total = nkeys * (half + odd);
  bits_kernel<<<blocks_for(total), 256, 0, (cudaStream_t)stream>>>(
      keys, *kv, bytes_per_key, (uint8_t *)out, half, odd, total);
  return done();
}

extern "C" int lc_cu_random_dist(const struct lc_cu_dist *a, void *stream) {
  if (a->n == 0) return 0;
  dist_kernel<<<blocks_for(a->n), 256, 0, (cudaStream_t)stream>>>(*a);
  return done();
}

extern "C" int lc_cu_random_cnormal(const struct lc_cu_cnormal *a, void *stream) {
  if (a->n == 0) return 0;
  cnormal_kernel<<<blocks_for(a->n), 256, 0, (cudaStream_t)stream>>>(*a);
  return done();
}

extern "C" int lc_cu_random_categorical(const struct lc_cu_categorical *a, void *stream) {
  int64_t n = a->outer * a->inner;
  if (n == 0) return 0;
  if (a->K <= 0) return LC_CU_UNSUPPORTED;
  categorical_kernel<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>(*a);
  return done();
}

// Scratch layout: keys in, keys out, values in (n words each, aligned),
// then CUB's temporary storage.
extern "C" size_t lc_cu_random_argsort_scratch(int64_t n) {
  if (n <= 0 || n > 0x7fffffff) return 0;
  return 3 * aligned((size_t)n * 4) + aligned(cub_bytes((int)n));
}

extern "C" int lc_cu_random_argsort(const uint32_t *x, int64_t stride, int64_t n, uint32_t *out,
                                    void *scratch, size_t scratch_bytes, void *stream) {
  if (n == 0) return 0;
  if (n > 0x7fffffff) return LC_CU_UNSUPPORTED;
  size_t w = aligned((size_t)n * 4), temp = cub_bytes((int)n);
  if (3 * w + temp > scratch_bytes) return -(int)cudaErrorInvalidValue;
  char *s = (char *)scratch;
  uint32_t *kin = (uint32_t *)s, *kout = (uint32_t *)(s + w), *vin = (uint32_t *)(s + 2 * w);
  cudaStream_t st = (cudaStream_t)stream;
  argsort_prepare<<<blocks_for(n), 256, 0, st>>>(x, stride, n, kin, vin);
  int rc = done();
  if (rc) return rc;
  cudaError_t e = cub::DeviceRadixSort::SortPairs(s + 3 * w, temp, kin, kout, vin, out, (int)n,
                                                  0, 32, st);
  if (e != cudaSuccess) return -(int)e;
  return done();
}

extern "C" int lc_cu_random_take(const void *x, const struct lc_cu_view *xv, int itemsize,
                                 int axis, const uint32_t *idx, int64_t idx_stride, int64_t n,
                                 void *out, void *stream) {
  if (n == 0) return 0;
  cudaStream_t st = (cudaStream_t)stream;
  unsigned b = blocks_for(n);
  switch (itemsize) {
    case 1:
      take_kernel<<<b, 256, 0, st>>>((const uint8_t *)x, *xv, axis, idx, idx_stride, n,
                                     (uint8_t *)out);
      break;
    case 2:
      take_kernel<<<b, 256, 0, st>>>((const uint16_t *)x, *xv, axis, idx, idx_stride, n,
                                     (uint16_t *)out);
      break;
    case 4:
      take_kernel<<<b, 256, 0, st>>>((const uint32_t *)x, *xv, axis, idx, idx_stride, n,
                                     (uint32_t *)out);
      break;
    case 8:
      take_kernel<<<b, 256, 0, st>>>((const unsigned long long *)x, *xv, axis, idx, idx_stride,
                                     n, (unsigned long long *)out);
      break;
    default: return LC_CU_UNSUPPORTED;
  }
  return done();
}
