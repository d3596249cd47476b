/* GPU benchmarks (CUDA backend): lace on a GPU stream, median wall time
 * of build + mlx_eval (which waits for the GPU), as bytes or FLOP rates.
 * Prints one "gpu-case" line per case for tools/gpu_bench.py, which runs
 * torch on the same shapes in the same job and divides by the device's
 * measured copy bandwidth. Without a GPU it says so and exits 0. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

static mlx_stream gs;

struct ew_case {
  const char *name;
  int kind; /* 0 copy, 1 add, 2 gelu (erf form, uncompiled), 3 row sum, 4 softmax, 5 matmul, 6 mlx_softmax */
  mlx_array x, y;
  mlx_dtype dt;
};

static int run_case(void *arg) {
  struct ew_case *c = arg;
  mlx_array r = mlx_array_new(), t = mlx_array_new(), u = mlx_array_new();
  int rc = 0;
  int last = -1;
  switch (c->kind) {
    case 0: rc = mlx_copy(&r, c->x, gs); break;
    case 1: rc = mlx_add(&r, c->x, c->y, gs); break;
    case 2: {
      /* scalars of x's dtype (a float32 scalar would promote bfloat16 x) */
      mlx_dtype dt = mlx_array_dtype(c->x);
      mlx_array hf = mlx_array_new_float(0.5f), of = mlx_array_new_float(1.0f),
                kf = mlx_array_new_float(0.70710678f), h = mlx_array_new(), o = mlx_array_new(),
                k = mlx_array_new();
      rc = mlx_astype(&h, hf, dt, gs) || mlx_astype(&o, of, dt, gs) || mlx_astype(&k, kf, dt, gs) ||
           mlx_multiply(&t, c->x, k, gs) || mlx_erf(&u, t, gs) || mlx_add(&t, u, o, gs) ||
           mlx_multiply(&u, t, c->x, gs) || mlx_multiply(&r, u, h, gs);
      mlx_array_free(h), mlx_array_free(o), mlx_array_free(k);
      mlx_array_free(hf), mlx_array_free(of), mlx_array_free(kf);
      break;
    }
    case 3: rc = mlx_sum_axis(&r, c->x, last, false, gs); break;
    case 4:
      rc = mlx_max_axis(&t, c->x, last, true, gs) || mlx_subtract(&u, c->x, t, gs) ||
           mlx_exp(&t, u, gs) || mlx_sum_axis(&u, t, last, true, gs) ||
           mlx_divide(&r, t, u, gs);
      break;
    case 5: rc = mlx_matmul(&r, c->x, c->y, gs); break;
    case 6: rc = mlx_softmax_axis(&r, c->x, last, false, gs); break;
    case 7: rc = mlx_sum(&r, c->x, false, gs); break;
    case 8: rc = mlx_sum_axis(&r, c->x, 0, false, gs); break;
  }
  if (!rc) rc = mlx_array_eval(r);
  mlx_array_free(r);
  mlx_array_free(t);
  mlx_array_free(u);
  return rc;
}

/* ---- compiled cases: the same functions as tools/gpu_bench.py's torch
 * and jax versions, written with plain ops and compiled ---- */
