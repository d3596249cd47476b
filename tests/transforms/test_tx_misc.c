/* Transformation rules of depends, hadamard_transform, tril / triu and the
 * random primitives: vjp and jvp against finite differences and vmap
 * against a loop (float64 where the op allows it; uniform is float32 only,
 * so its derivatives are checked against their closed form instead). */
#include "tx_check.h"

#define S test_stream()


/* grad at a random point, vmap over each axis 0..ndim of input 0 (others
 * unbatched), and with every input batched at 0. */
static void check_unary_like(const char *name, tx_fn f, void *ctx, int n, const int *nd,
                             const int (*sh)[4]) {
  mlx_array in[4];
  for (int i = 0; i < n; i++) in[i] = tx_rand_batched(sh[i], nd[i], -1, 1, -1, 1);
  tx_check_grad(name, f, ctx, n, in, 1e-6);
  for (int i = 0; i < n; i++) mlx_array_free(in[i]);
  for (int a = -1; a <= nd[0]; a++) {
    int axes[4];
    for (int i = 0; i < n; i++) axes[i] = a < 0 ? 0 : i == 0 ? a : -1;
    for (int i = 0; i < n; i++) in[i] = tx_rand_batched(sh[i], nd[i], axes[i], 3, -1, 1);
    char nm[96];
    snprintf(nm, sizeof nm, "%s vmap axis %d", name, a);
    tx_check_vmap(nm, f, ctx, n, in, axes, 1e-10);
    for (int i = 0; i < n; i++) mlx_array_free(in[i]);
  }
}

/* ---- hadamard ---- */

struct had_ctx {
  int transpose;
  mlx_optional_float scale;
};

static int f_hadamard(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  struct had_ctx *c = ctx;
  mlx_array x = mlx_array_new();
  int rc = c->transpose ? mlx_swapaxes(&x, in[0], -1, -2, S) : mlx_array_set(&x, in[0]);
  rc = rc || mlx_hadamard_transform(out, x, c->scale, S);
  mlx_array_free(x);
  return rc;
}

/* ---- tril / triu ---- */

struct tri_ctx {
  int k, upper;
};

static int f_tril(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  struct tri_ctx *c = ctx;
  return c->upper ? mlx_triu(out, in[0], c->k, S) : mlx_tril(out, in[0], c->k, S);
}

/* ---- depends: x (depending on y) plus y squared, so y's gradient is only
 * through the second term ---- */

static int f_depends(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  mlx_vector_array xs = mlx_vector_array_new_value(in[0]);
  mlx_vector_array ds = mlx_vector_array_new_value(in[1]);
  mlx_vector_array r = mlx_vector_array_new();
  mlx_array d = mlx_array_new(), sq = mlx_array_new();
  int rc = mlx_depends(&r, xs, ds) || mlx_vector_array_get(&d, r, 0) ||
           mlx_multiply(&sq, in[1], in[1], S) || mlx_add(out, d, sq, S);
  mlx_array_free(d);
  mlx_array_free(sq);
  mlx_vector_array_free(xs);
  mlx_vector_array_free(ds);
  mlx_vector_array_free(r);
  return rc;
}

/* ---- random ---- */

struct rnd_ctx {
  mlx_array key; /* used when the key is not input 0 */
};

static int f_bits(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  int sh[2] = {3, 5};
  return mlx_random_bits(out, sh, 2, 4, in[0], S);
}

static int f_split(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  return mlx_random_split_num(out, in[0], 3, S);
}

static int f_normal_key(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  int sh[2] = {2, 3};
  return mlx_random_normal(out, sh, 2, MLX_FLOAT32, 0.5f, 2.0f, in[0], S);
}

/* normal(loc = in[0], scale = in[1]) of shape (2, 3), float64 */
static int f_normal_bcast(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  struct rnd_ctx *c = ctx;
  int sh[2] = {2, 3};
  return mlx_random_normal_broadcast(out, sh, 2, MLX_FLOAT64, in[0], in[1], c->key, S);
}

static int f_uniform(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  struct rnd_ctx *c = ctx;
  int sh[2] = {2, 3};
  return mlx_random_uniform(out, in[0], in[1], sh, 2, MLX_FLOAT32, c->key, S);
}

