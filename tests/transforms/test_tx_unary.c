/* Transformation rules of the unary elementwise primitives (and astype):
 * vjp and jvp against finite differences on contiguous, transposed and
 * reversed float64 inputs, vmap against a loop over several batch axes,
 * second derivatives, zero rules, the errors MLX raises, complex rules
 * against their closed forms, stop_gradient under vmap. */
#include "tx_check.h"

typedef int (*un_fn)(mlx_array *, const mlx_array, const mlx_stream);

struct un_case {
  const char *name;
  un_fn f;
  double lo, hi; /* inputs drawn from [lo, hi), inside the domain */
};

static int f_un(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  const struct un_case *c = ctx;
  return c->f(out, in[0], test_stream());
}

/* x * g(x) for a piecewise-constant g (output cast to x's dtype): its
 * derivative g(x) is only right if g's rules are zero. */
static int f_times(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  const struct un_case *c = ctx;
  mlx_array g = mlx_array_new(), gf = mlx_array_new();
  int rc = c->f(&g, in[0], test_stream()) || mlx_astype(&gf, g, MLX_FLOAT64, test_stream()) ||
           mlx_multiply(out, in[0], gf, test_stream());
  mlx_array_free(g);
  mlx_array_free(gf);
  return rc;
}

static int round1(mlx_array *r, const mlx_array a, const mlx_stream s) {
  return mlx_round(r, a, 1, s);
}
static int round0(mlx_array *r, const mlx_array a, const mlx_stream s) {
  return mlx_round(r, a, 0, s);
}
static int not_pos(mlx_array *r, const mlx_array a, const mlx_stream s) {
  mlx_array z = mlx_array_new_float64(0.25), g = mlx_array_new();
  int rc = mlx_greater(&g, a, z, s) || mlx_logical_not(r, g, s);
  mlx_array_free(z);
  mlx_array_free(g);
  return rc;
}
static int nan_to_num(mlx_array *r, const mlx_array a, const mlx_stream s) {
  mlx_optional_float none = {0, false};
  return mlx_nan_to_num(r, a, 0.0f, none, none, s);
}

static const struct un_case smooth[] = {
    {"abs", mlx_abs, -2, 2},         {"negative", mlx_negative, -2, 2},
    {"square", mlx_square, -2, 2},   {"sqrt", mlx_sqrt, 0.5, 3},
    {"rsqrt", mlx_rsqrt, 0.5, 3},    {"exp", mlx_exp, -2, 2},
    {"expm1", mlx_expm1, -2, 2},     {"log", mlx_log, 0.5, 3},
    {"log1p", mlx_log1p, -0.5, 2},   {"log2", mlx_log2, 0.5, 3},
    {"log10", mlx_log10, 0.5, 3},    {"sin", mlx_sin, -3, 3},
    {"cos", mlx_cos, -3, 3},         {"tan", mlx_tan, -1.2, 1.2},
    {"arcsin", mlx_arcsin, -0.9, 0.9}, {"arccos", mlx_arccos, -0.9, 0.9},
    {"arctan", mlx_arctan, -3, 3},   {"sinh", mlx_sinh, -2, 2},
    {"cosh", mlx_cosh, -2, 2},       {"tanh", mlx_tanh, -2, 2},
    {"arcsinh", mlx_arcsinh, -3, 3}, {"arccosh", mlx_arccosh, 1.2, 3},
    {"arctanh", mlx_arctanh, -0.9, 0.9}, {"sigmoid", mlx_sigmoid, -4, 4},
    {"erf", mlx_erf, -2, 2},         {"erfinv", mlx_erfinv, -0.9, 0.9},
    {"copy", mlx_copy, -2, 2},       {"nan_to_num", nan_to_num, -2, 2},
};

static const struct un_case piecewise[] = {
    {"sign", mlx_sign, -2, 2},   {"floor", mlx_floor, -3, 3},
    {"ceil", mlx_ceil, -3, 3},   {"round", round0, -3, 3},
    {"round(1)", round1, -3, 3}, {"logical_not", not_pos, -1, 1},
};

/* x (a new array) of shape (a, 1, b) in one of three layouts: contiguous,
 * a transpose, a reversed (negative stride) slice. */
