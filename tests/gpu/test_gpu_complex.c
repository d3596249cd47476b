/* complex64 elementwise ops on the GPU against the CPU, on random values
 * with contiguous, broadcast and transposed operands: + - * and the
 * conversions, negative, conjugate, real, imag, select, equality (NaNs
 * equal or not), /, |z|, sign and square bit for bit, also on special
 * values (signed zeros, infinities, NaNs, huge parts); the elementary
 * functions and powers within float rounding on finite values; a compiled complex
 * function too. Each result is made on the GPU (no host round trip).
 * Skips without a GPU. */
#include "gpu_bits.h"
#include "ops/binary.h"

typedef int (*un_fn)(mlx_array *, const mlx_array, const mlx_stream);
typedef int (*bin_fn)(mlx_array *, const mlx_array, const mlx_array, const mlx_stream);

static mlx_stream cpu;

/* re + i im from uniform parts in [lo, hi), shape (R, C). */
static mlx_array rand_cx(int R, int C, double lo, double hi) {
  int sh[2] = {R, C};
  mlx_array re = test_rand_f32(sh, 2, lo, hi), im = test_rand_f32(sh, 2, lo, hi);
  mlx_array i = mlx_array_new_complex(0, 1), a = mlx_array_new(), z = mlx_array_new();
  CHECK_OK(mlx_multiply(&a, im, i, cpu));
  CHECK_OK(mlx_add(&z, re, a, cpu));
  CHECK_OK(mlx_array_eval(z));
  mlx_array_free(re), mlx_array_free(im), mlx_array_free(i), mlx_array_free(a);
  return z;
}

/* got (GPU) against want (CPU): both parts of complex values. */
static void check_cx(mlx_array got, mlx_array want, double rtol, double atol, const char *what) {
  CHECK_OK(mlx_array_eval(got));
  CHECK_MSG(made_on_gpu(got), "%s: the result went through the host", what);
  if (mlx_array_dtype(want) != MLX_COMPLEX64) {
    if (rtol == 0 && atol == 0)
      GPU_SAME_BITS(got, want, true, what);
    else
      CHECK_SAME(got, want, rtol, atol, what);
    return;
  }
  CHECK(mlx_array_dtype(got) == MLX_COMPLEX64);
  mlx_array gr = mlx_array_new(), gi = mlx_array_new(), wr = mlx_array_new(),
            wi = mlx_array_new();
  CHECK_OK(mlx_real(&gr, got, cpu));
  CHECK_OK(mlx_imag(&gi, got, cpu));
  CHECK_OK(mlx_real(&wr, want, cpu));
  CHECK_OK(mlx_imag(&wi, want, cpu));
  CHECK_OK(mlx_array_eval(gr));
  CHECK_OK(mlx_array_eval(gi));
  char w2[96];
  snprintf(w2, sizeof w2, "%s (real)", what);
  if (rtol == 0 && atol == 0) GPU_SAME_BITS(gr, wr, true, w2); else CHECK_SAME(gr, wr, rtol, atol, w2);
  snprintf(w2, sizeof w2, "%s (imag)", what);
  if (rtol == 0 && atol == 0) GPU_SAME_BITS(gi, wi, true, w2); else CHECK_SAME(gi, wi, rtol, atol, w2);
  mlx_array_free(gr), mlx_array_free(gi), mlx_array_free(wr), mlx_array_free(wi);
}

static void unaries(mlx_array x, mlx_array xg) {
  static const struct { const char *name; un_fn f; double rtol, atol; } ops[] = {
      {"negative", mlx_negative, 0, 0}, {"conjugate", mlx_conjugate, 0, 0},
      {"real", mlx_real, 0, 0},         {"imag", mlx_imag, 0, 0},
      {"square", mlx_square, 0, 0},     {"abs", mlx_abs, 0, 0},
      {"sign", mlx_sign, 0, 0},   {"exp", mlx_exp, 2e-6, 2e-6},
      {"log", mlx_log, 2e-6, 2e-6},     {"sqrt", mlx_sqrt, 2e-6, 2e-6},
      {"sin", mlx_sin, 2e-6, 2e-6},     {"cos", mlx_cos, 2e-6, 2e-6},
      {"tan", mlx_tan, 2e-6, 2e-6},     {"sinh", mlx_sinh, 2e-6, 2e-6},
      {"cosh", mlx_cosh, 2e-6, 2e-6},   {"tanh", mlx_tanh, 2e-6, 2e-6}};
  for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
    mlx_array g = mlx_array_new(), c = mlx_array_new();
    CHECK_OK(ops[k].f(&g, xg, gpu_stream));
    CHECK_OK(ops[k].f(&c, x, cpu));
    CHECK_OK(mlx_array_eval(c));
    check_cx(g, c, ops[k].rtol, ops[k].atol, ops[k].name);
    mlx_array_free(g), mlx_array_free(c);
  }
}

