/* Row regions of mlx_compile: reductions over the last axis fused with
 * their elementwise prologues and epilogues (compile/fuse.c, fuse_emit.c,
 * kernel_rows.c, replay.c).
 *
 * Every case runs a closure built from public ops both compiled and
 * uncompiled on the same random inputs and compares the results (bitwise
 * where the row kernel runs the same elementwise and accumulation kernels
 * as the uncompiled graph), and checks the compiled graph's structure
 * before it is evaluated: how many FUSED nodes it has, how many of them
 * are row regions (params header rows == 1) and how many REDUCE nodes are
 * left. Cases where fusion must not happen (other axes, over-long rows,
 * view chains that do not keep one element per row) must still give the
 * uncompiled results. */
#include "test.h"
#include "compile_util.h"

#include "compile/compile.h"
#include "core/node.h"
#include "ops/prim.h"

/* ---- closure bodies ---- */

/* Temporaries of one closure body, freed together; rc keeps the first
 * failure so a body can run straight through. */
#define BODY_MAX 8192
#define MAX_OUT 128 /* outputs of a closure under test */
struct body {
  mlx_array v[BODY_MAX];
  int n;
  int rc;
};

static mlx_array *slot(struct body *b) {
  if (b->n == BODY_MAX) {
    fprintf(stderr, "test_compile_rows: body too long\n");
    abort();
  }
  b->v[b->n] = mlx_array_new();
  return &b->v[b->n++];
}

static mlx_array took(struct body *b, int rc) {
  if (rc && !b->rc) b->rc = rc;
  return b->v[b->n - 1];
}

/* OP(b, mlx_fn, args...) is mlx_fn(&tmp, args..., stream), tmp owned by b.
 * Takes the last slot, so OPs must not be nested in each other's args. */
#define OP(b, fn, ...) took((b), fn(slot(b), __VA_ARGS__, test_stream()))

/* A scalar constant of x's dtype (so half inputs stay half). */
static mlx_array konst(struct body *b, double v, mlx_array like) {
  mlx_array *p = slot(b);
  mlx_array_free(*p);
  *p = mlx_array_new_float64(v);
  mlx_array c = *p;
  return OP(b, mlx_astype, c, mlx_array_dtype(like));
}

/* A closure under test: build() makes the outputs from the inputs x and
 * returns how many there are; the other fields parameterise it. */
struct fn {
  int calls;
  int (*build)(struct body *b, const mlx_array *x, mlx_array *out, const struct fn *f);
  int variant;
  float eps;
};

static int trampoline(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  struct fn *f = pl;
  f->calls++;
  struct body b = {.n = 0};
  mlx_array x[8], out[MAX_OUT];
  size_t n = mlx_vector_array_size(in);
  for (size_t k = 0; k < n && k < 8; k++) {
    mlx_array *p = slot(&b);
    if (mlx_vector_array_get(p, in, k)) b.rc = 1;
    x[k] = *p;
  }
  int nout = f->build(&b, x, out, f);
  int rc = b.rc;
  for (int k = 0; k < nout && !rc; k++) rc = mlx_vector_array_append_value(*res, out[k]);
  for (int i = 0; i < b.n; i++) mlx_array_free(b.v[i]);
  return rc;
}

static mlx_vector_array apply(mlx_closure f, int n, const mlx_array *args, int *rc) {
  mlx_vector_array in = mlx_vector_array_new_data(args, (size_t)n), out = mlx_vector_array_new();
  *rc = mlx_closure_apply(&out, f, in);
  mlx_vector_array_free(in);
  return out;
}

/* ---- graph structure ---- */

struct gstats {
  int nodes, fused, rows, reduce;
};

/* Counts the nodes reachable from the outputs (each once). Must run
 * before evaluation, which detaches nodes from their inputs. */
static struct gstats graph_stats(mlx_vector_array outs) {
  struct gstats g = {0};
  size_t cap = 256, top = 0, nseen = 0;
  struct lc_node **stack = malloc(sizeof *stack * cap), **seen = malloc(sizeof *seen * cap);
  for (size_t k = 0; k < mlx_vector_array_size(outs); k++) {
    mlx_array a = mlx_array_new();
    mlx_vector_array_get(&a, outs, k);
    stack[top++] = node(a);
    mlx_array_free(a); /* the vector keeps the node alive */
  }
  while (top) {
    struct lc_node *n = stack[--top];
    bool dup = false;
    for (size_t i = 0; i < nseen && !dup; i++) dup = seen[i] == n;
    if (dup) continue;
    if (nseen + (size_t)n->nin + 1 >= cap || top + (size_t)n->nin + 1 >= cap) {
      cap *= 2;
      stack = realloc(stack, sizeof *stack * cap);
      seen = realloc(seen, sizeof *seen * cap);
    }
    seen[nseen++] = n;
    g.nodes++;
    if (n->op == LC_OP_FUSED) {
      g.fused++;
      g.rows += ((const struct lc_fused_hdr *)n->params)->rows == 1;
    }
    g.reduce += n->op == LC_OP_REDUCE;
    for (int k = 0; k < n->nin; k++) stack[top++] = n->in[k];
  }
  free(stack);
  free(seen);
  return g;
}

/* Structure wanted from a compiled graph; -1 = any. */
struct want {
  int fused, rows, reduce;
};
#define ANY -1

static void check_stats(const char *what, struct gstats g, struct want w) {
  CHECK_MSG((w.fused < 0 || g.fused == w.fused) && (w.rows < 0 || g.rows == w.rows) &&
                (w.reduce < 0 || g.reduce == w.reduce),
            "%s: %d fused (%d row regions), %d reduce nodes; wanted %d fused, %d rows, %d reduce",
            what, g.fused, g.rows, g.reduce, w.fused, w.rows, w.reduce);
}

/* ---- comparisons ---- */

static bool same_meta(mlx_array a, mlx_array b) {
  return mlx_array_dtype(a) == mlx_array_dtype(b) && mlx_array_ndim(a) == mlx_array_ndim(b) &&
         !memcmp(mlx_array_shape(a), mlx_array_shape(b), sizeof(int) * mlx_array_ndim(a));
}

/* Compiled c against reference r: same dtype and shape; bitwise equal when
 * rtol == 0, else |c - r| <= rtol * (|r| + 1e-2) elementwise. On a GPU
 * (LACE_TEST_DEVICE=gpu) a fused row kernel reduces in another order than
 * the unfused kernels, so there bitwise becomes a few units in the last
 * place for floating results (integers stay bitwise), and the 1e-2 floor
 * becomes at least r's root mean square: a difference of sums rounds
 * relative to the sums, not to the (maybe tiny) difference (layer_norm's
 * x - mean). */
