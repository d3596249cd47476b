/* Rules of REDUCE (every kind) and ARG_REDUCE: vjp and jvp against finite
 * differences, vmap against a loop, over random shapes (size-1 dims
 * included), random axis subsets, keepdims both ways and non-contiguous
 * inputs (transposed and negative-stride views). */
#include "tx_check.h"

enum {
  K_SUM,
  K_PROD,
  K_MAX,
  K_MIN,
  K_MEAN,
  K_VAR,
  K_STD,
  K_LSE,
  K_ALL,
  K_ANY,
  K_ARGMAX,
  K_ARGMIN_ALL,
  K_N
};
static const char *const names[K_N] = {"sum", "prod", "max", "min", "mean", "var",
                                       "std", "logsumexp", "all", "any", "argmax", "argmin_all"};

struct red {
  int kind, naxes, ddof;
  int axes[4];
  bool keepdims;
};

static int f_red(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  const struct red *r = ctx;
  mlx_stream s = test_stream();
  const int *ax = r->axes;
  size_t na = (size_t)r->naxes;
  bool kd = r->keepdims;
  switch (r->kind) {
  case K_SUM: return mlx_sum_axes(out, in[0], ax, na, kd, s);
  case K_PROD: return mlx_prod_axes(out, in[0], ax, na, kd, s);
  case K_MAX: return mlx_max_axes(out, in[0], ax, na, kd, s);
  case K_MIN: return mlx_min_axes(out, in[0], ax, na, kd, s);
  case K_MEAN: return mlx_mean_axes(out, in[0], ax, na, kd, s);
  case K_VAR: return mlx_var_axes(out, in[0], ax, na, kd, r->ddof, s);
  case K_STD: return mlx_std_axes(out, in[0], ax, na, kd, r->ddof, s);
  case K_LSE: return mlx_logsumexp_axes(out, in[0], ax, na, kd, s);
  case K_ALL: return mlx_all_axes(out, in[0], ax, na, kd, s);
  case K_ANY: return mlx_any_axes(out, in[0], ax, na, kd, s);
  case K_ARGMAX: return mlx_argmax_axis(out, in[0], ax[0], kd, s);
  default: return mlx_argmin(out, in[0], kd, s);
  }
}


/* Random reduction parameters for an input of shape (nd dims): a nonempty
 * axis subset (some given negative), ddof 0 or 1. */
static struct red random_red(int kind, int nd, const int *shape) {
  struct red r = {.kind = kind, .keepdims = test_randint(0, 1)};
  for (;;) {
    r.naxes = 0;
    int cnt = 1;
    for (int d = 0; d < nd; d++)
      if (test_randint(0, 1)) {
        r.axes[r.naxes++] = test_randint(0, 1) ? d : d - nd;
        cnt *= shape[d];
      }
    if (r.naxes == 0) continue;
    r.ddof = kind == K_VAR || kind == K_STD ? test_randint(0, 1) : 0;
    /* std needs a nonzero deviation, var with ddof a positive divisor */
    if ((kind == K_STD || r.ddof) && cnt < 2) continue;
    break;
  }
  /* shuffle the axis order (the rules must not rely on it) */
  if (r.naxes > 1) {
    int t = r.axes[0];
    r.axes[0] = r.axes[r.naxes - 1];
    r.axes[r.naxes - 1] = t;
  }
  if (kind == K_ARGMAX) r.axes[0] = test_randint(-nd, nd - 1), r.naxes = 1;
  return r;
}

static void random_shape(int *shape, int *nd, int min_nd) {
  *nd = test_randint(min_nd, 4);
  for (int d = 0; d < *nd; d++) shape[d] = test_randint(1, 4);
}

