// The elementwise ops of the GPU as functors over the arithmetic type C
// (float for the 16-bit floats, else the storage type), with the CPU
// kernels' semantics (ops/unary.c, ops/binary.c). Shared by the
// nvcc-built kernels (ew.cu) and the NVRTC-built fused kernels (nvrtc.c embeds this
// text), so it includes nothing: it needs only what both compilers
// provide (CUDA's device math functions, the integer types by their C
// names).
#pragma once

template <class A, class B> struct lc_same { static constexpr bool v = false; };
template <class A> struct lc_same<A, A> { static constexpr bool v = true; };
template <class C> struct lc_is_fp { static constexpr bool v = lc_same<C, float>::v || lc_same<C, double>::v; };

#define LC_UN(NAME, ...) \
  struct NAME { template <class C> __device__ __forceinline__ C operator()(C x) const { return __VA_ARGS__; } };
LC_UN(Abs, x < (C)0 ? (C)(-x) : x)
LC_UN(Neg, (C)(-x))
LC_UN(Square, (C)(x * x))
LC_UN(Copy, x)
LC_UN(Sqrt, sqrt(x))
LC_UN(Rsqrt, (C)1 / sqrt(x))
LC_UN(Exp, exp(x))
LC_UN(Expm1, expm1(x))
LC_UN(Log, log(x))
LC_UN(Log1p, log1p(x))
LC_UN(Log2, log2(x))
LC_UN(Log10, log10(x))
LC_UN(Sin, sin(x))
LC_UN(Cos, cos(x))
LC_UN(Tan, tan(x))
LC_UN(Asin, asin(x))
LC_UN(Acos, acos(x))
LC_UN(Atan, atan(x))
LC_UN(Sinh, sinh(x))
LC_UN(Cosh, cosh(x))
LC_UN(Tanh, tanh(x))
LC_UN(Asinh, asinh(x))
LC_UN(Acosh, acosh(x))
LC_UN(Atanh, atanh(x))
LC_UN(Sigmoid, (C)1 / ((C)1 + exp(-x)))
LC_UN(Erf, erf(x))
LC_UN(Erfinv, erfinv(x))
LC_UN(Floor, floor(x))
LC_UN(Ceil, ceil(x))
LC_UN(Round, rint(x))
LC_UN(BitNot, (C)~x)
#undef LC_UN
// exp of a value whose result is rounded to a 16-bit float (the float
// arithmetic of float16 and bfloat16): 2^(x log2 e) by the GPU's ex2,
// subnormal results kept, five instructions instead of expf's ten. Its
// relative error is below 2^-18 over float's range (the product's
// rounding, |x log2 e| <= 150, dominates ex2's 2^-22), far below the
// 16-bit types' 2^-9 and 2^-12, so the rounded result is one of the two
// 16-bit floats around exp(x): almost always the nearest, as expf's is,
// never further. Other types (and double) get exp.
struct Exp16 {
  template <class C> __device__ __forceinline__ C operator()(C x) const {
    if constexpr (lc_same<C, float>::v) {
      float r;
      asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x * 1.4426950408889634f));
      return r;
    } else {
      return exp(x);
    }
  }
};
// erf of a value whose result is rounded to bfloat16: x P(x^2), P of degree
// 9 fitted to erf(x) / x on [0, 2.25] (relative error 2^-24 there, by
// explicit fused multiply-adds, the same in NVRTC's --fmad=false builds);
// past 2.25 erf rounds to +-1 in bfloat16 (it exceeds 1 - 2^-9), so x is
// clamped there, NaN kept. Thirteen instructions instead of erff's twenty
// odd; over every bfloat16 input the rounded result is one of the two
// around erf(x) (tests/gpu/test_gpu_half_math.c), in practice the nearest.
// Other types get erf.
struct ErfBf {
  template <class C> __device__ __forceinline__ C operator()(C x) const {
    if constexpr (lc_same<C, float>::v) {
      float t;
#if __CUDA_ARCH__ >= 800
      asm("{ .reg .f32 m; max.NaN.f32 m, %1, 0fC0100000; min.NaN.f32 %0, m, 0f40100000; }"
          : "=f"(t) : "f"(x)); // +-2.25
#else
      t = x != x ? x : fminf(fmaxf(x, -2.25f), 2.25f);
#endif
      const float u = t * t;
      float p = -1.854796849443119e-08f;
      p = __fmaf_rn(p, u, 6.244614496608847e-07f);
      p = __fmaf_rn(p, u, -1.0027214557339903e-05f);
      p = __fmaf_rn(p, u, 0.00010489379201317206f);
      p = __fmaf_rn(p, u, -0.0008221183670684695f);
      p = __fmaf_rn(p, u, 0.005180901847779751f);
      p = __fmaf_rn(p, u, -0.026832737028598785f);
      p = __fmaf_rn(p, u, 0.11282443255186081f);
      p = __fmaf_rn(p, u, -0.37612423300743103f);
      p = __fmaf_rn(p, u, 1.1283791065216064f);
      return t * p;
    } else {
      return erf(x);
    }
  }
};
struct Sign { /* NaN gives 0, as the CPU's and MLX's */
  template <class C> __device__ __forceinline__ C operator()(C x) const {
    return x > (C)0 ? (C)1 : x < (C)0 ? (C)-1 : (C)0;
  }
};
struct LogicalNot {
  template <class C> __device__ __forceinline__ bool operator()(C x) const { return !x; }
};
struct NanToNum {
  double nan, pinf, ninf;
  template <class C> __device__ __forceinline__ C operator()(C x) const {
    if (x != x) return (C)nan;
    if (isinf(x)) return x > 0 ? (C)pinf : (C)ninf;
    return x;
  }
};

