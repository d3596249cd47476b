/* The QUANTIZED_MATMUL node on the CPU (built directly: the API builds it
 * for GPUs only): its CPU evaluator against the decomposition
 * (mlx_quantized_matmul on the CPU) for every bits, group size, transpose,
 * dtype, batched and 1-d x, strided inputs; its vjp, jvp and vmap rules
 * against the decomposition's. */
#include <math.h>

#include "test.h"
#include "quant_util.h"
/* after test.h */
#include "core/node.h"
#include "ops/prim.h"
#include "ops/quant.h"

static char what_buf[256];
#define WHAT(...) (snprintf(what_buf, sizeof what_buf, __VA_ARGS__), what_buf)

static const mlx_array no_array = {NULL};

/* got and want: same shape and dtype, values within tolerance. */
static void check_near(mlx_array got, mlx_array want, double rtol, double atol,
                       const char *what) {
  test_checks++;
  bool ok = mlx_array_ndim(got) == mlx_array_ndim(want) &&
            mlx_array_dtype(got) == mlx_array_dtype(want);
  for (size_t d = 0; ok && d < mlx_array_ndim(got); d++)
    ok = mlx_array_shape(got)[d] == mlx_array_shape(want)[d];
  if (!ok) {
    test_failures++;
    fprintf(stderr, "%s: shape/dtype differ\n", what);
    return;
  }
  double *g = test_values(got), *w = test_values(want);
  size_t n = mlx_array_size(got), bad = 0, first = 0;
  for (size_t i = 0; g && w && i < n; i++)
    if (!(fabs(g[i] - w[i]) <= atol + rtol * fabs(w[i])) && bad++ == 0) first = i;
  if (!g || !w || bad) {
    test_failures++;
    fprintf(stderr, "%s: %zu of %zu differ (first %zu: %.9g vs %.9g)\n", what, bad, n, first,
            g && w ? g[first] : 0.0, g && w ? w[first] : 0.0);
  }
  free(g);
  free(w);
}

static double rtol_of(mlx_dtype t) {
  return t == MLX_FLOAT16 ? 4e-3 : t == MLX_BFLOAT16 ? 3e-2 : 1e-5;
}

/* The node (CPU evaluator) against mlx_quantized_matmul. */
static void compare(mlx_array x, const mlx_array *q, bool transpose, int gs, int bits,
                    const char *what) {
  mlx_optional_int g = {gs, true}, b = {bits, true};
  mlx_array want = mlx_array_new(), got = {NULL};
  CHECK_OK(mlx_quantized_matmul(&want, x, q[0], q[1], q[2], transpose, g, b, "affine",
                                test_stream()));
  struct lc_node *r = NULL;
  CHECK(lc_quantized_matmul_node(x.ctx, q[0].ctx, q[1].ctx, q[2].ctx, transpose, gs, bits,
                                 &r) == 0);
  got.ctx = r;
  if (r) {
    CHECK_OK(mlx_array_eval(got));
    mlx_dtype t = mlx_array_dtype(x);
    check_near(got, want, rtol_of(t), rtol_of(t) * 10, what);
  }
  mlx_array_free(got);
  mlx_array_free(want);
}

static const mlx_dtype types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16};

static void test_eval(void) {
  static const int all_bits[] = {2, 3, 4, 5, 6, 8}, all_gs[] = {32, 64, 128};
  for (int bi = 0; bi < 6; bi++)
    for (int gi = 0; gi < 3; gi++)
      for (int tr = 0; tr < 2; tr++)
        for (int ti = 0; ti < 3; ti++) {
          int gs = all_gs[gi], bits = all_bits[bi], K = tr ? 2 * gs : 13, N = tr ? 11 : 2 * gs;
          int ws[2] = {tr ? N : K, tr ? K : N}, xs[2] = {3, K};
          mlx_array w0 = test_rand_f32(ws, 2, -1, 1), w = test_as_type(w0, types[ti]), q[3];
          mlx_array x0 = test_rand_f32(xs, 2, -1, 1), x = test_as_type(x0, types[ti]);
          test_quantize(w, gs, bits, q);
          compare(x, q, tr, gs, bits,
                  WHAT("bits %d gs %d transpose %d dtype %d", bits, gs, tr, (int)types[ti]));
          for (int i = 0; i < 3; i++) mlx_array_free(q[i]);
          mlx_array_free(w0), mlx_array_free(w), mlx_array_free(x0), mlx_array_free(x);
        }
  /* batched and broadcast, 1-d x, a transposed x */
  int ws[3] = {2, 9, 64}, xs3[3] = {2, 5, 64}, xs1[1] = {64}, xs4[4] = {3, 1, 4, 64};
  mlx_array w = test_rand_f32(ws, 3, -1, 1), q[3];
  test_quantize(w, 32, 4, q);
  mlx_array x3 = test_rand_f32(xs3, 3, -1, 1), x1 = test_rand_f32(xs1, 1, -1, 1);
  mlx_array x4 = test_rand_f32(xs4, 4, -1, 1), xt = mlx_array_new(), x3t = mlx_array_new();
  int perm[3] = {0, 2, 1};
  CHECK_OK(mlx_transpose_axes(&xt, x3, perm, 3, test_stream()));
  CHECK_OK(mlx_contiguous(&x3t, xt, false, test_stream()));
  CHECK_OK(mlx_transpose_axes(&xt, x3t, perm, 3, test_stream()));
  compare(x3, q, true, 32, 4, "batched x and w");
  compare(x1, q, true, 32, 4, "1-d x, batched w");
  compare(x4, q, true, 32, 4, "x broadcast against w");
  compare(xt, q, true, 32, 4, "transposed x");
  for (int i = 0; i < 3; i++) mlx_array_free(q[i]);
  mlx_array_free(w), mlx_array_free(x3), mlx_array_free(x1), mlx_array_free(x4);
  mlx_array_free(xt), mlx_array_free(x3t);
}

