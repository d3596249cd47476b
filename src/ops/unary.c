/* Unary elementwise primitives and builders. */
#include "ops/ew_loops.h"

#include <complex.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "ops/binary.h"
#include "ops/elementwise.h"
#include "ops/shape_internal.h"
#include "ops/unary.h"
#include "ops/vmath.h"
#include "transforms/transforms.h"

#define U LC_U_LOOP

/* A float-only math op: loops for the float dtypes, its kernel and row. */
#define FLOAT_OP(NAME, FF, FD)   \
  LC_LOOPS_FLOAT(U, NAME, FF, FD) \
  LC_KERNEL(NAME, LC_CASES_FLOAT(LC_UCASE, NAME))
/* Same, with complex64 through FC. */
#define FLOAT_CX_OP(NAME, FF, FD, FC) \
  LC_LOOPS_FLOAT(U, NAME, FF, FD)     \
  LC_LOOP_CX(U, NAME, lc_c64, FC)     \
  LC_KERNEL(NAME, LC_CASES_FLOAT(LC_UCASE, NAME) LC_CASES_CX(LC_UCASE, NAME))

/* ---- math ---- */

#define SQRT_F(v, C) sqrtf(v)
#define SQRT_D(v, C) sqrt(v)
#define SQRT_C(v, C) csqrtf(v)
FLOAT_CX_OP(sqrt, SQRT_F, SQRT_D, SQRT_C)

#define RSQRT_F(v, C) (1.0f / sqrtf(v))
#define RSQRT_D(v, C) (1.0 / sqrt(v))
FLOAT_OP(rsqrt, RSQRT_F, RSQRT_D)

#define EXP_F(v, C) lc_vexpf(v)
#define EXP_D(v, C) lc_vexp(v)
#define EXP_C(v, C) cexpf(v)
FLOAT_CX_OP(exp, EXP_F, EXP_D, EXP_C)

#define LOG_F(v, C) lc_vlogf(v)
#define LOG_D(v, C) log(v)
#define LOG_C(v, C) clogf(v)
FLOAT_CX_OP(log, LOG_F, LOG_D, LOG_C)

#define TANH_F(v, C) lc_vtanhf(v)
#define TANH_D(v, C) tanh(v)
#define TANH_C(v, C) ctanhf(v)
FLOAT_CX_OP(tanh, TANH_F, TANH_D, TANH_C)

static inline double sigmoid_d(double x) {
  double e = lc_vexp(-fabs(x)), d = 1.0 / (1.0 + e);
  return x >= 0 ? d : e * d;
}
#define SIGMOID_F(v, C) lc_vsigmoidf(v)
#define SIGMOID_D(v, C) sigmoid_d(v)
FLOAT_OP(sigmoid, SIGMOID_F, SIGMOID_D)

#define ERF_F(v, C) lc_verff(v)
#define ERF_D(v, C) erf(v)
FLOAT_OP(erf, ERF_F, ERF_D)

/* erfinv: Giles' single-precision approximation ("Approximating the erfinv
 * function", GPU Computing Gems, 2011), then Newton steps on erf in double,
 * which make it accurate to double precision. */
