/* Native fused kernels (src/compile/jit.c): float32 elementwise regions
 * built with the system C compiler must compute what the uncompiled ops
 * compute, bit for bit (no FMA contraction anywhere, signs of zero
 * included), through every input
 * layout the fused kernel's driver hands them (contiguous, scalar,
 * broadcast rows and columns, transposed, gathered), with several outputs
 * and NaNs; regions they do not cover, a failing compiler and LACE_JIT=0
 * fall back to the interpreter with the same results. Where no C compiler
 * is installed, the native-build checks are skipped (and say so). */
#include "test.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compile/jit.h"

static mlx_stream S;

/* A chain over two inputs: erf, sigmoid, maximum/minimum (NaN-propagating),
 * rsqrt of a positive value, divide, and two outputs. */
static int fun_chain(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = mlx_array_new(), y = mlx_array_new(), a = mlx_array_new(), b = mlx_array_new(),
            h = mlx_array_new_float(0.5f), one = mlx_array_new_float(1.0f);
  mlx_vector_array_get(&x, in, 0);
  mlx_vector_array_get(&y, in, 1);
  int rc = mlx_multiply(&a, x, h, S);
  if (!rc) rc = mlx_erf(&a, a, S);
  if (!rc) rc = mlx_add(&a, a, one, S);
  if (!rc) rc = mlx_multiply(&a, a, x, S); /* gelu-like */
  if (!rc) rc = mlx_maximum(&b, a, y, S);
  if (!rc) rc = mlx_sigmoid(&b, b, S);
  if (!rc) rc = mlx_minimum(&b, b, x, S);
  if (!rc) rc = mlx_square(&a, a, S);
  if (!rc) rc = mlx_add(&a, a, one, S);
  if (!rc) rc = mlx_rsqrt(&a, a, S);
  if (!rc) rc = mlx_divide(&a, b, a, S);
  if (!rc) rc = mlx_vector_array_append_value(*res, a);
  if (!rc) rc = mlx_vector_array_append_value(*res, b);
  mlx_array_free(x), mlx_array_free(y), mlx_array_free(a), mlx_array_free(b);
  mlx_array_free(h), mlx_array_free(one);
  return rc;
}

/* exp, log, tanh, abs, negative, sqrt, subtract, astype (a float32 no-op
 * when x is float32, a real conversion otherwise). */
static int fun_math(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = mlx_array_new(), t = mlx_array_new(), u = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  int rc = mlx_abs(&t, x, S);
  if (!rc) rc = mlx_sqrt(&t, t, S);
  if (!rc) rc = mlx_exp(&u, x, S);
  if (!rc) rc = mlx_log(&u, u, S);
  if (!rc) rc = mlx_tanh(&u, u, S);
  if (!rc) rc = mlx_negative(&u, u, S);
  if (!rc) rc = mlx_subtract(&t, t, u, S);
  if (!rc) rc = mlx_astype(&t, t, MLX_FLOAT32, S);
  if (!rc) rc = mlx_vector_array_append_value(*res, t);
  mlx_array_free(x), mlx_array_free(t), mlx_array_free(u);
  return rc;
}

/* x * 0.7 + 0.3 and x * y + x: a product feeding a sum, where FMA
 * contraction would change the last bit (and the sign of zero results). */
static int fun_muladd(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = mlx_array_new(), y = mlx_array_new(), a = mlx_array_new(), b = mlx_array_new(),
            k = mlx_array_new_float(0.7f), c = mlx_array_new_float(0.3f);
  mlx_vector_array_get(&x, in, 0);
  mlx_vector_array_get(&y, in, 1);
  int rc = mlx_multiply(&a, x, k, S);
  if (!rc) rc = mlx_add(&a, a, c, S);
  if (!rc) rc = mlx_multiply(&b, x, y, S);
  if (!rc) rc = mlx_add(&b, b, x, S);
  if (!rc) rc = mlx_vector_array_append_value(*res, a);
  if (!rc) rc = mlx_vector_array_append_value(*res, b);
  mlx_array_free(x), mlx_array_free(y), mlx_array_free(a), mlx_array_free(b);
  mlx_array_free(k), mlx_array_free(c);
  return rc;
}

/* sqrt(x * x + 1): built only under a failing compiler. */
static int fun_fail(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = mlx_array_new(), t = mlx_array_new(), one = mlx_array_new_float(1.0f);
  mlx_vector_array_get(&x, in, 0);
  int rc = mlx_square(&t, x, S);
  if (!rc) rc = mlx_add(&t, t, one, S);
  if (!rc) rc = mlx_sqrt(&t, t, S);
  if (!rc) rc = mlx_vector_array_append_value(*res, t);
  mlx_array_free(x), mlx_array_free(t), mlx_array_free(one);
  return rc;
}

