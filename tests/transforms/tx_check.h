/* Checks for transformation rules, through the public API only:
 *  - tx_check_grad: vjp against central finite differences, jvp against
 *    finite differences, and <u, J v> through vjp equal to it through jvp;
 *  - tx_check_vmap: vmap against an explicit loop over the batch axis.
 * A function under test is a tx_fn over n input arrays giving one output.
 * Inputs should be float64 (finite differences need the precision); they
 * may be any layout (views, broadcasts): perturbed copies are contiguous,
 * which does not change the function's values. Include after test.h. */
#ifndef LACE_TX_CHECK_H
#define LACE_TX_CHECK_H

#include "test.h"

typedef int (*tx_fn)(mlx_array *out, const mlx_array *in, int n, void *ctx);

struct tx_closure_ctx {
  tx_fn f;
  void *ctx;
};

static int tx_closure_call(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  struct tx_closure_ctx *c = payload;
  int n = (int)mlx_vector_array_size(in);
  mlx_array xs[16];
  if (n > 16) return 1;
  for (int i = 0; i < n; i++) {
    xs[i] = mlx_array_new();
    mlx_vector_array_get(&xs[i], in, (size_t)i);
  }
  mlx_array out = mlx_array_new();
  int rc = c->f(&out, xs, n, c->ctx);
  if (!rc) rc = mlx_vector_array_set_value(res, out);
  mlx_array_free(out);
  for (int i = 0; i < n; i++) mlx_array_free(xs[i]);
  return rc;
}

static void tx_closure_free(void *p) { free(p); }

/* An mlx_closure calling f(ctx). */
static mlx_closure tx_closure(tx_fn f, void *ctx) {
  struct tx_closure_ctx *c = malloc(sizeof *c);
  c->f = f;
  c->ctx = ctx;
  return mlx_closure_new_func_payload(tx_closure_call, c, tx_closure_free);
}

/* A float64 array of shape with values uniform in [lo, hi). */
static mlx_array tx_rand(const int *shape, int ndim, double lo, double hi) {
  size_t n = 1;
  for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
  double *buf = malloc(sizeof(double) * (n ? n : 1));
  for (size_t i = 0; i < n; i++) buf[i] = test_uniform(lo, hi);
  mlx_array a = mlx_array_new_data(buf, shape, ndim, MLX_FLOAT64);
  free(buf);
  return a;
}

/* A float64 array of shape (nd dims) with values in [lo, hi), laid out
 * per `layout`: 0 contiguous, 1 a transpose of the reversed shape, 2 a
 * negative-stride slice of a larger array along the last axis. */
static mlx_array tx_rand_layout(const int *shape, int nd, int layout, double lo, double hi) {
  mlx_stream s = test_stream();
  mlx_array r = mlx_array_new();
  if (layout == 1 && nd > 1) {
    int rs[8];
    for (int d = 0; d < nd; d++) rs[d] = shape[nd - 1 - d];
    mlx_array b = tx_rand(rs, nd, lo, hi);
    mlx_transpose(&r, b, s);
    mlx_array_free(b);
  } else if (layout == 2 && nd > 0) {
    int big[8], start[8], stop[8], step[8];
    for (int d = 0; d < nd; d++) big[d] = shape[d], start[d] = 0, stop[d] = shape[d], step[d] = 1;
    big[nd - 1] = 2 * shape[nd - 1];
    start[nd - 1] = big[nd - 1] - 1;
    stop[nd - 1] = -big[nd - 1] - 1;
    step[nd - 1] = -2;
    mlx_array b = tx_rand(big, nd, lo, hi);
    mlx_slice(&r, b, start, (size_t)nd, stop, (size_t)nd, step, (size_t)nd, s);
    mlx_array_free(b);
  } else {
    mlx_array_free(r);
    return tx_rand(shape, nd, lo, hi);
  }
  return r;
}

/* A float64 array of the per-example shape with a batch axis of extent B
 * inserted at ax (ax == -1: no batch axis), values in [lo, hi). */
