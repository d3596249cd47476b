/* Copying shape ops: large (parallel) non-contiguous copies checked by
 * index arithmetic, dtype promotion in concatenate, pad values, errors,
 * leaks. Small-case values are covered by test_shape_cases. */
#include "test.h"

static mlx_stream S(void) { return test_stream(); }

static void free_all(mlx_array *a, size_t n) {
  for (size_t i = 0; i < n; i++) mlx_array_free(a[i]);
}

/* concatenate of two transposed 300x200 arrays, tiled and rolled: large
 * enough for the parallel paths. */
static void test_large(void) {
  int sh[2] = {300, 200};
  mlx_array x = test_rand_f32(sh, 2, -1, 1), y = test_rand_f32(sh, 2, -1, 1);
  mlx_array xt = mlx_array_new(), yt = mlx_array_new(), c = mlx_array_new(), t = mlx_array_new(),
            r = mlx_array_new();
  CHECK_OK(mlx_transpose(&xt, x, S()));
  CHECK_OK(mlx_transpose(&yt, y, S()));
  mlx_array pair[2] = {xt, yt};
  mlx_vector_array v = mlx_vector_array_new_data(pair, 2);
  CHECK_OK(mlx_concatenate_axis(&c, v, 1, S())); /* (200, 600) */
  CHECK_SHAPE(c, 200, 600);
  int reps[2] = {2, 1};
  CHECK_OK(mlx_tile(&t, c, reps, 2, S())); /* (400, 600) */
  int shift[2] = {7, -13}, axes[2] = {0, 1};
  CHECK_OK(mlx_roll_axes(&r, t, shift, 2, axes, 2, S()));
  CHECK_OK(mlx_array_eval(r));
  const float *xd = mlx_array_data_float32(x), *yd = mlx_array_data_float32(y);
  const float *rd = mlx_array_data_float32(r);
  int ok = rd != NULL;
  for (int i = 0; ok && i < 400; i++)
    for (int j = 0; j < 600; j++) {
      int ti = ((i - 7) % 400 + 400) % 400, tj = ((j + 13) % 600 + 600) % 600; /* into t */
      int ci = ti % 200;                                                     /* into c */
      float want = tj < 300 ? xd[tj * 200 + ci] : yd[(tj - 300) * 200 + ci];
      if (rd[i * 600 + j] != want) {
        ok = 0;
        fprintf(stderr, "mismatch at %d,%d\n", i, j);
        break;
      }
    }
  CHECK_MSG(ok, "concatenate/tile/roll values");
  mlx_vector_array_free(v);
  mlx_array all[] = {x, y, xt, yt, c, t, r};
  free_all(all, sizeof all / sizeof all[0]);
}

static void test_concat_dtypes(void) {
  int32_t iv[3] = {1, 2, 3};
  float fv[2] = {0.5f, -1.5f};
  int s3[1] = {3}, s2[1] = {2};
  mlx_array i = mlx_array_new_data(iv, s3, 1, MLX_INT32), f = mlx_array_new_data(fv, s2, 1, MLX_FLOAT32),
            c = mlx_array_new(), st = mlx_array_new();
  mlx_array pair[2] = {i, f};
  mlx_vector_array v = mlx_vector_array_new_data(pair, 2);
  CHECK_OK(mlx_concatenate(&c, v, S()));
  CHECK(mlx_array_dtype(c) == MLX_FLOAT32);
  double ref[5] = {1, 2, 3, 0.5, -1.5};
  CHECK_CLOSE(c, ref, 5, 0, 0);
  CHECK_FAILS(mlx_stack(&st, v, S()), "same shape");
  CHECK_FAILS(mlx_concatenate_axis(&c, v, 1, S()), "out of bounds");
  mlx_vector_array empty = mlx_vector_array_new();
  CHECK_FAILS(mlx_concatenate(&c, empty, S()), "no arrays");
  int s23[2] = {2, 3};
  mlx_array m = test_rand_f32(s23, 2, 0, 1);
  mlx_array bad[2] = {m, i};
  mlx_vector_array vb = mlx_vector_array_new_data(bad, 2);
  CHECK_FAILS(mlx_concatenate_axis(&c, vb, 0, S()), "must match");
  /* concatenating a flattened matrix: mlx_concatenate flattens */
  mlx_array mf[2] = {m, m};
  mlx_vector_array vm = mlx_vector_array_new_data(mf, 2);
  CHECK_OK(mlx_concatenate(&c, vm, S()));
  CHECK_SHAPE(c, 12);
  mlx_vector_array_free(v);
  mlx_vector_array_free(vb);
  mlx_vector_array_free(vm);
  mlx_vector_array_free(empty);
  mlx_array all[] = {i, f, c, st, m};
  free_all(all, sizeof all / sizeof all[0]);
}

