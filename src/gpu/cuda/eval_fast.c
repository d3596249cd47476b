/* eval_cuda of the fast family (rms_norm, layer_norm, rope, attention):
 * describes the node for the launchers of gpu/cuda/fast.cu and
 * fast_sdpa.cu. Inputs arrive with any strides: norms copy x, weight or
 * bias to a contiguous scratch unless row-major (unit stride), rope reads
 * rows through the leading dimensions' strides, attention copies q, k or v
 * to a contiguous scratch when its rows are not 16-byte packs. Norm and rope
 * outputs take over x's buffer when it may be donated (every element is
 * read before it is written, by the thread that writes it). What no kernel
 * covers (float64 attention, head dims that are not whole packs or exceed
 * two packs per lane, empty arrays) answers LC_EVAL_ON_CPU. */
#ifdef LACE_CUDA
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "core/error.h"
#include "gpu/cuda/eval.h"
#include "gpu/cuda/fast.h"
#include "gpu/gpu.h"
#include "ops/fast.h"
#include "ops/fast_params.h"
#include "ops/prim.h"

static bool float_dtype(mlx_dtype t) {
  return t == MLX_FLOAT16 || t == MLX_BFLOAT16 || t == MLX_FLOAT32 || t == MLX_FLOAT64;
}

/* How the launcher finds x's rows (vectors along its last axis); false
 * beyond LC_CU_MAX_DIMS leading dimensions. */
static bool rows_of(const struct lc_node *x, struct lc_cu_rows *r) {
  memset(r, 0, sizeof *r);
  if (lc_fast_row_major(x)) return true;
  if (x->ndim - 1 > LC_CU_MAX_DIMS) return false;
  r->nlead = x->ndim - 1;
  for (int d = 0; d < r->nlead; d++) {
    r->shape[d] = x->shape[d];
    r->strides[d] = x->strides[d];
  }
  return true;
}

/* n's output: x's buffer when donated, else a fresh one. 0, or 1. */
static int out_buffer(struct lc_node *n) {
  if (lc_prim_can_donate(n, 0)) {
    lc_cuda_take_buffer(n, 0);
    return 0;
  }
  return lc_cuda_alloc_output(n);
}

/* The norm kernel is given row-major x and unit-stride weight and bias:
 * operands of other layouts are copied to scratch first. Rows of any
 * length and every float dtype run on the GPU: packs where the row is
 * whole 16-byte packs, single elements otherwise. (The CPU fallback that
 * odd rows once had dates from before lc_cu_norm's blocks held whole
 * rows; d = 129 is a row of 160 threads, which 256 does not divide.) */
static int norm_with(struct lc_node *n, bool layer, struct lc_buffer **tmp) {
  const struct norm_params *p = n->params;
  struct lc_node *x = n->in[0];
  if (!float_dtype(n->dtype) || x->dtype != n->dtype || n->size == 0) return LC_EVAL_ON_CPU;
  for (int k = 1; k < n->nin; k++)
    if (n->in[k]->ndim != 1) return LC_EVAL_ON_CPU;
  struct lc_cu_norm a;
  memset(&a, 0, sizeof a);
  void *stream = lc_gpu_stream(n->dev);
  a.dt = n->dtype;
  a.layer = layer;
  a.d = x->shape[x->ndim - 1];
  a.rows = n->size / a.d;
  a.eps = p->eps;
  a.x = lc_node_dev_data(x);
  a.sx = x->strides[x->ndim - 1];
  bool copied = false;
  if (!lc_fast_row_major(x)) {
    int rc = lc_cuda_copy_to_scratch(x, x->ndim, x->shape, x->strides, x->size, &tmp[0], &a.x,
                                     n->dev, "norm (copy of x)");
    if (rc) return rc;
    a.sx = 1;
    copied = true;
  }
  const void **ptrs[2] = {&a.w, &a.b};
  int64_t *strides[2] = {&a.sw, &a.sb};
  bool has[2] = {p->has_weight, p->has_bias};
  for (int j = 0, k = 1; j < 2; j++) {
    if (!has[j]) continue;
    const struct lc_node *v = n->in[k++];
    *ptrs[j] = lc_node_dev_data(v);
    *strides[j] = v->strides[0];
    if (v->size > 1 && v->strides[0] != 1) {
      int rc = lc_cuda_copy_to_scratch(v, 1, v->shape, v->strides, v->size, &tmp[1 + j], ptrs[j],
                                       n->dev, "norm (copy of weight or bias)");
      if (rc) return rc;
      *strides[j] = 1;
    }
  }
  if (copied ? lc_cuda_alloc_output(n) : out_buffer(n)) return 1;
  a.out = n->buf->dev_data;
  return lc_cuda_finish(n, lc_cuda_result(lc_cu_norm(&a, stream), lc_prims[n->op]->name));
}

static int norm_cuda(struct lc_node *n, bool layer) {
  struct lc_buffer *tmp[3] = {NULL, NULL, NULL}; /* x, weight, bias copies */
  int rc = norm_with(n, layer, tmp);
  for (int i = 0; i < 3; i++) lc_buffer_release(tmp[i]);
  return rc;
}

int lc_cuda_eval_rms_norm(struct lc_node *n) { return norm_cuda(n, false); }
int lc_cuda_eval_layer_norm(struct lc_node *n) { return norm_cuda(n, true); }