static mlx_array tx_rand_batched(const int *shape, int ndim, int ax, int B, double lo, double hi) {
  int sh[16], k = 0;
  for (int d = 0; d <= ndim; d++) {
    if (d == ax) sh[k++] = B;
    if (d < ndim) sh[k++] = shape[d];
  }
  return tx_rand(sh, k, lo, hi);
}

static mlx_array tx_like(mlx_array a, const double *vals) {
  return mlx_array_new_data(vals, (const int *)mlx_array_shape(a), (int)mlx_array_ndim(a),
                            MLX_FLOAT64);
}

/* sum(u * f(in)) in double, or NAN on failure. */
static double tx_dot_out(tx_fn f, void *ctx, mlx_array *in, int n, const double *u, size_t nu) {
  mlx_array out = mlx_array_new();
  if (f(&out, in, n, ctx)) {
    mlx_array_free(out);
    return NAN;
  }
  double *v = test_values(out);
  double s = 0;
  size_t no = mlx_array_size(out);
  for (size_t i = 0; v && i < no && i < nu; i++) s += u[i] * v[i];
  free(v);
  mlx_array_free(out);
  return v ? s : NAN;
}

static int tx_close(double x, double r, double tol) {
  return fabs(x - r) <= tol * (1 + fabs(r));
}

/* vjp and jvp of f at in[0..n) against finite differences. At most
 * `max_elems` elements per input are probed one by one (all when 0). */
