/* The cuBLAS handle of each GPU (gpu/cuda/eval_matmul.c), shared by the
 * evaluators that call cuBLAS (matmul, conv). A handle serves one caller
 * at a time: lc_cuda_blas_begin takes the device's lock and hands out the
 * handle set to the device's stream (lc_gpu_stream) and to lace's own
 * workspace, so that cuBLAS never allocates while a CUDA graph is
 * captured; lc_cuda_blas_end gives it back. C only (cuBLAS types). */
#ifndef LC_GPU_CUDA_BLAS_H
#define LC_GPU_CUDA_BLAS_H

#include <cublas_v2.h>
#include <stddef.h>
#include <stdint.h>

/* The most GPUs with a handle; callers answer LC_EVAL_ON_CPU beyond. */
#define LC_CUDA_BLAS_MAX_GPUS 16

/* 0 with *h ready and the lock held, or 1 after reporting (lock not
 * held). what names the caller in messages. dev < LC_CUDA_BLAS_MAX_GPUS. */
int lc_cuda_blas_begin(int dev, const char *what, cublasHandle_t *h);
void lc_cuda_blas_end(int dev);
/* 0 for CUBLAS_STATUS_SUCCESS, else 1 after reporting "<what> on the GPU:
 * cuBLAS <call> failed". */
int lc_cuda_blas_check(cublasStatus_t st, const char *what, const char *call);
/* The GPU's cuBLAS workspace (NULL when it could not be allocated), for
 * callers holding its lock. */
void *lc_cuda_blas_workspace(int dev, size_t *size);

/* A product through cuBLASLt (gpu/cuda/blas_lt.c), in cuBLAS's
 * column-major terms: C (m x n, ldc) = alpha op(A) op(B) + beta C, over
 * `batch` matrices stride_* elements apart. The key says everything a
 * plan depends on; it is compared bytewise, so it is filled after a
 * memset (no padding: 64-bit fields first, an even count of 32-bit ones). */
struct lc_cuda_lt_key {
  int64_t m, n, k, lda, ldb, ldc, batch, stride_a, stride_b, stride_c;
  int32_t dt, ct, opa, opb; /* cudaDataType_t, cublasComputeType_t, cublasOperation_t */
  uint32_t align_a, align_b, align_c, unused; /* operands' address alignment (lc_cuda_lt_align) */
};
struct lc_cuda_gemm {
  struct lc_cuda_lt_key key;
  const void *a, *b, *alpha, *beta; /* alpha, beta: host scalars of the scale type */
  void *c;
};
#define LC_CUDA_LT_DECLINED 2
/* The largest power of two, at most 256, dividing p's address. */
unsigned lc_cuda_lt_align(const void *p);
/* Queues the product on stream with workspace ws (the caller holds dev's
 * cuBLAS lock: lc_cuda_blas_begin). 0, LC_CUDA_LT_DECLINED (cuBLASLt has
 * no algorithm for it; nothing queued), or 1 after reporting. */
int lc_cuda_lt_gemm(int dev, const struct lc_cuda_gemm *g, void *stream, void *ws,
                    size_t ws_size);

#endif
