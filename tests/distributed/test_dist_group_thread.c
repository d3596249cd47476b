/* Group handles from several threads: init (the shared world group, or a
 * new singleton), lazy collectives that hold the group, frees, all at
 * once; then one evaluation on the main thread. Run alone (singleton) and
 * under mpirun (tests/distributed/CMakeLists.txt); also under TSan. */
#include <pthread.h>

#include "test.h"

enum { NTHREADS = 4, ROUNDS = 200 };

static mlx_distributed_group WORLD;
static int thread_failures;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg) {
  (void)arg;
  int bad = 0;
  mlx_stream s = mlx_default_cpu_stream_new();
  for (int i = 0; i < ROUNDS; i++) {
    mlx_distributed_group g = mlx_distributed_group_new();
    bad += mlx_distributed_init(&g, false, NULL) != 0;
    bad += mlx_distributed_group_size(g) != mlx_distributed_group_size(WORLD);
    bad += !mlx_distributed_is_available("mpi") != !mlx_distributed_is_available(NULL);
    mlx_array x = mlx_array_new_float((float)i), r = mlx_array_new(), q = mlx_array_new();
    bad += mlx_distributed_all_sum(&r, x, g, s) != 0;
    bad += mlx_distributed_all_gather(&q, r, WORLD, s) != 0;
    bad += mlx_distributed_group_free(g) != 0; /* r and q still hold it */
    mlx_array_free(x);
    mlx_array_free(r);
    mlx_array_free(q);
  }
  mlx_stream_free(s);
  pthread_mutex_lock(&lock);
  thread_failures += bad;
  pthread_mutex_unlock(&lock);
  return NULL;
}

int main(void) {
  test_init();
  WORLD = mlx_distributed_group_new();
  CHECK_OK(mlx_distributed_init(&WORLD, false, NULL));
  int size = mlx_distributed_group_size(WORLD);
  pthread_t t[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < NTHREADS; i++) pthread_join(t[i], NULL);
  CHECK_MSG(thread_failures == 0, "%d failures in the threads (%s)", thread_failures,
            test_last_error);
  /* a collective built on a group whose handle is already freed */
  mlx_distributed_group g = mlx_distributed_group_new();
  CHECK_OK(mlx_distributed_init(&g, false, NULL));
  mlx_array x = mlx_array_new_float(2), r = mlx_array_new();
  CHECK_OK(mlx_distributed_all_sum(&r, x, g, test_stream()));
  CHECK_OK(mlx_distributed_group_free(g));
  float v = 0;
  CHECK_OK(mlx_array_item_float32(&v, r));
  CHECK(v == 2.0f * (float)size);
  mlx_array_free(x);
  mlx_array_free(r);
  CHECK_OK(mlx_distributed_group_free(WORLD));
  return test_done();
}
