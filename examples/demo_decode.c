/* demo_decode: greedy decoding with a small Llama-style transformer whose
 * random weights are generated deterministically here (no files needed).
 *
 * Model: token embedding tied with the output projection, L pre-norm blocks
 * (RMSNorm, grouped-query attention with RoPE, SwiGLU MLP), a final RMSNorm.
 * The KV cache has a fixed capacity, so one decode step has the same shapes
 * at every position: the step is an mlx_closure over
 *   [token, position, attention mask, cache slot, K caches, V caches, weights]
 * returning [logits, K caches, V caches], and mlx_compile traces it once.
 * The prompt is run in one causal prefill pass (checked against feeding it
 * token by token through the decode step), then NGEN tokens are decoded
 * greedily twice, uncompiled and compiled: the tokens must agree and the
 * logits match closely; per-token latency and throughput are printed.
 * Public mlx-c API only. Exit status 0 iff every check passed. */
#ifndef _GNU_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlx/c/mlx.h"

/* ---- configuration (the DEMO_* macros may be overridden with -D) ---- */
#ifndef DEMO_DIM
#define DEMO_DIM 512
#endif
#ifndef DEMO_FFN
#define DEMO_FFN 1408
#endif
#ifndef DEMO_VOCAB
#define DEMO_VOCAB 2048
#endif
enum {
  VOCAB = DEMO_VOCAB,
  DIM = DEMO_DIM,
  LAYERS = 4,
  HEADS = 8,
  KV_HEADS = 2,
  HEAD_DIM = DIM / HEADS,
  FFN = DEMO_FFN,
  MAX_SEQ = 64,
  PROMPT = 8,
  NGEN = 32,
};
#define ROPE_BASE 10000.0f
#define NORM_EPS 1e-5f

/* Weight order in the input vector of the step (and prefill) closures. */
enum { W_EMBED, W_FINAL_NORM, W_GLOBAL };
enum { L_ATTN_NORM, L_WQ, L_WK, L_WV, L_WO, L_MLP_NORM, L_W1, L_W3, L_W2, L_COUNT };
#define NWEIGHTS (W_GLOBAL + LAYERS * L_COUNT)
/* Step inputs: token, position, mask, slot, K caches, V caches, weights. */
enum { IN_TOKEN, IN_POS, IN_MASK, IN_SLOT, IN_CACHES };
#define IN_WEIGHTS (IN_CACHES + 2 * LAYERS)

static mlx_stream S;

