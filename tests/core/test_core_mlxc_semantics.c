/* Small mlx-c conventions: a missing map key is status 2 without an error;
 * a user closure that fails without saying why gets mlx-c's message, while
 * a cause lace already reported stays the last message; a node namer keeps
 * names attached to the arrays it named. */
#include "test.h"

static int silent_failure(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  (void)res;
  (void)in;
  (void)payload;
  return 1;
}

static int reported_failure(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  (void)payload;
  mlx_array a = mlx_array_new(), b = mlx_array_new();
  mlx_vector_array_get(&a, in, 0);
  int rc = mlx_add(&b, a, mlx_array_empty, test_stream()); /* fails, reports */
  mlx_array_free(a);
  mlx_array_free(b);
  (void)res;
  return rc;
}

int main(void) {
  test_init();
  mlx_map_string_to_array m = mlx_map_string_to_array_new();
  mlx_array v = mlx_array_new();
  int before = test_errors_seen;
  CHECK(mlx_map_string_to_array_get(&v, m, "missing") == 2);
  CHECK(test_errors_seen == before);
  mlx_map_string_to_array_free(m);
  mlx_map_string_to_string ms = mlx_map_string_to_string_new();
  const char *sv = NULL;
  CHECK(mlx_map_string_to_string_get(&sv, ms, "missing") == 2);
  mlx_map_string_to_string_free(ms);

  mlx_array x = mlx_array_new_float(1.0f);
  mlx_vector_array in = mlx_vector_array_new_value(x), out = mlx_vector_array_new();
  mlx_closure c = mlx_closure_new_func_payload(silent_failure, NULL, NULL);
  CHECK_FAILS(mlx_closure_apply(&out, c, in), "mlx_closure returned a non-zero value");
  mlx_closure_free(c);
  c = mlx_closure_new_func_payload(reported_failure, NULL, NULL);
  CHECK_FAILS(mlx_closure_apply(&out, c, in), "empty array");
  mlx_closure_free(c);
  mlx_vector_array_free(in);
  mlx_vector_array_free(out);

  mlx_node_namer namer = mlx_node_namer_new();
  CHECK_OK(mlx_node_namer_set_name(namer, x, "x"));
  CHECK_OK(mlx_node_namer_set_name(namer, x, "renamed"));
  mlx_array_free(x); /* the namer still holds x: its address cannot be reused */
  mlx_array y = mlx_array_new_float(2.0f);
  const char *name = NULL;
  CHECK_OK(mlx_node_namer_get_name(&name, namer, y));
  CHECK(name && strcmp(name, "renamed") != 0 && strcmp(name, "x") != 0);
  mlx_array_free(y);
  mlx_node_namer_free(namer);
  return test_done();
}
