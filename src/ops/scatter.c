/* Scatter primitives: SCATTER (MLX scatter with none/add/prod/max/min),
 * SCATTER_AXIS (put_along_axis, scatter_add_axis), SLICE_UPDATE and
 * DYNAMIC_SLICE_UPDATE. Each starts from a copy of input 0 (or takes over
 * its buffer) and combines updates into it. Updates at out-of-range indices
 * are dropped (index.h). Scatters run serially, so with duplicate indices
 * the last update wins for "none". */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ops/binary.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/index_internal.h"
#include "ops/prim.h"
#include "ops/scan.h"
#include "ops/shape.h"
#include "ops/shape_internal.h"
#include "ops/ternary.h"
#include "ops/unary.h"
#include "transforms/transforms.h"

static const char *mode_name(int mode) {
  switch (mode) {
  case LC_SCATTER_ADD: return "add";
  case LC_SCATTER_PROD: return "prod";
  case LC_SCATTER_MAX: return "max";
  case LC_SCATTER_MIN: return "min";
  default: return "none";
  }
}

/* x where cond, else zero (x's dtype). */
static struct lc_node *keep_where(struct lc_node *cond, struct lc_node *x) {
  struct lc_node *z = lc_node_new_scalar(x->dtype, 0);
  struct lc_node *r = z ? lc_where(cond, x, z) : NULL;
  lc_node_release(z);
  return r;
}

/* x where a == b, else zero: where a max/min combine kept b. */
static struct lc_node *keep_equal(struct lc_node *a, struct lc_node *b, struct lc_node *x) {
  struct lc_node *eq = lc_equal(a, b);
  struct lc_node *r = eq ? keep_where(eq, x) : NULL;
  lc_node_release(eq);
  return r;
}

/* a + b where either may be NULL (zero); takes both references. */
static struct lc_node *add_owned(struct lc_node *a, struct lc_node *b, bool *failed) {
  if (!a || !b) return a ? a : b;
  struct lc_node *r = lc_add(a, b);
  lc_node_release(a);
  lc_node_release(b);
  if (!r) *failed = true;
  return r;
}

/* t, or zeros like x when t is NULL. New reference. */
static struct lc_node *or_zeros(struct lc_node *t, struct lc_node *x) {
  return t ? lc_node_retain(t) : lc_zeros_like(x);
}

/* ---- SCATTER ----
 * params (ints): mode, nax, axes[nax]. Inputs: a, idx[0..nax) (shape I),
 * updates (shape I + slice, cast to a's dtype). */

static int scatter_eval(struct lc_node *n) {
  const int *p = n->params;
  int mode = p[0], nax = p[1];
  const int *axes = p + 2;
  const struct lc_node *u = n->in[1 + nax];
  if (lc_start_from_input(n)) return 1;
  int nd = n->ndim, ind = u->ndim - nd;
  if (u->size == 0) return 0;
  const int *slice = u->shape + ind;
  int64_t count = lc_shape_size(ind, u->shape);
  int pos[ind > 0 ? ind : 1];
  memset(pos, 0, sizeof pos);
  for (int64_t q = 0; q < count; q++) {
    int64_t off = 0, uo = u->offset;
    bool drop = false;
    for (int d = 0; d < ind; d++) uo += pos[d] * u->strides[d];
    for (int k = 0; k < nax; k++) {
      const struct lc_node *ix = n->in[1 + k];
      int64_t io = ix->offset;
      for (int d = 0; d < ind; d++) io += pos[d] * ix->strides[d];
      int ax = axes[k];
      int64_t ext = n->shape[ax];
      int64_t v = lc_idx_wrap(lc_idx_load(ix->buf->data, ix->dtype, io), ext);
      if (v < 0 || v > ext - slice[ax]) drop = true;
      off += v * n->strides[ax];
    }
    if (!drop && lc_combine_strided(mode, n->dtype, nd, slice, n->buf->data, n->strides, off,
                                    u->buf->data, u->strides + ind, uo, false))
      return 1;
    for (int d = ind - 1; d >= 0; d--) {
      if (++pos[d] < u->shape[d]) break;
      pos[d] = 0;
    }
  }
  return 0;
}

/* ---- scatter rules ----
 * As MLX: none/add/max/min differentiate (max/min send the cotangent to
 * whichever of the input and the updates the result equals), prod does
 * not; index inputs get zero. With duplicate indices, "none" credits every
 * duplicate update (MLX's convention), although one of them was kept. */

static int scatter_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                       int nargs, struct lc_node **out) {
  const int *p = n->params, mode = p[0], nax = p[1], *axes = p + 2;
  struct lc_node *a = n->in[0], *u = n->in[1 + nax], *const *idx = n->in + 1;
  int ind = u->ndim - a->ndim;
  if (mode == LC_SCATTER_PROD)
    return lc_error("scatter: the vjp of scatter_prod is not supported");
  for (int j = 0; j < nargs; j++) {
    int k = argnums[j];
    struct lc_node *r = NULL, *z = NULL, *g = NULL, *gr = NULL;
    if (k == 0) {
      if (mode == LC_SCATTER_NONE) /* overwritten positions get nothing */
        r = (z = lc_zeros_like(u)) ? lc_scatter(cot[0], nax, idx, z, axes, mode) : NULL;
      else if (mode == LC_SCATTER_ADD)
        r = lc_node_retain(cot[0]);
      else
        r = keep_equal(n, a, cot[0]);
    } else if (k == 1 + nax) {
      g = lc_gather(cot[0], nax, idx, axes, u->shape + ind);
      if (mode == LC_SCATTER_NONE || mode == LC_SCATTER_ADD)
        r = g ? lc_node_retain(g) : NULL;
      else if (g && (gr = lc_gather(n, nax, idx, axes, u->shape + ind)))
        r = keep_equal(gr, u, g);
    } else {
      continue; /* indices */
    }
    lc_node_release(z);
    lc_node_release(g);
    lc_node_release(gr);
    if (!(out[j] = r)) {
      lc_rule_release(out, j);
      return 1;
    }
  }
  return 0;
}