static double erfinv_d(double y) {
  if (!(y > -1.0 && y < 1.0)) {
    if (y == 1.0) return INFINITY;
    if (y == -1.0) return -INFINITY;
    return NAN;
  }
  if (y == 0) return y;
  double w = -log((1.0 - y) * (1.0 + y)), p;
  if (w < 5.0) {
    w = w - 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double x = p * y;
  for (int i = 0; i < 3; i++) {
    double d = 1.1283791670955126 * exp(-x * x); /* erf'(x) */
    if (d == 0) break;
    x -= (erf(x) - y) / d;
  }
  return x;
}
#define ERFINV_F(v, C) ((float)erfinv_d(v))
#define ERFINV_D(v, C) erfinv_d(v)
LC_LOOPS_FLOAT_COLD(U, erfinv, ERFINV_F, ERFINV_D)
LC_KERNEL(erfinv, LC_CASES_FLOAT(LC_UCASE, erfinv))

#define LIBM_OP(NAME)                               \
  LC_LOOPS_FLOAT_COLD(U, NAME, NAME##_LF, NAME##_LD) \
  LC_KERNEL(NAME, LC_CASES_FLOAT(LC_UCASE, NAME))
#define LIBM_CX_OP(NAME, FC)                        \
  LC_LOOPS_FLOAT_COLD(U, NAME, NAME##_LF, NAME##_LD) \
  LC_LOOP_CX(U, NAME, lc_c64, FC)                    \
  LC_KERNEL(NAME, LC_CASES_FLOAT(LC_UCASE, NAME) LC_CASES_CX(LC_UCASE, NAME))

#define expm1_LF(v, C) expm1f(v)
#define expm1_LD(v, C) expm1(v)
LIBM_OP(expm1)
#define log1p_LF(v, C) log1pf(v)
#define log1p_LD(v, C) log1p(v)
LIBM_OP(log1p)
#define log2_LF(v, C) log2f(v)
#define log2_LD(v, C) log2(v)
LIBM_OP(log2)
#define log10_LF(v, C) log10f(v)
#define log10_LD(v, C) log10(v)
LIBM_OP(log10)
/* sin, cos: vectorised float path. float32 and bfloat16 go by blocks; in a
 * block holding a finite |x| >= LC_VTRIG_MAX (or an infinity), those
 * elements are computed with libm, the others still with the vectorised
 * function, so every element's result depends on its value alone. The
 * block is finished before it is written, so out may alias x. */
#define TRIG_BLOCK 256
#define TRIG_LOOP(NAME, DT, S, LD, ST, VF, LIBMF)                                          \
  LC_EW_HOT static void NAME##_##DT(int64_t n, void *out, const void *xp, int64_t sx) {    \
    S *restrict o = out;                                                                   \
    const S *restrict x = xp;                                                              \
    for (int64_t b = 0; b < n; b += TRIG_BLOCK) {                                          \
      int64_t m = n - b < TRIG_BLOCK ? n - b : TRIG_BLOCK;                                 \
      const S *xb = x + b * sx;                                                            \
      S *ob = o + b;                                                                       \
      float big = 0;                                                                       \
      for (int64_t i = 0; i < m; i++) {                                                    \
        float a = lc_vabsf(LD(xb[i * sx]));                                                \
        big = a > big ? a : big; /* NaN ignored: the fast path returns NaN for it */       \
      }                                                                                    \
      if (big < LC_VTRIG_MAX) {                                                            \
        if (sx == 1)                                                                       \
          for (int64_t i = 0; i < m; i++) ob[i] = ST(VF(LD(xb[i])));                       \
        else                                                                               \
          for (int64_t i = 0; i < m; i++) ob[i] = ST(VF(LD(xb[i * sx])));                  \
      } else {                                                                             \
        float t[TRIG_BLOCK];                                                               \
        for (int64_t i = 0; i < m; i++) t[i] = VF(LD(xb[i * sx]));                         \
        for (int64_t i = 0; i < m; i++)                                                    \
          if (!(lc_vabsf(LD(xb[i * sx])) < LC_VTRIG_MAX) && LD(xb[i * sx]) == LD(xb[i * sx])) \
            t[i] = LIBMF(LD(xb[i * sx]));                                                  \
        for (int64_t i = 0; i < m; i++) ob[i] = ST(t[i]);                                  \
      }                                                                                    \
    }                                                                                      \
  }
#define TRIG_OP(NAME, VF, LIBMF, LIBMD, FC)                                                  \
  TRIG_LOOP(NAME, MLX_FLOAT32, float, LC_ID, LC_ID, VF, LIBMF)                                \
  TRIG_LOOP(NAME, MLX_BFLOAT16, uint16_t, lc_bf16_to_f32, lc_f32_to_bf16, VF, LIBMF)          \
  U(LC_EW_HOT, NAME##_MLX_FLOAT16, uint16_t, float, uint16_t, lc_ew_f16_ld, lc_ew_f16_st,     \
    NAME##_VFC) /* |float16| < 65520 < LC_VTRIG_MAX */                                       \
  U(, NAME##_MLX_FLOAT64, double, double, double, LC_ID, LC_ID, LIBMD)                       \
  LC_LOOP_CX(U, NAME, lc_c64, FC)                                                            \
  LC_KERNEL(NAME, LC_CASES_FLOAT(LC_UCASE, NAME) LC_CASES_CX(LC_UCASE, NAME))
#define sin_VFC(v, C) lc_vsinf(v)
#define SIN_D(v, C) sin(v)
#define SIN_C(v, C) csinf(v)
TRIG_OP(sin, lc_vsinf, sinf, SIN_D, SIN_C)
#define cos_VFC(v, C) lc_vcosf(v)
#define COS_D(v, C) cos(v)
#define COS_C(v, C) ccosf(v)
TRIG_OP(cos, lc_vcosf, cosf, COS_D, COS_C)
#define tan_LF(v, C) tanf(v)
#define tan_LD(v, C) tan(v)
#define TAN_C(v, C) ctanf(v)
LIBM_CX_OP(tan, TAN_C)
#define arcsin_LF(v, C) asinf(v)
#define arcsin_LD(v, C) asin(v)
LIBM_OP(arcsin)
#define arccos_LF(v, C) acosf(v)
#define arccos_LD(v, C) acos(v)
LIBM_OP(arccos)
#define arctan_LF(v, C) atanf(v)
#define arctan_LD(v, C) atan(v)
LIBM_OP(arctan)
#define sinh_LF(v, C) sinhf(v)
#define sinh_LD(v, C) sinh(v)
#define SINH_C(v, C) csinhf(v)
LIBM_CX_OP(sinh, SINH_C)
#define cosh_LF(v, C) coshf(v)
#define cosh_LD(v, C) cosh(v)
#define COSH_C(v, C) ccoshf(v)
LIBM_CX_OP(cosh, COSH_C)
#define arcsinh_LF(v, C) asinhf(v)
#define arcsinh_LD(v, C) asinh(v)
LIBM_OP(arcsinh)
#define arccosh_LF(v, C) acoshf(v)
#define arccosh_LD(v, C) acosh(v)
LIBM_OP(arccosh)
#define arctanh_LF(v, C) atanhf(v)
#define arctanh_LD(v, C) atanh(v)
LIBM_OP(arctanh)
#define floor_LF(v, C) floorf(v)
#define floor_LD(v, C) floor(v)
FLOAT_OP(floor, floor_LF, floor_LD) /* vectorises (roundps) */
#define ceil_LF(v, C) ceilf(v)
#define ceil_LD(v, C) ceil(v)
FLOAT_OP(ceil, ceil_LF, ceil_LD) /* vectorises (roundps) */
/* rint rounds half to even in the default rounding mode. */
#define round_LF(v, C) rintf(v)
#define round_LD(v, C) rint(v)
FLOAT_OP(round, round_LF, round_LD) /* vectorises (roundps) */

/* ---- arithmetic on every dtype ---- */

#define ALL_CASES(NAME) \
  LC_CASES_INT(LC_UCASE, NAME) LC_CASES_FLOAT(LC_UCASE, NAME) LC_CASES_CX(LC_UCASE, NAME)

#define NEG_S(v, C) LC_WNEG(v, C)
#define NEG_F(v, C) (-(v))
LC_LOOPS_INT(U, negative, NEG_S, NEG_S)
LC_LOOPS_FLOAT(U, negative, NEG_F, NEG_F)
LC_LOOP_CX(U, negative, lc_c64, NEG_F)
LC_KERNEL(negative, ALL_CASES(negative))

#define ABS_S(v, C) ((v) < 0 ? LC_WNEG(v, C) : (v))
#define ABS_F(v, C) fabsf(v)
#define ABS_D(v, C) fabs(v)
#define ABS_C(v, C) cabsf(v)
#define ABS_U(v, C) (v)
LC_LOOPS_INT(U, abs, ABS_S, ABS_U)
LC_LOOPS_FLOAT(U, abs, ABS_F, ABS_D)
LC_LOOP_CX(U, abs, float, ABS_C) /* complex64 -> float32 */
LC_KERNEL(abs, ALL_CASES(abs))

#define SIGN_S(v, C) ((C)(((v) > 0) - ((v) < 0)))
#define SIGN_U(v, C) ((C)((v) != 0))
#define SIGN_F(v, C) ((v) > 0 ? (C)1 : (v) < 0 ? (C)-1 : (C)0) /* NaN -> 0, as MLX */
static inline lc_c64 sign_c(lc_c64 v) { return v == 0 ? v : v / cabsf(v); }
#define SIGN_C(v, C) sign_c(v)
LC_LOOPS_INT(U, sign, SIGN_S, SIGN_U)
LC_LOOPS_FLOAT(U, sign, SIGN_F, SIGN_F)
LC_LOOP_CX(U, sign, lc_c64, SIGN_C)
LC_KERNEL(sign, ALL_CASES(sign))

#define SQUARE_I(v, C) LC_WMUL(v, v, C)
#define SQUARE_F(v, C) ((v) * (v))
LC_LOOPS_INT(U, square, SQUARE_I, SQUARE_I)
LC_LOOPS_FLOAT(U, square, SQUARE_F, SQUARE_F)
LC_LOOP_CX(U, square, lc_c64, SQUARE_F)
LC_KERNEL(square, ALL_CASES(square))

#define NOT_B(v, C) (!(v))
U(, logical_not_MLX_BOOL, bool, bool, bool, LC_ID, LC_ID, NOT_B)
LC_KERNEL(logical_not, LC_UCASE(logical_not, MLX_BOOL))

#define INVERT_I(v, C) ((C)lc_wnot((uint64_t)(v)))
LC_LOOPS_INT(U, bitwise_invert, INVERT_I, INVERT_I)
LC_KERNEL(bitwise_invert, LC_CASES_INT(LC_UCASE, bitwise_invert))

#define CONJ_C(v, C) conjf(v)
#define REAL_C(v, C) crealf(v)
#define IMAG_C(v, C) cimagf(v)
LC_LOOP_CX(U, conjugate, lc_c64, CONJ_C)
LC_LOOP_CX(U, real, float, REAL_C)
LC_LOOP_CX(U, imag, float, IMAG_C)
LC_KERNEL(conjugate, LC_CASES_CX(LC_UCASE, conjugate))
LC_KERNEL(real, LC_CASES_CX(LC_UCASE, real))
LC_KERNEL(imag, LC_CASES_CX(LC_UCASE, imag))

/* ---- transformation rules ----
 * A differentiable op NAME has NAME_deriv(n): f'(x) as a lazy node, where
 * x = n->in[0] and n = f(x) itself, built with the ordinary builders so
 * that it differentiates again. Then jvp = tan * f'(x) and
 * vjp = cot * conj(f'(x)): MLX's convention for complex inputs, where the
 * gradient of a real L is dL/dRe + i dL/dIm (conj is the identity on real
 * dtypes). Ops whose output is piecewise constant (sign, rounding,
 * logical) have zero rules (NULL results); those MLX cannot differentiate
 * (bitwise_invert, view, fp8 conversions) report an error. Every op has
 * a vmap rule. */

/* Chains consume their node arguments (lc_take1/lc_take2, core/node.h). */
static struct lc_node *mul_(struct lc_node *a, struct lc_node *b) {
  return lc_take2(lc_multiply, a, b);
}
static struct lc_node *div_(struct lc_node *a, struct lc_node *b) { return lc_take2(lc_divide, a, b); }
static struct lc_node *add_(struct lc_node *a, struct lc_node *b) { return lc_take2(lc_add, a, b); }
static struct lc_node *sub_(struct lc_node *a, struct lc_node *b) {
  return lc_take2(lc_subtract, a, b);
}
static struct lc_node *ref(struct lc_node *x) { return lc_node_retain(x); }
/* The 0-d constant v in x's dtype (so it never promotes x). */
static struct lc_node *kst(const struct lc_node *x, double v) {
  return lc_node_new_scalar(x->dtype, v);
}
/* v / x */
static struct lc_node *over(double v, struct lc_node *x) { return div_(kst(x, v), x); }

#define X (n->in[0])
static struct lc_node *sqrt_deriv(struct lc_node *n) { return over(0.5, ref(n)); }
static struct lc_node *rsqrt_deriv(struct lc_node *n) {
  return mul_(kst(n, -0.5), div_(ref(n), ref(X)));
}
static struct lc_node *exp_deriv(struct lc_node *n) { return ref(n); }
static struct lc_node *expm1_deriv(struct lc_node *n) { return add_(ref(n), kst(n, 1)); }
static struct lc_node *log_deriv(struct lc_node *n) { return over(1, ref(X)); }
static struct lc_node *log2_deriv(struct lc_node *n) { return over(1 / M_LN2, ref(X)); }
static struct lc_node *log10_deriv(struct lc_node *n) { return over(1 / M_LN10, ref(X)); }
static struct lc_node *log1p_deriv(struct lc_node *n) { return over(1, add_(kst(X, 1), ref(X))); }
static struct lc_node *sin_deriv(struct lc_node *n) { return lc_cos(X); }
static struct lc_node *cos_deriv(struct lc_node *n) { return lc_take1(lc_negative, lc_sin(X)); }
static struct lc_node *tan_deriv(struct lc_node *n) { return over(1, lc_take1(lc_square, lc_cos(X))); }
/* 1 / sqrt(1 - x^2) */
static struct lc_node *arcsin_deriv(struct lc_node *n) {
  return lc_take1(lc_rsqrt, sub_(kst(X, 1), lc_square(X)));
}
static struct lc_node *arccos_deriv(struct lc_node *n) {
  return lc_take1(lc_negative, arcsin_deriv(n));
}
static struct lc_node *arctan_deriv(struct lc_node *n) {
  return over(1, add_(kst(X, 1), lc_square(X)));
}
static struct lc_node *sinh_deriv(struct lc_node *n) { return lc_cosh(X); }
static struct lc_node *cosh_deriv(struct lc_node *n) { return lc_sinh(X); }
/* 1 / cosh^2 (accurate where 1 - tanh^2 cancels) */
static struct lc_node *tanh_deriv(struct lc_node *n) {
  return over(1, lc_take1(lc_square, lc_cosh(X)));
}
static struct lc_node *arcsinh_deriv(struct lc_node *n) {
  return lc_take1(lc_rsqrt, add_(lc_square(X), kst(X, 1)));
}
static struct lc_node *arccosh_deriv(struct lc_node *n) {
  return lc_take1(lc_rsqrt, sub_(lc_square(X), kst(X, 1)));
}
static struct lc_node *arctanh_deriv(struct lc_node *n) {
  return over(1, sub_(kst(X, 1), lc_square(X)));
}
static struct lc_node *sigmoid_deriv(struct lc_node *n) {
  return mul_(ref(n), sub_(kst(n, 1), ref(n)));
}
/* 2/sqrt(pi) e^(-x^2) */
static struct lc_node *erf_deriv(struct lc_node *n) {
  return mul_(kst(X, M_2_SQRTPI), lc_take1(lc_exp, lc_take1(lc_negative, lc_square(X))));
}
/* 1 / erf'(erfinv(x)) = sqrt(pi)/2 e^(y^2), y = n */
static struct lc_node *erfinv_deriv(struct lc_node *n) {
  return mul_(kst(n, 1 / M_2_SQRTPI), lc_take1(lc_exp, lc_square(n)));
}
static struct lc_node *square_deriv(struct lc_node *n) { return mul_(kst(X, 2), ref(X)); }

typedef struct lc_node *(*deriv_fn)(struct lc_node *n);

static int deriv_vjp(struct lc_node *n, struct lc_node *cot, deriv_fn d, struct lc_node **out) {
  out[0] = mul_(ref(cot), lc_take1(lc_conjugate, d(n)));
  return !out[0];
}
static int deriv_jvp(struct lc_node *n, struct lc_node *tan, deriv_fn d, struct lc_node **out) {
  out[0] = mul_(ref(tan), d(n));
  return !out[0];
}
#define DERIV_RULES(NAME)                                                                   \
  static int NAME##_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,  \
                        int nargs, struct lc_node **out) {                                  \
    (void)argnums, (void)nargs;                                                             \
    return deriv_vjp(n, cot[0], NAME##_deriv, out);                                         \
  }                                                                                         \
  static int NAME##_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) { \
    return deriv_jvp(n, tan[0], NAME##_deriv, out);                                         \
  }
DERIV_RULES(sqrt)
DERIV_RULES(rsqrt)
DERIV_RULES(exp)
DERIV_RULES(expm1)
DERIV_RULES(log)
DERIV_RULES(log2)
DERIV_RULES(log10)
DERIV_RULES(log1p)
DERIV_RULES(sin)
DERIV_RULES(cos)
DERIV_RULES(tan)
DERIV_RULES(arcsin)
DERIV_RULES(arccos)
DERIV_RULES(arctan)
DERIV_RULES(sinh)
DERIV_RULES(cosh)
DERIV_RULES(tanh)
DERIV_RULES(arcsinh)
DERIV_RULES(arccosh)
DERIV_RULES(arctanh)
DERIV_RULES(sigmoid)
DERIV_RULES(erf)
DERIV_RULES(erfinv)
DERIV_RULES(square)

/* |x|: vjp cot * sign(x) (for complex x, sign(x) = x/|x| is already the
 * gradient of |x|, so no conj); jvp Re(tan * conj(sign(x))), which is
 * tan * sign(x) for real x. */
static int abs_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                   struct lc_node **out) {
  (void)argnums, (void)nargs;
  out[0] = mul_(ref(cot[0]), lc_sign(X));
  return !out[0];
}
static int abs_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  out[0] = lc_take1(lc_real, mul_(ref(tan[0]), lc_take1(lc_conjugate, lc_sign(X))));
  return !out[0];
}

/* Linear ops: the rule is the op itself (conjugate and its vjp commute). */
#define LINEAR_RULES(NAME, F)                                                               \
  static int NAME##_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,  \
                        int nargs, struct lc_node **out) {                                  \
    (void)n, (void)argnums, (void)nargs;                                                    \
    return !(out[0] = F(cot[0]));                                                           \
  }                                                                                         \
  static int NAME##_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) { \
    (void)n;                                                                                \
    return !(out[0] = F(tan[0]));                                                           \
  }