static mlx_array layout_input(int layout, int a, int b, double lo, double hi) {
  mlx_array x = mlx_array_new();
  if (layout == 0) {
    int sh[3] = {a, 1, b};
    mlx_array_free(x);
    return tx_rand(sh, 3, lo, hi);
  }
  if (layout == 1) {
    int sh[3] = {b, 1, a};
    mlx_array t = tx_rand(sh, 3, lo, hi);
    mlx_transpose(&x, t, test_stream());
    mlx_array_free(t);
    return x;
  }
  int sh[3] = {a, 1, b + 2};
  mlx_array t = tx_rand(sh, 3, lo, hi);
  int start[3] = {a - 1, 0, b}, stop[3] = {-a - 1, 1, 0}, str[3] = {-1, 1, -1};
  mlx_slice(&x, t, start, 3, stop, 3, str, 3, test_stream());
  mlx_array_free(t);
  return x;
}

static void check_case(const char *name, tx_fn f, const void *ctx, double lo, double hi) {
  char label[96];
  for (int layout = 0; layout < 3; layout++) {
    mlx_array x = layout_input(layout, test_randint(1, 4), test_randint(1, 5), lo, hi);
    snprintf(label, sizeof label, "%s layout %d", name, layout);
    tx_check_grad(label, f, (void *)ctx, 1, &x, 1e-6);
    mlx_array_free(x);
  }
  /* 0-d input */
  mlx_array s = tx_rand(NULL, 0, lo, hi);
  snprintf(label, sizeof label, "%s 0-d", name);
  tx_check_grad(label, f, (void *)ctx, 1, &s, 1e-6);
  mlx_array_free(s);
  /* vmap over axes 0, 1 and 2 */
  int B = test_randint(2, 4), r = test_randint(1, 3);
  for (int ax = 0; ax < 3; ax++) {
    int sh[3] = {r, 3, 2};
    sh[ax] = B;
    mlx_array xb = tx_rand(sh, 3, lo, hi);
    snprintf(label, sizeof label, "%s vmap axis %d", name, ax);
    tx_check_vmap(label, f, (void *)ctx, 1, &xb, &ax, 1e-12);
    mlx_array_free(xb);
  }
}

/* ---- second derivatives ---- */


static void check_second(const struct un_case *c) {
  struct tx_grad_ctx g = {f_un, (void *)c, 0};
  char label[96];
  int sh[2] = {test_randint(1, 3), test_randint(2, 4)};
  mlx_array x = tx_rand(sh, 2, c->lo, c->hi);
  snprintf(label, sizeof label, "grad of grad %s", c->name);
  tx_check_grad(label, tx_f_grad, &g, 1, &x, 1e-5);
  int sb[2] = {3, 2}, ax = 0;
  mlx_array xb = tx_rand(sb, 2, c->lo, c->hi);
  snprintf(label, sizeof label, "vmap of grad %s", c->name);
  tx_check_vmap(label, tx_f_grad, &g, 1, &xb, &ax, 1e-12);
  mlx_array_free(x);
  mlx_array_free(xb);
}

/* ---- ops MLX cannot differentiate ---- */

static int f_invert(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  mlx_array i = mlx_array_new(), b = mlx_array_new();
  int rc = mlx_astype(&i, in[0], MLX_INT32, test_stream()) ||
           mlx_bitwise_invert(&b, i, test_stream()) ||
           mlx_astype(out, b, MLX_FLOAT64, test_stream());
  mlx_array_free(i);
  mlx_array_free(b);
  return rc;
}
static int f_view(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  return mlx_view(out, in[0], MLX_FLOAT32, test_stream());
}
static int f_fp8(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  mlx_array q = mlx_array_new();
  int rc = mlx_to_fp8(&q, in[0], test_stream()) ||
           mlx_from_fp8(out, q, MLX_FLOAT64, test_stream());
  mlx_array_free(q);
  return rc;
}

