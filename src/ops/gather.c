/* Gather primitives: GATHER (MLX gather: index arrays select slice starts),
 * GATHER_AXIS (take_along_axis) and DYNAMIC_SLICE (a view at offsets read
 * from an array). Out-of-range indices clamp into range (index.h). */
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/iter.h"
#include "core/parallel.h"
#include "ops/binary.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/index_internal.h"
#include "ops/prim.h"
#include "ops/shape.h"
#include "ops/shape_internal.h"
#include "transforms/transforms.h"

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ---- GATHER ----
 * params (ints): nax, axes[nax], slice[a->ndim]. Inputs: a, idx[0..nax),
 * all idx of shape I (the leading axes of the output). */

struct gather_ctx {
  const struct lc_node *n, *a;
  const int *axes, *slice;
  int nax, ind; /* index arrays, their ndim */
  int64_t slice_n;
  bool slice_contig;
  int64_t slice_dst_strides[64];
  atomic_int failed;
};

static void gather_chunk(void *arg, int64_t lo, int64_t hi) {
  struct gather_ctx *c = arg;
  const struct lc_node *n = c->n, *a = c->a;
  int ind = c->ind;
  int pos[ind > 0 ? ind : 1];
  int64_t r = lo;
  for (int d = ind - 1; d >= 0; d--) {
    pos[d] = (int)(r % n->shape[d]);
    r /= n->shape[d];
  }
  size_t isz = lc_dtype_size(n->dtype);
  char *out = n->buf->data;
  const char *src = a->buf->data;
  for (int64_t p = lo; p < hi; p++) {
    int64_t off = a->offset;
    for (int k = 0; k < c->nax; k++) {
      const struct lc_node *ix = n->in[1 + k];
      int64_t io = ix->offset;
      for (int d = 0; d < ind; d++) io += pos[d] * ix->strides[d];
      int ax = c->axes[k];
      int64_t ext = a->shape[ax];
      int64_t v = lc_idx_wrap(lc_idx_load(ix->buf->data, ix->dtype, io), ext);
      off += clamp64(v, 0, ext - c->slice[ax]) * a->strides[ax];
    }
    char *dst = out + p * c->slice_n * (int64_t)isz;
    if (c->slice_contig)
      memcpy(dst, src + off * (int64_t)isz, (size_t)c->slice_n * isz);
    else if (lc_copy_strided(a->ndim, c->slice, isz, dst, c->slice_dst_strides, 0, src, a->strides,
                             off))
      atomic_store(&c->failed, 1);
    for (int d = ind - 1; d >= 0; d--) {
      if (++pos[d] < n->shape[d]) break;
      pos[d] = 0;
    }
  }
}

static int gather_eval(struct lc_node *n) {
  const int *p = n->params;
  struct lc_node *a = n->in[0];
  struct gather_ctx c = {.n = n, .a = a, .nax = p[0], .axes = p + 1, .slice = p + 1 + p[0]};
  c.ind = n->ndim - a->ndim;
  if (lc_node_alloc_data(n)) return 1;
  if (n->size == 0) return 0;
  c.slice_n = lc_shape_size(a->ndim, c.slice);
  lc_shape_strides(a->ndim, c.slice, c.slice_dst_strides);
  c.slice_contig = true;
  int64_t expect = 1;
  for (int d = a->ndim - 1; d >= 0; d--) {
    if (c.slice[d] == 1) continue;
    if (a->strides[d] != expect) c.slice_contig = false;
    expect *= c.slice[d];
  }
  atomic_init(&c.failed, 0);
  int64_t count = n->size / c.slice_n;
  lc_parallel_for(count, LC_PARALLEL_MIN / c.slice_n + 1, gather_chunk, &c);
  return atomic_load(&c.failed) ? lc_error("gather: out of memory") : 0;
}

/* ---- gather rules ----
 * Index inputs are not differentiable: their cotangents and tangents are
 * zero (NULL). */

