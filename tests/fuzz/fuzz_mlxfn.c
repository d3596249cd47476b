/* Fuzz harness: importing exported functions (.mlxfn, MLX's format and
 * lace's). A file that imports is called with a few input sets (shapes the
 * checked-in exports take, and others that must be refused cleanly), and
 * whatever it returns is evaluated. */
#include "fuzz.h"

static void call_with(mlx_imported_function f, const int (*shapes)[3], const int *ndims, int nargs,
                      mlx_stream s) {
  mlx_vector_array args = mlx_vector_array_new(), res = mlx_vector_array_new();
  for (int k = 0; k < nargs; k++) {
    mlx_array a = mlx_array_new(), b = mlx_array_new_float(0.25f);
    if (mlx_full(&a, shapes[k], (size_t)ndims[k], b, MLX_FLOAT32, s) == 0)
      mlx_vector_array_append_value(args, a);
    mlx_array_free(a);
    mlx_array_free(b);
  }
  if (FUZZ_CALL(mlx_imported_function_apply(&res, f, args)) == 0) FUZZ_CALL(mlx_eval(res));
  mlx_vector_array_free(args);
  mlx_vector_array_free(res);
}

FUZZ_ENTRY(mlxfn) {
  fuzz_setup();
  const char *path = fuzz_write_temp(".mlxfn", data, size);
  if (!path) return 0;
  unsigned long seen = fuzz_errors;
  mlx_imported_function f = mlx_imported_function_new(path);
  unlink(path);
  if (!f.ctx) {
    if (fuzz_errors == seen) abort(); /* a refusal is reported */
    return 0;
  }
  mlx_stream s = mlx_default_cpu_stream_new();
  static const int a34[][3] = {{3, 4}, {4}}, a234[][3] = {{2, 3, 4}, {2, 2, 4}},
                   a23[][3] = {{2, 3}, {2, 3}, {2, 3}}, a4[][3] = {{4}};
  static const int n21[] = {2, 1}, n33[] = {3, 3}, n222[] = {2, 2, 2}, n1[] = {1};
  call_with(f, a34, n21, 2, s);
  call_with(f, a234, n33, 2, s);
  call_with(f, a23, n222, 3, s);
  call_with(f, a23, n222, 1, s);
  call_with(f, a4, n1, 1, s);
  call_with(f, a4, n1, 0, s);
  mlx_imported_function_free(f);
  mlx_stream_free(s);
  return 0;
}
