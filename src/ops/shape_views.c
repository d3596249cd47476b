/* View primitives (reshape, transpose, slice, as_strided, diagonal) and the
 * builders derived from them. Eval of a view shares the input's buffer
 * through lc_node_set_view; only reshape falls back to a copy, when the
 * input's strides cannot express the new shape. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/prim.h"
#include "ops/shape.h"
#include "ops/shape_internal.h"
#include "transforms/transforms.h"

/* ---- reshape ---- */

/* Strides ns (nn entries) that view `in`'s elements in row-major order with
 * shape nd, if its strides allow (in->size > 0). Groups of old axes whose
 * product matches a group of new axes must be mutually contiguous. */
static bool reshape_strides(const struct lc_node *in, int nn, const int *nd, int64_t *ns) {
  int cap = in->ndim > 0 ? in->ndim : 1;
  int64_t od[cap], os[cap];
  int on = 0;
  for (int i = 0; i < in->ndim; i++)
    if (in->shape[i] != 1) {
      od[on] = in->shape[i];
      os[on++] = in->strides[i];
    }
  int oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < nn && oi < on) {
    int64_t np = nd[ni], op = od[oi];
    while (np != op) {
      if (np < op)
        np *= nd[nj++];
      else
        op *= od[oj++];
    }
    for (int k = oi; k < oj - 1; k++)
      if (os[k] != od[k + 1] * os[k + 1]) return false;
    ns[nj - 1] = os[oj - 1];
    for (int k = nj - 1; k > ni; k--) ns[k - 1] = ns[k] * nd[k];
    ni = nj++;
    oi = oj++;
  }
  for (; ni < nn; ni++) ns[ni] = 1; /* trailing axes of extent 1 */
  return true;
}

bool lc_reshape_shares(struct lc_node *n) {
  struct lc_node *in = n->in[0];
  int64_t ns[n->ndim > 0 ? n->ndim : 1];
  if (in->size == 0)
    lc_shape_strides(n->ndim, n->shape, ns);
  else if (!reshape_strides(in, n->ndim, n->shape, ns))
    return false;
  lc_node_set_view(n, in, ns, in->offset);
  return true;
}

static int reshape_eval(struct lc_node *n) {
  if (lc_reshape_shares(n)) return 0;
  if (lc_node_alloc_data(n)) return 1;
  return lc_node_copy_out(n->in[0], n->buf->data);
}

/* Rules: reshape is linear and shape-only, so every rule is a reshape. */
static int reshape_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                       int nargs, struct lc_node **out) {
  (void)argnums, (void)nargs;
  const struct lc_node *a = n->in[0];
  return !(out[0] = lc_reshape(cot[0], a->ndim, a->shape));
}

static int reshape_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  return !(out[0] = lc_reshape(tan[0], n->ndim, n->shape));
}

static int reshape_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                        struct lc_node **out, int *out_ax) {
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  if (!x) return 1;
  int sh[n->ndim + 1];
  sh[0] = x->shape[0];
  for (int d = 0; d < n->ndim; d++) sh[1 + d] = n->shape[d];
  out[0] = lc_reshape(x, n->ndim + 1, sh);
  lc_node_release(x);
  *out_ax = 0;
  return !out[0];
}

const struct lc_prim lc_prim_reshape = {.name = "reshape",
                                        .flags = LC_PF_VIEW,
                                        .eval_cpu = reshape_eval,
                                        .eval_cuda = LC_CUDA(lc_cuda_eval_reshape),
                                        .vjp = reshape_vjp,
                                        .jvp = reshape_jvp,
                                        .vmap = reshape_vmap,
                                        .output_shape = lc_reshape_output_shape};

/* Resolves one -1 entry of shape (into out) against size; 0 or 1 after
 * reporting with prefix fn. */
