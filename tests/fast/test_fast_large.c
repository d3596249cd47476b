/* Fast ops on inputs large enough to be split across worker threads:
 * sampled rows against direct float64 computations in the test. */
#include "test.h"

static void test_rms_large(void) {
  int R = 3000, D = 96, shape[2] = {R, D}, ws = D;
  mlx_array x = test_rand_f32(shape, 2, -3, 3), w = test_rand_f32(&ws, 1, 0.5, 1.5);
  mlx_array y = mlx_array_new();
  CHECK_OK(mlx_fast_rms_norm(&y, x, w, 1e-6f, test_stream()));
  CHECK_OK(mlx_array_eval(y));
  const float *xv = mlx_array_data_float32(x), *wv = mlx_array_data_float32(w);
  const float *yv = mlx_array_data_float32(y);
  int bad = 0;
  for (int r = 0; r < R; r += 7) {
    double ss = 0;
    for (int d = 0; d < D; d++) ss += (double)xv[r * D + d] * xv[r * D + d];
    double inv = 1 / sqrt(ss / D + 1e-6);
    for (int d = 0; d < D; d++) {
      double ref = (double)(float)(xv[r * D + d] * inv) * wv[d];
      if (fabs(yv[r * D + d] - ref) > 1e-5 * fabs(ref) + 1e-6) bad++;
    }
  }
  CHECK_MSG(bad == 0, "%d elements off", bad);
  mlx_array_free(x);
  mlx_array_free(w);
  mlx_array_free(y);
}

static void test_sdpa_large(void) {
  enum { B = 2, HQ = 8, HKV = 2, QL = 120, KL = 160, D = 32 };
  int qs[4] = {B, HQ, QL, D}, ks[4] = {B, HKV, KL, D};
  mlx_array q = test_rand_f32(qs, 4, -1, 1), k = test_rand_f32(ks, 4, -1, 1);
  mlx_array v = test_rand_f32(ks, 4, -1, 1), none = mlx_array_new(), y = mlx_array_new();
  float scale = 0.4f;
  CHECK_OK(mlx_fast_scaled_dot_product_attention(&y, q, k, v, scale, "causal", none, none,
                                                 test_stream()));
  CHECK_OK(mlx_array_eval(y));
  const float *qv = mlx_array_data_float32(q), *kv = mlx_array_data_float32(k);
  const float *vv = mlx_array_data_float32(v), *yv = mlx_array_data_float32(y);
  int bad = 0;
  double sc[KL];
  for (int row = 0; row < B * HQ * QL; row += 13) {
    int i = row % QL, h = (row / QL) % HQ, b = row / QL / HQ, hk = h / (HQ / HKV);
    const float *qr = qv + (size_t)row * D;
    size_t head = ((size_t)b * HKV + hk) * KL * D;
    const float *kb = kv + head, *vb = vv + head;
    int n = i + KL - QL + 1; /* keys visible to query i */
    double mx = -INFINITY, den = 0;
    for (int t = 0; t < n; t++) {
      double s = 0;
      for (int d = 0; d < D; d++) s += (double)qr[d] * kb[t * D + d];
      sc[t] = s * scale;
      if (sc[t] > mx) mx = sc[t];
    }
    for (int t = 0; t < n; t++) den += sc[t] = exp(sc[t] - mx);
    for (int d = 0; d < D; d++) {
      double o = 0;
      for (int t = 0; t < n; t++) o += sc[t] * vb[t * D + d];
      o /= den;
      if (fabs(yv[(size_t)row * D + d] - o) > 1e-5 * fabs(o) + 1e-6) bad++;
    }
  }
  CHECK_MSG(bad == 0, "%d elements off", bad);
  mlx_array_free(q);
  mlx_array_free(k);
  mlx_array_free(v);
  mlx_array_free(y);
}

static void test_rope_large(void) {
  int shape[4] = {1, 16, 512, 64};
  mlx_array x = test_rand_f32(shape, 4, -1, 1), y = mlx_array_new(), none = mlx_array_new();
  mlx_optional_float base = {10000.0f, true};
  CHECK_OK(mlx_fast_rope(&y, x, 64, false, base, 1.0f, 1000, none, test_stream()));
  CHECK_OK(mlx_array_eval(y));
  const float *xv = mlx_array_data_float32(x), *yv = mlx_array_data_float32(y);
  int bad = 0;
  for (int r = 0; r < 16 * 512; r += 11) {
    int t = r % 512;
    for (int i = 0; i < 32; i++) {
      double th = (t + 1000.0) * exp(-i * log(10000.0) / 32);
      double x1 = xv[r * 64 + i], x2 = xv[r * 64 + 32 + i];
      double o1 = x1 * cos(th) - x2 * sin(th), o2 = x1 * sin(th) + x2 * cos(th);
      if (fabs(yv[r * 64 + i] - o1) > 2e-6 || fabs(yv[r * 64 + 32 + i] - o2) > 2e-6) bad++;
    }
  }
  CHECK_MSG(bad == 0, "%d pairs off", bad);
  mlx_array_free(x);
  mlx_array_free(y);
}

int main(void) {
  test_init();
  test_seed(3);
  size_t base = test_active_memory();
  test_rms_large();
  test_sdpa_large();
  test_rope_large();
  CHECK_MSG(test_active_memory() == base, "active memory %zu, baseline %zu",
            test_active_memory(), base);
  return test_done();
}