/* Elementwise equality with NaNs equal (mlx_array_equal's equal_nan before
 * its reduction), built on s's device. */
static int nan_equal(mlx_array *r, const mlx_array a, const mlx_array b, const mlx_stream s) {
  int saved = lc_build_device();
  lc_set_build_device(mlx_stream_equal(s, gpu_stream) ? 0 : LC_DEV_CPU);
  struct lc_node *n = lc_equal_nan(a.ctx, b.ctx, true);
  lc_set_build_device(saved);
  if (!n) return 1;
  mlx_array_free(*r);
  r->ctx = n;
  return 0;
}

static void binaries(mlx_array x, mlx_array y, mlx_array xg, mlx_array yg, const char *form) {
  static const struct { const char *name; bin_fn f; double rtol; } ops[] = {
      {"add", mlx_add, 0},     {"subtract", mlx_subtract, 0}, {"multiply", mlx_multiply, 0},
      {"divide", mlx_divide, 0}, {"equal", mlx_equal, 0}, {"not_equal", mlx_not_equal, 0},
      {"nan_equal", nan_equal, 0}};
  for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
    char what[96];
    snprintf(what, sizeof what, "%s, %s", ops[k].name, form);
    mlx_array g = mlx_array_new(), c = mlx_array_new();
    CHECK_OK(ops[k].f(&g, xg, yg, gpu_stream));
    CHECK_OK(ops[k].f(&c, x, y, cpu));
    CHECK_OK(mlx_array_eval(c));
    check_cx(g, c, ops[k].rtol, ops[k].rtol ? 1e-30 : 0, what);
    mlx_array_free(g), mlx_array_free(c);
  }
}

/* z^w on the GPU against the CPU's cpowf: |got - want| within 1e-5 of
 * 1 + |want| (both round exp(w log z), the CPU through float steps), and
 * 0^w = 0 for Re w > 0. */
static void powers(mlx_array z, mlx_array w, mlx_array zg, mlx_array wg, const char *form) {
  mlx_array g = mlx_array_new(), c = mlx_array_new();
  CHECK_OK(mlx_power(&g, zg, wg, gpu_stream));
  CHECK_OK(mlx_power(&c, z, w, cpu));
  CHECK_OK(mlx_array_eval(g));
  CHECK_OK(mlx_array_eval(c));
  CHECK_MSG(made_on_gpu(g), "power, %s: the result went through the host", form);
  mlx_array parts[4] = {mlx_array_new(), mlx_array_new(), mlx_array_new(), mlx_array_new()};
  CHECK_OK(mlx_real(&parts[0], g, cpu));
  CHECK_OK(mlx_imag(&parts[1], g, cpu));
  CHECK_OK(mlx_real(&parts[2], c, cpu));
  CHECK_OK(mlx_imag(&parts[3], c, cpu));
  double *v[4];
  for (int i = 0; i < 4; i++) v[i] = test_values(parts[i]);
  size_t n = mlx_array_size(c), bad = 0, first = 0;
  for (size_t i = 0; v[0] && v[1] && v[2] && v[3] && i < n; i++) {
    double d = hypot(v[0][i] - v[2][i], v[1][i] - v[3][i]), m = hypot(v[2][i], v[3][i]);
    if (!(d <= 1e-5 * (1 + m)) && !bad++) first = i;
  }
  CHECK_MSG(bad == 0, "power, %s: %zu of %zu off, first %zu: %g%+gi vs %g%+gi", form, bad, n,
            first, v[0][first], v[1][first], v[2][first], v[3][first]);
  for (int i = 0; i < 4; i++) free(v[i]), mlx_array_free(parts[i]);
  mlx_array_free(g), mlx_array_free(c);
}

