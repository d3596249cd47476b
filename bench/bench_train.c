/* Training on the CPU: one full training step of an MLP (forward, backward
 * by mlx_value_and_grad, Adam update of every parameter, all in one closure)
 * run uncompiled and through mlx_compile; and the time mlx_vjp takes to
 * build the backward graph of a 1000-op function (no evaluation).
 *
 * The model is examples/train_mlp.c's at benchmark size:
 *   x (B x 64) -> linear 512 -> gelu -> layer_norm -> linear 512 -> gelu
 *   -> layer_norm -> linear 16, MSE loss, Adam (lr 1e-3)
 * gelu is written with ops (0.5 x (1 + erf(x / sqrt 2))), layer_norm is
 * mlx_fast_layer_norm with weight and bias. B = 4096 (--quick: 256, hidden
 * 64). GFLOPs counts the matrix products only: 3x the forward's 2*B*(sum of
 * in*out) (forward, the gradients of activations and of weights; x's
 * gradient, not needed, is counted too: 2*B*64*H, small). step_matmuls_only
 * times the step's matrix products alone (same shapes and transposes), the
 * floor that fusing the elementwise work cannot go below.
 * Usage: bench_train [--quick]
 * Environment: LACE_BENCH_BATCH, LACE_BENCH_HIDDEN override B and 512;
 * LACE_BENCH_CASE=eager|compiled|matmuls|vjp runs only that case (for
 * profiling; the copy is skipped too);
 * bench_common.h's LACE_BENCH_MIN_TIME and LACE_BENCH_COPY_MB. */
#include <math.h>

#include "bench_common.h"

enum { D_IN = 64, D_OUT = 16 };
enum { W1, B1, G1, BE1, W2, B2, G2, BE2, W3, B3, NPARAM };
#define NSTATE (3 * NPARAM) /* params, Adam's m, Adam's v */

static mlx_stream S;

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static mlx_array rand_arr(const int *shape, int nd, float scale) {
  size_t n = 1;
  for (int i = 0; i < nd; i++) n *= (size_t)shape[i];
  float *p = malloc(sizeof(float) * n);
  for (size_t i = 0; p && i < n; i++) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    p[i] = scale * (float)((double)(rng >> 11) / 4503599627370496.0 - 1.0);
  }
  mlx_array a = mlx_array_new_data(p, shape, nd, MLX_FLOAT32);
  free(p);
  mlx_array_eval(a);
  return a;
}

static void free_n(mlx_array *a, int n) {
  for (int i = 0; i < n; i++) mlx_array_free(a[i]);
}
static void new_n(mlx_array *a, int n) {
  for (int i = 0; i < n; i++) a[i] = mlx_array_new();
}
static int get_n(mlx_array *a, const mlx_vector_array v, size_t first, int n) {
  for (int i = 0; i < n; i++)
    if (mlx_vector_array_get(&a[i], v, first + (size_t)i)) return 1;
  return 0;
}

/* ---- the model (as in examples/train_mlp.c) ---- */

static int linear(mlx_array *r, const mlx_array x, const mlx_array w, const mlx_array b) {
  return mlx_matmul(r, x, w, S) || mlx_add(r, *r, b, S);
}

static int gelu(mlx_array *r, const mlx_array x) {
  mlx_array h = mlx_array_new_float(0.5f), one = mlx_array_new_float(1.0f),
            k = mlx_array_new_float((float)M_SQRT1_2), t = mlx_array_new();
  int rc = mlx_multiply(&t, x, k, S) || mlx_erf(&t, t, S) || mlx_add(&t, t, one, S) ||
           mlx_multiply(&t, t, x, S) || mlx_multiply(r, t, h, S);
  mlx_array_free(h), mlx_array_free(one), mlx_array_free(k), mlx_array_free(t);
  return rc;
}

