/* Elementwise ops beyond the numpy fixtures: complex64, view (bitcast),
 * copy, stop_gradient, divmod, MLX-specific integer rules, errors, large
 * (thread-pool) inputs with non-contiguous views, in-place buffer reuse,
 * and memory returning to baseline. */
#include <complex.h>

#include "test.h"

static mlx_stream S(void) { return test_stream(); }

/* ---- complex64 ---- */

static mlx_array cx_array(const double complex *v, int n) {
  float buf[64];
  for (int i = 0; i < n; i++) {
    buf[2 * i] = (float)creal(v[i]);
    buf[2 * i + 1] = (float)cimag(v[i]);
  }
  return mlx_array_new_data(buf, &n, 1, MLX_COMPLEX64);
}

/* r (complex64) against ref, |r - ref| <= tol * (1 + |ref|). */
static void check_cx(mlx_array r, const double complex *ref, int n, double tol, const char *what) {
  CHECK_MSG(mlx_array_dtype(r) == MLX_COMPLEX64, "%s: dtype %d", what, (int)mlx_array_dtype(r));
  if (mlx_array_dtype(r) != MLX_COMPLEX64 || mlx_array_eval(r)) return;
  const mlx_complex64_t *p = mlx_array_data_complex64(r);
  for (int i = 0; i < n; i++) {
    double complex v = crealf(p[i]) + I * cimagf(p[i]);
    CHECK_MSG(cabs(v - ref[i]) <= tol * (1 + cabs(ref[i])), "%s[%d]: (%g, %g), want (%g, %g)",
              what, i, creal(v), cimag(v), creal(ref[i]), cimag(ref[i]));
  }
}

