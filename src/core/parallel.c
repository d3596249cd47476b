#include "core/parallel.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_THREADS 8

struct pool {
  pthread_mutex_t lock;
  pthread_cond_t work_cv, done_cv;
  int nthreads;    /* including the caller */
  bool busy;       /* a loop owns the pool */
  uint64_t epoch;  /* bumped per loop; workers wait for a new one */
  int pending;     /* chunks not finished */
  void (*fn)(void *, int64_t, int64_t);
  void *ctx;
  int64_t n, chunk;
};

static struct pool pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
                           PTHREAD_COND_INITIALIZER, 0, false, 0, 0, NULL, NULL, 0, 0};
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static _Thread_local bool in_worker;


static void *worker_main(void *arg) {
  int index = (int)(intptr_t)arg;
  in_worker = true;
  uint64_t seen = 0;
  pthread_mutex_lock(&pool.lock);
  for (;;) {
    while (pool.epoch == seen) pthread_cond_wait(&pool.work_cv, &pool.lock);
    seen = pool.epoch;
    void (*fn)(void *, int64_t, int64_t) = pool.fn;
    void *ctx = pool.ctx;
    int64_t lo = pool.chunk * index, hi = lo + pool.chunk;
    if (hi > pool.n) hi = pool.n;
    pthread_mutex_unlock(&pool.lock);
    if (lo < hi) fn(ctx, lo, hi);
    pthread_mutex_lock(&pool.lock);
    if (--pool.pending == 0) pthread_cond_signal(&pool.done_cv);
  }
  return NULL;
}

static void pool_init(void) {
  int n = 0;
  const char *env = getenv("LACE_NUM_THREADS");
  if (env) n = atoi(env);
  if (n <= 0) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (n <= 0) n = 1;
  if (n > MAX_THREADS) n = MAX_THREADS;
  int started = 1;
  for (int i = 1; i < n; i++) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, worker_main, (void *)(intptr_t)i) == 0) started++;
    pthread_attr_destroy(&attr);
    if (started != i + 1) break;
  }
  pool.nthreads = started;
}

int lc_parallel_threads(void) {
  pthread_once(&pool_once, pool_init);
  return pool.nthreads;
}

void lc_parallel_for(int64_t n, int64_t min_chunk, void (*fn)(void *, int64_t, int64_t),
                     void *ctx) {
  if (n <= 0) return;
  if (min_chunk < 1) min_chunk = 1;
  if (n < 2 * min_chunk || in_worker || lc_parallel_threads() < 2) {
    fn(ctx, 0, n);
    return;
  }
  pthread_mutex_lock(&pool.lock);
  if (pool.busy) {
    pthread_mutex_unlock(&pool.lock);
    fn(ctx, 0, n);
    return;
  }
  pool.busy = true;
  int nt = pool.nthreads;
  pool.fn = fn;
  pool.ctx = ctx;
  pool.n = n;
  pool.chunk = (n + nt - 1) / nt;
  pool.pending = nt - 1;
  pool.epoch++;
  pthread_cond_broadcast(&pool.work_cv);
  pthread_mutex_unlock(&pool.lock);

  int64_t hi = pool.chunk < n ? pool.chunk : n;
  in_worker = true; /* nested loops inside fn run serially */
  fn(ctx, 0, hi);
  in_worker = false;

  pthread_mutex_lock(&pool.lock);
  while (pool.pending > 0) pthread_cond_wait(&pool.done_cv, &pool.lock);
  pool.busy = false;
  pthread_mutex_unlock(&pool.lock);
}
