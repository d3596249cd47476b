/* Writing lace's variance, standard deviation, RMS norm and layer norm as
 * the MLX primitives MLX's own ops (and fast ops' CPU fallbacks) compose
 * them from, so MLX's CPU backend runs them:
 *   var = sum((x - mean(x))^2) / (n - ddof), std = sqrt(var);
 *   rms_norm = x * rsqrt(mean(x^2, -1) + eps) [* w];
 *   layer_norm = (x - mean) * rsqrt(mean((x - mean)^2, -1) + eps) [* w] [+ b].
 * Reductions keep their axes; constants are 0-d arrays broadcast to the
 * shape they meet. Half-precision inputs compute in float32. */
#include <string.h>

#include "core/error.h"
#include "export/export.h"
#include "ops/prim.h"
#include "ops/reduce.h"

enum { R_SUM = 2 }; /* MLX's Reduce::ReduceType */

/* A value being written: id, dtype, shape. */
struct val {
  uint64_t id;
  mlx_dtype dt;
  int nd;
  const int *sh;
};

static struct lc_xout out_of(struct val v) { return (struct lc_xout){v.id, v.dt, v.nd, v.sh}; }

/* Each step writes one primitive into a fresh value (or into `last` when
 * given, for the instruction's own output); id 0 after a failure. Sqrt's
 * state: recip. */
static struct val sqrt_of(struct lc_xemit *e, struct val a, bool recip, int nd, const int *sh,
                          uint64_t last) {
  struct val r = {last ? last : lc_xe_new_id(e), a.dt, nd, sh};
  struct lc_xout o = out_of(r);
  if (!a.id || lc_xe_prim(e, "Sqrt", 1, &a.id, 1, &o, "b", recip)) r.id = 0;
  return r;
}

static struct val cast(struct lc_xemit *e, struct val a, mlx_dtype dt, uint64_t last) {
  if (a.dt == dt && !last) return a;
  struct val r = {last ? last : lc_xe_new_id(e), dt, a.nd, a.sh};
  struct lc_xout o = out_of(r);
  if (!a.id || lc_xe_prim(e, "AsType", 1, &a.id, 1, &o, "D", (int)dt)) r.id = 0;
  return r;
}

static struct val bcast(struct lc_xemit *e, struct val a, int nd, const int *sh) {
  if (!a.id || lc_shape_equal(a.nd, a.sh, nd, sh)) return a;
  struct val r = {lc_xe_new_id(e), a.dt, nd, sh};
  struct lc_xout o = out_of(r);
  if (lc_xe_prim(e, "Broadcast", 1, &a.id, 1, &o, "I", nd, sh)) r.id = 0;
  return r;
}

/* a op b, b broadcast to a's shape first. */
static struct val binary(struct lc_xemit *e, const char *name, struct val a, struct val b,
                         uint64_t last) {
  b = bcast(e, b, a.nd, a.sh);
  struct val r = {last ? last : lc_xe_new_id(e), a.dt, a.nd, a.sh};
  uint64_t in[2] = {a.id, b.id};
  struct lc_xout o = out_of(r);
  if (!a.id || !b.id || lc_xe_prim(e, name, 2, in, 1, &o, "")) r.id = 0;
  return r;
}

static struct val scalar(struct lc_xemit *e, mlx_dtype dt, double v) {
  struct val r = {0, dt, 0, NULL};
  if (lc_xe_scalar(e, dt, v, &r.id)) r.id = 0;
  return r;
}

/* Sum over axes keeping them; shape storage in sh (a.nd entries). */
static struct val sum_keep(struct lc_xemit *e, struct val a, int naxes, const int *axes, int *sh) {
  memcpy(sh, a.sh, sizeof(int) * (size_t)a.nd);
  for (int k = 0; k < naxes; k++) sh[axes[k]] = 1;
  struct val r = {lc_xe_new_id(e), a.dt, a.nd, sh};
  struct lc_xout o = out_of(r);
  if (!a.id || lc_xe_prim(e, "Reduce", 1, &a.id, 1, &o, "iI", R_SUM, naxes, axes)) r.id = 0;
  return r;
}

static double count(struct val a, int naxes, const int *axes) {
  double n = 1;
  for (int k = 0; k < naxes; k++) n *= a.sh[axes[k]];
  return n;
}

static mlx_dtype compute_dtype(mlx_dtype t) {
  return t == MLX_FLOAT16 || t == MLX_BFLOAT16 ? MLX_FLOAT32 : t;
}

/* ---- var / std (REDUCE of kind VAR or STD) ---- */

