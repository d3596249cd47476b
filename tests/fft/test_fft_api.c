/* The FFT API's edges: errors (each reported and failing), dtypes (MLX
 * computes in single precision: float64 and integer inputs give
 * complex64), empty axis lists, empty arrays, fftfreq / rfftfreq, and
 * norm round trips. */
#include "fft_util.h"

static void errors(void) {
  mlx_stream s = test_stream();
  int sh[2] = {4, 6};
  mlx_array x = test_rand_f32(sh, 2, -1, 1), r = mlx_array_new(), e = mlx_array_new();
  mlx_array sc = mlx_array_new_float(1.0f);
  const mlx_fft_norm B = MLX_FFT_NORM_BACKWARD;
  int ax2[2] = {0, 0}, n2[2] = {4, 6}, bad[2] = {0, 2}, neg[1] = {-3};
  CHECK_FAILS(mlx_fft_fft(&r, x, 0, -1, B, s), "invalid transform size 0");
  CHECK_FAILS(mlx_fft_fft(&r, x, -4, 0, B, s), "invalid transform size -4");
  CHECK_FAILS(mlx_fft_rfft(&r, x, 6, 2, B, s), "out of bounds");
  CHECK_FAILS(mlx_fft_ifft(&r, x, 6, -3, B, s), "out of bounds");
  CHECK_FAILS(mlx_fft_fft(&r, sc, 1, 0, B, s), "at least one dimension");
  CHECK_FAILS(mlx_fft_fft(&r, x, 6, -1, (mlx_fft_norm)7, s), "invalid norm");
  CHECK_FAILS(mlx_fft_fft(&r, e, 6, -1, B, s), "empty array");
  CHECK_FAILS(mlx_fft_fft(NULL, x, 6, -1, B, s), "result pointer");
  CHECK_FAILS(mlx_fft_fftn(&r, x, n2, 2, ax2, 2, B, s), "given twice");
  int ax_dup_neg[2] = {1, -1};
  CHECK_FAILS(mlx_fft_rfftn(&r, x, NULL, 0, ax_dup_neg, 2, B, s), "given twice");
  CHECK_FAILS(mlx_fft_fft2(&r, x, n2, 1, ax_dup_neg, 2, B, s), "1 sizes for 2 axes");
  int ax01[2] = {0, 1};
  CHECK_FAILS(mlx_fft_ifft2(&r, x, bad, 2, ax01, 2, B, s), "invalid transform size 0");
  CHECK_FAILS(mlx_fft_fftn(&r, x, NULL, 0, neg, 1, B, s), "out of bounds");
  CHECK_FAILS(mlx_fft_fftn(&r, x, NULL, 2, ax01, 2, B, s), "'n'");
  CHECK_FAILS(mlx_fft_fftn(&r, x, n2, 2, NULL, 2, B, s), "'axes'");
  /* irfft: the default size 2 (m - 1) of an axis of extent 1 is 0 */
  int one[2] = {3, 1};
  mlx_array x1 = test_rand_f32(one, 2, -1, 1);
  CHECK_FAILS(mlx_fft_irfftn(&r, x1, NULL, 0, ax01, 2, B, s), "invalid transform size 0");
  CHECK_FAILS(mlx_fft_irfft(&r, x1, 0, -1, B, s), "invalid transform size 0");
  CHECK_FAILS(mlx_fft_fftfreq(&r, 0, 1.0, s), "greater than 0");
  CHECK_FAILS(mlx_fft_rfftfreq(&r, -2, 1.0, s), "greater than 0");
  CHECK_FAILS(mlx_fft_fftfreq(&r, 4, 0.0, s), "non-zero");
  CHECK_FAILS(mlx_fft_rfftfreq(NULL, 4, 1.0, s), "result pointer");
  CHECK(r.ctx == NULL); /* failures leave the result untouched */
  mlx_array_free(x1);
  mlx_array_free(x);
  mlx_array_free(sc);
}