/* jvp: none/add are linear in (a, updates); max/min take the tangent of
 * whichever the result equals (the transpose of their vjp). */
static int scatter_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  const int *p = n->params, mode = p[0], nax = p[1], *axes = p + 2;
  struct lc_node *a = n->in[0], *u = n->in[1 + nax], *const *idx = n->in + 1;
  struct lc_node *ta = tan[0], *tu = tan[1 + nax];
  int ind = u->ndim - a->ndim;
  if (mode == LC_SCATTER_PROD)
    return lc_error("scatter: the jvp of scatter_prod is not supported");
  if (!ta && !tu) return 0;
  if (mode == LC_SCATTER_NONE || mode == LC_SCATTER_ADD) {
    struct lc_node *x = or_zeros(ta, a), *y = x ? or_zeros(tu, u) : NULL;
    out[0] = y ? lc_scatter(x, nax, idx, y, axes, mode) : NULL;
    lc_node_release(x);
    lc_node_release(y);
    return !out[0];
  }
  bool failed = false;
  struct lc_node *from_a = NULL, *from_u = NULL;
  if (ta && !(from_a = keep_equal(n, a, ta))) return 1;
  if (tu) {
    struct lc_node *gr = lc_gather(n, nax, idx, axes, u->shape + ind);
    struct lc_node *kept = gr ? keep_equal(gr, u, tu) : NULL;
    struct lc_node *z = kept ? lc_zeros_like(a) : NULL;
    from_u = z ? lc_scatter(z, nax, idx, kept, axes, LC_SCATTER_ADD) : NULL;
    lc_node_release(gr);
    lc_node_release(kept);
    lc_node_release(z);
    if (!from_u) {
      lc_node_release(from_a);
      return 1;
    }
  }
  out[0] = add_owned(from_a, from_u, &failed);
  return failed;
}

/* vmap. Only the source batched: the batch axis is one more whole slice
 * axis of the updates (after the index axes). Otherwise every example
 * gets its own copy of the source (broadcast when unbatched), the indices
 * a batch axis in front and an index 0..B-1 into the source's batch axis,
 * and the updates a slice axis of extent 1 for it. */
static int scatter_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                        struct lc_node **out, int *out_ax) {
  const int *p = n->params, mode = p[0], nax = p[1], *axes = p + 2;
  const struct lc_node *u0 = n->in[1 + nax];
  int ind = u0->ndim - n->ndim, b = lc_rule_batch_size(n->nin, in, ax);
  bool idx_b = false;
  for (int k = 0; k < nax; k++) idx_b = idx_b || ax[1 + k] != -1;
  int ax2[nax + 1], made = 0, rc = 1;
  struct lc_node *idx[nax + 1], *x = NULL, *uf = NULL, *u2 = NULL;
  for (int k = 0; k < nax; k++) ax2[k] = axes[k] + 1;
  *out_ax = 0;
  if (!idx_b && ax[1 + nax] == -1) {
    if (!(x = lc_rule_batch_front(in[0], ax[0], false))) goto done;
    int sh[u0->ndim + 1];
    for (int d = 0, e = 0; d <= u0->ndim; d++) sh[d] = d == ind ? b : u0->shape[e++];
    if (!(uf = lc_expand_dims(in[1 + nax], 1, &ind)) || !(u2 = lc_broadcast_to(uf, u0->ndim + 1, sh)))
      goto done;
    rc = !(out[0] = lc_scatter(x, nax, in + 1, u2, ax2, mode));
    goto done;
  }
  if (!(x = lc_rule_batch_front_full(in[0], ax[0], b))) goto done;
  for (; made < nax; made++)
    if (!(idx[made] = lc_rule_batch_front(in[1 + made], ax[1 + made], true))) goto done;
  if (!(idx[made++] = lc_batch_iota(b, ind + 1))) goto done;
  ax2[nax] = 0;
  int one_at = 1 + ind;
  if (!(uf = lc_rule_batch_front_full(in[1 + nax], ax[1 + nax], b)) ||
      !(u2 = lc_expand_dims(uf, 1, &one_at)))
    goto done;
  rc = !(out[0] = lc_scatter(x, nax + 1, idx, u2, ax2, mode));
done:
  lc_rule_release(idx, made);
  lc_node_release(x);
  lc_node_release(uf);
  lc_node_release(u2);
  return rc;
}

const struct lc_prim lc_prim_scatter = {.name = "scatter",
                                        .eval_cpu = scatter_eval,
                                        .eval_cuda = LC_CUDA(lc_cuda_eval_scatter),
                                        .vjp = scatter_vjp,
                                        .jvp = scatter_jvp,
                                        .vmap = scatter_vmap};

