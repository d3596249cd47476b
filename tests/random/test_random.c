/* Random: MLX's exact bit streams (values from MLX's own tests, which match
 * JAX's threefry), keys and split, determinism, global seeding, and the
 * distributions' statistics over 100k samples. */
#include <complex.h>

#include "test.h"

static mlx_array key_of(uint64_t seed) {
  mlx_array k = mlx_array_new();
  mlx_random_key(&k, seed);
  return k;
}

static void check_u32(mlx_array a, const uint32_t *want, size_t n) {
  CHECK_MSG(mlx_array_size(a) == n, "size %zu, want %zu", mlx_array_size(a), n);
  mlx_array c = mlx_array_new();
  mlx_astype(&c, a, MLX_UINT32, test_stream());
  const uint32_t *p = mlx_array_data_uint32(c);
  for (size_t i = 0; p && i < n && i < mlx_array_size(a); i++)
    CHECK_MSG(p[i] == want[i], "element %zu is %u, want %u", i, p[i], want[i]);
  mlx_array_free(c);
}

static void test_keys_and_bits(void) {
  mlx_stream s = test_stream();
  mlx_array k0 = key_of(0), k1 = key_of(1), r = mlx_array_new(), a = mlx_array_new(),
            b = mlx_array_new();
  uint32_t zero[2] = {0, 0};
  check_u32(k0, zero, 2);
  mlx_array kbig = key_of(0x123456789abcdef0ULL);
  uint32_t big[2] = {0x12345678u, 0x9abcdef0u};
  check_u32(kbig, big, 2);
  mlx_array_free(kbig);

  CHECK_OK(mlx_random_split(&a, &b, k0, s));
  uint32_t ka[2] = {4146024105u, 967050713u}, kb[2] = {2718843009u, 1272950319u};
  CHECK_SHAPE(a, 2);
  check_u32(a, ka, 2);
  check_u32(b, kb, 2);
  CHECK_OK(mlx_random_split_num(&r, k0, 3, s));
  CHECK_SHAPE(r, 3, 2);
  uint32_t k3[6] = {2467461003u, 428148500u, 3186719485u, 3840466878u, 2562233961u, 1946702221u};
  check_u32(r, k3, 6);

  CHECK_OK(mlx_random_bits(&r, NULL, 0, 4, k0, s));
  uint32_t v0 = 1797259609u;
  check_u32(r, &v0, 1);
  CHECK(mlx_array_dtype(r) == MLX_UINT32);
  CHECK_OK(mlx_random_bits(&r, NULL, 0, 2, k0, s));
  CHECK(mlx_array_dtype(r) == MLX_UINT16);
  uint32_t v2 = 345, v1 = 89;
  check_u32(r, &v2, 1);
  CHECK_OK(mlx_random_bits(&r, NULL, 0, 1, k0, s));
  CHECK(mlx_array_dtype(r) == MLX_UINT8);
  check_u32(r, &v1, 1);
  CHECK_OK(mlx_random_bits(&r, NULL, 0, 4, k1, s));
  uint32_t w0 = 507451445u, w2 = 6197, w1 = 53;
  check_u32(r, &w0, 1);
  CHECK_OK(mlx_random_bits(&r, NULL, 0, 2, k1, s));
  check_u32(r, &w2, 1);
  CHECK_OK(mlx_random_bits(&r, NULL, 0, 1, k1, s));
  check_u32(r, &w1, 1);

  int s31[2] = {3, 1};
  CHECK_OK(mlx_random_bits(&r, s31, 2, 4, k0, s));
  CHECK_SHAPE(r, 3, 1);
  uint32_t e31[3] = {4146024105u, 1351547692u, 2718843009u};
  check_u32(r, e31, 3);
  static const uint32_t e16[4][8] = {{20137, 63263, 64300, 20622, 16513},
                                     {20137, 63263, 64300, 20622, 16513, 41486},
                                     {20137, 63263, 1497, 14756, 16513, 41486, 44591},
                                     {20137, 63263, 1497, 14756, 16513, 41486, 44591, 19423}};
  for (int n = 5; n <= 8; n++) {
    CHECK_OK(mlx_random_bits(&r, &n, 1, 2, k0, s));
    check_u32(r, e16[n - 5], (size_t)n);
  }
  int z = 0;
  CHECK_OK(mlx_random_bits(&r, &z, 1, 4, k0, s));
  CHECK(mlx_array_size(r) == 0);
  CHECK_OK(mlx_array_eval(r));

  /* errors: width, key dtype and shape, negative dims */
  CHECK_FAILS(mlx_random_bits(&r, NULL, 0, 3, k0, s), "bit width");
  CHECK_FAILS(mlx_random_bits(&r, NULL, 0, 0, k0, s), "bit width");
  int32_t ik[2] = {0, 0};
  int two = 2;
  mlx_array bad = mlx_array_new_data(ik, &two, 1, MLX_INT32);
  CHECK_FAILS(mlx_random_bits(&r, NULL, 0, 4, bad, s), "key type uint32");
  mlx_array_free(bad);
  uint32_t uk[3] = {0, 0, 0};
  int three = 3;
  bad = mlx_array_new_data(uk, &three, 1, MLX_UINT32);
  mlx_array f0 = mlx_array_new_float(0);
  CHECK_FAILS(mlx_random_uniform(&r, f0, f0, NULL, 0, MLX_FLOAT32, bad, s), "key shape");
  CHECK_FAILS(mlx_random_normal(&r, NULL, 0, MLX_FLOAT32, 0, 1, bad, s), "key shape");
  mlx_array_free(f0);
  mlx_array_free(bad);
  int neg = -2;
  CHECK_FAILS(mlx_random_bits(&r, &neg, 1, 4, k0, s), "negative");
  CHECK_FAILS(mlx_random_split_num(&r, mlx_array_new(), 2, s), "empty");

  mlx_array_free(k0);
  mlx_array_free(k1);
  mlx_array_free(r);
  mlx_array_free(a);
  mlx_array_free(b);
}