static void check_nondiff(const char *name, tx_fn f, const char *needle) {
  int sh[2] = {2, 4};
  mlx_array x = tx_rand(sh, 2, 0.5, 3);
  mlx_array y = mlx_array_new(), g[1], t;
  CHECK_OK(f(&y, &x, 1, NULL));
  mlx_array ones = mlx_array_new();
  mlx_ones_like(&ones, y, test_stream());
  CHECK_FAILS(tx_vjp_grads(f, NULL, 1, &x, ones, g), needle);
  CHECK_FAILS(tx_jvp_tangent(f, NULL, 1, &x, &x, &t), needle);
  mlx_array_free(g[0]);
  mlx_array_free(t);
  /* still vmaps (batch axes 0 and 1, and the last for view) */
  int sb[3] = {3, 2, 4};
  mlx_array xb = tx_rand(sb, 3, 0.5, 3);
  char label[64];
  for (int ax = 0; ax < 3; ax++) {
    snprintf(label, sizeof label, "%s vmap axis %d", name, ax);
    tx_check_vmap(label, f, NULL, 1, &xb, &ax, 0);
  }
  mlx_array_free(xb);
  mlx_array_free(ones);
  mlx_array_free(y);
  mlx_array_free(x);
}

/* ---- stop_gradient ---- */

/* x * stop_gradient(x): derivative x (not 2x). */
static int f_sg(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  mlx_array s = mlx_array_new();
  int rc = mlx_stop_gradient(&s, in[0], test_stream()) ||
           mlx_multiply(out, in[0], s, test_stream());
  mlx_array_free(s);
  return rc;
}

/* f_sg vmapped over axis 0 (no transposes, so only this family's rules run). */
static int f_sg_vmapped(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)ctx;
  mlx_closure cls = tx_closure(f_sg, NULL);
  mlx_vector_array vin = mlx_vector_array_new_data(in, (size_t)n);
  mlx_vector_array res = mlx_vector_array_new();
  int ax = 0;
  int rc = tx_vmap(&res, cls, vin, &ax, &ax) || mlx_vector_array_get(out, res, 0);
  mlx_vector_array_free(vin);
  mlx_vector_array_free(res);
  mlx_closure_free(cls);
  return rc;
}

static void check_stop_gradient(void) {
  int sh[2] = {3, 4};
  mlx_array x = tx_rand(sh, 2, -2, 2);
  double *xv = test_values(x);
  size_t sz = mlx_array_size(x);
  mlx_array u = tx_rand(sh, 2, -1, 1);
  double *uv = test_values(u), *want = malloc(sizeof(double) * sz);
  for (size_t i = 0; i < sz; i++) want[i] = uv[i] * xv[i];
  for (int vm = 0; vm < 2; vm++) {
    tx_fn f = vm ? f_sg_vmapped : f_sg;
    mlx_array g[1], t;
    CHECK_OK(tx_vjp_grads(f, NULL, 1, &x, u, g));
    CHECK_CLOSE(g[0], want, sz, 1e-12, 1e-12);
    CHECK_OK(tx_jvp_tangent(f, NULL, 1, &x, &u, &t));
    CHECK_CLOSE(t, want, sz, 1e-12, 1e-12);
    mlx_array_free(g[0]);
    mlx_array_free(t);
  }
  for (int ax = 0; ax < 2; ax++) tx_check_vmap("stop_gradient", f_sg, NULL, 1, &x, &ax, 0);
  free(xv);
  free(uv);
  free(want);
  mlx_array_free(x);
  mlx_array_free(u);
}

/* ---- nan_to_num at non-finite values: zero derivative there ---- */

static void check_nan_to_num(void) {
  double xs[5] = {1.5, INFINITY, -INFINITY, NAN, -2};
  int sh[1] = {5};
  mlx_array x = mlx_array_new_data(xs, sh, 1, MLX_FLOAT64);
  mlx_array ones = mlx_array_new(), g[1], t;
  mlx_ones_like(&ones, x, test_stream());
  struct un_case c = {"nan_to_num", nan_to_num, 0, 0};
  double want[5] = {1, 0, 0, 0, 1};
  CHECK_OK(tx_vjp_grads(f_un, &c, 1, &x, ones, g));
  CHECK_CLOSE(g[0], want, 5, 0, 0);
  CHECK_OK(tx_jvp_tangent(f_un, &c, 1, &x, &ones, &t));
  CHECK_CLOSE(t, want, 5, 0, 0);
  mlx_array_free(g[0]);
  mlx_array_free(t);
  mlx_array_free(ones);
  mlx_array_free(x);
}

/* ---- astype: the cotangent comes back in the input's dtype ---- */

