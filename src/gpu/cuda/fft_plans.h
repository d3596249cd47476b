/* cuFFT plans for gpu/cuda/eval_fft.c: a bounded, thread-safe cache of
 * plans keyed by (device, kind, rank, lengths, batch), every plan in
 * cuFFT's basic layout (each of the batch transforms contiguous, one after
 * the other). Plans are made with automatic work-area allocation off; each
 * execution takes its work area from lc_gpu_malloc and gives it back once
 * queued (stream-ordered). C only. */
#ifndef LC_GPU_CUDA_FFT_PLANS_H
#define LC_GPU_CUDA_FFT_PLANS_H

#include <stdbool.h>
#include <stdint.h>

enum lc_cufft_kind { LC_CUFFT_C2C, LC_CUFFT_R2C, LC_CUFFT_C2R };

/* The largest rank of one plan. */
#define LC_CUFFT_MAX_RANK 3

/* Queues batch transforms of lengths n[0..rank) (for r2c / c2r the last
 * length is the real side's; its complex side has n / 2 + 1) from in to
 * out (distinct arrays) on lc_gpu_stream(dev): c2c forward (e^{-2 pi i})
 * or inverse (e^{+2 pi i}), r2c forward, c2r inverse, never normalised.
 * in is not modified except by c2r, which may overwrite it. 0, or 1 after
 * reporting; what names the caller. */
int lc_cuda_fft_exec(int dev, enum lc_cufft_kind kind, int rank, const int64_t *n, int64_t batch,
                     bool inverse, void *in, void *out, const char *what);

#endif
