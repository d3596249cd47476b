/* Handles and lifecycle: creation from data, metadata, items, data access,
 * set/free pairs, empty handles, error reporting without aborting. */
#include "test.h"

static void test_scalars(void) {
  mlx_array a = mlx_array_new_float(2.5f), b = mlx_array_new_int(-7), c = mlx_array_new_bool(true);
  float f = 0;
  int32_t i = 0;
  bool bo = false;
  CHECK_OK(mlx_array_item_float32(&f, a));
  CHECK_OK(mlx_array_item_int32(&i, b));
  CHECK_OK(mlx_array_item_bool(&bo, c));
  CHECK(f == 2.5f && i == -7 && bo);
  CHECK(mlx_array_ndim(a) == 0 && mlx_array_size(a) == 1 && mlx_array_dtype(a) == MLX_FLOAT32);
  CHECK(mlx_array_dtype(b) == MLX_INT32 && mlx_array_itemsize(b) == 4);
  double d = 0;
  CHECK_OK(mlx_array_item_float64(&d, b)); /* converting read */
  CHECK(d == -7.0);
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(c);
}

static void test_data(void) {
  float data[6] = {1, 2, 3, 4, 5, 6};
  int shape[2] = {2, 3};
  mlx_array a = mlx_array_new_data(data, shape, 2, MLX_FLOAT32);
  CHECK_SHAPE(a, 2, 3);
  CHECK(mlx_array_nbytes(a) == 24 && mlx_array_dim(a, -1) == 3);
  const float *p = mlx_array_data_float32(a);
  CHECK(p && p[5] == 6.0f);
  const size_t *st = mlx_array_strides(a);
  CHECK(st[0] == 3 && st[1] == 1);
  CHECK(mlx_array_data_int32(a) == NULL); /* wrong dtype is reported, not reinterpreted */
  mlx_array b = mlx_array_new();
  CHECK_OK(mlx_array_set(&b, a));
  mlx_array_free(a);
  CHECK(mlx_array_data_float32(b)[0] == 1.0f);
  mlx_array_free(b);
}

static int dtor_calls;
static void count_dtor(void *p) {
  (void)p;
  dtor_calls++;
}

static void test_managed(void) {
  static float data[4] = {1, 2, 3, 4};
  int shape[1] = {4};
  mlx_array a = mlx_array_new_data_managed_payload(data, shape, 1, MLX_FLOAT32, data, count_dtor);
  mlx_array b = mlx_array_new();
  mlx_array_set(&b, a);
  mlx_array_free(a);
  CHECK(dtor_calls == 0);
  mlx_array_free(b);
  CHECK(dtor_calls == 1);
}

static void test_errors(void) {
  mlx_array empty = mlx_array_new();
  CHECK_OK(mlx_array_free(empty)); /* free of an empty handle is fine */
  float f;
  CHECK_FAILS(mlx_array_item_float32(&f, empty), "empty");
  int shape[1] = {-1};
  mlx_array bad = mlx_array_new_data(&f, shape, 1, MLX_FLOAT32);
  CHECK(bad.ctx == NULL);
  CHECK(strstr(test_last_error, "negative") != NULL);
  mlx_array bad2 = mlx_array_new_data(&f, NULL, 0, (mlx_dtype)99);
  CHECK(bad2.ctx == NULL);
  float data[2] = {1, 2};
  int s2[1] = {2};
  mlx_array two = mlx_array_new_data(data, s2, 1, MLX_FLOAT32);
  CHECK_FAILS(mlx_array_item_float32(&f, two), "size 1");
  mlx_array_free(two);
}

static void test_vectors_and_strings(void) {
  mlx_vector_array v = mlx_vector_array_new();
  mlx_array a = mlx_array_new_float(1.0f), b = mlx_array_new_float(2.0f);
  CHECK_OK(mlx_vector_array_append_value(v, a));
  CHECK_OK(mlx_vector_array_append_value(v, b));
  CHECK(mlx_vector_array_size(v) == 2);
  mlx_array got = mlx_array_new();
  CHECK_OK(mlx_vector_array_get(&got, v, 1));
  float f = 0;
  mlx_array_item_float32(&f, got);
  CHECK(f == 2.0f);
  CHECK_FAILS(mlx_vector_array_get(&got, v, 5), "out of range");
  mlx_vector_array copy = mlx_vector_array_new();
  CHECK_OK(mlx_vector_array_set(&copy, v));
  mlx_vector_array_free(v);
  CHECK(mlx_vector_array_size(copy) == 2);
  mlx_vector_array_free(copy);
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(got);

  mlx_string s = mlx_string_new_data("hello");
  CHECK(!strcmp(mlx_string_data(s), "hello"));
  mlx_string_free(s);
  mlx_string ver = mlx_string_new();
  CHECK_OK(mlx_version(&ver));
  CHECK(mlx_string_data(ver) && strlen(mlx_string_data(ver)) > 0);
  mlx_string_free(ver);

  int vals[3] = {4, 5, 6};
  mlx_vector_int vi = mlx_vector_int_new_data(vals, 3);
  int x = 0;
  CHECK_OK(mlx_vector_int_get(&x, vi, 2));
  CHECK(x == 6 && mlx_vector_int_size(vi) == 3);
  mlx_vector_int_free(vi);
}

static int payload_freed;
static void free_payload(void *p) {
  payload_freed++;
  free(p);
}
static int identity(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  (*(int *)payload)++;
  return mlx_vector_array_set(res, in);
}

static void test_closures(void) {
  int *counter = calloc(1, sizeof(int));
  mlx_closure c = mlx_closure_new_func_payload(identity, counter, free_payload);
  mlx_closure c2 = mlx_closure_new();
  mlx_closure_set(&c2, c);
  mlx_array a = mlx_array_new_float(3.0f);
  mlx_vector_array in = mlx_vector_array_new_value(a), out = mlx_vector_array_new();
  CHECK_OK(mlx_closure_apply(&out, c2, in));
  CHECK(mlx_vector_array_size(out) == 1 && *counter == 1);
  mlx_closure_free(c);
  CHECK(payload_freed == 0);
  mlx_closure_free(c2);
  CHECK(payload_freed == 1); /* destructor ran exactly once, at the last free */
  mlx_vector_array_free(in);
  mlx_vector_array_free(out);
  mlx_array_free(a);
}

static void test_memory(void) {
  size_t before = test_active_memory();
  float *big = calloc(1 << 20, sizeof(float));
  int shape[1] = {1 << 20};
  mlx_array a = mlx_array_new_data(big, shape, 1, MLX_FLOAT32);
  CHECK(test_active_memory() >= before + (4u << 20));
  mlx_array_free(a);
  CHECK(test_active_memory() == before);
  size_t cache = 0;
  mlx_get_cache_memory(&cache);
  CHECK(cache >= (4u << 20));
  mlx_clear_cache();
  mlx_get_cache_memory(&cache);
  CHECK(cache == 0);
  free(big);
}

int main(void) {
  test_init();
  test_scalars();
  test_data();
  test_managed();
  test_errors();
  test_vectors_and_strings();
  test_closures();
  test_memory();
  return test_done();
}
