/* CUDA graphs (gpu/graphs.h): loops that feed a step's outputs into the
 * next step, compiled and not, give the same bits with graphs as without,
 * and do run as graph replays; fresh input values at reused addresses are
 * read, not baked in; a step with a primitive that runs on the CPU is
 * refused silently and still right; concurrent loops on two threads agree
 * with sequential ones; tapes of empty nodes (an empty capture) report
 * nothing and leave no error behind; tapes with more intermediates than
 * LACE_CUDA_GRAPH_TEMP_MB run normally, their peak a few buffers; device
 * memory returns to its baseline. Skips
 * without a GPU. */
#include <pthread.h>

#include "core/error.h"
#include "gpu/graphs.h"
#include "gpu_bits.h"

enum { N = 64, STEPS = 12 };

/* One step over [x (N, N), w (N, N), s (1, N)] -> [x', s']:
 *   h = softmax((x * 0.5) @ w) * 0.5 + transpose(x) * 0.25, plus a row norm of s,
 *   x' = h + s (broadcast), s' = mean(h, 0) + 0.125 * s
 * (the matmul reads only memory that stays put between steps: cuBLAS's
 * kernels are guarded, not relocated) */
static int step(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  (void)payload;
  mlx_stream s = gpu_stream;
  mlx_array x = mlx_array_new(), w = mlx_array_new(), st = mlx_array_new();
  mlx_array t[12], xs = mlx_array_new();
  for (int i = 0; i < 12; i++) t[i] = mlx_array_new();
  mlx_array half = mlx_array_new_float(0.5f), quarter = mlx_array_new_float(0.25f),
            eighth = mlx_array_new_float(0.125f), eps = mlx_array_new_float(1e-3f);
  int rc = mlx_vector_array_get(&x, in, 0) || mlx_vector_array_get(&w, in, 1) ||
           mlx_vector_array_get(&st, in, 2) || mlx_multiply(&xs, x, half, s) ||
           mlx_matmul(&t[0], xs, w, s) ||
           mlx_softmax_axis(&t[1], t[0], -1, false, s) || mlx_multiply(&t[2], t[1], half, s) ||
           mlx_transpose(&t[3], x, s) || mlx_multiply(&t[4], t[3], quarter, s) ||
           mlx_add(&t[5], t[2], t[4], s) || mlx_square(&t[6], st, s) ||
           mlx_mean_axis(&t[7], t[6], -1, true, s) || mlx_add(&t[8], t[7], eps, s) ||
           mlx_rsqrt(&t[9], t[8], s) || mlx_multiply(&t[10], st, t[9], s) ||
           mlx_add(&t[11], t[5], t[10], s);
  mlx_array m = mlx_array_new(), m2 = mlx_array_new(), s2 = mlx_array_new();
  rc = rc || mlx_mean_axis(&m, t[5], 0, true, s) || mlx_multiply(&m2, st, eighth, s) ||
       mlx_add(&s2, m, m2, s);
  if (!rc) {
    mlx_array outs[2] = {t[11], s2};
    mlx_vector_array v = mlx_vector_array_new_data(outs, 2);
    rc = mlx_vector_array_set(res, v);
    mlx_vector_array_free(v);
  }
  for (int i = 0; i < 12; i++) mlx_array_free(t[i]);
  mlx_array_free(m), mlx_array_free(m2), mlx_array_free(s2), mlx_array_free(xs);
  mlx_array_free(x), mlx_array_free(w), mlx_array_free(st);
  mlx_array_free(half), mlx_array_free(quarter), mlx_array_free(eighth), mlx_array_free(eps);
  return rc;
}

/* The same step followed by a complex power, which the GPU evaluator
 * hands to the CPU: capture has to be abandoned when it gets there. */
static int step_cpu_op(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  mlx_vector_array mid = mlx_vector_array_new();
  mlx_stream gs = gpu_stream;
  int rc = step(&mid, in, payload);
  mlx_array x = mlx_array_new(), s = mlx_array_new(), c = mlx_array_new(), c2 = mlx_array_new(),
            re = mlx_array_new(), o = mlx_array_new();
  rc = rc || mlx_vector_array_get(&x, mid, 0) || mlx_vector_array_get(&s, mid, 1) ||
       mlx_astype(&c, x, MLX_COMPLEX64, gs) || mlx_power(&c2, c, c, gs) ||
       mlx_real(&re, c2, gs) || mlx_add(&o, x, re, gs);
  if (!rc) {
    mlx_array outs[2] = {o, s};
    mlx_vector_array v = mlx_vector_array_new_data(outs, 2);
    rc = mlx_vector_array_set(res, v);
    mlx_vector_array_free(v);
  }
  mlx_array_free(x), mlx_array_free(s), mlx_array_free(c), mlx_array_free(c2);
  mlx_array_free(re), mlx_array_free(o);
  mlx_vector_array_free(mid);
  return rc;
}