struct lc_node *lc_scatter(struct lc_node *a, int nidx, struct lc_node *const *idx,
                           struct lc_node *updates, const int *axes, enum lc_scatter_mode mode) {
  int nd = a->ndim;
  if (nidx > nd) {
    lc_error(
        "scatter: too many index arrays: got %d index arrays for an input with %d "
        "dimensions",
        nidx, nd);
    return NULL;
  }
  int params[2 + (nidx > 0 ? nidx : 1)];
  params[0] = mode;
  params[1] = nidx;
  bool seen[nd > 0 ? nd : 1];
  memset(seen, 0, sizeof seen);
  for (int k = 0; k < nidx; k++) {
    int ax = axes[k] < 0 ? axes[k] + nd : axes[k];
    if (ax < 0 || ax >= nd) {
      lc_error("scatter: axis %d is out of bounds for an array with %d dimensions", axes[k], nd);
      return NULL;
    }
    if (seen[ax]) {
      lc_error("scatter: repeated axis %d", axes[k]);
      return NULL;
    }
    seen[ax] = true;
    params[2 + k] = ax;
  }
  struct lc_node *bi[nidx > 0 ? nidx : 1];
  if (lc_idx_broadcast("scatter", nidx, idx, bi)) return NULL;
  int ind = nidx ? bi[0]->ndim : 0;
  struct lc_node *r = NULL, *u = NULL;
  char s1[128], s2[128];
  if (updates->ndim != nd + ind) {
    lc_error(
        "scatter: updates with %d dimensions do not match the sum of the array (%d) and "
        "indices (%d) dimensions",
        updates->ndim, nd, ind);
    goto done;
  }
  for (int d = 0; d < ind; d++)
    if (updates->shape[d] != bi[0]->shape[d]) {
      lc_error("scatter: update shape %s is not valid for the broadcast index shape %s",
               lc_shape_str(updates->ndim, updates->shape, s1, sizeof s1),
               lc_shape_str(ind, bi[0]->shape, s2, sizeof s2));
      goto done;
    }
  for (int d = 0; d < nd; d++)
    if (updates->shape[ind + d] > a->shape[d]) {
      lc_error("scatter: updates with shape %s are too large for an array with shape %s",
               lc_shape_str(updates->ndim, updates->shape, s1, sizeof s1),
               lc_shape_str(nd, a->shape, s2, sizeof s2));
      goto done;
    }
  if (!(u = lc_astype(updates, a->dtype))) goto done;
  {
    struct lc_node *in[2 + nidx];
    in[0] = a;
    for (int k = 0; k < nidx; k++) in[1 + k] = bi[k];
    in[1 + nidx] = u;
    r = lc_node_new_op(LC_OP_SCATTER, a->dtype, nd, a->shape, 2 + nidx, in, params,
                       sizeof(int) * (size_t)(2 + nidx));
  }
done:
  lc_node_release(u);
  for (int k = 0; k < nidx; k++) lc_node_release(bi[k]);
  return r;
}

/* ---- SCATTER_AXIS ----
 * params: {axis, mode}. Inputs a (the output's shape), idx and updates
 * (equal shapes, agreeing with a except along axis). */

static int scatter_axis_eval(struct lc_node *n) {
  const int *p = n->params;
  int ax = p[0], mode = p[1];
  const struct lc_node *ix = n->in[1], *u = n->in[2];
  if (lc_start_from_input(n)) return 1;
  int nd = n->ndim;
  if (ix->size == 0) return 0;
  int pos[nd];
  memset(pos, 0, sizeof pos);
  size_t isz = lc_dtype_size(n->dtype);
  int64_t ext = n->shape[ax];
  for (int64_t q = 0; q < ix->size; q++) {
    int64_t io = ix->offset, uo = u->offset, off = 0;
    for (int d = 0; d < nd; d++) {
      io += pos[d] * ix->strides[d];
      uo += pos[d] * u->strides[d];
      if (d != ax) off += pos[d] * n->strides[d];
    }
    int64_t v = lc_idx_wrap(lc_idx_load(ix->buf->data, ix->dtype, io), ext);
    if (v >= 0 && v < ext)
      lc_combine(mode, n->dtype, 1,
                 (char *)n->buf->data + (off + v * n->strides[ax]) * (int64_t)isz, 1,
                 (const char *)u->buf->data + uo * (int64_t)isz, 1);
    for (int d = nd - 1; d >= 0; d--) {
      if (++pos[d] < ix->shape[d]) break;
      pos[d] = 0;
    }
  }
  return 0;
}

/* ---- scatter_axis rules (put_along_axis and scatter_add_axis; the
 * indices get zero) ---- */

static int scatter_axis_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                            int nargs, struct lc_node **out) {
  const int *p = n->params, axis = p[0], mode = p[1];
  struct lc_node *idx = n->in[1], *u = n->in[2];
  if (mode != LC_SCATTER_NONE && mode != LC_SCATTER_ADD)
    return lc_error("scatter_axis: no vjp for mode %s", mode_name(mode));
  for (int j = 0; j < nargs; j++) {
    struct lc_node *r = NULL;
    if (argnums[j] == 0) {
      if (mode == LC_SCATTER_ADD) {
        r = lc_node_retain(cot[0]);
      } else {
        struct lc_node *z = lc_zeros_like(u);
        r = z ? lc_scatter_axis(cot[0], idx, z, axis, LC_SCATTER_NONE) : NULL;
        lc_node_release(z);
      }
    } else if (argnums[j] == 2) {
      r = lc_take_along_axis(cot[0], idx, axis);
    } else {
      continue;
    }
    if (!(out[j] = r)) {
      lc_rule_release(out, j);
      return 1;
    }
  }
  return 0;
}

/* jvp: linear in (a, updates) together. */
static int scatter_axis_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  int mode = ((const int *)n->params)[1];
  if (mode != LC_SCATTER_NONE && mode != LC_SCATTER_ADD)
    return lc_error("scatter_axis: no jvp for mode %s", mode_name(mode));
  if (!tan[0] && !tan[2]) return 0;
  struct lc_node *in[3] = {or_zeros(tan[0], n->in[0]), n->in[1], NULL};
  in[2] = in[0] ? or_zeros(tan[2], n->in[2]) : NULL;
  out[0] = in[2] ? lc_rule_clone(n, in) : NULL;
  lc_node_release(in[0]);
  lc_node_release(in[2]);
  return !out[0];
}

/* vmap: every input batched in front (extent 1 when unbatched, which the
 * builder broadcasts), the axis one further in. */
