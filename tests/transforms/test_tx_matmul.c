/* Transformation rules of the matmul family (MATMUL, MM_PERMUTE): matmul
 * of 1-d / 2-d / batched / broadcast operands, transposed and reversed
 * (non-contiguous) operands, addmm with alpha and beta, tensordot, inner,
 * outer, gather_mm and segmented_mm; vjp and jvp against finite
 * differences, vmap against a loop, all in float64. */
#include "tx_check.h"

#define S test_stream()


struct case_shapes {
  int n;          /* inputs */
  int nd[4];      /* per-example ranks */
  int sh[4][4];   /* per-example shapes */
};

/* vjp/jvp at random inputs, then vmap with in_axes sets (0, 0..), (1 or the
 * last axis, unbatched, ..), (unbatched, 0, ..) for each input. */
static void check_all(const char *name, tx_fn f, void *ctx, const struct case_shapes *c,
                      double tol) {
  mlx_array in[4];
  for (int i = 0; i < c->n; i++) in[i] = tx_rand_batched(c->sh[i], c->nd[i], -1, 1, -1, 1);
  tx_check_grad(name, f, ctx, c->n, in, tol);
  for (int i = 0; i < c->n; i++) mlx_array_free(in[i]);
  int sets[3][4];
  for (int i = 0; i < c->n; i++) {
    sets[0][i] = 0;
    sets[1][i] = i == 0 ? (c->nd[i] >= 1 ? 1 : 0) : -1;
    sets[2][i] = i == 0 ? -1 : c->nd[i];
  }
  for (int s = 0; s < 3; s++) {
    for (int i = 0; i < c->n; i++) in[i] = tx_rand_batched(c->sh[i], c->nd[i], sets[s][i], 3, -1, 1);
    char nm[128];
    snprintf(nm, sizeof nm, "%s vmap set %d", name, s);
    tx_check_vmap(nm, f, ctx, c->n, in, sets[s], 1e-10);
    for (int i = 0; i < c->n; i++) mlx_array_free(in[i]);
  }
}


/* second-order checks of f for each input */
static void check_second(const char *name, tx_fn f, void *ctx, const struct case_shapes *c) {
  for (int w = 0; w < c->n; w++) {
    struct tx_second sc = {f, ctx, w};
    char nm[160];
    snprintf(nm, sizeof nm, "%s second order d%d", name, w);
    check_all(nm, tx_f_second, &sc, c, 1e-5);
  }
}

/* ---- functions under test ---- */

static int f_matmul(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  return mlx_matmul(out, in[0], in[1], S);
}

/* a^T @ b[::-1] (a transposed view, b a negative-stride slice) */
static int f_matmul_views(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  mlx_array at = mlx_array_new(), br = mlx_array_new();
  int nb = (int)mlx_array_ndim(in[1]);
  const int *bs = mlx_array_shape(in[1]);
  int start[4] = {0}, stop[4], step[4];
  for (int d = 0; d < nb; d++) {
    stop[d] = bs[d];
    step[d] = 1;
  }
  start[nb - 2] = bs[nb - 2] - 1;
  stop[nb - 2] = -bs[nb - 2] - 1;
  step[nb - 2] = -1;
  int rc = mlx_swapaxes(&at, in[0], -1, -2, S) ||
           mlx_slice(&br, in[1], start, (size_t)nb, stop, (size_t)nb, step, (size_t)nb, S) ||
           mlx_matmul(out, at, br, S);
  mlx_array_free(at);
  mlx_array_free(br);
  return rc;
}

struct addmm_ctx {
  float alpha, beta;
};

static int f_addmm(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  struct addmm_ctx *c = ctx;
  return mlx_addmm(out, in[2], in[0], in[1], c->alpha, c->beta, S);
}

static int f_tensordot(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  int aa[2] = {0, 2}, bb[2] = {1, 0};
  return mlx_tensordot(out, in[0], in[1], aa, 2, bb, 2, S);
}

static int f_inner(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  return mlx_inner(out, in[0], in[1], S);
}

static int f_outer(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  return mlx_outer(out, in[0], in[1], S);
}

struct idx_ctx {
  mlx_array lhs, rhs;
};

static int f_gather_mm(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  struct idx_ctx *c = ctx;
  return mlx_gather_mm(out, in[0], in[1], c->lhs, c->rhs, false, S);
}

static int f_segmented_mm(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  struct idx_ctx *c = ctx;
  return mlx_segmented_mm(out, in[0], in[1], c->lhs, S);
}

/* segmented_mm with the segments as a (vmapped) input */
static int f_segmented_mm_seg(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  return mlx_segmented_mm(out, in[0], in[1], in[2], S);
}

