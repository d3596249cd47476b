/* eval_cuda of the random family: bits (threefry), RANDOM_DIST (every
 * real distribution drawn from bits), RANDOM_CNORMAL (complex normal
 * draws), categorical, the permutation's argsort and its reordering along
 * an axis. Each describes its node for the kernels of gpu/cuda/random.cu,
 * which compute what the CPU evaluators do. */
#ifdef LACE_CUDA
#include <stdint.h>
#include <string.h>

#include "core/error.h"
#include "gpu/cuda/eval.h"
#include "gpu/cuda/random.h"
#include "gpu/gpu.h"
#include "ops/prim.h"
#include "ops/random_internal.h"

#define SAME_KIND(x) ((int)LC_CU_DIST_##x == (int)LC_DIST_##x)
_Static_assert(SAME_KIND(UNIFORM) && SAME_KIND(NORMAL) && SAME_KIND(LAPLACE) &&
                   SAME_KIND(GUMBEL) && SAME_KIND(TRUNC) && SAME_KIND(BERNOULLI) &&
                   SAME_KIND(RANDINT),
               "the GPU's distribution kinds are enum lc_dist_kind's");
#undef SAME_KIND

/* x as a strided view; false beyond LC_CU_MAX_DIMS dimensions. */
static bool view_of(const struct lc_node *x, struct lc_cu_view *v) {
  if (x->ndim > LC_CU_MAX_DIMS) return false;
  memset(v, 0, sizeof *v);
  v->ndim = x->ndim;
  for (int d = 0; d < x->ndim; d++) {
    v->shape[d] = x->shape[d];
    v->strides[d] = x->strides[d];
  }
  return true;
}

/* Device data of x, or NULL when x is empty (it may have no buffer). */
static const void *dev_data(const struct lc_node *x) {
  return x->size > 0 ? lc_node_dev_data(x) : NULL;
}

int lc_cuda_eval_random_bits(struct lc_node *n) {
  const struct lc_node *keys = n->in[0];
  struct lc_cu_view kv;
  if (!view_of(keys, &kv)) return LC_EVAL_ON_CPU;
  int64_t nkeys = keys->size / 2;
  int64_t bpk = nkeys ? n->size * (int64_t)lc_dtype_size(n->dtype) / nkeys : 0;
  if (lc_cuda_alloc_output(n)) return 1;
  if (n->size == 0 || nkeys == 0) return 0;
  int rc = lc_cu_random_bits(dev_data(keys), &kv, nkeys, bpk, n->buf->dev_data,
                             lc_gpu_stream(n->dev));
  return lc_cuda_finish(n, lc_cuda_result(rc, "random bits"));
}

static bool dist_input_dtype(mlx_dtype t) {
  return t == MLX_FLOAT16 || t == MLX_BFLOAT16 || t == MLX_FLOAT32 || t == MLX_FLOAT64 ||
         t == MLX_UINT32;
}

/* n's dimensions with extent 1 dropped and neighbours that every input
 * in[0..nin) (NULL: absent, no constraint) steps through as one merged,
 * while the merged extent fits an int: shape and strides (per input) in
 * *ndim dims; false beyond LC_CU_MAX_DIMS. */
static bool merged_dims(const struct lc_node *n, int nin, const struct lc_node *const *in,
                        int *shape, int64_t (*strides)[LC_CU_MAX_DIMS], int *ndim) {
  int nd = 0;
  for (int d = 0; d < n->ndim; d++) {
    if (n->shape[d] == 1) continue;
    bool merge = nd > 0 && (int64_t)shape[nd - 1] * n->shape[d] <= INT32_MAX;
    for (int k = 0; merge && k < nin; k++)
      merge = !in[k] || strides[k][nd - 1] == in[k]->strides[d] * n->shape[d];
    if (merge) {
      shape[nd - 1] *= n->shape[d];
      for (int k = 0; k < nin; k++) strides[k][nd - 1] = in[k] ? in[k]->strides[d] : 0;
      continue;
    }
    if (nd == LC_CU_MAX_DIMS) return false;
    shape[nd] = n->shape[d];
    for (int k = 0; k < nin; k++) strides[k][nd] = in[k] ? in[k]->strides[d] : 0;
    nd++;
  }
  *ndim = nd;
  return true;
}

int lc_cuda_eval_random_dist(struct lc_node *n) {
  const struct lc_dist_params *p = n->params;
  if (n->nin > LC_CU_DIST_IN || n->dtype == MLX_COMPLEX64) return LC_EVAL_ON_CPU;
  struct lc_cu_dist a;
  memset(&a, 0, sizeof a);
  a.kind = p->kind;
  a.has_scale = p->has_scale;
  a.has_loc = p->has_loc;
  a.p_f64 = p->p_f64;
  a.loc = p->loc;
  a.scale = p->scale;
  a.out_dt = n->dtype;
  a.n = n->size;
  a.nin = n->nin;
  for (int k = 0; k < n->nin; k++) {
    if (!dist_input_dtype(n->in[k]->dtype)) return LC_EVAL_ON_CPU;
    a.in_dt[k] = n->in[k]->dtype;
  }
  if (!merged_dims(n, n->nin, (const struct lc_node *const *)n->in, a.shape, a.strides, &a.ndim))
    return LC_EVAL_ON_CPU;
  if (lc_cuda_alloc_output(n)) return 1;
  if (n->size == 0) return 0;
  a.out = n->buf->dev_data;
  for (int k = 0; k < n->nin; k++) a.in[k] = dev_data(n->in[k]);
  return lc_cuda_finish(n, lc_cuda_result(lc_cu_random_dist(&a, lc_gpu_stream(n->dev)),
                                          "random distribution"));
}