static void check_same(const char *what, mlx_array c, mlx_array r, double rtol) {
  test_checks++;
  mlx_dtype rt = mlx_array_dtype(r);
  if (rtol == 0 && test_on_gpu())
    rtol = rt == MLX_FLOAT32 || rt == MLX_COMPLEX64 ? 1e-5
           : rt == MLX_FLOAT16                      ? 4e-3
           : rt == MLX_BFLOAT16                     ? 3e-2
           : rt == MLX_FLOAT64                      ? 1e-12
                                                    : 0;
  if (mlx_array_eval(c) || mlx_array_eval(r)) {
    test_failures++;
    fprintf(stderr, "%s: evaluation failed (%s)\n", what, test_last_error);
    return;
  }
  if (!same_meta(c, r)) {
    test_failures++;
    fprintf(stderr, "%s: dtype/shape differ (dtype %d vs %d, ndim %zu vs %zu)\n", what,
            (int)mlx_array_dtype(c), (int)mlx_array_dtype(r), mlx_array_ndim(c),
            mlx_array_ndim(r));
    return;
  }
  size_t n = mlx_array_size(c);
  if (rtol == 0) {
    size_t isz = mlx_dtype_size(mlx_array_dtype(c));
    char *pc = malloc(n * isz + 1), *pr = malloc(n * isz + 1);
    lc_node_copy_out(node(c), pc);
    lc_node_copy_out(node(r), pr);
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
      if (memcmp(pc + i * isz, pr + i * isz, isz)) bad = i;
    free(pc);
    free(pr);
    if (bad == n) return;
    double *vc = test_values(c), *vr = test_values(r);
    test_failures++;
    fprintf(stderr, "%s: element %zu of %zu differs bitwise: %.9g vs %.9g\n", what, bad, n,
            vc ? vc[bad] : NAN, vr ? vr[bad] : NAN);
    free(vc);
    free(vr);
    return;
  }
  double *vc = test_values(c), *vr = test_values(r);
  if (!vc || !vr) {
    test_failures++;
    fprintf(stderr, "%s: could not read values\n", what);
  } else {
    double floor = 1e-2;
    if (test_on_gpu()) {
      double ss = 0;
      size_t finite = 0;
      for (size_t i = 0; i < n; i++)
        if (isfinite(vr[i])) ss += vr[i] * vr[i], finite++;
      if (finite) floor = fmax(floor, sqrt(ss / (double)finite));
    }
    for (size_t i = 0; i < n; i++) {
      bool ok = (isnan(vr[i]) && isnan(vc[i])) || vc[i] == vr[i] ||
                fabs(vc[i] - vr[i]) <= rtol * (fabs(vr[i]) + floor);
      if (!ok) {
        test_failures++;
        fprintf(stderr, "%s: element %zu of %zu is %.9g, expected %.9g\n", what, i, n, vc[i],
                vr[i]);
        break;
      }
    }
  }
  free(vc);
  free(vr);
}

/* Runs f compiled (shapeless or not) and uncompiled on args: checks the
 * compiled graph's structure, then every output against the reference. */
static void run_case_on(const char *what, mlx_closure f, mlx_closure cf, int nargs,
                        const mlx_array *args, double rtol, struct want w) {
  if (getenv("LACE_TEST_VERBOSE")) fprintf(stderr, "case: %s\n", what);
  int rc;
  mlx_vector_array oc = apply(cf, nargs, args, &rc);
  CHECK_MSG(rc == 0, "%s: compiled call failed (%s)", what, test_last_error);
  if (!rc) {
    struct gstats g = graph_stats(oc);
    if (getenv("LACE_TEST_VERBOSE"))
      fprintf(stderr, "  %d nodes, %d fused, %d row regions, %d reduce\n", g.nodes, g.fused,
              g.rows, g.reduce);
    check_stats(what, g, w);
  }
  mlx_vector_array orf = apply(f, nargs, args, &rc);
  CHECK_MSG(rc == 0, "%s: uncompiled call failed (%s)", what, test_last_error);
  size_t n = mlx_vector_array_size(orf);
  CHECK_MSG(mlx_vector_array_size(oc) == n, "%s: %zu outputs, expected %zu", what,
            mlx_vector_array_size(oc), n);
  for (size_t k = 0; k < n && k < mlx_vector_array_size(oc); k++) {
    mlx_array c = mlx_array_new(), r = mlx_array_new();
    mlx_vector_array_get(&c, oc, k);
    mlx_vector_array_get(&r, orf, k);
    char buf[160];
    snprintf(buf, sizeof buf, "%s: output %zu", what, k);
    check_same(buf, c, r, rtol);
    mlx_array_free(c);
    mlx_array_free(r);
  }
  mlx_vector_array_free(oc);
  mlx_vector_array_free(orf);
}

