/* One-dimensional transform plans and the backend that runs them.
 *
 * A plan is one transform of length n: complex to complex, or (real) real
 * to complex forward / complex to real inverse, with e^{-2 pi i jk/n}
 * forward and e^{+2 pi i jk/n} inverse, never normalised. Plans are
 * immutable once made and shared between threads: executing one needs only
 * the caller's scratch (p->scratch complex elements). They are kept in a
 * small cache keyed by (n, inverse, real) behind a lock; a plan handed out
 * stays valid until it is given back, even if the cache drops it.
 *
 * The backend is KissFFT (BSD-3), with lace's own Bluestein transform for
 * lengths with large prime factors and its own real-input folding
 * (fft_kiss.c), or FFTW3 (GPL) when built with -DLACE_FFTW=ON
 * (fft_fftw.c). */
#ifndef LC_FFT_PLAN_H
#define LC_FFT_PLAN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "ops/dtype_dispatch.h"

struct lc_fft_plan {
  int n;
  bool inverse;
  bool real;       /* forward: real in, n/2+1 out; inverse: n/2+1 in, real out */
  size_t scratch;  /* complex elements of scratch one execution needs */
  void *impl;      /* the backend's */
  atomic_int refs; /* the cache's reference and the users' */
};

/* The plan for (n >= 1, inverse, real), made if needed: a reference to give
 * back with lc_fft_plan_put. NULL after reporting (out of memory). */
struct lc_fft_plan *lc_fft_plan_get(int n, bool inverse, bool real);
void lc_fft_plan_put(struct lc_fft_plan *p);

/* Executions. in and out never overlap; in is only read. Lengths: n
 * complex values both ways for c2c; r2c reads n reals and writes n/2+1
 * values; c2r reads n/2+1 values (the imaginary parts of the first and,
 * for even n, the last one are ignored) and writes n reals. */
void lc_fft_c2c(const struct lc_fft_plan *p, const lc_c64 *in, lc_c64 *out, lc_c64 *scratch);
void lc_fft_r2c(const struct lc_fft_plan *p, const float *in, lc_c64 *out, lc_c64 *scratch);
void lc_fft_c2r(const struct lc_fft_plan *p, const lc_c64 *in, float *out, lc_c64 *scratch);

/* ---- the backend's side (called by the cache, under its lock) ---- */

/* Sets p->impl and p->scratch for p's (n, inverse, real). 0, or 1 after
 * reporting. */
int lc_fft_impl_new(struct lc_fft_plan *p);
void lc_fft_impl_free(struct lc_fft_plan *p);
/* "kissfft" or "fftw3". */
const char *lc_fft_backend_name(void);

#endif
