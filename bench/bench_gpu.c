/* GPU benchmarks (CUDA backend): lace on a GPU stream, median wall time
 * of build + mlx_eval (which waits for the GPU), as bytes or FLOP rates.
 * Prints one "gpu-case" line per case for tools/gpu_bench.py, which runs
 * torch on the same shapes in the same job and divides by the device's
 * measured copy bandwidth. Without a GPU it says so and exits 0. */
#include <math.h>

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
      mlx_array h = mlx_array_new_float(0.5f), o = mlx_array_new_float(1.0f),
                k = mlx_array_new_float(0.70710678f);
      rc = mlx_multiply(&t, c->x, k, gs) || mlx_erf(&u, t, gs) || mlx_add(&t, u, o, gs) ||
           mlx_multiply(&u, t, c->x, gs) || mlx_multiply(&r, u, h, gs);
      mlx_array_free(h);
      mlx_array_free(o);
      mlx_array_free(k);
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
  }
  if (!rc) rc = mlx_array_eval(r);
  mlx_array_free(r);
  mlx_array_free(t);
  mlx_array_free(u);
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
  const mlx_dtype dts[] = {MLX_FLOAT32, MLX_BFLOAT16};
  const char *dtn[] = {"float32", "bfloat16"};
  const int sizes[] = {1 << 24, 1 << 28};
  for (int d = 0; d < 2; d++)
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
      c.kind = 4;
      report("softmax_uncompiled", dtn[d], n, 2 * isz, 0, bench_time(run_case, &c));
      c.kind = 6;
      report("softmax_op", dtn[d], n, 2 * isz, 0, bench_time(run_case, &c));
      mlx_array_free(c.x);
    }
  for (int d = 0; d < 2; d++) {
    int m = 8192, shape[] = {m, m};
    struct ew_case c = {.kind = 5, .dt = dts[d]};
    c.x = rand_on_gpu(shape, 2, dts[d]);
    c.y = rand_on_gpu(shape, 2, dts[d]);
    report("matmul8192", dtn[d], (double)m * m, 0, 2.0 * m * m * m, bench_time(run_case, &c));
    mlx_array_free(c.x);
    mlx_array_free(c.y);
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