LINEAR_RULES(negative, lc_negative)
LINEAR_RULES(conjugate, lc_conjugate)
LINEAR_RULES(ew_copy, ref)

/* real: the cotangent becomes the real part of a complex one; imag: the
 * imaginary part (cot * i). Their jvps take the part of the tangent. */
static int real_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                    struct lc_node **out) {
  (void)argnums, (void)nargs;
  return !(out[0] = lc_astype(cot[0], X->dtype));
}
static int imag_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                    struct lc_node **out) {
  (void)argnums, (void)nargs;
  const lc_c64 i = I;
  out[0] = mul_(lc_node_new_data(MLX_COMPLEX64, 0, NULL, &i), ref(cot[0]));
  return !out[0];
}
static int real_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  (void)n;
  return !(out[0] = lc_real(tan[0]));
}
static int imag_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  (void)n;
  return !(out[0] = lc_imag(tan[0]));
}

/* nan_to_num: the identity where x is finite, a constant elsewhere. */
static struct lc_node *where_finite(struct lc_node *x, struct lc_node *v) {
  struct lc_node *f = lc_isfinite(x), *z = f ? kst(v, 0) : NULL;
  struct lc_node *r = z ? lc_where(f, v, z) : NULL;
  lc_node_release(f);
  lc_node_release(z);
  return r;
}
static int nan_to_num_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                          int nargs, struct lc_node **out) {
  (void)argnums, (void)nargs;
  return !(out[0] = where_finite(X, cot[0]));
}
static int nan_to_num_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  return !(out[0] = where_finite(X, tan[0]));
}
#undef X