static void tx_check_grad_n(const char *name, tx_fn f, void *ctx, int n, mlx_array *in,
                            double tol, size_t max_elems) {
  mlx_closure cls = tx_closure(f, ctx);
  mlx_array out = mlx_array_new();
  if (f(&out, in, n, ctx) || mlx_array_eval(out)) {
    CHECK_MSG(0, "%s: forward failed: %s", name, test_last_error);
    mlx_array_free(out);
    mlx_closure_free(cls);
    return;
  }
  size_t no = mlx_array_size(out);
  double *u = malloc(sizeof(double) * (no ? no : 1));
  for (size_t i = 0; i < no; i++) u[i] = test_uniform(-1, 1);
  mlx_array ua = mlx_array_new_data(u, (const int *)mlx_array_shape(out), (int)mlx_array_ndim(out),
                                    MLX_FLOAT64);
  mlx_array uc = mlx_array_new();
  mlx_astype(&uc, ua, mlx_array_dtype(out), test_stream());
  mlx_vector_array prim = mlx_vector_array_new_data(in, (size_t)n);
  mlx_vector_array cot = mlx_vector_array_new_value(uc);
  mlx_vector_array r0 = mlx_vector_array_new(), r1 = mlx_vector_array_new();
  int ok = mlx_vjp(&r0, &r1, cls, prim, cot) == 0;
  CHECK_MSG(ok, "%s: vjp failed: %s", name, test_last_error);
  const double h = 1e-6;
  double ujv_vjp = 0, ujv_jvp = 0;
  mlx_vector_array tv = mlx_vector_array_new();
  double **tans = calloc((size_t)n, sizeof *tans);
  for (int i = 0; ok && i < n; i++) {
    mlx_array g = mlx_array_new();
    mlx_vector_array_get(&g, r1, (size_t)i);
    CHECK_MSG(mlx_array_ndim(g) == mlx_array_ndim(in[i]) &&
                  !memcmp(mlx_array_shape(g), mlx_array_shape(in[i]),
                          sizeof(int) * mlx_array_ndim(g)),
              "%s: gradient %d has the wrong shape", name, i);
    double *gv = test_values(g);
    double *x = test_values(in[i]);
    size_t sz = mlx_array_size(in[i]);
    tans[i] = malloc(sizeof(double) * (sz ? sz : 1));
    for (size_t j = 0; j < sz; j++) tans[i][j] = test_uniform(-1, 1);
    for (size_t j = 0; gv && j < sz; j++) ujv_vjp += gv[j] * tans[i][j];
    size_t stride = max_elems && sz > max_elems ? sz / max_elems : 1;
    for (size_t j = 0; gv && x && j < sz; j += stride) {
      double keep = x[j];
      mlx_array saved = in[i];
      x[j] = keep + h;
      in[i] = tx_like(saved, x);
      double fp = tx_dot_out(f, ctx, in, n, u, no);
      mlx_array_free(in[i]);
      x[j] = keep - h;
      in[i] = tx_like(saved, x);
      double fm = tx_dot_out(f, ctx, in, n, u, no);
      mlx_array_free(in[i]);
      in[i] = saved;
      x[j] = keep;
      double fd = (fp - fm) / (2 * h);
      if (!tx_close(gv[j], fd, tol)) {
        CHECK_MSG(0, "%s: d/dx%d[%zu]: vjp %.10g, finite differences %.10g", name, i, j, gv[j], fd);
        break;
      }
    }
    free(gv);
    free(x);
    mlx_array t = tx_like(in[i], tans[i]);
    mlx_array tc = mlx_array_new();
    mlx_astype(&tc, t, mlx_array_dtype(in[i]), test_stream());
    mlx_vector_array_append_value(tv, tc);
    mlx_array_free(t);
    mlx_array_free(tc);
    mlx_array_free(g);
  }
  /* jvp against the directional finite difference */
  mlx_vector_array j0 = mlx_vector_array_new(), j1 = mlx_vector_array_new();
  if (ok) {
    int jok = mlx_jvp(&j0, &j1, cls, prim, tv) == 0;
    CHECK_MSG(jok, "%s: jvp failed: %s", name, test_last_error);
    if (jok) {
      mlx_array jt = mlx_array_new();
      mlx_vector_array_get(&jt, j1, 0);
      double *jv = test_values(jt);
      mlx_array *xp = malloc(sizeof *xp * (size_t)n), *xm = malloc(sizeof *xm * (size_t)n);
      for (int i = 0; i < n; i++) {
        double *x = test_values(in[i]);
        size_t sz = mlx_array_size(in[i]);
        double *a = malloc(sizeof(double) * (sz ? sz : 1)), *b = malloc(sizeof(double) * (sz ? sz : 1));
        for (size_t j = 0; j < sz; j++) {
          a[j] = x[j] + h * tans[i][j];
          b[j] = x[j] - h * tans[i][j];
        }
        xp[i] = tx_like(in[i], a);
        xm[i] = tx_like(in[i], b);
        free(a);
        free(b);
        free(x);
      }
      mlx_array op = mlx_array_new(), om = mlx_array_new();
      f(&op, xp, n, ctx);
      f(&om, xm, n, ctx);
      double *vp = test_values(op), *vm = test_values(om);
      for (size_t k = 0; jv && vp && vm && k < no; k++) {
        double fd = (vp[k] - vm[k]) / (2 * h);
        ujv_jvp += u[k] * jv[k];
        if (!tx_close(jv[k], fd, tol)) {
          CHECK_MSG(0, "%s: jvp[%zu] %.10g, finite differences %.10g", name, k, jv[k], fd);
          break;
        }
      }
      CHECK_MSG(tx_close(ujv_vjp, ujv_jvp, tol), "%s: <u, Jv> by vjp %.10g, by jvp %.10g", name,
                ujv_vjp, ujv_jvp);
      free(jv);
      free(vp);
      free(vm);
      for (int i = 0; i < n; i++) {
        mlx_array_free(xp[i]);
        mlx_array_free(xm[i]);
      }
      free(xp);
      free(xm);
      mlx_array_free(op);
      mlx_array_free(om);
      mlx_array_free(jt);
    }
  }
  for (int i = 0; i < n; i++) free(tans[i]);
  free(tans);
  free(u);
  mlx_vector_array_free(j0);
  mlx_vector_array_free(j1);
  mlx_vector_array_free(tv);
  mlx_vector_array_free(r0);
  mlx_vector_array_free(r1);
  mlx_vector_array_free(prim);
  mlx_vector_array_free(cot);
  mlx_array_free(ua);
  mlx_array_free(uc);
  mlx_array_free(out);
  mlx_closure_free(cls);
}

