/* Accuracy of the vectorisable float32 functions (src/ops/vmath.h) over a
 * sweep of float32 bit patterns (every sign and exponent), against double
 * libm, in units in the last place of the float32 result; special values.
 * Also checks that mlx_exp/tanh/sigmoid/erf/log on float32 agree with them
 * through strided, broadcast and contiguous inputs. */
#include "test.h"

#include "core/half.h"
#include "ops/ew_loops.h"
#include "ops/vmath.h"

static double ulp_err(float r, double ref) {
  if (isnan(ref)) return isnan(r) ? 0 : INFINITY;
  float rf = (float)ref;
  if (isinf(rf)) return (isinf(r) && (r > 0) == (rf > 0)) || fabs((double)r) >= 3.4028e38 ? 0 : INFINITY;
  double u = fabs((double)nextafterf(rf, INFINITY) - rf);
  if (u == 0) u = 1.4e-45;
  return fabs((double)r - ref) / u;
}

static double sigmoid_ref(double x) { return 1.0 / (1.0 + exp(-x)); }

static void test_sweep(void) {
  static const struct {
    const char *name;
    float (*f)(float);
    double (*ref)(double);
    double max_ulp;
  } fns[] = {
      {"exp", lc_vexpf, exp, 1.0},       {"log", lc_vlogf, log, 1.0},
      {"tanh", lc_vtanhf, tanh, 2.0},    {"sigmoid", lc_vsigmoidf, sigmoid_ref, 3.0},
      {"erf", lc_verff, erf, 2.5},       {"sin", lc_vsinf, sin, 2.0},
      {"cos", lc_vcosf, cos, 2.0},
  };
  for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++) {
    double worst = 0;
    float at = 0;
    /* an odd stride visits every exponent and many mantissas of both signs */
    for (uint64_t u = 0; u < (1ull << 32); u += 1021) {
      uint32_t b = (uint32_t)u;
      float x;
      memcpy(&x, &b, 4);
      if (k >= 5 && !(fabsf(x) < LC_VTRIG_MAX)) continue; /* sin/cos: libm beyond */
      double e = ulp_err(fns[k].f(x), fns[k].ref((double)x));
      if (e > worst) {
        worst = e;
        at = x;
      }
    }
    CHECK_MSG(worst <= fns[k].max_ulp, "%s: %.3f ulp at %.9g", fns[k].name, worst, at);
  }
}

/* lc_vexp (double) against long double expl over its whole range. */
static void test_exp64(void) {
  double worst = 0, at = 0;
  for (int i = 0; i < 2000000; i++) {
    double x = -745.2 + 1455.0 * (double)i / 2000000.0 + 1e-7 * (i % 7);
    if (i % 3 == 0) x = x / 745.0 * 1e-3;
    long double ref = expl((long double)x);
    double rf = (double)ref;
    if (rf == 0 || isinf(rf) || rf < 2.3e-308) continue; /* subnormal results: absolute */
    double u = nextafter(rf, INFINITY) - rf;
    double e = (double)fabsl((long double)lc_vexp(x) - ref) / u;
    if (e > worst) worst = e, at = x;
  }
  CHECK_MSG(worst <= 1.1, "exp (double): %.3f ulp at %.17g", worst, at);
  CHECK(lc_vexp(-INFINITY) == 0 && lc_vexp(INFINITY) == INFINITY && isnan(lc_vexp(NAN)));
  CHECK(lc_vexp(709.78) < INFINITY && lc_vexp(709.79) == INFINITY && lc_vexp(-745.0) > 0);
  CHECK(lc_vexp(-746.0) == 0 && lc_vexp(0) == 1);
}

static void test_specials(void) {
  CHECK(lc_vexpf(-INFINITY) == 0 && lc_vexpf(INFINITY) == INFINITY && isnan(lc_vexpf(NAN)));
  CHECK(lc_vexpf(0) == 1 && lc_vexpf(89.0f) == INFINITY && lc_vexpf(-110.0f) == 0);
  CHECK(lc_vexpf(-103.5f) > 0); /* subnormal result */
  CHECK(lc_vlogf(0) == -INFINITY && lc_vlogf(-0.0f) == -INFINITY && isnan(lc_vlogf(-1)));
  CHECK(lc_vlogf(INFINITY) == INFINITY && isnan(lc_vlogf(NAN)) && lc_vlogf(1) == 0);
  CHECK(fabsf(lc_vlogf(1.4e-45f) - (float)log((double)1.4e-45f)) < 1e-5f);
  CHECK(lc_vtanhf(INFINITY) == 1 && lc_vtanhf(-INFINITY) == -1 && isnan(lc_vtanhf(NAN)));
  CHECK(signbit(lc_vtanhf(-0.0f)));
  CHECK(lc_vsigmoidf(INFINITY) == 1 && lc_vsigmoidf(-INFINITY) == 0 && isnan(lc_vsigmoidf(NAN)));
  CHECK(lc_vsigmoidf(-100.0f) > 0); /* no underflow to 0 before it must */
  CHECK(lc_verff(INFINITY) == 1 && lc_verff(-INFINITY) == -1 && isnan(lc_verff(NAN)));
  CHECK(lc_verff(0) == 0 && signbit(lc_verff(-0.0f)));
  /* the clamp at 4 and both sides of the branch split at 0.75 */
  CHECK(lc_verff(4.0f) == 1 && lc_verff(-4.0f) == -1 && lc_verff(3e38f) == 1);
  CHECK(lc_verff(nextafterf(4.0f, 0)) == 1 && lc_verff(3.9f) == 1);
  for (float x = 0.74f; x < 0.76f; x = nextafterf(x, 1)) {
    float r = lc_verff(x);
    double ref = erf((double)x);
    if (fabs((double)r - ref) > 2.5 * 5.96e-8) {
      CHECK_MSG(0, "erf(%.9g) = %.9g, want %.9g", x, r, ref);
      break;
    }
  }
  float worst = 0;
  for (uint64_t u = 0; u < (1ull << 32); u += 997) {
    uint32_t b = (uint32_t)u;
    float x;
    memcpy(&x, &b, 4);
    if (fabsf(lc_verff(x)) > worst) worst = fabsf(lc_verff(x));
  }
  CHECK_MSG(worst == 1, "max |erf| = %.9g", worst); /* never above 1 */
}