static int f_permutation(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  struct rnd_ctx *c = ctx;
  return mlx_random_permutation(out, in[0], 1, c->key, S);
}

/* permutation with the key as input 1 (vmapped keys) */
static int f_permutation_key(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  return mlx_random_permutation(out, in[0], 0, in[1], S);
}

static int f_categorical(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  struct rnd_ctx *c = ctx;
  return mlx_random_categorical(out, in[0], -1, n > 1 ? in[1] : c->key, S);
}

static mlx_array keys(int B, int seed, bool transposed) {
  uint32_t v[16];
  for (int i = 0; i < 2 * B; i++) v[i] = (uint32_t)(seed * 2654435761u + (uint32_t)i * 40503u);
  int sh[2] = {B, 2}, tsh[2] = {2, B};
  if (!transposed) return mlx_array_new_data(v, sh, 2, MLX_UINT32);
  uint32_t t[16];
  for (int b = 0; b < B; b++)
    for (int j = 0; j < 2; j++) t[j * B + b] = v[b * 2 + j];
  return mlx_array_new_data(t, tsh, 2, MLX_UINT32);
}

/* d/dlow + d/dhigh = 1 and d/dhigh = (out - low) / (high - low) */
static void check_uniform_grad(struct rnd_ctx *c) {
  int sh[2] = {2, 3};
  mlx_array lo = tx_rand(sh, 2, -2, -1), hi = tx_rand(sh, 2, 1, 3);
  mlx_array lo32 = mlx_array_new(), hi32 = mlx_array_new(), out = mlx_array_new();
  mlx_astype(&lo32, lo, MLX_FLOAT32, S);
  mlx_astype(&hi32, hi, MLX_FLOAT32, S);
  mlx_array prim[2] = {lo32, hi32};
  f_uniform(&out, prim, 2, c);
  mlx_closure cls = tx_closure(f_uniform, c);
  mlx_vector_array p = mlx_vector_array_new_data(prim, 2);
  mlx_array one = mlx_array_new(), g0 = mlx_array_new(), g1 = mlx_array_new();
  mlx_ones_like(&one, out, S);
  mlx_vector_array ct = mlx_vector_array_new_value(one);
  mlx_vector_array r0 = mlx_vector_array_new(), r1 = mlx_vector_array_new();
  CHECK_OK(mlx_vjp(&r0, &r1, cls, p, ct));
  mlx_vector_array_get(&g0, r1, 0);
  mlx_vector_array_get(&g1, r1, 1);
  double *a = test_values(g0), *b = test_values(g1), *o = test_values(out);
  double *l = test_values(lo32), *h = test_values(hi32);
  for (int i = 0; a && b && o && i < 6; i++) {
    CHECK_MSG(fabs(a[i] + b[i] - 1) < 1e-6, "uniform: d/dlow + d/dhigh = %g", a[i] + b[i]);
    double u = (o[i] - l[i]) / (h[i] - l[i]);
    CHECK_MSG(fabs(b[i] - u) < 1e-5, "uniform: d/dhigh %g, expected %g", b[i], u);
  }
  free(a), free(b), free(o), free(l), free(h);
  mlx_array arrs[] = {lo, hi, lo32, hi32, out, one, g0, g1};
  for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) mlx_array_free(arrs[i]);
  mlx_vector_array_free(p);
  mlx_vector_array_free(ct);
  mlx_vector_array_free(r0);
  mlx_vector_array_free(r1);
  mlx_closure_free(cls);
}

