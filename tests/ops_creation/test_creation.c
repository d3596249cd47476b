/* Creation ops: values, dtypes, shapes, errors, laziness, leaks. */
#include "../data/creation_ref.h"
#include "ops/elementwise.h"
#include "test.h"

static void check_vals(mlx_array a, const double *ref, size_t n, double tol) {
  CHECK_CLOSE(a, ref, n, tol, tol);
}

static void test_full_family(void) {
  mlx_stream s = test_stream();
  mlx_array a = mlx_array_new();
  int shape[3] = {2, 3, 4};
  CHECK_OK(mlx_zeros(&a, shape, 3, MLX_INT16, s));
  CHECK_SHAPE(a, 2, 3, 4);
  CHECK(mlx_array_dtype(a) == MLX_INT16);
  double ref[24];
  for (int i = 0; i < 24; i++) ref[i] = 0;
  check_vals(a, ref, 24, 0);
  CHECK_OK(mlx_ones(&a, shape, 3, MLX_BFLOAT16, s));
  CHECK(mlx_array_dtype(a) == MLX_BFLOAT16);
  for (int i = 0; i < 24; i++) ref[i] = 1;
  check_vals(a, ref, 24, 0);
  /* data access gives a contiguous copy of the broadcast scalar */
  CHECK_OK(mlx_ones(&a, shape, 3, MLX_FLOAT32, s));
  const float *p = mlx_array_data_float32(a);
  CHECK(p && p[0] == 1.0f && p[23] == 1.0f);

  /* full casts vals to dtype and broadcasts it */
  float row[4] = {1.5f, -2.25f, 3.75f, 4.0f};
  int rs[1] = {4};
  mlx_array v = mlx_array_new_data(row, rs, 1, MLX_FLOAT32);
  CHECK_OK(mlx_full(&a, shape, 3, v, MLX_INT32, s));
  CHECK(mlx_array_dtype(a) == MLX_INT32);
  CHECK_SHAPE(a, 2, 3, 4);
  for (int i = 0; i < 24; i++) ref[i] = (double)(int)row[i % 4];
  check_vals(a, ref, 24, 0);
  int bad[2] = {3, 5};
  CHECK_FAILS(mlx_full(&a, bad, 2, v, MLX_FLOAT32, s), "cannot broadcast");
  int neg[2] = {3, -1};
  CHECK_FAILS(mlx_zeros(&a, neg, 2, MLX_FLOAT32, s), "negative");
  CHECK_FAILS(mlx_ones(&a, shape, 3, (mlx_dtype)99, s), "invalid dtype");
  CHECK_FAILS(mlx_zeros(&a, NULL, 2, MLX_FLOAT32, s), "NULL");
  CHECK_FAILS(mlx_zeros(NULL, shape, 2, MLX_FLOAT32, s), "NULL");

  /* zeros of shape () and with a zero dimension */
  CHECK_OK(mlx_zeros(&a, NULL, 0, MLX_FLOAT64, s));
  CHECK(mlx_array_ndim(a) == 0 && mlx_array_size(a) == 1);
  int zs[2] = {0, 3};
  CHECK_OK(mlx_ones(&a, zs, 2, MLX_FLOAT32, s));
  CHECK(mlx_array_size(a) == 0);
  CHECK_OK(mlx_array_eval(a));

  /* _like: shape and dtype of a; full_like broadcasts a with vals */
  mlx_array b = test_rand_f32(shape, 3, -1, 1);
  CHECK_OK(mlx_zeros_like(&a, b, s));
  CHECK_SHAPE(a, 2, 3, 4);
  CHECK(mlx_array_dtype(a) == MLX_FLOAT32);
  CHECK_OK(mlx_ones_like(&a, b, s));
  for (int i = 0; i < 24; i++) ref[i] = 1;
  check_vals(a, ref, 24, 0);
  mlx_array sc = mlx_array_new_float(2.5f);
  CHECK_OK(mlx_full_like(&a, b, sc, MLX_FLOAT16, s));
  CHECK_SHAPE(a, 2, 3, 4);
  CHECK(mlx_array_dtype(a) == MLX_FLOAT16);
  for (int i = 0; i < 24; i++) ref[i] = 2.5;
  check_vals(a, ref, 24, 0);
  CHECK_FAILS(mlx_full_like(&a, b, bad[0] ? mlx_array_new() : sc, MLX_FLOAT16, s), "empty");
  mlx_array_free(sc);
  mlx_array_free(b);
  mlx_array_free(v);
  mlx_array_free(a);
}

static void test_full_is_lazy(void) {
  size_t before = test_active_memory();
  mlx_array a = mlx_array_new();
  int big[2] = {10000, 10000}; /* 400 MB if materialised */
  CHECK_OK(mlx_zeros(&a, big, 2, MLX_FLOAT32, test_stream()));
  CHECK_OK(mlx_array_eval(a));
  CHECK_MSG(test_active_memory() - before < 4096, "zeros allocated %zu bytes",
            test_active_memory() - before);
  mlx_array_free(a);
}

