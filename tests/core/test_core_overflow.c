/* Shapes whose sizes or strides overflow, and huge allocations: every one
 * is a clear error through the handler (no crash, no abort, no OOM kill),
 * and ordinary shapes around them keep working. */
#include <limits.h>

#include "core/alloc.h"
#include "test.h"

static const int big = INT_MAX;

/* fn(shape) must fail with "too large"; the result stays empty. */
static void check_creation_rejects(const int *shape, size_t nd) {
  mlx_array r = mlx_array_new(), v = mlx_array_new_float(2.5f);
  CHECK_FAILS(mlx_zeros(&r, shape, nd, MLX_FLOAT32, test_stream()), "too large");
  CHECK_FAILS(mlx_ones(&r, shape, nd, MLX_INT64, test_stream()), "too large");
  CHECK_FAILS(mlx_full(&r, shape, nd, v, MLX_FLOAT64, test_stream()), "too large");
  CHECK(r.ctx == NULL);
  mlx_string s = mlx_string_new();
  CHECK_FAILS(mlx_array_tostring(&s, r), "empty");
  mlx_string_free(s);
  mlx_array_free(v);
  mlx_array_free(r);
}

static void test_creation(void) {
  const int prod_overflows[] = {big, big, big};       /* 2^93 elements */
  const int int64_wraps[] = {65536, 65536, 65536, 65536}; /* exactly 2^64: wraps to 0 */
  const int empty_huge[] = {0, big, big, big};       /* 0 elements, strides 2^93 */
  const int huge_empty[] = {big, big, big, 0};
  check_creation_rejects(prod_overflows, 3);
  check_creation_rejects(int64_wraps, 4);
  check_creation_rejects(empty_huge, 4);
  check_creation_rejects(huge_empty, 4);

  /* empty arrays with moderate dims are fine, and print */
  const int empty_ok[] = {0, 1000, 1000};
  mlx_array r = mlx_array_new();
  CHECK_OK(mlx_zeros(&r, empty_ok, 3, MLX_FLOAT32, test_stream()));
  CHECK(mlx_array_size(r) == 0);
  mlx_string s = mlx_string_new();
  CHECK_OK(mlx_array_tostring(&s, r));
  CHECK(strstr(mlx_string_data(s), "dtype=float32") != NULL);
  /* 2^56 elements (the most a shape may span) as a lazy broadcast is
   * representable; materialising it is not */
  const int wide[] = {1 << 28, 1 << 28};
  CHECK_OK(mlx_zeros(&r, wide, 2, MLX_INT8, test_stream()));
  CHECK(mlx_array_size(r) == (size_t)1 << 56);
  const int wider[] = {(1 << 28) + 1, 1 << 28};
  mlx_array w = mlx_array_new();
  CHECK_FAILS(mlx_zeros(&w, wider, 2, MLX_INT8, test_stream()), "more than 2^56 elements");
  CHECK(w.ctx == NULL);
  mlx_array e = mlx_array_new();
  CHECK_OK(mlx_exp(&e, r, test_stream()));
  CHECK_FAILS(mlx_array_eval(e), "memory limit");
  mlx_string_free(s);
  mlx_array_free(e);
  mlx_array_free(r);
}

/* Shape ops that would build an overflowing shape fail when built. */
static void test_shape_ops(void) {
  mlx_array a = mlx_array_new(), r = mlx_array_new();
  const int one[] = {1, 3};
  CHECK_OK(mlx_zeros(&a, one, 2, MLX_FLOAT32, test_stream()));
  const int bshape[] = {0, big, big, big, 3};
  CHECK_FAILS(mlx_broadcast_to(&r, a, bshape, 5, test_stream()), "too large");
  const int reps[] = {big, big, big};
  CHECK_FAILS(mlx_tile(&r, a, reps, 3, test_stream()), "");
  CHECK(r.ctx == NULL);
  const int rshape[] = {0, big, big, big};
  mlx_array z = mlx_array_new();
  const int zs[] = {0};
  CHECK_OK(mlx_zeros(&z, zs, 1, MLX_FLOAT32, test_stream()));
  CHECK_FAILS(mlx_reshape(&r, z, rshape, 4, test_stream()), "too large");
  const int64_t st[] = {1, 1, 1, 1};
  CHECK_FAILS(mlx_as_strided(&r, a, bshape, 4, st, 4, 0, test_stream()), "");
  CHECK(r.ctx == NULL);
  mlx_array_free(z);
  mlx_array_free(a);
  mlx_array_free(r);
}

/* 2^40 elements: a clear message, nothing allocated. */
static void test_huge_allocation(void) {
  const int shape[] = {1 << 20, 1 << 20};
  mlx_array z = mlx_array_new(), r = mlx_array_new();
  CHECK_OK(mlx_zeros(&z, shape, 2, MLX_FLOAT32, test_stream()));
  CHECK_OK(mlx_exp(&r, z, test_stream()));
  size_t before = lc_alloc_active();
  CHECK_FAILS(mlx_array_eval(r), "exceeds the memory limit");
  CHECK(lc_alloc_active() == before);
  mlx_string s = mlx_string_new();
  CHECK_FAILS(mlx_array_tostring(&s, r), "memory limit");
  /* the lazy broadcast itself is a view: printing shows its corners */
  CHECK_OK(mlx_array_tostring(&s, z));
  CHECK(strstr(mlx_string_data(s), "...") != NULL);
  /* sizes with no size class, up to SIZE_MAX, are refused before rounding */
  CHECK_FAILS(lc_alloc(SIZE_MAX) == NULL, "too large");
  CHECK_FAILS(lc_alloc(SIZE_MAX / 2) == NULL, "too large");
  CHECK_FAILS(lc_alloc((size_t)1 << 50) == NULL, "memory limit");
  mlx_string_free(s);
  mlx_array_free(z);
  mlx_array_free(r);
}

int main(void) {
  test_init();
  test_creation();
  test_shape_ops();
  test_huge_allocation();
  return test_done();
}
