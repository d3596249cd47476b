/* mlx_array_tostring: MLX's printed form, golden strings. */
#include <complex.h>

#include "ops/elementwise.h"
#include "test.h"

static void check_str(mlx_array a, const char *want) {
  mlx_string s = mlx_string_new();
  int rc = mlx_array_tostring(&s, a);
  CHECK_MSG(rc == 0, "tostring failed: %s", test_last_error);
  const char *got = mlx_string_data(s);
  CHECK_MSG(got && !strcmp(got, want), "got\n%s\nwant\n%s", got ? got : "(null)", want);
  mlx_string_free(s);
}

static mlx_array arange_shaped(int n, const int *shape, int nd, mlx_dtype t) {
  mlx_array a = mlx_array_new();
  mlx_arange(&a, 0, n, 1, t, test_stream());
  /* reshape through a copy of the data */
  double *v = test_values(a);
  mlx_array d = mlx_array_new_data(v, shape, nd, MLX_FLOAT64), out = mlx_array_new();
  mlx_astype(&out, d, t, test_stream());
  free(v);
  mlx_array_free(d);
  mlx_array_free(a);
  return out;
}

int main(void) {
  test_init();
  size_t before = test_active_memory();
  int32_t iv[3] = {1, 2, 3};
  int s3[1] = {3};
  mlx_array a = mlx_array_new_data(iv, s3, 1, MLX_INT32);
  check_str(a, "array([1, 2, 3], dtype=int32)");
  mlx_array_free(a);

  float fv[2] = {1.5f, 2.0f};
  int s2[1] = {2};
  a = mlx_array_new_data(fv, s2, 1, MLX_FLOAT32);
  check_str(a, "array([1.5, 2], dtype=float32)");
  mlx_array_free(a);

  int s22[2] = {2, 2};
  int32_t m[4] = {1, 2, 3, 4};
  a = mlx_array_new_data(m, s22, 2, MLX_INT32);
  check_str(a, "array([[1, 2],\n       [3, 4]], dtype=int32)");
  mlx_array_free(a);

  int s222[3] = {2, 2, 2};
  a = arange_shaped(8, s222, 3, MLX_INT64);
  check_str(a, "array([[[0, 1],\n        [2, 3]],\n       [[4, 5],\n        [6, 7]]], dtype=int64)");
  mlx_array_free(a);

  /* summarised: more than 6 entries show 3 ... 3 */
  int s10[1] = {10};
  a = arange_shaped(10, s10, 1, MLX_UINT8);
  check_str(a, "array([0, 1, 2, ..., 7, 8, 9], dtype=uint8)");
  mlx_array_free(a);
  int s82[2] = {8, 2};
  a = arange_shaped(16, s82, 2, MLX_INT16);
  check_str(a, "array([[0, 1],\n       [2, 3],\n       [4, 5],\n       ...,\n       [10, 11],\n"
               "       [12, 13],\n       [14, 15]], dtype=int16)");
  mlx_array_free(a);

  bool bv[2] = {true, false};
  a = mlx_array_new_data(bv, s2, 1, MLX_BOOL);
  check_str(a, "array([true, false], dtype=bool)");
  mlx_array_free(a);

  a = mlx_array_new_float(0.1f);
  check_str(a, "array(0.1, dtype=float32)");
  mlx_array_free(a);
  a = mlx_array_new_int(-7);
  check_str(a, "array(-7, dtype=int32)");
  mlx_array_free(a);
  float big[3] = {1e8f, -2.5e-7f, 123456.7f};
  a = mlx_array_new_data(big, s3, 1, MLX_FLOAT32);
  check_str(a, "array([1e+08, -2.5e-07, 123457], dtype=float32)");
  mlx_array_free(a);
  int8_t i8[2] = {-5, 100};
  a = mlx_array_new_data(i8, s2, 1, MLX_INT8);
  check_str(a, "array([-5, 100], dtype=int8)");
  mlx_array_free(a);

  float _Complex cv[2] = {1.0f + 2.0f * I, -0.5f - 3.0f * I};
  a = mlx_array_new_data(cv, s2, 1, MLX_COMPLEX64);
  check_str(a, "array([1+2j, -0.5-3j], dtype=complex64)");
  mlx_array_free(a);

  mlx_array h = mlx_array_new();
  a = mlx_array_new_data(fv, s2, 1, MLX_FLOAT32);
  mlx_astype(&h, a, MLX_FLOAT16, test_stream());
  check_str(h, "array([1.5, 2], dtype=float16)");
  mlx_astype(&h, a, MLX_BFLOAT16, test_stream());
  check_str(h, "array([1.5, 2], dtype=bfloat16)");
  mlx_array_free(h);
  mlx_array_free(a);

  /* empty arrays, and a broadcast (non-contiguous) view */
  int s0[1] = {0};
  a = mlx_array_new_data(NULL, s0, 1, MLX_FLOAT32);
  check_str(a, "array([], dtype=float32)");
  mlx_array_free(a);
  int s20[2] = {2, 0};
  a = mlx_array_new_data(NULL, s20, 2, MLX_FLOAT32);
  check_str(a, "array([[],\n       []], dtype=float32)");
  mlx_array_free(a);
  int s23[2] = {2, 3};
  a = mlx_array_new_data(iv, s3, 1, MLX_INT32);
  mlx_array bc = {lc_broadcast_to(a.ctx, 2, s23)};
  check_str(bc, "array([[1, 2, 3],\n       [1, 2, 3]], dtype=int32)");
  mlx_array_free(bc);
  mlx_array_free(a);

  /* a lazy array is evaluated first */
  mlx_array z = mlx_array_new();
  mlx_zeros(&z, s2, 1, MLX_FLOAT64, test_stream());
  check_str(z, "array([0, 0], dtype=float64)");
  mlx_array_free(z);

  mlx_string s = mlx_string_new();
  CHECK_FAILS(mlx_array_tostring(&s, mlx_array_new()), "empty");
  CHECK_FAILS(mlx_array_tostring(NULL, z), "NULL");
  CHECK(test_active_memory() == before);
  return test_done();
}