static int scatter_axis_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                             struct lc_node **out, int *out_ax) {
  const int *p = n->params;
  struct lc_node *v[3] = {NULL, NULL, NULL};
  int k = 0;
  for (; k < 3; k++)
    if (!(v[k] = lc_rule_batch_front(in[k], ax[k], true))) break;
  out[0] = k == 3 ? lc_scatter_axis(v[0], v[1], v[2], p[0] + 1, p[1]) : NULL;
  lc_rule_release(v, k);
  *out_ax = 0;
  return !out[0];
}

/* Shapeless compile: a's shape; indices and updates share a shape that
 * agrees with a off the axis (the builder broadcast them). */
static int scatter_axis_output_shape(const void *params, int nin, struct lc_node *const *in,
                                     int ndim, int *shape) {
  int ax = *(const int *)params;
  const struct lc_node *a = in[0], *ix = in[1], *u = in[2];
  if (nin != 3 || a->ndim != ndim || a->size == 0 ||
      !lc_shape_equal(ix->ndim, ix->shape, u->ndim, u->shape) || ix->ndim != ndim)
    return 1;
  for (int d = 0; d < ndim; d++)
    if (d != ax && a->shape[d] != ix->shape[d]) return 1;
  memcpy(shape, a->shape, sizeof(int) * (size_t)ndim);
  return 0;
}

/* Shapeless compile: a broadcast updates (or indices) input has the
 * other's shape. */
static int scatter_axis_input_shape(const void *params, int nin, struct lc_node *const *in,
                                    const char *bcast, int k, int ndim, int *shape) {
  (void)params;
  int j = 3 - k;
  if (nin != 3 || (k != 1 && k != 2) || bcast[j] || in[j]->ndim != ndim) return 1;
  memcpy(shape, in[j]->shape, sizeof(int) * (size_t)ndim);
  return 0;
}

const struct lc_prim lc_prim_scatter_axis = {.name = "scatter_axis",
                                             .eval_cpu = scatter_axis_eval,
                                             .eval_cuda = LC_CUDA(lc_cuda_eval_scatter_axis),
                                             .vjp = scatter_axis_vjp,
                                             .jvp = scatter_axis_jvp,
                                             .vmap = scatter_axis_vmap,
                                             .output_shape = scatter_axis_output_shape,
                                             .input_shape = scatter_axis_input_shape};

struct lc_node *lc_scatter_axis(struct lc_node *a, struct lc_node *idx, struct lc_node *values,
                                int axis, enum lc_scatter_mode mode) {
  const char *fn = mode == LC_SCATTER_NONE ? "put_along_axis" : "scatter_add_axis";
  int nd = a->ndim;
  int ax = axis;
  if (lc_axis_check(fn, &ax, nd)) return NULL;
  if (lc_idx_check(fn, idx)) return NULL;
  if (idx->ndim != nd) {
    lc_error("%s: indices of dimension %d do not match an array of dimension %d", fn, idx->ndim,
             nd);
    return NULL;
  }
  struct lc_node *u = lc_astype(values, a->dtype), *sq = NULL, *b2[2] = {NULL, NULL};
  struct lc_node *b3[3] = {NULL, NULL, NULL}, *r = NULL;
  if (!u) return NULL;
  if (u->ndim > nd) { /* squeeze leading singleton axes of the values */
    int k = u->ndim - nd, lead[k];
    for (int i = 0; i < k; i++) lead[i] = i;
    if (!(sq = lc_squeeze(u, k, lead))) goto done;
  } else {
    sq = lc_node_retain(u);
  }
  {
    int cap = sq->ndim > nd ? sq->ndim : nd, bnd;
    int bshape[cap];
    if (lc_broadcast_shapes(fn, idx->ndim, idx->shape, sq->ndim, sq->shape, &bnd, bshape))
      goto done;
    if (!(b2[0] = lc_broadcast_to(idx, bnd, bshape)) || !(b2[1] = lc_broadcast_to(sq, bnd, bshape)))
      goto done;
  }
  struct lc_node *in3[3] = {a, b2[0], b2[1]};
  if (lc_broadcast_except_axis(fn, 3, in3, ax, b3)) goto done;
  const int params[2] = {ax, mode};
  if (a->size == 0)
    r = lc_node_retain(b3[0]);
  else
    r = lc_node_new_op(LC_OP_SCATTER_AXIS, a->dtype, nd, b3[0]->shape, 3, b3, params,
                       sizeof params);
done:
  for (int i = 0; i < 3; i++) lc_node_release(b3[i]);
  lc_node_release(b2[0]);
  lc_node_release(b2[1]);
  lc_node_release(sq);
  lc_node_release(u);
  return r;
}

/* ---- SLICE_UPDATE ----
 * params (ints): mode, start[ndim], step[ndim]. Inputs src, update (the
 * slice's shape, src's dtype). */

static int slice_update_eval(struct lc_node *n) {
  const int *p = n->params;
  int mode = p[0], nd = n->ndim;
  const int *start = p + 1, *step = p + 1 + nd;
  const struct lc_node *u = n->in[1];
  if (lc_start_from_input(n)) return 1;
  if (u->size == 0) return 0;
  int64_t st[nd > 0 ? nd : 1], off = 0;
  for (int d = 0; d < nd; d++) {
    st[d] = n->strides[d] * step[d];
    off += (int64_t)start[d] * n->strides[d];
  }
  return lc_combine_strided(mode, n->dtype, nd, u->shape, n->buf->data, st, off, u->buf->data,
                            u->strides, u->offset, true);
}

/* ---- slice_update rules (every mode, as MLX's vjp; the jvps are their
 * transposes) ---- */

