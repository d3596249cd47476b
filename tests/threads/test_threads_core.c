/* Threads sharing arrays: concurrent graph building and evaluation over
 * shared evaluated inputs, concurrent handle churn and error reporting.
 * Run under ThreadSanitizer by `make test-tsan`. */
#include <pthread.h>

#include "test.h"

#define NTHREADS 8

static mlx_array shared_x; /* evaluated before the threads start */

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  mlx_stream s = mlx_default_cpu_stream_new();
  int ok = 1;
  for (int iter = 0; iter < 50 && ok; iter++) {
    mlx_array acc = mlx_array_new(), c = mlx_array_new_float((float)id);
    mlx_array_set(&acc, shared_x);
    for (int k = 0; k < 10; k++) {
      mlx_array y = mlx_array_new();
      if (mlx_add(&y, acc, c, s)) ok = 0;
      mlx_array_free(acc);
      acc = y;
    }
    const float *p = mlx_array_data_float32(acc);
    /* shared_x[i] = i, so acc[i] = i + 10 * id */
    for (int i = 0; p && i < 1000; i++)
      if (p[i] != (float)i + 10.0f * (float)id) ok = 0;
    if (!p) ok = 0;
    mlx_array_free(acc);
    mlx_array_free(c);
  }
  mlx_stream_free(s);
  return (void *)(intptr_t)ok;
}

/* A large shared input: evaluating from several threads at once also runs
 * the thread pool from several callers (one gets it, others run serially). */
static void *big_worker(void *arg) {
  mlx_array big = *(mlx_array *)arg;
  mlx_stream s = mlx_default_cpu_stream_new();
  mlx_array y = mlx_array_new();
  int ok = mlx_add(&y, big, big, s) == 0;
  const float *p = ok ? mlx_array_data_float32(y) : NULL;
  ok = p && p[12345] == 2.0f * 12345.0f;
  mlx_array_free(y);
  mlx_stream_free(s);
  return (void *)(intptr_t)ok;
}

static void *error_worker(void *arg) {
  (void)arg;
  mlx_array e = mlx_array_new(), r = mlx_array_new();
  int ok = 1;
  for (int i = 0; i < 100; i++)
    if (mlx_add(&r, e, e, (mlx_stream){0}) == 0) ok = 0; /* must fail, not crash */
  return (void *)(intptr_t)ok;
}

int main(void) {
  test_init();
  float *data = malloc(sizeof(float) * 1000);
  for (int i = 0; i < 1000; i++) data[i] = (float)i;
  int shape[1] = {1000};
  shared_x = mlx_array_new_data(data, shape, 1, MLX_FLOAT32);
  free(data);
  CHECK_OK(mlx_array_eval(shared_x));

  pthread_t t[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
  for (int i = 0; i < NTHREADS; i++) {
    void *r;
    pthread_join(t[i], &r);
    CHECK_MSG(r != NULL, "worker %d computed wrong values", i);
  }

  int bshape[1] = {1 << 20};
  float *bd = malloc(sizeof(float) << 20);
  for (int i = 0; i < (1 << 20); i++) bd[i] = (float)i;
  mlx_array big = mlx_array_new_data(bd, bshape, 1, MLX_FLOAT32);
  free(bd);
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, big_worker, &big);
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(t[i], &r);
    CHECK_MSG(r != NULL, "big worker %d failed", i);
  }
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, error_worker, NULL);
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(t[i], &r);
    CHECK(r != NULL);
  }
  mlx_array_free(big);
  mlx_array_free(shared_x);
  return test_done();
}
