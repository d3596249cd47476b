/* Reductions, scans and softmax: errors, identities, zero-size and 0-d
 * arrays, integer wrap-around, accuracy and the multi-threaded paths on
 * large inputs (row, column and single-long-row), and memory returning to
 * its baseline. */
#include <complex.h>

#include "test.h"

static mlx_stream S;

static mlx_array arr_f32(const float *v, const int *shape, int nd) {
  return mlx_array_new_data(v, shape, nd, MLX_FLOAT32);
}

static double item(mlx_array a) {
  double *v = test_values(a), r = v ? v[0] : NAN;
  free(v);
  return r;
}

static void test_errors(void) {
  float v[6] = {1, 2, 3, 4, 5, 6};
  int sh[2] = {2, 3};
  mlx_array x = arr_f32(v, sh, 2), r = mlx_array_new(), empty = mlx_array_new();
  int ax[3] = {0, 0, 1}, big[1] = {2}, neg[1] = {-3};
  CHECK_FAILS(mlx_sum_axis(&r, x, 2, false, S), "mlx_sum_axis: axis 2 is out of bounds for an array with 2 dimensions");
  CHECK_FAILS(mlx_sum_axis(&r, x, -3, false, S), "out of bounds");
  CHECK_FAILS(mlx_max_axes(&r, x, ax, 2, false, S), "mlx_max_axes: duplicate axis 0");
  CHECK_FAILS(mlx_mean_axes(&r, x, big, 1, false, S), "axis 2 is out of bounds");
  CHECK_FAILS(mlx_var_axes(&r, x, neg, 1, false, 0, S), "axis -3 is out of bounds");
  CHECK_FAILS(mlx_prod_axes(&r, x, ax, 3, false, S), "3 axes given");
  CHECK_FAILS(mlx_sum_axes(&r, x, NULL, 1, false, S), "axes is NULL");
  CHECK_FAILS(mlx_sum(&r, empty, false, S), "empty array");
  CHECK_FAILS(mlx_sum(NULL, x, false, S), "NULL");
  CHECK_FAILS(mlx_argmax_axis(&r, x, 5, false, S), "mlx_argmax_axis: axis 5");
  CHECK_FAILS(mlx_cumsum(&r, x, 2, false, true, S), "mlx_cumsum: axis 2 is out of bounds");
  CHECK_FAILS(mlx_softmax_axes(&r, x, ax, 2, false, S), "duplicate axis");
  CHECK_FAILS(mlx_softmax_axis(&r, x, 3, false, S), "out of bounds");
  /* reductions without identity over an empty axis */
  int zs[2] = {0, 3};
  mlx_array z = mlx_array_new_data(v, zs, 2, MLX_FLOAT32);
  CHECK_FAILS(mlx_max_axis(&r, z, 0, false, S), "cannot max reduce over axis 0 with size 0");
  CHECK_FAILS(mlx_min(&r, z, false, S), "cannot min reduce");
  CHECK_FAILS(mlx_argmax(&r, z, false, S), "zero-size");
  CHECK_FAILS(mlx_logsumexp(&r, z, false, S), "empty array");
  mlx_array c = mlx_array_new_complex(1, 2);
  CHECK_FAILS(mlx_logsumexp(&r, c, false, S), "not supported for complex64");
  CHECK_FAILS(mlx_softmax(&r, c, false, S), "not supported for complex64");
  CHECK(r.ctx == NULL); /* untouched by failures */
  /* max over the non-empty axis of a zero-size array is fine */
  CHECK_OK(mlx_max_axis(&r, z, 1, false, S));
  CHECK_SHAPE(r, 0);
  mlx_array_free(c);
  mlx_array_free(z);
  mlx_array_free(x);
  mlx_array_free(r);
}