// fp8 e4m3 codes as ops/unary.c's to_fp8 / from_fp8 (and MLX): to a code
// from the value rounded to float, nearest even, magnitudes >= 480, inf and
// NaN saturating to 448 (0x7e); every code back to a finite float (0x7f
// reads 480), which every float dtype holds exactly.
struct ToFp8 {
  template <class C> __device__ __forceinline__ unsigned char operator()(C x) const {
    unsigned int bits = __float_as_uint((float)x), sign = bits & 0x80000000u, a = bits ^ sign, r;
    if (a >= 0x43f00000u)
      r = 0x7e;
    else if (a < 0x3c800000u) /* below 2^-6: the subnormal codes, steps of 2^-9 */
      r = (unsigned int)rintf(__uint_as_float(a) * 512.0f);
    else
      r = (a + ((unsigned int)(7 - 127) << 23) + 0x7ffffu + ((a >> 20) & 1)) >> 20;
    return (unsigned char)(r | (sign >> 24));
  }
};
struct FromFp8 {
  template <class C> __device__ __forceinline__ float operator()(C c) const {
    unsigned int u = (unsigned int)c, e = (u >> 3) & 15, m = u & 7;
    float v = e ? __uint_as_float((e + 120) << 23 | m << 20) : (float)m * 0.001953125f;
    return (u & 0x80) ? -v : v;
  }
};
#define LC_BIN(NAME, ...) \
  struct NAME { template <class C> __device__ __forceinline__ C operator()(C x, C y) const { return __VA_ARGS__; } };
#define LC_PRED(NAME, ...) \
  struct NAME { template <class C> __device__ __forceinline__ bool operator()(C x, C y) const { return __VA_ARGS__; } };
