/* Every transform against numpy.fft (tests/data/fft_cases.h, from
 * tests/gen/gen_fft.py): lengths 1 to 210 (odd, prime, smooth), batches,
 * transposed / strided / reversed inputs, each norm, n cut and padded,
 * negative axes, default sizes; then long lengths (smooth, prime: the
 * Bluestein path; even with a prime half) against a direct DFT in double. */
#include "fft_util.h"
#include "../data/fft_cases.h"

static mlx_array view_of(mlx_array x, int layout) {
  mlx_stream s = test_stream();
  mlx_array r = mlx_array_new();
  int nd = (int)mlx_array_ndim(x), start[4], stop[4], step[4];
  const int *sh = mlx_array_shape(x);
  if (layout == 0) {
    mlx_array_set(&r, x);
  } else if (layout == 1) {
    mlx_transpose(&r, x, s);
  } else {
    for (int d = 0; d < nd; d++) start[d] = 0, stop[d] = sh[d], step[d] = 1;
    if (layout == 2) {
      step[nd - 1] = 2;
    } else {
      start[nd - 1] = sh[nd - 1] - 1;
      stop[nd - 1] = -sh[nd - 1] - 1;
      step[nd - 1] = -1;
    }
    mlx_slice(&r, x, start, (size_t)nd, stop, (size_t)nd, step, (size_t)nd, s);
  }
  return r;
}

static double worst;

static void run_case(int idx, const struct fft_case *c) {
  mlx_array base = c->real_in ? fu_real(c->in, c->base, c->nd) : fu_complex(c->in, c->base, c->nd);
  mlx_array x = view_of(base, c->layout);
  mlx_array y = mlx_array_new();
  int axis = -1;
  int rc = fu_call(c->fn, &y, x, c->n, c->nn, c->naxes ? c->axes : &axis, c->naxes,
                   (mlx_fft_norm)c->norm);
  CHECK_MSG(rc == 0, "case %d: failed: %s", idx, test_last_error);
  if (!rc) {
    int ok = (int)mlx_array_ndim(y) == c->out_nd &&
             !memcmp(mlx_array_shape(y), c->out_shape, sizeof(int) * (size_t)c->out_nd);
    CHECK_MSG(ok, "case %d (fn %d): wrong output shape", idx, c->fn);
    mlx_dtype want = c->out_complex ? MLX_COMPLEX64 : MLX_FLOAT32;
    CHECK_MSG(mlx_array_dtype(y) == want, "case %d: dtype %d", idx, mlx_array_dtype(y));
    size_t n = mlx_array_size(y), at;
    double *got = ok ? fu_pairs(y) : NULL;
    double *ref = malloc(sizeof(double) * 2 * (n ? n : 1));
    for (size_t k = 0; k < n; k++) {
      ref[2 * k] = c->out_complex ? c->out[2 * k] : c->out[k];
      ref[2 * k + 1] = c->out_complex ? c->out[2 * k + 1] : 0;
    }
    if (got) {
      double e = fu_rel_err(got, ref, n, &at);
      if (e > worst) worst = e;
      CHECK_MSG(e < 2e-6, "case %d (fn %d, layout %d): error %.3g at %zu: got %g%+gi, want %g%+gi",
                idx, c->fn, c->layout, e, at, got[2 * at], got[2 * at + 1], ref[2 * at],
                ref[2 * at + 1]);
    }
    free(got);
    free(ref);
  }
  mlx_array_free(y);
  mlx_array_free(x);
  mlx_array_free(base);
}

/* Random complex pairs of length n. */
static double *rand_pairs(int64_t n) {
  double *x = malloc(sizeof(double) * 2 * (size_t)n);
  for (int64_t k = 0; k < 2 * n; k++) x[k] = (float)test_uniform(-1, 1);
  return x;
}

/* fft / ifft of length n against the direct DFT at `probe` bins (all when
 * probe >= n); real: rfft and irfft of the same length. */
