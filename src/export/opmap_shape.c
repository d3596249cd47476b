/* MLX <-> lace shape primitives: reshape, broadcast, transpose, slice,
 * as_strided, concatenate, squeeze/expand_dims/flatten/unflatten, split,
 * pad, contiguous copies. */
#include <string.h>

#include "api/api.h"
#include "core/error.h"
#include "export/export.h"
#include "ops/elementwise.h"
#include "ops/prim.h"
#include "ops/shape.h"

#define MAXD LC_API_MAX_DIMS

/* State item k as ints into v (capacity MAXD); its length or -1 reported. */
static int ints(const struct lc_xbuild *b, int k, int *v) {
  int n = lc_xstate_ints(b->st, k, v, MAXD);
  if (n < 0) lc_error("import_function: %s has an invalid state", b->name);
  return n;
}

/* ---- import ---- */

static int im_reshape(const struct lc_xbuild *b) {
  int sh[64], n = lc_xstate_ints(b->st, 0, sh, 64);
  if (n < 0) return lc_error("import_function: Reshape has an invalid shape");
  return !(b->out[0] = lc_reshape(b->in[0], n, sh));
}

/* Broadcast of inputs' shapes (each with the ignored trailing-relative
 * axes removed), then the ignored axes of input 0 put back (MLX's
 * BroadcastAxes; nig == 0 is a plain broadcast of all inputs). */
static int broadcast_all(const struct lc_xbuild *b, int nig, const int *ig, int *nd, int *sh) {
  *nd = 0;
  for (int k = 0; k < b->nin; k++) {
    const struct lc_node *x = b->in[k];
    int xs[64], xn = 0;
    if (x->ndim > 64) return lc_error("import_function: %s of a %d-d array", b->name, x->ndim);
    for (int d = 0; d < x->ndim; d++) {
      bool skip = false;
      for (int j = 0; j < nig; j++) skip = skip || ig[j] + x->ndim == d;
      if (!skip) xs[xn++] = x->shape[d];
    }
    int on, os[64];
    if (xn + nig != x->ndim) return lc_error("import_function: %s with invalid axes", b->name);
    if (lc_broadcast_shapes(b->name, *nd, sh, xn, xs, &on, os)) return 1;
    *nd = on;
    if (on > 0) memcpy(sh, os, sizeof(int) * (size_t)on);
  }
  int dims = *nd + nig, out[64];
  if (dims > 64) return lc_error("import_function: %s result has too many dimensions", b->name);
  for (int d = 0, s = 0; d < dims; d++) {
    int j = 0;
    while (j < nig && ig[j] + dims != d) j++;
    if (j < nig) {
      int src = b->in[0]->ndim + ig[j];
      if (src < 0) return lc_error("import_function: %s with invalid axes", b->name);
      out[d] = b->in[0]->shape[src];
    } else {
      out[d] = sh[s++];
    }
  }
  *nd = dims;
  if (dims > 0) memcpy(sh, out, sizeof(int) * (size_t)dims);
  return 0;
}

static int im_broadcast(const struct lc_xbuild *b) {
  int sh[64], n;
  if (b->nin == 1) {
    if ((n = lc_xstate_ints(b->st, 0, sh, 64)) < 0)
      return lc_error("import_function: Broadcast has an invalid shape");
  } else if (broadcast_all(b, 0, NULL, &n, sh)) {
    return 1;
  }
  return !(b->out[0] = lc_broadcast_to(b->in[0], n, sh));
}

static int im_broadcast_axes(const struct lc_xbuild *b) {
  int ig[64], nig = lc_xstate_ints(b->st, 0, ig, 64), sh[64], n;
  if (nig < 0) return lc_error("import_function: BroadcastAxes has invalid axes");
  for (int j = 0; j < nig; j++)
    if (ig[j] >= 0 || ig[j] < -64) return lc_error("import_function: BroadcastAxes has invalid axes");
  if (broadcast_all(b, nig, ig, &n, sh)) return 1;
  return !(b->out[0] = lc_broadcast_to(b->in[0], n, sh));
}

