/* Public elementwise ops: argument checks, then the builders. */
#include "api/api.h"
#include "api/handles.h"
#include "ops/binary.h"
#include "ops/elementwise.h"
#include "ops/ternary.h"
#include "ops/unary.h"

#define API_UNARY(NAME)                                                          \
  int mlx_##NAME(mlx_array *res, const mlx_array a, const mlx_stream s) {        \
    LC_CHECK_RES("mlx_" #NAME, res);                                             \
    LC_CHECK_ARR("mlx_" #NAME, a);                                               \
    if (lc_api_check_stream("mlx_" #NAME, s)) return 1;                          \
    return lc_api_set(res, lc_##NAME(lc_arr(a)));                                \
  }

#define API_BINARY(NAME)                                                                  \
  int mlx_##NAME(mlx_array *res, const mlx_array a, const mlx_array b, const mlx_stream s) { \
    LC_CHECK_RES("mlx_" #NAME, res);                                                      \
    LC_CHECK_ARR("mlx_" #NAME, a);                                                        \
    LC_CHECK_ARR("mlx_" #NAME, b);                                                        \
    if (lc_api_check_stream("mlx_" #NAME, s)) return 1;                                   \
    return lc_api_set(res, lc_##NAME(lc_arr(a), lc_arr(b)));                              \
  }

API_UNARY(abs)
API_UNARY(negative)
API_UNARY(sign)
API_UNARY(square)
API_UNARY(sqrt)
API_UNARY(rsqrt)
API_UNARY(reciprocal)
API_UNARY(exp)
API_UNARY(expm1)
API_UNARY(log)
API_UNARY(log1p)
API_UNARY(log2)
API_UNARY(log10)
API_UNARY(sin)
API_UNARY(cos)
API_UNARY(tan)
API_UNARY(arcsin)
API_UNARY(arccos)
API_UNARY(arctan)
API_UNARY(sinh)
API_UNARY(cosh)
API_UNARY(tanh)
API_UNARY(arcsinh)
API_UNARY(arccosh)
API_UNARY(arctanh)
API_UNARY(sigmoid)
API_UNARY(erf)
API_UNARY(erfinv)
API_UNARY(floor)
API_UNARY(ceil)
API_UNARY(degrees)
API_UNARY(radians)
API_UNARY(isnan)
API_UNARY(isinf)
API_UNARY(isposinf)
API_UNARY(isneginf)
API_UNARY(isfinite)
API_UNARY(logical_not)
API_UNARY(bitwise_invert)
API_UNARY(conjugate)
API_UNARY(real)
API_UNARY(imag)
API_UNARY(stop_gradient)
API_UNARY(copy)

API_BINARY(add)
API_BINARY(subtract)
API_BINARY(multiply)
API_BINARY(divide)
API_BINARY(floor_divide)
API_BINARY(remainder)
API_BINARY(power)
API_BINARY(maximum)
API_BINARY(minimum)
API_BINARY(arctan2)
API_BINARY(logaddexp)
API_BINARY(equal)
API_BINARY(not_equal)
API_BINARY(greater)
API_BINARY(greater_equal)
API_BINARY(less)
API_BINARY(less_equal)
API_BINARY(logical_and)
API_BINARY(logical_or)
API_BINARY(bitwise_and)
API_BINARY(bitwise_or)
API_BINARY(bitwise_xor)
API_BINARY(left_shift)
API_BINARY(right_shift)

int mlx_round(mlx_array *res, const mlx_array a, int decimals, const mlx_stream s) {
  LC_CHECK_RES("mlx_round", res);
  LC_CHECK_ARR("mlx_round", a);
  if (lc_api_check_stream("mlx_round", s)) return 1;
  return lc_api_set(res, lc_round(lc_arr(a), decimals));
}

int mlx_astype(mlx_array *res, const mlx_array a, mlx_dtype dtype, const mlx_stream s) {
  LC_CHECK_RES("mlx_astype", res);
  LC_CHECK_ARR("mlx_astype", a);
  if (lc_api_check_stream("mlx_astype", s)) return 1;
  return lc_api_set(res, lc_astype(lc_arr(a), dtype));
}

int mlx_view(mlx_array *res, const mlx_array a, mlx_dtype dtype, const mlx_stream s) {
  LC_CHECK_RES("mlx_view", res);
  LC_CHECK_ARR("mlx_view", a);
  if (lc_api_check_stream("mlx_view", s)) return 1;
  return lc_api_set(res, lc_view(lc_arr(a), dtype));
}

int mlx_where(mlx_array *res, const mlx_array condition, const mlx_array x, const mlx_array y,
              const mlx_stream s) {
  LC_CHECK_RES("mlx_where", res);
  LC_CHECK_ARR("mlx_where", condition);
  LC_CHECK_ARR("mlx_where", x);
  LC_CHECK_ARR("mlx_where", y);
  if (lc_api_check_stream("mlx_where", s)) return 1;
  return lc_api_set(res, lc_where(lc_arr(condition), lc_arr(x), lc_arr(y)));
}

int mlx_clip(mlx_array *res, const mlx_array a, const mlx_array a_min, const mlx_array a_max,
             const mlx_stream s) {
  LC_CHECK_RES("mlx_clip", res);
  LC_CHECK_ARR("mlx_clip", a);
  if (!a_min.ctx && !a_max.ctx)
    return lc_error("mlx_clip: at most one of a_min and a_max may be empty");
  if (lc_api_check_stream("mlx_clip", s)) return 1;
  return lc_api_set(res, lc_clip(lc_arr(a), lc_arr(a_min), lc_arr(a_max)));
}

int mlx_nan_to_num(mlx_array *res, const mlx_array a, float nan, mlx_optional_float posinf,
                   mlx_optional_float neginf, const mlx_stream s) {
  LC_CHECK_RES("mlx_nan_to_num", res);
  LC_CHECK_ARR("mlx_nan_to_num", a);
  if (lc_api_check_stream("mlx_nan_to_num", s)) return 1;
  return lc_api_set(res, lc_nan_to_num(lc_arr(a), nan, posinf.has_value, posinf.value,
                                       neginf.has_value, neginf.value));
}

int mlx_isclose(mlx_array *res, const mlx_array a, const mlx_array b, double rtol, double atol,
                bool equal_nan, const mlx_stream s) {
  LC_CHECK_RES("mlx_isclose", res);
  LC_CHECK_ARR("mlx_isclose", a);
  LC_CHECK_ARR("mlx_isclose", b);
  if (lc_api_check_stream("mlx_isclose", s)) return 1;
  return lc_api_set(res, lc_isclose(lc_arr(a), lc_arr(b), rtol, atol, equal_nan));
}

int mlx_divmod(mlx_vector_array *res, const mlx_array a, const mlx_array b, const mlx_stream s) {
  LC_CHECK_RES("mlx_divmod", res);
  LC_CHECK_ARR("mlx_divmod", a);
  LC_CHECK_ARR("mlx_divmod", b);
  if (lc_api_check_stream("mlx_divmod", s)) return 1;
  struct lc_node *qr[2];
  if (lc_divmod(lc_arr(a), lc_arr(b), &qr[0], &qr[1])) return 1;
  int rc = lc_vec_array_assign(res, qr, 2);
  lc_node_release(qr[0]);
  lc_node_release(qr[1]);
  return rc;
}

int mlx_allclose(mlx_array *res, const mlx_array a, const mlx_array b, double rtol, double atol,
                 bool equal_nan, const mlx_stream s) {
  LC_CHECK_RES("mlx_allclose", res);
  LC_CHECK_ARR("mlx_allclose", a);
  LC_CHECK_ARR("mlx_allclose", b);
  if (lc_api_check_stream("mlx_allclose", s)) return 1;
  return lc_api_set(res, lc_allclose(lc_arr(a), lc_arr(b), rtol, atol, equal_nan));
}

int mlx_array_equal(mlx_array *res, const mlx_array a, const mlx_array b, bool equal_nan,
                    const mlx_stream s) {
  LC_CHECK_RES("mlx_array_equal", res);
  LC_CHECK_ARR("mlx_array_equal", a);
  LC_CHECK_ARR("mlx_array_equal", b);
  if (lc_api_check_stream("mlx_array_equal", s)) return 1;
  return lc_api_set(res, lc_array_equal(lc_arr(a), lc_arr(b), equal_nan));
}

int mlx_to_fp8(mlx_array *res, const mlx_array x, const mlx_stream s) {
  LC_CHECK_RES("mlx_to_fp8", res);
  LC_CHECK_ARR("mlx_to_fp8", x);
  if (lc_api_check_stream("mlx_to_fp8", s)) return 1;
  return lc_api_set(res, lc_to_fp8(lc_arr(x)));
}

int mlx_from_fp8(mlx_array *res, const mlx_array x, mlx_dtype dtype, const mlx_stream s) {
  LC_CHECK_RES("mlx_from_fp8", res);
  LC_CHECK_ARR("mlx_from_fp8", x);
  if (lc_api_check_stream("mlx_from_fp8", s)) return 1;
  return lc_api_set(res, lc_from_fp8(lc_arr(x), dtype));
}
