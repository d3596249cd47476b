/* mlx_compile against MLX's own compile tests (tests/compile_tests.cpp and
 * python/tests/test_compile.py), case by case, as behaviour:
 *  - a compiled function called on traced arrays runs as itself inside the
 *    enclosing trace (compile, grad, vmap), so gradients see its
 *    stop_gradients and an outer compile fuses through it;
 *  - simplify removes copy and stop_gradient ("simplify noops", "compile
 *    with no-ops"): they neither cost an instruction nor split a region;
 *  - fused kernels donate an input buffer nobody else holds ("donates input
 *    buffer"), so a compiled chain over a temporary peaks no higher than
 *    the uncompiled one;
 *  - arrays that do not depend on the traced inputs may be evaluated inside
 *    a trace; traced ones may not, and such a failed trace caches nothing;
 *  - the cache key includes the default stream ("compile change streams");
 *  - random bits drawn inside a compiled function equal the uncompiled ones. */
#include "test.h"
#include "compile_util.h"

#include "compile/compile.h"
#include "core/node.h"
#include "ops/prim.h"
#include "../transforms/tx_fn.h"

static mlx_array arg0(const mlx_vector_array in) {
  mlx_array x = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  return x;
}

static int ret1(mlx_vector_array *res, mlx_array r, int rc) {
  if (!rc) rc = mlx_vector_array_append_value(*res, r);
  mlx_array_free(r);
  return rc;
}

/* ---- no-ops ---- */

/* copy(stop_gradient(exp(stop_gradient(x)))) */
static int fun_noops(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = arg0(in), t = mlx_array_new();
  int rc = mlx_stop_gradient(&t, x, test_stream());
  if (!rc) rc = mlx_exp(&t, t, test_stream());
  if (!rc) rc = mlx_stop_gradient(&t, t, test_stream());
  if (!rc) rc = mlx_copy(&t, t, test_stream());
  mlx_array_free(x);
  return ret1(res, t, rc);
}

/* abs(stop_gradient(abs(x))) */
static int fun_abs_sg_abs(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = arg0(in), t = mlx_array_new();
  int rc = mlx_abs(&t, x, test_stream());
  if (!rc) rc = mlx_stop_gradient(&t, t, test_stream());
  if (!rc) rc = mlx_abs(&t, t, test_stream());
  mlx_array_free(x);
  return ret1(res, t, rc);
}

/* copy(x): the output is the input itself once the copy is gone */
static int fun_copy_only(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = arg0(in), t = mlx_array_new();
  int rc = mlx_copy(&t, x, test_stream());
  mlx_array_free(x);
  return ret1(res, t, rc);
}

static void test_noops(void) {
  int sh[1] = {5};
  mlx_array x = test_rand_f32(sh, 1, -2, 2);
  mlx_closure f = mlx_closure_new_func_payload(fun_noops, NULL, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_set_compile_mode(MLX_COMPILE_MODE_NO_FUSE));
  CHECK_OK(mlx_compile(&cf, f, false));
  int rc;
  mlx_array r = call1(cf, 1, &x, &rc);
  CHECK_OK(rc);
  CHECK(node(r)->op == LC_OP_EXP && node(r)->in[0] == node(x));
  double *xv = test_values(x), want[5];
  for (int i = 0; i < 5; i++) want[i] = exp(xv[i]);
  CHECK_CLOSE(r, want, 5, 1e-6, 0);
  mlx_array_free(r);
  mlx_closure_free(cf);
  mlx_closure_free(f);
  CHECK_OK(mlx_set_compile_mode(MLX_COMPILE_MODE_ENABLED));

  /* fused: one kernel reading x */
  f = mlx_closure_new_func_payload(fun_abs_sg_abs, NULL, NULL);
  cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  r = call1(cf, 1, &x, &rc);
  CHECK_OK(rc);
  CHECK(node(r)->op == LC_OP_FUSED && node(r)->nin == 1 && node(r)->in[0] == node(x));
  for (int i = 0; i < 5; i++) want[i] = fabs(xv[i]);
  CHECK_CLOSE(r, want, 5, 0, 0);
  mlx_array_free(r);
  mlx_closure_free(cf);
  mlx_closure_free(f);

  /* a program whose output is its input */
  f = mlx_closure_new_func_payload(fun_copy_only, NULL, NULL);
  cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  r = call1(cf, 1, &x, &rc);
  CHECK_OK(rc);
  CHECK_CLOSE(r, xv, 5, 0, 0);
  mlx_array_free(r);
  mlx_closure_free(cf);
  mlx_closure_free(f);
  free(xv);
  mlx_array_free(x);
}

