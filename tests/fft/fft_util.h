/* Helpers shared by the FFT tests: complex arrays from (re, im) pairs,
 * values back as pairs, the transforms by number (gen_fft.py's order), a
 * direct DFT in double and a norm-wise comparison. Include after test.h. */
#ifndef LACE_TEST_FFT_UTIL_H
#define LACE_TEST_FFT_UTIL_H

#include <complex.h>

#include "test.h"

enum { F_FFT, F_IFFT, F_RFFT, F_IRFFT, F_FFT2, F_IFFT2, F_RFFT2, F_IRFFT2, F_FFTN, F_IFFTN,
       F_RFFTN, F_IRFFTN };

/* complex64 array from n (re, im) pairs */
static mlx_array fu_complex(const double *pairs, const int *shape, int nd) {
  size_t n = 1;
  for (int d = 0; d < nd; d++) n *= (size_t)shape[d];
  float _Complex *b = malloc(sizeof *b * (n ? n : 1));
  for (size_t i = 0; i < n; i++) b[i] = (float)pairs[2 * i] + I * (float)pairs[2 * i + 1];
  mlx_array a = mlx_array_new_data(b, shape, nd, MLX_COMPLEX64);
  free(b);
  return a;
}

static mlx_array fu_real(const double *v, const int *shape, int nd) {
  size_t n = 1;
  for (int d = 0; d < nd; d++) n *= (size_t)shape[d];
  float *b = malloc(sizeof *b * (n ? n : 1));
  for (size_t i = 0; i < n; i++) b[i] = (float)v[i];
  mlx_array a = mlx_array_new_data(b, shape, nd, MLX_FLOAT32);
  free(b);
  return a;
}

/* a's values as (re, im) pairs (imaginary 0 for real a); malloc'd. */
static double *fu_pairs(mlx_array a) {
  mlx_array re = mlx_array_new(), im = mlx_array_new();
  double *r = NULL, *i = NULL, *p = NULL;
  size_t n = mlx_array_size(a);
  if (!mlx_real(&re, a, test_stream()) && !mlx_imag(&im, a, test_stream())) {
    r = test_values(re);
    i = test_values(im);
  }
  if (r && i) {
    p = malloc(sizeof(double) * 2 * (n ? n : 1));
    for (size_t k = 0; k < n; k++) p[2 * k] = r[k], p[2 * k + 1] = i[k];
  }
  free(r);
  free(i);
  mlx_array_free(re);
  mlx_array_free(im);
  return p;
}

/* Transform number fn of a: 1-D ones take n[0] and axes[0]. */
static int fu_call(int fn, mlx_array *res, mlx_array a, const int *n, int nn, const int *axes,
                   int na, mlx_fft_norm norm) {
  mlx_stream s = test_stream();
  size_t zn = (size_t)nn, za = (size_t)na;
  switch (fn) {
  case F_FFT: return mlx_fft_fft(res, a, n[0], axes[0], norm, s);
  case F_IFFT: return mlx_fft_ifft(res, a, n[0], axes[0], norm, s);
  case F_RFFT: return mlx_fft_rfft(res, a, n[0], axes[0], norm, s);
  case F_IRFFT: return mlx_fft_irfft(res, a, n[0], axes[0], norm, s);
  case F_FFT2: return mlx_fft_fft2(res, a, n, zn, axes, za, norm, s);
  case F_IFFT2: return mlx_fft_ifft2(res, a, n, zn, axes, za, norm, s);
  case F_RFFT2: return mlx_fft_rfft2(res, a, n, zn, axes, za, norm, s);
  case F_IRFFT2: return mlx_fft_irfft2(res, a, n, zn, axes, za, norm, s);
  case F_FFTN: return mlx_fft_fftn(res, a, n, zn, axes, za, norm, s);
  case F_IFFTN: return mlx_fft_ifftn(res, a, n, zn, axes, za, norm, s);
  case F_RFFTN: return mlx_fft_rfftn(res, a, n, zn, axes, za, norm, s);
  default: return mlx_fft_irfftn(res, a, n, zn, axes, za, norm, s);
  }
}

/* Largest |got - ref| over n pairs, relative to the largest |ref| (floored
 * at 1e-30); writes the index of the worst pair to *at. */
static double fu_rel_err(const double *got, const double *ref, size_t n, size_t *at) {
  double emax = 0, rmax = 1e-30;
  *at = 0;
  for (size_t k = 0; k < n; k++) {
    double e = hypot(got[2 * k] - ref[2 * k], got[2 * k + 1] - ref[2 * k + 1]);
    double r = hypot(ref[2 * k], ref[2 * k + 1]);
    if (r > rmax) rmax = r;
    if (e > emax || isnan(e)) emax = isnan(e) ? INFINITY : e, *at = k;
  }
  return emax / rmax;
}

/* Bin k of the DFT of x (n complex pairs) in double, sign -1 forward. */
static double _Complex fu_dft_bin(const double *x, int64_t n, int64_t k, int sign) {
  double _Complex s = 0;
  for (int64_t j = 0; j < n; j++) {
    int64_t jk = (int64_t)((__int128)j * k % n);
    double a = sign * 2 * M_PI * (double)jk / (double)n;
    s += (x[2 * j] + I * x[2 * j + 1]) * (cos(a) + I * sin(a));
  }
  return s;
}

#endif