static int infer_shape(const char *fn, int64_t size, int ndim, const int *shape, int *out) {
  int infer = -1;
  int64_t prod = 1;
  for (int i = 0; i < ndim; i++) {
    out[i] = shape[i];
    if (shape[i] == -1) {
      if (infer >= 0) return lc_error("%s: can only infer one dimension", fn);
      infer = i;
    } else if (shape[i] < 0) {
      return lc_error("%s: negative dimension %d in shape", fn, shape[i]);
    } else {
      prod *= shape[i];
      if (prod > INT64_MAX / INT_MAX) return lc_error("%s: shape is too large", fn);
    }
  }
  if (infer >= 0) {
    if (prod == 0) return lc_error("%s: cannot infer the shape of an empty array", fn);
    if (size % prod == 0 && size / prod <= INT_MAX) out[infer] = (int)(size / prod);
    prod *= out[infer];
  }
  if (prod != size || (infer >= 0 && out[infer] < 0)) {
    char s[256];
    return lc_error("%s: cannot reshape array of size %lld into shape %s", fn, (long long)size,
                    lc_shape_str(ndim, shape, s, sizeof s));
  }
  return 0;
}

struct lc_node *lc_reshape_rule(struct lc_node *a, int ndim, const int *shape, const int *params,
                                int np, bool keep_identity) {
  if (!keep_identity && lc_shape_equal(a->ndim, a->shape, ndim, shape)) return lc_node_retain(a);
  return lc_node_new_op(LC_OP_RESHAPE, a->dtype, ndim, shape, 1, &a, np ? params : NULL,
                        sizeof(int) * (size_t)np);
}

/* A -1 entry makes the shape follow the input's size (rule LC_RS_INFER):
 * the node is kept even where it is the identity, as the identity may not
 * hold for other input shapes. */
struct lc_node *lc_reshape(struct lc_node *a, int ndim, const int *shape) {
  if (ndim < 0) {
    lc_error("reshape: negative number of dimensions %d", ndim);
    return NULL;
  }
  int out[ndim > 0 ? ndim : 1], infer = -1;
  if (infer_shape("reshape", a->size, ndim, shape, out)) return NULL;
  for (int i = 0; i < ndim; i++)
    if (shape[i] == -1) infer = i;
  if (infer < 0) return lc_reshape_rule(a, ndim, out, NULL, 0, false);
  int p[2 + ndim];
  p[0] = LC_RS_INFER;
  p[1] = infer;
  memcpy(p + 2, shape, sizeof(int) * (size_t)ndim);
  return lc_reshape_rule(a, ndim, out, p, 2 + ndim, true);
}

/* ---- transpose ---- */

static int transpose_eval(struct lc_node *n) {
  const struct lc_node *in = n->in[0];
  const int *perm = n->params;
  int64_t st[n->ndim > 0 ? n->ndim : 1];
  for (int i = 0; i < n->ndim; i++) st[i] = in->strides[perm[i]];
  lc_node_set_view(n, in, st, in->offset);
  return 0;
}

/* Rules: the cotangent goes back through the inverse permutation; vmap
 * keeps the batch axis first. */
int lc_transpose_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                     struct lc_node **out) {
  (void)argnums, (void)nargs;
  const int *perm = n->params;
  int inv[n->ndim > 0 ? n->ndim : 1];
  for (int i = 0; i < n->ndim; i++) inv[perm[i]] = i;
  return !(out[0] = lc_transpose(cot[0], inv));
}

/* jvp of any view whose only differentiable input is input 0: the same
 * view of the tangent (the other inputs, such as start indices, kept). */
int lc_view_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  if (!tan[0]) return 0;
  struct lc_node *in[n->nin];
  in[0] = tan[0];
  for (int k = 1; k < n->nin; k++) in[k] = n->in[k];
  return !(out[0] = lc_rule_clone(n, in));
}

int lc_transpose_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                      struct lc_node **out, int *out_ax) {
  const int *perm = n->params;
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  if (!x) return 1;
  int p[n->ndim + 1];
  p[0] = 0;
  for (int i = 0; i < n->ndim; i++) p[1 + i] = perm[i] + 1;
  out[0] = lc_transpose(x, p);
  lc_node_release(x);
  *out_ax = 0;
  return !out[0];
}

/* Shapeless replay: the input's extents, permuted. */
int lc_transpose_shape(const void *params, int nin, struct lc_node *const *in, int ndim,
                       int *shape) {
  const int *perm = params;
  if (nin != 1 || in[0]->ndim != ndim) return 1;
  for (int i = 0; i < ndim; i++) shape[i] = in[0]->shape[perm[i]];
  return 0;
}

