/* Shared by the GPU tests: the GPU stream (or a skip), and a check that
 * an op gives the same values on the GPU as on the CPU. */
#ifndef LACE_TEST_GPU_UTIL_H
#define LACE_TEST_GPU_UTIL_H

#include "test.h"

/* Exit code CTest reads as "skipped" (SKIP_RETURN_CODE in CMakeLists). */
#define TEST_SKIP 77

static mlx_stream gpu_stream;

/* Initialises the harness; returns false (after printing why) when this
 * machine has no usable GPU. */
static bool gpu_test_init(void) {
  test_init();
  int n = 0;
  mlx_device_count(&n, MLX_GPU);
  if (n == 0) {
    printf("SKIP: no GPU on this machine (mlx_device_count(MLX_GPU) == 0)\n");
    return false;
  }
  gpu_stream = mlx_default_gpu_stream_new();
  return true;
}

/* The end of a GPU test's main: the GPU stream freed, active memory back
 * to at most base (taken after gpu_test_init), then test_done's exit code. */
static int gpu_test_done(size_t base) {
  mlx_stream_free(gpu_stream);
  size_t after = test_active_memory();
  CHECK_MSG(after <= base, "active memory %zu after, %zu before", after, base);
  return test_done();
}

/* A random array of dtype t in [lo, hi) (integers: rounded). */
static mlx_array gpu_rand(const int *shape, int ndim, mlx_dtype t, double lo, double hi) {
  mlx_array f = test_rand_f32(shape, ndim, lo, hi), r = mlx_array_new();
  if (t == MLX_FLOAT32) return f;
  if (t != MLX_FLOAT16 && t != MLX_BFLOAT16 && t != MLX_FLOAT64) {
    mlx_array g = mlx_array_new();
    mlx_round(&g, f, 0, test_stream());
    mlx_array_free(f);
    f = g;
  }
  mlx_astype(&r, f, t, test_stream());
  mlx_array_eval(r);
  mlx_array_free(f);
  return r;
}

static double gpu_rtol(mlx_dtype t) {
  return t == MLX_FLOAT16 ? 2e-3 : t == MLX_BFLOAT16 ? 1.6e-2 : t == MLX_FLOAT64 ? 1e-12 : 2e-6;
}

/* Checks that got (from the GPU) matches want (from the CPU). */
#define CHECK_SAME(got, want, rtol, atol, what) \
  gpu_check_same(__FILE__, __LINE__, (got), (want), (rtol), (atol), (what))
static void gpu_check_same(const char *file, int line, mlx_array got, mlx_array want, double rtol,
                           double atol, const char *what) {
  test_checks++;
  bool same_shape = mlx_array_ndim(got) == mlx_array_ndim(want);
  for (size_t d = 0; same_shape && d < mlx_array_ndim(got); d++)
    same_shape = mlx_array_shape(got)[d] == mlx_array_shape(want)[d];
  if (!same_shape || mlx_array_size(got) != mlx_array_size(want) ||
      mlx_array_dtype(got) != mlx_array_dtype(want)) {
    test_failures++;
    fprintf(stderr, "%s:%d: %s: shape/dtype differ (size %zu vs %zu, dtype %d vs %d)\n", file,
            line, what, mlx_array_size(got), mlx_array_size(want), (int)mlx_array_dtype(got),
            (int)mlx_array_dtype(want));
    return;
  }
  double *g = test_values(got), *w = test_values(want);
  size_t n = mlx_array_size(got), bad = 0, first = 0;
  for (size_t i = 0; g && w && i < n; i++) {
    bool ok = (g[i] != g[i] && w[i] != w[i]) || g[i] == w[i] ||
              fabs(g[i] - w[i]) <= atol + rtol * fabs(w[i]);
    if (!ok && bad++ == 0) first = i;
  }
  if (!g || !w || bad) {
    test_failures++;
    if (g && w)
      fprintf(stderr, "%s:%d: %s: %zu of %zu differ, first at %zu: gpu %.9g cpu %.9g\n", file,
              line, what, bad, n, first, g[first], w[first]);
    else
      fprintf(stderr, "%s:%d: %s: could not read values (%s)\n", file, line, what,
              test_last_error);
  }
  free(g);
  free(w);
}

#endif
