/* Transformation rules of the fast family (rms_norm, layer_norm, rope,
 * scaled_dot_product_attention) and of convolution: vjp and jvp against
 * finite differences, vmap against a loop; float64 throughout (every one
 * of these ops supports it). */
#include "tx_check.h"

#define S test_stream()


struct case_shapes {
  int n;        /* inputs */
  int nd[5];    /* per-example ranks */
  int sh[5][5]; /* per-example shapes */
};

/* vjp/jvp at random inputs, then vmap with in_axes (0, 0, ..), (1, unbatched,
 * ..) and (unbatched, last axis, ..). */
static void check_all(const char *name, tx_fn f, void *ctx, const struct case_shapes *c,
                      double tol) {
  mlx_array in[5];
  for (int i = 0; i < c->n; i++) in[i] = tx_rand_batched(c->sh[i], c->nd[i], -1, 1, -1, 1);
  tx_check_grad(name, f, ctx, c->n, in, tol);
  for (int i = 0; i < c->n; i++) mlx_array_free(in[i]);
  int sets[3][5];
  for (int i = 0; i < c->n; i++) {
    sets[0][i] = 0;
    sets[1][i] = i == 0 ? 1 : -1;
    sets[2][i] = i == 0 ? -1 : c->nd[i];
  }
  for (int s = 0; s < (c->n > 1 ? 3 : 2); s++) {
    for (int i = 0; i < c->n; i++) in[i] = tx_rand_batched(c->sh[i], c->nd[i], sets[s][i], 3, -1, 1);
    char nm[256];
    snprintf(nm, sizeof nm, "%.200s vmap set %d", name, s);
    tx_check_vmap(nm, f, ctx, c->n, in, sets[s], 1e-9);
    for (int i = 0; i < c->n; i++) mlx_array_free(in[i]);
  }
}


/* second-order checks of f for each input (with_vmap: also vmap of the
 * gradient function) */
static void check_second_opt(const char *name, tx_fn f, void *ctx, const struct case_shapes *c,
                             bool with_vmap) {
  for (int w = 0; w < c->n; w++) {
    struct tx_second sc = {f, ctx, w};
    char nm[160];
    snprintf(nm, sizeof nm, "%.120s second order d%d", name, w);
    if (with_vmap) {
      check_all(nm, tx_f_second, &sc, c, 1e-5);
    } else {
      mlx_array in[5];
      for (int i = 0; i < c->n; i++) in[i] = tx_rand_batched(c->sh[i], c->nd[i], -1, 1, -1, 1);
      tx_check_grad(nm, tx_f_second, &sc, c->n, in, 1e-5);
      for (int i = 0; i < c->n; i++) mlx_array_free(in[i]);
    }
  }
}

static void check_second(const char *name, tx_fn f, void *ctx, const struct case_shapes *c) {
  check_second_opt(name, f, ctx, c, true);
}

/* ---- convolution ---- */

struct conv_ctx {
  int nsp, stride[3], lo[3], hi[3], kdil[3], idil[3], groups, flip;
  int channels_first; /* the input arrives as (N, C, spatial...) and is transposed */
};

static int f_conv(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  struct conv_ctx *c = ctx;
  mlx_array x = mlx_array_new();
  int rc;
  if (c->channels_first) {
    int nd = (int)mlx_array_ndim(in[0]), perm[5];
    perm[0] = 0;
    for (int d = 1; d < nd - 1; d++) perm[d] = d + 1;
    perm[nd - 1] = 1;
    rc = mlx_transpose_axes(&x, in[0], perm, (size_t)nd, S);
  } else {
    rc = mlx_array_set(&x, in[0]);
  }
  size_t k = (size_t)c->nsp;
  rc = rc || mlx_conv_general(out, x, in[1], c->stride, k, c->lo, k, c->hi, k, c->kdil, k,
                              c->idil, k, c->groups, c->flip, S);
  mlx_array_free(x);
  return rc;
}

