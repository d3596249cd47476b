/* Export then import of the QUANTIZED_MATMUL node (ops/quant.h), built
 * directly as the API builds it on a GPU: the file holds MLX's
 * QuantizedMatmul, and the imported function (rebuilt on the CPU as the
 * decomposition) gives what the node gives, for transposed and plain
 * weights, several bits and group sizes, batched and 1-d x, scales of
 * another dtype than x (cast on the way out), and a shapeless call with
 * other rows. With LACE_EXPORT_KEEP=dir the files stay there with inputs
 * and outputs, for tests/gen/check_export_in_mlx.py (lace -> MLX). */
#include "export_util.h"
#include "quant_util.h"
/* after test.h */
#include "core/node.h"
#include "ops/quant.h"

/* The quantization of the node the traced function builds. */
static int q_gs, q_bits;
static bool q_transpose;

static mlx_array in_at(mlx_vector_array in, size_t i) {
  mlx_array a = mlx_array_new();
  mlx_vector_array_get(&a, in, i);
  return a;
}

/* inputs x, w, scales, biases: the one QUANTIZED_MATMUL node over them. */
static int qmm(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array a[4];
  for (int k = 0; k < 4; k++) a[k] = in_at(in, (size_t)k);
  struct lc_node *r = NULL;
  int rc = lc_quantized_matmul_node(a[0].ctx, a[1].ctx, a[2].ctx, a[3].ctx, q_transpose, q_gs,
                                    q_bits, &r);
  if (rc == 0) {
    mlx_array o = {r};
    mlx_vector_array_set_value(res, o);
    mlx_array_free(o);
  }
  for (int k = 0; k < 4; k++) mlx_array_free(a[k]);
  return rc != 0;
}

/* w (float32) quantized: out[0..3) = w_q, scales, biases, of dtype st. */
static void quantize(mlx_array w, mlx_dtype st, mlx_array *out) {
  mlx_array wt = test_as_type(w, st);
  test_quantize(wt, q_gs, q_bits, out);
  mlx_array_free(wt);
}

/* One case: x of shape xs (dtype xt) times weights of shape ws (float32
 * values quantized with scales of dtype st); call: another x for a
 * shapeless export (NULL: none). */
static void qmm_case(const char *name, int gs, int bits, bool transpose, const int *xs, int xnd,
                     mlx_dtype xt, const int *ws, int wnd, mlx_dtype st, const int *call_xs,
                     double tol) {
  q_gs = gs, q_bits = bits, q_transpose = transpose;
  mlx_array w = test_rand_f32(ws, wnd, -1, 1), q[3], x0 = test_rand_f32(xs, xnd, -1, 1);
  mlx_array x = mlx_array_new();
  CHECK_OK(mlx_astype(&x, x0, xt, test_stream()));
  CHECK_OK(mlx_array_eval(x));
  quantize(w, st, q);
  mlx_vector_array args = xu_vec(4, (mlx_array[4]){x, q[0], q[1], q[2]});
  mlx_vector_array args2 = {NULL};
  mlx_array x2 = {NULL};
  if (call_xs) {
    mlx_array x20 = test_rand_f32(call_xs, xnd, -1, 1);
    x2 = mlx_array_new();
    CHECK_OK(mlx_astype(&x2, x20, xt, test_stream()));
    mlx_array_free(x20);
    args2 = xu_vec(4, (mlx_array[4]){x2, q[0], q[1], q[2]});
  }
  xu_roundtrip(name, qmm, args, call_xs != NULL, args2, tol, "QuantizedMatmul");
  mlx_vector_array_free(args);
  if (call_xs) {
    mlx_vector_array_free(args2);
    mlx_array_free(x2);
  }
  for (int i = 0; i < 3; i++) mlx_array_free(q[i]);
  mlx_array_free(w), mlx_array_free(x0), mlx_array_free(x);
}

static void test_cases(void) {
  const mlx_dtype f32 = MLX_FLOAT32, f16 = MLX_FLOAT16;
  qmm_case("lace_qmm_t", 64, 4, true, (int[2]){3, 128}, 2, f32, (int[2]){10, 128}, 2, f32, NULL,
           1e-5);
  qmm_case("lace_qmm_n", 32, 3, false, (int[2]){2, 20}, 2, f32, (int[2]){20, 64}, 2, f32, NULL,
           1e-5);
  qmm_case("lace_qmm_batched", 32, 8, true, (int[3]){2, 3, 64}, 3, f32, (int[3]){2, 7, 64}, 3,
           f32, NULL, 1e-5);
  qmm_case("lace_qmm_vec", 128, 6, true, (int[1]){128}, 1, f32, (int[2]){5, 128}, 2, f32, NULL,
           1e-5);
  qmm_case("lace_qmm_f16", 32, 2, true, (int[2]){4, 64}, 2, f16, (int[2]){6, 64}, 2, f16, NULL,
           4e-3);
  /* float16 x, float32 scales: the export casts them to float16 */
  qmm_case("lace_qmm_cast", 64, 5, true, (int[2]){4, 64}, 2, f16, (int[2]){6, 64}, 2, f32, NULL,
           8e-3);
  qmm_case("lace_qmm_shapeless", 64, 4, true, (int[2]){3, 64}, 2, f32, (int[2]){9, 64}, 2, f32,
           (int[2]){5, 64}, 1e-5);
}

int main(void) {
  test_init();
  test_seed(11);
  size_t mem0 = test_active_memory();
  test_cases();
  CHECK_MSG(test_active_memory() <= mem0, "active memory grew from %zu to %zu", mem0,
            test_active_memory());
  xu_cleanup();
  return test_done();
}
