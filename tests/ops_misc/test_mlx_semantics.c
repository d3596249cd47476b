/* MLX's semantics in the corners (tests/data/mlx_semantics_cases.h, computed
 * with MLX itself by tests/gen/gen_mlx_semantics.py): integer overflow and
 * reduction dtypes, ties, NaN in sort/clip/max, rounding halves, integer
 * power, division and remainder signs, shifts, promotions. Each case must
 * give MLX's dtype and values exactly (floats to a few ulps). */
#include "test.h"

#include "../data/mlx_semantics_cases.h"

static mlx_stream S(void) { return test_stream(); }

typedef int (*unop)(mlx_array *, const mlx_array, const mlx_stream);
typedef int (*binop)(mlx_array *, const mlx_array, const mlx_array, const mlx_stream);
typedef int (*terop)(mlx_array *, const mlx_array, const mlx_array, const mlx_array,
                     const mlx_stream);

#define REDUCE(name) \
  static int name##_all(mlx_array *r, const mlx_array a, const mlx_stream s) { \
    return mlx_##name(r, a, false, s);                                         \
  }
REDUCE(sum)
REDUCE(prod)
REDUCE(mean)
REDUCE(max)
REDUCE(min)
REDUCE(argmax)
REDUCE(argmin)
REDUCE(all)
REDUCE(any)
REDUCE(logsumexp)
#undef REDUCE
static int var0(mlx_array *r, const mlx_array a, const mlx_stream s) {
  return mlx_var(r, a, false, 0, s);
}
static int var1(mlx_array *r, const mlx_array a, const mlx_stream s) {
  return mlx_var(r, a, false, 1, s);
}
static int std0(mlx_array *r, const mlx_array a, const mlx_stream s) {
  return mlx_std(r, a, false, 0, s);
}
#define SCAN(name) \
  static int name##0(mlx_array *r, const mlx_array a, const mlx_stream s) { \
    return mlx_##name(r, a, 0, false, true, s);                             \
  }
SCAN(cumsum)
SCAN(cumprod)
SCAN(cummax)
SCAN(cummin)
SCAN(logcumsumexp)
#undef SCAN
static int round0(mlx_array *r, const mlx_array a, const mlx_stream s) {
  return mlx_round(r, a, 0, s);
}
static int round1(mlx_array *r, const mlx_array a, const mlx_stream s) {
  return mlx_round(r, a, 1, s);
}
static int round_m1(mlx_array *r, const mlx_array a, const mlx_stream s) {
  return mlx_round(r, a, -1, s);
}
static int softmax0(mlx_array *r, const mlx_array a, const mlx_stream s) {
  return mlx_softmax(r, a, false, s);
}
static int nan_to_num0(mlx_array *r, const mlx_array a, const mlx_stream s) {
  mlx_optional_float none = {0, false};
  return mlx_nan_to_num(r, a, 0.0f, none, none, s);
}
static int median0(mlx_array *r, const mlx_array a, const mlx_stream s) {
  int ax = 0;
  return mlx_median(r, a, &ax, 1, false, s);
}
static int isclose_nan(mlx_array *r, const mlx_array a, const mlx_array b, const mlx_stream s) {
  return mlx_isclose(r, a, b, 1e-5, 1e-8, true, s);
}

static const struct {
  const char *name;
  unop f;
} unops[] = {
    {"abs", mlx_abs}, {"negative", mlx_negative}, {"sign", mlx_sign}, {"square", mlx_square},
    {"sqrt", mlx_sqrt}, {"exp", mlx_exp}, {"floor", mlx_floor}, {"ceil", mlx_ceil},
    {"round", round0}, {"round1", round1}, {"round_m1", round_m1},
    {"reciprocal", mlx_reciprocal}, {"sigmoid", mlx_sigmoid},
    {"bitwise_invert", mlx_bitwise_invert}, {"logical_not", mlx_logical_not},
    {"erfinv", mlx_erfinv}, {"sum", sum_all}, {"prod", prod_all}, {"mean", mean_all},
    {"max", max_all}, {"min", min_all}, {"argmax", argmax_all}, {"argmin", argmin_all},
    {"all", all_all}, {"any", any_all}, {"var", var0}, {"std", std0}, {"var_ddof1", var1},
    {"logsumexp", logsumexp_all}, {"cumsum", cumsum0}, {"cumprod", cumprod0},
    {"cummax", cummax0}, {"cummin", cummin0}, {"logcumsumexp", logcumsumexp0},
    {"sort", mlx_sort}, {"argsort", mlx_argsort}, {"softmax", softmax0},
    {"nan_to_num", nan_to_num0}, {"median", median0},
};

