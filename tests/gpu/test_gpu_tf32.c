/* float32 products on TF32 tensor cores when asked (MLX_ENABLE_TF32=1, set
 * here before the first product; test_gpu_ops checks full float32 without
 * it): a 96x512x80 product (plain and batched, transposed b) differs from
 * the CPU's by TF32's rounding (inputs kept to 10 mantissa bits: far more
 * than float32's error), and stays within it. Half types are unaffected:
 * bfloat16 products agree as in test_gpu_ops. Skips without a GPU. */
#include <math.h>
#include <stdlib.h>

#include "gpu_util.h"

/* The largest |g - c| over the elements, both evaluated. */
static double max_diff(mlx_array g, mlx_array c) {
  double *a = test_values(g), *b = test_values(c), m = 0;
  size_t n = mlx_array_size(g);
  for (size_t i = 0; a && b && i < n; i++) m = fmax(m, fabs(a[i] - b[i]));
  free(a);
  free(b);
  return m;
}

static void product(int batch, bool tb, mlx_dtype t) {
  int M = 96, K = 512, N = 80;
  int sa[] = {batch, M, K}, sb[] = {batch, tb ? N : K, tb ? K : N};
  mlx_array a = gpu_rand(batch ? sa : sa + 1, batch ? 3 : 2, t, -1, 1);
  mlx_array b = gpu_rand(batch ? sb : sb + 1, batch ? 3 : 2, t, -1, 1);
  mlx_array bt = mlx_array_new(), g = mlx_array_new(), c = mlx_array_new();
  CHECK_OK(tb ? mlx_swapaxes(&bt, b, -1, -2, test_stream()) : mlx_array_set(&bt, b));
  CHECK_OK(mlx_matmul(&g, a, bt, gpu_stream));
  CHECK_OK(mlx_matmul(&c, a, bt, test_stream()));
  double d = max_diff(g, c);
  /* entries are sums of 512 products of U(-1, 1): about 7 in size; float32
   * errs by ~1e-5 there, TF32 by ~1e-3 */
  if (t == MLX_FLOAT32) {
    CHECK_MSG(d > 2e-4, "batch %d tb %d: max difference %g: TF32 not used", batch, tb, d);
    CHECK_MSG(d < 5e-2, "batch %d tb %d: max difference %g: beyond TF32's error", batch, tb, d);
  } else {
    CHECK_SAME(g, c, 2e-2, 2e-2, "bfloat16 product with MLX_ENABLE_TF32=1");
  }
  mlx_array_free(a), mlx_array_free(b), mlx_array_free(bt), mlx_array_free(g), mlx_array_free(c);
}

int main(void) {
  setenv("MLX_ENABLE_TF32", "1", 1);
  if (!gpu_test_init()) return TEST_SKIP;
  test_seed(20261205);
  for (int batch = 0; batch <= 3; batch += 3)
    for (int tb = 0; tb < 2; tb++) product(batch, tb, MLX_FLOAT32);
  product(0, false, MLX_BFLOAT16);
  return test_done();
}