/* (params..., x, y) -> mean((mlp(x) - y)^2) */
static int mse_loss(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array p[NPARAM], x = mlx_array_new(), y = mlx_array_new(), h = mlx_array_new();
  new_n(p, NPARAM);
  int rc = get_n(p, in, 0, NPARAM) || mlx_vector_array_get(&x, in, NPARAM) ||
           mlx_vector_array_get(&y, in, NPARAM + 1) || linear(&h, x, p[W1], p[B1]) ||
           gelu(&h, h) || mlx_fast_layer_norm(&h, h, p[G1], p[BE1], 1e-5f, S) ||
           linear(&h, h, p[W2], p[B2]) || gelu(&h, h) ||
           mlx_fast_layer_norm(&h, h, p[G2], p[BE2], 1e-5f, S) || linear(&h, h, p[W3], p[B3]) ||
           mlx_subtract(&h, h, y, S) || mlx_square(&h, h, S) || mlx_mean(&h, h, false, S) ||
           mlx_vector_array_append_value(*res, h);
  free_n(p, NPARAM);
  mlx_array_free(x), mlx_array_free(y), mlx_array_free(h);
  return rc;
}

/* (params, m, v, t, x, y) -> (loss, params', m', v'): value_and_grad, then
 * Adam with bias correction 1 - beta^t (t an input, so the graph is fixed). */
static int train_step(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  mlx_closure_value_and_grad *vg = payload;
  mlx_array s[NSTATE], g[NPARAM], o[NSTATE], t = mlx_array_new(), x = mlx_array_new(),
                                              y = mlx_array_new(), loss = mlx_array_new();
  mlx_array b1 = mlx_array_new_float(0.9f), b2 = mlx_array_new_float(0.999f),
            c1 = mlx_array_new(), c2 = mlx_array_new(), one = mlx_array_new_float(1.0f),
            k1 = mlx_array_new_float(0.1f), k2 = mlx_array_new_float(0.001f),
            lr = mlx_array_new_float(1e-3f), eps = mlx_array_new_float(1e-8f),
            u = mlx_array_new(), w = mlx_array_new();
  mlx_vector_array lin = mlx_vector_array_new(), vals = mlx_vector_array_new(),
                   grads = mlx_vector_array_new();
  new_n(s, NSTATE), new_n(g, NPARAM), new_n(o, NSTATE);
  int rc = get_n(s, in, 0, NSTATE) || mlx_vector_array_get(&t, in, NSTATE) ||
           mlx_vector_array_get(&x, in, NSTATE + 1) || mlx_vector_array_get(&y, in, NSTATE + 2) ||
           mlx_vector_array_append_data(lin, s, NPARAM) ||
           mlx_vector_array_append_value(lin, x) || mlx_vector_array_append_value(lin, y) ||
           mlx_closure_value_and_grad_apply(&vals, &grads, *vg, lin) ||
           mlx_vector_array_get(&loss, vals, 0) || get_n(g, grads, 0, NPARAM) ||
           mlx_power(&c1, b1, t, S) || mlx_subtract(&c1, one, c1, S) ||
           mlx_power(&c2, b2, t, S) || mlx_subtract(&c2, one, c2, S);
  for (int i = 0; i < NPARAM && !rc; i++) {
    mlx_array *p2 = &o[i], *m2 = &o[NPARAM + i], *v2 = &o[2 * NPARAM + i];
    rc = mlx_multiply(&u, s[NPARAM + i], b1, S) || mlx_multiply(&w, g[i], k1, S) ||
         mlx_add(m2, u, w, S) || mlx_multiply(&u, s[2 * NPARAM + i], b2, S) ||
         mlx_square(&w, g[i], S) || mlx_multiply(&w, w, k2, S) || mlx_add(v2, u, w, S) ||
         mlx_divide(&u, *v2, c2, S) || mlx_sqrt(&u, u, S) || mlx_add(&u, u, eps, S) ||
         mlx_divide(&w, *m2, c1, S) || mlx_divide(&w, w, u, S) || mlx_multiply(&w, w, lr, S) ||
         mlx_subtract(p2, s[i], w, S);
  }
  rc = rc || mlx_vector_array_append_value(*res, loss) ||
       mlx_vector_array_append_data(*res, o, NSTATE);
  free_n(s, NSTATE), free_n(g, NPARAM), free_n(o, NSTATE);
  mlx_array_free(t), mlx_array_free(x), mlx_array_free(y), mlx_array_free(loss);
  mlx_array_free(b1), mlx_array_free(b2), mlx_array_free(c1), mlx_array_free(c2);
  mlx_array_free(one), mlx_array_free(k1), mlx_array_free(k2), mlx_array_free(lr);
  mlx_array_free(eps), mlx_array_free(u), mlx_array_free(w);
  mlx_vector_array_free(lin), mlx_vector_array_free(vals), mlx_vector_array_free(grads);
  return rc;
}

