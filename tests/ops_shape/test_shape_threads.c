/* Threads sharing evaluated arrays through shape and index ops: views of a
 * shared input, copies of its transposes (tiled, thread pool), takes and
 * scatters, all built and evaluated concurrently. Run under TSan by
 * `make test-tsan` (the name puts it in the 'threads' label). */
#include <pthread.h>

#include "test.h"

#define NTHREADS 6
#define ROWS 300
#define COLS 200

static mlx_array shared_x, shared_idx; /* evaluated before the threads start */
static const float *xd;

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  mlx_stream s = mlx_default_cpu_stream_new();
  int ok = 1;
  for (int iter = 0; iter < 10 && ok; iter++) {
    mlx_array t = mlx_array_new(), c = mlx_array_new(), sl = mlx_array_new(), tk = mlx_array_new(),
              sc = mlx_array_new(), one = mlx_array_new_float(1.0f), ub = mlx_array_new();
    ok = !mlx_transpose(&t, shared_x, s) && !mlx_contiguous(&c, t, false, s);
    int st[2] = {id, 0}, sp[2] = {ROWS, COLS}, step[2] = {NTHREADS, 1};
    ok = ok && !mlx_slice(&sl, shared_x, st, 2, sp, 2, step, 2, s);
    ok = ok && !mlx_take_axis(&tk, shared_x, shared_idx, 0, s);
    int us[3] = {4, 1, COLS};
    ok = ok && !mlx_broadcast_to(&ub, one, us, 3, s);
    ok = ok && !mlx_scatter_add_single(&sc, shared_x, shared_idx, ub, 0, s);
    const float *cd = ok ? mlx_array_data_float32(c) : NULL;
    const float *sd = ok ? mlx_array_data_float32(sc) : NULL;
    mlx_array slc = mlx_array_new();
    ok = ok && cd && sd && !mlx_contiguous(&slc, sl, false, s);
    const float *ld = ok ? mlx_array_data_float32(slc) : NULL;
    ok = ok && ld;
    for (int i = 0; ok && i < COLS; i++)
      for (int j = 0; j < ROWS; j++)
        if (cd[i * ROWS + j] != xd[j * COLS + i]) ok = 0;
    for (int j = 0; ok && j < COLS; j++) {
      /* idx = {3, 7, 3, -1}: row 3 gets +2, rows 7 and 299 get +1 */
      if (sd[3 * COLS + j] != xd[3 * COLS + j] + 2.0f) ok = 0;
      if (sd[299 * COLS + j] != xd[299 * COLS + j] + 1.0f) ok = 0;
      if (ld[j] != xd[id * COLS + j]) ok = 0;
    }
    mlx_array all[] = {t, c, sl, tk, sc, one, ub, slc};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) mlx_array_free(all[k]);
  }
  mlx_stream_free(s);
  return (void *)(intptr_t)ok;
}

int main(void) {
  test_init();
  size_t base = test_active_memory();
  int sh[2] = {ROWS, COLS}, is[1] = {4};
  float *v = malloc(sizeof(float) * ROWS * COLS);
  for (int i = 0; i < ROWS * COLS; i++) v[i] = (float)(i % 1000) * 0.25f; /* exact +1, +2 */
  shared_x = mlx_array_new_data(v, sh, 2, MLX_FLOAT32);
  free(v);
  int32_t iv[4] = {3, 7, 3, -1};
  shared_idx = mlx_array_new_data(iv, is, 1, MLX_INT32);
  CHECK_OK(mlx_array_eval(shared_x));
  xd = mlx_array_data_float32(shared_x);
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
  for (int i = 0; i < NTHREADS; i++) {
    void *r;
    pthread_join(th[i], &r);
    CHECK_MSG(r == (void *)1, "thread %d", i);
  }
  mlx_array_free(shared_x);
  mlx_array_free(shared_idx);
  CHECK(test_active_memory() == base);
  return test_done();
}
