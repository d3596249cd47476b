/* Transforms composed with each other and with mlx_compile, each checked
 * numerically: third derivatives, Hessian-vector products, per-example
 * gradients (vmap of grad) and grad of vmap, compile of value_and_grad (a
 * training step that hits the cache on its second call), value_and_grad
 * and vmap of compiled closures, compile of vmap, compile inside grad
 * inside compile, shapeless compile of a training step over two batch
 * sizes without a second trace. */
#include "tx_check.h"
#include "tx_fn.h"

static mlx_stream S(void) { return test_stream(); }

/* f(x) = sum(sin(x) * x) */
static int f_sinx(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), s = mlx_array_new(), m = mlx_array_new(), r = mlx_array_new();
  int rc = mlx_vector_array_get(&x, in, 0) || mlx_sin(&s, x, S()) || mlx_multiply(&m, s, x, S()) ||
           mlx_sum(&r, m, false, S()) || mlx_vector_array_set_value(res, r);
  mlx_array_free(x);
  mlx_array_free(s);
  mlx_array_free(m);
  mlx_array_free(r);
  return rc;
}

static double scalar(mlx_array a) {
  double *v = test_values(a);
  double r = v ? v[0] : NAN;
  free(v);
  return r;
}

static void test_third_derivative(void) {
  int zero = 0;
  mlx_closure f = mlx_closure_new_func(f_sinx);
  mlx_closure g1 = txf_grad(f, &zero, 1);
  mlx_closure g2 = txf_grad(g1, &zero, 1);
  mlx_closure g3 = txf_grad(g2, &zero, 1);
  /* grads of a 0-d input are 0-d, so each level is again scalar-valued */
  double xv = 0.7;
  mlx_array x = mlx_array_new_data(&xv, NULL, 0, MLX_FLOAT64);
  mlx_array d[3];
  CHECK_OK(txf_apply(g1, &x, 1, &d[0], 1));
  CHECK_OK(txf_apply(g2, &x, 1, &d[1], 1));
  CHECK_OK(txf_apply(g3, &x, 1, &d[2], 1));
  double want[3] = {cos(xv) * xv + sin(xv), -sin(xv) * xv + 2 * cos(xv),
                    -cos(xv) * xv - 3 * sin(xv)};
  for (int k = 0; k < 3; k++) {
    CHECK_MSG(fabs(scalar(d[k]) - want[k]) < 1e-12, "derivative %d: %.15g, want %.15g", k + 1,
              scalar(d[k]), want[k]);
    mlx_array_free(d[k]);
  }
  mlx_array_free(x);
  mlx_closure_free(g3);
  mlx_closure_free(g2);
  mlx_closure_free(g1);
  mlx_closure_free(f);
}

static void test_hvp(void) {
  int zero = 0, sh[1] = {7};
  mlx_closure f = mlx_closure_new_func(f_sinx);
  mlx_closure g = txf_grad(f, &zero, 1);
  mlx_array x = tx_rand(sh, 1, -2, 2), v = tx_rand(sh, 1, -1, 1);
  mlx_vector_array p = mlx_vector_array_new_value(x), t = mlx_vector_array_new_value(v);
  mlx_vector_array o = mlx_vector_array_new(), to = mlx_vector_array_new();
  CHECK_OK(mlx_jvp(&o, &to, g, p, t));
  mlx_array hv = mlx_array_new();
  mlx_vector_array_get(&hv, to, 0);
  double *xs = test_values(x), *vs = test_values(v), want[7];
  for (int i = 0; i < 7; i++) want[i] = (2 * cos(xs[i]) - xs[i] * sin(xs[i])) * vs[i];
  CHECK_CLOSE(hv, want, 7, 1e-12, 1e-12);
  free(xs);
  free(vs);
  mlx_array_free(hv);
  mlx_vector_array_free(o);
  mlx_vector_array_free(to);
  mlx_vector_array_free(p);
  mlx_vector_array_free(t);
  mlx_array_free(x);
  mlx_array_free(v);
  mlx_closure_free(g);
  mlx_closure_free(f);
}