/* vjp: the cotangent scatter-added into zeros at the gathered slices. */
static int gather_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                      int nargs, struct lc_node **out) {
  const int *p = n->params;
  if (argnums[0] != 0) return 0;
  (void)nargs;
  struct lc_node *z = lc_zeros_like(n->in[0]);
  if (!z) return 1;
  out[0] = lc_scatter(z, p[0], n->in + 1, cot[0], p + 1, LC_SCATTER_ADD);
  lc_node_release(z);
  return !out[0];
}

static int gather_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  const int *p = n->params;
  if (!tan[0]) return 0;
  return !(out[0] = lc_gather(tan[0], p[0], n->in + 1, p + 1, p + 1 + p[0]));
}

/* vmap. Source batched alone: the batch axis is one more whole slice axis
 * (the output has it after the index axes). Indices batched: they get the
 * batch axis in front (extent 1 for unbatched ones, which broadcast); a
 * batched source is then indexed along its batch axis by 0..B-1 too, and
 * that slice axis of extent 1 is squeezed. */
static int gather_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                       struct lc_node **out, int *out_ax) {
  const int *p = n->params, nax = p[0], *axes = p + 1, *slice = p + 1 + nax;
  int nd = n->in[0]->ndim, ind = n->ndim - nd, b = lc_rule_batch_size(n->nin, in, ax);
  bool src_b = ax[0] != -1, idx_b = false;
  for (int k = 0; k < nax; k++) idx_b = idx_b || ax[1 + k] != -1;
  int ax2[nax + 1], sl2[nd + 1];
  struct lc_node *idx2[nax + 1];
  int made = 0, rc = 1;
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  if (!x) return 1;
  for (int k = 0; k < nax; k++) ax2[k] = src_b ? axes[k] + 1 : axes[k];
  if (!idx_b) {
    sl2[0] = b;
    memcpy(sl2 + 1, slice, sizeof(int) * (size_t)nd);
    out[0] = lc_gather(x, nax, in + 1, ax2, sl2);
    *out_ax = ind;
    rc = !out[0];
    goto done;
  }
  for (; made < nax; made++)
    if (!(idx2[made] = lc_rule_batch_front(in[1 + made], ax[1 + made], true))) goto done;
  *out_ax = 0;
  if (!src_b) {
    rc = !(out[0] = lc_gather(x, nax, idx2, axes, slice));
    goto done;
  }
  if (!(idx2[made++] = lc_batch_iota(b, ind + 1))) goto done;
  ax2[nax] = 0;
  sl2[0] = 1;
  memcpy(sl2 + 1, slice, sizeof(int) * (size_t)nd);
  struct lc_node *g = lc_gather(x, nax + 1, idx2, ax2, sl2);
  int sq = 1 + ind;
  out[0] = g ? lc_squeeze(g, 1, &sq) : NULL;
  lc_node_release(g);
  rc = !out[0];
done:
  lc_rule_release(idx2, made);
  lc_node_release(x);
  return rc;
}

/* Shapeless compile: the indices' shape, then the slice sizes. A slice
 * size along an axis that is not indexed may mean "the whole axis" (take)
 * or a fixed extent: only when it equals the new extent do both agree, so
 * other extents of such axes are traced again. */
static int gather_output_shape(const void *params, int nin, struct lc_node *const *in, int ndim,
                               int *shape) {
  const int *p = params, *axes = p + 1, *slice = p + 1 + p[0];
  const struct lc_node *a = in[0];
  int nidx = p[0], ind = nidx ? in[1]->ndim : 0;
  if (nin != 1 + nidx || ndim != ind + a->ndim) return 1;
  bool indexed[a->ndim > 0 ? a->ndim : 1];
  memset(indexed, 0, sizeof indexed);
  for (int k = 0; k < nidx; k++) {
    if (!lc_shape_equal(in[1 + k]->ndim, in[1 + k]->shape, ind, in[1]->shape)) return 1;
    indexed[axes[k]] = true;
  }
  for (int d = 0; d < a->ndim; d++)
    if (indexed[d] ? slice[d] > a->shape[d] : slice[d] != a->shape[d]) return 1;
  if (a->size == 0) return 1;
  for (int d = 0; d < ind; d++) shape[d] = in[1]->shape[d];
  for (int d = 0; d < a->ndim; d++) shape[ind + d] = slice[d];
  return 0;
}