/* The rules: vjp in x (cot @ W), jvp in x (tan @ W^T), vmap over x. */
static void test_rules(void) {
  int K = 64, N = 7, ws[2] = {N, K}, xs[2] = {3, K}, cs[2] = {3, N};
  mlx_array w = test_rand_f32(ws, 2, -1, 1), q[3];
  test_quantize(w, 32, 4, q);
  mlx_array x = test_rand_f32(xs, 2, -1, 1), cot = test_rand_f32(cs, 2, -1, 1);
  mlx_array W = mlx_array_new(), want = mlx_array_new(), Wt = mlx_array_new();
  mlx_optional_int g = {32, true}, b = {4, true};
  mlx_optional_dtype nodt = {MLX_FLOAT32, false};
  CHECK_OK(mlx_dequantize(&W, q[0], q[1], q[2], g, b, "affine", no_array, nodt, test_stream()));
  struct lc_node *n = NULL;
  CHECK(lc_quantized_matmul_node(x.ctx, q[0].ctx, q[1].ctx, q[2].ctx, true, 32, 4, &n) == 0);
  if (n) {
    const struct lc_prim *p = lc_prim_of(n);
    struct lc_node *c = cot.ctx, *out[1] = {NULL};
    int argnums[1] = {0};
    CHECK(p->vjp(n, &c, argnums, 1, out) == 0);
    mlx_array got = {out[0]};
    CHECK_OK(mlx_matmul(&want, cot, W, test_stream()));
    if (out[0]) {
      CHECK_OK(mlx_array_eval(got));
      check_near(got, want, 1e-5, 1e-5, "vjp in x");
    }
    mlx_array_free(got);
    /* jvp: a tangent of x only */
    struct lc_node *tan[4] = {NULL, NULL, NULL, NULL}, *to[1] = {NULL};
    mlx_array tx = test_rand_f32(xs, 2, -1, 1);
    tan[0] = tx.ctx;
    CHECK(p->jvp(n, tan, to) == 0);
    mlx_array tgot = {to[0]};
    CHECK_OK(mlx_transpose(&Wt, W, test_stream()));
    CHECK_OK(mlx_matmul(&want, tx, Wt, test_stream()));
    if (to[0]) {
      CHECK_OK(mlx_array_eval(tgot));
      check_near(tgot, want, 1e-5, 1e-5, "jvp in x");
    }
    mlx_array_free(tgot);
    mlx_array_free(tx);
    /* vmap: x batched along axis 1 (5 examples of (3, K)) */
    int bxs[3] = {3, 5, K};
    mlx_array bx = test_rand_f32(bxs, 3, -1, 1);
    struct lc_node *vin[4] = {bx.ctx, n->in[1], n->in[2], n->in[3]}, *vo[1] = {NULL};
    int ax[4] = {1, -1, -1, -1}, oax = -2;
    CHECK(p->vmap(n, vin, ax, vo, &oax) == 0);
    mlx_array vgot = {vo[0]}, bt = mlx_array_new(), vwant = mlx_array_new();
    int perm[3] = {1, 0, 2};
    CHECK_OK(mlx_transpose_axes(&bt, bx, perm, 3, test_stream()));
    CHECK_OK(mlx_matmul(&vwant, bt, Wt, test_stream()));
    CHECK(oax == 0);
    if (vo[0]) {
      CHECK_OK(mlx_array_eval(vgot));
      check_near(vgot, vwant, 1e-5, 1e-5, "vmap over x");
    }
    mlx_array_free(vgot), mlx_array_free(bt), mlx_array_free(vwant), mlx_array_free(bx);
    lc_node_release(n);
  }
  for (int i = 0; i < 3; i++) mlx_array_free(q[i]);
  mlx_array_free(w), mlx_array_free(x), mlx_array_free(cot), mlx_array_free(W);
  mlx_array_free(want), mlx_array_free(Wt);
}

int main(void) {
  test_init();
  test_seed(77);
  test_eval();
  test_rules();
  return test_done();
}
