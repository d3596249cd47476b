/* The transforms' API under bad use: every mistake returns non-zero with a
 * message through the error handler, nothing aborts or leaks (this test
 * runs under ASan). Also: stop_gradient, the closure kinds' set/free/apply,
 * a function that evaluates intermediates while being differentiated, and
 * the list of primitives without rules. */
#include "tx_check.h"
#include "tx_fn.h"
#include "transforms/transforms.h"

static mlx_stream S(void) { return test_stream(); }

static int f_sum_sq(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), q = mlx_array_new(), r = mlx_array_new();
  int rc = mlx_vector_array_get(&x, in, 0) || mlx_multiply(&q, x, x, S()) ||
           mlx_sum(&r, q, false, S()) || mlx_vector_array_set_value(res, r);
  mlx_array_free(x);
  mlx_array_free(q);
  mlx_array_free(r);
  return rc;
}

static int f_dot(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array a = mlx_array_new(), b = mlx_array_new(), q = mlx_array_new(), r = mlx_array_new();
  int rc = mlx_vector_array_get(&a, in, 0) || mlx_vector_array_get(&b, in, 1) ||
           mlx_multiply(&q, a, b, S()) || mlx_sum(&r, q, false, S()) ||
           mlx_vector_array_set_value(res, r);
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(q);
  mlx_array_free(r);
  return rc;
}

static int f_square_vec(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), q = mlx_array_new();
  int rc = mlx_vector_array_get(&x, in, 0) || mlx_multiply(&q, x, x, S()) ||
           mlx_vector_array_set_value(res, q);
  mlx_array_free(x);
  mlx_array_free(q);
  return rc;
}

static int calls;
static int f_fails_second_op(mlx_vector_array *res, const mlx_vector_array in) {
  calls++;
  mlx_array x = mlx_array_new(), q = mlx_array_new(), bad = mlx_array_new();
  int sh[2] = {3, 5};
  int rc = mlx_vector_array_get(&x, in, 0) || mlx_multiply(&q, x, x, S()) ||
           mlx_reshape(&bad, q, sh, 2, S()) /* fails: 4 elements */ ||
           mlx_vector_array_set_value(res, bad);
  mlx_array_free(x);
  mlx_array_free(q);
  mlx_array_free(bad);
  return rc;
}

static int f_user_error(mlx_vector_array *res, const mlx_vector_array in) {
  (void)res, (void)in;
  return 7; /* fails without any lace call reporting */
}

/* evaluates an intermediate (and prints nothing) before finishing */
static int f_evals(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), q = mlx_array_new(), r = mlx_array_new();
  int rc = mlx_vector_array_get(&x, in, 0) || mlx_multiply(&q, x, x, S()) || mlx_array_eval(q) ||
           mlx_sum(&r, q, false, S()) || mlx_vector_array_set_value(res, r);
  mlx_array_free(x);
  mlx_array_free(q);
  mlx_array_free(r);
  return rc;
}

/* sum(stop_gradient(x) * x): gradient x, not 2x */
static int f_stop(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), s = mlx_array_new(), q = mlx_array_new(), r = mlx_array_new();
  int rc = mlx_vector_array_get(&x, in, 0) || mlx_stop_gradient(&s, x, S()) ||
           mlx_multiply(&q, s, x, S()) || mlx_sum(&r, q, false, S()) ||
           mlx_vector_array_set_value(res, r);
  mlx_array_free(x);
  mlx_array_free(s);
  mlx_array_free(q);
  mlx_array_free(r);
  return rc;
}

