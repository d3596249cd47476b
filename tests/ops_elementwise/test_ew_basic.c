/* Hand-checked values for the elementwise ops: promotion, Python sign rules
 * of floor_divide/remainder, integer edge cases, NaN handling, where,
 * divmod, errors, and memory returning to baseline. */
#include "test.h"

static mlx_array arr_f32(const float *v, int n) { return mlx_array_new_data(v, &n, 1, MLX_FLOAT32); }
static mlx_array arr_i32(const int32_t *v, int n) { return mlx_array_new_data(v, &n, 1, MLX_INT32); }

typedef int (*binop)(mlx_array *, const mlx_array, const mlx_array, const mlx_stream);
typedef int (*unop)(mlx_array *, const mlx_array, const mlx_stream);

static void check_bin(binop f, mlx_array a, mlx_array b, mlx_dtype want_dt, const double *ref,
                      size_t n, const char *what) {
  mlx_array r = mlx_array_new();
  int rc = f(&r, a, b, test_stream());
  CHECK_MSG(rc == 0, "%s failed: %s", what, test_last_error);
  if (!rc) {
    CHECK_MSG(mlx_array_dtype(r) == want_dt, "%s: dtype %d, want %d", what, (int)mlx_array_dtype(r),
              (int)want_dt);
    CHECK_CLOSE(r, ref, n, 1e-6, 0);
  }
  mlx_array_free(r);
}

static void check_un(unop f, mlx_array a, mlx_dtype want_dt, const double *ref, size_t n,
                     double rtol, const char *what) {
  mlx_array r = mlx_array_new();
  int rc = f(&r, a, test_stream());
  CHECK_MSG(rc == 0, "%s failed: %s", what, test_last_error);
  if (!rc) {
    CHECK_MSG(mlx_array_dtype(r) == want_dt, "%s: dtype %d, want %d", what, (int)mlx_array_dtype(r),
              (int)want_dt);
    CHECK_CLOSE(r, ref, n, rtol, 0);
  }
  mlx_array_free(r);
}

static void test_integer_division(void) {
  int32_t av[8] = {-7, 7, -7, 7, 5, -5, INT32_MIN, 3};
  int32_t bv[8] = {2, 2, -2, -2, 0, 0, -1, 5};
  mlx_array a = arr_i32(av, 8), b = arr_i32(bv, 8);
  double fd[8] = {-4, 3, 3, -4, 0, 0, INT32_MIN, 0};
  double rem[8] = {1, 1, -1, -1, 5, -5, 0, 3}; /* by zero: x, as MLX 0.32 */
  double div[8] = {-3.5, 3.5, 3.5, -3.5, INFINITY, -INFINITY, 2147483648.0, 0.6};
  check_bin(mlx_floor_divide, a, b, MLX_INT32, fd, 8, "floor_divide int32");
  check_bin(mlx_remainder, a, b, MLX_INT32, rem, 8, "remainder int32");
  check_bin(mlx_divide, a, b, MLX_FLOAT32, div, 8, "divide int32");
  mlx_vector_array qr = mlx_vector_array_new();
  CHECK_OK(mlx_divmod(&qr, a, b, test_stream()));
  CHECK(mlx_vector_array_size(qr) == 2);
  mlx_array q = mlx_array_new(), r = mlx_array_new();
  CHECK_OK(mlx_vector_array_get(&q, qr, 0));
  CHECK_OK(mlx_vector_array_get(&r, qr, 1));
  CHECK_CLOSE(q, fd, 8, 0, 0);
  CHECK_CLOSE(r, rem, 8, 0, 0);
  mlx_array_free(q);
  mlx_array_free(r);
  mlx_vector_array_free(qr);
  mlx_array_free(a);
  mlx_array_free(b);

  float fa[4] = {-7.5f, 7.5f, -7.5f, 1.0f}, fb[4] = {2, 2, -2, 0};
  a = arr_f32(fa, 4);
  b = arr_f32(fb, 4);
  double ffd[4] = {-4, 3, 3, INFINITY}, frem[4] = {0.5, 1.5, -1.5, NAN};
  check_bin(mlx_floor_divide, a, b, MLX_FLOAT32, ffd, 4, "floor_divide f32");
  check_bin(mlx_remainder, a, b, MLX_FLOAT32, frem, 4, "remainder f32");
  mlx_array_free(a);
  mlx_array_free(b);
}

