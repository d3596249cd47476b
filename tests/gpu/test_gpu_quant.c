/* quantized_matmul on the GPU (one QUANTIZED_MATMUL node: the
 * matrix-vector kernel for x @ W^T with few rows, dequantize + cuBLAS
 * otherwise) against the CPU's decomposition (dequantize, then matmul):
 * every bits / group size / transpose, float32, float16 and bfloat16 x with
 * scales of the same or another dtype, M in {1, 3, 8, 9, 16, 100}, K and N
 * not powers of two, batched x and w (broadcast both ways), 1-d x,
 * transposed and strided x, weights at offsets and with strided words;
 * weights varying over more batches than one chunk of dequantized scratch;
 * gradients with respect to x through the node's rules; that the GPU side
 * is one QUANTIZED_MATMUL node and its results were made on the GPU;
 * device memory back to its baseline. Tolerances: the products accumulate
 * in float32 in another order, and the output is
 * rounded to x's dtype. Skips without a GPU. */
#include <math.h>

#include "core/node.h"
#include "gpu_bits.h"
#include "quant_util.h"
#include "ops/prim.h"

static char what_buf[256];
#define WHAT(...) (snprintf(what_buf, sizeof what_buf, __VA_ARGS__), what_buf)

/* Whether a (unevaluated) is a QUANTIZED_MATMUL node, or the reshape that
 * drops the row of a 1-d x: the GPU kernels ran, not the decomposition
 * (dequantize + matmul, whose result is made on the GPU too). */
static bool built_as_qmm(mlx_array a) {
  const struct lc_node *n = a.ctx;
  if (n && n->op == LC_OP_RESHAPE && n->nin == 1) n = n->in[0];
  return n && n->op == LC_OP_QUANTIZED_MATMUL;
}

/* w quantized on the CPU: out[0..3) = packed, scales, biases. */
/* Tolerances for a contraction of length K over values in [-1, 1]. */
static double rtol_of(mlx_dtype t) {
  return t == MLX_FLOAT16 ? 4e-3 : t == MLX_BFLOAT16 ? 3e-2 : 1e-4;
}
static double atol_of(mlx_dtype t, int K) { return rtol_of(t) * sqrt((double)K) * 0.5; }

/* x @ W on both devices, compared. */
static void compare(mlx_array x, const mlx_array *q, bool transpose, int gs, int bits, int K,
                    const char *what) {
  mlx_optional_int g = {gs, true}, b = {bits, true};
  mlx_array r[2] = {mlx_array_new(), mlx_array_new()};
  for (int side = 0; side < 2; side++) {
    mlx_stream s = side ? test_stream() : gpu_stream;
    CHECK_OK(mlx_quantized_matmul(&r[side], x, q[0], q[1], q[2], transpose, g, b, "affine", s));
    if (side == 0) CHECK_MSG(built_as_qmm(r[0]), "%s: not one QUANTIZED_MATMUL node", what);
    CHECK_OK(mlx_array_eval(r[side]));
  }
  if (mlx_array_size(r[1]) > 0) CHECK_MSG(made_on_gpu(r[0]), "%s: not made on the GPU", what);
  mlx_dtype t = mlx_array_dtype(x);
  CHECK_SAME(r[0], r[1], rtol_of(t), atol_of(t, K), what);
  mlx_array_free(r[0]);
  mlx_array_free(r[1]);
}

static const int all_bits[] = {2, 3, 4, 5, 6, 8};
static const int all_gs[] = {32, 64, 128};
static const mlx_dtype types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16};
static const int all_m[] = {1, 3, 8, 9, 16, 100};

/* Every bits / group size / transpose / dtype / M on 2-d operands. */
static void test_grid(void) {
  for (size_t bi = 0; bi < 6; bi++)
    for (size_t gi = 0; gi < 3; gi++)
      for (int tr = 0; tr < 2; tr++) {
        int gs = all_gs[gi], bits = all_bits[bi];
        /* the quantized axis is a multiple of the group size (3 groups: not a
         * power of two); the other has an odd length */
        int K = tr ? 3 * gs : 45, N = tr ? 37 : 3 * gs;
        int ws[2] = {tr ? N : K, tr ? K : N};
        mlx_array w = test_rand_f32(ws, 2, -1, 1);
        for (size_t ti = 0; ti < 3; ti++) {
          mlx_array wt = test_as_type(w, types[ti]), q[3];
          test_quantize(wt, gs, bits, q);
          for (size_t mi = 0; mi < sizeof all_m / sizeof *all_m; mi++) {
            int xs[2] = {all_m[mi], K};
            mlx_array x0 = test_rand_f32(xs, 2, -1, 1), x = test_as_type(x0, types[ti]);
            compare(x, q, tr, gs, bits, K,
                    WHAT("bits %d gs %d transpose %d dtype %d M %d", bits, gs, tr,
                         (int)types[ti], all_m[mi]));
            mlx_array_free(x0);
            mlx_array_free(x);
          }
          for (int i = 0; i < 3; i++) mlx_array_free(q[i]);
          mlx_array_free(wt);
        }
        mlx_array_free(w);
      }
}