static void on_error(const char *msg, void *data) {
  (void)data;
  fprintf(stderr, "lace error: %s\n", msg);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- a scope: temporaries freed together; the first failure sticks ---- */
struct scope {
  mlx_array *a;
  int n, cap;
  int failed;
};

static mlx_array *slot_in(struct scope *sc) {
  if (sc->n == sc->cap) {
    int cap = sc->cap ? 2 * sc->cap : 256;
    mlx_array *a = realloc(sc->a, sizeof *a * (size_t)cap);
    if (!a) {
      sc->failed = 1;
      return NULL;
    }
    sc->a = a;
    sc->cap = cap;
  }
  sc->a[sc->n] = mlx_array_new();
  return &sc->a[sc->n++];
}

static void scope_free(struct scope *sc) {
  for (int i = 0; i < sc->n; i++) mlx_array_free(sc->a[i]);
  free(sc->a);
  memset(sc, 0, sizeof *sc);
}

static mlx_array fail(struct scope *sc) {
  sc->failed = 1;
  return mlx_array_new();
}

/* One wrapper per op used: the result is a fresh temporary of the scope; after
 * a failure, ops are skipped and return empty arrays. */
#define BEGIN                            \
  mlx_array *r = sc->failed ? NULL : slot_in(sc); \
  if (!r) return fail(sc);
#define END(call) return (call) ? fail(sc) : *r;

static mlx_array mm(struct scope *sc, mlx_array a, mlx_array b) {
  BEGIN END(mlx_matmul(r, a, b, S))
}
static mlx_array add(struct scope *sc, mlx_array a, mlx_array b) {
  BEGIN END(mlx_add(r, a, b, S))
}
static mlx_array mul(struct scope *sc, mlx_array a, mlx_array b) {
  BEGIN END(mlx_multiply(r, a, b, S))
}
static mlx_array sigmoid(struct scope *sc, mlx_array a) { BEGIN END(mlx_sigmoid(r, a, S)) }
static mlx_array where(struct scope *sc, mlx_array c, mlx_array a, mlx_array b) {
  BEGIN END(mlx_where(r, c, a, b, S))
}
static mlx_array rms_norm(struct scope *sc, mlx_array x, mlx_array w) {
  BEGIN END(mlx_fast_rms_norm(r, x, w, NORM_EPS, S))
}
static mlx_array rope(struct scope *sc, mlx_array x, mlx_array pos) {
  mlx_optional_float base = {ROPE_BASE, true};
  BEGIN END(mlx_fast_rope_dynamic(r, x, HEAD_DIM, false, base, 1.0f, pos, mlx_array_new(), S))
}
static mlx_array attention(struct scope *sc, mlx_array q, mlx_array k, mlx_array v,
                           const char *mode, mlx_array mask) {
  float scale = 1.0f / sqrtf((float)HEAD_DIM);
  BEGIN END(mlx_fast_scaled_dot_product_attention(r, q, k, v, scale, mode, mask, mlx_array_new(),
                                                  S))
}
static mlx_array reshape(struct scope *sc, mlx_array x, const int *shape, int nd) {
  BEGIN END(mlx_reshape(r, x, shape, (size_t)nd, S))
}
static mlx_array transpose0213(struct scope *sc, mlx_array x) {
  static const int perm[4] = {0, 2, 1, 3};
  BEGIN END(mlx_transpose_axes(r, x, perm, 4, S))
}
static mlx_array transpose(struct scope *sc, mlx_array x) { BEGIN END(mlx_transpose(r, x, S)) }
static mlx_array take_rows(struct scope *sc, mlx_array a, mlx_array idx) {
  BEGIN END(mlx_take_axis(r, a, idx, 0, S))
}
static mlx_array slice(struct scope *sc, mlx_array x, const int *start, const int *stop, int nd) {
  int step[4] = {1, 1, 1, 1};
  BEGIN END(mlx_slice(r, x, start, (size_t)nd, stop, (size_t)nd, step, (size_t)nd, S))
}
static mlx_array concat2(struct scope *sc, mlx_array a, mlx_array b, int axis) {
  BEGIN mlx_array parts[2] = {a, b};
  mlx_vector_array v = mlx_vector_array_new_data(parts, 2);
  int rc = mlx_concatenate_axis(r, v, axis, S);
  mlx_vector_array_free(v);
  END(rc)
}
static mlx_array zeros(struct scope *sc, const int *shape, int nd) {
  BEGIN END(mlx_zeros(r, shape, (size_t)nd, MLX_FLOAT32, S))
}

/* ---- the model ---- */

/* (1, T, DIM) -> q (1, HEADS, T, HEAD_DIM), k and v (1, KV_HEADS, T, HEAD_DIM),
 * with RoPE applied to q and k at positions pos + [0, T). */
static void qkv(struct scope *sc, mlx_array h, const mlx_array *w, mlx_array pos, int T,
                mlx_array *q, mlx_array *k, mlx_array *v) {
  int qs[4] = {1, T, HEADS, HEAD_DIM}, ks[4] = {1, T, KV_HEADS, HEAD_DIM};
  *q = rope(sc, transpose0213(sc, reshape(sc, mm(sc, h, w[L_WQ]), qs, 4)), pos);
  *k = rope(sc, transpose0213(sc, reshape(sc, mm(sc, h, w[L_WK]), ks, 4)), pos);
  *v = transpose0213(sc, reshape(sc, mm(sc, h, w[L_WV]), ks, 4));
}

/* x + attention output projection, then x + SwiGLU MLP. attn: (1, HEADS, T, HEAD_DIM). */
static mlx_array finish_block(struct scope *sc, mlx_array x, mlx_array attn, const mlx_array *w,
                              int T) {
  int os[3] = {1, T, DIM};
  mlx_array o = reshape(sc, transpose0213(sc, attn), os, 3);
  x = add(sc, x, mm(sc, o, w[L_WO]));
  mlx_array h = rms_norm(sc, x, w[L_MLP_NORM]);
  mlx_array g = mm(sc, h, w[L_W1]), u = mm(sc, h, w[L_W3]);
  mlx_array act = mul(sc, mul(sc, g, sigmoid(sc, g)), u); /* silu(g) * u */
  return add(sc, x, mm(sc, act, w[L_W2]));
}

/* Token ids (int32, shape (T,)) -> embeddings (1, T, DIM). */
static mlx_array embed(struct scope *sc, mlx_array tokens, const mlx_array *wt, int T) {
  int s[3] = {1, T, DIM};
  return reshape(sc, take_rows(sc, wt[W_EMBED], tokens), s, 3);
}

/* Final norm and the tied output projection of the last position: (1, VOCAB). */
static mlx_array head(struct scope *sc, mlx_array x, const mlx_array *wt, int T) {
  int start[3] = {0, T - 1, 0}, stop[3] = {1, T, DIM}, s2[2] = {1, DIM};
  mlx_array h = reshape(sc, rms_norm(sc, slice(sc, x, start, stop, 3), wt[W_FINAL_NORM]), s2, 2);
  return mm(sc, h, transpose(sc, wt[W_EMBED]));
}

/* Reads the closure inputs into the scope (new references). */
static int read_inputs(struct scope *sc, const mlx_vector_array in, mlx_array *v, size_t n) {
  if (mlx_vector_array_size(in) != n) {
    fprintf(stderr, "closure: expected %zu inputs, got %zu\n", n, mlx_vector_array_size(in));
    return 1;
  }
  for (size_t i = 0; i < n; i++) {
    mlx_array *r = slot_in(sc);
    if (!r || mlx_vector_array_get(r, in, i)) return 1;
    v[i] = *r;
  }
  return 0;
}

static int emit(mlx_vector_array *res, const mlx_array *outs, size_t n) {
  mlx_vector_array v = mlx_vector_array_new_data(outs, n);
  int rc = mlx_vector_array_set(res, v);
  mlx_vector_array_free(v);
  return rc;
}

/* The decode step: one token at position pos (< MAX_SEQ). mask (1,1,1,MAX_SEQ)
 * bool: cache positions <= pos; slot (1,1,MAX_SEQ,1) bool: position == pos. */
static int decode_step(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  (void)payload;
  struct scope sc = {0};
  mlx_array v[IN_WEIGHTS + NWEIGHTS], outs[1 + 2 * LAYERS];
  int rc = read_inputs(&sc, in, v, IN_WEIGHTS + NWEIGHTS);
  const mlx_array *wt = v + IN_WEIGHTS;
  mlx_array x = rc ? mlx_array_new() : embed(&sc, v[IN_TOKEN], wt, 1);
  for (int l = 0; l < LAYERS && !rc; l++) {
    const mlx_array *w = wt + W_GLOBAL + l * L_COUNT;
    mlx_array q, k, val;
    qkv(&sc, rms_norm(&sc, x, w[L_ATTN_NORM]), w, v[IN_POS], 1, &q, &k, &val);
    /* write this position's k, v into the fixed-size caches */
    mlx_array kc = where(&sc, v[IN_SLOT], k, v[IN_CACHES + l]);
    mlx_array vc = where(&sc, v[IN_SLOT], val, v[IN_CACHES + LAYERS + l]);
    mlx_array attn = attention(&sc, q, kc, vc, "array", v[IN_MASK]);
    x = finish_block(&sc, x, attn, w, 1);
    outs[1 + l] = kc;
    outs[1 + LAYERS + l] = vc;
  }
  if (!rc) outs[0] = head(&sc, x, wt, 1);
  rc = rc || sc.failed || emit(res, outs, 1 + 2 * LAYERS);
  scope_free(&sc);
  return rc;
}

/* Causal prefill of T prompt tokens from an empty cache: inputs [tokens (T,),
 * weights...]; outputs [logits of the last token, K caches, V caches]. */
static int prefill(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  int T = *(const int *)payload;
  struct scope sc = {0};
  mlx_array v[1 + NWEIGHTS], outs[1 + 2 * LAYERS];
  int rc = read_inputs(&sc, in, v, 1 + NWEIGHTS);
  const mlx_array *wt = v + 1;
  mlx_array x = rc ? mlx_array_new() : embed(&sc, v[0], wt, T);
  mlx_array pos = mlx_array_new_int(0);
  int pad[4] = {1, KV_HEADS, MAX_SEQ - T, HEAD_DIM};
  mlx_array empty = zeros(&sc, pad, 4);
  for (int l = 0; l < LAYERS && !rc; l++) {
    const mlx_array *w = wt + W_GLOBAL + l * L_COUNT;
    mlx_array q, k, val;
    qkv(&sc, rms_norm(&sc, x, w[L_ATTN_NORM]), w, pos, T, &q, &k, &val);
    x = finish_block(&sc, x, attention(&sc, q, k, val, "causal", mlx_array_new()), w, T);
    outs[1 + l] = concat2(&sc, k, empty, 2);
    outs[1 + LAYERS + l] = concat2(&sc, val, empty, 2);
  }
  if (!rc) outs[0] = head(&sc, x, wt, T);
  rc = rc || sc.failed || emit(res, outs, 1 + 2 * LAYERS);
  mlx_array_free(pos);
  scope_free(&sc);
  return rc;
}

/* ---- weights: deterministic uniform values with unit-variance outputs ---- */

static uint64_t rng = 0x2545f4914f6cdd1dULL;
static float uniform(void) { /* [-1, 1) */
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return (float)((rng * 0x2545f4914f6cdd1dULL) >> 40) / (float)(1 << 23) - 1.0f;
}

static mlx_array random_matrix(int rows, int cols, float amp) {
  size_t n = (size_t)rows * (size_t)cols;
  float *buf = malloc(sizeof(float) * n);
  if (!buf) return mlx_array_new();
  for (size_t i = 0; i < n; i++) buf[i] = amp * uniform();
  int shape[2] = {rows, cols};
  mlx_array a = mlx_array_new_data(buf, shape, 2, MLX_FLOAT32);
  free(buf);
  return a;
}

static mlx_array norm_weight(void) {
  float buf[DIM];
  for (int i = 0; i < DIM; i++) buf[i] = 1.0f + 0.1f * uniform();
  int shape[1] = {DIM};
  return mlx_array_new_data(buf, shape, 1, MLX_FLOAT32);
}

static void make_weights(mlx_array *w) {
  float a_in = sqrtf(3.0f / DIM), a_ffn = sqrtf(3.0f / FFN);
  w[W_EMBED] = random_matrix(VOCAB, DIM, 0.1f); /* small, so blocks dominate */
  w[W_FINAL_NORM] = norm_weight();
  for (int l = 0; l < LAYERS; l++) {
    mlx_array *lw = w + W_GLOBAL + l * L_COUNT;
    lw[L_ATTN_NORM] = norm_weight();
    lw[L_WQ] = random_matrix(DIM, DIM, a_in);
    lw[L_WK] = random_matrix(DIM, KV_HEADS * HEAD_DIM, a_in);
    lw[L_WV] = random_matrix(DIM, KV_HEADS * HEAD_DIM, a_in);
    lw[L_WO] = random_matrix(DIM, DIM, a_in);
    lw[L_MLP_NORM] = norm_weight();
    lw[L_W1] = random_matrix(DIM, FFN, a_in);
    lw[L_W3] = random_matrix(DIM, FFN, a_in);
    lw[L_W2] = random_matrix(FFN, DIM, a_ffn);
  }
}

/* ---- driving the decode ---- */

/* One greedy decode of NGEN tokens; ROUNDS rounds alternate uncompiled and
 * compiled runs so that machine noise hits both alike. */
enum { ROUNDS = 3 };
struct run {
  int tokens[NGEN];
  float *logits;        /* NGEN x VOCAB: the logits each step produced */
  double step_s[NGEN];  /* wall time of each step (closure call + eval) */
};

static int argmax(const float *v, int n) {
  int best = 0;
  for (int i = 1; i < n; i++)
    if (v[i] > v[best]) best = i;
  return best;
}

/* Applies f to in; copies outputs into outs (new references). */
static int call(mlx_closure f, const mlx_vector_array in, mlx_array *outs, size_t nout) {
  mlx_vector_array res = mlx_vector_array_new();
  int rc = mlx_closure_apply(&res, f, in);
  if (!rc && mlx_vector_array_size(res) != nout) {
    fprintf(stderr, "closure returned %zu outputs, expected %zu\n", mlx_vector_array_size(res),
            nout);
    rc = 1;
  }
  for (size_t i = 0; i < nout && !rc; i++) rc = mlx_vector_array_get(&outs[i], res, i);
  if (!rc) rc = mlx_eval(res);
  mlx_vector_array_free(res);
  return rc;
}

/* Step inputs for position pos: token, pos, mask and slot, then caches and weights. */
static mlx_vector_array step_inputs(int token, int pos, const mlx_array *caches,
                                    const mlx_array *w) {
  bool mask[MAX_SEQ], slot[MAX_SEQ];
  for (int i = 0; i < MAX_SEQ; i++) {
    mask[i] = i <= pos;
    slot[i] = i == pos;
  }
  int one = 1, ms[4] = {1, 1, 1, MAX_SEQ}, ss[4] = {1, 1, MAX_SEQ, 1};
  mlx_array head[4] = {mlx_array_new_data(&token, &one, 1, MLX_INT32),
                       mlx_array_new_data(&pos, &one, 1, MLX_INT32),
                       mlx_array_new_data(mask, ms, 4, MLX_BOOL),
                       mlx_array_new_data(slot, ss, 4, MLX_BOOL)};
  mlx_vector_array in = mlx_vector_array_new_data(head, 4);
  for (int i = 0; i < 4; i++) mlx_array_free(head[i]);
  mlx_vector_array_append_data(in, caches, 2 * LAYERS);
  mlx_vector_array_append_data(in, w, NWEIGHTS);
  return in;
}

/* Greedy decoding of NGEN tokens from the prefill state with step function f. */
static int decode(mlx_closure f, const mlx_array *w, const mlx_array *caches0, int first_token,
                  struct run *r) {
  mlx_array caches[2 * LAYERS], outs[1 + 2 * LAYERS];
  for (int i = 0; i < 2 * LAYERS; i++) {
    caches[i] = mlx_array_new();
    mlx_array_set(&caches[i], caches0[i]);
  }
  int token = first_token, rc = 0;
  for (int i = 0; i < NGEN && !rc; i++) {
    double t0 = now();
    for (int k = 0; k < 1 + 2 * LAYERS; k++) outs[k] = mlx_array_new();
    mlx_vector_array in = step_inputs(token, PROMPT + i, caches, w);
    rc = call(f, in, outs, 1 + 2 * LAYERS);
    mlx_vector_array_free(in);
    const float *lg = rc ? NULL : mlx_array_data_float32(outs[0]);
    if (!rc && !lg) rc = 1;
    r->step_s[i] = now() - t0;
    if (!rc) {
      memcpy(r->logits + (size_t)i * VOCAB, lg, sizeof(float) * VOCAB);
      token = r->tokens[i] = argmax(lg, VOCAB);
      for (int k = 0; k < 2 * LAYERS; k++) mlx_array_set(&caches[k], outs[1 + k]);
    }
    for (int k = 0; k < 1 + 2 * LAYERS; k++) mlx_array_free(outs[k]);
  }
  for (int i = 0; i < 2 * LAYERS; i++) mlx_array_free(caches[i]);
  return rc;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median step time over every round's steps 1.. (step 0 of the first round
 * includes tracing for the compiled function; step 0 is left out of all). */
static double median_step(const struct run *r, int rounds) {
  double v[ROUNDS * NGEN];
  int n = 0;
  for (int k = 0; k < rounds; k++)
    for (int i = 1; i < NGEN; i++) v[n++] = r[k].step_s[i];
  qsort(v, (size_t)n, sizeof v[0], cmp_double);
  return v[n / 2];
}

static void print_tokens(const char *label, const int *t, int n) {
  printf("%s", label);
  for (int i = 0; i < n; i++) printf(" %d", t[i]);
  printf("\n");
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - (double)b[i]);
    if (d > m || d != d) m = d;
  }
  return m;
}

