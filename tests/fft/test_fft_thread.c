/* FFTs from several threads at once, over more distinct lengths than the
 * plan cache keeps (plans are evicted while other threads run them), and
 * batched transforms split over the pool: each result checked against a
 * round trip and a directly computed bin. */
#include <pthread.h>

#include "fft_util.h"

#define THREADS 4
#define ROUNDS 40

struct job {
  int id, failures;
};

static void *worker(void *arg) {
  struct job *j = arg;
  mlx_stream s = mlx_default_cpu_stream_new();
  uint64_t st = 0x1234567ULL * (uint64_t)(j->id + 1);
  for (int r = 0; r < ROUNDS; r++) {
    st = st * 6364136223846793005ULL + 1442695040888963407ULL;
    int len = 2 + (int)((st >> 33) % 150), batch = 1 + (int)((st >> 20) % 5), ax = 1;
    int shape[2] = {batch, len};
    size_t n = (size_t)batch * (size_t)len;
    double *x = malloc(sizeof(double) * 2 * n);
    for (size_t k = 0; k < 2 * n; k++) x[k] = (double)((st >> (k % 31)) & 1023) / 512.0 - 1;
    mlx_array a = fu_complex(x, shape, 2), f = mlx_array_new(), b = mlx_array_new();
    int bad = mlx_fft_fft(&f, a, len, ax, MLX_FFT_NORM_BACKWARD, s) ||
              mlx_fft_ifft(&b, f, len, ax, MLX_FFT_NORM_BACKWARD, s);
    double *fv = bad ? NULL : fu_pairs(f), *bv = bad ? NULL : fu_pairs(b);
    size_t at;
    if (!fv || !bv || fu_rel_err(bv, x, n, &at) > 1e-5) bad = 1;
    int k = (int)(st % (uint64_t)len);
    double _Complex w = fu_dft_bin(x, len, k, -1); /* row 0's bin k */
    if (fv && cabs(w - (fv[2 * k] + I * fv[2 * k + 1])) > 1e-4 * (1 + cabs(w))) bad = 1;
    j->failures += bad;
    free(fv), free(bv), free(x);
    mlx_array_free(a), mlx_array_free(f), mlx_array_free(b);
  }
  mlx_stream_free(s);
  return NULL;
}

/* One batched rfft large enough to be split over the pool. */
static void pooled(void) {
  int shape[2] = {512, 96};
  mlx_array x = test_rand_f32(shape, 2, -1, 1), f = mlx_array_new(), b = mlx_array_new();
  CHECK_OK(mlx_fft_rfft(&f, x, 96, -1, MLX_FFT_NORM_ORTHO, test_stream()));
  CHECK_OK(mlx_fft_irfft(&b, f, 96, -1, MLX_FFT_NORM_ORTHO, test_stream()));
  double *xv = test_values(x);
  CHECK_CLOSE(b, xv, 512 * 96, 0, 1e-5);
  free(xv);
  mlx_array_free(x), mlx_array_free(f), mlx_array_free(b);
}

int main(void) {
  test_init();
  pthread_t th[THREADS];
  struct job jobs[THREADS];
  for (int i = 0; i < THREADS; i++) {
    jobs[i] = (struct job){i, 0};
    pthread_create(&th[i], NULL, worker, &jobs[i]);
  }
  pooled();
  for (int i = 0; i < THREADS; i++) {
    pthread_join(th[i], NULL);
    CHECK_MSG(jobs[i].failures == 0, "thread %d: %d wrong results", i, jobs[i].failures);
  }
  return test_done();
}
