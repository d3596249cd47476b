/* Every elementwise op against numpy references (tests/data/elementwise_cases.h,
 * from tests/gen/gen_elementwise.py): several dtypes per op, promotion,
 * broadcasting, transposed (non-contiguous) inputs, special values. */
#include "test.h"

#include "../data/elementwise_cases.h"

typedef int (*unop)(mlx_array *, const mlx_array, const mlx_stream);
typedef int (*binop)(mlx_array *, const mlx_array, const mlx_array, const mlx_stream);

static const struct {
  const char *name;
  unop f;
} unops[] = {
    {"abs", mlx_abs}, {"negative", mlx_negative}, {"sign", mlx_sign}, {"square", mlx_square},
    {"sqrt", mlx_sqrt}, {"rsqrt", mlx_rsqrt}, {"reciprocal", mlx_reciprocal}, {"exp", mlx_exp},
    {"expm1", mlx_expm1}, {"log", mlx_log}, {"log1p", mlx_log1p}, {"log2", mlx_log2},
    {"log10", mlx_log10}, {"sin", mlx_sin}, {"cos", mlx_cos}, {"tan", mlx_tan},
    {"arcsin", mlx_arcsin}, {"arccos", mlx_arccos}, {"arctan", mlx_arctan}, {"sinh", mlx_sinh},
    {"cosh", mlx_cosh}, {"tanh", mlx_tanh}, {"arcsinh", mlx_arcsinh}, {"arccosh", mlx_arccosh},
    {"arctanh", mlx_arctanh}, {"sigmoid", mlx_sigmoid}, {"erf", mlx_erf}, {"erfinv", mlx_erfinv},
    {"floor", mlx_floor}, {"ceil", mlx_ceil}, {"degrees", mlx_degrees},
    {"radians", mlx_radians}, {"isnan", mlx_isnan}, {"isinf", mlx_isinf},
    {"isposinf", mlx_isposinf}, {"isneginf", mlx_isneginf}, {"isfinite", mlx_isfinite},
    {"logical_not", mlx_logical_not}, {"bitwise_invert", mlx_bitwise_invert},
};

static const struct {
  const char *name;
  binop f;
} binops[] = {
    {"add", mlx_add}, {"subtract", mlx_subtract}, {"multiply", mlx_multiply},
    {"divide", mlx_divide}, {"floor_divide", mlx_floor_divide}, {"remainder", mlx_remainder},
    {"power", mlx_power}, {"maximum", mlx_maximum}, {"minimum", mlx_minimum},
    {"arctan2", mlx_arctan2}, {"logaddexp", mlx_logaddexp}, {"equal", mlx_equal},
    {"not_equal", mlx_not_equal}, {"greater", mlx_greater}, {"greater_equal", mlx_greater_equal},
    {"less", mlx_less}, {"less_equal", mlx_less_equal}, {"logical_and", mlx_logical_and},
    {"logical_or", mlx_logical_or}, {"bitwise_and", mlx_bitwise_and},
    {"bitwise_or", mlx_bitwise_or}, {"bitwise_xor", mlx_bitwise_xor},
    {"left_shift", mlx_left_shift}, {"right_shift", mlx_right_shift},
};

/* Input k of case c as an array of its dtype and logical shape (a
 * transposed view when the case stores it transposed). */
static mlx_array make_input(const struct ew_case *c, int k) {
  const struct ew_input *in = &c->in[k];
  int shape[2] = {in->shape[0], in->shape[1]};
  if (in->trans) {
    shape[0] = in->shape[1];
    shape[1] = in->shape[0];
  }
  mlx_array f = mlx_array_new_data(ew_vals + in->off, shape, in->ndim, MLX_FLOAT64);
  mlx_array x = mlx_array_new(), t = mlx_array_new();
  mlx_astype(&x, f, (mlx_dtype)c->dt[k], test_stream());
  mlx_array_free(f);
  if (!in->trans) return x;
  mlx_transpose(&t, x, test_stream());
  mlx_array_free(x);
  return t;
}

static int run_case(const struct ew_case *c, mlx_array *r) {
  mlx_array in[3] = {{0}, {0}, {0}};
  for (int k = 0; k < c->nin; k++) in[k] = make_input(c, k);
  mlx_stream s = test_stream();
  int rc = -1;
  for (size_t i = 0; i < sizeof unops / sizeof unops[0] && rc < 0; i++)
    if (!strcmp(c->op, unops[i].name)) rc = unops[i].f(r, in[0], s);
  for (size_t i = 0; i < sizeof binops / sizeof binops[0] && rc < 0; i++)
    if (!strcmp(c->op, binops[i].name)) rc = binops[i].f(r, in[0], in[1], s);
  if (rc < 0) {
    if (!strcmp(c->op, "round")) {
      rc = mlx_round(r, in[0], c->param, s);
    } else if (!strcmp(c->op, "nan_to_num")) {
      mlx_optional_float pi = {7.0f, c->param != 0}, ni = {-9.0f, c->param != 0};
      rc = mlx_nan_to_num(r, in[0], c->param ? 3.0f : 0.0f, pi, ni, s);
    } else if (!strcmp(c->op, "where")) {
      rc = mlx_where(r, in[0], in[1], in[2], s);
    } else if (!strcmp(c->op, "clip")) {
      mlx_array none = {NULL};
      rc = mlx_clip(r, in[0], c->param == 2 ? none : in[1], c->param == 1 ? none : in[2], s);
    } else if (!strcmp(c->op, "isclose")) {
      rc = mlx_isclose(r, in[0], in[1], 1e-3, 1e-2, c->param != 0, s);
    } else {
      fprintf(stderr, "unknown op %s\n", c->op);
      rc = 1;
    }
  }
  for (int k = 0; k < c->nin; k++) mlx_array_free(in[k]);
  return rc;
}

int main(void) {
  test_init();
  size_t before = test_active_memory();
  int failed_before;
  for (size_t i = 0; i < EW_NCASES; i++) {
    const struct ew_case *c = &ew_cases[i];
    mlx_array r = mlx_array_new();
    failed_before = test_failures;
    int rc = run_case(c, &r);
    CHECK_MSG(rc == 0, "case %zu (%s): failed: %s", i, c->op, test_last_error);
    if (rc == 0) {
      CHECK_MSG(mlx_array_dtype(r) == (mlx_dtype)c->out_dt, "case %zu (%s): dtype %d, want %d", i,
                c->op, (int)mlx_array_dtype(r), c->out_dt);
      CHECK_MSG(mlx_array_ndim(r) == (size_t)c->out_ndim &&
                    (c->out_ndim < 1 || mlx_array_shape(r)[0] == c->out_shape[0]) &&
                    (c->out_ndim < 2 || mlx_array_shape(r)[1] == c->out_shape[1]),
                "case %zu (%s): shape", i, c->op);
      CHECK_CLOSE(r, ew_vals + c->out_off, (size_t)c->out_n, c->rtol, c->atol);
    }
    if (test_failures != failed_before)
      fprintf(stderr, "  ^ case %zu: %s, input dtypes %d %d %d, param %d\n", i, c->op, c->dt[0],
              c->nin > 1 ? c->dt[1] : -1, c->nin > 2 ? c->dt[2] : -1, c->param);
    mlx_array_free(r);
  }
  CHECK_MSG(test_active_memory() == before, "active memory %zu, was %zu", test_active_memory(),
            before);
  return test_done();
}
