/* The NCCL backend on one GPU: a strict init of "nccl" gives a
 * communicator of one rank, whose collectives on GPU arrays (queued on the
 * GPU stream) return their input (all_sum, all_max, all_min, all_gather,
 * sum_scatter over one rank), for float32, bfloat16, int32 and float16
 * (all_gather: any dtype, as bytes), in plain and in compiled graphs, on
 * arrays that are views; mismatched calls fail cleanly. Skips without a
 * GPU or without an NCCL library. Multi-GPU runs are tests/distributed's
 * mpirun tests on a machine with several GPUs. */
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"

typedef int (*coll_fn)(mlx_array *, const mlx_array, const mlx_distributed_group, const mlx_stream);

static mlx_distributed_group group;

static void check_identity(const char *name, coll_fn f, mlx_array x) {
  mlx_array y = mlx_array_new();
  CHECK_OK(f(&y, x, group, gpu_stream));
  CHECK_OK(mlx_array_eval(y));
  CHECK_SAME(y, x, 0, 0, name);
  mlx_array_free(y);
}

static mlx_distributed_group *closure_group;
static int compiled_body(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), two = mlx_array_new_float(2.0f), t = mlx_array_new(),
            s = mlx_array_new(), r = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  int rc = mlx_multiply(&t, x, two, gpu_stream);
  if (!rc) rc = mlx_distributed_all_sum(&s, t, *closure_group, gpu_stream);
  if (!rc) rc = mlx_add(&r, s, x, gpu_stream);
  if (!rc) {
    mlx_vector_array v = mlx_vector_array_new_value(r);
    mlx_vector_array_set(res, v);
    mlx_vector_array_free(v);
  }
  mlx_array_free(x);
  mlx_array_free(two);
  mlx_array_free(t);
  mlx_array_free(s);
  mlx_array_free(r);
  return rc;
}

int main(void) {
  if (!gpu_test_init()) return TEST_SKIP;
  if (!mlx_distributed_is_available("nccl")) {
    printf("SKIP: no NCCL library on this machine (mlx_distributed_is_available(\"nccl\") is false)\n");
    return TEST_SKIP;
  }
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  group = mlx_distributed_group_new();
  CHECK_OK(mlx_distributed_init(&group, true, "nccl"));
  CHECK(mlx_distributed_group_size(group) == 1);
  CHECK(mlx_distributed_group_rank(group) == 0);

  int shape[] = {37, 1000};
  const mlx_dtype types[] = {MLX_FLOAT32, MLX_BFLOAT16, MLX_INT32, MLX_FLOAT16};
  for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
    mlx_array x = gpu_rand(shape, 2, types[t], -100, 100);
    /* the input lives on the GPU before the collective runs */
    mlx_array g = mlx_array_new();
    CHECK_OK(mlx_multiply(&g, x, x, gpu_stream));
    CHECK_OK(mlx_array_eval(g));
    check_identity("all_sum", mlx_distributed_all_sum, g);
    check_identity("all_max", mlx_distributed_all_max, g);
    check_identity("all_min", mlx_distributed_all_min, g);
    check_identity("all_gather", mlx_distributed_all_gather, g);
    check_identity("sum_scatter", mlx_distributed_sum_scatter, g);
    check_identity("all_sum of a host array", mlx_distributed_all_sum, x);
    /* a strided view */
    mlx_array tr = mlx_array_new();
    CHECK_OK(mlx_transpose(&tr, g, gpu_stream));
    check_identity("all_sum of a transposed view", mlx_distributed_all_sum, tr);
    mlx_array_free(tr);
    mlx_array_free(g);
    mlx_array_free(x);
  }
  /* all_gather moves bytes: any dtype */
  {
    mlx_array x = gpu_rand(shape, 2, MLX_UINT16, 0, 60000), g = mlx_array_new();
    CHECK_OK(mlx_add(&g, x, x, gpu_stream));
    check_identity("all_gather uint16", mlx_distributed_all_gather, g);
    mlx_array_free(g);
    mlx_array_free(x);
  }
  /* in a compiled function: 3x */
  {
    closure_group = &group;
    mlx_device gdev = mlx_device_new_type(MLX_GPU, 0), cdev = mlx_device_new_type(MLX_CPU, 0);
    CHECK_OK(mlx_set_default_device(gdev)); /* where replays run */
    mlx_closure f = mlx_closure_new_func(compiled_body), cf = mlx_closure_new();
    CHECK_OK(mlx_compile(&cf, f, false));
    mlx_array x = gpu_rand(shape, 2, MLX_FLOAT32, -1, 1), three = mlx_array_new_float(3.0f),
              want = mlx_array_new();
    CHECK_OK(mlx_multiply(&want, x, three, test_stream()));
    for (int rep = 0; rep < 2; rep++) {
      mlx_vector_array in = mlx_vector_array_new_value(x), out = mlx_vector_array_new();
      CHECK_OK(mlx_closure_apply(&out, cf, in));
      mlx_array y = mlx_array_new();
      CHECK_OK(mlx_vector_array_get(&y, out, 0));
      CHECK_SAME(y, want, 1e-6, 1e-7, "compiled 2x + all_sum + x");
      mlx_array_free(y);
      mlx_vector_array_free(in);
      mlx_vector_array_free(out);
    }
    mlx_array_free(x);
    mlx_array_free(three);
    mlx_array_free(want);
    mlx_closure_free(cf);
    mlx_closure_free(f);
    CHECK_OK(mlx_set_default_device(cdev));
    mlx_device_free(gdev);
    mlx_device_free(cdev);
  }
  mlx_distributed_group_free(group);
  return test_done();
}
