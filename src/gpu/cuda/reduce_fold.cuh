// The folds of the GPU reductions (reduce.cu, reduce_cols.cu): identity
// and combining step per enum lc_reduce_kind, NaN winning max and min as on
// the CPU; and the accumulator type per storage type (float for 16-bit
// floats, 64-bit integers for integers and bool).
#pragma once
#include <math.h>
#include <type_traits>

#include "gpu/cuda/cu_types.cuh"
#include "ops/reduce_kern.h"

template <class A> struct Combine {
  int kind;
  __device__ A init() const {
    switch (kind) {
      case LC_RED_PROD: case LC_RED_AND: return (A)1;
      case LC_RED_MAX:
        if constexpr (std::is_floating_point<A>::value) return (A)-INFINITY;
        else if constexpr ((A)(-1) < (A)0) return (A)(1ull << 63);
        else return (A)0;
      case LC_RED_MIN:
        if constexpr (std::is_floating_point<A>::value) return (A)INFINITY;
        else if constexpr ((A)(-1) < (A)0) return (A)((1ull << 63) - 1);
        else return (A)~0ull;
      default: return (A)0;
    }
  }
  __device__ A op(A a, A b) const {
    switch (kind) {
      case LC_RED_PROD: return a * b;
      case LC_RED_MAX: return (a > b || a != a) ? a : b;
      case LC_RED_MIN: return (a < b || a != a) ? a : b;
      case LC_RED_AND: return (A)(a != 0 && b != 0);
      case LC_RED_OR: return (A)(a != 0 || b != 0);
      default: return a + b;
    }
  }
};

template <class T> struct acc_of {
  using type = typename std::conditional<
      std::is_floating_point<typename lc_acc<T>::type>::value, typename lc_acc<T>::type,
      typename std::conditional<std::is_signed<T>::value, long long, unsigned long long>::type>::type;
};
template <> struct acc_of<bool> { using type = long long; };

// Every thread of a warp gets the warp's values combined (butterfly order).
template <class A> __device__ __forceinline__ A warp_combine(A v, const Combine<A> &c) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = c.op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Every thread of a group of G consecutive threads (G = 32, or a multiple
// of 32 dividing the block) gets the group's value: its warps' values
// combined in warp order. sh holds blockDim.x / 32 values. Every thread of
// the block calls it the same number of times (barriers when G > 32).
template <class A> __device__ A group_combine(A v, const Combine<A> &c, A *sh, int G) {
  v = warp_combine(v, c);
  if (G == 32) return v;
  const int w = threadIdx.x / 32;
  __syncthreads(); // earlier readers of sh are done
  if (threadIdx.x % 32 == 0) sh[w] = v;
  __syncthreads();
  const int first = (threadIdx.x / G) * (G / 32);
  A r = sh[first];
  for (int i = 1; i < G / 32; i++) r = c.op(r, sh[first + i]);
  return r;
}