static void tx_check_grad(const char *name, tx_fn f, void *ctx, int n, mlx_array *in, double tol) {
  tx_check_grad_n(name, f, ctx, n, in, tol, 48);
}

/* vmap of cls (any number of outputs) over in with in_axes (-1 = unbatched)
 * and out_axes (NULL: all 0): res receives the outputs. 0 on success. */
static int tx_vmap(mlx_vector_array *res, mlx_closure cls, mlx_vector_array in, const int *in_axes,
                   const int *out_axes) {
  mlx_vector_array s_in = mlx_vector_array_new(), s_out = mlx_vector_array_new();
  size_t nin = mlx_vector_array_size(in);
  int rc = mlx_detail_vmap_trace(&s_in, &s_out, cls, in, in_axes, nin);
  if (!rc) {
    size_t no = mlx_vector_array_size(s_out);
    int *oax = calloc(no + 1, sizeof(int));
    for (size_t o = 0; out_axes && o < no; o++) oax[o] = out_axes[o];
    rc = mlx_detail_vmap_replace(res, in, s_in, s_out, in_axes, nin, oax, no);
    free(oax);
  }
  mlx_vector_array_free(s_in);
  mlx_vector_array_free(s_out);
  return rc;
}

/* vmap of f over in (in_axes[i] = -1: unbatched) against a loop over the
 * batch calling f on slices, stacked along axis 0. */
static void tx_check_vmap(const char *name, tx_fn f, void *ctx, int n, mlx_array *in,
                          const int *in_axes, double tol) {
  mlx_closure cls = tx_closure(f, ctx);
  mlx_vector_array vin = mlx_vector_array_new_data(in, (size_t)n);
  mlx_vector_array res = mlx_vector_array_new();
  int ok = tx_vmap(&res, cls, vin, in_axes, NULL) == 0;
  CHECK_MSG(ok, "%s: vmap failed: %s", name, test_last_error);
  int B = -1;
  for (int i = 0; i < n; i++)
    if (in_axes[i] >= 0) B = mlx_array_shape(in[i])[in_axes[i]];
  mlx_array got = mlx_array_new();
  if (ok) mlx_vector_array_get(&got, res, 0);
  mlx_array *outs = malloc(sizeof *outs * (size_t)(B > 0 ? B : 1));
  int built = 0;
  for (int b = 0; ok && b < B; b++) {
    mlx_array xs[16];
    for (int i = 0; i < n; i++) {
      xs[i] = mlx_array_new();
      if (in_axes[i] < 0) {
        mlx_array_set(&xs[i], in[i]);
      } else {
        mlx_array idx = mlx_array_new_int(b);
        mlx_take_axis(&xs[i], in[i], idx, in_axes[i], test_stream());
        mlx_array_free(idx);
      }
    }
    outs[b] = mlx_array_new();
    if (f(&outs[b], xs, n, ctx)) ok = 0;
    built++;
    for (int i = 0; i < n; i++) mlx_array_free(xs[i]);
  }
  if (ok) {
    mlx_vector_array vs = mlx_vector_array_new_data(outs, (size_t)B);
    mlx_array want = mlx_array_new();
    ok = mlx_stack_axis(&want, vs, 0, test_stream()) == 0;
    CHECK_MSG(ok, "%s: loop reference failed: %s", name, test_last_error);
    if (ok) {
      CHECK_MSG(mlx_array_ndim(got) == mlx_array_ndim(want) &&
                    !memcmp(mlx_array_shape(got), mlx_array_shape(want),
                            sizeof(int) * mlx_array_ndim(got)),
                "%s: vmap result has the wrong shape", name);
      double *w = test_values(want);
      size_t sz = mlx_array_size(want);
      if (w && mlx_array_size(got) == sz) CHECK_CLOSE(got, w, sz, tol, tol);
      free(w);
    }
    mlx_array_free(want);
    mlx_vector_array_free(vs);
  }
  for (int b = 0; b < built; b++) mlx_array_free(outs[b]);
  free(outs);
  mlx_array_free(got);
  mlx_vector_array_free(res);
  mlx_vector_array_free(vin);
  mlx_closure_free(cls);
}

