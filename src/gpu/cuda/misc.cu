// Kernels of primitives that the other families do not cover: divmod,
// linspace, tri (eye), tril/triu, diag, hadamard, masked_scatter, gather_mm's
// pointer arrays, and a
// contiguous copy of a view (misc.h). Semantics are the CPU evaluators'
// (ops/binary.c, ops/creation.c, ops/shape_remap.c, ops/misc_ops.c,
// ops/scatter.c), kept bit for bit:
//  - every element is computed by the CPU's formula in the CPU's types
//    and order of operations (nvcc runs with --fmad=false, so no product
//    is fused into a sum);
//  - copying kernels move items of the element's size, whatever the dtype;
//  - indices are 64-bit; 1-d grids are bounded (grid-stride loops) or
//    checked against gridDim.x's limit before launching.
// Every kernel starts with lc_pdl_begin() (pdl.cuh).
#include <cuda_runtime.h>

#include "gpu/cuda/cu_types.cuh"
#include "gpu/cuda/misc.h"
#include "gpu/cuda/pdl.cuh"
#include "gpu/cuda/launch.cuh"

namespace {

constexpr int kThreads = 256;

// ---- copy of a view ----

template <class U> __global__ void copy_view_k(U *out, lc_cu_view in, int64_t n) {
  lc_pdl_begin();
  const U *s = (const U *)in.p;
  GRID_LOOP(i, n) out[i] = s[view_off(in, i)];
}

// ---- divmod: binary.c's fdiv_s, rem_s, fdiv_u, rem_u, rem_f ----

__device__ __forceinline__ long long fdiv_s(long long x, long long y) {
  if (y == 0) return 0;
  if (y == -1) return (long long)(0ull - (unsigned long long)x); // INT_MIN / -1 wraps
  long long q = x / y;
  return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
}
__device__ __forceinline__ long long rem_s(long long x, long long y) {
  if (y == 0) return x;
  if (y == -1) return 0;
  long long r = x % y;
  return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
}
__device__ __forceinline__ float rem_f(float x, float y) {
  float r = fmodf(x, y);
  return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
}


template <class S> __device__ __forceinline__ void divmod_one(S x, S y, S *q, S *r) {
  if constexpr (std::is_same<S, double>::value) {
    *q = floor(x / y);
    double m = fmod(x, y); /* binary.c's rem_d */
    *r = (m != 0 && ((m < 0) != (y < 0))) ? m + y : m;
  } else if constexpr (std::is_same<S, float>::value) {
    *q = floorf(x / y);
    *r = rem_f(x, y);
  } else if constexpr (std::is_same<S, __half>::value || std::is_same<S, __nv_bfloat16>::value) {
    float a = lc_ld(x), b = lc_ld(y);
    *q = lc_to<S>::f(floorf(a / b));
    *r = lc_to<S>::f(rem_f(a, b));
  } else if constexpr (std::is_same<S, bool>::value || !std::is_signed<S>::value) {
    unsigned long long a = x, b = y; // bool: 0 or 1
    *q = (S)(b ? a / b : 0);
    *r = (S)(b ? a % b : a);
  } else {
    long long a = x, b = y;
    *q = (S)fdiv_s(a, b);
    *r = (S)rem_s(a, b);
  }
}

template <class S> __global__ void divmod_k(struct lc_cu_divmod a) {
  lc_pdl_begin();
  S *q = (S *)a.q, *r = (S *)a.r;
  const S *x = (const S *)a.x.p, *y = (const S *)a.y.p;
  GRID_LOOP(i, a.n) {
    S qv, rv;
    divmod_one<S>(x[view_off(a.x, i)], y[view_off(a.y, i)], &qv, &rv);
    q[i] = qv;
    r[i] = rv;
  }
}

// ---- linspace: creation.c's linspace_eval, element by element ----

template <class T>
__global__ void linspace_k(T *o, int64_t n, double start, double stop, int den) {
  lc_pdl_begin();
  GRID_LOOP(i, n) {
    if constexpr (std::is_same<T, double>::value) {
      double t = (double)i / (double)den;
      o[i] = (1.0 - t) * start + t * stop;
    } else {
      float a = (float)start, b = (float)stop, d = (float)den;
      float t = (float)i / d;
      float tb = 1.0f - t, x = tb * a, y = t * b;
      o[i] = lc_to<T>::f(x + y); // astype from float32
    }
  }
}

// ---- tri, tril, diag ----

template <class U>
__global__ void tri_k(U *o, int64_t rows, int64_t cols, int64_t k, int eye, U one) {
  lc_pdl_begin();
  GRID_LOOP(q, rows * cols) {
    int64_t i = q / cols, j = q - i * cols, last = i + k;
    bool set = eye ? j == last : j <= last;
    o[q] = set ? one : (U)0;
  }
}

template <class U>
__global__ void tril_k(U *o, lc_cu_view in, int64_t n, int64_t rows, int64_t cols, int64_t k,
                       int upper) {
  lc_pdl_begin();
  const U *s = (const U *)in.p;
  GRID_LOOP(q, n) {
    int64_t t = q / cols, j = q - t * cols, i = t % rows, edge = i + k;
    bool keep = upper ? j >= edge : j <= edge;
    o[q] = keep ? s[view_off(in, q)] : (U)0; // in place: q's own element only
  }
}

template <class U>
__global__ void diag_k(U *o, const U *v, int64_t vs, int64_t len, int64_t m, int64_t r0,
                       int64_t c0) {
  lc_pdl_begin();
  GRID_LOOP(q, m * m) {
    int64_t i = q / m, j = q - i * m, t = i - r0;
    o[q] = (t >= 0 && t < len && j - c0 == t) ? v[t * vs] : (U)0;
  }
}

// ---- hadamard ----
// Stages h < kTile run in shared memory on tiles of kTile elements (whole
// rows when len <= kTile, else aligned kTile-element pieces of a row, in
// which the pairs of those stages stay); each later stage is one launch
// over global memory. The scale is applied where the last stage writes.

constexpr int kTile = 4096;
constexpr int kHThreads = 512;

template <class T> __device__ __forceinline__ T scaled(T x, double s) {
  return (T)((double)x * s); // misc_ops.c: (T)(x[i] * scale), scale a double
}

template <class T>
__global__ void __launch_bounds__(kHThreads)
    fwht_tile_k(T *out, lc_cu_view in, int64_t total, int seg, int last, double scale) {
  __shared__ T s[kTile];
  lc_pdl_begin();
  const int64_t base = (int64_t)blockIdx.x * kTile;
  const int cnt = (int)(total - base < kTile ? total - base : kTile); // a multiple of seg
  const T *src = (const T *)in.p;
  for (int e = threadIdx.x; e < cnt; e += kHThreads) s[e] = src[view_off(in, base + e)];
  __syncthreads();
  for (int h = 1; h < seg; h *= 2) {
    for (int p = threadIdx.x; p < cnt / 2; p += kHThreads) {
      int j = (p / h) * 2 * h + (p % h);
      T a = s[j], b = s[j + h];
      s[j] = a + b;
      s[j + h] = a - b;
    }
    __syncthreads();
  }
  // in place (out == src) is safe: this block read its tile before any write
  for (int e = threadIdx.x; e < cnt; e += kHThreads)
    out[base + e] = last ? scaled(s[e], scale) : s[e];
}

template <class T>
__global__ void fwht_stage_k(T *x, int64_t rows, int64_t len, int64_t h, int last, double scale) {
  lc_pdl_begin();
  const int64_t half = len / 2;
  GRID_LOOP(p, rows * half) {
    int64_t r = p / half, q = p - r * half;
    int64_t j = r * len + (q / h) * 2 * h + q % h;
    T a = x[j], b = x[j + h];
    T u = a + b, w = a - b;
    x[j] = last ? scaled(u, scale) : u;
    x[j + h] = last ? scaled(w, scale) : w;
  }
}

// ---- masked_scatter ----
// Tiles of LC_CU_MS_TILE mask elements; a tile's set elements take the
// values from its exclusive offset on, in row-major order: thread t of
// the scatter kernel owns the tile's elements [t * kMsPer, (t+1) * kMsPer).

constexpr int kMsThreads = 256;
constexpr int kMsPer = LC_CU_MS_TILE / kMsThreads;
static_assert(kMsPer * kMsThreads == LC_CU_MS_TILE, "tile");

__device__ __forceinline__ bool mask_at(const lc_cu_view &m, int64_t i) {
  return ((const uint8_t *)m.p)[view_off(m, i)] != 0;
}

// Inclusive scan of v over the block (NT threads, a multiple of 32) with
// ws (32 entries of shared memory); every thread must call it. ws may be
// used again after it returns.
template <int NT> __device__ int64_t block_scan(int64_t v, int64_t *ws) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  for (int o = 1; o < 32; o <<= 1) {
    int64_t t = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v += t;
  }
  if (lane == 31) ws[w] = v;
  __syncthreads();
  if (w == 0) {
    int64_t s = lane < NT / 32 ? ws[lane] : 0;
    for (int o = 1; o < 32; o <<= 1) {
      int64_t t = __shfl_up_sync(0xffffffffu, s, o);
      if (lane >= o) s += t;
    }
    ws[lane] = s;
  }
  __syncthreads();
  int64_t r = v + (w > 0 ? ws[w - 1] : 0);
  __syncthreads();
  return r;
}

