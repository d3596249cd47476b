// Column reductions on the GPU: a row-major (outer, R, inner) array reduced
// over its middle axis into (outer, inner), read in place (the row
// reductions would first copy it into (outer, inner, R) order). A block
// covers 32 adjacent columns with its 8 warps striding over R, the warps'
// values combined in order through shared memory; when the columns alone
// would leave the GPU idle, R is cut into S segments whose partial values
// (scratch) a second kernel merges, in order. sum, prod, max, min, all,
// any and mean; accumulation as in the row reductions (reduce.cu).
#include <cuda_runtime.h>
#include <math.h>

#include "gpu/cuda/cu_types.cuh"
#include "gpu/cuda/pdl.cuh"
#include "gpu/cuda/kernels.h"
#include "ops/reduce_kern.h"
#include "gpu/cuda/reduce_fold.cuh"

namespace {

constexpr int kThreads = 256, kCols = 32, kWarps = kThreads / kCols;
constexpr int64_t kWantBlocks = 1024; // about 8 blocks per SM of a 132-SM GPU

struct Plan {
  int64_t tiles; // column tiles of kCols per outer index
  int64_t S, chunk;
};
__host__ Plan plan_cols(const struct lc_cu_reduce_cols *a) {
  Plan p;
  p.tiles = (a->inner + kCols - 1) / kCols;
  p.S = 1;
  p.chunk = a->R;
  const int64_t blocks = a->outer * p.tiles;
  if (blocks < kWantBlocks && a->R >= 8 * kWarps) {
    int64_t s = (kWantBlocks + blocks - 1) / blocks, most = a->R / (8 * kWarps);
    if (s > most) s = most;
    p.chunk = (a->R + s - 1) / s;
    p.S = (a->R + p.chunk - 1) / p.chunk;
  }
  return p;
}

// Block b: segment b % S of column tile (b / S) % tiles of outer index
// b / (S tiles). Writes the result (S == 1) or the partial value.
template <class TI, class TO, class A>
__global__ void reduce_cols(struct lc_cu_reduce_cols a, Plan p) {
  lc_pdl_begin();
  __shared__ A sh[kWarps][kCols];
  const int64_t b = blockIdx.x, seg = b % p.S, tile = b / p.S % p.tiles, o = b / p.S / p.tiles;
  const int lane = threadIdx.x % kCols, w = threadIdx.x / kCols;
  const int64_t col = tile * kCols + lane;
  const int64_t r0 = seg * p.chunk, r1 = r0 + p.chunk < a.R ? r0 + p.chunk : a.R;
  Combine<A> f{a.kind == LC_RED_MEAN ? LC_RED_SUM : a.kind};
  A v = f.init();
  if (col < a.inner) {
    const TI *x = (const TI *)a.in + o * a.R * a.inner + col;
    switch (f.kind) { // the kind a constant in each loop
      case LC_RED_SUM:
#pragma unroll 4
        for (int64_t r = r0 + w; r < r1; r += kWarps) v = v + (A)lc_ld(x[r * a.inner]);
        break;
      default:
#pragma unroll 4
        for (int64_t r = r0 + w; r < r1; r += kWarps) v = f.op(v, (A)lc_ld(x[r * a.inner]));
    }
  }
  sh[w][lane] = v;
  __syncthreads();
  if (w != 0 || col >= a.inner) return;
  for (int k = 1; k < kWarps; k++) v = f.op(v, sh[k][lane]);
  const int64_t at = o * a.inner + col;
  if (p.S > 1) {
    ((A *)a.scratch)[at * p.S + seg] = v;
  } else if (a.kind == LC_RED_MEAN) {
    if constexpr (std::is_floating_point<A>::value) ((TO *)a.out)[at] = lc_to<TO>::f(v / (A)a.R);
  } else {
    ((TO *)a.out)[at] = lc_to<TO>::f(v);
  }
}

// One thread per output: its S partial values merged in order.
template <class TO, class A>
__global__ void reduce_cols_parts(struct lc_cu_reduce_cols a, Plan p) {
  lc_pdl_begin();
  const int64_t at = (int64_t)blockIdx.x * kThreads + threadIdx.x;
  if (at >= a.outer * a.inner) return;
  Combine<A> f{a.kind == LC_RED_MEAN ? LC_RED_SUM : a.kind};
  const A *P = (const A *)a.scratch + at * p.S;
  A v = P[0];
  for (int64_t j = 1; j < p.S; j++) v = f.op(v, P[j]);
  if (a.kind == LC_RED_MEAN) {
    if constexpr (std::is_floating_point<A>::value) ((TO *)a.out)[at] = lc_to<TO>::f(v / (A)a.R);
  } else {
    ((TO *)a.out)[at] = lc_to<TO>::f(v);
  }
}

bool supported_kind(int k) {
  return k == LC_RED_SUM || k == LC_RED_PROD || k == LC_RED_MAX || k == LC_RED_MIN ||
         k == LC_RED_AND || k == LC_RED_OR || k == LC_RED_MEAN;
}

}  // namespace

extern "C" int lc_cu_reduce_cols_ok(const struct lc_cu_reduce_cols *a) {
  if (a->outer <= 0 || a->R <= 0 || a->inner <= 0 || !supported_kind(a->kind)) return 0;
  bool real = false;
  lc_dispatch_real(a->in_dt, [&](auto *) { real = true; });
  const Plan p = plan_cols(a);
  return real && a->outer * p.tiles * p.S <= 0x7fffffff;
}

extern "C" size_t lc_cu_reduce_cols_scratch(const struct lc_cu_reduce_cols *a) {
  if (a->outer <= 0 || a->R <= 0 || a->inner <= 0 || !supported_kind(a->kind)) return 0;
  Plan p = plan_cols(a);
  return p.S > 1 ? (size_t)(a->outer * a->inner * p.S) * sizeof(double) : 0;
}

extern "C" int lc_cu_reduce_cols(const struct lc_cu_reduce_cols *a, void *stream) {
  if (a->outer == 0 || a->inner == 0) return 0;
  if (a->R <= 0 || !supported_kind(a->kind)) return LC_CU_UNSUPPORTED;
  const Plan p = plan_cols(a);
  const int64_t blocks = a->outer * p.tiles * p.S;
  if (blocks > 0x7fffffff || (p.S > 1 && !a->scratch)) return LC_CU_UNSUPPORTED;
  int rc = LC_CU_UNSUPPORTED;
  cudaStream_t s = (cudaStream_t)stream;
  lc_dispatch_real(a->in_dt, [&](auto *pi) {
    using TI = std::remove_pointer_t<decltype(pi)>;
    lc_dispatch_real(a->out_dt, [&](auto *po) {
      using TO = std::remove_pointer_t<decltype(po)>;
      using A0 = typename acc_of<TI>::type;
      using A = typename std::conditional<std::is_floating_point<A0>::value, A0, double>::type;
      auto run = [&](auto *acc) {
        using R = std::remove_pointer_t<decltype(acc)>;
        lc_launch(reduce_cols<TI, TO, R>, dim3((unsigned)blocks), dim3(kThreads), 0, s, *a, p);
        if (p.S > 1) {
          const int64_t n = a->outer * a->inner;
          lc_launch(reduce_cols_parts<TO, R>, dim3((unsigned)((n + kThreads - 1) / kThreads)),
                    dim3(kThreads), 0, s, *a, p);
        }
      };
      if (std::is_floating_point<A0>::value || a->kind != LC_RED_MEAN) run((A0 *)0);
      else run((A *)0);
      rc = 0;
    });
  });
  if (rc) return rc;
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : -(int)e;
}
