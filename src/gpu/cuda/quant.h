/* Launchers of the quantized matmul kernels (gpu/cuda/quant.cu), callable
 * from C; conventions as kernels.h: plain C types, work queued on `stream`,
 * 0, LC_CU_UNSUPPORTED (nothing queued) or a negative cudaError_t. Strides
 * and offsets are in elements; data pointers point at element 0.
 *
 * The weight of one batch is the dequantized R x C matrix: row r holds C
 * values packed LSB first as a bitstream of `bits`-bit fields into uint32
 * words (word j of row r at w + r * w_rs + j * w_cs); value c uses scale
 * and bias (r, c / group_size). Value = q * scale + bias in float32, then
 * rounded to dt, as the decomposition (ops/quant.c) computes it. */
#ifndef LC_GPU_CUDA_QUANT_H
#define LC_GPU_CUDA_QUANT_H

#include <stdint.h>

#include "gpu/cuda/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rows of x the matrix-vector kernel handles at once. */
#define LC_CU_QMV_MAX_M 8

struct lc_cu_qmm {
  int bits, group_size;
  int dt;         /* x's and the output's dtype (float32, float16, bfloat16) */
  int s_dt, b_dt; /* the scales' and biases' (same set) */
  int64_t M, N, K; /* out (batches, M, N) = x (M, K) @ op(W) */
  int64_t R, C;    /* the dequantized matrix: N x K (transposed) or K x N */
  int64_t batches;
  const void *x;
  int64_t x_rs, x_cs;
  const uint32_t *w;
  int64_t w_rs, w_cs;
  const void *scales, *biases;
  int64_t s_rs, s_cs, b_rs, b_cs;
  void *out; /* contiguous */
  /* batch b (row-major over bshape[0..nb)) starts at sum_d b_d * *_bs[d] */
  int nb;
  int bshape[LC_CU_MAX_DIMS];
  int64_t x_bs[LC_CU_MAX_DIMS], w_bs[LC_CU_MAX_DIMS], s_bs[LC_CU_MAX_DIMS],
      b_bs[LC_CU_MAX_DIMS];
  int vec; /* rows of w are 16-byte aligned with contiguous words (16-byte loads) */
};

/* out = x @ W^T for M <= LC_CU_QMV_MAX_M (K a multiple of 32): one warp per
 * output column, the weight row read once for every row of x. */
int lc_cu_qmv(const struct lc_cu_qmm *a, void *stream);

/* W (nbatch, R, C) contiguous, of dtype dt: the dequantized weights of
 * batches first .. first + nbatch - 1 (C a multiple of 32). */
int lc_cu_dequantize(const struct lc_cu_qmm *a, int64_t first, int64_t nbatch, void *W,
                     void *stream);

#ifdef __cplusplus
}
#endif
#endif
