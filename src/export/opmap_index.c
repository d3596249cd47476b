/* MLX <-> lace indexing primitives: gather, gather along an axis,
 * scatter, scatter along an axis, slice updates (static and dynamic),
 * dynamic slices, masked scatter. */
#include "api/api.h"
#include "core/error.h"
#include "export/export.h"
#include "ops/index.h"
#include "ops/prim.h"

#define MAXD LC_API_MAX_DIMS

/* MLX's Scatter/SliceUpdate::ReduceType {Max, Min, Sum, Prod, None} and
 * ScatterAxis::ReduceType {Sum, None}. */
enum { X_MAX, X_MIN, X_SUM, X_PROD, X_NONE };
static const int mode_to_mlx[5] = {[LC_SCATTER_NONE] = X_NONE, [LC_SCATTER_ADD] = X_SUM,
                                   [LC_SCATTER_PROD] = X_PROD, [LC_SCATTER_MAX] = X_MAX,
                                   [LC_SCATTER_MIN] = X_MIN};
static const int mode_from_mlx[5] = {[X_NONE] = LC_SCATTER_NONE, [X_SUM] = LC_SCATTER_ADD,
                                     [X_PROD] = LC_SCATTER_PROD, [X_MAX] = LC_SCATTER_MAX,
                                     [X_MIN] = LC_SCATTER_MIN};

static int bad_state(const struct lc_xbuild *b) {
  return lc_error("import_function: %s has an invalid state for its inputs", b->name);
}

/* ---- import ---- */

static int im_gather(const struct lc_xbuild *b) {
  int ax[MAXD], sz[MAXD];
  int na = lc_xstate_ints(b->st, 0, ax, MAXD), ns = lc_xstate_ints(b->st, 1, sz, MAXD);
  if (na != b->nin - 1 || ns != b->in[0]->ndim) return bad_state(b);
  return !(b->out[0] = lc_gather(b->in[0], na, b->in + 1, ax, sz));
}

static int im_gather_axis(const struct lc_xbuild *b) {
  return !(b->out[0] = lc_take_along_axis(b->in[0], b->in[1], (int)b->st->items[0].i));
}

static int im_scatter(const struct lc_xbuild *b) {
  int64_t t = b->st->items[0].i;
  int ax[MAXD], na = lc_xstate_ints(b->st, 1, ax, MAXD);
  if (t < 0 || t > 4 || na != b->nin - 2) return bad_state(b);
  return !(b->out[0] = lc_scatter(b->in[0], na, b->in + 1, b->in[b->nin - 1], ax,
                                  (enum lc_scatter_mode)mode_from_mlx[t]));
}

static int im_scatter_axis(const struct lc_xbuild *b) {
  int64_t t = b->st->items[0].i;
  if (t != 0 && t != 1) return bad_state(b);
  return !(b->out[0] = lc_scatter_axis(b->in[0], b->in[1], b->in[2], (int)b->st->items[1].i,
                                       t == 0 ? LC_SCATTER_ADD : LC_SCATTER_NONE));
}

/* State (reduce type, start, end, strides); ends as Slice's. */
static int im_slice_update(const struct lc_xbuild *b) {
  const struct lc_node *x = b->in[0];
  int64_t t = b->st->items[0].i;
  int nd = x->ndim, st[MAXD], en[MAXD], sp[MAXD];
  if (t < 0 || t > 4 || lc_xstate_ints(b->st, 1, st, MAXD) != nd ||
      lc_xstate_ints(b->st, 2, en, MAXD) != nd || lc_xstate_ints(b->st, 3, sp, MAXD) != nd)
    return bad_state(b);
  for (int d = 0; d < nd; d++) {
    if (st[d] < 0) st[d] = 0;
    if (sp[d] < 0 && en[d] < 0) en[d] = -x->shape[d] - 1;
  }
  return !(b->out[0] = lc_slice_update(b->in[0], b->in[1], st, en, sp,
                                       (enum lc_scatter_mode)mode_from_mlx[t]));
}

static int im_dynamic_slice(const struct lc_xbuild *b) {
  int ax[MAXD], sz[MAXD];
  int na = lc_xstate_ints(b->st, 0, ax, MAXD), ns = lc_xstate_ints(b->st, 1, sz, MAXD);
  if (na < 0 || ns != b->in[0]->ndim) return bad_state(b);
  return !(b->out[0] = lc_slice_dynamic(b->in[0], b->in[1], na, ax, sz));
}

static int im_dynamic_slice_update(const struct lc_xbuild *b) {
  int ax[MAXD], na = lc_xstate_ints(b->st, 0, ax, MAXD);
  if (na < 0) return bad_state(b);
  return !(b->out[0] = lc_slice_update_dynamic(b->in[0], b->in[1], b->in[2], na, ax));
}

