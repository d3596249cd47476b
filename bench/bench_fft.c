/* FFT benchmarks: complex and real transforms of one long signal (2^20, a
 * product of small odd primes, a large prime, 10^6) and batched 2-D
 * transforms. Each case times "build the lazy op, then eval" on an
 * evaluated random input (bench_common.h's protocol); GFLOPs is the
 * customary nominal 5 n log2 n (complex) or 2.5 n log2 n (real) per
 * transform. bench/compare_fft.py runs the same cases in numpy and MLX.
 * Usage: bench_fft [--quick] */
#include <math.h>

#include "bench_common.h"

struct fcase {
  const char *name;
  int real, two_d, nd, shape[2];
};

struct run {
  const struct fcase *c;
  mlx_array x;
  mlx_stream s;
};

static int run_once(void *ctx) {
  struct run *r = ctx;
  const struct fcase *c = r->c;
  mlx_array y = mlx_array_new();
  int axes[2] = {-2, -1}, rc;
  if (c->two_d)
    rc = c->real ? mlx_fft_rfft2(&y, r->x, NULL, 0, axes, 2, MLX_FFT_NORM_BACKWARD, r->s)
                 : mlx_fft_fft2(&y, r->x, NULL, 0, axes, 2, MLX_FFT_NORM_BACKWARD, r->s);
  else
    rc = c->real ? mlx_fft_rfft(&y, r->x, c->shape[c->nd - 1], -1, MLX_FFT_NORM_BACKWARD, r->s)
                 : mlx_fft_fft(&y, r->x, c->shape[c->nd - 1], -1, MLX_FFT_NORM_BACKWARD, r->s);
  if (!rc) rc = mlx_array_eval(y);
  mlx_array_free(y);
  return rc;
}

static mlx_array random_input(const struct fcase *c, mlx_stream s) {
  size_t n = 1;
  for (int d = 0; d < c->nd; d++) n *= (size_t)c->shape[d];
  float *v = malloc(sizeof(float) * 2 * n);
  uint64_t st = 88172645463325252ULL;
  for (size_t k = 0; k < 2 * n; k++) {
    st ^= st << 13, st ^= st >> 7, st ^= st << 17;
    v[k] = (float)((double)(st >> 11) / 9007199254740992.0 * 2 - 1);
  }
  mlx_array a = mlx_array_new_data(v, c->shape, c->nd, c->real ? MLX_FLOAT32 : MLX_COMPLEX64);
  free(v);
  (void)s;
  return a;
}

static double nominal_flops(const struct fcase *c) {
  double total = 0, lines = 1, per = c->real ? 2.5 : 5.0;
  for (int d = 0; d < c->nd; d++) lines *= c->shape[d];
  int first = c->two_d ? c->nd - 2 : c->nd - 1;
  for (int d = first; d < c->nd; d++) total += per * lines * log2((double)c->shape[d]);
  return total;
}

int main(int argc, char **argv) {
  bench_init();
  int quick = argc > 1 && !strcmp(argv[1], "--quick");
  static const struct fcase full[] = {
      {"fft/fft", 0, 0, 1, {1 << 20}},           {"fft/rfft", 1, 0, 1, {1 << 20}},
      {"fft/fft", 0, 0, 1, {255255}},            {"fft/rfft", 1, 0, 1, {255255}},
      {"fft/fft", 0, 0, 1, {1000000}},           {"fft/rfft", 1, 0, 1, {1000000}},
      {"fft/fft", 0, 0, 1, {1000003}},           {"fft/rfft", 1, 0, 1, {1000003}},
      {"fft/fft_batch", 0, 0, 2, {4096, 256}},   {"fft/rfft_batch", 1, 0, 2, {4096, 256}},
      {"fft/fft2", 0, 1, 2, {1024, 1024}},       {"fft/rfft2", 1, 1, 2, {1024, 1024}},
  };
  static const struct fcase small[] = {
      {"fft/fft", 0, 0, 1, {4096}},   {"fft/rfft", 1, 0, 1, {4099}},
      {"fft/fft2", 0, 1, 2, {64, 60}}, {"fft/rfft2", 1, 1, 2, {30, 64}},
  };
  const struct fcase *cases = quick ? small : full;
  size_t ncases = quick ? sizeof small / sizeof small[0] : sizeof full / sizeof full[0];
  mlx_stream s = mlx_default_cpu_stream_new();
  for (size_t i = 0; i < ncases; i++) {
    struct run r = {&cases[i], random_input(&cases[i], s), s};
    mlx_array_eval(r.x);
    bench_stats st = bench_time(run_once, &r);
    bench_report(cases[i].name, cases[i].shape, cases[i].nd,
                 cases[i].real ? "float32" : "complex64", st, 0, nominal_flops(&cases[i]), 0,
                 NULL);
    mlx_array_free(r.x);
  }
  mlx_stream_free(s);
  return 0;
}
