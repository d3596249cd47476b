/* Ops from every family in one program: a two-layer perceptron with a
 * softmax head, written as an mlx_closure over (x, w1t, b1, w2, b2) with
 * outputs (hidden, logits, probs). The first weight is used through a
 * transposed view, the biases broadcast. Checked against numpy (fixture
 * from tests/gen/gen_integration_mlp.py), then run again through
 * mlx_compile: compiled and uncompiled results must agree, on the first
 * call, on a cached call, and on new input values. */
#include "integration.h"
#include "../data/integration_mlp.h"

static int forward(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_stream s = test_stream();
  mlx_array x = mlx_array_new(), w1t = mlx_array_new(), b1 = mlx_array_new(),
            w2 = mlx_array_new(), b2 = mlx_array_new(), zero = mlx_array_new_float(0.0f),
            w1 = mlx_array_new(), h = mlx_array_new(), logits = mlx_array_new(),
            m = mlx_array_new(), e = mlx_array_new(), z = mlx_array_new(), p = mlx_array_new();
  int rc = mlx_vector_array_get(&x, in, 0) || mlx_vector_array_get(&w1t, in, 1) ||
           mlx_vector_array_get(&b1, in, 2) || mlx_vector_array_get(&w2, in, 3) ||
           mlx_vector_array_get(&b2, in, 4) ||
           /* hidden = relu(x @ w1t.T + b1) */
           mlx_transpose(&w1, w1t, s) || mlx_matmul(&h, x, w1, s) || mlx_add(&h, h, b1, s) ||
           mlx_maximum(&h, h, zero, s) ||
           /* logits = hidden @ w2 + b2 */
           mlx_matmul(&logits, h, w2, s) || mlx_add(&logits, logits, b2, s) ||
           /* probs = softmax(logits), stabilised by the row maximum */
           mlx_max_axis(&m, logits, -1, true, s) || mlx_subtract(&e, logits, m, s) ||
           mlx_exp(&e, e, s) || mlx_sum_axis(&z, e, -1, true, s) || mlx_divide(&p, e, z, s);
  if (!rc) {
    mlx_array outs[3] = {h, logits, p};
    rc = mlx_vector_array_set_data(res, outs, 3);
  }
  mlx_array all[13] = {x, w1t, b1, w2, b2, zero, w1, h, logits, m, e, z, p};
  for (int i = 0; i < 13; i++) mlx_array_free(all[i]);
  return rc;
}

static mlx_vector_array make_inputs(float xscale) {
  float x[MLP_B * MLP_D];
  for (int i = 0; i < MLP_B * MLP_D; i++) x[i] = xscale * mlp_x[i];
  int sx[2] = {MLP_B, MLP_D}, sw1[2] = {MLP_H, MLP_D}, sb1[1] = {MLP_H}, sw2[2] = {MLP_H, MLP_C},
      sb2[1] = {MLP_C};
  mlx_array a[5] = {
      mlx_array_new_data(x, sx, 2, MLX_FLOAT32), mlx_array_new_data(mlp_w1t, sw1, 2, MLX_FLOAT32),
      mlx_array_new_data(mlp_b1, sb1, 1, MLX_FLOAT32),
      mlx_array_new_data(mlp_w2, sw2, 2, MLX_FLOAT32),
      mlx_array_new_data(mlp_b2, sb2, 1, MLX_FLOAT32)};
  mlx_vector_array v = mlx_vector_array_new_data(a, 5);
  for (int i = 0; i < 5; i++) mlx_array_free(a[i]);
  return v;
}

static void check_outputs(mlx_vector_array out) {
  mlx_array a = mlx_array_new();
  CHECK(mlx_vector_array_size(out) == 3);
  CHECK_OK(mlx_vector_array_get(&a, out, 0));
  CHECK_SHAPE(a, MLP_B, MLP_H);
  CHECK_CLOSE(a, mlp_hidden, MLP_B * MLP_H, 1e-5, 1e-6);
  CHECK_OK(mlx_vector_array_get(&a, out, 1));
  CHECK_SHAPE(a, MLP_B, MLP_C);
  CHECK_CLOSE(a, mlp_logits, MLP_B * MLP_C, 1e-5, 1e-6);
  CHECK_OK(mlx_vector_array_get(&a, out, 2));
  CHECK_SHAPE(a, MLP_B, MLP_C);
  CHECK_CLOSE(a, mlp_probs, MLP_B * MLP_C, 1e-5, 1e-7);
  mlx_array_free(a);
}

/* Largest |a_i - b_i| over the outputs of two result vectors. */
static double max_diff(mlx_vector_array u, mlx_vector_array v) {
  double worst = 0;
  mlx_array a = mlx_array_new(), b = mlx_array_new();
  for (size_t k = 0; k < mlx_vector_array_size(u); k++) {
    mlx_vector_array_get(&a, u, k);
    mlx_vector_array_get(&b, v, k);
    double *x = test_values(a), *y = test_values(b);
    for (size_t i = 0; x && y && i < mlx_array_size(a); i++)
      worst = fmax(worst, fabs(x[i] - y[i]));
    if (!x || !y || mlx_array_size(a) != mlx_array_size(b)) worst = INFINITY;
    free(x);
    free(y);
  }
  mlx_array_free(a);
  mlx_array_free(b);
  return worst;
}

static void test_mlp(void) {
  mlx_closure f = mlx_closure_new_func(forward), cf = mlx_closure_new();
  mlx_vector_array in = make_inputs(1.0f), in2 = make_inputs(-2.5f);
  mlx_vector_array out = mlx_vector_array_new(), cout = mlx_vector_array_new(),
                   out2 = mlx_vector_array_new();
  NEED(mlx_closure_apply(&out, f, in));
  check_outputs(out);

  NEED(mlx_compile(&cf, f, false));
  for (int call = 0; call < 2; call++) { /* the second call replays the cached trace */
    CHECK_OK(mlx_closure_apply(&cout, cf, in));
    check_outputs(cout);
    CHECK_MSG(max_diff(out, cout) <= 1e-6, "compiled differs by %g", max_diff(out, cout));
  }
  CHECK_OK(mlx_closure_apply(&out2, f, in2));
  CHECK_OK(mlx_closure_apply(&cout, cf, in2));
  CHECK_MSG(max_diff(out2, cout) <= 1e-5, "compiled differs by %g on new inputs",
            max_diff(out2, cout));
skip:
  mlx_vector_array_free(in);
  mlx_vector_array_free(in2);
  mlx_vector_array_free(out);
  mlx_vector_array_free(out2);
  mlx_vector_array_free(cout);
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

int main(void) {
  test_init();
  size_t before = test_active_memory();
  test_mlp();
  mlx_detail_compile_clear_cache();
  CHECK_MSG(test_active_memory() == before, "active memory %zu, was %zu", test_active_memory(),
            before);
  return integ_done();
}