static void test_pad_values(void) {
  int16_t d[4] = {1, -2, 3, -4};
  int s[2] = {2, 2};
  mlx_array a = mlx_array_new_data(d, s, 2, MLX_INT16), r = mlx_array_new();
  mlx_array val = mlx_array_new_float(9.75f), lazy = mlx_array_new(), empty = mlx_array_new();
  CHECK_OK(mlx_add(&lazy, val, val, S())); /* 19.5, lazy, float: cast to int16 -> 19 */
  int axes[1] = {-1}, lo[1] = {1}, hi[1] = {2};
  CHECK_OK(mlx_pad(&r, a, axes, 1, lo, 1, hi, 1, lazy, "constant", S()));
  CHECK_SHAPE(r, 2, 5);
  CHECK(mlx_array_dtype(r) == MLX_INT16);
  double ref[10] = {19, 1, -2, 19, 19, 19, 3, -4, 19, 19};
  CHECK_CLOSE(r, ref, 10, 0, 0);
  CHECK_OK(mlx_pad_symmetric(&r, a, 1, val, "edge", S()));
  double ref2[16] = {1, 1, -2, -2, 1, 1, -2, -2, 3, 3, -4, -4, 3, 3, -4, -4};
  CHECK_CLOSE(r, ref2, 16, 0, 0);
  CHECK_OK(mlx_pad(&r, a, axes, 1, lo, 1, hi, 1, empty, NULL, S())); /* no value: zeros */
  double ref3[10] = {0, 1, -2, 0, 0, 0, 3, -4, 0, 0};
  CHECK_CLOSE(r, ref3, 10, 0, 0);
  int neg[1] = {-1};
  CHECK_FAILS(mlx_pad(&r, a, axes, 1, neg, 1, hi, 1, val, "constant", S()), "non-negative");
  CHECK_FAILS(mlx_pad(&r, a, axes, 1, lo, 1, hi, 0, val, "constant", S()), "padding sizes");
  CHECK_FAILS(mlx_pad(&r, a, axes, 1, lo, 1, hi, 1, val, "wrap", S()), "invalid padding mode");
  int ax3[1] = {2};
  CHECK_FAILS(mlx_pad(&r, a, ax3, 1, lo, 1, hi, 1, val, "constant", S()), "out of bounds");
  int zs[2] = {0, 2};
  mlx_array z = mlx_array_new_data(d, zs, 2, MLX_INT16);
  int ax0[1] = {0};
  CHECK_FAILS(mlx_pad(&r, z, ax0, 1, lo, 1, hi, 1, val, "reflect", S()), "empty axis");
  CHECK_OK(mlx_pad(&r, z, ax0, 1, lo, 1, hi, 1, val, "constant", S()));
  CHECK_SHAPE(r, 3, 2);
  mlx_array all[] = {a, r, val, lazy, empty, z};
  free_all(all, sizeof all / sizeof all[0]);
}

