/* Helpers for the linalg tests: arrays from double data in a chosen dtype
 * and layout, values back as doubles (complex: interleaved pairs), and
 * float64 matrix arithmetic for reconstruction residuals. Include after
 * test.h. */
#ifndef LACE_LA_TEST_H
#define LACE_LA_TEST_H

#include "test.h"

/* An array of dtype t with the row-major values v. transposed: a
 * non-contiguous view (the swapaxes of a contiguous array holding the
 * values with the last two dims swapped); nd must be >= 2 then. */
static mlx_array la_array(const double *v, int nd, const int *shape, mlx_dtype t, int transposed) {
  size_t n = 1;
  for (int i = 0; i < nd; i++) n *= (size_t)shape[i];
  mlx_stream s = test_stream();
  mlx_array d = mlx_array_new(), r = mlx_array_new();
  if (!transposed || nd < 2) {
    mlx_array f = mlx_array_new_data(v, shape, nd, MLX_FLOAT64);
    mlx_astype(&r, f, t, s);
    mlx_array_free(f);
    mlx_array_eval(r);
    return r;
  }
  int ts[8];
  memcpy(ts, shape, sizeof(int) * (size_t)nd);
  ts[nd - 2] = shape[nd - 1];
  ts[nd - 1] = shape[nd - 2];
  int R = shape[nd - 2], C = shape[nd - 1];
  double *buf = malloc(sizeof(double) * (n ? n : 1));
  for (size_t b = 0; R > 0 && C > 0 && b < n / ((size_t)R * C); b++)
    for (int i = 0; i < R; i++)
      for (int j = 0; j < C; j++)
        buf[b * R * C + (size_t)j * R + i] = v[b * R * C + (size_t)i * C + j];
  mlx_array f = mlx_array_new_data(buf, ts, nd, MLX_FLOAT64);
  free(buf);
  mlx_astype(&d, f, t, s);
  mlx_array_eval(d);
  mlx_swapaxes(&r, d, -1, -2, s);
  mlx_array_free(f);
  mlx_array_free(d);
  return r;
}

/* Values of a complex64 (or real) array as interleaved (re, im) pairs. */
static double *la_cvalues(mlx_array a) {
  if (mlx_array_dtype(a) != MLX_COMPLEX64) { /* real: exact through float64 */
    double *v = test_values(a);
    size_t n = mlx_array_size(a);
    double *out = v ? malloc(sizeof(double) * 2 * (n ? n : 1)) : NULL;
    for (size_t i = 0; out && i < n; i++) out[2 * i] = v[i], out[2 * i + 1] = 0;
    free(v);
    return out;
  }
  mlx_stream s = test_stream();
  mlx_array c = mlx_array_new(), k = mlx_array_new();
  mlx_astype(&c, a, MLX_COMPLEX64, s);
  mlx_contiguous(&k, c, false, s);
  mlx_array_eval(k);
  const mlx_complex64_t *p = mlx_array_data_complex64(k);
  size_t n = mlx_array_size(k);
  double *out = malloc(sizeof(double) * 2 * (n ? n : 1));
  for (size_t i = 0; p && i < n; i++) out[2 * i] = crealf(p[i]), out[2 * i + 1] = cimagf(p[i]);
  mlx_array_free(c);
  mlx_array_free(k);
  if (!p) {
    free(out);
    return NULL;
  }
  return out;
}

/* max |x - y| over n complex values (interleaved). */
static double la_cmaxdiff(const double *x, const double *y, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    double d = hypot(x[2 * i] - y[2 * i], x[2 * i + 1] - y[2 * i + 1]);
    if (d > m || isnan(d)) m = isnan(d) ? INFINITY : d;
  }
  return m;
}

/* c (m x n) = a (m x k) @ b (k x n), complex interleaved; conj_a: a^H
 * (a given as k x m). */
static void la_cmatmul(const double *a, const double *b, double *c, int m, int k, int n,
                       int conj_a) {
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      double re = 0, im = 0;
      for (int l = 0; l < k; l++) {
        const double *x = conj_a ? a + 2 * ((size_t)l * m + i) : a + 2 * ((size_t)i * k + l);
        const double *y = b + 2 * ((size_t)l * n + j);
        double xr = x[0], xi = conj_a ? -x[1] : x[1];
        re += xr * y[0] - xi * y[1];
        im += xr * y[1] + xi * y[0];
      }
      c[2 * ((size_t)i * n + j)] = re;
      c[2 * ((size_t)i * n + j) + 1] = im;
    }
}

/* Checks |a^H a - I| <= tol for the columns of an r x c complex matrix. */
static double la_orth_cols(const double *a, int r, int c) {
  double *g = malloc(sizeof(double) * 2 * (size_t)(c > 0 ? c * c : 1));
  la_cmatmul(a, a, g, c, r, c, 1);
  double m = 0;
  for (int i = 0; i < c; i++)
    for (int j = 0; j < c; j++) {
      double d = hypot(g[2 * (i * c + j)] - (i == j), g[2 * (i * c + j) + 1]);
      if (d > m) m = d;
    }
  free(g);
  return m;
}

/* Random values in [-1, 1) (n reals, or n complex pairs when cplx). */
static double *la_rand(size_t n, int cplx) {
  size_t k = n * (cplx ? 2 : 1);
  double *v = malloc(sizeof(double) * (k ? k : 1));
  for (size_t i = 0; i < k; i++) v[i] = test_uniform(-1, 1);
  return v;
}

/* A complex64 array from interleaved pairs. */
static mlx_array la_carray(const double *v, int nd, const int *shape) {
  size_t n = 1;
  for (int i = 0; i < nd; i++) n *= (size_t)shape[i];
  mlx_complex64_t *buf = malloc(sizeof(mlx_complex64_t) * (n ? n : 1));
  for (size_t i = 0; i < n; i++) buf[i] = (float)v[2 * i] + (float)v[2 * i + 1] * I;
  mlx_array a = mlx_array_new_data(buf, shape, nd, MLX_COMPLEX64);
  free(buf);
  return a;
}

static const char *la_dtype_name(mlx_dtype t) {
  return t == MLX_FLOAT32 ? "float32" : t == MLX_FLOAT64 ? "float64" : "complex64";
}

#endif