static int im_transpose(const struct lc_xbuild *b) {
  int perm[MAXD], n = ints(b, 0, perm);
  if (n < 0) return 1;
  if (n != b->in[0]->ndim)
    return lc_error("import_function: Transpose with %d axes of a %d-d array", n, b->in[0]->ndim);
  return !(b->out[0] = lc_transpose(b->in[0], perm));
}

/* MLX stores normalised bounds: with a negative stride an end of -1 means
 * "before element 0", which lace's slice reads as counted from the end. */
static int im_slice(const struct lc_xbuild *b) {
  const struct lc_node *x = b->in[0];
  int nd = x->ndim, st[MAXD], en[MAXD], sp[MAXD];
  if (ints(b, 0, st) != nd || ints(b, 1, en) != nd || ints(b, 2, sp) != nd)
    return lc_error("import_function: Slice state does not match a %d-d input", nd);
  for (int d = 0; d < nd; d++) {
    if (st[d] < 0) st[d] = 0;
    if (sp[d] < 0 && en[d] < 0) en[d] = -x->shape[d] - 1;
  }
  return !(b->out[0] = lc_slice(b->in[0], st, en, sp));
}

static int im_as_strided(const struct lc_xbuild *b) {
  int sh[MAXD], n = ints(b, 0, sh);
  const struct lc_xitem *strides = &b->st->items[1];
  if (n < 0) return 1;
  if (strides->n != n || b->st->items[2].i < 0)
    return lc_error("import_function: AsStrided with inconsistent strides");
  return !(b->out[0] = lc_as_strided(b->in[0], n, sh, strides->v, b->st->items[2].i));
}

static int im_concatenate(const struct lc_xbuild *b) {
  return !(b->out[0] = lc_concatenate(b->nin, b->in, (int)b->st->items[0].i));
}

static int im_squeeze(const struct lc_xbuild *b) {
  int ax[MAXD], n = ints(b, 0, ax);
  return n < 0 || !(b->out[0] = lc_squeeze(b->in[0], n, ax));
}

static int im_expand_dims(const struct lc_xbuild *b) {
  int ax[MAXD], n = ints(b, 0, ax);
  return n < 0 || !(b->out[0] = lc_expand_dims(b->in[0], n, ax));
}

static int im_flatten(const struct lc_xbuild *b) {
  return !(b->out[0] = lc_flatten(b->in[0], (int)b->st->items[0].i, (int)b->st->items[1].i));
}

static int im_unflatten(const struct lc_xbuild *b) {
  int sh[MAXD], n = lc_xstate_ints(b->st, 1, sh, MAXD);
  if (n < 0) return lc_error("import_function: Unflatten has an invalid shape");
  return !(b->out[0] = lc_unflatten(b->in[0], (int)b->st->items[0].i, n, sh));
}

static int im_split(const struct lc_xbuild *b) {
  int idx[MAXD], n = ints(b, 0, idx);
  if (n < 0) return 1;
  if (b->nout != n + 1)
    return lc_error("import_function: Split into %d pieces with %d outputs", n + 1, b->nout);
  return lc_split_sections(b->in[0], n, idx, (int)b->st->items[1].i, b->out);
}

static int im_pad(const struct lc_xbuild *b) {
  int ax[MAXD], lo[MAXD], hi[MAXD], n = ints(b, 0, ax);
  if (n < 0 || ints(b, 1, lo) != n || ints(b, 2, hi) != n)
    return lc_error("import_function: Pad state is inconsistent");
  return !(b->out[0] = lc_pad(b->in[0], n, ax, lo, hi, b->in[1], LC_PAD_CONSTANT));
}

const struct lc_ximp lc_ximp_shape[] = {
    {"Reshape", "I", 1, 1, im_reshape},
    {"Broadcast", "I", 1, 64, im_broadcast},
    {"BroadcastAxes", "I", 2, 64, im_broadcast_axes},
    {"Transpose", "I", 1, 1, im_transpose},
    {"Slice", "III", 1, 1, im_slice},
    {"AsStrided", "ILZ", 1, 1, im_as_strided},
    {"Concatenate", "i", 1, 1 << 16, im_concatenate},
    {"Squeeze", "I", 1, 1, im_squeeze},
    {"ExpandDims", "I", 1, 1, im_expand_dims},
    {"Flatten", "ii", 1, 1, im_flatten},
    {"Unflatten", "iI", 1, 1, im_unflatten},
    {"Split", "Ii", 1, 1, im_split},
    {"Pad", "III", 2, 2, im_pad},
    {NULL, NULL, 0, 0, NULL}};

