/* The container handles of the mlx-c API used together, as programs use
 * them: vectors of arrays / ints / strings / vectors, strings, and
 * string-keyed maps (mlx_map_string_to_array holds named weights). Checks
 * copies are independent, containers keep their arrays alive, iteration
 * visits every entry once, and memory returns to its baseline. */
#include "integration.h"

static mlx_array arange_f32(int n, float start) {
  float v[16];
  for (int i = 0; i < n; i++) v[i] = start + (float)i;
  int sh[1] = {n};
  return mlx_array_new_data(v, sh, 1, MLX_FLOAT32);
}

static double first_value(mlx_array a) {
  double *v = test_values(a), x = v ? v[0] : NAN;
  free(v);
  return x;
}

static void test_vector_array(void) {
  mlx_array a = arange_f32(3, 0), b = arange_f32(4, 10), c = arange_f32(2, 100);
  mlx_vector_array v = mlx_vector_array_new(), copy = mlx_vector_array_new();
  mlx_array got = mlx_array_new();
  CHECK(mlx_vector_array_size(v) == 0);
  CHECK_OK(mlx_vector_array_append_value(v, a));
  mlx_array bc[2] = {b, c};
  CHECK_OK(mlx_vector_array_append_data(v, bc, 2));
  CHECK(mlx_vector_array_size(v) == 3);

  /* the vector keeps its arrays alive after the caller's handles go */
  mlx_array_free(a);
  mlx_array_free(b);
  CHECK_OK(mlx_vector_array_get(&got, v, 1));
  CHECK_SHAPE(got, 4);
  CHECK(first_value(got) == 10.0);

  /* a copy is independent of later changes to the source */
  CHECK_OK(mlx_vector_array_set(&copy, v));
  CHECK_OK(mlx_vector_array_append_value(v, c));
  CHECK(mlx_vector_array_size(v) == 4 && mlx_vector_array_size(copy) == 3);
  CHECK_OK(mlx_vector_array_set_value(&v, c));
  CHECK(mlx_vector_array_size(v) == 1);
  CHECK_OK(mlx_vector_array_get(&got, copy, 0));
  CHECK(first_value(got) == 0.0);
  CHECK_FAILS(mlx_vector_array_get(&got, copy, 3), "out of range");

  /* eval of a whole vector evaluates every lazy element */
  mlx_array s1 = mlx_array_new(), s2 = mlx_array_new();
  CHECK_OK(mlx_add(&s1, got, got, test_stream()));
  CHECK_OK(mlx_add(&s2, s1, got, test_stream()));
  mlx_array lazy[2] = {s1, s2};
  CHECK_OK(mlx_vector_array_set_data(&v, lazy, 2));
  CHECK_OK(mlx_eval(v));
  double r1[3] = {0, 2, 4}, r2[3] = {0, 3, 6};
  CHECK_CLOSE(s1, r1, 3, 0, 0);
  CHECK_CLOSE(s2, r2, 3, 0, 0);
  CHECK_OK(mlx_async_eval(v));
  CHECK_OK(mlx_synchronize(test_stream()));

  mlx_vector_vector_array vv = mlx_vector_vector_array_new_value(v);
  CHECK_OK(mlx_vector_vector_array_append_value(vv, copy));
  CHECK(mlx_vector_vector_array_size(vv) == 2);
  mlx_vector_array inner = mlx_vector_array_new();
  CHECK_OK(mlx_vector_vector_array_get(&inner, vv, 1));
  CHECK(mlx_vector_array_size(inner) == 3);
  CHECK_FAILS(mlx_vector_vector_array_get(&inner, vv, 2), "out of range");

  mlx_vector_array_free(inner);
  mlx_vector_vector_array_free(vv);
  mlx_array_free(s1);
  mlx_array_free(s2);
  mlx_array_free(c);
  mlx_array_free(got);
  mlx_vector_array_free(v);
  mlx_vector_array_free(copy);
}

