/* Operands of layouts the GPU's kernels do not take as they are run on the
 * GPU all the same, through a row-major copy: products (a stride along
 * the contraction, batch dims broadcast in part, batch dims transposed)
 * and rms_norm / layer_norm (transposed or sliced rows, strided or
 * broadcast weight and bias). The result is made there, its values equal
 * the CPU's within float rounding, and nothing is left allocated. Skips
 * without a GPU. */
#include "gpu_bits.h"

static const mlx_dtype types[] = {MLX_FLOAT32, MLX_BFLOAT16, MLX_FLOAT64};

static double tol_of(mlx_dtype t, int k) {
  return t == MLX_FLOAT64 ? 1e-12 : t == MLX_FLOAT32 ? 1e-5 * sqrt(k) : 2e-2;
}

/* a @ b on the GPU against the CPU; a and b are views on the GPU. */
static void check_product(const char *what, mlx_array a, mlx_array b, int k) {
  mlx_array g = mlx_array_new(), c = mlx_array_new();
  mlx_stream cpu = mlx_default_cpu_stream_new();
  CHECK_OK(mlx_matmul(&g, a, b, gpu_stream));
  CHECK_OK(mlx_matmul(&c, a, b, cpu));
  mlx_stream_free(cpu);
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

/* x (rows of 64) as a transpose and as a slice of every other row, with
 * weight and bias strided (every other element) and broadcast (stride 0) */
static void norms(mlx_dtype t) {
  mlx_stream cpu = mlx_default_cpu_stream_new();
  mlx_array hx = gpu_rand((int[]){64, 40}, 2, t, -2, 2), hw = gpu_rand((int[]){128}, 1, t, -1, 1);
  mlx_array hb = gpu_rand((int[]){128}, 1, t, -1, 1), one = gpu_rand((int[]){1}, 1, t, 0.5, 1.5);
  mlx_array x = on_gpu(hx), w2 = on_gpu(hw), b2 = on_gpu(hb), w1 = on_gpu(one);
  mlx_array xt = mlx_array_new(), xs = mlx_array_new(), ws = mlx_array_new(),
            bs = mlx_array_new(), wb = mlx_array_new();
  CHECK_OK(mlx_transpose(&xt, x, gpu_stream)); /* (40, 64), column stride 40 */
  CHECK_OK(mlx_slice(&xs, xt, (int[]){0, 0}, 2, (int[]){40, 64}, 2, (int[]){2, 1}, 2, gpu_stream));
  CHECK_OK(mlx_slice(&ws, w2, (int[]){0}, 1, (int[]){128}, 1, (int[]){2}, 1, gpu_stream));
  CHECK_OK(mlx_slice(&bs, b2, (int[]){1}, 1, (int[]){128}, 1, (int[]){2}, 1, gpu_stream));
  CHECK_OK(mlx_broadcast_to(&wb, w1, (int[]){64}, 1, gpu_stream));
  const mlx_array xs_[2] = {xt, xs}, ws_[2] = {ws, wb};
  double tol = t == MLX_FLOAT64 ? 1e-12 : t == MLX_FLOAT32 ? 2e-5 : 2e-2;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      char what[96];
      mlx_array g = mlx_array_new(), c = mlx_array_new();
      CHECK_OK(mlx_fast_rms_norm(&g, xs_[i], ws_[j], 1e-5f, gpu_stream));
      CHECK_OK(mlx_fast_rms_norm(&c, xs_[i], ws_[j], 1e-5f, cpu));
      CHECK_OK(mlx_array_eval(g));
      snprintf(what, sizeof what, "rms_norm x %d weight %d (dtype %d)", i, j, (int)t);
      CHECK_MSG(made_on_gpu(g), "%s: computed on the host", what);
      CHECK_SAME(g, c, tol, tol, what);
      CHECK_OK(mlx_fast_layer_norm(&g, xs_[i], ws_[j], bs, 1e-5f, gpu_stream));
      CHECK_OK(mlx_fast_layer_norm(&c, xs_[i], ws_[j], bs, 1e-5f, cpu));
      CHECK_OK(mlx_array_eval(g));
      snprintf(what, sizeof what, "layer_norm x %d weight %d (dtype %d)", i, j, (int)t);
      CHECK_MSG(made_on_gpu(g), "%s: computed on the host", what);
      CHECK_SAME(g, c, tol, tol, what);
      mlx_array_free(g), mlx_array_free(c);
    }
  mlx_array_free(hx), mlx_array_free(hw), mlx_array_free(hb), mlx_array_free(one);
  mlx_array_free(x), mlx_array_free(w2), mlx_array_free(b2), mlx_array_free(w1);
  mlx_array_free(xt), mlx_array_free(xs), mlx_array_free(ws), mlx_array_free(bs);
  mlx_array_free(wb);
  mlx_stream_free(cpu);
}

int main(void) {
  if (!gpu_test_init()) return TEST_SKIP;
  test_seed(20261207);
  size_t base = test_active_memory();
  for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
    strided_contraction(types[k]);
    partial_broadcast(types[k]);
    transposed_batches(types[k]);
    norms(types[k]);
  }
  return gpu_test_done(base);
}
