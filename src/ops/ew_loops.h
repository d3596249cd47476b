/* Loop templates for the elementwise kernel families (unary.c, binary.c,
 * ternary.c). Include first in those files, before any other header: the
 * pragma below must cover every function of the translation unit.
 *
 * Every kernel honours the lc_ew_kernel contract: out contiguous, each
 * input with its own element stride (0 = broadcast scalar, any other value
 * allowed). out may be exactly one of the inputs (in-place, same element
 * positions, stride 1) but must not overlap an input otherwise.
 *
 * Math in these files is compiled without errno and FP-trap semantics so
 * that loops calling sqrt or selecting between computed values vectorise;
 * lace never reads errno or the FP exception flags. Hot float loops are
 * cloned for AVX-512, AVX2 and baseline x86-64, picked at load time. */
#ifndef LC_EW_LOOPS_H
#define LC_EW_LOOPS_H

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-math-errno", "no-trapping-math")
#endif

#include <stdint.h>
#include <string.h>

#include "core/half.h"
#include "ops/dtype_dispatch.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(LACE_NO_CLONES)
#define LC_EW_HOT __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define LC_EW_HOT
#endif

#define LC_ID(x) (x)

/* float16 <-> float32, bit-identical to core/half.h's conversions (round to
 * nearest even; NaN payloads kept, quieted on narrowing) but branch-free so
 * that loops over float16 vectorise. */
static inline float lc_ew_f16_ld(uint16_t h) {
  uint32_t em = h & 0x7fffu, sign = (uint32_t)(h & 0x8000u) << 16, eb = em << 13;
  float f; /* normal and subnormal halves: rebias by scaling by 2^112 */
  memcpy(&f, &eb, 4);
  f *= 0x1p112f;
  uint32_t b;
  memcpy(&b, &f, 4);
  b = em >= 0x7c00u ? eb | 0x7f800000u : b;
  b |= sign;
  memcpy(&f, &b, 4);
  return f;
}
static inline uint16_t lc_ew_f16_st(float x) {
  uint32_t f;
  memcpy(&f, &x, 4);
  uint32_t sign = f & 0x80000000u;
  f ^= sign;
  uint32_t big = f > 0x7f800000u ? 0x7e00u : 0x7c00u; /* NaN, or overflow to inf */
  float fa, t;
  memcpy(&fa, &f, 4);
  t = fa + 0.5f; /* below 2^-14: round at 2^-24 by adding 0.5 */
  uint32_t sub;
  memcpy(&sub, &t, 4);
  sub -= 0x3f000000u;
  uint32_t nrm = (f + 0xc8000fffu + ((f >> 13) & 1)) >> 13; /* rebias, round to even */
  uint32_t o = f >= 0x47800000u ? big : f < 0x38800000u ? sub : nrm;
  return (uint16_t)(o | (sign >> 16));
}

/* FN(n, out, x, sx): o[i] = ST(F(LD(x[i * sx]), C)), C the compute type. */
#define LC_U_LOOP(ATTR, FN, S, C, OS, LD, ST, F)                           \
  ATTR static void FN(int64_t n, void *out, const void *xp, int64_t sx) {  \
    OS *restrict o = out;                                                  \
    const S *restrict x = xp;                                              \
    if (sx == 1) {                                                         \
      for (int64_t i = 0; i < n; i++) o[i] = ST(F((C)LD(x[i]), C));        \
    } else if (sx == 0) { /* the contiguous loop's element 0: same bits */ \
      FN(1, o, xp, 1);                                                     \
      for (int64_t i = 1; i < n; i++) o[i] = o[0];                         \
    } else {                                                               \
      for (int64_t i = 0; i < n; i++) o[i] = ST(F((C)LD(x[i * sx]), C));   \
    }                                                                      \
  }

