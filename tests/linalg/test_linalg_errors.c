/* Bad input to the linalg functions and multivariate_normal: each call
 * reports MLX's message through the handler and returns non-zero, at
 * build time (ranks, shapes, dtypes) or at eval (singular matrices). */
#include "la_test.h"

static mlx_array filled(mlx_dtype t, int nd, const int *shape) {
  size_t n = 1;
  for (int i = 0; i < nd; i++) n *= (size_t)shape[i];
  double *v = la_rand(n, 0);
  mlx_array a = la_array(v, nd, shape, t, 0);
  free(v);
  return a;
}

static void test_factor_errors(mlx_stream s) {
  int s3[1] = {3}, s23[2] = {2, 3}, s33[2] = {3, 3};
  mlx_array v3 = filled(MLX_FLOAT32, 1, s3), m23 = filled(MLX_FLOAT32, 2, s23);
  mlx_array i33 = filled(MLX_INT32, 2, s33), h33 = filled(MLX_FLOAT16, 2, s33);
  mlx_array c33 = filled(MLX_COMPLEX64, 2, s33), r = mlx_array_new(), r2 = mlx_array_new();
  CHECK_FAILS(mlx_linalg_inv(&r, v3, s), "Arrays must have >= 2 dimensions. Received array with 1");
  CHECK_FAILS(mlx_linalg_inv(&r, m23, s), "Inverses are only defined for square matrices.");
  CHECK_FAILS(mlx_linalg_inv(&r, i33, s), "Arrays must have type float32 or float64. Received "
                                          "array with type int32.");
  CHECK_FAILS(mlx_linalg_inv(&r, h33, s), "type float16");
  CHECK_FAILS(mlx_linalg_tri_inv(&r, m23, true, s), "square matrices");
  CHECK_FAILS(mlx_linalg_pinv(&r, v3, s), ">= 2 dimensions");
  CHECK_FAILS(mlx_linalg_pinv(&r, i33, s), "float32 or float64");
  CHECK_FAILS(mlx_linalg_cholesky(&r, m23, false, s), "Cholesky decomposition is only defined "
                                                     "for square matrices.");
  CHECK_FAILS(mlx_linalg_cholesky(&r, c33, false, s), "type complex64");
  CHECK_FAILS(mlx_linalg_cholesky_inv(&r, m23, false, s), "Cholesky inverse is only defined");
  CHECK_FAILS(mlx_linalg_qr(&r, &r2, c33, s), "float32 or float64");
  CHECK_FAILS(mlx_linalg_qr(&r, &r2, v3, s), ">= 2 dimensions");
  mlx_vector_array v = mlx_vector_array_new();
  CHECK_FAILS(mlx_linalg_svd(&v, i33, true, s), "float32, float64 or complex64");
  CHECK_FAILS(mlx_linalg_svd(&v, v3, false, s), "Input array must have >= 2 dimensions");
  CHECK_FAILS(mlx_linalg_lu(&v, i33, s), "float32 or float64");
  CHECK_FAILS(mlx_linalg_lu_factor(&r, &r2, v3, s), ">= 2 dimensions");
  CHECK_FAILS(mlx_linalg_eig(&r, &r2, m23, s), "Only defined for square matrices.");
  CHECK_FAILS(mlx_linalg_eigvals(&r, i33, s), "float32, float64 or complex64");
  CHECK_FAILS(mlx_linalg_eigh(&r, &r2, m23, "L", s), "Only defined for square matrices.");
  CHECK_FAILS(mlx_linalg_eigvalsh(&r, v3, "U", s), ">= 2 dimensions");
  CHECK_FAILS(mlx_linalg_eigh(&r, &r2, c33, "X", s), "UPLO must be 'L' or 'U'");
  CHECK_FAILS(mlx_linalg_eigvalsh(&r, c33, NULL, s), "UPLO must be 'L' or 'U', got NULL");
  CHECK_FAILS(mlx_linalg_inv(NULL, m23, s), "result pointer");
  CHECK_FAILS(mlx_linalg_qr(&r, NULL, m23, s), "result pointer");
  CHECK_FAILS(mlx_linalg_inv(&r, mlx_array_new(), s), "empty array");
  mlx_vector_array_free(v);
  mlx_array_free(v3), mlx_array_free(m23), mlx_array_free(i33), mlx_array_free(h33);
  mlx_array_free(c33), mlx_array_free(r), mlx_array_free(r2);
}

