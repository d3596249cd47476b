/* linalg values against numpy references (tests/data/linalg_ref.h, from
 * tests/gen/gen_linalg.py): inv, pinv, cholesky, cholesky_inv, tri_inv,
 * eigvalsh, svd values, solve, solve_triangular, norms, cross; and MLX's
 * conventions (lu's pivots and row order, eigvals' order) against mlx.core.
 * Each case in float32 and float64, contiguous and as a transposed view. */
#include "la_test.h"

#include "../data/linalg_ref.h"

#define NCASES(t) (sizeof(t) / sizeof((t)[0]))

static double tol_of(mlx_dtype t) { return t == MLX_FLOAT64 ? 1e-9 : 2e-4; }

/* The one-output op named op on x (0 or the API's return code). */
static int run_unary(const char *op, mlx_array *r, mlx_array x) {
  mlx_stream s = test_stream();
  if (!strcmp(op, "inv")) return mlx_linalg_inv(r, x, s);
  if (!strcmp(op, "pinv")) return mlx_linalg_pinv(r, x, s);
  if (!strcmp(op, "cholesky")) return mlx_linalg_cholesky(r, x, false, s);
  if (!strcmp(op, "cholesky_upper")) return mlx_linalg_cholesky(r, x, true, s);
  if (!strcmp(op, "cholesky_inv")) return mlx_linalg_cholesky_inv(r, x, false, s);
  if (!strcmp(op, "cholesky_inv_upper")) return mlx_linalg_cholesky_inv(r, x, true, s);
  if (!strcmp(op, "tri_inv")) return mlx_linalg_tri_inv(r, x, false, s);
  if (!strcmp(op, "tri_inv_upper")) return mlx_linalg_tri_inv(r, x, true, s);
  if (!strcmp(op, "eigvalsh")) return mlx_linalg_eigvalsh(r, x, "L", s);
  if (!strcmp(op, "svdvals")) {
    mlx_vector_array v = mlx_vector_array_new();
    int rc = mlx_linalg_svd(&v, x, false, s);
    if (!rc) rc = mlx_vector_array_get(r, v, 0);
    mlx_vector_array_free(v);
    return rc;
  }
  return 1;
}

static void check_result(const char *what, mlx_array r, int rndim, const int *rshape,
                         const double *ref, mlx_dtype t) {
  size_t n = 1;
  for (int i = 0; i < rndim; i++) n *= (size_t)rshape[i];
  CHECK_MSG(mlx_array_ndim(r) == (size_t)rndim &&
                !memcmp(mlx_array_shape(r), rshape, sizeof(int) * (size_t)rndim),
            "%s: wrong shape", what);
  CHECK_MSG(mlx_array_dtype(r) == t, "%s: dtype %d, expected %d", what, mlx_array_dtype(r), t);
  CHECK_CLOSE(r, ref, n, tol_of(t), tol_of(t));
}

static void test_unary(void) {
  const mlx_dtype dts[2] = {MLX_FLOAT32, MLX_FLOAT64};
  for (size_t c = 0; c < NCASES(la_unary_cases); c++) {
    const struct la_unary_case *k = &la_unary_cases[c];
    for (int d = 0; d < 2; d++)
      for (int tr = 0; tr < 2; tr++) {
        mlx_array x = la_array(k->a, k->ndim, k->shape, dts[d], tr), r = mlx_array_new();
        char what[96];
        snprintf(what, sizeof what, "%s case %zu %s%s", k->op, c, la_dtype_name(dts[d]),
                 tr ? " transposed" : "");
        int rc = run_unary(k->op, &r, x);
        CHECK_MSG(rc == 0, "%s failed: %s", what, test_last_error);
        if (!rc) check_result(what, r, k->rndim, k->rshape, k->r, dts[d]);
        mlx_array_free(x);
        mlx_array_free(r);
      }
  }
}

static void test_solve(void) {
  const mlx_dtype dts[2] = {MLX_FLOAT32, MLX_FLOAT64};
  mlx_stream s = test_stream();
  for (size_t c = 0; c < NCASES(la_solve_cases); c++) {
    const struct la_solve_case *k = &la_solve_cases[c];
    for (int d = 0; d < 2; d++)
      for (int tr = 0; tr < 2; tr++) {
        mlx_array a = la_array(k->a, k->andim, k->ashape, dts[d], tr);
        mlx_array b = la_array(k->b, k->bndim, k->bshape, dts[d], tr && k->bndim > 1);
        mlx_array r = mlx_array_new();
        char what[96];
        snprintf(what, sizeof what, "%s case %zu %s%s", k->op, c, la_dtype_name(dts[d]),
                 tr ? " transposed" : "");
        int rc = !strcmp(k->op, "solve") ? mlx_linalg_solve(&r, a, b, s)
                 : mlx_linalg_solve_triangular(&r, a, b, !strcmp(k->op, "solve_triangular_upper"),
                                               s);
        CHECK_MSG(rc == 0, "%s failed: %s", what, test_last_error);
        if (!rc) check_result(what, r, k->rndim, k->rshape, k->r, dts[d]);
        mlx_array_free(a);
        mlx_array_free(b);
        mlx_array_free(r);
      }
  }
}

