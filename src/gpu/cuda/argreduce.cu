// argmax / argmin along the rows of a row-major (rows, len) matrix: one
// block per row, each thread scanning its strided share in index order
// (kLoads loads in flight before it compares them), then a shared-memory
// tree. A long row gets 1024 threads (a decode step's argmax over the
// vocabulary is one row: the scan's latency is the kernel's time). The
// CPU's rules: the first index of the extreme value wins, and the first
// NaN beats every number.
#include <cuda_runtime.h>

#include "gpu/cuda/cu_types.cuh"
#include "gpu/cuda/pdl.cuh"
#include "gpu/cuda/kernels.h"

namespace {

constexpr int kLoads = 8;

template <class A> struct Cand {
  A v;
  int64_t i; // -1: none yet
};

// Whether candidate b beats a (both from the same row; ties: lower index).
template <class A> __device__ bool beats(const Cand<A> &b, const Cand<A> &a, bool is_max) {
  if (b.i < 0) return false;
  if (a.i < 0) return true;
  bool an = a.v != a.v, bn = b.v != b.v;
  if (an || bn) return an && bn ? b.i < a.i : bn;
  if (b.v == a.v) return b.i < a.i;
  return is_max ? a.v < b.v : b.v < a.v;
}

template <class T, int Threads>
__global__ void __launch_bounds__(Threads)
    arg_rows(const T *x, uint32_t *out, int64_t len, bool is_max) {
  lc_pdl_begin();
  using A = typename lc_acc<T>::type;
  __shared__ A sv[Threads];
  __shared__ int64_t si[Threads];
  const T *row = x + (int64_t)blockIdx.x * len;
  Cand<A> c{A(0), -1};
  for (int64_t j0 = threadIdx.x; j0 < len; j0 += (int64_t)kLoads * Threads) {
    A v[kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; u++) {
      int64_t j = j0 + (int64_t)u * Threads;
      v[u] = j < len ? lc_ld(row[j]) : A(0);
    }
#pragma unroll
    for (int u = 0; u < kLoads; u++) {
      Cand<A> e{v[u], j0 + (int64_t)u * Threads < len ? j0 + (int64_t)u * Threads : -1};
      if (beats(e, c, is_max)) c = e;
    }
  }
  sv[threadIdx.x] = c.v;
  si[threadIdx.x] = c.i;
  __syncthreads();
  for (int s = Threads / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) {
      Cand<A> a{sv[threadIdx.x], si[threadIdx.x]}, b{sv[threadIdx.x + s], si[threadIdx.x + s]};
      if (beats(b, a, is_max)) sv[threadIdx.x] = b.v, si[threadIdx.x] = b.i;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = (uint32_t)si[0];
}

} // namespace

extern "C" int lc_cu_argreduce_rows(int is_max, int dt, int64_t rows, int64_t len, const void *in,
                                    void *out, void *stream) {
  if (rows <= 0 || len <= 0 || rows > 0x7fffffff) return LC_CU_UNSUPPORTED;
  int rc = LC_CU_UNSUPPORTED;
  cudaStream_t s = (cudaStream_t)stream;
  lc_dispatch_real(dt, [&](auto *p) {
    using T = std::remove_pointer_t<decltype(p)>;
    if (len >= 8192)
      lc_launch(arg_rows<T, 1024>, dim3((unsigned)rows), dim3(1024), 0, s, (const T *)in,
                (uint32_t *)out, len, is_max != 0);
    else
      lc_launch(arg_rows<T, 256>, dim3((unsigned)rows), dim3(256), 0, s, (const T *)in,
                (uint32_t *)out, len, is_max != 0);
    rc = 0;
  });
  if (rc) return rc;
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : -(int)e;
}