const struct lc_prim lc_prim_transpose = {.name = "transpose",
                                          .flags = LC_PF_VIEW,
                                          .eval_cpu = transpose_eval,
                                          .vjp = lc_transpose_vjp,
                                          .jvp = lc_view_jvp,
                                          .vmap = lc_transpose_vmap,
                                          .output_shape = lc_transpose_shape};

static struct lc_node *transpose_impl(const char *fn, struct lc_node *a, const int *perm) {
  int nd = a->ndim;
  int p[nd > 0 ? nd : 1], shape[nd > 0 ? nd : 1];
  bool seen[nd > 0 ? nd : 1];
  memset(seen, 0, sizeof seen);
  bool ident = true;
  for (int i = 0; i < nd; i++) {
    int ax = perm[i] < 0 ? perm[i] + nd : perm[i];
    if (ax < 0 || ax >= nd) {
      lc_error("%s: axis %d is out of bounds for an array with %d dimensions", fn, perm[i], nd);
      return NULL;
    }
    if (seen[ax]) {
      lc_error("%s: repeated axis %d in permutation", fn, perm[i]);
      return NULL;
    }
    seen[ax] = true;
    p[i] = ax;
    shape[i] = a->shape[ax];
    ident = ident && ax == i;
  }
  if (ident) return lc_node_retain(a);
  return lc_node_new_op(LC_OP_TRANSPOSE, a->dtype, nd, shape, 1, &a, p, sizeof(int) * (size_t)nd);
}

struct lc_node *lc_transpose(struct lc_node *a, const int *perm) {
  return transpose_impl("transpose", a, perm);
}

struct lc_node *lc_transpose_all(struct lc_node *a) {
  int p[a->ndim > 0 ? a->ndim : 1];
  for (int i = 0; i < a->ndim; i++) p[i] = a->ndim - 1 - i;
  return transpose_impl("transpose", a, p);
}

static int norm_axis(const char *fn, const char *what, int *axis, int ndim) {
  int ax = *axis < 0 ? *axis + ndim : *axis;
  if (ax < 0 || ax >= ndim)
    return lc_error("%s: %s %d is out of bounds for an array with %d dimensions", fn, what, *axis,
                    ndim);
  *axis = ax;
  return 0;
}

struct lc_node *lc_swapaxes(struct lc_node *a, int axis1, int axis2) {
  if (norm_axis("swapaxes", "axis", &axis1, a->ndim) ||
      norm_axis("swapaxes", "axis", &axis2, a->ndim))
    return NULL;
  int p[a->ndim];
  for (int i = 0; i < a->ndim; i++) p[i] = i;
  p[axis1] = axis2;
  p[axis2] = axis1;
  return transpose_impl("swapaxes", a, p);
}

struct lc_node *lc_moveaxis(struct lc_node *a, int source, int destination) {
  if (norm_axis("moveaxis", "source axis", &source, a->ndim) ||
      norm_axis("moveaxis", "destination axis", &destination, a->ndim))
    return NULL;
  int p[a->ndim], k = 0;
  for (int i = 0; i < a->ndim; i++)
    if (i != source) p[k++] = i;
  memmove(p + destination + 1, p + destination, sizeof(int) * (size_t)(a->ndim - 1 - destination));
  p[destination] = source;
  return transpose_impl("moveaxis", a, p);
}

/* ---- squeeze, expand_dims, flatten, unflatten, atleast ---- */

/* a without the (extent 1) axes marked in drop, rule LC_RS_SQUEEZE. */
static struct lc_node *squeeze_mask(struct lc_node *a, const bool *drop) {
  int nd = a->ndim, shape[nd > 0 ? nd : 1], p[2 + nd], k = 0;
  p[0] = LC_RS_SQUEEZE;
  p[1] = nd;
  for (int i = 0; i < nd; i++) {
    p[2 + i] = drop[i];
    if (!drop[i]) shape[k++] = a->shape[i];
  }
  return lc_reshape_rule(a, k, shape, p, 2 + nd, false);
}

struct lc_node *lc_squeeze(struct lc_node *a, int naxes, const int *axes) {
  int nd = a->ndim;
  bool drop[nd > 0 ? nd : 1];
  memset(drop, 0, sizeof drop);
  for (int i = 0; i < naxes; i++) {
    int ax = axes[i];
    if (norm_axis("squeeze", "axis", &ax, nd)) return NULL;
    if (a->shape[ax] != 1) {
      lc_error("squeeze: cannot squeeze axis %d with size %d which is not equal to 1", axes[i],
               a->shape[ax]);
      return NULL;
    }
    if (drop[ax]) {
      lc_error("squeeze: received duplicate axis %d", axes[i]);
      return NULL;
    }
    drop[ax] = true;
  }
  return squeeze_mask(a, drop);
}