static void check_grad_random(int kind, int trials) {
  for (int t = 0; t < trials; t++) {
    int shape[4], nd;
    random_shape(shape, &nd, 1);
    struct red r = random_red(kind, nd, shape);
    /* prod: keep factors away from zero; logsumexp/others: any sign */
    double lo = kind == K_PROD ? 0.5 : -2, hi = kind == K_PROD ? 1.5 : 2;
    mlx_array x = tx_rand_layout(shape, nd, t % 3, lo, hi);
    char name[96];
    snprintf(name, sizeof name, "%s nd=%d naxes=%d keepdims=%d ddof=%d layout=%d", names[kind],
             nd, r.naxes, r.keepdims, r.ddof, t % 3);
    tx_check_grad(name, f_red, &r, 1, &x, 1e-5);
    mlx_array_free(x);
  }
}

/* vmap with the batch at axis 0 and at axis 1 of the batched input, and
 * with a second, unbatched input the function ignores. */
static int f_red_first(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  return f_red(out, in, 1, ctx);
}

static void check_vmap_random(int kind, int trials) {
  for (int t = 0; t < trials; t++) {
    int shape[5], nd;
    random_shape(shape, &nd, 1);
    struct red r = random_red(kind, nd, shape);
    for (int bax = 0; bax <= 1 && bax <= nd; bax++) {
      int bs[5], B = test_randint(1, 3);
      for (int d = 0, k = 0; d <= nd; d++) bs[d] = d == bax ? B : shape[k++];
      mlx_array x = tx_rand_layout(bs, nd + 1, t % 3, -2, 2);
      char name[96];
      snprintf(name, sizeof name, "vmap %s nd=%d naxes=%d keepdims=%d in_axis=%d", names[kind],
               nd, r.naxes, r.keepdims, bax);
      tx_check_vmap(name, f_red, &r, 1, &x, &bax, 1e-12);
      mlx_array_free(x);
    }
  }
  int shape[2] = {3, 2}, bshape[2] = {4, 2};
  struct red r = random_red(kind, 2, shape);
  mlx_array in[2] = {tx_rand(shape, 2, -2, 2), tx_rand(bshape, 2, -2, 2)};
  int axes[2] = {-1, 0};
  char name[64];
  snprintf(name, sizeof name, "vmap %s unbatched input", names[kind]);
  tx_check_vmap(name, f_red_first, &r, 2, in, axes, 1e-12);
  mlx_array_free(in[0]);
  mlx_array_free(in[1]);
}

/* prod with zeros in the input: one zero (the others' product survives)
 * and two zeros in one group (everything vanishes); prod is multilinear,
 * so finite differences are exact there. */
static void check_prod_zeros(void) {
  double v[12];
  for (int i = 0; i < 12; i++) v[i] = test_uniform(0.5, 1.5);
  v[1] = 0;          /* row 0: one zero */
  v[4 * 1 + 2] = 0;  /* row 1: two zeros */
  v[4 * 1 + 3] = 0;
  int shape[2] = {3, 4};
  mlx_array x = mlx_array_new_data(v, shape, 2, MLX_FLOAT64);
  struct red r = {.kind = K_PROD, .naxes = 1, .axes = {1}};
  tx_check_grad("prod with zeros, axis 1", f_red, &r, 1, &x, 1e-6);
  struct red r2 = {.kind = K_PROD, .naxes = 2, .axes = {0, 1}, .keepdims = true};
  tx_check_grad("prod with zeros, all axes", f_red, &r2, 1, &x, 1e-6);
  struct red r3 = {.kind = K_PROD, .naxes = 1, .axes = {0}};
  tx_check_grad("prod with zeros, axis 0", f_red, &r3, 1, &x, 1e-6);
  mlx_array_free(x);
}

/* max with a tie: MLX splits the cotangent evenly between the tied
 * elements; jvp takes the first one's tangent. */
