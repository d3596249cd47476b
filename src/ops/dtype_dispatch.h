/* Typed loops over mlx dtypes, for kernel writers.
 *
 * LC_FOR_DTYPES(X) expands X(DT, S, C) for every dtype: DT the mlx_dtype
 * enumerator, S the storage type, C the type arithmetic is done in (float
 * for float16/bfloat16, S otherwise). lc_ld_DT(s) converts storage to
 * compute, lc_st_DT(c) compute (or any arithmetic type) to storage. Plain C
 * conversions give MLX's casting semantics: to bool is "!= 0"; complex to
 * real keeps the real part; real to complex has zero imaginary part.
 * Floating (or complex) to integer truncates toward zero and saturates:
 * values beyond the target's range give its minimum or maximum, NaN gives
 * 0 (C leaves those conversions undefined; MLX's CPU results for them are
 * whatever the hardware instruction produces).
 *
 * Typical use: a switch over the dtype whose cases are generated:
 *   switch (dt) {
 *   #define CASE(DT, S, C) case DT: my_loop_##DT(...); break;
 *     LC_FOR_DTYPES(CASE)
 *   #undef CASE
 *   } */
#ifndef LC_DTYPE_DISPATCH_H
#define LC_DTYPE_DISPATCH_H

#include <complex.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/half.h"
#include "mlx/c/array.h"

typedef float _Complex lc_c64;

#define LC_FOR_INT_DTYPES(X)               \
  X(MLX_UINT8, uint8_t, uint8_t)           \
  X(MLX_UINT16, uint16_t, uint16_t)        \
  X(MLX_UINT32, uint32_t, uint32_t)        \
  X(MLX_UINT64, uint64_t, uint64_t)        \
  X(MLX_INT8, int8_t, int8_t)              \
  X(MLX_INT16, int16_t, int16_t)           \
  X(MLX_INT32, int32_t, int32_t)           \
  X(MLX_INT64, int64_t, int64_t)

#define LC_FOR_FLOAT_DTYPES(X)             \
  X(MLX_FLOAT16, uint16_t, float)          \
  X(MLX_FLOAT32, float, float)             \
  X(MLX_FLOAT64, double, double)           \
  X(MLX_BFLOAT16, uint16_t, float)

/* Real (non-complex) dtypes, in enum order. */
#define LC_FOR_REAL_DTYPES(X) X(MLX_BOOL, bool, bool) LC_FOR_INT_DTYPES(X) LC_FOR_FLOAT_DTYPES(X)

/* Every dtype, in enum order. */
#define LC_FOR_DTYPES(X) LC_FOR_REAL_DTYPES(X) X(MLX_COMPLEX64, lc_c64, lc_c64)

#define lc_ld_MLX_BOOL(v) (v)
#define lc_ld_MLX_UINT8(v) (v)
#define lc_ld_MLX_UINT16(v) (v)
#define lc_ld_MLX_UINT32(v) (v)
#define lc_ld_MLX_UINT64(v) (v)
#define lc_ld_MLX_INT8(v) (v)
#define lc_ld_MLX_INT16(v) (v)
#define lc_ld_MLX_INT32(v) (v)
#define lc_ld_MLX_INT64(v) (v)
#define lc_ld_MLX_FLOAT16(v) lc_f16_to_f32(v)
#define lc_ld_MLX_FLOAT32(v) (v)
#define lc_ld_MLX_FLOAT64(v) (v)
#define lc_ld_MLX_BFLOAT16(v) lc_bf16_to_f32(v)
#define lc_ld_MLX_COMPLEX64(v) (v)

/* Saturating float -> integer: x is clamped into [lo, hi] (hi: the largest
 * value of type F that converts), NaN is replaced by 0, then cast; where
 * the target's maximum is no value of F (wide), x >= top (2^bits) gives the
 * maximum. Every cast is of an in-range value and the selects are
 * branch-free, so loops vectorise. */
