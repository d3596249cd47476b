/* Copying shape primitives: contiguous copy and concatenate. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/iter.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/prim.h"
#include "ops/shape.h"
#include "ops/shape_internal.h"
#include "transforms/transforms.h"

/* ---- contiguous ----
 * params: allow_col_major (int). Already row-major (or, when allowed,
 * column-major) contiguous inputs are shared, as MLX does; others copy. */

static bool col_major(const struct lc_node *x) {
  int64_t expect = 1;
  for (int i = 0; i < x->ndim; i++) {
    if (x->shape[i] == 1) continue;
    if (x->strides[i] != expect) return false;
    expect *= x->shape[i];
  }
  return true;
}

bool lc_contiguous_shares(const struct lc_node *in, bool allow_col_major) {
  return (in->flags & LC_NF_CONTIG) || (allow_col_major && col_major(in));
}

static int copy_eval(struct lc_node *n) {
  struct lc_node *in = n->in[0];
  bool allow_col = n->params && *(const int *)n->params;
  if (lc_contiguous_shares(in, allow_col)) { /* inputs are read-only */
    lc_node_set_view(n, in, in->strides, in->offset);
    return 0;
  }
  if (lc_node_alloc_data(n)) return 1;
  return lc_node_copy_out(in, n->buf->data);
}

/* Rules: contiguous is the identity on values. */
static int copy_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                    struct lc_node **out) {
  (void)n, (void)argnums, (void)nargs;
  out[0] = lc_node_retain(cot[0]);
  return 0;
}

static int copy_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  return !(out[0] = lc_rule_clone(n, tan));
}

static int copy_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                     struct lc_node **out, int *out_ax) {
  out[0] = lc_contiguous(in[0], n->params && *(const int *)n->params);
  *out_ax = ax[0];
  return !out[0];
}

/* a view: where it shares, its input is not uploaded for it (core/graph.c) */
const struct lc_prim lc_prim_copy = {.name = "contiguous",
                                     .flags = LC_PF_VIEW,
                                     .eval_cpu = copy_eval,
                                     .eval_cuda = LC_CUDA(lc_cuda_eval_copy),
                                     .vjp = copy_vjp,
                                     .jvp = copy_jvp,
                                     .vmap = copy_vmap};

struct lc_node *lc_contiguous(struct lc_node *a, bool allow_col_major) {
  int p = allow_col_major;
  return lc_node_new_op(LC_OP_COPY, a->dtype, a->ndim, a->shape, 1, &a, &p, sizeof p);
}

/* ---- concatenate ---- */

static int concatenate_eval(struct lc_node *n) {
  int axis = *(const int *)n->params;
  if (lc_node_alloc_data(n)) return 1;
  size_t isz = lc_dtype_size(n->dtype);
  int64_t off = 0;
  for (int k = 0; k < n->nin; k++) {
    const struct lc_node *x = n->in[k];
    if (x->size && lc_copy_strided(x->ndim, x->shape, isz, n->buf->data, n->strides, off,
                                   x->buf->data, x->strides, x->offset))
      return 1;
    off += (int64_t)x->shape[axis] * n->strides[axis];
  }
  return 0;
}

/* vjp: each input's cotangent is its slice of the output's. */
static int concatenate_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                           int nargs, struct lc_node **out) {
  int axis = *(const int *)n->params, off = 0, k = 0;
  for (int j = 0; j < nargs; j++) {
    for (; k < argnums[j]; k++) off += n->in[k]->shape[axis];
    int len = n->in[k]->shape[axis];
    if (!(out[j] = lc_slice_axis(cot[0], axis, off, off + len))) {
      lc_rule_release(out, j);
      return 1;
    }
  }
  return 0;
}

/* jvp: the tangents concatenated, zeros for inputs without one. */
static int concatenate_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  int axis = *(const int *)n->params, k = 0, rc = 1;
  struct lc_node **t = malloc(sizeof *t * (size_t)n->nin);
  if (!t) return lc_error("out of memory");
  for (; k < n->nin; k++)
    if (!(t[k] = tan[k] ? lc_node_retain(tan[k]) : lc_zeros_like(n->in[k]))) goto done;
  rc = !(out[0] = lc_concatenate(n->nin, t, axis));
done:
  lc_rule_release(t, k);
  free(t);
  return rc;
}

/* vmap: every input batched in front (unbatched ones broadcast), then the
 * concatenation one axis further in. */
static int concatenate_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                            struct lc_node **out, int *out_ax) {
  int axis = *(const int *)n->params, b = lc_rule_batch_size(n->nin, in, ax), k = 0, rc = 1;
  struct lc_node **t = malloc(sizeof *t * (size_t)n->nin);
  if (!t) return lc_error("out of memory");
  for (; k < n->nin; k++)
    if (!(t[k] = lc_rule_batch_front_full(in[k], ax[k], b))) goto done;
  rc = !(out[0] = lc_concatenate(n->nin, t, axis + 1));
  *out_ax = 0;
done:
  lc_rule_release(t, k);
  free(t);
  return rc;
}