static int f_astype(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  mlx_array h = mlx_array_new(), two = mlx_array_new_float32(2);
  int rc = mlx_astype(&h, in[0], MLX_FLOAT32, test_stream()) ||
           mlx_multiply(out, h, two, test_stream());
  mlx_array_free(h);
  mlx_array_free(two);
  return rc;
}

static void check_astype(void) {
  int sh[2] = {2, 3};
  mlx_array x = tx_rand(sh, 2, -2, 2);
  float cv[6] = {1, -2, 0.5f, 3, -0.25f, 4};
  mlx_array cot = mlx_array_new_data(cv, sh, 2, MLX_FLOAT32);
  mlx_array g[1], t;
  CHECK_OK(tx_vjp_grads(f_astype, NULL, 1, &x, cot, g));
  CHECK(mlx_array_dtype(g[0]) == MLX_FLOAT64);
  double want[6];
  for (int i = 0; i < 6; i++) want[i] = 2.0 * cv[i];
  CHECK_CLOSE(g[0], want, 6, 0, 0);
  mlx_array tan = tx_rand(sh, 2, -1, 1);
  double *tv = test_values(tan);
  CHECK_OK(tx_jvp_tangent(f_astype, NULL, 1, &x, &tan, &t));
  CHECK(mlx_array_dtype(t) == MLX_FLOAT32);
  for (int i = 0; i < 6; i++) want[i] = 2.0 * (float)tv[i];
  CHECK_CLOSE(t, want, 6, 1e-6, 1e-7);
  int ax = 1;
  tx_check_vmap("astype", f_astype, NULL, 1, &x, &ax, 0);
  free(tv);
  mlx_array_free(tan);
  mlx_array_free(g[0]);
  mlx_array_free(t);
  mlx_array_free(cot);
  mlx_array_free(x);
}

/* ---- complex rules against closed forms ---- */

static mlx_array cx_array(const mlx_complex64_t *v, int n) {
  int sh[1] = {n};
  return mlx_array_new_data(v, sh, 1, MLX_COMPLEX64);
}

/* a's real and imaginary parts against want (float32 accuracy). */
static void check_cx(const char *what, mlx_array a, const mlx_complex64_t *want, int n) {
  CHECK_MSG(mlx_array_dtype(a) == MLX_COMPLEX64, "%s: dtype %d", what, (int)mlx_array_dtype(a));
  mlx_array re = mlx_array_new(), im = mlx_array_new();
  mlx_real(&re, a, test_stream());
  mlx_imag(&im, a, test_stream());
  double wr[8], wi[8];
  for (int i = 0; i < n; i++) wr[i] = crealf(want[i]), wi[i] = cimagf(want[i]);
  CHECK_CLOSE(re, wr, (size_t)n, 1e-5, 1e-6);
  CHECK_CLOSE(im, wi, (size_t)n, 1e-5, 1e-6);
  mlx_array_free(re);
  mlx_array_free(im);
}

static int f_cx(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  return ((un_fn)ctx)(out, in[0], test_stream());
}