struct lc_node *lc_squeeze_all(struct lc_node *a) {
  bool drop[a->ndim > 0 ? a->ndim : 1];
  for (int i = 0; i < a->ndim; i++) drop[i] = a->shape[i] == 1;
  return squeeze_mask(a, drop);
}

struct lc_node *lc_expand_dims(struct lc_node *a, int naxes, const int *axes) {
  if (naxes < 0 || naxes > INT_MAX - a->ndim) {
    lc_error("expand_dims: invalid number of axes %d", naxes);
    return NULL;
  }
  int nd = a->ndim + naxes;
  bool ins[nd > 0 ? nd : 1];
  memset(ins, 0, sizeof ins);
  for (int i = 0; i < naxes; i++) {
    int ax = axes[i];
    if (norm_axis("expand_dims", "axis", &ax, nd)) return NULL;
    if (ins[ax]) {
      lc_error("expand_dims: received duplicate axis %d", axes[i]);
      return NULL;
    }
    ins[ax] = true;
  }
  int shape[nd > 0 ? nd : 1], p[2 + nd];
  p[0] = LC_RS_EXPAND;
  p[1] = nd;
  for (int i = 0, k = 0; i < nd; i++) {
    p[2 + i] = ins[i];
    shape[i] = ins[i] ? 1 : a->shape[k++];
  }
  return lc_reshape_rule(a, nd, shape, p, 2 + nd, false);
}

struct lc_node *lc_flatten(struct lc_node *a, int start_axis, int end_axis) {
  int nd = a->ndim;
  if (nd == 0) {
    int one = 1;
    return lc_reshape(a, 1, &one);
  }
  int s = start_axis < 0 ? start_axis + nd : start_axis;
  int e = end_axis < 0 ? end_axis + nd : end_axis;
  s = s < 0 ? 0 : s;
  e = e > nd - 1 ? nd - 1 : e;
  if (s >= nd) {
    lc_error("flatten: invalid start_axis %d for an array with %d dimensions", start_axis, nd);
    return NULL;
  }
  if (e < 0) {
    lc_error("flatten: invalid end_axis %d for an array with %d dimensions", end_axis, nd);
    return NULL;
  }
  if (e < s) {
    lc_error("flatten: start_axis must be less than or equal to end_axis");
    return NULL;
  }
  int shape[nd], k = 0;
  for (int i = 0; i < s; i++) shape[k++] = a->shape[i];
  int64_t m = 1;
  for (int i = s; i <= e; i++) m *= a->shape[i];
  if (m > INT_MAX) {
    lc_error("flatten: flattened dimension %lld is too large", (long long)m);
    return NULL;
  }
  shape[k++] = (int)m;
  for (int i = e + 1; i < nd; i++) shape[k++] = a->shape[i];
  const int p[3] = {LC_RS_FLATTEN, s, e};
  return lc_reshape_rule(a, k, shape, p, 3, false);
}

struct lc_node *lc_unflatten(struct lc_node *a, int axis, int nshape, const int *shape) {
  if (nshape <= 0) {
    lc_error("unflatten: shape to unflatten to cannot be empty");
    return NULL;
  }
  if (norm_axis("unflatten", "axis", &axis, a->ndim)) return NULL;
  if (nshape > INT_MAX - a->ndim) {
    lc_error("unflatten: shape has too many dimensions");
    return NULL;
  }
  int sub[nshape];
  if (infer_shape("unflatten", a->shape[axis], nshape, shape, sub)) return NULL;
  int nd = a->ndim - 1 + nshape, out[nd], k = 0;
  for (int i = 0; i < axis; i++) out[k++] = a->shape[i];
  for (int i = 0; i < nshape; i++) out[k++] = sub[i];
  for (int i = axis + 1; i < a->ndim; i++) out[k++] = a->shape[i];
  int p[3 + nshape];
  p[0] = LC_RS_UNFLATTEN;
  p[1] = axis;
  p[2] = nshape;
  memcpy(p + 3, shape, sizeof(int) * (size_t)nshape);
  return lc_reshape_rule(a, nd, out, p, 3 + nshape, true);
}