static void test_arange(void) {
  mlx_stream s = test_stream();
  mlx_array a = mlx_array_new();
  static const double cases[4][3] = {{0, 10, 0.3}, {5, -3, -0.7}, {-2.5, 2.5, 0.5}, {0, 1, 0.1}};
  const double *refs[4] = {arange_f64_0, arange_f64_1, arange_f64_2, arange_f64_3};
  size_t ns[4] = {arange_f64_0_N, arange_f64_1_N, arange_f64_2_N, arange_f64_3_N};
  for (int c = 0; c < 4; c++) {
    CHECK_OK(mlx_arange(&a, cases[c][0], cases[c][1], cases[c][2], MLX_FLOAT64, s));
    CHECK(mlx_array_dtype(a) == MLX_FLOAT64);
    check_vals(a, refs[c], ns[c], 1e-12);
    CHECK_OK(mlx_arange(&a, cases[c][0], cases[c][1], cases[c][2], MLX_FLOAT32, s));
    check_vals(a, refs[c], ns[c], 1e-5);
  }
  /* float32 accumulates in float32 as MLX does: element i is the i-fold sum */
  CHECK_OK(mlx_arange(&a, 0, 10, 0.1, MLX_FLOAT32, s));
  CHECK_SHAPE(a, 100);
  const float *p = mlx_array_data_float32(a);
  float acc = 0.0f, d = 0.1f;
  int exact = 1;
  for (int i = 0; i < 100; i++, acc += d) exact &= p[i] == acc;
  CHECK(exact);
  /* integer dtypes: step truncated like the endpoints */
  CHECK_OK(mlx_arange(&a, 10, -2, -3, MLX_INT32, s));
  double ri[4] = {10, 7, 4, 1};
  CHECK_SHAPE(a, 4);
  check_vals(a, ri, 4, 0);
  CHECK_OK(mlx_arange(&a, 0, 5, 1, MLX_UINT8, s));
  double ru[5] = {0, 1, 2, 3, 4};
  check_vals(a, ru, 5, 0);
  CHECK(mlx_array_dtype(a) == MLX_UINT8);
  CHECK_OK(mlx_arange(&a, 0, 3, 0.5, MLX_FLOAT16, s));
  double rh[6] = {0, 0.5, 1, 1.5, 2, 2.5};
  check_vals(a, rh, 6, 0);
  /* empty and infinite-step ranges */
  CHECK_OK(mlx_arange(&a, 5, 0, 1, MLX_FLOAT32, s));
  CHECK(mlx_array_size(a) == 0);
  CHECK_OK(mlx_arange(&a, 1, 4, INFINITY, MLX_FLOAT32, s));
  double one[1] = {1};
  check_vals(a, one, 1, 0);
  CHECK_FAILS(mlx_arange(&a, 0, 5, 0, MLX_FLOAT32, s), "step must be nonzero");
  CHECK_FAILS(mlx_arange(&a, 0, NAN, 1, MLX_FLOAT32, s), "cannot compute length");
  CHECK_FAILS(mlx_arange(&a, 0, INFINITY, 1, MLX_FLOAT32, s), "cannot compute length");
  CHECK_FAILS(mlx_arange(&a, 0, 5, 1, MLX_BOOL, s), "bool");
  CHECK_FAILS(mlx_arange(&a, 0, 1e12, 1, MLX_FLOAT32, s), "maximum size");
  mlx_array_free(a);
}

static void test_linspace(void) {
  mlx_stream s = test_stream();
  mlx_array a = mlx_array_new();
  static const double cases[3][3] = {{0, 1, 11}, {-3.5, 7.25, 50}, {2, -2, 7}};
  const double *refs[3] = {linspace_0, linspace_1, linspace_2};
  for (int c = 0; c < 3; c++) {
    int num = (int)cases[c][2];
    CHECK_OK(mlx_linspace(&a, cases[c][0], cases[c][1], num, MLX_FLOAT32, s));
    CHECK(mlx_array_dtype(a) == MLX_FLOAT32);
    check_vals(a, refs[c], (size_t)num, 1e-6);
    CHECK_OK(mlx_linspace(&a, cases[c][0], cases[c][1], num, MLX_FLOAT64, s));
    check_vals(a, refs[c], (size_t)num, 1e-14);
  }
  /* endpoints are exact */
  CHECK_OK(mlx_linspace(&a, -3.5, 7.25, 50, MLX_FLOAT32, s));
  const float *p = mlx_array_data_float32(a);
  CHECK(p[0] == -3.5f && p[49] == 7.25f);
  CHECK_OK(mlx_linspace(&a, 0, 10, 5, MLX_INT32, s));
  double ri[5] = {0, 2, 5, 7, 10};
  check_vals(a, ri, 5, 0);
  CHECK_OK(mlx_linspace(&a, 3, 10, 1, MLX_FLOAT32, s));
  double r1[1] = {3};
  check_vals(a, r1, 1, 0);
  CHECK_OK(mlx_linspace(&a, 3, 10, 0, MLX_FLOAT32, s));
  CHECK(mlx_array_size(a) == 0);
  CHECK_FAILS(mlx_linspace(&a, 0, 1, -2, MLX_FLOAT32, s), "non-negative");
  mlx_array_free(a);
}

