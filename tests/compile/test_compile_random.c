/* Property test: hundreds of random graphs of elementwise, broadcasting,
 * astype, reduction, reshape and matmul ops over random shapes and dtypes
 * (a second CTest run sets LACE_FUSE_EPILOGUE=all: matmuls followed by an
 * add then fuse on the CPU too); the
 * compiled function (ENABLED, NO_FUSE, NO_SIMPLIFY; exact and shapeless)
 * must match the uncompiled one. Fused kernels call the same elementwise
 * kernels, so results are expected equal up to float rounding. Reductions
 * over the last axis (kept, or dropped and put back) fuse into row regions
 * in many graphs; the test counts them.
 * On a GPU stream (LACE_TEST_DEVICE=gpu) the two sides need not run the
 * same code: a fused kernel's float32 function against ew.cu's or against
 * glibc's (where an op runs on the host), a row region's sum against the
 * reduction kernel's order. Each value there is held to the loosest
 * tolerance of the values it was computed from (a float32 ulp survives a
 * later cast to float64), times the square root of the count of every
 * reduction on the way, times 1 + max |x| at sin(x) and cos(x) and 2 at
 * squares (they scale the error they are given). On the CPU, each output
 * to its own dtype's. */
#include "test.h"

#include "compile/compile.h"
#include "core/graph.h"
#include "ops/prim.h"

typedef int (*unary_fn)(mlx_array *, const mlx_array, const mlx_stream);
typedef int (*binary_fn)(mlx_array *, const mlx_array, const mlx_array, const mlx_stream);
typedef int (*axis_fn)(mlx_array *, const mlx_array, int, bool, const mlx_stream);

static const unary_fn unaries[] = {mlx_tanh, mlx_sin, mlx_sigmoid, mlx_negative,
                                   mlx_abs,  mlx_erf, mlx_square,  mlx_cos};
static const binary_fn binaries[] = {mlx_add,     mlx_subtract, mlx_multiply,
                                     mlx_maximum, mlx_minimum,  mlx_divide};
static const axis_fn reductions[] = {mlx_sum_axis, mlx_max_axis, mlx_mean_axis, mlx_min_axis,
                                     mlx_logsumexp_axis};
static const mlx_dtype cast_types[] = {MLX_FLOAT32, MLX_FLOAT64, MLX_FLOAT16, MLX_FLOAT32};

#define NU (int)(sizeof unaries / sizeof unaries[0])
#define NB (int)(sizeof binaries / sizeof binaries[0])
#define MAXSTEP 40
#define MAXIN 3
#define MAXOUT 3

enum { OP_UNARY, OP_BINARY, OP_CAST, OP_REDUCE, OP_FLATTEN_BACK, OP_CONST_MUL, OP_WHERE, OP_ISCLOSE,
       OP_NAN_TO_NUM, OP_MATMUL };

struct step {
  int kind, which, a, b;
};

struct graph {
  int nin, nstep, nout;
  struct step steps[MAXSTEP];
  int outs[MAXOUT];
  mlx_array konst; /* captured: a constant the graph multiplies by */
  int calls;
  bool big; /* long last axes: no OP_MATMUL (its matrix is n x n) */
  double tol[MAXIN + MAXSTEP]; /* per value, set by each call (see the top) */
};

static double tol_of(mlx_dtype t) {
  return t == MLX_FLOAT16 || t == MLX_BFLOAT16 ? 2e-2 : t == MLX_FLOAT64 ? 1e-9 : 2e-5;
}