static mlx_array u32(const uint32_t *v, const int *shape, int ndim) {
  return mlx_array_new_data(v, shape, ndim, MLX_UINT32);
}

int main(void) {
  test_init();
  test_seed(7);
  const double tol = 1e-6;
  struct case_shapes mm[] = {
      {2, {2, 2}, {{3, 4}, {4, 5}}},
      {2, {1, 2}, {{4}, {4, 5}}},
      {2, {2, 1}, {{3, 4}, {4}}},
      {2, {1, 1}, {{4}, {4}}},
      {2, {4, 3}, {{2, 1, 3, 4}, {3, 4, 2}}},
      {2, {3, 2}, {{2, 1, 4}, {4, 3}}},
      {2, {2, 3}, {{1, 4}, {2, 4, 3}}},
  };
  for (size_t i = 0; i < sizeof mm / sizeof mm[0]; i++) {
    char nm[64];
    snprintf(nm, sizeof nm, "matmul case %zu", i);
    check_all(nm, f_matmul, NULL, &mm[i], tol);
  }
  struct case_shapes views[] = {
      {2, {2, 2}, {{4, 3}, {4, 5}}},
      {2, {3, 3}, {{2, 4, 1}, {2, 4, 5}}},
  };
  for (size_t i = 0; i < 2; i++) check_all("matmul views", f_matmul_views, NULL, &views[i], tol);
  check_second("matmul", f_matmul, NULL, &mm[0]);
  check_second("matmul vec", f_matmul, NULL, &mm[2]);
  check_second("matmul batched", f_matmul, NULL, &mm[4]);

  struct addmm_ctx ac[] = {{1.0f, 1.0f}, {0.5f, -2.0f}, {2.0f, 0.0f}};
  struct case_shapes am[] = {
      {3, {2, 2, 2}, {{3, 4}, {4, 5}, {3, 5}}},
      {3, {2, 2, 1}, {{3, 4}, {4, 5}, {5}}},
      {3, {3, 2, 2}, {{2, 3, 4}, {4, 5}, {1, 5}}},
  };
  for (int i = 0; i < 3; i++) check_all("addmm", f_addmm, &ac[i], &am[i], tol);

  struct case_shapes td = {2, {3, 3}, {{3, 2, 4}, {4, 3, 5}}};
  check_all("tensordot", f_tensordot, NULL, &td, tol);
  struct case_shapes inn = {2, {2, 3}, {{3, 4}, {2, 1, 4}}};
  check_all("inner", f_inner, NULL, &inn, tol);
  struct case_shapes out2 = {2, {2, 1}, {{2, 3}, {4}}};
  check_all("outer", f_outer, NULL, &out2, tol);

  /* gather_mm: a (3, 2, 4), b (2, 4, 3); output batch (2, 3) */
  uint32_t lv[6] = {0, 2, 2, 1, 0, 0}, rv[3] = {1, 0, 1};
  int ls[2] = {2, 3}, rs[1] = {3};
  struct idx_ctx gc = {u32(lv, ls, 2), u32(rv, rs, 1)};
  struct case_shapes gm = {2, {3, 3}, {{3, 2, 4}, {2, 4, 3}}};
  check_all("gather_mm", f_gather_mm, &gc, &gm, tol);
  check_second("gather_mm", f_gather_mm, &gc, &gm);
  mlx_array_free(gc.lhs);
  mlx_array_free(gc.rhs);

  /* segmented_mm: a (3, 6), b (6, 2), segments (2, 2, 2) incl. an empty one */
  uint32_t sv[8] = {0, 2, 2, 6, 3, 3, 1, 5};
  int ss[3] = {2, 2, 2};
  struct idx_ctx sc = {u32(sv, ss, 3), mlx_array_new()};
  struct case_shapes sm = {2, {2, 2}, {{3, 6}, {6, 2}}};
  check_all("segmented_mm", f_segmented_mm, &sc, &sm, tol);
  check_second("segmented_mm", f_segmented_mm, &sc, &sm);
  /* batched segments only (a and b unbatched) */
  {
    uint32_t bv[12] = {0, 2, 2, 6, 1, 4, 0, 6, 5, 6, 0, 0};
    int bs[3] = {3, 2, 2}, as[2] = {3, 6}, bsh[2] = {6, 2};
    mlx_array in[3] = {tx_rand(as, 2, -1, 1), tx_rand(bsh, 2, -1, 1), u32(bv, bs, 3)};
    int axes[3] = {-1, -1, 0};
    tx_check_vmap("segmented_mm batched segments", f_segmented_mm_seg, NULL, 3, in, axes, 1e-10);
    for (int i = 0; i < 3; i++) mlx_array_free(in[i]);
  }
  mlx_array_free(sc.lhs);
  mlx_array_free(sc.rhs);
  return test_done();
}
