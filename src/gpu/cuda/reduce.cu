// Row reductions on the GPU: one block per row of a row-major (rows, len)
// matrix; threads stride over the row (in 16-byte packs, four in flight,
// when every row starts 16-byte aligned), then warps combine by shuffles
// and the first warp combines the warps' values, in a fixed order.
// Accumulation is in float for 16- and 32-bit floats, double for float64,
// 64-bit integers for integers; NaN wins max and min (as on the CPU).
// Also the strided copy that brings reduced axes last.
#include <cuda_runtime.h>
#include <math.h>

#include "gpu/cuda/cu_types.cuh"
#include "gpu/cuda/kernels.h"
#include "ops/reduce_kern.h"

namespace {

constexpr int kThreads = 256;

template <class A> struct Combine {
  int kind;
  __device__ A init() const {
    switch (kind) {
      case LC_RED_PROD: case LC_RED_AND: return (A)1;
      case LC_RED_MAX:
        if constexpr (std::is_floating_point<A>::value) return (A)-INFINITY;
        else if constexpr ((A)(-1) < (A)0) return (A)(1ull << 63);
        else return (A)0;
      case LC_RED_MIN:
        if constexpr (std::is_floating_point<A>::value) return (A)INFINITY;
        else if constexpr ((A)(-1) < (A)0) return (A)((1ull << 63) - 1);
        else return (A)~0ull;
      default: return (A)0;
    }
  }
  __device__ A op(A a, A b) const {
    switch (kind) {
      case LC_RED_PROD: return a * b;
      case LC_RED_MAX: return (a > b || a != a) ? a : b;
      case LC_RED_MIN: return (a < b || a != a) ? a : b;
      case LC_RED_AND: return (A)(a != 0 && b != 0);
      case LC_RED_OR: return (A)(a != 0 || b != 0);
      default: return a + b;
    }
  }
};

template <class A> __device__ __forceinline__ A warp_combine(A v, const Combine<A> &c) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = c.op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Every thread gets the block's value. sh holds kThreads / 32 values.
template <class A> __device__ A block_combine(A v, const Combine<A> &c, A *sh) {
  v = warp_combine(v, c);
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  __syncthreads(); // earlier readers of sh are done
  if (l == 0) sh[w] = v;
  __syncthreads();
  v = l < kThreads / 32 ? sh[l] : c.init();
  return warp_combine(v, c);
}

template <class T, int V> struct alignas(sizeof(T) * V) Pack { T e[V]; };

// Whether rows of len elements of T starting at x are all 16-byte aligned.
template <class T> __host__ bool rows_aligned(const void *x, int64_t len) {
  return ((uintptr_t)x % 16) == 0 && (len * (int64_t)sizeof(T)) % 16 == 0;
}

// Calls f(value) on every element of the row x[0..len) that this thread
// owns: packs i = threadIdx.x + k * kThreads when vec, else elements.
template <class T, class A, class F>
__device__ __forceinline__ void row_each(const T *x, int64_t len, bool vec, F &&f) {
  if (vec) {
    constexpr int V = 16 / sizeof(T);
    using P = Pack<T, V>;
    const P *xp = (const P *)x;
    const int64_t np = len / V;
    // four packs in flight, the last group's missing ones predicated off
    // (rows of a few packs per thread load them together too)
    for (int64_t i = threadIdx.x; i < np; i += 4 * kThreads) {
      P q[4];
#pragma unroll
      for (int u = 0; u < 4; u++)
        if (i + u * kThreads < np) q[u] = xp[i + u * kThreads];
#pragma unroll
      for (int u = 0; u < 4; u++)
        if (i + u * kThreads < np)
#pragma unroll
          for (int e = 0; e < V; e++) f((A)lc_ld(q[u].e[e]));
    }
  } else {
    for (int64_t i = threadIdx.x; i < len; i += kThreads) f((A)lc_ld(x[i]));
  }
}

template <class TI, class TO, class A>
__global__ void reduce_rows(lc_cu_reduce a, bool vec) {
  __shared__ A sh[kThreads / 32];
  const TI *x = (const TI *)a.in + (int64_t)blockIdx.x * a.len;
  TO *o = (TO *)a.out + blockIdx.x;
  int kind = a.kind;
  bool moments = kind == LC_RED_MEAN || kind == LC_RED_VAR || kind == LC_RED_STD;
  Combine<A> c{moments ? LC_RED_SUM : kind};
  if constexpr (std::is_floating_point<A>::value) {
  if (kind == LC_RED_LSE) {
    Combine<A> mx{LC_RED_MAX};
    A m = mx.init();
    row_each<TI, A>(x, a.len, vec, [&](A t) { m = mx.op(m, t); });
    m = block_combine(m, mx, sh);
    A s = 0;
    if (isfinite((double)m)) row_each<TI, A>(x, a.len, vec, [&](A t) { s += exp(t - m); });
    s = block_combine(s, c, sh);
    if (threadIdx.x == 0) *o = lc_to<TO>::f(isfinite((double)m) ? m + log(s) : m);
    return;
  }
  }
  A v = c.init();
  row_each<TI, A>(x, a.len, vec, [&](A t) { v = c.op(v, t); });
  v = block_combine(v, c, sh);
  if (!moments) {
    if (threadIdx.x == 0) *o = lc_to<TO>::f(v);
    return;
  }
  if constexpr (std::is_floating_point<A>::value) {
  A mean = v / (A)a.len;
  if (kind == LC_RED_MEAN) {
    if (threadIdx.x == 0) *o = lc_to<TO>::f(mean);
    return;
  }
  A q = 0;
  row_each<TI, A>(x, a.len, vec, [&](A t) {
    A d = t - mean;
    q += d * d;
  });
  q = block_combine(q, c, sh);
  if (threadIdx.x == 0) {
    A den = (A)(a.len - a.ddof);
    A var = den > 0 ? q / den : (A)NAN;
    *o = lc_to<TO>::f(kind == LC_RED_STD ? sqrt(var) : var);
  }
  }
}

template <class T> struct acc_of {
  using type = typename std::conditional<
      std::is_floating_point<typename lc_acc<T>::type>::value, typename lc_acc<T>::type,
      typename std::conditional<std::is_signed<T>::value, long long, unsigned long long>::type>::type;
};
template <> struct acc_of<bool> { using type = long long; };

__global__ void copy_strided(char *out, const char *in, int isz, int ndim,
                             lc_cu_ew shape_holder, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t r = i, off = 0;
    for (int d = ndim - 1; d >= 0; d--) {
      int64_t q = r / shape_holder.shape[d];
      off += (r - q * shape_holder.shape[d]) * shape_holder.strides[0][d];
      r = q;
    }
    const char *s = in + off * isz;
    char *t = out + i * isz;
    switch (isz) {
      case 1: *t = *s; break;
      case 2: *(uint16_t *)t = *(const uint16_t *)s; break;
      case 4: *(uint32_t *)t = *(const uint32_t *)s; break;
      case 8: *(uint64_t *)t = *(const uint64_t *)s; break;
      default: for (int b = 0; b < isz; b++) t[b] = s[b];
    }
  }
}