static void powers_of_zero(void) {
  mlx_array z = mlx_array_new_complex(0, 0), zg = on_gpu(z), w = mlx_array_new_complex(2, 0.5f),
            wg = on_gpu(w), g = mlx_array_new();
  CHECK_OK(mlx_power(&g, zg, wg, gpu_stream));
  mlx_array re = mlx_array_new(), im = mlx_array_new();
  CHECK_OK(mlx_real(&re, g, cpu));
  CHECK_OK(mlx_imag(&im, g, cpu));
  double *a = test_values(re), *b = test_values(im);
  CHECK_MSG(a && b && a[0] == 0 && b[0] == 0, "0^(2+0.5i) = %g%+gi, expected 0", a ? a[0] : -1,
            b ? b[0] : -1);
  free(a), free(b);
  mlx_array_free(z), mlx_array_free(zg), mlx_array_free(w), mlx_array_free(wg);
  mlx_array_free(g), mlx_array_free(re), mlx_array_free(im);
}

static void conversions_and_select(mlx_array x, mlx_array xg) {
  const mlx_dtype to[] = {MLX_FLOAT32, MLX_FLOAT64, MLX_FLOAT16, MLX_BFLOAT16, MLX_BOOL};
  for (size_t k = 0; k < sizeof to / sizeof *to; k++) {
    char what[64];
    snprintf(what, sizeof what, "astype complex -> %d", (int)to[k]);
    mlx_array g = mlx_array_new(), c = mlx_array_new(), back = mlx_array_new(),
              cback = mlx_array_new();
    CHECK_OK(mlx_astype(&g, xg, to[k], gpu_stream));
    CHECK_OK(mlx_astype(&c, x, to[k], cpu));
    CHECK_OK(mlx_array_eval(c));
    check_cx(g, c, 0, 0, what);
    snprintf(what, sizeof what, "astype %d -> complex", (int)to[k]);
    CHECK_OK(mlx_astype(&back, g, MLX_COMPLEX64, gpu_stream));
    CHECK_OK(mlx_astype(&cback, c, MLX_COMPLEX64, cpu));
    CHECK_OK(mlx_array_eval(cback));
    check_cx(back, cback, 0, 0, what);
    mlx_array_free(g), mlx_array_free(c), mlx_array_free(back), mlx_array_free(cback);
  }
  int sh[2] = {mlx_array_shape(x)[0], mlx_array_shape(x)[1]};
  mlx_array u = test_rand_f32(sh, 2, -1, 1), zero = mlx_array_new_float(0), m = mlx_array_new(),
            mg, y = mlx_array_new(), yg, g = mlx_array_new(), c = mlx_array_new();
  CHECK_OK(mlx_greater(&m, u, zero, cpu));
  CHECK_OK(mlx_array_eval(m));
  mg = on_gpu(m);
  CHECK_OK(mlx_conjugate(&y, x, cpu));
  CHECK_OK(mlx_array_eval(y));
  yg = on_gpu(y);
  CHECK_OK(mlx_where(&g, mg, xg, yg, gpu_stream));
  CHECK_OK(mlx_where(&c, m, x, y, cpu));
  CHECK_OK(mlx_array_eval(c));
  check_cx(g, c, 0, 0, "where");
  mlx_array_free(u), mlx_array_free(zero), mlx_array_free(m), mlx_array_free(mg);
  mlx_array_free(y), mlx_array_free(yg), mlx_array_free(g), mlx_array_free(c);
}

/* f(x, y) = exp(x * y + x) * conj(y) on the stream in payload */
static int cx_fun(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  mlx_stream st = *(const mlx_stream *)payload;
  mlx_array x = mlx_array_new(), y = mlx_array_new(), t[5];
  for (int i = 0; i < 5; i++) t[i] = mlx_array_new();
  int rc = mlx_vector_array_get(&x, in, 0) || mlx_vector_array_get(&y, in, 1) ||
           mlx_multiply(&t[0], x, y, st) || mlx_add(&t[1], t[0], x, st) ||
           mlx_exp(&t[2], t[1], st) || mlx_conjugate(&t[3], y, st) ||
           mlx_multiply(&t[4], t[2], t[3], st) || mlx_vector_array_set_value(res, t[4]);
  for (int i = 0; i < 5; i++) mlx_array_free(t[i]);
  mlx_array_free(x), mlx_array_free(y);
  return rc;
}

/* Compiled on the GPU, a complex region runs as separate GPU kernels (the
 * fused kernels have no complex values): on the GPU, as the CPU computes. */