static void test_errors_misc(void) {
  int s[2] = {2, 3};
  mlx_array a = test_rand_f32(s, 2, 0, 1), r = mlx_array_new();
  int negrep[2] = {1, -1};
  CHECK_FAILS(mlx_tile(&r, a, negrep, 2, S()), "negative");
  CHECK_FAILS(mlx_repeat_axis(&r, a, -1, 0, S()), "negative");
  CHECK_FAILS(mlx_repeat_axis(&r, a, 2, 2, S()), "out of bounds");
  CHECK_OK(mlx_repeat_axis(&r, a, 0, 1, S()));
  CHECK_SHAPE(r, 2, 0);
  CHECK_OK(mlx_array_eval(r));
  int sh[1] = {1}, ax[2] = {0, 1};
  CHECK_FAILS(mlx_roll_axes(&r, a, sh, 1, ax, 2, S()), "at least one shift");
  CHECK_FAILS(mlx_roll_axis(&r, a, sh, 1, 2, S()), "invalid axis");
  int s3[3] = {2, 2, 2};
  mlx_array b = test_rand_f32(s3, 3, 0, 1);
  CHECK_FAILS(mlx_diag(&r, b, 0, S()), "1-D or 2-D");
  CHECK_OK(mlx_diag(&r, a, 1, S())); /* of a matrix: the diagonal view */
  CHECK_SHAPE(r, 2);
  int32_t iv[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  int s33[2] = {3, 3};
  mlx_array m = mlx_array_new_data(iv, s33, 2, MLX_INT32), t = mlx_array_new();
  CHECK_OK(mlx_trace(&t, m, 1, 0, 1, MLX_FLOAT64, S()));
  CHECK(mlx_array_dtype(t) == MLX_FLOAT64 && mlx_array_ndim(t) == 0);
  double tr = 2 + 6;
  CHECK_CLOSE(t, &tr, 1, 0, 0);
  CHECK_FAILS(mlx_trace(&t, m, 0, 1, -1, MLX_INT32, S()), "same axis");
  int s1[1] = {3};
  mlx_array v = mlx_array_new_data(iv, s1, 1, MLX_INT32);
  CHECK_FAILS(mlx_trace(&t, v, 0, 0, 1, MLX_INT32, S()), "at least two");
  int s0[1] = {0};
  mlx_array e = mlx_array_new_data(iv, s0, 1, MLX_INT32);
  CHECK_FAILS(mlx_kron(&t, m, e, S()), "cannot be empty");
  CHECK_OK(mlx_kron(&t, m, v, S())); /* int32 (3,3) x (3,) -> (3,9) */
  CHECK_SHAPE(t, 3, 9);
  CHECK(mlx_array_dtype(t) == MLX_INT32);
  mlx_array_free(e);
  int axes2[2] = {0, -1};
  CHECK_OK(mlx_number_of_elements(&t, m, axes2, 2, false, MLX_INT32, S()));
  double nine = 9;
  CHECK_CLOSE(t, &nine, 1, 0, 0);
  CHECK(mlx_array_dtype(t) == MLX_INT32);
  CHECK_OK(mlx_number_of_elements(&t, m, axes2, 1, true, MLX_FLOAT32, S()));
  double third = 1.0 / 3;
  CHECK_CLOSE(t, &third, 1, 1e-6, 0);
  int bad[1] = {2};
  CHECK_FAILS(mlx_number_of_elements(&t, m, bad, 1, false, MLX_INT32, S()), "out of bounds");
  CHECK_FAILS(mlx_fft_fftshift(&t, m, bad, 1, S()), "out of bounds");
  mlx_array_free(m);
  mlx_array_free(t);
  mlx_array_free(v);
  mlx_array all[] = {a, r, b};
  free_all(all, sizeof all / sizeof all[0]);
}

int main(void) {
  test_init();
  size_t base = test_active_memory();
  test_large();
  test_concat_dtypes();
  test_pad_values();
  test_errors_misc();
  CHECK_MSG(test_active_memory() == base, "active memory %zu, expected %zu", test_active_memory(),
            base);
  return test_done();
}
