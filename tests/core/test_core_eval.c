/* Laziness and evaluation: deep chains, broadcasting through views,
 * intermediate buffers freed during eval, no leaks. */
#include "test.h"

static void test_broadcast_add(void) {
  float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30};
  int sa[2] = {2, 3}, sb[1] = {3};
  mlx_array x = mlx_array_new_data(a, sa, 2, MLX_FLOAT32), y = mlx_array_new_data(b, sb, 1, MLX_FLOAT32);
  mlx_array z = mlx_array_new();
  CHECK_OK(mlx_add(&z, x, y, test_stream()));
  CHECK_SHAPE(z, 2, 3);
  double ref[6] = {11, 22, 33, 14, 25, 36};
  CHECK_CLOSE(z, ref, 6, 0, 0);
  int si[1] = {2};
  int32_t iv[2] = {1, 2};
  mlx_array w = mlx_array_new_data(iv, si, 1, MLX_INT32);
  CHECK_FAILS(mlx_add(&z, x, w, test_stream()), "cannot be broadcast");
  mlx_array_free(x);
  mlx_array_free(y);
  mlx_array_free(z);
  mlx_array_free(w);
}

static void test_deep_chain(void) {
  size_t before = test_active_memory();
  mlx_array x = mlx_array_new_float(0.0f), one = mlx_array_new_float(1.0f);
  const int depth = 1000000;
  for (int i = 0; i < depth; i++) {
    mlx_array y = mlx_array_new();
    mlx_add(&y, x, one, test_stream());
    mlx_array_free(x);
    x = y;
  }
  float v = 0;
  CHECK_OK(mlx_array_item_float32(&v, x));
  CHECK(v == (float)depth);
  mlx_array_free(x);
  /* an unevaluated deep chain is also freed without recursion */
  x = mlx_array_new_float(0.0f);
  for (int i = 0; i < depth; i++) {
    mlx_array y = mlx_array_new();
    mlx_add(&y, x, one, test_stream());
    mlx_array_free(x);
    x = y;
  }
  mlx_array_free(x);
  mlx_array_free(one);
  CHECK(test_active_memory() == before);
}

static void test_intermediates_freed(void) {
  /* A chain of 64 adds over 1M floats: with intermediates freed as soon as
   * their consumer ran, the peak stays a few buffers, not 64. */
  int shape[1] = {1 << 20};
  mlx_array x = test_rand_f32(shape, 1, -1, 1), acc = mlx_array_new();
  mlx_array_set(&acc, x);
  for (int i = 0; i < 64; i++) {
    mlx_array y = mlx_array_new();
    mlx_add(&y, acc, x, test_stream());
    mlx_array_free(acc);
    acc = y;
  }
  mlx_reset_peak_memory();
  size_t base = test_active_memory();
  CHECK_OK(mlx_array_eval(acc));
  size_t peak = 0;
  mlx_get_peak_memory(&peak);
  CHECK_MSG(peak - base <= 3 * (4u << 20), "peak grew by %zu bytes", peak - base);
  mlx_array_free(acc);
  mlx_array_free(x);
}

static void test_astype_roundtrip(void) {
  float a[5] = {-2.75f, -0.5f, 0.0f, 1.5f, 300.25f};
  int s[1] = {5};
  mlx_array x = mlx_array_new_data(a, s, 1, MLX_FLOAT32), h = mlx_array_new(), i = mlx_array_new();
  CHECK_OK(mlx_astype(&h, x, MLX_FLOAT16, test_stream()));
  CHECK_OK(mlx_astype(&i, x, MLX_INT32, test_stream()));
  double ref_h[5] = {-2.75, -0.5, 0, 1.5, 300.25}, ref_i[5] = {-2, 0, 0, 1, 300};
  CHECK_CLOSE(h, ref_h, 5, 0, 0);
  CHECK_CLOSE(i, ref_i, 5, 0, 0);
  mlx_array_free(x);
  mlx_array_free(h);
  mlx_array_free(i);
}

int main(void) {
  test_init();
  test_broadcast_add();
  test_deep_chain();
  test_intermediates_freed();
  test_astype_roundtrip();
  return test_done();
}
