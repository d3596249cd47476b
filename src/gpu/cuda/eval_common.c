/* Shared by the CUDA evaluators: output buffers, donation, error reports. */
#ifdef LACE_CUDA
#include <cuda_runtime_api.h>

#include "core/error.h"
#include "gpu/cuda/eval.h"
#include "gpu/cuda/kernels.h"
#include "gpu/gpu.h"
#include "ops/prim.h"

int lc_cuda_alloc_output(struct lc_node *n) {
  struct lc_buffer *b = lc_buffer_new_device((size_t)n->size * lc_dtype_size(n->dtype), n->dev);
  if (!b) return 1;
  n->buf = b;
  n->offset = 0;
  lc_shape_strides(n->ndim, n->shape, n->strides);
  n->flags |= LC_NF_CONTIG;
  return 0;
}

int lc_cuda_copy_to_scratch(const struct lc_node *x, int nd, const int *shape,
                            const int64_t *strides, int64_t count, struct lc_buffer **tmp,
                            const void **ptr, int dev, const char *what) {
  if (nd > LC_CU_MAX_DIMS) return LC_EVAL_ON_CPU;
  size_t isz = lc_dtype_size(x->dtype);
  if (!(*tmp = lc_buffer_new_device((size_t)count * isz, dev))) return 1;
  *ptr = (*tmp)->dev_data;
  return lc_cuda_result(lc_cu_copy_strided((*tmp)->dev_data, lc_node_dev_data(x), (int)isz, nd,
                                           shape, strides, count, lc_gpu_stream(dev)),
                        what);
}

int lc_cuda_row_major(const struct lc_node *x, int dev, const char *what, struct lc_buffer **tmp,
                      const void **ptr) {
  if (x->flags & LC_NF_CONTIG) {
    *ptr = lc_node_dev_data(x);
    return 0;
  }
  return lc_cuda_copy_to_scratch(x, x->ndim, x->shape, x->strides, x->size, tmp, ptr, dev, what);
}

void lc_cuda_take_buffer(struct lc_node *n, int k) {
  n->buf = lc_buffer_retain(n->in[k]->buf);
  lc_buffer_device_written(n->buf);
  n->offset = 0;
  lc_shape_strides(n->ndim, n->shape, n->strides);
  n->flags |= LC_NF_CONTIG;
}

int lc_cuda_finish(struct lc_node *n, int rc) {
  if (rc) {
    lc_buffer_release(n->buf);
    n->buf = NULL;
  }
  return rc;
}

/* The layout test and copy of lc_cuda_rows_last (eval.h). */
int lc_cuda_rows_last(const struct lc_node *x, const bool *red, int dev, const char *what,
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

int lc_cuda_result(int rc, const char *name) {
  if (rc == 0) return 0;
  if (rc == LC_CU_UNSUPPORTED) return LC_EVAL_ON_CPU;
  return lc_error("%s on the GPU: %s", name, cudaGetErrorString((cudaError_t)-rc));
}
#endif