static int slice_update_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                            int nargs, struct lc_node **out) {
  const int *p = n->params, mode = p[0], *ss = p + 1;
  struct lc_node *src = n->in[0], *u = n->in[1];
  for (int j = 0; j < nargs; j++) {
    struct lc_node *r = NULL, *t = NULL, *t2 = NULL;
    if (argnums[j] == 0) {
      switch (mode) {
      case LC_SCATTER_NONE: /* the overwritten slice gets nothing */
        r = (t = lc_zeros_like(u)) ? lc_slice_update_norm(cot[0], t, ss, mode) : NULL;
        break;
      case LC_SCATTER_ADD: r = lc_node_retain(cot[0]); break;
      case LC_SCATTER_PROD: r = lc_slice_update_norm(cot[0], u, ss, mode); break;
      default: r = keep_equal(n, src, cot[0]);
      }
    } else {
      t = lc_slice_norm(cot[0], ss, u->shape);
      if (t && (mode == LC_SCATTER_NONE || mode == LC_SCATTER_ADD))
        r = lc_node_retain(t);
      else if (t && mode == LC_SCATTER_PROD)
        r = (t2 = lc_slice_norm(src, ss, u->shape)) ? lc_multiply(t, t2) : NULL;
      else if (t)
        r = (t2 = lc_slice_norm(n, ss, u->shape)) ? keep_equal(t2, u, t) : NULL;
    }
    lc_node_release(t);
    lc_node_release(t2);
    if (!(out[j] = r)) {
      lc_rule_release(out, j);
      return 1;
    }
  }
  return 0;
}

static int slice_update_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  const int *p = n->params, mode = p[0], *ss = p + 1;
  struct lc_node *src = n->in[0], *u = n->in[1], *ts = tan[0], *tu = tan[1];
  if (mode == LC_SCATTER_NONE || mode == LC_SCATTER_ADD) {
    struct lc_node *x = or_zeros(ts, src), *y = x ? or_zeros(tu, u) : NULL;
    out[0] = y ? lc_slice_update_norm(x, y, ss, mode) : NULL;
    lc_node_release(x);
    lc_node_release(y);
    return !out[0];
  }
  /* prod: ts * (u on the slice) + (src on the slice) * tu;
   * max/min: the tangent of whichever the result equals */
  bool failed = false;
  struct lc_node *from_s = NULL, *from_u = NULL;
  if (ts) {
    from_s = mode == LC_SCATTER_PROD ? lc_slice_update_norm(ts, u, ss, mode)
                                     : keep_equal(n, src, ts);
    if (!from_s) return 1;
  }
  if (tu) {
    struct lc_node *sl = lc_slice_norm(mode == LC_SCATTER_PROD ? src : n, ss, u->shape);
    struct lc_node *part = !sl ? NULL : mode == LC_SCATTER_PROD ? lc_multiply(sl, tu)
                                                                : keep_equal(sl, u, tu);
    struct lc_node *z = part ? lc_zeros_like(src) : NULL;
    from_u = z ? lc_slice_update_norm(z, part, ss, LC_SCATTER_ADD) : NULL;
    lc_node_release(sl);
    lc_node_release(part);
    lc_node_release(z);
    if (!from_u) {
      lc_node_release(from_s);
      return 1;
    }
  }
  out[0] = add_owned(from_s, from_u, &failed);
  return failed;
}

/* vmap: both batched in front (broadcast when unbatched), the batch axis
 * updated whole. */
static int slice_update_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                             struct lc_node **out, int *out_ax) {
  const int *p = n->params, *start = p + 1;
  int nd = n->ndim, b = lc_rule_batch_size(n->nin, in, ax), q[2 * (nd + 1)];
  q[0] = 0;
  q[nd + 1] = 1;
  for (int d = 0; d < nd; d++) {
    q[1 + d] = start[d];
    q[nd + 2 + d] = start[nd + d];
  }
  struct lc_node *x = lc_rule_batch_front_full(in[0], ax[0], b);
  struct lc_node *u = x ? lc_rule_batch_front_full(in[1], ax[1], b) : NULL;
  out[0] = u ? lc_slice_update_norm(x, u, q, p[0]) : NULL;
  lc_node_release(x);
  lc_node_release(u);
  *out_ax = 0;
  return !out[0];
}

const struct lc_prim lc_prim_slice_update = {.name = "slice_update",
                                             .eval_cpu = slice_update_eval,
                                             .eval_cuda = LC_CUDA(lc_cuda_eval_slice_update),
                                             .vjp = slice_update_vjp,
                                             .jvp = slice_update_jvp,
                                             .vmap = slice_update_vmap};

struct lc_node *lc_slice_update_norm(struct lc_node *src, struct lc_node *update,
                                     const int *start_step, int mode) {
  int nd = src->ndim, params[1 + 2 * nd];
  params[0] = mode;
  memcpy(params + 1, start_step, sizeof(int) * 2 * (size_t)nd);
  struct lc_node *u = lc_astype(update, src->dtype);
  if (!u) return NULL;
  struct lc_node *in[2] = {src, u};
  struct lc_node *r = lc_node_new_op(LC_OP_SLICE_UPDATE, src->dtype, nd, src->shape, 2, in, params,
                                     sizeof params);
  lc_node_release(u);
  return r;
}