/* FN(n, out, x, sx, y, sy): o[i] = ST(F(LD(x[i*sx]), LD(y[i*sy]), C)). */
#define LC_B_LOOP(ATTR, FN, S, C, OS, LD, ST, F)                                         \
  ATTR static void FN(int64_t n, void *out, const void *xp, int64_t sx, const void *yp,  \
                      int64_t sy) {                                                      \
    OS *restrict o = out;                                                                \
    const S *restrict x = xp, *restrict y = yp;                                          \
    if (sx == 1 && sy == 1) {                                                            \
      for (int64_t i = 0; i < n; i++) o[i] = ST(F((C)LD(x[i]), (C)LD(y[i]), C));         \
    } else if (sx == 1 && sy == 0) {                                                     \
      C yv = (C)LD(y[0]);                                                                \
      for (int64_t i = 0; i < n; i++) o[i] = ST(F((C)LD(x[i]), yv, C));                  \
    } else if (sx == 0 && sy == 1) {                                                     \
      C xv = (C)LD(x[0]);                                                                \
      for (int64_t i = 0; i < n; i++) o[i] = ST(F(xv, (C)LD(y[i]), C));                  \
    } else {                                                                             \
      for (int64_t i = 0; i < n; i++)                                                    \
        o[i] = ST(F((C)LD(x[i * sx]), (C)LD(y[i * sy]), C));                             \
    }                                                                                    \
  }

/* Loop instantiation over dtype groups. L is LC_U_LOOP or LC_B_LOOP; the
 * loop for dtype DT of op NAME is NAME##_##DT. FF: the expression for
 * float compute (float16, bfloat16, float32), FD for double. */
