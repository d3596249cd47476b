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

#include "ops/dtype_dispatch.h"

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


/* ---- shared by the reduction and scan kernels ---- */

/* Element loads into an accumulator type. */
#define LD_ID(v) (v)
#define LD_U32(v) ((uint32_t)(v))
#define LD_U64(v) ((uint64_t)(v))
#define LD_D(v) ((double)(v))
#define LD_F16(v) lc_f16_to_f32_fast(v)
#define LD_BF16(v) lc_bf16_to_f32(v)
#define LD_F16D(v) ((double)lc_f16_to_f32_fast(v))
#define LD_BF16D(v) ((double)lc_bf16_to_f32(v))

/* Combining operators OP(acc, value) common to reductions and scans
 * (the float max/min, which differ in how they select, stay with each). */
#define OP_ADD(a, b) ((a) + (b))
#define OP_MUL(a, b) ((a) * (b))
#define OP_MAXI(a, b) ((b) > (a) ? (b) : (a))
#define OP_MINI(a, b) ((b) < (a) ? (b) : (a))
#define OP_MAXC(a, b) c64_max(a, b)
#define OP_MINC(a, b) c64_min(a, b)

/* complex64 order: by real part, then imaginary part; NaN wins */
static inline int c64_isnan(lc_c64 v) { return isnan(crealf(v)) || isnan(cimagf(v)); }
static inline int c64_gt(lc_c64 a, lc_c64 b) {
  return crealf(a) > crealf(b) || (crealf(a) == crealf(b) && cimagf(a) > cimagf(b));
}
static inline lc_c64 c64_max(lc_c64 a, lc_c64 b) {
  if (c64_isnan(a)) return a;
  if (c64_isnan(b)) return b;
  return c64_gt(b, a) ? b : a;
}
static inline lc_c64 c64_min(lc_c64 a, lc_c64 b) {
  if (c64_isnan(a)) return a;
  if (c64_isnan(b)) return b;
  return c64_gt(a, b) ? b : a;
}

/* max/min rows: X(DT, S, A, LD, LOWEST, HIGHEST, MAXOP, MINOP) */
#define MINMAX_ROWS(X)                                                                  \
  X(MLX_BOOL, bool, uint8_t, LD_ID, 0, 1, OP_MAXI, OP_MINI)                              \
  X(MLX_UINT8, uint8_t, uint8_t, LD_ID, 0, UINT8_MAX, OP_MAXI, OP_MINI)                 \
  X(MLX_UINT16, uint16_t, uint16_t, LD_ID, 0, UINT16_MAX, OP_MAXI, OP_MINI)             \
  X(MLX_UINT32, uint32_t, uint32_t, LD_ID, 0, UINT32_MAX, OP_MAXI, OP_MINI)             \
  X(MLX_UINT64, uint64_t, uint64_t, LD_ID, 0, UINT64_MAX, OP_MAXI, OP_MINI)             \
  X(MLX_INT8, int8_t, int8_t, LD_ID, INT8_MIN, INT8_MAX, OP_MAXI, OP_MINI)              \
  X(MLX_INT16, int16_t, int16_t, LD_ID, INT16_MIN, INT16_MAX, OP_MAXI, OP_MINI)         \
  X(MLX_INT32, int32_t, int32_t, LD_ID, INT32_MIN, INT32_MAX, OP_MAXI, OP_MINI)         \
  X(MLX_INT64, int64_t, int64_t, LD_ID, INT64_MIN, INT64_MAX, OP_MAXI, OP_MINI)         \
  X(MLX_FLOAT16, uint16_t, float, LD_F16, -INFINITY, INFINITY, OP_MAXF, OP_MINF)        \
  X(MLX_FLOAT32, float, float, LD_ID, -INFINITY, INFINITY, OP_MAXF, OP_MINF)            \
  X(MLX_FLOAT64, double, double, LD_ID, -INFINITY, INFINITY, OP_MAXF, OP_MINF)          \
  X(MLX_BFLOAT16, uint16_t, float, LD_BF16, -INFINITY, INFINITY, OP_MAXF, OP_MINF)      \
  X(MLX_COMPLEX64, lc_c64, lc_c64, LD_ID, (lc_c64)(-INFINITY), (lc_c64)INFINITY, OP_MAXC, \
    OP_MINC)

#endif