static void long_case(int64_t n, int probe, bool real) {
  double *x = rand_pairs(n);
  if (real)
    for (int64_t k = 0; k < n; k++) x[2 * k + 1] = 0;
  int shape = (int)n, len = (int)n, axis = 0;
  double *rv = malloc(sizeof(double) * (size_t)n);
  for (int64_t k = 0; k < n; k++) rv[k] = x[2 * k];
  mlx_array a = real ? fu_real(rv, &shape, 1) : fu_complex(x, &shape, 1);
  for (int inverse = 0; inverse < 2; inverse++) {
    mlx_array y = mlx_array_new();
    int fn = real ? F_RFFT : inverse ? F_IFFT : F_FFT;
    if (real && inverse) { /* irfft of x's half spectrum: exact, or lace's rfft when long */
      int half = (int)(n / 2 + 1);
      double *h = malloc(sizeof(double) * 2 * (size_t)half);
      mlx_array hs = mlx_array_new();
      if (n <= 10000) {
        for (int k = 0; k < half; k++) {
          double _Complex v = fu_dft_bin(x, n, k, -1);
          h[2 * k] = creal(v), h[2 * k + 1] = cimag(v);
        }
        mlx_array_free(hs);
        hs = fu_complex(h, &half, 1);
      } else {
        CHECK_OK(mlx_fft_rfft(&hs, a, len, axis, MLX_FFT_NORM_BACKWARD, test_stream()));
      }
      CHECK_OK(mlx_fft_irfft(&y, hs, len, axis, MLX_FFT_NORM_BACKWARD, test_stream()));
      double *got = fu_pairs(y);
      double *ref = malloc(sizeof(double) * 2 * (size_t)n);
      for (int64_t k = 0; k < n; k++) ref[2 * k] = x[2 * k], ref[2 * k + 1] = 0;
      size_t at = 0;
      double e = got ? fu_rel_err(got, ref, (size_t)n, &at) : INFINITY;
      CHECK_MSG(e < 1e-5, "irfft n=%lld: error %.3g at %zu", (long long)n, e, at);
      if (e > worst) worst = e;
      free(got), free(ref), free(h);
      mlx_array_free(hs);
      mlx_array_free(y);
      continue;
    }
    CHECK_OK(fu_call(fn, &y, a, &len, 1, &axis, 1, MLX_FFT_NORM_BACKWARD));
    double *got = fu_pairs(y);
    int64_t bins = real ? n / 2 + 1 : n;
    double emax = 0, rmax = 0;
    for (int p = 0; got && p < probe && p < bins; p++) {
      int64_t k = probe >= bins ? p : (int64_t)(test_rand_u64() % (uint64_t)bins);
      double _Complex v = fu_dft_bin(x, n, k, inverse ? 1 : -1) / (inverse ? (double)n : 1.0);
      double e = cabs(v - (got[2 * k] + I * got[2 * k + 1]));
      if (e > emax) emax = e;
      if (cabs(v) > rmax) rmax = cabs(v);
    }
    /* a probed bin is O(sqrt n) against a spectrum of that size */
    CHECK_MSG(got && emax <= 2e-6 * rmax * 8, "fn %d n=%lld: error %.3g (max %.3g)", fn,
              (long long)n, emax, rmax);
    if (rmax > 0 && emax / rmax / 8 > worst) worst = emax / rmax / 8;
    free(got);
    mlx_array_free(y);
  }
  mlx_array_free(a);
  free(rv);
  free(x);
}

int main(void) {
  test_init();
  test_seed(11);
  int ncases = (int)(sizeof fft_cases / sizeof fft_cases[0]);
  for (int i = 0; i < ncases; i++) run_case(i, &fft_cases[i]);
  printf("reference cases: %d, worst error %.3g (relative to the largest output)\n", ncases,
         worst);
  worst = 0;
  int64_t lens[] = {1000, 1024, 2053, 4099, 2 * 4099, 3 * 5 * 7 * 11 * 13, 1 << 16};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    long_case(lens[i], lens[i] <= 4099 ? 1 << 30 : 64, false);
    long_case(lens[i], lens[i] <= 4099 ? 1 << 30 : 64, true);
  }
  long_case(1000003, 16, false); /* a large prime: Bluestein */
  long_case(1 << 20, 16, true);
  printf("long lengths: worst error %.3g\n", worst);
  return test_done();
}
