#include "core/dtype.h"

static const size_t sizes[LC_NDTYPES] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 2, 8};
static const char *const names[LC_NDTYPES] = {
    "bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16",
    "int32", "int64", "float16", "float32", "float64", "bfloat16", "complex64"};

bool lc_dtype_valid(mlx_dtype t) { return (unsigned)t < LC_NDTYPES; }
size_t lc_dtype_size(mlx_dtype t) { return lc_dtype_valid(t) ? sizes[t] : 0; }
const char *lc_dtype_name(mlx_dtype t) { return lc_dtype_valid(t) ? names[t] : "invalid"; }

bool lc_dtype_is_float(mlx_dtype t) {
  return t == MLX_FLOAT16 || t == MLX_FLOAT32 || t == MLX_FLOAT64 || t == MLX_BFLOAT16;
}
bool lc_dtype_is_complex(mlx_dtype t) { return t == MLX_COMPLEX64; }
bool lc_dtype_is_inexact(mlx_dtype t) { return lc_dtype_is_float(t) || lc_dtype_is_complex(t); }
bool lc_dtype_is_unsigned(mlx_dtype t) { return t >= MLX_UINT8 && t <= MLX_UINT64; }
bool lc_dtype_is_int(mlx_dtype t) { return t >= MLX_UINT8 && t <= MLX_INT64; }
bool lc_dtype_is_signed(mlx_dtype t) {
  return (t >= MLX_INT8 && t <= MLX_INT64) || lc_dtype_is_inexact(t);
}

/* MLX's promotion lattice, written as a table indexed [a][b]. Notable
 * entries: uint64 with any signed int gives float32; float16 with bfloat16
 * gives float32; anything with complex64 gives complex64. */
#define B MLX_BOOL
#define U8 MLX_UINT8
#define U16 MLX_UINT16
#define U32 MLX_UINT32
#define U64 MLX_UINT64
#define I8 MLX_INT8
#define I16 MLX_INT16
#define I32 MLX_INT32
#define I64 MLX_INT64
#define F16 MLX_FLOAT16
#define F32 MLX_FLOAT32
#define F64 MLX_FLOAT64
#define BF MLX_BFLOAT16
#define C64 MLX_COMPLEX64
static const mlx_dtype promote[LC_NDTYPES][LC_NDTYPES] = {
    /*         B    U8   U16  U32  U64  I8   I16  I32  I64  F16  F32  F64  BF   C64 */
    /* B  */ {B, U8, U16, U32, U64, I8, I16, I32, I64, F16, F32, F64, BF, C64},
    /* U8 */ {U8, U8, U16, U32, U64, I16, I16, I32, I64, F16, F32, F64, BF, C64},
    /* U16*/ {U16, U16, U16, U32, U64, I32, I32, I32, I64, F16, F32, F64, BF, C64},
    /* U32*/ {U32, U32, U32, U32, U64, I64, I64, I64, I64, F16, F32, F64, BF, C64},
    /* U64*/ {U64, U64, U64, U64, U64, F32, F32, F32, F32, F16, F32, F64, BF, C64},
    /* I8 */ {I8, I16, I32, I64, F32, I8, I16, I32, I64, F16, F32, F64, BF, C64},
    /* I16*/ {I16, I16, I32, I64, F32, I16, I16, I32, I64, F16, F32, F64, BF, C64},
    /* I32*/ {I32, I32, I32, I64, F32, I32, I32, I32, I64, F16, F32, F64, BF, C64},
    /* I64*/ {I64, I64, I64, I64, F32, I64, I64, I64, I64, F16, F32, F64, BF, C64},
    /* F16*/ {F16, F16, F16, F16, F16, F16, F16, F16, F16, F16, F32, F64, F32, C64},
    /* F32*/ {F32, F32, F32, F32, F32, F32, F32, F32, F32, F32, F32, F64, F32, C64},
    /* F64*/ {F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, C64},
    /* BF */ {BF, BF, BF, BF, BF, BF, BF, BF, BF, F32, F32, F64, BF, C64},
    /* C64*/ {C64, C64, C64, C64, C64, C64, C64, C64, C64, C64, C64, C64, C64, C64},
};

mlx_dtype lc_dtype_promote(mlx_dtype a, mlx_dtype b) {
  if (!lc_dtype_valid(a) || !lc_dtype_valid(b)) return MLX_FLOAT32;
  return promote[a][b];
}

