/* bench_decode: tokens/s of one greedy transformer decode step, lace
 * uncompiled vs compiled, on the GPU when there is one (else on the CPU).
 *
 * Model (random weights, bfloat16 on the GPU, float32 on the CPU): token
 * embedding tied with the output projection, LAYERS pre-norm blocks
 * (rms_norm, grouped-query attention with RoPE, SwiGLU), a final rms_norm.
 * The step is one mlx_closure over
 *   [token (1,), pos (), K caches, V caches, weights]
 * returning [next token (1,) = argmax of the logits, pos + 1, K caches,
 * V caches]; the caches have a fixed capacity CACHE and are updated with
 * slice_update_dynamic at pos, attention masks positions > pos. Everything
 * stays on the device; each step ends as a sampling loop does, reading the
 * token on the host. tools/gpu_decode.py runs the same model in torch
 * (eager, torch.compile reduce-overhead) and jax.jit for comparison.
 *
 * Output: "decode-case lace-<mode> layers=.. dim=.. ms_per_token=.. tok_s=.."
 * lines, and a check that compiled and uncompiled decoding give the same
 * tokens. --quick: a small model on the CPU (a smoke test in make test).
 * Environment: LACE_DECODE_STEPS (timed steps, default 64), LACE_DECODE_WARM
 * (untimed steps first, default 8), LACE_DECODE_ONLY=compiled|uncompiled
 * (run one of the two, e.g. under a profiler; no token check then). */
#include <math.h>

#include "bench_common.h"

static int VOCAB = 32000, DIM = 2048, LAYERS = 16, HEADS = 16, KV = 4, HD = 128, FFN = 5632,
           CACHE = 1024, START = 960;
static mlx_stream S;
static mlx_dtype DT = MLX_BFLOAT16;

enum { W_EMBED, W_FINAL, W_GLOBAL };
enum { L_NORM1, L_WQ, L_WK, L_WV, L_WO, L_NORM2, L_W1, L_W3, L_W2, L_COUNT };
enum { IN_TOKEN, IN_POS, IN_CACHES };
#define NWEIGHTS (W_GLOBAL + LAYERS * L_COUNT)
#define IN_WEIGHTS (IN_CACHES + 2 * LAYERS)

/* Temporaries of one trace, freed together; the first failure sticks. */
struct scope {
  mlx_array a[4096];
  int n, failed;
};
static mlx_array *tmp(struct scope *sc) {
  if (sc->failed || sc->n == (int)(sizeof sc->a / sizeof sc->a[0])) {
    sc->failed = 1;
    return NULL;
  }
  sc->a[sc->n] = mlx_array_new();
  return &sc->a[sc->n++];
}
#define OP(call)                        \
  mlx_array *r = tmp(sc);               \
  if (!r) return mlx_array_new();       \
  if (call) sc->failed = 1;             \
  return *r;

static mlx_array mm(struct scope *sc, mlx_array a, mlx_array b) { OP(mlx_matmul(r, a, b, S)) }
static mlx_array add(struct scope *sc, mlx_array a, mlx_array b) { OP(mlx_add(r, a, b, S)) }
static mlx_array mul(struct scope *sc, mlx_array a, mlx_array b) { OP(mlx_multiply(r, a, b, S)) }
static mlx_array sigm(struct scope *sc, mlx_array a) { OP(mlx_sigmoid(r, a, S)) }
static mlx_array norm(struct scope *sc, mlx_array x, mlx_array w) {
  OP(mlx_fast_rms_norm(r, x, w, 1e-5f, S))
}
static mlx_array rope(struct scope *sc, mlx_array x, mlx_array pos) {
  mlx_optional_float base = {10000.0f, true};
  OP(mlx_fast_rope_dynamic(r, x, HD, false, base, 1.0f, pos, mlx_array_new(), S))
}
static mlx_array attend(struct scope *sc, mlx_array q, mlx_array k, mlx_array v, mlx_array m) {
  OP(mlx_fast_scaled_dot_product_attention(r, q, k, v, 1.0f / sqrtf((float)HD), "array", m,
                                           mlx_array_new(), S))
}
static mlx_array reshape(struct scope *sc, mlx_array x, int d0, int d1, int d2, int d3, int nd) {
  int sh[4] = {d0, d1, d2, d3};
  OP(mlx_reshape(r, x, sh, (size_t)nd, S))
}
static mlx_array t0213(struct scope *sc, mlx_array x) {
  static const int perm[4] = {0, 2, 1, 3};
  OP(mlx_transpose_axes(r, x, perm, 4, S))
}
static mlx_array transpose(struct scope *sc, mlx_array x) { OP(mlx_transpose(r, x, S)) }
static mlx_array take0(struct scope *sc, mlx_array a, mlx_array i) {
  OP(mlx_take_axis(r, a, i, 0, S))
}
static mlx_array update(struct scope *sc, mlx_array cache, mlx_array kv, mlx_array start) {
  static const int axes[1] = {2};
  OP(mlx_slice_update_dynamic(r, cache, kv, start, axes, 1, S))
}
static mlx_array le_mask(struct scope *sc, mlx_array pos) {
  mlx_array *a = tmp(sc);
  if (!a || mlx_arange(a, 0, CACHE, 1, MLX_INT32, S)) return mlx_array_new();
  OP(mlx_less_equal(r, *a, pos, S))
}
static mlx_array argmax(struct scope *sc, mlx_array x) { OP(mlx_argmax_axis(r, x, -1, false, S)) }
static mlx_array astype(struct scope *sc, mlx_array x, mlx_dtype t) { OP(mlx_astype(r, x, t, S)) }
static mlx_array plus1(struct scope *sc, mlx_array x) {
  mlx_array one = mlx_array_new_int(1);
  mlx_array *r = tmp(sc);
  if (r && mlx_add(r, x, one, S)) sc->failed = 1;
  mlx_array_free(one);
  return r ? *r : mlx_array_new();
}

