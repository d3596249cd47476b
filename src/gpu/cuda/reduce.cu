// Row reductions on the GPU over a row-major (rows, len) matrix: groups of
// G threads per row (several rows per block for short rows), or, for a few
// long rows, segments reduced by blocks into partial states that a second
// kernel merges (plan_rows). Threads stride over the row in 16-byte packs,
// four in flight, when every row starts 16-byte aligned; warps combine by
// shuffles, then a group's warps in order through shared memory.
// Accumulation is in float for 16- and 32-bit floats, double for float64,
// 64-bit integers for integers; NaN wins max and min (as on the CPU).
// Also softmax over rows and the strided copy that brings reduced axes last.
#include <cuda_runtime.h>
#include <math.h>

#include "gpu/cuda/cu_types.cuh"
#include "gpu/cuda/pdl.cuh"
#include "gpu/cuda/kernels.h"
#include "ops/reduce_kern.h"
#include "gpu/cuda/reduce_fold.cuh"

namespace {

constexpr int kThreads = 256;

template <class T, int V> struct alignas(sizeof(T) * V) Pack { T e[V]; };

// Whether rows of len elements of T starting at x are all 16-byte aligned.
template <class T> __host__ bool rows_aligned(const void *x, int64_t len) {
  return ((uintptr_t)x % 16) == 0 && (len * (int64_t)sizeof(T)) % 16 == 0;
}

// Calls f(value) on every element of x[0..len) that thread `lane` of a
// group of G owns: packs lane + k G when vec (x 16-byte aligned, len a
// multiple of the pack), else elements.
template <class T, class A, class F>
__device__ __forceinline__ void row_each(const T *x, int64_t len, int lane, int G, bool vec,
                                         F &&f) {
  if (vec) {
    constexpr int V = 16 / sizeof(T);
    using P = Pack<T, V>;
    const P *xp = (const P *)x;
    const int64_t np = len / V;
    // four packs in flight, the last group's missing ones predicated off
    for (int64_t i = lane; i < np; i += 4 * G) {
      P q[4];
#pragma unroll
      for (int u = 0; u < 4; u++)
        if (i + u * G < np) q[u] = xp[i + u * G];
#pragma unroll
      for (int u = 0; u < 4; u++)
        if (i + u * G < np)
#pragma unroll
          for (int e = 0; e < V; e++) f((A)lc_ld(q[u].e[e]));
    }
  } else {
    for (int64_t i = lane; i < len; i += G) f((A)lc_ld(x[i]));
  }
}

// How rows are cut and shared among threads. Rows of up to 16 units (16-
// byte packs, or elements) per thread get a group of G threads each (32..
// kThreads, kThreads / G rows per block); G grows until about kWant
// threads run. When even kThreads per row leave the GPU mostly idle (few,
// long rows), each row is cut into S segments of `chunk` elements, each
// reduced by a block to a partial state in scratch (two values of the
// accumulator type per segment), then reduce_parts combines them. The plan
// depends on the shape and alignment only (not on the device), so results
// are the same on every GPU. LACE_CUDA_REDUCE_G forces G (no segments).
constexpr int64_t kWant = 1 << 18; // 132 SMs of 2048 threads, about once
struct Plan {
  int G;
  int64_t S, chunk;
};
__host__ Plan plan_rows(int64_t rows, int64_t len, int V) {
  const int64_t units = len / V;
  Plan p{32, 1, len};
  const char *e = getenv("LACE_CUDA_REDUCE_G");
  int forced = e ? atoi(e) : 0;
  if (forced == 32 || forced == 64 || forced == 128 || forced == 256) {
    p.G = forced;
    return p;
  }
  if (rows * kThreads < kWant && units > 4 * kThreads) {
    int64_t s = (kWant + rows * kThreads - 1) / (rows * kThreads),
            most = (units + 4 * kThreads - 1) / (4 * kThreads);
    if (s > most) s = most;
    const int64_t per = (units + s - 1) / s; // units per segment
    p.G = kThreads;
    p.S = (units + per - 1) / per;           // no empty segment
    p.chunk = p.S > 1 ? per * V : len;
    return p;
  }
  while (p.G < kThreads && (units > 16 * p.G || rows * p.G < kWant)) p.G *= 2;
  return p;
}

// Reduces segment seg (of S per row) with a group of G threads: into the
// output when S == 1, else into its partial state (scratch, two values of
// A): plain kinds their value (mean: the sum); logsumexp (max, sum of
// exp(x - max)); var and std (the segment's mean, its sum of squared
// deviations).
template <class TI, class TO, class A>
__global__ void reduce_rows(lc_cu_reduce a, bool vec, int G, int64_t S, int64_t chunk) {
  lc_pdl_begin();
  __shared__ A sh[kThreads / 32];
  const int64_t seg = (int64_t)blockIdx.x * (kThreads / G) + threadIdx.x / G;
  const int lane = threadIdx.x % G;
  const bool live = seg < a.rows * S;
  const int64_t row = live ? seg / S : 0, beg = live ? seg % S * chunk : 0;
  const int64_t len = live ? (a.len - beg < chunk ? a.len - beg : chunk) : 0;
  const bool store = live && lane == 0;
  const TI *x = (const TI *)a.in + row * a.len + beg;
  TO *o = (TO *)a.out + row;
  A *part = (A *)a.scratch + 2 * seg;
  int kind = a.kind;
  bool moments = kind == LC_RED_MEAN || kind == LC_RED_VAR || kind == LC_RED_STD;
  Combine<A> c{moments ? LC_RED_SUM : kind};
  if constexpr (std::is_floating_point<A>::value) {
  if (kind == LC_RED_LSE) {
    Combine<A> mx{LC_RED_MAX};
    A m = mx.init();
    row_each<TI, A>(x, len, lane, G, vec, [&](A t) { m = mx.op(m, t); });
    m = group_combine(m, mx, sh, G);
    A s = 0;
    if (isfinite((double)m)) row_each<TI, A>(x, len, lane, G, vec, [&](A t) { s += exp(t - m); });
    s = group_combine(s, c, sh, G);
    if (store && S == 1) *o = lc_to<TO>::f(isfinite((double)m) ? m + log(s) : m);
    else if (store) part[0] = m, part[1] = s;
    return;
  }
  }
  A v = c.init();
  // the fold's kind a constant in each loop (a runtime one costs a switch
  // per element: bfloat16 row sums ran at 0.41 of copy bandwidth)
  switch (c.kind) {
    case LC_RED_SUM: row_each<TI, A>(x, len, lane, G, vec, [&](A t) { v = v + t; }); break;
    case LC_RED_MAX: {
      const Combine<A> k{LC_RED_MAX};
      row_each<TI, A>(x, len, lane, G, vec, [&](A t) { v = k.op(v, t); });
      break;
    }
    case LC_RED_MIN: {
      const Combine<A> k{LC_RED_MIN};
      row_each<TI, A>(x, len, lane, G, vec, [&](A t) { v = k.op(v, t); });
      break;
    }
    default: row_each<TI, A>(x, len, lane, G, vec, [&](A t) { v = c.op(v, t); });
  }
  v = group_combine(v, c, sh, G);
  if (!moments || kind == LC_RED_MEAN) {
    if (store && S > 1) part[0] = v;
    else if (store && kind == LC_RED_MEAN) {
      if constexpr (std::is_floating_point<A>::value) *o = lc_to<TO>::f(v / (A)len);
    } else if (store) *o = lc_to<TO>::f(v);
    return;
  }
  if constexpr (std::is_floating_point<A>::value) {
  A mean = len ? v / (A)len : (A)0;
  A q = 0;
  row_each<TI, A>(x, len, lane, G, vec, [&](A t) {
    A d = t - mean;
    q += d * d;
  });
  q = group_combine(q, c, sh, G);
  if (store && S > 1) part[0] = mean, part[1] = q;
  else if (store) {
    A den = (A)(a.len - a.ddof);
    A var = den > 0 ? q / den : (A)NAN;
    *o = lc_to<TO>::f(kind == LC_RED_STD ? sqrt(var) : var);
  }
  }
}

// (m, s) of logsumexp merged with (m2, s2): NaN and +inf win as the max
// does, and the sum is then irrelevant (the result is the max).
template <class A> __device__ void lse_merge(A &m, A &s, A m2, A s2) {
  const A M = Combine<A>{LC_RED_MAX}.op(m, m2);
  if (!isfinite((double)M)) {
    m = M, s = 0;
    return;
  }
  s = (isfinite((double)m) ? s * exp(m - M) : (A)0) + (isfinite((double)m2) ? s2 * exp(m2 - M) : (A)0);
  m = M;
}
// (count, mean, squared deviations) merged with another segment's (Chan et
// al.'s pairwise update).
template <class A> __device__ void moment_merge(A &n, A &mean, A &q, A n2, A mean2, A q2) {
  if (n2 == 0) return;
  if (n == 0) {
    n = n2, mean = mean2, q = q2;
    return;
  }
  const A t = n + n2, d = mean2 - mean;
  mean += d * (n2 / t);
  q += q2 + d * d * (n * n2 / t);
  n = t;
}

// The row results from the S partial states per row: one warp per row,
// lane l merging segments l, l + 32, ... in order, then the warp's lanes.
template <class TO, class A>
__global__ void reduce_parts(lc_cu_reduce a, int64_t S, int64_t chunk) {
  lc_pdl_begin();
  const int64_t row = (int64_t)blockIdx.x * (kThreads / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= a.rows) return; // no barrier below
  const A *P = (const A *)a.scratch + 2 * row * S;
  TO *o = (TO *)a.out + row;
  const int kind = a.kind;
  if constexpr (std::is_floating_point<A>::value) {
  if (kind == LC_RED_LSE) {
    A m = -INFINITY, s = 0;
    for (int64_t j = lane; j < S; j += 32) lse_merge(m, s, P[2 * j], P[2 * j + 1]);
    for (int off = 1; off < 32; off <<= 1) {
      A m2 = __shfl_down_sync(0xffffffffu, m, off), s2 = __shfl_down_sync(0xffffffffu, s, off);
      if (lane % (2 * off) == 0) lse_merge(m, s, m2, s2);
    }
    if (lane == 0) *o = lc_to<TO>::f(isfinite((double)m) ? m + log(s) : m);
    return;
  }
  if (kind == LC_RED_VAR || kind == LC_RED_STD) {
    A n = 0, mean = 0, q = 0;
    for (int64_t j = lane; j < S; j += 32) {
      const int64_t len = a.len - j * chunk < chunk ? a.len - j * chunk : chunk;
      moment_merge(n, mean, q, (A)len, P[2 * j], P[2 * j + 1]);
    }
    for (int off = 1; off < 32; off <<= 1) {
      A n2 = __shfl_down_sync(0xffffffffu, n, off), m2 = __shfl_down_sync(0xffffffffu, mean, off),
        q2 = __shfl_down_sync(0xffffffffu, q, off);
      if (lane % (2 * off) == 0) moment_merge(n, mean, q, n2, m2, q2);
    }
    if (lane == 0) {
      A den = (A)(a.len - a.ddof);
      A var = den > 0 ? q / den : (A)NAN;
      *o = lc_to<TO>::f(kind == LC_RED_STD ? sqrt(var) : var);
    }
    return;
  }
  }
  Combine<A> c{kind == LC_RED_MEAN ? LC_RED_SUM : kind};
  A v = c.init();
  for (int64_t j = lane; j < S; j += 32) v = c.op(v, P[2 * j]);
  v = warp_combine(v, c);
  if (lane == 0) {
    if (kind == LC_RED_MEAN) {
      if constexpr (std::is_floating_point<A>::value) *o = lc_to<TO>::f(v / (A)a.len);
    } else {
      *o = lc_to<TO>::f(v);
    }
  }
}


__global__ void copy_strided(char *out, const char *in, int isz, int ndim,
                             lc_cu_ew shape_holder, int64_t n) {
  lc_pdl_begin();
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

// Softmax of each row (groups of G threads, lc_cu_softmax_rows's choice,
// never segments): max, then the sum of exp(x - max), then the scaled exps; in
// float (double for float64), whatever the storage type.
template <class T, class A>
__global__ void softmax_rows(const T *in, T *out, int64_t rows, int64_t len, bool vec, int G) {
  lc_pdl_begin();
  __shared__ A sh[kThreads / 32];
  const int64_t row = (int64_t)blockIdx.x * (kThreads / G) + threadIdx.x / G;
  const int lane = threadIdx.x % G;
  const int64_t n = row < rows ? len : 0; // rows past the end: barriers only
  const T *x = in + row * len;
  T *o = out + row * len;
  Combine<A> mx{LC_RED_MAX}, sum{LC_RED_SUM};
  A m = mx.init();
  row_each<T, A>(x, n, lane, G, vec, [&](A t) { m = mx.op(m, t); });
  m = group_combine(m, mx, sh, G);
  A s = 0;
  row_each<T, A>(x, n, lane, G, vec, [&](A t) { s += exp(t - m); });
  s = group_combine(s, sum, sh, G);
  A inv = (A)1 / s;
  if (vec) {
    constexpr int V = 16 / sizeof(T);
    using P = Pack<T, V>;
    const P *xp = (const P *)x;
    P *op = (P *)o;
    for (int64_t i = lane; i < n / V; i += G) {
      P q = xp[i], r;
#pragma unroll
      for (int e = 0; e < V; e++) r.e[e] = lc_to<T>::f(exp((A)lc_ld(q.e[e]) - m) * inv);
      op[i] = r;
    }
  } else {
    for (int64_t i = lane; i < n; i += G) o[i] = lc_to<T>::f(exp((A)lc_ld(x[i]) - m) * inv);
  }
}

}  // namespace

extern "C" int lc_cu_softmax_rows(int dt, int64_t rows, int64_t len, const void *in, void *out,
                                  void *stream) {
  if (rows == 0 || len == 0) return 0;
  if (rows > 0x7fffffff) return LC_CU_UNSUPPORTED;
  int rc = LC_CU_UNSUPPORTED;
  lc_dispatch_float(dt, [&](auto *tp) {
    using T = std::remove_pointer_t<decltype(tp)>;
    using A = typename lc_acc<T>::type;
    bool vec = rows_aligned<T>(in, len) && rows_aligned<T>(out, len);
    // Three passes over each row, the last two from L1: groups with at most
    // 4 (4-byte types) or 8 (16-bit) units per thread were fastest on the
    // H100 (rows of 4096: float32 0.72 ms against 1.32 with 16 units,
    // bfloat16 0.46 against 0.64; BENCHMARKS.md); never segments.
    const int V = vec ? 16 / (int)sizeof(T) : 1, U = sizeof(T) >= 4 ? 4 : 8;
    Plan p = plan_rows(rows, len, V); // for LACE_CUDA_REDUCE_G
    if (!getenv("LACE_CUDA_REDUCE_G"))
      for (p.G = 32; p.G < kThreads && (len / V > (int64_t)U * p.G || rows * p.G < kWant);) p.G *= 2;
    const int per = kThreads / p.G;
    lc_launch(softmax_rows<T, A>, dim3((unsigned)((rows + per - 1) / per)), dim3(kThreads), 0,
              (cudaStream_t)stream, (const T *)in, (T *)out, rows, len, vec, p.G);
    rc = 0;
  });
  if (rc) return rc;
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : -(int)e;
}

// The plan of reduction a: its groups and segments.
static Plan reduce_plan(const struct lc_cu_reduce *a) {
  Plan p{kThreads, 1, a->len};
  lc_dispatch_real(a->in_dt, [&](auto *pi) {
    using TI = std::remove_pointer_t<decltype(pi)>;
    p = plan_rows(a->rows, a->len, rows_aligned<TI>(a->in, a->len) ? 16 / (int)sizeof(TI) : 1);
  });
  return p;
}

extern "C" size_t lc_cu_reduce_scratch(const struct lc_cu_reduce *a) {
  if (a->rows <= 0 || a->len <= 0 || a->rows > 0x7fffffff) return 0;
  Plan p = reduce_plan(a);
  return p.S > 1 ? (size_t)(a->rows * p.S) * 2 * sizeof(double) : 0;
}

extern "C" int lc_cu_reduce_rows(const struct lc_cu_reduce *a, void *stream) {
  if (a->rows == 0) return 0;
  if (a->len == 0 || a->rows > 0x7fffffff) return LC_CU_UNSUPPORTED;
  bool float_kind = a->kind == LC_RED_MEAN || a->kind == LC_RED_VAR || a->kind == LC_RED_STD ||
                    a->kind == LC_RED_LSE;
  const Plan p = reduce_plan(a);
  if (p.S > 1 && !a->scratch) return LC_CU_UNSUPPORTED;
  const int64_t per = kThreads / p.G, blocks = (a->rows * p.S + per - 1) / per;
  if (blocks > 0x7fffffff) return LC_CU_UNSUPPORTED;
  int rc = LC_CU_UNSUPPORTED;
  cudaStream_t s = (cudaStream_t)stream;
  lc_dispatch_real(a->in_dt, [&](auto *pi) {
    using TI = std::remove_pointer_t<decltype(pi)>;
    lc_dispatch_real(a->out_dt, [&](auto *po) {
      using TO = std::remove_pointer_t<decltype(po)>;
      using A0 = typename acc_of<TI>::type;
      using A = typename std::conditional<std::is_floating_point<A0>::value, A0, double>::type;
      bool vec = rows_aligned<TI>(a->in, a->len);
      auto run = [&](auto *acc) {
        using R = std::remove_pointer_t<decltype(acc)>;
        lc_launch(reduce_rows<TI, TO, R>, dim3((unsigned)blocks), dim3(kThreads), 0, s, *a, vec,
                  p.G, p.S, p.chunk);
        if (p.S > 1)
          lc_launch(reduce_parts<TO, R>, dim3((unsigned)((a->rows + 7) / 8)), dim3(kThreads), 0, s,
                    *a, p.S, p.chunk);
      };
      if (std::is_floating_point<A0>::value || !float_kind) run((A0 *)0);
      else run((A *)0);
      rc = 0;
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
  lc_launch(copy_strided, dim3(blocks), dim3(256), 0, (cudaStream_t)stream, (char *)out,
            (const char *)in, itemsize, ndim, h, n);
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : -(int)e;
}