static void compiled(mlx_array x, mlx_array y, mlx_array xg, mlx_array yg) {
  mlx_closure f = mlx_closure_new_func_payload(cx_fun, &gpu_stream, NULL), cf = mlx_closure_new(),
              fc = mlx_closure_new_func_payload(cx_fun, &cpu, NULL);
  CHECK_OK(mlx_compile(&cf, f, false));
  mlx_array gin[2] = {xg, yg}, cin[2] = {x, y};
  mlx_vector_array vg = mlx_vector_array_new_data(gin, 2), vc = mlx_vector_array_new_data(cin, 2);
  for (int rep = 0; rep < 2; rep++) {
    mlx_vector_array og = mlx_vector_array_new(), oc = mlx_vector_array_new();
    CHECK_OK(mlx_closure_apply(&og, cf, vg));
    CHECK_OK(mlx_closure_apply(&oc, fc, vc));
    mlx_array g = mlx_array_new(), c = mlx_array_new();
    CHECK_OK(mlx_vector_array_get(&g, og, 0));
    CHECK_OK(mlx_vector_array_get(&c, oc, 0));
    CHECK_OK(mlx_array_eval(c));
    check_cx(g, c, 1e-5, 1e-5, "compiled exp(x y + x) conj(y)");
    mlx_array_free(g), mlx_array_free(c);
    mlx_vector_array_free(og), mlx_vector_array_free(oc);
  }
  mlx_vector_array_free(vg), mlx_vector_array_free(vc);
  mlx_closure_free(f), mlx_closure_free(cf), mlx_closure_free(fc);
}

/* Special values: signed zeros, infinities, NaNs, large real parts and
 * points near the poles of tan/tanh and near |z| = 1, every pair of them
 * in the binary ops (zero divisors and products of infinities included). */
static void specials(void) {
  const float v[] = {0.0f, -0.0f, 1.0f, -2.5f, INFINITY, -INFINITY, NAN, 1000.0f, 1.5707964f,
                     1e-6f, 1e-30f, 3e38f};
  enum { NV = sizeof v / sizeof *v };
  float re[NV * NV], im[NV * NV];
  for (int i = 0; i < NV; i++)
    for (int j = 0; j < NV; j++) re[i * NV + j] = v[i], im[i * NV + j] = v[j];
  int sh[1] = {NV * NV};
  mlx_array z = mlx_array_new();
  /* z = re + i im from a (N, 2) float32 bitcast: no arithmetic on the specials */
  float both[2 * NV * NV];
  for (int k = 0; k < NV * NV; k++) both[2 * k] = re[k], both[2 * k + 1] = im[k];
  int sh2[2] = {NV * NV, 2};
  mlx_array pairs = mlx_array_new_data(both, sh2, 2, MLX_FLOAT32), zv = mlx_array_new();
  CHECK_OK(mlx_view(&zv, pairs, MLX_COMPLEX64, cpu));
  CHECK_OK(mlx_reshape(&z, zv, sh, 1, cpu));
  CHECK_OK(mlx_array_eval(z));
  mlx_array zg = on_gpu(z);
  /* every unary op on z; exact ones bitwise, others within rounding */
  static const struct { const char *name; un_fn f; bool exact; } ops[] = {
      {"negative", mlx_negative, 1}, {"conjugate", mlx_conjugate, 1}, {"abs", mlx_abs, 1},
      {"sign", mlx_sign, 1},         {"square", mlx_square, 1},      {"exp", mlx_exp, 0},
      {"log", mlx_log, 0},           {"sqrt", mlx_sqrt, 0},          {"sinh", mlx_sinh, 0},
      {"cosh", mlx_cosh, 0},         {"sin", mlx_sin, 0},            {"cos", mlx_cos, 0},
      {"tanh", mlx_tanh, 0},         {"tan", mlx_tan, 0}};
  for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
    char what[64];
    snprintf(what, sizeof what, "%s of special values", ops[k].name);
    mlx_array g = mlx_array_new(), c = mlx_array_new();
    CHECK_OK(ops[k].f(&g, zg, gpu_stream));
    CHECK_OK(ops[k].f(&c, z, cpu));
    CHECK_OK(mlx_array_eval(c));
    CHECK_OK(mlx_array_eval(g)); /* Annex G's special cases are claimed for the exact ops only */
    CHECK_MSG(made_on_gpu(g), "%s: the result went through the host", what);
    if (ops[k].exact) check_cx(g, c, 0, 0, what);
    mlx_array_free(g), mlx_array_free(c);
  }
  /* binary ops over all pairs: (N^2) x (N^2) by broadcasting */
  int sa[2] = {NV * NV, 1}, sb[2] = {1, NV * NV};
  mlx_array za = mlx_array_new(), zb = mlx_array_new(), zag = mlx_array_new(), zbg = mlx_array_new();
  CHECK_OK(mlx_reshape(&za, z, sa, 2, cpu));
  CHECK_OK(mlx_reshape(&zb, z, sb, 2, cpu));
  CHECK_OK(mlx_reshape(&zag, zg, sa, 2, gpu_stream));
  CHECK_OK(mlx_reshape(&zbg, zg, sb, 2, gpu_stream));
  binaries(za, zb, zag, zbg, "special values");
  mlx_array_free(za), mlx_array_free(zb), mlx_array_free(zag), mlx_array_free(zbg);
  /* integers to complex */
  const mlx_dtype ints[] = {MLX_INT8, MLX_INT32, MLX_INT64, MLX_UINT16, MLX_UINT64, MLX_BOOL};
  int si[1] = {257};
  mlx_array f = test_rand_f32(si, 1, -3e9, 3e9);
  for (size_t k = 0; k < sizeof ints / sizeof *ints; k++) {
    mlx_array n = mlx_array_new(), ng, g = mlx_array_new(), c = mlx_array_new();
    CHECK_OK(mlx_astype(&n, f, ints[k], cpu));
    CHECK_OK(mlx_array_eval(n));
    ng = on_gpu(n);
    CHECK_OK(mlx_astype(&g, ng, MLX_COMPLEX64, gpu_stream));
    CHECK_OK(mlx_astype(&c, n, MLX_COMPLEX64, cpu));
    CHECK_OK(mlx_array_eval(c));
    char what[64];
    snprintf(what, sizeof what, "astype %d -> complex", (int)ints[k]);
    check_cx(g, c, 0, 0, what);
    mlx_array_free(n), mlx_array_free(ng), mlx_array_free(g), mlx_array_free(c);
  }
  mlx_array_free(f);
  mlx_array_free(z), mlx_array_free(pairs);
  mlx_array_free(zv), mlx_array_free(zg);
}

