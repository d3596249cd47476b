/* mlx-c's example.c and example-float64.c, written anew as checks: arrays
 * from host data, scalar arrays, divide/multiply by scalars of another
 * dtype (type promotion), results written over an input handle, arange,
 * and printing (mlx_array_tostring) against MLX's own output. */
#include "integration.h"
#include "../data/integration_print.h"

static void check_dtype(mlx_array a, mlx_dtype t) {
  CHECK_MSG(mlx_array_dtype(a) == t, "dtype %d, expected %d", (int)mlx_array_dtype(a), (int)t);
}

/* example.c: float32 data divided by an int32 scalar stays float32. */
static void test_example_float32(void) {
  mlx_stream s = test_stream();
  float data[6] = {1, 2, 3, 4, 5, 6};
  int shape[2] = {2, 3};
  mlx_array arr = mlx_array_new_data(data, shape, 2, MLX_FLOAT32);
  mlx_array two = mlx_array_new_int(2), res = mlx_array_new(), ar = mlx_array_new();
  CHECK_SHAPE(arr, 2, 3);
  check_dtype(two, MLX_INT32);
  CHECK(mlx_array_ndim(two) == 0 && mlx_array_size(two) == 1);
  CHECK_PRINT(arr, "array([[1, 2, 3],\n       [4, 5, 6]], dtype=float32)");

  NEED(mlx_divide(&res, arr, two, s));
  check_dtype(res, MLX_FLOAT32);
  CHECK_SHAPE(res, 2, 3);
  double half[6] = {0.5, 1, 1.5, 2, 2.5, 3};
  CHECK_CLOSE(res, half, 6, 0, 0);
  CHECK_PRINT(res, "array([[0.5, 1, 1.5],\n       [2, 2.5, 3]], dtype=float32)");

  NEED(mlx_arange(&ar, 0, 3, 0.5, MLX_FLOAT32, s));
  check_dtype(ar, MLX_FLOAT32);
  CHECK_SHAPE(ar, 6);
  double steps[6] = {0, 0.5, 1, 1.5, 2, 2.5};
  CHECK_CLOSE(ar, steps, 6, 0, 0);
  CHECK_PRINT(ar, "array([0, 0.5, 1, 1.5, 2, 2.5], dtype=float32)");
skip:
  mlx_array_free(arr);
  mlx_array_free(two);
  mlx_array_free(res);
  mlx_array_free(ar);
}

/* example-float64.c: float64 data times a float64 scalar, then divided by
 * an int32 scalar, each result written over the input handle. */
static void test_example_float64(void) {
  mlx_stream s = test_stream();
  double data[6] = {1, 2, 3, 4, 5, 6};
  int shape[2] = {2, 3};
  mlx_array arr = mlx_array_new_data(data, shape, 2, MLX_FLOAT64);
  mlx_array three = mlx_array_new_float64(3), two = mlx_array_new_int(2);
  check_dtype(arr, MLX_FLOAT64);
  check_dtype(three, MLX_FLOAT64);
  CHECK_PRINT(arr, "array([[1, 2, 3],\n       [4, 5, 6]], dtype=float64)");
  CHECK_PRINT(three, "array(3, dtype=float64)");

  NEED(mlx_multiply(&arr, arr, three, s));
  check_dtype(arr, MLX_FLOAT64);
  double times3[6] = {3, 6, 9, 12, 15, 18};
  CHECK_CLOSE(arr, times3, 6, 0, 0);

  NEED(mlx_divide(&arr, arr, two, s));
  check_dtype(arr, MLX_FLOAT64);
  double halves[6] = {1.5, 3, 4.5, 6, 7.5, 9};
  CHECK_CLOSE(arr, halves, 6, 0, 0);
  CHECK_PRINT(arr, "array([[1.5, 3, 4.5],\n       [6, 7.5, 9]], dtype=float64)");

  NEED(mlx_arange(&arr, 0, 3, 0.5, MLX_FLOAT64, s));
  check_dtype(arr, MLX_FLOAT64);
  double steps[6] = {0, 0.5, 1, 1.5, 2, 2.5};
  CHECK_CLOSE(arr, steps, 6, 0, 0);
  CHECK_PRINT(arr, "array([0, 0.5, 1, 1.5, 2, 2.5], dtype=float64)");
skip:
  mlx_array_free(arr);
  mlx_array_free(three);
  mlx_array_free(two);
}

/* Printing: every dtype, scalars, nesting, empty arrays, special values and
 * summarised (longer than 6) dimensions, against MLX's text. */
static void test_print_table(void) {
  size_t ncases = sizeof print_cases / sizeof print_cases[0];
  for (size_t i = 0; i < ncases; i++) {
    const struct print_case *c = &print_cases[i];
    static const double none[1] = {0};
    mlx_array f = mlx_array_new_data(c->vals ? c->vals : none, c->shape, c->ndim, MLX_FLOAT64);
    mlx_array a = mlx_array_new();
    CHECK_OK(mlx_astype(&a, f, c->dtype, test_stream()));
    int skipped = CHECK_PRINT(a, c->expect);
    mlx_array_free(a);
    mlx_array_free(f);
    if (skipped) break; /* one SKIP line for the whole table */
  }
}

/* Printing evaluates: a lazy result prints its values, and printing a view
 * (a transposed array) prints it in logical order. */
static void test_print_lazy_and_views(void) {
  mlx_stream s = test_stream();
  int32_t data[6] = {1, 2, 3, 4, 5, 6};
  int shape[2] = {2, 3};
  mlx_array a = mlx_array_new_data(data, shape, 2, MLX_INT32), one = mlx_array_new_int(1);
  mlx_array sum = mlx_array_new(), t = mlx_array_new();
  CHECK_OK(mlx_add(&sum, a, one, s));
  CHECK_PRINT(sum, "array([[2, 3, 4],\n       [5, 6, 7]], dtype=int32)");
  NEED(mlx_transpose(&t, a, s));
  CHECK_PRINT(t, "array([[1, 4],\n       [2, 5],\n       [3, 6]], dtype=int32)");
skip:
  mlx_array_free(a);
  mlx_array_free(one);
  mlx_array_free(sum);
  mlx_array_free(t);
}

int main(void) {
  test_init();
  size_t before = test_active_memory();
  test_example_float32();
  test_example_float64();
  test_print_table();
  test_print_lazy_and_views();
  CHECK_MSG(test_active_memory() == before, "active memory %zu, was %zu", test_active_memory(),
            before);
  return integ_done();
}