static void test_nan_and_promotion(void) {
  float av[4] = {1, NAN, 3, -INFINITY}, bv[4] = {NAN, 2, 1, 0};
  mlx_array a = arr_f32(av, 4), b = arr_f32(bv, 4);
  double mx[4] = {NAN, NAN, 3, 0}, mn[4] = {NAN, NAN, 1, -INFINITY};
  check_bin(mlx_maximum, a, b, MLX_FLOAT32, mx, 4, "maximum");
  check_bin(mlx_minimum, a, b, MLX_FLOAT32, mn, 4, "minimum");
  double isn[4] = {0, 1, 0, 0}, isi[4] = {0, 0, 0, 1}, isf[4] = {1, 0, 1, 0};
  check_un(mlx_isnan, a, MLX_BOOL, isn, 4, 0, "isnan");
  check_un(mlx_isinf, a, MLX_BOOL, isi, 4, 0, "isinf");
  check_un(mlx_isfinite, a, MLX_BOOL, isf, 4, 0, "isfinite");
  double sg[4] = {1, 0, 1, -1};
  check_un(mlx_sign, a, MLX_FLOAT32, sg, 4, 0, "sign");
  /* uint8 + int8 -> int16; int32 * float16 -> float16 */
  uint8_t u8[2] = {200, 255};
  int8_t i8[2] = {-100, 100};
  int two = 2;
  mlx_array x = mlx_array_new_data(u8, &two, 1, MLX_UINT8), y = mlx_array_new_data(i8, &two, 1, MLX_INT8);
  double sum[2] = {100, 355};
  check_bin(mlx_add, x, y, MLX_INT16, sum, 2, "uint8+int8");
  double prod[2] = {(uint8_t)(200 * 200), (uint8_t)(255 * 255)};
  check_bin(mlx_multiply, x, x, MLX_UINT8, prod, 2, "uint8*uint8 wraps");
  double sq[2] = {(uint8_t)(200 * 200), (uint8_t)(255 * 255)};
  check_un(mlx_square, x, MLX_UINT8, sq, 2, 0, "square uint8");
  check_un(mlx_sqrt, x, MLX_FLOAT32, (double[]){sqrt(200.0), sqrt(255.0)}, 2, 1e-7, "sqrt uint8");
  mlx_array_free(x);
  mlx_array_free(y);
  mlx_array_free(a);
  mlx_array_free(b);
}

static void test_where_and_errors(void) {
  bool c[3] = {true, false, true};
  int three = 3;
  float xv[3] = {1, 2, 3};
  mlx_array cond = mlx_array_new_data(c, &three, 1, MLX_BOOL), x = arr_f32(xv, 3);
  mlx_array y = mlx_array_new_int(-1), r = mlx_array_new();
  CHECK_OK(mlx_where(&r, cond, x, y, test_stream()));
  double ref[3] = {1, -1, 3};
  CHECK(mlx_array_dtype(r) == MLX_FLOAT32);
  CHECK_CLOSE(r, ref, 3, 0, 0);
  CHECK_FAILS(mlx_bitwise_and(&r, x, y, test_stream()), "only allowed on integer");
  CHECK_FAILS(mlx_bitwise_invert(&r, x, test_stream()), "only allowed on integer");
  CHECK_FAILS(mlx_add(&r, x, (mlx_array){NULL}, test_stream()), "empty array");
  CHECK_FAILS(mlx_add(NULL, x, y, test_stream()), "NULL");
  int four = 4;
  float zv[4] = {0};
  mlx_array z = mlx_array_new_data(zv, &four, 1, MLX_FLOAT32);
  CHECK_FAILS(mlx_multiply(&r, x, z, test_stream()), "cannot be broadcast");
  CHECK_FAILS(mlx_where(&r, cond, x, z, test_stream()), "cannot be broadcast");
  CHECK_FAILS(mlx_negative(&r, cond, test_stream()), "bool");
  mlx_array_free(z);
  mlx_array_free(cond);
  mlx_array_free(x);
  mlx_array_free(y);
  mlx_array_free(r);
}

int main(void) {
  test_init();
  size_t before = test_active_memory();
  test_integer_division();
  test_nan_and_promotion();
  test_where_and_errors();
  CHECK_MSG(test_active_memory() == before, "active memory %zu, was %zu", test_active_memory(),
            before);
  return test_done();
}