static void test_complex(void) {
  enum { N = 5 };
  double complex a[N] = {1 + 2 * I, -0.5 + 0.25 * I, 3, -2 * I, 0.75 - 1.5 * I};
  double complex b[N] = {0.5 - I, 2 + 2 * I, -1 + 0.5 * I, 1.5, -0.25 + 0.125 * I};
  mlx_array x = cx_array(a, N), y = cx_array(b, N), r = mlx_array_new();
  double complex ref[N];
  const double tol = 1e-6;
#define BIN(fn, expr)                                        \
  do {                                                       \
    CHECK_OK(fn(&r, x, y, S()));                             \
    for (int i = 0; i < N; i++) ref[i] = (expr);             \
    check_cx(r, ref, N, tol, #fn);                           \
  } while (0)
#define UN(fn, expr)                                         \
  do {                                                       \
    CHECK_OK(fn(&r, x, S()));                                \
    for (int i = 0; i < N; i++) ref[i] = (expr);             \
    check_cx(r, ref, N, tol, #fn);                           \
  } while (0)
  BIN(mlx_add, a[i] + b[i]);
  BIN(mlx_subtract, a[i] - b[i]);
  BIN(mlx_multiply, a[i] * b[i]);
  BIN(mlx_divide, a[i] / b[i]);
  BIN(mlx_power, cpow(a[i], b[i]));
  UN(mlx_negative, -a[i]);
  UN(mlx_square, a[i] * a[i]);
  UN(mlx_exp, cexp(a[i]));
  UN(mlx_sqrt, csqrt(a[i]));
  UN(mlx_log, clog(a[i]));
  UN(mlx_sin, csin(a[i]));
  UN(mlx_cos, ccos(a[i]));
  UN(mlx_tanh, ctanh(a[i]));
  UN(mlx_conjugate, conj(a[i]));
  UN(mlx_sign, a[i] / cabs(a[i]));
  double fr[N];
  CHECK_OK(mlx_abs(&r, x, S()));
  CHECK(mlx_array_dtype(r) == MLX_FLOAT32);
  for (int i = 0; i < N; i++) fr[i] = cabs(a[i]);
  CHECK_CLOSE(r, fr, N, 1e-6, 0);
  CHECK_OK(mlx_real(&r, x, S()));
  CHECK(mlx_array_dtype(r) == MLX_FLOAT32);
  for (int i = 0; i < N; i++) fr[i] = creal(a[i]);
  CHECK_CLOSE(r, fr, N, 0, 0);
  CHECK_OK(mlx_imag(&r, x, S()));
  for (int i = 0; i < N; i++) fr[i] = cimag(a[i]);
  CHECK_CLOSE(r, fr, N, 0, 0);
  CHECK_OK(mlx_equal(&r, x, x, S()));
  CHECK(mlx_array_dtype(r) == MLX_BOOL);
  double ones[N] = {1, 1, 1, 1, 1}, zeros[N] = {0};
  CHECK_CLOSE(r, ones, N, 0, 0);
  CHECK_OK(mlx_not_equal(&r, x, y, S()));
  CHECK_CLOSE(r, ones, N, 0, 0);
  CHECK_OK(mlx_isnan(&r, x, S()));
  CHECK_CLOSE(r, zeros, N, 0, 0);
  CHECK_OK(mlx_isfinite(&r, x, S()));
  CHECK_CLOSE(r, ones, N, 0, 0);
  /* float32 + complex64 promotes to complex64 */
  mlx_array f = mlx_array_new_float(2.0f);
  CHECK_OK(mlx_multiply(&r, f, x, S()));
  for (int i = 0; i < N; i++) ref[i] = 2 * a[i];
  check_cx(r, ref, N, tol, "float32 * complex64");
  /* real input: conjugate/real are identity, imag is zeros */
  CHECK_OK(mlx_imag(&r, f, S()));
  CHECK(mlx_array_dtype(r) == MLX_FLOAT32);
  CHECK_CLOSE(r, zeros, 1, 0, 0);
  /* unsupported ops say so */
  CHECK_FAILS(mlx_maximum(&r, x, y, S()), "complex64");
  CHECK_FAILS(mlx_less(&r, x, y, S()), "complex64");
  CHECK_FAILS(mlx_remainder(&r, x, y, S()), "complex64");
  CHECK_FAILS(mlx_floor(&r, x, S()), "complex64");
  CHECK_FAILS(mlx_sigmoid(&r, x, S()), "complex64");
  CHECK_FAILS(mlx_erf(&r, x, S()), "complex64");
  CHECK_FAILS(mlx_arctan2(&r, x, y, S()), "complex64");
  mlx_vector_array v = mlx_vector_array_new();
  CHECK_FAILS(mlx_divmod(&v, x, y, S()), "complex64");
  mlx_vector_array_free(v);
  mlx_array_free(f);
  mlx_array_free(x);
  mlx_array_free(y);
  mlx_array_free(r);
}

/* ---- view, copy, stop_gradient ---- */

static void test_view_copy(void) {
  float v[6] = {1.0f, -2.0f, 0.5f, 3.25f, -0.0f, 1e-3f};
  int shape[2] = {2, 3};
  mlx_array x = mlx_array_new_data(v, shape, 2, MLX_FLOAT32), r = mlx_array_new();
  CHECK_OK(mlx_view(&r, x, MLX_INT32, S()));
  CHECK_SHAPE(r, 2, 3);
  CHECK_OK(mlx_array_eval(r));
  const int32_t *iv = mlx_array_data_int32(r);
  for (int i = 0; i < 6; i++) {
    int32_t want;
    memcpy(&want, &v[i], 4);
    CHECK(iv && iv[i] == want);
  }
  /* smaller dtype: last axis grows; larger: shrinks */
  CHECK_OK(mlx_view(&r, x, MLX_UINT16, S()));
  CHECK_SHAPE(r, 2, 6);
  CHECK_OK(mlx_array_eval(r));
  const uint16_t *hv = mlx_array_data_uint16(r);
  uint16_t want16[12];
  memcpy(want16, v, sizeof v);
  CHECK(hv && !memcmp(hv, want16, sizeof want16));
  mlx_array t = mlx_array_new(), w = mlx_array_new();
  /* a transposed (non-contiguous) input is viewed through a copy */
  CHECK_OK(mlx_transpose(&t, x, S()));
  CHECK_OK(mlx_view(&w, t, MLX_UINT32, S()));
  CHECK_SHAPE(w, 3, 2);
  CHECK_OK(mlx_array_eval(w));
  const uint32_t *uv = mlx_array_data_uint32(w);
  float tv[6] = {v[0], v[3], v[1], v[4], v[2], v[5]};
  uint32_t want32[6];
  memcpy(want32, tv, sizeof tv);
  CHECK(uv && !memcmp(uv, want32, sizeof want32));
  CHECK_FAILS(mlx_view(&r, x, MLX_FLOAT64, S()), "multiple");
  mlx_array sc = mlx_array_new_float(1.0f);
  CHECK_FAILS(mlx_view(&r, sc, MLX_FLOAT64, S()), "scalar");
  CHECK_OK(mlx_view(&r, sc, MLX_UINT32, S()));
  uint32_t one_bits = 0;
  CHECK_OK(mlx_array_item_uint32(&one_bits, r));
  CHECK(one_bits == 0x3f800000u);
  CHECK_FAILS(mlx_view(&r, x, (mlx_dtype)99, S()), "invalid dtype");
  /* copy and stop_gradient keep values and dtype; copy of a view is contiguous data */
  CHECK_OK(mlx_copy(&r, t, S()));
  CHECK_SHAPE(r, 3, 2);
  CHECK_CLOSE(r, ((double[]){1, 3.25, -2, -0.0, 0.5, 1e-3f}), 6, 0, 0);
  CHECK_OK(mlx_stop_gradient(&r, t, S()));
  CHECK(mlx_array_dtype(r) == MLX_FLOAT32);
  CHECK_CLOSE(r, ((double[]){1, 3.25, -2, -0.0, 0.5, 1e-3f}), 6, 0, 0);
  mlx_array_free(sc);
  mlx_array_free(t);
  mlx_array_free(w);
  mlx_array_free(x);
  mlx_array_free(r);
}

/* ---- integer rules and divmod ---- */

static void test_integer_rules(void) {
  int n = 6;
  int32_t base[6] = {2, -3, 1, -1, 0, 7}, ex[6] = {-1, 3, -5, 2, 0, 2};
  mlx_array a = mlx_array_new_data(base, &n, 1, MLX_INT32), b = mlx_array_new_data(ex, &n, 1, MLX_INT32);
  mlx_array r = mlx_array_new();
  /* MLX: negative integer exponents give 0 */
  CHECK_OK(mlx_power(&r, a, b, S()));
  CHECK(mlx_array_dtype(r) == MLX_INT32);
  CHECK_CLOSE(r, ((double[]){0, -27, 0, 1, 1, 49}), 6, 0, 0);
  /* negative shift counts shift everything out */
  CHECK_OK(mlx_left_shift(&r, a, b, S()));
  CHECK_CLOSE(r, ((double[]){0, -24, 0, -4, 0, 28}), 6, 0, 0);
  CHECK_OK(mlx_right_shift(&r, a, b, S()));
  CHECK_CLOSE(r, ((double[]){0, -1, 0, -1, 0, 1}), 6, 0, 0);
  /* shifts of bool compute in uint8 */
  mlx_array t = mlx_array_new_bool(true);
  CHECK_OK(mlx_left_shift(&r, t, t, S()));
  CHECK(mlx_array_dtype(r) == MLX_UINT8);
  CHECK_CLOSE(r, ((double[]){2}), 1, 0, 0);
  /* float divmod: (floor(a / b), a - b * q with b's sign) */
  float fa[4] = {7.5f, -7.5f, 7.5f, -1.0f}, fb[4] = {2.0f, 2.0f, -2.0f, 0.25f};
  int four = 4;
  mlx_array x = mlx_array_new_data(fa, &four, 1, MLX_FLOAT32), y = mlx_array_new_data(fb, &four, 1, MLX_FLOAT32);
  mlx_vector_array qr = mlx_vector_array_new();
  CHECK_OK(mlx_divmod(&qr, x, y, S()));
  mlx_array q = mlx_array_new(), m = mlx_array_new();
  CHECK_OK(mlx_vector_array_get(&q, qr, 0));
  CHECK_OK(mlx_vector_array_get(&m, qr, 1));
  CHECK(mlx_array_dtype(q) == MLX_FLOAT32 && mlx_array_dtype(m) == MLX_FLOAT32);
  CHECK_CLOSE(q, ((double[]){3, -4, -4, -4}), 4, 0, 0);
  CHECK_CLOSE(m, ((double[]){1.5, 0.5, -0.5, 0}), 4, 0, 0);
  /* divmod broadcasts and promotes (int32 with float32 -> float32) */
  mlx_array two = mlx_array_new_float(2.0f);
  CHECK_OK(mlx_divmod(&qr, a, two, S()));
  CHECK_OK(mlx_vector_array_get(&q, qr, 0));
  CHECK(mlx_array_dtype(q) == MLX_FLOAT32);
  CHECK_CLOSE(q, ((double[]){1, -2, 0, -1, 0, 3}), 6, 0, 0);
  CHECK_OK(mlx_vector_array_get(&m, qr, 1));
  CHECK_CLOSE(m, ((double[]){0, 1, 1, 1, 0, 1}), 6, 0, 0);
  mlx_array_free(two);
  CHECK_FAILS(mlx_divmod(&qr, a, x, S()), "cannot be broadcast");
  /* unsigned abs/sign and bool arithmetic */
  uint8_t u[3] = {0, 7, 255};
  int three = 3;
  mlx_array uu = mlx_array_new_data(u, &three, 1, MLX_UINT8);
  CHECK_OK(mlx_abs(&r, uu, S()));
  CHECK_CLOSE(r, ((double[]){0, 7, 255}), 3, 0, 0);
  CHECK_OK(mlx_sign(&r, uu, S()));
  CHECK_CLOSE(r, ((double[]){0, 1, 1}), 3, 0, 0);
  CHECK_OK(mlx_negative(&r, uu, S()));
  CHECK_CLOSE(r, ((double[]){0, 249, 1}), 3, 0, 0);
  mlx_array_free(uu);
  mlx_array_free(q);
  mlx_array_free(m);
  mlx_vector_array_free(qr);
  mlx_array_free(x);
  mlx_array_free(y);
  mlx_array_free(t);
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(r);
}

/* ---- promotion ---- */

static int lc_is_inexact_test(mlx_dtype t) {
  return t == MLX_FLOAT16 || t == MLX_FLOAT32 || t == MLX_FLOAT64 || t == MLX_BFLOAT16 ||
         t == MLX_COMPLEX64;
}

static void test_promotion(void) {
  struct {
    mlx_dtype a, b, want;
  } cases[] = {
      {MLX_UINT64, MLX_INT8, MLX_FLOAT32},   {MLX_FLOAT16, MLX_BFLOAT16, MLX_FLOAT32},
      {MLX_INT64, MLX_FLOAT16, MLX_FLOAT16}, {MLX_BOOL, MLX_BOOL, MLX_BOOL},
      {MLX_UINT8, MLX_INT8, MLX_INT16},      {MLX_UINT32, MLX_INT32, MLX_INT64},
      {MLX_BFLOAT16, MLX_INT64, MLX_BFLOAT16}, {MLX_FLOAT64, MLX_COMPLEX64, MLX_COMPLEX64},
      {MLX_UINT16, MLX_INT8, MLX_INT32},     {MLX_BOOL, MLX_INT8, MLX_INT8},
  };
  mlx_array one = mlx_array_new_int(1), r = mlx_array_new();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mlx_array x = mlx_array_new(), y = mlx_array_new();
    mlx_astype(&x, one, cases[i].a, S());
    mlx_astype(&y, one, cases[i].b, S());
    CHECK_OK(mlx_add(&r, x, y, S()));
    CHECK_MSG(mlx_array_dtype(r) == cases[i].want, "add(%d, %d) gave %d, want %d", (int)cases[i].a,
              (int)cases[i].b, (int)mlx_array_dtype(r), (int)cases[i].want);
    CHECK_OK(mlx_add(&r, y, x, S()));
    CHECK(mlx_array_dtype(r) == cases[i].want);
    /* divide: at least float32 */
    CHECK_OK(mlx_divide(&r, x, y, S()));
    CHECK(mlx_array_dtype(r) == (lc_is_inexact_test(cases[i].want) ? cases[i].want : MLX_FLOAT32));
    mlx_array_free(x);
    mlx_array_free(y);
  }
  mlx_array_free(one);
  mlx_array_free(r);
}

/* ---- allclose, array_equal ---- */

static bool item_bool(mlx_array r) {
  bool v = false;
  CHECK(mlx_array_ndim(r) == 0 && mlx_array_dtype(r) == MLX_BOOL);
  CHECK_OK(mlx_array_item_bool(&v, r));
  return v;
}

static void test_allclose(void) {
  float av[6] = {1, 2, NAN, INFINITY, -5, 0}, bv[6] = {1.001f, 2, NAN, INFINITY, -5, 1e-9f};
  int s23[2] = {2, 3}, s3[1] = {3}, s6[1] = {6};
  mlx_array a = mlx_array_new_data(av, s23, 2, MLX_FLOAT32), b = mlx_array_new_data(bv, s23, 2, MLX_FLOAT32);
  mlx_array r = mlx_array_new();
  CHECK_OK(mlx_allclose(&r, a, b, 1e-2, 1e-8, true, S()));
  CHECK(item_bool(r));
  CHECK_OK(mlx_allclose(&r, a, b, 1e-2, 1e-8, false, S())); /* NaN != NaN */
  CHECK(!item_bool(r));
  CHECK_OK(mlx_allclose(&r, a, b, 1e-5, 1e-8, true, S())); /* 1 vs 1.001 */
  CHECK(!item_bool(r));
  CHECK_OK(mlx_array_equal(&r, a, a, true, S()));
  CHECK(item_bool(r));
  CHECK_OK(mlx_array_equal(&r, a, a, false, S()));
  CHECK(!item_bool(r));
  CHECK_OK(mlx_array_equal(&r, a, b, true, S()));
  CHECK(!item_bool(r));
  /* different shapes: false, not an error */
  mlx_array c = mlx_array_new_data(av, s6, 1, MLX_FLOAT32);
  CHECK_OK(mlx_array_equal(&r, a, c, true, S()));
  CHECK(!item_bool(r));
  /* different dtypes compare values; a transposed view equals its copy */
  int32_t iv[6] = {1, 2, 3, 4, 5, 6};
  float fv[6] = {1, 2, 3, 4, 5, 6};
  mlx_array i = mlx_array_new_data(iv, s23, 2, MLX_INT32), f = mlx_array_new_data(fv, s23, 2, MLX_FLOAT32);
  CHECK_OK(mlx_array_equal(&r, i, f, false, S()));
  CHECK(item_bool(r));
  mlx_array t = mlx_array_new(), tc = mlx_array_new();
  CHECK_OK(mlx_transpose(&t, i, S()));
  CHECK_OK(mlx_copy(&tc, t, S()));
  CHECK_OK(mlx_array_equal(&r, t, tc, false, S()));
  CHECK(item_bool(r));
  /* allclose broadcasts */
  mlx_array row = mlx_array_new_data(fv, s3, 1, MLX_FLOAT32), two = mlx_array_new_data(fv, s23, 2, MLX_FLOAT32);
  CHECK_OK(mlx_allclose(&r, two, row, 1e-5, 1e-8, false, S()));
  CHECK(!item_bool(r));
  CHECK_FAILS(mlx_allclose(&r, a, c, 1e-5, 1e-8, false, S()), "cannot be broadcast");
  CHECK_FAILS(mlx_array_equal(&r, a, (mlx_array){NULL}, false, S()), "empty");
  mlx_array_free(row);
  mlx_array_free(two);
  mlx_array_free(t);
  mlx_array_free(tc);
  mlx_array_free(i);
  mlx_array_free(f);
  mlx_array_free(c);
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(r);
}

/* ---- fp8 ---- */

static void test_fp8(void) {
  uint8_t codes[256];
  double want[256];
  for (int c = 0; c < 256; c++) {
    codes[c] = (uint8_t)c;
    int e = (c >> 3) & 15, m = c & 7;
    double v = e ? ldexp(1.0 + m / 8.0, e - 7) : ldexp(m, -9);
    want[c] = (c & 0x80) ? -v : v;
  }
  int n = 256;
  mlx_array u = mlx_array_new_data(codes, &n, 1, MLX_UINT8), f = mlx_array_new(), back = mlx_array_new();
  CHECK_OK(mlx_from_fp8(&f, u, MLX_FLOAT32, S()));
  CHECK(mlx_array_dtype(f) == MLX_FLOAT32);
  CHECK_CLOSE(f, want, 256, 0, 0);
  CHECK_OK(mlx_to_fp8(&back, f, S()));
  CHECK(mlx_array_dtype(back) == MLX_UINT8);
  double codes_back[256];
  for (int c = 0; c < 256; c++) codes_back[c] = (c & 0x7f) == 0x7f ? (c | 0x7e) & 0xfe : c;
  CHECK_CLOSE(back, codes_back, 256, 0, 0);
  mlx_array h = mlx_array_new();
  CHECK_OK(mlx_from_fp8(&h, u, MLX_BFLOAT16, S()));
  CHECK_CLOSE(h, want, 256, 0, 0);
  float special[10] = {1.0625f, 1.1875f, 500.0f, NAN, -INFINITY, 0x1p-10f, 3 * 0x1p-10f, -0.0f,
                       448.0f, 0.0155f};
  double sc[10] = {0x38, 0x3a, 0x7e, 0x7e, 0xfe, 0x00, 0x02, 0x80, 0x7e, 0x08};
  int ten = 10;
  mlx_array x = mlx_array_new_data(special, &ten, 1, MLX_FLOAT32);
  CHECK_OK(mlx_to_fp8(&back, x, S()));
  CHECK_CLOSE(back, sc, 10, 0, 0);
  CHECK_FAILS(mlx_to_fp8(&back, u, S()), "floating");
  CHECK_FAILS(mlx_from_fp8(&back, x, MLX_FLOAT32, S()), "uint8");
  CHECK_FAILS(mlx_from_fp8(&back, u, MLX_INT32, S()), "floating");
  mlx_array_free(x);
  mlx_array_free(h);
  mlx_array_free(u);
  mlx_array_free(f);
  mlx_array_free(back);
}

/* ---- errors ---- */

static void test_errors(void) {
  float v[6] = {1, 2, 3, 4, 5, 6};
  int s23[2] = {2, 3}, s2[1] = {2};
  mlx_array x = mlx_array_new_data(v, s23, 2, MLX_FLOAT32), y = mlx_array_new_data(v, s2, 1, MLX_FLOAT32);
  mlx_array e = {NULL}, r = mlx_array_new();
  CHECK_FAILS(mlx_exp(&r, e, S()), "mlx_exp: argument 'a' is an empty array");
  CHECK_FAILS(mlx_subtract(&r, x, e, S()), "mlx_subtract");
  CHECK_FAILS(mlx_where(&r, e, x, x, S()), "condition");
  CHECK_FAILS(mlx_sqrt(NULL, x, S()), "NULL");
  CHECK_FAILS(mlx_greater(&r, x, y, S()), "cannot be broadcast");
  CHECK_FAILS(mlx_isclose(&r, x, y, 1e-5, 1e-8, false, S()), "cannot be broadcast");
  CHECK_FAILS(mlx_left_shift(&r, x, x, S()), "only allowed on integer");
  CHECK_FAILS(mlx_bitwise_xor(&r, x, x, S()), "only allowed on integer");
  CHECK_FAILS(mlx_clip(&r, x, e, e, S()), "a_min and a_max");
  mlx_array b = mlx_array_new_bool(true);
  CHECK_FAILS(mlx_negative(&r, b, S()), "logical_not");
  CHECK_FAILS(mlx_astype(&r, x, (mlx_dtype)42, S()), "invalid dtype");
  CHECK_FAILS(mlx_round(&r, x, 1000, S()), "decimals");
  /* the result handle is untouched by a failure */
  CHECK_OK(mlx_add(&r, x, x, S()));
  CHECK_FAILS(mlx_add(&r, x, y, S()), "broadcast");
  CHECK_SHAPE(r, 2, 3);
  mlx_array_free(b);
  mlx_array_free(x);
  mlx_array_free(y);
  mlx_array_free(r);
}

/* ---- large inputs: thread pool, strided views, in-place reuse ---- */

static void test_large(void) {
  int shape[2] = {600, 700};
  size_t n = 600 * 700;
  mlx_array x = test_rand_f32(shape, 2, -3, 3), t = mlx_array_new(), r = mlx_array_new();
  CHECK_OK(mlx_transpose(&t, x, S()));
  /* r = tanh(x^T) * x^T + exp(-x^T): non-contiguous inputs, big enough to split */
  mlx_array th = mlx_array_new(), p = mlx_array_new(), ng = mlx_array_new(), ex = mlx_array_new();
  CHECK_OK(mlx_tanh(&th, t, S()));
  CHECK_OK(mlx_multiply(&p, th, t, S()));
  CHECK_OK(mlx_negative(&ng, t, S()));
  CHECK_OK(mlx_exp(&ex, ng, S()));
  CHECK_OK(mlx_add(&r, p, ex, S()));
  mlx_array_free(th);
  mlx_array_free(p);
  mlx_array_free(ng);
  mlx_array_free(ex);
  CHECK_OK(mlx_array_eval(x));
  const float *xv = mlx_array_data_float32(x);
  double *ref = malloc(sizeof(double) * n);
  for (int i = 0; i < 700; i++)
    for (int j = 0; j < 600; j++) {
      double v = xv[(size_t)j * 700 + (size_t)i];
      ref[(size_t)i * 600 + (size_t)j] = tanh(v) * v + exp(-v);
    }
  CHECK_SHAPE(r, 700, 600);
  CHECK_CLOSE(r, ref, n, 2e-6, 1e-6);
  /* maximum against a broadcast row, and where with a broadcast condition */
  int rs[1] = {700};
  mlx_array row = test_rand_f32(rs, 1, -1, 1), m = mlx_array_new(), c = mlx_array_new();
  CHECK_OK(mlx_maximum(&m, x, row, S()));
  CHECK_OK(mlx_greater(&c, row, x, S()));
  mlx_array w = mlx_array_new();
  CHECK_OK(mlx_where(&w, c, row, x, S()));
  CHECK_OK(mlx_array_eval(row));
  const float *rv = mlx_array_data_float32(row);
  for (size_t i = 0; i < n; i++) ref[i] = fmax(xv[i], rv[i % 700]);
  CHECK_CLOSE(m, ref, n, 0, 0);
  CHECK_CLOSE(w, ref, n, 0, 0);
  free(ref);
  mlx_array_free(row);
  mlx_array_free(m);
  mlx_array_free(c);
  mlx_array_free(w);
  mlx_array_free(x);
  mlx_array_free(t);
  mlx_array_free(r);
}

int main(void) {
  test_init();
  size_t before = test_active_memory();
  test_complex();
  test_view_copy();
  test_integer_rules();
  test_promotion();
  test_errors();
  test_allclose();
  test_fp8();
  test_large();
  CHECK_MSG(test_active_memory() == before, "active memory %zu, was %zu", test_active_memory(),
            before);
  return test_done();
}
