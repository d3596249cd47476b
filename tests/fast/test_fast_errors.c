/* Fast ops: argument validation (each failure reported with a clear
 * message, nothing leaked), dtype promotion of mixed inputs, and the
 * Metal custom-kernel entry points staying "not implemented". */
#include "test.h"

static mlx_array rnd(int ndim, const int *shape) { return test_rand_f32(shape, ndim, -1, 1); }

static mlx_array ints(int n) {
  int32_t v[64];
  for (int i = 0; i < n; i++) v[i] = i + 1;
  return mlx_array_new_data(v, &n, 1, MLX_INT32);
}

static void test_norm_errors(void) {
  mlx_stream s = test_stream();
  int s23[2] = {2, 3}, s3[1] = {3}, s4[1] = {4};
  mlx_array x = rnd(2, s23), w = rnd(1, s3), w2 = rnd(2, s23), w4 = rnd(1, s4);
  mlx_array scalar = mlx_array_new_float(1.0f), none = mlx_array_new(), y = mlx_array_new();
  mlx_array xi = ints(3);
  CHECK_FAILS(mlx_fast_rms_norm(&y, scalar, none, 1e-5f, s), "at least 1 dimension");
  CHECK_FAILS(mlx_fast_rms_norm(&y, x, w2, 1e-5f, s), "weight must have 1 dimension");
  CHECK_FAILS(mlx_fast_rms_norm(&y, x, w4, 1e-5f, s), "same size as the last dimension");
  CHECK_FAILS(mlx_fast_rms_norm(&y, xi, none, 1e-5f, s), "unsupported type int32");
  CHECK_FAILS(mlx_fast_rms_norm(&y, none, w, 1e-5f, s), "empty array");
  CHECK_FAILS(mlx_fast_rms_norm(NULL, x, w, 1e-5f, s), "result pointer");
  CHECK_FAILS(mlx_fast_layer_norm(&y, scalar, none, none, 1e-5f, s), "at least 1 dimension");
  CHECK_FAILS(mlx_fast_layer_norm(&y, x, w, w4, 1e-5f, s), "bias must have the same size");
  CHECK_FAILS(mlx_fast_layer_norm(&y, x, w, w2, 1e-5f, s), "bias must have 1 dimension");
  CHECK_FAILS(mlx_fast_layer_norm(&y, x, w4, none, 1e-5f, s), "weight must have the same size");
  CHECK_FAILS(mlx_fast_layer_norm(&y, xi, none, none, 1e-5f, s), "unsupported type");
  CHECK(y.ctx == NULL); /* failures leave the result untouched */

  /* int32 x with a float32 weight promotes to float32 (MLX's result_type). */
  mlx_array ones = mlx_array_new(), wf = mlx_array_new();
  float onev[3] = {1, 1, 1};
  wf = mlx_array_new_data(onev, s3, 1, MLX_FLOAT32);
  CHECK_OK(mlx_fast_rms_norm(&y, xi, wf, 0.0f, s));
  CHECK(mlx_array_dtype(y) == MLX_FLOAT32);
  double r = sqrt((1 + 4 + 9) / 3.0), ref[3] = {1 / r, 2 / r, 3 / r};
  CHECK_CLOSE(y, ref, 3, 1e-6, 0);
  /* layer_norm of a constant row is 0 (+ bias). */
  float cv[3] = {2.5f, 2.5f, 2.5f}, bv[3] = {1, -1, 0.5f};
  mlx_array c = mlx_array_new_data(cv, s3, 1, MLX_FLOAT32);
  mlx_array b = mlx_array_new_data(bv, s3, 1, MLX_FLOAT32);
  CHECK_OK(mlx_fast_layer_norm(&y, c, none, b, 1e-5f, s));
  double refb[3] = {1, -1, 0.5};
  CHECK_CLOSE(y, refb, 3, 0, 1e-6);
  mlx_array arrs[] = {x, w, w2, w4, scalar, y, xi, ones, wf, c, b};
  for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) mlx_array_free(arrs[i]);
}