/* Ops MLX does not differentiate. */
static int nondiff_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                       int nargs, struct lc_node **out) {
  (void)cot, (void)argnums, (void)nargs, (void)out;
  return lc_error("vjp: %s is not differentiable", lc_prim_of(n)->name);
}
static int nondiff_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  (void)tan, (void)out;
  return lc_error("jvp: %s is not differentiable", lc_prim_of(n)->name);
}

/* An elementwise row with the given rules. */
#define PRIM(NAME, VJP, JVP)                                                                \
  const struct lc_prim lc_prim_##NAME = {.name = #NAME,                                     \
                                         .flags = LC_PF_ELEMWISE,                           \
                                         .eval_cpu = lc_ew_eval_cpu,                        \
                                         .eval_cuda = LC_CUDA(lc_cuda_eval_elementwise),    \
                                         .ew = NAME##_kernel,                               \
                                         .vjp = VJP,                                        \
                                         .jvp = JVP,                                        \
                                         .vmap = lc_rule_vmap_elementwise};
#define PRIM_RULES(NAME) PRIM(NAME, NAME##_vjp, NAME##_jvp)
#define PRIM_ZERO(NAME) PRIM(NAME, lc_rule_zero_vjp, lc_rule_zero_jvp)
#define PRIM_NONDIFF(NAME) PRIM(NAME, nondiff_vjp, nondiff_jvp)