static const struct {
  const char *name;
  binop f;
} binops[] = {
    {"add", mlx_add}, {"subtract", mlx_subtract}, {"multiply", mlx_multiply},
    {"divide", mlx_divide}, {"floor_divide", mlx_floor_divide}, {"remainder", mlx_remainder},
    {"power", mlx_power}, {"maximum", mlx_maximum}, {"minimum", mlx_minimum},
    {"logaddexp", mlx_logaddexp}, {"left_shift", mlx_left_shift},
    {"right_shift", mlx_right_shift}, {"arctan2", mlx_arctan2}, {"equal", mlx_equal},
    {"less", mlx_less}, {"isclose_nan", isclose_nan},
};

static const struct {
  const char *name;
  terop f;
} terops[] = {{"clip", mlx_clip}, {"where", mlx_where}};

static mlx_array make_input(const struct ms_input *in) {
  int n = in->n;
  mlx_array f = mlx_array_new_data(ms_vals + in->off, &n, 1, MLX_FLOAT64);
  mlx_array x = mlx_array_new();
  mlx_astype(&x, f, (mlx_dtype)in->dt, S());
  mlx_array_free(f);
  return x;
}

static int run_case(const struct ms_case *c, mlx_array *r) {
  mlx_array in[3] = {{0}, {0}, {0}};
  for (int k = 0; k < c->nin; k++) in[k] = make_input(&c->in[k]);
  int rc = -1;
  for (size_t i = 0; rc < 0 && c->nin == 1 && i < sizeof unops / sizeof *unops; i++)
    if (!strcmp(unops[i].name, c->op)) rc = unops[i].f(r, in[0], S());
  for (size_t i = 0; rc < 0 && c->nin == 2 && i < sizeof binops / sizeof *binops; i++)
    if (!strcmp(binops[i].name, c->op)) rc = binops[i].f(r, in[0], in[1], S());
  for (size_t i = 0; rc < 0 && c->nin == 3 && i < sizeof terops / sizeof *terops; i++)
    if (!strcmp(terops[i].name, c->op)) rc = terops[i].f(r, in[0], in[1], in[2], S());
  for (int k = 0; k < c->nin; k++) mlx_array_free(in[k]);
  return rc;
}

/* Floats agree to a few ulps of their dtype (MLX and lace use different
 * libm paths) or within its subnormal range (sigmoid(-100) is 0 in MLX,
 * which overflows exp(100), a subnormal in lace); integers, bools, NaN,
 * infinities and zero signs exactly. */
static double tolerance(int dt, double *tiny) {
  switch (dt) {
  case MLX_FLOAT16: return *tiny = 6.2e-5, 2e-3;
  case MLX_BFLOAT16: return *tiny = 1.2e-38, 1.6e-2;
  case MLX_FLOAT32: return *tiny = 1.2e-38, 2e-6;
  case MLX_FLOAT64: return *tiny = 2.3e-308, 1e-14;
  default: return *tiny = 0, 0;
  }
}

static void check_case(const struct ms_case *c, int idx) {
  mlx_array r = mlx_array_new();
  int rc = run_case(c, &r);
  CHECK_MSG(rc == 0, "case %d (%s): rc %d (%s)", idx, c->op, rc, test_last_error);
  if (rc) {
    mlx_array_free(r);
    return;
  }
  CHECK_MSG((int)mlx_array_dtype(r) == c->out_dt, "case %d (%s): dtype %d, MLX %d", idx, c->op,
            (int)mlx_array_dtype(r), c->out_dt);
  CHECK_MSG((int)mlx_array_ndim(r) == c->out_ndim, "case %d (%s): ndim %d, MLX %d", idx, c->op,
            (int)mlx_array_ndim(r), c->out_ndim);
  double *v = (int)mlx_array_size(r) == c->out_n ? test_values(r) : NULL;
  CHECK_MSG(v != NULL, "case %d (%s): size %zu, MLX %d", idx, c->op, mlx_array_size(r), c->out_n);
  double tiny, tol = tolerance(c->out_dt, &tiny);
  for (int i = 0; v && i < c->out_n; i++) {
    double x = v[i], m = ms_vals[c->out_off + i];
    bool same = isnan(m)                      ? isnan(x)
                : tol == 0 || isinf(m) || isinf(x) ? x == m && signbit(x) == signbit(m)
                : m == 0 && x == 0                 ? signbit(x) == signbit(m)
                                                   : fabs(x - m) <= tol * fabs(m) + tiny;
    CHECK_MSG(same, "case %d (%s, in dtype %d): [%d] = %.17g, MLX %.17g", idx, c->op,
              c->in[0].dt, i, x, m);
  }
  free(v);
  mlx_array_free(r);
}

int main(void) {
  test_init();
  int n = (int)(sizeof ms_cases / sizeof *ms_cases);
  for (int i = 0; i < n; i++) check_case(&ms_cases[i], i);
  return test_done();
}