/* ---- gradients through compiled functions see their stop_gradients ---- */

/* sum(x * stop_gradient(x)): d/dx = stop_gradient(x) = x */
static int fun_sg_loss(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = arg0(in), s = mlx_array_new(), t = mlx_array_new();
  int rc = mlx_stop_gradient(&s, x, test_stream());
  if (!rc) rc = mlx_multiply(&t, x, s, test_stream());
  if (!rc) rc = mlx_sum(&t, t, false, test_stream());
  mlx_array_free(x);
  mlx_array_free(s);
  return ret1(res, t, rc);
}

static mlx_array grad_of(mlx_closure f, mlx_array x) {
  mlx_closure_value_and_grad vg = mlx_closure_value_and_grad_new();
  int argn = 0;
  CHECK_OK(mlx_value_and_grad(&vg, f, &argn, 1));
  mlx_vector_array in = mlx_vector_array_new_data(&x, 1), v = mlx_vector_array_new(),
                   g = mlx_vector_array_new();
  CHECK_OK(mlx_closure_value_and_grad_apply(&v, &g, vg, in));
  mlx_array r = mlx_array_new();
  CHECK_OK(mlx_vector_array_get(&r, g, 0));
  mlx_vector_array_free(in);
  mlx_vector_array_free(v);
  mlx_vector_array_free(g);
  mlx_closure_value_and_grad_free(vg);
  return r;
}

/* value_and_grad(f) as a closure returning the gradient */
static int fun_grad_of(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  mlx_closure *f = pl;
  mlx_closure_value_and_grad vg = mlx_closure_value_and_grad_new();
  int argn = 0;
  int rc = mlx_value_and_grad(&vg, *f, &argn, 1);
  mlx_vector_array v = mlx_vector_array_new(), g = mlx_vector_array_new();
  if (!rc) rc = mlx_closure_value_and_grad_apply(&v, &g, vg, in);
  mlx_array r = mlx_array_new();
  if (!rc) rc = mlx_vector_array_get(&r, g, 0);
  mlx_vector_array_free(v);
  mlx_vector_array_free(g);
  mlx_closure_value_and_grad_free(vg);
  return ret1(res, r, rc);
}

static void test_grad_sees_stop_gradient(void) {
  int sh[2] = {3, 4};
  mlx_array x = test_rand_f32(sh, 2, -2, 2);
  double *xv = test_values(x);
  mlx_closure f = mlx_closure_new_func_payload(fun_sg_loss, NULL, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  /* warm the compiled function's cache first: the cached program has no
   * stop_gradient, and must not be what the gradient differentiates */
  mlx_array warm = call1(cf, 1, &x, NULL);
  mlx_array_free(warm);
  mlx_array g = grad_of(cf, x);
  CHECK_CLOSE(g, xv, 12, 1e-6, 0);
  mlx_array_free(g);
  /* compile(grad(compile(f))) */
  mlx_closure gf = mlx_closure_new_func_payload(fun_grad_of, &cf, NULL), cgf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cgf, gf, false));
  for (int i = 0; i < 2; i++) {
    int rc;
    mlx_array r = call1(cgf, 1, &x, &rc);
    CHECK_OK(rc);
    CHECK_CLOSE(r, xv, 12, 1e-6, 0);
    mlx_array_free(r);
  }
  mlx_closure_free(cgf);
  mlx_closure_free(gf);
  mlx_closure_free(cf);
  mlx_closure_free(f);
  free(xv);
  mlx_array_free(x);
}

