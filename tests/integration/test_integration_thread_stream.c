/* mlx-c's example-thread-stream.c, written anew as checks: a stream made on
 * the main thread (from the default device) is used to build and evaluate
 * on worker threads, which serialise their work with a mutex as the
 * example does; the main thread then reads the results. */
#include <pthread.h>

#include "integration.h"

#define NWORKERS 4

static pthread_mutex_t eval_mutex = PTHREAD_MUTEX_INITIALIZER;

struct work {
  mlx_stream stream;
  float a, b, result;
  int status;
};

static void *run(void *arg) {
  struct work *w = arg;
  pthread_mutex_lock(&eval_mutex);
  mlx_array a = mlx_array_new_float(w->a), b = mlx_array_new_float(w->b), sum = mlx_array_new();
  w->status = mlx_add(&sum, a, b, w->stream);
  if (!w->status) w->status = mlx_array_item_float32(&w->result, sum);
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(sum);
  pthread_mutex_unlock(&eval_mutex);
  return NULL;
}

int main(void) {
  test_init();
  size_t before = test_active_memory();
  mlx_device dev = mlx_device_new();
  CHECK_OK(mlx_get_default_device(&dev));
  mlx_device_type type = MLX_GPU;
  CHECK_OK(mlx_device_get_type(&type, dev));
  CHECK(type == MLX_CPU);
  mlx_stream stream = mlx_stream_new_device(dev);
  CHECK(stream.ctx != NULL);

  struct work w[NWORKERS];
  pthread_t th[NWORKERS];
  for (int i = 0; i < NWORKERS; i++) {
    w[i] = (struct work){stream, 2.0f + (float)i, 3.0f, 0.0f, -1};
    CHECK(pthread_create(&th[i], NULL, run, &w[i]) == 0);
  }
  for (int i = 0; i < NWORKERS; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < NWORKERS; i++) {
    CHECK_MSG(w[i].status == 0, "worker %d failed: %s", i, test_last_error);
    CHECK(w[i].result == 5.0f + (float)i);
  }
  mlx_stream_free(stream);
  mlx_device_free(dev);
  CHECK_MSG(test_active_memory() == before, "active memory %zu, was %zu", test_active_memory(),
            before);
  return integ_done();
}