static void dtypes_and_edges(void) {
  mlx_stream s = test_stream();
  const mlx_fft_norm B = MLX_FFT_NORM_BACKWARD;
  double v[5] = {0.5, -1.25, 2, 3.5, -0.75};
  int five = 5, ax = 0;
  mlx_array d = mlx_array_new_data(v, &five, 1, MLX_FLOAT64), r = mlx_array_new();
  CHECK_OK(mlx_fft_fft(&r, d, 5, 0, B, s));
  CHECK(mlx_array_dtype(r) == MLX_COMPLEX64);
  double *got = fu_pairs(r), x[10];
  for (int k = 0; k < 5; k++) x[2 * k] = v[k], x[2 * k + 1] = 0;
  for (int k = 0; got && k < 5; k++) {
    double _Complex w = fu_dft_bin(x, 5, k, -1);
    CHECK_MSG(cabs(w - (got[2 * k] + I * got[2 * k + 1])) < 1e-5, "float64 bin %d", k);
  }
  free(got);
  CHECK_OK(mlx_fft_irfft(&r, d, 8, 0, B, s));
  CHECK(mlx_array_dtype(r) == MLX_FLOAT32);
  CHECK_SHAPE(r, 8);
  int iv[4] = {1, 2, 3, 4}, four = 4;
  mlx_array i32 = mlx_array_new_data(iv, &four, 1, MLX_INT32);
  CHECK_OK(mlx_fft_rfft(&r, i32, 4, 0, B, s));
  double want_i[6] = {10, 0, -2, 2, -2, 0};
  got = fu_pairs(r);
  size_t at;
  CHECK(got && fu_rel_err(got, want_i, 3, &at) < 1e-7);
  free(got);
  /* rfft of a complex input transforms its real part (MLX's cast) */
  double pr[8] = {1, 5, 2, -3, 0.5, 7, -1, 2};
  mlx_array c = fu_complex(pr, &four, 1), re = mlx_array_new(), r2 = mlx_array_new();
  CHECK_OK(mlx_fft_rfft(&r, c, 4, 0, B, s));
  CHECK_OK(mlx_real(&re, c, s));
  CHECK_OK(mlx_fft_rfft(&r2, re, 4, 0, B, s));
  double *g1 = fu_pairs(r), *g2 = fu_pairs(r2);
  CHECK(g1 && g2 && fu_rel_err(g1, g2, 3, &at) == 0);
  free(g1), free(g2);
  /* no axes: the input itself, whatever the transform */
  CHECK_OK(mlx_fft_rfftn(&r, d, NULL, 0, NULL, 0, B, s));
  CHECK(mlx_array_dtype(r) == MLX_FLOAT64 && r.ctx == d.ctx);
  /* empty arrays along the other axes */
  int es[2] = {0, 6};
  mlx_array z = mlx_array_new_data(v, es, 2, MLX_FLOAT32);
  CHECK_OK(mlx_fft_rfft(&r, z, 6, -1, B, s));
  CHECK_OK(mlx_array_eval(r));
  CHECK_SHAPE(r, 0, 4);
  /* fftfreq / rfftfreq (numpy's values, float32) */
  CHECK_OK(mlx_fft_fftfreq(&r, 5, 0.1, s));
  double f5[5] = {0, 2, 4, -4, -2};
  CHECK_CLOSE(r, f5, 5, 1e-6, 0);
  CHECK(mlx_array_dtype(r) == MLX_FLOAT32);
  CHECK_OK(mlx_fft_fftfreq(&r, 4, -1.0, s));
  double f4[4] = {0, -0.25, 0.5, 0.25};
  CHECK_CLOSE(r, f4, 4, 1e-7, 0);
  CHECK_OK(mlx_fft_rfftfreq(&r, 6, 1.0, s));
  double rf6[4] = {0, 1.0 / 6, 2.0 / 6, 0.5};
  CHECK_CLOSE(r, rf6, 4, 1e-7, 0);
  CHECK_OK(mlx_fft_rfftfreq(&r, 1, 2.0, s));
  CHECK_SHAPE(r, 1);
  (void)ax;
  mlx_array_free(z), mlx_array_free(c), mlx_array_free(re), mlx_array_free(r2);
  mlx_array_free(i32), mlx_array_free(d), mlx_array_free(r);
}

