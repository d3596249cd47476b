// Scans along lines on the GPU (contract: gpu/cuda/sort_scan.h), with the
// CPU's types and operators (ops/scan.c): sums and products accumulate in
// uint32/uint64 for integers (wrapping, then C's conversion to the output),
// float for float16/bfloat16, double for float32/float64; max/min in the
// element's compute type with NaN sticky (the later NaN wins, as the CPU's
// (b > a || b != b) ? b : a); logaddexp in double. Every operator is
// applied as op(earlier, later), starting from the identity, so the exact
// ones (integers, max/min) give the CPU's bits in any grouping.
// Two kernels: one thread per line walking it sequentially (many lines,
// or short ones), or one block per line scanning chunks of kChunk elements
// (kItems consecutive per thread, a shared-memory scan of the threads'
// totals) with a carried prefix.
#include <cuda/std/limits>
#include <cuda_runtime.h>

#include "gpu/cuda/cu_types.cuh"
#include "gpu/cuda/sort_scan.h"

namespace {

constexpr int kThreads = 256;
constexpr int kItems = 4;
constexpr int64_t kChunk = kThreads * kItems;

enum { kSum, kProd, kMax, kMin, kLogAddExp }; // enum lc_scan_kind's values

template <class A> struct OpSum {
  static __device__ A id() { return A(0); }
  __device__ A operator()(A a, A b) const { return a + b; }
};
template <class A> struct OpProd {
  static __device__ A id() { return A(1); }
  __device__ A operator()(A a, A b) const { return a * b; }
};
template <class A> struct OpMax {
  static __device__ A id() {
    if constexpr (cuda::std::numeric_limits<A>::has_infinity)
      return -cuda::std::numeric_limits<A>::infinity();
    else
      return cuda::std::numeric_limits<A>::lowest();
  }
  __device__ A operator()(A a, A b) const { return (b > a || b != b) ? b : a; }
};
template <class A> struct OpMin {
  static __device__ A id() {
    if constexpr (cuda::std::numeric_limits<A>::has_infinity)
      return cuda::std::numeric_limits<A>::infinity();
    else
      return cuda::std::numeric_limits<A>::max();
  }
  __device__ A operator()(A a, A b) const { return (b < a || b != b) ? b : a; }
};
struct OpLogAddExp {
  static __device__ double id() { return -cuda::std::numeric_limits<double>::infinity(); }
  __device__ double operator()(double a, double b) const {
    const double ninf = -cuda::std::numeric_limits<double>::infinity();
    if (a != a || b != b) return cuda::std::numeric_limits<double>::quiet_NaN();
    if (a == ninf) return b;
    if (b == ninf) return a;
    if (a == b) return a + 0.69314718055994530942;
    double m = a > b ? a : b, d = a > b ? b - a : a - b;
    return m + log1p(exp(d));
  }
};

// Sum and product accumulators (ops/scan.c's SUM_ROWS).
template <class T> struct SumAcc { using type = uint32_t; };
template <> struct SumAcc<unsigned long long> { using type = unsigned long long; };
template <> struct SumAcc<long long> { using type = unsigned long long; };
template <> struct SumAcc<__half> { using type = float; };
template <> struct SumAcc<__nv_bfloat16> { using type = float; };
template <> struct SumAcc<float> { using type = double; };
template <> struct SumAcc<double> { using type = double; };

// The CPU's store: 16-bit floats from double through float.
template <class TO, class A> __device__ __forceinline__ TO store(A a) {
  if constexpr (std::is_same<A, double>::value &&
                (std::is_same<TO, __half>::value || std::is_same<TO, __nv_bfloat16>::value))
    return lc_to<TO>::f((float)a);
  else
    return lc_to<TO>::f(a);
}

template <class A, class T> __device__ __forceinline__ A load(T v) { return (A)lc_ld(v); }

struct Line {
  int64_t outer, len, inner, so, sk, si;
  bool rev, incl;
};

// One thread per line (o, i), sequential along it.
template <class T, class A, class TO, class Op>
__global__ void scan_lines(const T *in, TO *out, Line g) {
  const Op op{};
  const int64_t lines = g.outer * g.inner;
  for (int64_t l = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; l < lines;
       l += (int64_t)gridDim.x * blockDim.x) {
    int64_t o = l / g.inner, i = l % g.inner;
    const T *x = in + o * g.so + i * g.si;
    TO *y = out + o * g.len * g.inner + i;
    A run = Op::id();
    for (int64_t t = 0; t < g.len; t++) {
      int64_t k = g.rev ? g.len - 1 - t : t;
      A v = load<A>(x[k * g.sk]);
      if (g.incl) {
        run = op(run, v);
        y[k * g.inner] = store<TO>(run);
      } else {
        y[k * g.inner] = store<TO>(run);
        run = op(run, v);
      }
    }
  }
}

// One block (kThreads threads) per line.
template <class T, class A, class TO, class Op>
__global__ void scan_blocks(const T *in, TO *out, Line g) {
  __shared__ A part[kThreads];
  const Op op{};
  const int64_t l = blockIdx.x, o = l / g.inner, i = l % g.inner;
  const T *x = in + o * g.so + i * g.si;
  TO *y = out + o * g.len * g.inner + i;
  const int tid = threadIdx.x;
  A carry = Op::id(); // the combination of every earlier chunk
  for (int64_t c0 = 0; c0 < g.len; c0 += kChunk) {
    const int64_t t0 = c0 + (int64_t)tid * kItems;
    A v[kItems], tot = Op::id();
    for (int q = 0; q < kItems; q++) {
      int64_t t = t0 + q;
      if (t < g.len) {
        v[q] = load<A>(x[(g.rev ? g.len - 1 - t : t) * g.sk]);
        tot = op(tot, v[q]);
      }
    }
    // inclusive scan of the threads' totals (Hillis-Steele, order kept)
    part[tid] = tot;
    __syncthreads();
    for (int d = 1; d < kThreads; d <<= 1) {
      A u = part[tid];
      if (tid >= d) u = op(part[tid - d], u);
      __syncthreads();
      part[tid] = u;
      __syncthreads();
    }
    A run = op(carry, tid ? part[tid - 1] : Op::id());
    const A chunk_total = part[kThreads - 1];
    for (int q = 0; q < kItems; q++) {
      int64_t t = t0 + q;
      if (t >= g.len) break;
      int64_t k = g.rev ? g.len - 1 - t : t;
      if (g.incl) {
        run = op(run, v[q]);
        y[k * g.inner] = store<TO>(run);
      } else {
        y[k * g.inner] = store<TO>(run);
        run = op(run, v[q]);
      }
    }
    carry = op(carry, chunk_total);
    __syncthreads(); // part is rewritten by the next chunk
  }
}

template <class T, class A, class TO, class Op>
int launch(const lc_cu_scan *a, cudaStream_t s) {
  Line g{a->outer, a->len, a->inner, a->in_so, a->in_sk, a->in_si, a->reverse != 0,
         a->inclusive != 0};
  const int64_t lines = a->outer * a->inner;
  // lines along memory (sk == 1) take a block each unless short; lines
  // interleaved in memory (adjacent lines adjacent) take a thread each
  // when there are enough of them to fill the GPU
  bool per_thread = a->len <= 32 || (a->in_sk != 1 && lines >= 2048);
  if (!per_thread && lines > 0x7fffffff) per_thread = true;
  if (per_thread) {
    int64_t b = (lines + 127) / 128;
    unsigned grid = (unsigned)(b > 65536 ? 65536 : b);
    scan_lines<T, A, TO, Op><<<grid, 128, 0, s>>>((const T *)a->in, (TO *)a->out, g);
  } else {
    scan_blocks<T, A, TO, Op><<<(unsigned)lines, kThreads, 0, s>>>((const T *)a->in,
                                                                   (TO *)a->out, g);
  }
  return 0;
}

} // namespace