static void test_zero_size_and_scalars(void) {
  float v[1] = {0};
  int zs[2] = {0, 3};
  mlx_array z = mlx_array_new_data(v, zs, 2, MLX_FLOAT32), r = mlx_array_new();
  double zeros[3] = {0, 0, 0}, ones[3] = {1, 1, 1}, nans[3] = {NAN, NAN, NAN};
  CHECK_OK(mlx_sum_axis(&r, z, 0, false, S));
  CHECK_SHAPE(r, 3);
  CHECK_CLOSE(r, zeros, 3, 0, 0);
  CHECK_OK(mlx_prod_axis(&r, z, 0, true, S));
  CHECK_SHAPE(r, 1, 3);
  CHECK_CLOSE(r, ones, 3, 0, 0);
  CHECK_OK(mlx_all_axis(&r, z, 0, false, S));
  CHECK(mlx_array_dtype(r) == MLX_BOOL);
  CHECK_CLOSE(r, ones, 3, 0, 0);
  CHECK_OK(mlx_any_axis(&r, z, 0, false, S));
  CHECK_CLOSE(r, zeros, 3, 0, 0);
  CHECK_OK(mlx_mean_axis(&r, z, 0, false, S));
  CHECK_CLOSE(r, nans, 3, 0, 0);
  CHECK_OK(mlx_softmax(&r, z, false, S)); /* size 0: returned as is */
  CHECK_SHAPE(r, 0, 3);
  CHECK_OK(mlx_cumsum(&r, z, 1, false, true, S));
  CHECK_SHAPE(r, 0, 3);
  CHECK_OK(mlx_sort_axis(&r, z, 0, S));
  CHECK_SHAPE(r, 0, 3);
  /* 0-d input */
  mlx_array s = mlx_array_new_int(7);
  CHECK_OK(mlx_sum(&r, s, false, S));
  CHECK(mlx_array_ndim(r) == 0 && mlx_array_dtype(r) == MLX_INT32 && item(r) == 7);
  CHECK_OK(mlx_argmax(&r, s, true, S));
  CHECK(mlx_array_ndim(r) == 0 && mlx_array_dtype(r) == MLX_UINT32 && item(r) == 0);
  CHECK_OK(mlx_mean(&r, s, false, S));
  CHECK(mlx_array_dtype(r) == MLX_FLOAT32 && item(r) == 7);
  CHECK_OK(mlx_var(&r, s, false, 0, S));
  CHECK(item(r) == 0);
  CHECK_OK(mlx_var(&r, s, false, 1, S));
  CHECK(isnan(item(r)));
  CHECK_OK(mlx_softmax(&r, s, false, S));
  CHECK(mlx_array_dtype(r) == MLX_FLOAT32 && item(r) == 1);
  CHECK_OK(mlx_logsumexp(&r, s, false, S));
  CHECK(item(r) == 7);
  CHECK_OK(mlx_sort(&r, s, S));
  CHECK_SHAPE(r, 1);
  CHECK_FAILS(mlx_sum_axis(&r, s, 0, false, S), "out of bounds");
  /* empty axis lists: MLX's identities */
  mlx_array b = mlx_array_new_bool(true);
  CHECK_OK(mlx_sum_axes(&r, b, NULL, 0, false, S));
  CHECK(mlx_array_dtype(r) == MLX_BOOL);
  CHECK_OK(mlx_any_axes(&r, s, NULL, 0, false, S));
  CHECK(mlx_array_dtype(r) == MLX_BOOL && item(r) == 1);
  CHECK_OK(mlx_mean_axes(&r, s, NULL, 0, false, S));
  CHECK(mlx_array_dtype(r) == MLX_FLOAT32 && item(r) == 7);
  mlx_array_free(b);
  mlx_array_free(s);
  mlx_array_free(z);
  mlx_array_free(r);
}

static void test_integer_semantics(void) {
  int32_t iv[3] = {INT32_MAX, 1, 0};
  int s3[1] = {3};
  mlx_array x = mlx_array_new_data(iv, s3, 1, MLX_INT32), r = mlx_array_new();
  CHECK_OK(mlx_sum(&r, x, false, S));
  int32_t got = 0;
  CHECK_OK(mlx_array_item_int32(&got, r));
  CHECK(got == INT32_MIN); /* wraps like MLX's int32 accumulator */
  mlx_array_free(x);
  enum { N = 300 };
  uint8_t u[N];
  for (int i = 0; i < N; i++) u[i] = 255;
  int sn[1] = {N};
  x = mlx_array_new_data(u, sn, 1, MLX_UINT8);
  CHECK_OK(mlx_sum(&r, x, false, S));
  CHECK(mlx_array_dtype(r) == MLX_UINT32 && item(r) == 255.0 * N);
  CHECK_OK(mlx_cumsum(&r, x, 0, false, true, S)); /* cumsum keeps uint8 and wraps */
  CHECK(mlx_array_dtype(r) == MLX_UINT8);
  double *cv = test_values(r);
  CHECK(cv && cv[0] == 255 && cv[1] == 254 && cv[2] == 253);
  free(cv);
  mlx_array_free(x);
  int8_t i8[4] = {-3, 5, -7, 1};
  int s4[1] = {4};
  x = mlx_array_new_data(i8, s4, 1, MLX_INT8);
  CHECK_OK(mlx_prod(&r, x, false, S));
  CHECK(mlx_array_dtype(r) == MLX_INT32 && item(r) == 105);
  CHECK_OK(mlx_argmin(&r, x, false, S));
  CHECK(item(r) == 2);
  mlx_array_free(x);
  /* ties go to the first index */
  float t[5] = {1, 3, 3, 0, 0};
  int s5[1] = {5};
  x = arr_f32(t, s5, 1);
  CHECK_OK(mlx_argmax(&r, x, false, S));
  CHECK(item(r) == 1);
  CHECK_OK(mlx_argmin(&r, x, false, S));
  CHECK(item(r) == 3);
  mlx_array_free(x);
  mlx_array_free(r);
}