__global__ void __launch_bounds__(kMsThreads) ms_count_k(lc_cu_view m, int64_t n, int64_t *tiles) {
  __shared__ int64_t ws[32];
  lc_pdl_begin();
  const int64_t base = (int64_t)blockIdx.x * LC_CU_MS_TILE;
  int64_t c = 0;
  for (int e = threadIdx.x; e < LC_CU_MS_TILE; e += kMsThreads) {
    int64_t i = base + e;
    if (i < n && mask_at(m, i)) c++;
  }
  int64_t incl = block_scan<kMsThreads>(c, ws);
  if (threadIdx.x == kMsThreads - 1) tiles[blockIdx.x] = incl;
}

// One block: tiles[] from counts to exclusive offsets; *total the sum.
constexpr int kScanThreads = 1024;
__global__ void __launch_bounds__(kScanThreads)
    ms_scan_k(int64_t *tiles, int64_t ntiles, int64_t *total) {
  __shared__ int64_t ws[32];
  __shared__ int64_t chunk;
  lc_pdl_begin();
  int64_t carry = 0;
  for (int64_t base = 0; base < ntiles; base += kScanThreads) {
    int64_t i = base + threadIdx.x, v = i < ntiles ? tiles[i] : 0;
    int64_t incl = block_scan<kScanThreads>(v, ws);
    if (i < ntiles) tiles[i] = carry + incl - v;
    if (threadIdx.x == kScanThreads - 1) chunk = incl;
    __syncthreads();
    carry += chunk;
    __syncthreads();
  }
  if (threadIdx.x == 0) *total = carry;
}

