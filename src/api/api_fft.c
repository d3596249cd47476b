/* Public FFT functions (mlx/c/fft.h): argument checks, then lc_fftn.
 * As mlx-c, the one-axis functions take an explicit n and the n-axis ones
 * one size per axis; beyond mlx-c, n_num == 0 means the default sizes
 * (the axes' extents; for the inverse real transforms 2 * (extent - 1)
 * along the last axis), which mlx-c rejects. fftshift/ifftshift live in
 * api_ops_shape.c. */
#include "api/api.h"
#include "fft/fft.h"

static int fft1(const char *fn, mlx_array *res, mlx_array a, int n, int axis, bool real,
                bool inverse, mlx_fft_norm norm, mlx_stream s) {
  struct lc_node *x = NULL;
  if (lc_api_prologue(fn, res, a, s, &x)) return 1;
  return lc_api_set(res, lc_fftn(fn, x, 1, &n, &axis, real, inverse, norm));
}

static int fftnd(const char *fn, mlx_array *res, mlx_array a, const int *n, size_t n_num,
                 const int *axes, size_t axes_num, bool real, bool inverse, mlx_fft_norm norm,
                 mlx_stream s) {
  struct lc_node *x = NULL;
  if (lc_api_prologue(fn, res, a, s, &x) || lc_api_check_list(fn, "n", n, n_num) ||
      lc_api_check_list(fn, "axes", axes, axes_num))
    return 1;
  if (n_num && n_num != axes_num)
    return lc_error("%s: %zu sizes for %zu axes", fn, n_num, axes_num);
  return lc_api_set(res, lc_fftn(fn, x, (int)axes_num, n_num ? n : NULL, axes, real, inverse,
                                 norm));
}

int mlx_fft_fft(mlx_array *res, const mlx_array a, int n, int axis, mlx_fft_norm norm,
                const mlx_stream s) {
  return fft1("mlx_fft_fft", res, a, n, axis, false, false, norm, s);
}
int mlx_fft_ifft(mlx_array *res, const mlx_array a, int n, int axis, mlx_fft_norm norm,
                 const mlx_stream s) {
  return fft1("mlx_fft_ifft", res, a, n, axis, false, true, norm, s);
}
int mlx_fft_rfft(mlx_array *res, const mlx_array a, int n, int axis, mlx_fft_norm norm,
                 const mlx_stream s) {
  return fft1("mlx_fft_rfft", res, a, n, axis, true, false, norm, s);
}
int mlx_fft_irfft(mlx_array *res, const mlx_array a, int n, int axis, mlx_fft_norm norm,
                  const mlx_stream s) {
  return fft1("mlx_fft_irfft", res, a, n, axis, true, true, norm, s);
}

#define FFTND(NAME, REAL, INVERSE)                                                        \
  int NAME(mlx_array *res, const mlx_array a, const int *n, size_t n_num, const int *axes, \
           size_t axes_num, mlx_fft_norm norm, const mlx_stream s) {                      \
    return fftnd(#NAME, res, a, n, n_num, axes, axes_num, REAL, INVERSE, norm, s);         \
  }
FFTND(mlx_fft_fft2, false, false)
FFTND(mlx_fft_ifft2, false, true)
FFTND(mlx_fft_fftn, false, false)
FFTND(mlx_fft_ifftn, false, true)
FFTND(mlx_fft_rfft2, true, false)
FFTND(mlx_fft_irfft2, true, true)
FFTND(mlx_fft_rfftn, true, false)
FFTND(mlx_fft_irfftn, true, true)

static int freq(const char *fn, mlx_array *res, int n, double d, bool real, mlx_stream s) {
  LC_CHECK_RES(fn, res);
  if (lc_api_check_stream(fn, s)) return 1;
  return lc_api_set(res, lc_fftfreq(fn, n, d, real));
}
int mlx_fft_fftfreq(mlx_array *res, int n, double d, const mlx_stream s) {
  return freq("mlx_fft_fftfreq", res, n, d, false, s);
}
int mlx_fft_rfftfreq(mlx_array *res, int n, double d, const mlx_stream s) {
  return freq("mlx_fft_rfftfreq", res, n, d, true, s);
}
