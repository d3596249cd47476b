// Quantized matmul kernels: a matrix-vector kernel for few rows of x (one
// warp per output column; each lane dequantizes 32-value units of the
// weight row in registers, from 16-byte loads where the rows allow) and a
// dequantization into a scratch matrix for cuBLAS (gpu/cuda/eval_quant.c).
// A unit of 32 values is `bits` whole words and lies in one group, since
// group sizes are multiples of 32. Dequantized values are rounded to x's
// dtype as the CPU's decomposition does; products accumulate in float32.
#include <cuda_runtime.h>

#include "gpu/cuda/cu_types.cuh"
#include "gpu/cuda/quant.h"
#include "gpu/cuda/launch.cuh"

namespace {

constexpr int kWarps = 4;  // warps (output columns) per block of the qmv kernel

__device__ __forceinline__ float ldf(const void *p, int dt, int64_t off) {
  switch (dt) {
    case MLX_FLOAT16: return __half2float(((const __half *)p)[off]);
    case MLX_BFLOAT16: return __bfloat162float(((const __nv_bfloat16 *)p)[off]);
    default: return ((const float *)p)[off];
  }
}

// v rounded to T's precision (as a float).
template <class T> __device__ __forceinline__ float round_t(float v) {
  return lc_ld(lc_to<T>::f(v));
}

struct Offsets {
  int64_t x, w, s, b;
};
__device__ __forceinline__ Offsets batch_offsets(const lc_cu_qmm &a, int64_t bi) {
  Offsets o = {0, 0, 0, 0};
  for (int d = a.nb - 1; d >= 0; d--) {
    int64_t q = bi / a.bshape[d], c = bi - q * a.bshape[d];
    o.x += c * a.x_bs[d];
    o.w += c * a.w_bs[d];
    o.s += c * a.s_bs[d];
    o.b += c * a.b_bs[d];
    bi = q;
  }
  return o;
}

// The BITS words of unit u of a row (16-byte loads when vec: the row is
// 16-byte aligned and its words contiguous, BITS a multiple of 4).
template <int BITS>
__device__ __forceinline__ void load_unit(const uint32_t *row, int64_t u, int64_t cs, bool vec,
                                          uint32_t *wd) {
  if constexpr (BITS % 4 == 0) {
    if (vec) {
      const uint4 *p = (const uint4 *)(row + u * BITS);
#pragma unroll
      for (int i = 0; i < BITS / 4; i++) {
        uint4 q = p[i];
        wd[4 * i] = q.x;
        wd[4 * i + 1] = q.y;
        wd[4 * i + 2] = q.z;
        wd[4 * i + 3] = q.w;
      }
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < BITS; i++) wd[i] = row[(u * BITS + i) * cs];
}

// Field j (0..31) of a unit's words.
template <int BITS> __device__ __forceinline__ uint32_t field(const uint32_t *wd, int j) {
  const int pos = j * BITS, w0 = pos / 32, sh = pos % 32;
  uint32_t v = wd[w0] >> sh;
  if (sh + BITS > 32) v |= wd[w0 + 1] << (32 - sh);
  return BITS == 32 ? v : v & ((1u << BITS) - 1u);
}

// The 32 values of unit u of row r (batch offsets o), rounded to T.
template <class T, int BITS>
__device__ __forceinline__ void dequant_unit(const lc_cu_qmm &a, const Offsets &o, int64_t r,
                                             int64_t u, bool vec, float *v) {
  uint32_t wd[BITS];
  load_unit<BITS>(a.w + o.w + r * a.w_rs, u, a.w_cs, vec, wd);
  const int64_t g = u * 32 / a.group_size;
  const float sc = ldf(a.scales, a.s_dt, o.s + r * a.s_rs + g * a.s_cs);
  const float bi = ldf(a.biases, a.b_dt, o.b + r * a.b_rs + g * a.b_cs);
#pragma unroll
  for (int j = 0; j < 32; j++)
    v[j] = round_t<T>(__fadd_rn(__fmul_rn((float)field<BITS>(wd, j), sc), bi));
}

// One warp per output column n of every batch (blockIdx.y strides over
// the batches): lane l takes units l, l + 32, ... of the weight row, all
// M rows of x at once; the lanes' sums meet through shuffles.
template <class T, int BITS>
__global__ void __launch_bounds__(32 * kWarps) qmv_kernel(lc_cu_qmm a) {
  const int lane = threadIdx.x % 32;
  const int64_t n = blockIdx.x * (int64_t)kWarps + threadIdx.x / 32;
  if (n >= a.N) return;  // the whole warp: the shuffles below see every lane
  const int64_t units = a.K / 32;
  const bool vec = a.vec != 0;
  for (int64_t bi = blockIdx.y; bi < a.batches; bi += gridDim.y) {
    const Offsets o = batch_offsets(a, bi);
    float acc[LC_CU_QMV_MAX_M];
#pragma unroll
    for (int m = 0; m < LC_CU_QMV_MAX_M; m++) acc[m] = 0.0f;
    for (int64_t u = lane; u < units; u += 32) {
      float v[32];
      dequant_unit<T, BITS>(a, o, n, u, vec, v);
#pragma unroll
      for (int m = 0; m < LC_CU_QMV_MAX_M; m++) {
        if (m >= a.M) break;
        const T *xr = (const T *)a.x + o.x + m * a.x_rs + u * 32 * a.x_cs;
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < 32; j++) s = __fadd_rn(s, __fmul_rn(lc_ld(xr[j * a.x_cs]), v[j]));
        acc[m] = __fadd_rn(acc[m], s);
      }
    }
#pragma unroll
    for (int m = 0; m < LC_CU_QMV_MAX_M; m++) {
      if (m >= a.M) break;
      float s = acc[m];
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
      if (lane == 0) ((T *)a.out)[(bi * a.M + m) * a.N + n] = lc_to<T>::f(s);
    }
  }
}

// One thread per unit of W (nbatch, R, C); W's batch bi is the weights'
// batch first + bi.
template <class T, int BITS>
__global__ void dequant_kernel(lc_cu_qmm a, int64_t first, int64_t nbatch, T *W) {
  const int64_t upr = a.C / 32, per_batch = a.R * upr;
  GRID_LOOP(t, nbatch * per_batch) {
    const int64_t bi = t / per_batch, rem = t - bi * per_batch, r = rem / upr,
                  u = rem - r * upr;
    const Offsets o = batch_offsets(a, first + bi);
    float v[32];
    dequant_unit<T, BITS>(a, o, r, u, false, v);
    T *dst = W + (bi * a.R + r) * a.C + u * 32;
#pragma unroll
    for (int j = 0; j < 32; j++) dst[j] = lc_to<T>::f(v[j]);
  }
}

// Calls f.template operator()<T, BITS>() for the descriptor's dtype and
// bits; false for others.
template <class F> bool dispatch(const lc_cu_qmm &a, F &&f) {
  auto by_bits = [&](auto *p) {
    using T = std::remove_pointer_t<decltype(p)>;
    switch (a.bits) {
      case 2: f.template operator()<T, 2>(); return true;
      case 3: f.template operator()<T, 3>(); return true;
      case 4: f.template operator()<T, 4>(); return true;
      case 5: f.template operator()<T, 5>(); return true;
      case 6: f.template operator()<T, 6>(); return true;
      case 8: f.template operator()<T, 8>(); return true;
      default: return false;
    }
  };
  switch (a.dt) {
    case MLX_FLOAT32: return by_bits((float *)0);
    case MLX_FLOAT16: return by_bits((__half *)0);
    case MLX_BFLOAT16: return by_bits((__nv_bfloat16 *)0);
    default: return false;
  }
}

struct QmvLaunch {
  const lc_cu_qmm &a;
  cudaStream_t s;
  template <class T, int BITS> void operator()() const {
    int64_t bx = (a.N + kWarps - 1) / kWarps;
    unsigned by = (unsigned)(a.batches < 65535 ? a.batches : 65535);
    qmv_kernel<T, BITS><<<dim3((unsigned)bx, by), 32 * kWarps, 0, s>>>(a);
  }
};

struct DequantLaunch {
  const lc_cu_qmm &a;
  int64_t first, nbatch;
  void *W;
  cudaStream_t s;
  template <class T, int BITS> void operator()() const {
    int64_t total = nbatch * a.R * (a.C / 32), b = (total + 255) / 256;
    unsigned blocks = (unsigned)(b < 132 * 32 ? (b > 0 ? b : 1) : 132 * 32);
    dequant_kernel<T, BITS><<<blocks, 256, 0, s>>>(a, first, nbatch, (T *)W);
  }
};

}  // namespace

extern "C" int lc_cu_qmv(const struct lc_cu_qmm *a, void *stream) {
  if (a->M > LC_CU_QMV_MAX_M || a->K % 32 || a->group_size % 32) return LC_CU_UNSUPPORTED;
  if (a->N == 0 || a->M == 0 || a->batches == 0) return 0;
  if ((a->N + kWarps - 1) / kWarps > 0x7fffffff) return LC_CU_UNSUPPORTED;
  if (!dispatch(*a, QmvLaunch{*a, (cudaStream_t)stream})) return LC_CU_UNSUPPORTED;
  return done();
}

extern "C" int lc_cu_dequantize(const struct lc_cu_qmm *a, int64_t first, int64_t nbatch,
                                void *W, void *stream) {
  if (a->C % 32 || a->group_size % 32) return LC_CU_UNSUPPORTED;
  if (nbatch == 0 || a->R == 0 || a->C == 0) return 0;
  if (!dispatch(*a, DequantLaunch{*a, first, nbatch, W, (cudaStream_t)stream}))
    return LC_CU_UNSUPPORTED;
  return done();
}
