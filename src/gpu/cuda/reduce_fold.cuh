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