const struct lc_prim lc_prim_gather = {.name = "gather",
                                       .eval_cpu = gather_eval,
                                       .eval_cuda = LC_CUDA(lc_cuda_eval_gather),
                                       .vjp = gather_vjp,
                                       .jvp = gather_jvp,
                                       .vmap = gather_vmap,
                                       .output_shape = gather_output_shape};

struct lc_node *lc_gather(struct lc_node *a, int nidx, struct lc_node *const *idx, const int *axes,
                          const int *slice_sizes) {
  int nd = a->ndim;
  if (nd > 64) {
    lc_error("gather: arrays with more than 64 dimensions are not supported");
    return NULL;
  }
  if (nidx > nd) {
    lc_error("gather: too many index arrays: got %d index arrays for an input with %d dimensions",
             nidx, nd);
    return NULL;
  }
  int ax[nidx > 0 ? nidx : 1];
  bool seen[nd > 0 ? nd : 1];
  memset(seen, 0, sizeof seen);
  for (int k = 0; k < nidx; k++) {
    ax[k] = axes[k] < 0 ? axes[k] + nd : axes[k];
    if (ax[k] < 0 || ax[k] >= nd) {
      lc_error("gather: axis %d is out of bounds for an array with %d dimensions", axes[k], nd);
      return NULL;
    }
    if (seen[ax[k]]) {
      lc_error("gather: repeated axis %d", axes[k]);
      return NULL;
    }
    seen[ax[k]] = true;
  }
  int64_t slice_total = lc_shape_size(nd, slice_sizes);
  for (int d = 0; d < nd; d++)
    if (slice_sizes[d] < 0 || (a->size > 0 && slice_sizes[d] > a->shape[d])) {
      char s1[128], s2[128];
      lc_error("gather: slice sizes must be in [0, a.shape(i)]; got %s for an array with shape %s",
               lc_shape_str(nd, slice_sizes, s1, sizeof s1),
               lc_shape_str(nd, a->shape, s2, sizeof s2));
      return NULL;
    }
  struct lc_node *bi[nidx > 0 ? nidx : 1];
  if (lc_idx_broadcast("gather", nidx, idx, bi)) return NULL;
  int ind = nidx ? bi[0]->ndim : 0;
  int64_t isize = nidx ? bi[0]->size : 1;
  struct lc_node *r = NULL;
  if (a->size == 0 && isize != 0 && slice_total != 0) {
    lc_error(
        "gather: if the input is empty, either the indices must be empty or the total slice "
        "size must be 0");
    goto done;
  }
  if (ind + nd > 64) {
    lc_error("gather: result has too many dimensions");
    goto done;
  }
  {
    int shape[ind + nd > 0 ? ind + nd : 1];
    for (int d = 0; d < ind; d++) shape[d] = bi[0]->shape[d];
    for (int d = 0; d < nd; d++) shape[ind + d] = slice_sizes[d];
    int params[1 + nidx + nd];
    params[0] = nidx;
    for (int k = 0; k < nidx; k++) params[1 + k] = ax[k];
    for (int d = 0; d < nd; d++) params[1 + nidx + d] = slice_sizes[d];
    struct lc_node *in[1 + nidx];
    in[0] = a;
    for (int k = 0; k < nidx; k++) in[1 + k] = bi[k];
    r = lc_node_new_op(LC_OP_GATHER, a->dtype, ind + nd, shape, 1 + nidx, in, params,
                       sizeof params);
  }
done:
  for (int k = 0; k < nidx; k++) lc_node_release(bi[k]);
  return r;
}