static void test_uniform_exact(void) {
  mlx_stream s = test_stream();
  mlx_array k0 = key_of(0), k1 = key_of(1), r = mlx_array_new();
  mlx_array lo = mlx_array_new_float(0), hi = mlx_array_new_float(1);
  float f = 0;
  CHECK_OK(mlx_random_uniform(&r, lo, hi, NULL, 0, MLX_FLOAT32, k0, s));
  CHECK_OK(mlx_array_item_float32(&f, r));
  CHECK(f == (float)1797259609u / (float)UINT32_MAX);
  CHECK_OK(mlx_random_uniform(&r, lo, hi, NULL, 0, MLX_FLOAT32, k1, s));
  CHECK_OK(mlx_array_item_float32(&f, r));
  CHECK(f == (float)507451445u / (float)UINT32_MAX);
  int s31[2] = {3, 1};
  CHECK_OK(mlx_random_uniform(&r, lo, hi, s31, 2, MLX_FLOAT32, k0, s));
  const float *p = mlx_array_data_float32(r);
  CHECK(p && p[0] == (float)4146024105u / (float)UINT32_MAX &&
        p[1] == (float)1351547692u / (float)UINT32_MAX &&
        p[2] == (float)2718843009u / (float)UINT32_MAX);
  /* same key, same values; different keys from split differ */
  mlx_array r2 = mlx_array_new();
  CHECK_OK(mlx_random_uniform(&r2, lo, hi, s31, 2, MLX_FLOAT32, k0, s));
  const float *p2 = mlx_array_data_float32(r2);
  CHECK(p2 && !memcmp(p, p2, 3 * sizeof(float)));
  mlx_array_free(r2);
  CHECK_FAILS(mlx_random_uniform(&r, lo, hi, s31, 2, MLX_INT32, k0, s), "floating point");
  CHECK_FAILS(mlx_random_uniform(&r, lo, hi, s31, 2, MLX_FLOAT64, k0, s), "float64");
  int s4[1] = {4}, s2[1] = {2};
  mlx_array v4 = mlx_array_new();
  mlx_zeros(&v4, s4, 1, MLX_FLOAT32, s);
  mlx_array_free(lo);
  lo = mlx_array_new();
  int s24[2] = {2, 4};
  mlx_zeros(&lo, s24, 2, MLX_FLOAT32, s);
  CHECK_FAILS(mlx_random_uniform(&r, v4, hi, s2, 1, MLX_FLOAT32, k0, s), "cannot be broadcast");
  int s14[2] = {1, 4};
  CHECK_FAILS(mlx_random_uniform(&r, lo, hi, s14, 2, MLX_FLOAT32, k0, s), "cannot generate");
  mlx_array_free(v4);
  mlx_array_free(lo);
  mlx_array_free(hi);
  mlx_array_free(k0);
  mlx_array_free(k1);
  mlx_array_free(r);
}