/* Large inputs: accuracy against double references and every threading
 * path (many rows, column reduction, one long row). */
static void test_large(void) {
  const int R = 1000, C = 4096;
  int shape[2] = {R, C};
  mlx_array x = test_rand_f32(shape, 2, 0.5, 1.5), r = mlx_array_new();
  mlx_array_eval(x);
  const float *xv = mlx_array_data_float32(x);
  double *rows = calloc((size_t)R, sizeof(double)), *cols = calloc((size_t)C, sizeof(double));
  double total = 0;
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      rows[i] += xv[(size_t)i * C + j];
      cols[j] += xv[(size_t)i * C + j];
    }
  for (int i = 0; i < R; i++) total += rows[i];
  CHECK_OK(mlx_sum_axis(&r, x, 1, false, S));
  CHECK_CLOSE(r, rows, (size_t)R, 1e-6, 0);
  CHECK_OK(mlx_sum_axis(&r, x, 0, false, S));
  CHECK_CLOSE(r, cols, (size_t)C, 1e-6, 0);
  CHECK_OK(mlx_sum(&r, x, false, S));
  CHECK_MSG(fabs(item(r) - total) <= 1e-6 * total, "total %.9g vs %.9g", item(r), total);
  for (int j = 0; j < C; j++) cols[j] /= R;
  CHECK_OK(mlx_mean_axis(&r, x, 0, false, S));
  CHECK_CLOSE(r, cols, (size_t)C, 1e-6, 0);
  /* var of the whole array in one pass against a two-pass double reference */
  double mean = total / ((double)R * C), m2 = 0;
  for (size_t i = 0; i < (size_t)R * C; i++) m2 += (xv[i] - mean) * (xv[i] - mean);
  CHECK_OK(mlx_var(&r, x, false, 1, S));
  CHECK_MSG(fabs(item(r) - m2 / ((double)R * C - 1)) <= 1e-6 * m2 / ((double)R * C),
            "var %.9g vs %.9g", item(r), m2 / ((double)R * C - 1));
  /* logsumexp of the whole array */
  CHECK_OK(mlx_logsumexp(&r, x, false, S));
  double lse = 0, mx = 0;
  for (size_t i = 0; i < (size_t)R * C; i++) mx = xv[i] > mx ? xv[i] : mx;
  for (size_t i = 0; i < (size_t)R * C; i++) lse += exp(xv[i] - mx);
  CHECK_MSG(fabs(item(r) - (mx + log(lse))) < 1e-5, "lse %.9g vs %.9g", item(r), mx + log(lse));
  /* argmax over rows: plant maxima */
  CHECK_OK(mlx_max(&r, x, false, S));
  CHECK(item(r) == mx);
  /* softmax rows */
  CHECK_OK(mlx_softmax_axis(&r, x, -1, false, S));
  CHECK_OK(mlx_sum_axis(&r, r, 1, false, S));
  double *sm = test_values(r);
  bool ok = true;
  for (int i = 0; i < R && ok; i++) ok = fabs(sm[i] - 1) < 1e-5;
  CHECK_MSG(ok, "softmax rows do not sum to 1");
  free(sm);
  /* cumsum along the outer axis (block strategy), last row = column sums */
  CHECK_OK(mlx_cumsum(&r, x, 0, false, true, S));
  mlx_array_eval(r);
  const float *cs = mlx_array_data_float32(r);
  ok = true;
  for (int j = 0; j < C && ok; j++) ok = fabs(cs[(size_t)(R - 1) * C + j] - cols[j] * R) < 1e-3;
  CHECK_MSG(ok, "cumsum over axis 0 disagrees with the column sums");
  free(rows);
  free(cols);
  mlx_array_free(x);

  /* one long row: softmax's chunked parallel path and split reductions */
  int n1[1] = {1 << 21};
  x = test_rand_f32(n1, 1, -3, 3);
  mlx_array_eval(x);
  xv = mlx_array_data_float32(x);
  mx = -INFINITY;
  double se = 0;
  for (int i = 0; i < n1[0]; i++) mx = xv[i] > mx ? xv[i] : mx;
  for (int i = 0; i < n1[0]; i++) se += exp(xv[i] - mx);
  CHECK_OK(mlx_softmax(&r, x, true, S));
  mlx_array_eval(r);
  const float *sv = mlx_array_data_float32(r);
  ok = true;
  for (int i = 0; i < n1[0] && ok; i += 4099) ok = fabs(sv[i] - exp(xv[i] - mx) / se) <= 1e-5 * sv[i] + 1e-12;
  CHECK_MSG(ok, "long-row softmax is wrong");
  CHECK_OK(mlx_argmax(&r, x, false, S));
  uint32_t am = 0;
  mlx_array_item_uint32(&am, r);
  CHECK(xv[am] == mx);
  mlx_array_free(x);
  mlx_array_free(r);
}

