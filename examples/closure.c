/* closure: wrap C functions as mlx_closure values and apply them to vectors
 * of arrays; a closure with a payload; a closure that fails and how the
 * failure reaches the caller. Uses only the public mlx-c API. */
#include <stdio.h>

#include "mlx/c/mlx.h"

static mlx_stream stream; /* the CPU stream, set up by main */

/* x -> x + 1 */
static int inc(mlx_array *res, const mlx_array x) {
  mlx_array one = mlx_array_new_float(1.0f);
  int rc = mlx_add(res, x, one, stream);
  mlx_array_free(one);
  return rc;
}

/* (x) -> (x + payload); fails when the payload is negative. */
struct offset {
  float value;
  char error[128];
};
static int add_offset(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  struct offset *p = payload;
  if (p->value < 0) {
    snprintf(p->error, sizeof p->error, "negative offset %g", p->value);
    return 1;
  }
  mlx_array x = mlx_array_new(), y = mlx_array_new(), v = mlx_array_new_float(p->value);
  int rc = mlx_vector_array_get(&x, in, 0) || mlx_add(&y, x, v, stream) ||
           mlx_vector_array_set_value(res, y);
  mlx_array_free(x);
  mlx_array_free(y);
  mlx_array_free(v);
  return rc;
}

static int apply_and_print(const char *label, mlx_closure f, mlx_vector_array args) {
  mlx_vector_array out = mlx_vector_array_new();
  mlx_array y = mlx_array_new();
  float v = 0;
  int rc = mlx_closure_apply(&out, f, args) || mlx_vector_array_get(&y, out, 0) ||
           mlx_array_item_float32(&v, y);
  if (!rc) printf("%s %g\n", label, v);
  mlx_array_free(y);
  mlx_vector_array_free(out);
  return rc;
}

static void report(const char *msg, void *data) {
  (void)data;
  printf("lace reported: %s\n", msg);
}

int main(void) {
  stream = mlx_default_cpu_stream_new();
  mlx_array x = mlx_array_new_float(1.0f);
  mlx_vector_array args = mlx_vector_array_new_value(x);
  struct offset off = {2.0f, ""};
  mlx_closure f = mlx_closure_new_unary(inc);
  mlx_closure g = mlx_closure_new_func_payload(add_offset, &off, NULL);

  int rc = apply_and_print("x + 1 =", f, args) || apply_and_print("x + 2 =", g, args);

  /* A failing closure makes mlx_closure_apply return non-zero; the
   * closure's own message travels through its payload. */
  mlx_set_error_handler(report, NULL, NULL);
  off.value = -1.0f;
  if (!rc && apply_and_print("x - 1 =", g, args)) printf("closure failed: %s\n", off.error);
  else rc = 1;
  mlx_set_error_handler(NULL, NULL, NULL);

  mlx_closure_free(g);
  mlx_closure_free(f);
  mlx_vector_array_free(args);
  mlx_array_free(x);
  mlx_stream_free(stream);
  return rc;
}