/* abs(x * 3 - 1): built only with an unsafe cache directory. */
static int fun_unsafe(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = mlx_array_new(), t = mlx_array_new(), k = mlx_array_new_float(3.0f),
            one = mlx_array_new_float(1.0f);
  mlx_vector_array_get(&x, in, 0);
  int rc = mlx_multiply(&t, x, k, S);
  if (!rc) rc = mlx_subtract(&t, t, one, S);
  if (!rc) rc = mlx_abs(&t, t, S);
  if (!rc) rc = mlx_vector_array_append_value(*res, t);
  mlx_array_free(x), mlx_array_free(t), mlx_array_free(k), mlx_array_free(one);
  return rc;
}

/* Compares compiled and uncompiled outputs: same NaN positions, otherwise
 * the same values with the same signs (so -0 and +0 differ). */
static void check(const char *what, mlx_closure f, mlx_array *in, int nin) {
  mlx_closure cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  mlx_vector_array vin = mlx_vector_array_new_data(in, (size_t)nin);
  mlx_vector_array got = mlx_vector_array_new(), want = mlx_vector_array_new();
  CHECK_OK(mlx_closure_apply(&got, cf, vin));
  CHECK_OK(mlx_closure_apply(&want, f, vin));
  CHECK(mlx_vector_array_size(got) == mlx_vector_array_size(want));
  for (size_t k = 0; k < mlx_vector_array_size(got); k++) {
    mlx_array a = mlx_array_new(), b = mlx_array_new();
    mlx_vector_array_get(&a, got, k);
    mlx_vector_array_get(&b, want, k);
    double *u = test_values(a), *v = test_values(b);
    size_t n = mlx_array_size(b), bad = 0, at = 0;
    CHECK(mlx_array_size(a) == n && mlx_array_dtype(a) == mlx_array_dtype(b));
    for (size_t i = 0; u && v && i < n; i++) {
      bool same = isnan(u[i]) ? isnan(v[i]) : u[i] == v[i] && signbit(u[i]) == signbit(v[i]);
      if (!same && !bad++) at = i;
    }
    CHECK_MSG(u && v && bad == 0, "%s output %zu: %zu mismatches, first at %zu: %.9g vs %.9g",
              what, k, bad, at, u && v ? u[at] : 0.0, u && v ? v[at] : 0.0);
    free(u);
    free(v);
    mlx_array_free(a);
    mlx_array_free(b);
  }
  mlx_vector_array_free(vin);
  mlx_vector_array_free(got);
  mlx_vector_array_free(want);
  mlx_closure_free(cf);
}

static mlx_array with_nans(mlx_array a) {
  size_t n = mlx_array_size(a);
  float *v = malloc(n * sizeof *v);
  mlx_array_eval(a);
  memcpy(v, mlx_array_data_float32(a), n * sizeof *v);
  for (size_t i = 0; i < n; i += 97) v[i] = NAN;
  mlx_array r = mlx_array_new_data(v, mlx_array_shape(a), (int)mlx_array_ndim(a), MLX_FLOAT32);
  free(v);
  mlx_array_free(a);
  return r;
}

static int count_kernels(const char *dir) {
  DIR *d = opendir(dir);
  int k = 0;
  for (struct dirent *e; d && (e = readdir(d));) k += strstr(e->d_name, ".so") != NULL;
  if (d) closedir(d);
  return k;
}