/* Feeds the prompt token by token through the (uncompiled) decode step;
 * returns its last logits in out (VOCAB floats). */
static int stepwise_prompt(mlx_closure step, const mlx_array *w, const int *prompt, float *out) {
  mlx_array caches[2 * LAYERS], outs[1 + 2 * LAYERS];
  int cs[4] = {1, KV_HEADS, MAX_SEQ, HEAD_DIM}, rc = 0;
  for (int i = 0; i < 2 * LAYERS; i++) {
    caches[i] = mlx_array_new();
    rc = rc || mlx_zeros(&caches[i], cs, 4, MLX_FLOAT32, S);
  }
  for (int p = 0; p < PROMPT && !rc; p++) {
    for (int k = 0; k < 1 + 2 * LAYERS; k++) outs[k] = mlx_array_new();
    mlx_vector_array in = step_inputs(prompt[p], p, caches, w);
    rc = call(step, in, outs, 1 + 2 * LAYERS);
    mlx_vector_array_free(in);
    if (!rc && p == PROMPT - 1) {
      const float *lg = mlx_array_data_float32(outs[0]);
      if (lg) memcpy(out, lg, sizeof(float) * VOCAB);
      else rc = 1;
    }
    for (int k = 0; !rc && k < 2 * LAYERS; k++) mlx_array_set(&caches[k], outs[1 + k]);
    for (int k = 0; k < 1 + 2 * LAYERS; k++) mlx_array_free(outs[k]);
  }
  for (int i = 0; i < 2 * LAYERS; i++) mlx_array_free(caches[i]);
  return rc;
}