/* ---- export ---- */

static int ex_reshape(struct lc_xemit *e, const struct lc_cinstr *ins) {
  const struct lc_cval *o = &e->p->vals[ins->out[0]];
  return lc_xe_same(e, ins, "Reshape", "I", o->ndim, o->shape);
}

static int ex_transpose(struct lc_xemit *e, const struct lc_cinstr *ins) {
  return lc_xe_same(e, ins, "Transpose", "I", e->p->vals[ins->out[0]].ndim,
                    (const int *)ins->params);
}

/* lace's params: start[nd], step[nd]; MLX's state: start, end, strides
 * with end one step past the last element read. */
static int ex_slice(struct lc_xemit *e, const struct lc_cinstr *ins) {
  const struct lc_cval *o = &e->p->vals[ins->out[0]];
  int nd = o->ndim, end[nd > 0 ? nd : 1];
  const int *start = ins->params, *step = start + nd;
  for (int d = 0; d < nd; d++)
    end[d] = o->shape[d] ? start[d] + (o->shape[d] - 1) * step[d] + (step[d] > 0 ? 1 : -1) : start[d];
  return lc_xe_same(e, ins, "Slice", "III", nd, start, nd, end, nd, step);
}

/* lace's params: int64 offset, then int64 strides[ndim]. */
static int ex_as_strided(struct lc_xemit *e, const struct lc_cinstr *ins) {
  const struct lc_cval *o = &e->p->vals[ins->out[0]];
  const int64_t *p = ins->params;
  return lc_xe_same(e, ins, "AsStrided", "ILZ", o->ndim, o->shape, o->ndim, p + 1,
                    (uint64_t)p[0]);
}

static int ex_concatenate(struct lc_xemit *e, const struct lc_cinstr *ins) {
  return lc_xe_same(e, ins, "Concatenate", "i", *(const int *)ins->params);
}

static int ex_copy(struct lc_xemit *e, const struct lc_cinstr *ins) {
  return lc_xe_same(e, ins, "Copy", "");
}

/* REMAP (ops/shape_remap.c): per output axis {kind, input extent, a, b};
 * written axis by axis as MLX's ops compose them: constant pad -> Pad;
 * tile and repeat -> ExpandDims, Broadcast, Reshape; roll -> two Slices
 * and a Concatenate. The last primitive written produces the output. */
struct remap_axis {
  int kind, n, a, b;
};
enum { MAP_ID, MAP_TILE, MAP_REPEAT, MAP_ROLL, MAP_PAD };

struct cursor {
  uint64_t id;
  mlx_dtype dt;
  int nd;
  int sh[64];
};

/* The output of the next primitive: fresh, or the instruction's own when
 * it is the last. */
static struct lc_xout step_out(struct lc_xemit *e, struct cursor *c, bool last, uint64_t out) {
  c->id = last ? out : lc_xe_new_id(e);
  return (struct lc_xout){c->id, c->dt, c->nd, c->sh};
}

static int remap_tile(struct lc_xemit *e, struct cursor *c, int d, int reps, bool repeat,
                      bool last, uint64_t out) {
  int at = repeat ? d + 1 : d, n = c->sh[d];
  uint64_t in = c->id;
  memmove(c->sh + at + 1, c->sh + at, sizeof(int) * (size_t)(c->nd - at));
  c->sh[at] = 1;
  c->nd++;
  struct lc_xout o = step_out(e, c, false, out);
  if (lc_xe_prim(e, "ExpandDims", 1, &in, 1, &o, "I", 1, &at)) return 1;
  in = c->id;
  c->sh[at] = reps;
  o = step_out(e, c, false, out);
  if (lc_xe_prim(e, "Broadcast", 1, &in, 1, &o, "I", c->nd, c->sh)) return 1;
  in = c->id;
  memmove(c->sh + at, c->sh + at + 1, sizeof(int) * (size_t)(c->nd - at - 1));
  c->nd--;
  c->sh[d] = n * reps;
  o = step_out(e, c, last, out);
  return lc_xe_prim(e, "Reshape", 1, &in, 1, &o, "I", c->nd, c->sh);
}