struct lc_node *lc_atleast(struct lc_node *a, int nd) {
  if (a->ndim >= nd) return lc_node_retain(a);
  int shape[3] = {1, 1, 1};
  if (a->ndim == 1) shape[1] = a->shape[0]; /* (1, n) or (1, n, 1) */
  if (a->ndim == 2) {
    shape[0] = a->shape[0];
    shape[1] = a->shape[1];
  }
  return lc_reshape(a, nd, shape);
}

/* ---- slice ---- */

/* params: start[ndim] then step[ndim], normalised (start inside the axis
 * when the output axis is non-empty). */
static int slice_eval(struct lc_node *n) {
  const struct lc_node *in = n->in[0];
  const int *start = n->params, *step = start + n->ndim;
  int64_t st[n->ndim > 0 ? n->ndim : 1], off = in->offset;
  for (int i = 0; i < n->ndim; i++) {
    st[i] = in->strides[i] * step[i];
    if (n->size > 0) off += (int64_t)start[i] * in->strides[i];
  }
  lc_node_set_view(n, in, st, off);
  return 0;
}

/* Rules: the cotangent is written into zeros at the slice (an empty
 * slice gives no cotangent); vmap slices the batch axis whole. */
static int slice_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                     struct lc_node **out) {
  (void)argnums, (void)nargs;
  if (n->size == 0) return 0;
  struct lc_node *z = lc_zeros_like(n->in[0]);
  if (!z) return 1;
  out[0] = lc_slice_update_norm(z, cot[0], n->params, LC_SCATTER_NONE);
  lc_node_release(z);
  return !out[0];
}

static int slice_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                      struct lc_node **out, int *out_ax) {
  const int *start = n->params, *step = start + n->ndim;
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  if (!x) return 1;
  int nd = n->ndim + 1, p[2 * nd], sh[nd];
  p[0] = 0;
  p[nd] = 1;
  sh[0] = x->shape[0];
  for (int i = 0; i < n->ndim; i++) {
    p[1 + i] = start[i];
    p[nd + 1 + i] = step[i];
    sh[1 + i] = n->shape[i];
  }
  out[0] = lc_slice_norm(x, p, sh);
  lc_node_release(x);
  *out_ax = 0;
  return !out[0];
}

const struct lc_prim lc_prim_slice = {.name = "slice",
                                      .flags = LC_PF_VIEW,
                                      .eval_cpu = slice_eval,
                                      .vjp = slice_vjp,
                                      .jvp = lc_view_jvp,
                                      .vmap = slice_vmap};

struct lc_node *lc_slice_norm(struct lc_node *a, const int *start_step, const int *shape) {
  return lc_node_new_op(LC_OP_SLICE, a->dtype, a->ndim, shape, 1, &a, start_step,
                        sizeof(int) * 2 * (size_t)a->ndim);
}

struct lc_node *lc_slice(struct lc_node *a, const int *start, const int *stop, const int *step) {
  int nd = a->ndim;
  int p[2 * nd + 1], shape[nd > 0 ? nd : 1];
  bool same = true;
  for (int i = 0; i < nd; i++) {
    int64_t n = a->shape[i], s = start[i], e = stop[i], k = step ? step[i] : 1;
    if (k == 0) {
      lc_error("slice: step along axis %d cannot be 0", i);
      return NULL;
    }
    s = s < 0 ? s + n : s;
    e = e < 0 ? e + n : e;
    int64_t len;
    if (k < 0) {
      s = s < n - 1 ? s : n - 1;
      e = e > -1 ? e : -1;
      e = e > s ? s : e;
      len = (s - e + (-k) - 1) / (-k);
    } else {
      s = s < 0 ? 0 : (s > n ? n : s);
      e = e < 0 ? 0 : (e > n ? n : e);
      e = e < s ? s : e;
      len = (e - s + k - 1) / k;
    }
    if (len <= 0) {
      len = 0;
      s = 0;
    }
    if (len == 1) k = 1;
    p[i] = (int)s;
    p[nd + i] = (int)k;
    shape[i] = (int)len;
    same = same && len == n && k == 1;
  }
  if (same) return lc_node_retain(a);
  return lc_node_new_op(LC_OP_SLICE, a->dtype, nd, shape, 1, &a, p, sizeof(int) * 2 * (size_t)nd);
}

