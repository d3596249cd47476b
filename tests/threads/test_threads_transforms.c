/* Transforms from many threads at once, with no lock around them (MLX's
 * process-global trace stack needs one; lace's tracing state is per call
 * and per thread): 16 threads each build compile(value_and_grad(f)) and
 * vmap(g) over their own closures and call them for many rounds, plain
 * vjp/jvp in between; every result must equal the single-threaded one
 * bit for bit. Run under ThreadSanitizer by `make test-tsan`. */
#include <pthread.h>

#include "test.h"
#include "../transforms/tx_fn.h"

#define NTHREADS 16
#define ROUNDS 12

/* loss(w, x) = sum(tanh(w * x) * c), c a per-thread constant captured */
struct tpay {
  float c;
};

static int loss(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  struct tpay *p = pl;
  mlx_stream s = mlx_default_cpu_stream_new();
  mlx_array w = mlx_array_new(), x = mlx_array_new(), m = mlx_array_new(), t = mlx_array_new(),
            c = mlx_array_new_float(p->c), q = mlx_array_new(), r = mlx_array_new();
  int rc = mlx_vector_array_get(&w, in, 0) || mlx_vector_array_get(&x, in, 1) ||
           mlx_multiply(&m, w, x, s) || mlx_tanh(&t, m, s) || mlx_multiply(&q, t, c, s) ||
           mlx_sum(&r, q, false, s) || mlx_vector_array_set_value(res, r);
  mlx_array arrs[7] = {w, x, m, t, c, q, r};
  for (int i = 0; i < 7; i++) mlx_array_free(arrs[i]);
  mlx_stream_free(s);
  return rc;
}

static mlx_array ramp(int n, float scale, float off) {
  float v[64];
  for (int i = 0; i < n; i++) v[i] = off + (float)i * scale;
  int sh[1] = {n};
  return mlx_array_new_data(v, sh, 1, MLX_FLOAT32);
}

/* One thread's work; writes its results (float32 values) into out. */
struct job {
  int id;
  float vals[3][16]; /* grad of w, vmapped losses, jvp tangent */
  int ok;
};

static void run(struct job *j) {
  struct tpay *p = malloc(sizeof *p);
  p->c = 0.5f + 0.1f * (float)j->id;
  mlx_closure f = mlx_closure_new_func_payload(loss, p, free);
  int a0 = 0, ax[2] = {0, -1};
  mlx_closure vg = txf_value_and_grad(f, &a0, 1);
  mlx_closure cvg = txf_compile(vg, false);
  mlx_closure vm = txf_vmap(f, ax, 2, NULL, 1);
  mlx_array w = ramp(16, 0.05f, -0.4f), x = ramp(16, 0.1f, (float)j->id * 0.01f);
  int sW[2] = {4, 16};
  mlx_array W = mlx_array_new(), tan = ramp(16, 0.02f, 0.1f);
  mlx_stream s = mlx_default_cpu_stream_new();
  mlx_array w4 = mlx_array_new();
  mlx_broadcast_to(&w4, w, sW, 2, s);
  mlx_array scale = mlx_array_new_float(0.9f);
  mlx_multiply(&W, w4, scale, s);
  j->ok = 1;
  for (int r = 0; r < ROUNDS && j->ok; r++) {
    mlx_array in[2] = {w, x}, vgo[2], vmo, win[2] = {W, x};
    if (txf_apply(cvg, in, 2, vgo, 2) || txf_apply(vm, win, 2, &vmo, 1)) {
      j->ok = 0;
      break;
    }
    mlx_vector_array p2 = mlx_vector_array_new_data(in, 2);
    mlx_array zt = mlx_array_new_float(0.0f), tz = mlx_array_new();
    mlx_multiply(&tz, x, zt, s);
    mlx_array tv[2] = {tan, tz};
    mlx_vector_array t2 = mlx_vector_array_new_data(tv, 2);
    mlx_vector_array jo = mlx_vector_array_new(), jt = mlx_vector_array_new();
    if (mlx_jvp(&jo, &jt, f, p2, t2)) j->ok = 0;
    mlx_array jtan = mlx_array_new();
    mlx_vector_array_get(&jtan, jt, 0);
    const float *g = mlx_array_data_float32(vgo[1]), *l = mlx_array_data_float32(vmo),
                *d = mlx_array_data_float32(jtan);
    if (!g || !l || !d) j->ok = 0;
    for (int i = 0; j->ok && i < 16; i++) {
      float want[3] = {g[i], i < 4 ? l[i] : 0, i < 1 ? d[0] : 0};
      for (int k = 0; k < 3; k++) {
        if (r == 0) j->vals[k][i] = want[k];
        else if (j->vals[k][i] != want[k]) j->ok = 0; /* same bits every round */
      }
    }
    mlx_array_free(jtan);
    mlx_vector_array_free(jo);
    mlx_vector_array_free(jt);
    mlx_vector_array_free(p2);
    mlx_vector_array_free(t2);
    mlx_array_free(zt);
    mlx_array_free(tz);
    mlx_array_free(vgo[0]);
    mlx_array_free(vgo[1]);
    mlx_array_free(vmo);
  }
  mlx_array arrs[7] = {w, x, W, tan, w4, scale};
  for (int i = 0; i < 6; i++) mlx_array_free(arrs[i]);
  mlx_stream_free(s);
  mlx_closure_free(vm);
  mlx_closure_free(cvg);
  mlx_closure_free(vg);
  mlx_closure_free(f);
}

static void *thread_main(void *arg) {
  run(arg);
  return NULL;
}

int main(void) {
  test_init();
  struct job ref[NTHREADS], par[NTHREADS];
  for (int t = 0; t < NTHREADS; t++) {
    ref[t].id = par[t].id = t;
    run(&ref[t]);
    CHECK_MSG(ref[t].ok, "single-threaded job %d failed: %s", t, test_last_error);
  }
  pthread_t th[NTHREADS];
  for (int t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, thread_main, &par[t]);
  for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < NTHREADS; t++) {
    CHECK_MSG(par[t].ok, "threaded job %d failed", t);
    CHECK_MSG(!memcmp(par[t].vals, ref[t].vals, sizeof ref[t].vals),
              "threaded job %d differs from the single-threaded run", t);
  }
  return test_done();
}
