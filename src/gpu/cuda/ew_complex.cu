// complex64 elementwise primitives on the GPU (lc_cu_elementwise_complex,
// kernels.h): a grid-stride loop per (op, types), inputs read as
// ew_index.cuh places them. Semantics are C99's complex float, as the CPU
// kernels (ops/unary.c, ops/binary.c, astype) compute them: + - and the
// conversions exactly; * as the naive product with Annex G's recovery of
// infinities when both parts come out NaN (GCC's __mulsc3); / by the
// plain formula in double, rounded, as libgcc (GCC 12) divides complex
// floats; |z| as glibc's hypotf; the transcendental functions through
// their real formulas (z^w as exp(w log z)), evaluated in double and
// rounded, so they agree with glibc's cexpf, clogf, cpowf ... to rounding,
// not bit for bit, and special values (infinite or NaN parts) follow the
// formulas rather than Annex G, real arguments of sinh and cosh (and so
// sin and cos) and 0^w aside.
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "gpu/cuda/cu_types.cuh"
#include "gpu/cuda/cx.cuh"
#include "gpu/cuda/ew_index.cuh"
#include "gpu/cuda/kernels.h"
#include "gpu/cuda/launch.cuh"
#include "gpu/cuda/pdl.cuh"

enum lc_op_ids {
#define LC_PRIM(id, row) LC_OP_##id,
#include "ops/ops.def"
#undef LC_PRIM
};

