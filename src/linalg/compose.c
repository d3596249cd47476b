/* linalg functions that MLX builds from its primitives and ordinary ops:
 * inv, tri_inv, cholesky_inv, pinv, lu, lu_factor, solve,
 * solve_triangular. Their transforms are those of the parts.
 * Temporaries live in a rule scope (transforms/transforms.h), released
 * together at the end. */
#include <float.h>
#include <string.h>

#include "core/error.h"
#include "linalg/la_internal.h"
#include "linalg/linalg.h"
#include "ops/binary.h"
#include "ops/creation.h"
#include "ops/index.h"
#include "ops/linalg.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/sort.h"
#include "ops/ternary.h"
#include "ops/unary.h"
#include "transforms/transforms.h"

/* The scope's result: final retained (NULL after a failure). */
static struct lc_node *scope_result(struct lc_rule_scope *sc, struct lc_node *final) {
  struct lc_node *r = NULL;
  lc_rule_scope_end(sc, final, &r);
  return r;
}

struct lc_node *lc_linalg_inv(struct lc_node *a) { return lc_la_inverse(a, false, false); }

struct lc_node *lc_linalg_tri_inv(struct lc_node *a, bool upper) {
  return lc_la_inverse(a, true, upper);
}

/* (L L^T)^-1 = L^-T L^-1 from the factor L (U^T U when upper). */
struct lc_node *lc_linalg_cholesky_inv(struct lc_node *l, bool upper) {
  const char *fn = "linalg::cholesky_inv";
  if (la_check_float(fn, l->dtype) || la_check_matrix(fn, l) ||
      la_check_square(fn, l, "Cholesky inverse is only defined for square matrices."))
    return NULL;
  struct lc_rule_scope sc = {.n = 0};
  struct lc_node *li, *lt, *r = NULL;
  LC_RULE_TRY(sc, li, lc_linalg_tri_inv(l, upper));
  LC_RULE_TRY(sc, lt, lc_swapaxes(li, -1, -2));
  LC_RULE_TRY(sc, r, upper ? lc_matmul(li, lt) : lc_matmul(lt, li));
done:
  return scope_result(&sc, r);
}

/* V diag(1/S) U^T, singular values at most rcond * max(S) counting as
 * zero, rcond = 10 max(m, n) eps. */
struct lc_node *lc_linalg_pinv(struct lc_node *a) {
  const char *fn = "linalg::pinv";
  if (la_check_float(fn, a->dtype) || la_check_matrix(fn, a)) return NULL;
  int nd = a->ndim, m = a->shape[nd - 2], n = a->shape[nd - 1], k = m < n ? m : n;
  mlx_dtype t = a->dtype;
  if (a->size == 0) { /* the transposed shape, like numpy */
    int shape[nd];
    memcpy(shape, a->shape, sizeof shape);
    shape[nd - 2] = n;
    shape[nd - 1] = m;
    return lc_zeros(nd, shape, t);
  }
  double rcond = 10.0 * (m > n ? m : n) * (t == MLX_FLOAT64 ? DBL_EPSILON : FLT_EPSILON);
  int last = -1, before_last = -2;
  struct lc_rule_scope sc = {.n = 0};
  struct lc_node *usv[3], *u, *v, *s, *smax, *rc, *cut, *keep, *rs, *zero, *vr, *r = NULL;
  if (lc_linalg_svd(a, true, usv)) return NULL;
  for (int i = 0; i < 3; i++) lc_rule_keep(&sc, usv[i]);
  LC_RULE_TRY(sc, u, lc_slice_axis(usv[0], nd - 1, 0, k));
  LC_RULE_TRY(sc, u, lc_swapaxes(u, -1, -2));  /* k x m */
  LC_RULE_TRY(sc, v, lc_slice_axis(usv[2], nd - 2, 0, k));
  LC_RULE_TRY(sc, v, lc_swapaxes(v, -1, -2));  /* n x k */
  LC_RULE_TRY(sc, s, lc_expand_dims(usv[1], 1, &before_last)); /* 1 x k */
  LC_RULE_TRY(sc, smax, lc_max(s, &last, 1, true));
  LC_RULE_TRY(sc, rc, lc_node_new_scalar(t, rcond));
  LC_RULE_TRY(sc, cut, lc_multiply(rc, smax));
  LC_RULE_TRY(sc, keep, lc_greater(s, cut));
  LC_RULE_TRY(sc, rs, lc_reciprocal(s));
  LC_RULE_TRY(sc, zero, lc_node_new_scalar(t, 0.0));
  LC_RULE_TRY(sc, rs, lc_where(keep, rs, zero));
  LC_RULE_TRY(sc, vr, lc_multiply(v, rs));
  LC_RULE_TRY(sc, r, lc_matmul(vr, u));
done:
  return scope_result(&sc, r);
}