struct lc_node *lc_slice_update(struct lc_node *src, struct lc_node *update, const int *start,
                                const int *stop, const int *step, enum lc_scatter_mode mode) {
  /* The slice's normalised start/step/shape come from a slice node. */
  struct lc_node *view = lc_slice(src, start, stop, step);
  if (!view) return NULL;
  int nd = src->ndim;
  int params[1 + 2 * nd];
  params[0] = mode;
  if (view != src) { /* a new SLICE node; otherwise the slice is all of src */
    memcpy(params + 1, view->params, sizeof(int) * 2 * (size_t)nd);
  } else { /* the whole array */
    for (int d = 0; d < nd; d++) {
      params[1 + d] = 0;
      params[1 + nd + d] = 1;
    }
  }
  struct lc_node *c = lc_astype(update, src->dtype);
  struct lc_node *u = c ? lc_broadcast_to(c, view->ndim, view->shape) : NULL;
  struct lc_node *r = NULL;
  if (u) {
    struct lc_node *in[2] = {src, u};
    r = lc_node_new_op(LC_OP_SLICE_UPDATE, src->dtype, nd, src->shape, 2, in, params,
                       sizeof params);
  }
  lc_node_release(u);
  lc_node_release(c);
  lc_node_release(view);
  return r;
}

/* ---- DYNAMIC_SLICE_UPDATE ----
 * params (ints): naxes, axes[naxes]. Inputs src, update (src's ndim and
 * dtype, each extent <= src's), start. */

static int dsu_eval(struct lc_node *n) {
  const int *p = n->params;
  const struct lc_node *u = n->in[1];
  if (lc_start_from_input(n)) return 1;
  if (u->size == 0) return 0;
  int64_t off = lc_dynamic_offset(n, n->in[2], p[0], p + 1, u->shape, n->strides);
  return lc_combine_strided(LC_SCATTER_NONE, n->dtype, n->ndim, u->shape, n->buf->data, n->strides,
                            off, u->buf->data, u->strides, u->offset, true);
}

/* ---- dynamic_slice_update rules (start indices get zero) ---- */

static int dsu_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                   struct lc_node **out) {
  const int *p = n->params;
  struct lc_node *u = n->in[1], *start = n->in[2];
  for (int j = 0; j < nargs; j++) {
    struct lc_node *r = NULL;
    if (argnums[j] == 0) { /* the overwritten block gets nothing */
      struct lc_node *z = lc_zeros_like(u);
      r = z ? lc_slice_update_dynamic(cot[0], z, start, p[0], p + 1) : NULL;
      lc_node_release(z);
    } else if (argnums[j] == 1) {
      r = lc_slice_dynamic(cot[0], start, p[0], p + 1, u->shape);
    } else {
      continue;
    }
    if (!(out[j] = r)) {
      lc_rule_release(out, j);
      return 1;
    }
  }
  return 0;
}

static int dsu_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  if (!tan[0] && !tan[1]) return 0;
  struct lc_node *in[3] = {or_zeros(tan[0], n->in[0]), NULL, n->in[2]};
  in[1] = in[0] ? or_zeros(tan[1], n->in[1]) : NULL;
  out[0] = in[1] ? lc_rule_clone(n, in) : NULL;
  lc_node_release(in[0]);
  lc_node_release(in[1]);
  return !out[0];
}

/* vmap. Unbatched starts: the same update one axis further in. Batched
 * starts: a scatter at (0..B-1, start clamped so the block fits), which
 * is where each example's dynamic update writes. */
static int dsu_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                    struct lc_node **out, int *out_ax) {
  const int *p = n->params, naxes = p[0], *axes = p + 1;
  const struct lc_node *u0 = n->in[1];
  int b = lc_rule_batch_size(n->nin, in, ax), ax2[naxes + 1], made = 0, rc = 1;
  struct lc_node *idx[naxes + 1], *st = NULL, *u2 = NULL;
  struct lc_node *x = lc_rule_batch_front_full(in[0], ax[0], b);
  struct lc_node *u = x ? lc_rule_batch_front_full(in[1], ax[1], b) : NULL;
  *out_ax = 0;
  if (!u) goto done;
  if (ax[2] == -1) {
    for (int k = 0; k < naxes; k++) ax2[k] = axes[k] + 1;
    rc = !(out[0] = lc_slice_update_dynamic(x, u, in[2], naxes, ax2));
    goto done;
  }
  if (!(st = lc_rule_batch_front(in[2], ax[2], false))) goto done;
  if (!(idx[made++] = lc_batch_iota(b, 1))) goto done;
  ax2[0] = 0;
  for (int k = 0; k < naxes; k++) {
    struct lc_node *lo = lc_batched_start(st, k);
    struct lc_node *hi = lo ? lc_node_new_scalar(lo->dtype, n->shape[axes[k]] - u0->shape[axes[k]])
                            : NULL;
    idx[made] = hi ? lc_minimum(lo, hi) : NULL;
    lc_node_release(lo);
    lc_node_release(hi);
    if (!idx[made++]) goto done;
    ax2[1 + k] = axes[k] + 1;
  }
  int one = 1;
  if (!(u2 = lc_expand_dims(u, 1, &one))) goto done;
  rc = !(out[0] = lc_scatter(x, made, idx, u2, ax2, LC_SCATTER_NONE));
done:
  lc_rule_release(idx, made);
  lc_node_release(st);
  lc_node_release(u2);
  lc_node_release(u);
  lc_node_release(x);
  return rc;
}

const struct lc_prim lc_prim_dynamic_slice_update = {.name = "dynamic_slice_update",
                                                     .eval_cpu = dsu_eval,
                                                     .eval_cuda =
                                                         LC_CUDA(lc_cuda_eval_dynamic_slice_update),
                                                     .vjp = dsu_vjp,
                                                     .jvp = dsu_jvp,
                                                     .vmap = dsu_vmap};

