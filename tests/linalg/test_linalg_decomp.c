/* Decompositions checked by reconstruction (their factors are not unique):
 * Q R = A with Q^H Q = I and R upper; U S Vt = A with U, Vt unitary and S
 * descending; A v = w v for eig; A V = V diag(w), V unitary, w ascending
 * for eigh (reading only the UPLO triangle); A = L[P] U for lu; L L^T = A
 * for cholesky. float32, float64 and complex64 where MLX allows it;
 * batched, contiguous and transposed views; empty matrices. */
#include "la_test.h"

static double tol_of(mlx_dtype t) { return t == MLX_FLOAT64 ? 1e-10 : 5e-5; }

/* Values of output k of a vector result as complex pairs. */
static double *vget(mlx_vector_array v, size_t k) {
  mlx_array a = mlx_array_new();
  mlx_vector_array_get(&a, v, k);
  double *r = la_cvalues(a);
  mlx_array_free(a);
  return r;
}

/* A (b batches of m x n) with random values: real or complex. */
static mlx_array make(mlx_dtype t, int nd, const int *shape, int tr, double **vals) {
  size_t n = 1;
  for (int i = 0; i < nd; i++) n *= (size_t)shape[i];
  int cplx = t == MLX_COMPLEX64;
  double *v = la_rand(n, cplx);
  mlx_array a;
  if (cplx) {
    a = la_carray(v, nd, shape);
  } else {
    for (size_t i = 0; i < n; i++) v[i] = (float)v[i]; /* the values float32 can hold */
    a = la_array(v, nd, shape, t, tr);
  }
  double *c = malloc(sizeof(double) * 2 * (n ? n : 1)); /* as complex pairs */
  for (size_t i = 0; i < n; i++) {
    c[2 * i] = cplx ? v[2 * i] : v[i];
    c[2 * i + 1] = cplx ? v[2 * i + 1] : 0;
  }
  free(v);
  *vals = c;
  return a;
}

static void test_qr(mlx_dtype t, int nd, const int *shape, int tr) {
  double *av;
  mlx_array a = make(t, nd, shape, tr, &av), q = mlx_array_new(), r = mlx_array_new();
  int m = shape[nd - 2], n = shape[nd - 1], k = m < n ? m : n;
  size_t B = 1;
  for (int i = 0; i < nd - 2; i++) B *= (size_t)shape[i];
  CHECK_OK(mlx_linalg_qr(&q, &r, a, test_stream()));
  CHECK(mlx_array_dtype(q) == t && mlx_array_dtype(r) == t);
  CHECK(mlx_array_shape(q)[nd - 1] == k && mlx_array_shape(r)[nd - 2] == k);
  double *qv = la_cvalues(q), *rv = la_cvalues(r);
  double *qr = malloc(sizeof(double) * 2 * (size_t)(m * n + 1));
  for (size_t b = 0; qv && rv && b < B; b++) {
    const double *qb = qv + 2 * b * m * k, *rb = rv + 2 * b * k * n;
    la_cmatmul(qb, rb, qr, m, k, n, 0);
    CHECK_MSG(la_cmaxdiff(qr, av + 2 * b * m * n, (size_t)m * n) < tol_of(t) * 10,
              "qr %dx%d %s: Q R != A", m, n, la_dtype_name(t));
    CHECK_MSG(la_orth_cols(qb, m, k) < tol_of(t) * 10, "qr: Q not orthonormal");
    int lower_zero = 1;
    for (int i = 0; i < k; i++)
      for (int j = 0; j < i && j < n; j++) lower_zero &= rb[2 * (i * n + j)] == 0;
    CHECK_MSG(lower_zero, "qr: R not upper triangular");
  }
  free(qr), free(qv), free(rv), free(av);
  mlx_array_free(a), mlx_array_free(q), mlx_array_free(r);
}

