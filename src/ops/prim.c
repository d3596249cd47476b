/* The primitive table and the core primitives (NONE, TUPLE_GET). */
#include "ops/prim.h"

#include <stdlib.h>

#include "core/error.h"
#include "core/graph.h"
#include "gpu/gpu.h"
#include "ops/tuple.h"

const struct lc_prim *const lc_prims[LC_OP_COUNT] = {
#define LC_PRIM(id, row) [LC_OP_##id] = &row,
#include "ops/ops.def"
#undef LC_PRIM
};

static int none_eval(struct lc_node *n) {
  /* Leaves are born evaluated; reaching here means a bug. */
  return lc_error("internal: evaluating a leaf without data (shape size %lld)",
                  (long long)n->size);
}

const struct lc_prim lc_prim_none = {.name = "leaf", .eval_cpu = none_eval};

bool lc_prim_can_donate(const struct lc_node *n, int k) {
  const struct lc_node *x = n->in[k];
  /* with several streams on its GPU, x's last reader may still be queued
   * on another one (gpu/gpu.h) */
  if (n->dev != LC_DEV_CPU && lc_gpu_multi_stream(n->dev)) return false;
  return !lc_eval_keeps_graph() && atomic_load(&x->refs) == 1 && x->buf && x->buf->owned &&
         atomic_load(&x->buf->refs) == 1 && (x->flags & LC_NF_CONTIG) && x->offset == 0 &&
         x->size == n->size && lc_dtype_size(x->dtype) == lc_dtype_size(n->dtype);
}

void lc_prim_take_buffer(struct lc_node *n, int k) {
  n->buf = lc_buffer_retain(n->in[k]->buf);
  lc_buffer_host_written(n->buf); /* the CPU kernel writes it */
  n->offset = 0;
  lc_shape_strides(n->ndim, n->shape, n->strides);
  n->flags |= LC_NF_CONTIG;
}

int lc_prim_donate_or_alloc(struct lc_node *n) {
  for (int k = 0; k < n->nin; k++)
    if (lc_prim_can_donate(n, k)) {
      lc_prim_take_buffer(n, k);
      return 0;
    }
  return lc_node_alloc_data(n);
}

/* ---- tuples ---- */

int lc_tuple_index(const struct lc_node *getter, int *nout) {
  const struct lc_tuple_get_params *p = getter->params;
  *nout = p->nout;
  return p->index;
}

int64_t lc_tuple_layout(int nout, const int64_t *nbytes, int64_t *offsets) {
  int64_t off = 0;
  for (int k = 0; k < nout; k++) {
    offsets[k] = off;
    off += (nbytes[k] + 63) / 64 * 64;
  }
  return off;
}

int lc_tuple_shape(int64_t total, int *shape) {
  if (total <= INT32_MAX) {
    shape[0] = (int)total;
    return 1;
  }
  if (total / 64 > INT32_MAX) return 0;
  shape[0] = (int)(total / 64);
  shape[1] = 64;
  return 2;
}

void *lc_tuple_data(const struct lc_node *tuple, int nout, const int64_t *nbytes, int k) {
  int64_t offs[nout];
  lc_tuple_layout(nout, nbytes, offs);
  return (char *)tuple->buf->data + offs[k];
}

int lc_tuple_new(int op, int nin, struct lc_node *const *in, const void *params,
                 size_t params_size, int nout, const mlx_dtype *dtypes, const int *ndims,
                 const int *const *shapes, struct lc_node **outs) {
  int64_t nbytes[nout], offs[nout];
  for (int k = 0; k < nout; k++)
    nbytes[k] = lc_shape_size(ndims[k], shapes[k]) * (int64_t)lc_dtype_size(dtypes[k]);
  int64_t total = lc_tuple_layout(nout, nbytes, offs);
  int tshape[2], tnd = lc_tuple_shape(total, tshape);
  if (!tnd) return lc_error("multi-output operation too large (%lld bytes)", (long long)total);
  struct lc_node *t = lc_node_new_op(op, MLX_UINT8, tnd, tshape, nin, in, params, params_size);
  if (!t) return 1;
  for (int k = 0; k < nout; k++) {
    struct lc_tuple_get_params p = {offs[k], k, nout};
    outs[k] = lc_node_new_op(LC_OP_TUPLE_GET, dtypes[k], ndims[k], shapes[k], 1, &t, &p, sizeof p);
    if (!outs[k]) {
      while (k--) lc_node_release(outs[k]);
      lc_node_release(t);
      return 1;
    }
  }
  lc_node_release(t);
  return 0;
}

struct lc_node *lc_tuple_get_view(struct lc_node *tuple, struct lc_node *src, int k, int nout) {
  struct lc_tuple_get_params p = {0, k, nout};
  struct lc_node *in[2] = {tuple, src};
  return lc_node_new_op(LC_OP_TUPLE_GET, src->dtype, src->ndim, src->shape, 2, in, &p, sizeof p);
}

static int tuple_get_eval(struct lc_node *n) {
  const struct lc_tuple_get_params *p = n->params;
  if (n->nin == 2) { /* a view of its second input (lc_tuple_get_view) */
    const struct lc_node *x = n->in[1];
    lc_node_set_view(n, x, x->strides, x->offset);
    return 0;
  }
  int64_t isz = (int64_t)lc_dtype_size(n->dtype);
  int64_t strides[n->ndim > 0 ? n->ndim : 1];
  lc_shape_strides(n->ndim, n->shape, strides);
  /* the view's offset is in n's element units; layouts are 64-byte aligned */
  lc_node_set_view(n, n->in[0], strides, (n->in[0]->offset + p->byte_offset) / isz);
  return 0;
}

const struct lc_prim lc_prim_tuple_get = {
    .name = "tuple_get", .flags = LC_PF_VIEW, .eval_cpu = tuple_get_eval};

int lc_prim_shape_of_input0(const void *params, int nin, struct lc_node *const *in, int ndim,
                            int *shape) {
  (void)params;
  if (nin < 1 || in[0]->ndim != ndim || in[0]->size == 0) return 1;
  for (int d = 0; d < ndim; d++) shape[d] = in[0]->shape[d];
  return 0;
}

int lc_prim_input_bcast_all(const void *params, int nin, struct lc_node *const *in,
                            const char *bcast, int k, int ndim, int *shape) {
  (void)params, (void)bcast, (void)k;
  for (int d = 0; d < ndim; d++) shape[d] = 1;
  for (int j = 0; j < nin; j++) {
    const struct lc_node *a = in[j];
    if (a->ndim > ndim) return 1;
    for (int i = 0; i < a->ndim; i++) {
      int *d = &shape[ndim - a->ndim + i], x = a->shape[i];
      if (*d == x || x == 1) continue;
      if (*d != 1) return 1;
      *d = x;
    }
  }
  return 0;
}
