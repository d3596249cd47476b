// The fast family on the GPU (launchers in fast.h): rms_norm / layer_norm
// (a warp or more per row, 16-byte packs where rows are contiguous and
// aligned), rope (a thread per rotated pair, its angle shared by the rows
// of one position) and attention (fast_sdpa.cu). Rounding follows the CPU
// kernels of ops/fast_*.c step by step, so results agree to an ulp or so.
#include <cuda_runtime.h>
#include <math.h>

#include "gpu/cuda/cu_types.cuh"
#include "gpu/cuda/pdl.cuh"
#include "gpu/cuda/fast.h"
#include "gpu/cuda/fast_common.cuh"
#include "gpu/cuda/reduce_fold.cuh"

namespace {

// The row's sum over the G threads sharing it (reduce_fold.cuh's group
// combine, in double).
__device__ double row_sum(double v, double *sh, int G) {
  return group_combine(v, Combine<double>{LC_RED_SUM}, sh, G);
}

// y = st(st((x - mu) * inv) [* w] [+ b]) in the CPU's order of roundings.
template <class T>
__device__ __forceinline__ T norm_affine(T x, double mu, double inv, const T *w, const T *b) {
  using C = typename lc_acc<T>::type;
  T y = lc_st<T>::f(((double)lc_ld(x) - mu) * inv);
  if (w) y = lc_st<T>::f((C)lc_ld(y) * (C)lc_ld(*w));
  if (b) y = lc_st<T>::f((C)lc_ld(y) + (C)lc_ld(*b));
  return y;
}

// One row per G threads. VEC: the row, weight and bias are contiguous and
// 16-byte aligned, d a multiple of the pack; else any element strides.
template <class T, bool VEC> __global__ void norm_rows(struct lc_cu_norm a, int G) {
  lc_pdl_begin();
  constexpr int V = 16 / sizeof(T);
  __shared__ double sh[32];
  int rl = threadIdx.x / G, li = threadIdx.x % G;
  int64_t row = (int64_t)blockIdx.x * (blockDim.x / G) + rl;
  bool live = row < a.rows;
  const T *x = (const T *)a.x + (live ? lc_row_start(a.xr, row, a.d) : 0);
  T *o = (T *)a.out + (live ? row * a.d : 0);
  const T *w = (const T *)a.w, *b = (const T *)a.b;
  int64_t d = a.d, npk = d / V;
  double mu = 0;
  if (a.layer) {
    double s = 0;
    if (live) {
      if (VEC)
        for (int64_t p = li; p < npk; p += G) {
          lc_pack<T> u = lc_pack<T>::load(x + p * V);
          for (int k = 0; k < V; k++) s += (double)lc_ld(u.e[k]);
        }
      else
        for (int64_t i = li; i < d; i += G) s += (double)lc_ld(x[i * a.sx]);
    }
    mu = row_sum(s, sh, G) / (double)d;
  }
  double q = 0;
  if (live) {
    if (VEC)
      for (int64_t p = li; p < npk; p += G) {
        lc_pack<T> u = lc_pack<T>::load(x + p * V);
        for (int k = 0; k < V; k++) {
          double c = (double)lc_ld(u.e[k]) - mu;
          q += c * c;
        }
      }
    else
      for (int64_t i = li; i < d; i += G) {
        double c = (double)lc_ld(x[i * a.sx]) - mu;
        q += c * c;
      }
  }
  double inv = 1 / sqrt(row_sum(q, sh, G) / (double)d + (double)a.eps);
  if (!live) return;
  if (VEC) {
    for (int64_t p = li; p < npk; p += G) {
      lc_pack<T> u = lc_pack<T>::load(x + p * V), wv, bv;
      if (w) wv = lc_pack<T>::load(w + p * V);
      if (b) bv = lc_pack<T>::load(b + p * V);
      for (int k = 0; k < V; k++)
        u.e[k] = norm_affine(u.e[k], mu, inv, w ? &wv.e[k] : nullptr, b ? &bv.e[k] : nullptr);
      u.store(o + p * V);
    }
  } else {
    for (int64_t i = li; i < d; i += G)
      o[i] = norm_affine(x[i * a.sx], mu, inv, w ? w + i * a.sw : nullptr,
                         b ? b + i * a.sb : nullptr);
  }
}

// cos and sin of th (double) as the CPU rounds them: (float)cos(th). For
// the 16/32-bit floats the angle is reduced modulo 2 pi in double and the
// float sincos runs on the remainder (|r| <= pi), so large positions keep
// float accuracy; float64 uses double sincos.
template <class C> __device__ __forceinline__ void angle(double th, C *c, C *s) {
  if constexpr (std::is_same<C, double>::value) {
    sincos(th, s, c);
  } else {
    double k = rint(th * 0.15915494309189535);
    double r = th - k * 6.283185307179586;
    sincosf((float)r, s, c);
  }
}

__device__ int64_t load_offset(const struct lc_cu_rope &a, int64_t b) {
  const char *p = (const char *)a.off;
  int64_t i = b * a.ostride;
  switch (a.off_dt) {
    case MLX_INT8: return ((const int8_t *)p)[i];
    case MLX_INT16: return ((const int16_t *)p)[i];
    case MLX_INT32: return ((const int32_t *)p)[i];
    case MLX_INT64: return ((const long long *)p)[i];
    case MLX_UINT8: return ((const uint8_t *)p)[i];
    case MLX_UINT16: return ((const uint16_t *)p)[i];
    case MLX_UINT32: return ((const uint32_t *)p)[i];
    default: {
      unsigned long long v = ((const unsigned long long *)p)[i];
      return v > 0x7fffffffffffffffull ? 0x7fffffffffffffffll : (int64_t)v;
    }
  }
}

// Block (g, c): position group g (one sequence index t, of one batch when
// the offsets are per batch), rows m in chunk c of the `mid` rows sharing
// that position. Thread slot j < half rotates pair j of every such row;
// slots past half copy the features past 2 * half.
template <class T>
__global__ void rope_rows(struct lc_cu_rope a, int64_t mid, int64_t mchunk, int slots) {
  lc_pdl_begin();
  using C = typename lc_acc<T>::type;
  int64_t g = blockIdx.x, b = 0, t = g;
  if (a.noff > 1) {
    b = g / a.T;
    t = g % a.T;
  }
  int64_t m0 = (int64_t)blockIdx.y * mchunk, m1 = m0 + mchunk < mid ? m0 + mchunk : mid;
  int64_t first = (a.noff > 1 ? b * a.rows_per_batch : 0) + t;
  double pos = (double)(load_offset(a, b) + t) * (double)a.scale;
  int half = a.half;
  for (int j = threadIdx.x; j < slots; j += blockDim.x) {
    if (j < half) {
      double inv = a.freqs ? 1.0 / (double)a.freqs[j * a.fstride]
                           : exp(-(double)j * log((double)a.base) / half);
      C c, s;
      angle<C>(pos * inv, &c, &s);
      if (!a.forward) s = -s;
      int64_t i1 = a.traditional ? 2 * j : j, i2 = a.traditional ? 2 * j + 1 : j + half;
      for (int64_t m = m0; m < m1; m++) {
        int64_t row = first + m * a.T;
        const T *x = (const T *)a.x + lc_row_start(a.xr, row, a.D);
        T *o = (T *)a.out + row * a.D;
        C x1 = lc_ld(x[i1 * a.sx]), x2 = lc_ld(x[i2 * a.sx]);
        o[i1] = lc_st<T>::f(x1 * c - x2 * s);
        o[i2] = lc_st<T>::f(x1 * s + x2 * c);
      }
    } else {
      int64_t i = 2 * (int64_t)half + (j - half);
      for (int64_t m = m0; m < m1; m++) {
        int64_t row = first + m * a.T;
        ((T *)a.out)[row * a.D + i] = ((const T *)a.x)[lc_row_start(a.xr, row, a.D) + i * a.sx];
      }
    }
  }
}

bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

int last_error() {
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : -(int)e;
}

}  // namespace