#define LC_SAT_FN(NAME, F, T, LO, HI, WIDE, TOP, MAX)        \
  static inline T NAME(F x) {                                \
    F c = x > (F)(LO) ? x : (F)(LO);                         \
    c = c < (F)(HI) ? c : (F)(HI);                           \
    c = x == x ? c : (F)0;                                   \
    T r = (T)c;                                              \
    return (WIDE) && x >= (F)(TOP) ? (T)(MAX) : r;           \
  }
/* WF, WD: whether the maximum is out of float's, double's reach. */
#define LC_SAT_PAIR(SUF, T, LO, HIF, HID, WF, WD, TOP, MAX)            \
  LC_SAT_FN(lc_sat_f_##SUF, float, T, LO, HIF, WF, TOP, MAX)           \
  LC_SAT_FN(lc_sat_d_##SUF, double, T, LO, HID, WD, TOP, MAX)
LC_SAT_PAIR(u8, uint8_t, 0, 255.0f, 255.0, 0, 0, 0x1p8, UINT8_MAX)
LC_SAT_PAIR(u16, uint16_t, 0, 65535.0f, 65535.0, 0, 0, 0x1p16, UINT16_MAX)
LC_SAT_PAIR(u32, uint32_t, 0, 0x1.fffffep31f, 4294967295.0, 1, 0, 0x1p32, UINT32_MAX)
LC_SAT_PAIR(u64, uint64_t, 0, 0x1.fffffep63f, 0x1.fffffffffffffp63, 1, 1, 0x1p64, UINT64_MAX)
LC_SAT_PAIR(i8, int8_t, -128, 127.0f, 127.0, 0, 0, 0x1p7, INT8_MAX)
LC_SAT_PAIR(i16, int16_t, -32768, 32767.0f, 32767.0, 0, 0, 0x1p15, INT16_MAX)
LC_SAT_PAIR(i32, int32_t, -0x1p31, 0x1.fffffep30f, 2147483647.0, 1, 0, 0x1p31, INT32_MAX)
LC_SAT_PAIR(i64, int64_t, -0x1p63, 0x1.fffffep62f, 0x1.fffffffffffffp62, 1, 1, 0x1p63, INT64_MAX)
#undef LC_SAT_PAIR
#undef LC_SAT_FN

/* v (any arithmetic type) to integer type T with suffix SUF: saturating
 * from floating and complex types, C's conversion from integers. */
#define LC_ST_INT(T, SUF, v)                                  \
  _Generic((v),                                               \
      float: lc_sat_f_##SUF((float)(v)),                      \
      double: lc_sat_d_##SUF((double)(v)),                    \
      float _Complex: lc_sat_f_##SUF(crealf((float _Complex)(v))), \
      double _Complex: lc_sat_d_##SUF(creal((double _Complex)(v))), \
      default: (T)(v))

#define lc_st_MLX_BOOL(v) ((bool)(v))
#define lc_st_MLX_UINT8(v) LC_ST_INT(uint8_t, u8, v)
#define lc_st_MLX_UINT16(v) LC_ST_INT(uint16_t, u16, v)
#define lc_st_MLX_UINT32(v) LC_ST_INT(uint32_t, u32, v)
#define lc_st_MLX_UINT64(v) LC_ST_INT(uint64_t, u64, v)
#define lc_st_MLX_INT8(v) LC_ST_INT(int8_t, i8, v)
#define lc_st_MLX_INT16(v) LC_ST_INT(int16_t, i16, v)
#define lc_st_MLX_INT32(v) LC_ST_INT(int32_t, i32, v)
#define lc_st_MLX_INT64(v) LC_ST_INT(int64_t, i64, v)
#define lc_st_MLX_FLOAT16(v) lc_f32_to_f16((float)(v))
#define lc_st_MLX_FLOAT32(v) ((float)(v))
#define lc_st_MLX_FLOAT64(v) ((double)(v))
#define lc_st_MLX_BFLOAT16(v) lc_f32_to_bf16((float)(v))
#define lc_st_MLX_COMPLEX64(v) ((lc_c64)(v))

#endif