static void check_complex(void) {
  enum { N = 4 };
  mlx_complex64_t z[N], c[N], t[N], want[N];
  for (int i = 0; i < N; i++) {
    z[i] = (float)test_uniform(-1.5, 1.5) + (float)test_uniform(-1.5, 1.5) * I;
    c[i] = (float)test_uniform(-1, 1) + (float)test_uniform(-1, 1) * I;
    t[i] = (float)test_uniform(-1, 1) + (float)test_uniform(-1, 1) * I;
  }
  mlx_array za = cx_array(z, N), ca = cx_array(c, N), ta = cx_array(t, N), g[1], jt;
  float cr[N];
  for (int i = 0; i < N; i++) cr[i] = crealf(c[i]);
  int sh[1] = {N};
  mlx_array creal = mlx_array_new_data(cr, sh, 1, MLX_FLOAT32);
  /* holomorphic ops: vjp cot * conj(f'(z)), jvp t * f'(z) */
  struct {
    un_fn f;
    mlx_complex64_t (*d)(mlx_complex64_t);
  } holo[] = {{mlx_exp, cexpf}, {mlx_sin, ccosf}, {mlx_sinh, ccoshf}};
  for (size_t k = 0; k < sizeof holo / sizeof holo[0]; k++) {
    CHECK_OK(tx_vjp_grads(f_cx, (void *)holo[k].f, 1, &za, ca, g));
    for (int i = 0; i < N; i++) want[i] = c[i] * conjf(holo[k].d(z[i]));
    check_cx("holomorphic vjp", g[0], want, N);
    CHECK_OK(tx_jvp_tangent(f_cx, (void *)holo[k].f, 1, &za, &ta, &jt));
    for (int i = 0; i < N; i++) want[i] = t[i] * holo[k].d(z[i]);
    check_cx("holomorphic jvp", jt, want, N);
    mlx_array_free(g[0]);
    mlx_array_free(jt);
  }
  /* conjugate: conj(cot), conj(t) */
  CHECK_OK(tx_vjp_grads(f_cx, (void *)mlx_conjugate, 1, &za, ca, g));
  for (int i = 0; i < N; i++) want[i] = conjf(c[i]);
  check_cx("conjugate vjp", g[0], want, N);
  CHECK_OK(tx_jvp_tangent(f_cx, (void *)mlx_conjugate, 1, &za, &ta, &jt));
  for (int i = 0; i < N; i++) want[i] = conjf(t[i]);
  check_cx("conjugate jvp", jt, want, N);
  mlx_array_free(g[0]);
  mlx_array_free(jt);
  /* real: cot + 0i; imag: cot * i; abs: cot * z / |z| */
  CHECK_OK(tx_vjp_grads(f_cx, (void *)mlx_real, 1, &za, creal, g));
  for (int i = 0; i < N; i++) want[i] = cr[i];
  check_cx("real vjp", g[0], want, N);
  mlx_array_free(g[0]);
  CHECK_OK(tx_vjp_grads(f_cx, (void *)mlx_imag, 1, &za, creal, g));
  for (int i = 0; i < N; i++) want[i] = cr[i] * I;
  check_cx("imag vjp", g[0], want, N);
  mlx_array_free(g[0]);
  CHECK_OK(tx_vjp_grads(f_cx, (void *)mlx_abs, 1, &za, creal, g));
  for (int i = 0; i < N; i++) want[i] = cr[i] * z[i] / cabsf(z[i]);
  check_cx("abs vjp", g[0], want, N);
  mlx_array_free(g[0]);
  /* real, imag, abs jvps are real: Re t, Im t, Re(t conj(z)) / |z| */
  un_fn realf[3] = {mlx_real, mlx_imag, mlx_abs};
  for (int k = 0; k < 3; k++) {
    CHECK_OK(tx_jvp_tangent(f_cx, (void *)realf[k], 1, &za, &ta, &jt));
    double w[N];
    for (int i = 0; i < N; i++)
      w[i] = k == 0 ? crealf(t[i]) : k == 1 ? cimagf(t[i]) : crealf(t[i] * conjf(z[i])) / cabsf(z[i]);
    CHECK(mlx_array_dtype(jt) == MLX_FLOAT32);
    CHECK_CLOSE(jt, w, N, 1e-5, 1e-6);
    mlx_array_free(jt);
  }
  mlx_array_free(za);
  mlx_array_free(ca);
  mlx_array_free(ta);
  mlx_array_free(creal);
}

int main(void) {
  test_init();
  for (size_t i = 0; i < sizeof smooth / sizeof smooth[0]; i++)
    check_case(smooth[i].name, f_un, &smooth[i], smooth[i].lo, smooth[i].hi);
  for (size_t i = 0; i < sizeof piecewise / sizeof piecewise[0]; i++)
    check_case(piecewise[i].name, f_times, &piecewise[i], piecewise[i].lo, piecewise[i].hi);
  const char *second[] = {"sin", "exp", "log", "tanh", "sigmoid", "erf", "erfinv",
                          "sqrt", "rsqrt", "arctan", "arcsin", "abs", "square"};
  for (size_t k = 0; k < sizeof second / sizeof second[0]; k++)
    for (size_t i = 0; i < sizeof smooth / sizeof smooth[0]; i++)
      if (!strcmp(smooth[i].name, second[k])) check_second(&smooth[i]);
  check_nondiff("bitwise_invert", f_invert, "bitwise_invert is not differentiable");
  check_nondiff("view", f_view, "view is not differentiable");
  check_nondiff("fp8", f_fp8, "fp8 is not differentiable");
  check_stop_gradient();
  check_nan_to_num();
  check_astype();
  check_complex();
  return test_done();
}
