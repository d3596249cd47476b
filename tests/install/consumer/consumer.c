/* A program built against an installed lace, the way a user would build
 * one: only <mlx/c/mlx.h> and the library. Computes (a + b) + b for
 * float32 data, checks the values and the version, exits 0 on success. */
#include <stdio.h>
#include <string.h>

#include "mlx/c/mlx.h"

int main(void) {
  mlx_stream s = mlx_default_cpu_stream_new();
  float a[4] = {1.5f, -2.0f, 3.25f, 0.0f}, b[4] = {0.5f, 4.0f, -1.25f, 7.0f};
  int shape[2] = {2, 2};
  mlx_array x = mlx_array_new_data(a, shape, 2, MLX_FLOAT32);
  mlx_array y = mlx_array_new_data(b, shape, 2, MLX_FLOAT32);
  mlx_array z = mlx_array_new();
  int bad = mlx_add(&z, x, y, s) || mlx_add(&z, z, y, s) || mlx_array_eval(z);
  const float *v = bad ? NULL : mlx_array_data_float32(z);
  for (int i = 0; v && i < 4; i++)
    if (v[i] != a[i] + 2 * b[i]) {
      fprintf(stderr, "consumer: element %d is %g, expected %g\n", i, v[i], a[i] + 2 * b[i]);
      bad = 1;
    }
  if (!v) bad = 1;
  mlx_string ver = mlx_string_new();
  if (mlx_version(&ver) || !mlx_string_data(ver) || !strlen(mlx_string_data(ver))) bad = 1;
  if (!bad) printf("consumer: ok (lace %s)\n", mlx_string_data(ver));
  mlx_string_free(ver);
  mlx_array_free(x);
  mlx_array_free(y);
  mlx_array_free(z);
  mlx_stream_free(s);
  return bad;
}