static void test_rope_errors(void) {
  mlx_stream s = test_stream();
  int s2[2] = {4, 8}, s4[4] = {2, 1, 3, 8}, s5[1] = {5}, s22[2] = {2, 1};
  mlx_array x2 = rnd(2, s2), x = rnd(4, s4), f4 = rnd(1, (int[]){4}), f5 = rnd(1, s5);
  mlx_array none = mlx_array_new(), y = mlx_array_new();
  mlx_optional_float base = {10000.0f, true}, nobase = {0, false};
  CHECK_FAILS(mlx_fast_rope(&y, x2, 8, false, base, 1, 0, none, s), "at least 3 dimensions");
  CHECK_FAILS(mlx_fast_rope(&y, x, 7, false, base, 1, 0, none, s), "dims must be even");
  CHECK_FAILS(mlx_fast_rope(&y, x, 0, false, base, 1, 0, none, s), "dims must be positive");
  CHECK_FAILS(mlx_fast_rope(&y, x, 10, false, base, 1, 0, none, s), "must not exceed");
  CHECK_FAILS(mlx_fast_rope(&y, x, 8, false, base, 1, 0, f4, s), "only one of base or freqs");
  CHECK_FAILS(mlx_fast_rope(&y, x, 8, false, nobase, 1, 0, none, s), "neither base nor freqs");
  CHECK_FAILS(mlx_fast_rope(&y, x, 8, false, nobase, 1, 0, f5, s), "freqs must be one dim");
  int8_t xi8[48] = {0};
  mlx_array xi = mlx_array_new_data(xi8, (int[]){2, 3, 8}, 3, MLX_INT8);
  CHECK_FAILS(mlx_fast_rope(&y, xi, 8, false, base, 1, 0, none, s), "floating type");
  float fo = 1.0f;
  mlx_array offf = mlx_array_new_data(&fo, NULL, 0, MLX_FLOAT32);
  CHECK_FAILS(mlx_fast_rope_dynamic(&y, x, 8, false, base, 1, offf, none, s), "integer");
  mlx_array off3 = ints(3), off22 = mlx_array_new_data((int32_t[]){1, 2}, s22, 2, MLX_INT32);
  CHECK_FAILS(mlx_fast_rope_dynamic(&y, x, 8, false, base, 1, off3, none, s),
              "scalar or vector with 2 elements");
  CHECK_FAILS(mlx_fast_rope_dynamic(&y, x, 8, false, base, 1, off22, none, s),
              "at most one dimension");
  CHECK_FAILS(mlx_fast_rope_dynamic(&y, x, 8, false, base, 1, none, none, s), "empty array");
  /* freqs given as float64: cast to float32 like MLX; same result as the base
   * they encode (freqs_i = base^(2i/dims)). */
  double fd[4];
  for (int i = 0; i < 4; i++) fd[i] = pow(10000.0, i / 4.0);
  mlx_array ff = mlx_array_new_data(fd, (int[]){4}, 1, MLX_FLOAT64), y2 = mlx_array_new();
  CHECK_OK(mlx_fast_rope(&y, x, 8, true, nobase, 1, 3, ff, s));
  CHECK_OK(mlx_fast_rope(&y2, x, 8, true, base, 1, 3, none, s));
  double *v2 = test_values(y2);
  CHECK_CLOSE(y, v2, 48, 1e-6, 1e-6);
  free(v2);
  mlx_array arrs[] = {x2, x, f4, f5, y, y2, xi, offf, off3, off22, ff};
  for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) mlx_array_free(arrs[i]);
}