static void test_global_seed(void) {
  mlx_stream s = test_stream();
  mlx_array a = mlx_array_new(), b = mlx_array_new(), x = mlx_array_new(), y = mlx_array_new();
  mlx_array none = mlx_array_new();
  mlx_random_seed(3);
  CHECK_OK(mlx_random_bits(&a, NULL, 0, 4, none, s));
  CHECK_OK(mlx_random_bits(&b, NULL, 0, 4, none, s));
  mlx_random_seed(3);
  CHECK_OK(mlx_random_bits(&x, NULL, 0, 4, none, s));
  CHECK_OK(mlx_random_bits(&y, NULL, 0, 4, none, s));
  uint32_t va, vb, vx, vy;
  mlx_array_item_uint32(&va, a);
  mlx_array_item_uint32(&vb, b);
  mlx_array_item_uint32(&vx, x);
  mlx_array_item_uint32(&vy, y);
  CHECK(va == vx && vb == vy && va != vb);
  /* the first global key after seed(s) is split(key(s))[1] */
  mlx_array k = key_of(3), k0 = mlx_array_new(), k1 = mlx_array_new();
  mlx_random_split(&k0, &k1, k, s);
  mlx_random_bits(&x, NULL, 0, 4, k1, s);
  mlx_array_item_uint32(&vx, x);
  CHECK(vx == va);
  mlx_array_free(k);
  mlx_array_free(k0);
  mlx_array_free(k1);
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(x);
  mlx_array_free(y);
}

/* mean and variance of a's values */
static void stats(mlx_array a, double *mean, double *var) {
  double *v = test_values(a);
  size_t n = mlx_array_size(a);
  double s = 0, q = 0;
  for (size_t i = 0; v && i < n; i++) s += v[i];
  *mean = s / (double)n;
  for (size_t i = 0; v && i < n; i++) q += (v[i] - *mean) * (v[i] - *mean);
  *var = q / (double)n;
  free(v);
}