static void check_max_tie(void) {
  double v[4] = {0.5, 2.0, -1.0, 2.0};
  int shape[1] = {4};
  mlx_array x = mlx_array_new_data(v, shape, 1, MLX_FLOAT64);
  mlx_array g = mlx_array_new();
  struct red r = {.kind = K_MAX, .naxes = 1, .axes = {0}};
  mlx_closure cls = tx_closure(f_red, &r);
  mlx_vector_array prim = mlx_vector_array_new_value(x);
  mlx_array one = mlx_array_new_double(1.0);
  mlx_vector_array cot = mlx_vector_array_new_value(one);
  mlx_vector_array r0 = mlx_vector_array_new(), r1 = mlx_vector_array_new();
  CHECK_OK(mlx_vjp(&r0, &r1, cls, prim, cot));
  mlx_vector_array_get(&g, r1, 0);
  double want[4] = {0, 0.5, 0, 0.5};
  CHECK_CLOSE(g, want, 4, 1e-12, 1e-12);
  mlx_vector_array_free(r0);
  mlx_vector_array_free(r1);
  mlx_vector_array_free(cot);
  mlx_vector_array_free(prim);
  mlx_array_free(one);
  mlx_array_free(g);
  mlx_closure_free(cls);
  mlx_array_free(x);
}

/* var and logsumexp over an empty axis list are REDUCE nodes too. */
static void check_no_axes(void) {
  int shape[2] = {2, 3};
  mlx_array x = tx_rand(shape, 2, -1, 1);
  struct red rv = {.kind = K_VAR, .naxes = 0};
  tx_check_grad("var over no axes", f_red, &rv, 1, &x, 1e-6);
  struct red rl = {.kind = K_LSE, .naxes = 0};
  tx_check_grad("logsumexp over no axes", f_red, &rl, 1, &x, 1e-6);
  int ax0 = 0;
  tx_check_vmap("vmap var over no axes", f_red, &rv, 1, &x, &ax0, 1e-12);
  tx_check_vmap("vmap logsumexp over no axes", f_red, &rl, 1, &x, &ax0, 1e-12);
  mlx_array_free(x);
}

/* A 0-d input: full reductions of a scalar. */
static void check_scalar(void) {
  mlx_array x = mlx_array_new_double(0.75);
  struct red r = {.kind = K_ARGMIN_ALL};
  tx_check_grad("argmin of a scalar", f_red, &r, 1, &x, 1e-6);
  int shape[1] = {3};
  mlx_array xb = tx_rand(shape, 1, -1, 1);
  int ax0 = 0;
  struct red rk = {.kind = K_ARGMIN_ALL, .keepdims = true};
  tx_check_vmap("vmap argmin of scalars", f_red, &r, 1, &xb, &ax0, 0);
  tx_check_vmap("vmap argmin of scalars, keepdims", f_red, &rk, 1, &xb, &ax0, 0);
  mlx_array_free(xb);
  mlx_array_free(x);
}


static void check_second_order(void) {
  int shape[3] = {2, 3, 2}, bshape[4] = {3, 2, 3, 2};
  struct red rs[] = {
      {.kind = K_PROD, .naxes = 2, .axes = {0, 2}},
      {.kind = K_SUM, .naxes = 1, .axes = {1}, .keepdims = true},
      {.kind = K_MEAN, .naxes = 2, .axes = {-1, 0}},
      {.kind = K_VAR, .naxes = 1, .axes = {1}, .ddof = 1},
      {.kind = K_STD, .naxes = 2, .axes = {0, 1}, .keepdims = true},
      {.kind = K_LSE, .naxes = 2, .axes = {1, 2}},
      {.kind = K_MAX, .naxes = 1, .axes = {1}},
      {.kind = K_MIN, .naxes = 3, .axes = {0, 1, 2}},
  };
  for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++) {
    double lo = rs[i].kind == K_PROD ? 0.5 : -2, hi = rs[i].kind == K_PROD ? 1.5 : 2;
    mlx_array x = tx_rand_layout(shape, 3, (int)i % 3, lo, hi);
    mlx_array xb = tx_rand(bshape, 4, lo, hi);
    tx_check_second(names[rs[i].kind], f_red, &rs[i], x, xb, 1e-5);
    mlx_array_free(x);
    mlx_array_free(xb);
  }
}

int main(void) {
  test_init();
  test_seed(7);
  for (int k = 0; k < K_N; k++) {
    check_grad_random(k, 9);
    check_vmap_random(k, 4);
  }
  check_prod_zeros();
  check_max_tie();
  check_no_axes();
  check_scalar();
  check_second_order();
  return test_done();
}
