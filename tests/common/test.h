/* The test harness: checks that count failures instead of aborting, an
 * error handler that records messages, a seeded PRNG, reference
 * comparisons and a memory-leak check. Header-only; every test program
 * includes it once and ends with `return test_done();`. */
#ifndef LACE_TEST_H
#define LACE_TEST_H

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mlx/c/mlx.h"

static int test_failures;
static int test_checks;
static int test_errors_seen;     /* messages the handler received */
static char test_last_error[1024];

#define CHECK(cond)                                                          \
  do {                                                                       \
    test_checks++;                                                           \
    if (!(cond)) {                                                           \
      test_failures++;                                                       \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                        \
  } while (0)

#define CHECK_MSG(cond, ...)                                            \
  do {                                                                  \
    test_checks++;                                                      \
    if (!(cond)) {                                                      \
      test_failures++;                                                  \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                     \
      fputc('\n', stderr);                                              \
    }                                                                   \
  } while (0)

/* expr must return 0 */
#define CHECK_OK(expr)                                                                \
  do {                                                                                \
    int rc_ = (expr);                                                                 \
    CHECK_MSG(rc_ == 0, "%s returned %d (%s)", #expr, rc_, test_last_error);          \
  } while (0)

/* expr must fail (non-zero) and report a message containing `needle` */
#define CHECK_FAILS(expr, needle)                                                      \
  do {                                                                                 \
    int seen_ = test_errors_seen;                                                      \
    test_last_error[0] = 0;                                                            \
    int rc_ = (expr);                                                                  \
    CHECK_MSG(rc_ != 0, "%s should have failed", #expr);                               \
    CHECK_MSG(test_errors_seen > seen_, "%s failed without reporting", #expr);         \
    CHECK_MSG(strstr(test_last_error, (needle)) != NULL, "%s: message '%s' lacks '%s'", \
              #expr, test_last_error, (needle));                                       \
  } while (0)

static void test_error_handler(const char *msg, void *data) {
  (void)data;
  test_errors_seen++;
  snprintf(test_last_error, sizeof test_last_error, "%s", msg);
  if (getenv("LACE_TEST_VERBOSE")) fprintf(stderr, "[lace error] %s\n", msg);
}

/* Whether LACE_TEST_DEVICE=gpu asks the test to compute on the GPU. */
static bool test_on_gpu(void) {
  const char *d = getenv("LACE_TEST_DEVICE");
  return d && strcmp(d, "gpu") == 0;
}

/* Installs the error handler. With LACE_TEST_DEVICE=gpu on a machine
 * without a GPU the test is skipped here (exit 77, which CTest reads as
 * skipped), saying so. */
static void test_init(void) {
  mlx_set_error_handler(test_error_handler, NULL, NULL);
  int ngpu = 0;
  if (test_on_gpu() && (mlx_device_count(&ngpu, MLX_GPU) || ngpu == 0)) {
    printf("SKIP: LACE_TEST_DEVICE=gpu, and this machine has no GPU\n");
    exit(77);
  }
}

static int test_done(void) {
  if (test_failures)
    fprintf(stderr, "FAILED: %d of %d checks\n", test_failures, test_checks);
  else
    printf("ok: %d checks\n", test_checks);
  return test_failures ? 1 : 0;
}

/* ---- deterministic random numbers (splitmix64) ---- */
static uint64_t test_rng_state = 0x9e3779b97f4a7c15ULL;
static void test_seed(uint64_t s) { test_rng_state = s * 0x9e3779b97f4a7c15ULL + 1; }
static uint64_t test_rand_u64(void) {
  uint64_t z = (test_rng_state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
/* uniform in [lo, hi) */
static double test_uniform(double lo, double hi) {
  return lo + (hi - lo) * (double)(test_rand_u64() >> 11) / 9007199254740992.0;
}
static int test_randint(int lo, int hi) { /* [lo, hi] */
  return lo + (int)(test_rand_u64() % (uint64_t)(hi - lo + 1));
}

/* ---- arrays ---- */

/* The stream tests compute on: the CPU's, or with LACE_TEST_DEVICE=gpu
 * the default GPU stream (to run a CPU test's cases on a GPU; where there
 * is no GPU, test_init skips the test). */
static mlx_stream test_stream_s; /* made once, shared by a test's threads */
static void test_stream_make(void) {
  test_stream_s = test_on_gpu() ? mlx_default_gpu_stream_new() : mlx_default_cpu_stream_new();
}
static mlx_stream test_stream(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT; /* threads' first calls may race */
  pthread_once(&once, test_stream_make);
  return test_stream_s;
}

/* A float32 array of the given shape filled with uniform values in [lo, hi). */
static mlx_array test_rand_f32(const int *shape, int ndim, double lo, double hi) {
  size_t n = 1;
  for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
  float *buf = malloc(sizeof(float) * (n ? n : 1));
  for (size_t i = 0; i < n; i++) buf[i] = (float)test_uniform(lo, hi);
  mlx_array a = mlx_array_new_data(buf, shape, ndim, MLX_FLOAT32);
  free(buf);
  return a;
}

/* Copies any evaluated array's values to doubles (row-major). Returns a
 * malloc'd buffer of mlx_array_size(a) values, NULL on failure. */
static double *test_values(mlx_array a) {
  mlx_array f = mlx_array_new();
  if (mlx_astype(&f, a, MLX_FLOAT64, test_stream())) return NULL;
  const double *p = mlx_array_data_float64(f);
  size_t n = mlx_array_size(f);
  double *out = malloc(sizeof(double) * (n ? n : 1));
  if (p && out) memcpy(out, p, sizeof(double) * n);
  mlx_array_free(f);
  if (!p) {
    free(out);
    return NULL;
  }
  return out;
}

/* Checks a's values against ref within |x - r| <= atol + rtol * |r| (NaN
 * matches NaN, infinities must match exactly). */
#define CHECK_CLOSE(a, ref, n, rtol, atol) test_check_close(__FILE__, __LINE__, (a), (ref), (n), (rtol), (atol))
static void test_check_close(const char *file, int line, mlx_array a, const double *ref,
                             size_t n, double rtol, double atol) {
  test_checks++;
  if (mlx_array_size(a) != n) {
    test_failures++;
    fprintf(stderr, "%s:%d: size %zu, expected %zu\n", file, line, mlx_array_size(a), n);
    return;
  }
  double *v = test_values(a);
  if (!v) {
    test_failures++;
    fprintf(stderr, "%s:%d: could not read values (%s)\n", file, line, test_last_error);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    double x = v[i], r = ref[i];
    int ok = (isnan(r) && isnan(x)) || (isinf(r) && x == r) ||
             (isfinite(r) && fabs(x - r) <= atol + rtol * fabs(r));
    if (!ok) {
      test_failures++;
      fprintf(stderr, "%s:%d: element %zu is %.9g, expected %.9g\n", file, line, i, x, r);
      break;
    }
  }
  free(v);
}

/* Checks a's shape. */
#define CHECK_SHAPE(a, ...)                                                      \
  do {                                                                           \
    int want_[] = {__VA_ARGS__};                                                 \
    size_t nd_ = sizeof want_ / sizeof want_[0];                                 \
    CHECK_MSG(mlx_array_ndim(a) == nd_ &&                                        \
                  !memcmp(mlx_array_shape(a), want_, sizeof want_),              \
              "shape mismatch (ndim %zu)", mlx_array_ndim(a));                   \
  } while (0)

/* ---- leaks ---- */
/* Removes directory dir and the files in it (a test's scratch directory). */
static void test_remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  char path[1024];
  for (struct dirent *e; d && (e = readdir(d));) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    remove(path);
  }
  if (d) closedir(d);
  rmdir(dir);
}

static size_t test_active_memory(void) {
  size_t m = 0;
  mlx_get_active_memory(&m);
  return m;
}

#endif