static int eval_step(const struct graph *g, const struct step *st, mlx_array *vals, int v,
                     mlx_stream s) {
  mlx_array r = mlx_array_new();
  int rc = 0;
  switch (st->kind) {
  case OP_UNARY: rc = unaries[st->which](&r, vals[st->a], s); break;
  case OP_BINARY: rc = binaries[st->which](&r, vals[st->a], vals[st->b], s); break;
  case OP_CAST: rc = mlx_astype(&r, vals[st->a], cast_types[st->which], s); break;
  case OP_REDUCE: { /* over the last axis, kept; or dropped and put back (a reshape) */
    int nd = (int)mlx_array_ndim(vals[st->a]);
    bool keep = st->b % 2 == 0;
    rc = nd ? reductions[st->which](&r, vals[st->a], nd - 1, keep, s) : mlx_array_set(&r, vals[st->a]);
    if (!rc && nd && !keep) {
      mlx_array e = mlx_array_new();
      rc = mlx_expand_dims(&e, r, -1, s);
      mlx_array_set(&r, e);
      mlx_array_free(e);
    }
    break;
  }
  case OP_FLATTEN_BACK: { /* reshape to 1-d and back: exercises shape ops */
    mlx_array f = mlx_array_new();
    int n = (int)mlx_array_size(vals[st->a]);
    rc = mlx_reshape(&f, vals[st->a], &n, 1, s);
    if (!rc)
      rc = mlx_reshape(&r, f, mlx_array_shape(vals[st->a]), mlx_array_ndim(vals[st->a]), s);
    mlx_array_free(f);
    break;
  }
  case OP_CONST_MUL: rc = mlx_multiply(&r, vals[st->a], g->konst, s); break;
  case OP_WHERE: { /* where(a > b, a, log(|b|)): bool values, three inputs */
    mlx_array c = mlx_array_new(), l = mlx_array_new();
    rc = mlx_greater(&c, vals[st->a], vals[st->b], s);
    if (!rc) rc = mlx_abs(&l, vals[st->b], s);
    if (!rc) rc = mlx_log(&l, l, s);
    if (!rc) rc = mlx_where(&r, c, vals[st->a], l, s);
    mlx_array_free(c);
    mlx_array_free(l);
    break;
  }
  case OP_ISCLOSE: { /* params inside a fused region; bool to float */
    mlx_array c = mlx_array_new();
    rc = mlx_isclose(&c, vals[st->a], vals[st->b], 0.5, 0.25, false, s);
    if (!rc) rc = mlx_add(&r, c, vals[st->a], s);
    mlx_array_free(c);
    break;
  }
  case OP_MATMUL: { /* x @ M, M (n, n) of small exact values, n = x's last axis */
    int nd = (int)mlx_array_ndim(vals[st->a]);
    if (!nd) {
      rc = mlx_array_set(&r, vals[st->a]);
      break;
    }
    int n = mlx_array_shape(vals[st->a])[nd - 1], msh[2] = {n, n};
    float *m = malloc(sizeof(float) * (size_t)(n * n) + 1);
    for (int i = 0; i < n * n; i++) m[i] = (float)((i * 7 + st->which) % 5 - 2) * 0.25f;
    mlx_array mf = mlx_array_new_data(m, msh, 2, MLX_FLOAT32), x = mlx_array_new(),
              mm = mlx_array_new();
    free(m);
    mlx_dtype dt = mlx_array_dtype(vals[st->a]);
    if (dt != MLX_FLOAT16 && dt != MLX_FLOAT32 && dt != MLX_FLOAT64) dt = MLX_FLOAT32;
    rc = mlx_astype(&x, vals[st->a], dt, s) || mlx_astype(&mm, mf, dt, s) ||
         mlx_matmul(&r, x, mm, s);
    mlx_array_free(mf), mlx_array_free(x), mlx_array_free(mm);
    break;
  }
  case OP_NAN_TO_NUM: {
    mlx_optional_float big = {3.0f, true}, none = {0.0f, false};
    rc = mlx_nan_to_num(&r, vals[st->a], 0.5f, big, none, s);
    break;
  }
  }
  vals[v] = r;
  return rc;
}

/* How much unary `which` can scale an absolute error in x, as a factor on
 * its relative tolerance: sin and cos turn a relative error e of x into an
 * absolute one of e * |x|, square doubles it. Measured on the reference
 * call (values can be read); 1 while tracing, whose tolerances the
 * reference call overwrites before they are compared. */
static double amplification(int which, mlx_array x) {
  if (unaries[which] == mlx_square) return 2;
  if ((unaries[which] != mlx_sin && unaries[which] != mlx_cos) || lc_tracing()) return 1;
  double *v = test_values(x), m = 0;
  for (size_t i = 0; v && i < mlx_array_size(x); i++)
    if (isfinite(v[i])) m = fmax(m, fabs(v[i]));
  free(v);
  return 1 + m;
}

