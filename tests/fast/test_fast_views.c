/* Fast ops on non-contiguous inputs (transposed, strided slices, broadcast
 * views) give exactly what they give on contiguous copies of the same
 * values (whose correctness test_fast_ops checks against numpy). */
#include "test.h"

/* A contiguous array of dtype dt with a's values. */
static mlx_array copy_of(mlx_array a, mlx_dtype dt) {
  double *v = test_values(a);
  int shape[8];
  for (size_t i = 0; i < mlx_array_ndim(a); i++) shape[i] = mlx_array_shape(a)[i];
  mlx_array d = mlx_array_new_data(v, shape, (int)mlx_array_ndim(a), MLX_FLOAT64);
  mlx_array r = mlx_array_new();
  mlx_astype(&r, d, dt, test_stream());
  mlx_array_free(d);
  free(v);
  return r;
}

/* Checks that a and b hold identical values. */
static void check_same(mlx_array a, mlx_array b) {
  double *v = test_values(b);
  CHECK(v != NULL);
  if (v) CHECK_CLOSE(a, v, mlx_array_size(b), 0, 0);
  free(v);
}

static mlx_array typed(const int *shape, int ndim, mlx_dtype dt) {
  mlx_array f = test_rand_f32(shape, ndim, -2, 2), r = mlx_array_new();
  mlx_astype(&r, f, dt, test_stream());
  mlx_array_free(f);
  return r;
}

static void test_norm_views(mlx_dtype dt) {
  mlx_stream s = test_stream();
  /* x: (6, 20) seen through a transpose of a (20, 6) array: last-axis stride 6 */
  mlx_array base = typed((int[]){20, 6}, 2, dt), xt = mlx_array_new();
  CHECK_OK(mlx_transpose(&xt, base, s));
  mlx_array xc = copy_of(xt, dt);
  /* weight: every other element of a length-40 vector */
  mlx_array wbase = typed((int[]){40}, 1, dt), w = mlx_array_new(), b = mlx_array_new();
  CHECK_OK(mlx_slice(&w, wbase, (int[]){0}, 1, (int[]){40}, 1, (int[]){2}, 1, s));
  /* bias: a reversed slice */
  CHECK_OK(mlx_slice(&b, wbase, (int[]){39}, 1, (int[]){-41}, 1, (int[]){-2}, 1, s));
  mlx_array wc = copy_of(w, dt), bc = copy_of(b, dt);
  mlx_array y = mlx_array_new(), yc = mlx_array_new();
  CHECK_OK(mlx_fast_rms_norm(&y, xt, w, 1e-5f, s));
  CHECK_OK(mlx_fast_rms_norm(&yc, xc, wc, 1e-5f, s));
  check_same(y, yc);
  CHECK_OK(mlx_fast_layer_norm(&y, xt, w, b, 1e-5f, s));
  CHECK_OK(mlx_fast_layer_norm(&yc, xc, wc, bc, 1e-5f, s));
  check_same(y, yc);
  /* rows broadcast from one row (stride 0 over the leading axis) */
  mlx_array row = typed((int[]){1, 20}, 2, dt), xb = mlx_array_new();
  CHECK_OK(mlx_broadcast_to(&xb, row, (int[]){3, 4, 20}, 3, s));
  mlx_array xbc = copy_of(xb, dt);
  CHECK_OK(mlx_fast_layer_norm(&y, xb, w, b, 1e-5f, s));
  CHECK_OK(mlx_fast_layer_norm(&yc, xbc, wc, bc, 1e-5f, s));
  check_same(y, yc);
  mlx_array arrs[] = {base, xt, xc, wbase, w, b, wc, bc, y, yc, row, xb, xbc};
  for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) mlx_array_free(arrs[i]);
}

