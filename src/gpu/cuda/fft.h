/* Launchers of the small kernels around cuFFT (gpu/cuda/fft.cu), callable
 * from C; conventions as kernels.h: plain C types, work queued on `stream`,
 * 0 or a negative cudaError_t. Arrays are contiguous device arrays of
 * float32 or complex64 (two floats); n == 0 queues nothing. */
#ifndef LC_GPU_CUDA_FFT_H
#define LC_GPU_CUDA_FFT_H

#include <stdint.h>

#include "gpu/cuda/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* x[i] *= s for the n floats of x. */
int lc_cu_fft_scale(float *x, int64_t n, float s, void *stream);

/* Zeroes the imaginary parts of columns 0 and nyq (nyq < 0: none) of the
 * row-major complex64 matrix x (rows x len): the bins of a half spectrum
 * that a complex-to-real transform takes as real. */
int lc_cu_fft_real_bins(float *x, int64_t rows, int64_t len, int64_t nyq, void *stream);

/* Transforms of length 1 over n lines: to_complex: out[i] = (in[i], 0)
 * from floats; else out[i] = re(in[i]) from complex64 values. */
int lc_cu_fft_len1(int to_complex, const float *in, float *out, int64_t n, void *stream);

#ifdef __cplusplus
}
#endif
#endif
