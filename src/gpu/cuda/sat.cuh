// Saturating conversion of a double to an integer type, as the CPU's
// astype: truncation toward zero, NaN gives 0, out-of-range values give
// the type's bounds. Shared by the nvcc-built kernels (via cu_types.cuh)
// and the NVRTC-built fused kernels (nvrtc.c embeds this text), so it
// includes nothing.
#pragma once

// Saturating double -> integer T, bounds as exact doubles.
template <class T> __device__ __forceinline__ T lc_sat(double x) {
  constexpr bool is_signed = (T)(-1) < (T)0;
  constexpr int bits = 8 * sizeof(T);
  const double top = is_signed ? (double)(1ull << (bits - 1))
                               : (bits == 64 ? 18446744073709551616.0 : (double)(1ull << (bits % 64)));
  const double lo = is_signed ? -top : 0.0;
  if (x != x) return (T)0;
  if (x <= lo) return is_signed ? (T)(1ull << (bits - 1)) : (T)0;
  if (x >= top) return is_signed ? (T)((1ull << (bits - 1)) - 1) : (T)~0ull;
  return (T)x;
}
