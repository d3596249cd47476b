/* Allocation failure injection: whichever allocation fails during graph
 * building or evaluation, the call reports an error, nothing crashes, and
 * once everything is freed active memory is back to its baseline. */
#include "core/alloc.h"
#include "test.h"

static int run_once(void) {
  int shape[2] = {64, 33};
  mlx_array x = test_rand_f32(shape, 2, -1, 1);
  int bshape[1] = {33};
  mlx_array b = test_rand_f32(bshape, 1, -1, 1);
  mlx_array y = mlx_array_new(), z = mlx_array_new(), h = mlx_array_new();
  int rc = 0;
  rc |= mlx_add(&y, x, b, test_stream());
  rc |= mlx_astype(&h, y, MLX_FLOAT16, test_stream());
  rc |= mlx_add(&z, h, h, test_stream());
  rc |= mlx_array_eval(z);
  mlx_array_free(x);
  mlx_array_free(b);
  mlx_array_free(y);
  mlx_array_free(z);
  mlx_array_free(h);
  return rc;
}

int main(void) {
  test_init();
  size_t base = test_active_memory();
  CHECK_OK(run_once());
  CHECK(test_active_memory() == base);
  int failures_seen = 0;
  for (long n = 1; n <= 12; n++) {
    int before = test_errors_seen;
    lc_alloc_fail_after(n);
    int rc = run_once();
    lc_alloc_fail_after(0);
    if (rc) {
      failures_seen++;
      CHECK_MSG(test_errors_seen > before, "allocation %ld failed silently", n);
    }
    CHECK_MSG(test_active_memory() == base, "leak after failing allocation %ld", n);
  }
  CHECK(failures_seen > 0); /* the injection really hit something */
  return test_done();
}
