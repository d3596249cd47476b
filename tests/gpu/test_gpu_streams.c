/* Several streams on one GPU (gpu/gpu.h's slots): work on streams made by
 * mlx_stream_new_device runs on CUDA streams of their own, a node reading
 * what another stream wrote waits for it (an event), memory freed on one
 * stream and taken on another is not reused early, mlx_synchronize waits
 * for its stream, and every result equals the CPU's. Long chains of
 * kernels on one stream feed short ones on another, so a missing wait
 * shows as wrong values. Skips without a GPU. */
#include <string.h>

#include "gpu/gpu.h"
#include "gpu/graphs.h"
#include "gpu_util.h"

#define CHAIN 40

/* y = chain(x) on stream s: CHAIN steps of y = sin(y) * 0.5 + y * 0.75 */
static mlx_array chain(mlx_array x, mlx_stream s) {
  mlx_array y = mlx_array_new(), half = mlx_array_new_float(0.5f),
            tq = mlx_array_new_float(0.75f);
  mlx_array_set(&y, x);
  for (int i = 0; i < CHAIN; i++) {
    mlx_array a = mlx_array_new(), b = mlx_array_new(), c = mlx_array_new();
    CHECK_OK(mlx_sin(&a, y, s));
    CHECK_OK(mlx_multiply(&b, a, half, s));
    CHECK_OK(mlx_multiply(&c, y, tq, s));
    CHECK_OK(mlx_add(&y, b, c, s));
    mlx_array_free(a), mlx_array_free(b), mlx_array_free(c);
  }
  mlx_array_free(half), mlx_array_free(tq);
  return y;
}

/* A long chain on s1, read by a short op on s2. */
static void test_producer_consumer(mlx_stream s1, mlx_stream s2) {
  int shape[] = {1 << 22};
  mlx_array x = gpu_rand(shape, 1, MLX_FLOAT32, -2, 2);
  mlx_array y = chain(x, s1), z = mlx_array_new(), two = mlx_array_new_float(2.0f);
  CHECK_OK(mlx_multiply(&z, y, two, s2));
  CHECK_OK(mlx_array_eval(z));
  mlx_array yc = chain(x, test_stream()), zc = mlx_array_new();
  CHECK_OK(mlx_multiply(&zc, yc, two, test_stream()));
  CHECK_SAME(z, zc, 1e-5, 1e-6, "s1 chain read on s2");
  mlx_array_free(x), mlx_array_free(y), mlx_array_free(z), mlx_array_free(two);
  mlx_array_free(yc), mlx_array_free(zc);
}

/* Each op on the next of n streams, on inputs made by the previous one;
 * the first input comes from the CPU (an upload on the first stream). */
static void test_round_robin(mlx_stream *ss, int n) {
  int shape[] = {1 << 20};
  mlx_array x = test_rand_f32(shape, 1, -1, 1), g = mlx_array_new(), c = mlx_array_new();
  mlx_array_set(&g, x);
  mlx_array_set(&c, x);
  mlx_array k = mlx_array_new_float(1.001f);
  for (int i = 0; i < 3 * n; i++) {
    mlx_array g2 = mlx_array_new(), c2 = mlx_array_new(), t = mlx_array_new();
    CHECK_OK(mlx_multiply(&t, g, k, ss[i % n]));
    CHECK_OK(mlx_add(&g2, t, g, ss[(i + 1) % n])); /* reads g (older) and t (just made) */
    mlx_array_free(t);
    t = mlx_array_new();
    CHECK_OK(mlx_multiply(&t, c, k, test_stream()));
    CHECK_OK(mlx_add(&c2, t, c, test_stream()));
    mlx_array_free(t);
    mlx_array_free(g), mlx_array_free(c);
    g = g2, c = c2;
    if (i % 5 == 4) CHECK_OK(mlx_array_eval(g)); /* results freed between evaluations */
  }
  CHECK_OK(mlx_array_eval(g));
  char what[64];
  snprintf(what, sizeof what, "round robin over %d streams", n);
  CHECK_SAME(g, c, 1e-5, 1e-6, what);
  mlx_array_free(x), mlx_array_free(g), mlx_array_free(c), mlx_array_free(k);
}

/* One evaluation of a long chain on s1 and, after it in the tape, fresh
 * arrays of the chain's size on s2: the chain's temporaries are freed
 * while its kernels are still queued, and s2 takes those blocks at once;
 * its writes must wait for s1's readers. */
static void test_reuse(mlx_stream s1, mlx_stream s2) {
  int shape[] = {1 << 22};
  for (int round = 0; round < 4; round++) {
    mlx_array x = gpu_rand(shape, 1, MLX_FLOAT32, -2, 2);
    mlx_array y = chain(x, s1), sum = mlx_array_new(), w = mlx_array_new(), big = mlx_array_new();
    mlx_array one = mlx_array_new_float(1.0f), three = mlx_array_new_float(3.0f);
    CHECK_OK(mlx_sum(&sum, y, false, s1));
    CHECK_OK(mlx_full(&big, shape, 1, one, MLX_FLOAT32, s2));
    CHECK_OK(mlx_multiply(&w, big, three, s2));
    mlx_array both[2] = {sum, w};
    mlx_vector_array v = mlx_vector_array_new_data(both, 2);
    mlx_array_free(y);
    CHECK_OK(mlx_eval(v));
    mlx_vector_array_free(v);
    mlx_array yc = chain(x, test_stream()), sc = mlx_array_new(), wc = mlx_array_new();
    CHECK_OK(mlx_sum(&sc, yc, false, test_stream()));
    CHECK_OK(mlx_full(&wc, shape, 1, three, MLX_FLOAT32, test_stream()));
    CHECK_SAME(sum, sc, 1e-4, 1e-3, "sum on s1 while s2 reuses memory");
    CHECK_SAME(w, wc, 0, 0, "s2's fresh arrays");
    mlx_array_free(x), mlx_array_free(sum), mlx_array_free(w), mlx_array_free(big);
    mlx_array_free(one), mlx_array_free(three), mlx_array_free(yc), mlx_array_free(sc);
    mlx_array_free(wc);
  }
}