static void test_eye_tri(void) {
  mlx_stream s = test_stream();
  mlx_array a = mlx_array_new();
  CHECK_OK(mlx_eye(&a, 4, 6, 1, MLX_FLOAT32, s));
  CHECK_SHAPE(a, 4, 6);
  check_vals(a, eye_4_6_1, eye_4_6_1_N, 0);
  CHECK_OK(mlx_eye(&a, 5, 3, -2, MLX_INT64, s));
  CHECK(mlx_array_dtype(a) == MLX_INT64);
  check_vals(a, eye_5_3_m2, eye_5_3_m2_N, 0);
  CHECK_OK(mlx_identity(&a, 3, MLX_BOOL, s));
  CHECK(mlx_array_dtype(a) == MLX_BOOL);
  check_vals(a, eye_3_3_0, eye_3_3_0_N, 0);
  CHECK_OK(mlx_tri(&a, 4, 6, 1, MLX_FLOAT16, s));
  check_vals(a, tri_4_6_1, tri_4_6_1_N, 0);
  CHECK_OK(mlx_tri(&a, 5, 3, -2, MLX_UINT32, s));
  check_vals(a, tri_5_3_m2, tri_5_3_m2_N, 0);
  CHECK_OK(mlx_tri(&a, 3, 3, 0, MLX_COMPLEX64, s));
  check_vals(a, tri_3_3_0, tri_3_3_0_N, 0);
  CHECK_OK(mlx_eye(&a, 3, 4, 100, MLX_FLOAT32, s)); /* diagonal outside: all zeros */
  double z[12] = {0};
  check_vals(a, z, 12, 0);
  CHECK_FAILS(mlx_eye(&a, -1, 3, 0, MLX_FLOAT32, s), "non-negative");
  CHECK_FAILS(mlx_tri(&a, 3, -3, 0, MLX_FLOAT32, s), "non-negative");
  CHECK_FAILS(mlx_identity(&a, 3, (mlx_dtype)-1, s), "invalid dtype");
  mlx_array_free(a);
}

static void test_tril_triu(void) {
  mlx_stream s = test_stream();
  float xf[tril_x_N];
  for (int i = 0; i < tril_x_N; i++) xf[i] = (float)tril_x[i];
  int shape[3] = {2, 4, 5};
  mlx_array x = mlx_array_new_data(xf, shape, 3, MLX_FLOAT32), a = mlx_array_new();
  static const int ks[4] = {-2, 0, 1, 6};
  const double *lo[4] = {tril_km2, tril_k0, tril_k1, tril_k6};
  const double *up[4] = {triu_km2, triu_k0, triu_k1, triu_k6};
  for (int c = 0; c < 4; c++) {
    CHECK_OK(mlx_tril(&a, x, ks[c], s));
    CHECK_SHAPE(a, 2, 4, 5);
    check_vals(a, lo[c], tril_x_N, 0);
    CHECK_OK(mlx_triu(&a, x, ks[c], s));
    check_vals(a, up[c], tril_x_N, 0);
  }
  /* a broadcast (stride 0) input: (4, 5) viewed as (2, 4, 5) */
  mlx_array m = mlx_array_new_data(xf, shape + 1, 2, MLX_FLOAT32);
  struct lc_node *bn = lc_broadcast_to((struct lc_node *)m.ctx, 3, shape);
  mlx_array bv = {bn};
  CHECK_OK(mlx_tril(&a, bv, 1, s));
  double ref[tril_x_N];
  for (int i = 0; i < tril_x_N; i++) ref[i] = tril_k1[i % 20];
  check_vals(a, ref, tril_x_N, 0);
  mlx_array v1 = mlx_array_new_float(1.0f);
  CHECK_FAILS(mlx_tril(&a, v1, 0, s), "at least 2-D");
  CHECK_FAILS(mlx_triu(&a, mlx_array_new(), 0, s), "empty");
  mlx_array_free(v1);
  mlx_array_free(bv);
  mlx_array_free(m);
  mlx_array_free(x);
  mlx_array_free(a);
}

int main(void) {
  test_init();
  size_t before = test_active_memory();
  test_full_family();
  test_full_is_lazy();
  test_arange();
  test_linspace();
  test_eye_tri();
  test_tril_triu();
  CHECK_MSG(test_active_memory() == before, "active memory %zu, was %zu", test_active_memory(),
            before);
  return test_done();
}
