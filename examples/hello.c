/* hello: create arrays, add them (lazily), evaluate and print.
 * Uses only the public mlx-c API. Build: `make` (into build/examples/). */
#include <stdio.h>

#include "mlx/c/mlx.h"

/* Prints an array the way MLX does ("array([...], dtype=...)"). */
static int print_array(const char *label, mlx_array a) {
  mlx_string s = mlx_string_new();
  int rc = mlx_array_tostring(&s, a);
  if (!rc) printf("%s\n%s\n", label, mlx_string_data(s));
  mlx_string_free(s);
  return rc;
}

int main(void) {
  mlx_stream stream = mlx_default_cpu_stream_new();

  float data[6] = {1, 2, 3, 4, 5, 6};
  int shape[2] = {2, 3};
  mlx_array a = mlx_array_new_data(data, shape, 2, MLX_FLOAT32);
  mlx_array ten = mlx_array_new_float(10.0f);

  /* Nothing is computed here: sum is a node of the lazy graph. */
  mlx_array sum = mlx_array_new();
  int rc = mlx_add(&sum, a, ten, stream);
  if (!rc) rc = mlx_add(&sum, sum, a, stream); /* a + 10 + a */

  /* Evaluation happens on demand (printing, mlx_eval, data access). */
  rc = rc || print_array("a:", a) || print_array("a + 10 + a:", sum);

  float scalar = 0;
  if (!rc) rc = mlx_array_item_float32(&scalar, ten);
  if (!rc) printf("shape %d x %d, dtype float32, the scalar was %g\n", mlx_array_dim(sum, 0),
                  mlx_array_dim(sum, 1), scalar);

  mlx_array_free(sum);
  mlx_array_free(ten);
  mlx_array_free(a);
  mlx_stream_free(stream);
  if (rc) fprintf(stderr, "hello: failed\n");
  return rc;
}