PRIM_RULES(abs)
PRIM_RULES(negative)
PRIM_ZERO(sign)
PRIM_RULES(square)
PRIM_RULES(sqrt)
PRIM_RULES(rsqrt)
PRIM_RULES(exp)
PRIM_RULES(expm1)
PRIM_RULES(log)
PRIM_RULES(log1p)
PRIM_RULES(log2)
PRIM_RULES(log10)
PRIM_RULES(sin)
PRIM_RULES(cos)
PRIM_RULES(tan)
PRIM_RULES(arcsin)
PRIM_RULES(arccos)
PRIM_RULES(arctan)
PRIM_RULES(sinh)
PRIM_RULES(cosh)
PRIM_RULES(tanh)
PRIM_RULES(arcsinh)
PRIM_RULES(arccosh)
PRIM_RULES(arctanh)
PRIM_RULES(sigmoid)
PRIM_RULES(erf)
PRIM_RULES(erfinv)
PRIM_ZERO(floor)
PRIM_ZERO(ceil)
PRIM_ZERO(round)
PRIM_ZERO(logical_not)
PRIM_NONDIFF(bitwise_invert)
PRIM_RULES(conjugate)
PRIM_RULES(real)
PRIM_RULES(imag)

/* ---- copy: any dtype, by element size ---- */

#define COPY_LOOP(T)                                                                   \
  static void copy_##T(int64_t n, T *restrict o, const T *restrict x, int64_t s) {     \
    for (int64_t i = 0; i < n; i++) o[i] = x[i * s];                                   \
  }
COPY_LOOP(uint8_t)
COPY_LOOP(uint16_t)
COPY_LOOP(uint32_t)
COPY_LOOP(uint64_t)

static void copy_kernel(int64_t n, void *out, mlx_dtype out_dt, const void *const *in,
                        const int64_t *is, mlx_dtype in_dt, const void *params) {
  (void)params;
  size_t sz = lc_dtype_size(out_dt);
  if (is[0] == 1) {
    if (out != in[0]) memcpy(out, in[0], (size_t)n * sz);
    return;
  }
  switch (sz) {
  case 1: copy_uint8_t(n, out, in[0], is[0]); break;
  case 2: copy_uint16_t(n, out, in[0], is[0]); break;
  case 4: copy_uint32_t(n, out, in[0], is[0]); break;
  default: copy_uint64_t(n, out, in[0], is[0]); break;
  }
  (void)in_dt;
}
#define ew_copy_kernel copy_kernel
PRIM_RULES(ew_copy)

/* ---- nan_to_num ---- */

struct nan_to_num_params {
  double nan, posinf, neginf;
};

#define N2N_LOOP(DT, S, C, LD, ST)                                                       \
  static void nan_to_num_##DT(int64_t n, S *restrict o, const S *restrict x, int64_t s,   \
                              const struct nan_to_num_params *p) {                        \
    C vn = (C)p->nan, vp = (C)p->posinf, vm = (C)p->neginf;                               \
    for (int64_t i = 0; i < n; i++) {                                                     \
      C v = LD(x[i * s]);                                                                 \
      o[i] = ST(v != v ? vn : v == (C)INFINITY ? vp : v == -(C)INFINITY ? vm : v);        \
    }                                                                                     \
  }
N2N_LOOP(MLX_FLOAT16, uint16_t, float, lc_ew_f16_ld, lc_ew_f16_st)
N2N_LOOP(MLX_FLOAT32, float, float, LC_ID, LC_ID)
N2N_LOOP(MLX_FLOAT64, double, double, LC_ID, LC_ID)
N2N_LOOP(MLX_BFLOAT16, uint16_t, float, lc_bf16_to_f32, lc_f32_to_bf16)

static void nan_to_num_kernel(int64_t n, void *out, mlx_dtype out_dt, const void *const *in,
                              const int64_t *is, mlx_dtype in_dt, const void *params) {
  (void)out_dt;
  switch (in_dt) {
#define N2N_CASE(NAME, DT) \
  case DT: nan_to_num_##DT(n, out, in[0], is[0], params); break;
    LC_CASES_FLOAT(N2N_CASE, nan_to_num)
#undef N2N_CASE
  default: break;
  }
}
PRIM_RULES(nan_to_num)

/* ---- fp8 (e4m3: 4 exponent bits, bias 7, 3 mantissa bits), as MLX ----
 * to_fp8 rounds to nearest even; magnitudes >= 480, infinities and NaN
 * saturate to 448 (0x7e); from_fp8 maps every code to a finite value
 * (0x7f reads as 480), as MLX's ConvertFP8. */

static inline uint8_t to_fp8(float f) {
  uint32_t bits = lc_vm_u32(f), sign = bits & 0x80000000u, a = bits ^ sign;
  uint32_t r;
  if (a >= 0x43f00000u) /* >= 480, inf, NaN */
    r = 0x7e;
  else if (a < 0x3c800000u) /* below 2^-6: subnormal codes, multiples of 2^-9 */
    r = (uint32_t)rintf(lc_vm_f32(a) * 512.0f);
  else
    r = (a + ((uint32_t)(7 - 127) << 23) + 0x7ffffu + ((a >> 20) & 1)) >> 20;
  return (uint8_t)(r | (sign >> 24));
}

