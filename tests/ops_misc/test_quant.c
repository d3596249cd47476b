/* Affine quantize / dequantize / quantized_matmul / gather_qmm against
 * numpy (tests/gen/gen_misc_quant.py); modes, errors, leaks. */
#include "test.h"
/* after test.h */
#include "../data/misc_quant.h"

static mlx_array from_f64(const double *v, int nd, const int *shape, mlx_dtype t) {
  mlx_array a = mlx_array_new_data(v, shape, nd, MLX_FLOAT64), r = mlx_array_new();
  mlx_astype(&r, a, t, test_stream());
  mlx_array_free(a);
  return r;
}

static const mlx_optional_int NONE = {0, false};
static const mlx_optional_dtype NODT = {MLX_FLOAT32, false};

static void run_case(const struct q_case *c) {
  mlx_stream s = test_stream();
  int ws[] = {c->N, c->K}, xs[] = {3, c->K};
  mlx_array w = from_f64(c->w, 2, ws, MLX_FLOAT32), x = from_f64(c->x, 2, xs, MLX_FLOAT32);
  mlx_optional_int gs = {c->gs, true}, bits = {c->bits, true};
  mlx_vector_array q = mlx_vector_array_new();
  mlx_array empty = mlx_array_new();
  CHECK_OK(mlx_quantize(&q, w, gs, bits, "affine", empty, s));
  mlx_array wq = mlx_array_new(), sc = mlx_array_new(), bi = mlx_array_new();
  CHECK_OK(mlx_vector_array_get(&wq, q, 0));
  CHECK_OK(mlx_vector_array_get(&sc, q, 1));
  CHECK_OK(mlx_vector_array_get(&bi, q, 2));
  CHECK(mlx_array_dtype(wq) == MLX_UINT32);
  CHECK_SHAPE(wq, c->N, c->K * c->bits / 32);
  CHECK_SHAPE(sc, c->N, c->K / c->gs);
  CHECK(mlx_array_dtype(sc) == MLX_FLOAT32);
  size_t nw = (size_t)c->N * c->K * c->bits / 32, ns = (size_t)c->N * c->K / c->gs;
  CHECK_OK(mlx_array_eval(wq));
  const uint32_t *pw = mlx_array_data_uint32(wq);
  size_t bad = 0;
  for (size_t i = 0; pw && i < nw; i++) bad += pw[i] != c->wq[i];
  CHECK_MSG(pw && bad == 0, "case bits %d: %zu of %zu packed words differ", c->bits, bad, nw);
  CHECK_CLOSE(sc, c->s, ns, 1e-6, 1e-7);
  CHECK_CLOSE(bi, c->b, ns, 1e-6, 1e-7);
  /* dequantize the reference packing (independent of our quantize) */
  int wqs[] = {c->N, c->K * c->bits / 32}, ss[] = {c->N, c->K / c->gs};
  mlx_array rwq = mlx_array_new_data(c->wq, wqs, 2, MLX_UINT32);
  mlx_array rs = from_f64(c->s, 2, ss, MLX_FLOAT32), rb = from_f64(c->b, 2, ss, MLX_FLOAT32);
  mlx_array d = mlx_array_new(), mm = mlx_array_new();
  CHECK_OK(mlx_dequantize(&d, rwq, rs, rb, gs, bits, NULL, empty, NODT, s));
  CHECK_CLOSE(d, c->deq, (size_t)c->N * c->K, 1e-6, 1e-6);
  CHECK_OK(mlx_quantized_matmul(&mm, x, rwq, rs, rb, true, gs, bits, "affine", s));
  CHECK_SHAPE(mm, 3, c->N);
  CHECK_CLOSE(mm, c->mm, (size_t)3 * c->N, 1e-4, 1e-4);
  mlx_optional_dtype f16 = {MLX_FLOAT16, true};
  CHECK_OK(mlx_dequantize(&d, rwq, rs, rb, gs, bits, "affine", empty, f16, s));
  CHECK(mlx_array_dtype(d) == MLX_FLOAT16);
  mlx_array_free(w), mlx_array_free(x), mlx_array_free(wq), mlx_array_free(sc);
  mlx_array_free(bi), mlx_array_free(rwq), mlx_array_free(rs), mlx_array_free(rb);
  mlx_array_free(d), mlx_array_free(mm);
  mlx_vector_array_free(q);
}

