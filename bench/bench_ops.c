/* Throughput of single operations through the public API, each timed as
 * "build the lazy op, then eval": elementwise (add, multiply, exp, tanh),
 * reductions (sum over the last and the first axis, max), and square float32
 * matmul next to a direct cblas_sgemm call. Memory-bound cases report their
 * bandwidth as a fraction of the bandwidth of a copy between two arrays of
 * the operand's size (copy_frac); the memory bandwidth proper is measured
 * with larger buffers first.
 * Usage: bench_ops [--quick]   (--quick: smaller sizes, for smoke tests) */
#include <cblas.h>
#include <math.h>

#include "bench_common.h"

enum op_kind { OP_ADD, OP_MUL, OP_EXP, OP_TANH, OP_SUM_LAST, OP_SUM_FIRST, OP_MAX, OP_MATMUL };

typedef struct {
  enum op_kind kind;
  mlx_array a, b, out;
  mlx_stream s;
} op_ctx;

static int op_run(void *arg) {
  op_ctx *c = arg;
  int rc = 1;
  switch (c->kind) {
  case OP_ADD: rc = mlx_add(&c->out, c->a, c->b, c->s); break;
  case OP_MUL: rc = mlx_multiply(&c->out, c->a, c->b, c->s); break;
  case OP_EXP: rc = mlx_exp(&c->out, c->a, c->s); break;
  case OP_TANH: rc = mlx_tanh(&c->out, c->a, c->s); break;
  case OP_SUM_LAST: rc = mlx_sum_axis(&c->out, c->a, -1, false, c->s); break;
  case OP_SUM_FIRST: rc = mlx_sum_axis(&c->out, c->a, 0, false, c->s); break;
  case OP_MAX: rc = mlx_max(&c->out, c->a, false, c->s); break;
  case OP_MATMUL: rc = mlx_matmul(&c->out, c->a, c->b, c->s); break;
  }
  return rc ? rc : mlx_array_eval(c->out);
}

static uint64_t rng = 0x2545f4914f6cdd1dULL;
static float rand_unit(void) { /* uniform in [-1, 1) */
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (float)((double)(rng >> 11) / 4503599627370496.0 - 1.0);
}

static float *rand_buffer(size_t n) {
  float *p = malloc(sizeof(float) * n);
  if (p)
    for (size_t i = 0; i < n; i++) p[i] = rand_unit();
  return p;
}

/* An evaluated float32 array of random values; also returns its host data
 * in *host when host != NULL (caller frees). */
static mlx_array rand_array(const int *shape, int ndim, float **host) {
  size_t n = 1;
  for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
  float *p = rand_buffer(n);
  mlx_array a = p ? mlx_array_new_data(p, shape, ndim, MLX_FLOAT32) : mlx_array_new();
  if (a.ctx) mlx_array_eval(a);
  if (host)
    *host = p;
  else
    free(p);
  return a;
}

struct op_case {
  const char *name;
  enum op_kind kind;
  int inputs;         /* 1 or 2 */
  double bytes_per_el; /* memory traffic per input element, float32 */
};

static void bench_op(const struct op_case *oc, const int *shape, int ndim, double copy_bw,
                     mlx_stream s) {
  op_ctx c = {oc->kind, rand_array(shape, ndim, NULL), mlx_array_new(), mlx_array_new(), s};
  if (oc->inputs == 2) c.b = rand_array(shape, ndim, NULL);
  size_t n = 1;
  for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
  bench_stats st = bench_time(op_run, &c);
  char name[64];
  snprintf(name, sizeof name, "ops/%s", oc->name);
  double bytes = copy_bw > 0 ? oc->bytes_per_el * (double)n : 0;
  bench_report(name, shape, ndim, "float32", st, bytes, 0, copy_bw, "");
  mlx_array_free(c.a);
  mlx_array_free(c.b);
  mlx_array_free(c.out);
}

typedef struct {
  int n;
  const float *a, *b;
  float *c;
} sgemm_ctx;