/* loss(w, x) = sum(sin(w * x)) for one example x (shape (4,)) */
static int f_loss(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array w = mlx_array_new(), x = mlx_array_new(), m = mlx_array_new(), s = mlx_array_new(),
            r = mlx_array_new();
  int rc = mlx_vector_array_get(&w, in, 0) || mlx_vector_array_get(&x, in, 1) ||
           mlx_multiply(&m, w, x, S()) || mlx_sin(&s, m, S()) || mlx_sum(&r, s, false, S()) ||
           mlx_vector_array_set_value(res, r);
  mlx_array_free(w);
  mlx_array_free(x);
  mlx_array_free(m);
  mlx_array_free(s);
  mlx_array_free(r);
  return rc;
}

static void test_per_example_grads(void) {
  int zero = 0, sw[1] = {4}, sx[2] = {6, 4};
  mlx_closure f = mlx_closure_new_func(f_loss);
  mlx_closure g = txf_grad(f, &zero, 1);
  int axes[2] = {-1, 0};
  mlx_closure vg = txf_vmap(g, axes, 2, NULL, 1);
  mlx_array in[2] = {tx_rand(sw, 1, -1, 1), tx_rand(sx, 2, -1, 1)}, out;
  CHECK_OK(txf_apply(vg, in, 2, &out, 1));
  CHECK_SHAPE(out, 6, 4);
  double *w = test_values(in[0]), *x = test_values(in[1]), want[24];
  for (int b = 0; b < 6; b++)
    for (int i = 0; i < 4; i++) want[b * 4 + i] = x[b * 4 + i] * cos(w[i] * x[b * 4 + i]);
  CHECK_CLOSE(out, want, 24, 1e-12, 1e-12);
  /* compiled per-example gradients give the same */
  mlx_closure cvg = txf_compile(vg, false);
  mlx_array cout;
  CHECK_OK(txf_apply(cvg, in, 2, &cout, 1));
  CHECK_CLOSE(cout, want, 24, 1e-12, 1e-12);
  free(w);
  free(x);
  mlx_array_free(out);
  mlx_array_free(cout);
  mlx_array_free(in[0]);
  mlx_array_free(in[1]);
  mlx_closure_free(cvg);
  mlx_closure_free(vg);
  mlx_closure_free(g);
  mlx_closure_free(f);
}

/* grad of vmap: h(w, X) = sum(vmap(loss)(w, X)); dh/dw = sum_b x_b cos(w x_b) */
static mlx_closure vloss;
static int f_sum_vmapped(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_vector_array o = mlx_vector_array_new();
  mlx_array l = mlx_array_new(), s = mlx_array_new();
  int rc = mlx_closure_apply(&o, vloss, in) || mlx_vector_array_get(&l, o, 0) ||
           mlx_sum(&s, l, false, S()) || mlx_vector_array_set_value(res, s);
  mlx_vector_array_free(o);
  mlx_array_free(l);
  mlx_array_free(s);
  return rc;
}

static void test_grad_of_vmap(void) {
  int zero = 0, sw[1] = {4}, sx[2] = {5, 4}, axes[2] = {-1, 0};
  mlx_closure f = mlx_closure_new_func(f_loss);
  vloss = txf_vmap(f, axes, 2, NULL, 1);
  mlx_closure h = mlx_closure_new_func(f_sum_vmapped);
  mlx_closure g = txf_grad(h, &zero, 1);
  mlx_array in[2] = {tx_rand(sw, 1, -1, 1), tx_rand(sx, 2, -1, 1)}, out;
  CHECK_OK(txf_apply(g, in, 2, &out, 1));
  double *w = test_values(in[0]), *x = test_values(in[1]), want[4] = {0};
  for (int b = 0; b < 5; b++)
    for (int i = 0; i < 4; i++) want[i] += x[b * 4 + i] * cos(w[i] * x[b * 4 + i]);
  CHECK_CLOSE(out, want, 4, 1e-12, 1e-12);
  free(w);
  free(x);
  mlx_array_free(out);
  mlx_array_free(in[0]);
  mlx_array_free(in[1]);
  mlx_closure_free(g);
  mlx_closure_free(h);
  mlx_closure_free(vloss);
  mlx_closure_free(f);
}

/* A training step: loss(w, b, X, y) = mean((tanh(X @ w + b) - y)^2),
 * the step returns (loss, w - lr dw, b - lr db). */