static void test_svd(mlx_dtype t, int nd, const int *shape, int tr) {
  double *av;
  mlx_array a = make(t, nd, shape, tr, &av);
  int m = shape[nd - 2], n = shape[nd - 1], k = m < n ? m : n;
  size_t B = 1;
  for (int i = 0; i < nd - 2; i++) B *= (size_t)shape[i];
  mlx_vector_array v = mlx_vector_array_new(), v1 = mlx_vector_array_new();
  CHECK_OK(mlx_linalg_svd(&v, a, true, test_stream()));
  CHECK_OK(mlx_linalg_svd(&v1, a, false, test_stream()));
  CHECK(mlx_vector_array_size(v) == 3 && mlx_vector_array_size(v1) == 1);
  double *u = vget(v, 0), *s = vget(v, 1), *vt = vget(v, 2), *s1 = vget(v1, 0);
  double *us = malloc(sizeof(double) * 2 * (size_t)(m * k + 1));
  double *usv = malloc(sizeof(double) * 2 * (size_t)(m * n + 1));
  double *vtk = malloc(sizeof(double) * 2 * (size_t)(k * n + 1));
  for (size_t b = 0; u && s && vt && s1 && b < B; b++) {
    const double *ub = u + 2 * b * m * m, *sb = s + 2 * b * k, *vb = vt + 2 * b * n * n;
    for (int i = 0; i < m; i++)
      for (int j = 0; j < k; j++) {
        us[2 * (i * k + j)] = ub[2 * (i * m + j)] * sb[2 * j];
        us[2 * (i * k + j) + 1] = ub[2 * (i * m + j) + 1] * sb[2 * j];
      }
    memcpy(vtk, vb, sizeof(double) * 2 * (size_t)(k * n));
    la_cmatmul(us, vtk, usv, m, k, n, 0);
    CHECK_MSG(la_cmaxdiff(usv, av + 2 * b * m * n, (size_t)m * n) < tol_of(t) * 10,
              "svd %dx%d %s: U S Vt != A", m, n, la_dtype_name(t));
    CHECK_MSG(la_orth_cols(ub, m, m) < tol_of(t) * 10, "svd: U not unitary");
    CHECK_MSG(la_orth_cols(vb, n, n) < tol_of(t) * 10, "svd: Vt not unitary");
    int sorted = 1;
    for (int j = 0; j < k; j++) sorted &= sb[2 * j] >= 0 && (j == 0 || sb[2 * j] <= sb[2 * j - 2]);
    CHECK_MSG(sorted, "svd: S not descending and non-negative");
    CHECK_MSG(la_cmaxdiff(sb, s1 + 2 * b * k, (size_t)k) < tol_of(t) * 10,
              "svd: values-only S differs");
  }
  mlx_array s0 = mlx_array_new();
  mlx_vector_array_get(&s0, v, 1);
  CHECK(mlx_array_dtype(s0) == (t == MLX_COMPLEX64 ? MLX_FLOAT32 : t));
  mlx_array_free(s0);
  free(us), free(usv), free(vtk), free(u), free(s), free(vt), free(s1), free(av);
  mlx_vector_array_free(v), mlx_vector_array_free(v1);
  mlx_array_free(a);
}