static void test_vector_int_string(void) {
  int data[4] = {3, -1, 4, 1};
  mlx_vector_int vi = mlx_vector_int_new_data(data, 4);
  data[0] = 99; /* the vector holds a copy */
  CHECK_OK(mlx_vector_int_append_value(vi, 5));
  int x = 0, sum = 0;
  CHECK(mlx_vector_int_size(vi) == 5);
  for (size_t i = 0; i < mlx_vector_int_size(vi); i++) {
    CHECK_OK(mlx_vector_int_get(&x, vi, i));
    sum += x;
  }
  CHECK(sum == 12);
  CHECK_FAILS(mlx_vector_int_get(&x, vi, 5), "out of range");
  CHECK_OK(mlx_vector_int_set_value(&vi, 7));
  CHECK(mlx_vector_int_size(vi) == 1);
  mlx_vector_int_free(vi);

  char buf[8] = "weight";
  const char *names[2] = {buf, "bias"};
  mlx_vector_string vs = mlx_vector_string_new_data(names, 2);
  buf[0] = 'W';
  CHECK_OK(mlx_vector_string_append_value(vs, "scale"));
  char *s = NULL;
  CHECK(mlx_vector_string_size(vs) == 3);
  CHECK_OK(mlx_vector_string_get(&s, vs, 0));
  CHECK(s && !strcmp(s, "weight"));
  CHECK_OK(mlx_vector_string_get(&s, vs, 2));
  CHECK(s && !strcmp(s, "scale"));
  mlx_vector_string_free(vs);

  mlx_string a = mlx_string_new_data(buf), b = mlx_string_new();
  buf[0] = 'w';
  CHECK(!strcmp(mlx_string_data(a), "Weight"));
  CHECK_OK(mlx_string_set(&b, a));
  mlx_string_free(a);
  CHECK(!strcmp(mlx_string_data(b), "Weight"));
  mlx_string_free(b);
}

/* Named parameters, the way a model's weights travel through mlx-c. */
static void test_maps(void) {
  const char *names[3] = {"layer.weight", "layer.bias", "scale"};
  mlx_map_string_to_array params = mlx_map_string_to_array_new();
  for (int i = 0; i < 3; i++) {
    mlx_array a = arange_f32(i + 2, (float)(10 * i));
    CHECK_OK(mlx_map_string_to_array_insert(params, names[i], a));
    mlx_array_free(a);
  }
  /* insert of an existing key replaces its value */
  mlx_array repl = arange_f32(1, -5);
  CHECK_OK(mlx_map_string_to_array_insert(params, "scale", repl));
  mlx_array_free(repl);

  mlx_array got = mlx_array_new();
  CHECK_OK(mlx_map_string_to_array_get(&got, params, "layer.bias"));
  CHECK_SHAPE(got, 3);
  CHECK(first_value(got) == 10.0);
  CHECK_OK(mlx_map_string_to_array_get(&got, params, "scale"));
  CHECK(first_value(got) == -5.0);
  /* a missing key is not found (mlx-c returns 2 without reporting) */
  CHECK(mlx_map_string_to_array_get(&got, params, "missing") != 0);

  mlx_map_string_to_array copy = mlx_map_string_to_array_new();
  CHECK_OK(mlx_map_string_to_array_set(&copy, params));
  mlx_map_string_to_array_free(params);

  /* iteration visits each entry once; the order is unspecified */
  int seen[3] = {0, 0, 0}, count = 0;
  const char *key = NULL;
  mlx_map_string_to_array_iterator it = mlx_map_string_to_array_iterator_new(copy);
  int rc;
  while ((rc = mlx_map_string_to_array_iterator_next(&key, &got, it)) == 0) {
    count++;
    for (int i = 0; i < 3; i++)
      if (!strcmp(key, names[i])) {
        seen[i]++;
        CHECK(mlx_array_size(got) == (size_t)(i == 2 ? 1 : i + 2));
      }
  }
  CHECK_MSG(rc == 2, "iterator_next ended with %d", rc);
  CHECK(count == 3 && seen[0] == 1 && seen[1] == 1 && seen[2] == 1);
  mlx_map_string_to_array_iterator_free(it);
  mlx_map_string_to_array_free(copy);
  mlx_array_free(got);

  mlx_map_string_to_string meta = mlx_map_string_to_string_new();
  CHECK_OK(mlx_map_string_to_string_insert(meta, "format", "mlx"));
  CHECK_OK(mlx_map_string_to_string_insert(meta, "format", "lace"));
  CHECK_OK(mlx_map_string_to_string_insert(meta, "version", "1"));
  const char *val = NULL, *k = NULL;
  CHECK_OK(mlx_map_string_to_string_get(&val, meta, "format"));
  CHECK(val && !strcmp(val, "lace"));
  mlx_map_string_to_string_iterator sit = mlx_map_string_to_string_iterator_new(meta);
  count = 0;
  while (mlx_map_string_to_string_iterator_next(&k, &val, sit) == 0) count++;
  CHECK(count == 2);
  mlx_map_string_to_string_iterator_free(sit);
  mlx_map_string_to_string_free(meta);
}

int main(void) {
  test_init();
  size_t before = test_active_memory();
  test_vector_array();
  test_vector_int_string();
  test_maps();
  CHECK_MSG(test_active_memory() == before, "active memory %zu, was %zu", test_active_memory(),
            before);
  return integ_done();
}