/* The kernels' branch-free float16 conversions match core/half.h bit for bit. */
static void test_f16_conversions(void) {
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float a = lc_ew_f16_ld((uint16_t)h), b = lc_f16_to_f32((uint16_t)h);
    if (memcmp(&a, &b, 4) && bad++ < 3) fprintf(stderr, "f16 %04x -> %a, want %a\n", h, a, b);
  }
  for (uint64_t u = 0; u < (1ull << 32); u += 509) {
    uint32_t b = (uint32_t)u;
    float f;
    memcpy(&f, &b, 4);
    if (lc_ew_f16_st(f) != lc_f32_to_f16(f) && bad++ < 6)
      fprintf(stderr, "f32 %08x -> %04x, want %04x\n", b, lc_ew_f16_st(f), lc_f32_to_f16(f));
  }
  CHECK_MSG(bad == 0, "%d float16 conversion mismatches", bad);
}

typedef int (*unop)(mlx_array *, const mlx_array, const mlx_stream);

static void test_through_api(void) {
  static const struct {
    unop op;
    float (*f)(float);
  } ops[] = {{mlx_sin, lc_vsinf}, {mlx_cos, lc_vcosf}, {mlx_exp, lc_vexpf}, {mlx_log, lc_vlogf}, {mlx_tanh, lc_vtanhf},
             {mlx_sigmoid, lc_vsigmoidf}, {mlx_erf, lc_verff}};
  int shape[2] = {37, 53};
  mlx_array x = test_rand_f32(shape, 2, 0.01, 8), t = mlx_array_new();
  mlx_transpose(&t, x, test_stream());
  mlx_array_eval(x);
  const float *xv = mlx_array_data_float32(x);
  double *ref = malloc(sizeof(double) * 37 * 53);
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    mlx_array r = mlx_array_new();
    CHECK_OK(ops[k].op(&r, x, test_stream()));
    /* The library's kernels are built with FMA contraction (and run the
     * AVX2/AVX-512 clone); this file's inline copies are not: agreement is
     * to 2 ulp, not bitwise. Accuracy itself is checked above. */
    for (int i = 0; i < 37 * 53; i++) ref[i] = ops[k].f(xv[i]);
    CHECK_CLOSE(r, ref, 37 * 53, 2.5e-7, 1e-37);
    CHECK_OK(ops[k].op(&r, t, test_stream()));
    for (int i = 0; i < 53; i++)
      for (int j = 0; j < 37; j++) ref[i * 37 + j] = ops[k].f(xv[j * 53 + i]);
    CHECK_CLOSE(r, ref, 37 * 53, 2.5e-7, 1e-37);
    mlx_array_free(r);
  }
  free(ref);
  mlx_array_free(t);
  mlx_array_free(x);
}

/* sin/cos of large float32 arguments fall back to libm. */
static void test_trig_large(void) {
  float v[6] = {1e6f, -3.5e7f, 524288.0f, 1e30f, INFINITY, 1234.5f};
  int n = 6;
  mlx_array x = mlx_array_new_data(v, &n, 1, MLX_FLOAT32), r = mlx_array_new();
  double ref[6];
  CHECK_OK(mlx_sin(&r, x, test_stream()));
  for (int i = 0; i < 6; i++) ref[i] = sinf(v[i]);
  CHECK_CLOSE(r, ref, 6, 2.5e-7, 1e-9);
  CHECK_OK(mlx_cos(&r, x, test_stream()));
  for (int i = 0; i < 6; i++) ref[i] = cosf(v[i]);
  CHECK_CLOSE(r, ref, 6, 2.5e-7, 1e-9);
  mlx_array_free(x);
  mlx_array_free(r);
}

int main(void) {
  test_init();
  test_sweep();
  test_specials();
  test_exp64();
  test_f16_conversions();
  test_through_api();
  test_trig_large();
  return test_done();
}