static int sgemm_run(void *arg) {
  sgemm_ctx *g = arg;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->n, g->n, g->n, 1.0f, g->a, g->n,
              g->b, g->n, 0.0f, g->c, g->n);
  return 0;
}

/* lace's matmul and a direct sgemm on the same inputs; checks that the two
 * agree, so that a wrong result is never reported as fast. */
static void bench_matmul(int n, mlx_stream s) {
  int shape[2] = {n, n};
  float *ha = NULL, *hb = NULL;
  op_ctx c = {OP_MATMUL, rand_array(shape, 2, &ha), rand_array(shape, 2, &hb), mlx_array_new(), s};
  float *hc = malloc(sizeof(float) * (size_t)n * (size_t)n);
  double flops = 2.0 * n * (double)n * n;
  bench_stats st = bench_time(op_run, &c);
  const char *note = "";
  if (!st.failed && hc) {
    sgemm_ctx g = {n, ha, hb, hc};
    sgemm_run(&g);
    const float *got = mlx_array_data_float32(c.out);
    double maxdiff = got ? 0 : INFINITY, maxref = 0;
    for (size_t i = 0; got && i < (size_t)n * (size_t)n; i++) {
      maxdiff = fmax(maxdiff, fabs((double)got[i] - hc[i]));
      maxref = fmax(maxref, fabs((double)hc[i]));
    }
    if (!(maxdiff <= 1e-4 * maxref)) note = "WRONG-RESULT";
  }
  bench_report("ops/matmul", shape, 2, "float32", st, 0, flops, 0, note);
  if (hc && ha && hb) {
    sgemm_ctx g = {n, ha, hb, hc};
    bench_report("ops/cblas_sgemm", shape, 2, "float32", bench_time(sgemm_run, &g), 0, flops, 0,
                 "direct");
  }
  free(ha);
  free(hb);
  free(hc);
  mlx_array_free(c.a);
  mlx_array_free(c.b);
  mlx_array_free(c.out);
}

int main(int argc, char **argv) {
  int quick = argc > 1 && !strcmp(argv[1], "--quick");
  if (quick) setenv("LACE_BENCH_COPY_MB", "64", 0); /* unless set */
  bench_init();
  mlx_stream s = mlx_default_cpu_stream_new();
  int nthreads = bench_threads();
  printf("# bench_ops: lace %s, %d threads (LACE_NUM_THREADS)\n", LACE_VERSION_STRING, nthreads);
  int big[2] = {4096, 4096}, small[1] = {256};
  if (quick) big[0] = big[1] = 512;
  /* Memory bandwidth (buffers larger than the caches), then a copy of one
   * operand's size: the reference for copy_frac, so that an op over arrays
   * that stay in a large L3 is compared with a copy that does too. */
  bench_copy_bandwidth(nthreads, 0);
  double copy_bw = bench_copy_bandwidth(nthreads, (size_t)big[0] * (size_t)big[1] * sizeof(float));

  static const struct op_case cases[] = {
      {"add", OP_ADD, 2, 12},        {"multiply", OP_MUL, 2, 12}, {"exp", OP_EXP, 1, 8},
      {"tanh", OP_TANH, 1, 8},       {"sum_last", OP_SUM_LAST, 1, 4},
      {"sum_first", OP_SUM_FIRST, 1, 4}, {"max", OP_MAX, 1, 4},
  };
  /* per-op overhead: a tiny add is all dispatch and graph bookkeeping
   * (its bandwidth, computed from cache, is not reported) */
  bench_op(&cases[0], small, 1, 0, s);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) bench_op(&cases[i], big, 2, copy_bw, s);
  int sizes[] = {256, 512, 1024, 2048};
  for (size_t i = 0; i < (quick ? 2 : sizeof sizes / sizeof sizes[0]); i++) bench_matmul(sizes[i], s);
  mlx_stream_free(s);
  return 0;
}