mlx_dtype lc_dtype_inexact(mlx_dtype t) { return lc_dtype_is_inexact(t) ? t : MLX_FLOAT32; }

#include <complex.h>
#include <math.h>
#include <stdint.h>

#include "core/half.h"

/* Integer targets: values in int64's range convert through int64 (so
 * integers wrap modulo the width, as C++); NaN gives 0 and values beyond
 * int64's range saturate to the target's limits (C leaves them undefined). */
static bool store_saturated(void *dst, mlx_dtype t, double v) {
  if (v < 0x1p63 && v >= -0x1p63) return false;
  bool hi = v > 0;
  switch (t) {
  case MLX_UINT8: *(uint8_t *)dst = hi ? UINT8_MAX : 0; break;
  case MLX_UINT16: *(uint16_t *)dst = hi ? UINT16_MAX : 0; break;
  case MLX_UINT32: *(uint32_t *)dst = hi ? UINT32_MAX : 0; break;
  case MLX_UINT64: *(uint64_t *)dst = hi ? (v < 0x1p64 ? (uint64_t)v : UINT64_MAX) : 0; break;
  case MLX_INT8: *(int8_t *)dst = hi ? INT8_MAX : INT8_MIN; break;
  case MLX_INT16: *(int16_t *)dst = hi ? INT16_MAX : INT16_MIN; break;
  case MLX_INT32: *(int32_t *)dst = hi ? INT32_MAX : INT32_MIN; break;
  case MLX_INT64: *(int64_t *)dst = hi ? INT64_MAX : INT64_MIN; break;
  default: return false;
  }
  return true;
}

void lc_dtype_store(void *dst, mlx_dtype t, double v) {
  double iv = isnan(v) ? 0 : v;
  if (store_saturated(dst, t, iv)) return;
  switch (t) {
  case MLX_BOOL: *(bool *)dst = v != 0; break;
  case MLX_UINT8: *(uint8_t *)dst = (uint8_t)(int64_t)iv; break;
  case MLX_UINT16: *(uint16_t *)dst = (uint16_t)(int64_t)iv; break;
  case MLX_UINT32: *(uint32_t *)dst = (uint32_t)(int64_t)iv; break;
  case MLX_UINT64: *(uint64_t *)dst = iv < 0 ? (uint64_t)(int64_t)iv : (uint64_t)iv; break;
  case MLX_INT8: *(int8_t *)dst = (int8_t)(int64_t)iv; break;
  case MLX_INT16: *(int16_t *)dst = (int16_t)(int64_t)iv; break;
  case MLX_INT32: *(int32_t *)dst = (int32_t)(int64_t)iv; break;
  case MLX_INT64: *(int64_t *)dst = (int64_t)iv; break;
  case MLX_FLOAT16: *(uint16_t *)dst = lc_f32_to_f16((float)v); break;
  case MLX_FLOAT32: *(float *)dst = (float)v; break;
  case MLX_FLOAT64: *(double *)dst = v; break;
  case MLX_BFLOAT16: *(uint16_t *)dst = lc_f32_to_bf16((float)v); break;
  case MLX_COMPLEX64: *(float _Complex *)dst = (float)v; break;
  }
}

double lc_dtype_load(const void *src, mlx_dtype t) {
  switch (t) {
  case MLX_BOOL: return *(const bool *)src;
  case MLX_UINT8: return *(const uint8_t *)src;
  case MLX_UINT16: return *(const uint16_t *)src;
  case MLX_UINT32: return *(const uint32_t *)src;
  case MLX_UINT64: return (double)*(const uint64_t *)src;
  case MLX_INT8: return *(const int8_t *)src;
  case MLX_INT16: return *(const int16_t *)src;
  case MLX_INT32: return *(const int32_t *)src;
  case MLX_INT64: return (double)*(const int64_t *)src;
  case MLX_FLOAT16: return lc_f16_to_f32(*(const uint16_t *)src);
  case MLX_FLOAT32: return *(const float *)src;
  case MLX_FLOAT64: return *(const double *)src;
  case MLX_BFLOAT16: return lc_bf16_to_f32(*(const uint16_t *)src);
  case MLX_COMPLEX64: return crealf(*(const float _Complex *)src);
  }
  return 0;
}
