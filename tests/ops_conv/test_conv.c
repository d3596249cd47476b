/* Convolutions against numpy references (tests/gen/gen_conv.py): 1-3
 * spatial dims, stride, padding (incl. negative), kernel and input
 * dilation, groups, flip, transposed convolutions with output padding;
 * dtypes, non-contiguous inputs, errors, leaks. */
#include "../data/conv_cases.h"
#include "test.h"

static mlx_array from_f64(const double *v, int nd, const int *shape, mlx_dtype t) {
  mlx_array a = mlx_array_new_data(v, shape, nd, MLX_FLOAT64), r = mlx_array_new();
  mlx_astype(&r, a, t, test_stream());
  mlx_array_free(a);
  return r;
}

static size_t shape_size(int nd, const int *s) {
  size_t n = 1;
  for (int i = 0; i < nd; i++) n *= (size_t)s[i];
  return n;
}

/* x with the same values but stored channels-first, viewed back as
 * channels-last through moveaxis (a non-contiguous input). */
static mlx_array channels_first_view(const double *v, int nd, const int *shape, mlx_dtype t) {
  size_t n = shape_size(nd, shape);
  int C = shape[nd - 1];
  double *perm = malloc(sizeof(double) * n);
  for (size_t i = 0; i < n; i++) perm[(i % (size_t)C) * (n / (size_t)C) + i / (size_t)C] = v[i];
  int ps[5];
  ps[0] = C;
  for (int i = 0; i < nd - 1; i++) ps[i + 1] = shape[i];
  mlx_array a = from_f64(perm, nd, ps, t), r = mlx_array_new();
  free(perm);
  mlx_moveaxis(&r, a, 0, -1, test_stream());
  mlx_array_free(a);
  return r;
}

/* Runs case c through the most specific public entry point (conv1d/2d/3d
 * when it expresses the case, else conv_general; conv_transpose*d). */
static int run(const struct conv_case *c, mlx_array x, mlx_array w, mlx_array *r, bool general) {
  mlx_stream s = test_stream();
  const int *st = c->stride, *lo = c->lo, *kd = c->kd, *op = c->opad;
  if (c->kind == 1) {
    if (c->nsp == 1) return mlx_conv_transpose1d(r, x, w, st[0], lo[0], kd[0], op[0], c->groups, s);
    if (c->nsp == 2)
      return mlx_conv_transpose2d(r, x, w, st[0], st[1], lo[0], lo[1], kd[0], kd[1], op[0], op[1],
                                  c->groups, s);
    return mlx_conv_transpose3d(r, x, w, st[0], st[1], st[2], lo[0], lo[1], lo[2], kd[0], kd[1],
                                kd[2], op[0], op[1], op[2], c->groups, s);
  }
  bool simple = !c->flip && !memcmp(c->lo, c->hi, sizeof c->lo);
  for (int i = 0; i < c->nsp; i++) simple = simple && c->idl[i] == 1 && c->lo[i] >= 0;
  if (simple && !general) {
    if (c->nsp == 1) return mlx_conv1d(r, x, w, st[0], lo[0], kd[0], c->groups, s);
    if (c->nsp == 2)
      return mlx_conv2d(r, x, w, st[0], st[1], lo[0], lo[1], kd[0], kd[1], c->groups, s);
    return mlx_conv3d(r, x, w, st[0], st[1], st[2], lo[0], lo[1], lo[2], kd[0], kd[1], kd[2],
                      c->groups, s);
  }
  return mlx_conv_general(r, x, w, st, c->nsp, c->lo, c->nsp, c->hi, c->nsp, c->kd, c->nsp,
                          c->idl, c->nsp, c->groups, c->flip, s);
}

static void run_case(const struct conv_case *c, mlx_dtype t, bool noncontig, bool general) {
  int nd = c->nsp + 2;
  mlx_array x = noncontig ? channels_first_view(c->x, nd, c->xs, t) : from_f64(c->x, nd, c->xs, t);
  mlx_array w = from_f64(c->w, nd, c->ws, t), r = mlx_array_new();
  CHECK_OK(run(c, x, w, &r, general));
  CHECK(mlx_array_dtype(r) == t);
  CHECK_MSG(mlx_array_ndim(r) == (size_t)nd && !memcmp(mlx_array_shape(r), c->rs, sizeof(int) * nd),
            "case kind %d nsp %d: shape", c->kind, c->nsp);
  double tol = t == MLX_FLOAT64 ? 1e-12 : t == MLX_FLOAT32 ? 1e-5 : t == MLX_FLOAT16 ? 2e-2 : 8e-2;
  CHECK_CLOSE(r, c->r, shape_size(nd, c->rs), tol, tol);
  mlx_array_free(x);
  mlx_array_free(w);
  mlx_array_free(r);
}