static void run_case(const char *what, struct fn *fn, int nargs, const mlx_array *args,
                     double rtol, struct want w) {
  mlx_closure f = mlx_closure_new_func_payload(trampoline, fn, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  run_case_on(what, f, cf, nargs, args, rtol, w);
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

static mlx_array rand_as(const int *shape, int nd, double lo, double hi, mlx_dtype dt) {
  mlx_array a = test_rand_f32(shape, nd, lo, hi);
  if (dt == MLX_FLOAT32) return a;
  mlx_array b = mlx_array_new();
  mlx_astype(&b, a, dt, test_stream());
  mlx_array_eval(b);
  mlx_array_free(a);
  return b;
}

static void free_all(mlx_array *a, int n) {
  for (int i = 0; i < n; i++) mlx_array_free(a[i]);
}

/* One row region holding everything, no reduction left outside. */
static const struct want ONE_ROW = {1, 1, 0};

/* ---- bodies from ops ---- */

static mlx_array softmax_ops(struct body *b, mlx_array x) {
  mlx_array m = OP(b, mlx_max_axis, x, -1, true);
  mlx_array d = OP(b, mlx_subtract, x, m);
  mlx_array e = OP(b, mlx_exp, d);
  mlx_array s = OP(b, mlx_sum_axis, e, -1, true);
  return OP(b, mlx_divide, e, s);
}

static int build_softmax(struct body *b, const mlx_array *x, mlx_array *out, const struct fn *f) {
  (void)f;
  out[0] = softmax_ops(b, x[0]);
  return 1;
}

/* softmax(x0 + x1): broadcast inputs */
static int build_softmax_sum(struct body *b, const mlx_array *x, mlx_array *out,
                             const struct fn *f) {
  (void)f;
  mlx_array s = OP(b, mlx_add, x[0], x[1]);
  out[0] = softmax_ops(b, s);
  return 1;
}

/* logsumexp with keepdims=false reductions; the row max comes back over
 * the row through expand_dims (a reshape (O..) -> (O..,1), then a
 * broadcast): a row alias. Variant 1 also returns the shifted rows
 * x - max first (so the region's first output is FULL). */
static int build_lse(struct body *b, const mlx_array *x, mlx_array *out, const struct fn *f) {
  mlx_array m = OP(b, mlx_max_axis, x[0], -1, false);
  mlx_array me = OP(b, mlx_expand_dims, m, -1);
  mlx_array d = OP(b, mlx_subtract, x[0], me);
  mlx_array e = OP(b, mlx_exp, d);
  mlx_array s = OP(b, mlx_sum_axis, e, -1, false);
  mlx_array l = OP(b, mlx_log, s);
  mlx_array lse = OP(b, mlx_add, l, m);
  if (f->variant == 1) {
    out[0] = d;
    out[1] = lse;
    return 2;
  }
  out[0] = lse;
  return 1;
}

static int build_rms(struct body *b, const mlx_array *x, mlx_array *out, const struct fn *f) {
  mlx_array sq = OP(b, mlx_multiply, x[0], x[0]);
  mlx_array ms = OP(b, mlx_mean_axis, sq, -1, true);
  mlx_array eps = konst(b, f->eps, x[0]);
  mlx_array a = OP(b, mlx_add, ms, eps);
  mlx_array r = OP(b, mlx_rsqrt, a);
  mlx_array y = OP(b, mlx_multiply, x[0], r);
  out[0] = OP(b, mlx_multiply, y, x[1]);
  return 1;
}

static int build_layer_norm(struct body *b, const mlx_array *x, mlx_array *out,
                            const struct fn *f) {
  mlx_array mu = OP(b, mlx_mean_axis, x[0], -1, true);
  mlx_array xc = OP(b, mlx_subtract, x[0], mu);
  mlx_array sq = OP(b, mlx_square, xc);
  mlx_array v = OP(b, mlx_mean_axis, sq, -1, true);
  mlx_array eps = konst(b, f->eps, x[0]);
  mlx_array ve = OP(b, mlx_add, v, eps);
  mlx_array r = OP(b, mlx_rsqrt, ve);
  mlx_array y = OP(b, mlx_multiply, xc, r);
  mlx_array yw = OP(b, mlx_multiply, y, x[1]);
  out[0] = OP(b, mlx_add, yw, x[2]);
  return 1;
}

/* The other reduction kinds inside elementwise chains (variant picks). */
static int build_kinds(struct body *b, const mlx_array *x, mlx_array *out, const struct fn *f) {
  mlx_array two = konst(b, 2, x[0]), one = konst(b, 1, x[0]);
  mlx_array x2 = OP(b, mlx_multiply, x[0], two);
  mlx_array t = OP(b, mlx_add, x2, one); /* x * 2 + 1 */
  mlx_array r;
  switch (f->variant) {
  case 0: /* var(x*2+1, ddof 1) + x */
    r = OP(b, mlx_var_axis, t, -1, true, 1);
    out[0] = OP(b, mlx_add, r, x[0]);
    return 1;
  case 1: /* std(x*2+1) + x */
    r = OP(b, mlx_std_axis, t, -1, true, 0);
    out[0] = OP(b, mlx_add, r, x[0]);
    return 1;
  case 2: /* prod(x) * (x*2+1); inputs near 1 keep the product finite */
    r = OP(b, mlx_prod_axis, x[0], -1, true);
    out[0] = OP(b, mlx_multiply, r, t);
    return 1;
  case 3: /* x*2+1 - min(x*2+1) */
    r = OP(b, mlx_min_axis, t, -1, true);
    out[0] = OP(b, mlx_subtract, t, r);
    return 1;
  case 4: { /* where(all(x*2+1 > 0), x, -x) */
    mlx_array z = konst(b, 0, x[0]);
    mlx_array g = OP(b, mlx_greater, t, z);
    mlx_array a = OP(b, mlx_all_axis, g, -1, true);
    mlx_array nx = OP(b, mlx_negative, x[0]);
    out[0] = OP(b, mlx_where, a, x[0], nx);
    return 1;
  }
  case 5: { /* where(any(x > 0.9), x*2+1, x) */
    mlx_array c = konst(b, 0.9, x[0]);
    mlx_array g = OP(b, mlx_greater, x[0], c);
    mlx_array a = OP(b, mlx_any_axis, g, -1, true);
    out[0] = OP(b, mlx_where, a, t, x[0]);
    return 1;
  }
  case 6: /* log_softmax: x*2+1 - logsumexp(x*2+1) */
    r = OP(b, mlx_logsumexp_axis, t, -1, true);
    out[0] = OP(b, mlx_subtract, t, r);
    return 1;
  case 7: { /* sum of the row max broadcast over the row: a reduction
             * reading a ROW value (stride 0 along the row) */
    mlx_array m = OP(b, mlx_max_axis, t, -1, true);
    mlx_array mb = OP(b, mlx_broadcast_to, m, mlx_array_shape(x[0]), mlx_array_ndim(x[0]));
    mlx_array s = OP(b, mlx_sum_axis, mb, -1, true);
    out[0] = OP(b, mlx_subtract, t, s);
    return 1;
  }
  case 8: { /* mean over the row, then an epilogue on the ROW value only,
             * then back over the row */
    mlx_array m = OP(b, mlx_mean_axis, t, -1, true);
    mlx_array e = OP(b, mlx_exp, m);
    out[0] = OP(b, mlx_multiply, e, x[0]);
    return 1;
  }
  default: { /* two independent reductions of the same row */
    mlx_array mx = OP(b, mlx_max_axis, t, -1, true);
    mlx_array mn = OP(b, mlx_min_axis, x[0], -1, true);
    mlx_array d = OP(b, mlx_subtract, mx, mn);
    out[0] = OP(b, mlx_divide, t, d);
    return 1;
  }
  }
}

/* 1. softmax from ops: one row region, bit-identical to the uncompiled ops. */
static void test_softmax(void) {
  int shapes[][2] = {{4, 2}, {3, 17}, {1, 33}, {5, 100}, {7, 256}, {8, 4096}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    mlx_array x = test_rand_f32(shapes[i], 2, -4, 4);
    struct fn fn = {.build = build_softmax};
    char what[64];
    snprintf(what, sizeof what, "softmax (%d, %d)", shapes[i][0], shapes[i][1]);
    run_case(what, &fn, 1, &x, 0, ONE_ROW);
    CHECK_MSG(fn.calls == 2, "%s: %d calls (one trace + one reference)", what, fn.calls);
    mlx_array_free(x);
  }
}

/* 2. logsumexp from ops (reshape alias path), also against the primitive
 * (the ROW_DROP result is output 0, or output 1 after the FULL x - max). */
static void test_logsumexp(void) {
  int s2[2] = {6, 37}, s3[3] = {2, 3, 64};
  int *shapes[2] = {s2, s3}, nds[2] = {2, 3};
  for (int i = 0; i < 4; i++) {
    int variant = i / 2;
    mlx_array x = test_rand_f32(shapes[i % 2], nds[i % 2], -5, 5);
    struct fn fn = {.build = build_lse, .variant = variant};
    char what[64];
    snprintf(what, sizeof what, "logsumexp %d-d, variant %d", nds[i % 2], variant);
    run_case(what, &fn, 1, &x, 0, ONE_ROW);
    mlx_closure f = mlx_closure_new_func_payload(trampoline, &fn, NULL), cf = mlx_closure_new();
    CHECK_OK(mlx_compile(&cf, f, false));
    int rc;
    mlx_vector_array o = apply(cf, 1, &x, &rc);
    CHECK_OK(rc);
    mlx_array c = mlx_array_new(), ref = mlx_array_new();
    mlx_vector_array_get(&c, o, (size_t)variant);
    CHECK_OK(mlx_logsumexp_axis(&ref, x, -1, false, test_stream()));
    CHECK(same_meta(c, ref));
    check_same("logsumexp vs mlx_logsumexp_axis", c, ref, 1e-5);
    mlx_array_free(c);
    mlx_array_free(ref);
    mlx_vector_array_free(o);
    mlx_closure_free(cf);
    mlx_closure_free(f);
    mlx_array_free(x);
  }
}

/* Compiled f(args) output 0 against a reference array, within rtol. */
static void check_against(const char *what, struct fn *fn, int n, const mlx_array *args,
                          mlx_array ref, double rtol) {
  mlx_closure f = mlx_closure_new_func_payload(trampoline, fn, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  int rc;
  mlx_vector_array o = apply(cf, n, args, &rc);
  CHECK_OK(rc);
  mlx_array c = mlx_array_new();
  mlx_vector_array_get(&c, o, 0);
  check_same(what, c, ref, rtol);
  mlx_array_free(c);
  mlx_vector_array_free(o);
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

/* 3. rms_norm from ops, also against mlx_fast_rms_norm. */
static void test_rms_norm(void) {
  int s[2] = {9, 300}, sw[1] = {300};
  mlx_array a[2] = {test_rand_f32(s, 2, -2, 2), test_rand_f32(sw, 1, 0.5, 1.5)};
  struct fn fn = {.build = build_rms, .eps = 1e-5f};
  run_case("rms_norm", &fn, 2, a, 0, ONE_ROW);
  mlx_array ref = mlx_array_new();
  CHECK_OK(mlx_fast_rms_norm(&ref, a[0], a[1], 1e-5f, test_stream()));
  check_against("rms_norm vs mlx_fast_rms_norm", &fn, 2, a, ref, 1e-5);
  mlx_array_free(ref);
  free_all(a, 2);
}

/* 4. layer_norm from ops, also against mlx_fast_layer_norm. */
static void test_layer_norm(void) {
  int s[2] = {5, 1000}, sw[1] = {1000};
  mlx_array a[3] = {test_rand_f32(s, 2, -1, 3), test_rand_f32(sw, 1, 0.5, 1.5),
                    test_rand_f32(sw, 1, -1, 1)};
  struct fn fn = {.build = build_layer_norm, .eps = 1e-5f};
  run_case("layer_norm", &fn, 3, a, 0, ONE_ROW);
  mlx_array ref = mlx_array_new();
  CHECK_OK(mlx_fast_layer_norm(&ref, a[0], a[1], a[2], 1e-5f, test_stream()));
  check_against("layer_norm vs mlx_fast_layer_norm", &fn, 3, a, ref, 1e-5);
  mlx_array_free(ref);
  free_all(a, 3);
}

/* 5. the other reduction kinds inside elementwise chains. */
static void test_kinds(void) {
  const char *names[] = {"var", "std", "prod", "min", "all", "any", "logsumexp",
                         "sum of a row value", "mean epilogue", "max and min"};
  int s[2] = {6, 23};
  for (int v = 0; v < 10; v++) {
    /* prod: values near 1; all: some rows all positive, some not */
    double lo = v == 2 ? 0.8 : v == 4 ? -0.55 : -1, hi = v == 2 ? 1.2 : 1;
    mlx_array x = test_rand_f32(s, 2, lo, hi);
    struct fn fn = {.build = build_kinds, .variant = v};
    run_case(names[v], &fn, 1, &x, 0, ONE_ROW);
    mlx_array_free(x);
  }
}

/* 6. layouts and dtypes: 3-d, non-contiguous and broadcast inputs, half
 * and double precision. */
static void test_layouts_dtypes(void) {
  struct fn fn = {.build = build_softmax};
  /* 3-d */
  int s3[3] = {3, 4, 50};
  mlx_array x = test_rand_f32(s3, 3, -3, 3);
  run_case("softmax 3-d", &fn, 1, &x, 0, ONE_ROW);
  mlx_array_free(x);
  /* a transposed input: rows are strided */
  int st[2] = {40, 12};
  mlx_array base = test_rand_f32(st, 2, -3, 3), xt = mlx_array_new();
  CHECK_OK(mlx_transpose(&xt, base, test_stream()));
  CHECK_OK(mlx_array_eval(xt));
  CHECK(node(xt)->strides[1] != 1);
  run_case("softmax of a transposed input", &fn, 1, &xt, 0, ONE_ROW);
  mlx_array_free(xt);
  mlx_array_free(base);
  /* a broadcast view as input (stride 0 over the rows) */
  int srow[2] = {1, 30}, sfull[2] = {6, 30};
  mlx_array row = test_rand_f32(srow, 2, -3, 3), xb = mlx_array_new();
  CHECK_OK(mlx_broadcast_to(&xb, row, sfull, 2, test_stream()));
  CHECK_OK(mlx_array_eval(xb));
  run_case("softmax of a broadcast view", &fn, 1, &xb, 0, ONE_ROW);
  mlx_array_free(xb);
  mlx_array_free(row);
  /* inputs broadcast inside the closure: (1, L) + (R, 1) */
  int scol[2] = {6, 1};
  mlx_array ab[2] = {test_rand_f32(srow, 2, -3, 3), test_rand_f32(scol, 2, -3, 3)};
  struct fn fs = {.build = build_softmax_sum};
  run_case("softmax((1, L) + (R, 1))", &fs, 2, ab, 0, ONE_ROW);
  mlx_array ba[2] = {ab[1], ab[0]};
  run_case("softmax((R, 1) + (1, L))", &fs, 2, ba, 0, ONE_ROW);
  free_all(ab, 2);
  /* dtypes */
  int s2[2] = {5, 77};
  mlx_dtype dts[3] = {MLX_FLOAT16, MLX_BFLOAT16, MLX_FLOAT64};
  const char *dn[3] = {"float16", "bfloat16", "float64"};
  for (int i = 0; i < 3; i++) {
    char what[64];
    mlx_array xd = rand_as(s2, 2, -3, 3, dts[i]);
    snprintf(what, sizeof what, "softmax %s", dn[i]);
    run_case(what, &fn, 1, &xd, 0, ONE_ROW);
    int sw[1] = {77};
    mlx_array a[2] = {xd, rand_as(sw, 1, 0.5, 1.5, dts[i])};
    struct fn fr = {.build = build_rms, .eps = 1e-5f};
    snprintf(what, sizeof what, "rms_norm %s", dn[i]);
    run_case(what, &fr, 2, a, 0, ONE_ROW);
    struct fn fk = {.build = build_kinds, .variant = 0};
    snprintf(what, sizeof what, "var %s", dn[i]);
    run_case(what, &fk, 1, &xd, 0, ONE_ROW);
    mlx_array_free(a[1]);
    mlx_array_free(xd);
  }
  /* integer input: sum of int32 over the row */
  mlx_array xi = rand_as(s2, 2, -50, 50, MLX_INT32);
  struct fn fm = {.build = build_kinds, .variant = 3};
  run_case("min int32", &fm, 1, &xi, 0, ONE_ROW);
  mlx_array_free(xi);
}

/* 7. several outputs: FULL (softmax, the escaping prologue x*x), ROW_KEEP
 * (R, 1) and ROW_DROP (R,) values of one region, plus a row alias. */
static int build_multi(struct body *b, const mlx_array *x, mlx_array *out, const struct fn *f) {
  (void)f;
  mlx_array sq = OP(b, mlx_multiply, x[0], x[0]);
  mlx_array m = OP(b, mlx_max_axis, sq, -1, true);
  mlx_array d = OP(b, mlx_subtract, sq, m);
  mlx_array e = OP(b, mlx_exp, d);
  mlx_array s = OP(b, mlx_sum_axis, e, -1, false);
  mlx_array se = OP(b, mlx_expand_dims, s, -1);
  out[0] = OP(b, mlx_divide, e, se);
  out[1] = m;
  out[2] = s;
  out[3] = sq;
  out[4] = se;
  return 5;
}

static void test_multi_output(void) {
  int s[2] = {7, 45};
  mlx_array x = test_rand_f32(s, 2, -2, 2);
  struct fn fn = {.build = build_multi};
  mlx_closure f = mlx_closure_new_func_payload(trampoline, &fn, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  int rc;
  mlx_vector_array o = apply(cf, 1, &x, &rc);
  CHECK_OK(rc);
  CHECK(mlx_vector_array_size(o) == 5);
  struct gstats g = graph_stats(o);
  check_stats("multi-output", g, ONE_ROW);
  /* outputs 0..3 are getters of the one row tuple */
  struct lc_node *tuple = NULL;
  for (size_t k = 0; k < 4 && mlx_vector_array_size(o) == 5; k++) {
    mlx_array a = mlx_array_new();
    mlx_vector_array_get(&a, o, k);
    struct lc_node *n = node(a);
    CHECK_MSG(n->op == LC_OP_TUPLE_GET && n->nin == 1 && n->in[0]->op == LC_OP_FUSED &&
                  ((const struct lc_fused_hdr *)n->in[0]->params)->rows == 1,
              "output %zu is not a getter of the row region", k);
    if (n->op == LC_OP_TUPLE_GET && n->nin == 1) {
      if (!tuple) tuple = n->in[0];
      CHECK_MSG(n->in[0] == tuple, "output %zu comes from another node", k);
    }
    mlx_array_free(a);
  }
  if (tuple && tuple->op == LC_OP_FUSED)
    CHECK_MSG(((const struct lc_fused_hdr *)tuple->params)->nout == 4, "%d region outputs",
              ((const struct lc_fused_hdr *)tuple->params)->nout);
  mlx_vector_array_free(o);
  o = apply(cf, 1, &x, &rc);
  mlx_array a[5];
  for (int k = 0; k < 5; k++) {
    a[k] = mlx_array_new();
    mlx_vector_array_get(&a[k], o, (size_t)k);
  }
  CHECK_SHAPE(a[0], 7, 45);
  CHECK_SHAPE(a[1], 7, 1);
  CHECK_SHAPE(a[2], 7);
  CHECK_SHAPE(a[3], 7, 45);
  CHECK_SHAPE(a[4], 7, 1);
  free_all(a, 5);
  mlx_vector_array_free(o);
  run_case_on("multi-output", f, cf, 1, &x, 0, ONE_ROW);
  mlx_closure_free(cf);
  mlx_closure_free(f);
  mlx_array_free(x);
}

/* ---- 8. cases that must not fuse into row regions ---- */

static int build_unfused(struct body *b, const mlx_array *x, mlx_array *out,
                         const struct fn *f) {
  switch (f->variant) {
  case 0: { /* max over axis 0 */
    mlx_array m = OP(b, mlx_max_axis, x[0], 0, true);
    mlx_array d = OP(b, mlx_subtract, x[0], m);
    out[0] = OP(b, mlx_exp, d);
    return 1;
  }
  case 1: { /* sum over the last two axes */
    int ax[2] = {1, 2};
    mlx_array e = OP(b, mlx_exp, x[0]);
    mlx_array s = OP(b, mlx_sum_axes, e, ax, 2, true);
    out[0] = OP(b, mlx_divide, e, s);
    return 1;
  }
  case 2: /* softmax over rows longer than LC_FUSE_ROW_MAX */
    out[0] = softmax_ops(b, x[0]);
    return 1;
  case 3: { /* x (R, R): the row sums laid out as a row (reshape (R,1) ->
             * (1,R)) and broadcast down the columns: y[i][j] = e[i][j] /
             * s[j], not a row alias */
    mlx_array e = OP(b, mlx_exp, x[0]);
    mlx_array s = OP(b, mlx_sum_axis, e, -1, true);
    int R = mlx_array_shape(x[0])[0], sh[2] = {1, R};
    mlx_array t = OP(b, mlx_reshape, s, sh, 2);
    out[0] = OP(b, mlx_divide, e, t);
    return 1;
  }
  case 4: { /* x (R, R): keepdims=false row sums (R,) broadcast against
             * (R, R) line up with the last axis: y[i][j] = e[i][j] / s[j] */
    mlx_array e = OP(b, mlx_exp, x[0]);
    mlx_array s = OP(b, mlx_sum_axis, e, -1, false);
    out[0] = OP(b, mlx_divide, e, s);
    return 1;
  }
  case 5: { /* x (R, R, L): the (R, R, 1) row max transposed over its two
             * outer axes: same shape, other rows */
    mlx_array m = OP(b, mlx_max_axis, x[0], -1, true);
    int perm[3] = {1, 0, 2};
    mlx_array t = OP(b, mlx_transpose_axes, m, perm, 3);
    mlx_array d = OP(b, mlx_subtract, x[0], t);
    out[0] = OP(b, mlx_exp, d);
    return 1;
  }
  case 6: { /* x (L, L, L): the (L, L) row sums broadcast as (1, L, L) */
    mlx_array e = OP(b, mlx_exp, x[0]);
    mlx_array s = OP(b, mlx_sum_axis, e, -1, false);
    out[0] = OP(b, mlx_subtract, e, s);
    return 1;
  }
  case 7: { /* the (R, 1) row max against a (B, R, L) second input: the
             * ROW value broadcast to a larger rank */
    mlx_array m = OP(b, mlx_max_axis, x[0], -1, true);
    mlx_array d = OP(b, mlx_subtract, x[1], m);
    out[0] = OP(b, mlx_exp, d);
    return 1;
  }
  case 8: { /* x (R, L): a last-axis reduction of a (R,) row value (a
             * reduction over the row values themselves) */
    mlx_array e = OP(b, mlx_exp, x[0]);
    mlx_array s = OP(b, mlx_sum_axis, e, -1, false);
    mlx_array l = OP(b, mlx_log, s);
    mlx_array m = OP(b, mlx_max_axis, l, -1, true);
    out[0] = OP(b, mlx_subtract, l, m);
    return 1;
  }
  default: { /* x (R, L): the (R, 1) sums squeezed to (R,) and expanded at
              * the front to (1, R), broadcast against (R, R) input 1 */
    mlx_array e = OP(b, mlx_exp, x[0]);
    mlx_array s = OP(b, mlx_sum_axis, e, -1, false);
    mlx_array t = OP(b, mlx_expand_dims, s, 0);
    out[0] = OP(b, mlx_multiply, x[1], t);
    return 1;
  }
  }
}

static void test_unfused(void) {
  struct want none = {ANY, 0, ANY};
  int s2[2] = {6, 20}, s3[3] = {3, 5, 40}, slong[2] = {2, 70000};
  struct fn fn = {.build = build_unfused};
  mlx_array x = test_rand_f32(s2, 2, -2, 2);
  fn.variant = 0;
  run_case("max over axis 0", &fn, 1, &x, 0, none);
  mlx_array_free(x);
  x = test_rand_f32(s3, 3, -2, 2);
  fn.variant = 1;
  run_case("sum over two axes", &fn, 1, &x, 0, none);
  mlx_array_free(x);
  x = test_rand_f32(slong, 2, -2, 2);
  fn.variant = 2;
  run_case("softmax over 70000", &fn, 1, &x, 0, (struct want){ANY, 0, 2});
  mlx_array_free(x);
  /* view chains that are not row aliases; square shapes so that the
   * shapes would allow the wrong reading */
  for (int R = 2; R <= 9; R += 7) {
    int sq[2] = {R, R}, cube[3] = {R, R, 16}, cube2[3] = {R, R, R};
    char what[64];
    x = test_rand_f32(sq, 2, -2, 2);
    fn.variant = 3;
    snprintf(what, sizeof what, "reshape (R,1)->(1,R) broadcast, R=%d", R);
    run_case(what, &fn, 1, &x, 0, (struct want){ANY, ANY, ANY});
    fn.variant = 4;
    snprintf(what, sizeof what, "(R,) sums broadcast along rows, R=%d", R);
    run_case(what, &fn, 1, &x, 0, (struct want){ANY, ANY, ANY});
    mlx_array_free(x);
    x = test_rand_f32(cube, 3, -2, 2);
    fn.variant = 5;
    snprintf(what, sizeof what, "transposed row max, R=%d", R);
    run_case(what, &fn, 1, &x, 0, (struct want){ANY, ANY, ANY});
    mlx_array_free(x);
    x = test_rand_f32(cube2, 3, -2, 2);
    fn.variant = 6;
    snprintf(what, sizeof what, "(L,L) sums over (L,L,L), L=%d", R);
    run_case(what, &fn, 1, &x, 0, (struct want){ANY, ANY, ANY});
    mlx_array_free(x);
    int s2r[2] = {R, 24}, sbr[3] = {3, R, 24};
    mlx_array a[2] = {test_rand_f32(s2r, 2, -2, 2), test_rand_f32(sbr, 3, -2, 2)};
    fn.variant = 7;
    snprintf(what, sizeof what, "row max against (B,R,L), R=%d", R);
    run_case(what, &fn, 2, a, 0, (struct want){ANY, ANY, ANY});
    fn.variant = 8;
    snprintf(what, sizeof what, "reduction of row values, R=%d", R);
    run_case(what, &fn, 1, a, 0, (struct want){2, 2, 0});
    mlx_array c[2] = {test_rand_f32(s2r, 2, -2, 2), test_rand_f32(sq, 2, -2, 2)};
    fn.variant = 9;
    snprintf(what, sizeof what, "(R,) sums expanded to (1,R), R=%d", R);
    run_case(what, &fn, 2, c, 0, (struct want){ANY, ANY, ANY});
    free_all(c, 2);
    free_all(a, 2);
  }
}

/* ---- edge cases of row regions ---- */

static int build_edges(struct body *b, const mlx_array *x, mlx_array *out, const struct fn *f) {
  switch (f->variant) {
  case 0: { /* 1-d: the keepdims=false max is a scalar row broadcast over
             * the one row; outputs of all three kinds: (L,), (1,), () */
    mlx_array m = OP(b, mlx_max_axis, x[0], -1, false);
    mlx_array d = OP(b, mlx_subtract, x[0], m);
    mlx_array e = OP(b, mlx_exp, d);
    mlx_array s = OP(b, mlx_sum_axis, e, -1, true);
    out[0] = OP(b, mlx_divide, e, s);
    out[1] = s;
    out[2] = m;
    return 3;
  }
  case 1: { /* input 1 (R, 1) read per row (times the row max) and over
             * the row (broadcast against x): one input, two modes */
    mlx_array m = OP(b, mlx_max_axis, x[0], -1, true);
    mlx_array a = OP(b, mlx_multiply, m, x[1]);
    mlx_array d = OP(b, mlx_subtract, x[0], a);
    mlx_array e = OP(b, mlx_exp, d);
    out[0] = OP(b, mlx_multiply, e, x[1]);
    return 1;
  }
  case 2: { /* mean of int32 (a float32 result from int32 rows) */
    mlx_array m = OP(b, mlx_mean_axis, x[0], -1, true);
    mlx_array xf = OP(b, mlx_astype, x[0], MLX_FLOAT32);
    out[0] = OP(b, mlx_subtract, xf, m);
    return 1;
  }
  case 3: { /* half in, float32 softmax, half out */
    mlx_array xf = OP(b, mlx_astype, x[0], MLX_FLOAT32);
    mlx_array sm = softmax_ops(b, xf);
    out[0] = OP(b, mlx_astype, sm, mlx_array_dtype(x[0]));
    return 1;
  }
  case 4: { /* log(sum(exp(x))) with keepdims=false: defined for L = 0 */
    mlx_array e = OP(b, mlx_exp, x[0]);
    mlx_array s = OP(b, mlx_sum_axis, e, -1, false);
    out[0] = OP(b, mlx_log, s);
    return 1;
  }
  case 6: { /* a count (sum of bool rows, int32) scaling the row */
    mlx_array z = konst(b, 0, x[0]);
    mlx_array g = OP(b, mlx_greater, x[0], z);
    mlx_array c = OP(b, mlx_sum_axis, g, -1, true);
    out[0] = OP(b, mlx_multiply, x[0], c);
    return 1;
  }
  case 7: { /* complex64 rows: sum of squares and the (float32) variance */
    mlx_array xc = OP(b, mlx_astype, x[0], MLX_COMPLEX64);
    mlx_array sq = OP(b, mlx_multiply, xc, xc);
    mlx_array s = OP(b, mlx_sum_axis, sq, -1, true);
    mlx_array v = OP(b, mlx_var_axis, xc, -1, true, 0);
    mlx_array t = OP(b, mlx_multiply, xc, s);
    out[0] = OP(b, mlx_add, t, v);
    return 1;
  }
  default: { /* the row max broadcast over the row is itself an output */
    mlx_array m = OP(b, mlx_max_axis, x[0], -1, true);
    mlx_array mb = OP(b, mlx_broadcast_to, m, mlx_array_shape(x[0]), mlx_array_ndim(x[0]));
    mlx_array d = OP(b, mlx_subtract, x[0], mb);
    out[0] = OP(b, mlx_exp, d);
    out[1] = mb;
    return 2;
  }
  }
}

static void test_edges(void) {
  struct fn fe = {.build = build_edges}, fs = {.build = build_softmax};
  /* 1-d */
  int s1[1] = {300};
  mlx_array x = test_rand_f32(s1, 1, -3, 3);
  run_case("softmax 1-d", &fs, 1, &x, 0, ONE_ROW);
  fe.variant = 0;
  run_case("1-d outputs of three kinds", &fe, 1, &x, 0, ONE_ROW);
  mlx_array_free(x);
  /* one input read in two modes */
  int sx[2] = {7, 31}, sc[2] = {7, 1};
  mlx_array a[2] = {test_rand_f32(sx, 2, -2, 2), test_rand_f32(sc, 2, 0.5, 1.5)};
  fe.variant = 1;
  run_case("input per row and over the row", &fe, 2, a, 0, ONE_ROW);
  fe.variant = 5;
  run_case("broadcast row max as an output", &fe, 1, a, 0, ONE_ROW);
  fe.variant = 6;
  run_case("count of positives", &fe, 1, a, 0, ONE_ROW);
  fe.variant = 7;
  run_case("complex64 rows", &fe, 1, a, 0, ONE_ROW);
  free_all(a, 2);
  /* int32 rows, float32 mean */
  mlx_array xi = rand_as(sx, 2, -100, 100, MLX_INT32);
  fe.variant = 2;
  run_case("mean of int32", &fe, 1, &xi, 0, ONE_ROW);
  mlx_array_free(xi);
  /* half -> float32 -> half */
  mlx_array xh = rand_as(sx, 2, -3, 3, MLX_FLOAT16);
  fe.variant = 3;
  run_case("float16 via float32", &fe, 1, &xh, 0, ONE_ROW);
  mlx_array_free(xh);
  /* rows with infinities and NaN: same propagation as the REDUCE kernels */
  {
    float v[4 * 5] = {1, 2, INFINITY, 0, -1, -INFINITY, -INFINITY, -INFINITY, -INFINITY,
                      -INFINITY, 3, NAN, 1, 0, 2, 0.5f, -0.5f, 1e30f, -1e30f, 7};
    int sv[2] = {4, 5};
    mlx_array xv = mlx_array_new_data(v, sv, 2, MLX_FLOAT32);
    run_case("softmax with inf and nan", &fs, 1, &xv, 0, ONE_ROW);
    fe.variant = 4;
    run_case("log-sum-exp with inf and nan", &fe, 1, &xv, 0, ONE_ROW);
    mlx_array_free(xv);
  }
  /* the longest fused row and one past it */
  int smax[2] = {2, 65536}, spast[2] = {2, 65537};
  x = test_rand_f32(smax, 2, -3, 3);
  run_case("softmax over 65536", &fs, 1, &x, 0, ONE_ROW);
  mlx_array_free(x);
  x = test_rand_f32(spast, 2, -3, 3);
  run_case("softmax over 65537", &fs, 1, &x, 0, (struct want){ANY, 0, 2});
  mlx_array_free(x);
  /* many short rows: split over threads */
  int smany[2] = {6000, 24};
  x = test_rand_f32(smany, 2, -3, 3);
  run_case("softmax (6000, 24)", &fs, 1, &x, 0, ONE_ROW);
  mlx_array_free(x);
  /* no rows at all */
  int s0[2] = {0, 8};
  x = test_rand_f32(s0, 2, -3, 3);
  run_case("softmax (0, 8)", &fs, 1, &x, 0, (struct want){ANY, ANY, ANY});
  mlx_array_free(x);
}

/* ---- larger regions ---- */

/* A chain of n steps over x, each value read again 7 steps later (scratch
 * rows live long and are reused), with a row centering (a mean over the
 * row, a reduction) every 10 steps; with f->eps != 0 every value is also
 * an output (too many for one region: it stays unfused). */
static int build_chain(struct body *b, const mlx_array *x, mlx_array *out, const struct fn *f) {
  int n = f->variant;
  mlx_array v[2048];
  mlx_array half = konst(b, 0.5, x[0]);
  v[0] = x[0];
  for (int i = 1; i <= n; i++) {
    if (i % 10 == 0) {
      mlx_array m = OP(b, mlx_mean_axis, v[i - 1], -1, true);
      v[i] = OP(b, mlx_subtract, v[i - 1], m);
    } else {
      mlx_array s = OP(b, mlx_add, v[i - 1], v[i > 7 ? i - 7 : 0]);
      v[i] = OP(b, mlx_multiply, s, half);
    }
  }
  if (f->eps != 0) {
    for (int i = 0; i < n; i++) out[i] = v[i + 1];
    return n;
  }
  out[0] = softmax_ops(b, v[n]);
  return 1;
}

/* A non-fusable op (cumsum down the column of row maxima) between the row
 * region and a consumer that also reads the region: the consumer must not
 * join the region (that would make it depend on itself). */
static int build_between(struct body *b, const mlx_array *x, mlx_array *out,
                         const struct fn *f) {
  (void)f;
  mlx_array e = OP(b, mlx_exp, x[0]);
  mlx_array m = OP(b, mlx_max_axis, e, -1, true);
  mlx_array c = OP(b, mlx_cumsum, m, 0, false, true);
  mlx_array d = OP(b, mlx_divide, e, c);
  mlx_array s = OP(b, mlx_sum_axis, d, -1, true);
  out[0] = OP(b, mlx_multiply, d, s);
  return 1;
}

/* The row max squeezed (R,1) -> (R,), expanded back, squeezed and
 * expanded again: a chain of four reshapes, then the broadcast. */
static int build_reshapes(struct body *b, const mlx_array *x, mlx_array *out,
                          const struct fn *f) {
  (void)f;
  mlx_array m = OP(b, mlx_max_axis, x[0], -1, true);
  int nd = (int)mlx_array_ndim(x[0]);
  mlx_array t = m;
  for (int k = 0; k < 2; k++) {
    mlx_array q = OP(b, mlx_reshape, t, mlx_array_shape(x[0]), (size_t)(nd - 1));
    t = OP(b, mlx_expand_dims, q, nd - 1);
  }
  mlx_array d = OP(b, mlx_subtract, x[0], t);
  out[0] = OP(b, mlx_exp, d);
  return 1;
}

/* Calls a compiled softmax (f->eps unused) inside the traced function. */
static mlx_closure inner_softmax;
static int build_nested(struct body *b, const mlx_array *x, mlx_array *out, const struct fn *f) {
  (void)f;
  mlx_vector_array in = mlx_vector_array_new_data(x, 1), o = mlx_vector_array_new();
  if (mlx_closure_apply(&o, inner_softmax, in)) b->rc = 1;
  mlx_array *p = slot(b);
  if (mlx_vector_array_get(p, o, 0)) b->rc = 1;
  mlx_vector_array_free(in);
  mlx_vector_array_free(o);
  mlx_array sm = *p;
  mlx_array two = konst(b, 2, x[0]);
  mlx_array y = OP(b, mlx_multiply, sm, two);
  mlx_array s = OP(b, mlx_sum_axis, y, -1, true);
  out[0] = OP(b, mlx_subtract, y, s);
  return 1;
}

static void test_larger(void) {
  int s[2] = {5, 48};
  mlx_array x = test_rand_f32(s, 2, -2, 2);
  struct fn fc = {.build = build_chain, .variant = 60};
  run_case("chain of 60 steps", &fc, 1, &x, 0, ONE_ROW);
  /* more members than one region holds: split into several regions */
  fc.variant = 700;
  run_case("chain of 700 steps", &fc, 1, &x, 0, (struct want){ANY, ANY, 0});
  /* more escaping values than a region has outputs */
  fc.variant = 70;
  fc.eps = 1;
  run_case("chain of 70 outputs", &fc, 1, &x, 0, (struct want){ANY, ANY, ANY});
  struct fn fb = {.build = build_between};
  run_case("cumsum between", &fb, 1, &x, 0, (struct want){2, 2, 0});
  struct fn fr = {.build = build_reshapes};
  run_case("reshape chain", &fr, 1, &x, 0, ONE_ROW);
  int s3[3] = {2, 3, 20};
  mlx_array x3 = test_rand_f32(s3, 3, -2, 2);
  run_case("reshape chain 3-d", &fr, 1, &x3, 0, ONE_ROW);
  mlx_array_free(x3);
  struct fn fi = {.build = build_softmax}, fo = {.build = build_nested};
  mlx_closure inner = mlx_closure_new_func_payload(trampoline, &fi, NULL);
  inner_softmax = mlx_closure_new();
  CHECK_OK(mlx_compile(&inner_softmax, inner, false));
  run_case("nested compiled softmax", &fo, 1, &x, 0, (struct want){ANY, ANY, 0});
  mlx_closure_free(inner_softmax);
  mlx_closure_free(inner);
  mlx_array_free(x);
}

/* Shapeless softmax of a sum of two inputs: the broadcast pattern of the
 * inputs may change between calls (replayed through broadcast strides, or
 * traced again), results always equal the uncompiled ones. */
static void test_shapeless_broadcasts(void) {
  struct fn fs = {.build = build_softmax_sum};
  mlx_closure f = mlx_closure_new_func_payload(trampoline, &fs, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, true));
  int sh[][2][2] = {{{1, 12}, {5, 1}}, {{3, 20}, {3, 20}}, {{6, 1}, {1, 9}},
                    {{1, 7}, {1, 7}},  {{4, 1}, {4, 1}},   {{2, 30}, {1, 30}}};
  for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
    mlx_array a[2] = {test_rand_f32(sh[i][0], 2, -3, 3), test_rand_f32(sh[i][1], 2, -3, 3)};
    char what[80];
    snprintf(what, sizeof what, "shapeless softmax((%d,%d) + (%d,%d))", sh[i][0][0],
             sh[i][0][1], sh[i][1][0], sh[i][1][1]);
    run_case_on(what, f, cf, 2, a, 0, (struct want){ANY, ANY, ANY});
    free_all(a, 2);
  }
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

/* 9. shapeless: a row region replays on new shapes without tracing. */
static void test_shapeless(void) {
  struct fn fn = {.build = build_softmax};
  mlx_closure f = mlx_closure_new_func_payload(trampoline, &fn, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, true));
  int shapes[][2] = {{4, 16}, {7, 33}, {1, 2}, {12, 1000}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    mlx_array x = test_rand_f32(shapes[i], 2, -3, 3);
    char what[64];
    snprintf(what, sizeof what, "shapeless softmax (%d, %d)", shapes[i][0], shapes[i][1]);
    run_case_on(what, f, cf, 1, &x, 0, ONE_ROW);
    /* one trace in all, plus one reference call per shape */
    CHECK_MSG(fn.calls == (int)i + 2, "%s: %d calls", what, fn.calls);
    mlx_array_free(x);
  }
  /* rows of length 1 are no row region: traced again, still correct */
  int s1[2] = {5, 1};
  mlx_array x = test_rand_f32(s1, 2, -3, 3);
  int before = fn.calls;
  run_case_on("shapeless softmax (5, 1)", f, cf, 1, &x, 0, (struct want){ANY, ANY, ANY});
  CHECK_MSG(fn.calls == before + 2, "L = 1: %d calls (a new trace expected)", fn.calls - before);
  mlx_array_free(x);
  /* and longer rows again afterwards */
  int s9[2] = {9, 40};
  x = test_rand_f32(s9, 2, -3, 3);
  run_case_on("shapeless softmax (9, 40)", f, cf, 1, &x, 0, ONE_ROW);
  mlx_array_free(x);
  /* a transposed (strided) input on replay */
  int st[2] = {21, 6};
  mlx_array base = test_rand_f32(st, 2, -3, 3);
  x = mlx_array_new();
  CHECK_OK(mlx_transpose(&x, base, test_stream()));
  CHECK_OK(mlx_array_eval(x));
  run_case_on("shapeless softmax, transposed (6, 21)", f, cf, 1, &x, 0, ONE_ROW);
  mlx_array_free(x);
  mlx_array_free(base);
  mlx_closure_free(cf);
  mlx_closure_free(f);

  /* rms_norm with its (L,) weight: the region shape follows both */
  struct fn fr = {.build = build_rms, .eps = 1e-5f};
  f = mlx_closure_new_func_payload(trampoline, &fr, NULL);
  cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, true));
  int rs[][2] = {{3, 64}, {6, 10}, {2, 3}};
  for (size_t i = 0; i < 3; i++) {
    int sw[1] = {rs[i][1]};
    mlx_array a[2] = {test_rand_f32(rs[i], 2, -2, 2), test_rand_f32(sw, 1, 0.5, 1.5)};
    run_case_on("shapeless rms_norm", f, cf, 2, a, 0, ONE_ROW);
    CHECK_MSG(fr.calls == (int)i + 2, "shapeless rms_norm: %d calls", fr.calls);
    free_all(a, 2);
  }
  mlx_closure_free(cf);
  mlx_closure_free(f);

  /* logsumexp through expand_dims (a reshape alias) on new shapes */
  struct fn fl = {.build = build_lse};
  f = mlx_closure_new_func_payload(trampoline, &fl, NULL);
  cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, true));
  int ls[][2] = {{4, 16}, {9, 5}, {1, 70}};
  for (size_t i = 0; i < 3; i++) {
    mlx_array a = test_rand_f32(ls[i], 2, -4, 4);
    run_case_on("shapeless logsumexp", f, cf, 1, &a, 0, ONE_ROW);
    mlx_array_free(a);
  }
  /* the alias reshape lives inside the region: one trace serves all */
  CHECK_MSG(fl.calls == 1 + 3, "shapeless logsumexp: %d calls", fl.calls);
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

