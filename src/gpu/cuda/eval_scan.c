/* eval_cuda of SCAN (ops/scan.c; params {kind, axis, reverse, inclusive}):
 * the input seen as (outer, len, inner) around the scanned axis, read in
 * place when row-major, else from a copy with the axis last; the output
 * is row-major, as on the CPU. Complex64 and empty arrays run on the CPU. */
#ifdef LACE_CUDA
#include "core/error.h"
#include "gpu/cuda/eval.h"
#include "gpu/cuda/sort_scan.h"
#include "gpu/gpu.h"
#include "ops/prim.h"

static const char *const kind_names[] = {"cumsum", "cumprod", "cummax", "cummin",
                                         "logcumsumexp"};

int lc_cuda_eval_scan(struct lc_node *n) {
  const int *p = n->params;
  struct lc_node *x = n->in[0];
  int axis = p[1];
  if (x->dtype == MLX_COMPLEX64 || n->dtype == MLX_COMPLEX64 || n->size == 0 ||
      x->ndim > LC_CU_MAX_DIMS || axis < 0 || axis >= x->ndim || p[0] < 0 || p[0] > 4)
    return LC_EVAL_ON_CPU;
  int64_t len = x->shape[axis], outer = 1, inner = 1;
  for (int d = 0; d < x->ndim; d++) {
    if (d < axis) outer *= x->shape[d];
    if (d > axis) inner *= x->shape[d];
  }
  struct lc_cu_scan a = {.kind = p[0],
                         .in_dt = x->dtype,
                         .out_dt = n->dtype,
                         .outer = outer,
                         .len = len,
                         .inner = inner,
                         .in_so = len * inner,
                         .reverse = p[2],
                         .inclusive = p[3]};
  struct lc_buffer *tmp = NULL;
  int rc = 0;
  if (lc_node_is_contiguous(x)) {
    a.in = lc_node_dev_data(x);
    a.in_sk = inner;
    a.in_si = 1;
  } else { /* rows (outer, inner) with the axis last */
    bool red[LC_CU_MAX_DIMS] = {false};
    red[axis] = true;
    int64_t l;
    rc = lc_cuda_rows_last(x, red, n->dev, "scan (copy)", &a.in, &tmp, &l);
    if (rc) return rc;
    a.in_sk = 1;
    a.in_si = len;
  }
  if (lc_cuda_alloc_output(n)) {
    rc = 1;
  } else {
    a.out = n->buf->dev_data;
    rc = lc_cuda_finish(
        n, lc_cuda_result(lc_cu_scan_lines(&a, lc_gpu_stream(n->dev)), kind_names[p[0]]));
  }
  lc_buffer_release(tmp); /* stream-ordered: the scan reading it is queued */
  return rc;
}
#endif
