/* Custom transforms: mlx_custom_vjp (the user's vjp is what grad uses),
 * mlx_custom_function with jvp and vmap rules, both inside mlx_compile and
 * under grad, a failing user rule, and mlx_checkpoint (same gradients as
 * without it, also compiled). */
#include "tx_check.h"
#include "tx_fn.h"

static mlx_stream S(void) { return test_stream(); }

/* f(x) = sum(sin(x)) */
static int f_sum_sin(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), s = mlx_array_new(), r = mlx_array_new();
  int rc = mlx_vector_array_get(&x, in, 0) || mlx_sin(&s, x, S()) ||
           mlx_sum(&r, s, false, S()) || mlx_vector_array_set_value(res, r);
  mlx_array_free(x);
  mlx_array_free(s);
  mlx_array_free(r);
  return rc;
}

/* g(x) = sin(x) (elementwise) */
static int f_sin(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), s = mlx_array_new();
  int rc = mlx_vector_array_get(&x, in, 0) || mlx_sin(&s, x, S()) ||
           mlx_vector_array_set_value(res, s);
  mlx_array_free(x);
  mlx_array_free(s);
  return rc;
}

static int vjp_calls;
/* a deliberately "wrong" vjp: 3 * cotangent (so its use is visible) */
static int my_vjp(mlx_vector_array *res, const mlx_vector_array primals,
                  const mlx_vector_array cot, const mlx_vector_array outs) {
  vjp_calls++;
  CHECK(mlx_vector_array_size(primals) == 1 && mlx_vector_array_size(outs) == 1);
  mlx_array c = mlx_array_new(), x = mlx_array_new(), three = mlx_array_new_float(3.0f),
            z = mlx_array_new(), r = mlx_array_new();
  int rc = mlx_vector_array_get(&c, cot, 0) || mlx_vector_array_get(&x, primals, 0) ||
           mlx_zeros_like(&z, x, S()) || mlx_multiply(&r, c, three, S());
  mlx_array r2 = mlx_array_new();
  if (!rc) rc = mlx_add(&r2, r, z, S()) || mlx_vector_array_set_value(res, r2);
  mlx_array arrs[6] = {c, x, three, z, r, r2};
  for (int i = 0; i < 6; i++) mlx_array_free(arrs[i]);
  return rc;
}

static int my_bad_vjp(mlx_vector_array *res, const mlx_vector_array primals,
                      const mlx_vector_array cot, const mlx_vector_array outs) {
  (void)res, (void)primals, (void)cot, (void)outs;
  return 1;
}

/* jvp: 5 * tangent */
static int my_jvp(mlx_vector_array *res, const mlx_vector_array primals,
                  const mlx_vector_array tan, const int *argnums, size_t n) {
  (void)primals;
  CHECK(n == 1 && argnums[0] == 0);
  mlx_array t = mlx_array_new(), five = mlx_array_new_float(5.0f), r = mlx_array_new();
  int rc = mlx_vector_array_get(&t, tan, 0) || mlx_multiply(&r, t, five, S()) ||
           mlx_vector_array_set_value(res, r);
  mlx_array_free(t);
  mlx_array_free(five);
  mlx_array_free(r);
  return rc;
}

static int vmap_calls;
/* vmap: the batched input's sin, batch axis kept where it is */
static int my_vmap(mlx_vector_array *res, mlx_vector_int *axes, const mlx_vector_array in,
                   const int *in_axes, size_t n) {
  vmap_calls++;
  CHECK(n == 1);
  mlx_array x = mlx_array_new(), s = mlx_array_new();
  int rc = mlx_vector_array_get(&x, in, 0) || mlx_sin(&s, x, S()) ||
           mlx_vector_array_set_value(res, s) || mlx_vector_int_set_value(axes, in_axes[0]);
  mlx_array_free(x);
  mlx_array_free(s);
  return rc;
}

static void test_custom_vjp(void) {
  int a0 = 0, sh[1] = {6};
  mlx_closure f = mlx_closure_new_func(f_sum_sin);
  mlx_closure_custom cv = mlx_closure_custom_new_func(my_vjp);
  mlx_closure cf = mlx_closure_new();
  CHECK_OK(mlx_custom_vjp(&cf, f, cv));
  mlx_closure g = txf_grad(cf, &a0, 1);
  mlx_closure cg = txf_compile(g, false);       /* custom_vjp inside compile */
  mlx_closure ccf = txf_compile(cf, false);
  mlx_closure gc = txf_grad(ccf, &a0, 1);       /* grad of a compiled custom */
  mlx_array x = tx_rand(sh, 1, -1, 1), r, v;
  double three[6];
  for (int i = 0; i < 6; i++) three[i] = 3;
  vjp_calls = 0;
  CHECK_OK(txf_apply(g, &x, 1, &r, 1));
  CHECK_CLOSE(r, three, 6, 0, 0);
  CHECK(vjp_calls == 1);
  mlx_array_free(r);
  CHECK_OK(txf_apply(cg, &x, 1, &r, 1));
  CHECK_CLOSE(r, three, 6, 0, 0);
  mlx_array_free(r);
  CHECK_OK(txf_apply(gc, &x, 1, &r, 1));
  CHECK_CLOSE(r, three, 6, 0, 0);
  mlx_array_free(r);
  /* the value is the function's */
  CHECK_OK(txf_apply(ccf, &x, 1, &v, 1));
  double *xv = test_values(x), want = 0;
  for (int i = 0; i < 6; i++) want += sin(xv[i]);
  CHECK_CLOSE(v, &want, 1, 1e-12, 1e-12);
  free(xv);
  mlx_array_free(v);
  /* a failing user vjp is reported, not a crash */
  mlx_closure_custom bad = mlx_closure_custom_new_func(my_bad_vjp);
  mlx_closure bf = mlx_closure_new(), bg;
  CHECK_OK(mlx_custom_vjp(&bf, f, bad));
  bg = txf_grad(bf, &a0, 1);
  CHECK_FAILS(txf_apply(bg, &x, 1, &r, 1), "custom vjp");
  mlx_array_free(r);
  CHECK_FAILS(mlx_custom_vjp(&bf, f, mlx_closure_custom_new()), "empty vjp closure");
  mlx_closure_free(bg);
  mlx_closure_free(bf);
  mlx_closure_custom_free(bad);
  mlx_array_free(x);
  mlx_closure_free(gc);
  mlx_closure_free(ccf);
  mlx_closure_free(cg);
  mlx_closure_free(g);
  mlx_closure_free(cf);
  mlx_closure_custom_free(cv);
  mlx_closure_free(f);
}