struct lc_node *lc_slice_axis(struct lc_node *a, int axis, int start, int stop) {
  if (norm_axis("slice", "axis", &axis, a->ndim)) return NULL;
  int s[a->ndim], e[a->ndim];
  for (int i = 0; i < a->ndim; i++) {
    s[i] = 0;
    e[i] = a->shape[i];
  }
  s[axis] = start;
  e[axis] = stop;
  return lc_slice(a, s, e, NULL);
}

int lc_split_sections(struct lc_node *a, int nidx, const int *idx, int axis, struct lc_node **out) {
  if (norm_axis("split", "axis", &axis, a->ndim)) return 1;
  int prev = 0;
  for (int i = 0; i <= nidx; i++) {
    int stop = i < nidx ? idx[i] : a->shape[axis];
    out[i] = lc_slice_axis(a, axis, prev, stop);
    if (!out[i]) {
      while (i--) lc_node_release(out[i]);
      return 1;
    }
    prev = stop;
  }
  return 0;
}

/* ---- as_strided ---- */

struct strided_params {
  int64_t offset;
  int64_t strides[]; /* ndim entries */
};

static int as_strided_eval(struct lc_node *n) {
  struct lc_node *in = n->in[0];
  const struct strided_params *p = n->params;
  if (in->flags & LC_NF_CONTIG) { /* inputs are read-only: no recomputing */
    lc_node_set_view(n, in, p->strides, in->offset + p->offset);
    return 0;
  }
  struct lc_node *tmp = lc_node_alloc(in->dtype, in->ndim, in->shape);
  if (!tmp || lc_node_alloc_data(tmp)) {
    lc_node_release(tmp);
    return 1;
  }
  if (lc_node_copy_out(in, tmp->buf->data)) {
    lc_node_release(tmp);
    return 1;
  }
  lc_node_set_view(n, tmp, p->strides, p->offset);
  lc_node_release(tmp);
  return 0;
}

/* vjp: the view may repeat elements, so the cotangent is scatter-added
 * into the flat input at the element each output position reads (found by
 * taking the same view of 0..size-1). */
static int as_strided_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                          int nargs, struct lc_node **out) {
  (void)argnums, (void)nargs;
  struct lc_node *a = n->in[0];
  if (n->size == 0 || a->size == 0) return 0;
  if (n->size > INT_MAX) return lc_error("as_strided: vjp of a view this large is not supported");
  int flat = (int)a->size, cnt = (int)n->size, col[2] = {cnt, 1}, zero = 0;
  struct lc_node *iota = lc_arange(0, (double)flat, 1, MLX_INT32);
  struct lc_node *shaped = iota ? lc_reshape(iota, a->ndim, a->shape) : NULL;
  struct lc_node *view = shaped ? lc_node_new_op(LC_OP_AS_STRIDED, MLX_INT32, n->ndim, n->shape, 1,
                                                 &shaped, n->params, n->params_size)
                                : NULL;
  struct lc_node *idx = view ? lc_reshape(view, 1, &cnt) : NULL;
  struct lc_node *upd = idx ? lc_reshape(cot[0], 2, col) : NULL;
  struct lc_node *z = upd ? lc_zeros(1, &flat, a->dtype) : NULL;
  struct lc_node *g = z ? lc_scatter(z, 1, &idx, upd, &zero, LC_SCATTER_ADD) : NULL;
  out[0] = g ? lc_reshape(g, a->ndim, a->shape) : NULL;
  lc_node_release(iota);
  lc_node_release(shaped);
  lc_node_release(view);
  lc_node_release(idx);
  lc_node_release(upd);
  lc_node_release(z);
  lc_node_release(g);
  return !out[0];
}

/* vmap: each example is a view of its own row-major elements, so the
 * batch axis becomes a leading axis of stride a.size. */
