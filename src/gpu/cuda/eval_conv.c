/* eval_cuda of CONV (float32, float64; the builder computes float16 and
 * bfloat16 in float32 through casts, as on the CPU): per block of output
 * rows, the im2col matrices of every group (gpu/cuda/conv.cu) into
 * scratch, then one strided-batched cuBLAS GEMM over the groups (float32
 * without TF32, float64 in float64), as ops/conv.c does per group with
 * OpenBLAS. A pointwise convolution (1x1 kernel, unit stride, no padding,
 * no input dilation) of a row-major input reads the input as its own
 * im2col matrix.
 *
 * Row-major out (rows, O) holds group g's product col_g (rows x K) w_g^T
 * (w_g: og x K) in columns [g og, (g + 1) og); column-major that is
 * out^T = w_g^T' col_g', i.e. GEMM(op T on w_g, op N on col_g), ldc O.
 * Scratch (the col blocks, a row-major copy of a strided weight) comes
 * from lc_gpu_malloc and goes back once the GEMMs are queued
 * (stream-ordered), as CUDA-graph capture requires. */
#ifdef LACE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdint.h>

#include "core/error.h"
#include "gpu/cuda/blas.h"
#include "gpu/cuda/conv.h"
#include "gpu/cuda/eval.h"
#include "gpu/cuda/kernels.h"
#include "gpu/gpu.h"
#include "ops/conv.h"
#include "ops/prim.h"

/* The most bytes of im2col matrices built at once. */
#define COL_BYTES_MAX ((size_t)128 << 20)

/* Whether x's elements are row-major from element 0 (extent-1 dims aside). */
static bool row_major(const struct lc_node *x) {
  int64_t expect = 1;
  for (int d = x->ndim - 1; d >= 0; d--) {
    if (x->shape[d] == 1) continue;
    if (x->strides[d] != expect) return false;
    expect *= x->shape[d];
  }
  return true;
}

/* Whether the input, row-major as (N * spatial, C), is its own im2col
 * matrix: 1x1 kernel, unit strides, no padding, no input dilation (the
 * output then has the input's spatial extents). */
static bool pointwise(const struct lc_node *n, const struct lc_conv_params *p) {
  const struct lc_node *x = n->in[0], *w = n->in[1];
  for (int i = 0; i < p->nsp; i++)
    if (w->shape[i + 1] != 1 || p->stride[i] != 1 || p->lo[i] != 0 || p->idil[i] != 1 ||
        n->shape[i + 1] != x->shape[i + 1])
      return false;
  return row_major(x);
}

static void fill_im2col(struct lc_cu_im2col *a, const struct lc_node *n,
                        const struct lc_conv_params *p, void *col) {
  const struct lc_node *x = n->in[0], *w = n->in[1];
  a->dt = n->dtype;
  a->nsp = p->nsp;
  a->flip = p->flip;
  a->groups = p->groups;
  a->cg = w->shape[p->nsp + 1];
  for (int i = 0; i < p->nsp; i++) {
    a->out[i] = n->shape[i + 1];
    a->in[i] = x->shape[i + 1];
    a->k[i] = w->shape[i + 1];
    a->stride[i] = p->stride[i];
    a->lo[i] = p->lo[i];
    a->kdil[i] = p->kdil[i];
    a->idil[i] = p->idil[i];
  }
  for (int d = 0; d < x->ndim; d++) a->xs[d] = x->strides[d];
  a->x = lc_node_dev_data(x);
  a->col = col;
}