static inline float from_fp8(uint8_t u) {
  int e = (u >> 3) & 15, m = u & 7;
  float v = e ? lc_vm_f32((uint32_t)(e + 120) << 23 | (uint32_t)m << 20) : (float)m * 0x1p-9f;
  return (u & 0x80) ? -v : v;
}

#define TOFP8_F(v, C) to_fp8((float)(v))
LC_LOOPS_FLOAT_TO(U, to_fp8, uint8_t, TOFP8_F, TOFP8_F)
LC_KERNEL(to_fp8, LC_CASES_FLOAT(LC_UCASE, to_fp8))
PRIM_NONDIFF(to_fp8)

#define FROMFP8_F(v, C) from_fp8(v)
U(LC_EW_HOT, from_fp8_f32, uint8_t, uint8_t, float, LC_ID, LC_ID, FROMFP8_F)
U(, from_fp8_f64, uint8_t, uint8_t, double, LC_ID, LC_ID, FROMFP8_F)
U(, from_fp8_f16, uint8_t, uint8_t, uint16_t, LC_ID, lc_ew_f16_st, FROMFP8_F)
U(, from_fp8_bf16, uint8_t, uint8_t, uint16_t, LC_ID, lc_f32_to_bf16, FROMFP8_F)
/* in_dt is uint8; the output dtype picks the loop. */
static void from_fp8_kernel(int64_t n, void *out, mlx_dtype out_dt, const void *const *in,
                            const int64_t *is, mlx_dtype in_dt, const void *params) {
  (void)in_dt;
  (void)params;
  switch (out_dt) {
  case MLX_FLOAT32: from_fp8_f32(n, out, in[0], is[0]); break;
  case MLX_FLOAT64: from_fp8_f64(n, out, in[0], is[0]); break;
  case MLX_FLOAT16: from_fp8_f16(n, out, in[0], is[0]); break;
  case MLX_BFLOAT16: from_fp8_bf16(n, out, in[0], is[0]); break;
  default: break;
  }
}
PRIM_NONDIFF(from_fp8)

/* ---- views ---- */

static int stop_gradient_eval(struct lc_node *n) {
  lc_node_set_view(n, n->in[0], n->in[0]->strides, n->in[0]->offset);
  return 0;
}
/* The engines stop at stop_gradient; its zero rules say the same. Under
 * vmap it stays a stop_gradient (same shape, so the batch axis stays). */
static int stop_gradient_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                              struct lc_node **out, int *out_ax) {
  (void)n;
  out_ax[0] = ax[0];
  return !(out[0] = lc_stop_gradient(in[0]));
}
const struct lc_prim lc_prim_stop_gradient = {.name = "stop_gradient",
                                              .flags = LC_PF_VIEW,
                                              .eval_cpu = stop_gradient_eval,
                                              .vjp = lc_rule_zero_vjp,
                                              .jvp = lc_rule_zero_jvp,
                                              .vmap = stop_gradient_vmap};

/* Bitcast: shares the input's buffer when it is row-major contiguous at a
 * suitably aligned offset, else copies its bytes into a fresh buffer. */
bool lc_bitcast_shares(struct lc_node *n) {
  struct lc_node *a = n->in[0];
  int64_t isz = (int64_t)lc_dtype_size(a->dtype), osz = (int64_t)lc_dtype_size(n->dtype);
  if (!(a->flags & LC_NF_CONTIG) || (a->offset * isz) % osz != 0) return false;
  int64_t st[n->ndim > 0 ? n->ndim : 1];
  lc_shape_strides(n->ndim, n->shape, st);
  lc_node_set_view(n, a, st, a->offset * isz / osz);
  return true;
}

static int view_eval(struct lc_node *n) {
  if (lc_bitcast_shares(n)) return 0;
  if (lc_node_alloc_data(n)) return 1;
  return lc_node_copy_out(n->in[0], n->buf->data);
}
/* The view rescales the last axis, so the batch axis goes first (the
 * per-example bytes stay together in row-major order). */
static int view_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                     struct lc_node **out, int *out_ax) {
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  out[0] = x ? lc_view(x, n->dtype) : NULL;
  lc_node_release(x);
  out_ax[0] = 0;
  return !out[0];
}
const struct lc_prim lc_prim_view = {.name = "view",
                                     .flags = LC_PF_VIEW,
                                     .eval_cpu = view_eval,
                                     .eval_cuda = LC_CUDA(lc_cuda_eval_bitcast),
                                     .vjp = nondiff_vjp,
                                     .jvp = nondiff_jvp,
                                     .vmap = view_vmap};

/* ---- builders ---- */

static struct lc_node *un(int op, struct lc_node *a, mlx_dtype t) {
  return lc_ew_new(op, t, 1, &a, NULL, 0);
}

static int no_complex(const char *fn, const struct lc_node *a) {
  if (a->dtype == MLX_COMPLEX64) return lc_error("%s: not supported for complex64", fn);
  return 0;
}

/* Math op computing in the input's inexact dtype (integers: float32). */
static struct lc_node *math_op(const char *fn, int op, struct lc_node *a, bool cx_ok) {
  if (!cx_ok && no_complex(fn, a)) return NULL;
  mlx_dtype t = lc_dtype_inexact(a->dtype);
  struct lc_node *x = lc_astype(a, t);
  if (!x) return NULL;
  struct lc_node *r = un(op, x, t);
  lc_node_release(x);
  return r;
}

#define MATH(NAME, ID, CX) \
  struct lc_node *lc_##NAME(struct lc_node *a) { return math_op(#NAME, LC_OP_##ID, a, CX); }
MATH(sqrt, SQRT, true)
MATH(rsqrt, RSQRT, false)
MATH(exp, EXP, true)
MATH(expm1, EXPM1, false)
MATH(log, LOG, true)
MATH(log1p, LOG1P, false)
MATH(log2, LOG2, false)
MATH(log10, LOG10, false)
MATH(sin, SIN, true)
MATH(cos, COS, true)
MATH(tan, TAN, true)
MATH(arcsin, ARCSIN, false)
MATH(arccos, ARCCOS, false)
MATH(arctan, ARCTAN, false)
MATH(sinh, SINH, true)
MATH(cosh, COSH, true)
MATH(tanh, TANH, true)
MATH(arcsinh, ARCSINH, false)
MATH(arccosh, ARCCOSH, false)
MATH(arctanh, ARCTANH, false)
MATH(sigmoid, SIGMOID, false)
MATH(erf, ERF, false)
MATH(erfinv, ERFINV, false)

