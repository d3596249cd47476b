/* Shared by the CUDA evaluators: output buffers, donation, error reports. */
#ifdef LACE_CUDA
#include <cuda_runtime_api.h>

#include "core/error.h"
#include "gpu/cuda/eval.h"
#include "gpu/cuda/kernels.h"
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

int lc_cuda_result(int rc, const char *name) {
  if (rc == 0) return 0;
  if (rc == LC_CU_UNSUPPORTED) return LC_EVAL_ON_CPU;
  return lc_error("%s on the GPU: %s", name, cudaGetErrorString((cudaError_t)-rc));
}
#endif