static int f_conv_transpose1d(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  return mlx_conv_transpose1d(out, in[0], in[1], 2, 1, 1, 1, 1, S);
}

static void conv_tests(void) {
  struct {
    struct conv_ctx c;
    struct case_shapes s;
  } cases[] = {
      /* 1-d, stride 2, asymmetric padding, groups 2 */
      {{1, {2}, {1}, {0}, {1}, {1}, 2, 0, 0}, {2, {3, 3}, {{2, 7, 4}, {6, 3, 2}}}},
      /* 1-d, dilations, stride 3, flipped kernel */
      {{1, {3}, {2}, {3}, {2}, {2}, 1, 1, 0}, {2, {3, 3}, {{1, 5, 3}, {2, 3, 3}}}},
      /* 1-d, padding larger than the kernel and negative padding */
      {{1, {1}, {4}, {-1}, {1}, {1}, 1, 0, 0}, {2, {3, 3}, {{2, 6, 2}, {3, 2, 2}}}},
      /* 2-d, mixed strides / padding / dilation, channels-first input */
      {{2, {1, 2}, {1, 0}, {0, 2}, {2, 1}, {1, 1}, 1, 0, 1},
       {2, {4, 4}, {{1, 3, 5, 6}, {2, 2, 3, 3}}}},
      /* 2-d, groups 3 */
      {{2, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 3, 0, 0},
       {2, {4, 4}, {{2, 4, 4, 6}, {3, 3, 2, 2}}}},
      /* 2-d, input dilation + groups 2 + flip */
      {{2, {2, 1}, {0, 1}, {1, 0}, {1, 2}, {2, 1}, 2, 1, 0},
       {2, {4, 4}, {{1, 4, 5, 4}, {4, 2, 2, 2}}}},
      /* 3-d */
      {{3, {1, 2, 1}, {0, 1, 1}, {1, 0, 0}, {1, 1, 1}, {1, 1, 1}, 1, 0, 0},
       {2, {5, 5}, {{1, 3, 4, 3, 2}, {2, 2, 2, 2, 2}}}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char nm[64];
    snprintf(nm, sizeof nm, "conv case %zu", i);
    check_all(nm, f_conv, &cases[i].c, &cases[i].s, 1e-6);
    if (i == 0 || i == 5) check_second(nm, f_conv, &cases[i].c, &cases[i].s);
  }
  struct case_shapes ct = {2, {3, 3}, {{2, 4, 2}, {3, 3, 2}}};
  check_all("conv_transpose1d", f_conv_transpose1d, NULL, &ct, 1e-6);
}

/* ---- rms_norm, layer_norm ---- */

struct norm_ctx {
  int layer, has_w, has_b;
  int transpose_x; /* x arrives as (D, rows) and is transposed (non-contiguous) */
};

static int f_norm(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  struct norm_ctx *c = ctx;
  mlx_array x = mlx_array_new(), none = mlx_array_new();
  int rc = c->transpose_x ? mlx_swapaxes(&x, in[0], -1, -2, S) : mlx_array_set(&x, in[0]);
  int k = 1;
  mlx_array w = c->has_w ? in[k++] : none, b = c->has_b ? in[k] : none;
  if (!rc)
    rc = c->layer ? mlx_fast_layer_norm(out, x, w, b, 1e-5f, S)
                  : mlx_fast_rms_norm(out, x, w, 1e-5f, S);
  mlx_array_free(x);
  mlx_array_free(none);
  return rc;
}

static void norm_tests(void) {
  for (int layer = 0; layer < 2; layer++)
    for (int aff = 0; aff < (layer ? 4 : 2); aff++) {
      struct norm_ctx c = {layer, aff & 1, (aff >> 1) & 1, 0};
      struct case_shapes sh = {1, {3}, {{2, 1, 5}}};
      if (c.has_w) sh.nd[sh.n] = 1, sh.sh[sh.n++][0] = 5;
      if (c.has_b) sh.nd[sh.n] = 1, sh.sh[sh.n++][0] = 5;
      char nm[64];
      snprintf(nm, sizeof nm, "%s weight=%d bias=%d", layer ? "layer_norm" : "rms_norm", c.has_w,
               c.has_b);
      check_all(nm, f_norm, &c, &sh, 1e-6);
      check_second(nm, f_norm, &c, &sh);
      /* transposed x; x batched along the normalised axis */
      c.transpose_x = 1;
      struct case_shapes tr = sh;
      tr.nd[0] = 2;
      tr.sh[0][0] = 5;
      tr.sh[0][1] = 3;
      snprintf(nm, sizeof nm, "%s weight=%d bias=%d transposed", layer ? "layer_norm" : "rms_norm",
               c.has_w, c.has_b);
      check_all(nm, f_norm, &c, &tr, 1e-6);
      c.transpose_x = 0;
      mlx_array in[3];
      int axes[3] = {2, -1, -1}, xs[3] = {3, 5, 4};
      in[0] = tx_rand(xs, 3, -1, 1);
      for (int i = 1; i < sh.n; i++) in[i] = tx_rand_batched(sh.sh[i], 1, -1, 1, -1, 1);
      snprintf(nm, sizeof nm, "%s vmap over the last axis", layer ? "layer_norm" : "rms_norm");
      tx_check_vmap(nm, f_norm, &c, sh.n, in, axes, 1e-9);
      for (int i = 0; i < sh.n; i++) mlx_array_free(in[i]);
    }
}

/* ---- rope ---- */

struct rope_ctx {
  int dims, traditional, offset, dynamic; /* dynamic: offsets from input 1, else `off` */
  float base, scale;
  mlx_array freqs; /* empty: base */
  mlx_array off;
};

static int f_rope(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  struct rope_ctx *c = ctx;
  mlx_optional_float base = {c->base, mlx_array_ndim(c->freqs) == 0};
  if (c->dynamic)
    return mlx_fast_rope_dynamic(out, in[0], c->dims, c->traditional, base, c->scale,
                                 n > 1 ? in[1] : c->off, c->freqs, S);
  return mlx_fast_rope(out, in[0], c->dims, c->traditional, base, c->scale, c->offset, c->freqs,
                       S);
}

static void rope_tests(void) {
  float fv[3] = {1.0f, 3.5f, 20.0f};
  int three = 3;
  mlx_array freqs = mlx_array_new_data(fv, &three, 1, MLX_FLOAT32);
  for (int trad = 0; trad < 2; trad++)
    for (int variant = 0; variant < 3; variant++) {
      struct rope_ctx c = {variant == 1 ? 6 : 8, trad, 3, 0, 10000.0f, variant == 2 ? 0.5f : 1.0f,
                           mlx_array_new(), mlx_array_new()};
      if (variant == 1) mlx_array_set(&c.freqs, freqs);
      struct case_shapes sh = {1, {4}, {{2, 1, 4, 8}}};
      char nm[64];
      snprintf(nm, sizeof nm, "rope traditional=%d variant %d", trad, variant);
      check_all(nm, f_rope, &c, &sh, 1e-6);
      check_second(nm, f_rope, &c, &sh);
      /* per-batch offsets as an input, vmapped too */
      c.dynamic = 1;
      int xs[4] = {2, 1, 4, 8}, os = 2, bx[5] = {3, 2, 1, 4, 8}, bo[2] = {3, 2};
      int32_t ov[6] = {0, 5, 2, 7, 1, 1};
      mlx_array in[2] = {tx_rand(xs, 4, -1, 1), mlx_array_new_data(ov, &os, 1, MLX_INT32)};
      snprintf(nm, sizeof nm, "rope dynamic offsets traditional=%d variant %d", trad, variant);
      mlx_array_set(&c.off, in[1]);
      tx_check_grad(nm, f_rope, &c, 1, in, 1e-6);
      mlx_array_free(c.off);
      mlx_array_free(in[0]);
      mlx_array_free(in[1]);
      int sets[3][2] = {{0, 0}, {0, -1}, {-1, 0}};
      for (int k = 0; k < 3; k++) {
        in[0] = sets[k][0] < 0 ? tx_rand(xs, 4, -1, 1) : tx_rand(bx, 5, -1, 1);
        in[1] = sets[k][1] < 0 ? mlx_array_new_data(ov, &os, 1, MLX_INT32)
                               : mlx_array_new_data(ov, bo, 2, MLX_INT32);
        snprintf(nm, sizeof nm, "rope dynamic vmap set %d traditional=%d variant %d", k, trad,
                 variant);
        tx_check_vmap(nm, f_rope, &c, 2, in, sets[k], 1e-9);
        mlx_array_free(in[0]);
        mlx_array_free(in[1]);
      }
      mlx_array_free(c.freqs);
    }
  mlx_array_free(freqs);
}

/* ---- scaled dot-product attention ---- */

struct sdpa_ctx {
  const char *mode;  /* "", "causal", "array" */
  int mask_input;    /* the (additive) mask is input 3 */
  int sinks_input;   /* the sinks are the last input */
  mlx_array mask;    /* a constant mask (bool), or empty */
};

static int f_sdpa(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct sdpa_ctx *c = ctx;
  mlx_array none = mlx_array_new();
  mlx_array mask = c->mask_input ? in[3] : mlx_array_ndim(c->mask) ? c->mask : none;
  mlx_array sinks = c->sinks_input ? in[n - 1] : none;
  int rc = mlx_fast_scaled_dot_product_attention(out, in[0], in[1], in[2], 0.7f, c->mode, mask,
                                                 sinks, S);
  mlx_array_free(none);
  return rc;
}

static void sdpa_tests(void) {
  /* q (B, Hq, qL, D), k (B, Hkv, kL, D), v (B, Hkv, kL, Dv) */
  struct {
    struct sdpa_ctx c;
    struct case_shapes s;
  } cases[] = {
      {{"", 0, 0, {0}}, {3, {4, 4, 4}, {{2, 2, 3, 4}, {2, 2, 5, 4}, {2, 2, 5, 3}}}},
      {{"causal", 0, 0, {0}}, {3, {4, 4, 4}, {{1, 4, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 3}}}},
      {{"causal", 0, 0, {0}}, {3, {4, 4, 4}, {{2, 2, 5, 3}, {2, 1, 3, 3}, {2, 1, 3, 2}}}},
      {{"array", 1, 0, {0}},
       {4, {4, 4, 4, 2}, {{1, 4, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 3}, {3, 5}}}},
      {{"array", 1, 0, {0}},
       {4, {4, 4, 4, 4}, {{2, 2, 3, 4}, {2, 1, 5, 4}, {2, 1, 5, 3}, {2, 1, 3, 5}}}},
      {{"", 0, 1, {0}}, {4, {4, 4, 4, 1}, {{1, 4, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 3}, {4}}}},
      {{"causal", 0, 1, {0}}, {4, {4, 4, 4, 1}, {{2, 2, 4, 4}, {2, 1, 3, 4}, {2, 1, 3, 3}, {2}}}},
      {{"array", 0, 0, {0}}, {3, {4, 4, 4}, {{1, 4, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 3}}}},
  };
  /* a bool mask with one fully masked row */
  bool mv[15] = {1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 1};
  int ms[2] = {3, 5};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cases[i].c.mask = i == 7 ? mlx_array_new_data(mv, ms, 2, MLX_BOOL) : mlx_array_new();
    char nm[64];
    snprintf(nm, sizeof nm, "sdpa case %zu", i);
    check_all(nm, f_sdpa, &cases[i].c, &cases[i].s, 1e-6);
    check_second_opt(nm, f_sdpa, &cases[i].c, &cases[i].s, true);
    mlx_array_free(cases[i].c.mask);
  }
}

int main(void) {
  test_init();
  test_seed(11);
  conv_tests();
  norm_tests();
  rope_tests();
  sdpa_tests();
  return test_done();
}
