/* eval_cuda of every elementwise primitive: describes the node for the
 * kernel launcher (gpu/cuda/ew.cu). Inputs already have the output's shape
 * (builders broadcast); their strides are collapsed so that contiguous and
 * scalar inputs take the flat path and views need few dimensions. */
#ifdef LACE_CUDA
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda/eval.h"
#include "gpu/cuda/kernels.h"
#include "gpu/gpu.h"
#include "ops/prim.h"

/* Whether input x is read at flat index i (row-major contiguous with the
 * output's shape), or is one element throughout. */
static bool is_flat(const struct lc_node *x) { return (x->flags & LC_NF_CONTIG) || x->size <= 1; }
static bool is_scalar(const struct lc_node *x) {
  if (x->size <= 1) return true;
  for (int d = 0; d < x->ndim; d++)
    if (x->shape[d] > 1 && x->strides[d] != 0) return false;
  return true;
}

/* Merges adjacent dimensions that every input steps through as one
 * while the merged extent fits the descriptor's int; drops extents of 1.
 * Fails (false) beyond LC_CU_MAX_DIMS. */
static bool collapse(struct lc_cu_ew *a, const struct lc_node *n) {
  int nd = 0;
  for (int d = 0; d < n->ndim; d++) {
    if (n->shape[d] == 1) continue;
    bool merge = nd > 0 && (int64_t)a->shape[nd - 1] * n->shape[d] <= INT32_MAX;
    for (int k = 0; merge && k < a->nin; k++)
      merge = a->strides[k][nd - 1] == n->in[k]->strides[d] * n->shape[d];
    if (merge) {
      a->shape[nd - 1] *= n->shape[d];
      for (int k = 0; k < a->nin; k++) a->strides[k][nd - 1] = n->in[k]->strides[d];
      continue;
    }
    if (nd == LC_CU_MAX_DIMS) return false;
    a->shape[nd] = n->shape[d];
    for (int k = 0; k < a->nin; k++) a->strides[k][nd] = n->in[k]->strides[d];
    nd++;
  }
  a->ndim = nd;
  return true;
}

/* On unless LACE_CUDA_COMPLEX=0 (test_gpu_complex passes on an H100). */
static bool complex_on = true;
static void read_complex_env(void) {
  const char *e = getenv("LACE_CUDA_COMPLEX");
  complex_on = !(e && strcmp(e, "0") == 0);
}
bool lc_gpu_complex_kernels(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, read_complex_env);
  return complex_on;
}

int lc_cuda_eval_elementwise(struct lc_node *n) {
  const struct lc_prim *p = lc_prims[n->op];
  if (n->nin > LC_CU_MAX_IN) return LC_EVAL_ON_CPU;
  struct lc_cu_ew a;
  memset(&a, 0, sizeof a);
  a.op = n->op;
  a.out_dt = n->dtype;
  a.in_dt = n->in[n->nin - 1]->dtype;
  bool cx = n->dtype == MLX_COMPLEX64 || a.in_dt == MLX_COMPLEX64;
  if (cx && !lc_gpu_complex_kernels()) return LC_EVAL_ON_CPU;
  a.nin = n->nin;
  a.n = n->size;
  /* nan_to_num: nan, posinf, neginf; isclose: rtol, atol, equal_nan */
  if ((n->op == LC_OP_NAN_TO_NUM || n->op == LC_OP_ISCLOSE) && n->params_size >= 3 * sizeof(double))
    memcpy(a.param, n->params, 3 * sizeof(double));
  bool all_flat = true;
  for (int k = 0; k < n->nin; k++) {
    a.flat[k] = is_flat(n->in[k]) && !is_scalar(n->in[k]);
    all_flat &= a.flat[k] || is_scalar(n->in[k]);
  }
  if (!all_flat && !collapse(&a, n)) return LC_EVAL_ON_CPU;
  if (all_flat) a.ndim = 0;
  int donor = -1;
  for (int k = 0; k < n->nin && donor < 0; k++)
    if (lc_prim_can_donate(n, k)) donor = k;
  if (donor >= 0)
    lc_cuda_take_buffer(n, donor);
  else if (lc_cuda_alloc_output(n))
    return 1;
  a.out = n->buf->dev_data;
  for (int k = 0; k < n->nin; k++) a.in[k] = lc_node_dev_data(n->in[k]);
  void *stream = lc_gpu_stream(n->dev);
  int rc = cx ? lc_cu_elementwise_complex(&a, stream) : lc_cu_elementwise(&a, stream);
  return lc_cuda_finish(n, lc_cuda_result(rc, p->name));
}
#endif