static int run_graph(mlx_vector_array *res, const mlx_vector_array in, void *pl) {
  struct graph *g = pl;
  g->calls++;
  mlx_stream s = test_stream();
  mlx_array vals[MAXIN + MAXSTEP];
  int n = 0, rc = 0;
  for (; n < g->nin; n++) {
    vals[n] = mlx_array_new();
    mlx_vector_array_get(&vals[n], in, (size_t)n);
  }
  bool gpu = test_on_gpu();
  for (int i = 0; i < n; i++) g->tol[i] = tol_of(mlx_array_dtype(vals[i]));
  for (int i = 0; i < g->nstep && !rc; i++, n++) {
    const struct step *st = &g->steps[i];
    rc = eval_step(g, st, vals, n, s);
    double t = tol_of(mlx_array_dtype(vals[n]));
    if (gpu) {
      t = fmax(t, fmax(g->tol[st->a], g->tol[st->b]));
      int nd = (int)mlx_array_ndim(vals[st->a]);
      if (st->kind == OP_REDUCE && nd) t *= sqrt((double)mlx_array_shape(vals[st->a])[nd - 1]);
      if (st->kind == OP_UNARY) t *= amplification(st->which, vals[st->a]);
    }
    g->tol[n] = t;
  }
  for (int o = 0; o < g->nout && !rc; o++) rc = mlx_vector_array_append_value(*res, vals[g->outs[o]]);
  for (int i = 0; i < n; i++) mlx_array_free(vals[i]);
  return rc;
}

/* A random shape broadcastable to base (some dims 1, maybe fewer dims). */
static int sub_shape(const int *base, int nd, int *out) {
  int drop = test_randint(0, 2) == 0 ? test_randint(0, nd) : 0;
  int k = 0;
  for (int d = drop; d < nd; d++) out[k++] = test_randint(0, 3) == 0 ? 1 : base[d];
  return k;
}

static mlx_array rand_array(const int *shape, int nd, mlx_dtype dt) {
  mlx_array a;
  if (nd >= 2 && test_randint(0, 3) == 0) { /* a transposed (non-contiguous) view */
    int rev[3];
    for (int d = 0; d < nd; d++) rev[d] = shape[nd - 1 - d];
    mlx_array t = test_rand_f32(rev, nd, -2, 2);
    a = mlx_array_new();
    mlx_transpose(&a, t, test_stream());
    mlx_array_eval(a);
    mlx_array_free(t);
  } else {
    a = test_rand_f32(shape, nd, -2, 2);
  }
  if (dt != MLX_FLOAT32) {
    mlx_array b = mlx_array_new();
    mlx_astype(&b, a, dt, test_stream());
    mlx_array_eval(b);
    mlx_array_free(a);
    a = b;
  }
  return a;
}

static void random_graph(struct graph *g, int nin) {
  g->nin = nin;
  g->nstep = test_randint(2, MAXSTEP);
  int n = nin;
  for (int i = 0; i < g->nstep; i++, n++) {
    struct step *st = &g->steps[i];
    int r = test_randint(0, 99);
    st->a = test_randint(n > 4 ? n - 4 : 0, n - 1); /* prefer recent values: deep chains */
    st->b = test_randint(0, n - 1);
    if (r < 35) {
      st->kind = OP_UNARY;
      st->which = test_randint(0, NU - 1);
    } else if (r < 75) {
      st->kind = OP_BINARY;
      st->which = test_randint(0, NB - 1);
      if (r >= 71 && !g->big) st->kind = OP_MATMUL; /* same draws as before */
    } else if (r < 85) {
      st->kind = OP_CAST;
      st->which = test_randint(0, 3);
    } else if (r < 90) {
      st->kind = OP_REDUCE;
      st->which = test_randint(0, (int)(sizeof reductions / sizeof reductions[0]) - 1);
    } else if (r < 92) {
      st->kind = OP_FLATTEN_BACK;
    } else if (r < 94) {
      st->kind = OP_CONST_MUL;
    } else if (r < 97) {
      st->kind = OP_WHERE;
    } else if (r < 99) {
      st->kind = OP_ISCLOSE;
    } else {
      st->kind = OP_NAN_TO_NUM;
    }
  }
  g->nout = test_randint(1, MAXOUT);
  g->outs[0] = n - 1;
  for (int o = 1; o < g->nout; o++) g->outs[o] = test_randint(0, n - 1);
}