/* Second order: tx_f_second(x) = J(x)^T f(x) (the gradient of |f|^2 / 2)
 * with respect to input `which` of a struct tx_second {f, ctx, which},
 * through mlx_vjp inside the function, so checking it differentiates and
 * vmaps the rules' own results. */

struct tx_second {
  tx_fn f;
  void *ctx;
  int which;
};

static int tx_f_second(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct tx_second *c = ctx;
  mlx_closure cls = tx_closure(c->f, c->ctx);
  mlx_array y = mlx_array_new(), g = mlx_array_new();
  mlx_vector_array prim = mlx_vector_array_new_data(in, (size_t)n);
  mlx_vector_array r0 = mlx_vector_array_new(), r1 = mlx_vector_array_new(), cot;
  int rc = c->f(&y, in, n, c->ctx);
  cot = mlx_vector_array_new_value(y);
  rc = rc || mlx_vjp(&r0, &r1, cls, prim, cot) ||
       mlx_vector_array_get(&g, r1, (size_t)c->which) || mlx_array_set(out, g);
  mlx_array_free(y);
  mlx_array_free(g);
  mlx_vector_array_free(prim);
  mlx_vector_array_free(r0);
  mlx_vector_array_free(r1);
  mlx_vector_array_free(cot);
  mlx_closure_free(cls);
  return rc;
}

/* Second order and compile, for one-input functions:
 * tx_vjp_of(x) = the vjp of f at x with a fixed cotangent w: its own vjp
 * and jvp (checked against finite differences) run the rules over the
 * graphs the first-order rules built; vmap of it gives per-example
 * gradients; compiled, it must give the same values. */
struct tx_vjp_of_ctx {
  tx_fn f;
  void *ctx;
  mlx_array w;
};

static int tx_vjp_of(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct tx_vjp_of_ctx *s = ctx;
  mlx_closure cls = tx_closure(s->f, s->ctx);
  mlx_vector_array prim = mlx_vector_array_new_data(in, (size_t)n);
  mlx_vector_array cot = mlx_vector_array_new_value(s->w);
  mlx_vector_array r0 = mlx_vector_array_new(), r1 = mlx_vector_array_new();
  int rc = mlx_vjp(&r0, &r1, cls, prim, cot);
  if (!rc) rc = mlx_vector_array_get(out, r1, 0);
  mlx_vector_array_free(r0);
  mlx_vector_array_free(r1);
  mlx_vector_array_free(prim);
  mlx_vector_array_free(cot);
  mlx_closure_free(cls);
  return rc;
}

static int tx_vjp_of_vec(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  mlx_array x = mlx_array_new(), g = mlx_array_new();
  int rc = mlx_vector_array_get(&x, in, 0) || tx_vjp_of(&g, &x, 1, payload) ||
           mlx_vector_array_set_value(res, g);
  mlx_array_free(x);
  mlx_array_free(g);
  return rc;
}

