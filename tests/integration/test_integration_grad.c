/* mlx-c's example-grad.c, written anew as checks: jvp of a unary closure,
 * value_and_grad of a unary closure and of a payload closure whose payload
 * array is freed by the closure's destructor; the ops run on the default
 * GPU stream as the example asks (lace runs it on the CPU). What the
 * example prints against mlx-c is what is checked here. */
#include "integration.h"

static int add_one(mlx_array *res, const mlx_array x) {
  mlx_stream gpu = integration_stream_new();
  mlx_array one = mlx_array_new_float(1.0f);
  int rc = mlx_add(res, x, one, gpu);
  mlx_array_free(one);
  mlx_stream_free(gpu);
  return rc;
}

static int add_payload(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  if (mlx_vector_array_size(in) != 1) return 1;
  mlx_stream gpu = integration_stream_new();
  mlx_array x = mlx_array_new(), y = mlx_array_new();
  int rc = mlx_vector_array_get(&x, in, 0);
  if (!rc) rc = mlx_add(&y, x, *(mlx_array *)payload, gpu);
  if (!rc) rc = mlx_vector_array_set_value(res, y);
  mlx_array_free(x);
  mlx_array_free(y);
  mlx_stream_free(gpu);
  return rc;
}

static int payload_freed;
static void free_payload(void *p) {
  mlx_array_free(*(mlx_array *)p);
  payload_freed++;
}

/* out and its derivative, printed as the example prints them. */
static void check_pair(mlx_vector_array vout, mlx_vector_array vdout) {
  mlx_array out = mlx_array_new(), dout = mlx_array_new();
  CHECK(mlx_vector_array_size(vout) == 1 && mlx_vector_array_size(vdout) == 1);
  NEED(mlx_vector_array_get(&out, vout, 0));
  NEED(mlx_vector_array_get(&dout, vdout, 0));
  CHECK_PRINT(out, "array(2, dtype=float32)");
  CHECK_PRINT(dout, "array(1, dtype=float32)");
skip:
  mlx_array_free(out);
  mlx_array_free(dout);
}

static void test_jvp(mlx_closure cls, mlx_array x) {
  mlx_array one = mlx_array_new_float(1.0f);
  mlx_vector_array primals = mlx_vector_array_new_value(x);
  mlx_vector_array tangents = mlx_vector_array_new_value(one);
  mlx_vector_array vout = mlx_vector_array_new(), vdout = mlx_vector_array_new();
  NEED(mlx_jvp(&vout, &vdout, cls, primals, tangents));
  check_pair(vout, vdout);
skip:
  mlx_vector_array_free(vout);
  mlx_vector_array_free(vdout);
  mlx_vector_array_free(primals);
  mlx_vector_array_free(tangents);
  mlx_array_free(one);
}

static void test_value_and_grad(mlx_closure cls, mlx_array x) {
  int arg = 0;
  mlx_closure_value_and_grad vag = mlx_closure_value_and_grad_new();
  mlx_vector_array inputs = mlx_vector_array_new_value(x);
  mlx_vector_array vout = mlx_vector_array_new(), vdout = mlx_vector_array_new();
  NEED(mlx_value_and_grad(&vag, cls, &arg, 1));
  NEED(mlx_closure_value_and_grad_apply(&vout, &vdout, vag, inputs));
  check_pair(vout, vdout);
skip:
  mlx_vector_array_free(vout);
  mlx_vector_array_free(vdout);
  mlx_vector_array_free(inputs);
  mlx_closure_value_and_grad_free(vag);
}

int main(void) {
  test_init();
  mlx_array x = mlx_array_new_float(1.0f);
  mlx_array y = mlx_array_new_float(1.0f);
  mlx_closure cls = mlx_closure_new_unary(add_one);
  mlx_closure with_payload = mlx_closure_new_func_payload(add_payload, &y, free_payload);
  test_jvp(cls, x);
  test_value_and_grad(cls, x);
  test_value_and_grad(with_payload, x);
  mlx_closure_free(with_payload);
  CHECK(payload_freed == 1);
  mlx_closure_free(cls);
  mlx_array_free(x);
  return integ_done();
}
