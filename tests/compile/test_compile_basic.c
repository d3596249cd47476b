/* mlx_compile semantics: trace once and cache, re-trace on dtype/shape
 * change, shapeless, constants, laziness, failed traces, modes, nested,
 * identity / constant / multi-output functions, cache control, leaks. */
#include "test.h"
#include "compile_util.h"

#include "compile/compile.h"
#include "core/node.h"
#include "ops/prim.h"

struct payload {
  int calls;
  int fail_next; /* return 1 on the next call */
  mlx_array captured;
};

/* f(x, y) = (x + y) + x, with astype to float32 of the sum */
static int fun_xy(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  struct payload *p = pl;
  p->calls++;
  if (p->fail_next) {
    p->fail_next = 0;
    return 1;
  }
  mlx_array x = mlx_array_new(), y = mlx_array_new(), s = mlx_array_new(), t = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  mlx_vector_array_get(&y, in, 1);
  int rc = mlx_add(&s, x, y, test_stream());
  if (!rc) rc = mlx_add(&t, s, x, test_stream());
  if (!rc) {
    mlx_vector_array r = mlx_vector_array_new_data(&t, 1);
    mlx_vector_array_set(res, r);
    mlx_vector_array_free(r);
  }
  mlx_array_free(x);
  mlx_array_free(y);
  mlx_array_free(s);
  mlx_array_free(t);
  return rc;
}

/* Bitwise comparison of two arrays' values (evaluates both). */
static int same_bits(mlx_array a, mlx_array b) {
  if (mlx_array_eval(a) || mlx_array_eval(b)) return 0;
  if (mlx_array_dtype(a) != mlx_array_dtype(b) || mlx_array_size(a) != mlx_array_size(b) ||
      mlx_array_ndim(a) != mlx_array_ndim(b))
    return 0;
  if (memcmp(mlx_array_shape(a), mlx_array_shape(b), sizeof(int) * mlx_array_ndim(a))) return 0;
  size_t isz = mlx_dtype_size(mlx_array_dtype(a)), n = mlx_array_size(a);
  char *pa = malloc(n * isz + 1), *pb = malloc(n * isz + 1);
  lc_node_copy_out(node(a), pa);
  lc_node_copy_out(node(b), pb);
  int same = memcmp(pa, pb, n * isz) == 0;
  free(pa);
  free(pb);
  return same;
}

static mlx_array reference_xy(mlx_array x, mlx_array y) {
  mlx_array s = mlx_array_new(), t = mlx_array_new();
  mlx_add(&s, x, y, test_stream());
  mlx_add(&t, s, x, test_stream());
  mlx_array_free(s);
  return t;
}