int lc_xnorm_var(struct lc_xemit *e, const struct lc_cinstr *ins, int kind, int ddof, int naxes,
                 const int *axes) {
  const struct lc_cval *xv = &e->p->vals[ins->in[0]];
  struct lc_xout o = lc_xe_val(e, ins->out[0]);
  if (xv->dtype == MLX_COMPLEX64 || xv->ndim > 64)
    return lc_error("export_function: var/std of this input cannot be exported");
  int nd = xv->ndim, msh[64], ssh[64];
  struct val x = cast(e, (struct val){lc_xe_id(e, ins->in[0]), xv->dtype, nd, xv->shape}, o.dtype, 0);
  double n = count(x, naxes, axes);
  struct val m = binary(e, "Multiply", sum_keep(e, x, naxes, axes, msh), scalar(e, o.dtype, 1.0 / n), 0);
  struct val d = binary(e, "Subtract", x, m, 0);
  struct val s = sum_keep(e, binary(e, "Multiply", d, d, 0), naxes, axes, ssh);
  double den = n - ddof > 0 ? 1.0 / (n - ddof) : (n - ddof == 0 ? 1.0 / 0.0 : -1.0 / 0.0);
  bool squeeze = o.ndim != nd, root = kind == LC_RED_STD;
  struct val v = binary(e, "Multiply", s, scalar(e, o.dtype, den), squeeze || root ? 0 : o.id);
  if (root) v = sqrt_of(e, v, false, nd, ssh, squeeze ? 0 : o.id);
  if (!v.id) return 1;
  if (!squeeze) return 0;
  return lc_xe_prim(e, "Squeeze", 1, &v.id, 1, &o, "I", naxes, axes);
}

/* ---- fast norms ---- */

/* lace's params (ops/fast_norm.c) {eps, has_weight, has_bias}; inputs x,
 * then weight and bias, all of the output's dtype. */
struct norm_params {
  float eps;
  int has_weight, has_bias;
};

static int ex_norm(struct lc_xemit *e, const struct lc_cinstr *ins) {
  struct norm_params p;
  if (ins->params_size != sizeof p) return lc_error("internal: norm params changed layout");
  memcpy(&p, ins->params, sizeof p);
  const struct lc_cval *xv = &e->p->vals[ins->in[0]];
  int nd = xv->ndim, last = nd - 1, ksh[64], vsh[64];
  if (nd > 64) return lc_error("export_function: norm of a %d-d array", nd);
  mlx_dtype t = xv->dtype, ct = compute_dtype(t);
  uint64_t out = lc_xe_id(e, ins->out[0]);
  int k = 1;
  struct val w = {0}, b = {0};
  if (p.has_weight) {
    const struct lc_cval *v = &e->p->vals[ins->in[k]];
    w = (struct val){lc_xe_id(e, ins->in[k++]), v->dtype, v->ndim, v->shape};
  }
  if (p.has_bias) {
    const struct lc_cval *v = &e->p->vals[ins->in[k]];
    b = (struct val){lc_xe_id(e, ins->in[k]), v->dtype, v->ndim, v->shape};
  }
  struct val x = cast(e, (struct val){lc_xe_id(e, ins->in[0]), t, nd, xv->shape}, ct, 0);
  struct val inv_n = scalar(e, ct, 1.0 / xv->shape[last]);
  if (ins->op == LC_OP_FAST_LAYER_NORM) {
    struct val m = binary(e, "Multiply", sum_keep(e, x, 1, &last, ksh), inv_n, 0);
    x = binary(e, "Subtract", x, m, 0);
  }
  struct val ms = binary(e, "Multiply", sum_keep(e, binary(e, "Multiply", x, x, 0), 1, &last, vsh),
                         inv_n, 0);
  ms = binary(e, "Add", ms, scalar(e, ct, p.eps), 0);
  struct val r = sqrt_of(e, ms, true, nd, vsh, 0);
  bool affine = w.id || b.id;
  struct val y = binary(e, "Multiply", x, r, affine || ct != t ? 0 : out);
  y = cast(e, y, t, affine ? 0 : (ct != t ? out : 0));
  if (w.id) y = binary(e, "Multiply", y, w, b.id ? 0 : out);
  if (b.id) y = binary(e, "Add", y, b, out);
  return !y.id;
}

const struct lc_xexp lc_xexp_norm[] = {
    {LC_OP_FAST_RMS_NORM, ex_norm}, {LC_OP_FAST_LAYER_NORM, ex_norm}, {-1, NULL}};