static void test_eig(mlx_dtype t, int nd, const int *shape, int tr) {
  double *av;
  mlx_array a = make(t, nd, shape, tr, &av), w = mlx_array_new(), vv = mlx_array_new();
  mlx_array w1 = mlx_array_new();
  int n = shape[nd - 1];
  size_t B = 1;
  for (int i = 0; i < nd - 2; i++) B *= (size_t)shape[i];
  CHECK_OK(mlx_linalg_eig(&w, &vv, a, test_stream()));
  CHECK_OK(mlx_linalg_eigvals(&w1, a, test_stream()));
  CHECK(mlx_array_dtype(w) == MLX_COMPLEX64 && mlx_array_dtype(vv) == MLX_COMPLEX64);
  double *wv = la_cvalues(w), *vvv = la_cvalues(vv), *w1v = la_cvalues(w1);
  double *av_ = malloc(sizeof(double) * 2 * (size_t)(n * n + 1));
  for (size_t b = 0; wv && vvv && w1v && b < B; b++) {
    const double *ab = av + 2 * b * n * n, *vb = vvv + 2 * b * n * n, *wb = wv + 2 * b * n;
    la_cmatmul(ab, vb, av_, n, n, n, 0);
    double worst = 0;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) { /* (A V)[i][j] = w_j V[i][j] */
        double vr = vb[2 * (i * n + j)], vi = vb[2 * (i * n + j) + 1];
        double er = av_[2 * (i * n + j)] - (wb[2 * j] * vr - wb[2 * j + 1] * vi);
        double ei = av_[2 * (i * n + j) + 1] - (wb[2 * j] * vi + wb[2 * j + 1] * vr);
        if (hypot(er, ei) > worst) worst = hypot(er, ei);
      }
    CHECK_MSG(worst < 1e-4, "eig %s n=%d: A v != w v (%g)", la_dtype_name(t), n, worst);
    {
      /* the same values, not always in the same order: LAPACK's QR
       * iterations differ with and without vectors for large n */
      double d = 0;
      for (int i = 0; i < n; i++) {
        double best = INFINITY;
        for (int j = 0; j < n; j++)
          best = fmin(best, hypot(wb[2 * i] - w1v[2 * (b * n + j)],
                                  wb[2 * i + 1] - w1v[2 * (b * n + j) + 1]));
        d = fmax(d, best);
      }
      CHECK_MSG(d < 1e-5 * n, "eigvals differ from eig's (%g)", d);
    }
  }
  free(av_), free(wv), free(vvv), free(w1v), free(av);
  mlx_array_free(a), mlx_array_free(w), mlx_array_free(vv), mlx_array_free(w1);
}

/* eigh reads only the UPLO triangle: the other holds noise. */
static void test_eigh(mlx_dtype t, int nd, const int *shape, int tr, const char *uplo) {
  double *av;
  mlx_array a = make(t, nd, shape, tr, &av), w = mlx_array_new(), vv = mlx_array_new();
  mlx_array w1 = mlx_array_new();
  int n = shape[nd - 1], lower = uplo[0] == 'L';
  size_t B = 1;
  for (int i = 0; i < nd - 2; i++) B *= (size_t)shape[i];
  double *h = malloc(sizeof(double) * 2 * (size_t)(n * n + 1));
  double *hv = malloc(sizeof(double) * 2 * (size_t)(n * n + 1));
  CHECK_OK(mlx_linalg_eigh(&w, &vv, a, uplo, test_stream()));
  CHECK_OK(mlx_linalg_eigvalsh(&w1, a, uplo, test_stream()));
  CHECK(mlx_array_dtype(w) == (t == MLX_COMPLEX64 ? MLX_FLOAT32 : t) && mlx_array_dtype(vv) == t);
  double *wv = la_cvalues(w), *vvv = la_cvalues(vv), *w1v = la_cvalues(w1);
  for (size_t b = 0; wv && vvv && w1v && b < B; b++) {
    const double *ab = av + 2 * b * n * n, *vb = vvv + 2 * b * n * n, *wb = wv + 2 * b * n;
    for (int i = 0; i < n; i++) /* the Hermitian matrix of the chosen triangle */
      for (int j = 0; j < n; j++) {
        int src = (lower ? i >= j : i <= j) ? i * n + j : j * n + i;
        h[2 * (i * n + j)] = ab[2 * src];
        h[2 * (i * n + j) + 1] = src == i * n + j ? ab[2 * src + 1] : -ab[2 * src + 1];
        if (i == j) h[2 * (i * n + j) + 1] = 0;
      }
    la_cmatmul(h, vb, hv, n, n, n, 0);
    double worst = 0;
    int sorted = 1;
    for (int j = 0; j < n; j++) {
      sorted &= j == 0 || wb[2 * j] >= wb[2 * j - 2];
      for (int i = 0; i < n; i++) {
        double d = hypot(hv[2 * (i * n + j)] - wb[2 * j] * vb[2 * (i * n + j)],
                         hv[2 * (i * n + j) + 1] - wb[2 * j] * vb[2 * (i * n + j) + 1]);
        if (d > worst) worst = d;
      }
    }
    CHECK_MSG(worst < tol_of(t) * 20, "eigh %s %s n=%d: A v != w v (%g)", la_dtype_name(t), uplo,
              n, worst);
    CHECK_MSG(sorted, "eigh: values not ascending");
    CHECK_MSG(la_orth_cols(vb, n, n) < tol_of(t) * 20, "eigh: V not unitary");
    CHECK_MSG(la_cmaxdiff(wb, w1v + 2 * b * n, (size_t)n) < tol_of(t) * 20,
              "eigvalsh differs from eigh");
  }
  free(h), free(hv), free(wv), free(vvv), free(w1v), free(av);
  mlx_array_free(a), mlx_array_free(w), mlx_array_free(vv), mlx_array_free(w1);
}