static void random_tests(void) {
  struct rnd_ctx c = {mlx_array_new()};
  mlx_random_key(&c.key, 42);
  /* keys batched along either axis */
  for (int t = 0; t < 2; t++) {
    mlx_array k = keys(3, 5 + t, t);
    int ax = t;
    tx_check_vmap("random_bits", f_bits, NULL, 1, &k, &ax, 0);
    tx_check_vmap("random_split", f_split, NULL, 1, &k, &ax, 0);
    tx_check_vmap("random_normal keys", f_normal_key, NULL, 1, &k, &ax, 0);
    mlx_array_free(k);
  }
  /* normal: d/dloc, d/dscale; vmap over loc / scale */
  int s23[2] = {2, 3}, s3[1] = {3};
  mlx_array in[2] = {tx_rand(s23, 2, -1, 1), tx_rand(s3, 1, 0.5, 2)};
  tx_check_grad("normal_broadcast", f_normal_bcast, &c, 2, in, 1e-6);
  mlx_array_free(in[0]);
  mlx_array_free(in[1]);
  int b23[3] = {2, 3, 3};
  in[0] = tx_rand(b23, 3, -1, 1);
  in[1] = tx_rand(s3, 1, 0.5, 2);
  int ax2[2] = {2, -1};
  tx_check_vmap("normal_broadcast vmap", f_normal_bcast, &c, 2, in, ax2, 1e-12);
  mlx_array_free(in[0]);
  mlx_array_free(in[1]);
  check_uniform_grad(&c);
  /* permutation: gradient through the reordering; vmap over x and keys */
  int s34[2] = {3, 4};
  mlx_array x = tx_rand(s34, 2, -1, 1);
  tx_check_grad("permutation", f_permutation, &c, 1, &x, 1e-6);
  mlx_array_free(x);
  int b34[3] = {3, 3, 4}, ax0 = 0;
  x = tx_rand(b34, 3, -1, 1);
  tx_check_vmap("permutation vmap x", f_permutation, &c, 1, &x, &ax0, 0);
  mlx_array_free(x);
  int s5[1] = {5};
  mlx_array pk[2] = {tx_rand(s5, 1, -1, 1), keys(3, 9, false)};
  int axk[2] = {-1, 0};
  tx_check_vmap("permutation vmap keys", f_permutation_key, NULL, 2, pk, axk, 0);
  mlx_array_free(pk[0]);
  pk[0] = tx_rand((int[]){3, 5}, 2, -1, 1);
  int axb[2] = {0, 0};
  tx_check_vmap("permutation vmap x and keys", f_permutation_key, NULL, 2, pk, axb, 0);
  mlx_array_free(pk[0]);
  mlx_array_free(pk[1]);
  /* categorical: vmap over logits, over keys */
  int l36[3] = {3, 2, 6};
  mlx_array lg[2] = {tx_rand(l36, 3, -1, 1), keys(3, 3, false)};
  tx_check_vmap("categorical vmap logits", f_categorical, &c, 1, lg, &ax0, 0);
  mlx_array_free(lg[0]);
  lg[0] = tx_rand((int[]){2, 6}, 2, -1, 1);
  int axc[2] = {-1, 0};
  tx_check_vmap("categorical vmap keys", f_categorical, &c, 2, lg, axc, 0);
  mlx_array_free(lg[0]);
  mlx_array_free(lg[1]);
  mlx_array_free(c.key);
}

int main(void) {
  test_init();
  test_seed(3);
  const int hs[1][4] = {{3, 8}}, hst[1][4] = {{8, 3}};
  int nd2[1] = {2};
  struct had_ctx h0 = {0, {0, false}}, h1 = {1, {0.25f, true}};
  check_unary_like("hadamard", f_hadamard, &h0, 1, nd2, hs);
  check_unary_like("hadamard transposed scaled", f_hadamard, &h1, 1, nd2, hst);
  const int ts[1][4] = {{4, 5}}, t3[1][4] = {{2, 3, 3}};
  int nd3[1] = {3};
  for (int k = -1; k <= 1; k++)
    for (int up = 0; up < 2; up++) {
      struct tri_ctx c = {k, up};
      char nm[48];
      snprintf(nm, sizeof nm, "%s k=%d", up ? "triu" : "tril", k);
      check_unary_like(nm, f_tril, &c, 1, nd2, ts);
      check_unary_like(nm, f_tril, &c, 1, nd3, t3);
    }
  const int ds[2][4] = {{2, 3}, {3}};
  int ndd[2] = {2, 1};
  check_unary_like("depends", f_depends, NULL, 2, ndd, ds);
  { /* only the dependency batched: the depends output stays unbatched */
    mlx_array in[2] = {tx_rand((int[]){2, 3}, 2, -1, 1), tx_rand((int[]){4, 3}, 2, -1, 1)};
    int axes[2] = {-1, 0};
    tx_check_vmap("depends vmap dependency only", f_depends, NULL, 2, in, axes, 1e-12);
    mlx_array_free(in[0]);
    mlx_array_free(in[1]);
  }
  random_tests();
  return test_done();
}