/* Singular input fails when evaluated, with MLX's eval_cpu messages. */
static void test_singular(mlx_stream s) {
  int s33[2] = {3, 3}, s233[3] = {2, 3, 3};
  double sing[9] = {1, 2, 3, 2, 4, 6, 1, 0, 1};
  double lower0[9] = {1, 0, 0, 2, 0, 0, 1, 1, 1}; /* zero diagonal entry */
  double b2[18] = {2, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3, 2, 4, 6, 1, 0, 1};
  mlx_array a = la_array(sing, 2, s33, MLX_FLOAT64, 0), l = la_array(lower0, 2, s33, MLX_FLOAT32, 1);
  mlx_array bb = la_array(b2, 3, s233, MLX_FLOAT32, 0), r = mlx_array_new();
  CHECK_OK(mlx_linalg_inv(&r, a, s));
  CHECK_FAILS(mlx_array_eval(r), "LU factorization failed with error code 2");
  CHECK_OK(mlx_linalg_inv(&r, bb, s)); /* the second matrix of the batch */
  CHECK_FAILS(mlx_array_eval(r), "LU factorization failed with error code 2");
  CHECK_OK(mlx_linalg_tri_inv(&r, l, false, s));
  CHECK_FAILS(mlx_array_eval(r), "triangular inversion failed with error code 2");
  int s3[1] = {3};
  mlx_array b = filled(MLX_FLOAT32, 1, s3);
  CHECK_OK(mlx_linalg_solve_triangular(&r, l, b, false, s));
  CHECK_FAILS(mlx_array_eval(r), "triangular inversion failed");
  /* cholesky of a matrix that is not positive definite: no error (MLX) */
  double npd[4] = {1, 2, 2, 1};
  int s22[2] = {2, 2};
  mlx_array n = la_array(npd, 2, s22, MLX_FLOAT32, 0);
  CHECK_OK(mlx_linalg_cholesky(&r, n, false, s));
  CHECK_OK(mlx_array_eval(r));
  mlx_array_free(a), mlx_array_free(l), mlx_array_free(bb), mlx_array_free(b);
  mlx_array_free(n), mlx_array_free(r);
}

static void test_solve_errors(mlx_stream s) {
  int s3[1] = {3}, s33[2] = {3, 3}, s23[2] = {2, 3}, s4[1] = {4};
  mlx_array v3 = filled(MLX_FLOAT32, 1, s3), v4 = filled(MLX_FLOAT32, 1, s4);
  mlx_array m33 = filled(MLX_FLOAT32, 2, s33), m23 = filled(MLX_FLOAT32, 2, s23);
  mlx_array i33 = filled(MLX_INT32, 2, s33), i3 = filled(MLX_INT32, 1, s3);
  mlx_array sc = mlx_array_new_float(1.0f), r = mlx_array_new();
  CHECK_FAILS(mlx_linalg_solve(&r, v3, v3, s), "First input must have >= 2 dimensions");
  CHECK_FAILS(mlx_linalg_solve(&r, m33, sc, s), "Second input must have >= 1 dimensions");
  CHECK_FAILS(mlx_linalg_solve(&r, m23, v3, s), "First input must be a square matrix");
  CHECK_FAILS(mlx_linalg_solve(&r, m33, v4, s), "Last dimension of first input");
  CHECK_FAILS(mlx_linalg_solve(&r, i33, i3, s), "Input arrays must promote to float32 or float64");
  CHECK_FAILS(mlx_linalg_solve_triangular(&r, m23, v3, true, s), "square matrix");
  CHECK_FAILS(mlx_linalg_solve(&r, m33, mlx_array_new(), s), "empty array");
  mlx_array_free(v3), mlx_array_free(v4), mlx_array_free(m33), mlx_array_free(m23);
  mlx_array_free(i33), mlx_array_free(i3), mlx_array_free(sc), mlx_array_free(r);
}