static void test_value_and_grad_errors(void) {
  int sh[1] = {4};
  mlx_array x = tx_rand(sh, 1, -1, 1);
  mlx_vector_array in = mlx_vector_array_new_value(x);
  mlx_vector_array v = mlx_vector_array_new(), g = mlx_vector_array_new();
  mlx_closure_value_and_grad vag = mlx_closure_value_and_grad_new();
  mlx_closure nonscalar = mlx_closure_new_func(f_square_vec);
  mlx_closure fails = mlx_closure_new_func(f_fails_second_op);
  mlx_closure user = mlx_closure_new_func(f_user_error);
  mlx_closure ok = mlx_closure_new_func(f_sum_sq);
  int a0 = 0, a3 = 3, rep[2] = {0, 0}, neg = -1;
  CHECK_OK(mlx_value_and_grad(&vag, nonscalar, &a0, 1));
  CHECK_FAILS(mlx_closure_value_and_grad_apply(&v, &g, vag, in), "must return a scalar");
  CHECK_FAILS(mlx_value_and_grad(&vag, ok, rep, 2), "repeated argument");
  CHECK_FAILS(mlx_value_and_grad(&vag, ok, NULL, 0), "at least one argument");
  CHECK_FAILS(mlx_value_and_grad(&vag, mlx_closure_new(), &a0, 1), "empty closure");
  CHECK_FAILS(mlx_value_and_grad(NULL, ok, &a0, 1), "NULL");
  CHECK_OK(mlx_value_and_grad(&vag, ok, &a3, 1));
  CHECK_FAILS(mlx_closure_value_and_grad_apply(&v, &g, vag, in), "invalid argument number 3");
  CHECK_OK(mlx_value_and_grad(&vag, ok, &neg, 1)); /* -1 = the last input */
  CHECK_OK(mlx_closure_value_and_grad_apply(&v, &g, vag, in));
  CHECK(mlx_vector_array_size(g) == 1);
  CHECK_OK(mlx_value_and_grad(&vag, fails, &a0, 1));
  calls = 0;
  CHECK_FAILS(mlx_closure_value_and_grad_apply(&v, &g, vag, in), "the function failed");
  CHECK(calls == 1);
  CHECK_OK(mlx_value_and_grad(&vag, user, &a0, 1));
  CHECK_FAILS(mlx_closure_value_and_grad_apply(&v, &g, vag, in), "non-zero");
  CHECK_FAILS(mlx_closure_value_and_grad_apply(&v, &g, mlx_closure_value_and_grad_new(), in),
              "empty closure");
  mlx_closure_value_and_grad_free(vag);
  mlx_closure_free(nonscalar);
  mlx_closure_free(fails);
  mlx_closure_free(user);
  mlx_closure_free(ok);
  mlx_vector_array_free(v);
  mlx_vector_array_free(g);
  mlx_vector_array_free(in);
  mlx_array_free(x);
}

static void test_vjp_jvp_errors(void) {
  int sh[1] = {4}, sh2[1] = {3};
  mlx_array x = tx_rand(sh, 1, -1, 1), bad = tx_rand(sh2, 1, -1, 1);
  mlx_vector_array p = mlx_vector_array_new_value(x), c = mlx_vector_array_new_value(bad);
  mlx_vector_array none = mlx_vector_array_new(), r0 = mlx_vector_array_new(),
                   r1 = mlx_vector_array_new();
  mlx_closure f = mlx_closure_new_func(f_square_vec);
  CHECK_FAILS(mlx_vjp(&r0, &r1, f, p, c), "does not match cotangent shape");
  CHECK_FAILS(mlx_vjp(&r0, &r1, f, p, none), "number of cotangents");
  CHECK_FAILS(mlx_jvp(&r0, &r1, f, p, c), "does not match the shape of its tangent");
  CHECK_FAILS(mlx_jvp(&r0, &r1, f, p, none), "number of tangents");
  CHECK_FAILS(mlx_vjp(&r0, &r1, mlx_closure_new(), p, p), "empty closure");
  mlx_vector_array empty_handle = {NULL};
  CHECK_FAILS(mlx_jvp(&r0, &r1, f, empty_handle, p), "mlx_jvp");
  mlx_closure_free(f);
  mlx_vector_array_free(p);
  mlx_vector_array_free(c);
  mlx_vector_array_free(none);
  mlx_vector_array_free(r0);
  mlx_vector_array_free(r1);
  mlx_array_free(x);
  mlx_array_free(bad);
}

