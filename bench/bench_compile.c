/* mlx_compile on the CPU: compiled vs uncompiled lace on memory-bound
 * elementwise chains and normalisations (16M float32 by default), as a
 * fraction of the copy bandwidth measured in the same run; the overhead of
 * a cache-hit call; and the time to trace, simplify and fuse a 200-node
 * graph.
 * Usage: bench_compile [--quick]   (--quick: 1M elements, for smoke tests)
 * Environment: LACE_BENCH_CASE=name runs only that case (and the copy);
 * LACE_BENCH_ROWS sets the rows (of 4096 columns). */
#include <math.h>

#include "bench_common.h"

static mlx_stream S;

static int getv(mlx_array *r, mlx_vector_array in, size_t i) { return mlx_vector_array_get(r, in, i); }

static int ret1(mlx_vector_array *res, mlx_array v) {
  int rc = mlx_vector_array_append_value(*res, v);
  mlx_array_free(v);
  return rc;
}

#define TRY(x) \
  do {         \
    if (x) goto fail; \
  } while (0)

/* gelu(x) = 0.5 * x * (1 + erf(x / sqrt(2))) */
static int f_gelu(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = mlx_array_new(), t = mlx_array_new(), h = mlx_array_new_float(0.5f),
            one = mlx_array_new_float(1.0f), r2 = mlx_array_new_float((float)M_SQRT1_2);
  int rc = 1;
  TRY(getv(&x, in, 0));
  TRY(mlx_multiply(&t, x, r2, S));
  TRY(mlx_erf(&t, t, S));
  TRY(mlx_add(&t, t, one, S));
  TRY(mlx_multiply(&t, t, x, S));
  TRY(mlx_multiply(&t, t, h, S));
  rc = ret1(res, t);
  t = mlx_array_new();
fail:
  mlx_array_free(x), mlx_array_free(t), mlx_array_free(h), mlx_array_free(one), mlx_array_free(r2);
  return rc;
}

/* silu(x) * y = x * sigmoid(x) * y */
static int f_silu_mul(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = mlx_array_new(), y = mlx_array_new(), t = mlx_array_new();
  int rc = 1;
  TRY(getv(&x, in, 0));
  TRY(getv(&y, in, 1));
  TRY(mlx_sigmoid(&t, x, S));
  TRY(mlx_multiply(&t, t, x, S));
  TRY(mlx_multiply(&t, t, y, S));
  rc = ret1(res, t);
  t = mlx_array_new();
fail:
  mlx_array_free(x), mlx_array_free(y), mlx_array_free(t);
  return rc;
}

/* rope-like: x * cos + y * sin, tables broadcast over rows, then scaled */
static int f_rope(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = mlx_array_new(), y = mlx_array_new(), c = mlx_array_new(), s = mlx_array_new(),
            a = mlx_array_new(), b = mlx_array_new(), k = mlx_array_new_float(0.125f);
  int rc = 1;
  TRY(getv(&x, in, 0));
  TRY(getv(&y, in, 1));
  TRY(getv(&c, in, 2));
  TRY(getv(&s, in, 3));
  TRY(mlx_multiply(&a, x, c, S));
  TRY(mlx_multiply(&b, y, s, S));
  TRY(mlx_subtract(&a, a, b, S));
  TRY(mlx_multiply(&a, a, k, S));
  rc = ret1(res, a);
  a = mlx_array_new();
fail:
  mlx_array_free(x), mlx_array_free(y), mlx_array_free(c), mlx_array_free(s);
  mlx_array_free(a), mlx_array_free(b), mlx_array_free(k);
  return rc;
}

