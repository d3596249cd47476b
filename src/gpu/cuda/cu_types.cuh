// Device-side dtype helpers shared by the kernels of gpu/cuda/: storage
// types per mlx_dtype, the type arithmetic is done in (float for the
// 16-bit floats), conversions with lace's CPU semantics (float to integer
// truncates toward zero, saturates, NaN gives 0; to bool: != 0).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include <type_traits>

#include "mlx/c/array.h"

template <class T> struct lc_acc { using type = T; };
template <> struct lc_acc<__half> { using type = float; };
template <> struct lc_acc<__nv_bfloat16> { using type = float; };

template <class T> __device__ __forceinline__ typename lc_acc<T>::type lc_ld(T x) { return x; }
template <> __device__ __forceinline__ float lc_ld<__half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float lc_ld<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

template <class T> struct lc_is_int { static constexpr bool v = false; };
#define LC_INT_T(T) template <> struct lc_is_int<T> { static constexpr bool v = true; };
LC_INT_T(uint8_t) LC_INT_T(uint16_t) LC_INT_T(uint32_t) LC_INT_T(unsigned long long)
LC_INT_T(int8_t) LC_INT_T(int16_t) LC_INT_T(int32_t) LC_INT_T(long long)
#undef LC_INT_T

#include "gpu/cuda/sat.cuh"

// Conversion from any arithmetic value to storage type TO.
template <class TO> struct lc_to {
  template <class V> __device__ __forceinline__ static TO f(V v) {
    if constexpr (lc_is_int<TO>::v) {
      if constexpr (std::is_floating_point<V>::value) return lc_sat<TO>((double)v);
      else return (TO)v;
    } else {
      return (TO)v;
    }
  }
};
template <> struct lc_to<bool> {
  template <class V> __device__ __forceinline__ static bool f(V v) { return v != (V)0; }
};
template <> struct lc_to<__half> {
  template <class V> __device__ __forceinline__ static __half f(V v) {
    if constexpr (std::is_same<V, double>::value) return __double2half(v);
    else return __float2half_rn((float)v);
  }
};
template <> struct lc_to<__nv_bfloat16> {
  template <class V> __device__ __forceinline__ static __nv_bfloat16 f(V v) {
    if constexpr (std::is_same<V, double>::value) return __double2bfloat16(v);
    else return __float2bfloat16_rn((float)v);
  }
};

// Calls F.template operator()<T>() with the storage type of dtype dt;
// false for dtypes not handled on the GPU (complex64).
template <class F> __host__ bool lc_dispatch_real(int dt, F &&f) {
  switch (dt) {
    case MLX_BOOL: f((bool *)0); return true;
    case MLX_UINT8: f((uint8_t *)0); return true;
    case MLX_UINT16: f((uint16_t *)0); return true;
    case MLX_UINT32: f((uint32_t *)0); return true;
    case MLX_UINT64: f((unsigned long long *)0); return true;
    case MLX_INT8: f((int8_t *)0); return true;
    case MLX_INT16: f((int16_t *)0); return true;
    case MLX_INT32: f((int32_t *)0); return true;
    case MLX_INT64: f((long long *)0); return true;
    case MLX_FLOAT16: f((__half *)0); return true;
    case MLX_FLOAT32: f((float *)0); return true;
    case MLX_FLOAT64: f((double *)0); return true;
    case MLX_BFLOAT16: f((__nv_bfloat16 *)0); return true;
    default: return false;
  }
}

template <class F> __host__ bool lc_dispatch_float(int dt, F &&f) {
  switch (dt) {
    case MLX_FLOAT16: f((__half *)0); return true;
    case MLX_FLOAT32: f((float *)0); return true;
    case MLX_FLOAT64: f((double *)0); return true;
    case MLX_BFLOAT16: f((__nv_bfloat16 *)0); return true;
    default: return false;
  }
}

template <class F> __host__ bool lc_dispatch_int(int dt, F &&f) {
  switch (dt) {
    case MLX_UINT8: f((uint8_t *)0); return true;
    case MLX_UINT16: f((uint16_t *)0); return true;
    case MLX_UINT32: f((uint32_t *)0); return true;
    case MLX_UINT64: f((unsigned long long *)0); return true;
    case MLX_INT8: f((int8_t *)0); return true;
    case MLX_INT16: f((int16_t *)0); return true;
    case MLX_INT32: f((int32_t *)0); return true;
    case MLX_INT64: f((long long *)0); return true;
    default: return false;
  }
}
