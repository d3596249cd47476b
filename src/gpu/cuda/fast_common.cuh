// Device helpers of the fast-family kernels (fast.cu, fast_sdpa.cu).
#pragma once
#include "gpu/cuda/cu_types.cuh"
#include "gpu/cuda/fast.h"

// Rounding to storage type T as the CPU kernels do (lc_st_* of
// ops/dtype_dispatch.h): the 16-bit floats go through float first.
template <class T> struct lc_st {
  __device__ __forceinline__ static T f(double v) { return (T)v; }
};
template <> struct lc_st<__half> {
  __device__ __forceinline__ static __half f(double v) { return __float2half_rn((float)v); }
};
template <> struct lc_st<__nv_bfloat16> {
  __device__ __forceinline__ static __nv_bfloat16 f(double v) {
    return __float2bfloat16_rn((float)v);
  }
};

// 16 bytes of T: one vector load or store (p 16-byte aligned).
template <class T> struct lc_pack {
  static constexpr int n = 16 / sizeof(T);
  union {
    uint4 u;
    T e[n];
  };
  __device__ __forceinline__ lc_pack() {}
  __device__ __forceinline__ static lc_pack load(const T *p) {
    lc_pack r;
    r.u = *(const uint4 *)p;
    return r;
  }
  __device__ __forceinline__ void store(T *p) const { *(uint4 *)p = u; }
};

// Element offset of row r (see struct lc_cu_rows).
__device__ __forceinline__ int64_t lc_row_start(const lc_cu_rows &x, int64_t r, int64_t len) {
  if (x.nlead == 0) return r * len;
  int64_t off = 0;
  for (int d = x.nlead - 1; d >= 0 && r; d--) {
    int64_t e = x.shape[d];
    off += (r % e) * x.strides[d];
    r /= e;
  }
  return off;
}
