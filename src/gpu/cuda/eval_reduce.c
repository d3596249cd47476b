/* eval_cuda of REDUCE: the input seen as (kept..., reduced...) row-major,
 * copied into that order on the GPU when its layout is another, then one
 * row reduction (gpu/cuda/reduce.cu). The output is row-major over the
 * kept dimensions, as on the CPU. */
#ifdef LACE_CUDA
#include <string.h>

#include "core/error.h"
#include "gpu/cuda/eval.h"
#include "gpu/cuda/kernels.h"
#include "gpu/gpu.h"
#include "ops/prim.h"
#include "ops/reduce_kern.h"

int lc_cuda_eval_reduce(struct lc_node *n) {
  const int *p = n->params;
  struct lc_node *x = n->in[0];
  int nd = x->ndim;
  if (x->dtype == MLX_COMPLEX64 || n->dtype == MLX_COMPLEX64 || nd > LC_CU_MAX_DIMS)
    return LC_EVAL_ON_CPU;
  if (x->size == 0 || p[2] == 0) return LC_EVAL_ON_CPU; /* empty rows: the CPU's rules */
  bool red[LC_CU_MAX_DIMS] = {false};
  for (int i = 0; i < p[2]; i++) red[p[3 + i]] = true;
  /* the order: kept axes, then reduced ones, each ascending */
  int perm[LC_CU_MAX_DIMS], shape[LC_CU_MAX_DIMS];
  int64_t strides[LC_CU_MAX_DIMS], len = 1;
  int k = 0;
  for (int d = 0; d < nd; d++)
    if (!red[d]) perm[k++] = d;
  for (int d = 0; d < nd; d++)
    if (red[d]) {
      perm[k++] = d;
      len *= x->shape[d];
    }
  bool in_order = true;
  int64_t expect = 1;
  for (int i = nd - 1; i >= 0; i--) {
    int d = perm[i];
    shape[i] = x->shape[d];
    strides[i] = x->strides[d];
    if (shape[i] != 1 && strides[i] != expect) in_order = false;
    expect *= shape[i];
  }
  const void *src = lc_node_dev_data(x);
  struct lc_buffer *tmp = NULL;
  size_t isz = lc_dtype_size(x->dtype);
  void *stream = lc_gpu_stream(n->dev);
  if (!in_order) {
    tmp = lc_buffer_new_device((size_t)x->size * isz, n->dev);
    if (!tmp) return 1;
    int rc = lc_cuda_result(lc_cu_copy_strided(tmp->dev_data, src, (int)isz, nd, shape, strides,
                                               x->size, stream), "reduce (copy)");
    if (rc) {
      lc_buffer_release(tmp);
      return rc;
    }
    src = tmp->dev_data;
  }
  if (lc_cuda_alloc_output(n)) {
    lc_buffer_release(tmp);
    return 1;
  }
  struct lc_cu_reduce a = {.kind = p[0], .in_dt = x->dtype, .out_dt = n->dtype,
                           .rows = n->size, .len = len, .in = src, .out = n->buf->dev_data,
                           .ddof = p[1]};
  int rc = lc_cuda_result(lc_cu_reduce_rows(&a, stream), "reduce");
  lc_buffer_release(tmp); /* stream-ordered: the kernel queued before its reuse */
  if (rc) {
    lc_buffer_release(n->buf);
    n->buf = NULL;
  }
  return rc;
}
/* eval_cuda of ARG_REDUCE (params {kind, axis}, axis < 0: all) over rows
 * made by bringing the reduced axis last (a strided copy when it is not
 * already innermost and contiguous); complex64 runs on the CPU. */
int lc_cuda_eval_arg_reduce(struct lc_node *n) {
  const int *p = n->params;
  struct lc_node *x = n->in[0];
  int nd = x->ndim;
  if (x->dtype == MLX_COMPLEX64 || x->size == 0 || nd > LC_CU_MAX_DIMS) return LC_EVAL_ON_CPU;
  int perm[LC_CU_MAX_DIMS], shape[LC_CU_MAX_DIMS];
  int64_t strides[LC_CU_MAX_DIMS], len = 1, expect = 1;
  int k = 0;
  for (int d = 0; d < nd; d++)
    if (p[1] >= 0 && d != p[1]) perm[k++] = d;
  for (int d = 0; d < nd; d++)
    if (p[1] < 0 || d == p[1]) {
      perm[k++] = d;
      len *= x->shape[d];
    }
  bool in_order = true;
  for (int i = nd - 1; i >= 0; i--) {
    shape[i] = x->shape[perm[i]];
    strides[i] = x->strides[perm[i]];
    if (shape[i] != 1 && strides[i] != expect) in_order = false;
    expect *= shape[i];
  }
  const void *src = lc_node_dev_data(x);
  struct lc_buffer *tmp = NULL;
  size_t isz = lc_dtype_size(x->dtype);
  void *stream = lc_gpu_stream(n->dev);
  if (!in_order) {
    tmp = lc_buffer_new_device((size_t)x->size * isz, n->dev);
    if (!tmp) return 1;
    int rc = lc_cuda_result(lc_cu_copy_strided(tmp->dev_data, src, (int)isz, nd, shape, strides,
                                               x->size, stream), "argmax (copy)");
    if (rc) {
      lc_buffer_release(tmp);
      return rc;
    }
    src = tmp->dev_data;
  }
  if (lc_cuda_alloc_output(n)) {
    lc_buffer_release(tmp);
    return 1;
  }
  int rc = lc_cuda_result(lc_cu_argreduce_rows(p[0] == 0, x->dtype, x->size / len, len, src,
                                               n->buf->dev_data, stream),
                          p[0] == 0 ? "argmax" : "argmin");
  lc_buffer_release(tmp); /* stream-ordered: the kernel queued before its reuse */
  if (rc) {
    lc_buffer_release(n->buf);
    n->buf = NULL;
  }
  return rc;
}

/* eval_cuda of SOFTMAX over the last axis of a contiguous input (params:
 * {precise, naxes, axes...}); other cases run on the CPU for now. */
int lc_cuda_eval_softmax(struct lc_node *n) {
  const int *p = n->params;
  struct lc_node *x = n->in[0];
  if (x->ndim == 0 || p[1] != 1 || p[2] != x->ndim - 1 || !lc_node_is_contiguous(x) ||
      x->dtype != n->dtype)
    return LC_EVAL_ON_CPU;
  if (lc_cuda_alloc_output(n)) return 1;
  int64_t len = x->shape[x->ndim - 1];
  int rc = lc_cuda_result(lc_cu_softmax_rows(x->dtype, len ? x->size / len : 0, len,
                                             lc_node_dev_data(x), n->buf->dev_data,
                                             lc_gpu_stream(n->dev)),
                          "softmax");
  if (rc) {
    lc_buffer_release(n->buf);
    n->buf = NULL;
  }
  return rc;
}
#endif