static int traces;
static int f_mse(mlx_vector_array *res, const mlx_vector_array in) {
  traces++;
  mlx_array w = mlx_array_new(), b = mlx_array_new(), X = mlx_array_new(), y = mlx_array_new();
  mlx_array z = mlx_array_new(), a = mlx_array_new(), t = mlx_array_new(), d = mlx_array_new(),
            q = mlx_array_new(), l = mlx_array_new();
  int rc = mlx_vector_array_get(&w, in, 0) || mlx_vector_array_get(&b, in, 1) ||
           mlx_vector_array_get(&X, in, 2) || mlx_vector_array_get(&y, in, 3) ||
           mlx_matmul(&z, X, w, S()) || mlx_add(&a, z, b, S()) || mlx_tanh(&t, a, S()) ||
           mlx_subtract(&d, t, y, S()) || mlx_square(&q, d, S()) || mlx_mean(&l, q, false, S()) ||
           mlx_vector_array_set_value(res, l);
  mlx_array arrs[10] = {w, b, X, y, z, a, t, d, q, l};
  for (int i = 0; i < 10; i++) mlx_array_free(arrs[i]);
  return rc;
}

static mlx_closure vag_mse;
static int f_step(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_vector_array v = mlx_vector_array_new(), g = mlx_vector_array_new();
  mlx_array w = mlx_array_new(), b = mlx_array_new(), dw = mlx_array_new(), db = mlx_array_new(),
            l = mlx_array_new(), lr = mlx_array_new_float(0.1f), s1 = mlx_array_new(),
            s2 = mlx_array_new(), nw = mlx_array_new(), nb = mlx_array_new();
  int rc = mlx_closure_apply(&v, vag_mse, in) || mlx_vector_array_get(&l, v, 0) ||
           mlx_vector_array_get(&dw, v, 1) || mlx_vector_array_get(&db, v, 2) ||
           mlx_vector_array_get(&w, in, 0) || mlx_vector_array_get(&b, in, 1) ||
           mlx_multiply(&s1, dw, lr, S()) || mlx_subtract(&nw, w, s1, S()) ||
           mlx_multiply(&s2, db, lr, S()) || mlx_subtract(&nb, b, s2, S());
  if (!rc) {
    mlx_array outs[3] = {l, nw, nb};
    mlx_vector_array o = mlx_vector_array_new_data(outs, 3);
    rc = mlx_vector_array_set(res, o);
    mlx_vector_array_free(o);
  }
  mlx_array arrs[10] = {w, b, dw, db, l, lr, s1, s2, nw, nb};
  for (int i = 0; i < 10; i++) mlx_array_free(arrs[i]);
  mlx_vector_array_free(v);
  mlx_vector_array_free(g);
  return rc;
}

static void make_batch(int B, mlx_array *in) {
  int sw[1] = {5}, sb[1] = {1}, sX[2] = {B, 5}, sy[1] = {B};
  double *wv = malloc(sizeof(double) * 5);
  in[0] = test_rand_f32(sw, 1, -0.5, 0.5);
  in[1] = test_rand_f32(sb, 1, -0.1, 0.1);
  in[2] = test_rand_f32(sX, 2, -1, 1);
  in[3] = test_rand_f32(sy, 1, -0.5, 0.5);
  free(wv);
}

