/* eval_cuda of SORT (ops/sort.c; params {mode, axis or -1 for flat, kth or
 * k}): the input as rows along the sorting axis (copied into that layout
 * when it is not), each row fully sorted on the GPU (gpu/cuda/sort.cu),
 * which also satisfies partition's contract; topk keeps the last k sorted
 * positions. The output is row-major over the node's shape, as on the
 * CPU. Complex64 and empty arrays run on the CPU. */
#ifdef LACE_CUDA
#include "core/error.h"
#include "gpu/cuda/eval.h"
#include "gpu/cuda/sort_scan.h"
#include "gpu/gpu.h"
#include "ops/prim.h"

/* ops/sort.c's modes */
enum { M_SORT, M_ARGSORT, M_PARTITION, M_ARGPARTITION, M_TOPK };

static const char *const mode_names[] = {"sort", "argsort", "partition", "argpartition",
                                         "topk"};

int lc_cuda_eval_sort(struct lc_node *n) {
  const int *p = n->params;
  struct lc_node *x = n->in[0];
  int mode = p[0];
  bool flat = p[1] < 0;
  if (x->dtype == MLX_COMPLEX64 || x->size == 0 || n->size == 0 || x->ndim > LC_CU_MAX_DIMS ||
      mode < M_SORT || mode > M_TOPK)
    return LC_EVAL_ON_CPU;
  bool red[LC_CU_MAX_DIMS] = {false};
  int64_t inner = 1;
  for (int d = 0; d < x->ndim; d++) {
    red[d] = flat || d == p[1];
    if (!flat && d > p[1]) inner *= x->shape[d];
  }
  const void *src;
  struct lc_buffer *tmp;
  int64_t len;
  int rc = lc_cuda_rows_last(x, red, n->dev, "sort (copy)", &src, &tmp, &len);
  if (rc) return rc;
  struct lc_cu_sort a = {.dt = x->dtype,
                         .arg = mode == M_ARGSORT || mode == M_ARGPARTITION,
                         .rows = x->size / len,
                         .len = len,
                         .keep_from = mode == M_TOPK ? len - p[2] : 0,
                         .inner = inner,
                         .in = src};
  size_t scratch_bytes = lc_cu_sort_scratch(&a);
  void *scratch = NULL;
  if (scratch_bytes == SIZE_MAX)
    rc = LC_EVAL_ON_CPU;
  else if (scratch_bytes && !(scratch = lc_gpu_malloc(scratch_bytes, n->dev)))
    rc = 1;
  else if (lc_cuda_alloc_output(n))
    rc = 1;
  else {
    a.out = n->buf->dev_data;
    rc = lc_cuda_finish(n, lc_cuda_result(lc_cu_sort_rows(&a, scratch, lc_gpu_stream(n->dev)),
                                          mode_names[mode]));
  }
  /* stream-ordered: the work reading them is queued */
  if (scratch) lc_gpu_free(scratch, scratch_bytes, n->dev);
  lc_buffer_release(tmp);
  return rc;
}
#endif
