/* Typed loops over mlx dtypes, for kernel writers.
 *
 * LC_FOR_DTYPES(X) expands X(DT, S, C) for every dtype: DT the mlx_dtype
 * enumerator, S the storage type, C the type arithmetic is done in (float
 * for float16/bfloat16, S otherwise). lc_ld_DT(s) converts storage to
 * compute, lc_st_DT(c) compute (or any arithmetic type) to storage. Plain C
 * conversions give MLX's casting semantics: to bool is "!= 0"; complex to
 * real keeps the real part; real to complex has zero imaginary part.
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

#define lc_st_MLX_BOOL(v) ((bool)(v))
#define lc_st_MLX_UINT8(v) ((uint8_t)(v))
#define lc_st_MLX_UINT16(v) ((uint16_t)(v))
#define lc_st_MLX_UINT32(v) ((uint32_t)(v))
#define lc_st_MLX_UINT64(v) ((uint64_t)(v))
#define lc_st_MLX_INT8(v) ((int8_t)(v))
#define lc_st_MLX_INT16(v) ((int16_t)(v))
#define lc_st_MLX_INT32(v) ((int32_t)(v))
#define lc_st_MLX_INT64(v) ((int64_t)(v))
#define lc_st_MLX_FLOAT16(v) lc_f32_to_f16((float)(v))
#define lc_st_MLX_FLOAT32(v) ((float)(v))
#define lc_st_MLX_FLOAT64(v) ((double)(v))
#define lc_st_MLX_BFLOAT16(v) lc_f32_to_bf16((float)(v))
#define lc_st_MLX_COMPLEX64(v) ((lc_c64)(v))

#endif
