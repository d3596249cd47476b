/* The FFT primitive's transformation rules. Transforms are linear, so the
 * checks are exact up to rounding (finite differences would only add
 * float32 noise): the jvp at any point along t is f(t); the vjp is the
 * adjoint, checked column by column against f(e_j) (<u, f(e_j)> is the
 * real part of the cotangent at j for a real unit, its imaginary part for
 * an imaginary one: MLX's convention, under which real and imag compose);
 * vmap against a loop (tests/transforms/tx_check.h). Outputs are made
 * real: the real parts, then the imaginary parts, flattened. */
#include "fft_util.h"
#include "../transforms/tx_check.h"

struct tcase {
  const char *name;
  int fn, nn, n[3], na, axes[3], norm;
  bool complex_in;
  int nd, shape[3];
};

static int flat_real(mlx_array *out, mlx_array y) {
  mlx_stream s = test_stream();
  mlx_array fy = mlx_array_new();
  int rc = mlx_flatten(&fy, y, 0, -1, s);
  if (!rc && mlx_array_dtype(y) != MLX_COMPLEX64) {
    mlx_array_set(out, fy);
  } else if (!rc) {
    mlx_array re = mlx_array_new(), im = mlx_array_new();
    rc = mlx_real(&re, fy, s) || mlx_imag(&im, fy, s);
    mlx_vector_array v = mlx_vector_array_new();
    if (!rc) rc = mlx_vector_array_append_value(v, re) || mlx_vector_array_append_value(v, im);
    if (!rc) rc = mlx_concatenate_axis(out, v, 0, s);
    mlx_vector_array_free(v);
    mlx_array_free(re);
    mlx_array_free(im);
  }
  mlx_array_free(fy);
  return rc;
}

static int apply(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  const struct tcase *c = ctx;
  mlx_array y = mlx_array_new();
  int rc = fu_call(c->fn, &y, in[0], c->n, c->nn, c->axes, c->na, (mlx_fft_norm)c->norm);
  if (!rc) rc = flat_real(out, y);
  mlx_array_free(y);
  return rc;
}

static mlx_array rand_input(const struct tcase *c, const int *shape, int nd) {
  size_t sz = 1;
  for (int d = 0; d < nd; d++) sz *= (size_t)shape[d];
  double *v = malloc(sizeof(double) * 2 * sz);
  for (size_t k = 0; k < 2 * sz; k++) v[k] = test_uniform(-1, 1);
  mlx_array a = c->complex_in ? fu_complex(v, shape, nd) : fu_real(v, shape, nd);
  free(v);
  return a;
}

/* e_j (or i e_j) of x's shape and dtype. */
static mlx_array unit(const struct tcase *c, size_t sz, size_t j, bool imag) {
  double *v = calloc(2 * sz, sizeof(double));
  v[c->complex_in ? 2 * j + imag : j] = 1;
  mlx_array a = c->complex_in ? fu_complex(v, c->shape, c->nd) : fu_real(v, c->shape, c->nd);
  free(v);
  return a;
}

static double *eval_f(const struct tcase *c, mlx_array x, size_t *no) {
  mlx_array y = mlx_array_new();
  double *v = NULL;
  if (!apply(&y, &x, 1, (void *)c)) {
    v = test_values(y);
    *no = mlx_array_size(y);
  }
  mlx_array_free(y);
  return v;
}

