/* The fast family on the GPU (rms_norm, layer_norm, rope, attention)
 * against the CPU kernels: random inputs, float32/float16/bfloat16 (and
 * float64, which attention runs on the CPU), odd row lengths, optional
 * weight and bias, views with other strides (transposes, slices,
 * broadcasts), rope's layouts and offsets, attention's decode and
 * prefill shapes, GQA, masks and sinks, values of another head dim than
 * the keys. Norms, and attention wherever its kernel applies, are checked
 * made on the GPU. Device memory back to its baseline. Skips without a
 * GPU. */
#include <math.h>

#include "gpu_bits.h"

static const mlx_dtype dtypes[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16, MLX_FLOAT64};

static const char *dt_name(mlx_dtype t) {
  return t == MLX_FLOAT32 ? "f32" : t == MLX_FLOAT16 ? "f16" : t == MLX_BFLOAT16 ? "bf16" : "f64";
}

/* An absent optional array (an empty handle owns nothing). */
static mlx_array none(void) { return mlx_array_new(); }

/* x transposed by perm (a strided view of fresh values), evaluated. */
static mlx_array permuted(const int *shape, int nd, const int *perm, mlx_dtype t, double lo,
                          double hi) {
  int src[8];
  for (int i = 0; i < nd; i++) src[perm[i]] = shape[i];
  mlx_array a = gpu_rand(src, nd, t, lo, hi), r = mlx_array_new();
  CHECK_OK(mlx_transpose_axes(&r, a, perm, nd, test_stream()));
  mlx_array_eval(r);
  mlx_array_free(a);
  return r;
}

/* x[..., lo:] of a fresh (..., d + lo) array: rows not 16-byte aligned. */
static mlx_array sliced(const int *shape, int nd, int lo, mlx_dtype t) {
  int big[8], start[8] = {0}, stop[8], str[8];
  for (int i = 0; i < nd; i++) {
    big[i] = stop[i] = shape[i];
    str[i] = 1;
  }
  big[nd - 1] += lo;
  stop[nd - 1] += lo;
  start[nd - 1] = lo;
  mlx_array a = gpu_rand(big, nd, t, -2, 2), r = mlx_array_new();
  CHECK_OK(mlx_slice(&r, a, start, nd, stop, nd, str, nd, test_stream()));
  mlx_array_eval(r);
  mlx_array_free(a);
  return r;
}

/* ---- rms_norm, layer_norm ---- */

static void same_norm(const char *what, mlx_array x, mlx_array w, mlx_array b, bool layer,
                      mlx_dtype t) {
  mlx_array g = mlx_array_new(), c = mlx_array_new();
  float eps = 1e-5f;
  if (layer) {
    CHECK_OK(mlx_fast_layer_norm(&g, x, w, b, eps, gpu_stream));
    CHECK_OK(mlx_fast_layer_norm(&c, x, w, b, eps, test_stream()));
  } else {
    CHECK_OK(mlx_fast_rms_norm(&g, x, w, eps, gpu_stream));
    CHECK_OK(mlx_fast_rms_norm(&c, x, w, eps, test_stream()));
  }
  CHECK_OK(mlx_array_eval(g));
  CHECK_MSG(made_on_gpu(g), "%s: computed on the host", what);
  /* sums in double on both sides: one rounding apart at most */
  double rtol = t == MLX_FLOAT32 ? 1e-6 : t == MLX_FLOAT64 ? 1e-12 : gpu_rtol(t);
  CHECK_SAME(g, c, rtol, rtol * 1e-2, what);
  mlx_array_free(g);
  mlx_array_free(c);
}

