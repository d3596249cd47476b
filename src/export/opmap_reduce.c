/* MLX <-> lace reductions and axis operations: reduce, arg reduce,
 * logsumexp, scan, softmax, sort and partition, number of elements.
 *
 * MLX's Reduce, ArgReduce and LogSumExp keep the reduced axes (extent 1);
 * lace's REDUCE and ARG_REDUCE may drop them, so exports add a Squeeze.
 * lace's mean is one REDUCE; MLX writes it as a sum times the reciprocal
 * element count (NumberOfElements, so it stays shapeless). */
#include <string.h>

#include "api/api.h"
#include "core/error.h"
#include "export/export.h"
#include "ops/prim.h"
#include "ops/reduce.h"
#include "ops/scan.h"
#include "ops/size.h"
#include "ops/softmax.h"
#include "ops/sort.h"

#define MAXD LC_API_MAX_DIMS

/* MLX's enums. */
enum { R_AND, R_OR, R_SUM, R_PROD, R_MIN, R_MAX };    /* Reduce::ReduceType */
enum { A_MIN, A_MAX };                                 /* ArgReduce::ReduceType */
enum { S_MAX, S_MIN, S_SUM, S_PROD, S_LOGADDEXP };    /* Scan::ReduceType */
/* lace's (sort.c's modes, reduce.c's arg kinds). */
enum { M_SORT, M_ARGSORT, M_PARTITION, M_ARGPARTITION, M_TOPK };
enum { ARG_MAX, ARG_MIN };

static const int red_from_mlx[6] = {LC_RED_AND, LC_RED_OR, LC_RED_SUM, LC_RED_PROD, LC_RED_MIN,
                                    LC_RED_MAX};
static const int scan_from_mlx[5] = {LC_SCAN_MAX, LC_SCAN_MIN, LC_SCAN_SUM, LC_SCAN_PROD,
                                     LC_SCAN_LOGADDEXP};

/* ---- import ---- */

static int im_reduce(const struct lc_xbuild *b) {
  int64_t t = b->st->items[0].i;
  int ax[MAXD], n = lc_xstate_ints(b->st, 1, ax, MAXD);
  if (t < 0 || t > 5 || n < 0) return lc_error("import_function: Reduce has an invalid state");
  return !(b->out[0] = lc_reduce("import_function", red_from_mlx[t], b->in[0], ax, n, true, 0));
}

static int im_arg_reduce(const struct lc_xbuild *b) {
  int64_t t = b->st->items[0].i;
  int axis = (int)b->st->items[1].i;
  if (t == A_MIN) return !(b->out[0] = lc_argmin(b->in[0], axis, true));
  if (t == A_MAX) return !(b->out[0] = lc_argmax(b->in[0], axis, true));
  return lc_error("import_function: ArgReduce with unknown type %lld", (long long)t);
}

static int im_logsumexp(const struct lc_xbuild *b) {
  int last = -1;
  return !(b->out[0] = lc_logsumexp(b->in[0], &last, 1, true));
}

static int im_scan(const struct lc_xbuild *b) {
  int64_t t = b->st->items[0].i;
  if (t < 0 || t > 4) return lc_error("import_function: Scan with unknown type %lld", (long long)t);
  return !(b->out[0] = lc_scan("import_function", scan_from_mlx[t], b->in[0],
                               (int)b->st->items[1].i, b->st->items[2].i, b->st->items[3].i));
}

static int im_softmax(const struct lc_xbuild *b) {
  int last = -1;
  return !(b->out[0] = lc_softmax(b->in[0], &last, 1, b->st->items[0].i != 0));
}

static int im_sort(const struct lc_xbuild *b) {
  int a0 = (int)b->st->items[0].i;
  if (!strcmp(b->name, "Sort")) return !(b->out[0] = lc_sort(b->in[0], a0));
  if (!strcmp(b->name, "ArgSort")) return !(b->out[0] = lc_argsort(b->in[0], a0));
  int axis = (int)b->st->items[1].i;
  if (!strcmp(b->name, "Partition")) return !(b->out[0] = lc_partition(b->in[0], a0, axis));
  return !(b->out[0] = lc_argpartition(b->in[0], a0, axis));
}

static int im_number_of_elements(const struct lc_xbuild *b) {
  int ax[MAXD], n = lc_xstate_ints(b->st, 0, ax, MAXD);
  if (n < 0) return lc_error("import_function: NumberOfElements has invalid axes");
  return !(b->out[0] = lc_number_of_elements(b->in[0], ax, n, b->st->items[1].i != 0,
                                             (mlx_dtype)b->st->items[2].i));
}

