/* Reductions, scans, softmax and sorts on public views (mlx_transpose_axes,
 * strided mlx_slice, mlx_broadcast_to) agree with the same ops on
 * contiguous copies. Sizes are large enough for the threaded paths, and
 * the random permutations exercise the row, column and generic
 * strategies. A sum's rounding depends on its order, which on the GPU
 * follows the layout: sums, means and (on the GPU) cumulative sums get,
 * beyond their relative tolerance, an absolute one of the same size times
 * the magnitude of the terms (4) times the square root of their count. */
#include "core/node.h"
#include "test.h"

static mlx_stream S;

static void check_same(const char *what, mlx_array a, mlx_array b, double rtol, double atol) {
  size_t n = mlx_array_size(a);
  CHECK_MSG(n == mlx_array_size(b) && mlx_array_ndim(a) == mlx_array_ndim(b) &&
                mlx_array_dtype(a) == mlx_array_dtype(b),
            "%s: metadata differs", what);
  double *x = test_values(a), *y = test_values(b);
  bool ok = x && y;
  size_t bad = 0;
  for (size_t i = 0; ok && i < n; i++) {
    double d = fabs(x[i] - y[i]);
    if (!((isnan(x[i]) && isnan(y[i])) || x[i] == y[i] || d <= rtol * fabs(y[i]) + atol + 1e-30)) {
      ok = false;
      bad = i;
    }
  }
  CHECK_MSG(ok, "%s: element %zu: %.9g vs %.9g", what, bad, x ? x[bad] : 0, y ? y[bad] : 0);
  free(x);
  free(y);
}

/* Runs every op on view v and on its contiguous copy c. */
static void compare_ops(const char *tag, mlx_array v, mlx_array c) {
  int nd = (int)mlx_array_ndim(v);
  mlx_array a = mlx_array_new(), b = mlx_array_new();
  char what[96];
  const int *shape = mlx_array_shape(v);
#define BOTH_ABS(NAME, CALL_A, CALL_B, RTOL, ATOL)             \
  do {                                                         \
    snprintf(what, sizeof what, "%s %s", tag, NAME);           \
    CHECK_OK(CALL_A);                                          \
    CHECK_OK(CALL_B);                                          \
    check_same(what, a, b, RTOL, ATOL);                        \
  } while (0)
#define BOTH(NAME, CALL_A, CALL_B, RTOL) BOTH_ABS(NAME, CALL_A, CALL_B, RTOL, 0)
  for (int mask = 1; mask < (1 << nd); mask++) {
    int axes[4], k = 0;
    for (int d = 0; d < nd; d++)
      if (mask >> d & 1) axes[k++] = d;
    bool kd = mask & 1;
    double count = 1;
    for (int j = 0; j < k; j++) count *= shape[axes[j]];
    BOTH_ABS("sum", mlx_sum_axes(&a, v, axes, (size_t)k, kd, S),
             mlx_sum_axes(&b, c, axes, (size_t)k, kd, S), 1e-6, 4e-6 * sqrt(count));
    BOTH("max", mlx_max_axes(&a, v, axes, (size_t)k, kd, S),
         mlx_max_axes(&b, c, axes, (size_t)k, kd, S), 0);
    BOTH("min", mlx_min_axes(&a, v, axes, (size_t)k, kd, S),
         mlx_min_axes(&b, c, axes, (size_t)k, kd, S), 0);
    BOTH_ABS("mean", mlx_mean_axes(&a, v, axes, (size_t)k, kd, S),
             mlx_mean_axes(&b, c, axes, (size_t)k, kd, S), 1e-6, 4e-6 / sqrt(count));
    BOTH("var", mlx_var_axes(&a, v, axes, (size_t)k, kd, 1, S),
         mlx_var_axes(&b, c, axes, (size_t)k, kd, 1, S), 1e-5);
    BOTH("logsumexp", mlx_logsumexp_axes(&a, v, axes, (size_t)k, kd, S),
         mlx_logsumexp_axes(&b, c, axes, (size_t)k, kd, S), 1e-6);
    BOTH("softmax", mlx_softmax_axes(&a, v, axes, (size_t)k, false, S),
         mlx_softmax_axes(&b, c, axes, (size_t)k, false, S), 1e-5);
  }
  for (int d = 0; d < nd; d++) {
    BOTH("argmax", mlx_argmax_axis(&a, v, d, false, S), mlx_argmax_axis(&b, c, d, false, S), 0);
    BOTH_ABS("cumsum", mlx_cumsum(&a, v, d, d & 1, true, S),
             mlx_cumsum(&b, c, d, d & 1, true, S), 0,
             test_on_gpu() ? 4e-6 * sqrt((double)shape[d]) : 0);
    BOTH("cummax", mlx_cummax(&a, v, d, false, false, S),
         mlx_cummax(&b, c, d, false, false, S), 0);
    BOTH("sort", mlx_sort_axis(&a, v, d, S), mlx_sort_axis(&b, c, d, S), 0);
    BOTH("argsort", mlx_argsort_axis(&a, v, d, S), mlx_argsort_axis(&b, c, d, S), 0);
    BOTH("topk", mlx_topk_axis(&a, v, 3, d, S), mlx_topk_axis(&b, c, 3, d, S), 0);
  }
  BOTH("argmax all", mlx_argmax(&a, v, true, S), mlx_argmax(&b, c, true, S), 0);
  BOTH("sort all", mlx_sort(&a, v, S), mlx_sort(&b, c, S), 0);
#undef BOTH
#undef BOTH_ABS
  mlx_array_free(a);
  mlx_array_free(b);
}