/* ifftn(fftn(x)) == x for each norm pairing, and ortho keeps the norm. */
static void round_trips(void) {
  mlx_stream s = test_stream();
  int sh[3] = {3, 10, 7}, axes[3] = {2, 0, 1};
  mlx_array x = test_rand_f32(sh, 3, -1, 1), f = mlx_array_new(), b = mlx_array_new();
  double *xv = test_values(x), *ref = malloc(sizeof(double) * 2 * 210);
  for (int k = 0; k < 210; k++) ref[2 * k] = xv[k], ref[2 * k + 1] = 0;
  for (int norm = 0; norm < 3; norm++) {
    CHECK_OK(mlx_fft_fftn(&f, x, NULL, 0, axes, 3, (mlx_fft_norm)norm, s));
    CHECK_OK(mlx_fft_ifftn(&b, f, NULL, 0, axes, 3, (mlx_fft_norm)norm, s));
    double *g = fu_pairs(b);
    size_t at;
    CHECK_MSG(g && fu_rel_err(g, ref, 210, &at) < 1e-6, "fftn round trip, norm %d", norm);
    free(g);
    CHECK_OK(mlx_fft_rfftn(&f, x, NULL, 0, axes, 3, (mlx_fft_norm)norm, s));
    CHECK_SHAPE(f, 3, 6, 7);
    int nn[3] = {7, 3, 10};
    CHECK_OK(mlx_fft_irfftn(&b, f, nn, 3, axes, 3, (mlx_fft_norm)norm, s));
    CHECK_SHAPE(b, 3, 10, 7);
    g = fu_pairs(b);
    CHECK_MSG(g && fu_rel_err(g, ref, 210, &at) < 1e-6, "rfftn round trip, norm %d", norm);
    free(g);
  }
  CHECK_OK(mlx_fft_fftn(&f, x, NULL, 0, axes, 3, MLX_FFT_NORM_ORTHO, s));
  double *g = fu_pairs(f), e1 = 0, e2 = 0;
  for (int k = 0; k < 210; k++) e1 += xv[k] * xv[k], e2 += g[2 * k] * g[2 * k] + g[2 * k + 1] * g[2 * k + 1];
  CHECK_MSG(fabs(e1 - e2) < 1e-5 * e1, "Parseval: %g vs %g", e1, e2);
  free(g), free(xv), free(ref);
  mlx_array_free(x), mlx_array_free(f), mlx_array_free(b);
}

/* rfft then irfft inside mlx_compile, plain and shapeless (the primitive's
 * output_shape), on two input lengths. */
static int rt_fn(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  (void)payload;
  mlx_array x = mlx_array_new(), f = mlx_array_new(), b = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  int axes[1] = {-1};
  int rc = mlx_fft_rfftn(&f, x, NULL, 0, axes, 1, MLX_FFT_NORM_ORTHO, test_stream()) ||
           mlx_fft_ifftn(&b, f, NULL, 0, axes, 1, MLX_FFT_NORM_ORTHO, test_stream()) ||
           mlx_vector_array_set_value(res, b);
  mlx_array_free(x), mlx_array_free(f), mlx_array_free(b);
  return rc;
}

static void compiled(void) {
  mlx_closure fn = mlx_closure_new_func_payload(rt_fn, NULL, NULL);
  for (int shapeless = 0; shapeless < 2; shapeless++) {
    mlx_closure c = mlx_closure_new();
    CHECK_OK(mlx_compile(&c, fn, shapeless));
    for (int len = 8; len <= 10; len += 2) {
      int sh[2] = {3, len};
      mlx_array x = test_rand_f32(sh, 2, -1, 1), y = mlx_array_new(), w = mlx_array_new();
      mlx_vector_array in = mlx_vector_array_new_value(x), out = mlx_vector_array_new();
      mlx_vector_array ref = mlx_vector_array_new();
      CHECK_OK(mlx_closure_apply(&out, c, in));
      CHECK_OK(mlx_closure_apply(&ref, fn, in));
      mlx_vector_array_get(&y, out, 0);
      mlx_vector_array_get(&w, ref, 0);
      CHECK_SHAPE(y, 3, len / 2 + 1);
      double *a = fu_pairs(y), *b = fu_pairs(w);
      size_t at;
      CHECK_MSG(a && b && fu_rel_err(a, b, (size_t)(3 * (len / 2 + 1)), &at) < 1e-6,
                "compiled (shapeless %d) length %d", shapeless, len);
      free(a), free(b);
      mlx_vector_array_free(in), mlx_vector_array_free(out), mlx_vector_array_free(ref);
      mlx_array_free(x), mlx_array_free(y), mlx_array_free(w);
    }
    mlx_closure_free(c);
  }
  mlx_closure_free(fn);
}

int main(void) {
  test_init();
  test_seed(5);
  size_t before = test_active_memory();
  errors();
  dtypes_and_edges();
  round_trips();
  compiled();
  CHECK_MSG(test_active_memory() == before, "active memory %zu -> %zu", before,
            test_active_memory());
  return test_done();
}