extern "C" int lc_cu_norm(const struct lc_cu_norm *a, void *stream) {
  if (a->rows == 0 || a->d == 0) return 0;
  int rc = LC_CU_UNSUPPORTED;
  lc_dispatch_float(a->dt, [&](auto *pt) {
    using T = std::remove_pointer_t<decltype(pt)>;
    constexpr int V = 16 / sizeof(T);
    bool vec = a->xr.nlead == 0 && a->sx == 1 && a->d % V == 0 && aligned16(a->x) &&
               aligned16(a->out) && (!a->w || (a->sw == 1 && aligned16(a->w))) &&
               (!a->b || (a->sb == 1 && aligned16(a->b)));
    int64_t per = vec ? a->d / V : a->d; /* work items per row */
    int G = (int)((per + 31) / 32 * 32);
    if (per > 1024) G = 1024;
    /* whole rows per block: with 256 threads and G = 96, say, the last 64
     * threads would take a share of the next block's first row */
    int block = G >= 256 ? G : 256 / G * G;
    int64_t blocks = (a->rows + block / G - 1) / (block / G);
    if (blocks > 0x7fffffff) return;
    cudaStream_t s = (cudaStream_t)stream;
    if (vec) lc_launch(norm_rows<T, true>, dim3((unsigned)blocks), dim3(block), 0, s, *a, G);
    else lc_launch(norm_rows<T, false>, dim3((unsigned)blocks), dim3(block), 0, s, *a, G);
    rc = 0;
  });
  return rc ? rc : last_error();
}

extern "C" int lc_cu_rope(const struct lc_cu_rope *a, void *stream) {
  if (a->rows == 0 || a->D == 0 || a->T == 0) return 0;
  if (a->off_dt == MLX_BOOL || a->noff < 1) return LC_CU_UNSUPPORTED;
  int64_t groups = a->noff > 1 ? a->rows / a->rows_per_batch * a->T : a->T;
  int64_t mid = (a->noff > 1 ? a->rows_per_batch : a->rows) / a->T;
  int64_t slots = a->half + (a->D - 2 * (int64_t)a->half);
  if (groups > 0x7fffffff || slots > 0x7fffffff) return LC_CU_UNSUPPORTED;
  /* enough blocks to fill the GPU; rows of one position share the angles */
  int64_t mchunk = groups * mid / 1024;
  if (mchunk < 1) mchunk = 1;
  if (mchunk > mid) mchunk = mid;
  if ((mid + mchunk - 1) / mchunk > 65535) mchunk = (mid + 65534) / 65535;
  unsigned nchunk = (unsigned)((mid + mchunk - 1) / mchunk);
  int threads = (int)((slots + 31) / 32 * 32);
  if (threads > 256) threads = 256;
  int rc = LC_CU_UNSUPPORTED;
  lc_dispatch_float(a->dt, [&](auto *pt) {
    using T = std::remove_pointer_t<decltype(pt)>;
    lc_launch(rope_rows<T>, dim3((unsigned)groups, nchunk), dim3(threads), 0,
              (cudaStream_t)stream, *a, mid, mchunk, (int)slots);
    rc = 0;
  });
  return rc ? rc : last_error();
}