static void test_sdpa_errors(void) {
  mlx_stream s = test_stream();
  const char *fn_causal = "causal";
  int sq[4] = {1, 4, 3, 8}, sk[4] = {1, 2, 5, 8}, s3[3] = {4, 3, 8};
  mlx_array q = rnd(4, sq), k = rnd(4, sk), v = rnd(4, sk), q3 = rnd(3, s3);
  mlx_array none = mlx_array_new(), y = mlx_array_new();
  mlx_array kb = rnd(4, (int[]){2, 2, 5, 8}), kd = rnd(4, (int[]){1, 2, 5, 6});
  mlx_array k3h = rnd(4, (int[]){1, 3, 5, 8}), vh = rnd(4, (int[]){1, 1, 5, 8});
  mlx_array vl = rnd(4, (int[]){1, 2, 4, 8}), m = rnd(2, (int[]){3, 5});
  mlx_array mbad = rnd(2, (int[]){3, 4}), m5 = rnd(5, (int[]){1, 1, 1, 3, 5});
  mlx_array sinks_bad = rnd(1, (int[]){2});
  float scale = 0.35f;
  CHECK_FAILS(mlx_fast_scaled_dot_product_attention(&y, q3, k, v, scale, "", none, none, s),
              "expected to be rank 4");
  CHECK_FAILS(mlx_fast_scaled_dot_product_attention(&y, q, k, v, scale, "sliding", none, none, s),
              "invalid mask_mode 'sliding'");
  CHECK_FAILS(mlx_fast_scaled_dot_product_attention(&y, q, k, v, scale, fn_causal, m, none, s),
              "no array mask");
  CHECK_FAILS(mlx_fast_scaled_dot_product_attention(&y, q, kb, v, scale, "", none, none, s),
              "mismatching batch dimension");
  CHECK_FAILS(mlx_fast_scaled_dot_product_attention(&y, q, kd, v, scale, "", none, none, s),
              "matching last dimension");
  CHECK_FAILS(mlx_fast_scaled_dot_product_attention(&y, q, k, vh, scale, "", none, none, s),
              "matching n_kv_heads");
  CHECK_FAILS(mlx_fast_scaled_dot_product_attention(&y, q, k3h, k3h, scale, "", none, none, s),
              "multiple of n_kv_heads");
  CHECK_FAILS(mlx_fast_scaled_dot_product_attention(&y, q, k, vl, scale, "", none, none, s),
              "matching sequence length");
  CHECK_FAILS(mlx_fast_scaled_dot_product_attention(&y, q, k, v, scale, "array", mbad, none, s),
              "cannot be broadcast");
  CHECK_FAILS(mlx_fast_scaled_dot_product_attention(&y, q, k, v, scale, "array", m5, none, s),
              "at most rank 4");
  CHECK_FAILS(mlx_fast_scaled_dot_product_attention(&y, q, k, v, scale, "", none, sinks_bad, s),
              "invalid shape for sinks");
  mlx_array qh = mlx_array_new(), kh = mlx_array_new(), vh16 = mlx_array_new();
  mlx_astype(&qh, q, MLX_FLOAT16, s);
  mlx_astype(&kh, k, MLX_FLOAT16, s);
  mlx_astype(&vh16, v, MLX_FLOAT16, s);
  CHECK_FAILS(mlx_fast_scaled_dot_product_attention(&y, qh, kh, vh16, scale, "array", m, none, s),
              "must promote to output type float16");
  mlx_array qi = mlx_array_new(), ki = mlx_array_new();
  mlx_astype(&qi, q, MLX_INT32, s);
  mlx_astype(&ki, k, MLX_INT32, s);
  CHECK_FAILS(mlx_fast_scaled_dot_product_attention(&y, qi, ki, ki, scale, "", none, none, s),
              "unsupported type int32");
  CHECK_FAILS(mlx_fast_scaled_dot_product_attention(&y, q, none, v, scale, "", none, none, s),
              "empty array");
  /* mixed float16 q with float32 k, v computes in float32 */
  CHECK_OK(mlx_fast_scaled_dot_product_attention(&y, qh, k, v, scale, "causal", none, none, s));
  CHECK(mlx_array_dtype(y) == MLX_FLOAT32);
  /* "array" without an array is plain attention, as in MLX */
  mlx_array y2 = mlx_array_new();
  CHECK_OK(mlx_fast_scaled_dot_product_attention(&y, q, k, v, scale, "array", none, none, s));
  CHECK_OK(mlx_fast_scaled_dot_product_attention(&y2, q, k, v, scale, NULL, none, none, s));
  double *ref = test_values(y2);
  CHECK_CLOSE(y, ref, 4 * 3 * 8, 0, 0);
  free(ref);
  /* empty key sequence: zeros, as matmul over an empty axis */
  mlx_array k0 = rnd(4, (int[]){1, 2, 0, 8});
  CHECK_OK(mlx_fast_scaled_dot_product_attention(&y, q, k0, k0, scale, "", none, none, s));
  double zeros[96] = {0};
  CHECK_CLOSE(y, zeros, 96, 0, 0);
  mlx_array arrs[] = {q, k, v, q3, y, y2, kb, kd, k3h, vh, vl, m, mbad, m5, sinks_bad,
                      qh, kh, vh16, qi, ki, k0};
  for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) mlx_array_free(arrs[i]);
}

static void test_custom_kernels_unimplemented(void) {
  mlx_vector_array outs = mlx_vector_array_new(), ins = mlx_vector_array_new();
  mlx_fast_metal_kernel mk = {NULL};
  mlx_fast_metal_kernel_config mc = {NULL};
  /* tests/fast/test_fast_metal_kernel_api.c: no Metal back-end, as MLX without Metal */
  CHECK_FAILS(mlx_fast_metal_kernel_apply(&outs, mk, ins, mc, test_stream()), "empty");
  mlx_fast_cuda_kernel ck = {NULL};
  mlx_fast_cuda_kernel_config cc = {NULL};
  /* implemented (tests/fast/test_fast_cuda_kernel_api.c): empty handles are refused */
  CHECK_FAILS(mlx_fast_cuda_kernel_apply(&outs, ck, ins, cc, test_stream()), "empty");
  mlx_vector_array_free(outs);
  mlx_vector_array_free(ins);
}

int main(void) {
  test_init();
  test_seed(7);
  size_t base = test_active_memory();
  test_norm_errors();
  test_rope_errors();
  test_sdpa_errors();
  test_custom_kernels_unimplemented();
  CHECK_MSG(test_active_memory() == base, "active memory %zu, baseline %zu",
            test_active_memory(), base);
  return test_done();
}