/* Compares two output vectors; returns 1 when equal within tolerance. */
static int compare(mlx_vector_array got, mlx_vector_array want, const struct graph *g, int gi) {
  if (mlx_vector_array_size(got) != mlx_vector_array_size(want)) {
    fprintf(stderr, "graph %d: %zu outputs, expected %zu\n", gi, mlx_vector_array_size(got),
            mlx_vector_array_size(want));
    return 0;
  }
  int ok = 1;
  for (size_t k = 0; k < mlx_vector_array_size(got) && ok; k++) {
    mlx_array a = mlx_array_new(), b = mlx_array_new();
    mlx_vector_array_get(&a, got, k);
    mlx_vector_array_get(&b, want, k);
    if (mlx_array_dtype(a) != mlx_array_dtype(b) || mlx_array_ndim(a) != mlx_array_ndim(b) ||
        memcmp(mlx_array_shape(a), mlx_array_shape(b), sizeof(int) * mlx_array_ndim(a))) {
      fprintf(stderr, "graph %d output %zu: dtype/shape differ\n", gi, k);
      ok = 0;
    } else {
      double *x = test_values(a), *y = test_values(b);
      double tol = g->tol[g->outs[k]];
      for (size_t i = 0; x && y && i < mlx_array_size(a) && ok; i++) {
        double u = x[i], v = y[i];
        if ((isnan(u) && isnan(v)) || u == v) continue;
        if (!(fabs(u - v) <= tol * (1 + fabs(v)))) {
          fprintf(stderr, "graph %d output %zu element %zu: %.9g vs %.9g\n", gi, k, i, u, v);
          ok = 0;
        }
      }
      if (!x || !y) ok = 0;
      free(x);
      free(y);
    }
    mlx_array_free(a);
    mlx_array_free(b);
  }
  return ok;
}

/* A failed graph's inputs and steps on stderr, to rebuild it by hand:
 * value k is input k (k < nin), else step k - nin's result. */
static void describe(const struct graph *g, const mlx_array *in, int nin) {
  static const char *const kinds[] = {"unary", "binary", "cast", "reduce", "flatten_back",
                                      "const_mul", "where", "isclose", "nan_to_num", "matmul"};
  for (int i = 0; i < nin; i++) {
    fprintf(stderr, "  in %d: dtype %d shape", i, (int)mlx_array_dtype(in[i]));
    for (size_t d = 0; d < mlx_array_ndim(in[i]); d++)
      fprintf(stderr, " %d", mlx_array_shape(in[i])[d]);
    fprintf(stderr, "\n");
  }
  for (int i = 0; i < g->nstep; i++) {
    const struct step *st = &g->steps[i];
    fprintf(stderr, "  v%d = %s[%d](v%d, v%d)\n", nin + i, kinds[st->kind], st->which, st->a,
            st->b);
  }
  for (int o = 0; o < g->nout; o++) fprintf(stderr, "  out %d = v%d\n", o, g->outs[o]);
}

static int row_regions; /* compiled outputs computed by a fused row region */

/* Whether the lazy graph under n holds a fused row region (bounded walk). */
static bool has_row_region(const struct lc_node *n, int *budget) {
  if (!n || --*budget < 0) return false;
  if (n->op == LC_OP_FUSED && ((const struct lc_fused_hdr *)n->params)->rows) return true;
  for (int k = 0; k < n->nin; k++)
    if (has_row_region(n->in[k], budget)) return true;
  return false;
}

static int check_call(mlx_closure cf, mlx_closure f, const struct graph *g, const mlx_array *in,
                      int nin, int gi) {
  mlx_vector_array vin = mlx_vector_array_new_data(in, (size_t)nin);
  mlx_vector_array got = mlx_vector_array_new(), want = mlx_vector_array_new();
  int ok = mlx_closure_apply(&got, cf, vin) == 0;
  if (!ok) fprintf(stderr, "graph %d: compiled call failed: %s\n", gi, test_last_error);
  for (size_t k = 0; ok && k < mlx_vector_array_size(got); k++) {
    mlx_array a = mlx_array_new();
    mlx_vector_array_get(&a, got, k);
    int budget = 4096;
    if (has_row_region((const struct lc_node *)a.ctx, &budget)) {
      row_regions++;
      k = mlx_vector_array_size(got);
    }
    mlx_array_free(a);
  }
  ok = ok && mlx_closure_apply(&want, f, vin) == 0;
  ok = ok && compare(got, want, g, gi);
  mlx_vector_array_free(vin);
  mlx_vector_array_free(got);
  mlx_vector_array_free(want);
  return ok;
}