static void test_norms(void) {
  /* 300 and 384: rows of 96 or 160 threads, which 256 does not divide */
  const int ds[] = {1, 7, 64, 129, 300, 384, 2048, 4100};
  char what[160];
  for (size_t ti = 0; ti < 4; ti++) {
    mlx_dtype t = dtypes[ti];
    for (size_t di = 0; di < sizeof ds / sizeof *ds; di++) {
      int d = ds[di], shape[3] = {2, 5, d};
      mlx_array x = gpu_rand(shape, 3, t, -2, 2);
      mlx_array w = gpu_rand(&d, 1, t, 0.5, 1.5), b = gpu_rand(&d, 1, t, -1, 1);
      for (int layer = 0; layer < 2; layer++)
        for (int aff = 0; aff < (layer ? 4 : 2); aff++) {
          snprintf(what, sizeof what, "%s %s d=%d weight=%d bias=%d", layer ? "layer_norm" :
                   "rms_norm", dt_name(t), d, aff & 1, aff >> 1);
          mlx_array wn = none(), bn = none();
          same_norm(what, x, aff & 1 ? w : wn, aff & 2 ? b : bn, layer, t);
          mlx_array_free(wn);
          mlx_array_free(bn);
        }
      /* transposed rows (element stride 2 * 5), unaligned slices, a
       * broadcast weight (stride 0) */
      int perm[3] = {2, 1, 0};
      mlx_array xt = permuted(shape, 3, perm, t, -2, 2);
      snprintf(what, sizeof what, "rms_norm %s d=%d transposed", dt_name(t), d);
      same_norm(what, xt, none(), none(), false, t);
      snprintf(what, sizeof what, "layer_norm %s d=%d transposed", dt_name(t), d);
      same_norm(what, xt, w, none(), true, t);
      mlx_array xs = sliced(shape, 3, 1, t);
      snprintf(what, sizeof what, "rms_norm %s d=%d sliced", dt_name(t), d);
      same_norm(what, xs, w, none(), false, t);
      snprintf(what, sizeof what, "layer_norm %s d=%d sliced", dt_name(t), d);
      same_norm(what, xs, w, b, true, t);
      mlx_array one = gpu_rand((int[]){1}, 1, t, 0.5, 1.5), wb = mlx_array_new();
      CHECK_OK(mlx_broadcast_to(&wb, one, &d, 1, test_stream()));
      mlx_array_eval(wb);
      snprintf(what, sizeof what, "rms_norm %s d=%d broadcast weight", dt_name(t), d);
      same_norm(what, x, wb, none(), false, t);
      mlx_array_free(one);
      mlx_array_free(wb);
      mlx_array_free(xs);
      mlx_array_free(xt);
      mlx_array_free(x);
      mlx_array_free(w);
      mlx_array_free(b);
    }
  }
  /* the decode step's shape, and many short rows (a warp per row) */
  int dec[3] = {1, 1, 2048}, many[2] = {3001, 40}, d = 2048;
  mlx_array x = gpu_rand(dec, 3, MLX_BFLOAT16, -3, 3), w = gpu_rand(&d, 1, MLX_BFLOAT16, 0, 2);
  same_norm("rms_norm bf16 decode (1, 1, 2048)", x, w, none(), false, MLX_BFLOAT16);
  mlx_array y = gpu_rand(many, 2, MLX_FLOAT16, -3, 3);
  same_norm("layer_norm f16 (3001, 40)", y, none(), none(), true, MLX_FLOAT16);
  mlx_array_free(x);
  mlx_array_free(w);
  mlx_array_free(y);
}

/* ---- rope ---- */

struct rope_case {
  int dims;
  bool traditional;
  float scale;
  int offset;      /* with offs == NULL */
  mlx_array offs;  /* dynamic offsets, or empty */
  mlx_array freqs; /* or empty: base 10000 */
};