static void test_distributions(void) {
  mlx_stream s = test_stream();
  const int N = 100000;
  int shape[1] = {N};
  mlx_array k = key_of(42), r = mlx_array_new(), none = mlx_array_new();
  double m, v;
  mlx_array lo = mlx_array_new_float(-2), hi = mlx_array_new_float(3);
  static const mlx_dtype ft[3] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16};
  for (int t = 0; t < 3; t++) {
    CHECK_OK(mlx_random_uniform(&r, lo, hi, shape, 1, ft[t], k, s));
    CHECK(mlx_array_dtype(r) == ft[t]);
    stats(r, &m, &v);
    CHECK_MSG(fabs(m - 0.5) < 0.03 && fabs(v - 25.0 / 12) < 0.05, "uniform %d: %g %g", t, m, v);
    double *x = test_values(r);
    int inside = 1;
    for (int i = 0; i < N; i++) inside &= x[i] >= -2 && x[i] < 3;
    CHECK(inside);
    free(x);
    CHECK_OK(mlx_random_normal(&r, shape, 1, ft[t], 0, 1, k, s));
    stats(r, &m, &v);
    CHECK_MSG(fabs(m) < 0.01 && fabs(v - 1) < 0.02, "normal %d: %g %g", t, m, v);
    CHECK_OK(mlx_random_laplace(&r, shape, 1, ft[t], 0, 1, k, s));
    stats(r, &m, &v);
    CHECK_MSG(fabs(m) < 0.02 && fabs(v - 2) < 0.06, "laplace %d: %g %g", t, m, v);
    CHECK_OK(mlx_random_gumbel(&r, shape, 1, ft[t], k, s));
    stats(r, &m, &v);
    CHECK_MSG(fabs(m - 0.5772157) < 0.03 && fabs(v - 1.6449341) < 0.06, "gumbel %d: %g %g", t,
              m, v);
  }
  /* loc/scale: the same draws, transformed (exactly, in float32) */
  mlx_array base = mlx_array_new();
  CHECK_OK(mlx_random_normal(&base, shape, 1, MLX_FLOAT32, 0, 1, k, s));
  CHECK_OK(mlx_random_normal(&r, shape, 1, MLX_FLOAT32, 1.5f, 2.0f, k, s));
  double *bv = test_values(base), *rv = test_values(r);
  int same = 1;
  for (int i = 0; i < N; i++) same &= fabs(rv[i] - (2.0 * bv[i] + 1.5)) <= 1e-5 * (1 + fabs(rv[i]));
  CHECK(same);
  free(bv);
  free(rv);
  /* normal = sqrt(2) erfinv(u) for u uniform on [nextafter(-1, 0), 1) */
  mlx_array u = mlx_array_new(), ulo = mlx_array_new_float(nextafterf(-1.0f, 0.0f));
  mlx_array uhi = mlx_array_new_float(1.0f);
  CHECK_OK(mlx_random_uniform(&u, ulo, uhi, shape, 1, MLX_FLOAT32, k, s));
  double *uv = test_values(u), *nv = test_values(base);
  int ok = 1;
  for (int i = 0; i < N; i++) {
    double z = nv[i], target = uv[i]; /* erf(z / sqrt2) should be u */
    ok &= fabs(erf(z / sqrt(2.0)) - target) <= 4e-7 + 4e-7 * fabs(target) / (1 - fabs(target) + 1e-7);
  }
  CHECK(ok);
  free(uv);
  free(nv);
  mlx_array_free(u);
  mlx_array_free(ulo);
  mlx_array_free(uhi);
  CHECK_OK(mlx_random_normal(&r, shape, 1, MLX_FLOAT64, 0, 3, k, s));
  stats(r, &m, &v);
  CHECK_MSG(fabs(m) < 0.03 && fabs(v - 9) < 0.2, "normal f64: %g %g", m, v);
  mlx_array_free(base);
  /* normal_broadcast with array loc/scale */
  float locs[2] = {-5, 5}, scales[2] = {1, 0.5f};
  int s2[1] = {2}, sN2[2] = {N / 2, 2};
  mlx_array la = mlx_array_new_data(locs, s2, 1, MLX_FLOAT32),
            sa = mlx_array_new_data(scales, s2, 1, MLX_FLOAT32);
  CHECK_OK(mlx_random_normal_broadcast(&r, sN2, 2, MLX_FLOAT32, la, sa, k, s));
  double *x = test_values(r), s0 = 0, s1 = 0, q1 = 0;
  for (int i = 0; i < N / 2; i++) {
    s0 += x[2 * i];
    s1 += x[2 * i + 1];
  }
  s0 /= N / 2;
  s1 /= N / 2;
  for (int i = 0; i < N / 2; i++) q1 += (x[2 * i + 1] - s1) * (x[2 * i + 1] - s1);
  CHECK_MSG(fabs(s0 + 5) < 0.03 && fabs(s1 - 5) < 0.02 && fabs(q1 / (N / 2) - 0.25) < 0.01,
            "normal_broadcast %g %g %g", s0, s1, q1 / (N / 2));
  free(x);
  CHECK_OK(mlx_random_normal_broadcast(&r, shape, 1, MLX_FLOAT32, none, none, k, s));
  mlx_array_free(la);
  mlx_array_free(sa);

  /* complex64: real and imaginary parts each N(0, 1/2); scale and loc */
  CHECK_OK(mlx_random_normal(&r, shape, 1, MLX_COMPLEX64, 0, 1, k, s));
  CHECK(mlx_array_dtype(r) == MLX_COMPLEX64);
  const mlx_complex64_t *cz = mlx_array_data_complex64(r);
  double mr = 0, mi = 0, vr = 0, vi = 0;
  for (int i = 0; cz && i < N; i++) {
    mr += crealf(cz[i]);
    mi += cimagf(cz[i]);
    vr += crealf(cz[i]) * crealf(cz[i]);
    vi += cimagf(cz[i]) * cimagf(cz[i]);
  }
  CHECK_MSG(fabs(mr / N) < 0.01 && fabs(mi / N) < 0.01 && fabs(vr / N - 0.5) < 0.015 &&
                fabs(vi / N - 0.5) < 0.015,
            "complex normal %g %g %g %g", mr / N, mi / N, vr / N, vi / N);
  mlx_array r2 = mlx_array_new();
  CHECK_OK(mlx_random_normal(&r2, shape, 1, MLX_COMPLEX64, 3, 2, k, s));
  const mlx_complex64_t *cz2 = mlx_array_data_complex64(r2);
  cz = mlx_array_data_complex64(r);
  int cok = 1;
  for (int i = 0; cz && cz2 && i < N; i++)
    cok &= cabsf(cz2[i] - (2 * cz[i] + 3)) <= 1e-5f * (1 + cabsf(cz2[i]));
  CHECK(cok);
  mlx_array_free(r2);
  CHECK_FAILS(mlx_random_normal(&r, shape, 1, MLX_INT32, 0, 1, k, s), "floating point");

  /* randint: [low, high) integers, uniform */
  mlx_array il = mlx_array_new_int(-3), ih = mlx_array_new_int(7);
  CHECK_OK(mlx_random_randint(&r, il, ih, shape, 1, MLX_INT32, k, s));
  CHECK(mlx_array_dtype(r) == MLX_INT32);
  x = test_values(r);
  int counts[10] = {0}, inrange = 1;
  for (int i = 0; i < N; i++) {
    inrange &= x[i] >= -3 && x[i] < 7 && x[i] == floor(x[i]);
    if (x[i] >= -3 && x[i] < 7) counts[(int)x[i] + 3]++;
  }
  CHECK(inrange);
  for (int i = 0; i < 10; i++) CHECK_MSG(abs(counts[i] - N / 10) < 600, "bin %d: %d", i, counts[i]);
  free(x);
  CHECK_FAILS(mlx_random_randint(&r, il, ih, shape, 1, MLX_FLOAT32, k, s), "integer dtypes");
  mlx_array_free(il);
  mlx_array_free(ih);

  /* bernoulli */
  mlx_array pp = mlx_array_new_float(0.3f);
  CHECK_OK(mlx_random_bernoulli(&r, pp, shape, 1, k, s));
  CHECK(mlx_array_dtype(r) == MLX_BOOL);
  stats(r, &m, &v);
  CHECK_MSG(fabs(m - 0.3) < 0.01, "bernoulli %g", m);
  float pe[2] = {2.0f, -2.0f};
  mlx_array pa = mlx_array_new_data(pe, s2, 1, MLX_FLOAT32);
  CHECK_OK(mlx_random_bernoulli(&r, pa, s2, 1, k, s));
  double tf[2] = {1, 0};
  CHECK_CLOSE(r, tf, 2, 0, 0);
  mlx_array pi = mlx_array_new_int(1);
  CHECK_FAILS(mlx_random_bernoulli(&r, pi, shape, 1, k, s), "float type");
  mlx_array_free(pi);
  mlx_array_free(pa);
  mlx_array_free(pp);

  /* truncated normal: inside the bounds, symmetric mean 0, var of N(0,1)
   * truncated to [-1, 1] is 1 - 2 phi(1) / (2 Phi(1) - 1) = 0.291125 */
  mlx_array tl = mlx_array_new_float(-1), tu = mlx_array_new_float(1);
  CHECK_OK(mlx_random_truncated_normal(&r, tl, tu, shape, 1, MLX_FLOAT32, k, s));
  x = test_values(r);
  inrange = 1;
  for (int i = 0; i < N; i++) inrange &= x[i] >= -1 && x[i] <= 1;
  CHECK(inrange);
  free(x);
  stats(r, &m, &v);
  CHECK_MSG(fabs(m) < 0.01 && fabs(v - 0.291125) < 0.01, "truncated %g %g", m, v);
  mlx_array_free(tl);
  mlx_array_free(tu);
  mlx_array_free(lo);
  mlx_array_free(hi);
  mlx_array_free(k);
  mlx_array_free(r);
}