/* The step's inputs: initial params (weights uniform, variance 1/fan_in;
 * biases 0; layer-norm weights 1), zero moments, t = 1, random x and y. */
static mlx_vector_array step_inputs(int batch, int hidden) {
  const int rows[NPARAM] = {D_IN, hidden, hidden, hidden, hidden,
                            hidden, hidden, hidden, hidden, D_OUT};
  const int cols[NPARAM] = {hidden, 0, 0, 0, hidden, 0, 0, 0, D_OUT, 0};
  mlx_array a[NSTATE + 3];
  for (int i = 0; i < NPARAM; i++) {
    int sh[2] = {rows[i], cols[i]};
    mlx_array fill = mlx_array_new_float(i == G1 || i == G2 ? 1.0f : 0.0f);
    a[i] = cols[i] ? rand_arr(sh, 2, sqrtf(3.0f / (float)rows[i])) : mlx_array_new();
    if (!cols[i]) mlx_full(&a[i], sh, 1, fill, MLX_FLOAT32, S);
    mlx_array_free(fill);
    a[NPARAM + i] = mlx_array_new(), a[2 * NPARAM + i] = mlx_array_new();
    mlx_zeros_like(&a[NPARAM + i], a[i], S);
    mlx_zeros_like(&a[2 * NPARAM + i], a[i], S);
  }
  int xs[2] = {batch, D_IN}, ys[2] = {batch, D_OUT};
  a[NSTATE] = mlx_array_new_float(1.0f);
  a[NSTATE + 1] = rand_arr(xs, 2, 2.0f);
  a[NSTATE + 2] = rand_arr(ys, 2, 1.0f);
  mlx_vector_array v = mlx_vector_array_new_data(a, NSTATE + 3);
  mlx_eval(v);
  free_n(a, NSTATE + 3);
  return v;
}

typedef struct {
  mlx_closure f;
  mlx_vector_array in;
  float loss; /* of the last run */
} call_ctx;

static int step_run(void *arg) {
  call_ctx *c = arg;
  mlx_vector_array out = mlx_vector_array_new();
  mlx_array l = mlx_array_new();
  int rc = mlx_closure_apply(&out, c->f, c->in) || mlx_eval(out) ||
           mlx_vector_array_get(&l, out, 0) || mlx_array_item_float32(&c->loss, l);
  mlx_array_free(l);
  mlx_vector_array_free(out);
  return rc;
}

/* The step's matrix products alone, same shapes and transposes: forward
 * x W1, h W2, h W3; backward dh3 W3^T, dh2 W2^T (x's gradient is not
 * needed) and the weight gradients x^T dh1, h1^T dh2, h2^T dh3. The
 * inputs are the step's inputs and random (B x hidden) activations. */
typedef struct {
  mlx_array x, h, dh, dout, w1, w2, w3;
} mm_ctx;

static int matmuls_run(void *arg) {
  mm_ctx *c = arg;
  mlx_array r[8], t = mlx_array_new();
  new_n(r, 8);
  int rc = mlx_matmul(&r[0], c->x, c->w1, S) || mlx_matmul(&r[1], c->h, c->w2, S) ||
           mlx_matmul(&r[2], c->h, c->w3, S) || mlx_transpose(&t, c->w3, S) ||
           mlx_matmul(&r[3], c->dout, t, S) || mlx_transpose(&t, c->w2, S) ||
           mlx_matmul(&r[4], c->dh, t, S) || mlx_transpose(&t, c->x, S) ||
           mlx_matmul(&r[5], t, c->dh, S) || mlx_transpose(&t, c->h, S) ||
           mlx_matmul(&r[6], t, c->dh, S) || mlx_matmul(&r[7], t, c->dout, S);
  mlx_vector_array v = mlx_vector_array_new_data(r, 8);
  rc = rc || mlx_eval(v);
  mlx_vector_array_free(v);
  free_n(r, 8);
  mlx_array_free(t);
  return rc;
}