static void test_vmap_errors(void) {
  int s1[2] = {3, 4}, s2[2] = {5, 4};
  mlx_array a = tx_rand(s1, 2, -1, 1), b = tx_rand(s2, 2, -1, 1);
  double zv = 1;
  mlx_array z = mlx_array_new_data(&zv, NULL, 0, MLX_FLOAT64);
  mlx_closure f = mlx_closure_new_func(f_square_vec);
  mlx_vector_array si = mlx_vector_array_new(), so = mlx_vector_array_new(),
                   r = mlx_vector_array_new();
  mlx_vector_array va = mlx_vector_array_new_value(a), vz = mlx_vector_array_new_value(z);
  mlx_array ab[2] = {a, b};
  mlx_vector_array vab = mlx_vector_array_new_data(ab, 2);
  int ax2 = 2, axm1 = -1, axm2 = -2, ax0 = 0, ax00[2] = {0, 0}, ax1 = 1;
  CHECK_FAILS(mlx_detail_vmap_trace(&si, &so, f, va, &ax2, 1), "invalid");
  CHECK_FAILS(mlx_detail_vmap_trace(&si, &so, f, va, &axm2, 1), "invalid");
  CHECK_FAILS(mlx_detail_vmap_trace(&si, &so, f, va, &axm1, 1), "at least one");
  CHECK_FAILS(mlx_detail_vmap_trace(&si, &so, f, vz, &ax0, 1), "zero dimensions");
  CHECK_FAILS(mlx_detail_vmap_trace(&si, &so, f, vab, ax00, 2), "inconsistent axis sizes");
  CHECK_FAILS(mlx_detail_vmap_trace(&si, &so, f, va, ax00, 2), "number of in axes");
  CHECK_OK(mlx_detail_vmap_trace(&si, &so, f, va, &ax0, 1));
  int oax = 2;
  CHECK_FAILS(mlx_detail_vmap_replace(&r, va, si, so, &ax0, 1, &oax, 1), "invalid for output");
  CHECK_FAILS(mlx_detail_vmap_replace(&r, va, si, so, &ax0, 1, NULL, 0), "number of out axes");
  CHECK_OK(mlx_detail_vmap_replace(&r, va, si, so, &ax0, 1, &ax1, 1));
  mlx_array o = mlx_array_new();
  mlx_vector_array_get(&o, r, 0);
  CHECK_SHAPE(o, 4, 3); /* batch axis placed at 1 */
  /* evaluating a traced value inside vmap is an error, not a crash */
  mlx_array t = mlx_array_new();
  mlx_vector_array_get(&t, si, 0);
  CHECK_FAILS(mlx_array_eval(t), "traced");
  mlx_array_free(t);
  mlx_array_free(o);
  mlx_closure_free(f);
  mlx_vector_array_free(si);
  mlx_vector_array_free(so);
  mlx_vector_array_free(r);
  mlx_vector_array_free(va);
  mlx_vector_array_free(vz);
  mlx_vector_array_free(vab);
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(z);
}

