/* mlx_fast_metal_kernel_*: lace has no Metal back-end, as MLX built
 * without Metal. Configs take and check their settings; kernels are made
 * after their arguments are checked; apply fails with "No Metal back-end"
 * and leaves the outputs untouched; empty handles are refused; nothing
 * leaks (ASan). */
#include "test.h"

static void test_config(void) {
  mlx_fast_metal_kernel_config c = mlx_fast_metal_kernel_config_new();
  CHECK(c.ctx != NULL);
  int shape[] = {4, 5};
  CHECK_OK(mlx_fast_metal_kernel_config_add_output_arg(c, shape, 2, MLX_FLOAT32));
  CHECK_FAILS(mlx_fast_metal_kernel_config_add_output_arg(c, NULL, 2, MLX_FLOAT32), "shape");
  CHECK_OK(mlx_fast_metal_kernel_config_set_grid(c, 20, 1, 1));
  CHECK_FAILS(mlx_fast_metal_kernel_config_set_grid(c, 0, 1, 1), "positive");
  CHECK_OK(mlx_fast_metal_kernel_config_set_thread_group(c, 32, 1, 1));
  CHECK_FAILS(mlx_fast_metal_kernel_config_set_thread_group(c, 32, -1, 1), "positive");
  CHECK_OK(mlx_fast_metal_kernel_config_set_init_value(c, 0.5f));
  CHECK_OK(mlx_fast_metal_kernel_config_set_verbose(c, true));
  CHECK_OK(mlx_fast_metal_kernel_config_add_template_arg_dtype(c, "T", MLX_FLOAT32));
  CHECK_OK(mlx_fast_metal_kernel_config_add_template_arg_int(c, "N", 3));
  CHECK_OK(mlx_fast_metal_kernel_config_add_template_arg_bool(c, "B", true));
  CHECK_FAILS(mlx_fast_metal_kernel_config_add_template_arg_int(c, NULL, 3), "");
  mlx_fast_metal_kernel_config_free(c);
  mlx_fast_metal_kernel_config e = {NULL};
  CHECK_FAILS(mlx_fast_metal_kernel_config_set_grid(e, 1, 1, 1), "empty");
  CHECK_FAILS(mlx_fast_metal_kernel_config_set_verbose(e, true), "empty");
  mlx_fast_metal_kernel_config_free(e); /* an empty handle: nothing to do */
}

static void test_kernel(void) {
  const char *in_names[] = {"inp"}, *out_names[] = {"out"};
  mlx_vector_string in = mlx_vector_string_new_data(in_names, 1),
                    out = mlx_vector_string_new_data(out_names, 1), none = {NULL},
                    zero = mlx_vector_string_new();
  const char *src = "uint i = thread_position_in_grid.x; out[i] = metal::exp(inp[i]);";
  mlx_fast_metal_kernel k = mlx_fast_metal_kernel_new("myexp", in, out, src, "", true, false);
  CHECK(k.ctx != NULL);
  mlx_fast_metal_kernel bad = mlx_fast_metal_kernel_new("", in, out, src, "", true, false);
  CHECK(bad.ctx == NULL && strstr(test_last_error, "name"));
  bad = mlx_fast_metal_kernel_new("k", in, out, NULL, "", true, false);
  CHECK(bad.ctx == NULL && strstr(test_last_error, "source"));
  bad = mlx_fast_metal_kernel_new("k", none, out, src, "", true, false);
  CHECK(bad.ctx == NULL && strstr(test_last_error, "input_names"));
  bad = mlx_fast_metal_kernel_new("k", in, zero, src, "", true, false);
  CHECK(bad.ctx == NULL && strstr(test_last_error, "output"));

  mlx_fast_metal_kernel_config c = mlx_fast_metal_kernel_config_new();
  int shape[] = {8};
  CHECK_OK(mlx_fast_metal_kernel_config_add_output_arg(c, shape, 1, MLX_FLOAT32));
  CHECK_OK(mlx_fast_metal_kernel_config_set_grid(c, 8, 1, 1));
  CHECK_OK(mlx_fast_metal_kernel_config_set_thread_group(c, 8, 1, 1));
  mlx_array x = test_rand_f32(shape, 1, -1, 1);
  mlx_vector_array ins = mlx_vector_array_new_data(&x, 1), outs = mlx_vector_array_new();
  CHECK_FAILS(mlx_fast_metal_kernel_apply(&outs, k, ins, c, test_stream()), "No Metal back-end");
  CHECK(mlx_vector_array_size(outs) == 0);
  mlx_fast_metal_kernel ek = {NULL};
  mlx_fast_metal_kernel_config ec = {NULL};
  CHECK_FAILS(mlx_fast_metal_kernel_apply(&outs, ek, ins, c, test_stream()), "empty");
  CHECK_FAILS(mlx_fast_metal_kernel_apply(&outs, k, ins, ec, test_stream()), "empty");
  CHECK_FAILS(mlx_fast_metal_kernel_apply(NULL, k, ins, c, test_stream()), "");
  mlx_fast_metal_kernel_free(k);
  mlx_fast_metal_kernel_free(ek);
  mlx_fast_metal_kernel_config_free(c);
  mlx_vector_array_free(ins);
  mlx_vector_array_free(outs);
  mlx_array_free(x);
  mlx_vector_string_free(in);
  mlx_vector_string_free(out);
  mlx_vector_string_free(zero);
}

int main(void) {
  test_init();
  test_config();
  test_kernel();
  return test_done();
}