// integer +, -, * wrap (done in the unsigned type of the same width)
template <class C> struct lc_uns { using type = C; };
template <> struct lc_uns<signed char> { using type = unsigned char; };
template <> struct lc_uns<short> { using type = unsigned short; };
template <> struct lc_uns<int> { using type = unsigned int; };
template <> struct lc_uns<long long> { using type = unsigned long long; };
#define LC_WRAP(OP) (C)((typename lc_uns<C>::type)x OP (typename lc_uns<C>::type)y)
LC_BIN(Add, lc_same<C, bool>::v ? (C)(x || y) : (C)LC_WRAP(+))
LC_BIN(Sub, (C)LC_WRAP(-))
LC_BIN(Mul, lc_same<C, bool>::v ? (C)(x && y) : (C)LC_WRAP(*))
LC_BIN(Div, x / y)
LC_BIN(Max, (x > y || x != x) ? x : y)
LC_BIN(Min, (x < y || x != x) ? x : y)
LC_BIN(Atan2, atan2(x, y))
LC_BIN(BitAnd, (C)(x & y))
LC_BIN(BitOr, (C)(x | y))
LC_BIN(BitXor, (C)(x ^ y))
LC_PRED(Eq, x == y)
LC_PRED(Ne, x != y)
LC_PRED(Gt, x > y)
LC_PRED(Ge, x >= y)
LC_PRED(Lt, x < y)
LC_PRED(Le, x <= y)
LC_PRED(NanEq, x == y || (x != x && y != y))
LC_PRED(And, x && y)
LC_PRED(Or, x || y)
// isclose as ops/binary.c: in float for the 16/32-bit floats (MLX's
// tolerances are float32 scalars), in double for every other type; an
// infinite operand is close only to an equal one.
template <class C> struct lc_isclose_type { typedef double type; };
template <> struct lc_isclose_type<float> { typedef float type; };
struct IsClose {
  double rtol, atol, equal_nan;
  template <class C> __device__ __forceinline__ bool operator()(C xc, C yc) const {
    typedef typename lc_isclose_type<C>::type F;
    F x = (F)xc, y = (F)yc, rt = (F)rtol, at = (F)atol;
    bool inf = isinf(x) || isinf(y);
    F d = x - y, ay = y < 0 ? -y : y;
    bool ok = inf ? x == y : (d < 0 ? -d : d) <= at + rt * ay;
    return ok || (equal_nan != 0 && x != x && y != y);
  }
};
#undef LC_WRAP
#undef LC_BIN
#undef LC_PRED
struct PowF {
  template <class C> __device__ __forceinline__ C operator()(C x, C y) const { return pow(x, y); }
};
struct PowI {
  template <class C> __device__ __forceinline__ C operator()(C x, C y) const {
    if constexpr ((C)(-1) < (C)0) {
      if (y < 0) return (C)0;
    }
    unsigned long long r = 1, b = (unsigned long long)x, e = (unsigned long long)y;
    while (e) {
      if (e & 1) r *= b;
      e >>= 1;
      b *= b;
    }
    return (C)r;
  }
};
struct FloorDivI {
  template <class C> __device__ __forceinline__ C operator()(C x, C y) const {
    if (y == 0) return 0;
    if constexpr ((C)(-1) < (C)0) {
      if (y == (C)-1) return (C)(0ull - (unsigned long long)(long long)x);
      C q = x / y;
      return (x % y != 0 && ((x < 0) != (y < 0))) ? (C)(q - 1) : q;
    } else {
      return x / y;
    }
  }
};
struct RemI {
  template <class C> __device__ __forceinline__ C operator()(C x, C y) const {
    if (y == 0) return x;
    if constexpr ((C)(-1) < (C)0) {
      if (y == (C)-1) return 0;
      C r = x % y;
      return (r != 0 && ((r < 0) != (y < 0))) ? (C)(r + y) : r;
    } else {
      return x % y;
    }
  }
};
struct RemF {
  template <class C> __device__ __forceinline__ C operator()(C x, C y) const {
    C r = fmod(x, y);
    return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
  }
};
struct LogAddExp {
  template <class C> __device__ __forceinline__ C operator()(C x, C y) const {
    const C inf = (C)__int_as_float(0x7f800000);
    C hi = (x > y || x != x) ? x : y, lo = (x < y || x != x) ? x : y;
    if (lo == -inf || hi == inf) return hi;
    return hi + log1p(exp(lo - hi));
  }
};
struct Shl {
  template <class C> __device__ __forceinline__ C operator()(C x, C y) const {
    long long s = (long long)y;
    return s >= 0 && s < 8 * (long long)sizeof(C) ? (C)((unsigned long long)x << s) : (C)0;
  }
};
struct Shr {
  template <class C> __device__ __forceinline__ C operator()(C x, C y) const {
    long long s = (long long)y;
    if (s >= 0 && s < 8 * (long long)sizeof(C)) return (C)(x >> s);
    if constexpr ((C)(-1) < (C)0) return x < 0 ? (C)-1 : (C)0;
    return (C)0;
  }
};