struct inputs {
  mlx_array x, w, st;
};
static struct inputs make_inputs(uint64_t seed) {
  int sh[2] = {N, N}, s1[2] = {1, N};
  test_seed(seed);
  struct inputs in = {gpu_rand(sh, 2, MLX_FLOAT32, -1, 1), gpu_rand(sh, 2, MLX_FLOAT32, -1, 1),
                      gpu_rand(s1, 2, MLX_FLOAT32, -1, 1)};
  return in;
}
static void free_inputs(struct inputs *in) {
  mlx_array_free(in->x), mlx_array_free(in->w), mlx_array_free(in->st);
}

/* Runs STEPS steps of f from the inputs `from`; keeps each step's outputs
 * (evaluated) in out[step][0..1]. With fresh (single-threaded only), x is
 * replaced each step by new random host values of the same shape, so its
 * device block is reused at the same address. */
static void loop(mlx_closure f, bool fresh, mlx_array out[STEPS][2], const struct inputs *from) {
  int sh[2] = {N, N};
  mlx_array x = mlx_array_new(), w = mlx_array_new(), st = mlx_array_new();
  mlx_array_set(&x, from->x), mlx_array_set(&w, from->w), mlx_array_set(&st, from->st);
  if (fresh) test_seed(5);
  for (int k = 0; k < STEPS; k++) {
    if (fresh) {
      mlx_array_free(x);
      x = gpu_rand(sh, 2, MLX_FLOAT32, -1, 1);
    }
    mlx_array ins[3] = {x, w, st};
    mlx_vector_array in = mlx_vector_array_new_data(ins, 3), res = mlx_vector_array_new();
    CHECK_OK(mlx_closure_apply(&res, f, in));
    CHECK_OK(mlx_eval(res));
    out[k][0] = mlx_array_new();
    out[k][1] = mlx_array_new();
    CHECK_OK(mlx_vector_array_get(&out[k][0], res, 0));
    CHECK_OK(mlx_vector_array_get(&out[k][1], res, 1));
    if (!fresh) mlx_array_set(&x, out[k][0]);
    mlx_array_set(&st, out[k][1]);
    mlx_vector_array_free(in);
    mlx_vector_array_free(res);
  }
  mlx_array_free(x), mlx_array_free(w), mlx_array_free(st);
}

static void free_outs(mlx_array out[STEPS][2]) {
  for (int k = 0; k < STEPS; k++) mlx_array_free(out[k][0]), mlx_array_free(out[k][1]);
}

/* Graphs on vs off over the same loop: bitwise equal; returns the replays. */
static unsigned long same_with_graphs(const char *what, mlx_closure f, bool fresh) {
  static mlx_array off[STEPS][2], on[STEPS][2];
  struct lc_gpu_graph_stats a, b;
  struct inputs in = make_inputs(11);
  lc_gpu_graphs_set(0);
  loop(f, fresh, off, &in);
  lc_gpu_graphs_set(1);
  lc_gpu_graph_stats(&a);
  loop(f, fresh, on, &in);
  lc_gpu_graph_stats(&b);
  free_inputs(&in);
  char name[128];
  for (int k = 0; k < STEPS; k++)
    for (int j = 0; j < 2; j++) {
      snprintf(name, sizeof name, "%s: step %d output %d, graphs on vs off", what, k, j);
      CHECK_SAME(on[k][j], off[k][j], 0, 0, name);
    }
  free_outs(off);
  free_outs(on);
  printf("%s: %lu warmed, %lu captured, %lu replayed (%lu nodes patched), %lu mismatched, "
         "%lu refused\n", what,
         b.warmed - a.warmed, b.captured - a.captured, b.replayed - a.replayed,
         b.patched - a.patched,
         b.mismatched - a.mismatched, b.refused - a.refused);
  return b.replayed - a.replayed;
}

struct job {
  mlx_closure f;
  struct inputs in;
  mlx_array out[STEPS][2];
};
static void *run_job(void *arg) {
  struct job *j = arg;
  loop(j->f, false, j->out, &j->in);
  return NULL;
}

/* A tape whose every node is empty queues no GPU work: its capture is an
 * empty graph, which must replay (or be declined) without an error and
 * without leaving CUDA's last error set for the next evaluation. */
static void empty_tapes(void) {
  int shape[] = {0};
  int errors = test_errors_seen;
  mlx_array key = mlx_array_new(), lo = mlx_array_new_float(-2.5f), hi = mlx_array_new_float(3);
  CHECK_OK(mlx_random_key(&key, 7));
  for (int rep = 0; rep < 4; rep++) {
    mlx_array u = mlx_array_new(), b = mlx_array_new(), c = mlx_array_new();
    CHECK_OK(mlx_random_uniform(&u, lo, hi, shape, 1, MLX_FLOAT32, key, gpu_stream));
    CHECK_OK(mlx_exp(&b, u, gpu_stream));
    CHECK_OK(mlx_multiply(&c, b, u, gpu_stream));
    CHECK_OK(mlx_array_eval(c));
    CHECK(mlx_array_size(c) == 0);
    mlx_array_free(u), mlx_array_free(b), mlx_array_free(c);
  }
  mlx_array_free(key), mlx_array_free(lo), mlx_array_free(hi);
  /* the next evaluation with work in it still runs on the GPU */
  int shape2[] = {5, 7};
  mlx_array x = gpu_rand(shape2, 2, MLX_FLOAT32, -1, 1), g = mlx_array_new(), c = mlx_array_new();
  CHECK_OK(mlx_exp(&g, x, gpu_stream));
  CHECK_OK(mlx_exp(&c, x, test_stream()));
  CHECK_OK(mlx_array_eval(g));
  CHECK_SAME(g, c, gpu_rtol(MLX_FLOAT32), 0, "exp after empty tapes");
  CHECK_MSG(test_errors_seen == errors, "empty tapes reported %d errors (last: %s)",
            test_errors_seen - errors, test_last_error);
  mlx_array_free(x), mlx_array_free(g), mlx_array_free(c);
}

