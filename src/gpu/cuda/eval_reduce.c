/* eval_cuda of REDUCE: the input seen as (kept..., reduced...) row-major,
 * copied into that order on the GPU when its layout is another, then one
 * row reduction (gpu/cuda/reduce.cu; few long rows in segments, through
 * scratch). The output is row-major over the
 * kept dimensions, as on the CPU. */
#ifdef LACE_CUDA
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "gpu/cuda/eval.h"
#include "gpu/cuda/kernels.h"
#include "gpu/gpu.h"
#include "ops/prim.h"
#include "ops/reduce_kern.h"

/* lc_cuda_finish, releasing tmp either way (stream-ordered: the kernel
 * reading it was queued first). */
static int finish(struct lc_node *n, struct lc_buffer *tmp, int rc) {
  lc_buffer_release(tmp);
  return lc_cuda_finish(n, rc);
}

/* A row-major contiguous input reduced over one run of adjacent axes with
 * kept axes after it, (outer, R, inner), by the column kernel in place;
 * LC_EVAL_ON_CPU when the layout or kind is another (the row path then). */
static int eval_columns(struct lc_node *n, const bool *red) {
  const int *p = n->params;
  struct lc_node *x = n->in[0];
  int nd = x->ndim, a = 0, b;
  const char *e = getenv("LACE_CUDA_REDUCE_COLS"); /* 0: copy, then reduce rows (comparisons) */
  if (!lc_node_is_contiguous(x) || (e && !strcmp(e, "0"))) return LC_EVAL_ON_CPU;
  while (a < nd && !red[a]) a++;
  for (b = a; b < nd && red[b]; b++) {}
  for (int d = b; d < nd; d++)
    if (red[d]) return LC_EVAL_ON_CPU; /* reduced axes not adjacent */
  struct lc_cu_reduce_cols c = {.kind = p[0], .in_dt = x->dtype, .out_dt = n->dtype,
                                .outer = 1, .R = 1, .inner = 1, .in = lc_node_dev_data(x)};
  for (int d = 0; d < nd; d++) {
    if (d < a) c.outer *= x->shape[d];
    else if (d < b) c.R *= x->shape[d];
    else c.inner *= x->shape[d];
  }
  if (c.inner == 1 || !lc_cu_reduce_cols_ok(&c)) return LC_EVAL_ON_CPU; /* the row path */
  size_t sb = lc_cu_reduce_cols_scratch(&c);
  if (lc_cuda_alloc_output(n)) return 1;
  c.out = n->buf->dev_data;
  struct lc_buffer *scratch = NULL;
  if (sb) {
    if (!(scratch = lc_buffer_new_device(sb, n->dev))) return lc_cuda_finish(n, 1);
    c.scratch = scratch->dev_data;
  }
  int rc = lc_cuda_result(lc_cu_reduce_cols(&c, lc_gpu_stream(n->dev)), "reduce");
  lc_buffer_release(scratch); /* stream-ordered: the kernels reading it were queued first */
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
  int rc = eval_columns(n, red);
  if (rc != LC_EVAL_ON_CPU) return rc;
  const void *src;
  struct lc_buffer *tmp;
  int64_t len;
  rc = lc_cuda_rows_last(x, red, n->dev, "reduce (copy)", &src, &tmp, &len);
  if (rc) return rc;
  if (lc_cuda_alloc_output(n)) return finish(n, tmp, 1);
  struct lc_cu_reduce a = {.kind = p[0], .in_dt = x->dtype, .out_dt = n->dtype,
                           .rows = n->size, .len = len, .in = src, .out = n->buf->dev_data,
                           .ddof = p[1]};
  struct lc_buffer *scratch = NULL;
  size_t sb = lc_cu_reduce_scratch(&a);
  if (sb) {
    if (!(scratch = lc_buffer_new_device(sb, n->dev))) return finish(n, tmp, 1);
    a.scratch = scratch->dev_data;
  }
  rc = lc_cuda_result(lc_cu_reduce_rows(&a, lc_gpu_stream(n->dev)), "reduce");
  lc_buffer_release(scratch); /* stream-ordered, as tmp */
  return finish(n, tmp, rc);
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
  int rc = lc_cuda_rows_last(x, red, n->dev, "argmax (copy)", &src, &tmp, &len);
  if (rc) return rc;
  if (lc_cuda_alloc_output(n)) return finish(n, tmp, 1);
  return finish(n, tmp,
                lc_cuda_result(lc_cu_argreduce_rows(p[0] == 0, x->dtype, x->size / len, len, src,
                                                    n->buf->dev_data, lc_gpu_stream(n->dev)),
                               name));
}

/* eval_cuda of SOFTMAX (params: {precise, naxes, axes...}, sorted): over
 * rows of the softmax axes (lc_cuda_rows_last copies the input when its
 * layout is not already kept axes first, softmax axes last, row-major).
 * When the softmax axes are the trailing ones, rows are the output's own
 * layout and the kernel writes it; otherwise it writes scratch in the
 * permuted order, and a strided copy moves that into the output's order.
 * No axes, or more dims than the copy kernel takes, run on the CPU. */
int lc_cuda_eval_softmax(struct lc_node *n) {
  const int *p = n->params;
  struct lc_node *x = n->in[0];
  int nd = x->ndim, naxes = p[1];
  if (naxes < 1 || nd > LC_CU_MAX_DIMS || x->dtype != n->dtype || x->size == 0)
    return LC_EVAL_ON_CPU;
  bool red[LC_CU_MAX_DIMS] = {false};
  for (int i = 0; i < naxes; i++) red[p[2 + i]] = true;
  bool trailing = true; /* the softmax axes are the last naxes dims */
  for (int d = 0; d < nd; d++) trailing &= red[d] == (d >= nd - naxes);
  const void *src;
  struct lc_buffer *tmp, *perm_out = NULL;
  int64_t len;
  int rc = lc_cuda_rows_last(x, red, n->dev, "softmax (copy)", &src, &tmp, &len);
  if (rc) return rc;
  if (lc_cuda_alloc_output(n)) return finish(n, tmp, 1);
  size_t isz = lc_dtype_size(x->dtype);
  if (!trailing && !(perm_out = lc_buffer_new_device((size_t)x->size * isz, n->dev)))
    return finish(n, tmp, 1);
  void *stream = lc_gpu_stream(n->dev);
  rc = lc_cuda_result(lc_cu_softmax_rows(x->dtype, x->size / len, len, src,
                                         perm_out ? perm_out->dev_data : n->buf->dev_data, stream),
                      "softmax");
  if (!rc && perm_out) {
    /* perm_out holds kept axes then softmax axes, each ascending: read it
     * in the output's order, dim d by its stride there */
    int perm[LC_CU_MAX_DIMS], k = 0;
    int64_t st[LC_CU_MAX_DIMS], step = 1;
    for (int d = 0; d < nd; d++)
      if (!red[d]) perm[k++] = d;
    for (int d = 0; d < nd; d++)
      if (red[d]) perm[k++] = d;
    for (int i = nd - 1; i >= 0; i--) {
      st[perm[i]] = step;
      step *= x->shape[perm[i]];
    }
    rc = lc_cuda_result(lc_cu_copy_strided(n->buf->dev_data, perm_out->dev_data, (int)isz, nd,
                                           x->shape, st, x->size, stream),
                        "softmax (copy back)");
  }
  lc_buffer_release(perm_out); /* stream-ordered, as tmp */
  return finish(n, tmp, rc);
}
#endif
