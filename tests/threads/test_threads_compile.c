/* Compile from many threads: each thread compiling and calling its own
 * closures (tracing state is per thread), and many threads sharing one
 * compiled closure (one trace per signature, shared cache entries whose
 * constants are read concurrently), plus concurrent cache erasure. The
 * larger arrays run native fused kernels (src/compile/jit.c), whose build
 * and table the threads share.
 * Run under ThreadSanitizer by `make test-tsan`. */
#include <pthread.h>
#include <stdatomic.h>

#include "test.h"

#include "compile/jit.h"

#define NTHREADS 16

struct fpay {
  atomic_int calls;
  mlx_array c; /* captured constant */
};

/* f(x) = (x + c) + x */
static int fun(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  struct fpay *p = pl;
  atomic_fetch_add(&p->calls, 1);
  mlx_stream s = mlx_default_cpu_stream_new();
  mlx_array x = mlx_array_new(), a = mlx_array_new(), b = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  int rc = mlx_add(&a, x, p->c, s);
  if (!rc) rc = mlx_add(&b, a, x, s);
  if (!rc) rc = mlx_vector_array_append_value(*res, b);
  mlx_array_free(x);
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_stream_free(s);
  return rc;
}

/* x[i] = i * scale over n elements (float32) */
static mlx_array ramp(int n, float scale) {
  float *v = malloc(sizeof(float) * (size_t)(n ? n : 1));
  for (int i = 0; i < n; i++) v[i] = (float)i * scale;
  int sh[1] = {n};
  mlx_array a = mlx_array_new_data(v, sh, 1, MLX_FLOAT32);
  free(v);
  return a;
}

static int check_result(mlx_array r, int n, float scale, float c) {
  const float *p = mlx_array_data_float32(r);
  if (!p || (int)mlx_array_size(r) != n) return 0;
  for (int i = 0; i < n; i++) {
    float x = (float)i * scale;
    if (p[i] != (x + c) + x) return 0;
  }
  return 1;
}

static int call(mlx_closure f, mlx_array x, mlx_array *r) {
  mlx_vector_array in = mlx_vector_array_new_data(&x, 1), out = mlx_vector_array_new();
  int rc = mlx_closure_apply(&out, f, in);
  if (!rc) rc = mlx_vector_array_get(r, out, 0);
  mlx_vector_array_free(in);
  mlx_vector_array_free(out);
  return rc;
}

static void *own_worker(void *arg) {
  int id = (int)(intptr_t)arg;
  struct fpay p;
  atomic_init(&p.calls, 0);
  p.c = mlx_array_new_float((float)id);
  mlx_closure f = mlx_closure_new_func_payload(fun, &p, NULL), cf = mlx_closure_new();
  int ok = mlx_compile(&cf, f, id % 2 == 1) == 0;
  for (int it = 0; it < 40 && ok; it++) {
    int n = it % 2 ? 3000 : 100000; /* the large one runs on the pool */
    mlx_array x = ramp(n, 0.5f), r = mlx_array_new();
    ok = call(cf, x, &r) == 0 && check_result(r, n, 0.5f, (float)id);
    mlx_array_free(x);
    mlx_array_free(r);
  }
  int calls = atomic_load(&p.calls);
  ok = ok && calls == (id % 2 == 1 ? 1 : 2);
  mlx_closure_free(cf);
  mlx_closure_free(f);
  mlx_array_free(p.c);
  return (void *)(intptr_t)ok;
}

static mlx_closure shared_cf;
static struct fpay shared_p;

static void *shared_worker(void *arg) {
  int id = (int)(intptr_t)arg;
  int ok = 1;
  for (int it = 0; it < 40 && ok; it++) {
    int n = 1000 + 1000 * ((id + it) % 3);
    mlx_array x = ramp(n, (float)id), r = mlx_array_new();
    ok = call(shared_cf, x, &r) == 0 && check_result(r, n, (float)id, 3.0f);
    mlx_array_free(x);
    mlx_array_free(r);
  }
  return (void *)(intptr_t)ok;
}

static atomic_int stop_eraser;
static void *eraser(void *arg) {
  (void)arg;
  while (!atomic_load(&stop_eraser)) mlx_detail_compile_clear_cache();
  return NULL;
}

static int run(void *(*fn)(void *), const char *what) {
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) pthread_create(&th[i], NULL, fn, (void *)(intptr_t)i);
  int ok = 1;
  for (int i = 0; i < NTHREADS; i++) {
    void *r;
    pthread_join(th[i], &r);
    if (!(intptr_t)r) {
      ok = 0;
      fprintf(stderr, "%s: thread %d failed (%s)\n", what, i, test_last_error);
    }
  }
  return ok;
}

int main(void) {
  test_init();
  char jit_dir[] = "/tmp/lace-jit-threads-XXXXXX";
  if (mkdtemp(jit_dir)) setenv("LACE_JIT_CACHE", jit_dir, 1);
  setenv("LACE_JIT_MIN", "50000", 1);
  setenv("LACE_JIT_SYNC", "1", 1);
  size_t base = test_active_memory();
  CHECK(run(own_worker, "own closures"));

  atomic_init(&shared_p.calls, 0);
  shared_p.c = mlx_array_new_float(3.0f);
  mlx_closure f = mlx_closure_new_func_payload(fun, &shared_p, NULL);
  shared_cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&shared_cf, f, false));
  CHECK(run(shared_worker, "shared closure"));
  /* three shapes: traced once each, under the function's trace lock */
  CHECK_MSG(atomic_load(&shared_p.calls) == 3, "%d traces", atomic_load(&shared_p.calls));

  /* the same while another thread keeps clearing the cache */
  pthread_t er;
  atomic_init(&stop_eraser, 0);
  pthread_create(&er, NULL, eraser, NULL);
  CHECK(run(shared_worker, "shared closure, cache cleared concurrently"));
  atomic_store(&stop_eraser, 1);
  pthread_join(er, NULL);

  mlx_closure_free(shared_cf);
  mlx_closure_free(f);
  mlx_array_free(shared_p.c);
  mlx_detail_compile_clear_cache();
  CHECK_MSG(test_active_memory() == base, "active %zu, baseline %zu", test_active_memory(), base);
  if (system("cc --version >/dev/null 2>&1") == 0)
    CHECK_MSG(lc_jit_kernels() >= 1, "the threads ran no native kernel");
  test_remove_dir(jit_dir);
  return test_done();
}