template <class U>
__global__ void __launch_bounds__(kMsThreads)
    ms_scatter_k(U *out, lc_cu_view m, int64_t n, lc_cu_view v, int64_t nv, const int64_t *tiles) {
  __shared__ int64_t ws[32];
  lc_pdl_begin();
  const int64_t base = (int64_t)blockIdx.x * LC_CU_MS_TILE + (int64_t)threadIdx.x * kMsPer;
  bool f[kMsPer];
  int64_t c = 0;
#pragma unroll
  for (int e = 0; e < kMsPer; e++) {
    f[e] = base + e < n && mask_at(m, base + e);
    c += f[e];
  }
  int64_t rank = tiles[blockIdx.x] + block_scan<kMsThreads>(c, ws) - c;
  const U *vals = (const U *)v.p;
#pragma unroll
  for (int e = 0; e < kMsPer; e++)
    if (f[e]) {
      if (rank < nv) out[base + e] = vals[view_off(v, rank)];
      rank++;
    }
}

// ---- gather_mm: the batched GEMM's pointers ----

__global__ void gather_mm_ptrs_k(lc_cu_gather_mm g) {
  lc_pdl_begin();
  GRID_LOOP(i, g.n) {
    uint32_t ia = g.ia[i], ib = g.ib[i];
    ia = ia < g.na ? ia : g.na - 1;
    ib = ib < g.nb ? ib : g.nb - 1;
    g.ptrs[i] = (void *)(g.a + (int64_t)ia * g.a_step);
    g.ptrs[g.n + i] = (void *)(g.b + (int64_t)ib * g.b_step);
    g.ptrs[2 * g.n + i] = (void *)(g.out + i * g.out_step);
  }
}

}  // namespace

