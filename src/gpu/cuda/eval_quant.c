/* eval_cuda of QUANTIZED_MATMUL (ops/quant.h): x @ W^T with few rows of x
 * runs the matrix-vector kernel (gpu/cuda/quant.cu), which reads the packed
 * weights once; every other case dequantizes W into stream-ordered scratch
 * (once when the weights do not vary over the batch) and multiplies with
 * cuBLAS, float32 accumulation, no TF32. x is copied to contiguous scratch
 * first when its matrices are not row-major with one batch stride.
 * cuBLAS is called through the GPU's shared handle (gpu/cuda/blas.h). */
#ifdef LACE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <string.h>

#include "core/error.h"
#include "gpu/cuda/blas.h"
#include "gpu/cuda/eval.h"
#include "gpu/cuda/kernels.h"
#include "gpu/cuda/quant.h"
#include "gpu/gpu.h"
#include "ops/prim.h"
#include "ops/quant.h"

#define MAX_GPUS LC_CUDA_BLAS_MAX_GPUS

static bool float_type(mlx_dtype t) {
  return t == MLX_FLOAT32 || t == MLX_FLOAT16 || t == MLX_BFLOAT16;
}

/* One stride that steps through the nb batch dims (row-major over shape)
 * of strides st: *bs (0 when every batch is the same). */
static bool one_batch_stride(int nb, const int *shape, const int64_t *st, int64_t *bs) {
  int64_t expect = -1;
  *bs = 0;
  bool any = false;
  for (int d = nb - 1; d >= 0; d--) {
    if (shape[d] == 1) continue;
    if (!any) {
      if (st[d] == 0) {
        /* the batch dims past here must all be broadcast too */
        for (int e = d - 1; e >= 0; e--)
          if (shape[e] != 1 && st[e] != 0) return false;
        return true;
      }
      *bs = st[d];
      expect = st[d] * shape[d];
      any = true;
      continue;
    }
    if (st[d] != expect) return false;
    expect *= shape[d];
  }
  return true;
}

static bool weights_constant(const struct lc_cu_qmm *a) {
  for (int d = 0; d < a->nb; d++)
    if (a->bshape[d] != 1 && (a->w_bs[d] || a->s_bs[d] || a->b_bs[d])) return false;
  return true;
}

/* The most bytes of dequantized weights held at once (at least one batch's,
 * whatever its size). */
#define W_BYTES_MAX ((size_t)256 << 20)

/* out (nbatch, M, N) = x @ op(W), W (R, C) row-major per batch (batch
 * stride w_bs), x row-major with row stride lda and batch stride x_bs, out
 * contiguous. */
static int gemm(int dev, const struct lc_cu_qmm *a, bool transpose, const void *W,
                int64_t w_bs, const void *x, int64_t lda, int64_t x_bs, void *out,
                int64_t nbatch) {
  cudaDataType_t dt = a->dt == MLX_FLOAT32   ? CUDA_R_32F
                      : a->dt == MLX_FLOAT16 ? CUDA_R_16F
                                             : CUDA_R_16BF;
  cublasHandle_t h;
  if (lc_cuda_blas_begin(dev, "quantized_matmul", &h)) return 1;
  const float one = 1.0f, zero = 0.0f;
  int rc = lc_cuda_blas_check(
      cublasGemmStridedBatchedEx(h, transpose ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N,
                                 (int)a->N, (int)a->M, (int)a->K, &one, W, dt, (int)a->C, w_bs,
                                 x, dt, (int)lda, x_bs, &zero, out, dt, (int)a->N,
                                 a->M * a->N, (int)nbatch, CUBLAS_COMPUTE_32F,
                                 CUBLAS_GEMM_DEFAULT),
      "quantized_matmul", "gemm");
  lc_cuda_blas_end(dev);
  return rc;
}

/* The dequantize + cuBLAS path. Weights that vary over the batch are
 * dequantized and multiplied a chunk of batches at a time, so that the
 * scratch stays under W_BYTES_MAX (or one batch); the scratch is reused
 * across chunks in stream order (each chunk's dequantize queues after the
 * previous chunk's GEMM on the same stream). */
