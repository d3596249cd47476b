/* Vectorisable float32 transcendental functions for elementwise kernels.
 *
 * libm calls stop GCC from vectorising a loop; these are branch-free
 * (selects only) so a loop calling them vectorises. Accuracy, measured over
 * all of float32's range by tests/ops_elementwise/test_ew_vmath.c:
 *   lc_vexpf    <= 1 ulp          lc_vlogf  <= 1 ulp
 *   lc_vtanhf   <= 3 ulp          lc_vsigmoidf <= 3 ulp
 *   lc_verff    <= 2.5 ulp
 * Special values follow C99 Annex F (NaN in, NaN out; exp(-inf) = 0, ...).
 * Polynomials: exp and log use Cephes' published minimax coefficients;
 * erf's were fitted for lace by tests/gen/fit_erf.py (minimax by Lawson's
 * reweighted least squares, rounded to float32 one coefficient at a time
 * with refits); over every float32, lc_verff is within 2.2 ulp with FMA
 * contraction (the AVX2/AVX-512 kernels), 2.35 without, and |erf| <= 1. */
#ifndef LC_VMATH_H
#define LC_VMATH_H

#include <stdint.h>
#include <string.h>

static inline float lc_vm_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline uint32_t lc_vm_u32(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

#define LC_VM_INF (__builtin_inff())
#define LC_VM_NAN (__builtin_nanf(""))

/* e^x. */
static inline float lc_vexpf(float x) {
  float xc = x > -104.0f ? x : -104.0f; /* also maps NaN to -104 */
  xc = xc < 89.0f ? xc : 89.0f;
  /* k = round(x / ln 2), by the 1.5 * 2^23 trick (|k| < 2^22). */
  float k = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = xc - k * 0.693359375f;
  r = r - k * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  /* 2^k in two factors so that subnormal results and k = 128 work. */
  int32_t n = (int32_t)k, n1 = n / 2, n2 = n - n1;
  float s1 = lc_vm_f32((uint32_t)(n1 + 127) << 23), s2 = lc_vm_f32((uint32_t)(n2 + 127) << 23);
  float res = p * s1 * s2;
  res = x > 88.7228394f ? LC_VM_INF : res;
  res = x < -103.972084f ? 0.0f : res;
  return x != x ? x : res;
}

/* Natural logarithm. */
static inline float lc_vlogf(float x) {
  int sub = x < 1.17549435e-38f;
  float xs = sub ? x * 8388608.0f : x;
  uint32_t ix = lc_vm_u32(xs);
  int32_t e = (int32_t)((ix >> 23) & 0xff) - 126 - (sub ? 23 : 0);
  float m = lc_vm_f32((ix & 0x007fffffu) | 0x3f000000u); /* [0.5, 1) */
  int lo = m < 0.707106781186547524f;
  e = lo ? e - 1 : e;
  float f = lo ? m + m - 1.0f : m - 1.0f;
  float z = f * f;
  float y = 7.0376836292e-2f;
  y = y * f - 1.1514610310e-1f;
  y = y * f + 1.1676998740e-1f;
  y = y * f - 1.2420140846e-1f;
  y = y * f + 1.4249322787e-1f;
  y = y * f - 1.6668057665e-1f;
  y = y * f + 2.0000714765e-1f;
  y = y * f - 2.4999993993e-1f;
  y = y * f + 3.3333331174e-1f;
  y = y * f * z;
  float fe = (float)e;
  y = y + fe * -2.12194440e-4f;
  y = y - 0.5f * z;
  float r = f + y;
  r = r + fe * 0.693359375f;
  r = x == LC_VM_INF ? LC_VM_INF : r;
  r = x == 0.0f ? -LC_VM_INF : r;
  return (x < 0.0f || x != x) ? LC_VM_NAN : r;
}

static inline float lc_vabsf(float x) { return lc_vm_f32(lc_vm_u32(x) & 0x7fffffffu); }
static inline float lc_vcopysignf(float mag, float sgn) {
  return lc_vm_f32((lc_vm_u32(mag) & 0x7fffffffu) | (lc_vm_u32(sgn) & 0x80000000u));
}

/* Hyperbolic tangent. */
static inline float lc_vtanhf(float x) {
  float ax = lc_vabsf(x);
  float z = x * x;
  float s = -5.70498872745e-3f;
  s = s * z + 2.06390887954e-2f;
  s = s * z - 5.37397155531e-2f;
  s = s * z + 1.33314422036e-1f;
  s = s * z - 3.33332819422e-1f;
  s = s * z * x + x;
  float c = ax < 10.0f ? ax : 10.0f;
  float e = lc_vexpf(c + c);
  float l = lc_vcopysignf(1.0f - 2.0f / (e + 1.0f), x);
  float r = lc_vcopysignf(ax < 0.625f ? s : l, x); /* odd: keeps tanh(-0) = -0 */
  return x != x ? x : r;
}

/* 1 / (1 + e^-x), accurate in both tails. */
static inline float lc_vsigmoidf(float x) {
  float e = lc_vexpf(-lc_vabsf(x));
  float d = 1.0f / (1.0f + e);
  return x >= 0.0f ? d : e * d;
}

/* Error function. With a = |x|: a + a * S(a^2) below 0.75, where erf needs
 * relative accuracy; 1 - H(min(a, 4) - 2.375) from 0.75 on, H ~ erfc with
 * absolute error ~2e-8 on [0.75, 4] and 1 - H(4 - 2.375) == 1 in float32, so
 * erf(+-inf) = +-1. Both branches are always evaluated (no exp, no division);
 * NaN passes through both; the sign of x is applied last (erf(-0) = -0). */
static inline float lc_verff(float x) {
  float a = lc_vabsf(x);
  float t = a * a;
  float s = 4.158823e-03f;
  s = s * t - 2.636025e-02f;
  s = s * t + 1.1273736e-01f;
  s = s * t - 3.761193e-01f;
  s = s * t + 1.2837908e-01f;
  float lo = a * s + a;
  float u = (a > 4.0f ? 4.0f : a) - 2.375f; /* keeps NaN */
  float h = -1.275623e-06f;
  h = h * u + 1.8313316e-06f;
  h = h * u + 1.765013e-05f;
  h = h * u - 4.6312456e-05f;
  h = h * u - 4.605466e-05f;
  h = h * u + 3.6238783e-04f;
  h = h * u - 6.0621655e-04f;
  h = h * u - 1.4705346e-04f;
  h = h * u + 3.1230052e-03f;
  h = h * u - 8.345367e-03f;
  h = h * u + 1.3130026e-02f;
  h = h * u - 1.3733257e-02f;
  h = h * u + 9.515815e-03f;
  h = h * u - 4.0062987e-03f;
  h = h * u + 7.8292825e-04f;
  float hi = 1.0f - h;
  float r = a < 0.75f ? lo : hi; /* +0 <= r <= 1, or NaN */
  return lc_vm_f32(lc_vm_u32(r) | (lc_vm_u32(x) & 0x80000000u));
}

/* e^x in double (<= 1.1 ulp): the float32 scheme with ln 2 split as in
 * fdlibm and the Taylor polynomial to degree 13 (|r| <= ln2 / 2). */
static inline double lc_vexp(double x) {
  double xc = x > -746.0 ? x : -746.0; /* also maps NaN */
  xc = xc < 710.0 ? xc : 710.0;
  double k = (xc * 1.4426950408889634 + 6755399441055744.0) - 6755399441055744.0;
  double r = xc - k * 0.693147180369123816490;
  r = r - k * 1.90821492927058770002e-10;
  double p = 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r * r + r + 1.0;
  int64_t n = (int64_t)k, n1 = n / 2, n2 = n - n1;
  uint64_t b1 = (uint64_t)(n1 + 1023) << 52, b2 = (uint64_t)(n2 + 1023) << 52;
  double s1, s2;
  memcpy(&s1, &b1, 8);
  memcpy(&s2, &b2, 8);
  double res = p * s1 * s2;
  res = x > 709.782712893384 ? (double)LC_VM_INF : res;
  res = x < -745.1332191019412 ? 0.0 : res;
  return x != x ? x : res;
}

/* sin and cos for |x| < LC_VTRIG_MAX (callers use libm beyond). The
 * reduction x = j * pi/4 + r (j even) runs in double with pi/4 split in
 * three parts (the first with 33 bits, so j * C1 is exact), accurate enough
 * for float results near the zeros; then the octant picks Cephes' float
 * sin or cos polynomial and the sign. */
#define LC_VTRIG_MAX 524288.0f

static inline float lc_vtrig_f(float x, int cosine) {
  float ax = lc_vabsf(x);
  float axc = ax < LC_VTRIG_MAX ? ax : 0.0f; /* NaN, inf, huge: fixed below */
  int32_t j = (int32_t)(axc * 1.27323954473516f);
  j = (j + 1) & ~1;
  double y = (double)j;
  float r = (float)((((double)axc - y * 0.7853981633670628) - y * 3.038550253253096e-11) - y * 1.7607799325916e-27);
  float z = r * r;
  float ps = ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * r + r;
  /* Horner form throughout: every step is one product plus one term, so
   * FMA contraction is the same in vectorised and scalar code (n = 1 calls
   * give bit-identical results). */
  float pc = ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z + 4.166664568298827e-2f) * z;
  pc = (pc - 0.5f) * z + 1.0f;
  int q = (j >> 1) & 3; /* j / 2 mod 4: the quadrant of |x| */
  int use_cos = cosine ? !(q & 1) : (q & 1);
  float v = use_cos ? pc : ps;
  int neg = cosine ? (q == 1 || q == 2) : (q >= 2);
  uint32_t sbit = (uint32_t)neg << 31;
  if (!cosine) sbit ^= lc_vm_u32(x) & 0x80000000u; /* sin is odd */
  float res = lc_vm_f32(lc_vm_u32(v) ^ sbit);
  return ax < LC_VTRIG_MAX ? res : LC_VM_NAN;
}
static inline float lc_vsinf(float x) { return lc_vtrig_f(x, 0); }
static inline float lc_vcosf(float x) { return lc_vtrig_f(x, 1); }

#endif
