// Launch helpers shared by the hand-written kernel files of gpu/cuda/: the
// grid-stride loop, the grid size for n items, the status of the last
// launch, a view's element offset and the dispatch on an item's byte size.
// Everything here has internal linkage: each .cu gets its own copy.
#pragma once
#include <cuda_runtime.h>
#include <stdint.h>

#include "gpu/cuda/misc.h"

// i runs over [0, n) across the whole grid, any grid size.
#define GRID_LOOP(i, n)                                                     \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); \
       i += (int64_t)gridDim.x * blockDim.x)

namespace {

// Blocks of 256 threads for n items: at least 1, at most 32 per SM of a
// 132-SM H100 (the grid-stride loop covers the rest).
inline unsigned blocks_for(int64_t n) {
  int64_t b = (n + 255) / 256;
  return (unsigned)(b < 132 * 32 ? (b > 0 ? b : 1) : 132 * 32);
}

// 0 after a clean launch, else minus the CUDA error.
inline int done() {
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : -(int)e;
}

// Element i of a view (row-major over its shape): its offset in items.
__device__ __forceinline__ int64_t view_off(const lc_cu_view &v, int64_t i) {
  int64_t off = 0;
  for (int d = v.ndim - 1; d >= 0; d--) {
    int64_t q = i / v.shape[d];
    off += (i - q * v.shape[d]) * v.strides[d];
    i = q;
  }
  return off;
}

// Calls f((U *)0) with the unsigned item type of `size` bytes (1, 2, 4, 8;
// with Wide also 16: uint4, which only moves); false for any other size.
template <bool Wide = false, class F> bool by_size(int size, F &&f) {
  switch (size) {
    case 1: f((uint8_t *)0); return true;
    case 2: f((uint16_t *)0); return true;
    case 4: f((uint32_t *)0); return true;
    case 8: f((unsigned long long *)0); return true;
    case 16:
      if constexpr (Wide) {
        f((uint4 *)0);
        return true;
      }
      return false;
    default: return false;
  }
}

}  // namespace