struct lc_node *lc_slice_update_dynamic(struct lc_node *src, struct lc_node *update,
                                        struct lc_node *start, int naxes, const int *axes) {
  int nd = src->ndim;
  int ax[naxes > 0 ? naxes : 1];
  if (lc_dynamic_check("slice_update_dynamic", src, start, naxes, axes, ax)) return NULL;
  if (update->ndim > nd) {
    lc_error("slice_update_dynamic: update has %d dimensions, more than the array's %d",
             update->ndim, nd);
    return NULL;
  }
  /* Missing leading axes span the array; each extent is capped by src's. */
  int lead = nd - update->ndim, up[nd > 0 ? nd : 1];
  for (int d = 0; d < nd; d++) {
    up[d] = d < lead ? src->shape[d] : update->shape[d - lead];
    if (up[d] > src->shape[d]) up[d] = src->shape[d];
  }
  for (int k = 0; k < naxes; k++)
    if (ax[k] < lead) up[ax[k]] = 1;
  struct lc_node *c = lc_astype(update, src->dtype);
  struct lc_node *u = c ? lc_broadcast_to(c, nd, up) : NULL;
  struct lc_node *r = NULL;
  if (u) {
    int params[1 + naxes];
    params[0] = naxes;
    for (int k = 0; k < naxes; k++) params[1 + k] = ax[k];
    struct lc_node *in[3] = {src, u, start};
    r = lc_node_new_op(LC_OP_DYNAMIC_SLICE_UPDATE, src->dtype, nd, src->shape, 3, in, params,
                       sizeof params);
  }
  lc_node_release(u);
  lc_node_release(c);
  return r;
}

/* ---- MASKED_SCATTER ----
 * Inputs: a, mask (bool, a's shape), values (a's dtype, any shape). The
 * masked positions of a, in row-major order, take the values' elements in
 * row-major order; running out of values is an error at eval. */

static int masked_scatter_eval(struct lc_node *n) {
  const struct lc_node *m = n->in[1], *v = n->in[2];
  if (lc_start_from_input(n)) return 1;
  int nd = n->ndim, vnd = v->ndim;
  int pos[nd > 0 ? nd : 1], vpos[vnd > 0 ? vnd : 1];
  memset(pos, 0, sizeof pos);
  memset(vpos, 0, sizeof vpos);
  size_t isz = lc_dtype_size(n->dtype);
  const bool *md = m->buf->data;
  int64_t used = 0, voff = v->offset;
  for (int64_t q = 0; q < n->size; q++) {
    int64_t mo = m->offset, oo = 0;
    for (int d = 0; d < nd; d++) {
      mo += pos[d] * m->strides[d];
      oo += pos[d] * n->strides[d];
    }
    if (md[mo]) {
      if (used >= v->size)
        return lc_error(
            "masked_scatter: the source does not have enough elements for the mask "
            "(%lld)",
            (long long)v->size);
      memcpy((char *)n->buf->data + oo * (int64_t)isz,
             (const char *)v->buf->data + voff * (int64_t)isz, isz);
      used++;
      for (int d = vnd - 1; d >= 0; d--) { /* next value, row-major */
        voff += v->strides[d];
        if (++vpos[d] < v->shape[d]) break;
        voff -= (int64_t)vpos[d] * v->strides[d];
        vpos[d] = 0;
      }
    }
    for (int d = nd - 1; d >= 0; d--) {
      if (++pos[d] < n->shape[d]) break;
      pos[d] = 0;
    }
  }
  return 0;
}

/* ---- masked_scatter rules (the mask gets zero) ---- */

/* For each position of the flattened mask, how many masked positions come
 * before it: the flat index of the value a masked position takes. */
static struct lc_node *value_slots(struct lc_node *mask_flat) {
  struct lc_node *m = lc_astype(mask_flat, MLX_INT32);
  struct lc_node *c = m ? lc_cumsum(m, -1, false, false) : NULL;
  lc_node_release(m);
  return c;
}

static int masked_scatter_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                              int nargs, struct lc_node **out) {
  struct lc_node *mask = n->in[1], *v = n->in[2];
  for (int j = 0; j < nargs; j++) {
    struct lc_node *r = NULL;
    if (argnums[j] == 0) { /* masked positions were overwritten */
      struct lc_node *keep = lc_logical_not(mask);
      r = keep ? keep_where(keep, cot[0]) : NULL;
      lc_node_release(keep);
    } else if (argnums[j] == 2) {
      if (v->size == 0) continue;
      if (n->size > INT_MAX || v->size > INT_MAX)
        return lc_error("masked_scatter: vjp of arrays this large is not supported");
      int cnt = (int)n->size, vn = (int)v->size, col[2] = {cnt, 1}, zero = 0;
      struct lc_node *mf = lc_reshape(mask, 1, &cnt), *cf = mf ? lc_reshape(cot[0], 1, &cnt) : NULL;
      struct lc_node *slot = cf ? value_slots(mf) : NULL, *kept = slot ? keep_where(mf, cf) : NULL;
      struct lc_node *upd = kept ? lc_reshape(kept, 2, col) : NULL;
      struct lc_node *z = upd ? lc_zeros(1, &vn, v->dtype) : NULL;
      /* unmasked positions add zero (or fall past the end and drop) */
      struct lc_node *g = z ? lc_scatter(z, 1, &slot, upd, &zero, LC_SCATTER_ADD) : NULL;
      r = g ? lc_reshape(g, v->ndim, v->shape) : NULL;
      lc_node_release(mf);
      lc_node_release(cf);
      lc_node_release(slot);
      lc_node_release(kept);
      lc_node_release(upd);
      lc_node_release(z);
      lc_node_release(g);
    } else {
      continue;
    }
    if (!(out[j] = r)) {
      lc_rule_release(out, j);
      return 1;
    }
  }
  return 0;
}

/* jvp: linear in (a, values) together. */
static int masked_scatter_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  if (!tan[0] && !tan[2]) return 0;
  struct lc_node *in[3] = {or_zeros(tan[0], n->in[0]), n->in[1], NULL};
  in[2] = in[0] ? or_zeros(tan[2], n->in[2]) : NULL;
  out[0] = in[2] ? lc_rule_clone(n, in) : NULL;
  lc_node_release(in[0]);
  lc_node_release(in[2]);
  return !out[0];
}