/* ---- backward graph construction of a 1000-op chain ---- */

/* 250 x (multiply by k, add y, tanh, subtract x): 1000 elementwise ops */
static int chain1000(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), y = mlx_array_new(), t = mlx_array_new(),
            k = mlx_array_new_float(1.0001f);
  int rc = mlx_vector_array_get(&x, in, 0) || mlx_vector_array_get(&y, in, 1) ||
           mlx_array_set(&t, x);
  for (int i = 0; i < 250 && !rc; i++)
    rc = mlx_multiply(&t, t, k, S) || mlx_add(&t, t, y, S) || mlx_tanh(&t, t, S) ||
         mlx_subtract(&t, t, x, S);
  rc = rc || mlx_vector_array_append_value(*res, t);
  mlx_array_free(x), mlx_array_free(y), mlx_array_free(t), mlx_array_free(k);
  return rc;
}

typedef struct {
  mlx_closure f;
  mlx_vector_array primals, cot;
  int backward; /* 1: mlx_vjp; 0: the forward graph only (closure apply) */
} vjp_ctx;

static int vjp_build(void *arg) {
  vjp_ctx *c = arg;
  mlx_vector_array outs = mlx_vector_array_new(), grads = mlx_vector_array_new();
  int rc = c->backward ? mlx_vjp(&outs, &grads, c->f, c->primals, c->cot)
                       : mlx_closure_apply(&outs, c->f, c->primals);
  mlx_vector_array_free(outs), mlx_vector_array_free(grads);
  return rc;
}

/* Whether case `name` runs (LACE_BENCH_CASE unset: all of them). */
static int wanted(const char *name) {
  const char *only = getenv("LACE_BENCH_CASE");
  return !only || !*only || strcmp(only, name) == 0;
}

static double env_int(const char *name, int dflt) {
  const char *s = getenv(name);
  return s && atoi(s) > 0 ? atoi(s) : dflt;
}