static int square_fn(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), y = mlx_array_new(), s = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  mlx_stream d = mlx_stream_new();
  mlx_device gd = mlx_device_new_type(MLX_GPU, 0);
  mlx_get_default_stream(&d, gd);
  mlx_device_free(gd);
  int rc = mlx_multiply(&y, x, x, d) || mlx_sin(&s, y, d) || mlx_vector_array_append_value(*res, s);
  mlx_array_free(x), mlx_array_free(y), mlx_array_free(s);
  mlx_stream_free(d);
  return rc;
}

/* A compiled function whose ops run on the default stream, set to s2. */
static void test_compiled_on_stream(mlx_stream s1, mlx_stream s2) {
  int shape[] = {1 << 20};
  mlx_array x = gpu_rand(shape, 1, MLX_FLOAT32, -1, 1);
  mlx_array y = chain(x, s1);
  mlx_stream old = mlx_stream_new();
  mlx_device gd = mlx_device_new_type(MLX_GPU, 0);
  CHECK_OK(mlx_get_default_stream(&old, gd));
  CHECK_OK(mlx_set_default_stream(s2));
  mlx_closure f = mlx_closure_new_func(square_fn), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  mlx_vector_array in = mlx_vector_array_new_data(&y, 1), out = mlx_vector_array_new();
  CHECK_OK(mlx_closure_apply(&out, cf, in));
  mlx_array o = mlx_array_new();
  CHECK_OK(mlx_vector_array_get(&o, out, 0));
  CHECK_OK(mlx_array_eval(o));
  CHECK_OK(mlx_set_default_stream(old));
  mlx_array yc = chain(x, test_stream()), t = mlx_array_new(), oc = mlx_array_new();
  CHECK_OK(mlx_multiply(&t, yc, yc, test_stream()));
  CHECK_OK(mlx_sin(&oc, t, test_stream()));
  CHECK_SAME(o, oc, 1e-5, 1e-6, "compiled on the default stream s2");
  mlx_array_free(x), mlx_array_free(y), mlx_array_free(o), mlx_array_free(yc);
  mlx_array_free(t), mlx_array_free(oc);
  mlx_vector_array_free(in), mlx_vector_array_free(out);
  mlx_closure_free(f), mlx_closure_free(cf);
  mlx_stream_free(old);
  mlx_device_free(gd);
}

/* mlx_synchronize on a stream returns once its work is done; a later
 * evaluation gets no CUDA graph (graphs capture one stream). */
static void test_sync_and_graphs(mlx_stream s1) {
  int shape[] = {1 << 20};
  mlx_array x = gpu_rand(shape, 1, MLX_FLOAT32, -1, 1);
  mlx_array y = chain(x, s1);
  mlx_vector_array v = mlx_vector_array_new_data(&y, 1);
  CHECK_OK(mlx_async_eval(v));
  mlx_vector_array_free(v);
  CHECK_OK(mlx_synchronize(s1));
  CHECK_OK(mlx_synchronize(gpu_stream));
  struct lc_gpu_graph_stats a, b;
  lc_gpu_graph_stats(&a);
  for (int i = 0; i < 4; i++) {
    mlx_array z = chain(x, gpu_stream);
    CHECK_OK(mlx_array_eval(z));
    mlx_array_free(z);
  }
  lc_gpu_graph_stats(&b);
  CHECK_MSG(b.replayed == a.replayed && b.captured == a.captured,
            "graphs after several streams: %lu captured, %lu replayed", b.captured - a.captured,
            b.replayed - a.replayed);
  CHECK(lc_gpu_multi_stream(0));
  mlx_array_free(x), mlx_array_free(y);
}

int main(void) {
  if (!gpu_test_init()) return TEST_SKIP;
  test_seed(20261206);
  size_t base = test_active_memory();
  CHECK(!lc_gpu_multi_stream(0)); /* nothing but the default stream yet */
  mlx_device gd = mlx_device_new_type(MLX_GPU, 0);
  mlx_stream ss[LC_GPU_SLOTS + 3];
  int ns = LC_GPU_SLOTS + 3; /* more streams than slots: some share one */
  for (int i = 0; i < ns; i++) ss[i] = mlx_stream_new_device(gd);
  test_producer_consumer(ss[0], ss[1]);
  test_producer_consumer(ss[1], gpu_stream);
  test_producer_consumer(gpu_stream, ss[2]);
  test_round_robin(ss, 2);
  test_round_robin(ss, ns);
  test_reuse(ss[0], ss[1]);
  test_reuse(gpu_stream, ss[3]);
  test_compiled_on_stream(ss[0], ss[4]);
  test_sync_and_graphs(ss[5]);
  for (int i = 0; i < ns; i++) mlx_stream_free(ss[i]);
  mlx_device_free(gd);
  return gpu_test_done(base);
}