const struct lc_ximp lc_ximp_reduce[] = {
    {"Reduce", "iI", 1, 1, im_reduce},
    {"ArgReduce", "ii", 1, 1, im_arg_reduce},
    {"LogSumExp", "", 1, 1, im_logsumexp},
    {"Scan", "iibb", 1, 1, im_scan},
    {"Softmax", "b", 1, 1, im_softmax},
    {"Sort", "i", 1, 1, im_sort},
    {"ArgSort", "i", 1, 1, im_sort},
    {"Partition", "ii", 1, 1, im_sort},
    {"ArgPartition", "ii", 1, 1, im_sort},
    {"NumberOfElements", "IbD", 1, 1, im_number_of_elements},
    {NULL, NULL, 0, 0, NULL}};

/* ---- export ---- */

/* x's shape with the listed axes set to 1, into sh. */
static void kept_shape(const struct lc_cval *x, int naxes, const int *axes, int *sh) {
  for (int d = 0; d < x->ndim; d++) sh[d] = x->shape[d];
  for (int k = 0; k < naxes; k++) sh[axes[k]] = 1;
}

/* Writes `name` (state by the caller through sig/a, b) producing the
 * keep-dims result, then a Squeeze to the instruction's output when the
 * axes are dropped. */
static int keep_then_squeeze(struct lc_xemit *e, const struct lc_cinstr *ins, uint64_t in,
                             mlx_dtype dt, int naxes, const int *axes,
                             int (*write)(struct lc_xemit *, uint64_t, struct lc_xout *,
                                          const void *),
                             const void *arg) {
  const struct lc_cval *x = &e->p->vals[ins->in[0]];
  struct lc_xout o = lc_xe_val(e, ins->out[0]);
  int sh[x->ndim > 0 ? x->ndim : 1];
  kept_shape(x, naxes, axes, sh);
  bool squeeze = o.ndim != x->ndim;
  struct lc_xout k = {squeeze ? lc_xe_new_id(e) : o.id, dt, x->ndim, sh};
  if (write(e, in, &k, arg)) return 1;
  if (!squeeze) return 0;
  return lc_xe_prim(e, "Squeeze", 1, &k.id, 1, &o, "I", naxes, axes);
}

struct red_arg {
  int type, naxes;
  const int *axes;
};

static int write_reduce(struct lc_xemit *e, uint64_t in, struct lc_xout *k, const void *arg) {
  const struct red_arg *r = arg;
  return lc_xe_prim(e, "Reduce", 1, &in, 1, k, "iI", r->type, r->naxes, r->axes);
}

static int write_lse(struct lc_xemit *e, uint64_t in, struct lc_xout *k, const void *arg) {
  (void)arg;
  return lc_xe_prim(e, "LogSumExp", 1, &in, 1, k, "");
}

/* mean = sum(x as out dtype) * NumberOfElements(x, axes, inverted). */
static int ex_mean(struct lc_xemit *e, const struct lc_cinstr *ins, int naxes, const int *axes) {
  const struct lc_cval *x = &e->p->vals[ins->in[0]];
  struct lc_xout o = lc_xe_val(e, ins->out[0]);
  uint64_t xin = lc_xe_id(e, ins->in[0]);
  if (x->dtype != o.dtype) {
    struct lc_xout c = {lc_xe_new_id(e), o.dtype, x->ndim, x->shape};
    if (lc_xe_prim(e, "AsType", 1, &xin, 1, &c, "D", (int)o.dtype)) return 1;
    xin = c.id;
  }
  /* the sum (keep-dims, then squeezed like the output) under fresh ids */
  struct red_arg r = {R_SUM, naxes, axes};
  int sh[x->ndim > 0 ? x->ndim : 1];
  kept_shape(x, naxes, axes, sh);
  bool squeeze = o.ndim != x->ndim;
  struct lc_xout k = {lc_xe_new_id(e), o.dtype, x->ndim, sh};
  struct lc_xout s = {lc_xe_new_id(e), o.dtype, o.ndim, o.shape};
  if (write_reduce(e, xin, &k, &r)) return 1;
  if (squeeze && lc_xe_prim(e, "Squeeze", 1, &k.id, 1, &s, "I", naxes, axes)) return 1;
  if (!squeeze) s = k;
  struct lc_xout cnt = {lc_xe_new_id(e), o.dtype, 0, NULL};
  uint64_t xid = lc_xe_id(e, ins->in[0]);
  if (lc_xe_prim(e, "NumberOfElements", 1, &xid, 1, &cnt, "IbD", naxes, axes, 1, (int)o.dtype))
    return 1;
  struct lc_xout bc = {lc_xe_new_id(e), o.dtype, o.ndim, o.shape};
  uint64_t bin[2] = {cnt.id, s.id}; /* shapeless: broadcast against the sum */
  if (lc_xe_prim(e, "Broadcast", e->shapeless ? 2 : 1, bin, 1, &bc, "I", o.ndim, o.shape))
    return 1;
  uint64_t in2[2] = {s.id, bc.id};
  return lc_xe_prim(e, "Multiply", 2, in2, 1, &o, "");
}

