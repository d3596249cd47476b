/* mlx-c's example-closure.c, written anew as checks: a unary closure, a
 * closure with a payload that validates its input (isnan + any) and fails
 * with its own message, closures shared with mlx_closure_set, payload
 * destructors, several outputs and closures calling closures. */
#include "integration.h"

/* x -> x + 1 */
static int inc_fun(mlx_array *res, const mlx_array in) {
  mlx_array one = mlx_array_new_float(1.0f);
  int rc = mlx_add(res, in, one, test_stream());
  mlx_array_free(one);
  return rc;
}

struct payload {
  mlx_array value;
  char error[64];
  int dtor_calls;
};

/* (x) -> (x + value); fails when value holds a NaN. */
static int inc_by_value(mlx_vector_array *res, const mlx_vector_array in, void *p_) {
  struct payload *p = p_;
  mlx_stream s = test_stream();
  if (mlx_vector_array_size(in) != 1) {
    snprintf(p->error, sizeof p->error, "expected 1 argument");
    return 1;
  }
  mlx_array nan = mlx_array_new(), x = mlx_array_new(), y = mlx_array_new();
  bool has_nan = true;
  int rc = mlx_isnan(&nan, p->value, s) || mlx_any(&nan, nan, false, s) ||
           mlx_array_item_bool(&has_nan, nan);
  if (!rc && has_nan) {
    snprintf(p->error, sizeof p->error, "nan detected");
    rc = 1;
  }
  if (!rc) rc = mlx_vector_array_get(&x, in, 0) || mlx_add(&y, x, p->value, s) ||
                mlx_vector_array_set_value(res, y);
  mlx_array_free(nan);
  mlx_array_free(x);
  mlx_array_free(y);
  return rc;
}

static void payload_dtor(void *p_) { ((struct payload *)p_)->dtor_calls++; }

/* Applies f to (x); stores the single output as a float in *v. Returns
 * mlx_closure_apply's status. */
static int apply1(mlx_closure f, mlx_array x, float *v) {
  mlx_vector_array in = mlx_vector_array_new_value(x), out = mlx_vector_array_new();
  mlx_array y = mlx_array_new();
  *v = NAN;
  int rc = mlx_closure_apply(&out, f, in);
  if (!rc) {
    CHECK(mlx_vector_array_size(out) == 1);
    CHECK_OK(mlx_vector_array_get(&y, out, 0));
    CHECK_OK(mlx_array_item_float32(v, y));
  }
  mlx_array_free(y);
  mlx_vector_array_free(in);
  mlx_vector_array_free(out);
  return rc;
}

static void test_example_closure(void) {
  float v = 0;
  mlx_array x = mlx_array_new_float(1.0f);
  mlx_closure cls = mlx_closure_new_unary(inc_fun);
  struct payload p = {mlx_array_new_float(2.0f), "", 0};
  mlx_closure cls_val = mlx_closure_new_func_payload(inc_by_value, &p, payload_dtor);

  CHECK_OK(apply1(cls, x, &v));
  CHECK(v == 2.0f);
  NEED(apply1(cls_val, x, &v));
  CHECK(v == 3.0f);

  /* the closure sees the payload as it is at call time */
  mlx_array_free(p.value);
  p.value = mlx_array_new_float(NAN);
  CHECK(apply1(cls_val, x, &v) != 0);
  CHECK_MSG(!strcmp(p.error, "nan detected"), "payload error '%s'", p.error);

  /* a wrong number of inputs is the closure's own business */
  mlx_array arrs[2] = {x, x};
  mlx_vector_array two = mlx_vector_array_new_data(arrs, 2), out = mlx_vector_array_new();
  CHECK(mlx_closure_apply(&out, cls_val, two) != 0);
  CHECK(!strcmp(p.error, "expected 1 argument"));
  /* a unary closure refuses two inputs and says so */
  CHECK_FAILS(mlx_closure_apply(&out, cls, two), "argument");
  mlx_vector_array_free(two);
  mlx_vector_array_free(out);
skip:
  mlx_closure_free(cls);
  CHECK(p.dtor_calls == 0);
  mlx_closure_free(cls_val);
  CHECK_MSG(p.dtor_calls == 1, "payload destructor ran %d times", p.dtor_calls);
  mlx_array_free(p.value);
  mlx_array_free(x);
}