/* Second-order checks of f at x (and per-example at xb, batch axis 0). */
static void tx_check_second(const char *name, tx_fn f, void *ctx, mlx_array x, mlx_array xb,
                         double tol) {
  mlx_array y = mlx_array_new();
  if (f(&y, &x, 1, ctx)) {
    CHECK_MSG(0, "%s: forward failed", name);
    mlx_array_free(y);
    return;
  }
  struct tx_vjp_of_ctx s = {f, ctx, tx_rand((const int *)mlx_array_shape(y), (int)mlx_array_ndim(y), -1, 1)};
  char nm[128];
  snprintf(nm, sizeof nm, "grad of grad: %s", name);
  tx_check_grad(nm, tx_vjp_of, &s, 1, &x, tol);
  snprintf(nm, sizeof nm, "vmap of grad: %s", name);
  int ax0 = 0;
  tx_check_vmap(nm, tx_vjp_of, &s, 1, &xb, &ax0, 1e-12);
  /* compiled gradient */
  mlx_closure plain = mlx_closure_new_func_payload(tx_vjp_of_vec, &s, NULL);
  mlx_closure comp = mlx_closure_new();
  CHECK_MSG(mlx_compile(&comp, plain, false) == 0, "%s: compile failed: %s", name, test_last_error);
  mlx_vector_array vin = mlx_vector_array_new_value(x);
  mlx_vector_array a = mlx_vector_array_new(), b = mlx_vector_array_new();
  int ok = mlx_closure_apply(&a, plain, vin) == 0 && mlx_closure_apply(&b, comp, vin) == 0;
  CHECK_MSG(ok, "%s: compiled gradient failed: %s", name, test_last_error);
  if (ok) {
    mlx_array ga = mlx_array_new(), gb = mlx_array_new();
    mlx_vector_array_get(&ga, a, 0);
    mlx_vector_array_get(&gb, b, 0);
    double *want = test_values(ga);
    if (want) CHECK_CLOSE(gb, want, mlx_array_size(ga), 1e-12, 1e-12);
    free(want);
    mlx_array_free(ga);
    mlx_array_free(gb);
  }
  mlx_vector_array_free(vin);
  mlx_vector_array_free(a);
  mlx_vector_array_free(b);
  mlx_closure_free(comp);
  mlx_closure_free(plain);
  mlx_array_free(s.w);
  mlx_array_free(y);
}

/* Higher order for one-input functions: the vjp of f (as a function of
 * the input and the cotangent) is differentiated and vmapped in turn, so
 * the rules' own results must have rules. */

struct tx_hv {
  tx_fn f;
  void *ctx;
};

/* The vjp of h->f (one input) at in[0] with cotangent in[1]. */
static int tx_h_vjp(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct tx_hv *h = ctx;
  (void)n;
  mlx_closure cls = tx_closure(h->f, h->ctx);
  mlx_vector_array pv = mlx_vector_array_new_data(in, 1), cv = mlx_vector_array_new_data(in + 1, 1);
  mlx_vector_array r0 = mlx_vector_array_new(), r1 = mlx_vector_array_new();
  int rc = mlx_vjp(&r0, &r1, cls, pv, cv) || mlx_vector_array_get(out, r1, 0);
  mlx_vector_array_free(pv);
  mlx_vector_array_free(cv);
  mlx_vector_array_free(r0);
  mlx_vector_array_free(r1);
  mlx_closure_free(cls);
  return rc;
}

/* grad and vmap checks of tx_h_vjp for f at an input of shape sh. */
static void tx_check_vjp_of(const char *name, tx_fn f, void *ctx, const int *sh, int nd) {
  struct tx_hv h = {f, ctx};
  mlx_array x = tx_rand(sh, nd, -1, 1), y = mlx_array_new();
  f(&y, &x, 1, ctx);
  mlx_array_eval(y);
  int ysh[8], ynd = (int)mlx_array_ndim(y);
  memcpy(ysh, mlx_array_shape(y), sizeof(int) * (size_t)ynd);
  mlx_array in[2] = {x, tx_rand(ysh, ynd, -1, 1)};
  char buf[96];
  snprintf(buf, sizeof buf, "vjp of %s", name);
  tx_check_grad(buf, tx_h_vjp, &h, 2, in, 1e-6);
  int xb[9], ub[9];
  for (int b = 0; b < 2; b++) { /* batched at 0 and at the end */
    int xa = b ? nd : 0, ua = b ? ynd : 0;
    for (int i = 0, k = 0; i <= nd; i++) xb[i] = i == xa ? 3 : sh[k++];
    for (int i = 0, k = 0; i <= ynd; i++) ub[i] = i == ua ? 3 : ysh[k++];
    mlx_array v[2] = {tx_rand(xb, nd + 1, -1, 1), tx_rand(ub, ynd + 1, -1, 1)};
    int axes[2] = {xa, ua};
    snprintf(buf, sizeof buf, "vmap of the vjp of %s (%d)", name, b);
    tx_check_vmap(buf, tx_h_vjp, &h, 2, v, axes, 1e-12);
    mlx_array_free(v[0]);
    mlx_array_free(v[1]);
  }
  mlx_array_free(in[0]);
  mlx_array_free(in[1]);
  mlx_array_free(y);
}