namespace {

// a / b as libgcc divides complex floats: the plain formula in double
// (float parts: the products are exact and nothing overflows), rounded;
// zero and infinite operands recovered as Annex G.
__device__ Cx div(Cx a, Cx b) {
  double p = a.re, q = a.im, r = b.re, t = b.im;
  double den = r * r + t * t, x = (p * r + q * t) / den, y = (q * r - p * t) / den;
  if (isnan(x) && isnan(y)) { /* the recovery in float, as libgcc's (its sums may overflow) */
    float fp = a.re, fq = a.im, fr = b.re, ft = b.im;
    if (fr == 0 && ft == 0 && (!isnan(fp) || !isnan(fq)))
      return cx(copysignf(INFINITY, fr) * fp, copysignf(INFINITY, fr) * fq);
    if ((isinf(fp) || isinf(fq)) && isfinite(fr) && isfinite(ft)) {
      float P = copysignf(isinf(fp) ? 1.0f : 0.0f, fp), Q = copysignf(isinf(fq) ? 1.0f : 0.0f, fq);
      return cx(INFINITY * __fadd_rn(__fmul_rn(P, fr), __fmul_rn(Q, ft)),
                INFINITY * __fsub_rn(__fmul_rn(Q, fr), __fmul_rn(P, ft)));
    }
    if ((isinf(fr) || isinf(ft)) && isfinite(fp) && isfinite(fq)) {
      float R = copysignf(isinf(fr) ? 1.0f : 0.0f, fr), T = copysignf(isinf(ft) ? 1.0f : 0.0f, ft);
      return cx(0.0f * __fadd_rn(__fmul_rn(fp, R), __fmul_rn(fq, T)),
                0.0f * __fsub_rn(__fmul_rn(fq, R), __fmul_rn(fp, T)));
    }
  }
  return cxd(x, y);
}

// |z| as glibc's hypotf: the double sum of squares, its root rounded once;
// infinite if either part is.
__device__ float c_abs(Cx z) {
  if (isinf(z.re) || isinf(z.im)) return INFINITY;
  double x = z.re, y = z.im;
  return __double2float_rn(sqrt(__dadd_rn(__dmul_rn(x, x), __dmul_rn(y, y))));
}

__device__ Cx c_exp(Cx z) {
  double e = exp((double)z.re);
  if (z.im == 0) return cx(__double2float_rn(e), z.im); // exp of a real stays real
  return cxd(e * cos((double)z.im), e * sin((double)z.im));
}
// log|z| near |z| = 1 through log1p of |z|^2 - 1 (exact products of
// float parts), where log(hypot) would cancel.
__device__ Cx c_log(Cx z) {
  double x = z.re, y = z.im, h = hypot(x, y);
  double re = h >= 0.5 && h <= 2 ? 0.5 * log1p((x - 1) * (x + 1) + y * y) : log(h);
  return cxd(re, atan2(y, x));
}
// The principal root, both parts from one stable formula.
__device__ Cx c_sqrt(Cx z) {
  double x = z.re, y = z.im;
  if (x == 0 && y == 0) return cx(0.0f, z.im);
  if (isinf(y)) return cx(INFINITY, z.im);
  double m = sqrt((fabs(x) + hypot(x, y)) * 0.5);
  if (x >= 0) return cxd(m, y / (2 * m));
  return cxd(fabs(y) / (2 * m), copysign(m, y));
}
// A real argument (y = 0) stays real, its zero imaginary part signed as
// C's (no inf * 0 for large x).
__device__ Cx c_sinh(Cx z) {
  double x = z.re, y = z.im;
  if (y == 0) return cx(__double2float_rn(sinh(x)), z.im);
  return cxd(sinh(x) * cos(y), cosh(x) * sin(y));
}
__device__ Cx c_cosh(Cx z) {
  double x = z.re, y = z.im;
  if (y == 0) return cx(__double2float_rn(cosh(x)), signbit(x) ? -z.im : z.im);
  return cxd(cosh(x) * cos(y), sinh(x) * sin(y));
}
// (sinh x cosh x + i sin y cos y) / (sinh^2 x + cos^2 y): no cancellation
// near the poles (y = pi/2)
__device__ Cx c_tanh(Cx z) {
  double x = z.re, y = z.im;
  if (fabs(x) > 20) return cxd(copysign(1.0, x), 4 * sin(y) * cos(y) * exp(-2 * fabs(x)));
  double sx = sinh(x), cy = cos(y), d = sx * sx + cy * cy;
  return cxd(sx * cosh(x) / d, sin(y) * cy / d);
}
// sin z = -i sinh(iz), cos z = cosh(iz), tan z = -i tanh(iz)
__device__ Cx c_sin(Cx z) {
  Cx w = c_sinh(cx(-z.im, z.re));
  return cx(w.im, -w.re);
}
__device__ Cx c_cos(Cx z) { return c_cosh(cx(-z.im, z.re)); }
__device__ Cx c_tan(Cx z) {
  Cx w = c_tanh(cx(-z.im, z.re));
  return cx(w.im, -w.re);
}
// z^w as glibc's cpowf composes it, exp(w log z), but in double and
// rounded once (glibc rounds log z and the product to float on the way,
// so the two agree to about |w log z| float ulps). A product whose real
// part is -inf (z = 0, Re w > 0) gives zero, as cexp does by Annex G.
__device__ Cx c_pow(Cx z, Cx w) {
  double x = z.re, y = z.im, lr, li = atan2(y, x), h = hypot(x, y);
  lr = h >= 0.5 && h <= 2 ? 0.5 * log1p((x - 1) * (x + 1) + y * y) : log(h);
  double pr = (double)w.re * lr - (double)w.im * li, pi = (double)w.re * li + (double)w.im * lr;
  if (pr == -INFINITY) return cx(0.0f, copysignf(0.0f, (float)pi));
  double e = exp(pr);
  if (pi == 0) return cx(__double2float_rn(e), 0.0f);
  return cxd(e * cos(pi), e * sin(pi));
}

__device__ __forceinline__ Cx at(const lc_cu_ew &a, int k, int64_t i) {
  return ((const Cx *)a.in[k])[lc_ew_in_offset(a, k, i)];
}

// Ops whose inputs are complex: f(x) or f(x, y) stored as TO.
template <class TO, class F> __global__ void cx_kernel(lc_cu_ew a, F f) {
  lc_pdl_begin();
  TO *o = (TO *)a.out;
  GRID_LOOP(i, a.n) o[i] = a.nin == 1 ? f(at(a, 0, i), at(a, 0, i)) : f(at(a, 0, i), at(a, 1, i));
}

template <class TO, class F> int launch(const lc_cu_ew &a, F f, cudaStream_t s) {
  lc_launch(cx_kernel<TO, F>, dim3(blocks_for(a.n)), dim3(256), 0, s, a, f);
  return done();
}

#define CX_UN(NAME, EXPR) \
  struct NAME { __device__ Cx operator()(Cx x, Cx) const { return EXPR; } };
#define CX_BIN(NAME, EXPR) \
  struct NAME { __device__ Cx operator()(Cx x, Cx y) const { return EXPR; } };
CX_UN(Copy, x)
CX_UN(Neg, cx(-x.re, -x.im))
CX_UN(Conj, cx(x.re, -x.im))
CX_UN(Square, mul(x, x))
CX_UN(Exp, c_exp(x))
CX_UN(Log, c_log(x))
CX_UN(Sqrt, c_sqrt(x))
CX_UN(Sin, c_sin(x))
CX_UN(Cos, c_cos(x))
CX_UN(Tan, c_tan(x))
CX_UN(Sinh, c_sinh(x))
CX_UN(Cosh, c_cosh(x))
CX_UN(Tanh, c_tanh(x))
CX_BIN(Add, cx(__fadd_rn(x.re, y.re), __fadd_rn(x.im, y.im)))
CX_BIN(Sub, cx(__fsub_rn(x.re, y.re), __fsub_rn(x.im, y.im)))
CX_BIN(Mul, mul(x, y))
CX_BIN(Div, div(x, y))
CX_BIN(Pow, c_pow(x, y))
// sign: z / |z| (a complex over a real: part by part), 0 stays
struct Sign {
  __device__ Cx operator()(Cx x, Cx) const {
    if (x.re == 0 && x.im == 0) return x;
    float m = c_abs(x);
    return cx(__fdiv_rn(x.re, m), __fdiv_rn(x.im, m));
  }
};
struct Abs {
  __device__ float operator()(Cx x, Cx) const { return c_abs(x); }
};
struct Real {
  __device__ float operator()(Cx x, Cx) const { return x.re; }
};
struct Imag {
  __device__ float operator()(Cx x, Cx) const { return x.im; }
};
struct Eq {
  __device__ bool operator()(Cx x, Cx y) const { return x.re == y.re && x.im == y.im; }
};
struct Ne {
  __device__ bool operator()(Cx x, Cx y) const { return x.re != y.re || x.im != y.im; }
};
// equal, or both with a NaN part (C's z != z)
struct NanEq {
  __device__ bool operator()(Cx x, Cx y) const {
    bool xn = isnan(x.re) || isnan(x.im), yn = isnan(y.re) || isnan(y.im);
    return (x.re == y.re && x.im == y.im) || (xn && yn);
  }
};

// astype from complex: the real part in the output's type (C's complex to
// real conversion); to bool, whether either part is nonzero.
template <class TO> struct FromCx {
  __device__ TO operator()(Cx x, Cx) const { return lc_to<TO>::f(x.re); }
};
struct CxToBool {
  __device__ bool operator()(Cx x, Cx) const { return x.re != 0 || x.im != 0; }
};

// astype to complex: the real value (rounded to float) and +0.
template <class TI> __global__ void to_cx_kernel(lc_cu_ew a) {
  lc_pdl_begin();
  const TI *x = (const TI *)a.in[0];
  Cx *o = (Cx *)a.out;
  GRID_LOOP(i, a.n) o[i] = cx((float)lc_ld(x[lc_ew_in_offset(a, 0, i)]), 0.0f);
}
template <class TI> int to_cx(const lc_cu_ew &a, cudaStream_t s) {
  lc_launch(to_cx_kernel<TI>, dim3(blocks_for(a.n)), dim3(256), 0, s, a);
  return done();
}

__global__ void select_kernel(lc_cu_ew a) {
  lc_pdl_begin();
  const bool *c = (const bool *)a.in[0];
  Cx *o = (Cx *)a.out;
  GRID_LOOP(i, a.n) o[i] = c[lc_ew_in_offset(a, 0, i)] ? at(a, 1, i) : at(a, 2, i);
}

int astype(const lc_cu_ew &a, cudaStream_t s) {
  if (a.in_dt == MLX_COMPLEX64) {
    switch (a.out_dt) {
      case MLX_COMPLEX64: return launch<Cx>(a, Copy(), s);
      case MLX_FLOAT32: return launch<float>(a, FromCx<float>(), s);
      case MLX_FLOAT64: return launch<double>(a, FromCx<double>(), s);
      case MLX_FLOAT16: return launch<__half>(a, FromCx<__half>(), s);
      case MLX_BFLOAT16: return launch<__nv_bfloat16>(a, FromCx<__nv_bfloat16>(), s);
      case MLX_BOOL: return launch<bool>(a, CxToBool(), s);
      default: return LC_CU_UNSUPPORTED; // integers: the CPU's saturating casts
    }
  }
  switch (a.in_dt) {
    case MLX_FLOAT32: return to_cx<float>(a, s);
    case MLX_FLOAT64: return to_cx<double>(a, s);
    case MLX_FLOAT16: return to_cx<__half>(a, s);
    case MLX_BFLOAT16: return to_cx<__nv_bfloat16>(a, s);
    case MLX_BOOL: return to_cx<bool>(a, s);
    case MLX_INT8: return to_cx<int8_t>(a, s);
    case MLX_INT16: return to_cx<int16_t>(a, s);
    case MLX_INT32: return to_cx<int32_t>(a, s);
    case MLX_INT64: return to_cx<long long>(a, s);
    case MLX_UINT8: return to_cx<uint8_t>(a, s);
    case MLX_UINT16: return to_cx<uint16_t>(a, s);
    case MLX_UINT32: return to_cx<uint32_t>(a, s);
    case MLX_UINT64: return to_cx<unsigned long long>(a, s);
    default: return LC_CU_UNSUPPORTED;
  }
}

int dispatch(const lc_cu_ew &a, cudaStream_t s) {
  if (a.op == LC_OP_ASTYPE) return astype(a, s);
  if (a.in_dt != MLX_COMPLEX64) return LC_CU_UNSUPPORTED;
  switch (a.op) {
    case LC_OP_SELECT:
      if (a.out_dt != MLX_COMPLEX64) return LC_CU_UNSUPPORTED;
      lc_launch(select_kernel, dim3(blocks_for(a.n)), dim3(256), 0, s, a);
      return done();
    case LC_OP_EW_COPY: return launch<Cx>(a, Copy(), s);
    case LC_OP_NEGATIVE: return launch<Cx>(a, Neg(), s);
    case LC_OP_CONJUGATE: return launch<Cx>(a, Conj(), s);
    case LC_OP_SQUARE: return launch<Cx>(a, Square(), s);
    case LC_OP_SIGN: return launch<Cx>(a, Sign(), s);
    case LC_OP_EXP: return launch<Cx>(a, Exp(), s);
    case LC_OP_LOG: return launch<Cx>(a, Log(), s);
    case LC_OP_SQRT: return launch<Cx>(a, Sqrt(), s);
    case LC_OP_SIN: return launch<Cx>(a, Sin(), s);
    case LC_OP_COS: return launch<Cx>(a, Cos(), s);
    case LC_OP_TAN: return launch<Cx>(a, Tan(), s);
    case LC_OP_SINH: return launch<Cx>(a, Sinh(), s);
    case LC_OP_COSH: return launch<Cx>(a, Cosh(), s);
    case LC_OP_TANH: return launch<Cx>(a, Tanh(), s);
    case LC_OP_ABS: return launch<float>(a, Abs(), s);
    case LC_OP_REAL: return launch<float>(a, Real(), s);
    case LC_OP_IMAG: return launch<float>(a, Imag(), s);
    case LC_OP_ADD: return launch<Cx>(a, Add(), s);
    case LC_OP_SUBTRACT: return launch<Cx>(a, Sub(), s);
    case LC_OP_MULTIPLY: return launch<Cx>(a, Mul(), s);
    case LC_OP_DIVIDE: return launch<Cx>(a, Div(), s);
    case LC_OP_EQUAL: return launch<bool>(a, Eq(), s);
    case LC_OP_NOT_EQUAL: return launch<bool>(a, Ne(), s);
    case LC_OP_NAN_EQUAL: return launch<bool>(a, NanEq(), s);
    case LC_OP_POWER: return launch<Cx>(a, Pow(), s);
    default: return LC_CU_UNSUPPORTED;
  }
}

}  // namespace

extern "C" int lc_cu_elementwise_complex(const struct lc_cu_ew *a, void *stream) {
  if (a->n == 0) return 0;
  return dispatch(*a, (cudaStream_t)stream);
}