/* A chain of 24 adds over 4M floats: 384 MiB of intermediates, past
 * LACE_CUDA_GRAPH_TEMP_MB's 64. It runs normally (counted as large), so
 * each intermediate is freed after its consumer and the peak stays a few
 * buffers, repeat after repeat (a graph would hold all 24). */
static void large_tapes(void) {
  int shape[] = {1 << 22};
  size_t bytes = (size_t)4 << 22;
  mlx_array x = gpu_rand(shape, 1, MLX_FLOAT32, -1, 1), xg = on_gpu(x);
  struct lc_gpu_graph_stats a, b;
  lc_gpu_graph_stats(&a);
  for (int rep = 0; rep < 3; rep++) {
    mlx_array acc = mlx_array_new();
    CHECK_OK(mlx_array_set(&acc, xg));
    for (int i = 0; i < 24; i++) {
      mlx_array y = mlx_array_new();
      CHECK_OK(mlx_add(&y, acc, xg, gpu_stream));
      mlx_array_free(acc);
      acc = y;
    }
    mlx_reset_peak_memory();
    size_t base = test_active_memory(), peak = 0;
    CHECK_OK(mlx_array_eval(acc));
    mlx_get_peak_memory(&peak);
    CHECK_MSG(peak - base <= 3 * bytes, "repeat %d: the peak grew by %zu MiB", rep,
              (peak - base) >> 20);
    mlx_array_free(acc);
  }
  lc_gpu_graph_stats(&b);
  CHECK_MSG(b.large - a.large == 3, "%lu of 3 large tapes were counted", b.large - a.large);
  CHECK_MSG(b.captured == a.captured && b.replayed == a.replayed,
            "a large tape was captured or replayed");
  mlx_array_free(x), mlx_array_free(xg);
}

int main(void) {
  if (!gpu_test_init()) return TEST_SKIP;
  size_t base = 0;
  mlx_get_active_memory(&base);
  mlx_closure f = mlx_closure_new_func_payload(step, NULL, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));

  CHECK_MSG(same_with_graphs("uncompiled loop", f, false) >= STEPS / 2,
            "the uncompiled loop should mostly run as graph replays");
  CHECK_MSG(same_with_graphs("compiled loop", cf, false) >= STEPS / 2,
            "the compiled loop should mostly run as graph replays");
  CHECK_MSG(same_with_graphs("compiled, fresh inputs", cf, true) >= STEPS / 2,
            "fresh inputs at reused addresses should replay");

  /* refused: a CPU primitive in the tape; no error reaches the handler */
  mlx_closure g = mlx_closure_new_func_payload(step_cpu_op, NULL, NULL);
  int errors = test_errors_seen;
  struct lc_gpu_graph_stats a, b;
  lc_gpu_graph_stats(&a);
  CHECK(same_with_graphs("with a CPU primitive", g, false) == 0);
  lc_gpu_graph_stats(&b);
  CHECK_MSG(b.refused > a.refused, "the capture of a tape with a CPU step was not refused");
  CHECK_MSG(test_errors_seen == errors, "a refused capture reported %d errors (last: %s)",
            test_errors_seen - errors, test_last_error);

  empty_tapes();
  large_tapes();

  /* two threads at once (one captures while the other replays or waits) */
  static struct job jobs[2], solo[2];
  for (int i = 0; i < 2; i++) {
    jobs[i].f = solo[i].f = i ? cf : f;
    jobs[i].in = solo[i].in = make_inputs(100 + (uint64_t)i);
  }
  for (int i = 0; i < 2; i++) run_job(&solo[i]);
  pthread_t th[2];
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, run_job, &jobs[i]);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 2; i++) {
    for (int k = 0; k < STEPS; k++)
      for (int j = 0; j < 2; j++) CHECK_SAME(jobs[i].out[k][j], solo[i].out[k][j], 0, 0, "threads");
    free_outs(jobs[i].out);
    free_outs(solo[i].out);
    free_inputs(&jobs[i].in);
  }

  mlx_closure_free(f);
  mlx_closure_free(cf);
  mlx_closure_free(g);
  lc_gpu_graphs_clear();
  mlx_clear_cache();
  size_t after = 0;
  mlx_get_active_memory(&after);
  CHECK_MSG(after <= base, "active memory %zu after, %zu before", after, base);
  return test_done();
}
