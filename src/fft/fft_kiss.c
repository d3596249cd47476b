/* The default FFT backend: KissFFT's complex transforms (float), with
 *  - Bluestein's chirp-z transform for lengths whose prime factors make
 *    KissFFT's generic butterflies (O(p) per element for a factor p)
 *    costlier than three smooth transforms of length m >= 2n - 1;
 *  - real transforms folded by lace: an even length n as one complex
 *    transform of n/2 plus a twiddle pass, an odd one through a complex
 *    transform of n.
 * (KissFFT's own real transform keeps scratch inside its plan, so one plan
 * could not serve two threads; its complex transforms can.) Tables are
 * computed in double and rounded once. */
#ifndef LACE_FFTW

#include <kiss_fft.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "fft/fft_plan.h"

_Static_assert(sizeof(kiss_fft_cpx) == sizeof(lc_c64), "kiss_fft_cpx is two floats");

/* A complex transform of length n in one direction. n == 1 is a copy. */
struct cplan {
  int n;
  kiss_fft_cfg cfg;       /* direct; NULL with Bluestein or n == 1 */
  int m;                  /* Bluestein: the 2,3,5-smooth length >= 2n - 1; else 0 */
  kiss_fft_cfg fwd, inv;  /* length m */
  lc_c64 *chirp;          /* n entries: e^{-/+ i pi k^2 / n} */
  lc_c64 *filter;         /* m entries: the transformed conjugate chirp over m */
};

struct kplan {
  struct cplan c;  /* length n, or n/2 for an even real transform */
  lc_c64 *twiddle; /* even real: e^{-/+ 2 pi i k / n}, k < n/2 */
};

static bool even_real(const struct lc_fft_plan *p) { return p->real && p->n % 2 == 0; }

/* KissFFT's work per element for length n: it splits off 4s, 2s, 3s, 5s,
 * then any other prime p with an O(p) generic butterfly (weighted double:
 * it also recomputes twiddle indices). */
static double kiss_cost(int n) {
  double c = 0;
  for (int p = 4; n > 1;) {
    while (n % p) {
      p = p == 4 ? 2 : p == 2 ? 3 : p + 2;
      if ((int64_t)p * p > n) p = n;
    }
    n /= p;
    c += p <= 5 ? p : 2.0 * p;
  }
  return c;
}

static bool use_bluestein(int n, int *m) {
  if (n <= 5) return false;
  if ((int64_t)2 * n - 1 > INT32_MAX) return false;
  *m = kiss_fft_next_fast_size(2 * n - 1);
  return n * kiss_cost(n) > *m * (2 * kiss_cost(*m) + 4.0) + 2.0 * n;
}

static lc_c64 cis(double a) { return (float)cos(a) + I * (float)sin(a); }

static void cplan_free(struct cplan *c) {
  kiss_fft_free(c->cfg);
  kiss_fft_free(c->fwd);
  kiss_fft_free(c->inv);
  free(c->chirp);
  free(c->filter);
}

/* Bluestein tables: the chirp, and the FFT of the conjugate chirp laid out
 * circularly over m (t and m - t), divided by m. */
static int bluestein_init(struct cplan *c, bool inverse) {
  int n = c->n, m = c->m;
  double sign = inverse ? 1.0 : -1.0;
  c->fwd = kiss_fft_alloc(m, 0, NULL, NULL);
  c->inv = kiss_fft_alloc(m, 1, NULL, NULL);
  c->chirp = malloc(sizeof(lc_c64) * (size_t)n);
  c->filter = malloc(sizeof(lc_c64) * (size_t)m);
  lc_c64 *b = calloc((size_t)m, sizeof(lc_c64));
  if (!c->fwd || !c->inv || !c->chirp || !c->filter || !b) {
    free(b);
    return 1;
  }
  uint64_t twon = 2 * (uint64_t)n;
  for (int k = 0; k < n; k++) {
    uint64_t k2 = (uint64_t)k * (uint64_t)k % twon; /* k^2 mod 2n keeps the angle exact */
    c->chirp[k] = cis(sign * M_PI * (double)k2 / (double)n);
    b[k] = conjf(c->chirp[k]);
    if (k) b[m - k] = b[k];
  }
  kiss_fft(c->fwd, (const kiss_fft_cpx *)b, (kiss_fft_cpx *)c->filter);
  for (int k = 0; k < m; k++) c->filter[k] /= (float)m;
  free(b);
  return 0;
}

static int cplan_init(struct cplan *c, int n, bool inverse) {
  memset(c, 0, sizeof *c);
  c->n = n;
  if (n == 1) return 0;
  if (use_bluestein(n, &c->m)) return bluestein_init(c, inverse);
  c->m = 0;
  c->cfg = kiss_fft_alloc(n, inverse, NULL, NULL);
  return !c->cfg;
}

static size_t cplan_scratch(const struct cplan *c) { return 2 * (size_t)c->m; }