static void check_rules(const struct tcase *c) {
  mlx_closure cls = tx_closure(apply, (void *)c);
  mlx_array x = rand_input(c, c->shape, c->nd), t = rand_input(c, c->shape, c->nd);
  size_t sz = mlx_array_size(x), no = 0;
  double *ft = eval_f(c, t, &no);
  /* jvp at x along t is f(t) */
  mlx_vector_array prim = mlx_vector_array_new_value(x), tan = mlx_vector_array_new_value(t);
  mlx_vector_array o0 = mlx_vector_array_new(), o1 = mlx_vector_array_new();
  CHECK_MSG(mlx_jvp(&o0, &o1, cls, prim, tan) == 0, "%s: jvp: %s", c->name, test_last_error);
  mlx_array jt = mlx_array_new();
  mlx_vector_array_get(&jt, o1, 0);
  if (ft) CHECK_CLOSE(jt, ft, no, 0, 2e-6 * (1 + no));
  /* vjp column by column */
  double *u = malloc(sizeof(double) * (no ? no : 1));
  for (size_t k = 0; k < no; k++) u[k] = test_uniform(-1, 1);
  mlx_array ua = mlx_array_new_data((float[1]){0}, NULL, 0, MLX_FLOAT32);
  {
    float *uf = malloc(sizeof(float) * (no ? no : 1));
    for (size_t k = 0; k < no; k++) uf[k] = (float)u[k], u[k] = uf[k];
    int nos = (int)no;
    mlx_array_free(ua);
    ua = mlx_array_new_data(uf, &nos, 1, MLX_FLOAT32);
    free(uf);
  }
  mlx_vector_array cot = mlx_vector_array_new_value(ua);
  mlx_vector_array v0 = mlx_vector_array_new(), v1 = mlx_vector_array_new();
  CHECK_MSG(mlx_vjp(&v0, &v1, cls, prim, cot) == 0, "%s: vjp: %s", c->name, test_last_error);
  mlx_array g = mlx_array_new();
  mlx_vector_array_get(&g, v1, 0);
  CHECK_MSG(mlx_array_dtype(g) == mlx_array_dtype(x), "%s: cotangent dtype", c->name);
  double *gv = g.ctx ? fu_pairs(g) : NULL;
  for (size_t j = 0; gv && j < sz; j++) {
    for (int im = 0; im <= (int)c->complex_in; im++) {
      mlx_array e = unit(c, sz, j, im);
      size_t ne = 0;
      double *fe = eval_f(c, e, &ne), dot = 0;
      for (size_t k = 0; fe && k < ne; k++) dot += u[k] * fe[k];
      double want = gv[2 * j + im];
      CHECK_MSG(fe && fabs(dot - want) < 2e-5 * (1 + fabs(dot)), "%s: vjp at %zu%s: %g vs %g",
                c->name, j, im ? "i" : "", want, dot);
      free(fe);
      mlx_array_free(e);
    }
  }
  free(gv), free(u), free(ft);
  mlx_array_free(g), mlx_array_free(ua), mlx_array_free(jt);
  mlx_vector_array_free(cot), mlx_vector_array_free(v0), mlx_vector_array_free(v1);
  mlx_vector_array_free(o0), mlx_vector_array_free(o1);
  mlx_vector_array_free(prim), mlx_vector_array_free(tan);
  /* vmap over a batch axis inserted at each place */
  for (int bax = 0; bax <= c->nd; bax++) {
    int sh[4], k = 0;
    for (int d = 0; d <= c->nd; d++) {
      if (d == bax) sh[k++] = 3;
      if (d < c->nd) sh[k++] = c->shape[d];
    }
    mlx_array xb = rand_input(c, sh, c->nd + 1);
    char name[96];
    snprintf(name, sizeof name, "%s (batch axis %d)", c->name, bax);
    tx_check_vmap(name, apply, (void *)c, 1, &xb, &bax, 1e-6);
    mlx_array_free(xb);
  }
  mlx_array_free(x), mlx_array_free(t);
  mlx_closure_free(cls);
}

static const struct tcase cases[] = {
    {"fft padded", F_FFT, 1, {7}, 1, {-1}, 0, true, 2, {2, 5}},
    {"fft cut axis 0 ortho", F_FFT, 1, {3}, 1, {0}, 1, true, 2, {5, 2}},
    {"ifft forward", F_IFFT, 1, {6}, 1, {1}, 2, true, 2, {2, 6}},
    {"rfft odd", F_RFFT, 1, {5}, 1, {-1}, 0, false, 2, {2, 5}},
    {"rfft even axis 0", F_RFFT, 1, {6}, 1, {0}, 1, false, 2, {6, 2}},
    {"irfft even", F_IRFFT, 1, {6}, 1, {-1}, 0, true, 2, {2, 4}},
    {"irfft odd", F_IRFFT, 1, {7}, 1, {-1}, 2, true, 2, {2, 4}},
    {"irfft odd cut", F_IRFFT, 1, {5}, 1, {0}, 1, true, 2, {4, 2}},
    {"fft2", F_FFT2, 2, {3, 4}, 2, {0, 1}, 0, true, 2, {3, 4}},
    {"ifftn padded", F_IFFTN, 2, {4, 3}, 2, {-1, 0}, 1, true, 2, {3, 2}},
    {"rfft2", F_RFFT2, 0, {0}, 2, {-2, -1}, 0, false, 3, {2, 3, 4}},
    {"rfftn axes reordered", F_RFFTN, 2, {3, 5}, 2, {2, 0}, 2, false, 3, {3, 2, 5}},
    {"irfft2", F_IRFFT2, 2, {3, 6}, 2, {0, 1}, 0, true, 2, {3, 4}},
    {"irfftn odd", F_IRFFTN, 2, {5, 3}, 2, {1, 0}, 1, true, 2, {2, 3}},
};

int main(void) {
  test_init();
  test_seed(3);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_rules(&cases[i]);
  return test_done();
}