int main(void) {
  unsetenv("LACE_CUDA_COMPLEX"); /* the default: complex kernels on */
  if (!gpu_test_init()) return TEST_SKIP;
  cpu = mlx_default_cpu_stream_new();
  size_t base = test_active_memory();
  mlx_array x = rand_cx(37, 129, -2, 2), y = rand_cx(37, 129, -2, 2), row = rand_cx(1, 129, -2, 2);
  mlx_array xg = on_gpu(x), yg = on_gpu(y), rg = on_gpu(row);
  /* parts within (-1, 1): no poles of tan and tanh (at pi/2) */
  mlx_array u = rand_cx(37, 129, -1, 1), ug = on_gpu(u), s = rand_cx(37, 129, -0.5, 0.5),
            sg = on_gpu(s), s2 = rand_cx(37, 129, -0.5, 0.5), s2g = on_gpu(s2);
  unaries(u, ug);
  binaries(x, y, xg, yg, "contiguous");
  binaries(x, row, xg, rg, "broadcast row");
  binaries(x, x, xg, xg, "same operand");
  mlx_array xt = mlx_array_new(), xtg = mlx_array_new(), ys = rand_cx(129, 37, -2, 2),
            ysg = on_gpu(ys);
  CHECK_OK(mlx_transpose(&xt, x, cpu));
  CHECK_OK(mlx_transpose(&xtg, xg, gpu_stream));
  binaries(xt, ys, xtg, ysg, "transposed");
  mlx_array ut = mlx_array_new(), utg = mlx_array_new();
  CHECK_OK(mlx_transpose(&ut, u, cpu));
  CHECK_OK(mlx_transpose(&utg, ug, gpu_stream));
  unaries(ut, utg);
  powers(u, s, ug, sg, "contiguous");
  powers(x, row, xg, rg, "broadcast row");
  powers(xt, ys, xtg, ysg, "transposed");
  powers_of_zero();
  conversions_and_select(x, xg);
  compiled(s, s2, sg, s2g);
  specials();
  mlx_array_free(u), mlx_array_free(ug), mlx_array_free(s), mlx_array_free(sg);
  mlx_array_free(s2), mlx_array_free(s2g), mlx_array_free(ut), mlx_array_free(utg);
  mlx_array_free(x), mlx_array_free(y), mlx_array_free(row), mlx_array_free(xg);
  mlx_array_free(yg), mlx_array_free(rg), mlx_array_free(xt), mlx_array_free(xtg);
  mlx_array_free(ys), mlx_array_free(ysg);
  mlx_clear_cache();
  CHECK_MSG(test_active_memory() == base, "active memory %zu, was %zu", test_active_memory(),
            base);
  mlx_stream_free(cpu);
  return test_done();
}
