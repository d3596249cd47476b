// Fills n items of `itemsize` bytes (1, 2, 4 or 8) with one bit pattern:
// the init_value of custom kernels' outputs (eval_custom_kernel.c). A
// grid-stride loop, so any n fits in a bounded grid.
#include <cuda_runtime.h>

#include "gpu/cuda/kernels.h"
#include "gpu/cuda/pdl.cuh"

namespace {

constexpr int kThreads = 256;

template <class U> __global__ void fill_items(U *dst, int64_t n, U v) {
  lc_pdl_begin();
  for (int64_t i = (int64_t)blockIdx.x * kThreads + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * kThreads)
    dst[i] = v;
}

template <class U> void launch(void *dst, int64_t n, uint64_t bits, cudaStream_t s) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > 65536) blocks = 65536;
  lc_launch(fill_items<U>, dim3((unsigned)blocks), dim3(kThreads), 0, s, (U *)dst, n, (U)bits);
}

} // namespace

extern "C" int lc_cu_fill(void *dst, int64_t n, int itemsize, uint64_t bits, void *stream) {
  if (n <= 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  switch (itemsize) {
  case 1: launch<uint8_t>(dst, n, bits, s); break;
  case 2: launch<uint16_t>(dst, n, bits, s); break;
  case 4: launch<uint32_t>(dst, n, bits, s); break;
  case 8: launch<uint64_t>(dst, n, bits, s); break;
  default: return LC_CU_UNSUPPORTED;
  }
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : -(int)e;
}