static void test_compiled_training_step(void) {
  int args[2] = {0, 1};
  mlx_closure mse = mlx_closure_new_func(f_mse);
  vag_mse = txf_value_and_grad(mse, args, 2);
  mlx_closure step = mlx_closure_new_func(f_step);
  mlx_closure cstep = txf_compile(step, false);
  mlx_array in[4], e[3], c[3], c2[3];
  make_batch(32, in);
  traces = 0;
  CHECK_OK(txf_apply(step, in, 4, e, 3));
  CHECK(traces == 1);
  CHECK_OK(txf_apply(cstep, in, 4, c, 3));
  CHECK(traces == 2); /* traced once */
  CHECK_OK(txf_apply(cstep, in, 4, c2, 3));
  CHECK_MSG(traces == 2, "second compiled call traced again (%d traces)", traces);
  for (int k = 0; k < 3; k++) {
    CHECK_MSG(txf_allclose(c[k], e[k], 1e-5), "compiled step output %d differs", k);
    CHECK_MSG(txf_allclose(c2[k], e[k], 1e-5), "cached compiled step output %d differs", k);
  }
  /* shapeless: a second batch size replays without tracing */
  mlx_closure sstep = txf_compile(step, true);
  mlx_array in2[4], s1[3], s2[3], e2[3];
  make_batch(48, in2);
  traces = 0;
  CHECK_OK(txf_apply(sstep, in, 4, s1, 3));
  CHECK_OK(txf_apply(sstep, in2, 4, s2, 3));
  CHECK_MSG(traces == 1, "shapeless step traced %d times over two batch sizes", traces);
  CHECK_OK(txf_apply(step, in2, 4, e2, 3));
  for (int k = 0; k < 3; k++) {
    CHECK_MSG(txf_allclose(s1[k], e[k], 1e-5), "shapeless step (batch 32) output %d differs", k);
    CHECK_MSG(txf_allclose(s2[k], e2[k], 1e-5), "shapeless step (batch 48) output %d differs", k);
  }
  for (int k = 0; k < 3; k++) {
    mlx_array_free(e[k]);
    mlx_array_free(c[k]);
    mlx_array_free(c2[k]);
    mlx_array_free(s1[k]);
    mlx_array_free(s2[k]);
    mlx_array_free(e2[k]);
  }
  for (int k = 0; k < 4; k++) {
    mlx_array_free(in[k]);
    mlx_array_free(in2[k]);
  }
  mlx_closure_free(sstep);
  mlx_closure_free(cstep);
  mlx_closure_free(step);
  mlx_closure_free(vag_mse);
  mlx_closure_free(mse);
}

/* value_and_grad of a compiled loss equals that of the plain loss; so do
 * vmap of a compiled function, compile of vmap, and compile(grad(compile)) */
static void test_compiled_inside(void) {
  int args[2] = {0, 1};
  mlx_closure mse = mlx_closure_new_func(f_mse);
  mlx_closure cmse = txf_compile(mse, false);
  mlx_closure vg = txf_value_and_grad(mse, args, 2);
  mlx_closure cvg = txf_value_and_grad(cmse, args, 2);
  mlx_closure ccvg = txf_compile(cvg, false); /* compile(grad(compile)) */
  mlx_array in[4], a[3], b[3], c[3];
  make_batch(16, in);
  CHECK_OK(txf_apply(vg, in, 4, a, 3));
  CHECK_OK(txf_apply(cvg, in, 4, b, 3));
  CHECK_OK(txf_apply(ccvg, in, 4, c, 3));
  for (int k = 0; k < 3; k++) {
    CHECK_MSG(txf_allclose(b[k], a[k], 1e-5), "grad of compiled: output %d differs", k);
    CHECK_MSG(txf_allclose(c[k], a[k], 1e-5), "compile(grad(compile)): output %d differs", k);
    mlx_array_free(a[k]);
    mlx_array_free(b[k]);
    mlx_array_free(c[k]);
  }
  /* vmap over a batch of weight vectors (axis 0), compiled either side */
  int axes[4] = {0, -1, -1, -1};
  mlx_closure vm = txf_vmap(mse, axes, 4, NULL, 1);
  mlx_closure vcm = txf_vmap(cmse, axes, 4, NULL, 1);
  mlx_closure cvm = txf_compile(vm, false);
  int sW[2] = {3, 5};
  mlx_array W = test_rand_f32(sW, 2, -0.5, 0.5);
  mlx_array vin[4] = {W, in[1], in[2], in[3]}, r1, r2, r3;
  CHECK_OK(txf_apply(vm, vin, 4, &r1, 1));
  CHECK_OK(txf_apply(vcm, vin, 4, &r2, 1));
  CHECK_OK(txf_apply(cvm, vin, 4, &r3, 1));
  CHECK_SHAPE(r1, 3);
  CHECK(txf_allclose(r2, r1, 1e-5));
  CHECK(txf_allclose(r3, r1, 1e-5));
  /* against a loop over the rows of W */
  double want[3];
  for (int i = 0; i < 3; i++) {
    mlx_array idx = mlx_array_new_int(i), wi = mlx_array_new(), li;
    mlx_take_axis(&wi, W, idx, 0, S());
    mlx_array one[4] = {wi, in[1], in[2], in[3]};
    CHECK_OK(txf_apply(mse, one, 4, &li, 1));
    want[i] = scalar(li);
    mlx_array_free(li);
    mlx_array_free(wi);
    mlx_array_free(idx);
  }
  CHECK_CLOSE(r1, want, 3, 1e-5, 1e-6);
  mlx_array_free(r1);
  mlx_array_free(r2);
  mlx_array_free(r3);
  mlx_array_free(W);
  for (int k = 0; k < 4; k++) mlx_array_free(in[k]);
  mlx_closure_free(cvm);
  mlx_closure_free(vcm);
  mlx_closure_free(vm);
  mlx_closure_free(ccvg);
  mlx_closure_free(cvg);
  mlx_closure_free(vg);
  mlx_closure_free(cmse);
  mlx_closure_free(mse);
}

