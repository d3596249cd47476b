/* The demo's building blocks under mlx_compile: an attention block (RMSNorm,
 * projections, RoPE with a dynamic offset, grouped-query causal attention,
 * residual, LayerNorm) gives the same values compiled and uncompiled, for
 * new inputs on cached replays and for a new shape (retrace, or shapeless
 * replay). */
#include "test.h"

enum { DM = 64, H = 4, HKV = 2, HD = 16 };

static int block(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  (void)payload;
  mlx_stream s = test_stream();
  mlx_array a[7];
  for (int i = 0; i < 7; i++) {
    a[i] = mlx_array_new();
    if (mlx_vector_array_get(&a[i], in, (size_t)i)) return 1;
  }
  mlx_array x = a[0], wn = a[1], wq = a[2], wk = a[3], wv = a[4], pos = a[5], lnw = a[6];
  int T = mlx_array_shape(x)[1];
  mlx_array t[16];
  for (int i = 0; i < 16; i++) t[i] = mlx_array_new();
  mlx_optional_float base = {10000.0f, true};
  int qs[4] = {1, T, H, HD}, ks[4] = {1, T, HKV, HD}, perm[4] = {0, 2, 1, 3}, os[3] = {1, T, DM};
  mlx_array none = mlx_array_new();
  int rc = mlx_fast_rms_norm(&t[0], x, wn, 1e-5f, s) || mlx_matmul(&t[1], t[0], wq, s) ||
           mlx_matmul(&t[2], t[0], wk, s) || mlx_matmul(&t[3], t[0], wv, s) ||
           mlx_reshape(&t[4], t[1], qs, 4, s) || mlx_reshape(&t[5], t[2], ks, 4, s) ||
           mlx_reshape(&t[6], t[3], ks, 4, s) || mlx_transpose_axes(&t[7], t[4], perm, 4, s) ||
           mlx_transpose_axes(&t[8], t[5], perm, 4, s) ||
           mlx_transpose_axes(&t[9], t[6], perm, 4, s) ||
           mlx_fast_rope_dynamic(&t[10], t[7], HD, false, base, 1.0f, pos, none, s) ||
           mlx_fast_rope_dynamic(&t[11], t[8], HD, true, base, 1.0f, pos, none, s) ||
           mlx_fast_scaled_dot_product_attention(&t[12], t[10], t[11], t[9], 0.25f, "causal",
                                                 none, none, s) ||
           mlx_transpose_axes(&t[13], t[12], perm, 4, s) || mlx_reshape(&t[14], t[13], os, 3, s) ||
           mlx_add(&t[15], t[14], x, s);
  mlx_array y = mlx_array_new();
  if (!rc) rc = mlx_fast_layer_norm(&y, t[15], lnw, none, 1e-5f, s);
  if (!rc) rc = mlx_vector_array_set_value(res, y);
  mlx_array_free(y);
  for (int i = 0; i < 16; i++) mlx_array_free(t[i]);
  for (int i = 0; i < 7; i++) mlx_array_free(a[i]);
  return rc;
}

static mlx_vector_array inputs(int T, int pos, int seed) {
  test_seed((uint64_t)seed);
  int xs[3] = {1, T, DM}, n1 = DM, wqs[2] = {DM, H * HD}, wks[2] = {DM, HKV * HD};
  mlx_array a[7] = {test_rand_f32(xs, 3, -1, 1),    test_rand_f32(&n1, 1, 0.5, 1.5),
                    test_rand_f32(wqs, 2, -0.2, 0.2), test_rand_f32(wks, 2, -0.2, 0.2),
                    test_rand_f32(wks, 2, -0.2, 0.2), mlx_array_new(),
                    test_rand_f32(&n1, 1, 0.5, 1.5)};
  int one = 1;
  a[5] = mlx_array_new_data(&pos, &one, 1, MLX_INT32);
  mlx_vector_array v = mlx_vector_array_new_data(a, 7);
  for (int i = 0; i < 7; i++) mlx_array_free(a[i]);
  return v;
}

static double *run(mlx_closure f, mlx_vector_array in, size_t *n) {
  mlx_vector_array out = mlx_vector_array_new();
  mlx_array y = mlx_array_new();
  double *v = NULL;
  if (!mlx_closure_apply(&out, f, in) && !mlx_vector_array_get(&y, out, 0)) {
    v = test_values(y);
    *n = mlx_array_size(y);
  }
  mlx_array_free(y);
  mlx_vector_array_free(out);
  return v;
}

static void check_mode(bool shapeless) {
  mlx_closure f = mlx_closure_new_func_payload(block, NULL, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, shapeless));
  /* (T, position offset, seed): cases 1 and 2 differ only in the offset */
  int cases[4][3] = {{5, 0, 1}, {5, 17, 2}, {5, 3, 2}, {9, 40, 3}};
  double *prev = NULL;
  for (int c = 0; c < 4; c++) {
    mlx_vector_array in = inputs(cases[c][0], cases[c][1], cases[c][2]);
    size_t n = 0, nc = 0;
    double *ref = run(f, in, &n), *got = run(cf, in, &nc);
    CHECK_MSG(ref && got && n == nc && n == (size_t)cases[c][0] * DM, "shapeless %d case %d",
              shapeless, c);
    if (ref && got && n == nc) {
      mlx_vector_array out = mlx_vector_array_new();
      mlx_array y = mlx_array_new();
      CHECK_OK(mlx_closure_apply(&out, cf, in));
      CHECK_OK(mlx_vector_array_get(&y, out, 0));
      CHECK_CLOSE(y, ref, n, 1e-5, 1e-5);
      mlx_array_free(y);
      mlx_vector_array_free(out);
    }
    /* the offset is an input, not a traced constant: a replay with another
     * position gives other values */
    if (prev && got && c == 2) CHECK(memcmp(prev, got, sizeof(double) * nc) != 0);
    free(prev);
    prev = got;
    free(ref);
    mlx_vector_array_free(in);
  }
  free(prev);
  mlx_closure_free(f);
  mlx_closure_free(cf);
}

int main(void) {
  test_init();
  size_t base = test_active_memory();
  check_mode(false);
  check_mode(true);
  mlx_detail_compile_clear_cache();
  CHECK_MSG(test_active_memory() == base, "active memory %zu, baseline %zu",
            test_active_memory(), base);
  return test_done();
}