/* logsumexp over any axes: the axes moved last and merged, MLX's
 * LogSumExp over the last axis, then the output's shape. */
static int ex_lse(struct lc_xemit *e, const struct lc_cinstr *ins, int naxes, const int *axes) {
  const struct lc_cval *x = &e->p->vals[ins->in[0]];
  int nd = x->ndim;
  if (naxes == 1 && axes[0] == nd - 1)
    return keep_then_squeeze(e, ins, lc_xe_id(e, ins->in[0]), x->dtype, naxes, axes, write_lse,
                             NULL);
  int perm[nd], tsh[nd], np = 0, kept = 0, red = 1;
  bool isred[nd];
  memset(isred, 0, sizeof isred);
  for (int k = 0; k < naxes; k++) isred[axes[k]] = true;
  for (int d = 0; d < nd; d++)
    if (!isred[d]) perm[np++] = d;
  kept = np;
  for (int d = 0; d < nd; d++)
    if (isred[d]) perm[np++] = d;
  for (int d = 0; d < nd; d++) tsh[d] = x->shape[perm[d]];
  uint64_t cur = lc_xe_id(e, ins->in[0]);
  struct lc_xout t = {lc_xe_new_id(e), x->dtype, nd, tsh};
  if (lc_xe_prim(e, "Transpose", 1, &cur, 1, &t, "I", nd, perm)) return 1;
  int msh[kept + 1];
  for (int d = 0; d < kept; d++) msh[d] = tsh[d];
  for (int d = kept; d < nd; d++) red *= tsh[d];
  msh[kept] = red;
  struct lc_xout m = {lc_xe_new_id(e), x->dtype, kept + 1, msh};
  if (lc_xe_prim(e, "Reshape", 1, &t.id, 1, &m, "I", kept + 1, msh)) return 1;
  int lsh[kept + 1];
  memcpy(lsh, msh, sizeof lsh);
  lsh[kept] = 1;
  struct lc_xout l = {lc_xe_new_id(e), x->dtype, kept + 1, lsh};
  if (lc_xe_prim(e, "LogSumExp", 1, &m.id, 1, &l, "")) return 1;
  struct lc_xout o = lc_xe_val(e, ins->out[0]);
  return lc_xe_prim(e, "Reshape", 1, &l.id, 1, &o, "I", o.ndim, o.shape);
}

static int ex_reduce(struct lc_xemit *e, const struct lc_cinstr *ins) {
  const int *p = ins->params; /* {kind, ddof, naxes, axes...} */
  int kind = p[0], naxes = p[2];
  const int *axes = p + 3;
  static const int to_mlx[LC_RED_NKINDS] = {
      [LC_RED_SUM] = R_SUM, [LC_RED_PROD] = R_PROD, [LC_RED_MAX] = R_MAX,
      [LC_RED_MIN] = R_MIN, [LC_RED_AND] = R_AND,   [LC_RED_OR] = R_OR};
  switch (kind) {
  case LC_RED_MEAN: return ex_mean(e, ins, naxes, axes);
  case LC_RED_LSE: return ex_lse(e, ins, naxes, axes);
  case LC_RED_VAR:
  case LC_RED_STD: return lc_xnorm_var(e, ins, kind, p[1], naxes, axes);
  default: break;
  }
  struct red_arg r = {to_mlx[kind], naxes, axes};
  return keep_then_squeeze(e, ins, lc_xe_id(e, ins->in[0]), e->p->vals[ins->out[0]].dtype, naxes,
                           axes, write_reduce, &r);
}

struct arg_arg {
  int type, axis;
};