/* mlx_closure_set shares one closure: the payload lives until the last
 * handle is freed; applying a freed-then-reset handle fails cleanly. */
static void test_closure_sharing(void) {
  struct payload p = {mlx_array_new_float(5.0f), "", 0};
  mlx_closure a = mlx_closure_new_func_payload(inc_by_value, &p, payload_dtor);
  mlx_closure b = mlx_closure_new();
  CHECK_OK(mlx_closure_set(&b, a));
  mlx_closure_free(a);
  CHECK(p.dtor_calls == 0);
  mlx_array x = mlx_array_new_float(1.0f), nan = mlx_array_new();
  float v = 0;
  NEED(mlx_isnan(&nan, x, test_stream()));
  NEED(mlx_any(&nan, nan, false, test_stream()));
  CHECK_OK(apply1(b, x, &v));
  CHECK(v == 6.0f);
skip:
  mlx_array_free(nan);
  mlx_closure_free(b);
  CHECK(p.dtor_calls == 1);

  mlx_closure empty = mlx_closure_new();
  mlx_vector_array in = mlx_vector_array_new_value(x), out = mlx_vector_array_new();
  CHECK_FAILS(mlx_closure_apply(&out, empty, in), "closure");
  mlx_vector_array_free(in);
  mlx_vector_array_free(out);
  mlx_array_free(x);
  mlx_array_free(p.value);
}

/* (a, b) -> (a + b, a + a): several outputs, and a closure that applies
 * another closure (inc) to its first output. */
static int two_outputs(mlx_vector_array *res, const mlx_vector_array in, void *inner_) {
  mlx_closure *inner = inner_;
  mlx_array a = mlx_array_new(), b = mlx_array_new(), s = mlx_array_new(), d = mlx_array_new();
  mlx_vector_array tmp_in = mlx_vector_array_new(), tmp_out = mlx_vector_array_new();
  int rc = mlx_vector_array_get(&a, in, 0) || mlx_vector_array_get(&b, in, 1) ||
           mlx_add(&s, a, b, test_stream()) || mlx_add(&d, a, a, test_stream()) ||
           mlx_vector_array_set_value(&tmp_in, s) || mlx_closure_apply(&tmp_out, *inner, tmp_in) ||
           mlx_vector_array_get(&s, tmp_out, 0);
  mlx_array outs[2] = {s, d};
  if (!rc) rc = mlx_vector_array_set_data(res, outs, 2);
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(s);
  mlx_array_free(d);
  mlx_vector_array_free(tmp_in);
  mlx_vector_array_free(tmp_out);
  return rc;
}

static void test_closure_outputs(void) {
  mlx_closure inc = mlx_closure_new_unary(inc_fun);
  mlx_closure f = mlx_closure_new_func_payload(two_outputs, &inc, NULL);
  float av[3] = {1, 2, 3}, bv[3] = {10, 20, 30};
  int sh[1] = {3};
  mlx_array arrs[2] = {mlx_array_new_data(av, sh, 1, MLX_FLOAT32),
                       mlx_array_new_data(bv, sh, 1, MLX_FLOAT32)};
  mlx_vector_array in = mlx_vector_array_new_data(arrs, 2), out = mlx_vector_array_new();
  CHECK_OK(mlx_closure_apply(&out, f, in));
  CHECK(mlx_vector_array_size(out) == 2);
  mlx_array y = mlx_array_new();
  CHECK_OK(mlx_eval(out));
  CHECK_OK(mlx_vector_array_get(&y, out, 0));
  double ref0[3] = {12, 23, 34}, ref1[3] = {2, 4, 6};
  CHECK_CLOSE(y, ref0, 3, 0, 0);
  CHECK_OK(mlx_vector_array_get(&y, out, 1));
  CHECK_CLOSE(y, ref1, 3, 0, 0);
  mlx_array_free(y);
  mlx_array_free(arrs[0]);
  mlx_array_free(arrs[1]);
  mlx_vector_array_free(in);
  mlx_vector_array_free(out);
  mlx_closure_free(f);
  mlx_closure_free(inc);
}

int main(void) {
  test_init();
  size_t before = test_active_memory();
  test_example_closure();
  test_closure_sharing();
  test_closure_outputs();
  CHECK_MSG(test_active_memory() == before, "active memory %zu, was %zu", test_active_memory(),
            before);
  return integ_done();
}
