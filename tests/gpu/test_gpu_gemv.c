/* Products of a few rows on the GPU (gemv.cu, used for M <= 8): against
 * the CPU and against cuBLAS (LACE_CUDA_GEMV=0) on random inputs, for
 * float32, float16 and bfloat16, both layouts of b (row-major weights and
 * transposed ones, as for tied embeddings), M from 1 to 9, batches folded
 * into rows, strided rows of a, layouts without 16-byte loads (which go
 * to cuBLAS), and K large enough that slices of k are split over blocks
 * (added by a second kernel or by each tile's last block: the same bits).
 * That the results were made on the GPU, by the GEMV kernels exactly for
 * the cases meant for them (lc_gpu_gemv_launches) and never with
 * LACE_CUDA_GEMV=0; device memory back to its baseline. Skips without a
 * GPU. */
#include <math.h>
#include <stdlib.h>

#include "core/node.h"
#include "gpu/gpu.h"
#include "gpu/graphs.h"
#include "gpu_bits.h"

static double tol_of(mlx_dtype t, int K) {
  return t == MLX_FLOAT32 ? 2e-6 * sqrt((double)K) + 1e-6 : t == MLX_FLOAT16 ? 4e-3 : 1.6e-2;
}

/* x[:, lo:lo+len] along the last axis of a 2- or 3-d array (a view). */
static mlx_array cols_view(mlx_array x, int lo, int len) {
  int nd = (int)mlx_array_ndim(x);
  int start[3] = {0, 0, 0}, stop[3], str[3] = {1, 1, 1};
  for (int d = 0; d < nd; d++) stop[d] = mlx_array_shape(x)[d];
  start[nd - 1] = lo;
  stop[nd - 1] = lo + len;
  mlx_array r = mlx_array_new();
  CHECK_OK(mlx_slice(&r, x, start, (size_t)nd, stop, (size_t)nd, str, (size_t)nd, test_stream()));
  return r;
}

/* Whether the GEMV kernels take a case of gemv_case (gpu/cuda/kernels.h):
 * at most 8 rows in all, one b for every batch, and 16-byte loads (V
 * values): b's stored rows start aligned (device blocks are; a padded view
 * starts at column 1, so it is not) with whole vectors; row-major b needs
 * N whole vectors, transposed b (dot products along k) K whole vectors and
 * a aligned too. */
static bool meant_for_gemv(mlx_dtype t, int abatch, int M, int K, int N, bool tb, int apad,
                           int bpad, bool b_batched) {
  int V = t == MLX_FLOAT32 ? 4 : 8;
  if (M * (abatch ? abatch : 1) > 8 || b_batched || bpad) return false;
  return tb ? K % V == 0 && !apad : N % V == 0;
}

/* The GEMV kernels' launch count since the last call. */
static unsigned long gemv_delta(void) {
  static unsigned long last;
  unsigned long now = lc_gpu_gemv_launches(), d = now - last;
  last = now;
  return d;
}

/* One product: a has batch dims abatch (0: none) of M x K rows; b is
 * K x N, stored transposed when tb; apad/bpad extra columns in the stored
 * rows (strided rows, or misaligned when not a multiple of 16 bytes);
 * b_batched: b has the batch dims too (cuBLAS). */
static void gemv_case(mlx_dtype t, int abatch, int M, int K, int N, bool tb, int apad, int bpad,
                      bool b_batched) {
  int sa[3] = {abatch, M, K + apad};
  int brows = tb ? N : K, bcols = (tb ? K : N) + bpad;
  int sb[3] = {abatch, brows, bcols};
  mlx_array a0 = gpu_rand(abatch ? sa : sa + 1, abatch ? 3 : 2, t, -1, 1);
  mlx_array b0 = gpu_rand(b_batched ? sb : sb + 1, b_batched ? 3 : 2, t, -1, 1);
  mlx_array a = cols_view(a0, apad ? 1 : 0, K);
  mlx_array bs = cols_view(b0, bpad ? 1 : 0, tb ? K : N), b = mlx_array_new();
  CHECK_OK(tb ? mlx_swapaxes(&b, bs, -1, -2, test_stream()) : mlx_array_set(&b, bs));
  mlx_array g = mlx_array_new(), c = mlx_array_new(), cb = mlx_array_new();
  char what[160];
  snprintf(what, sizeof what, "gemv dtype %d batch %d M %d K %d N %d tb %d apad %d bpad %d bb %d",
           (int)t, abatch, M, K, N, tb, apad, bpad, b_batched);
  gemv_delta();
  CHECK_OK(mlx_matmul(&g, a, b, gpu_stream));
  CHECK_OK(mlx_array_eval(g));
  unsigned long want = meant_for_gemv(t, abatch, M, K, N, tb, apad, bpad, b_batched);
  unsigned long got = gemv_delta();
  CHECK_MSG(got == want, "%s: %lu GEMV launches, %lu wanted", what, got, want);
  setenv("LACE_CUDA_GEMV", "0", 1);
  CHECK_OK(mlx_matmul(&cb, a, b, gpu_stream));
  CHECK_OK(mlx_array_eval(cb));
  unsetenv("LACE_CUDA_GEMV");
  got = gemv_delta();
  CHECK_MSG(got == 0, "%s: %lu GEMV launches under LACE_CUDA_GEMV=0", what, got);
  CHECK_OK(mlx_matmul(&c, a, b, test_stream()));
  CHECK_MSG(made_on_gpu(g), "%s: not made on the GPU", what);
  CHECK_MSG(made_on_gpu(cb), "%s: cuBLAS result not made on the GPU", what);
  /* a split's slices added by a second kernel or by each tile's last block:
   * the same bits, twice in a row (the counters are back at zero) */
  for (int f = 0; f < 3; f++) {
    mlx_array gf = mlx_array_new();
    setenv("LACE_CUDA_GEMV_FINISH", f == 1 ? "kernel" : "last", 1);
    CHECK_OK(mlx_matmul(&gf, a, b, gpu_stream));
    CHECK_OK(mlx_array_eval(gf));
    unsetenv("LACE_CUDA_GEMV_FINISH");
    long d = gpu_count_differing(g, gf);
    CHECK_MSG(d == 0, "%s: %ld elements differ with LACE_CUDA_GEMV_FINISH=%s", what, d,
              f == 1 ? "kernel" : "last");
    mlx_array_free(gf);
  }
  gemv_delta();
  double tol = tol_of(t, K);
  CHECK_SAME(g, c, tol, tol, what);
  CHECK_SAME(g, cb, tol, tol, what);
  mlx_array arr[] = {a0, b0, a, bs, b, g, c, cb};
  for (size_t i = 0; i < sizeof arr / sizeof *arr; i++) mlx_array_free(arr[i]);
}