struct lc_node *lc_abs(struct lc_node *a) {
  if (lc_dtype_is_unsigned(a->dtype) || a->dtype == MLX_BOOL) return un(LC_OP_ABS, a, a->dtype);
  return un(LC_OP_ABS, a, a->dtype == MLX_COMPLEX64 ? MLX_FLOAT32 : a->dtype);
}

struct lc_node *lc_negative(struct lc_node *a) {
  if (a->dtype == MLX_BOOL) {
    lc_error("negative: not supported for bool, use logical_not instead");
    return NULL;
  }
  return un(LC_OP_NEGATIVE, a, a->dtype);
}

struct lc_node *lc_sign(struct lc_node *a) { return un(LC_OP_SIGN, a, a->dtype); }
struct lc_node *lc_square(struct lc_node *a) { return un(LC_OP_SQUARE, a, a->dtype); }

/* floor, ceil, round: identity on integers and bool. */
static struct lc_node *rounding(const char *fn, int op, struct lc_node *a) {
  if (no_complex(fn, a)) return NULL;
  if (!lc_dtype_is_float(a->dtype)) return lc_node_retain(a);
  return un(op, a, a->dtype);
}
struct lc_node *lc_floor(struct lc_node *a) { return rounding("floor", LC_OP_FLOOR, a); }
struct lc_node *lc_ceil(struct lc_node *a) { return rounding("ceil", LC_OP_CEIL, a); }

/* decimals != 0: round(a * 10^d) / 10^d (d > 0), round(a / 10^-d) * 10^-d
 * (d < 0), in at least float32, cast back to a's dtype as MLX does. */
struct lc_node *lc_round(struct lc_node *a, int decimals) {
  if (decimals == 0) return rounding("round", LC_OP_ROUND, a);
  if (no_complex("round", a)) return NULL;
  if (!lc_dtype_is_float(a->dtype) && decimals > 0) return lc_node_retain(a);
  if (decimals > 300 || decimals < -300) {
    lc_error("round: decimals %d out of range", decimals);
    return NULL;
  }
  mlx_dtype t = lc_dtype_inexact(a->dtype);
  struct lc_node *s = lc_node_new_scalar(t, pow(10.0, decimals > 0 ? decimals : -decimals));
  if (!s) return NULL;
  struct lc_node *x = decimals > 0 ? lc_multiply(a, s) : lc_divide(a, s);
  struct lc_node *r = x ? un(LC_OP_ROUND, x, x->dtype) : NULL;
  struct lc_node *y = r ? (decimals > 0 ? lc_divide(r, s) : lc_multiply(r, s)) : NULL;
  struct lc_node *out = y ? lc_astype(y, a->dtype) : NULL;
  lc_node_release(s);
  lc_node_release(x);
  lc_node_release(r);
  lc_node_release(y);
  return out;
}

static struct lc_node *scale(const char *fn, struct lc_node *a, double k) {
  if (no_complex(fn, a)) return NULL;
  struct lc_node *s = lc_node_new_scalar(lc_dtype_inexact(a->dtype), k);
  if (!s) return NULL;
  struct lc_node *r = lc_multiply(a, s);
  lc_node_release(s);
  return r;
}
struct lc_node *lc_degrees(struct lc_node *a) { return scale("degrees", a, 180.0 / M_PI); }
struct lc_node *lc_radians(struct lc_node *a) { return scale("radians", a, M_PI / 180.0); }

struct lc_node *lc_reciprocal(struct lc_node *a) {
  struct lc_node *one = lc_node_new_scalar(lc_dtype_inexact(a->dtype), 1.0);
  if (!one) return NULL;
  struct lc_node *r = lc_divide(one, a);
  lc_node_release(one);
  return r;
}

/* A bool array of a's shape, all v (a broadcast scalar). */
static struct lc_node *const_bool(struct lc_node *a, bool v) {
  struct lc_node *s = lc_node_new_scalar(MLX_BOOL, v);
  if (!s) return NULL;
  struct lc_node *r = lc_broadcast_to(s, a->ndim, a->shape);
  lc_node_release(s);
  return r;
}

/* cmp(a, scalar v of a's dtype) */
static struct lc_node *cmp_scalar(struct lc_node *(*cmp)(struct lc_node *, struct lc_node *),
                                  struct lc_node *a, double v) {
  struct lc_node *s = lc_node_new_scalar(a->dtype, v);
  if (!s) return NULL;
  struct lc_node *r = cmp(a, s);
  lc_node_release(s);
  return r;
}

/* f(real(a)) op f(imag(a)) for complex a. */
static struct lc_node *cx_parts(struct lc_node *(*f)(struct lc_node *),
                                struct lc_node *(*op)(struct lc_node *, struct lc_node *),
                                struct lc_node *a) {
  struct lc_node *re = lc_real(a), *im = re ? lc_imag(a) : NULL;
  struct lc_node *fr = im ? f(re) : NULL, *fi = fr ? f(im) : NULL;
  struct lc_node *r = fi ? op(fr, fi) : NULL;
  lc_node_release(re);
  lc_node_release(im);
  lc_node_release(fr);
  lc_node_release(fi);
  return r;
}

struct lc_node *lc_isnan(struct lc_node *a) {
  if (!lc_dtype_is_inexact(a->dtype)) return const_bool(a, false);
  return lc_not_equal(a, a);
}

struct lc_node *lc_isposinf(struct lc_node *a) {
  if (no_complex("isposinf", a)) return NULL;
  if (!lc_dtype_is_inexact(a->dtype)) return const_bool(a, false);
  return cmp_scalar(lc_equal, a, INFINITY);
}

struct lc_node *lc_isneginf(struct lc_node *a) {
  if (no_complex("isneginf", a)) return NULL;
  if (!lc_dtype_is_inexact(a->dtype)) return const_bool(a, false);
  return cmp_scalar(lc_equal, a, -INFINITY);
}