static void test_nan_and_inf(void) {
  float v[6] = {1, NAN, 3, -INFINITY, -INFINITY, -INFINITY};
  int sh[2] = {2, 3};
  mlx_array x = arr_f32(v, sh, 2), r = mlx_array_new();
  CHECK_OK(mlx_max_axis(&r, x, 1, false, S));
  double e1[2] = {NAN, -INFINITY};
  CHECK_CLOSE(r, e1, 2, 0, 0);
  CHECK_OK(mlx_logsumexp_axis(&r, x, 1, false, S));
  CHECK_CLOSE(r, e1, 2, 0, 0);
  CHECK_OK(mlx_argmax_axis(&r, x, 1, false, S)); /* the first NaN wins, as MLX 0.32 */
  double e2[2] = {1, 0};
  CHECK_CLOSE(r, e2, 2, 0, 0);
  CHECK_OK(mlx_softmax_axis(&r, x, 1, false, S));
  double *sv = test_values(r);
  CHECK(sv && isnan(sv[0]) && isnan(sv[1]) && isnan(sv[2]));
  free(sv);
  mlx_array_free(x);
  mlx_array_free(r);
}

/* complex64: sums and products, mean, var (real, mean squared magnitude of
 * the deviation), max/min and sorting by (real, imaginary), cumsum. */
static void test_complex(void) {
  float _Complex v[4] = {1 + 2 * I, 3 - 1 * I, 1 + 5 * I, -2 + 0 * I};
  int s4[1] = {4};
  mlx_array x = mlx_array_new_data(v, s4, 1, MLX_COMPLEX64), r = mlx_array_new();
  float _Complex c = 0;
  CHECK_OK(mlx_sum(&r, x, false, S));
  CHECK(mlx_array_dtype(r) == MLX_COMPLEX64);
  CHECK_OK(mlx_array_item_complex64(&c, r));
  CHECK(crealf(c) == 3 && cimagf(c) == 6);
  CHECK_OK(mlx_prod_axis(&r, x, 0, false, S));
  CHECK_OK(mlx_array_item_complex64(&c, r));
  float _Complex p = v[0] * v[1] * v[2] * v[3];
  CHECK(fabsf(crealf(c) - crealf(p)) < 1e-4 && fabsf(cimagf(c) - cimagf(p)) < 1e-4);
  CHECK_OK(mlx_mean(&r, x, false, S));
  CHECK_OK(mlx_array_item_complex64(&c, r));
  CHECK(crealf(c) == 0.75f && cimagf(c) == 1.5f);
  CHECK_OK(mlx_var(&r, x, false, 0, S));
  CHECK(mlx_array_dtype(r) == MLX_FLOAT32);
  double var = 0;
  for (int i = 0; i < 4; i++) {
    double dr = crealf(v[i]) - 0.75, di = cimagf(v[i]) - 1.5;
    var += (dr * dr + di * di) / 4;
  }
  CHECK(fabs(item(r) - var) < 1e-5);
  CHECK_OK(mlx_max(&r, x, false, S));
  CHECK_OK(mlx_array_item_complex64(&c, r));
  CHECK(crealf(c) == 3 && cimagf(c) == -1);
  CHECK_OK(mlx_min(&r, x, false, S));
  CHECK_OK(mlx_array_item_complex64(&c, r));
  CHECK(crealf(c) == -2);
  CHECK_OK(mlx_argmax(&r, x, false, S));
  CHECK(item(r) == 1);
  CHECK_OK(mlx_sort(&r, x, S));
  mlx_array_eval(r);
  const float _Complex *sv = mlx_array_data_complex64(r);
  CHECK(sv && crealf(sv[0]) == -2 && crealf(sv[1]) == 1 && cimagf(sv[1]) == 2 &&
        cimagf(sv[2]) == 5 && crealf(sv[3]) == 3);
  CHECK_OK(mlx_cumsum(&r, x, 0, true, false, S)); /* reverse, exclusive */
  mlx_array_eval(r);
  sv = mlx_array_data_complex64(r);
  CHECK(sv && crealf(sv[3]) == 0 && crealf(sv[2]) == -2 && cimagf(sv[0]) == 4);
  CHECK_OK(mlx_any(&r, x, false, S));
  CHECK(item(r) == 1);
  mlx_array_free(x);
  mlx_array_free(r);
}