static int as_strided_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                           struct lc_node **out, int *out_ax) {
  const struct strided_params *p = n->params;
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  if (!x) return 1;
  int nd = n->ndim + 1, sh[nd];
  int64_t st[nd];
  sh[0] = x->shape[0];
  st[0] = n->in[0]->size;
  for (int i = 0; i < n->ndim; i++) {
    sh[1 + i] = n->shape[i];
    st[1 + i] = p->strides[i];
  }
  out[0] = lc_as_strided(x, nd, sh, st, p->offset);
  lc_node_release(x);
  *out_ax = 0;
  return !out[0];
}

const struct lc_prim lc_prim_as_strided = {.name = "as_strided",
                                           .flags = LC_PF_VIEW,
                                           .eval_cpu = as_strided_eval,
                                           .vjp = as_strided_vjp,
                                           .jvp = lc_view_jvp,
                                           .vmap = as_strided_vmap};

struct lc_node *lc_as_strided(struct lc_node *a, int ndim, const int *shape, const int64_t *strides,
                              int64_t offset) {
  if (ndim < 0) {
    lc_error("as_strided: negative number of dimensions %d", ndim);
    return NULL;
  }
  if (lc_shape_too_large(ndim, shape)) { /* also bounds the size product below */
    lc_error("as_strided: the shape spans more than 2^%d elements", LC_MAX_ELEMS_LOG2);
    return NULL;
  }
  /* The reachable element range must lie inside a's elements. */
  __int128 lo = offset, hi = offset;
  int64_t size = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0) {
      lc_error("as_strided: negative dimensions not allowed");
      return NULL;
    }
    size *= shape[i];
    if (shape[i] == 0) break;
    __int128 span = (__int128)(shape[i] - 1) * strides[i];
    if (span < 0)
      lo += span;
    else
      hi += span;
  }
  if (size > 0 && (lo < 0 || hi >= a->size)) {
    lc_error("as_strided: the view reaches element %lld, outside the %lld elements of the input",
             (long long)(lo < 0 ? lo : hi), (long long)a->size);
    return NULL;
  }
  size_t psz = sizeof(struct strided_params) + sizeof(int64_t) * (size_t)ndim;
  struct strided_params *p = calloc(1, psz);
  if (!p) {
    lc_error("out of memory");
    return NULL;
  }
  p->offset = size > 0 ? offset : 0;
  /* a dimension of extent <= 1 is never stepped, nor any of an empty view:
   * such strides are irrelevant, and 0 keeps offset arithmetic downstream
   * (unchecked above) far from overflow */
  for (int i = 0; i < ndim; i++) p->strides[i] = size > 0 && shape[i] > 1 ? strides[i] : 0;
  struct lc_node *r = lc_node_new_op(LC_OP_AS_STRIDED, a->dtype, ndim, shape, 1, &a, p, psz);
  free(p);
  return r;
}

/* ---- diagonal ---- */

struct diagonal_params {
  int offset, axis1, axis2;
};

static int diagonal_eval(struct lc_node *n) {
  const struct lc_node *in = n->in[0];
  const struct diagonal_params *p = n->params;
  int64_t st[n->ndim];
  int k = 0;
  for (int i = 0; i < in->ndim; i++)
    if (i != p->axis1 && i != p->axis2) st[k++] = in->strides[i];
  st[k] = in->strides[p->axis1] + in->strides[p->axis2];
  int64_t off = in->offset;
  if (n->size > 0)
    off += p->offset >= 0 ? (int64_t)p->offset * in->strides[p->axis2]
                          : -(int64_t)p->offset * in->strides[p->axis1];
  lc_node_set_view(n, in, st, off);
  return 0;
}

/* vjp: the cotangent embedded as the diagonal of zeros over the last two
 * axes, which then move back to axis1 and axis2. */
static int diagonal_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                        int nargs, struct lc_node **out) {
  (void)argnums, (void)nargs;
  const struct diagonal_params *p = n->params;
  const struct lc_node *a = n->in[0];
  struct lc_node *e = lc_embed_diagonal(cot[0], a->shape[p->axis1], a->shape[p->axis2], p->offset);
  if (!e) return 1;
  int perm[a->ndim], k = 0;
  for (int d = 0; d < a->ndim; d++)
    if (d != p->axis1 && d != p->axis2) perm[d] = k++;
  perm[p->axis1] = a->ndim - 2;
  perm[p->axis2] = a->ndim - 1;
  out[0] = lc_transpose(e, perm);
  lc_node_release(e);
  return !out[0];
}

