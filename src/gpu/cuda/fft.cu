// Elementwise kernels around cuFFT (the contract is in gpu/cuda/fft.h):
// grid-stride loops, int64 indexing, float arithmetic as the CPU's.
#include <cuda_runtime.h>

#include "gpu/cuda/fft.h"
#include "gpu/cuda/launch.cuh"

namespace {

__global__ void scale(float *x, int64_t n, float s) {
  GRID_LOOP(i, n) x[i] *= s;
}

// one thread per (row, which): which 0 is column 0, 1 column nyq
__global__ void real_bins(float *x, int64_t rows, int64_t len, int64_t nyq) {
  int64_t per = nyq >= 0 ? 2 : 1;
  GRID_LOOP(i, rows * per) {
    int64_t r = i / per, col = i % per ? nyq : 0;
    x[2 * (r * len + col) + 1] = 0.0f;
  }
}

__global__ void len1(int to_complex, const float *in, float *out, int64_t n) {
  GRID_LOOP(i, n) {
    if (to_complex) {
      out[2 * i] = in[i];
      out[2 * i + 1] = 0.0f;
    } else {
      out[i] = in[2 * i];
    }
  }
}

} // namespace

extern "C" int lc_cu_fft_scale(float *x, int64_t n, float s, void *stream) {
  if (n <= 0) return 0;
  scale<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>(x, n, s);
  return done();
}

extern "C" int lc_cu_fft_real_bins(float *x, int64_t rows, int64_t len, int64_t nyq,
                                   void *stream) {
  if (rows <= 0 || len <= 0) return 0;
  if (nyq >= len) nyq = -1;
  real_bins<<<blocks_for(rows * 2), 256, 0, (cudaStream_t)stream>>>(x, rows, len, nyq);
  return done();
}

extern "C" int lc_cu_fft_len1(int to_complex, const float *in, float *out, int64_t n,
                              void *stream) {
  if (n <= 0) return 0;
  len1<<<blocks_for(n), 256, 0, (cudaStream_t)stream>>>(to_complex, in, out, n);
  return done();
}