/* layer_norm over the last axis: (x - mean) * rsqrt(var + eps) * w + b */
static int f_layer_norm(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = mlx_array_new(), w = mlx_array_new(), b = mlx_array_new(), m = mlx_array_new(),
            d = mlx_array_new(), v = mlx_array_new(), eps = mlx_array_new_float(1e-5f);
  int rc = 1;
  TRY(getv(&x, in, 0));
  TRY(getv(&w, in, 1));
  TRY(getv(&b, in, 2));
  TRY(mlx_mean_axis(&m, x, -1, true, S));
  TRY(mlx_subtract(&d, x, m, S));
  TRY(mlx_square(&v, d, S));
  TRY(mlx_mean_axis(&v, v, -1, true, S));
  TRY(mlx_add(&v, v, eps, S));
  TRY(mlx_rsqrt(&v, v, S));
  TRY(mlx_multiply(&d, d, v, S));
  TRY(mlx_multiply(&d, d, w, S));
  TRY(mlx_add(&d, d, b, S));
  rc = ret1(res, d);
  d = mlx_array_new();
fail:
  mlx_array_free(x), mlx_array_free(w), mlx_array_free(b), mlx_array_free(m);
  mlx_array_free(d), mlx_array_free(v), mlx_array_free(eps);
  return rc;
}

/* m = max(x), e = exp(x - m), s = sum(e), over the last axis (kept) */
static int shifted_exp_sum(mlx_array x, mlx_array *m, mlx_array *e, mlx_array *s) {
  int rc = 1;
  TRY(mlx_max_axis(m, x, -1, true, S));
  TRY(mlx_subtract(e, x, *m, S));
  TRY(mlx_exp(e, *e, S));
  TRY(mlx_sum_axis(s, *e, -1, true, S));
  rc = 0;
fail:
  return rc;
}

/* softmax over the last axis: exp(x - max) / sum(exp(x - max)) */
static int f_softmax(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = mlx_array_new(), m = mlx_array_new(), e = mlx_array_new(), s = mlx_array_new();
  int rc = 1;
  TRY(getv(&x, in, 0));
  TRY(shifted_exp_sum(x, &m, &e, &s));
  TRY(mlx_divide(&e, e, s, S));
  rc = ret1(res, e);
  e = mlx_array_new();
fail:
  mlx_array_free(x), mlx_array_free(m), mlx_array_free(e), mlx_array_free(s);
  return rc;
}

/* rms_norm over the last axis: x * rsqrt(mean(x * x) + eps) * w */
static int f_rms_norm(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = mlx_array_new(), w = mlx_array_new(), v = mlx_array_new(), d = mlx_array_new(),
            eps = mlx_array_new_float(1e-5f);
  int rc = 1;
  TRY(getv(&x, in, 0));
  TRY(getv(&w, in, 1));
  TRY(mlx_square(&v, x, S));
  TRY(mlx_mean_axis(&v, v, -1, true, S));
  TRY(mlx_add(&v, v, eps, S));
  TRY(mlx_rsqrt(&v, v, S));
  TRY(mlx_multiply(&d, x, v, S));
  TRY(mlx_multiply(&d, d, w, S));
  rc = ret1(res, d);
  d = mlx_array_new();
fail:
  mlx_array_free(x), mlx_array_free(w), mlx_array_free(v), mlx_array_free(d);
  mlx_array_free(eps);
  return rc;
}

/* logsumexp over the last axis: log(sum(exp(x - max))) + max */
static int f_logsumexp(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = mlx_array_new(), m = mlx_array_new(), e = mlx_array_new(), s = mlx_array_new();
  int rc = 1;
  TRY(getv(&x, in, 0));
  TRY(shifted_exp_sum(x, &m, &e, &s));
  TRY(mlx_log(&s, s, S));
  TRY(mlx_add(&s, s, m, S));
  rc = ret1(res, s);
  s = mlx_array_new();
fail:
  mlx_array_free(x), mlx_array_free(m), mlx_array_free(e), mlx_array_free(s);
  return rc;
}