int lc_cuda_eval_conv(struct lc_node *n) {
  const struct lc_conv_params *p = n->params;
  struct lc_node *x = n->in[0], *w = n->in[1];
  cudaDataType_t dt;
  cublasComputeType_t ct;
  switch (n->dtype) {
    case MLX_FLOAT32: dt = CUDA_R_32F, ct = CUBLAS_COMPUTE_32F; break;
    case MLX_FLOAT64: dt = CUDA_R_64F, ct = CUBLAS_COMPUTE_64F; break;
    default: return LC_EVAL_ON_CPU;
  }
  int nsp = p->nsp, dev = n->dev;
  if (x->dtype != n->dtype || w->dtype != n->dtype || dev >= LC_CUDA_BLAS_MAX_GPUS || nsp < 1 ||
      nsp > LC_CU_CONV_MAXSP)
    return LC_EVAL_ON_CPU;
  int G = p->groups, O = n->shape[nsp + 1], og = O / G, cg = w->shape[nsp + 1];
  int C = x->shape[nsp + 1];
  int64_t ktaps = 1;
  for (int i = 0; i < nsp; i++) ktaps *= w->shape[i + 1];
  int64_t K = ktaps * cg, M = O ? n->size / O : 0;
  if (K > INT32_MAX) return LC_EVAL_ON_CPU;
  if (lc_cuda_alloc_output(n)) return 1;
  if (n->size == 0) return 0;
  void *stream = lc_gpu_stream(dev);
  size_t es = lc_dtype_size(n->dtype);
  char *out = n->buf->dev_data;
  if (K == 0) { /* no input channels: zeros */
    if (cudaMemsetAsync(out, 0, (size_t)n->size * es, stream) != cudaSuccess) {
      (void)cudaGetLastError();
      return lc_cuda_finish(n, lc_error("conv on the GPU: memset failed"));
    }
    return 0;
  }
  int rc = 0;
  const void *wd = lc_node_dev_data(w);
  void *wtmp = NULL, *col = NULL;
  size_t wbytes = (size_t)w->size * es, col_bytes = 0;
  if (!row_major(w)) {
    if (!(wtmp = lc_gpu_malloc(wbytes, dev))) return lc_cuda_finish(n, 1);
    rc = lc_cuda_result(lc_cu_copy_strided(wtmp, wd, (int)es, w->ndim, w->shape, w->strides,
                                           w->size, stream),
                        "conv (weight copy)");
    wd = wtmp;
  }
  bool direct = pointwise(n, p);
  int64_t block = M;
  if (!direct) {
    size_t per_row = (size_t)G * (size_t)K * es;
    block = (int64_t)(COL_BYTES_MAX / per_row);
    if (block < 1) block = 1;
    if (block > M) block = M;
  }
  if (block > INT32_MAX) block = INT32_MAX;
  if (!rc && !direct) {
    col_bytes = (size_t)block * (size_t)G * (size_t)K * es;
    if (!(col = lc_gpu_malloc(col_bytes, dev))) rc = 1;
  }
  cublasHandle_t h;
  if (!rc && lc_cuda_blas_begin(dev, "conv", &h)) rc = 1;
  if (!rc) {
    float af = 1.0f, bf = 0.0f;
    double ad = 1.0, bd = 0.0;
    const void *alpha = ct == CUBLAS_COMPUTE_64F ? (const void *)&ad : (const void *)&af;
    const void *beta = ct == CUBLAS_COMPUTE_64F ? (const void *)&bd : (const void *)&bf;
    struct lc_cu_im2col a = {0};
    if (!direct) fill_im2col(&a, n, p, col);
    for (int64_t r0 = 0; r0 < M && !rc; r0 += block) {
      int64_t rows = M - r0 < block ? M - r0 : block;
      const char *bmat = col;
      int64_t ldb = K, bstride = rows * K;
      if (direct) {
        bmat = (const char *)lc_node_dev_data(x) + (size_t)(r0 * C) * es;
        ldb = C;
        bstride = cg;
      } else {
        a.r0 = r0;
        a.rows = rows;
        rc = lc_cuda_result(lc_cu_im2col(&a, stream), "conv (im2col)");
        if (rc) break;
      }
      rc = lc_cuda_blas_check(
          cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, og, (int)rows, (int)K, alpha,
                                     wd, dt, (int)K, (long long)og * K, bmat, dt, (int)ldb,
                                     bstride, beta, out + (size_t)(r0 * O) * es, dt, O, og, G,
                                     ct, CUBLAS_GEMM_DEFAULT),
          "conv", "gemm");
    }
    lc_cuda_blas_end(dev);
  }
  /* stream-ordered: the kernels reading them are queued */
  lc_gpu_free(col, col_bytes, dev);
  lc_gpu_free(wtmp, wbytes, dev);
  return lc_cuda_finish(n, rc);
}
#endif
