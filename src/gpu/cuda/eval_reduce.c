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

/* x's elements as rows over the axes red[] marks (kept axes first, then
 * reduced ones, each ascending), row-major at *src: x's own data when its
 * layout is that already, else a strided copy into *tmp (the caller
 * releases it once the kernel reading it is queued). *len: a row's
 * length. 0, or 1 after reporting. */
static int reduced_rows(const struct lc_node *x, const bool *red, int dev, const char *what,
                        const void **src, struct lc_buffer **tmp, int64_t *len) {
  int nd = x->ndim, perm[LC_CU_MAX_DIMS], shape[LC_CU_MAX_DIMS], k = 0;
  int64_t strides[LC_CU_MAX_DIMS], expect = 1;
  *len = 1;
  for (int d = 0; d < nd; d++)
    if (!red[d]) perm[k++] = d;
  for (int d = 0; d < nd; d++)
    if (red[d]) {
      perm[k++] = d;
      *len *= x->shape[d];
    }
  bool in_order = true;
  for (int i = nd - 1; i >= 0; i--) {
    shape[i] = x->shape[perm[i]];
    strides[i] = x->strides[perm[i]];
    if (shape[i] != 1 && strides[i] != expect) in_order = false;
    expect *= shape[i];
  }
  *src = lc_node_dev_data(x);
  *tmp = NULL;
  if (in_order) return 0;
  size_t isz = lc_dtype_size(x->dtype);
  *tmp = lc_buffer_new_device((size_t)x->size * isz, dev);
  if (!*tmp) return 1;
  int rc = lc_cuda_result(lc_cu_copy_strided((*tmp)->dev_data, *src, (int)isz, nd, shape, strides,
                                             x->size, lc_gpu_stream(dev)),
                          what);
  if (rc) {
    lc_buffer_release(*tmp);
    *tmp = NULL;
    return rc;
  }
  *src = (*tmp)->dev_data;
  return 0;
}

/* lc_cuda_finish, releasing tmp either way (stream-ordered: the kernel
 * reading it was queued first). */
static int finish(struct lc_node *n, struct lc_buffer *tmp, int rc) {
  lc_buffer_release(tmp);
  return lc_cuda_finish(n, rc);
}

int lc_cuda_eval_reduce(struct lc_node *n) {
  const int *p = n->params;
  struct lc_node *x = n->in[0];
  if (x->dtype == MLX_COMPLEX64 || n->dtype == MLX_COMPLEX64 || x->ndim > LC_CU_MAX_DIMS)
    return LC_EVAL_ON_CPU;
  if (x->size == 0 || p[2] == 0) return LC_EVAL_ON_CPU; /* empty rows: the CPU's rules */
  bool red[LC_CU_MAX_DIMS] = {false};
  for (int i = 0; i < p[2]; i++) red[p[3 + i]] = true;
  const void *src;
  struct lc_buffer *tmp;
  int64_t len;
  if (reduced_rows(x, red, n->dev, "reduce (copy)", &src, &tmp, &len)) return 1;
  if (lc_cuda_alloc_output(n)) return finish(n, tmp, 1);
  struct lc_cu_reduce a = {.kind = p[0], .in_dt = x->dtype, .out_dt = n->dtype,
                           .rows = n->size, .len = len, .in = src, .out = n->buf->dev_data,
                           .ddof = p[1]};
  return finish(n, tmp, lc_cuda_result(lc_cu_reduce_rows(&a, lc_gpu_stream(n->dev)), "reduce"));
}

/* eval_cuda of ARG_REDUCE (params {kind, axis}, axis < 0: all) over rows
 * with the reduced axis last; complex64 runs on the CPU. */
int lc_cuda_eval_arg_reduce(struct lc_node *n) {
  const int *p = n->params;
  struct lc_node *x = n->in[0];
  if (x->dtype == MLX_COMPLEX64 || x->size == 0 || x->ndim > LC_CU_MAX_DIMS)
    return LC_EVAL_ON_CPU;
  bool red[LC_CU_MAX_DIMS];
  for (int d = 0; d < x->ndim; d++) red[d] = p[1] < 0 || d == p[1];
  const void *src;
  struct lc_buffer *tmp;
  int64_t len;
  const char *name = p[0] == 0 ? "argmax" : "argmin";
  if (reduced_rows(x, red, n->dev, "argmax (copy)", &src, &tmp, &len)) return 1;
  if (lc_cuda_alloc_output(n)) return finish(n, tmp, 1);
  return finish(n, tmp,
                lc_cuda_result(lc_cu_argreduce_rows(p[0] == 0, x->dtype, x->size / len, len, src,
                                                    n->buf->dev_data, lc_gpu_stream(n->dev)),
                               name));
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
  return lc_cuda_finish(n, lc_cuda_result(lc_cu_softmax_rows(x->dtype, len ? x->size / len : 0,
                                                              len, lc_node_dev_data(x),
                                                              n->buf->dev_data,
                                                              lc_gpu_stream(n->dev)),
                                           "softmax"));
}
#endif
