/* Property test: random graphs of differentiable elementwise, broadcasting
 * and last-axis reduction ops (the ones compile fuses into elementwise and
 * row regions). For each graph, the gradient of a random weighting of its
 * outputs must agree four ways: eager value_and_grad, value_and_grad of
 * the compiled function (FUSED rules: regions expanded), the compiled
 * value_and_grad (the backward fused too), and <u, J v> through jvp.
 * float64 and float32 graphs, random shapes with size-1 and broadcast
 * inputs. */
#include "tx_check.h"
#include "tx_fn.h"

typedef int (*unary_fn)(mlx_array *, const mlx_array, const mlx_stream);
typedef int (*binary_fn)(mlx_array *, const mlx_array, const mlx_array, const mlx_stream);
typedef int (*axis_fn)(mlx_array *, const mlx_array, int, bool, const mlx_stream);

static const unary_fn unaries[] = {mlx_tanh, mlx_sin, mlx_sigmoid, mlx_square,
                                   mlx_cos,  mlx_erf, mlx_negative};
static const binary_fn binaries[] = {mlx_add, mlx_subtract, mlx_multiply, mlx_maximum};
static const axis_fn reductions[] = {mlx_sum_axis, mlx_mean_axis, mlx_logsumexp_axis,
                                     mlx_max_axis};
#define NU (int)(sizeof unaries / sizeof unaries[0])
#define NB (int)(sizeof binaries / sizeof binaries[0])
#define NR (int)(sizeof reductions / sizeof reductions[0])
#define MAXSTEP 24
#define NIN 3

enum { OP_UNARY, OP_BINARY, OP_REDUCE, OP_SCALE };
struct step {
  int kind, which, a, b;
};
struct graph {
  int nstep;
  struct step st[MAXSTEP];
  mlx_array w; /* weights of the last value (its shape), for the loss */
};

static mlx_stream S(void) { return test_stream(); }

/* loss = sum(w * v_last) + sum(v_{last-1}) */
static int run(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  struct graph *g = pl;
  mlx_array v[NIN + MAXSTEP];
  int n = 0, rc = 0;
  for (; n < NIN; n++) {
    v[n] = mlx_array_new();
    rc |= mlx_vector_array_get(&v[n], in, (size_t)n);
  }
  for (int i = 0; i < g->nstep && !rc; i++, n++) {
    const struct step *s = &g->st[i];
    v[n] = mlx_array_new();
    switch (s->kind) {
    case OP_UNARY: rc = unaries[s->which](&v[n], v[s->a], S()); break;
    case OP_BINARY: rc = binaries[s->which](&v[n], v[s->a], v[s->b], S()); break;
    case OP_REDUCE: rc = reductions[s->which](&v[n], v[s->a], -1, true, S()); break;
    default: {
      mlx_array k = mlx_array_new_float(0.75f);
      rc = mlx_multiply(&v[n], v[s->a], k, S());
      mlx_array_free(k);
    }
    }
  }
  mlx_array p = mlx_array_new(), l1 = mlx_array_new(), l2 = mlx_array_new(),
            l = mlx_array_new(), wl = mlx_array_new();
  if (!rc) {
    rc = mlx_astype(&wl, g->w, mlx_array_dtype(v[n - 1]), S()) ||
         mlx_multiply(&p, v[n - 1], wl, S()) || mlx_sum(&l1, p, false, S()) ||
         mlx_sum(&l2, v[n - 2], false, S()) || mlx_add(&l, l1, l2, S()) ||
         mlx_vector_array_set_value(res, l);
  }
  mlx_array_free(p);
  mlx_array_free(l1);
  mlx_array_free(l2);
  mlx_array_free(l);
  mlx_array_free(wl);
  for (int i = 0; i < n; i++) mlx_array_free(v[i]);
  return rc;
}

/* Shapes: full (R, L); each value remembers whether it is per-row (R, 1). */
static void random_graph(struct graph *g, const int *rowy, int R, int L, mlx_dtype dt) {
  int row[NIN + MAXSTEP];
  for (int i = 0; i < NIN; i++) row[i] = rowy[i];
  g->nstep = test_randint(4, MAXSTEP);
  int n = NIN;
  for (int i = 0; i < g->nstep; i++, n++) {
    struct step *s = &g->st[i];
    s->a = test_randint(n > 4 ? n - 4 : 0, n - 1);
    s->b = test_randint(0, n - 1);
    int r = test_randint(0, 9);
    s->kind = r < 4 ? OP_UNARY : r < 7 ? OP_BINARY : r < 9 ? OP_REDUCE : OP_SCALE;
    if (s->kind == OP_REDUCE && row[s->a]) s->kind = OP_UNARY;
    s->which = test_randint(0, (s->kind == OP_UNARY ? NU : s->kind == OP_BINARY ? NB : NR) - 1);
    row[n] = s->kind == OP_REDUCE ? 1 : s->kind == OP_BINARY ? (row[s->a] && row[s->b]) : row[s->a];
  }
  int sh[2] = {R, row[n - 1] ? 1 : L};
  mlx_array w = tx_rand(sh, 2, -1, 1);
  g->w = mlx_array_new();
  mlx_astype(&g->w, w, dt, S());
  mlx_array_free(w);
}

