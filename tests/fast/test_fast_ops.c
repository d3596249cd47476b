/* Fast ops against float64 numpy references (tests/gen/gen_fast.py):
 * rms_norm, layer_norm, rope (both layouts, offsets, freqs, 3-5 d) and
 * scaled dot-product attention (GQA, causal with qL != kL, bool/additive
 * masks, sinks), in float32, float16, bfloat16 and float64. */
#include "test.h"
#include "../data/fast_cases.h"

/* An array of dtype dt holding the given values (exactly representable). */
static mlx_array from_doubles(const double *v, const int *shape, int ndim, mlx_dtype dt) {
  mlx_array d = mlx_array_new_data(v, shape, ndim, MLX_FLOAT64), r = mlx_array_new();
  if (mlx_astype(&r, d, dt, test_stream())) fprintf(stderr, "astype failed\n");
  mlx_array_free(d);
  return r;
}

static void tolerances(mlx_dtype dt, double *rtol, double *atol) {
  switch (dt) {
    case MLX_FLOAT16: *rtol = 2e-3, *atol = 2e-3; break;
    case MLX_BFLOAT16: *rtol = 1.6e-2, *atol = 1.6e-2; break;
    case MLX_FLOAT64: *rtol = 1e-12, *atol = 1e-12; break;
    default: *rtol = 2e-5, *atol = 2e-6; break;
  }
}

static size_t prod(const int *s, int n) {
  size_t p = 1;
  for (int i = 0; i < n; i++) p *= (size_t)s[i];
  return p;
}

static void test_norms(void) {
  size_t ncases = sizeof norm_cases / sizeof norm_cases[0];
  for (size_t c = 0; c < ncases; c++) {
    const struct norm_case *k = &norm_cases[c];
    int d = k->shape[k->ndim - 1];
    mlx_array x = from_doubles(k->x, k->shape, k->ndim, k->dt);
    mlx_array w = k->w ? from_doubles(k->w, &d, 1, k->wdt) : mlx_array_new();
    mlx_array b = k->b ? from_doubles(k->b, &d, 1, k->bdt) : mlx_array_new();
    mlx_array y = mlx_array_new();
    if (k->layer)
      CHECK_OK(mlx_fast_layer_norm(&y, x, w, b, k->eps, test_stream()));
    else
      CHECK_OK(mlx_fast_rms_norm(&y, x, w, k->eps, test_stream()));
    CHECK_MSG(mlx_array_dtype(y) == (mlx_dtype)k->odt, "norm case %zu: dtype %d, want %d", c,
              (int)mlx_array_dtype(y), k->odt);
    double rtol, atol;
    tolerances(k->odt, &rtol, &atol);
    size_t n = prod(k->shape, k->ndim);
    int before = test_failures;
    CHECK_CLOSE(y, k->y, n, rtol, atol);
    if (test_failures != before) fprintf(stderr, "  (norm case %zu)\n", c);
    mlx_array_free(x);
    mlx_array_free(w);
    mlx_array_free(b);
    mlx_array_free(y);
  }
}

static void test_rope(void) {
  size_t ncases = sizeof rope_cases / sizeof rope_cases[0];
  for (size_t c = 0; c < ncases; c++) {
    const struct rope_case *k = &rope_cases[c];
    mlx_array x = from_doubles(k->x, k->shape, k->ndim, k->dt);
    int half = k->dims / 2;
    mlx_array f = k->freqs ? from_doubles(k->freqs, &half, 1, MLX_FLOAT32) : mlx_array_new();
    mlx_optional_float base = {k->base, k->freqs == NULL};
    mlx_array y = mlx_array_new();
    if (k->noffsets) {
      int no = k->noffsets;
      mlx_array off = mlx_array_new_data(k->offsets, &no, 1, MLX_INT32);
      CHECK_OK(mlx_fast_rope_dynamic(&y, x, k->dims, k->traditional, base, k->scale, off, f,
                                     test_stream()));
      mlx_array_free(off);
    } else {
      CHECK_OK(mlx_fast_rope(&y, x, k->dims, k->traditional, base, k->scale, k->offsets[0], f,
                             test_stream()));
      /* the same through a 0-d int64 offset array */
      int64_t o64 = k->offsets[0];
      mlx_array off = mlx_array_new_data(&o64, NULL, 0, MLX_INT64), y2 = mlx_array_new();
      CHECK_OK(mlx_fast_rope_dynamic(&y2, x, k->dims, k->traditional, base, k->scale, off, f,
                                     test_stream()));
      double rtol, atol;
      tolerances(k->dt, &rtol, &atol);
      CHECK_CLOSE(y2, k->y, prod(k->shape, k->ndim), rtol, atol);
      mlx_array_free(off);
      mlx_array_free(y2);
    }
    CHECK(mlx_array_dtype(y) == (mlx_dtype)k->dt);
    double rtol, atol;
    tolerances(k->dt, &rtol, &atol);
    int before = test_failures;
    CHECK_CLOSE(y, k->y, prod(k->shape, k->ndim), rtol, atol);
    if (test_failures != before) fprintf(stderr, "  (rope case %zu)\n", c);
    mlx_array_free(x);
    mlx_array_free(f);
    mlx_array_free(y);
  }
}

static void test_sdpa(void) {
  size_t ncases = sizeof sdpa_cases / sizeof sdpa_cases[0];
  for (size_t c = 0; c < ncases; c++) {
    const struct sdpa_case *k = &sdpa_cases[c];
    int qs[4] = {k->B, k->Hq, k->qL, k->D}, ks[4] = {k->B, k->Hkv, k->kL, k->D};
    int vs[4] = {k->B, k->Hkv, k->kL, k->Dv};
    mlx_array q = from_doubles(k->q, qs, 4, k->dt), kk = from_doubles(k->k, ks, 4, k->dt);
    mlx_array v = from_doubles(k->v, vs, 4, k->dt);
    mlx_array m = k->mask ? from_doubles(k->mask, k->mask_shape, k->mask_ndim, k->mask_dt)
                          : mlx_array_new();
    mlx_array s = k->sinks ? from_doubles(k->sinks, &k->Hq, 1, k->dt) : mlx_array_new();
    mlx_array y = mlx_array_new();
    CHECK_OK(mlx_fast_scaled_dot_product_attention(&y, q, kk, v, k->scale, k->mode, m, s,
                                                   test_stream()));
    CHECK_SHAPE(y, k->B, k->Hq, k->qL, k->Dv);
    CHECK(mlx_array_dtype(y) == (mlx_dtype)k->dt);
    double rtol, atol;
    tolerances(k->dt, &rtol, &atol);
    int before = test_failures;
    CHECK_CLOSE(y, k->y, (size_t)k->B * k->Hq * k->qL * k->Dv, rtol, atol);
    if (test_failures != before) fprintf(stderr, "  (sdpa case %zu)\n", c);
    mlx_array_free(q);
    mlx_array_free(kk);
    mlx_array_free(v);
    mlx_array_free(m);
    mlx_array_free(s);
    mlx_array_free(y);
  }
}

int main(void) {
  test_init();
  size_t base = test_active_memory();
  test_norms();
  test_rope();
  test_sdpa();
  CHECK_MSG(test_active_memory() == base, "active memory %zu, baseline %zu",
            test_active_memory(), base);
  return test_done();
}