static void test_lu(mlx_dtype t, int nd, const int *shape, int tr) {
  double *av;
  mlx_array a = make(t, nd, shape, tr, &av);
  int m = shape[nd - 2], n = shape[nd - 1], k = m < n ? m : n;
  size_t B = 1;
  for (int i = 0; i < nd - 2; i++) B *= (size_t)shape[i];
  mlx_vector_array v = mlx_vector_array_new();
  CHECK_OK(mlx_linalg_lu(&v, a, test_stream()));
  double *p = vget(v, 0), *l = vget(v, 1), *u = vget(v, 2);
  double *lu = malloc(sizeof(double) * 2 * (size_t)(m * n + 1));
  for (size_t b = 0; p && l && u && b < B; b++) {
    const double *pb = p + 2 * b * m, *lb = l + 2 * b * m * k, *ub = u + 2 * b * k * n;
    la_cmatmul(lb, ub, lu, m, k, n, 0);
    double worst = 0;
    int shape_ok = 1;
    for (int i = 0; i < m; i++) {
      int pi = (int)pb[2 * i];
      for (int j = 0; j < n; j++) {
        double d = fabs(av[2 * (b * m * n + i * n + j)] - lu[2 * (pi * n + j)]);
        if (d > worst) worst = d;
      }
      for (int j = 0; j < k; j++)
        shape_ok &= j > i ? lb[2 * (i * k + j)] == 0 : j < i || lb[2 * (i * k + j)] == 1;
    }
    for (int i = 0; i < k; i++)
      for (int j = 0; j < i; j++) shape_ok &= ub[2 * (i * n + j)] == 0;
    CHECK_MSG(worst < tol_of(t) * 10, "lu %dx%d %s: A != L[P] U (%g)", m, n, la_dtype_name(t),
              worst);
    CHECK_MSG(shape_ok, "lu: L not unit lower or U not upper");
  }
  free(lu), free(p), free(l), free(u), free(av);
  mlx_vector_array_free(v);
  mlx_array_free(a);
}

static void test_cholesky(mlx_dtype t, int n, int batch, int upper) {
  /* A = X X^T + n I */
  size_t nn = (size_t)n * n;
  double *x = la_rand(nn * batch, 0), *av = malloc(sizeof(double) * (nn * batch + 1));
  for (int b = 0; b < batch; b++)
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) {
        double s = i == j ? n : 0;
        for (int q = 0; q < n; q++) s += x[b * nn + i * n + q] * x[b * nn + j * n + q];
        av[b * nn + i * n + j] = (float)s;
      }
  int shape[3] = {batch, n, n};
  mlx_array a = la_array(av, 3, shape, t, 1), l = mlx_array_new();
  CHECK_OK(mlx_linalg_cholesky(&l, a, upper, test_stream()));
  double *lv = test_values(l), worst = 0;
  for (int b = 0; lv && b < batch; b++)
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) {
        double s = 0;
        for (int q = 0; q < n; q++)
          s += upper ? lv[b * nn + q * n + i] * lv[b * nn + q * n + j]
                     : lv[b * nn + i * n + q] * lv[b * nn + j * n + q];
        worst = fmax(worst, fabs(s - av[b * nn + i * n + j]) / n);
        if (upper ? i > j : j > i) CHECK(lv[b * nn + i * n + j] == 0);
      }
  CHECK_MSG(worst < tol_of(t) * 10, "cholesky n=%d %s: L L^T != A (%g)", n, la_dtype_name(t),
            worst);
  free(x), free(av), free(lv);
  mlx_array_free(a), mlx_array_free(l);
}

/* Empty matrices: nothing to compute, MLX's shapes (identity factors
 * for the SVD of a matrix with one zero dimension). */