/* g(x) = sum(h(c) * x) where compiled h is called on a constant c but
 * captures 2x: h(c) = c + 2x, so dg/dx = c + 4x. */
struct capture {
  mlx_array captured;
  mlx_closure ch; /* compiled h */
};
static int fun_h(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  struct capture *cp = pl;
  mlx_array c = arg0(in), t = mlx_array_new();
  int rc = mlx_add(&t, c, cp->captured, test_stream());
  mlx_array_free(c);
  return ret1(res, t, rc);
}
static int fun_g(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  mlx_array c = *(mlx_array *)pl;
  mlx_array x = arg0(in), two = mlx_array_new_float(2.0f), t = mlx_array_new();
  struct capture cp = {mlx_array_new(), mlx_closure_new()};
  int rc = mlx_multiply(&cp.captured, x, two, test_stream());
  mlx_closure h = mlx_closure_new_func_payload(fun_h, &cp, NULL);
  if (!rc) rc = mlx_compile(&cp.ch, h, false);
  mlx_array hc = rc ? mlx_array_new() : call1(cp.ch, 1, &c, &rc);
  if (!rc) rc = mlx_multiply(&t, hc, x, test_stream());
  if (!rc) rc = mlx_sum(&t, t, false, test_stream());
  mlx_array_free(hc);
  mlx_closure_free(h);
  mlx_closure_free(cp.ch);
  mlx_array_free(cp.captured);
  mlx_array_free(x);
  mlx_array_free(two);
  return ret1(res, t, rc);
}

static void test_grad_through_capture(void) {
  int sh[1] = {6};
  mlx_array x = test_rand_f32(sh, 1, -2, 2), c = test_rand_f32(sh, 1, -1, 1);
  double *xv = test_values(x), *cv = test_values(c), want[6];
  for (int i = 0; i < 6; i++) want[i] = cv[i] + 4 * xv[i];
  mlx_closure g = mlx_closure_new_func_payload(fun_g, &c, NULL);
  mlx_array r = grad_of(g, x);
  CHECK_CLOSE(r, want, 6, 1e-5, 1e-6);
  mlx_array_free(r);
  mlx_closure_free(g);
  free(xv);
  free(cv);
  mlx_array_free(x);
  mlx_array_free(c);
}

/* ---- donation ---- */

/* sin(x) + 1 */
static int fun_sin1(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = arg0(in), one = mlx_array_new_float(1.0f), t = mlx_array_new();
  int rc = mlx_sin(&t, x, test_stream());
  if (!rc) rc = mlx_add(&t, t, one, test_stream());
  mlx_array_free(x);
  mlx_array_free(one);
  return ret1(res, t, rc);
}