// Softmax of each row: max, then the sum of exp(x - max), then the
// scaled exps; in float (double for float64), whatever the storage type.
template <class T, class A>
__global__ void softmax_rows(const T *in, T *out, int64_t len, bool vec) {
  __shared__ A sh[kThreads / 32];
  const T *x = in + (int64_t)blockIdx.x * len;
  T *o = out + (int64_t)blockIdx.x * len;
  Combine<A> mx{LC_RED_MAX}, sum{LC_RED_SUM};
  A m = mx.init();
  row_each<T, A>(x, len, vec, [&](A t) { m = mx.op(m, t); });
  m = block_combine(m, mx, sh);
  A s = 0;
  row_each<T, A>(x, len, vec, [&](A t) { s += exp(t - m); });
  s = block_combine(s, sum, sh);
  A inv = (A)1 / s;
  if (vec) {
    constexpr int V = 16 / sizeof(T);
    using P = Pack<T, V>;
    const P *xp = (const P *)x;
    P *op = (P *)o;
    for (int64_t i = threadIdx.x; i < len / V; i += kThreads) {
      P q = xp[i], r;
#pragma unroll
      for (int e = 0; e < V; e++) r.e[e] = lc_to<T>::f(exp((A)lc_ld(q.e[e]) - m) * inv);
      op[i] = r;
    }
  } else {
    for (int64_t i = threadIdx.x; i < len; i += kThreads)
      o[i] = lc_to<T>::f(exp((A)lc_ld(x[i]) - m) * inv);
  }
}

}  // namespace