int lc_cuda_eval_rope(struct lc_node *n) {
  const struct rope_params *p = n->params;
  struct lc_node *x = n->in[0], *off = n->in[1];
  if (!float_dtype(n->dtype) || x->dtype != n->dtype || n->size == 0 || x->ndim < 3 ||
      off->size < 1 || !lc_dtype_is_int(off->dtype))
    return LC_EVAL_ON_CPU;
  struct lc_cu_rope a;
  memset(&a, 0, sizeof a);
  if (!rows_of(x, &a.xr)) return LC_EVAL_ON_CPU;
  int nd = x->ndim;
  a.dt = n->dtype;
  a.D = x->shape[nd - 1];
  a.T = x->shape[nd - 2];
  a.rows = n->size / a.D;
  a.rows_per_batch = a.rows / x->shape[0];
  a.half = p->dims / 2;
  a.traditional = p->traditional;
  a.forward = p->forward;
  a.x = lc_node_dev_data(x);
  a.sx = x->strides[nd - 1];
  a.off = lc_node_dev_data(off);
  a.off_dt = off->dtype;
  a.noff = (int)off->size;
  a.ostride = off->ndim ? off->strides[0] : 0;
  if (p->has_freqs) {
    a.freqs = lc_node_dev_data(n->in[2]);
    a.fstride = n->in[2]->strides[0];
  }
  a.base = p->base;
  a.scale = p->scale;
  if (out_buffer(n)) return 1;
  a.out = n->buf->dev_data;
  return lc_cuda_finish(n, lc_cuda_result(lc_cu_rope(&a, lc_gpu_stream(n->dev)), "rope"));
}

static float lowest_of(mlx_dtype t) {
  return t == MLX_FLOAT16 ? -65504.0f : t == MLX_BFLOAT16 ? -3.3895313892515355e38f : -FLT_MAX;
}

/* Whether the kernel reads x's rows as they are: element 0 16-byte
 * aligned, unit last stride, other strides whole packs of v elements. */
static bool rows_fit(const void *p, const int64_t *st, int v) {
  if (((uintptr_t)p & 15) || st[3] != 1) return false;
  for (int d = 0; d < 3; d++)
    if (st[d] % v) return false;
  return true;
}

/* x's device data and strides (those of extent-1 dimensions zeroed) in
 * *ptr, st; through a contiguous copy in *tmp when the rows do not fit.
 * 0, or nonzero as lc_cuda_result after reporting. */
static int attention_operand(struct lc_node *x, int v, const void **ptr, int64_t *st,
                             struct lc_buffer **tmp, int dev) {
  *ptr = lc_node_dev_data(x);
  for (int d = 0; d < 4; d++) st[d] = x->shape[d] == 1 ? 0 : x->strides[d];
  if (x->shape[3] == 1) st[3] = 1;
  if (rows_fit(*ptr, st, v)) return 0;
  int rc = lc_cuda_copy_to_scratch(x, 4, x->shape, x->strides, x->size, tmp, ptr, dev,
                                   "scaled_dot_product_attention (copy)");
  if (rc) return rc;
  int64_t s = 1;
  for (int d = 3; d >= 0; d--) {
    st[d] = x->shape[d] == 1 ? 0 : s;
    s *= x->shape[d];
  }
  st[3] = 1;
  return 0;
}

int lc_cuda_eval_sdpa(struct lc_node *n) {
  const struct sdpa_params *p = n->params;
  mlx_dtype t = n->dtype;
  if ((t != MLX_FLOAT16 && t != MLX_BFLOAT16 && t != MLX_FLOAT32) || n->size == 0)
    return LC_EVAL_ON_CPU;
  struct lc_node *q = n->in[0], *k = n->in[1], *v = n->in[2], *mask = NULL, *sinks = NULL;
  int m = 3;
  if (p->has_mask) mask = n->in[m++];
  if (p->has_sinks) sinks = n->in[m];
  if (k->shape[2] == 0) return LC_EVAL_ON_CPU;
  struct lc_cu_sdpa a;
  memset(&a, 0, sizeof a);
  a.dt = t;
  a.B = q->shape[0];
  a.Hq = q->shape[1];
  a.qL = q->shape[2];
  a.D = q->shape[3];
  a.Dv = v->shape[3];
  a.Hkv = k->shape[1];
  a.kL = k->shape[2];
  a.scale = p->scale;
  a.causal = p->causal;
  a.lowest = lowest_of(t);
  int64_t work = lc_cu_sdpa_work_floats(&a);
  if (work < 0) return LC_EVAL_ON_CPU;
  if (mask) {
    a.mask = lc_node_dev_data(mask);
    a.mask_bool = mask->dtype == MLX_BOOL;
    for (int d = 0; d < 4; d++) a.ms[d] = mask->strides[d];
  }
  if (sinks) {
    a.sinks = lc_node_dev_data(sinks);
    a.ss = sinks->strides[0];
  }
  void *stream = lc_gpu_stream(n->dev);
  struct lc_buffer *tmp[4] = {NULL, NULL, NULL, NULL}; /* q, k, v copies; scratch */
  int vlen = 16 / (int)lc_dtype_size(t);
  int rc = attention_operand(q, vlen, &a.q, a.qs, &tmp[0], n->dev);
  if (!rc) rc = attention_operand(k, vlen, &a.k, a.ks, &tmp[1], n->dev);
  if (!rc) rc = attention_operand(v, vlen, &a.v, a.vs, &tmp[2], n->dev);
  if (!rc && work > 0) {
    tmp[3] = lc_buffer_new_device((size_t)work * sizeof(float), n->dev);
    if (!tmp[3]) rc = 1;
    else a.work = tmp[3]->dev_data;
  }
  if (!rc && lc_cuda_alloc_output(n)) rc = 1;
  if (!rc) {
    a.out = n->buf->dev_data;
    rc = lc_cuda_finish(n, lc_cuda_result(lc_cu_sdpa(&a, stream), "scaled_dot_product_attention"));
  }
  /* stream-ordered: the kernels are queued before the memory is reused */
  for (int i = 0; i < 4; i++) lc_buffer_release(tmp[i]);
  return rc;
}
#endif