static void test_categorical_permutation(void) {
  mlx_stream s = test_stream();
  mlx_array k = key_of(7), r = mlx_array_new();
  /* logits log([0.1, 0.2, 0.7]) for each of 2 rows: frequencies */
  float lg[6];
  const double pr[3] = {0.1, 0.2, 0.7};
  for (int i = 0; i < 6; i++) lg[i] = (float)log(pr[i % 3]);
  int s23[2] = {2, 3};
  mlx_array logits = mlx_array_new_data(lg, s23, 2, MLX_FLOAT32);
  const int NS = 30000;
  CHECK_OK(mlx_random_categorical_num_samples(&r, logits, -1, NS, k, s));
  CHECK_SHAPE(r, 2, NS);
  CHECK(mlx_array_dtype(r) == MLX_UINT32);
  double *x = test_values(r);
  int c[2][3] = {{0}};
  for (int i = 0; i < 2 * NS; i++) c[i / NS][(int)x[i]]++;
  for (int row = 0; row < 2; row++)
    for (int j = 0; j < 3; j++)
      CHECK_MSG(fabs(c[row][j] / (double)NS - pr[j]) < 0.015, "class %d: %d", j, c[row][j]);
  free(x);
  CHECK_OK(mlx_random_categorical(&r, logits, 1, k, s));
  CHECK_SHAPE(r, 2);
  int s52[2] = {5, 2};
  CHECK_OK(mlx_random_categorical_shape(&r, logits, 1, s52, 2, k, s));
  CHECK_SHAPE(r, 5, 2);
  CHECK_FAILS(mlx_random_categorical_shape(&r, logits, 1, s23, 2, k, s), "not broadcast");
  CHECK_FAILS(mlx_random_categorical(&r, logits, 2, k, s), "out of bounds");

  CHECK_OK(mlx_random_permutation_arange(&r, 50, k, s));
  CHECK(mlx_array_dtype(r) == MLX_UINT32);
  x = test_values(r);
  int seen[50] = {0}, perm = 1, moved = 0;
  for (int i = 0; i < 50; i++) {
    perm &= x[i] >= 0 && x[i] < 50 && !seen[(int)x[i]]++;
    moved += x[i] != i;
  }
  CHECK(perm && moved > 10);
  free(x);
  /* permuting rows of a (4, 3) matrix keeps each row intact */
  float m[12];
  for (int i = 0; i < 12; i++) m[i] = (float)i;
  int s43[2] = {4, 3};
  mlx_array mat = mlx_array_new_data(m, s43, 2, MLX_FLOAT32);
  CHECK_OK(mlx_random_permutation(&r, mat, 0, k, s));
  CHECK_SHAPE(r, 4, 3);
  x = test_values(r);
  int rows = 1, rs[4] = {0};
  for (int i = 0; i < 4; i++) {
    int row = (int)x[3 * i] / 3;
    rows &= x[3 * i + 1] == 3 * row + 1 && x[3 * i + 2] == 3 * row + 2 && !rs[row]++;
  }
  CHECK(rows);
  free(x);
  CHECK_OK(mlx_random_permutation(&r, mat, -1, k, s));
  x = test_values(r);
  int cols = 1;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 3; j++) cols &= (int)x[3 * i + j] / 3 == i;
  CHECK(cols);
  free(x);
  CHECK_FAILS(mlx_random_permutation(&r, mat, 2, k, s), "out of bounds");
  mlx_array_free(mat);
  mlx_array_free(logits);
  mlx_array_free(k);
  mlx_array_free(r);
}

int main(void) {
  test_init();
  size_t before = test_active_memory();
  test_keys_and_bits();
  test_uniform_exact();
  test_global_seed();
  test_distributions();
  test_categorical_permutation();
  CHECK_MSG(test_active_memory() == before, "active memory %zu, was %zu", test_active_memory(),
            before);
  return test_done();
}