/* x of one dtype with scales and biases of another. */
static void test_mixed_dtypes(void) {
  int K = 192, N = 50, ws[2] = {N, K};
  mlx_array w = test_rand_f32(ws, 2, -1, 1);
  for (size_t wi = 0; wi < 3; wi++)
    for (size_t xi = 0; xi < 3; xi++) {
      if (wi == xi) continue;
      mlx_array wt = test_as_type(w, types[wi]), q[3];
      test_quantize(wt, 64, 4, q);
      for (int m = 1; m <= 17; m += 16) {
        int xs[2] = {m, K};
        mlx_array x0 = test_rand_f32(xs, 2, -1, 1), x = test_as_type(x0, types[xi]);
        compare(x, q, true, 64, 4, K,
                WHAT("scales dtype %d, x dtype %d, M %d", (int)types[wi], (int)types[xi], m));
        mlx_array_free(x0);
        mlx_array_free(x);
      }
      for (int i = 0; i < 3; i++) mlx_array_free(q[i]);
      mlx_array_free(wt);
    }
  mlx_array_free(w);
}

/* Batched x and w, broadcast either way; 1-d x. */
static void test_batched(void) {
  static const struct {
    int xnd, xs[4], wnd, wlead[2];
  } cases[] = {
      {3, {2, 1, 0}, 2, {0}},       /* x (2, M, K), w (N, K) */
      {4, {2, 3, 1, 0}, 2, {0}},    /* x (2, 3, M, K) */
      {3, {3, 1, 0}, 3, {3}},       /* x (3, M, K), w (3, N, K) */
      {3, {1, 1, 0}, 3, {4}},       /* x (1, M, K), w (4, N, K) */
      {4, {2, 1, 1, 0}, 4, {1, 3}}, /* x (2, 1, M, K), w (1, 3, N, K) */
      {1, {0}, 3, {2}},             /* x (K), w (2, N, K) */
      {1, {0}, 2, {0}},             /* x (K), w (N, K) */
  };
  static const int ms[] = {1, 4, 33};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
    for (int tr = 0; tr < 2; tr++)
      for (size_t ti = 0; ti < 3; ti++) {
        int gs = 32, bits = tr ? 4 : 3;
        int K = tr ? 96 : 40, N = tr ? 21 : 64;
        int wshape[4], wnd = cases[c].wnd;
        for (int d = 0; d < wnd - 2; d++) wshape[d] = cases[c].wlead[d];
        wshape[wnd - 2] = tr ? N : K;
        wshape[wnd - 1] = tr ? K : N;
        mlx_array w0 = test_rand_f32(wshape, wnd, -1, 1), w = test_as_type(w0, types[ti]), q[3];
        test_quantize(w, gs, bits, q);
        for (size_t mi = 0; mi < 3; mi++) {
          if (cases[c].xnd == 1 && mi > 0) continue;
          int xshape[4], xnd = cases[c].xnd;
          for (int d = 0; d < xnd; d++) xshape[d] = cases[c].xs[d];
          if (xnd >= 2) xshape[xnd - 2] = ms[mi];
          xshape[xnd - 1] = K;
          mlx_array x0 = test_rand_f32(xshape, xnd, -1, 1), x = test_as_type(x0, types[ti]);
          compare(x, q, tr, gs, bits, K,
                  WHAT("batched case %zu transpose %d dtype %d M %d", c, tr, (int)types[ti],
                       ms[mi]));
          mlx_array_free(x0);
          mlx_array_free(x);
        }
        for (int i = 0; i < 3; i++) mlx_array_free(q[i]);
        mlx_array_free(w0);
        mlx_array_free(w);
      }
}

/* x as views that are not row-major; weights as views: at offsets, and
 * with strided words. */