#define CT_MAX 32
static mlx_array ct[CT_MAX];
static int nct;
static mlx_array *ct_slot(void) {
  ct[nct] = mlx_array_new();
  return &ct[nct++];
}
#define OP(fn, ...) (fn(ct_slot(), __VA_ARGS__, gs), ct[nct - 1])
static mlx_array K(double v, mlx_array like) {
  mlx_array *p = ct_slot();
  mlx_array_free(*p);
  *p = mlx_array_new_float64(v);
  return OP(mlx_astype, *p, mlx_array_dtype(like));
}
typedef int (*cbody)(const mlx_array *x, mlx_array *o);
static int c_gelu(const mlx_array *x, mlx_array *o) {
  mlx_array e = OP(mlx_erf, OP(mlx_multiply, x[0], K(0.7071067811865476, x[0])));
  o[0] = OP(mlx_multiply, OP(mlx_multiply, x[0], K(0.5, x[0])), OP(mlx_add, e, K(1, x[0])));
  return 1;
}
static int c_silu_mul(const mlx_array *x, mlx_array *o) {
  o[0] = OP(mlx_multiply, OP(mlx_multiply, x[0], OP(mlx_sigmoid, x[0])), x[1]);
  return 1;
}
static int c_rope(const mlx_array *x, mlx_array *o) { /* x, y (rows, 4096); c, s (4096) */
  o[0] = OP(mlx_subtract, OP(mlx_multiply, x[0], x[2]), OP(mlx_multiply, x[1], x[3]));
  o[1] = OP(mlx_add, OP(mlx_multiply, x[0], x[3]), OP(mlx_multiply, x[1], x[2]));
  return 2;
}
static int c_rope1(const mlx_array *x, mlx_array *o) { /* rope's first output alone */
  o[0] = OP(mlx_subtract, OP(mlx_multiply, x[0], x[2]), OP(mlx_multiply, x[1], x[3]));
  return 1;
}
static int c_two_out(const mlx_array *x, mlx_array *o) { /* two outputs, no broadcast */
  o[0] = OP(mlx_multiply, x[0], x[1]);
  o[1] = OP(mlx_add, x[0], x[1]);
  return 2;
}
static int c_layer_norm(const mlx_array *x, mlx_array *o) { /* w, b (4096) */
  mlx_array d = OP(mlx_subtract, x[0], OP(mlx_mean_axis, x[0], -1, true));
  mlx_array r = OP(mlx_rsqrt, OP(mlx_add, OP(mlx_var_axis, x[0], -1, true, 0), K(1e-5, x[0])));
  o[0] = OP(mlx_add, OP(mlx_multiply, OP(mlx_multiply, d, r), x[2]), x[3]);
  return 1;
}
static int c_softmax(const mlx_array *x, mlx_array *o) {
  mlx_array e = OP(mlx_exp, OP(mlx_subtract, x[0], OP(mlx_max_axis, x[0], -1, true)));
  o[0] = OP(mlx_divide, e, OP(mlx_sum_axis, e, -1, true));
  return 1;
}
static int c_rms_norm(const mlx_array *x, mlx_array *o) {
  mlx_array m = OP(mlx_mean_axis, OP(mlx_square, x[0]), -1, true);
  o[0] = OP(mlx_multiply, OP(mlx_multiply, x[0], OP(mlx_rsqrt, OP(mlx_add, m, K(1e-6, x[0])))), x[2]);
  return 1;
}
static int c_logsumexp(const mlx_array *x, mlx_array *o) {
  mlx_array m = OP(mlx_max_axis, x[0], -1, true);
  mlx_array e = OP(mlx_sum_axis, OP(mlx_exp, OP(mlx_subtract, x[0], m)), -1, true);
  o[0] = OP(mlx_add, OP(mlx_log, e), m);
  return 1;
}
static int c_tiny(const mlx_array *x, mlx_array *o) {
  o[0] = OP(mlx_add, OP(mlx_multiply, x[0], x[1]), x[0]);
  return 1;
}
static cbody cur_body;
static int closure_fn(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x[4], o[2];
  size_t n = mlx_vector_array_size(in);
  for (size_t k = 0; k < n && k < 4; k++) {
    x[k] = mlx_array_new();
    mlx_vector_array_get(&x[k], in, k);
  }
  int no = cur_body(x, o);
  mlx_vector_array r = mlx_vector_array_new_data(o, (size_t)no);
  mlx_vector_array_set(res, r);
  mlx_vector_array_free(r);
  while (nct) mlx_array_free(ct[--nct]);
  for (size_t k = 0; k < n && k < 4; k++) mlx_array_free(x[k]);
  return 0;
}
struct ccase {
  mlx_closure f;
  mlx_vector_array in;
  bool eval;
};
static int run_compiled(void *arg) {
  struct ccase *c = arg;
  mlx_vector_array out = mlx_vector_array_new();
  int rc = mlx_closure_apply(&out, c->f, c->in);
  if (!rc && c->eval) rc = mlx_eval(out);
  mlx_vector_array_free(out);
  return rc;
}

static mlx_array rand_on_gpu(const int *shape, int nd, mlx_dtype dt) {
  mlx_array k = mlx_array_new(), x = mlx_array_new(), y = mlx_array_new();
  mlx_array lo = mlx_array_new_float(-1.0f), hi = mlx_array_new_float(1.0f);
  mlx_stream cpu = mlx_default_cpu_stream_new();
  mlx_random_key(&k, 7);
  /* drawn on the CPU, moved to the GPU by the first GPU op (astype) */
  mlx_random_uniform(&x, lo, hi, shape, (size_t)nd, MLX_FLOAT32, k, cpu);
  mlx_astype(&y, x, dt, gs);
  mlx_array_eval(y);
  mlx_array_free(x);
  mlx_array_free(k);
  mlx_array_free(lo);
  mlx_array_free(hi);
  mlx_stream_free(cpu);
  return y;
}

static void report(const char *name, const char *dt, double n, double bytes_per_elem,
                   double flops, bench_stats st) {
  if (st.failed) {
    printf("gpu-case %s %s n=%.0f failed: %s\n", name, dt, n, bench_last_error);
    return;
  }
  double s = st.median;
  printf("gpu-case %s %s n=%.0f ms=%.4f GBps=%.1f TFLOPs=%.2f reps=%d\n", name, dt, n, s * 1e3,
         n * bytes_per_elem / s / 1e9, flops / s / 1e12, st.reps);
}

