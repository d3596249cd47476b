/* mlx_async_eval on a GPU stream: it returns once the work is queued, not
 * done; mlx_eval of an array whose async evaluation is running waits for
 * it (also beside outputs computed on the CPU); host reads wait too;
 * arrays freed while their kernels are queued give their memory to later
 * work only when that is safe, also on another stream; a compiled function's outputs may be evaluated asynchronously.
 * Every result is checked bitwise against a synchronous evaluation of the
 * same graph. Skips without a GPU. */
#include <time.h>

#include "gpu_bits.h"

#define N 4096
#define DEPTH 16

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* DEPTH products y = (y w) on stream s: about 2 TFLOP in float32, tens of
 * milliseconds of GPU time, a few hundred microseconds of host time. */
static mlx_array heavy(mlx_array x, mlx_array w, mlx_stream s) {
  mlx_array y = mlx_array_new();
  mlx_array_set(&y, x);
  for (int i = 0; i < DEPTH; i++) {
    mlx_array p = mlx_array_new();
    CHECK_OK(mlx_matmul(&p, y, w, s));
    mlx_array_free(y);
    y = p;
  }
  return y;
}

static void async_eval1(mlx_array a) {
  mlx_vector_array v = mlx_vector_array_new_data(&a, 1);
  CHECK_OK(mlx_async_eval(v));
  mlx_vector_array_free(v);
}

/* async_eval returns early; eval then waits; a synchronize after eval has
 * nothing left to wait for. */
static void test_returns_early(mlx_array x, mlx_array w, mlx_array ref) {
  double t0 = now();
  mlx_array y = heavy(x, w, gpu_stream);
  async_eval1(y);
  double t1 = now();
  CHECK_OK(mlx_array_eval(y));
  double t2 = now();
  CHECK_OK(mlx_synchronize(gpu_stream));
  double t3 = now();
  double total = t2 - t0;
  printf("async_eval returned after %.2f ms, eval after %.2f ms, then synchronize %.3f ms\n",
         1e3 * (t1 - t0), 1e3 * total, 1e3 * (t3 - t2));
  if (total < 5e-3) {
    printf("note: the products took under 5 ms; timing checks not meaningful, skipped\n");
  } else {
    CHECK_MSG(t1 - t0 < 0.3 * total, "async_eval took %.2f of %.2f ms: it waited",
              1e3 * (t1 - t0), 1e3 * total);
    CHECK_MSG(t3 - t2 < 0.3 * total, "synchronize after eval took %.2f ms: eval did not wait",
              1e3 * (t3 - t2));
  }
  GPU_SAME_BITS(y, ref, false, "async_eval then eval");
  mlx_array_free(y);
}

/* eval of [y, c], y queued by async_eval on the GPU and c still to be
 * computed on the CPU, waits for y's GPU too, not only for the tape it ran. */
static void test_mixed_outputs_wait(mlx_array x, mlx_array w, mlx_array ref) {
  mlx_stream cpu = mlx_default_cpu_stream_new();
  mlx_array y = heavy(x, w, gpu_stream), one = mlx_array_new_float(1.0f), c = mlx_array_new();
  CHECK_OK(mlx_add(&c, one, one, cpu));
  double t0 = now();
  async_eval1(y);
  mlx_array both[2] = {y, c};
  mlx_vector_array v = mlx_vector_array_new_data(both, 2);
  CHECK_OK(mlx_eval(v));
  double t1 = now();
  CHECK_OK(mlx_synchronize(gpu_stream));
  double t2 = now();
  if (t2 - t0 < 5e-3)
    printf("note: the products took under 5 ms; the [y, c] timing check skipped\n");
  else
    CHECK_MSG(t2 - t1 < 0.3 * (t2 - t0),
              "synchronize after eval of [y, c] took %.2f of %.2f ms: eval did not wait for y",
              1e3 * (t2 - t1), 1e3 * (t2 - t0));
  GPU_SAME_BITS(y, ref, false, "async_eval then eval with a CPU output");
  mlx_vector_array_free(v);
  mlx_array_free(y), mlx_array_free(one), mlx_array_free(c);
  mlx_stream_free(cpu);
}

/* Reading the data of an array evaluated asynchronously waits for it. */
static void test_host_read_waits(mlx_array x, mlx_array w, mlx_array ref) {
  mlx_array y = heavy(x, w, gpu_stream);
  async_eval1(y);
  const float *p = mlx_array_data_float32(y), *q = mlx_array_data_float32(ref);
  CHECK(p && q);
  if (p && q) CHECK_MSG(!memcmp(p, q, sizeof(float) * N * N), "host read before the GPU was done");
  mlx_array_free(y);
}

/* Work queued on s1 whose intermediates are freed at once (their kernels
 * still queued), while s2 allocates and fills blocks of the same size: s2
 * must not take those blocks before s1's kernels are done with them. */
