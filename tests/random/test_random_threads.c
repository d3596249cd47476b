/* The global key sequence from many threads: every call gets its own key
 * (no two draws repeat), and draws with explicit keys agree across threads.
 * Labelled "threads": also run under ThreadSanitizer (make test-tsan). */
#include <pthread.h>

#include "test.h"

#define NTHREADS 8
#define CALLS 500

static uint64_t drawn[NTHREADS][CALLS];
static uint32_t keyed[NTHREADS][4];

static void *worker(void *arg) {
  int t = (int)(intptr_t)arg;
  mlx_stream s = mlx_default_cpu_stream_new();
  mlx_array none = mlx_array_new(), r = mlx_array_new(), k = mlx_array_new();
  int two = 2, four = 4;
  for (int i = 0; i < CALLS; i++) {
    if (mlx_random_bits(&r, &two, 1, 4, none, s)) break;
    const uint32_t *p = mlx_array_data_uint32(r);
    if (p) drawn[t][i] = (uint64_t)p[0] << 32 | p[1];
  }
  mlx_random_key(&k, 99);
  if (!mlx_random_bits(&r, &four, 1, 4, k, s)) {
    const uint32_t *p = mlx_array_data_uint32(r);
    if (p) memcpy(keyed[t], p, sizeof keyed[t]);
  }
  mlx_array_free(r);
  mlx_array_free(k);
  mlx_stream_free(s);
  return NULL;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int main(void) {
  test_init();
  mlx_random_seed(2024);
  pthread_t th[NTHREADS];
  for (int t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
  for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
  qsort(drawn, NTHREADS * CALLS, sizeof(uint64_t), cmp_u64);
  const uint64_t *all = &drawn[0][0];
  int distinct = 1;
  for (int i = 1; i < NTHREADS * CALLS; i++) distinct &= all[i] != all[i - 1];
  CHECK_MSG(distinct, "two global draws repeated");
  CHECK(all[0] != 0 || all[1] != 0);
  for (int t = 1; t < NTHREADS; t++) CHECK(!memcmp(keyed[t], keyed[0], sizeof keyed[0]));
  return test_done();
}
