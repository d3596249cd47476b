/* Without a usable GPU: lace built with CUDA reports GPU streams and
 * devices as clear errors (no silent CPU fallback); built without CUDA,
 * GPU streams run on the CPU, as before the backend existed. With a GPU
 * the test checks only the device count and exits as skipped. */
#include "gpu/gpu.h"
#include "gpu_util.h"

int main(void) {
  test_init();
  int n = -1;
  CHECK_OK(mlx_device_count(&n, MLX_GPU));
  CHECK(n == lc_gpu_count());
  if (n > 0) {
    printf("SKIP: this machine has %d GPU(s); the no-GPU behaviour is not testable here\n", n);
    return test_failures ? 1 : TEST_SKIP;
  }
  mlx_stream gpu = mlx_default_gpu_stream_new();
  mlx_device dev = mlx_device_new_type(MLX_GPU, 0);
  mlx_array one = mlx_array_new_float(1.0f), r = mlx_array_new();
  bool avail = true;
  CHECK_OK(mlx_device_is_available(&avail, dev));
  CHECK(!avail);
  if (lc_gpu_built()) {
    printf("lace built with CUDA, no GPU: %s\n", lc_gpu_unavailable_reason());
    CHECK_FAILS(mlx_add(&r, one, one, gpu), "no GPU is available");
    CHECK_FAILS(mlx_set_default_device(dev), "no GPU is available");
    CHECK_FAILS(mlx_synchronize(gpu), "no GPU");
    /* the CPU still works, and the default stayed the CPU */
    CHECK_OK(mlx_add(&r, one, one, mlx_stream_new()));
    float v = 0;
    CHECK_OK(mlx_array_item_float32(&v, r));
    CHECK(v == 2.0f);
  } else {
    printf("lace built without CUDA: GPU streams run on the CPU\n");
    CHECK_OK(mlx_add(&r, one, one, gpu));
    float v = 0;
    CHECK_OK(mlx_array_item_float32(&v, r));
    CHECK(v == 2.0f);
  }
  mlx_array_free(one);
  mlx_array_free(r);
  mlx_device_free(dev);
  mlx_stream_free(gpu);
  return test_done();
}