/* Shapeless replays of traces whose region or surroundings have edge
 * shapes: zero rows, rows of length 0 and 1, 1-d regions, and the
 * non-alias (R,) broadcast on a new square shape. */
static void test_shapeless_edges(void) {
  struct fn fe = {.build = build_edges, .variant = 4};
  mlx_closure f = mlx_closure_new_func_payload(trampoline, &fe, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, true));
  int ls[][2] = {{4, 16}, {0, 16}, {3, 0}, {3, 1}, {5, 9}};
  for (size_t i = 0; i < 5; i++) {
    mlx_array a = test_rand_f32(ls[i], 2, -4, 4);
    char what[64];
    snprintf(what, sizeof what, "shapeless log-sum-exp (%d, %d)", ls[i][0], ls[i][1]);
    run_case_on(what, f, cf, 1, &a, 0, (struct want){ANY, ANY, ANY});
    mlx_array_free(a);
  }
  mlx_closure_free(cf);
  mlx_closure_free(f);

  struct fn fs = {.build = build_softmax};
  f = mlx_closure_new_func_payload(trampoline, &fs, NULL);
  cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, true));
  int l1[3] = {50, 7, 1};
  for (int i = 0; i < 3; i++) {
    mlx_array a = test_rand_f32(&l1[i], 1, -4, 4);
    char what[64];
    snprintf(what, sizeof what, "shapeless 1-d softmax (%d)", l1[i]);
    run_case_on(what, f, cf, 1, &a, 0, i < 2 ? ONE_ROW : (struct want){ANY, ANY, ANY});
    mlx_array_free(a);
  }
  CHECK_MSG(fs.calls == 3 + 2, "shapeless 1-d softmax: %d calls", fs.calls);
  mlx_closure_free(cf);
  mlx_closure_free(f);

  struct fn fu = {.build = build_unfused, .variant = 4};
  f = mlx_closure_new_func_payload(trampoline, &fu, NULL);
  cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, true));
  int sq[3] = {3, 8, 5};
  for (int i = 0; i < 3; i++) {
    int sh[2] = {sq[i], sq[i]};
    mlx_array a = test_rand_f32(sh, 2, -2, 2);
    char what[64];
    snprintf(what, sizeof what, "shapeless (R,) sums along rows, R=%d", sq[i]);
    run_case_on(what, f, cf, 1, &a, 0, (struct want){ANY, ANY, ANY});
    mlx_array_free(a);
  }
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