struct lc_node *lc_take(struct lc_node *a, struct lc_node *idx, int axis) {
  int nd = a->ndim;
  int ax = axis < 0 ? axis + nd : axis;
  if (ax < 0 || ax >= nd) {
    lc_error("take: received invalid axis %d for an array with %d dimensions", axis, nd);
    return NULL;
  }
  if (a->shape[ax] == 0 && idx->size != 0) {
    lc_error("take: cannot do a non-empty take from an empty axis");
    return NULL;
  }
  int slice[nd];
  memcpy(slice, a->shape, sizeof slice);
  slice[ax] = 1;
  struct lc_node *g = lc_gather(a, 1, &idx, &ax, slice);
  if (!g) return NULL;
  /* g: idx.shape + slice; move the index axes to where axis was, drop it */
  int ind = idx->ndim, gnd = g->ndim, perm[gnd], k = 0;
  for (int d = 0; d < ax; d++) perm[k++] = ind + d;
  for (int d = 0; d < ind; d++) perm[k++] = d;
  for (int d = ax; d < nd; d++) perm[k++] = ind + d;
  struct lc_node *t = lc_transpose(g, perm);
  lc_node_release(g);
  if (!t) return NULL;
  int sq = ax + ind;
  struct lc_node *r = lc_squeeze(t, 1, &sq);
  lc_node_release(t);
  return r;
}

struct lc_node *lc_take_flat(struct lc_node *a, struct lc_node *idx) {
  struct lc_node *f = lc_flatten(a, 0, -1);
  if (!f) return NULL;
  struct lc_node *r = lc_take(f, idx, 0);
  lc_node_release(f);
  return r;
}

/* ---- GATHER_AXIS (take_along_axis) ----
 * params: axis. Inputs a and idx agree on every axis but `axis`. */

struct gaxis_ctx {
  const struct lc_node *n, *a, *ix;
  int axis;
};

static void gaxis_chunk(void *arg, int64_t lo, int64_t hi) {
  const struct gaxis_ctx *c = arg;
  const struct lc_node *n = c->n, *a = c->a, *ix = c->ix;
  int nd = n->ndim, ax = c->axis;
  int pos[nd];
  int64_t r = lo;
  for (int d = nd - 1; d >= 0; d--) {
    pos[d] = (int)(r % n->shape[d]);
    r /= n->shape[d];
  }
  size_t isz = lc_dtype_size(n->dtype);
  int64_t ext = a->shape[ax];
  for (int64_t p = lo; p < hi; p++) {
    int64_t so = a->offset, io = ix->offset;
    for (int d = 0; d < nd; d++) {
      io += pos[d] * ix->strides[d];
      if (d != ax) so += pos[d] * a->strides[d];
    }
    int64_t v = lc_idx_wrap(lc_idx_load(ix->buf->data, ix->dtype, io), ext);
    so += clamp64(v, 0, ext - 1) * a->strides[ax];
    memcpy((char *)n->buf->data + p * (int64_t)isz, (const char *)a->buf->data + so * (int64_t)isz,
           isz);
    for (int d = nd - 1; d >= 0; d--) {
      if (++pos[d] < n->shape[d]) break;
      pos[d] = 0;
    }
  }
}

static int gaxis_eval(struct lc_node *n) {
  if (lc_node_alloc_data(n)) return 1;
  if (n->size == 0) return 0;
  struct gaxis_ctx c = {n, n->in[0], n->in[1], *(const int *)n->params};
  lc_parallel_for(n->size, LC_PARALLEL_MIN, gaxis_chunk, &c);
  return 0;
}

/* ---- gather_axis rules (indices: zero cotangent and tangent) ---- */

static int gaxis_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                     struct lc_node **out) {
  (void)nargs;
  if (argnums[0] != 0) return 0;
  struct lc_node *z = lc_zeros_like(n->in[0]);
  if (!z) return 1;
  out[0] = lc_scatter_axis(z, n->in[1], cot[0], *(const int *)n->params, LC_SCATTER_ADD);
  lc_node_release(z);
  return !out[0];
}