static void same_rope(const char *what, mlx_array x, const struct rope_case *c, mlx_dtype t) {
  mlx_array g = mlx_array_new(), r = mlx_array_new();
  mlx_optional_float base = {10000.0f, !c->freqs.ctx};
  if (c->offs.ctx) {
    CHECK_OK(mlx_fast_rope_dynamic(&g, x, c->dims, c->traditional, base, c->scale, c->offs,
                                   c->freqs, gpu_stream));
    CHECK_OK(mlx_fast_rope_dynamic(&r, x, c->dims, c->traditional, base, c->scale, c->offs,
                                   c->freqs, test_stream()));
  } else {
    CHECK_OK(mlx_fast_rope(&g, x, c->dims, c->traditional, base, c->scale, c->offset, c->freqs,
                           gpu_stream));
    CHECK_OK(mlx_fast_rope(&r, x, c->dims, c->traditional, base, c->scale, c->offset, c->freqs,
                           test_stream()));
  }
  /* angles: float sincos of the angle reduced in double (GPU) against
   * double cos / sin rounded (CPU): a few float ulps */
  double rtol = t == MLX_FLOAT32 ? 1e-5 : t == MLX_FLOAT64 ? 1e-12 : gpu_rtol(t);
  CHECK_SAME(g, r, rtol, t == MLX_FLOAT64 ? 1e-12 : rtol, what);
  mlx_array_free(g);
  mlx_array_free(r);
}

static void test_rope(void) {
  struct {
    int B, H, T, D, dims;
  } shapes[] = {{1, 16, 1, 128, 128}, {2, 4, 7, 64, 64}, {1, 3, 33, 96, 64},
                {3, 2, 5, 67, 66},    {1, 2, 9, 128, 32}, {2, 8, 100, 128, 128}};
  const int offsets[] = {0, 5, 2047};
  char what[200];
  for (size_t ti = 0; ti < 4; ti++) {
    mlx_dtype t = dtypes[ti];
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
      int B = shapes[si].B, H = shapes[si].H, T = shapes[si].T, D = shapes[si].D;
      int dims = shapes[si].dims, shape[4] = {B, H, T, D};
      mlx_array x = gpu_rand(shape, 4, t, -2, 2);
      /* (B, T, H, D) transposed to (B, H, T, D), as attention makes it */
      int perm[4] = {0, 2, 1, 3};
      mlx_array xt = permuted(shape, 4, perm, t, -2, 2);
      int half = dims / 2;
      mlx_array freqs = gpu_rand(&half, 1, MLX_FLOAT32, 0.5, 20);
      int boffs[3] = {0, 7, 300};
      mlx_array offs = mlx_array_new_data(boffs, &B, 1, MLX_INT32);
      int64_t loffs[3] = {3, 3, 1000};
      mlx_array offs64 = mlx_array_new_data(loffs, &B, 1, MLX_INT64);
      for (int trad = 0; trad < 2; trad++)
        for (size_t oi = 0; oi < 3; oi++) {
          struct rope_case c = {dims, trad, oi == 1 ? 0.5f : 1.0f, offsets[oi], none(), none()};
          snprintf(what, sizeof what, "rope %s (%d,%d,%d,%d) dims=%d trad=%d offset=%d", dt_name(t),
                   B, H, T, D, dims, trad, c.offset);
          same_rope(what, x, &c, t);
          snprintf(what, sizeof what, "rope %s (%d,%d,%d,%d) dims=%d trad=%d offset=%d transposed",
                   dt_name(t), B, H, T, D, dims, trad, c.offset);
          same_rope(what, xt, &c, t);
        }
      for (int trad = 0; trad < 2; trad++) {
        struct rope_case c = {dims, trad, 1.0f, 0, offs, none()};
        snprintf(what, sizeof what, "rope %s (%d,%d,%d,%d) dims=%d trad=%d per-batch offsets",
                 dt_name(t), B, H, T, D, dims, trad);
        same_rope(what, xt, &c, t);
        c.offs = offs64;
        c.freqs = freqs;
        snprintf(what, sizeof what, "rope %s (%d,%d,%d,%d) dims=%d trad=%d int64 offsets, freqs",
                 dt_name(t), B, H, T, D, dims, trad);
        same_rope(what, x, &c, t);
        c = (struct rope_case){dims, trad, 2.0f, 11, none(), freqs};
        snprintf(what, sizeof what, "rope %s (%d,%d,%d,%d) dims=%d trad=%d freqs offset 11",
                 dt_name(t), B, H, T, D, dims, trad);
        same_rope(what, xt, &c, t);
      }
      mlx_array_free(offs);
      mlx_array_free(offs64);
      mlx_array_free(freqs);
      mlx_array_free(xt);
      mlx_array_free(x);
    }
  }
}