extern "C" int lc_cu_softmax_rows(int dt, int64_t rows, int64_t len, const void *in, void *out,
                                  void *stream) {
  if (rows == 0 || len == 0) return 0;
  if (rows > 0x7fffffff) return LC_CU_UNSUPPORTED;
  int rc = LC_CU_UNSUPPORTED;
  lc_dispatch_float(dt, [&](auto *p) {
    using T = std::remove_pointer_t<decltype(p)>;
    using A = typename lc_acc<T>::type;
    bool vec = rows_aligned<T>(in, len) && rows_aligned<T>(out, len);
    softmax_rows<T, A><<<(unsigned)rows, kThreads, 0, (cudaStream_t)stream>>>(
        (const T *)in, (T *)out, len, vec);
    rc = 0;
  });
  if (rc) return rc;
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : -(int)e;
}

extern "C" int lc_cu_reduce_rows(const struct lc_cu_reduce *a, void *stream) {
  if (a->rows == 0) return 0;
  if (a->len == 0 || a->rows > 0x7fffffff) return LC_CU_UNSUPPORTED;
  bool float_kind = a->kind == LC_RED_MEAN || a->kind == LC_RED_VAR || a->kind == LC_RED_STD ||
                    a->kind == LC_RED_LSE;
  int rc = LC_CU_UNSUPPORTED;
  cudaStream_t s = (cudaStream_t)stream;
  lc_dispatch_real(a->in_dt, [&](auto *pi) {
    using TI = std::remove_pointer_t<decltype(pi)>;
    lc_dispatch_real(a->out_dt, [&](auto *po) {
      using TO = std::remove_pointer_t<decltype(po)>;
      using A = typename acc_of<TI>::type;
      bool vec = rows_aligned<TI>(a->in, a->len);
      if constexpr (std::is_floating_point<A>::value) {
        reduce_rows<TI, TO, A><<<(unsigned)a->rows, kThreads, 0, s>>>(*a, vec);
        rc = 0;
      } else if (!float_kind) {
        reduce_rows<TI, TO, A><<<(unsigned)a->rows, kThreads, 0, s>>>(*a, vec);
        rc = 0;
      } else {
        reduce_rows<TI, TO, double><<<(unsigned)a->rows, kThreads, 0, s>>>(*a, vec);
        rc = 0;
      }
    });
  });
  if (rc) return rc;
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : -(int)e;
}

extern "C" int lc_cu_copy_strided(void *out, const void *in, int itemsize, int ndim,
                                  const int *shape, const int64_t *strides, int64_t n,
                                  void *stream) {
  if (n == 0) return 0;
  if (ndim > LC_CU_MAX_DIMS) return LC_CU_UNSUPPORTED;
  lc_cu_ew h{};
  for (int d = 0; d < ndim; d++) {
    h.shape[d] = shape[d];
    h.strides[0][d] = strides[d];
  }
  int64_t b = (n + 255) / 256;
  unsigned blocks = (unsigned)(b < 132 * 32 ? b : 132 * 32);
  copy_strided<<<blocks, 256, 0, (cudaStream_t)stream>>>((char *)out, (const char *)in, itemsize,
                                                          ndim, h, n);
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : -(int)e;
}
