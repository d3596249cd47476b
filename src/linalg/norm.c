/* Norms and the cross product: compositions of ordinary ops (and of svd
 * for the spectral and nuclear norms), as MLX builds them. */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "linalg/linalg.h"
#include "ops/binary.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/unary.h"
#include "transforms/transforms.h"

#define FN "linalg::norm"

static struct lc_node *scope_result(struct lc_rule_scope *sc, struct lc_node *final) {
  struct lc_node *r = NULL;
  lc_rule_scope_end(sc, final, &r);
  return r;
}

/* x cast to t (consumes x; NULL passes through). */
static struct lc_node *cast(struct lc_node *x, mlx_dtype t) {
  struct lc_node *r = x ? lc_astype(x, t) : NULL;
  lc_node_release(x);
  return r;
}

/* sqrt(sum |a|^2) over axes. */
static struct lc_node *l2(struct lc_node *a, const int *axes, int naxes, bool keepdims) {
  struct lc_rule_scope sc = {.n = 0};
  struct lc_node *sq, *s, *r = NULL;
  if (lc_dtype_is_complex(a->dtype)) {
    struct lc_node *m;
    LC_RULE_TRY(sc, m, lc_abs(a));
    LC_RULE_TRY(sc, sq, lc_multiply(m, m));
  } else {
    LC_RULE_TRY(sc, sq, lc_square(a));
  }
  LC_RULE_TRY(sc, s, lc_sum(sq, axes, naxes, keepdims));
  LC_RULE_TRY(sc, r, lc_sqrt(s));
done:
  return scope_result(&sc, r);
}

struct lc_node *lc_linalg_norm_l2(struct lc_node *a, const int *axes, int naxes, bool keepdims) {
  if (axes) {
    if (naxes > 2) {
      lc_error("%s: Received too many axes for norm.", FN);
      return NULL;
    }
    return l2(a, axes, naxes, keepdims);
  }
  int zero = 0;
  struct lc_node *flat = lc_flatten(a, 0, -1);
  struct lc_node *r = flat ? l2(flat, &zero, 1, keepdims) : NULL;
  lc_node_release(flat);
  if (r && keepdims) { /* the rank of a, every extent 1 */
    int ones[a->ndim > 0 ? a->ndim : 1];
    for (int i = 0; i < a->ndim; i++) ones[i] = 1;
    struct lc_node *k = lc_reshape(r, a->ndim, ones);
    lc_node_release(r);
    r = k;
  }
  return r;
}

static struct lc_node *vector_norm(struct lc_node *a, double ord, const int *axes, int naxes,
                                   bool keepdims) {
  mlx_dtype t = lc_dtype_inexact(a->dtype);
  if (ord == 2.0) return l2(a, axes, naxes, keepdims);
  struct lc_rule_scope sc = {.n = 0};
  struct lc_node *x, *p, *s, *e, *r = NULL;
  if (ord == 0.0) {
    LC_RULE_TRY(sc, p, lc_node_new_scalar(MLX_INT32, 0));
    LC_RULE_TRY(sc, x, lc_not_equal(a, p));
    LC_RULE_TRY(sc, r, cast(lc_sum(x, axes, naxes, keepdims), t));
    goto done;
  }
  LC_RULE_TRY(sc, x, lc_abs(a));
  if (ord == 1.0)
    LC_RULE_TRY(sc, r, cast(lc_sum(x, axes, naxes, keepdims), t));
  else if (ord == INFINITY)
    LC_RULE_TRY(sc, r, cast(lc_max(x, axes, naxes, keepdims), t));
  else if (ord == -INFINITY)
    LC_RULE_TRY(sc, r, cast(lc_min(x, axes, naxes, keepdims), t));
  else {
    LC_RULE_TRY(sc, p, lc_node_new_scalar(t, ord));
    LC_RULE_TRY(sc, x, lc_power(x, p));
    LC_RULE_TRY(sc, s, lc_sum(x, axes, naxes, keepdims));
    LC_RULE_TRY(sc, e, lc_node_new_scalar(t, 1.0 / ord));
    LC_RULE_TRY(sc, r, lc_power(s, e));
  }
done:
  return scope_result(&sc, r);
}