int main(void) {
  mlx_set_error_handler(on_error, NULL, NULL);
  S = mlx_default_cpu_stream_new();
  int ok = 1, rc = 0;
  printf("lace demo_decode: %d layers, d_model %d, %d heads (%d kv heads, head dim %d), "
         "SwiGLU %d, vocab %d, cache %d\n",
         LAYERS, DIM, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB, MAX_SEQ);
  double t0 = now();
  mlx_array w[NWEIGHTS];
  make_weights(w);
  mlx_vector_array wv = mlx_vector_array_new_data(w, NWEIGHTS);
  rc = mlx_eval(wv);
  mlx_vector_array_free(wv);
  size_t nparams = 0;
  for (int i = 0; i < NWEIGHTS; i++) nparams += mlx_array_size(w[i]);
  printf("embedded random-weight model: %.2fM parameters, generated in %.2f s\n",
         (double)nparams / 1e6, now() - t0);

  int prompt[PROMPT];
  for (int i = 0; i < PROMPT; i++) prompt[i] = (int)((1009u * (unsigned)i + 17u) % VOCAB);
  print_tokens("prompt:", prompt, PROMPT);

  /* prefill */
  int T = PROMPT;
  mlx_closure pre = mlx_closure_new_func_payload(prefill, &T, NULL);
  mlx_closure step = mlx_closure_new_func_payload(decode_step, NULL, NULL);
  mlx_array pouts[1 + 2 * LAYERS];
  for (int k = 0; k < 1 + 2 * LAYERS; k++) pouts[k] = mlx_array_new();
  float *pre_logits = malloc(sizeof(float) * VOCAB), *step_logits = malloc(sizeof(float) * VOCAB);
  static struct run runs[2][ROUNDS]; /* [uncompiled, compiled][round] */
  for (int c = 0; c < 2; c++)
    for (int k = 0; k < ROUNDS; k++)
      if (!(runs[c][k].logits = malloc(sizeof(float) * NGEN * VOCAB))) rc = 1;
  if (!pre_logits || !step_logits) rc = 1;
  int tok_arr_shape = PROMPT;
  mlx_array toks = mlx_array_new_data(prompt, &tok_arr_shape, 1, MLX_INT32);
  mlx_vector_array pin = mlx_vector_array_new_value(toks);
  mlx_vector_array_append_data(pin, w, NWEIGHTS);
  t0 = now();
  rc = rc || call(pre, pin, pouts, 1 + 2 * LAYERS);
  double prefill_s = now() - t0;
  mlx_vector_array_free(pin);
  mlx_array_free(toks);
  const float *pl = rc ? NULL : mlx_array_data_float32(pouts[0]);
  if (!rc && pl) memcpy(pre_logits, pl, sizeof(float) * VOCAB);
  else rc = 1;
  if (!rc) {
    printf("prefill: %d tokens in %.1f ms (causal attention, one pass)\n", PROMPT,
           1e3 * prefill_s);
    rc = stepwise_prompt(step, w, prompt, step_logits);
  }
  if (!rc) {
    double d = max_abs_diff(pre_logits, step_logits, VOCAB);
    int same = argmax(pre_logits, VOCAB) == argmax(step_logits, VOCAB);
    printf("check: prefill vs token-by-token prompt: max |logit diff| %.3g, next token %s\n", d,
           same ? "equal" : "DIFFERENT");
    if (!(d < 1e-3) || !same) ok = 0;
  }
  int first = rc ? 0 : argmax(pre_logits, VOCAB);

  /* uncompiled and compiled decoding, alternating over ROUNDS rounds */
  mlx_closure cstep = mlx_closure_new();
  int compiled = 0;
  if (!rc) {
    if (mlx_compile(&cstep, step, false))
      fprintf(stderr, "mlx_compile failed: the compiled comparison is skipped\n");
    else
      compiled = 1;
    if (!compiled) ok = 0;
  }
  for (int k = 0; k < ROUNDS && !rc; k++) {
    rc = decode(step, w, pouts + 1, first, &runs[0][k]);
    if (!rc && compiled) rc = decode(cstep, w, pouts + 1, first, &runs[1][k]);
  }
  if (!rc) {
    print_tokens("generated (uncompiled):", runs[0][0].tokens, NGEN);
    if (compiled) print_tokens("generated (compiled):  ", runs[1][0].tokens, NGEN);
  }
  if (!rc && compiled) {
    int same = 1;
    double d = 0;
    for (int k = 0; k < ROUNDS; k++) {
      same &= !memcmp(runs[0][0].tokens, runs[1][k].tokens, sizeof runs[0][0].tokens);
      same &= !memcmp(runs[0][0].tokens, runs[0][k].tokens, sizeof runs[0][0].tokens);
      double dk = max_abs_diff(runs[0][k].logits, runs[1][k].logits, (size_t)NGEN * VOCAB);
      if (dk > d || dk != dk) d = dk;
    }
    printf("check: compiled vs uncompiled (%d rounds): tokens %s, max |logit diff| %.3g\n",
           ROUNDS, same ? "identical" : "DIFFERENT", d);
    if (!same || !(d < 1e-3)) ok = 0;
  }
  if (!rc) {
    double med[2] = {0, 0};
    for (int c = 0; c < 1 + compiled; c++) {
      med[c] = median_step(runs[c], ROUNDS);
      printf("%-11s first step %7.2f ms%s; then median %6.2f ms/token, %7.1f tokens/s\n",
             c ? "compiled:" : "uncompiled:", 1e3 * runs[c][0].step_s[0],
             c ? " (trace + compile)" : "                  ", 1e3 * med[c], 1.0 / med[c]);
    }
    if (compiled) printf("speed ratio compiled/uncompiled: %.2fx\n", med[0] / med[1]);
  }
  for (int k = 0; k < 1 + 2 * LAYERS; k++) mlx_array_free(pouts[k]);
  for (int i = 0; i < NWEIGHTS; i++) mlx_array_free(w[i]);
  mlx_closure_free(pre);
  mlx_closure_free(step);
  mlx_closure_free(cstep);
  free(pre_logits);
  free(step_logits);
  for (int c = 0; c < 2; c++)
    for (int k = 0; k < ROUNDS; k++) free(runs[c][k].logits);
  mlx_stream_free(S);
  if (rc) fprintf(stderr, "demo_decode: failed\n");
  else printf("%s\n", ok ? "demo_decode: all checks passed" : "demo_decode: CHECKS FAILED");
  return rc || !ok;
}