extern "C" int lc_cu_copy_view(void *out, const struct lc_cu_view *in, int itemsize, int64_t n,
                               void *stream) {
  if (n <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (!by_size(itemsize, [&](auto *p) {
        using U = std::remove_pointer_t<decltype(p)>;
        lc_launch(copy_view_k<U>, dim3(blocks_for(n)), dim3(kThreads), 0, s, (U *)out, *in, n);
      }))
    return LC_CU_UNSUPPORTED;
  return done();
}

extern "C" int lc_cu_divmod(const struct lc_cu_divmod *a, void *stream) {
  if (a->n <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (!lc_dispatch_real(a->dt, [&](auto *p) {
        using S = std::remove_pointer_t<decltype(p)>;
        lc_launch(divmod_k<S>, dim3(blocks_for(a->n)), dim3(kThreads), 0, s, *a);
      }))
    return LC_CU_UNSUPPORTED;
  return done();
}

extern "C" int lc_cu_linspace(void *out, int dt, int64_t n, double start, double stop, int den,
                              void *stream) {
  if (n <= 0) return 0;
  if (n < 2) return LC_CU_UNSUPPORTED; // one element: start itself (the caller stores it)
  cudaStream_t s = (cudaStream_t)stream;
  if (!lc_dispatch_real(dt, [&](auto *p) {
        using T = std::remove_pointer_t<decltype(p)>;
        lc_launch(linspace_k<T>, dim3(blocks_for(n)), dim3(kThreads), 0, s, (T *)out, n, start,
                  stop, den);
      }))
    return LC_CU_UNSUPPORTED;
  return done();
}

extern "C" int lc_cu_tri(void *out, int itemsize, int64_t rows, int64_t cols, int64_t k, int eye,
                         uint64_t one, void *stream) {
  if (rows <= 0 || cols <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (!by_size(itemsize, [&](auto *p) {
        using U = std::remove_pointer_t<decltype(p)>;
        lc_launch(tri_k<U>, dim3(blocks_for(rows * cols)), dim3(kThreads), 0, s, (U *)out, rows,
                  cols, k, eye, (U)one);
      }))
    return LC_CU_UNSUPPORTED;
  return done();
}

extern "C" int lc_cu_tril(void *out, const struct lc_cu_view *in, int itemsize, int64_t n,
                          int64_t rows, int64_t cols, int64_t k, int upper, void *stream) {
  if (n <= 0 || rows <= 0 || cols <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (!by_size(itemsize, [&](auto *p) {
        using U = std::remove_pointer_t<decltype(p)>;
        lc_launch(tril_k<U>, dim3(blocks_for(n)), dim3(kThreads), 0, s, (U *)out, *in, n, rows,
                  cols, k, upper);
      }))
    return LC_CU_UNSUPPORTED;
  return done();
}

extern "C" int lc_cu_diag(void *out, const void *v, int64_t vstride, int itemsize, int64_t len,
                          int64_t m, int64_t r0, int64_t c0, void *stream) {
  if (m <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  if (!by_size(itemsize, [&](auto *p) {
        using U = std::remove_pointer_t<decltype(p)>;
        lc_launch(diag_k<U>, dim3(blocks_for(m * m)), dim3(kThreads), 0, s, (U *)out,
                  (const U *)v, vstride, len, m, r0, c0);
      }))
    return LC_CU_UNSUPPORTED;
  return done();
}

extern "C" int lc_cu_hadamard(void *out, const struct lc_cu_view *in, int dt, int64_t rows,
                              int64_t len, double scale, void *stream) {
  if (rows <= 0 || len <= 0) return 0;
  if ((len & (len - 1)) != 0 || (dt != MLX_FLOAT32 && dt != MLX_FLOAT64)) return LC_CU_UNSUPPORTED;
  const int64_t total = rows * len, tiles = (total + kTile - 1) / kTile;
  if (tiles > 0x7fffffff) return LC_CU_UNSUPPORTED;
  const int seg = (int)(len < kTile ? len : kTile);
  cudaStream_t s = (cudaStream_t)stream;
  auto run = [&](auto *p) {
    using T = std::remove_pointer_t<decltype(p)>;
    lc_launch(fwht_tile_k<T>, dim3((unsigned)tiles), dim3(kHThreads), 0, s, (T *)out, *in, total,
              seg, (int)(len <= kTile), scale);
    for (int64_t h = kTile; h < len; h *= 2)
      lc_launch(fwht_stage_k<T>, dim3(blocks_for(total / 2)), dim3(kThreads), 0, s, (T *)out, rows,
                len, h, (int)(2 * h == len), scale);
  };
  if (dt == MLX_FLOAT64) run((double *)0);
  else run((float *)0);
  return done();
}

extern "C" int64_t lc_cu_masked_tiles(int64_t n) {
  return n > 0 ? (n + LC_CU_MS_TILE - 1) / LC_CU_MS_TILE : 0;
}

extern "C" int lc_cu_masked_count(const struct lc_cu_view *mask, int64_t n, int64_t *tiles,
                                  int64_t *total, void *stream) {
  const int64_t nt = lc_cu_masked_tiles(n);
  if (nt <= 0 || nt > 0x7fffffff) return LC_CU_UNSUPPORTED;
  cudaStream_t s = (cudaStream_t)stream;
  lc_launch(ms_count_k, dim3((unsigned)nt), dim3(kMsThreads), 0, s, *mask, n, tiles);
  lc_launch(ms_scan_k, dim3(1), dim3(kScanThreads), 0, s, tiles, nt, total);
  return done();
}

extern "C" int lc_cu_masked_scatter(void *out, int itemsize, const struct lc_cu_view *mask,
                                    int64_t n, const struct lc_cu_view *values, int64_t nvalues,
                                    const int64_t *tiles, void *stream) {
  const int64_t nt = lc_cu_masked_tiles(n);
  if (nt <= 0 || nt > 0x7fffffff) return LC_CU_UNSUPPORTED;
  cudaStream_t s = (cudaStream_t)stream;
  if (!by_size(itemsize, [&](auto *p) {
        using U = std::remove_pointer_t<decltype(p)>;
        lc_launch(ms_scatter_k<U>, dim3((unsigned)nt), dim3(kMsThreads), 0, s, (U *)out, *mask, n,
                  *values, nvalues, tiles);
      }))
    return LC_CU_UNSUPPORTED;
  return done();
}

extern "C" int lc_cu_gather_mm_ptrs(const struct lc_cu_gather_mm *g, void *stream) {
  if (g->n <= 0) return 0;
  if (g->na == 0 || g->nb == 0) return LC_CU_UNSUPPORTED;
  lc_launch(gather_mm_ptrs_k, dim3(blocks_for(g->n)), dim3(kThreads), 0, (cudaStream_t)stream,
            *g);
  return done();
}