int main(int argc, char **argv) {
  setenv("LACE_JIT_SYNC", "1", 0); /* native kernels are built by the warm-up call */
  bench_init();
  S = mlx_default_cpu_stream_new();
  int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  int batch = (int)env_int("LACE_BENCH_BATCH", quick ? 256 : 4096);
  int hidden = (int)env_int("LACE_BENCH_HIDDEN", quick ? 64 : 512);
  printf("# bench_train: %d threads, MLP %d -> %d -> %d -> %d, batch %d, float32\n",
         bench_threads(), D_IN, hidden, hidden, D_OUT, batch);
  /* the machine's memory bandwidth, for reference */
  if (wanted("copy")) bench_copy_bandwidth(bench_threads(), 0);

  /* the training step, eager and compiled, on the same inputs */
  {
    mlx_closure loss = mlx_closure_new_func(mse_loss), cstep = mlx_closure_new();
    mlx_closure_value_and_grad vg = mlx_closure_value_and_grad_new();
    int argnums[NPARAM];
    for (int i = 0; i < NPARAM; i++) argnums[i] = i;
    mlx_value_and_grad(&vg, loss, argnums, NPARAM);
    mlx_closure step = mlx_closure_new_func_payload(train_step, &vg, NULL);
    mlx_compile(&cstep, step, false);
    call_ctx u = {step, step_inputs(batch, hidden), 0}, c = {cstep, u.in, 0};
    bench_stats none = {1, 1, 0, 1}; /* a case not run */
    bench_stats su = wanted("eager") ? bench_time(step_run, &u) : none;
    bench_stats sc = wanted("compiled") ? bench_time(step_run, &c) : none;
    double flops = 3.0 * 2.0 * batch * ((double)D_IN * hidden + (double)hidden * hidden +
                                        (double)hidden * D_OUT);
    int shape[2] = {batch, hidden};
    char note[96];
    if (wanted("eager"))
      bench_report("train/mlp_step_eager", shape, 2, "float32", su, 0, flops, 0, "");
    snprintf(note, sizeof note, "speedup_%.2fx", su.best / sc.best);
    if (!su.failed && !sc.failed && fabsf(u.loss - c.loss) > 1e-4f * fabsf(u.loss))
      snprintf(note, sizeof note, "WRONG-RESULT(loss_%g_vs_%g)", (double)c.loss, (double)u.loss);
    if (wanted("compiled"))
      bench_report("train/mlp_step_compiled", shape, 2, "float32", sc, 0, flops, 0, note);
    /* the matrix products alone: the part compile cannot speed up */
    int hs[2] = {batch, hidden}, os[2] = {batch, D_OUT};
    mm_ctx mm = {mlx_array_new(), rand_arr(hs, 2, 1.0f), rand_arr(hs, 2, 1.0f),
                 rand_arr(os, 2, 1.0f), mlx_array_new(), mlx_array_new(), mlx_array_new()};
    mlx_vector_array_get(&mm.x, u.in, NSTATE + 1);
    mlx_vector_array_get(&mm.w1, u.in, W1);
    mlx_vector_array_get(&mm.w2, u.in, W2);
    mlx_vector_array_get(&mm.w3, u.in, W3);
    bench_stats sm = wanted("matmuls") ? bench_time(matmuls_run, &mm) : none;
    snprintf(note, sizeof note, "frac_of_compiled_%.2f", sm.best / sc.best);
    if (wanted("matmuls"))
      bench_report("train/step_matmuls_only", shape, 2, "float32", sm, 0, flops, 0, note);
    mlx_array_free(mm.x), mlx_array_free(mm.h), mlx_array_free(mm.dh), mlx_array_free(mm.dout);
    mlx_array_free(mm.w1), mlx_array_free(mm.w2), mlx_array_free(mm.w3);
    mlx_vector_array_free(u.in);
    mlx_closure_free(cstep), mlx_closure_free(step), mlx_closure_free(loss);
    mlx_closure_value_and_grad_free(vg);
  }

  /* building the backward graph of a 1000-op function: mlx_vjp without
   * evaluation (it traces the forward, then builds the cotangents), and the
   * forward graph alone for reference */
  if (wanted("vjp")) {
    int sh[1] = {16};
    mlx_array p[2] = {rand_arr(sh, 1, 1.0f), rand_arr(sh, 1, 1.0f)}, ct = rand_arr(sh, 1, 1.0f);
    vjp_ctx c = {mlx_closure_new_func(chain1000), mlx_vector_array_new_data(p, 2),
                 mlx_vector_array_new_value(ct), 1};
    bench_stats sb = bench_time(vjp_build, &c);
    c.backward = 0;
    bench_stats sf = bench_time(vjp_build, &c);
    if (sb.failed || sf.failed)
      printf("BENCH %-24s nodes=1000 skipped=%s\n", "train/vjp_build_1000",
             bench_not_implemented() ? "not-implemented" : "error");
    else {
      printf("BENCH %-24s nodes=1000 best_ms=%.4f median_ms=%.4f target_ms=1\n",
             "train/vjp_build_1000", sb.best * 1e3, sb.median * 1e3);
      printf("BENCH %-24s nodes=1000 best_ms=%.4f median_ms=%.4f\n", "train/forward_build_1000",
             sf.best * 1e3, sf.median * 1e3);
    }
    if (sb.failed || sf.failed) fprintf(stderr, "  vjp_build_1000: %s\n", bench_last_error);
    mlx_vector_array_free(c.primals), mlx_vector_array_free(c.cot);
    mlx_closure_free(c.f);
    free_n(p, 2);
    mlx_array_free(ct);
  }
  mlx_stream_free(S);
  return 0;
}