/* f(singular values) over the matrices of axes (row, col), f = max
 * (which 1), min (-1) or sum (0); keepdims puts both axes back. */
static struct lc_node *singular_reduce(struct lc_node *a, int row, int col, int which,
                                       bool keepdims) {
  struct lc_rule_scope sc = {.n = 0};
  struct lc_node *m, *s, *r = NULL;
  int last = -1;
  if (row > col) {
    LC_RULE_TRY(sc, m, lc_moveaxis(a, row, -1));
    LC_RULE_TRY(sc, m, lc_moveaxis(m, col, -1));
  } else {
    LC_RULE_TRY(sc, m, lc_moveaxis(a, col, -1));
    LC_RULE_TRY(sc, m, lc_moveaxis(m, row, -2));
  }
  if (lc_linalg_svd(m, false, &s)) goto done;
  lc_rule_keep(&sc, s);
  LC_RULE_TRY(sc, r, which > 0   ? lc_max(s, &last, 1, false)
                     : which < 0 ? lc_min(s, &last, 1, false)
                                 : lc_sum(s, &last, 1, false));
  if (keepdims) {
    int ax[2] = {row < col ? row : col, row < col ? col : row};
    LC_RULE_TRY(sc, r, lc_expand_dims(r, 2, ax));
  }
done:
  return scope_result(&sc, r);
}

/* f(sum |a| over axis `inner`) over axis `outer`, f = max or min. */
static struct lc_node *abs_sum_reduce(struct lc_node *a, int inner, int outer, bool take_max,
                                      bool keepdims) {
  struct lc_rule_scope sc = {.n = 0};
  struct lc_node *x, *s, *r = NULL;
  LC_RULE_TRY(sc, x, lc_abs(a));
  LC_RULE_TRY(sc, s, lc_sum(x, &inner, 1, keepdims));
  LC_RULE_TRY(sc, r, take_max ? lc_max(s, &outer, 1, keepdims) : lc_min(s, &outer, 1, keepdims));
done:
  return scope_result(&sc, r);
}

static struct lc_node *matrix_norm(struct lc_node *a, double ord, const int *axes, bool keepdims) {
  mlx_dtype t = lc_dtype_inexact(a->dtype);
  int row = axes[0] < 0 ? axes[0] + a->ndim : axes[0];
  int col = axes[1] < 0 ? axes[1] + a->ndim : axes[1];
  if (ord == 1.0 || ord == -1.0) {
    col -= (!keepdims && col > row && col > 0);
    return cast(abs_sum_reduce(a, row, col, ord > 0, keepdims), t);
  }
  if (ord == INFINITY || ord == -INFINITY) {
    row -= (!keepdims && row > col && row > 0);
    return cast(abs_sum_reduce(a, col, row, ord > 0, keepdims), t);
  }
  if (ord == 2.0 || ord == -2.0) return cast(singular_reduce(a, row, col, ord > 0 ? 1 : -1, keepdims), t);
  lc_error("%s: Invalid ord %g for matrix norm.", FN, ord);
  return NULL;
}

struct lc_node *lc_linalg_norm(struct lc_node *a, double ord, const int *axes, int naxes,
                               bool keepdims) {
  int all[a->ndim > 0 ? a->ndim : 1];
  if (!axes) {
    for (int i = 0; i < a->ndim; i++) all[i] = i;
    axes = all;
    naxes = a->ndim;
  }
  if (naxes == 1) return vector_norm(a, ord, axes, 1, keepdims);
  if (naxes == 2) return matrix_norm(a, ord, axes, keepdims);
  lc_error("%s: Received too many axes for norm.", FN);
  return NULL;
}