/* ---- scaled dot-product attention ---- */

enum mask_kind { M_NONE, M_BOOL, M_ADD, M_CAUSAL };
static const char *mask_names[] = {"none", "bool", "additive", "causal"};

struct sdpa_case {
  int B, Hq, Hkv, qL, kL, D, Dv; /* Dv: v's head dim (0: D) */
};

/* Whether the GPU kernel takes the case (else it runs on the host): 16 or
 * 32-bit floats, head dims of whole 16-byte packs, at most 64 packs in the
 * longer of the key and value rows (two per lane). */
static bool sdpa_on_gpu(const struct sdpa_case *c, mlx_dtype t) {
  if (t == MLX_FLOAT64) return false;
  int v = t == MLX_FLOAT32 ? 4 : 8, dv = c->Dv ? c->Dv : c->D, dmax = c->D > dv ? c->D : dv;
  return c->D % v == 0 && dv % v == 0 && dmax / v <= 64;
}

/* (B, H, L, D) values: contiguous, or a (B, L, H, D) array transposed. */
static mlx_array bhld(int B, int H, int L, int D, mlx_dtype t, bool transposed) {
  int shape[4] = {B, H, L, D};
  if (!transposed) return gpu_rand(shape, 4, t, -1, 1);
  int perm[4] = {0, 2, 1, 3};
  return permuted(shape, 4, perm, t, -1, 1);
}

static void same_sdpa(const struct sdpa_case *c, mlx_dtype t, enum mask_kind mk, bool sinks,
                      bool transposed, float scale) {
  mlx_array q = bhld(c->B, c->Hq, c->qL, c->D, t, transposed);
  mlx_array k = bhld(c->B, c->Hkv, c->kL, c->D, t, transposed);
  mlx_array v = bhld(c->B, c->Hkv, c->kL, c->Dv ? c->Dv : c->D, t, transposed);
  mlx_array mask = none(), sk = none();
  const char *mode = "";
  if (mk == M_BOOL) { /* (B, 1, qL, kL): broadcast over heads */
    int ms[4] = {c->B, 1, c->qL, c->kL};
    mask = gpu_rand(ms, 4, MLX_BOOL, -1, 1);
    mode = "array";
  } else if (mk == M_ADD) { /* (qL, kL) */
    int ms[2] = {c->qL, c->kL};
    mask = gpu_rand(ms, 2, t, -4, 1);
    mode = "array";
  } else if (mk == M_CAUSAL) {
    mode = "causal";
  }
  if (sinks) sk = gpu_rand(&c->Hq, 1, t, -1, 2);
  mlx_array g = mlx_array_new(), r = mlx_array_new();
  CHECK_OK(mlx_fast_scaled_dot_product_attention(&g, q, k, v, scale, mode, mask, sk, gpu_stream));
  CHECK_OK(mlx_fast_scaled_dot_product_attention(&r, q, k, v, scale, mode, mask, sk,
                                                 test_stream()));
  char what[200];
  snprintf(what, sizeof what,
           "sdpa %s B=%d Hq=%d Hkv=%d qL=%d kL=%d D=%d Dv=%d mask=%s sinks=%d transposed=%d "
           "scale=%g",
           dt_name(t), c->B, c->Hq, c->Hkv, c->qL, c->kL, c->D, c->Dv ? c->Dv : c->D,
           mask_names[mk], sinks, transposed, (double)scale);
  CHECK_OK(mlx_array_eval(g));
  if (sdpa_on_gpu(c, t)) CHECK_MSG(made_on_gpu(g), "%s: computed on the host", what);
  /* float arithmetic on both sides; the online softmax rescales partial
   * sums, so float32 agrees to a few ulps of the largest terms */
  double rtol = t == MLX_FLOAT32 ? 2e-5 : t == MLX_FLOAT64 ? 1e-12 : 2 * gpu_rtol(t);
  double atol = t == MLX_FLOAT32 ? 2e-6 : t == MLX_FLOAT64 ? 1e-12 : gpu_rtol(t);
  CHECK_SAME(g, r, rtol, atol, what);
  mlx_array_free(g);
  mlx_array_free(r);
  mlx_array_free(q);
  mlx_array_free(k);
  mlx_array_free(v);
  mlx_array_free(mask);
  mlx_array_free(sk);
}