static void test_cases(void) {
  size_t nc = sizeof conv_cases / sizeof conv_cases[0];
  for (size_t i = 0; i < nc; i++) {
    run_case(&conv_cases[i], MLX_FLOAT32, false, false);
    run_case(&conv_cases[i], MLX_FLOAT32, true, false);
    run_case(&conv_cases[i], MLX_FLOAT64, false, false);
    run_case(&conv_cases[i], MLX_FLOAT16, false, false);
    if (conv_cases[i].kind == 0) run_case(&conv_cases[i], MLX_FLOAT32, false, true);
  }
  run_case(&conv_cases[0], MLX_BFLOAT16, true, false);
}

/* Scalar (one-entry) per-axis arguments broadcast; mixed dtypes promote. */
static void test_broadcast_args(void) {
  mlx_stream s = test_stream();
  int xs[] = {1, 5, 6, 2}, ws[] = {3, 2, 2, 2};
  mlx_array x = test_rand_f32(xs, 4, -1, 1), w = test_rand_f32(ws, 4, -1, 1);
  mlx_array a = mlx_array_new(), b = mlx_array_new(), d = mlx_array_new(), w16 = mlx_array_new();
  int two = 2, one = 1, st2[] = {2, 2}, pd[] = {1, 1};
  CHECK_OK(mlx_conv_general(&a, x, w, &two, 1, &one, 1, &one, 1, NULL, 0, NULL, 0, 1, false, s));
  CHECK_OK(mlx_conv_general(&b, x, w, st2, 2, pd, 2, pd, 2, NULL, 0, NULL, 0, 1, false, s));
  CHECK_SHAPE(a, 1, 3, 4, 3);
  double *va = test_values(a);
  CHECK_CLOSE(b, va, 36, 0, 0);
  free(va);
  CHECK_OK(mlx_astype(&w16, w, MLX_FLOAT16, s));
  CHECK_OK(mlx_conv2d(&d, x, w16, 1, 1, 0, 0, 1, 1, 1, s));
  CHECK(mlx_array_dtype(d) == MLX_FLOAT32);
  mlx_array_free(x), mlx_array_free(w), mlx_array_free(a), mlx_array_free(b);
  mlx_array_free(d), mlx_array_free(w16);
}

static void test_errors(void) {
  mlx_stream s = test_stream();
  int xs[] = {2, 8, 4}, ws[] = {6, 3, 4}, w2s[] = {6, 3, 3}, is[] = {2, 8};
  mlx_array x = test_rand_f32(xs, 3, -1, 1), w = test_rand_f32(ws, 3, -1, 1);
  mlx_array w2 = test_rand_f32(w2s, 3, -1, 1), x2 = test_rand_f32(is, 2, -1, 1);
  mlx_array xi = mlx_array_new(), r = mlx_array_new(), empty = mlx_array_new();
  CHECK_OK(mlx_astype(&xi, x, MLX_INT32, s));
  CHECK_FAILS(mlx_conv1d(&r, xi, w, 1, 0, 1, 1, s), "floating point");
  CHECK_FAILS(mlx_conv1d(&r, x2, w, 1, 0, 1, 1, s), "dimensions");
  CHECK_FAILS(mlx_conv2d(&r, x, w, 1, 1, 0, 0, 1, 1, 1, s), "dimensions");
  CHECK_FAILS(mlx_conv1d(&r, x, w2, 1, 0, 1, 1, s), "input channels");
  CHECK_FAILS(mlx_conv1d(&r, x, w, 1, 0, 1, 3, s), "divisible");
  CHECK_FAILS(mlx_conv1d(&r, x, w, 1, 0, 1, 0, s), "groups must be positive");
  CHECK_FAILS(mlx_conv1d(&r, x, w, 0, 0, 1, 1, s), "stride");
  CHECK_FAILS(mlx_conv1d(&r, x, w, 1, 0, 0, 1, s), "dilation");
  CHECK_FAILS(mlx_conv1d(&r, x, w, 1, 0, 4, 1, s), "smaller than the weight");
  CHECK_FAILS(mlx_conv1d(&r, empty, w, 1, 0, 1, 1, s), "empty array");
  CHECK_FAILS(mlx_conv1d(NULL, x, w, 1, 0, 1, 1, s), "NULL");
  int st2[] = {1, 1};
  CHECK_FAILS(mlx_conv_general(&r, x, w, st2, 2, NULL, 0, NULL, 0, NULL, 0, NULL, 0, 1, false, s),
              "invalid stride");
  CHECK_FAILS(mlx_conv_transpose1d(&r, x, w, 0, 0, 1, 0, 1, s), "stride");
  CHECK(r.ctx == NULL);
  mlx_array_free(x), mlx_array_free(w), mlx_array_free(w2), mlx_array_free(x2);
  mlx_array_free(xi);
}

int main(void) {
  test_init();
  size_t base = test_active_memory();
  test_cases();
  test_broadcast_args();
  test_errors();
  CHECK_MSG(test_active_memory() == base, "active memory %zu, baseline %zu", test_active_memory(),
            base);
  return test_done();
}