static const mlx_dtype types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16};

static void test_shapes(void) {
  static const int Ms[] = {1, 2, 3, 4, 5, 8, 9};
  static const int KNs[][2] = {{8, 8}, {64, 512}, {1000, 24}, {2048, 2048}, {5632, 520},
                               {4096, 4000}, {16, 3000}};
  for (size_t t = 0; t < 3; t++)
    for (size_t m = 0; m < sizeof Ms / sizeof *Ms; m++)
      for (size_t s = 0; s < sizeof KNs / sizeof *KNs; s++)
        for (int tb = 0; tb < 2; tb++) {
          if (Ms[m] > 3 && KNs[s][0] * KNs[s][1] > 3000000) continue; /* CPU time */
          gemv_case(types[t], 0, Ms[m], KNs[s][0], KNs[s][1], tb, 0, 0, false);
        }
}

static void test_layouts(void) {
  for (size_t t = 0; t < 3; t++)
    for (int tb = 0; tb < 2; tb++) {
      gemv_case(types[t], 3, 1, 256, 136, tb, 0, 0, false); /* 3 batches of 1 row */
      gemv_case(types[t], 2, 4, 256, 136, tb, 0, 0, false); /* 8 rows in all */
      gemv_case(types[t], 3, 3, 256, 136, tb, 0, 0, false); /* 9 rows: cuBLAS */
      gemv_case(types[t], 2, 2, 256, 136, tb, 0, 0, true);  /* b batched: cuBLAS */
      gemv_case(types[t], 0, 3, 256, 136, tb, 8, 0, false); /* strided rows of a */
      gemv_case(types[t], 0, 2, 256, 136, tb, 0, 8, false); /* strided rows of b */
      gemv_case(types[t], 0, 2, 256, 136, tb, 1, 0, false); /* a misaligned */
      gemv_case(types[t], 0, 2, 256, 136, tb, 0, 1, false); /* b misaligned */
      gemv_case(types[t], 0, 1, 100, 133, tb, 0, 0, false); /* ragged vectors */
      gemv_case(types[t], 0, 1, 1, 7, tb, 0, 0, false);
      gemv_case(types[t], 0, 2, 7, 1, tb, 0, 0, false);
    }
}

/* Fixed inputs whose products are exact in every order: each output is a
 * known small integer, so the GPU result is checked exactly. */
static void test_exact(void) {
  enum { K = 3000, N = 64 };
  float *av = malloc(sizeof(float) * K), *bv = malloc(sizeof(float) * K * N);
  double want[N];
  for (int n = 0; n < N; n++) want[n] = 0;
  for (int k = 0; k < K; k++) {
    av[k] = (float)(k % 5 - 2);
    for (int n = 0; n < N; n++) {
      bv[k * N + n] = (float)((k + n) % 3 - 1);
      want[n] += (double)av[k] * bv[k * N + n];
    }
  }
  int sa[] = {1, K}, sb[] = {K, N};
  mlx_array a = mlx_array_new_data(av, sa, 2, MLX_FLOAT32),
            b = mlx_array_new_data(bv, sb, 2, MLX_FLOAT32), g = mlx_array_new();
  gemv_delta();
  CHECK_OK(mlx_matmul(&g, a, b, gpu_stream));
  CHECK_OK(mlx_array_eval(g));
  CHECK_MSG(gemv_delta() == 1, "exact product: not made by the GEMV kernels");
  CHECK_CLOSE(g, want, N, 0, 0);
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(g);
  free(av);
  free(bv);
}

int main(void) {
  if (!gpu_test_init()) return TEST_SKIP;
  /* every product runs its evaluator: a replayed CUDA graph runs none and
   * launches nothing the counter sees */
  lc_gpu_graphs_set(0);
  test_seed(20261205);
  size_t base = test_active_memory();
  test_exact();
  test_layouts();
  test_shapes();
  return gpu_test_done(base);
}