static int tiny_add(void *arg) {
  mlx_array *x = arg, r = mlx_array_new();
  int rc = mlx_add(&r, x[0], x[1], gs) || mlx_array_eval(r);
  mlx_array_free(r);
  return rc;
}

int main(void) {
  bench_init();
  int ngpu = 0;
  mlx_device_count(&ngpu, MLX_GPU);
  if (!ngpu) {
    printf("bench_gpu: no GPU on this machine; nothing to measure\n");
    return 0;
  }
  gs = mlx_default_gpu_stream_new();
  /* compiled functions replay on the default device */
  mlx_device gdev = mlx_device_new_type(MLX_GPU, 0);
  mlx_set_default_device(gdev);
  mlx_device_free(gdev);
  const mlx_dtype dts[] = {MLX_FLOAT32, MLX_BFLOAT16};
  const char *dtn[] = {"float32", "bfloat16"};
  const int sizes[] = {1 << 24, 1 << 28};
  /* LACE_BENCH_GPU_ONLY=compiled: the compiled cases alone; =basic: the
   * uncompiled elementwise, reduction and softmax cases alone */
  const char *only = getenv("LACE_BENCH_GPU_ONLY");
  bool compiled_only = only && strcmp(only, "compiled") == 0;
  bool basic_only = only && strcmp(only, "basic") == 0;
  for (int d = 0; d < 2 && !compiled_only; d++)
    for (int s = 0; s < 2; s++) {
      int n = sizes[s], rows = n / 4096, shape1[] = {n}, shape2[] = {rows, 4096};
      double isz = d == 0 ? 4 : 2;
      struct ew_case c = {.dt = dts[d]};
      c.x = rand_on_gpu(shape1, 1, dts[d]);
      c.y = rand_on_gpu(shape1, 1, dts[d]);
      c.kind = 0;
      report("copy", dtn[d], n, 2 * isz, 0, bench_time(run_case, &c));
      c.kind = 1;
      report("add", dtn[d], n, 3 * isz, 0, bench_time(run_case, &c));
      c.kind = 2;
      report("gelu_uncompiled", dtn[d], n, 2 * isz, 0, bench_time(run_case, &c));
      mlx_array_free(c.x);
      mlx_array_free(c.y);
      c.x = rand_on_gpu(shape2, 2, dts[d]);
      c.y = mlx_array_new();
      c.kind = 3;
      report("row_sum", dtn[d], n, isz, 0, bench_time(run_case, &c));
      c.kind = 7;
      report("sum_all", dtn[d], n, isz, 0, bench_time(run_case, &c));
      c.kind = 8;
      report("col_sum", dtn[d], n, isz, 0, bench_time(run_case, &c));
      c.kind = 4;
      report("softmax_uncompiled", dtn[d], n, 2 * isz, 0, bench_time(run_case, &c));
      c.kind = 6;
      report("softmax_op", dtn[d], n, 2 * isz, 0, bench_time(run_case, &c));
      mlx_array_free(c.x);
    }
  /* compiled functions (fused on the GPU): bytes are inputs read and
   * outputs written once */
  struct {
    const char *name;
    cbody f;
    int nin;       /* x, y (full), then c/w, s/b (one row) */
    int full_in;   /* inputs of n elements */
    int full_out;  /* outputs of n elements */
    double row_out; /* outputs of one element per row */
  } cc[] = {{"gelu_compiled", c_gelu, 1, 1, 1, 0},       {"silu_mul_compiled", c_silu_mul, 2, 2, 1, 0},
            {"rope_compiled", c_rope, 4, 2, 2, 0},       {"rope1_compiled", c_rope1, 4, 2, 1, 0},
            {"two_out_compiled", c_two_out, 2, 2, 2, 0},       {"layer_norm_compiled", c_layer_norm, 4, 1, 1, 0},
            {"softmax_compiled", c_softmax, 1, 1, 1, 0}, {"rms_norm_compiled", c_rms_norm, 3, 1, 1, 0},
            {"logsumexp_compiled", c_logsumexp, 1, 1, 0, 1}};
  for (int d = 0; d < 2 && !basic_only; d++)
    for (int s = 0; s < 2; s++) {
      int n = sizes[s], rows = n / 4096, full[] = {rows, 4096}, row[] = {4096};
      double isz = d == 0 ? 4 : 2;
      mlx_array x = rand_on_gpu(full, 2, dts[d]), y = rand_on_gpu(full, 2, dts[d]);
      mlx_array c = rand_on_gpu(row, 1, dts[d]), sn = rand_on_gpu(row, 1, dts[d]);
      for (size_t i = 0; i < sizeof cc / sizeof *cc; i++) {
        cur_body = cc[i].f;
        mlx_closure plain = mlx_closure_new_func(closure_fn), f = mlx_closure_new();
        mlx_compile(&f, plain, false);
        mlx_array args[4] = {x, y, c, sn};
        struct ccase k = {f, mlx_vector_array_new_data(args, 4), true};
        double bpe = (cc[i].full_in + cc[i].full_out + cc[i].row_out / 4096.0) * isz;
        report(cc[i].name, dtn[d], n, bpe, 0, bench_time(run_compiled, &k));
        mlx_vector_array_free(k.in);
        mlx_closure_free(f);
        mlx_closure_free(plain);
      }
      mlx_array_free(x);
      mlx_array_free(y);
      mlx_array_free(c);
      mlx_array_free(sn);
    }
  /* host cost of a compiled call that hits the cache: apply only (lazy
   * outputs), and apply + eval of a tiny function */
  {
    int one[] = {1};
    cur_body = c_tiny;
    mlx_closure plain = mlx_closure_new_func(closure_fn), f = mlx_closure_new();
    mlx_compile(&f, plain, false);
    mlx_array a[2] = {rand_on_gpu(one, 1, MLX_FLOAT32), rand_on_gpu(one, 1, MLX_FLOAT32)};
    struct ccase k = {f, mlx_vector_array_new_data(a, 2), false};
    bench_stats st = bench_time(run_compiled, &k);
    printf("gpu-case tiny_compiled_apply float32 n=1 us=%.2f\n", st.median * 1e6);
    k.eval = true;
    st = bench_time(run_compiled, &k);
    printf("gpu-case tiny_compiled_eval float32 n=1 us=%.2f\n", st.median * 1e6);
    mlx_vector_array_free(k.in);
    mlx_array_free(a[0]);
    mlx_array_free(a[1]);
    mlx_closure_free(f);
    mlx_closure_free(plain);
  }
  for (int d = 0; d < 2 && !compiled_only && !basic_only; d++) {
    int m = 8192, shape[] = {m, m};
    struct ew_case c = {.kind = 5, .dt = dts[d]};
    c.x = rand_on_gpu(shape, 2, dts[d]);
    c.y = rand_on_gpu(shape, 2, dts[d]);
    report("matmul8192", dtn[d], (double)m * m, 0, 2.0 * m * m * m, bench_time(run_case, &c));
    mlx_array_free(c.x);
    mlx_array_free(c.y);
  }
  /* decode-step products, batch 1: x (1, 2048) @ W (2048, 5632) and the
   * tied-embedding logits x @ E^T, E (32000, 2048); n counts weight
   * elements, read once. "_cublas": the same through cuBLAS. */
  for (int d = 0; d < 2 && !compiled_only && !basic_only; d++)
    for (int tr = 0; tr < 2; tr++) {
      int K = 2048, N = tr ? 32000 : 5632, xs[] = {1, K}, ws[] = {tr ? N : K, tr ? K : N};
      struct ew_case c = {.kind = 5, .dt = dts[d]};
      c.x = rand_on_gpu(xs, 2, dts[d]);
      mlx_array w = rand_on_gpu(ws, 2, dts[d]);
      c.y = mlx_array_new();
      if (tr) mlx_transpose(&c.y, w, gs);
      else mlx_array_set(&c.y, w);
      mlx_array_eval(c.y);
      double isz = d == 0 ? 4 : 2;
      const char *nm = tr ? "gemv_wt" : "gemv_w";
      report(nm, dtn[d], (double)K * N, isz, 2.0 * K * N, bench_time(run_case, &c));
      setenv("LACE_CUDA_GEMV", "0", 1);
      char nb[32];
      snprintf(nb, sizeof nb, "%s_cublas", nm);
      report(nb, dtn[d], (double)K * N, isz, 2.0 * K * N, bench_time(run_case, &c));
      unsetenv("LACE_CUDA_GEMV");
      mlx_array_free(c.x);
      mlx_array_free(c.y);
      mlx_array_free(w);
    }
  int one[] = {1};
  mlx_array t[2] = {rand_on_gpu(one, 1, MLX_FLOAT32), rand_on_gpu(one, 1, MLX_FLOAT32)};
  bench_stats st = bench_time(tiny_add, t);
  printf("gpu-case tiny_add_eval float32 n=1 us=%.1f\n", st.median * 1e6);
  mlx_array_free(t[0]);
  mlx_array_free(t[1]);
  mlx_stream_free(gs);
  return 0;
}