static int step_fn(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  (void)payload;
  struct scope *sc = calloc(1, sizeof *sc);
  if (!sc) return 1;
  size_t nin = (size_t)IN_WEIGHTS + NWEIGHTS;
  mlx_array *v = calloc(nin, sizeof *v), *outs = calloc((size_t)(2 + 2 * LAYERS), sizeof *outs);
  int rc = !v || !outs || mlx_vector_array_size(in) != nin;
  for (size_t i = 0; !rc && i < nin; i++) {
    mlx_array *r = tmp(sc);
    rc = !r || mlx_vector_array_get(r, in, i);
    if (!rc) v[i] = *r;
  }
  if (!rc) {
    const mlx_array *wt = v + IN_WEIGHTS;
    mlx_array pos = v[IN_POS], start = reshape(sc, pos, 1, 0, 0, 0, 1);
    mlx_array mask = le_mask(sc, pos);
    mlx_array x = reshape(sc, take0(sc, wt[W_EMBED], v[IN_TOKEN]), 1, 1, DIM, 0, 3);
    for (int l = 0; l < LAYERS; l++) {
      const mlx_array *w = wt + W_GLOBAL + l * L_COUNT;
      mlx_array h = norm(sc, x, w[L_NORM1]);
      mlx_array q = rope(sc, t0213(sc, reshape(sc, mm(sc, h, w[L_WQ]), 1, 1, HEADS, HD, 4)), pos);
      mlx_array k = rope(sc, t0213(sc, reshape(sc, mm(sc, h, w[L_WK]), 1, 1, KV, HD, 4)), pos);
      mlx_array val = t0213(sc, reshape(sc, mm(sc, h, w[L_WV]), 1, 1, KV, HD, 4));
      mlx_array kc = update(sc, v[IN_CACHES + l], k, start);
      mlx_array vc = update(sc, v[IN_CACHES + LAYERS + l], val, start);
      mlx_array o = reshape(sc, t0213(sc, attend(sc, q, kc, vc, mask)), 1, 1, DIM, 0, 3);
      x = add(sc, x, mm(sc, o, w[L_WO]));
      h = norm(sc, x, w[L_NORM2]);
      mlx_array g = mm(sc, h, w[L_W1]), u = mm(sc, h, w[L_W3]);
      x = add(sc, x, mm(sc, mul(sc, mul(sc, g, sigm(sc, g)), u), w[L_W2]));
      outs[2 + l] = kc;
      outs[2 + LAYERS + l] = vc;
    }
    mlx_array logits = mm(sc, reshape(sc, norm(sc, x, wt[W_FINAL]), 1, DIM, 0, 0, 2),
                          transpose(sc, wt[W_EMBED]));
    outs[0] = astype(sc, argmax(sc, logits), MLX_INT32);
    outs[1] = plus1(sc, pos);
    rc = sc->failed;
  }
  if (!rc) {
    mlx_vector_array o = mlx_vector_array_new_data(outs, (size_t)(2 + 2 * LAYERS));
    rc = mlx_vector_array_set(res, o);
    mlx_vector_array_free(o);
  }
  for (int i = 0; i < sc->n; i++) mlx_array_free(sc->a[i]);
  free(sc);
  free(v);
  free(outs);
  return rc;
}