static void cplan_exec(const struct cplan *c, const lc_c64 *in, lc_c64 *out, lc_c64 *scratch) {
  if (c->cfg) {
    kiss_fft(c->cfg, (const kiss_fft_cpx *)in, (kiss_fft_cpx *)out);
    return;
  }
  if (!c->m) {
    out[0] = in[0];
    return;
  }
  int n = c->n, m = c->m;
  lc_c64 *a = scratch, *b = scratch + m;
  for (int j = 0; j < n; j++) a[j] = in[j] * c->chirp[j];
  memset(a + n, 0, sizeof(lc_c64) * (size_t)(m - n));
  kiss_fft(c->fwd, (const kiss_fft_cpx *)a, (kiss_fft_cpx *)b);
  for (int k = 0; k < m; k++) b[k] *= c->filter[k];
  kiss_fft(c->inv, (const kiss_fft_cpx *)b, (kiss_fft_cpx *)a);
  for (int k = 0; k < n; k++) out[k] = a[k] * c->chirp[k];
}

int lc_fft_impl_new(struct lc_fft_plan *p) {
  struct kplan *k = calloc(1, sizeof *k);
  int len = even_real(p) ? p->n / 2 : p->n;
  int bad = !k || cplan_init(&k->c, len, p->inverse);
  if (!bad && even_real(p)) {
    double sign = p->inverse ? 1.0 : -1.0;
    k->twiddle = malloc(sizeof(lc_c64) * (size_t)len);
    bad = !k->twiddle;
    for (int j = 0; !bad && j < len; j++) k->twiddle[j] = cis(sign * 2 * M_PI * j / p->n);
  }
  if (bad) {
    if (k) cplan_free(&k->c);
    if (k) free(k->twiddle);
    free(k);
    return lc_error("fft: out of memory (plan of length %d)", p->n);
  }
  p->impl = k;
  p->scratch = cplan_scratch(&k->c) + (p->real ? (even_real(p) ? (size_t)len : 2 * (size_t)len) : 0);
  return 0;
}

void lc_fft_impl_free(struct lc_fft_plan *p) {
  struct kplan *k = p->impl;
  if (!k) return;
  cplan_free(&k->c);
  free(k->twiddle);
  free(k);
}

const char *lc_fft_backend_name(void) { return "kissfft"; }

void lc_fft_c2c(const struct lc_fft_plan *p, const lc_c64 *in, lc_c64 *out, lc_c64 *scratch) {
  const struct kplan *k = p->impl;
  cplan_exec(&k->c, in, out, scratch);
}

/* Even n = 2h: z_j = x_{2j} + i x_{2j+1} transformed over h gives Z; the
 * even and odd halves' spectra are (Z_k + conj Z_{h-k}) / 2 and
 * (Z_k - conj Z_{h-k}) / 2i, and X_k = E_k + w^k O_k. */
static void r2c_even(const struct kplan *k, const float *in, lc_c64 *out, lc_c64 *scratch) {
  int h = k->c.n;
  lc_c64 *z = scratch;
  cplan_exec(&k->c, (const lc_c64 *)in, z, scratch + h);
  out[0] = crealf(z[0]) + cimagf(z[0]);
  out[h] = crealf(z[0]) - cimagf(z[0]);
  for (int j = 1; j < h; j++) {
    lc_c64 a = z[j], b = conjf(z[h - j]);
    lc_c64 e = 0.5f * (a + b), o = -0.5f * I * (a - b);
    out[j] = e + k->twiddle[j] * o;
  }
}

/* The inverse of r2c_even, unnormalised: Z_k = (X_k + conj X_{h-k}) +
 * i w^-k (X_k - conj X_{h-k}), then z = IDFT_h(Z) holds the even and odd
 * samples as real and imaginary parts. */
static void c2r_even(const struct kplan *k, const lc_c64 *in, float *out, lc_c64 *scratch) {
  int h = k->c.n;
  lc_c64 *z = scratch;
  for (int j = 0; j < h; j++) {
    lc_c64 a = j ? in[j] : crealf(in[0]);
    lc_c64 b = j ? conjf(in[h - j]) : crealf(in[h]);
    z[j] = (a + b) + I * k->twiddle[j] * (a - b);
  }
  cplan_exec(&k->c, z, (lc_c64 *)out, scratch + h);
}

void lc_fft_r2c(const struct lc_fft_plan *p, const float *in, lc_c64 *out, lc_c64 *scratch) {
  const struct kplan *k = p->impl;
  if (even_real(p)) {
    r2c_even(k, in, out, scratch);
    return;
  }
  int n = p->n;
  lc_c64 *c = scratch, *f = scratch + n;
  for (int j = 0; j < n; j++) c[j] = in[j];
  cplan_exec(&k->c, c, f, scratch + 2 * n);
  memcpy(out, f, sizeof(lc_c64) * (size_t)(n / 2 + 1));
}

void lc_fft_c2r(const struct lc_fft_plan *p, const lc_c64 *in, float *out, lc_c64 *scratch) {
  const struct kplan *k = p->impl;
  if (even_real(p)) {
    c2r_even(k, in, out, scratch);
    return;
  }
  int n = p->n, m = n / 2 + 1;
  lc_c64 *c = scratch, *f = scratch + n;
  memcpy(c, in, sizeof(lc_c64) * (size_t)m);
  for (int j = 1; j <= n - m; j++) c[n - j] = conjf(in[j]);
  cplan_exec(&k->c, c, f, scratch + 2 * n);
  for (int j = 0; j < n; j++) out[j] = crealf(f[j]);
}

#endif