static int remap_roll(struct lc_xemit *e, struct cursor *c, int d, int shift, bool last,
                      uint64_t out) {
  int n = c->sh[d], nd = c->nd, st[64], en[64], one[64];
  uint64_t in = c->id, parts[2];
  for (int k = 0; k < nd; k++) st[k] = 0, en[k] = c->sh[k], one[k] = 1;
  for (int part = 0; part < 2; part++) { /* x[n - shift:], then x[:n - shift] */
    st[d] = part ? 0 : n - shift;
    en[d] = part ? n - shift : n;
    struct cursor pc = *c;
    pc.sh[d] = en[d] - st[d];
    struct lc_xout o = step_out(e, &pc, false, out);
    if (lc_xe_prim(e, "Slice", 1, &in, 1, &o, "III", nd, st, nd, en, nd, one)) return 1;
    parts[part] = o.id;
  }
  struct lc_xout o = step_out(e, c, last, out);
  return lc_xe_prim(e, "Concatenate", 2, parts, 1, &o, "i", d);
}

static int ex_remap(struct lc_xemit *e, const struct lc_cinstr *ins) {
  const struct remap_axis *m = ins->params;
  const struct lc_cval *x = &e->p->vals[ins->in[0]], *ov = &e->p->vals[ins->out[0]];
  if (x->ndim > 64) return lc_error("export_function: remap of a %d-d array", x->ndim);
  struct cursor c = {lc_xe_id(e, ins->in[0]), x->dtype, x->ndim, {0}};
  if (x->ndim) memcpy(c.sh, x->shape, sizeof(int) * (size_t)x->ndim);
  int lastd = -1;
  for (int d = 0; d < x->ndim; d++)
    if (m[d].kind != MAP_ID) lastd = d;
  uint64_t out = lc_xe_id(e, ins->out[0]);
  if (lastd < 0) {
    struct lc_xout o = step_out(e, &c, true, out);
    uint64_t in = lc_xe_id(e, ins->in[0]);
    return lc_xe_prim(e, "Copy", 1, &in, 1, &o, "");
  }
  for (int d = 0; d <= lastd; d++) {
    bool last = d == lastd;
    int rc = 0;
    uint64_t in = c.id;
    switch (m[d].kind) {
    case MAP_ID: break;
    case MAP_TILE: rc = remap_tile(e, &c, d, ov->shape[d] / (m[d].n ? m[d].n : 1), false, last, out); break;
    case MAP_REPEAT: rc = remap_tile(e, &c, d, m[d].a, true, last, out); break;
    case MAP_ROLL: rc = remap_roll(e, &c, d, m[d].a, last, out); break;
    case MAP_PAD: {
      if (m[d].b != 0 || ins->nin < 2)
        return lc_error("export_function: edge, reflect and symmetric padding cannot be exported yet");
      int lo = m[d].a, hi = ov->shape[d] - m[d].n - m[d].a;
      uint64_t pin[2] = {in, lc_xe_id(e, ins->in[1])};
      c.sh[d] = ov->shape[d];
      struct lc_xout o = step_out(e, &c, last, out);
      rc = lc_xe_prim(e, "Pad", 2, pin, 1, &o, "III", 1, &d, 1, &lo, 1, &hi);
      break;
    }
    default: return lc_error("internal: unknown remap kind %d", m[d].kind);
    }
    if (rc) return 1;
  }
  return 0;
}

const struct lc_xexp lc_xexp_shape[] = {
    {LC_OP_REMAP, ex_remap},
    {LC_OP_RESHAPE, ex_reshape},       {LC_OP_TRANSPOSE, ex_transpose},
    {LC_OP_SLICE, ex_slice},           {LC_OP_AS_STRIDED, ex_as_strided},
    {LC_OP_CONCATENATE, ex_concatenate}, {LC_OP_COPY, ex_copy},
    {-1, NULL}};