struct lc_node *lc_linalg_norm_matrix(struct lc_node *a, const char *ord, const int *axes,
                                      int naxes, bool keepdims) {
  if (!ord) {
    lc_error("%s: ord is NULL", FN);
    return NULL;
  }
  int all[a->ndim > 0 ? a->ndim : 1];
  if (!axes) {
    for (int i = 0; i < a->ndim; i++) all[i] = i;
    axes = all;
    naxes = a->ndim;
  }
  if (naxes != 2) {
    lc_error("%s: Norm '%s' only supported for matrices, but received %d axis/axes.", FN, ord,
             naxes);
    return NULL;
  }
  if (!strcmp(ord, "f") || !strcmp(ord, "fro")) return l2(a, axes, 2, keepdims);
  if (!strcmp(ord, "nuc")) {
    int row = axes[0] < 0 ? axes[0] + a->ndim : axes[0];
    int col = axes[1] < 0 ? axes[1] + a->ndim : axes[1];
    return singular_reduce(a, row, col, 0, keepdims);
  }
  lc_error("%s: Invalid ord value '%s' for matrix norm.", FN, ord);
  return NULL;
}

/* ---- cross ---- */

static int cross_check(const struct lc_node *x, int axis) {
  if (lc_axis_check("linalg::cross", &axis, x->ndim)) return 1;
  if (x->shape[axis] < 2 || x->shape[axis] > 3)
    return lc_error("linalg::cross: The specified axis must have size 2 or 3.");
  return 0;
}

/* a_i b_j - a_j b_i (a missing third component counts as zero). */
static struct lc_node *cross_term(struct lc_node *const *as, struct lc_node *const *bs, int i,
                                  int j) {
  bool has_p = as[i] && bs[j], has_q = as[j] && bs[i];
  struct lc_node *p = has_p ? lc_multiply(as[i], bs[j]) : NULL;
  struct lc_node *q = has_q ? lc_multiply(as[j], bs[i]) : NULL;
  if ((has_p && !p) || (has_q && !q)) {
    lc_node_release(p);
    lc_node_release(q);
    return NULL;
  }
  if (p && q) return lc_take2(lc_subtract, p, q);
  return p ? p : lc_take1(lc_negative, q);
}

struct lc_node *lc_linalg_cross(struct lc_node *a, struct lc_node *b, int axis) {
  if (cross_check(a, axis) || cross_check(b, axis)) return NULL;
  int aa = axis < 0 ? axis + a->ndim : axis, ba = axis < 0 ? axis + b->ndim : axis;
  int ca = a->shape[aa], cb = b->shape[ba];
  mlx_dtype t = lc_dtype_promote(a->dtype, b->dtype);
  int as3[a->ndim], bs3[b->ndim], nd = a->ndim > b->ndim ? a->ndim : b->ndim, out[nd];
  memcpy(as3, a->shape, sizeof as3);
  memcpy(bs3, b->shape, sizeof bs3);
  as3[aa] = bs3[ba] = 3;
  if (lc_broadcast_shapes("linalg::cross", a->ndim, as3, b->ndim, bs3, &nd, out)) return NULL;
  if (axis < 0) axis += nd;
  struct lc_rule_scope sc = {.n = 0};
  struct lc_node *x, *y, *as[3] = {0}, *bs[3] = {0}, *parts[3], *r = NULL;
  int one = 1, two[2] = {1, 2};
  LC_RULE_TRY(sc, x, lc_astype(a, t));
  LC_RULE_TRY(sc, y, lc_astype(b, t));
  out[axis] = ca;
  LC_RULE_TRY(sc, x, lc_broadcast_to(x, nd, out));
  out[axis] = cb;
  LC_RULE_TRY(sc, y, lc_broadcast_to(y, nd, out));
  if (lc_split_sections(x, ca - 1, ca == 3 ? two : &one, axis, as)) goto done;
  for (int i = 0; i < ca; i++) lc_rule_keep(&sc, as[i]);
  if (lc_split_sections(y, cb - 1, cb == 3 ? two : &one, axis, bs)) goto done;
  for (int i = 0; i < cb; i++) lc_rule_keep(&sc, bs[i]);
  if (ca == 2 && cb == 2) {
    LC_RULE_TRY(sc, parts[0], lc_zeros_like(as[0]));
    parts[1] = parts[0];
  } else {
    LC_RULE_TRY(sc, parts[0], cross_term(as, bs, 1, 2));
    LC_RULE_TRY(sc, parts[1], cross_term(as, bs, 2, 0));
  }
  LC_RULE_TRY(sc, parts[2], cross_term(as, bs, 0, 1));
  LC_RULE_TRY(sc, r, lc_concatenate(3, parts, axis));
done:
  return scope_result(&sc, r);
}
