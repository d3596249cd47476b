// Where input k of an elementwise op (struct lc_cu_ew, kernels.h) holds
// the element of output index i: i itself (flat), 0 (a scalar), or its
// strided offset over the op's collapsed shape. Shared by ew.cu and
// ew_complex.cu.
#pragma once
#include <stdint.h>

#include "gpu/cuda/kernels.h"

__device__ __forceinline__ int64_t lc_ew_in_offset(const lc_cu_ew &a, int k, int64_t i) {
  if (a.ndim == 0) return a.flat[k] ? i : 0;
  int64_t off = 0;
  for (int d = a.ndim - 1; d >= 0; d--) {
    int64_t q = i / a.shape[d];
    off += (i - q * a.shape[d]) * a.strides[k][d];
    i = q;
  }
  return off;
}