extern "C" int lc_cu_scan_lines(const struct lc_cu_scan *a, void *stream) {
  if (a->outer <= 0 || a->len <= 0 || a->inner <= 0) return LC_CU_UNSUPPORTED;
  cudaStream_t s = (cudaStream_t)stream;
  int rc = LC_CU_UNSUPPORTED;
  lc_dispatch_real(a->in_dt, [&](auto *p) {
    using T = std::remove_pointer_t<decltype(p)>;
    using S = typename SumAcc<T>::type;
    using C = typename lc_acc<T>::type;
    using SO = std::conditional_t<std::is_same<T, bool>::value, int32_t, T>;
    switch (a->kind) {
      case kSum: rc = launch<T, S, SO, OpSum<S>>(a, s); break;
      case kProd: rc = launch<T, S, T, OpProd<S>>(a, s); break;
      case kMax: rc = launch<T, C, T, OpMax<C>>(a, s); break;
      case kMin: rc = launch<T, C, T, OpMin<C>>(a, s); break;
      case kLogAddExp:
        if constexpr (!lc_is_int<T>::v && !std::is_same<T, bool>::value)
          rc = launch<T, double, T, OpLogAddExp>(a, s);
        break;
      default: break;
    }
  });
  if (rc) return rc;
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : -(int)e;
}