static void test_views(void) {
  int K = 128, N = 24;
  for (int bits = 4; bits <= 8; bits += 4)
    for (size_t ti = 0; ti < 3; ti++) {
      int ws[2] = {N + 1, K};
      mlx_array w0 = test_rand_f32(ws, 2, -1, 1), w = test_as_type(w0, types[ti]), q[3];
      test_quantize(w, 64, bits, q);
      for (int m = 2; m <= 40; m += 38) {
        int ts[2] = {K, m};
        mlx_array xt0 = test_rand_f32(ts, 2, -1, 1), xt = test_as_type(xt0, types[ti]);
        mlx_array x = mlx_array_new();
        CHECK_OK(mlx_transpose(&x, xt, test_stream()));
        compare(x, q, true, 64, bits, K,
                WHAT("transposed x bits %d dtype %d M %d", bits, (int)types[ti], m));
        /* every other column of a wider x */
        int ws2[2] = {m, 2 * K}, st[2] = {0, 0}, sp[2] = {m, 2 * K}, step[2] = {1, 2};
        mlx_array wide0 = test_rand_f32(ws2, 2, -1, 1), wide = test_as_type(wide0, types[ti]);
        mlx_array xs = mlx_array_new();
        CHECK_OK(mlx_slice(&xs, wide, st, 2, sp, 2, step, 2, test_stream()));
        compare(xs, q, true, 64, bits, K,
                WHAT("strided x bits %d dtype %d M %d", bits, (int)types[ti], m));
        /* rows 1.. and the groups after the first of the packed weights
         * (offsets inside the buffer), and the same weights as transposed
         * views of their transposes (words not contiguous: no 16-byte
         * loads) */
        mlx_array qs[3], qt[3];
        for (int i = 0; i < 3; i++) {
          int cols = (int)mlx_array_shape(q[i])[1], skip = i ? 1 : 64 * bits / 32;
          int s0[2] = {1, skip}, s1[2] = {N + 1, cols}, k1[2] = {1, 1};
          qs[i] = mlx_array_new();
          CHECK_OK(mlx_slice(&qs[i], q[i], s0, 2, s1, 2, k1, 2, test_stream()));
          mlx_array t = mlx_array_new(), c = mlx_array_new();
          qt[i] = mlx_array_new();
          CHECK_OK(mlx_transpose(&t, q[i], test_stream()));
          CHECK_OK(mlx_contiguous(&c, t, false, test_stream()));
          CHECK_OK(mlx_transpose(&qt[i], c, test_stream()));
          mlx_array_free(t);
          mlx_array_free(c);
        }
        int xs2[2] = {m, K - 64}, xs3[2] = {m, K};
        mlx_array xr0 = test_rand_f32(xs2, 2, -1, 1), xr = test_as_type(xr0, types[ti]);
        compare(xr, qs, true, 64, bits, K - 64,
                WHAT("offset weights bits %d dtype %d M %d", bits, (int)types[ti], m));
        mlx_array xf0 = test_rand_f32(xs3, 2, -1, 1), xf = test_as_type(xf0, types[ti]);
        compare(xf, qt, true, 64, bits, K,
                WHAT("strided weights bits %d dtype %d M %d", bits, (int)types[ti], m));
        for (int i = 0; i < 3; i++) mlx_array_free(qt[i]);
        mlx_array_free(xf0);
        mlx_array_free(xf);
        for (int i = 0; i < 3; i++) mlx_array_free(qs[i]);
        mlx_array_free(xr0);
        mlx_array_free(xr);
        mlx_array_free(xt0);
        mlx_array_free(xt);
        mlx_array_free(x);
        mlx_array_free(wide0);
        mlx_array_free(wide);
        mlx_array_free(xs);
      }
      for (int i = 0; i < 3; i++) mlx_array_free(q[i]);
      mlx_array_free(w0);
      mlx_array_free(w);
    }
}

/* Large enough to spread over many blocks and lanes: K = 4096 + 3 * 64. */
static void test_large(void) {
  int K = 4288, N = 1000, ws[2] = {N, K};
  mlx_array w = test_rand_f32(ws, 2, -1, 1), q[3];
  test_quantize(w, 64, 4, q);
  static const int ms[] = {1, 7, 300};
  for (size_t i = 0; i < 3; i++) {
    int m = ms[i], xs[2] = {m, K};
    mlx_array x = test_rand_f32(xs, 2, -1, 1);
    compare(x, q, true, 64, 4, K, WHAT("large M %d", m));
    mlx_array_free(x);
  }
  for (int i = 0; i < 3; i++) mlx_array_free(q[i]);
  mlx_array_free(w);
}

/* Weights that vary over more batches than the dequantize + cuBLAS path
 * dequantizes at once (256 MiB of scratch, gpu/cuda/eval_quant.c): 3
 * batches of 100 MiB of float32 weights, M = 16 (not the matrix-vector
 * kernel), go through in chunks of 2 and 1. Each batch of the result
 * against the same product on that batch alone (one chunk). The packed
 * words, scales and biases are random: no CPU quantization of 78M values. */