/* The bits are read row-major: a view of them (a vmapped key's) is
 * copied to scratch first. */
int lc_cuda_eval_random_cnormal(struct lc_node *n) {
  const int *p = n->params; /* has_scale, has_loc (ops/random_dist.c) */
  struct lc_node *bits = n->in[0];
  if (bits->dtype != MLX_UINT32 || bits->size != 2 * n->size) return LC_EVAL_ON_CPU;
  struct lc_cu_cnormal a;
  memset(&a, 0, sizeof a);
  const struct lc_node *in[2] = {NULL, NULL};
  for (int j = 0, k = 1; j < 2; j++)
    if (p[j]) in[j] = n->in[k++];
  for (int j = 0; j < 2; j++)
    if (in[j] && in[j]->dtype != MLX_COMPLEX64) return LC_EVAL_ON_CPU;
  if (!merged_dims(n, 2, in, a.shape, a.strides, &a.ndim)) return LC_EVAL_ON_CPU;
  struct lc_buffer *tmp = NULL;
  const void *bp = NULL;
  if (n->size > 0) {
    int rc = lc_cuda_row_major(bits, n->dev, "normal (copy of bits)", &tmp, &bp);
    if (rc) return rc;
  }
  int rc = lc_cuda_alloc_output(n);
  if (!rc && n->size > 0) {
    a.n = n->size;
    a.out = n->buf->dev_data;
    a.bits = bp;
    for (int j = 0; j < 2; j++) a.in[j] = in[j] ? dev_data(in[j]) : NULL;
    rc = lc_cuda_finish(n, lc_cuda_result(lc_cu_random_cnormal(&a, lc_gpu_stream(n->dev)),
                                          "normal (complex)"));
  }
  lc_buffer_release(tmp); /* stream-ordered: the kernel is queued first */
  return rc;
}

int lc_cuda_eval_random_categorical(struct lc_node *n) {
  const int axis = *(const int *)n->params;
  const struct lc_node *g = n->in[0], *l = n->in[1];
  struct lc_cu_categorical a;
  memset(&a, 0, sizeof a);
  if (!view_of(g, &a.gv) || !view_of(l, &a.lv) || !dist_input_dtype(g->dtype) ||
      !dist_input_dtype(l->dtype) || g->ndim != l->ndim)
    return LC_EVAL_ON_CPU;
  a.axis = axis;
  a.K = g->shape[axis];
  a.outer = a.inner = 1;
  for (int d = 0; d < axis; d++) a.outer *= g->shape[d];
  for (int d = axis + 1; d < g->ndim; d++) a.inner *= g->shape[d];
  if (a.K == 0 && n->size > 0) return LC_EVAL_ON_CPU; /* every index 0 */
  a.g_dt = g->dtype;
  a.l_dt = l->dtype;
  if (lc_cuda_alloc_output(n)) return 1;
  if (n->size == 0) return 0;
  a.g = dev_data(g);
  a.l = dev_data(l);
  a.out = n->buf->dev_data;
  return lc_cuda_finish(n, lc_cuda_result(lc_cu_random_categorical(&a, lc_gpu_stream(n->dev)),
                                          "categorical"));
}

int lc_cuda_eval_random_argsort(struct lc_node *n) {
  const struct lc_node *x = n->in[0];
  if (x->ndim != 1 || x->dtype != MLX_UINT32 || x->size > 0x7fffffff) return LC_EVAL_ON_CPU;
  if (lc_cuda_alloc_output(n)) return 1;
  if (n->size == 0) return 0;
  size_t bytes = lc_cu_random_argsort_scratch(x->size);
  struct lc_buffer *tmp = lc_buffer_new_device(bytes, n->dev);
  if (!tmp) return lc_cuda_finish(n, 1);
  int rc = lc_cu_random_argsort(dev_data(x), x->strides[0], x->size, n->buf->dev_data,
                                tmp->dev_data, bytes, lc_gpu_stream(n->dev));
  lc_buffer_release(tmp); /* stream-ordered: reused only by later work */
  return lc_cuda_finish(n, lc_cuda_result(rc, "permutation"));
}

int lc_cuda_eval_random_take(struct lc_node *n) {
  const int axis = *(const int *)n->params;
  const struct lc_node *x = n->in[0], *ix = n->in[1];
  size_t isz = lc_dtype_size(x->dtype);
  struct lc_cu_view xv;
  if (!view_of(x, &xv) || ix->ndim != 1 || ix->dtype != MLX_UINT32 ||
      (isz != 1 && isz != 2 && isz != 4 && isz != 8))
    return LC_EVAL_ON_CPU;
  if (lc_cuda_alloc_output(n)) return 1;
  if (n->size == 0) return 0;
  int rc = lc_cu_random_take(dev_data(x), &xv, (int)isz, axis, dev_data(ix), ix->strides[0],
                             n->size, n->buf->dev_data, lc_gpu_stream(n->dev));
  return lc_cuda_finish(n, lc_cuda_result(rc, "permutation"));
}
#endif