static int via_gemm(struct lc_node *n, const struct lc_cu_qmm *a, bool transpose) {
  const struct lc_node *x = n->in[0];
  int nb = n->ndim - 2;
  void *stream = lc_gpu_stream(n->dev);
  size_t isz = lc_dtype_size(n->dtype);
  bool shared = weights_constant(a);
  size_t per_batch = (size_t)(a->R * a->C) * isz;
  int64_t chunk = a->batches;
  if (!shared && per_batch > 0 && (size_t)chunk > W_BYTES_MAX / per_batch) {
    chunk = (int64_t)(W_BYTES_MAX / per_batch);
    if (chunk < 1) chunk = 1;
  }
  struct lc_buffer *wbuf = lc_buffer_new_device((size_t)(shared ? 1 : chunk) * per_batch, n->dev);
  struct lc_buffer *xbuf = NULL;
  if (!wbuf) return 1;
  int rc = 0;
  if (shared)
    rc = lc_cuda_result(lc_cu_dequantize(a, 0, 1, wbuf->dev_data, stream), "quantized_matmul");
  /* x's operand: its own layout when cuBLAS can read it, else a contiguous
   * copy of all of it; either way batch b starts at xp + b * x_bs */
  const char *xp = a->x;
  int64_t lda = a->x_rs, x_bs = 0;
  bool rows_ok = a->M == 1 || (lda >= a->K && lda <= INT32_MAX);
  bool direct = (a->x_cs == 1 || a->K == 1) && rows_ok &&
                one_batch_stride(nb, x->shape, x->strides, &x_bs) && x_bs >= 0;
  if (a->M == 1) lda = a->K;
  if (!rc && !direct) {
    xbuf = lc_buffer_new_device((size_t)x->size * isz, n->dev);
    if (!xbuf) rc = 1;
    else
      rc = lc_cuda_result(lc_cu_copy_strided(xbuf->dev_data, a->x, (int)isz, x->ndim, x->shape,
                                             x->strides, x->size, stream),
                          "quantized_matmul (copy of x)");
    xp = xbuf ? xbuf->dev_data : NULL;
    lda = a->K;
    x_bs = a->M * a->K;
  }
  for (int64_t b0 = 0; b0 < a->batches && !rc; b0 += chunk) {
    int64_t nbatch = a->batches - b0 < chunk ? a->batches - b0 : chunk;
    if (!shared)
      rc = lc_cuda_result(lc_cu_dequantize(a, b0, nbatch, wbuf->dev_data, stream),
                          "quantized_matmul");
    if (!rc)
      rc = gemm(n->dev, a, transpose, wbuf->dev_data, shared ? 0 : a->R * a->C,
                xp + (size_t)(b0 * x_bs) * isz, lda, x_bs,
                (char *)a->out + (size_t)(b0 * a->M * a->N) * isz, nbatch);
  }
  /* stream-ordered: reused only by work queued later */
  lc_buffer_release(wbuf);
  lc_buffer_release(xbuf);
  return rc;
}

int lc_cuda_eval_quantized_matmul(struct lc_node *n) {
  const struct lc_qmm_params *p = n->params;
  const struct lc_node *x = n->in[0], *w = n->in[1], *s = n->in[2], *b = n->in[3];
  int nb = n->ndim - 2;
  if (n->ndim > LC_CU_MAX_DIMS || n->dev >= MAX_GPUS || !float_type(n->dtype) ||
      x->dtype != n->dtype || !float_type(s->dtype) || !float_type(b->dtype) ||
      w->dtype != MLX_UINT32 || p->group_size % 32)
    return LC_EVAL_ON_CPU;
  struct lc_cu_qmm a;
  memset(&a, 0, sizeof a);
  a.bits = p->bits;
  a.group_size = p->group_size;
  a.dt = n->dtype;
  a.s_dt = s->dtype;
  a.b_dt = b->dtype;
  a.M = n->shape[nb];
  a.N = n->shape[nb + 1];
  a.K = x->shape[nb + 1];
  a.R = w->shape[nb];
  a.C = (int64_t)w->shape[nb + 1] * 32 / p->bits;
  a.batches = 1;
  for (int d = 0; d < nb; d++) a.batches *= n->shape[d];
  if (a.M > INT32_MAX || a.N > INT32_MAX || a.K > INT32_MAX || a.batches > INT32_MAX ||
      a.C % 32)
    return LC_EVAL_ON_CPU;
  a.x_rs = x->strides[nb];
  a.x_cs = x->strides[nb + 1];
  a.w_rs = w->strides[nb];
  a.w_cs = w->strides[nb + 1];
  a.s_rs = s->strides[nb];
  a.s_cs = s->strides[nb + 1];
  a.b_rs = b->strides[nb];
  a.b_cs = b->strides[nb + 1];
  a.nb = nb;
  for (int d = 0; d < nb; d++) {
    a.bshape[d] = n->shape[d];
    a.x_bs[d] = x->strides[d];
    a.w_bs[d] = w->strides[d];
    a.s_bs[d] = s->strides[d];
    a.b_bs[d] = b->strides[d];
  }
  if (lc_cuda_alloc_output(n)) return 1;
  if (n->size == 0) return 0;
  void *stream = lc_gpu_stream(n->dev);
  a.out = n->buf->dev_data;
  if (a.K == 0) { /* an empty contraction: zeros */
    if (cudaMemsetAsync(a.out, 0, (size_t)n->size * lc_dtype_size(n->dtype), stream)) {
      (void)cudaGetLastError();
      return lc_cuda_finish(n, lc_error("quantized_matmul on the GPU: memset failed"));
    }
    return 0;
  }
  a.x = lc_node_dev_data(x);
  a.w = lc_node_dev_data(w);
  a.scales = lc_node_dev_data(s);
  a.biases = lc_node_dev_data(b);
  int rc;
  if (p->transpose && a.M <= LC_CU_QMV_MAX_M) {
    bool vec = p->bits % 4 == 0 && a.w_cs == 1 && ((uintptr_t)a.w & 15) == 0 && a.w_rs % 4 == 0;
    for (int d = 0; d < nb; d++) vec &= a.w_bs[d] % 4 == 0;
    a.vec = vec;
    rc = lc_cuda_result(lc_cu_qmv(&a, stream), "quantized_matmul");
  } else {
    rc = via_gemm(n, &a, p->transpose);
  }
  return lc_cuda_finish(n, rc);
}
#endif