static void test_chunked(void) {
  enum { B = 3, R = 4096, C = 6400, M = 16, GS = 64, BITS = 4 };
  int wqs[3] = {B, R, C * BITS / 32}, ss[3] = {B, R, C / GS}, xs[3] = {B, M, C};
  mlx_array in[4] = {gpu_rand(xs, 3, MLX_FLOAT32, -1, 1), gpu_rand(wqs, 3, MLX_UINT32, 0, 4e9),
                     gpu_rand(ss, 3, MLX_FLOAT32, -0.1, 0.1),
                     gpu_rand(ss, 3, MLX_FLOAT32, -0.1, 0.1)};
  mlx_optional_int g = {GS, true}, b = {BITS, true};
  mlx_array all = mlx_array_new();
  CHECK_OK(mlx_quantized_matmul(&all, in[0], in[1], in[2], in[3], true, g, b, "affine",
                                gpu_stream));
  CHECK_MSG(built_as_qmm(all), "chunked: not one QUANTIZED_MATMUL node");
  CHECK_OK(mlx_array_eval(all));
  CHECK_MSG(made_on_gpu(all), "chunked: not made on the GPU");
  for (int bi = 0; bi < B; bi++) {
    mlx_array one[4], want = mlx_array_new(), got = mlx_array_new();
    for (int k = 0; k < 4; k++) {
      const int *sh = mlx_array_shape(in[k]);
      int st[3] = {bi, 0, 0}, en[3] = {bi + 1, sh[1], sh[2]}, step[3] = {1, 1, 1};
      one[k] = mlx_array_new();
      CHECK_OK(mlx_slice(&one[k], in[k], st, 3, en, 3, step, 3, test_stream()));
    }
    CHECK_OK(mlx_quantized_matmul(&want, one[0], one[1], one[2], one[3], true, g, b, "affine",
                                  gpu_stream));
    int st[3] = {bi, 0, 0}, en[3] = {bi + 1, M, R}, step[3] = {1, 1, 1};
    CHECK_OK(mlx_slice(&got, all, st, 3, en, 3, step, 3, test_stream()));
    CHECK_SAME(got, want, 1e-4, 1e-2, WHAT("chunked: batch %d", bi));
    for (int k = 0; k < 4; k++) mlx_array_free(one[k]);
    mlx_array_free(want);
    mlx_array_free(got);
  }
  for (int k = 0; k < 4; k++) mlx_array_free(in[k]);
  mlx_array_free(all);
}

/* Gradient of sum(x @ W^T) in x: the node's vjp rule (its decomposition)
 * on the GPU against the CPU. */
struct grad_payload {
  mlx_array q[3];
  mlx_stream s;
};

static int loss(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  const struct grad_payload *p = payload;
  const mlx_array *q = p->q;
  mlx_stream s = p->s;
  mlx_array x = mlx_array_new(), y = mlx_array_new(), t = mlx_array_new();
  mlx_optional_int g = {64, true}, b = {4, true};
  int rc = mlx_vector_array_get(&x, in, 0) ||
           mlx_quantized_matmul(&y, x, q[0], q[1], q[2], true, g, b, "affine", s) ||
           mlx_sum(&t, y, false, s) || mlx_vector_array_set_value(res, t);
  mlx_array_free(x);
  mlx_array_free(y);
  mlx_array_free(t);
  return rc;
}

static void test_grad(void) {
  int K = 128, N = 30, ws[2] = {N, K}, xs[2] = {3, K};
  mlx_array w = test_rand_f32(ws, 2, -1, 1), x = test_rand_f32(xs, 2, -1, 1);
  struct grad_payload pl;
  test_quantize(w, 64, 4, pl.q);
  mlx_array g[2];
  for (int side = 0; side < 2; side++) {
    pl.s = side ? test_stream() : gpu_stream;
    mlx_closure f = mlx_closure_new_func_payload(loss, &pl, NULL);
    mlx_closure_value_and_grad vg = mlx_closure_value_and_grad_new();
    int arg = 0;
    CHECK_OK(mlx_value_and_grad(&vg, f, &arg, 1));
    mlx_vector_array in = mlx_vector_array_new_data(&x, 1), v = mlx_vector_array_new(),
                     gr = mlx_vector_array_new();
    CHECK_OK(mlx_closure_value_and_grad_apply(&v, &gr, vg, in));
    g[side] = mlx_array_new();
    CHECK_OK(mlx_vector_array_get(&g[side], gr, 0));
    CHECK_OK(mlx_array_eval(g[side]));
    mlx_vector_array_free(in);
    mlx_vector_array_free(v);
    mlx_vector_array_free(gr);
    mlx_closure_value_and_grad_free(vg);
    mlx_closure_free(f);
  }
  CHECK_SAME(g[0], g[1], 1e-5, 1e-5, "grad of quantized_matmul in x");
  for (int i = 0; i < 2; i++) mlx_array_free(g[i]);
  for (int i = 0; i < 3; i++) mlx_array_free(pl.q[i]);
  mlx_array_free(w);
  mlx_array_free(x);
}

int main(void) {
  if (!gpu_test_init()) return TEST_SKIP;
  test_seed(20260108);
  size_t base = test_active_memory();
  test_grid();
  test_mixed_dtypes();
  test_batched();
  test_views();
  test_large();
  test_chunked();
  test_grad();
  return gpu_test_done(base);
}