static int grads_of(mlx_closure vg, mlx_array *in, mlx_array *out) {
  return txf_apply(vg, in, NIN, out, 1 + NIN);
}

int main(void) {
  test_init();
  test_seed(7);
  int graphs = 0, agree = 0;
  for (int gi = 0; gi < 60; gi++) {
    mlx_dtype dt = gi % 2 ? MLX_FLOAT32 : MLX_FLOAT64;
    double tol = dt == MLX_FLOAT32 ? 2e-4 : 1e-10;
    int R = test_randint(1, 5), L = test_randint(2, 9);
    int row[NIN] = {0, test_randint(0, 1), 0};
    /* input 2 is (L,) broadcast along rows; input 1 may be per-row */
    int s0[2] = {R, L}, s1[2] = {R, row[1] ? 1 : L}, s2[1] = {L};
    mlx_array raw[NIN] = {tx_rand(s0, 2, -1, 1), tx_rand(s1, 2, -1, 1), tx_rand(s2, 1, -1, 1)};
    mlx_array in[NIN];
    for (int i = 0; i < NIN; i++) {
      in[i] = mlx_array_new();
      mlx_astype(&in[i], raw[i], dt, S());
      mlx_array_free(raw[i]);
    }
    struct graph g;
    random_graph(&g, row, R, L, dt);
    int args[NIN] = {0, 1, 2};
    mlx_closure f = mlx_closure_new_func_payload(run, &g, NULL);
    mlx_closure cf = txf_compile(f, false);
    mlx_closure vg = txf_value_and_grad(f, args, NIN);
    mlx_closure vgc = txf_value_and_grad(cf, args, NIN); /* grad of compiled */
    mlx_closure cvg = txf_compile(vg, false);          /* compiled grad */
    mlx_array a[1 + NIN], b[1 + NIN], c[1 + NIN];
    int r1 = grads_of(vg, in, a), r2 = grads_of(vgc, in, b), r3 = grads_of(cvg, in, c);
    int ok = !r1 && !r2 && !r3;
    CHECK_MSG(ok, "graph %d: a transform failed: %s", gi, test_last_error);
    bool same = ok;
    for (int k = 0; ok && k < 1 + NIN; k++) {
      bool e1 = txf_allclose(b[k], a[k], tol), e2 = txf_allclose(c[k], a[k], tol);
      CHECK_MSG(e1, "graph %d (%s): grad of compiled differs at output %d", gi,
                dt == MLX_FLOAT32 ? "f32" : "f64", k);
      CHECK_MSG(e2, "graph %d (%s): compiled grad differs at output %d", gi,
                dt == MLX_FLOAT32 ? "f32" : "f64", k);
      same = same && e1 && e2;
    }
    /* <g, v> = jvp(f)(v) for a random tangent */
    if (ok) {
      mlx_array tv[NIN];
      double gv = 0;
      for (int i = 0; i < NIN; i++) {
        mlx_array t = tx_rand((const int *)mlx_array_shape(in[i]), (int)mlx_array_ndim(in[i]), -1, 1);
        tv[i] = mlx_array_new();
        mlx_astype(&tv[i], t, dt, S());
        mlx_array_free(t);
        double *x = test_values(a[1 + i]), *y = test_values(tv[i]);
        for (size_t j = 0; x && y && j < mlx_array_size(tv[i]); j++) gv += x[j] * y[j];
        free(x);
        free(y);
      }
      mlx_vector_array p = mlx_vector_array_new_data(in, NIN), t = mlx_vector_array_new_data(tv, NIN);
      mlx_vector_array o = mlx_vector_array_new(), to = mlx_vector_array_new();
      CHECK_OK(mlx_jvp(&o, &to, cf, p, t)); /* jvp of the compiled function */
      mlx_array jt = mlx_array_new();
      mlx_vector_array_get(&jt, to, 0);
      double *jv = test_values(jt);
      CHECK_MSG(jv && fabs(jv[0] - gv) <= tol * 10 * (1 + fabs(gv)),
                "graph %d: <grad, v> %.10g but jvp %.10g", gi, gv, jv ? jv[0] : NAN);
      free(jv);
      mlx_array_free(jt);
      mlx_vector_array_free(p);
      mlx_vector_array_free(t);
      mlx_vector_array_free(o);
      mlx_vector_array_free(to);
      for (int i = 0; i < NIN; i++) mlx_array_free(tv[i]);
    }
    graphs++;
    agree += same;
    for (int k = 0; k < 1 + NIN; k++) {
      mlx_array_free(a[k]);
      mlx_array_free(b[k]);
      mlx_array_free(c[k]);
    }
    mlx_closure_free(cvg);
    mlx_closure_free(vgc);
    mlx_closure_free(vg);
    mlx_closure_free(cf);
    mlx_closure_free(f);
    mlx_array_free(g.w);
    for (int i = 0; i < NIN; i++) mlx_array_free(in[i]);
  }
  printf("%d random graphs, %d agree four ways\n", graphs, agree);
  return test_done();
}