static void test_norm_errors(mlx_stream s) {
  int s234[3] = {2, 3, 4}, s3[1] = {3}, s4[1] = {4}, s33[2] = {3, 3};
  mlx_array t = filled(MLX_FLOAT32, 3, s234), v3 = filled(MLX_FLOAT32, 1, s3);
  mlx_array v4 = filled(MLX_FLOAT32, 1, s4), m = filled(MLX_FLOAT32, 2, s33);
  mlx_array i = filled(MLX_INT32, 2, s33), r = mlx_array_new();
  int ax3[3] = {0, 1, 2}, ax1[1] = {0}, ax_bad[2] = {0, 5};
  CHECK_FAILS(mlx_linalg_norm(&r, t, 2.0, NULL, 0, false, s), "Received too many axes for norm.");
  CHECK_FAILS(mlx_linalg_norm(&r, t, 2.0, ax3, 3, false, s), "too many axes");
  CHECK_FAILS(mlx_linalg_norm_l2(&r, t, ax3, 3, false, s), "too many axes");
  CHECK_FAILS(mlx_linalg_norm(&r, m, 3.0, NULL, 0, false, s), "Invalid ord 3 for matrix norm.");
  CHECK_FAILS(mlx_linalg_norm(&r, m, 1.0, ax_bad, 2, false, s), "out of bounds");
  CHECK_FAILS(mlx_linalg_norm_matrix(&r, m, "x", NULL, 0, false, s),
              "Invalid ord value 'x' for matrix norm.");
  CHECK_FAILS(mlx_linalg_norm_matrix(&r, m, "fro", ax1, 1, false, s),
              "Norm 'fro' only supported for matrices, but received 1 axis/axes.");
  CHECK_FAILS(mlx_linalg_norm_matrix(&r, m, NULL, NULL, 0, false, s), "ord is NULL");
  CHECK_FAILS(mlx_linalg_norm(&r, i, 2.0, NULL, 0, false, s), "float32, float64 or complex64");
  CHECK_FAILS(mlx_linalg_cross(&r, v4, v3, 0, s), "The specified axis must have size 2 or 3.");
  CHECK_FAILS(mlx_linalg_cross(&r, v3, v3, 1, s), "out of bounds");
  CHECK_FAILS(mlx_linalg_cross(&r, v3, v3, -2, s), "out of bounds");
  mlx_array_free(t), mlx_array_free(v3), mlx_array_free(v4), mlx_array_free(m);
  mlx_array_free(i), mlx_array_free(r);
}

static void test_mvn_errors(mlx_stream s) {
  int s3[1] = {3}, s33[2] = {3, 3}, s23[2] = {2, 3}, s22[2] = {2, 2}, sh[1] = {4};
  mlx_array mean = filled(MLX_FLOAT32, 1, s3), cov = filled(MLX_FLOAT32, 2, s33);
  mlx_array c23 = filled(MLX_FLOAT32, 2, s23), c22 = filled(MLX_FLOAT32, 2, s22);
  mlx_array sc = mlx_array_new_float(0.0f), r = mlx_array_new(), key = mlx_array_new();
  mlx_array nokey = mlx_array_new();
  mlx_random_key(&key, 1);
  CHECK_FAILS(mlx_random_multivariate_normal(&r, mean, cov, sh, 1, MLX_FLOAT64, key, s),
              "dtype must be float32.");
  CHECK_FAILS(mlx_random_multivariate_normal(&r, sc, cov, sh, 1, MLX_FLOAT32, key, s),
              "mean must have at least one dimension.");
  CHECK_FAILS(mlx_random_multivariate_normal(&r, mean, mean, sh, 1, MLX_FLOAT32, key, s),
              "cov must have at least two dimensions.");
  CHECK_FAILS(mlx_random_multivariate_normal(&r, mean, c23, sh, 1, MLX_FLOAT32, key, s),
              "last two dimensions of cov must be equal.");
  CHECK_FAILS(mlx_random_multivariate_normal(&r, mean, c22, sh, 1, MLX_FLOAT32, key, s),
              "mean and cov must have compatible shapes.");
  CHECK_FAILS(mlx_random_multivariate_normal(&r, mean, cov, NULL, 1, MLX_FLOAT32, nokey, s),
              "shape is NULL");
  mlx_array_free(mean), mlx_array_free(cov), mlx_array_free(c23), mlx_array_free(c22);
  mlx_array_free(sc), mlx_array_free(r), mlx_array_free(key), mlx_array_free(nokey);
}

int main(void) {
  test_init();
  mlx_stream s = test_stream();
  size_t before = test_active_memory();
  test_factor_errors(s);
  test_singular(s);
  test_solve_errors(s);
  test_norm_errors(s);
  test_mvn_errors(s);
  CHECK_MSG(test_active_memory() == before, "memory leaked on error paths: %zu -> %zu", before,
            test_active_memory());
  return test_done();
}
