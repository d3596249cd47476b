/* Branch-free float exp for reductions and softmax, written so that loops
 * calling it auto-vectorise (no libm calls, selects instead of branches).
 * Cephes-style: exp(x) = 2^n * p(r), r = x - n ln2 in [-ln2/2, ln2/2],
 * degree-6 polynomial; relative error about 2 ulp over the float range.
 * exp(-inf) = 0, exp(+inf) = inf, exp(NaN) = NaN, underflow gives 0 (no
 * subnormal results), overflow gives inf. */
#ifndef LC_REDUCE_MATH_H
#define LC_REDUCE_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Hot loops get an AVX2/FMA-capable clone picked at load time (GCC
 * target_clones, x86-64 only); the baseline build stays portable. Floating
 * point contraction is off in ISO C mode, so both clones compute the same
 * results. */
/* Sanitizer builds go without: the load-time resolvers run before the
 * sanitizer runtime is initialised (TSan crashes in them). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(LACE_NO_CLONES) && !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define LC_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define LC_SIMD_CLONES
#endif

/* c ? a : b for c in {0, 1}, as bit operations (vectorises without
 * if-conversion, which GCC refuses for float selects under AVX). */
static inline float lc__fsel(int c, float a, float b) {
  uint32_t ua, ub, m = (uint32_t)0 - (uint32_t)c;
  memcpy(&ua, &a, 4);
  memcpy(&ub, &b, 4);
  uint32_t r = (ua & m) | (ub & ~m);
  float f;
  memcpy(&f, &r, 4);
  return f;
}

static inline double lc__dsel(int c, double a, double b) {
  uint64_t ua, ub, m = (uint64_t)0 - (uint64_t)c;
  memcpy(&ua, &a, 8);
  memcpy(&ub, &b, 8);
  uint64_t r = (ua & m) | (ub & ~m);
  double f;
  memcpy(&f, &r, 8);
  return f;
}

/* Branch-free select for float or double operands. */
#define LC_FSEL(c, a, b) _Generic((a), float: lc__fsel, double: lc__dsel)((c), (a), (b))

static inline float lc_expf_fast(float x) {
  const float hi = 88.7228394f, lo = -87.3365479f; /* ln(FLT_MAX), ln(FLT_MIN) */
  int over = x > hi, under = x < lo, nan = x != x;
  float xc = lc__fsel(over, hi, lc__fsel(under | nan, lo, x));
  float fx = xc * 1.44269504088896341f;
  /* round to nearest: floor(fx + 0.5) via truncation and a correction */
  float t = fx + 0.5f;
  float fl = (float)(int32_t)t;
  fl = fl - (float)(fl > t);
  float r = xc - fl * 0.693359375f;
  r = r - fl * -2.12194440e-4f;
  float r2 = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r2 + r + 1.0f;
  /* scale by 2^n with n in [-126, 128]: split to keep each factor normal */
  int32_t n = (int32_t)fl;
  int32_t n1 = n >> 1, n2 = n - n1;
  uint32_t b1 = (uint32_t)(n1 + 127) << 23, b2 = (uint32_t)(n2 + 127) << 23;
  float s1, s2;
  memcpy(&s1, &b1, 4);
  memcpy(&s2, &b2, 4);
  float res = p * s1 * s2;
  res = lc__fsel(under, 0.0f, res);
  res = lc__fsel(over, INFINITY, res);
  return lc__fsel(nan, x, res);
}

/* float16 bits to float, exact for every input (subnormals through a
 * power-of-two multiply, inf/NaN by a select), branch-free so that loops
 * vectorise; equal to lc_f16_to_f32 bit for bit. */
static inline float lc_f16_to_f32_fast(uint16_t h) {
  uint32_t em = (uint32_t)(h & 0x7fff), sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t b = em << 13;
  float f;
  memcpy(&f, &b, 4);
  f *= 0x1p112f; /* rebias the exponent; scales subnormals exactly */
  uint32_t r;
  memcpy(&r, &f, 4);
  uint32_t special = (uint32_t)0 - (uint32_t)(em >= 0x7c00); /* inf or NaN */
  r = (r & ~special) | ((b | 0x7f800000u) & special);
  r |= sign;
  memcpy(&f, &r, 4);
  return f;
}

#endif