/* grads[0..n) of f at in with cotangent cot (new arrays, empty on failure). */
static int tx_vjp_grads(tx_fn f, void *ctx, int n, const mlx_array *in, mlx_array cot,
                        mlx_array *grads) {
  mlx_closure cls = tx_closure(f, ctx);
  mlx_vector_array prim = mlx_vector_array_new_data(in, (size_t)n);
  mlx_vector_array cv = mlx_vector_array_new_value(cot);
  mlx_vector_array r0 = mlx_vector_array_new(), r1 = mlx_vector_array_new();
  int rc = mlx_vjp(&r0, &r1, cls, prim, cv);
  for (int i = 0; i < n; i++) {
    grads[i] = mlx_array_new();
    if (!rc) mlx_vector_array_get(&grads[i], r1, (size_t)i);
  }
  mlx_vector_array_free(prim);
  mlx_vector_array_free(cv);
  mlx_vector_array_free(r0);
  mlx_vector_array_free(r1);
  mlx_closure_free(cls);
  return rc;
}

/* The tangent of f's output at in along tans (a new array in *t). */
static int tx_jvp_tangent(tx_fn f, void *ctx, int n, const mlx_array *in, const mlx_array *tans,
                          mlx_array *t) {
  mlx_closure cls = tx_closure(f, ctx);
  mlx_vector_array prim = mlx_vector_array_new_data(in, (size_t)n);
  mlx_vector_array tv = mlx_vector_array_new_data(tans, (size_t)n);
  mlx_vector_array r0 = mlx_vector_array_new(), r1 = mlx_vector_array_new();
  int rc = mlx_jvp(&r0, &r1, cls, prim, tv);
  *t = mlx_array_new();
  if (!rc) mlx_vector_array_get(t, r1, 0);
  mlx_vector_array_free(prim);
  mlx_vector_array_free(tv);
  mlx_vector_array_free(r0);
  mlx_vector_array_free(r1);
  mlx_closure_free(cls);
  return rc;
}

/* d f / d in[arg] with a cotangent of ones, as a function that can be
 * differentiated and vmapped again (ctx: struct tx_grad_ctx). */
struct tx_grad_ctx {
  tx_fn f;
  void *ctx;
  int arg;
};

static int tx_f_grad(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct tx_grad_ctx *c = ctx;
  mlx_array y = mlx_array_new(), ones = mlx_array_new(), g = mlx_array_new();
  mlx_closure cls = tx_closure(c->f, c->ctx);
  mlx_vector_array prim = mlx_vector_array_new_data(in, (size_t)n);
  mlx_vector_array cot = mlx_vector_array_new(), r0 = mlx_vector_array_new(),
                   r1 = mlx_vector_array_new();
  int rc = c->f(&y, in, n, c->ctx) || mlx_ones_like(&ones, y, test_stream()) ||
           mlx_vector_array_append_value(cot, ones) || mlx_vjp(&r0, &r1, cls, prim, cot) ||
           mlx_vector_array_get(&g, r1, (size_t)c->arg) || mlx_array_set(out, g);
  mlx_array_free(y);
  mlx_array_free(ones);
  mlx_array_free(g);
  mlx_vector_array_free(prim);
  mlx_vector_array_free(cot);
  mlx_vector_array_free(r0);
  mlx_vector_array_free(r1);
  mlx_closure_free(cls);
  return rc;
}

#endif