#define LC_LOOPS_FLOAT_A(A, L, NAME, FF, FD)                                           \
  L(A, NAME##_MLX_FLOAT32, float, float, float, LC_ID, LC_ID, FF)                      \
  L(A, NAME##_MLX_FLOAT64, double, double, double, LC_ID, LC_ID, FD)                   \
  L(A, NAME##_MLX_FLOAT16, uint16_t, float, uint16_t, lc_ew_f16_ld, lc_ew_f16_st, FF)  \
  L(A, NAME##_MLX_BFLOAT16, uint16_t, float, uint16_t, lc_bf16_to_f32, lc_f32_to_bf16, FF)
#define LC_LOOPS_FLOAT(L, NAME, FF, FD) LC_LOOPS_FLOAT_A(LC_EW_HOT, L, NAME, FF, FD)
/* Not cloned: for ops dominated by scalar libm calls. */
#define LC_LOOPS_FLOAT_COLD(L, NAME, FF, FD) LC_LOOPS_FLOAT_A(, L, NAME, FF, FD)

/* Same, with output storage type OS (bool for predicates). */
#define LC_LOOPS_FLOAT_TO(L, NAME, OS, FF, FD)                                       \
  L(LC_EW_HOT, NAME##_MLX_FLOAT32, float, float, OS, LC_ID, LC_ID, FF)               \
  L(LC_EW_HOT, NAME##_MLX_FLOAT64, double, double, OS, LC_ID, LC_ID, FD)             \
  L(LC_EW_HOT, NAME##_MLX_FLOAT16, uint16_t, float, OS, lc_ew_f16_ld, LC_ID, FF)    \
  L(LC_EW_HOT, NAME##_MLX_BFLOAT16, uint16_t, float, OS, lc_bf16_to_f32, LC_ID, FF)

/* Signed integers: FI(x, C); unsigned integers and bool: FU(x, C). */
#define LC_LOOPS_INT_TO(L, NAME, OS_SAME, FS, FU)                                    \
  L(, NAME##_MLX_BOOL, bool, bool, OS_SAME(bool), LC_ID, LC_ID, FU)                  \
  L(, NAME##_MLX_UINT8, uint8_t, uint8_t, OS_SAME(uint8_t), LC_ID, LC_ID, FU)        \
  L(, NAME##_MLX_UINT16, uint16_t, uint16_t, OS_SAME(uint16_t), LC_ID, LC_ID, FU)    \
  L(, NAME##_MLX_UINT32, uint32_t, uint32_t, OS_SAME(uint32_t), LC_ID, LC_ID, FU)    \
  L(, NAME##_MLX_UINT64, uint64_t, uint64_t, OS_SAME(uint64_t), LC_ID, LC_ID, FU)    \
  L(, NAME##_MLX_INT8, int8_t, int8_t, OS_SAME(int8_t), LC_ID, LC_ID, FS)            \
  L(, NAME##_MLX_INT16, int16_t, int16_t, OS_SAME(int16_t), LC_ID, LC_ID, FS)        \
  L(LC_EW_HOT, NAME##_MLX_INT32, int32_t, int32_t, OS_SAME(int32_t), LC_ID, LC_ID, FS) \
  L(, NAME##_MLX_INT64, int64_t, int64_t, OS_SAME(int64_t), LC_ID, LC_ID, FS)
#define LC_OS_SAME(T) T
#define LC_OS_BOOL(T) bool
#define LC_LOOPS_INT(L, NAME, FS, FU) LC_LOOPS_INT_TO(L, NAME, LC_OS_SAME, FS, FU)

#define LC_LOOP_CX(L, NAME, OS, FC) L(, NAME##_MLX_COMPLEX64, lc_c64, lc_c64, OS, LC_ID, LC_ID, FC)

/* Switch cases calling the loops (U: unary, B: binary argument lists). */
#define LC_UCASE(NAME, DT) \
  case DT: NAME##_##DT(n, out, in[0], is[0]); break;
#define LC_BCASE(NAME, DT) \
  case DT: NAME##_##DT(n, out, in[0], is[0], in[1], is[1]); break;
#define LC_CASES_FLOAT(C, NAME) \
  C(NAME, MLX_FLOAT16) C(NAME, MLX_FLOAT32) C(NAME, MLX_FLOAT64) C(NAME, MLX_BFLOAT16)
#define LC_CASES_INT(C, NAME)                                                         \
  C(NAME, MLX_BOOL) C(NAME, MLX_UINT8) C(NAME, MLX_UINT16) C(NAME, MLX_UINT32)         \
  C(NAME, MLX_UINT64) C(NAME, MLX_INT8) C(NAME, MLX_INT16) C(NAME, MLX_INT32)          \
  C(NAME, MLX_INT64)
#define LC_CASES_CX(C, NAME) C(NAME, MLX_COMPLEX64)

/* The kernel NAME##_kernel: a switch over in_dt with the given cases. */
#define LC_KERNEL(NAME, CASES)                                                         \
  static void NAME##_kernel(int64_t n, void *out, mlx_dtype out_dt, const void *const *in, \
                            const int64_t *is, mlx_dtype in_dt, const void *params) {   \
    (void)out_dt;                                                                      \
    (void)params;                                                                      \
    switch (in_dt) {                                                                   \
      CASES                                                                            \
    default: break;                                                                    \
    }                                                                                  \
  }

/* Wrapping integer arithmetic (no signed overflow): through uint64_t, then
 * converted (modulo) to C. Functions, so that bool results convert quietly. */
static inline uint64_t lc_wadd(uint64_t x, uint64_t y) { return x + y; }
static inline uint64_t lc_wsub(uint64_t x, uint64_t y) { return x - y; }
static inline uint64_t lc_wmul(uint64_t x, uint64_t y) { return x * y; }
static inline uint64_t lc_wnot(uint64_t x) { return ~x; }
#define LC_WADD(x, y, C) ((C)lc_wadd((uint64_t)(x), (uint64_t)(y)))
#define LC_WSUB(x, y, C) ((C)lc_wsub((uint64_t)(x), (uint64_t)(y)))
#define LC_WMUL(x, y, C) ((C)lc_wmul((uint64_t)(x), (uint64_t)(y)))
#define LC_WNEG(x, C) ((C)lc_wsub(0, (uint64_t)(x)))

#endif
