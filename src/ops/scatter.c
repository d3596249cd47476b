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
#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/index_internal.h"
#include "ops/prim.h"
#include "ops/shape.h"

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

const struct lc_prim lc_prim_scatter = {.name = "scatter", .eval_cpu = scatter_eval};

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

const struct lc_prim lc_prim_scatter_axis = {.name = "scatter_axis", .eval_cpu = scatter_axis_eval};

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

const struct lc_prim lc_prim_slice_update = {.name = "slice_update", .eval_cpu = slice_update_eval};

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

const struct lc_prim lc_prim_dynamic_slice_update = {.name = "dynamic_slice_update",
                                                     .eval_cpu = dsu_eval};

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

const struct lc_prim lc_prim_masked_scatter = {.name = "masked_scatter",
                                               .eval_cpu = masked_scatter_eval};

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