static void test_empty(void) {
  mlx_stream s = test_stream();
  int s00[2] = {0, 0}, s30[2] = {3, 0}, s03[3] = {2, 0, 3};
  mlx_array z = mlx_array_new_data(NULL, s00, 2, MLX_FLOAT32);
  mlx_array z30 = mlx_array_new_data(NULL, s30, 2, MLX_FLOAT32);
  mlx_array z03 = mlx_array_new_data(NULL, s03, 3, MLX_FLOAT64);
  mlx_array r = mlx_array_new(), q = mlx_array_new();
  CHECK_OK(mlx_linalg_inv(&r, z, s));
  CHECK_OK(mlx_array_eval(r));
  CHECK_SHAPE(r, 0, 0);
  mlx_vector_array v = mlx_vector_array_new();
  CHECK_OK(mlx_linalg_svd(&v, z30, true, s));
  mlx_vector_array_get(&r, v, 0);
  double eye3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  CHECK_CLOSE(r, eye3, 9, 0, 0);
  CHECK_OK(mlx_linalg_qr(&q, &r, z03, s));
  CHECK_OK(mlx_array_eval(q));
  CHECK_SHAPE(q, 2, 0, 0);
  CHECK_SHAPE(r, 2, 0, 3);
  CHECK_OK(mlx_linalg_lu(&v, z30, s));
  mlx_vector_array_get(&r, v, 0);
  double rows[3] = {0, 1, 2};
  CHECK_CLOSE(r, rows, 3, 0, 0);
  CHECK_OK(mlx_linalg_pinv(&r, z30, s));
  CHECK_OK(mlx_array_eval(r));
  CHECK_SHAPE(r, 0, 3);
  mlx_vector_array_free(v);
  mlx_array_free(z), mlx_array_free(z30), mlx_array_free(z03);
  mlx_array_free(r), mlx_array_free(q);
}

int main(void) {
  test_init();
  test_seed(11);
  const mlx_dtype real[2] = {MLX_FLOAT32, MLX_FLOAT64};
  const mlx_dtype all[3] = {MLX_FLOAT32, MLX_FLOAT64, MLX_COMPLEX64};
  const int shapes[][4] = {{2, 4, 4}, {2, 3, 5}, {2, 5, 3}, {2, 1, 1}, {2, 17, 9}, {2, 12, 12}};
  for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++)
    for (int tr = 0; tr < 2; tr++) {
      const int *sh = shapes[c] + 1;
      for (int d = 0; d < 2; d++) {
        test_qr(real[d], 2, sh, tr);
        test_lu(real[d], 2, sh, tr);
      }
      for (int d = 0; d < 3; d++) test_svd(all[d], 2, sh, tr && d < 2);
    }
  int b3[3] = {3, 4, 6}, big[3] = {2, 130, 130}, many[3] = {40, 6, 6};
  for (int d = 0; d < 2; d++) {
    test_qr(real[d], 3, b3, 1);
    test_lu(real[d], 3, many, 0);
    test_svd(real[d], 3, many, 1);
  }
  test_svd(MLX_FLOAT64, 3, big, 0);
  const int sq[][3] = {{1, 1, 1}, {1, 4, 4}, {3, 5, 5}, {40, 6, 6}, {1, 9, 9}};
  for (size_t c = 0; c < sizeof sq / sizeof sq[0]; c++)
    for (int d = 0; d < 3; d++) {
      test_eig(all[d], 3, sq[c], d < 2 && c % 2);
      test_eigh(all[d], 3, sq[c], d < 2 && c % 2, "L");
      test_eigh(all[d], 3, sq[c], 0, "U");
    }
  test_eig(MLX_FLOAT64, 3, big, 0);
  test_eigh(MLX_FLOAT64, 3, big, 1, "L");
  for (int d = 0; d < 2; d++) {
    test_cholesky(real[d], 5, 3, 0);
    test_cholesky(real[d], 5, 3, 1);
    test_cholesky(real[d], 110, 2, 0);
    test_cholesky(real[d], 8, 30, 1);
  }
  test_empty();
  return test_done();
}
