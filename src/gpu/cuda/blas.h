/* The cuBLAS handle of each GPU (gpu/cuda/eval_matmul.c), shared by the
 * evaluators that call cuBLAS (matmul, conv). A handle serves one caller
 * at a time: lc_cuda_blas_begin takes the device's lock and hands out the
 * handle set to the device's stream (lc_gpu_stream) and to lace's own
 * workspace, so that cuBLAS never allocates while a CUDA graph is
 * captured; lc_cuda_blas_end gives it back. C only (cuBLAS types). */
#ifndef LC_GPU_CUDA_BLAS_H
#define LC_GPU_CUDA_BLAS_H

#include <cublas_v2.h>

/* The most GPUs with a handle; callers answer LC_EVAL_ON_CPU beyond. */
#define LC_CUDA_BLAS_MAX_GPUS 16

/* 0 with *h ready and the lock held, or 1 after reporting (lock not
 * held). what names the caller in messages. dev < LC_CUDA_BLAS_MAX_GPUS. */
int lc_cuda_blas_begin(int dev, const char *what, cublasHandle_t *h);
void lc_cuda_blas_end(int dev);
/* 0 for CUBLAS_STATUS_SUCCESS, else 1 after reporting "<what> on the GPU:
 * cuBLAS <call> failed". */
int lc_cuda_blas_check(cublasStatus_t st, const char *what, const char *call);

#endif