static int gaxis_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  if (!tan[0]) return 0;
  struct lc_node *in[2] = {tan[0], n->in[1]};
  return !(out[0] = lc_rule_clone(n, in));
}

/* vmap: both inputs batched in front (extent 1 when unbatched: the two
 * broadcast against each other off the gathered axis). */
static int gaxis_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                      struct lc_node **out, int *out_ax) {
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], true);
  struct lc_node *i = x ? lc_rule_batch_front(in[1], ax[1], true) : NULL;
  out[0] = i ? lc_take_along_axis(x, i, *(const int *)n->params + 1) : NULL;
  lc_node_release(x);
  lc_node_release(i);
  *out_ax = 0;
  return !out[0];
}

/* Shapeless compile: the indices' shape; a and the indices must agree
 * off the axis (the builder broadcast them) and a's axis must not be empty. */
static int gaxis_output_shape(const void *params, int nin, struct lc_node *const *in, int ndim,
                              int *shape) {
  int ax = *(const int *)params;
  const struct lc_node *a = in[0], *ix = in[1];
  if (nin != 2 || a->ndim != ndim || ix->ndim != ndim || a->shape[ax] == 0) return 1;
  for (int d = 0; d < ndim; d++)
    if (d != ax && a->shape[d] != ix->shape[d]) return 1;
  memcpy(shape, ix->shape, sizeof(int) * (size_t)ndim);
  return 0;
}

const struct lc_prim lc_prim_gather_axis = {.name = "gather_axis",
                                            .eval_cpu = gaxis_eval,
                                            .eval_cuda = LC_CUDA(lc_cuda_eval_gather_axis),
                                            .vjp = gaxis_vjp,
                                            .jvp = gaxis_jvp,
                                            .vmap = gaxis_vmap,
                                            .output_shape = gaxis_output_shape};

/* Broadcasts x[0..n) to a common shape except along axis (every x has
 * ndim dims), into out (new references). */
int lc_broadcast_except_axis(const char *fn, int n, struct lc_node *const *x, int axis,
                             struct lc_node **out) {
  int nd = x[0]->ndim;
  int shape[nd > 0 ? nd : 1];
  for (int d = 0; d < nd; d++) {
    shape[d] = 1;
    if (d == axis) continue;
    for (int k = 0; k < n; k++) {
      int e = x[k]->shape[d];
      if (e != 1 && shape[d] != 1 && e != shape[d]) {
        char s1[128], s2[128];
        return lc_error("%s: shapes %s and %s cannot be broadcast", fn,
                        lc_shape_str(x[0]->ndim, x[0]->shape, s1, sizeof s1),
                        lc_shape_str(x[k]->ndim, x[k]->shape, s2, sizeof s2));
      }
      if (e != 1) shape[d] = e;
    }
  }
  for (int k = 0; k < n; k++) {
    shape[axis] = x[k]->shape[axis];
    if (!(out[k] = lc_broadcast_to(x[k], nd, shape))) {
      while (k--) lc_node_release(out[k]);
      return 1;
    }
  }
  return 0;
}

struct lc_node *lc_take_along_axis(struct lc_node *a, struct lc_node *idx, int axis) {
  int nd = a->ndim;
  int ax = axis < 0 ? axis + nd : axis;
  if (ax < 0 || ax >= nd) {
    lc_error("take_along_axis: axis %d is out of bounds for an array with %d dimensions", axis, nd);
    return NULL;
  }
  if (lc_idx_check("take_along_axis", idx)) return NULL;
  if (idx->ndim != nd) {
    lc_error("take_along_axis: indices of dimension %d do not match an array of dimension %d",
             idx->ndim, nd);
    return NULL;
  }
  struct lc_node *in[2] = {a, idx}, *b[2];
  if (lc_broadcast_except_axis("take_along_axis", 2, in, ax, b)) return NULL;
  struct lc_node *r = NULL;
  if (b[0]->shape[ax] == 0 && b[1]->size != 0)
    lc_error("take_along_axis: cannot take from an empty axis");
  else
    r = lc_node_new_op(LC_OP_GATHER_AXIS, a->dtype, nd, b[1]->shape, 2, b, &ax, sizeof ax);
  lc_node_release(b[0]);
  lc_node_release(b[1]);
  return r;
}