static void test_rope_views(mlx_dtype dt, bool traditional) {
  mlx_stream s = test_stream();
  mlx_optional_float base = {10000.0f, true};
  mlx_array none = mlx_array_new();
  /* (B, T, H, D) -> (B, H, T, D), the usual layout after the projections */
  mlx_array x0 = typed((int[]){2, 5, 3, 16}, 4, dt), x = mlx_array_new();
  CHECK_OK(mlx_swapaxes(&x, x0, 1, 2, s));
  mlx_array xc = copy_of(x, dt), y = mlx_array_new(), yc = mlx_array_new();
  CHECK_OK(mlx_fast_rope(&y, x, 12, traditional, base, 1.0f, 4, none, s));
  CHECK_OK(mlx_fast_rope(&yc, xc, 12, traditional, base, 1.0f, 4, none, s));
  check_same(y, yc);
  /* every other feature of a wider array: last-axis stride 2 */
  mlx_array x1 = typed((int[]){1, 2, 3, 32}, 4, dt), xs = mlx_array_new();
  CHECK_OK(mlx_slice(&xs, x1, (int[]){0, 0, 0, 1}, 4, (int[]){1, 2, 3, 32}, 4,
                     (int[]){1, 1, 1, 2}, 4, s));
  mlx_array xsc = copy_of(xs, dt);
  mlx_array off = mlx_array_new_int(9);
  CHECK_OK(mlx_fast_rope_dynamic(&y, xs, 16, traditional, base, 0.5f, off, none, s));
  CHECK_OK(mlx_fast_rope_dynamic(&yc, xsc, 16, traditional, base, 0.5f, off, none, s));
  check_same(y, yc);
  mlx_array arrs[] = {x0, x, xc, y, yc, x1, xs, xsc, off};
  for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) mlx_array_free(arrs[i]);
}

static void test_sdpa_views(mlx_dtype dt, const char *mode) {
  mlx_stream s = test_stream();
  int B = 2, Hq = 4, Hkv = 2, qL = 3, kL = 7, D = 8;
  mlx_array q0 = typed((int[]){B, qL, Hq, D}, 4, dt), k0 = typed((int[]){B, kL, Hkv, D}, 4, dt);
  mlx_array v0 = typed((int[]){B, kL, Hkv, 2 * D}, 4, dt);
  mlx_array q = mlx_array_new(), k = mlx_array_new(), v = mlx_array_new(),
            vw = mlx_array_new();
  CHECK_OK(mlx_swapaxes(&q, q0, 1, 2, s));
  CHECK_OK(mlx_swapaxes(&k, k0, 1, 2, s));
  CHECK_OK(mlx_swapaxes(&vw, v0, 1, 2, s));
  /* v: a strided slice (every other feature) of the wider values */
  CHECK_OK(mlx_slice(&v, vw, (int[]){0, 0, 0, 0}, 4, (int[]){B, Hkv, kL, 2 * D}, 4,
                     (int[]){1, 1, 1, 2}, 4, s));
  mlx_array qc = copy_of(q, dt), kc = copy_of(k, dt), vc = copy_of(v, dt);
  mlx_array none = mlx_array_new(), m = mlx_array_new(), mc = mlx_array_new();
  if (!strcmp(mode, "array")) {
    /* an additive mask given as a transposed (kL, qL) array */
    mlx_array m0 = typed((int[]){kL, qL}, 2, dt);
    CHECK_OK(mlx_transpose(&m, m0, s));
    mc = copy_of(m, dt);
    mlx_array_free(m0);
  }
  mlx_array y = mlx_array_new(), yc = mlx_array_new();
  CHECK_OK(mlx_fast_scaled_dot_product_attention(&y, q, k, v, 0.3f, mode, m, none, s));
  CHECK_OK(mlx_fast_scaled_dot_product_attention(&yc, qc, kc, vc, 0.3f, mode, mc, none, s));
  check_same(y, yc);
  mlx_array arrs[] = {q0, k0, v0, q, k, v, vw, qc, kc, vc, m, mc, y, yc};
  for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) mlx_array_free(arrs[i]);
}

int main(void) {
  test_init();
  test_seed(11);
  size_t base = test_active_memory();
  mlx_dtype dts[4] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16, MLX_FLOAT64};
  for (int i = 0; i < 4; i++) {
    test_norm_views(dts[i]);
    test_rope_views(dts[i], false);
    test_rope_views(dts[i], true);
    test_sdpa_views(dts[i], "");
    test_sdpa_views(dts[i], "causal");
    test_sdpa_views(dts[i], "array");
  }
  CHECK_MSG(test_active_memory() == base, "active memory %zu, baseline %zu",
            test_active_memory(), base);
  return test_done();
}