static void test_sdpa(void) {
  const int kls[] = {1, 7, 1024, 2049};
  /* decode (qL 1): every KV length, GQA 1 and 4, every mask */
  for (size_t ti = 0; ti < 3; ti++)
    for (size_t ki = 0; ki < 4; ki++)
      for (int gqa = 0; gqa < 2; gqa++)
        for (int mk = 0; mk < 4; mk++) {
          struct sdpa_case c = {1, 16, gqa ? 4 : 16, 1, kls[ki], 128, 0};
          same_sdpa(&c, dtypes[ti], (enum mask_kind)mk, false, false, 0.08838834764f);
          if (mk == M_NONE) {
            same_sdpa(&c, dtypes[ti], M_NONE, false, true, 0.08838834764f);
            same_sdpa(&c, dtypes[ti], M_NONE, true, true, 1.0f);
          }
        }
  /* query length > 1 (prefill, speculative decoding) */
  struct sdpa_case pre[] = {{1, 8, 2, 5, 7, 64, 0},      {2, 4, 4, 33, 33, 64, 0},
                            {1, 16, 4, 17, 1024, 128, 0}, {1, 4, 1, 64, 64, 128, 0},
                            {1, 2, 2, 9, 2049, 128, 0},   {1, 4, 4, 40, 7, 64, 0}};
  for (size_t ti = 0; ti < 3; ti++)
    for (size_t i = 0; i < sizeof pre / sizeof *pre; i++)
      for (int mk = 0; mk < 4; mk++) {
        same_sdpa(&pre[i], dtypes[ti], (enum mask_kind)mk, false, mk == M_CAUSAL, 0.125f);
        if (mk == M_CAUSAL) same_sdpa(&pre[i], dtypes[ti], M_CAUSAL, true, false, 0.125f);
      }
  /* other head dims (80: 10 packs; 512: two packs per lane in 16-bit
   * types; 20 in 16-bit types and 1024: the CPU), GQA ratios 3 and 16,
   * batches, float64 (the CPU) */
  struct sdpa_case odd[] = {{1, 4, 2, 1, 300, 80, 0},   {1, 2, 1, 3, 50, 512, 0},
                            {1, 2, 2, 2, 9, 20, 0},     {1, 6, 2, 1, 77, 64, 0},
                            {1, 16, 1, 1, 500, 64, 0},  {3, 4, 2, 1, 130, 64, 0},
                            {1, 2, 2, 1, 40, 1024, 0},  {2, 6, 2, 4, 65, 72, 0}};
  for (size_t ti = 0; ti < 4; ti++)
    for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
      same_sdpa(&odd[i], dtypes[ti], M_NONE, false, false, 0.1f);
      same_sdpa(&odd[i], dtypes[ti], M_ADD, true, true, 0.1f);
    }
  /* values of another head dim than the keys (MLA-style 192 / 128; wider
   * values; one split and many; 256 / 512 is two packs per lane in 16-bit
   * types and the host in float32) */
  struct sdpa_case mixed[] = {{1, 8, 2, 1, 300, 192, 128}, {1, 4, 4, 17, 33, 64, 128},
                              {1, 4, 2, 1, 2049, 128, 64},  {1, 2, 2, 3, 50, 256, 512},
                              {2, 4, 1, 5, 9, 32, 8}};
  for (size_t ti = 0; ti < 4; ti++)
    for (size_t i = 0; i < sizeof mixed / sizeof *mixed; i++)
      for (int mk = 0; mk < 4; mk++)
        same_sdpa(&mixed[i], dtypes[ti], (enum mask_kind)mk, mk == M_CAUSAL, mk == M_ADD, 0.1f);
}

int main(void) {
  if (!gpu_test_init()) return TEST_SKIP;
  test_seed(20261204);
  size_t base = test_active_memory();
  test_norms();
  test_rope();
  test_sdpa();
  return gpu_test_done(base);
}