/* a chain of 200 elementwise ops (for trace time) */
static int f_chain200(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = mlx_array_new(), y = mlx_array_new(), t = mlx_array_new(),
            k = mlx_array_new_float(1.0001f);
  int rc = 1;
  TRY(getv(&x, in, 0));
  TRY(getv(&y, in, 1));
  TRY(mlx_array_set(&t, x));
  for (int i = 0; i < 50; i++) {
    TRY(mlx_multiply(&t, t, k, S));
    TRY(mlx_add(&t, t, y, S));
    TRY(mlx_tanh(&t, t, S));
    TRY(mlx_subtract(&t, t, x, S));
  }
  rc = ret1(res, t);
  t = mlx_array_new();
fail:
  mlx_array_free(x), mlx_array_free(y), mlx_array_free(t), mlx_array_free(k);
  return rc;
}

typedef struct {
  mlx_closure f;
  mlx_vector_array in;
  int eval;
} call_ctx;

static int call_run(void *arg) {
  call_ctx *c = arg;
  mlx_vector_array out = mlx_vector_array_new();
  int rc = mlx_closure_apply(&out, c->f, c->in);
  if (!rc && c->eval) rc = mlx_eval(out);
  mlx_vector_array_free(out);
  return rc;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static mlx_array rand_arr(const int *shape, int nd) {
  size_t n = 1;
  for (int i = 0; i < nd; i++) n *= (size_t)shape[i];
  float *p = malloc(sizeof(float) * n);
  for (size_t i = 0; i < n; i++) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    p[i] = (float)((double)(rng >> 11) / 4503599627370496.0 * 4.0 - 2.0);
  }
  mlx_array a = mlx_array_new_data(p, shape, nd, MLX_FLOAT32);
  free(p);
  mlx_array_eval(a);
  return a;
}

/* Times fun uncompiled and compiled over the inputs; reports both and the
 * speedup. bytes: minimal memory traffic of one call. */
