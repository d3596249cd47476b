/* random.multivariate_normal: MLX's values for a fixed key (the same
 * normal draws and the same covariance square root), the broadcast of
 * cov's and mean's batch with shape, determinism per key, and the sample
 * moments of a large draw. */
#include "la_test.h"

#include "../data/linalg_ref.h"

static void test_against_mlx(void) {
  mlx_stream s = test_stream();
  int ms[1] = {3}, cs[3] = {2, 3, 3}, shape[2] = {4, 2};
  mlx_array mean = la_array(la_mvn_mean, 1, ms, MLX_FLOAT32, 0);
  mlx_array cov = la_array(la_mvn_cov, 3, cs, MLX_FLOAT32, 1);
  mlx_array key = mlx_array_new(), r = mlx_array_new(), r2 = mlx_array_new();
  mlx_random_key(&key, LA_MVN_SEED);
  CHECK_OK(mlx_random_multivariate_normal(&r, mean, cov, shape, 2, MLX_FLOAT32, key, s));
  CHECK_SHAPE(r, 4, 2, 3);
  CHECK(mlx_array_dtype(r) == MLX_FLOAT32);
  CHECK_CLOSE(r, la_mvn_ref, 24, 1e-4, 1e-4);
  CHECK_OK(mlx_random_multivariate_normal(&r2, mean, cov, shape, 2, MLX_FLOAT32, key, s));
  double *a = test_values(r), *b = test_values(r2);
  CHECK(a && b && !memcmp(a, b, sizeof(double) * 24)); /* same key, same draw */
  free(a), free(b);
  mlx_array_free(mean), mlx_array_free(cov), mlx_array_free(key);
  mlx_array_free(r), mlx_array_free(r2);
}

/* mean [1, -2], cov [[2, 0.6], [0.6, 0.5]]: moments of 40000 draws. */
static void test_moments(void) {
  mlx_stream s = test_stream();
  double m[2] = {1, -2}, c[4] = {2, 0.6, 0.6, 0.5};
  int ms[1] = {2}, cs[2] = {2, 2}, shape[1] = {40000};
  mlx_array mean = la_array(m, 1, ms, MLX_FLOAT32, 0), cov = la_array(c, 2, cs, MLX_FLOAT32, 0);
  mlx_array key = mlx_array_new(), r = mlx_array_new();
  mlx_random_key(&key, 3);
  CHECK_OK(mlx_random_multivariate_normal(&r, mean, cov, shape, 1, MLX_FLOAT32, key, s));
  CHECK_SHAPE(r, 40000, 2);
  double *v = test_values(r), mu[2] = {0, 0}, cv[4] = {0, 0, 0, 0};
  for (int i = 0; v && i < 40000; i++) mu[0] += v[2 * i] / 40000, mu[1] += v[2 * i + 1] / 40000;
  for (int i = 0; v && i < 40000; i++)
    for (int p = 0; p < 2; p++)
      for (int q = 0; q < 2; q++) cv[2 * p + q] += (v[2 * i + p] - mu[p]) * (v[2 * i + q] - mu[q]) / 40000;
  CHECK_MSG(fabs(mu[0] - 1) < 0.03 && fabs(mu[1] + 2) < 0.03, "mean %g %g", mu[0], mu[1]);
  for (int k = 0; k < 4; k++) CHECK_MSG(fabs(cv[k] - c[k]) < 0.05, "cov[%d] = %g, expected %g", k, cv[k], c[k]);
  free(v);
  /* no key: the global sequence; an empty shape: mean's batch */
  mlx_array nokey = mlx_array_new();
  CHECK_OK(mlx_random_multivariate_normal(&r, mean, cov, NULL, 0, MLX_FLOAT32, nokey, s));
  CHECK_OK(mlx_array_eval(r));
  CHECK_SHAPE(r, 2);
  mlx_array_free(mean), mlx_array_free(cov), mlx_array_free(key), mlx_array_free(r);
  mlx_array_free(nokey);
}

int main(void) {
  test_init();
  test_against_mlx();
  test_moments();
  return test_done();
}