/* Shapeless compile: the inputs' common extents, summed along the axis. */
static int concatenate_output_shape(const void *params, int nin, struct lc_node *const *in,
                                    int ndim, int *shape) {
  int ax = *(const int *)params;
  int64_t total = 0;
  for (int k = 0; k < nin; k++) {
    if (in[k]->ndim != ndim) return 1;
    for (int d = 0; d < ndim; d++)
      if (d != ax && in[k]->shape[d] != in[0]->shape[d]) return 1;
    total += in[k]->shape[ax];
  }
  if (nin < 1 || total > INT_MAX) return 1;
  memcpy(shape, in[0]->shape, sizeof(int) * (size_t)ndim);
  shape[ax] = (int)total;
  return 0;
}

const struct lc_prim lc_prim_concatenate = {.name = "concatenate",
                                            .eval_cpu = concatenate_eval,
                                            .eval_cuda = LC_CUDA(lc_cuda_eval_concatenate),
                                            .vjp = concatenate_vjp,
                                            .jvp = concatenate_jvp,
                                            .vmap = concatenate_vmap,
                                            .output_shape = concatenate_output_shape};

struct lc_node *lc_concatenate(int n, struct lc_node *const *arrays, int axis) {
  if (n <= 0) {
    lc_error("concatenate: no arrays to concatenate");
    return NULL;
  }
  const struct lc_node *a0 = arrays[0];
  int nd = a0->ndim;
  if (nd == 0) {
    lc_error("concatenate: zero-dimensional arrays cannot be concatenated");
    return NULL;
  }
  int ax = axis < 0 ? axis + nd : axis;
  if (ax < 0 || ax >= nd) {
    lc_error("concatenate: axis %d is out of bounds for arrays with %d dimensions", axis, nd);
    return NULL;
  }
  int shape[nd];
  memcpy(shape, a0->shape, sizeof shape);
  int64_t total = 0;
  mlx_dtype dt = a0->dtype;
  for (int k = 0; k < n; k++) {
    const struct lc_node *x = arrays[k];
    bool ok = x->ndim == nd;
    for (int i = 0; ok && i < nd; i++) ok = i == ax || x->shape[i] == shape[i];
    if (!ok) {
      char s0[128], s1[128];
      lc_error(
          "concatenate: all the input array dimensions except for the concatenation axis "
          "must match exactly, but array 0 has shape %s and array %d has shape %s",
          lc_shape_str(nd, a0->shape, s0, sizeof s0), k,
          lc_shape_str(x->ndim, x->shape, s1, sizeof s1));
      return NULL;
    }
    total += x->shape[ax];
    dt = lc_dtype_promote(dt, x->dtype);
  }
  if (total > INT_MAX) {
    lc_error("concatenate: result is too large along axis %d", ax);
    return NULL;
  }
  shape[ax] = (int)total;
  struct lc_node **in = malloc(sizeof *in * (size_t)n);
  if (!in) {
    lc_error("out of memory");
    return NULL;
  }
  int made = 0;
  for (; made < n; made++)
    if (!(in[made] = lc_astype(arrays[made], dt))) break;
  struct lc_node *r = NULL;
  if (made == n) r = lc_node_new_op(LC_OP_CONCATENATE, dt, nd, shape, n, in, &ax, sizeof ax);
  while (made--) lc_node_release(in[made]);
  free(in);
  return r;
}

struct lc_node *lc_stack(int n, struct lc_node *const *arrays, int axis) {
  if (n <= 0) {
    lc_error("stack: no arrays to stack");
    return NULL;
  }
  for (int k = 1; k < n; k++)
    if (!lc_shape_equal(arrays[0]->ndim, arrays[0]->shape, arrays[k]->ndim, arrays[k]->shape)) {
      lc_error("stack: all arrays must have the same shape (array %d differs from array 0)", k);
      return NULL;
    }
  int nd = arrays[0]->ndim + 1;
  int ax = axis < 0 ? axis + nd : axis;
  if (ax < 0 || ax >= nd) {
    lc_error("stack: axis %d is out of bounds for the result with %d dimensions", axis, nd);
    return NULL;
  }
  struct lc_node **in = malloc(sizeof *in * (size_t)n);
  if (!in) {
    lc_error("out of memory");
    return NULL;
  }
  int made = 0;
  for (; made < n; made++)
    if (!(in[made] = lc_expand_dims(arrays[made], 1, &ax))) break;
  struct lc_node *r = made == n ? lc_concatenate(n, in, ax) : NULL;
  while (made--) lc_node_release(in[made]);
  free(in);
  return r;
}
