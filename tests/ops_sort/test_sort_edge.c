/* Sorting: errors, stability, large inputs over threads, topk edges, leaks. */
#include "test.h"

static mlx_stream S;

static void test_errors(void) {
  float v[6] = {3, 1, 2, 6, 5, 4};
  int sh[2] = {2, 3};
  mlx_array x = mlx_array_new_data(v, sh, 2, MLX_FLOAT32), r = mlx_array_new();
  CHECK_FAILS(mlx_sort_axis(&r, x, 2, S), "mlx_sort_axis: axis 2 is out of bounds");
  CHECK_FAILS(mlx_argsort_axis(&r, x, -3, S), "out of bounds");
  CHECK_FAILS(mlx_partition_axis(&r, x, 3, 1, S), "kth 3 is out of range");
  CHECK_FAILS(mlx_argpartition(&r, x, -7, S), "kth -7 is out of range");
  CHECK_FAILS(mlx_topk_axis(&r, x, 4, 1, S), "k 4 is out of range");
  CHECK_FAILS(mlx_topk(&r, x, -1, S), "k -1 is out of range");
  mlx_array e = mlx_array_new();
  CHECK_FAILS(mlx_sort(&r, e, S), "empty array");
  CHECK(r.ctx == NULL);
  /* valid edges */
  CHECK_OK(mlx_topk_axis(&r, x, 0, 1, S));
  CHECK_SHAPE(r, 2, 0);
  CHECK_OK(mlx_topk_axis(&r, x, 2, 1, S));
  double t2[4] = {2, 3, 5, 6};
  CHECK_CLOSE(r, t2, 4, 0, 0);
  CHECK_OK(mlx_topk(&r, x, 3, S));
  double t3[3] = {4, 5, 6};
  CHECK_CLOSE(r, t3, 3, 0, 0);
  CHECK_OK(mlx_partition_axis(&r, x, -1, 0, S));
  CHECK_SHAPE(r, 2, 3);
  CHECK_OK(mlx_argsort_axis(&r, x, 0, S));
  double a0[6] = {0, 0, 0, 1, 1, 1};
  CHECK_CLOSE(r, a0, 6, 0, 0);
  mlx_array_free(x);
  mlx_array_free(r);
}

static void test_stability_and_large(void) {
  enum { N = 1 << 20 };
  int32_t *v = malloc(sizeof(int32_t) * N);
  for (int i = 0; i < N; i++) v[i] = (int32_t)(test_rand_u64() % 1000) - 500;
  int sh[1] = {N};
  mlx_array x = mlx_array_new_data(v, sh, 1, MLX_INT32), r = mlx_array_new();
  CHECK_OK(mlx_argsort(&r, x, S));
  mlx_array_eval(r);
  const uint32_t *ix = mlx_array_data_uint32(r);
  bool ok = true;
  char *seen = calloc(N, 1);
  for (int i = 0; i < N && ok; i++) {
    ok = ix[i] < N && !seen[ix[i]];
    if (ok) seen[ix[i]] = 1;
    if (ok && i > 0)
      ok = v[ix[i - 1]] < v[ix[i]] || (v[ix[i - 1]] == v[ix[i]] && ix[i - 1] < ix[i]);
  }
  CHECK_MSG(ok, "argsort is not a stable sorting permutation");
  free(seen);
  /* float sort of a 2-D array along each axis, many rows (threads) */
  int s2[2] = {512, 700};
  mlx_array f = test_rand_f32(s2, 2, -10, 10);
  for (int axis = 0; axis < 2; axis++) {
    CHECK_OK(mlx_sort_axis(&r, f, axis, S));
    mlx_array sum_in = mlx_array_new(), sum_out = mlx_array_new();
    mlx_sum_axis(&sum_in, f, axis, false, S);
    mlx_sum_axis(&sum_out, r, axis, false, S);
    double *a = test_values(sum_in), *b = test_values(sum_out), *sv = test_values(r);
    int L = s2[axis], other = s2[1 - axis];
    ok = true;
    for (int j = 0; j < other && ok; j++) ok = fabs(a[j] - b[j]) < 1e-3;
    for (int j = 0; j < other && ok; j++)
      for (int i = 1; i < L && ok; i++) {
        size_t p = axis ? (size_t)j * L + i : (size_t)i * other + j;
        size_t q = axis ? p - 1 : p - (size_t)other;
        ok = sv[q] <= sv[p];
      }
    CHECK_MSG(ok, "sort along axis %d is wrong", axis);
    free(a);
    free(b);
    free(sv);
    mlx_array_free(sum_in);
    mlx_array_free(sum_out);
  }
  /* topk of the large int array: the k largest, ascending */
  CHECK_OK(mlx_topk(&r, x, 5, S));
  double *tk = test_values(r);
  int cnt499 = 0;
  for (int i = 0; i < N; i++) cnt499 += v[i] == 499;
  CHECK(tk && tk[4] == 499 && tk[0] <= tk[1] && (cnt499 >= 5 ? tk[0] == 499 : tk[0] < 499));
  free(tk);
  free(v);
  mlx_array_free(f);
  mlx_array_free(x);
  mlx_array_free(r);
}

static void test_nan_last(void) {
  float v[5] = {NAN, 1, -INFINITY, NAN, 0};
  int sh[1] = {5};
  mlx_array x = mlx_array_new_data(v, sh, 1, MLX_FLOAT32), r = mlx_array_new();
  CHECK_OK(mlx_sort(&r, x, S));
  double e[5] = {-INFINITY, 0, 1, NAN, NAN};
  CHECK_CLOSE(r, e, 5, 0, 0);
  CHECK_OK(mlx_argsort(&r, x, S));
  double ei[5] = {2, 4, 1, 0, 3};
  CHECK_CLOSE(r, ei, 5, 0, 0);
  CHECK_OK(mlx_topk(&r, x, 2, S)); /* NaN ranks above everything */
  double et[2] = {NAN, NAN};
  CHECK_CLOSE(r, et, 2, 0, 0);
  mlx_array_free(x);
  mlx_array_free(r);
}

int main(void) {
  test_init();
  S = test_stream();
  size_t before = test_active_memory();
  test_errors();
  test_nan_last();
  test_stability_and_large();
  CHECK_MSG(test_active_memory() == before, "leaked %zu bytes", test_active_memory() - before);
  return test_done();
}