/* L (unit lower, m x k) and U (upper, k x n) from the packed LU. */
static int lu_split(struct lc_node *lu, int m, int n, struct lc_node **l_out,
                    struct lc_node **u_out) {
  int nd = lu->ndim, k = m < n ? m : n;
  struct lc_rule_scope sc = {.n = 0};
  struct lc_node *l, *u, *eye, *r = NULL;
  LC_RULE_TRY(sc, l, lc_tril(lu, -1, false));
  LC_RULE_TRY(sc, u, lc_tril(lu, 0, true));
  if (n != k) LC_RULE_TRY(sc, l, lc_slice_axis(l, nd - 1, 0, k));
  else if (m != k) LC_RULE_TRY(sc, u, lc_slice_axis(u, nd - 2, 0, k));
  LC_RULE_TRY(sc, eye, lc_eye(m, k, 0, lu->dtype));
  LC_RULE_TRY(sc, r, lc_add(l, eye));
  *u_out = lc_node_retain(u);
done:
  if (lc_rule_scope_end(&sc, r, l_out)) return 1;
  return 0;
}

int lc_linalg_lu(struct lc_node *a, struct lc_node **outs) {
  struct lc_node *f[3];
  if (lc_la_luf("linalg::lu", a, f)) return 1;
  int nd = a->ndim;
  int rc = lu_split(f[0], a->shape[nd - 2], a->shape[nd - 1], &outs[1], &outs[2]);
  if (!rc) outs[0] = lc_node_retain(f[2]);
  for (int i = 0; i < 3; i++) lc_node_release(f[i]);
  return rc;
}

int lc_linalg_lu_factor(struct lc_node *a, struct lc_node **lu, struct lc_node **pivots) {
  struct lc_node *f[3];
  if (lc_la_luf("linalg::lu_factor", a, f)) return 1;
  *lu = f[0];
  *pivots = f[1];
  lc_node_release(f[2]);
  return 0;
}

/* MLX's checks of solve and solve_triangular. */
static int validate_solve(const char *fn, const struct lc_node *a, const struct lc_node *b) {
  char sa[256], sb[256];
  if (a->ndim < 2)
    return lc_error("%s: First input must have >= 2 dimensions. Received array with %d "
                    "dimensions.", fn, a->ndim);
  if (b->ndim < 1)
    return lc_error("%s: Second input must have >= 1 dimensions. Received array with %d "
                    "dimensions.", fn, b->ndim);
  if (a->shape[a->ndim - 1] != a->shape[a->ndim - 2])
    return lc_error("%s: First input must be a square matrix. Received array with shape %s.", fn,
                    lc_shape_str(a->ndim, a->shape, sa, sizeof sa));
  int bdim = b->ndim > 1 ? b->ndim - 2 : b->ndim - 1;
  if (a->shape[a->ndim - 1] != b->shape[bdim])
    return lc_error("%s: Last dimension of first input with shape %s must match second to last "
                    "dimension of second input with shape %s.", fn,
                    lc_shape_str(a->ndim, a->shape, sa, sizeof sa),
                    lc_shape_str(b->ndim, b->shape, sb, sizeof sb));
  mlx_dtype t = lc_dtype_promote(a->dtype, b->dtype);
  if (t != MLX_FLOAT32 && t != MLX_FLOAT64)
    return lc_error("%s: Input arrays must promote to float32 or float64.  Received arrays with "
                    "type %s and %s.", fn, lc_dtype_name(a->dtype), lc_dtype_name(b->dtype));
  return 0;
}

struct lc_node *lc_linalg_solve_triangular(struct lc_node *a, struct lc_node *b, bool upper) {
  if (validate_solve("linalg::solve_triangular", a, b)) return NULL;
  struct lc_node *ai = lc_linalg_tri_inv(a, upper);
  struct lc_node *r = ai ? lc_matmul(ai, b) : NULL;
  lc_node_release(ai);
  return r;
}

/* P A = L U: x = U^-1 L^-1 (P b), P b gathering b's rows by argsort of
 * the row indices. */
struct lc_node *lc_linalg_solve(struct lc_node *a, struct lc_node *b) {
  if (validate_solve("linalg::solve", a, b)) return NULL;
  struct lc_rule_scope sc = {.n = 0};
  struct lc_node *plu[3], *perm, *pb, *y, *x = NULL;
  if (lc_linalg_lu(a, plu)) return NULL;
  for (int i = 0; i < 3; i++) lc_rule_keep(&sc, plu[i]);
  int take_axis = -1, last = -1;
  LC_RULE_TRY(sc, perm, lc_argsort(plu[0], -1));
  if (b->ndim >= 2) {
    LC_RULE_TRY(sc, perm, lc_expand_dims(perm, 1, &last));
    take_axis = -2;
  }
  LC_RULE_TRY(sc, pb, lc_take_along_axis(b, perm, take_axis));
  LC_RULE_TRY(sc, y, lc_linalg_solve_triangular(plu[1], pb, false));
  LC_RULE_TRY(sc, x, lc_linalg_solve_triangular(plu[2], y, true));
done:
  return scope_result(&sc, x);
}