static void test_semantics(void) {
  int sh[1] = {5}, a0 = 0;
  mlx_array x = tx_rand(sh, 1, -1, 1);
  double *xv = test_values(x), two_x[5];
  for (int i = 0; i < 5; i++) two_x[i] = 2 * xv[i];
  mlx_closure fs = mlx_closure_new_func(f_stop), fe = mlx_closure_new_func(f_evals);
  mlx_closure gs = txf_grad(fs, &a0, 1), ge = txf_grad(fe, &a0, 1);
  mlx_array g;
  CHECK_OK(txf_apply(gs, &x, 1, &g, 1));
  CHECK_CLOSE(g, xv, 5, 1e-12, 0);
  mlx_array_free(g);
  CHECK_OK(txf_apply(ge, &x, 1, &g, 1)); /* an eval inside keeps the graph */
  CHECK_CLOSE(g, two_x, 5, 1e-12, 0);
  mlx_array_free(g);
  /* the same array passed twice: each argument gets its own gradient */
  mlx_closure fm = mlx_closure_new_func(f_dot);
  mlx_array xx[2] = {x, x};
  mlx_vector_array p = mlx_vector_array_new_data(xx, 2);
  mlx_array one = mlx_array_new_float(1.0f);
  mlx_vector_array c = mlx_vector_array_new_value(one), r0 = mlx_vector_array_new(),
                   r1 = mlx_vector_array_new();
  CHECK_OK(mlx_vjp(&r0, &r1, fm, p, c));
  CHECK(mlx_vector_array_size(r1) == 2);
  for (size_t i = 0; i < 2; i++) {
    mlx_array d = mlx_array_new();
    mlx_vector_array_get(&d, r1, i);
    CHECK_CLOSE(d, xv, 5, 1e-12, 0);
    mlx_array_free(d);
  }
  mlx_vector_array_free(p);
  mlx_vector_array_free(c);
  mlx_vector_array_free(r0);
  mlx_vector_array_free(r1);
  mlx_array_free(one);
  free(xv);
  mlx_closure_free(fm);
  mlx_closure_free(gs);
  mlx_closure_free(ge);
  mlx_closure_free(fs);
  mlx_closure_free(fe);
  mlx_array_free(x);
}

static int kw_fn(mlx_vector_array *res, const mlx_vector_array a, const mlx_map_string_to_array m,
                 void *payload) {
  (void)m;
  (*(int *)payload)++;
  return mlx_vector_array_set(res, a);
}

static void test_closure_kinds(void) {
  int count = 0;
  mlx_closure_kwargs k = mlx_closure_kwargs_new_func_payload(kw_fn, &count, NULL);
  mlx_closure_kwargs k2 = mlx_closure_kwargs_new();
  CHECK_OK(mlx_closure_kwargs_set(&k2, k));
  CHECK_OK(mlx_closure_kwargs_free(k));
  mlx_array x = mlx_array_new_float(3.0f);
  mlx_vector_array in = mlx_vector_array_new_value(x), out = mlx_vector_array_new();
  mlx_map_string_to_array m = mlx_map_string_to_array_new();
  CHECK_OK(mlx_closure_kwargs_apply(&out, k2, in, m));
  CHECK(count == 1 && mlx_vector_array_size(out) == 1);
  CHECK_FAILS(mlx_closure_kwargs_apply(&out, mlx_closure_kwargs_new(), in, m), "empty closure");
  mlx_closure_custom cu = mlx_closure_custom_new_func(NULL);
  CHECK(cu.ctx == NULL);
  CHECK_FAILS(mlx_closure_custom_apply(&out, cu, in, in, in), "empty closure");
  mlx_closure_kwargs_free(k2);
  mlx_map_string_to_array_free(m);
  mlx_vector_array_free(in);
  mlx_vector_array_free(out);
  mlx_array_free(x);
}

static void print_missing(void) {
  const char *names[256];
  static const char *what[3] = {"vjp", "jvp", "vmap"};
  for (int w = 0; w < 3; w++) {
    int n = lc_rule_missing(w, names, 256);
    printf("primitives without a %s rule (%d):", what[w], n);
    for (int i = 0; i < n && i < 256; i++) printf(" %s", names[i]);
    printf("\n");
  }
}

int main(void) {
  test_init();
  test_value_and_grad_errors();
  test_vjp_jvp_errors();
  test_vmap_errors();
  test_semantics();
  test_closure_kinds();
  print_missing();
  return test_done();
}