static int diagonal_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                         struct lc_node **out, int *out_ax) {
  const struct diagonal_params *p = n->params;
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  if (!x) return 1;
  /* an empty diagonal stores offset 0: ask for one past the last column */
  int offset = n->shape[n->ndim - 1] == 0 ? n->in[0]->shape[p->axis2] : p->offset;
  out[0] = lc_diagonal(x, offset, p->axis1 + 1, p->axis2 + 1);
  lc_node_release(x);
  *out_ax = 0;
  return !out[0];
}

const struct lc_prim lc_prim_diagonal = {.name = "diagonal",
                                         .flags = LC_PF_VIEW,
                                         .eval_cpu = diagonal_eval,
                                         .vjp = diagonal_vjp,
                                         .jvp = lc_view_jvp,
                                         .vmap = diagonal_vmap};

struct lc_node *lc_diagonal(struct lc_node *a, int offset, int axis1, int axis2) {
  int nd = a->ndim;
  if (nd < 2) {
    lc_error("diagonal: array must have at least two dimensions, but got %d dimensions", nd);
    return NULL;
  }
  if (norm_axis("diagonal", "axis1", &axis1, nd) || norm_axis("diagonal", "axis2", &axis2, nd))
    return NULL;
  if (axis1 == axis2) {
    lc_error("diagonal: axis1 and axis2 cannot be the same axis");
    return NULL;
  }
  int64_t o1 = offset < 0 ? -(int64_t)offset : 0, o2 = offset > 0 ? offset : 0;
  int64_t len =
      a->shape[axis1] - o1 < a->shape[axis2] - o2 ? a->shape[axis1] - o1 : a->shape[axis2] - o2;
  if (len < 0) len = 0;
  int shape[nd - 1], k = 0;
  for (int i = 0; i < nd; i++)
    if (i != axis1 && i != axis2) shape[k++] = a->shape[i];
  shape[k] = (int)len;
  struct diagonal_params p = {len > 0 ? offset : 0, axis1, axis2};
  return lc_node_new_op(LC_OP_DIAGONAL, a->dtype, nd - 1, shape, 1, &a, &p, sizeof p);
}

/* ---- helpers for transform rules (shape_internal.h) ---- */

struct lc_node *lc_embed_diagonal(struct lc_node *v, int n1, int n2, int offset) {
  int lead = v->ndim - 1, len = v->shape[lead];
  int64_t cells = (int64_t)n1 * n2;
  if (cells > INT_MAX) {
    lc_error("diagonal: a %d x %d matrix is too large to differentiate", n1, n2);
    return NULL;
  }
  int sh[lead + 2];
  for (int d = 0; d < lead; d++) sh[d] = v->shape[d];
  sh[lead] = n1;
  sh[lead + 1] = n2;
  if (v->size == 0) return lc_zeros(lead + 2, sh, v->dtype);
  /* in the flattened matrix, the diagonal is a strided run */
  int r0 = offset < 0 ? -offset : 0, c0 = offset > 0 ? offset : 0;
  int start[lead + 1], stop[lead + 1], step[lead + 1], flat[lead + 1];
  for (int d = 0; d < lead; d++) {
    start[d] = 0;
    stop[d] = flat[d] = v->shape[d];
    step[d] = 1;
  }
  flat[lead] = (int)cells;
  start[lead] = r0 * n2 + c0;
  step[lead] = n2 + 1;
  stop[lead] = start[lead] + (len - 1) * step[lead] + 1;
  struct lc_node *z = lc_zeros(lead + 1, flat, v->dtype);
  struct lc_node *u = z ? lc_slice_update(z, v, start, stop, step, LC_SCATTER_NONE) : NULL;
  struct lc_node *r = u ? lc_reshape(u, lead + 2, sh) : NULL;
  lc_node_release(z);
  lc_node_release(u);
  return r;
}

struct lc_node *lc_batch_iota(int b, int ndim) {
  int sh[ndim > 0 ? ndim : 1];
  for (int d = 0; d < ndim; d++) sh[d] = d ? 1 : b;
  struct lc_node *r = lc_arange(0, b, 1, MLX_INT32);
  struct lc_node *s = r ? lc_reshape(r, ndim, sh) : NULL;
  lc_node_release(r);
  return s;
}