/* A random (rows, cols) weight of dtype DT with entries of scale amp,
 * generated on the CPU and moved to S on first use. */
static mlx_array weight(mlx_array key, int rows, int cols, float amp) {
  mlx_array f = mlx_array_new(), r = mlx_array_new();
  int sh[2] = {rows, cols};
  mlx_stream cpu = mlx_default_cpu_stream_new();
  int nd = cols ? 2 : 1; /* cols == 0: a vector of rows entries */
  if (mlx_random_normal(&f, sh, (size_t)nd, MLX_FLOAT32, cols ? 0.0f : 1.0f, amp, key, cpu) ||
      mlx_astype(&r, f, DT, cpu) || mlx_array_eval(r)) {
    mlx_array_free(r);
    r = mlx_array_new();
  }
  mlx_array_free(f);
  mlx_stream_free(cpu);
  return r;
}

static int make_weights(mlx_array *w) {
  int rc = 0;
  float a_in = 1.0f / sqrtf((float)DIM), a_ffn = 1.0f / sqrtf((float)FFN);
  for (int i = 0; i < NWEIGHTS && !rc; i++) {
    mlx_array key = mlx_array_new();
    rc = mlx_random_key(&key, 7 + (uint64_t)i);
    int rows = DIM, cols = 0;
    float amp = 0.1f; /* norm weights: 1 + 0.1 N(0, 1) */
    if (i == W_EMBED) rows = VOCAB, cols = DIM, amp = 0.02f; /* small: blocks dominate */
    if (i >= W_GLOBAL) {
      int j = (i - W_GLOBAL) % L_COUNT;
      if (j == L_WQ || j == L_WO) cols = DIM, amp = a_in;
      if (j == L_WK || j == L_WV) cols = KV * HD, amp = a_in;
      if (j == L_W1 || j == L_W3) cols = FFN, amp = a_in;
      if (j == L_W2) rows = FFN, cols = DIM, amp = a_ffn;
    }
    if (!rc) {
      w[i] = weight(key, rows, cols, amp);
      rc = mlx_array_ndim(w[i]) == 0;
    }
    mlx_array_free(key);
  }
  return rc;
}

/* Decodes n steps from the state (token, pos, caches) with f; tokens[]
 * receives them. Returns the wall time of the last n - warm steps. */
static double decode(mlx_closure f, const mlx_array *w, int n, int warm, int *tokens, int *rc) {
  int zero = 0, one = 1, cs[4] = {1, KV, CACHE, HD};
  mlx_array token = mlx_array_new_data(&zero, &one, 1, MLX_INT32), pos = mlx_array_new_int(START);
  mlx_array *caches = calloc((size_t)(2 * LAYERS), sizeof *caches);
  for (int i = 0; i < 2 * LAYERS && !*rc; i++) {
    caches[i] = mlx_array_new();
    *rc = mlx_zeros(&caches[i], cs, 4, DT, S) || mlx_array_eval(caches[i]);
  }
  double t0 = 0;
  for (int s = 0; s < n && !*rc; s++) {
    if (s == warm) t0 = bench_now();
    mlx_vector_array in = mlx_vector_array_new_data(&token, 1), res = mlx_vector_array_new();
    mlx_vector_array_append_value(in, pos);
    mlx_vector_array_append_data(in, caches, (size_t)(2 * LAYERS));
    mlx_vector_array_append_data(in, w, NWEIGHTS);
    *rc = mlx_closure_apply(&res, f, in) || mlx_eval(res);
    mlx_vector_array_free(in);
    if (!*rc) {
      *rc = mlx_vector_array_get(&token, res, 0) || mlx_vector_array_get(&pos, res, 1);
      for (int i = 0; i < 2 * LAYERS && !*rc; i++)
        *rc = mlx_vector_array_get(&caches[i], res, (size_t)(2 + i));
      int32_t t = 0;
      if (!*rc) *rc = mlx_array_item_int32(&t, token);
      tokens[s] = t;
    }
    mlx_vector_array_free(res);
  }
  double dt = bench_now() - t0;
  for (int i = 0; i < 2 * LAYERS; i++) mlx_array_free(caches[i]);
  free(caches);
  mlx_array_free(token);
  mlx_array_free(pos);
  return dt;
}