int main(void) {
  test_init();
  S = test_stream();
  size_t before = test_active_memory();
  int shape[3] = {37, 64, 53};
  mlx_array x = test_rand_f32(shape, 3, -4, 4);
  const int perms[4][3] = {{2, 1, 0}, {1, 0, 2}, {0, 2, 1}, {2, 0, 1}};
  for (int p = 0; p < 4; p++) {
    mlx_array v = mlx_array_new(), c = mlx_array_new();
    CHECK_OK(mlx_transpose_axes(&v, x, perms[p], 3, S));
    CHECK_OK(mlx_contiguous(&c, v, false, S));
    mlx_array_eval(v);
    mlx_array_eval(c);
    CHECK_MSG(!lc_node_is_contiguous(v.ctx) && lc_node_is_contiguous(c.ctx),
              "transpose %d is not a strided view", p);
    char tag[32];
    snprintf(tag, sizeof tag, "transpose %d", p);
    compare_ops(tag, v, c);
    mlx_array_free(v);
    mlx_array_free(c);
  }
  /* every other element along two axes */
  int start[3] = {1, 0, 2}, stop[3] = {37, 64, 53}, step[3] = {2, 3, 1};
  mlx_array v = mlx_array_new(), c = mlx_array_new();
  CHECK_OK(mlx_slice(&v, x, start, 3, stop, 3, step, 3, S));
  CHECK_OK(mlx_contiguous(&c, v, false, S));
  mlx_array_eval(v);
  CHECK(!lc_node_is_contiguous(v.ctx));
  compare_ops("slice", v, c);
  /* a broadcast row */
  int row[2] = {1, 53}, bshape[2] = {300, 53};
  mlx_array r = test_rand_f32(row, 2, -1, 1);
  CHECK_OK(mlx_broadcast_to(&v, r, bshape, 2, S));
  CHECK_OK(mlx_contiguous(&c, v, false, S));
  compare_ops("broadcast", v, c);
  mlx_array_free(r);
  mlx_array_free(v);
  mlx_array_free(c);
  mlx_array_free(x);
  CHECK_MSG(test_active_memory() == before, "leaked %zu bytes", test_active_memory() - before);
  return test_done();
}