/* ---- DYNAMIC_SLICE ----
 * params (ints): naxes, axes[naxes]. Inputs a, start (naxes integers). */

/* Element offset of the slice of extent `ext` starting at start[k] along
 * axes[k], each start clamped so that the slice fits. */
int64_t lc_dynamic_offset(const struct lc_node *a, const struct lc_node *start, int naxes,
                          const int *axes, const int *ext, const int64_t *strides) {
  int64_t off = 0;
  for (int k = 0; k < naxes; k++) {
    int64_t io = start->offset + (start->ndim ? k * start->strides[0] : 0);
    int64_t v = lc_idx_load(start->buf->data, start->dtype, io);
    int ax = axes[k];
    off += clamp64(v, 0, (int64_t)a->shape[ax] - ext[ax]) * strides[ax];
  }
  return off;
}

static int dslice_eval(struct lc_node *n) {
  const int *p = n->params;
  const struct lc_node *a = n->in[0];
  /* a view: eval_node brings no input to the host, but the offset is read
   * there (the start may have been computed on a GPU) */
  if (n->size && lc_buffer_on_host(n->in[1]->buf)) return 1;
  int64_t off = n->size ? lc_dynamic_offset(a, n->in[1], p[0], p + 1, n->shape, a->strides) : 0;
  lc_node_set_view(n, a, a->strides, a->offset + off);
  return 0;
}

/* ---- dynamic_slice rules (start indices: zero cotangent and tangent) ---- */

static int dslice_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                      int nargs, struct lc_node **out) {
  const int *p = n->params;
  (void)nargs;
  if (argnums[0] != 0) return 0;
  struct lc_node *z = lc_zeros_like(n->in[0]);
  if (!z) return 1;
  out[0] = lc_slice_update_dynamic(z, cot[0], n->in[1], p[0], p + 1);
  lc_node_release(z);
  return !out[0];
}

static int dslice_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  if (!tan[0]) return 0;
  struct lc_node *in[2] = {tan[0], n->in[1]};
  return !(out[0] = lc_rule_clone(n, in));
}

/* Column k of batched start indices st ([B] or [B, naxes]), each made
 * non-negative: a gather then clamps it from above exactly as the dynamic
 * slice does (and never wraps it). */
struct lc_node *lc_batched_start(struct lc_node *st, int k) {
  int b = st->shape[0];
  struct lc_node *col = st->ndim == 1 ? lc_node_retain(st) : lc_slice_axis(st, 1, k, k + 1);
  struct lc_node *flat = col ? lc_reshape(col, 1, &b) : NULL;
  struct lc_node *zero = flat ? lc_node_new_scalar(st->dtype, 0) : NULL;
  struct lc_node *r = zero ? lc_maximum(flat, zero) : NULL;
  lc_node_release(col);
  lc_node_release(flat);
  lc_node_release(zero);
  return r;
}

/* vmap. Unbatched starts: the same dynamic slice one axis further in,
 * the batch axis taken whole. Batched starts: a gather whose index arrays
 * are the per-example starts (and 0..B-1 for a batched source). */
