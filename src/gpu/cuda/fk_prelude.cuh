// Device helpers of the NVRTC-built fused kernels (gpu/cuda/fused_src.c
// puts this text, after sat.cuh and ew_ops.cuh and before the generated
// kernel). Includes nothing, so NVRTC needs no header search path: the
// 16-bit floats are stored as unsigned short and converted with PTX cvt,
// which rounds to nearest even as the CPU's conversions do.
#pragma once

// Programmatic dependent launch, as gpu/cuda/pdl.cuh's lc_pdl_begin (whose
// invariants hold here too): every fused kernel starts with it.
__device__ __forceinline__ void lc_pdl_begin() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ float lc_h2f(unsigned short u) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(u));
  return f;
}
__device__ __forceinline__ unsigned short lc_f2h(float f) {
  unsigned short u;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(u) : "f"(f));
  return u;
}
__device__ __forceinline__ unsigned short lc_d2h(double d) {
  unsigned short u;
  asm("cvt.rn.f16.f64 %0, %1;" : "=h"(u) : "d"(d));
  return u;
}
__device__ __forceinline__ float lc_bf2f(unsigned short u) {
  return __int_as_float((int)((unsigned)u << 16));
}
// The packed conversions (bf16x2), same rounding: ptxas makes the scalar
// one, when its result is widened again, an F2F and a shift; the packed one
// (f in the high half) a single F2FP that is the float's bits already.
__device__ __forceinline__ unsigned short lc_f2bf(float f) {
  unsigned u;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(u) : "f"(0.f), "f"(f));
  return (unsigned short)u;
}
// A float value rounded to the precision of the 16-bit float types.
__device__ __forceinline__ float lc_rh(float f) { return lc_h2f(lc_f2h(f)); }
// (bfloat16: f rounded into the high half, zeros below: the float's bits.)
__device__ __forceinline__ float lc_rbf(float f) {
  unsigned u;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(u) : "f"(f), "f"(0.f));
  return __uint_as_float(u);
}
// bfloat16 sums, differences and products of bfloat16 values (floats whose
// bits below the top 16 are zero) by the GPU's bfloat16 arithmetic (sm_90):
// one correctly rounded operation instead of a float one and a conversion.
// The same values: the float result rounded again is correctly rounded too
// (24 bits >= 2 * 8 + 2), except for products below float's normal range.
// One paired instruction on the whole float: the high halves hold the
// operands, the low halves zeros, whose sum, difference and product is +0,
// so the result is a float of the same kind, with no repacking.
#if __CUDA_ARCH__ >= 900
#define LC_BF_OP(name, op)                                                       \
  __device__ __forceinline__ float name(float a, float b) {                     \
    unsigned r;                                                                  \
    asm(op " %0, %1, %2;" : "=r"(r) : "r"(__float_as_uint(a)), "r"(__float_as_uint(b))); \
    return __uint_as_float(r);                                                   \
  }
LC_BF_OP(lc_bf_add, "add.rn.bf16x2")
LC_BF_OP(lc_bf_sub, "sub.rn.bf16x2")
LC_BF_OP(lc_bf_mul, "mul.rn.bf16x2")
#undef LC_BF_OP
#else
__device__ __forceinline__ float lc_bf_add(float a, float b) { return lc_rbf(a + b); }
__device__ __forceinline__ float lc_bf_sub(float a, float b) { return lc_rbf(a - b); }
__device__ __forceinline__ float lc_bf_mul(float a, float b) { return lc_rbf(a * b); }
#endif

// V elements of storage type T loaded or stored as one access.
template <class T, int V> struct __align__(sizeof(T) * V) lc_pk { T e[V]; };

// Reduction folds (NaN wins max and min, as on the CPU).
struct RSum { template <class A> __device__ __forceinline__ A operator()(A a, A b) const { return a + b; } };
struct RProd { template <class A> __device__ __forceinline__ A operator()(A a, A b) const { return a * b; } };
struct RMax {
  template <class A> __device__ __forceinline__ A operator()(A a, A b) const { return (a > b || a != a) ? a : b; }
#if __CUDA_ARCH__ >= 800 // one instruction (FMNMX.NAN) instead of two compares and a select
  __device__ __forceinline__ float operator()(float a, float b) const {
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
  }
#endif
};
struct RMin {
  template <class A> __device__ __forceinline__ A operator()(A a, A b) const { return (a < b || a != a) ? a : b; }
#if __CUDA_ARCH__ >= 800
  __device__ __forceinline__ float operator()(float a, float b) const {
    float r;
    asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
  }
#endif
};
struct RAnd { template <class A> __device__ __forceinline__ A operator()(A a, A b) const { return (A)(a != 0 && b != 0); } };
struct ROr { template <class A> __device__ __forceinline__ A operator()(A a, A b) const { return (A)(a != 0 || b != 0); } };

// Combines v over the G threads of a row (G = 32: one warp; G > 32: the
// whole block, through sh, which holds 32 values of A): every thread gets
// the result. id is the fold's identity.
template <int G, class A, class F> __device__ __forceinline__ A lc_grp(A v, F f, A id, A *sh) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, o));
  if constexpr (G > 32) {
    const int w = threadIdx.x / 32, l = threadIdx.x % 32;
    __syncthreads(); // earlier readers of sh are done
    if (l == 0) sh[w] = v;
    __syncthreads();
    v = l < G / 32 ? sh[l] : id;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, o));
  }
  return v;
}