/* default params (64, 4); transpose = false; gather_qmm picking matrices */
static void test_defaults_and_gather(void) {
  mlx_stream s = test_stream();
  int ws[] = {2, 64, 128}, xs[] = {3, 64};
  mlx_array w = test_rand_f32(ws, 3, -1, 1), x = test_rand_f32(xs, 2, -1, 1);
  mlx_array empty = mlx_array_new();
  mlx_vector_array q = mlx_vector_array_new();
  CHECK_OK(mlx_quantize(&q, w, NONE, NONE, NULL, empty, s));
  mlx_array wq = mlx_array_new(), sc = mlx_array_new(), bi = mlx_array_new();
  mlx_vector_array_get(&wq, q, 0), mlx_vector_array_get(&sc, q, 1), mlx_vector_array_get(&bi, q, 2);
  CHECK_SHAPE(wq, 2, 64, 16);
  CHECK_SHAPE(sc, 2, 64, 2);
  mlx_array d = mlx_array_new(), d1 = mlx_array_new(), mm = mlx_array_new(), ref = mlx_array_new();
  CHECK_OK(mlx_dequantize(&d, wq, sc, bi, NONE, NONE, "affine", empty, NODT, s));
  /* MLX's affine scheme (refined scale, clipping at the far end) errs by at
   * most about one step (range / 15) per element */
  mlx_array diff = mlx_array_new(), mx = mlx_array_new();
  CHECK_OK(mlx_subtract(&diff, d, w, s));
  CHECK_OK(mlx_abs(&diff, diff, s));
  CHECK_OK(mlx_max(&mx, diff, false, s));
  double *m = test_values(mx);
  CHECK_MSG(m && m[0] < 2.0 / 15 + 1e-6, "max error %g", m ? m[0] : -1);
  free(m);
  /* gather_qmm with rhs indices [1, 0, 1] and no transpose */
  int idx[] = {1, 0, 1}, is[] = {3}, x3s[] = {3, 1, 64};
  mlx_array ri = mlx_array_new_data(idx, is, 1, MLX_UINT32), x3 = mlx_array_new();
  CHECK_OK(mlx_reshape(&x3, x, x3s, 3, s));
  CHECK_OK(mlx_gather_qmm(&mm, x3, wq, sc, bi, empty, ri, false, NONE, NONE, "affine", false, s));
  CHECK_OK(mlx_gather_mm(&ref, x3, d, empty, ri, false, s));
  double *rv = test_values(ref);
  CHECK_SHAPE(mm, 3, 1, 128);
  CHECK_CLOSE(mm, rv, 3 * 128, 1e-5, 1e-5);
  free(rv);
  mlx_array_free(w), mlx_array_free(x), mlx_array_free(wq), mlx_array_free(sc);
  mlx_array_free(bi), mlx_array_free(d), mlx_array_free(d1), mlx_array_free(mm);
  mlx_array_free(ref), mlx_array_free(diff), mlx_array_free(mx), mlx_array_free(ri);
  mlx_array_free(x3);
  mlx_vector_array_free(q);
}

static void test_errors(void) {
  mlx_stream s = test_stream();
  int ws[] = {4, 64}, w1[] = {64}, w2[] = {4, 48};
  mlx_array w = test_rand_f32(ws, 2, -1, 1), v = test_rand_f32(w1, 1, -1, 1);
  mlx_array u = test_rand_f32(w2, 2, -1, 1), wi = mlx_array_new(), r = mlx_array_new();
  mlx_array empty = mlx_array_new();
  mlx_vector_array q = mlx_vector_array_new();
  mlx_astype(&wi, w, MLX_INT32, s);
  CHECK_FAILS(mlx_quantize(&q, w, NONE, NONE, "mxfp4", empty, s), "unsupported mode");
  CHECK_FAILS(mlx_quantize(&q, w, NONE, NONE, "foo", empty, s), "invalid quantization mode");
  CHECK_FAILS(mlx_quantize(&q, w, (mlx_optional_int){48, true}, NONE, NULL, empty, s),
              "group size");
  CHECK_FAILS(mlx_quantize(&q, w, NONE, (mlx_optional_int){7, true}, NULL, empty, s), "bits");
  CHECK_FAILS(mlx_quantize(&q, wi, NONE, NONE, NULL, empty, s), "floating");
  CHECK_FAILS(mlx_quantize(&q, v, NONE, NONE, NULL, empty, s), "at least 2");
  CHECK_FAILS(mlx_quantize(&q, u, NONE, NONE, NULL, empty, s), "divisible");
  CHECK_FAILS(mlx_quantize(&q, w, NONE, NONE, NULL, w, s), "global_scale");
  CHECK_FAILS(mlx_dequantize(&r, w, w, w, NONE, NONE, NULL, empty, NODT, s), "uint32");
  CHECK_FAILS(mlx_dequantize(&r, w, w, empty, NONE, NONE, NULL, empty, NODT, s), "biases");
  CHECK_FAILS(mlx_qqmm(&r, w, w, w, NONE, NONE, "nvfp4", empty, empty, s), "unsupported mode");
  CHECK(r.ctx == NULL);
  mlx_array_free(w), mlx_array_free(v), mlx_array_free(u), mlx_array_free(wi);
  mlx_vector_array_free(q);
}

int main(void) {
  test_init();
  size_t base = test_active_memory();
  for (size_t i = 0; i < sizeof q_cases / sizeof q_cases[0]; i++) run_case(&q_cases[i]);
  test_defaults_and_gather();
  test_errors();
  CHECK_MSG(test_active_memory() == base, "active memory %zu, baseline %zu", test_active_memory(),
            base);
  return test_done();
}
