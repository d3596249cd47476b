/* Public linalg functions (linalg.h): checks, then linalg/linalg.h.
 * Norm axes: a NULL pointer means MLX's "no axis" whatever axis_num is. */
#include "api/api.h"
#include "api/handles.h"
#include "linalg/linalg.h"

/* One array in, one out: a -> builder(a, extra). */
#define LA_UNARY(NAME, CALL)                                                  \
  int mlx_linalg_##NAME(mlx_array *res, const mlx_array a, const mlx_stream s) { \
    LC_API_PROLOGUE("mlx_linalg_" #NAME, res, a);                             \
    struct lc_node *x = lc_arr(a);                                            \
    return lc_api_set(res, CALL);                                             \
  }
#define LA_UNARY_UPPER(NAME, CALL)                                            \
  int mlx_linalg_##NAME(mlx_array *res, const mlx_array a, bool upper,        \
                        const mlx_stream s) {                                 \
    LC_API_PROLOGUE("mlx_linalg_" #NAME, res, a);                             \
    struct lc_node *x = lc_arr(a);                                            \
    return lc_api_set(res, CALL);                                             \
  }

LA_UNARY(inv, lc_linalg_inv(x))
LA_UNARY(pinv, lc_linalg_pinv(x))
LA_UNARY(eigvals, lc_linalg_eigvals(x))
LA_UNARY_UPPER(tri_inv, lc_linalg_tri_inv(x, upper))
LA_UNARY_UPPER(cholesky, lc_linalg_cholesky(x, upper))
LA_UNARY_UPPER(cholesky_inv, lc_linalg_cholesky_inv(x, upper))

int mlx_linalg_eigvalsh(mlx_array *res, const mlx_array a, const char *UPLO, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_linalg_eigvalsh", res, a);
  return lc_api_set(res, lc_linalg_eigvalsh(lc_arr(a), UPLO));
}

/* Stores two builder outputs (consumed) into res_0 and res_1. */
static int set_pair(mlx_array *res_0, mlx_array *res_1, int rc, struct lc_node *x,
                    struct lc_node *y) {
  if (rc) return 1;
  lc_api_set(res_0, x);
  return lc_api_set(res_1, y);
}

#define LA_PAIR_PROLOGUE(fn)   \
  LC_CHECK_RES(fn, res_0);     \
  LC_CHECK_RES(fn, res_1);     \
  LC_CHECK_ARR(fn, a);         \
  if (lc_api_check_stream(fn, s)) return 1

int mlx_linalg_qr(mlx_array *res_0, mlx_array *res_1, const mlx_array a, const mlx_stream s) {
  LA_PAIR_PROLOGUE("mlx_linalg_qr");
  struct lc_node *q = NULL, *r = NULL;
  int rc = lc_linalg_qr(lc_arr(a), &q, &r);
  return set_pair(res_0, res_1, rc, q, r);
}

int mlx_linalg_eig(mlx_array *res_0, mlx_array *res_1, const mlx_array a, const mlx_stream s) {
  LA_PAIR_PROLOGUE("mlx_linalg_eig");
  struct lc_node *w = NULL, *v = NULL;
  int rc = lc_linalg_eig(lc_arr(a), &w, &v);
  return set_pair(res_0, res_1, rc, w, v);
}

int mlx_linalg_eigh(mlx_array *res_0, mlx_array *res_1, const mlx_array a, const char *UPLO,
                    const mlx_stream s) {
  LA_PAIR_PROLOGUE("mlx_linalg_eigh");
  struct lc_node *w = NULL, *v = NULL;
  int rc = lc_linalg_eigh(lc_arr(a), UPLO, &w, &v);
  return set_pair(res_0, res_1, rc, w, v);
}

int mlx_linalg_lu_factor(mlx_array *res_0, mlx_array *res_1, const mlx_array a,
                         const mlx_stream s) {
  LA_PAIR_PROLOGUE("mlx_linalg_lu_factor");
  struct lc_node *lu = NULL, *piv = NULL;
  int rc = lc_linalg_lu_factor(lc_arr(a), &lu, &piv);
  return set_pair(res_0, res_1, rc, lu, piv);
}

/* Stores n builder outputs (consumed) into the vector *res. */
static int set_vector(mlx_vector_array *res, int rc, struct lc_node **out, size_t n) {
  if (rc) return 1;
  rc = lc_vec_array_assign(res, out, n);
  for (size_t i = 0; i < n; i++) lc_node_release(out[i]);
  return rc;
}

int mlx_linalg_lu(mlx_vector_array *res, const mlx_array a, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_linalg_lu", res, a);
  struct lc_node *out[3];
  int rc = lc_linalg_lu(lc_arr(a), out);
  return set_vector(res, rc, out, 3);
}

int mlx_linalg_svd(mlx_vector_array *res, const mlx_array a, bool compute_uv, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_linalg_svd", res, a);
  struct lc_node *out[3];
  int rc = lc_linalg_svd(lc_arr(a), compute_uv, out);
  return set_vector(res, rc, out, compute_uv ? 3 : 1);
}

#define LA_BINARY_PROLOGUE(fn) \
  LC_CHECK_RES(fn, res);       \
  LC_CHECK_ARR(fn, a);         \
  LC_CHECK_ARR(fn, b);         \
  if (lc_api_check_stream(fn, s)) return 1

int mlx_linalg_solve(mlx_array *res, const mlx_array a, const mlx_array b, const mlx_stream s) {
  LA_BINARY_PROLOGUE("mlx_linalg_solve");
  return lc_api_set(res, lc_linalg_solve(lc_arr(a), lc_arr(b)));
}

int mlx_linalg_solve_triangular(mlx_array *res, const mlx_array a, const mlx_array b, bool upper,
                                const mlx_stream s) {
  LA_BINARY_PROLOGUE("mlx_linalg_solve_triangular");
  return lc_api_set(res, lc_linalg_solve_triangular(lc_arr(a), lc_arr(b), upper));
}

int mlx_linalg_cross(mlx_array *res, const mlx_array a, const mlx_array b, int axis,
                     const mlx_stream s) {
  LA_BINARY_PROLOGUE("mlx_linalg_cross");
  return lc_api_set(res, lc_linalg_cross(lc_arr(a), lc_arr(b), axis));
}

/* axis NULL: no axis; else at most LC_API_MAX_DIMS entries. */
static int check_axes(const char *fn, const int *axis, size_t num) {
  if (axis && num > LC_API_MAX_DIMS) return lc_error("%s: too many axes (%zu)", fn, num);
  return 0;
}

int mlx_linalg_norm(mlx_array *res, const mlx_array a, double ord, const int *axis,
                    size_t axis_num, bool keepdims, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_linalg_norm", res, a);
  if (check_axes("mlx_linalg_norm", axis, axis_num)) return 1;
  return lc_api_set(res, lc_linalg_norm(lc_arr(a), ord, axis, (int)axis_num, keepdims));
}

int mlx_linalg_norm_matrix(mlx_array *res, const mlx_array a, const char *ord, const int *axis,
                           size_t axis_num, bool keepdims, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_linalg_norm_matrix", res, a);
  if (check_axes("mlx_linalg_norm_matrix", axis, axis_num)) return 1;
  return lc_api_set(res, lc_linalg_norm_matrix(lc_arr(a), ord, axis, (int)axis_num, keepdims));
}

int mlx_linalg_norm_l2(mlx_array *res, const mlx_array a, const int *axis, size_t axis_num,
                       bool keepdims, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_linalg_norm_l2", res, a);
  if (check_axes("mlx_linalg_norm_l2", axis, axis_num)) return 1;
  return lc_api_set(res, lc_linalg_norm_l2(lc_arr(a), axis, (int)axis_num, keepdims));
}