static void test_trace_once_and_cache(void) {
  struct payload p = {0};
  mlx_closure f = mlx_closure_new_func_payload(fun_xy, &p, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  int s43[2] = {4, 3}, s53[2] = {5, 3};
  mlx_array a[2] = {test_rand_f32(s43, 2, -1, 1), test_rand_f32(s43, 2, -1, 1)};
  long traces0 = lc_compile_trace_count();
  for (int i = 0; i < 3; i++) {
    int rc;
    mlx_array r = call1(cf, 2, a, &rc);
    CHECK_OK(rc);
    CHECK_MSG(node(r)->buf == NULL, "compiled output should be lazy");
    mlx_array ref = reference_xy(a[0], a[1]);
    CHECK(same_bits(r, ref));
    mlx_array_free(r);
    mlx_array_free(ref);
  }
  CHECK_MSG(p.calls == 1, "closure called %d times", p.calls);
  CHECK(lc_compile_trace_count() - traces0 == 1);
  /* shape change re-traces; changing back hits the first entry */
  mlx_array b[2] = {test_rand_f32(s53, 2, -1, 1), test_rand_f32(s53, 2, -1, 1)};
  mlx_array r = call1(cf, 2, b, NULL);
  CHECK(p.calls == 2);
  mlx_array ref = reference_xy(b[0], b[1]);
  CHECK(same_bits(r, ref));
  mlx_array_free(r);
  mlx_array_free(ref);
  r = call1(cf, 2, a, NULL);
  CHECK(p.calls == 2);
  mlx_array_free(r);
  /* dtype change re-traces */
  mlx_array c[2] = {mlx_array_new(), mlx_array_new()};
  mlx_astype(&c[0], a[0], MLX_FLOAT64, test_stream());
  mlx_astype(&c[1], a[1], MLX_FLOAT16, test_stream());
  r = call1(cf, 2, c, NULL);
  CHECK(p.calls == 3);
  ref = reference_xy(c[0], c[1]);
  CHECK(mlx_array_dtype(r) == MLX_FLOAT64);
  CHECK(same_bits(r, ref));
  mlx_array_free(r);
  mlx_array_free(ref);
  /* a different number of inputs is a different entry too (and fails in fun) */
  for (int i = 0; i < 2; i++) {
    mlx_array_free(a[i]);
    mlx_array_free(b[i]);
    mlx_array_free(c[i]);
  }
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

static void test_shapeless(void) {
  struct payload p = {0};
  mlx_closure f = mlx_closure_new_func_payload(fun_xy, &p, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, true));
  int s43[2] = {4, 3}, s73[2] = {7, 3}, s3[1] = {3}, s1[1] = {1}, s17[2] = {1, 7};
  mlx_array a[2] = {test_rand_f32(s43, 2, -1, 1), test_rand_f32(s3, 1, -1, 1)};
  mlx_array b[2] = {test_rand_f32(s73, 2, -1, 1), test_rand_f32(s1, 1, -1, 1)};
  mlx_array c[2] = {test_rand_f32(s17, 2, -1, 1), test_rand_f32(s1, 1, -1, 1)};
  mlx_array *sets[3] = {a, b, c};
  for (int i = 0; i < 3; i++) {
    mlx_array r = call1(cf, 2, sets[i], NULL);
    mlx_array ref = reference_xy(sets[i][0], sets[i][1]);
    CHECK_MSG(same_bits(r, ref), "shapeless result %d differs", i);
    mlx_array_free(r);
    mlx_array_free(ref);
  }
  CHECK_MSG(p.calls == 1, "shapeless re-traced: %d calls", p.calls);
  /* rank change re-traces */
  int s2[1] = {2};
  mlx_array d[2] = {test_rand_f32(s2, 1, -1, 1), test_rand_f32(s2, 1, -1, 1)};
  mlx_array r = call1(cf, 2, d, NULL);
  CHECK(p.calls == 2);
  mlx_array ref = reference_xy(d[0], d[1]);
  CHECK(same_bits(r, ref));
  mlx_array_free(r);
  mlx_array_free(ref);
  /* shapes outside the traced broadcasting pattern fall back to a new trace
   * (x(1,3) + y(4,3): in the trace y was the broadcast operand) */
  int s13[2] = {1, 3};
  mlx_array e[2] = {test_rand_f32(s13, 2, -1, 1), test_rand_f32(s43, 2, -1, 1)};
  r = call1(cf, 2, e, NULL);
  ref = reference_xy(e[0], e[1]);
  CHECK(same_bits(r, ref));
  CHECK_SHAPE(r, 4, 3);
  CHECK(p.calls == 3);
  mlx_array_free(r);
  mlx_array_free(ref);
  for (int i = 0; i < 2; i++) {
    mlx_array_free(a[i]);
    mlx_array_free(b[i]);
    mlx_array_free(c[i]);
    mlx_array_free(d[i]);
    mlx_array_free(e[i]);
  }
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

/* f(x) = x + captured, where captured is lazy when compile first runs */
static int fun_captured(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  struct payload *p = pl;
  p->calls++;
  mlx_array x = mlx_array_new(), t = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  int rc = mlx_add(&t, x, p->captured, test_stream());
  if (!rc) rc = mlx_vector_array_append_value(*res, t);
  mlx_array_free(x);
  mlx_array_free(t);
  return rc;
}

static void test_constants(void) {
  struct payload p = {0};
  int s3[1] = {3};
  mlx_array u = test_rand_f32(s3, 1, -1, 1), v = test_rand_f32(s3, 1, -1, 1);
  p.captured = mlx_array_new();
  mlx_add(&p.captured, u, v, test_stream());
  CHECK(node(p.captured)->buf == NULL);
  mlx_closure f = mlx_closure_new_func_payload(fun_captured, &p, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  int s23[2] = {2, 3};
  mlx_array x = test_rand_f32(s23, 2, -1, 1);
  mlx_array r = call1(cf, 1, &x, NULL);
  CHECK_MSG(node(p.captured)->buf != NULL, "captured array was not evaluated at trace time");
  mlx_array ref = mlx_array_new();
  mlx_add(&ref, x, p.captured, test_stream());
  CHECK(same_bits(r, ref));
  mlx_array_free(r);
  mlx_array_free(ref);
  mlx_array_free(x);
  mlx_array_free(u);
  mlx_array_free(v);
  mlx_array_free(p.captured);
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

static void test_failed_trace_leaves_nothing(void) {
  mlx_detail_compile_clear_cache();
  struct payload p = {0};
  mlx_closure f = mlx_closure_new_func_payload(fun_xy, &p, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  int s2[1] = {2}, s3[1] = {3};
  mlx_array a[2] = {test_rand_f32(s2, 1, -1, 1), test_rand_f32(s2, 1, -1, 1)};
  p.fail_next = 1;
  int rc;
  mlx_array r = call1(cf, 2, a, &rc);
  CHECK(rc != 0);
  CHECK(strstr(test_last_error, "traced") != NULL);
  CHECK_MSG(lc_cache_count(0, 0) == 0, "failed trace left %zu entries", lc_cache_count(0, 0));
  mlx_array_free(r);
  r = call1(cf, 2, a, &rc);
  CHECK_OK(rc);
  CHECK(p.calls == 2);
  mlx_array ref = reference_xy(a[0], a[1]);
  CHECK(same_bits(r, ref));
  mlx_array_free(r);
  mlx_array_free(ref);
  CHECK(lc_cache_count(0, 0) == 1);
  /* an op error inside the trace: shapes (2,) and (3,) */
  mlx_array b[2] = {test_rand_f32(s2, 1, -1, 1), test_rand_f32(s3, 1, -1, 1)};
  r = call1(cf, 2, b, &rc);
  CHECK(rc != 0);
  CHECK(strstr(test_last_error, "cannot be broadcast") != NULL);
  CHECK(lc_cache_count(0, 0) == 1);
  mlx_array_free(r);
  for (int i = 0; i < 2; i++) {
    mlx_array_free(a[i]);
    mlx_array_free(b[i]);
  }
  mlx_closure_free(cf);
  CHECK_MSG(lc_cache_count(0, 0) == 0, "freeing the compiled closure left %zu entries",
            lc_cache_count(0, 0));
  mlx_closure_free(f);
}

/* Tries to evaluate its input while traced. */
static int fun_evals(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = mlx_array_new(), t = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  int rc = mlx_add(&t, x, x, test_stream());
  if (!rc) rc = mlx_array_eval(t);
  if (!rc) rc = mlx_vector_array_append_value(*res, t);
  mlx_array_free(x);
  mlx_array_free(t);
  return rc;
}

static void test_eval_during_trace(void) {
  mlx_closure f = mlx_closure_new_func_payload(fun_evals, NULL, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  mlx_array x = mlx_array_new_float(2.0f);
  int rc;
  mlx_array r = call1(cf, 1, &x, &rc);
  CHECK(rc != 0);
  CHECK(strstr(test_last_error, "traced") != NULL);
  mlx_array_free(r);
  /* the same closure uncompiled works */
  mlx_vector_array in = mlx_vector_array_new_data(&x, 1), out = mlx_vector_array_new();
  CHECK_OK(mlx_closure_apply(&out, f, in));
  mlx_vector_array_free(in);
  mlx_vector_array_free(out);
  mlx_array_free(x);
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

/* Counts distinct nodes reachable from a, and those with op `op`. */
static int count_nodes(struct lc_node *a, int op, int *with_op) {
  struct lc_node *stack[4096], *seen[4096];
  int top = 0, nseen = 0;
  *with_op = 0;
  stack[top++] = a;
  while (top) {
    struct lc_node *n = stack[--top];
    int dup = 0;
    for (int i = 0; i < nseen; i++) dup |= seen[i] == n;
    if (dup) continue;
    seen[nseen++] = n;
    if (n->op == op) (*with_op)++;
    for (int k = 0; k < n->nin; k++) stack[top++] = n->in[k];
  }
  return nseen;
}

/* f(x) = (x + x) + (x + x) */
static int fun_cse(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = mlx_array_new(), a = mlx_array_new(), b = mlx_array_new(), t = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  mlx_add(&a, x, x, test_stream());
  mlx_add(&b, x, x, test_stream());
  int rc = mlx_add(&t, a, b, test_stream());
  if (!rc) rc = mlx_vector_array_append_value(*res, t);
  mlx_array_free(x);
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(t);
  return rc;
}

static void test_modes(void) {
  int s[1] = {5};
  mlx_array x = test_rand_f32(s, 1, -1, 1);
  mlx_array ref = mlx_array_new(), tmp = mlx_array_new();
  mlx_add(&tmp, x, x, test_stream());
  mlx_add(&ref, tmp, tmp, test_stream());
  mlx_array_free(tmp);
  int modes[3] = {MLX_COMPILE_MODE_NO_SIMPLIFY, MLX_COMPILE_MODE_NO_FUSE,
                  MLX_COMPILE_MODE_ENABLED};
  for (int m = 0; m < 3; m++) {
    CHECK_OK(mlx_set_compile_mode((mlx_compile_mode)modes[m]));
    mlx_closure f = mlx_closure_new_func_payload(fun_cse, NULL, NULL), cf = mlx_closure_new();
    CHECK_OK(mlx_compile(&cf, f, false));
    mlx_array r = call1(cf, 1, &x, NULL);
    int adds, fused;
    count_nodes(node(r), LC_OP_ADD, &adds);
    count_nodes(node(r), LC_OP_FUSED, &fused);
    if (modes[m] == MLX_COMPILE_MODE_NO_FUSE) {
      CHECK_MSG(adds == 2 && fused == 0, "NO_FUSE: %d adds, %d fused", adds, fused);
    } else {
      CHECK_MSG(fused == 1 && adds == 0, "mode %d: %d adds %d fused", modes[m], adds, fused);
      const struct lc_fused_hdr *h = node(r)->params;
      int want = modes[m] == MLX_COMPILE_MODE_NO_SIMPLIFY ? 3 : 2;
      CHECK_MSG(h->ninstr == want, "mode %d: %d fused instructions", modes[m], h->ninstr);
    }
    CHECK(same_bits(r, ref));
    mlx_array_free(r);
    mlx_closure_free(cf);
    mlx_closure_free(f);
  }
  /* DISABLED at construction: a passthrough, even after re-enabling */
  struct payload p = {0};
  mlx_closure f = mlx_closure_new_func_payload(fun_xy, &p, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_disable_compile());
  CHECK_OK(mlx_compile(&cf, f, false));
  CHECK_OK(mlx_enable_compile());
  mlx_array args[2] = {x, x};
  for (int i = 0; i < 3; i++) {
    mlx_array r = call1(cf, 2, args, NULL);
    mlx_array_free(r);
  }
  CHECK_MSG(p.calls == 3, "passthrough called fun %d times", p.calls);
  mlx_closure_free(cf);
  cf = mlx_closure_new();
  /* compiled while enabled, called while disabled: runs fun directly */
  p.calls = 0;
  CHECK_OK(mlx_compile(&cf, f, false));
  mlx_array r = call1(cf, 2, args, NULL);
  mlx_array_free(r);
  CHECK_OK(mlx_disable_compile());
  r = call1(cf, 2, args, NULL);
  mlx_array_free(r);
  CHECK_OK(mlx_enable_compile());
  r = call1(cf, 2, args, NULL);
  mlx_array_free(r);
  CHECK_MSG(p.calls == 2, "fun called %d times", p.calls);
  CHECK_FAILS(mlx_set_compile_mode((mlx_compile_mode)7), "invalid mode");
  mlx_closure_free(cf);
  mlx_closure_free(f);
  mlx_array_free(x);
  mlx_array_free(ref);
}

/* inner(x) = x + x; outer(x) = inner(x) + inner(inner(x)) */
static mlx_closure inner_compiled;
static int fun_inner(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  struct payload *p = pl;
  p->calls++;
  mlx_array x = mlx_array_new(), t = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  int rc = mlx_add(&t, x, x, test_stream());
  if (!rc) rc = mlx_vector_array_append_value(*res, t);
  mlx_array_free(x);
  mlx_array_free(t);
  return rc;
}
static int fun_outer(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  struct payload *p = pl;
  p->calls++;
  mlx_array x = mlx_array_new(), t = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  int rc;
  mlx_array a = call1(inner_compiled, 1, &x, &rc);
  mlx_array b = rc ? mlx_array_new() : call1(inner_compiled, 1, &a, &rc);
  if (!rc) rc = mlx_add(&t, a, b, test_stream());
  if (!rc) rc = mlx_vector_array_append_value(*res, t);
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(x);
  mlx_array_free(t);
  return rc;
}

static void test_nested(void) {
  struct payload pi = {0}, po = {0};
  mlx_closure fi = mlx_closure_new_func_payload(fun_inner, &pi, NULL);
  mlx_closure fo = mlx_closure_new_func_payload(fun_outer, &po, NULL), co = mlx_closure_new();
  inner_compiled = mlx_closure_new();
  CHECK_OK(mlx_compile(&inner_compiled, fi, false));
  CHECK_OK(mlx_compile(&co, fo, false));
  int s[2] = {3, 2};
  mlx_array x = test_rand_f32(s, 2, -4, 4);
  for (int i = 0; i < 2; i++) {
    int rc;
    mlx_array r = call1(co, 1, &x, &rc);
    CHECK_OK(rc);
    /* inlined into the outer trace: one fused kernel reading x (MLX's
     * "compile compiled function") */
    CHECK(node(r)->op == LC_OP_FUSED && node(r)->nin == 1 && node(r)->in[0] == node(x));
    double *xv = test_values(x), ref[6];
    for (int k = 0; k < 6; k++) ref[k] = (double)((float)(xv[k] + xv[k]) * 3.0f);
    CHECK_CLOSE(r, ref, 6, 1e-6, 0);
    free(xv);
    mlx_array_free(r);
  }
  CHECK(po.calls == 1);
  CHECK(pi.calls == 2); /* the inner function ran as itself, twice, in the one outer trace */
  /* the inner one also works on its own: traced once, then cached */
  mlx_array r = call1(inner_compiled, 1, &x, NULL);
  mlx_array_free(r);
  r = call1(inner_compiled, 1, &x, NULL);
  CHECK(pi.calls == 3);
  mlx_array_free(r);
  mlx_array_free(x);
  mlx_closure_free(co);
  mlx_closure_free(fo);
  mlx_closure_free(inner_compiled);
  mlx_closure_free(fi);
}

/* Returns [x, const 2.5, x + y, (x + y) + y, x + y]. */
static mlx_array konst;
static int fun_multi(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = mlx_array_new(), y = mlx_array_new(), s = mlx_array_new(), t = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  mlx_vector_array_get(&y, in, 1);
  mlx_add(&s, x, y, test_stream());
  mlx_add(&t, s, y, test_stream());
  mlx_vector_array_append_value(*res, x);
  mlx_vector_array_append_value(*res, konst);
  mlx_vector_array_append_value(*res, s);
  mlx_vector_array_append_value(*res, t);
  mlx_vector_array_append_value(*res, s);
  mlx_array_free(x);
  mlx_array_free(y);
  mlx_array_free(s);
  mlx_array_free(t);
  return 0;
}

static void test_identity_constant_multi(void) {
  konst = mlx_array_new_float(2.5f);
  mlx_closure f = mlx_closure_new_func_payload(fun_multi, NULL, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  int s[2] = {2, 3};
  mlx_array a[2] = {test_rand_f32(s, 2, -1, 1), test_rand_f32(s, 2, -1, 1)};
  for (int it = 0; it < 2; it++) {
    mlx_vector_array in = mlx_vector_array_new_data(a, 2), out = mlx_vector_array_new();
    mlx_vector_array ref = mlx_vector_array_new();
    CHECK_OK(mlx_closure_apply(&out, cf, in));
    CHECK_OK(mlx_closure_apply(&ref, f, in));
    CHECK(mlx_vector_array_size(out) == 5);
    /* outputs 2 and 3 come from one fused tuple (checked before evaluation) */
    if (it == 0) {
      mlx_array q2 = mlx_array_new(), q3 = mlx_array_new();
      mlx_vector_array_get(&q2, out, 2);
      mlx_vector_array_get(&q3, out, 3);
      CHECK(node(q2)->op == LC_OP_TUPLE_GET && node(q3)->op == LC_OP_TUPLE_GET);
      CHECK(node(q2)->nin == 1 && node(q3)->nin == 1 && node(q2)->in[0] == node(q3)->in[0] &&
            node(q2)->in[0]->op == LC_OP_FUSED);
      mlx_array_free(q2);
      mlx_array_free(q3);
    }
    for (size_t k = 0; k < 5 && mlx_vector_array_size(out) == 5; k++) {
      mlx_array o = mlx_array_new(), e = mlx_array_new();
      mlx_vector_array_get(&o, out, k);
      mlx_vector_array_get(&e, ref, k);
      CHECK_MSG(same_bits(o, e), "output %zu differs", k);
      if (k == 0) CHECK(o.ctx == a[0].ctx); /* the input itself */
      mlx_array_free(o);
      mlx_array_free(e);
    }
    /* outputs 2 and 4 are the same node */
    mlx_array o2 = mlx_array_new(), o4 = mlx_array_new();
    mlx_vector_array_get(&o2, out, 2);
    mlx_vector_array_get(&o4, out, 4);
    CHECK(o2.ctx == o4.ctx);
    mlx_array_free(o2);
    mlx_array_free(o4);
    mlx_vector_array_free(in);
    mlx_vector_array_free(out);
    mlx_vector_array_free(ref);
  }
  mlx_array_free(a[0]);
  mlx_array_free(a[1]);
  mlx_array_free(konst);
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

static void test_cache_control(void) {
  mlx_detail_compile_clear_cache();
  struct payload p = {0};
  mlx_closure f = mlx_closure_new_func_payload(fun_xy, &p, NULL);
  mlx_closure c1 = mlx_closure_new(), c2 = mlx_closure_new(), c3 = mlx_closure_new();
  uint64_t k1[2] = {1, 2}, k2[2] = {1, 3};
  CHECK_OK(mlx_detail_compile(&c1, f, 42, false, k1, 2));
  CHECK_OK(mlx_detail_compile(&c2, f, 42, false, k1, 2));
  CHECK_OK(mlx_detail_compile(&c3, f, 42, false, k2, 2));
  CHECK_FAILS(mlx_detail_compile(&c3, f, 42, false, NULL, 2), "constants");
  CHECK_FAILS(mlx_compile(NULL, f, false), "NULL");
  CHECK_FAILS(mlx_compile(&c3, mlx_closure_new(), false), "empty closure");
  int s[1] = {4};
  mlx_array a[2] = {test_rand_f32(s, 1, -1, 1), test_rand_f32(s, 1, -1, 1)};
  mlx_array r = call1(c1, 2, a, NULL);
  mlx_array_free(r);
  r = call1(c2, 2, a, NULL); /* same fun_id and constants: shares the entry */
  mlx_array_free(r);
  CHECK_MSG(p.calls == 1, "%d calls", p.calls);
  r = call1(c3, 2, a, NULL); /* other constants: another entry */
  mlx_array_free(r);
  CHECK(p.calls == 2);
  CHECK(lc_cache_count(1, 42) == 2);
  CHECK_OK(mlx_detail_compile_erase(42));
  CHECK(lc_cache_count(1, 42) == 0);
  r = call1(c1, 2, a, NULL);
  mlx_array_free(r);
  CHECK(p.calls == 3);
  /* detail entries survive their closures (MLX semantics) until cleared */
  mlx_closure_free(c1);
  mlx_closure_free(c2);
  mlx_closure_free(c3);
  CHECK(lc_cache_count(1, 42) == 1);
  CHECK_OK(mlx_detail_compile_clear_cache());
  CHECK(lc_cache_count(0, 0) == 0);
  /* bounded per function: many shapes keep at most the cap */
  mlx_closure cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  for (int n = 1; n <= 80; n++) {
    int sh[1] = {n};
    mlx_array b[2] = {test_rand_f32(sh, 1, -1, 1), test_rand_f32(sh, 1, -1, 1)};
    r = call1(cf, 2, b, NULL);
    mlx_array_free(r);
    mlx_array_free(b[0]);
    mlx_array_free(b[1]);
  }
  CHECK_MSG(lc_cache_count(0, 0) == 64, "cache holds %zu", lc_cache_count(0, 0));
  mlx_closure_free(cf);
  CHECK(lc_cache_count(0, 0) == 0);
  mlx_array_free(a[0]);
  mlx_array_free(a[1]);
  mlx_closure_free(f);
}

static void test_fused_broadcast_astype(void) {
  /* f(x, y) = astype(x + y, f64) + y with y broadcast: one fused kernel */
  mlx_closure f = mlx_closure_new_func_payload(fun_xy, &(struct payload){0}, NULL);
  mlx_closure cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  int s[3] = {3, 1, 5000}, sy[2] = {7, 1};
  mlx_array a[2] = {test_rand_f32(s, 3, -1, 1), test_rand_f32(sy, 2, -1, 1)};
  /* y transposed view, x non-contiguous through a broadcast */
  mlx_array r = call1(cf, 2, a, NULL);
  CHECK(node(r)->op == LC_OP_FUSED);
  mlx_array ref = reference_xy(a[0], a[1]);
  CHECK(same_bits(r, ref));
  CHECK_SHAPE(r, 3, 7, 5000);
  mlx_array_free(r);
  mlx_array_free(ref);
  mlx_array_free(a[0]);
  mlx_array_free(a[1]);
  mlx_closure_free(cf);
  mlx_closure_free(f);
}


/* f(x) = sum(x, axis, keepdims) + x (axis in the payload's fail_next
 * field, unused otherwise). Over the last axis the reduction fuses into a
 * row region, whose shape follows its inputs: shapeless compile replays it
 * on new shapes without tracing again. Over axis 0 the reduction stays a
 * REDUCE instruction, which has no shape rule: shapeless compile traces
 * again for each new shape. Results are correct either way. */
static int fun_reduce(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  struct payload *p = pl;
  p->calls++;
  mlx_array x = mlx_array_new(), s = mlx_array_new(), t = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  int rc = mlx_sum_axis(&s, x, p->fail_next, true, test_stream());
  if (!rc) rc = mlx_add(&t, s, x, test_stream());
  if (!rc) rc = mlx_vector_array_append_value(*res, t);
  mlx_array_free(x);
  mlx_array_free(s);
  mlx_array_free(t);
  return rc;
}

static void shapeless_reduce(int axis, int traces) {
  struct payload p = {.fail_next = axis};
  mlx_closure f = mlx_closure_new_func_payload(fun_reduce, &p, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, true));
  int s1[2] = {3, 4}, s2[2] = {5, 2};
  for (int i = 0; i < 4; i++) {
    mlx_array x = test_rand_f32(i % 2 ? s2 : s1, 2, -1, 1);
    mlx_array r = call1(cf, 1, &x, NULL);
    mlx_vector_array vin = mlx_vector_array_new_data(&x, 1), out = mlx_vector_array_new();
    mlx_closure_apply(&out, f, vin);
    mlx_array ref = mlx_array_new();
    mlx_vector_array_get(&ref, out, 0);
    CHECK_MSG(same_bits(r, ref), "shapeless reduction (axis %d) result %d", axis, i);
    mlx_array_free(x);
    mlx_array_free(r);
    mlx_array_free(ref);
    mlx_vector_array_free(vin);
    mlx_vector_array_free(out);
  }
  /* 4 reference calls + the traces */
  CHECK_MSG(p.calls == 4 + traces, "axis %d: %d calls", axis, p.calls);
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

static void test_shapeless_fallback(void) {
  shapeless_reduce(-1, 1); /* fused row region: one trace */
  shapeless_reduce(0, 1);  /* unfused reduction: REDUCE infers its shape, one trace */
}

/* The outer function builds a compiled inner closure capturing an array
 * that depends on the outer function's (traced) input. */
static int fun_capture_inner(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  struct payload *p = pl;
  mlx_array x = mlx_array_new(), t = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  int rc = mlx_add(&t, x, p->captured, test_stream());
  if (!rc) rc = mlx_vector_array_append_value(*res, t);
  mlx_array_free(x);
  mlx_array_free(t);
  return rc;
}
static int fun_capture_outer(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  struct payload ip = {0};
  ip.captured = mlx_array_new();
  mlx_vector_array_get(&ip.captured, in, 0); /* a traced placeholder */
  mlx_closure g = mlx_closure_new_func_payload(fun_capture_inner, &ip, NULL), cg = mlx_closure_new();
  int rc = mlx_compile(&cg, g, false);
  mlx_array one = mlx_array_new_float(1.0f);
  mlx_array r = rc ? mlx_array_new() : call1(cg, 1, &one, &rc);
  if (!rc) rc = mlx_vector_array_append_value(*res, r);
  mlx_array_free(r);
  mlx_array_free(one);
  mlx_array_free(ip.captured);
  mlx_closure_free(cg);
  mlx_closure_free(g);
  return rc;
}

static void test_capture_of_outer_tracer(void) {
  mlx_closure f = mlx_closure_new_func_payload(fun_capture_outer, NULL, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  mlx_array x = mlx_array_new_float(2.0f);
  int rc;
  /* the inner compiled function cannot be traced on its own (it captures
   * the outer trace's input), so it runs inside the outer trace, as in
   * MLX; the outer function is compiled as usual */
  mlx_array r = call1(cf, 1, &x, &rc);
  CHECK_OK(rc);
  double want = 3.0;
  CHECK_CLOSE(r, &want, 1, 0, 0);
  mlx_array_free(r);
  mlx_array y = mlx_array_new_float(-5.0f);
  r = call1(cf, 1, &y, &rc);
  CHECK_OK(rc);
  want = -4.0;
  CHECK_CLOSE(r, &want, 1, 0, 0);
  mlx_array_free(y);
  /* uncompiled, the same function works */
  mlx_vector_array vin = mlx_vector_array_new_data(&x, 1), out = mlx_vector_array_new();
  CHECK_OK(mlx_closure_apply(&out, f, vin));
  mlx_vector_array_free(vin);
  mlx_vector_array_free(out);
  mlx_array_free(r);
  mlx_array_free(x);
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

/* Placeholders have no data: evaluating one that escaped a trace fails. */
static mlx_array leaked;
static int fun_leak(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  mlx_array_set(&leaked, x);
  int rc = mlx_vector_array_append_value(*res, x);
  mlx_array_free(x);
  return rc;
}

static void test_placeholder_eval_error(void) {
  leaked = mlx_array_new();
  mlx_closure f = mlx_closure_new_func_payload(fun_leak, NULL, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  mlx_array x = mlx_array_new_float(2.0f);
  mlx_array r = call1(cf, 1, &x, NULL);
  CHECK(r.ctx == x.ctx); /* identity function: the input itself */
  CHECK_FAILS(mlx_array_eval(leaked), "traced");
  mlx_array_free(r);
  mlx_array_free(x);
  mlx_array_free(leaked);
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

/* A 3000-op chain: regions are capped (several fused kernels), results
 * match the uncompiled chain. */
static int fun_long(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)pl;
  mlx_array x = mlx_array_new(), t = mlx_array_new(), k = mlx_array_new_float(0.001f);
  mlx_vector_array_get(&x, in, 0);
  mlx_array_set(&t, x);
  int rc = 0;
  for (int i = 0; i < 3000 && !rc; i++) rc = mlx_add(&t, t, i % 2 ? k : x, test_stream());
  if (!rc) rc = mlx_vector_array_append_value(*res, t);
  mlx_array_free(x);
  mlx_array_free(t);
  mlx_array_free(k);
  return rc;
}

static void test_long_chain(void) {
  mlx_closure f = mlx_closure_new_func_payload(fun_long, NULL, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  int s[1] = {2000};
  mlx_array x = test_rand_f32(s, 1, -1, 1);
  mlx_array r = call1(cf, 1, &x, NULL);
  int fused;
  count_nodes(node(r), LC_OP_FUSED, &fused);
  CHECK_MSG(fused >= 3 && fused <= 4, "%d fused kernels", fused);
  mlx_vector_array vin = mlx_vector_array_new_data(&x, 1), out = mlx_vector_array_new();
  CHECK_OK(mlx_closure_apply(&out, f, vin));
  mlx_array ref = mlx_array_new();
  mlx_vector_array_get(&ref, out, 0);
  CHECK(same_bits(r, ref));
  mlx_array_free(ref);
  mlx_vector_array_free(vin);
  mlx_vector_array_free(out);
  mlx_array_free(r);
  mlx_array_free(x);
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

/* Large outputs (>= 32 MiB) go through non-temporal stores; with a
 * broadcast row the kernel runs in row mode; two outputs make a tuple. */
static void test_large_outputs(void) {
  konst = mlx_array_new_float(2.5f);
  mlx_closure f = mlx_closure_new_func_payload(fun_multi, NULL, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  for (int pass = 0; pass < 2; pass++) {
    int s[2] = {2100, 4003}, row[1] = {4003};
    mlx_array a[2] = {test_rand_f32(s, 2, -1, 1), test_rand_f32(row, 1, -1, 1)};
    if (pass == 1) { /* flat mode: both inputs one strided run */
      mlx_array_free(a[1]);
      a[1] = test_rand_f32(s, 2, -1, 1);
    }
    mlx_vector_array in = mlx_vector_array_new_data(a, 2), out = mlx_vector_array_new();
    mlx_vector_array ref = mlx_vector_array_new();
    CHECK_OK(mlx_closure_apply(&out, cf, in));
    CHECK_OK(mlx_closure_apply(&ref, f, in));
    for (size_t k = 2; k < 4; k++) {
      mlx_array o = mlx_array_new(), e = mlx_array_new();
      mlx_vector_array_get(&o, out, k);
      mlx_vector_array_get(&e, ref, k);
      CHECK_MSG(same_bits(o, e), "large output %zu differs (pass %d)", k, pass);
      mlx_array_free(o);
      mlx_array_free(e);
    }
    mlx_vector_array_free(in);
    mlx_vector_array_free(out);
    mlx_vector_array_free(ref);
    mlx_array_free(a[0]);
    mlx_array_free(a[1]);
  }
  mlx_array_free(konst);
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

static int fun_empty_out(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  (void)in;
  (void)pl;
  mlx_array e = mlx_array_new();
  return mlx_vector_array_append_value(*res, e);
}

static void test_empty_output(void) {
  mlx_closure f = mlx_closure_new_func_payload(fun_empty_out, NULL, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  mlx_array x = mlx_array_new_float(1.0f);
  int rc;
  mlx_array r = call1(cf, 1, &x, &rc);
  CHECK(rc != 0 && strstr(test_last_error, "empty array") != NULL);
  mlx_array_free(r);
  mlx_array_free(x);
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

int main(void) {
  test_init();
  size_t base = test_active_memory();
  test_trace_once_and_cache();
  test_shapeless();
  test_constants();
  test_failed_trace_leaves_nothing();
  test_eval_during_trace();
  test_modes();
  test_nested();
  test_identity_constant_multi();
  test_cache_control();
  test_fused_broadcast_astype();
  test_shapeless_fallback();
  test_capture_of_outer_tracer();
  test_placeholder_eval_error();
  test_long_chain();
  test_large_outputs();
  test_empty_output();
  mlx_detail_compile_clear_cache();
  CHECK_MSG(test_active_memory() == base, "active memory %zu, baseline %zu",
            test_active_memory(), base);
  return test_done();
}
