/* Products whose operands cuBLAS cannot take as they are (a stride along
 * the contraction, batch dims broadcast in part, batch dims transposed)
 * run on the GPU all the same, through a row-major copy of the operand:
 * the result is made there, its values equal the CPU's within float
 * rounding, and nothing is left allocated. Skips without a GPU. */
#include "gpu_bits.h"

static const mlx_dtype types[] = {MLX_FLOAT32, MLX_BFLOAT16, MLX_FLOAT64};

static double tol_of(mlx_dtype t, int k) {
  return t == MLX_FLOAT64 ? 1e-12 : t == MLX_FLOAT32 ? 1e-5 * sqrt(k) : 2e-2;
}

/* a @ b on the GPU against the CPU; a and b are views on the GPU. */
static void check_product(const char *what, mlx_array a, mlx_array b, int k) {
  mlx_array g = mlx_array_new(), c = mlx_array_new();
  CHECK_OK(mlx_matmul(&g, a, b, gpu_stream));
  CHECK_OK(mlx_matmul(&c, a, b, mlx_default_cpu_stream_new()));
  CHECK_OK(mlx_array_eval(g));
  CHECK_MSG(made_on_gpu(g), "%s: computed on the host", what);
  double tol = tol_of(mlx_array_dtype(a), k);
  CHECK_SAME(g, c, tol, tol, what);
  mlx_array_free(g), mlx_array_free(c);
}

/* a (M, 2K) sliced every other column: a stride of 2 along k */
static void strided_contraction(mlx_dtype t) {
  int sa[] = {24, 80}, sb[] = {40, 33};
  mlx_array h = gpu_rand(sa, 2, t, -1, 1), hb = gpu_rand(sb, 2, t, -1, 1);
  mlx_array a = on_gpu(h), b = on_gpu(hb), v = mlx_array_new();
  CHECK_OK(mlx_slice(&v, a, (int[]){0, 0}, 2, (int[]){24, 80}, 2, (int[]){1, 2}, 2, gpu_stream));
  char what[96];
  snprintf(what, sizeof what, "a[:, ::2] @ b (dtype %d)", (int)t);
  check_product(what, v, b, 40);
  /* the same slice as the right operand, (7, 24) @ (24, 40) */
  mlx_array x = gpu_rand((int[]){7, 24}, 2, t, -1, 1), xg = on_gpu(x);
  snprintf(what, sizeof what, "x @ a[:, ::2] (dtype %d)", (int)t);
  check_product(what, xg, v, 24);
  mlx_array_free(h), mlx_array_free(hb), mlx_array_free(a), mlx_array_free(b);
  mlx_array_free(v), mlx_array_free(x), mlx_array_free(xg);
}

/* a (2, 1, M, K) against b (1, 3, K, N): each operand broadcast over one
 * of two batch dims, which no single batch stride describes */
static void partial_broadcast(mlx_dtype t) {
  mlx_array ha = gpu_rand((int[]){2, 1, 9, 16}, 4, t, -1, 1);
  mlx_array hb = gpu_rand((int[]){1, 3, 16, 11}, 4, t, -1, 1);
  mlx_array a = on_gpu(ha), b = on_gpu(hb);
  char what[96];
  snprintf(what, sizeof what, "(2,1,9,16) @ (1,3,16,11) (dtype %d)", (int)t);
  check_product(what, a, b, 16);
  mlx_array_free(ha), mlx_array_free(hb), mlx_array_free(a), mlx_array_free(b);
}

/* batch dims transposed: (3, 4, M, K) viewed as (4, 3, M, K) */
static void transposed_batches(mlx_dtype t) {
  mlx_array ha = gpu_rand((int[]){3, 4, 6, 20}, 4, t, -1, 1);
  mlx_array hb = gpu_rand((int[]){4, 3, 20, 5}, 4, t, -1, 1);
  mlx_array a = on_gpu(ha), b = on_gpu(hb), at = mlx_array_new();
  CHECK_OK(mlx_transpose_axes(&at, a, (int[]){1, 0, 2, 3}, 4, gpu_stream));
  char what[96];
  snprintf(what, sizeof what, "batch-transposed (4,3,6,20) @ (4,3,20,5) (dtype %d)", (int)t);
  check_product(what, at, b, 20);
  mlx_array_free(ha), mlx_array_free(hb), mlx_array_free(a), mlx_array_free(b);
  mlx_array_free(at);
}

int main(void) {
  if (!gpu_test_init()) return TEST_SKIP;
  test_seed(20261207);
  size_t base = 0;
  mlx_get_active_memory(&base);
  for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
    strided_contraction(types[k]);
    partial_broadcast(types[k]);
    transposed_batches(types[k]);
  }
  mlx_stream_free(gpu_stream);
  size_t after = 0;
  mlx_get_active_memory(&after);
  CHECK_MSG(after <= base, "active memory %zu after, %zu before", after, base);
  return test_done();
}