int main(void) {
  test_init();
  if (test_on_gpu()) { /* GPU regions are NVRTC's: tests/gpu/test_gpu_compile */
    printf("SKIP: native C kernels run on the CPU only (LACE_TEST_DEVICE=gpu)\n");
    return 77;
  }
  S = test_stream();
  char dir[] = "/tmp/lace-jit-test-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  setenv("LACE_JIT_CACHE", dir, 1);
  setenv("LACE_JIT_MIN", "0", 1); /* every eligible region, however small */
  setenv("LACE_JIT_SYNC", "1", 1); /* built by the first call, which runs it */
  const char *cc = getenv("CC");
  char probe[300];
  snprintf(probe, sizeof probe, "%s --version >/dev/null 2>&1", cc && *cc ? cc : "cc");
  bool have_cc = system(probe) == 0;
  if (!have_cc) printf("SKIPPED native-build checks: no C compiler found (%s)\n", probe);

  mlx_closure chain = mlx_closure_new_func_payload(fun_chain, NULL, NULL);
  mlx_closure math = mlx_closure_new_func_payload(fun_math, NULL, NULL);
  mlx_closure failing = mlx_closure_new_func_payload(fun_fail, NULL, NULL);
  int sh[2] = {48, 1000}, row[2] = {1, 1000}, col[2] = {48, 1}, tsh[2] = {1000, 48};

  /* a compiler that fails: the interpreter runs, nothing is loaded */
  long k0 = lc_jit_kernels();
  setenv("CC", "/nonexistent/cc", 1);
  mlx_array m[1] = {test_rand_f32(sh, 2, -3, 3)};
  check("failing compiler", failing, m, 1);
  CHECK(lc_jit_kernels() == k0);
  if (cc)
    setenv("CC", cc, 1);
  else
    unsetenv("CC");

  /* a cache directory others can write to is never used (code is loaded
   * from it) */
  char unsafe[] = "/tmp/lace-jit-unsafe-XXXXXX";
  CHECK(mkdtemp(unsafe) != NULL);
  chmod(unsafe, 0777);
  setenv("LACE_JIT_CACHE", unsafe, 1);
  mlx_closure uf = mlx_closure_new_func_payload(fun_unsafe, NULL, NULL);
  check("unsafe cache directory", uf, m, 1);
  CHECK(lc_jit_kernels() == k0 && count_kernels(unsafe) == 0);
  mlx_closure_free(uf);
  test_remove_dir(unsafe);
  setenv("LACE_JIT_CACHE", dir, 1);

  /* contiguous inputs with NaNs */
  mlx_array xy[2] = {with_nans(test_rand_f32(sh, 2, -3, 3)), test_rand_f32(sh, 2, -3, 3)};
  check("chain, contiguous", chain, xy, 2);
  if (have_cc) {
    CHECK_MSG(lc_jit_kernels() > k0, "no native kernel was loaded");
    CHECK_MSG(count_kernels(dir) >= 1, "no kernel in the cache directory %s", dir);
  }
  long k1 = lc_jit_kernels();
  check("chain, again (cached)", chain, xy, 2);
  CHECK(lc_jit_kernels() == k1);

  /* a scalar input, broadcast rows and columns, a transposed view */
  mlx_array s[2] = {xy[0], mlx_array_new_float(0.25f)};
  check("chain, scalar y", chain, s, 2);
  mlx_array r[2] = {test_rand_f32(col, 2, -3, 3), test_rand_f32(row, 2, -3, 3)};
  check("chain, column x row", chain, r, 2);
  mlx_array t = test_rand_f32(tsh, 2, -3, 3), tt = mlx_array_new();
  CHECK_OK(mlx_transpose(&tt, t, S));
  mlx_array tv[2] = {tt, xy[1]};
  check("chain, transposed x", chain, tv, 2);
  long k3 = lc_jit_kernels();
  check("math, contiguous", math, m, 1);
  if (have_cc) CHECK(lc_jit_kernels() == k3 + 1);
  check("math, transposed", math, &tt, 1);

  /* a product feeding a sum: contraction would differ in the last bit */
  mlx_closure muladd = mlx_closure_new_func_payload(fun_muladd, NULL, NULL);
  check("x*0.7+0.3, x*y+x", muladd, xy, 2);
  check("x*0.7+0.3, x*y+x, column x row", muladd, r, 2);
  mlx_closure_free(muladd);

  /* not covered (float16): interpreted, nothing new loaded */
  long k2 = lc_jit_kernels();
  mlx_array h = mlx_array_new();
  CHECK_OK(mlx_astype(&h, m[0], MLX_FLOAT16, S));
  check("math, float16", math, &h, 1);
  CHECK(lc_jit_kernels() == k2);

  /* disabled */
  setenv("LACE_JIT", "0", 1);
  mlx_array fresh = test_rand_f32(sh, 2, -1, 1);
  mlx_array fr[2] = {fresh, xy[1]};
  check("chain, LACE_JIT=0", chain, fr, 2);
  CHECK(lc_jit_kernels() == k2);
  unsetenv("LACE_JIT");

  mlx_array_free(m[0]), mlx_array_free(xy[0]), mlx_array_free(xy[1]), mlx_array_free(s[1]);
  mlx_array_free(r[0]), mlx_array_free(r[1]), mlx_array_free(t), mlx_array_free(tt);
  mlx_array_free(h), mlx_array_free(fresh);
  mlx_closure_free(chain);
  mlx_closure_free(math);
  mlx_closure_free(failing);
  mlx_detail_compile_clear_cache();
  test_remove_dir(dir);
  return test_done();
}
