// Programmatic dependent launch (sm_90): a kernel launched with lc_launch
// may be scheduled while the kernel before it in the stream still runs, so
// that its blocks are resident when that one ends and the gap between two
// dependent kernels shrinks to a wait on the GPU.
//
// Invariants that keep this equal to plain stream order:
//  - every kernel lc_launch launches calls lc_pdl_begin() before it reads
//    or writes global memory: griddepcontrol.wait returns once the kernel
//    before it has completed and its writes are visible;
//  - lc_pdl_begin() lets the next kernel be scheduled only after that wait,
//    so at most one kernel waits ahead of the running one (a chain of
//    early launches cannot fill the GPU with waiting blocks);
//  - kernels launched otherwise (<<<>>>, cuBLAS, cuFFT) keep stream order
//    whatever the kernel before them did; lc_pdl_begin() in them is a no-op
//    wait and a harmless trigger.
// The attribute is on unless LACE_CUDA_PDL=0 (lc_cu_pdl_enabled; without it
// lc_launch is <<<>>>).
#pragma once
#include <cuda_runtime.h>

#include <utility>

#include "gpu/cuda/kernels.h"

__device__ __forceinline__ void lc_pdl_begin() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

inline bool lc_pdl_enabled() { return lc_cu_pdl_enabled() != 0; }

// kernel<<<grid, block, smem, stream>>>(args...) in thread block clusters
// of `cluster` blocks (none when it is 1x1x1), with programmatic stream
// serialization unless turned off. The kernel must start with
// lc_pdl_begin(). Returns the launch's error, which cudaGetLastError()
// also reports afterwards, as after <<<>>>.
template <class... P, class... A>
cudaError_t lc_launch_cluster(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem,
                              cudaStream_t stream, dim3 cluster, A &&...args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute at[2];
  unsigned n = 0;
  if (lc_pdl_enabled()) {
    at[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster.x * cluster.y * cluster.z > 1) {
    at[n].id = cudaLaunchAttributeClusterDimension;
    at[n].val.clusterDim.x = cluster.x;
    at[n].val.clusterDim.y = cluster.y;
    at[n++].val.clusterDim.z = cluster.z;
  }
  cfg.attrs = at;
  cfg.numAttrs = n;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<A>(args)...);
}

// The same without clusters.
template <class... P, class... A>
cudaError_t lc_launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                      A &&...args) {
  return lc_launch_cluster(kernel, grid, block, smem, stream, dim3(1, 1, 1),
                           std::forward<A>(args)...);
}