static void test_donation(void) {
  mlx_closure f = mlx_closure_new_func_payload(fun_sin1, NULL, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  int sh[1] = {1 << 16};
  /* the input dropped before evaluation: its buffer becomes the output's */
  mlx_array x = test_rand_f32(sh, 1, -3, 3);
  CHECK_OK(mlx_array_eval(x));
  const float *in_ptr = mlx_array_data_float32(x);
  int rc;
  mlx_array r = call1(cf, 1, &x, &rc);
  CHECK_OK(rc);
  mlx_array_free(x);
  CHECK_OK(mlx_array_eval(r));
  CHECK(node(r)->op == LC_OP_NONE);
  CHECK_MSG(mlx_array_data_float32(r) == in_ptr, "the fused kernel did not reuse its input");
  mlx_array_free(r);
  /* the input still held: a fresh buffer, the input unchanged */
  x = test_rand_f32(sh, 1, -3, 3);
  double *xv = test_values(x);
  r = call1(cf, 1, &x, &rc);
  CHECK_OK(mlx_array_eval(r));
  CHECK(mlx_array_data_float32(r) != mlx_array_data_float32(x));
  CHECK_CLOSE(x, xv, (size_t)sh[0], 0, 0);
  free(xv);
  mlx_array_free(r);
  mlx_array_free(x);

  /* a compiled chain over a temporary peaks no higher than uncompiled */
  size_t peak[2];
  int big[1] = {1 << 20};
  for (int mode = 0; mode < 2; mode++) {
    mlx_array a = test_rand_f32(big, 1, -3, 3), t = mlx_array_new();
    CHECK_OK(mlx_exp(&t, a, test_stream())); /* the temporary */
    CHECK_OK(mlx_array_eval(t));
    mlx_array_free(a);
    CHECK_OK(mlx_clear_cache());
    CHECK_OK(mlx_reset_peak_memory());
    size_t base = test_active_memory();
    mlx_array o = call1(mode ? cf : f, 1, &t, &rc);
    CHECK_OK(rc);
    mlx_array_free(t);
    CHECK_OK(mlx_array_eval(o));
    CHECK_OK(mlx_get_peak_memory(&peak[mode]));
    peak[mode] -= base < peak[mode] ? base : peak[mode];
    mlx_array_free(o);
  }
  printf("peak over the temporary: uncompiled %zu bytes, compiled %zu bytes\n", peak[0], peak[1]);
  CHECK(peak[1] <= peak[0]);
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

/* ---- eval inside a trace ---- */

struct evalpl {
  mlx_array outside; /* lazy, independent of the inputs */
  bool eval_traced;
  int calls;
};
static int fun_evals(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  struct evalpl *p = pl;
  p->calls++;
  mlx_array x = arg0(in), t = mlx_array_new();
  int rc = mlx_array_eval(p->outside); /* allowed: no traced input reaches it */
  float k = 0;
  if (!rc) rc = mlx_array_item_float32(&k, p->outside);
  mlx_array kk = mlx_array_new_float(k);
  if (!rc) rc = mlx_add(&t, x, kk, test_stream());
  if (!rc && p->eval_traced) rc = mlx_array_eval(t); /* refused */
  mlx_array_free(kk);
  mlx_array_free(x);
  return ret1(res, t, rc);
}

static void test_eval_inside_trace(void) {
  mlx_array two = mlx_array_new_float(2.0f);
  struct evalpl p = {mlx_array_new(), false, 0};
  CHECK_OK(mlx_square(&p.outside, two, test_stream()));
  mlx_closure f = mlx_closure_new_func_payload(fun_evals, &p, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  mlx_array x = mlx_array_new_float(1.5f);
  int rc;
  mlx_array r = call1(cf, 1, &x, &rc);
  CHECK_OK(rc);
  double want = 5.5;
  CHECK_CLOSE(r, &want, 1, 0, 0);
  mlx_array_free(r);
  r = call1(cf, 1, &x, &rc); /* cached: not traced again */
  CHECK(p.calls == 1);
  mlx_array_free(r);
  mlx_closure_free(cf);

  /* evaluating a traced value: a clear error, and nothing cached */
  p.eval_traced = true;
  cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  r = call1(cf, 1, &x, &rc);
  CHECK(rc != 0);
  CHECK_MSG(strstr(test_last_error, "depends on the inputs of a function being traced") != NULL,
            "message: %s", test_last_error);
  mlx_array_free(r);
  p.eval_traced = false;
  r = call1(cf, 1, &x, &rc); /* traced again, now fine */
  CHECK_OK(rc);
  CHECK_CLOSE(r, &want, 1, 0, 0);
  CHECK(p.calls == 3);
  mlx_array_free(r);

  /* inside vmap too */
  int ax = 0;
  mlx_closure vf = txf_vmap(f, &ax, 1, &ax, 1);
  int sh[1] = {4};
  mlx_array xs = test_rand_f32(sh, 1, -1, 1);
  double *xv = test_values(xs), w4[4];
  for (int i = 0; i < 4; i++) w4[i] = xv[i] + 4.0;
  r = call1(vf, 1, &xs, &rc);
  CHECK_OK(rc);
  CHECK_CLOSE(r, w4, 4, 1e-6, 0);
  free(xv);
  mlx_array_free(r);
  mlx_array_free(xs);
  mlx_closure_free(vf);
  mlx_closure_free(cf);
  mlx_closure_free(f);
  mlx_array_free(x);
  mlx_array_free(two);
  mlx_array_free(p.outside);
}

/* ---- the default stream is part of the key ---- */

struct counted {
  int calls;
};
static int fun_counted(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  ((struct counted *)pl)->calls++;
  mlx_array x = arg0(in), t = mlx_array_new();
  int rc = mlx_exp(&t, x, test_stream());
  mlx_array_free(x);
  return ret1(res, t, rc);
}

static void test_stream_key(void) {
  struct counted c = {0};
  mlx_closure f = mlx_closure_new_func_payload(fun_counted, &c, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  mlx_array x = mlx_array_new_float(0.5f);
  mlx_array r = call1(cf, 1, &x, NULL);
  mlx_array_free(r);
  r = call1(cf, 1, &x, NULL);
  mlx_array_free(r);
  CHECK(c.calls == 1);
  mlx_stream old = mlx_stream_new();
  mlx_device dev = mlx_device_new_type(MLX_CPU, 0);
  CHECK_OK(mlx_get_default_stream(&old, dev));
  mlx_stream s2 = mlx_stream_new_device(dev);
  CHECK_OK(mlx_set_default_stream(s2));
  r = call1(cf, 1, &x, NULL);
  mlx_array_free(r);
  CHECK_MSG(c.calls == 2, "a new default stream must trace again (%d traces)", c.calls);
  r = call1(cf, 1, &x, NULL);
  mlx_array_free(r);
  CHECK(c.calls == 2);
  CHECK_OK(mlx_set_default_stream(old));
  r = call1(cf, 1, &x, NULL); /* back on the first stream: its entry */
  mlx_array_free(r);
  CHECK(c.calls == 2);
  mlx_stream_free(s2);
  mlx_stream_free(old);
  mlx_device_free(dev);
  mlx_array_free(x);
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

/* ---- random bits ---- */

static int fun_bits(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array key = arg0(in), a = mlx_array_new(), b = mlx_array_new(), t = mlx_array_new();
  int sh[2] = {32, 32};
  int rc = mlx_random_bits(&a, sh, 2, 4, key, test_stream());
  if (!rc) rc = mlx_random_bits(&b, sh, 2, 2, key, test_stream());
  if (!rc) rc = mlx_astype(&b, b, MLX_UINT32, test_stream());
  if (!rc) rc = mlx_add(&t, a, b, test_stream());
  mlx_array_free(key);
  mlx_array_free(a);
  mlx_array_free(b);
  return ret1(res, t, rc);
}

static void test_random_bits(void) {
  mlx_array key = mlx_array_new();
  CHECK_OK(mlx_random_key(&key, 7));
  mlx_closure f = mlx_closure_new_func_payload(fun_bits, NULL, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  int rc;
  mlx_array want = call1(f, 1, &key, &rc), got = call1(cf, 1, &key, &rc);
  CHECK_OK(rc);
  mlx_array eq = mlx_array_new();
  CHECK_OK(mlx_array_equal(&eq, want, got, false, test_stream()));
  bool same = false;
  CHECK_OK(mlx_array_item_bool(&same, eq));
  CHECK(same);
  mlx_array_free(eq);
  mlx_array_free(want);
  mlx_array_free(got);
  mlx_array_free(key);
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

int main(void) {
  test_init();
  test_seed(41);
  test_noops();
  test_grad_sees_stop_gradient();
  test_grad_through_capture();
  test_donation();
  test_eval_inside_trace();
  test_stream_key();
  test_random_bits();
  mlx_detail_compile_clear_cache();
  return test_done();
}