static void test_custom_function(void) {
  int sh[2] = {3, 4}, ax0 = 0;
  mlx_closure f = mlx_closure_new_func(f_sin);
  mlx_closure_custom_jvp cj = mlx_closure_custom_jvp_new_func(my_jvp);
  mlx_closure_custom_vmap cm = mlx_closure_custom_vmap_new_func(my_vmap);
  mlx_closure cf = mlx_closure_new();
  CHECK_OK(mlx_custom_function(&cf, f, mlx_closure_custom_new(), cj, cm));
  mlx_array x = tx_rand(sh, 2, -1, 1), t = tx_rand(sh, 2, -1, 1);
  mlx_vector_array p = mlx_vector_array_new_value(x), tv = mlx_vector_array_new_value(t);
  mlx_vector_array o = mlx_vector_array_new(), to = mlx_vector_array_new();
  CHECK_OK(mlx_jvp(&o, &to, cf, p, tv));
  mlx_array jt = mlx_array_new();
  mlx_vector_array_get(&jt, to, 0);
  double *tvv = test_values(t), five_t[12];
  for (int i = 0; i < 12; i++) five_t[i] = 5 * tvv[i];
  CHECK_CLOSE(jt, five_t, 12, 1e-12, 1e-12);
  /* vmap uses the rule; compiled, too */
  mlx_closure vf = txf_vmap(cf, &ax0, 1, NULL, 1);
  mlx_closure cvf = txf_compile(vf, false);
  mlx_array r1, r2;
  vmap_calls = 0;
  CHECK_OK(txf_apply(vf, &x, 1, &r1, 1));
  CHECK(vmap_calls == 1);
  CHECK_OK(txf_apply(cvf, &x, 1, &r2, 1));
  double *xv = test_values(x), sx[12];
  for (int i = 0; i < 12; i++) sx[i] = sin(xv[i]);
  CHECK_CLOSE(r1, sx, 12, 1e-12, 1e-12);
  CHECK_CLOSE(r2, sx, 12, 1e-12, 1e-12);
  /* no vjp given: the vjp of the function itself */
  double ones[12];
  for (int i = 0; i < 12; i++) ones[i] = 1;
  mlx_array ov = mlx_array_new_data(ones, sh, 2, MLX_FLOAT64);
  mlx_vector_array cv = mlx_vector_array_new_value(ov), g0 = mlx_vector_array_new(),
                   g1 = mlx_vector_array_new();
  CHECK_OK(mlx_vjp(&g0, &g1, cf, p, cv));
  mlx_array g = mlx_array_new();
  mlx_vector_array_get(&g, g1, 0);
  double cx[12];
  for (int i = 0; i < 12; i++) cx[i] = cos(xv[i]);
  CHECK_CLOSE(g, cx, 12, 1e-12, 1e-12);
  free(xv);
  free(tvv);
  mlx_array arrs[7] = {x, t, jt, r1, r2, ov, g};
  for (int i = 0; i < 7; i++) mlx_array_free(arrs[i]);
  mlx_vector_array vs[6] = {p, tv, o, to, cv, g0};
  for (int i = 0; i < 6; i++) mlx_vector_array_free(vs[i]);
  mlx_vector_array_free(g1);
  mlx_closure_free(cvf);
  mlx_closure_free(vf);
  mlx_closure_free(cf);
  mlx_closure_custom_jvp_free(cj);
  mlx_closure_custom_vmap_free(cm);
  mlx_closure_free(f);
}

static void test_checkpoint(void) {
  int a0 = 0, sh[1] = {9};
  mlx_closure f = mlx_closure_new_func(f_sum_sin);
  mlx_closure ck = mlx_closure_new();
  CHECK_OK(mlx_checkpoint(&ck, f));
  mlx_closure g = txf_grad(ck, &a0, 1);
  mlx_closure cg = txf_compile(g, false); /* checkpoint inside compile */
  mlx_array x = tx_rand(sh, 1, -2, 2), r1, r2;
  CHECK_OK(txf_apply(g, &x, 1, &r1, 1));
  CHECK_OK(txf_apply(cg, &x, 1, &r2, 1));
  double *xv = test_values(x), cx[9];
  for (int i = 0; i < 9; i++) cx[i] = cos(xv[i]);
  CHECK_CLOSE(r1, cx, 9, 1e-12, 1e-12);
  CHECK_CLOSE(r2, cx, 9, 1e-12, 1e-12);
  free(xv);
  mlx_array_free(r1);
  mlx_array_free(r2);
  mlx_array_free(x);
  mlx_closure_free(cg);
  mlx_closure_free(g);
  mlx_closure_free(ck);
  mlx_closure_free(f);
}

int main(void) {
  test_init();
  test_custom_vjp();
  test_custom_function();
  test_checkpoint();
  return test_done();
}