/* vmap: per example, the k-th masked position takes value k, so with the
 * batch in front and each example flattened, the result is
 * where(mask, take_along_axis(values, slots), a). Examples consume their
 * own values (slots restart at 0 in each row). */
static int masked_scatter_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                               struct lc_node **out, int *out_ax) {
  int b = lc_rule_batch_size(n->nin, in, ax), nd = n->ndim, rc = 1;
  int64_t per = n->size, vper = n->in[2]->size;
  *out_ax = 0;
  if (per > INT_MAX || vper > INT_MAX)
    return lc_error("masked_scatter: vmap of arrays this large is not supported");
  int row[2] = {b, (int)per}, vrow[2] = {b, (int)vper}, sh[nd + 1];
  sh[0] = b;
  memcpy(sh + 1, n->shape, sizeof(int) * (size_t)nd);
  struct lc_node *x = lc_rule_batch_front_full(in[0], ax[0], b), *xf = NULL, *m = NULL, *mf = NULL;
  struct lc_node *v = NULL, *vf = NULL, *slot = NULL, *cap = NULL, *sc = NULL, *g = NULL, *w = NULL;
  if (!x) goto done;
  if (vper == 0) { /* nothing can be masked */
    rc = !(out[0] = lc_node_retain(x));
    goto done;
  }
  if (!(xf = lc_reshape(x, 2, row)) || !(m = lc_rule_batch_front_full(in[1], ax[1], b)) ||
      !(mf = lc_reshape(m, 2, row)) || !(v = lc_rule_batch_front_full(in[2], ax[2], b)) ||
      !(vf = lc_reshape(v, 2, vrow)) || !(slot = value_slots(mf)) ||
      !(cap = lc_node_new_scalar(MLX_INT32, (double)(vper - 1))) ||
      !(sc = lc_minimum(slot, cap)) || !(g = lc_take_along_axis(vf, sc, 1)) ||
      !(w = lc_where(mf, g, xf)))
    goto done;
  rc = !(out[0] = lc_reshape(w, nd + 1, sh));
done:
  lc_node_release(x);
  lc_node_release(xf);
  lc_node_release(m);
  lc_node_release(mf);
  lc_node_release(v);
  lc_node_release(vf);
  lc_node_release(slot);
  lc_node_release(cap);
  lc_node_release(sc);
  lc_node_release(g);
  lc_node_release(w);
  return rc;
}

const struct lc_prim lc_prim_masked_scatter = {.name = "masked_scatter",
                                               .eval_cpu = masked_scatter_eval,
                                               .eval_cuda = LC_CUDA(lc_cuda_eval_masked_scatter),
                                               .vjp = masked_scatter_vjp,
                                               .jvp = masked_scatter_jvp,
                                               .vmap = masked_scatter_vmap};

struct lc_node *lc_masked_scatter(struct lc_node *a, struct lc_node *mask, struct lc_node *values) {
  const char *fn = "masked_scatter";
  if (mask->dtype != MLX_BOOL) {
    lc_error("%s: the mask has to be boolean", fn);
    return NULL;
  }
  if (mask->ndim > a->ndim) {
    lc_error("%s: the mask cannot have more dimensions than the target", fn);
    return NULL;
  }
  int nd = a->ndim, un = nd - mask->ndim;
  if (values->ndim > un + 1) {
    lc_error("%s: the value array must be broadcastable with the last %d dimensions of the input",
             fn, un);
    return NULL;
  }
  if (!lc_shape_equal(mask->ndim, mask->shape, mask->ndim, a->shape)) {
    char s1[128], s2[128];
    lc_error(
        "%s: the boolean mask should have the same shape as the beginning of the indexed "
        "array but the mask has shape %s and the array has shape %s",
        fn, lc_shape_str(mask->ndim, mask->shape, s1, sizeof s1),
        lc_shape_str(nd, a->shape, s2, sizeof s2));
    return NULL;
  }
  struct lc_node *mr = NULL, *mb = NULL, *vc = NULL, *vr = NULL, *vb = NULL, *r = NULL;
  int ms[nd > 0 ? nd : 1], vs[un + 1];
  for (int d = 0; d < nd; d++) ms[d] = d < mask->ndim ? mask->shape[d] : 1;
  if (!(mr = lc_reshape(mask, nd, ms)) || !(mb = lc_broadcast_to(mr, nd, a->shape))) goto done;
  if (!(vc = lc_astype(values, a->dtype))) goto done;
  if (values->ndim < un + 1) {
    int lead = un + 1 - values->ndim;
    for (int d = 0; d < un + 1; d++) vs[d] = d < lead ? 1 : values->shape[d - lead];
    if (!(vr = lc_reshape(vc, un + 1, vs))) goto done;
    vs[0] = mask->size > INT_MAX ? INT_MAX : (int)mask->size;
    for (int i = 1; i <= un; i++) vs[i] = a->shape[nd - un - 1 + i];
    if (!(vb = lc_broadcast_to(vr, un + 1, vs))) goto done;
  } else {
    vs[0] = values->shape[0];
    for (int i = 1; i <= un; i++) vs[i] = a->shape[nd - un - 1 + i];
    if (!(vb = lc_broadcast_to(vc, un + 1, vs))) goto done;
  }
  {
    struct lc_node *in[3] = {a, mb, vb};
    r = lc_node_new_op(LC_OP_MASKED_SCATTER, a->dtype, nd, a->shape, 3, in, NULL, 0);
  }
done:
  lc_node_release(mr);
  lc_node_release(mb);
  lc_node_release(vc);
  lc_node_release(vr);
  lc_node_release(vb);
  return r;
}