struct lc_node *lc_isinf(struct lc_node *a) {
  if (!lc_dtype_is_inexact(a->dtype)) return const_bool(a, false);
  if (a->dtype == MLX_COMPLEX64) return cx_parts(lc_isinf, lc_logical_or, a);
  struct lc_node *m = lc_abs(a);
  struct lc_node *r = m ? cmp_scalar(lc_equal, m, INFINITY) : NULL;
  lc_node_release(m);
  return r;
}

/* |a| < inf is false exactly for NaN and infinities. */
struct lc_node *lc_isfinite(struct lc_node *a) {
  if (!lc_dtype_is_inexact(a->dtype)) return const_bool(a, true);
  if (a->dtype == MLX_COMPLEX64) return cx_parts(lc_isfinite, lc_logical_and, a);
  struct lc_node *m = lc_abs(a);
  struct lc_node *r = m ? cmp_scalar(lc_less, m, INFINITY) : NULL;
  lc_node_release(m);
  return r;
}

struct lc_node *lc_logical_not(struct lc_node *a) {
  struct lc_node *b = lc_astype(a, MLX_BOOL);
  if (!b) return NULL;
  struct lc_node *r = un(LC_OP_LOGICAL_NOT, b, MLX_BOOL);
  lc_node_release(b);
  return r;
}

struct lc_node *lc_bitwise_invert(struct lc_node *a) {
  if (lc_dtype_is_inexact(a->dtype)) {
    lc_error("bitwise_invert: only allowed on integer or boolean types, got %s",
             lc_dtype_name(a->dtype));
    return NULL;
  }
  if (a->dtype == MLX_BOOL) return lc_logical_not(a);
  return un(LC_OP_BITWISE_INVERT, a, a->dtype);
}

struct lc_node *lc_conjugate(struct lc_node *a) {
  if (a->dtype != MLX_COMPLEX64) return lc_node_retain(a);
  return un(LC_OP_CONJUGATE, a, a->dtype);
}

struct lc_node *lc_real(struct lc_node *a) {
  if (a->dtype != MLX_COMPLEX64) return lc_node_retain(a);
  return un(LC_OP_REAL, a, MLX_FLOAT32);
}

struct lc_node *lc_imag(struct lc_node *a) {
  if (a->dtype != MLX_COMPLEX64) {
    struct lc_node *z = lc_node_new_scalar(a->dtype, 0);
    if (!z) return NULL;
    struct lc_node *r = lc_broadcast_to(z, a->ndim, a->shape);
    lc_node_release(z);
    return r;
  }
  return un(LC_OP_IMAG, a, MLX_FLOAT32);
}

struct lc_node *lc_stop_gradient(struct lc_node *a) {
  return lc_node_new_op(LC_OP_STOP_GRADIENT, a->dtype, a->ndim, a->shape, 1, &a, NULL, 0);
}

struct lc_node *lc_copy(struct lc_node *a) { return un(LC_OP_EW_COPY, a, a->dtype); }

struct lc_node *lc_view(struct lc_node *a, mlx_dtype t) {
  if (!lc_dtype_valid(t)) {
    lc_error("view: invalid dtype %d", (int)t);
    return NULL;
  }
  if (a->dtype == t) return lc_node_retain(a);
  int ib = (int)lc_dtype_size(a->dtype), ob = (int)lc_dtype_size(t);
  int nd = a->ndim;
  int shape[nd > 0 ? nd : 1];
  if (nd) memcpy(shape, a->shape, sizeof(int) * (size_t)nd);
  if (ib != ob) {
    if (nd == 0) {
      lc_error("view: changing the type of a scalar is only allowed for types with the same "
               "size (%s to %s)", lc_dtype_name(a->dtype), lc_dtype_name(t));
      return NULL;
    }
    if (ib < ob) {
      if (shape[nd - 1] % (ob / ib)) {
        lc_error("view: when viewing as a larger dtype, the size in bytes of the last axis "
                 "(%d) must be a multiple of the requested type size (%d)",
                 shape[nd - 1] * ib, ob);
        return NULL;
      }
      shape[nd - 1] /= ob / ib;
    } else {
      if ((int64_t)shape[nd - 1] * (ib / ob) > INT32_MAX) {
        lc_error("view: resulting last axis is too large");
        return NULL;
      }
      shape[nd - 1] *= ib / ob;
    }
  }
  return lc_node_new_op(LC_OP_VIEW, t, nd, shape, 1, &a, NULL, 0);
}

struct lc_node *lc_nan_to_num(struct lc_node *a, double nan, bool has_posinf, double posinf,
                              bool has_neginf, double neginf) {
  if (no_complex("nan_to_num", a)) return NULL;
  if (!lc_dtype_is_float(a->dtype)) return lc_node_retain(a);
  double big = a->dtype == MLX_FLOAT64   ? DBL_MAX
               : a->dtype == MLX_FLOAT32 ? FLT_MAX
               : a->dtype == MLX_FLOAT16 ? 65504.0
                                         : 3.3895313892515355e38; /* bfloat16 max */
  struct nan_to_num_params p = {nan, has_posinf ? posinf : big, has_neginf ? neginf : -big};
  return lc_ew_new(LC_OP_NAN_TO_NUM, a->dtype, 1, &a, &p, sizeof p);
}

struct lc_node *lc_to_fp8(struct lc_node *a) {
  if (!lc_dtype_is_float(a->dtype)) {
    lc_error("to_fp8: only real floating types are supported, got %s", lc_dtype_name(a->dtype));
    return NULL;
  }
  return un(LC_OP_TO_FP8, a, MLX_UINT8);
}

struct lc_node *lc_from_fp8(struct lc_node *a, mlx_dtype t) {
  if (a->dtype != MLX_UINT8) {
    lc_error("from_fp8: input must have type uint8, got %s", lc_dtype_name(a->dtype));
    return NULL;
  }
  if (!lc_dtype_is_float(t)) {
    lc_error("from_fp8: only real floating types are supported, got %s", lc_dtype_name(t));
    return NULL;
  }
  return un(LC_OP_FROM_FP8, a, t);
}