/* mlp(W1, W2, X, Y) = mean((tanh(X @ W1) @ W2 - Y)^2) over all axes */
static int f_mlp(mlx_vector_array *res, const mlx_vector_array in) {
  traces++;
  mlx_array a[4], h = mlx_array_new(), t = mlx_array_new(), o = mlx_array_new(),
                  d = mlx_array_new(), q = mlx_array_new(), l = mlx_array_new();
  int rc = 0;
  for (int i = 0; i < 4; i++) {
    a[i] = mlx_array_new();
    rc |= mlx_vector_array_get(&a[i], in, (size_t)i);
  }
  rc = rc || mlx_matmul(&h, a[2], a[0], S()) || mlx_tanh(&t, h, S()) ||
       mlx_matmul(&o, t, a[1], S()) || mlx_subtract(&d, o, a[3], S()) ||
       mlx_square(&q, d, S()) || mlx_mean(&l, q, false, S()) || mlx_vector_array_set_value(res, l);
  for (int i = 0; i < 4; i++) mlx_array_free(a[i]);
  mlx_array arrs[6] = {h, t, o, d, q, l};
  for (int i = 0; i < 6; i++) mlx_array_free(arrs[i]);
  return rc;
}

static void test_shapeless_mlp(void) {
  int args[2] = {0, 1}, s1[2] = {6, 8}, s2[2] = {8, 3};
  mlx_closure f = mlx_closure_new_func(f_mlp);
  mlx_closure vg = txf_value_and_grad(f, args, 2);
  mlx_closure cvg = txf_compile(vg, true);
  mlx_array W1 = test_rand_f32(s1, 2, -0.5, 0.5), W2 = test_rand_f32(s2, 2, -0.5, 0.5);
  traces = 0;
  for (int B = 16; B <= 40; B += 24) {
    int sx[2] = {B, 6}, sy[2] = {B, 3};
    mlx_array in[4] = {W1, W2, test_rand_f32(sx, 2, -1, 1), test_rand_f32(sy, 2, -1, 1)};
    mlx_array e[3], c[3];
    int before = traces;
    CHECK_OK(txf_apply(cvg, in, 4, c, 3));
    int compiled_traces = traces - before;
    CHECK_OK(txf_apply(vg, in, 4, e, 3));
    CHECK_MSG(compiled_traces == (B == 16), "batch %d: %d traces", B, compiled_traces);
    for (int k = 0; k < 3; k++) {
      CHECK_MSG(txf_allclose(c[k], e[k], 1e-5), "shapeless mlp batch %d output %d differs", B, k);
      mlx_array_free(c[k]);
      mlx_array_free(e[k]);
    }
    mlx_array_free(in[2]);
    mlx_array_free(in[3]);
  }
  mlx_array_free(W1);
  mlx_array_free(W2);
  mlx_closure_free(cvg);
  mlx_closure_free(vg);
  mlx_closure_free(f);
}

int main(void) {
  test_init();
  test_third_derivative();
  test_hvp();
  test_per_example_grads();
  test_grad_of_vmap();
  test_compiled_training_step();
  test_compiled_inside();
  test_shapeless_mlp();
  return test_done();
}
