/* Unary elementwise builders (new reference, or NULL after reporting; the
 * argument is borrowed). Semantics and output dtypes follow MLX:
 *  - math functions (sqrt ... erfinv, sigmoid, reciprocal, degrees) compute
 *    in the input's dtype when it is inexact, else in float32;
 *  - abs, negative, sign, square keep the dtype (abs of complex64 gives
 *    float32; negative of bool is an error);
 *  - floor, ceil, round of integers return the input unchanged;
 *  - isnan/isinf/isposinf/isneginf/isfinite give bool (constant for
 *    integers); logical_not casts to bool; bitwise_invert needs an integer
 *    or bool (bool: logical_not).
 * Complex64 is supported by abs, negative, sign, square, sqrt, exp, log,
 * sin, cos, tan, sinh, cosh, tanh, conjugate, real, imag, isnan, isinf,
 * isfinite; the others report "not supported for complex64". */
#ifndef LC_UNARY_H
#define LC_UNARY_H

#include <stdbool.h>

#include "core/node.h"

struct lc_node *lc_abs(struct lc_node *a);
struct lc_node *lc_negative(struct lc_node *a);
struct lc_node *lc_sign(struct lc_node *a);
struct lc_node *lc_square(struct lc_node *a);
struct lc_node *lc_sqrt(struct lc_node *a);
struct lc_node *lc_rsqrt(struct lc_node *a);
struct lc_node *lc_reciprocal(struct lc_node *a);
struct lc_node *lc_exp(struct lc_node *a);
struct lc_node *lc_expm1(struct lc_node *a);
struct lc_node *lc_log(struct lc_node *a);
struct lc_node *lc_log1p(struct lc_node *a);
struct lc_node *lc_log2(struct lc_node *a);
struct lc_node *lc_log10(struct lc_node *a);
struct lc_node *lc_sin(struct lc_node *a);
struct lc_node *lc_cos(struct lc_node *a);
struct lc_node *lc_tan(struct lc_node *a);
struct lc_node *lc_arcsin(struct lc_node *a);
struct lc_node *lc_arccos(struct lc_node *a);
struct lc_node *lc_arctan(struct lc_node *a);
struct lc_node *lc_sinh(struct lc_node *a);
struct lc_node *lc_cosh(struct lc_node *a);
struct lc_node *lc_tanh(struct lc_node *a);
struct lc_node *lc_arcsinh(struct lc_node *a);
struct lc_node *lc_arccosh(struct lc_node *a);
struct lc_node *lc_arctanh(struct lc_node *a);
struct lc_node *lc_sigmoid(struct lc_node *a);
struct lc_node *lc_erf(struct lc_node *a);
struct lc_node *lc_erfinv(struct lc_node *a);
struct lc_node *lc_floor(struct lc_node *a);
struct lc_node *lc_ceil(struct lc_node *a);
/* Round half to even at `decimals` decimal places (negative: tens, ...). */
struct lc_node *lc_round(struct lc_node *a, int decimals);
struct lc_node *lc_degrees(struct lc_node *a);
struct lc_node *lc_radians(struct lc_node *a);
struct lc_node *lc_isnan(struct lc_node *a);
struct lc_node *lc_isinf(struct lc_node *a);
struct lc_node *lc_isposinf(struct lc_node *a);
struct lc_node *lc_isneginf(struct lc_node *a);
struct lc_node *lc_isfinite(struct lc_node *a);
struct lc_node *lc_logical_not(struct lc_node *a);
struct lc_node *lc_bitwise_invert(struct lc_node *a);
struct lc_node *lc_conjugate(struct lc_node *a);
struct lc_node *lc_real(struct lc_node *a);
struct lc_node *lc_imag(struct lc_node *a);
/* Identity in value; a distinct node that autodiff treats as constant. */
struct lc_node *lc_stop_gradient(struct lc_node *a);
/* A copy of a (its own contiguous buffer once evaluated). */
struct lc_node *lc_copy(struct lc_node *a);
/* a's bytes reinterpreted as dtype t (last axis rescaled by the size ratio). */
struct lc_node *lc_view(struct lc_node *a, mlx_dtype t);
/* NaN -> nan, +inf -> posinf, -inf -> neginf; the bounds default (has_* false)
 * to the dtype's largest finite values. Non-float input is returned as is. */
struct lc_node *lc_nan_to_num(struct lc_node *a, double nan, bool has_posinf, double posinf,
                              bool has_neginf, double neginf);
/* float -> uint8 fp8 (e4m3) codes, and back (to a float dtype t), as MLX. */
struct lc_node *lc_to_fp8(struct lc_node *a);
struct lc_node *lc_from_fp8(struct lc_node *a, mlx_dtype t);

#endif