static void compare_case(const char *name, int (*fun)(mlx_vector_array *, const mlx_vector_array,
                                                      void *),
                         mlx_array *in, int nin, const int *shape, int nd, double bytes,
                         double copy_bw) {
  const char *only = getenv("LACE_BENCH_CASE"); /* run just this case */
  if (only && strcmp(only, name) != 0) return;
  mlx_closure f = mlx_closure_new_func_payload(fun, NULL, NULL), cf = mlx_closure_new();
  mlx_compile(&cf, f, false);
  call_ctx u = {f, mlx_vector_array_new_data(in, (size_t)nin), 1};
  call_ctx c = {cf, u.in, 1};
  bench_stats su = bench_time(call_run, &u);
  bench_stats sc = bench_time(call_run, &c);
  char n1[64], n2[64], note[64];
  snprintf(n1, sizeof n1, "compile/%s_eager", name);
  snprintf(n2, sizeof n2, "compile/%s_compiled", name);
  bench_report(n1, shape, nd, "float32", su, bytes, 0, copy_bw, "");
  snprintf(note, sizeof note, "speedup_%.2fx", su.best / sc.best);
  bench_report(n2, shape, nd, "float32", sc, bytes, 0, copy_bw, note);
  mlx_vector_array_free(u.in);
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

static int trace_run(void *arg) {
  call_ctx *c = arg;
  mlx_detail_compile_clear_cache();
  return call_run(c);
}

int main(int argc, char **argv) {
  /* steady state: native kernels are built by the warm-up call itself */
  setenv("LACE_JIT_SYNC", "1", 0);
  bench_init();
  S = mlx_default_cpu_stream_new();
  int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  const char *er = getenv("LACE_BENCH_ROWS"); /* e.g. 16384: arrays larger than the L3 */
  int rows = er && atoi(er) > 0 ? atoi(er) : quick ? 256 : 4096, cols = 4096;
  int shape[2] = {rows, cols}, row[2] = {1, cols}, vec[1] = {cols};
  double n = (double)rows * cols, fb = 4.0;
  printf("# bench_compile: %d threads, %dx%d float32\n", bench_threads(), rows, cols);
  double copy_bw = bench_copy_bandwidth(bench_threads(), 0);

  mlx_array x = rand_arr(shape, 2), y = rand_arr(shape, 2);
  mlx_array c = rand_arr(row, 2), s = rand_arr(row, 2);
  mlx_array w = rand_arr(vec, 1), b = rand_arr(vec, 1);
  compare_case("gelu", f_gelu, &x, 1, shape, 2, 2 * n * fb, copy_bw);
  mlx_array xy[2] = {x, y};
  compare_case("silu_mul", f_silu_mul, xy, 2, shape, 2, 3 * n * fb, copy_bw);
  mlx_array rope[4] = {x, y, c, s};
  compare_case("rope_chain", f_rope, rope, 4, shape, 2, 3 * n * fb, copy_bw);
  mlx_array ln[3] = {x, w, b};
  compare_case("layer_norm", f_layer_norm, ln, 3, shape, 2, 2 * n * fb, copy_bw);
  compare_case("softmax", f_softmax, &x, 1, shape, 2, 2 * n * fb, copy_bw);
  mlx_array rms[2] = {x, w};
  compare_case("rms_norm", f_rms_norm, rms, 2, shape, 2, 2 * n * fb, copy_bw);
  compare_case("logsumexp", f_logsumexp, &x, 1, shape, 2, n * fb + rows * fb, copy_bw);

  /* cache-hit call overhead: building the lazy outputs, no evaluation */
  {
    int one[1] = {16};
    mlx_array t = rand_arr(one, 1);
    mlx_closure f = mlx_closure_new_func_payload(f_gelu, NULL, NULL), cf = mlx_closure_new();
    mlx_compile(&cf, f, false);
    call_ctx cc = {cf, mlx_vector_array_new_data(&t, 1), 0};
    call_run(&cc);
    bench_stats best = {1e9, 1e9, 0, 0};
    for (int rep = 0; rep < 5; rep++) {
      int iters = 20000;
      double t0 = bench_now();
      for (int i = 0; i < iters; i++) call_run(&cc);
      double per = (bench_now() - t0) / iters;
      if (per < best.best) best.best = per;
    }
    best.median = best.best;
    printf("BENCH %-24s gelu_16 us_per_call=%.3f target_us=2\n", "compile/cache_hit_call",
           best.best * 1e6);
    /* the same closure uncompiled (graph building only), for reference */
    call_ctx uc = {f, cc.in, 0};
    double t0 = bench_now();
    for (int i = 0; i < 20000; i++) call_run(&uc);
    printf("BENCH %-24s gelu_16 us_per_call=%.3f\n", "compile/eager_build_call",
           (bench_now() - t0) / 20000 * 1e6);
    mlx_vector_array_free(cc.in);
    mlx_closure_free(cf);
    mlx_closure_free(f);
    mlx_array_free(t);
  }
  /* trace + simplify + fuse (+ first replay) of a 200-node graph */
  {
    int sh[1] = {64};
    mlx_array t[2] = {rand_arr(sh, 1), rand_arr(sh, 1)};
    mlx_closure f = mlx_closure_new_func_payload(f_chain200, NULL, NULL), cf = mlx_closure_new();
    mlx_compile(&cf, f, false);
    call_ctx cc = {cf, mlx_vector_array_new_data(t, 2), 0};
    bench_stats st = bench_time(trace_run, &cc);
    printf("BENCH %-24s nodes=200 best_ms=%.4f median_ms=%.4f target_ms=1\n",
           "compile/trace_200", st.best * 1e3, st.median * 1e3);
    mlx_vector_array_free(cc.in);
    mlx_closure_free(cf);
    mlx_closure_free(f);
    mlx_array_free(t[0]);
    mlx_array_free(t[1]);
  }
  mlx_array_free(x), mlx_array_free(y), mlx_array_free(c), mlx_array_free(s);
  mlx_array_free(w), mlx_array_free(b);
  mlx_stream_free(S);
  return 0;
}