/* Graphs per run: fewer under AddressSanitizer, where each costs about 50
 * times more (the plain run covers all 400). */
#ifdef __SANITIZE_ADDRESS__
#define GRAPHS 120
#else
#define GRAPHS 400
#endif

int main(void) {
  test_init();
  size_t base_mem = test_active_memory();
  const int modes[3] = {MLX_COMPILE_MODE_ENABLED, MLX_COMPILE_MODE_NO_FUSE,
                        MLX_COMPILE_MODE_NO_SIMPLIFY};
  int failures = 0, fused_graphs = 0, shapeless_hits = 0;
  for (int gi = 0; gi < GRAPHS && failures < 5; gi++) {
    test_seed(1000 + (uint64_t)gi);
    struct graph g = {0};
    g.big = gi % 10 == 0;
    int nin = test_randint(1, MAXIN);
    random_graph(&g, nin);
    g.konst = mlx_array_new_float((float)test_uniform(0.5, 1.5));
    int nd = test_randint(1, 3), base[3], base2[3];
    bool big = g.big; /* several tiles, thread pool, gathered inputs */
    for (int d = 0; d < nd; d++) {
      base[d] = test_randint(1, big ? 70 : 6);
      base2[d] = test_randint(1, 6);
    }
    if (big) base[nd - 1] = 3000 + test_randint(0, 100);
    mlx_array in[MAXIN], in2[MAXIN];
    for (int i = 0; i < nin; i++) {
      int sh[3], sh2[3];
      int k = sub_shape(base, nd, sh);
      /* the second call's shapes keep the same broadcasting pattern */
      for (int d = 0; d < k; d++) sh2[d] = sh[d] == 1 ? 1 : base2[nd - k + d];
      mlx_dtype dt = test_randint(0, 5) == 0 ? MLX_FLOAT16 : test_randint(0, 5) == 0 ? MLX_INT32 : MLX_FLOAT32;
      in[i] = rand_array(sh, k, dt);
      in2[i] = rand_array(sh2, k, dt);
    }
    int mode = modes[gi % 3];
    bool shapeless = gi % 2 == 1;
    mlx_set_compile_mode((mlx_compile_mode)mode);
    mlx_closure f = mlx_closure_new_func_payload(run_graph, &g, NULL), cf = mlx_closure_new();
    CHECK_OK(mlx_compile(&cf, f, shapeless));
    int ok = check_call(cf, f, &g, in, nin, gi);
    ok = ok && check_call(cf, f, &g, in, nin, gi); /* cache hit */
    if (shapeless) ok = ok && check_call(cf, f, &g, in2, nin, gi);
    if (shapeless && ok) {
      /* graphs of elementwise ops and broadcasting replay on new shapes
       * without tracing again: 3 reference calls + 1 trace */
      bool elementwise_only = true;
      for (int i = 0; i < g.nstep; i++)
        elementwise_only &= g.steps[i].kind != OP_REDUCE && g.steps[i].kind != OP_FLATTEN_BACK &&
                            g.steps[i].kind != OP_MATMUL;
      if (elementwise_only) {
        CHECK_MSG(g.calls == 4, "graph %d: shapeless traced %d times", gi, g.calls - 3);
        shapeless_hits++;
      }
    }
    fused_graphs += mode == MLX_COMPILE_MODE_ENABLED;
    CHECK_MSG(ok, "graph %d (mode %d, shapeless %d) mismatched", gi, mode, shapeless);
    if (!ok) describe(&g, in, nin);
    failures += !ok;
    mlx_closure_free(cf);
    mlx_closure_free(f);
    for (int i = 0; i < nin; i++) {
      mlx_array_free(in[i]);
      mlx_array_free(in2[i]);
    }
    mlx_array_free(g.konst);
  }
  mlx_set_compile_mode(MLX_COMPILE_MODE_ENABLED);
  CHECK(lc_cache_count(0, 0) == 0);
  CHECK_MSG(test_active_memory() == base_mem, "active %zu vs %zu", test_active_memory(), base_mem);
  /* reductions over the last axis fuse with their neighbours in many graphs */
  CHECK_MSG(row_regions >= 40 * GRAPHS / 400, "only %d calls ran row regions", row_regions);
  printf("%d graphs in ENABLED mode, %d shapeless replays on new shapes, %d calls with row "
         "regions\n", fused_graphs, shapeless_hits, row_regions);
  return test_done();
}