/* 10. every compile mode gives the uncompiled results; NO_FUSE leaves the
 * reductions as REDUCE nodes. */
static void test_modes(void) {
  int s[2] = {6, 50}, sw[1] = {50};
  mlx_array a[3] = {test_rand_f32(s, 2, -2, 2), test_rand_f32(sw, 1, 0.5, 1.5),
                    test_rand_f32(sw, 1, -1, 1)};
  mlx_compile_mode modes[3] = {MLX_COMPILE_MODE_NO_FUSE, MLX_COMPILE_MODE_NO_SIMPLIFY,
                               MLX_COMPILE_MODE_ENABLED};
  for (int m = 0; m < 3; m++) {
    CHECK_OK(mlx_set_compile_mode(modes[m]));
    bool nofuse = modes[m] == MLX_COMPILE_MODE_NO_FUSE;
    struct fn fs = {.build = build_softmax}, fl = {.build = build_layer_norm, .eps = 1e-5f};
    char what[64];
    snprintf(what, sizeof what, "softmax, mode %d", (int)modes[m]);
    run_case(what, &fs, 1, a, 0, nofuse ? (struct want){0, 0, 2} : ONE_ROW);
    snprintf(what, sizeof what, "layer_norm, mode %d", (int)modes[m]);
    run_case(what, &fl, 3, a, 0, nofuse ? (struct want){0, 0, 2} : ONE_ROW);
  }
  CHECK_OK(mlx_set_compile_mode(MLX_COMPILE_MODE_ENABLED));
  free_all(a, 3);
}

int main(void) {
  test_init();
  test_seed(20261202);
  size_t base = test_active_memory();
  test_softmax();
  test_logsumexp();
  test_rms_norm();
  test_layer_norm();
  test_kinds();
  test_layouts_dtypes();
  test_multi_output();
  test_unfused();
  test_edges();
  test_shapeless();
  test_shapeless_edges();
  test_larger();
  test_shapeless_broadcasts();
  test_modes();
  /* 11. nothing left behind once closures, arrays and the cache are gone */
  mlx_detail_compile_clear_cache();
  CHECK_MSG(test_active_memory() == base, "active memory %zu, baseline %zu",
            test_active_memory(), base);
  return test_done();
}