/* argmax/argmin select the first NaN of a line (MLX 0.32), on each path:
 * vectorised float32 blocks (long rows), columns (a reduced outer axis over
 * a contiguous kept one), the generic loop (float64, strided). Reference:
 * the first NaN, else the first extreme. */
static int64_t ref_arg(const double *x, int64_t n, int64_t st, bool mx) {
  int64_t best = 0;
  for (int64_t i = 0; i < n; i++) {
    double v = x[i * st], b = x[best * st];
    if (isnan(b)) break;
    if (isnan(v) || (mx ? v > b : v < b)) best = i;
  }
  return best;
}
static void check_arg_paths(mlx_dtype dt, int rows, int cols, int axis) {
  int n = rows * cols, sh[2] = {rows, cols};
  double *v = malloc(sizeof(double) * (size_t)n);
  for (int i = 0; i < n; i++) v[i] = test_uniform(-1, 1);
  for (int i = 0; i < n; i++)
    if (test_randint(0, 2 * (axis ? cols : rows)) == 0) v[i] = NAN;
  v[0] = NAN; /* a NaN first stands */
  mlx_array f = mlx_array_new_data(v, sh, 2, MLX_FLOAT64), x = mlx_array_new(), r = mlx_array_new();
  mlx_astype(&x, f, dt, S);
  double *xv = test_values(x); /* the values as rounded to dt */
  if (xv) memcpy(v, xv, sizeof(double) * (size_t)n);
  free(xv);
  for (int mx = 0; mx < 2; mx++) {
    CHECK_OK(mx ? mlx_argmax_axis(&r, x, axis, false, S) : mlx_argmin_axis(&r, x, axis, false, S));
    int lines = axis ? rows : cols;
    double *ref = malloc(sizeof(double) * (size_t)lines);
    for (int l = 0; l < lines; l++)
      ref[l] = (double)(axis ? ref_arg(v + (int64_t)l * cols, cols, 1, mx)
                             : ref_arg(v + l, rows, cols, mx));
    CHECK_CLOSE(r, ref, (size_t)lines, 0, 0);
    free(ref);
  }
  mlx_array_free(f);
  mlx_array_free(x);
  mlx_array_free(r);
  free(v);
}

static void test_arg_nan_paths(void) {
  check_arg_paths(MLX_FLOAT32, 3, 5000, 1); /* float32 blocks of contiguous rows */
  check_arg_paths(MLX_FLOAT32, 40, 300, 0); /* columns */
  check_arg_paths(MLX_FLOAT64, 7, 900, 1);  /* generic loop */
  check_arg_paths(MLX_FLOAT16, 30, 3, 0);   /* generic, strided */
}

int main(void) {
  test_init();
  S = test_stream();
  size_t before = test_active_memory();
  test_errors();
  test_zero_size_and_scalars();
  test_integer_semantics();
  test_nan_and_inf();
  test_arg_nan_paths();
  test_complex();
  test_large();
  CHECK_MSG(test_active_memory() == before, "leaked %zu bytes", test_active_memory() - before);
  return test_done();
}