static void test_freed_while_queued(mlx_array x, mlx_array w, mlx_array ref, mlx_stream s1,
                                    mlx_stream s2) {
  mlx_array y = heavy(x, w, s1);
  async_eval1(y);
  int shape[] = {N, N};
  mlx_array seven = mlx_array_new_float(7.0f);
  for (int i = 0; i < DEPTH; i++) {
    mlx_array f = mlx_array_new();
    CHECK_OK(mlx_full(&f, shape, 2, seven, MLX_FLOAT32, s2));
    async_eval1(f);
    mlx_array_free(f);
  }
  mlx_array_free(seven);
  GPU_SAME_BITS(y, ref, false, "s1's chain with s2 allocating");
  mlx_array_free(y);
  CHECK_OK(mlx_synchronize(s1));
  CHECK_OK(mlx_synchronize(s2));
}

static int heavy_fn(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), w = mlx_array_new();
  if (mlx_vector_array_get(&x, in, 0) || mlx_vector_array_get(&w, in, 1)) return 1;
  mlx_array y = heavy(x, w, gpu_stream);
  int rc = mlx_vector_array_set_value(res, y);
  mlx_array_free(x), mlx_array_free(w), mlx_array_free(y);
  return rc;
}

/* A compiled function's outputs, evaluated asynchronously, several calls
 * in flight at once. */
static void test_compiled(mlx_array x, mlx_array w, mlx_array ref) {
  mlx_closure f = mlx_closure_new_func(heavy_fn), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  mlx_array xs[2] = {x, w};
  mlx_vector_array in = mlx_vector_array_new_data(xs, 2);
  mlx_vector_array out[3];
  for (int i = 0; i < 3; i++) {
    out[i] = mlx_vector_array_new();
    CHECK_OK(mlx_closure_apply(&out[i], cf, in));
    CHECK_OK(mlx_async_eval(out[i]));
  }
  for (int i = 0; i < 3; i++) {
    mlx_array y = mlx_array_new();
    CHECK_OK(mlx_vector_array_get(&y, out[i], 0));
    CHECK_OK(mlx_eval(out[i]));
    GPU_SAME_BITS(y, ref, false, "compiled, async");
    mlx_array_free(y);
    mlx_vector_array_free(out[i]);
  }
  mlx_vector_array_free(in);
  mlx_closure_free(f), mlx_closure_free(cf);
}

/* On the CPU, async_eval finishes the work in the call. */
static void test_cpu_stream(void) {
  int shape[] = {64, 64};
  mlx_array a = test_rand_f32(shape, 2, -1, 1), b = test_rand_f32(shape, 2, -1, 1);
  mlx_stream cpu = mlx_default_cpu_stream_new();
  mlx_array y = heavy(a, b, cpu), r = heavy(a, b, cpu);
  async_eval1(y);
  CHECK(((const struct lc_node *)y.ctx)->buf != NULL);
  CHECK(!made_on_gpu(y));
  CHECK_OK(mlx_array_eval(r));
  GPU_SAME_BITS(y, r, false, "cpu stream async");
  mlx_array_free(a), mlx_array_free(b), mlx_array_free(y), mlx_array_free(r);
  mlx_stream_free(cpu);
}

int main(void) {
  if (!gpu_test_init()) return TEST_SKIP;
  test_seed(20261207);
  size_t base = test_active_memory();
  int shape[] = {N, N};
  mlx_array x0 = gpu_rand(shape, 2, MLX_FLOAT32, -1, 1),
            w0 = gpu_rand(shape, 2, MLX_FLOAT32, -1.0 / 64, 1.0 / 64);
  mlx_array x = on_gpu(x0), w = on_gpu(w0);
  mlx_array_free(x0), mlx_array_free(w0);
  /* the reference, synchronous (also the warm-up: cuBLAS handles, plans) */
  mlx_array ref = heavy(x, w, gpu_stream);
  CHECK_OK(mlx_array_eval(ref));
  mlx_device gd = mlx_device_new_type(MLX_GPU, 0);
  mlx_stream s1 = mlx_stream_new_device(gd), s2 = mlx_stream_new_device(gd);
  test_returns_early(x, w, ref);
  test_mixed_outputs_wait(x, w, ref);
  test_host_read_waits(x, w, ref);
  test_freed_while_queued(x, w, ref, s1, s2);
  test_compiled(x, w, ref);
  test_cpu_stream();
  mlx_array_free(x), mlx_array_free(w), mlx_array_free(ref);
  mlx_stream_free(s1), mlx_stream_free(s2), mlx_stream_free(gpu_stream);
  mlx_device_free(gd);
  size_t after = test_active_memory();
  CHECK_MSG(after <= base, "active memory %zu after, %zu before", after, base);
  return test_done();
}
