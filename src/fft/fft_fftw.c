/* The optional FFT backend (-DLACE_FFTW=ON): FFTW3's single-precision
 * one-dimensional plans, made with FFTW_ESTIMATE (no timing runs) and
 * FFTW_UNALIGNED so that one plan runs on any arrays through FFTW's
 * new-array execute functions, which are thread-safe. Planning and
 * destroying happen under the plan cache's lock (FFTW's planner is not
 * thread-safe). FFTW is GPL: a lace built with it is distributed under
 * the GPL. */
#ifdef LACE_FFTW

#include <fftw3.h>
#include <string.h>

#include "core/error.h"
#include "fft/fft_plan.h"

_Static_assert(sizeof(fftwf_complex) == sizeof(lc_c64), "fftwf_complex is two floats");

int lc_fft_impl_new(struct lc_fft_plan *p) {
  int n = p->n, m = n / 2 + 1;
  unsigned flags = FFTW_ESTIMATE | FFTW_UNALIGNED;
  /* the planner only looks at the arrays' placement under FFTW_ESTIMATE */
  fftwf_complex *a = fftwf_malloc(sizeof(fftwf_complex) * (size_t)n);
  fftwf_complex *b = fftwf_malloc(sizeof(fftwf_complex) * (size_t)n);
  fftwf_plan plan = NULL;
  if (a && b) {
    if (!p->real)
      plan = fftwf_plan_dft_1d(n, a, b, p->inverse ? FFTW_BACKWARD : FFTW_FORWARD, flags);
    else if (!p->inverse)
      plan = fftwf_plan_dft_r2c_1d(n, (float *)a, b, flags);
    else
      plan = fftwf_plan_dft_c2r_1d(n, a, (float *)b, flags | FFTW_DESTROY_INPUT);
  }
  fftwf_free(a);
  fftwf_free(b);
  if (!plan) return lc_error("fft: FFTW could not plan a transform of length %d", n);
  p->impl = plan;
  p->scratch = p->real && p->inverse ? (size_t)m : 0; /* c2r overwrites its input */
  return 0;
}

void lc_fft_impl_free(struct lc_fft_plan *p) {
  if (p->impl) fftwf_destroy_plan(p->impl);
}

const char *lc_fft_backend_name(void) { return "fftw3"; }

void lc_fft_c2c(const struct lc_fft_plan *p, const lc_c64 *in, lc_c64 *out, lc_c64 *scratch) {
  (void)scratch;
  fftwf_execute_dft(p->impl, (fftwf_complex *)in, (fftwf_complex *)out);
}

void lc_fft_r2c(const struct lc_fft_plan *p, const float *in, lc_c64 *out, lc_c64 *scratch) {
  (void)scratch;
  fftwf_execute_dft_r2c(p->impl, (float *)in, (fftwf_complex *)out);
}

void lc_fft_c2r(const struct lc_fft_plan *p, const lc_c64 *in, float *out, lc_c64 *scratch) {
  memcpy(scratch, in, sizeof(lc_c64) * (size_t)(p->n / 2 + 1));
  fftwf_execute_dft_c2r(p->impl, (fftwf_complex *)scratch, out);
}

#endif