static void test_norms(void) {
  const mlx_dtype dts[2] = {MLX_FLOAT32, MLX_FLOAT64};
  mlx_stream s = test_stream();
  for (size_t c = 0; c < NCASES(la_norm_cases); c++) {
    const struct la_norm_case *k = &la_norm_cases[c];
    const int *axes = k->naxes < 0 ? NULL : k->axes;
    size_t nax = k->naxes < 0 ? 0 : (size_t)k->naxes;
    for (int d = 0; d < 2; d++)
      for (int tr = 0; tr < 2; tr++) {
        if (tr && k->ndim < 2) continue;
        mlx_array a = la_array(k->a, k->ndim, k->shape, dts[d], tr), r = mlx_array_new();
        char what[128];
        snprintf(what, sizeof what, "norm case %zu (kind %d, ord %g '%s') %s%s", c, k->kind,
                 k->ord, k->sord, la_dtype_name(dts[d]), tr ? " transposed" : "");
        int rc = k->kind == 0   ? mlx_linalg_norm(&r, a, k->ord, axes, nax, k->keepdims, s)
                 : k->kind == 1 ? mlx_linalg_norm_matrix(&r, a, k->sord, axes, nax, k->keepdims, s)
                                : mlx_linalg_norm_l2(&r, a, axes, nax, k->keepdims, s);
        CHECK_MSG(rc == 0, "%s failed: %s", what, test_last_error);
        if (!rc) check_result(what, r, k->rndim, k->rshape, k->r, dts[d]);
        mlx_array_free(a);
        mlx_array_free(r);
      }
  }
}

static void test_cross(void) {
  const mlx_dtype dts[2] = {MLX_FLOAT32, MLX_FLOAT64};
  mlx_stream s = test_stream();
  for (size_t c = 0; c < NCASES(la_cross_cases); c++) {
    const struct la_cross_case *k = &la_cross_cases[c];
    for (int d = 0; d < 2; d++) {
      mlx_array a = la_array(k->a, k->andim, k->ashape, dts[d], k->andim > 1);
      mlx_array b = la_array(k->b, k->bndim, k->bshape, dts[d], 0), r = mlx_array_new();
      char what[64];
      snprintf(what, sizeof what, "cross case %zu %s", c, la_dtype_name(dts[d]));
      int rc = mlx_linalg_cross(&r, a, b, k->axis, s);
      CHECK_MSG(rc == 0, "%s failed: %s", what, test_last_error);
      if (!rc) check_result(what, r, k->rndim, k->rshape, k->r, dts[d]);
      mlx_array_free(a);
      mlx_array_free(b);
      mlx_array_free(r);
    }
  }
}

/* lu's row pivots and lu_factor's pivots equal MLX's exactly; eigvals
 * come in MLX's order. */
static void test_mlx_conventions(void) {
  mlx_stream s = test_stream();
  for (size_t c = 0; c < NCASES(la_mlx_cases); c++) {
    const struct la_mlx_case *k = &la_mlx_cases[c];
    for (int tr = 0; tr < 2; tr++) {
      mlx_array a = la_array(k->a, k->ndim, k->shape, MLX_FLOAT32, tr);
      if (!strcmp(k->op, "lu")) {
        mlx_vector_array v = mlx_vector_array_new();
        mlx_array p = mlx_array_new(), lu = mlx_array_new(), piv = mlx_array_new();
        CHECK_OK(mlx_linalg_lu(&v, a, s));
        CHECK(mlx_vector_array_size(v) == 3);
        mlx_vector_array_get(&p, v, 0);
        CHECK(mlx_array_dtype(p) == MLX_UINT32);
        check_result("lu row pivots", p, k->r1ndim, k->r1shape, k->r1, MLX_UINT32);
        CHECK_OK(mlx_linalg_lu_factor(&lu, &piv, a, s));
        CHECK(mlx_array_dtype(piv) == MLX_UINT32);
        check_result("lu_factor pivots", piv, k->r2ndim, k->r2shape, k->r2, MLX_UINT32);
        mlx_array_free(p);
        mlx_array_free(lu);
        mlx_array_free(piv);
        mlx_vector_array_free(v);
      } else {
        mlx_array w = mlx_array_new();
        CHECK_OK(mlx_linalg_eigvals(&w, a, s));
        CHECK(mlx_array_dtype(w) == MLX_COMPLEX64);
        double *got = la_cvalues(w);
        size_t n = mlx_array_size(w);
        size_t want = 1;
        for (int i = 0; i < k->r1ndim; i++) want *= (size_t)k->r1shape[i];
        CHECK_MSG(got && 2 * n == want && la_cmaxdiff(got, k->r1, n) < 1e-4,
                  "eigvals case %zu: order or values differ from MLX's", c);
        free(got);
        mlx_array_free(w);
      }
      mlx_array_free(a);
    }
  }
}

int main(void) {
  test_init();
  test_unary();
  test_solve();
  test_norms();
  test_cross();
  test_mlx_conventions();
  return test_done();
}