static int write_arg(struct lc_xemit *e, uint64_t in, struct lc_xout *k, const void *arg) {
  const struct arg_arg *a = arg;
  return lc_xe_prim(e, "ArgReduce", 1, &in, 1, k, "ii", a->type, a->axis);
}

/* lace's params {kind, axis or -1 (flattened)}. */
static int ex_arg_reduce(struct lc_xemit *e, const struct lc_cinstr *ins) {
  const int *p = ins->params;
  const struct lc_cval *x = &e->p->vals[ins->in[0]];
  struct arg_arg a = {p[0] == ARG_MAX ? A_MAX : A_MIN, p[1]};
  if (p[1] >= 0)
    return keep_then_squeeze(e, ins, lc_xe_id(e, ins->in[0]), MLX_UINT32, 1, &a.axis, write_arg,
                             &a);
  int size = 1;
  for (int d = 0; d < x->ndim; d++) size *= x->shape[d];
  uint64_t xin = lc_xe_id(e, ins->in[0]);
  struct lc_xout f = {lc_xe_new_id(e), x->dtype, 1, &size};
  if (lc_xe_prim(e, "Reshape", 1, &xin, 1, &f, "I", 1, &size)) return 1;
  int one = 1;
  struct lc_xout r = {lc_xe_new_id(e), MLX_UINT32, 1, &one};
  a.axis = 0;
  if (write_arg(e, f.id, &r, &a)) return 1;
  struct lc_xout o = lc_xe_val(e, ins->out[0]);
  return lc_xe_prim(e, "Reshape", 1, &r.id, 1, &o, "I", o.ndim, o.shape);
}

static int ex_scan(struct lc_xemit *e, const struct lc_cinstr *ins) {
  const int *p = ins->params; /* {kind, axis, reverse, inclusive} */
  static const int to_mlx[5] = {[LC_SCAN_SUM] = S_SUM, [LC_SCAN_PROD] = S_PROD,
                                [LC_SCAN_MAX] = S_MAX, [LC_SCAN_MIN] = S_MIN,
                                [LC_SCAN_LOGADDEXP] = S_LOGADDEXP};
  return lc_xe_same(e, ins, "Scan", "iibb", to_mlx[p[0]], p[1], p[2], p[3]);
}

static int ex_softmax(struct lc_xemit *e, const struct lc_cinstr *ins) {
  const int *p = ins->params; /* {precise, naxes, sorted axes} */
  int nd = e->p->vals[ins->in[0]].ndim;
  if (p[1] != 1 || p[2] != nd - 1)
    return lc_error("export_function: softmax over axes other than the last cannot be exported yet");
  return lc_xe_same(e, ins, "Softmax", "b", p[0]);
}

static int ex_sort(struct lc_xemit *e, const struct lc_cinstr *ins) {
  const int *p = ins->params; /* {mode, axis or LC_SORT_FLAT, kth} */
  if (p[1] == LC_SORT_FLAT || p[0] == M_TOPK)
    return lc_error("export_function: flattened sorts and topk cannot be exported yet");
  switch (p[0]) {
  case M_SORT: return lc_xe_same(e, ins, "Sort", "i", p[1]);
  case M_ARGSORT: return lc_xe_same(e, ins, "ArgSort", "i", p[1]);
  case M_PARTITION: return lc_xe_same(e, ins, "Partition", "ii", p[2], p[1]);
  default: return lc_xe_same(e, ins, "ArgPartition", "ii", p[2], p[1]);
  }
}

static int ex_number_of_elements(struct lc_xemit *e, const struct lc_cinstr *ins) {
  const int *p = ins->params; /* {inverted, naxes or -1, axes} */
  int nd = e->p->vals[ins->in[0]].ndim, all[nd > 0 ? nd : 1];
  for (int d = 0; d < nd; d++) all[d] = d;
  bool every = p[1] < 0;
  return lc_xe_same(e, ins, "NumberOfElements", "IbD", every ? nd : p[1], every ? all : p + 2,
                    p[0], (int)e->p->vals[ins->out[0]].dtype);
}

const struct lc_xexp lc_xexp_reduce[] = {
    {LC_OP_REDUCE, ex_reduce},   {LC_OP_ARG_REDUCE, ex_arg_reduce},
    {LC_OP_SCAN, ex_scan},       {LC_OP_SOFTMAX, ex_softmax},
    {LC_OP_SORT, ex_sort},       {LC_OP_NUMBER_OF_ELEMENTS, ex_number_of_elements},
    {-1, NULL}};