static int im_masked_scatter(const struct lc_xbuild *b) {
  return !(b->out[0] = lc_masked_scatter(b->in[0], b->in[1], b->in[2]));
}

const struct lc_ximp lc_ximp_index[] = {
    {"Gather", "II", 1, 1 + 64, im_gather},
    {"GatherAxis", "i", 2, 2, im_gather_axis},
    {"Scatter", "iI", 2, 2 + 64, im_scatter},
    {"ScatterAxis", "ii", 3, 3, im_scatter_axis},
    {"SliceUpdate", "iIII", 2, 2, im_slice_update},
    {"DynamicSlice", "II", 2, 2, im_dynamic_slice},
    {"DynamicSliceUpdate", "I", 3, 3, im_dynamic_slice_update},
    {"MaskedScatter", "", 3, 3, im_masked_scatter},
    {NULL, NULL, 0, 0, NULL}};

/* ---- export ---- */

static int ex_gather(struct lc_xemit *e, const struct lc_cinstr *ins) {
  const int *p = ins->params; /* {nidx, axes[nidx], slice_sizes[a.ndim]} */
  int nd = e->p->vals[ins->in[0]].ndim;
  return lc_xe_same(e, ins, "Gather", "II", p[0], p + 1, nd, p + 1 + p[0]);
}

static int ex_gather_axis(struct lc_xemit *e, const struct lc_cinstr *ins) {
  return lc_xe_same(e, ins, "GatherAxis", "i", *(const int *)ins->params);
}

static int ex_scatter(struct lc_xemit *e, const struct lc_cinstr *ins) {
  const int *p = ins->params; /* {mode, nidx, axes...} */
  return lc_xe_same(e, ins, "Scatter", "iI", mode_to_mlx[p[0]], p[1], p + 2);
}

static int ex_scatter_axis(struct lc_xemit *e, const struct lc_cinstr *ins) {
  const int *p = ins->params; /* {axis, mode} */
  if (p[1] != LC_SCATTER_ADD && p[1] != LC_SCATTER_NONE)
    return lc_error("export_function: scatter along an axis with this mode has no MLX equivalent");
  return lc_xe_same(e, ins, "ScatterAxis", "ii", p[1] == LC_SCATTER_ADD ? 0 : 1, p[0]);
}

/* lace's params {mode, start[nd], step[nd]}; the slice's extents are the
 * update's (input 1, broadcast to the slice by the builder). */
static int ex_slice_update(struct lc_xemit *e, const struct lc_cinstr *ins) {
  const int *p = ins->params, *start = p + 1;
  const struct lc_cval *u = &e->p->vals[ins->in[1]];
  int nd = u->ndim, end[nd > 0 ? nd : 1];
  const int *step = start + nd;
  for (int d = 0; d < nd; d++)
    end[d] = u->shape[d] ? start[d] + (u->shape[d] - 1) * step[d] + (step[d] > 0 ? 1 : -1) : start[d];
  return lc_xe_same(e, ins, "SliceUpdate", "iIII", mode_to_mlx[p[0]], nd, start, nd, end, nd,
                    step);
}

static int ex_dynamic_slice(struct lc_xemit *e, const struct lc_cinstr *ins) {
  const int *p = ins->params; /* {naxes, axes...} */
  const struct lc_cval *o = &e->p->vals[ins->out[0]];
  return lc_xe_same(e, ins, "DynamicSlice", "II", p[0], p + 1, o->ndim, o->shape);
}

static int ex_dynamic_slice_update(struct lc_xemit *e, const struct lc_cinstr *ins) {
  const int *p = ins->params; /* {naxes, axes...}; inputs src, update, start */
  return lc_xe_same(e, ins, "DynamicSliceUpdate", "I", p[0], p + 1);
}

static int ex_masked_scatter(struct lc_xemit *e, const struct lc_cinstr *ins) {
  return lc_xe_same(e, ins, "MaskedScatter", "");
}

const struct lc_xexp lc_xexp_index[] = {
    {LC_OP_GATHER, ex_gather},
    {LC_OP_GATHER_AXIS, ex_gather_axis},
    {LC_OP_SCATTER, ex_scatter},
    {LC_OP_SCATTER_AXIS, ex_scatter_axis},
    {LC_OP_SLICE_UPDATE, ex_slice_update},
    {LC_OP_DYNAMIC_SLICE, ex_dynamic_slice},
    {LC_OP_DYNAMIC_SLICE_UPDATE, ex_dynamic_slice_update},
    {LC_OP_MASKED_SCATTER, ex_masked_scatter},
    {-1, NULL}};