int main(int argc, char **argv) {
  int quick = argc > 1 && !strcmp(argv[1], "--quick"), ngpu = 0;
  mlx_device_count(&ngpu, MLX_GPU);
  if (quick || !ngpu) {
    VOCAB = 512, DIM = 128, LAYERS = 2, HEADS = 4, KV = 2, HD = 32, FFN = 256, CACHE = 64,
    START = 8, DT = MLX_FLOAT32;
    S = mlx_default_cpu_stream_new();
  } else {
    S = mlx_default_gpu_stream_new();
  }
  int steps = (int)bench_env_double("LACE_DECODE_STEPS", quick ? 8 : 64),
      warm = (int)bench_env_double("LACE_DECODE_WARM", quick ? 2 : 8);
  const char *only = getenv("LACE_DECODE_ONLY");
  int first_mode = only && !strcmp(only, "compiled"),
      last_mode = only && !strcmp(only, "uncompiled") ? 0 : 1;
  if (steps < 1 || warm < 0) {
    fprintf(stderr, "bench_decode: LACE_DECODE_STEPS must be >= 1, LACE_DECODE_WARM >= 0\n");
    return 1;
  }
  if (START + steps + warm > CACHE) START = CACHE - steps - warm;
  mlx_array *w = calloc(NWEIGHTS, sizeof *w);
  int *tok[2] = {calloc((size_t)(steps + warm), sizeof(int)),
                 calloc((size_t)(steps + warm), sizeof(int))};
  if (!w || !tok[0] || !tok[1] || make_weights(w)) {
    fprintf(stderr, "bench_decode: weights failed\n");
    return 1;
  }
  printf("bench_decode on %s: %d layers, d_model %d, heads %d/%d (head dim %d), SwiGLU %d, "
         "vocab %d, cache %d, %s\n", ngpu && !quick ? "GPU" : "CPU", LAYERS, DIM, HEADS, KV, HD,
         FFN, VOCAB, CACHE, DT == MLX_BFLOAT16 ? "bfloat16" : "float32");
  mlx_closure step = mlx_closure_new_func_payload(step_fn, NULL, NULL), cstep = mlx_closure_new();
  int rc = mlx_compile(&cstep, step, false);
  double t[2] = {0, 0};
  for (int c = first_mode; c <= last_mode && !rc; c++) {
    t[c] = decode(c ? cstep : step, w, warm + steps, warm, tok[c], &rc);
    if (!rc)
      printf("decode-case lace-%s layers=%d dim=%d ms_per_token=%.3f tok_s=%.1f\n",
             c ? "compiled" : "uncompiled", LAYERS, DIM, 1e3 * t[c] / steps, steps / t[c]);
  }
  if (first_mode == last_mode) {
    printf("one mode only (LACE_DECODE_ONLY): no token check\n");
    goto done;
  }
  int same = !rc && !memcmp(tok[0], tok[1], sizeof(int) * (size_t)(steps + warm)), first = -1;
  for (int i = 0; !rc && !same && first < 0; i++)
    if (tok[0][i] != tok[1][i]) first = i;
  if (!rc) {
    printf("tokens:");
    for (int i = 0; i < 8 && i < steps + warm; i++) printf(" %d", tok[1][i]);
    if (same) printf(" ...; compiled vs uncompiled tokens identical\n");
    else printf(" ...; compiled vs uncompiled tokens differ from step %d on\n", first);
    printf("compiled/uncompiled speed: %.2fx\n", t[0] / t[1]);
  }
  /* float32 on the CPU must agree exactly; in bfloat16 on the GPU fused
   * and unfused rounding may flip a near-tie of random logits, so there a
   * late divergence is reported, not failed */
  if (!rc && !same && DT == MLX_BFLOAT16 && first >= 4) same = 1;
  if (!same) rc = 1;
done:
  for (int i = 0; i < NWEIGHTS; i++) mlx_array_free(w[i]);
  free(w);
  free(tok[0]);
  free(tok[1]);
  mlx_closure_free(step);
  mlx_closure_free(cstep);
  mlx_stream_free(S);
  if (rc) fprintf(stderr, "bench_decode: failed\n");
  return rc;
}