static int dslice_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                       struct lc_node **out, int *out_ax) {
  const int *p = n->params, naxes = p[0], *axes = p + 1;
  int b = lc_rule_batch_size(n->nin, in, ax), nd = n->ndim;
  bool src_b = ax[0] != -1;
  int ax2[naxes + 1], sz[nd + 1], made = 0, rc = 1;
  struct lc_node *idx[naxes + 1], *st = NULL;
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  if (!x) return 1;
  *out_ax = 0;
  if (ax[1] == -1) {
    for (int k = 0; k < naxes; k++) ax2[k] = axes[k] + 1;
    sz[0] = b;
    memcpy(sz + 1, n->shape, sizeof(int) * (size_t)nd);
    rc = !(out[0] = lc_slice_dynamic(x, in[1], naxes, ax2, sz));
    goto done;
  }
  if (!(st = lc_rule_batch_front(in[1], ax[1], false))) goto done;
  int sh = src_b ? 1 : 0;
  if (src_b) {
    if (!(idx[made++] = lc_batch_iota(b, 1))) goto done;
    ax2[0] = 0;
    sz[0] = 1;
  }
  for (int k = 0; k < naxes; k++) {
    if (!(idx[made++] = lc_batched_start(st, k))) goto done;
    ax2[sh + k] = axes[k] + sh;
  }
  memcpy(sz + sh, n->shape, sizeof(int) * (size_t)nd);
  struct lc_node *g = lc_gather(x, made, idx, ax2, sz);
  int one = 1;
  out[0] = g && src_b ? lc_squeeze(g, 1, &one) : g ? lc_node_retain(g) : NULL;
  lc_node_release(g);
  rc = !out[0];
done:
  lc_rule_release(idx, made);
  lc_node_release(st);
  lc_node_release(x);
  return rc;
}

const struct lc_prim lc_prim_dynamic_slice = {.name = "dynamic_slice",
                                              .flags = LC_PF_VIEW,
                                              .eval_cpu = dslice_eval,
                                              .eval_cuda = LC_CUDA(lc_cuda_eval_dynamic_slice),
                                              .vjp = dslice_vjp,
                                              .jvp = dslice_jvp,
                                              .vmap = dslice_vmap};

/* Validates dynamic-slice arguments, normalising axes into ax. */
int lc_dynamic_check(const char *fn, const struct lc_node *a, const struct lc_node *start,
                     int naxes, const int *axes, int *ax) {
  if (lc_idx_check(fn, start)) return 1;
  if (start->ndim > 1)
    return lc_error(
        "%s: the array of starting indices must be zero or one dimensional but has "
        "dimension %d",
        fn, start->ndim);
  if (start->size != naxes)
    return lc_error("%s: number of starting indices %lld does not match number of axes %d", fn,
                    (long long)start->size, naxes);
  bool seen[a->ndim > 0 ? a->ndim : 1];
  memset(seen, 0, sizeof seen);
  for (int k = 0; k < naxes; k++) {
    ax[k] = axes[k] < 0 ? axes[k] + a->ndim : axes[k];
    if (ax[k] < 0 || ax[k] >= a->ndim)
      return lc_error("%s: invalid axis %d for an array with %d dimensions", fn, axes[k], a->ndim);
    if (seen[ax[k]]) return lc_error("%s: repeated axis %d", fn, axes[k]);
    seen[ax[k]] = true;
  }
  return 0;
}

struct lc_node *lc_slice_dynamic(struct lc_node *a, struct lc_node *start, int naxes,
                                 const int *axes, const int *slice_size) {
  int ax[naxes > 0 ? naxes : 1];
  if (lc_dynamic_check("slice_dynamic", a, start, naxes, axes, ax)) return NULL;
  for (int d = 0; d < a->ndim; d++)
    if (slice_size[d] < 0 || slice_size[d] > a->shape[d]) {
      char s1[128], s2[128];
      lc_error("slice_dynamic: invalid slice size %s for an array with shape %s",
               lc_shape_str(a->ndim, slice_size, s1, sizeof s1),
               lc_shape_str(a->ndim, a->shape, s2, sizeof s2));
      return NULL;
    }
  int params[1 + naxes];
  params[0] = naxes;
  for (int k = 0; k < naxes; k++) params[1 + k] = ax[k];
  struct lc_node *in[2] = {a, start};
  return lc_node_new_op(LC_OP_DYNAMIC_SLICE, a->dtype, a->ndim, slice_size, 2, in, params,
                        sizeof params);
}
