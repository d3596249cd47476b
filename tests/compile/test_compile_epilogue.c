/* Epilogue fusion (compile/fuse_epilogue.c): add(matmul(a, b), c) becomes
 * one MATMUL node that adds c to the rounded product. By default only on
 * GPU streams (tests/gpu/test_gpu_epilogue.c); LACE_FUSE_EPILOGUE=all
 * applies it on the CPU, where this test checks:
 *   - x W + r and r + x W (float32, float16, bfloat16; one row, a few
 *     rows, batched rows, transposed weights) become one MATMUL with c and
 *     no ADD, and equal the uncompiled result bit for bit;
 *   - two residual blocks in a chain both fuse;
 *   - a row c broadcast over the rows fuses too (its broadcast view is c);
 *   - no rewrite where the product is read twice or is an output of the
 *     function, for float64, nor with LACE_FUSE_EPILOGUE unset
 *     (CPU streams), =0, or compile mode no_fuse;
 *   - a shapeless compile replays the fused program at another row count,
 *     also where c is a row broadcast over the rows (a bias: tanh(x W + b)),
 *     without tracing again;
 *   - product grouping (LACE_GROUP_PRODUCTS=all): products sharing x (q, k,
 *     v; gate, up) become one MATMUL_GROUP node, at most 4 to a group, bit
 *     for bit the plain products, also replayed shapeless at other rows;
 *     not for a lone product, nor by default, =0 or =1 (GPU only). */
#include <stdlib.h>
#include <string.h>

#include "compile_util.h"
#include "ops/linalg.h"
#include "ops/prim.h"

static mlx_stream cpu;


/* Nodes reachable from a (before evaluation): ADDs, and MATMULs with and
 * without a rounded c. */
struct counts {
  int add, mm, mm_c, group;
};
static struct counts count(struct lc_node *a) {
  struct lc_node *stack[256], *seen[256];
  int top = 0, nseen = 0;
  struct counts c = {0, 0, 0, 0};
  stack[top++] = a;
  while (top) {
    struct lc_node *n = stack[--top];
    bool dup = false;
    for (int i = 0; i < nseen; i++) dup |= seen[i] == n;
    if (dup || nseen == 256) continue;
    seen[nseen++] = n;
    if (n->op == LC_OP_ADD) c.add++;
    if (n->op == LC_OP_MATMUL_GROUP) c.group++;
    if (n->op == LC_OP_MATMUL) {
      const struct lc_matmul_params *p = n->params;
      if (p->has_c && p->c_rounded) c.mm_c++;
      else c.mm++;
    }
    for (int k = 0; k < n->nin && top < 256; k++) stack[top++] = n->in[k];
  }
  return c;
}



/* payload: 0 = x W + r, 1 = r + x W */
static int residual(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  int swap = *(const int *)payload;
  mlx_array x = test_vec_get(in, 0), w = test_vec_get(in, 1), r = test_vec_get(in, 2), m = mlx_array_new(),
            o = mlx_array_new();
  int rc = mlx_matmul(&m, x, w, cpu) || (swap ? mlx_add(&o, r, m, cpu) : mlx_add(&o, m, r, cpu));
  mlx_array_free(x), mlx_array_free(w), mlx_array_free(r), mlx_array_free(m);
  return rc || test_vec_put(res, &o, 1);
}

/* h = x W + r; h W2 + h (W2 square) */
static int chain(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  (void)payload;
  mlx_array x = test_vec_get(in, 0), w = test_vec_get(in, 1), r = test_vec_get(in, 2), w2 = test_vec_get(in, 3);
  mlx_array m = mlx_array_new(), h = mlx_array_new(), m2 = mlx_array_new(), o = mlx_array_new();
  int rc = mlx_matmul(&m, x, w, cpu) || mlx_add(&h, m, r, cpu) || mlx_matmul(&m2, h, w2, cpu) ||
           mlx_add(&o, m2, h, cpu);
  mlx_array_free(x), mlx_array_free(w), mlx_array_free(r), mlx_array_free(w2);
  mlx_array_free(m), mlx_array_free(h), mlx_array_free(m2);
  return rc || test_vec_put(res, &o, 1);
}

/* (x W + r) * (x W): the product is read twice */
static int read_twice(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  (void)payload;
  mlx_array x = test_vec_get(in, 0), w = test_vec_get(in, 1), r = test_vec_get(in, 2), m = mlx_array_new(),
            s = mlx_array_new(), o = mlx_array_new();
  int rc = mlx_matmul(&m, x, w, cpu) || mlx_add(&s, m, r, cpu) || mlx_multiply(&o, s, m, cpu);
  mlx_array_free(x), mlx_array_free(w), mlx_array_free(r), mlx_array_free(m), mlx_array_free(s);
  return rc || test_vec_put(res, &o, 1);
}

/* (x W + r, x W): the product is an output */
static int product_out(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  (void)payload;
  mlx_array x = test_vec_get(in, 0), w = test_vec_get(in, 1), r = test_vec_get(in, 2), o[2] = {mlx_array_new(), mlx_array_new()};
  int rc = mlx_matmul(&o[1], x, w, cpu) || mlx_add(&o[0], o[1], r, cpu);
  mlx_array_free(x), mlx_array_free(w), mlx_array_free(r);
  return rc || test_vec_put(res, o, 2);
}

static mlx_array rand_of(const int *shape, int nd, mlx_dtype t) {
  mlx_array f = test_rand_f32(shape, nd, -1, 1), r = mlx_array_new();
  if (t == MLX_FLOAT32) return f;
  CHECK_OK(mlx_astype(&r, f, t, cpu));
  CHECK_OK(mlx_array_eval(r));
  mlx_array_free(f);
  return r;
}

/* Calls fn compiled (shapeless or not) and plainly on args; checks the
 * first outputs agree bit for bit and the compiled one's node counts. */
static void run(const char *what, int (*fn)(mlx_vector_array *, const mlx_vector_array, void *), void *payload, bool shapeless,
                mlx_array *args, int nargs, struct counts want) {
  mlx_closure f = mlx_closure_new_func_payload(fn, payload, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, shapeless));
  mlx_vector_array in = mlx_vector_array_new_data(args, (size_t)nargs);
  mlx_vector_array out = mlx_vector_array_new(), ref = mlx_vector_array_new();
  CHECK_OK(mlx_closure_apply(&out, cf, in));
  CHECK_OK(mlx_closure_apply(&ref, f, in));
  if (mlx_vector_array_size(out) >= 1 && mlx_vector_array_size(ref) >= 1) {
    mlx_array o = test_vec_get(out, 0), e = test_vec_get(ref, 0);
    struct counts got = count(node(o));
    CHECK_MSG(got.add == want.add && got.mm == want.mm && got.mm_c == want.mm_c,
              "%s: %d adds, %d products, %d with c; want %d, %d, %d", what, got.add, got.mm,
              got.mm_c, want.add, want.mm, want.mm_c);
    CHECK_MSG(test_same_bits(o, e), "%s: compiled differs from uncompiled", what);
    mlx_array_free(o), mlx_array_free(e);
  } else {
    CHECK_MSG(false, "%s: no outputs", what);
  }
  mlx_vector_array_free(in), mlx_vector_array_free(out), mlx_vector_array_free(ref);
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

static const struct counts FUSED = {0, 0, 1, 0}, PLAIN = {1, 1, 0, 0};

/* x (rows... x K) W (K x N) + r, W stored transposed when tb. */
static void residual_case(mlx_dtype t, const int *xshape, int xnd, int N, bool tb, int swap,
                          struct counts want) {
  int K = xshape[xnd - 1];
  int wsh[2] = {tb ? N : K, tb ? K : N}, rsh[4];
  for (int d = 0; d < xnd - 1; d++) rsh[d] = xshape[d];
  rsh[xnd - 1] = N;
  mlx_array a[3] = {rand_of(xshape, xnd, t), rand_of(wsh, 2, t), rand_of(rsh, xnd, t)};
  if (tb) {
    mlx_array w = mlx_array_new();
    CHECK_OK(mlx_transpose(&w, a[1], cpu));
    mlx_array_free(a[1]);
    a[1] = w;
  }
  char what[128];
  snprintf(what, sizeof what, "residual dtype %d rows %d K %d N %d tb %d swap %d", (int)t,
           xshape[0], K, N, tb, swap);
  run(what, residual, &swap, false, a, 3, want);
  for (int k = 0; k < 3; k++) mlx_array_free(a[k]);
}

static void test_residuals(void) {
  static const mlx_dtype types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16};
  static const int one[] = {1, 96}, few[] = {5, 200}, batched[] = {2, 3, 64}, many[] = {40, 130};
  for (int t = 0; t < 3; t++)
    for (int tb = 0; tb < 2; tb++)
      for (int swap = 0; swap < 2; swap++) {
        residual_case(types[t], one, 2, 40, tb, swap, FUSED);
        residual_case(types[t], few, 2, 72, tb, swap, FUSED);
        residual_case(types[t], batched, 3, 24, tb, swap, FUSED);
        residual_case(types[t], many, 2, 33, tb, swap, FUSED);
      }
}

static void test_chain_and_refusals(void) {
  int xs[] = {3, 64}, ws[] = {64, 64}, rs[] = {3, 64}, row[] = {64};
  mlx_array a[4] = {rand_of(xs, 2, MLX_FLOAT32), rand_of(ws, 2, MLX_FLOAT32),
                    rand_of(rs, 2, MLX_FLOAT32), rand_of(ws, 2, MLX_FLOAT32)};
  run("chain", chain, NULL, false, a, 4, (struct counts){0, 0, 2, 0});
  /* the add and the multiply become one fused elementwise node */
  run("read twice", read_twice, NULL, false, a, 3, (struct counts){0, 1, 0, 0});
  run("product is an output", product_out, NULL, false, a, 3, PLAIN);
  mlx_array b[3] = {a[0], a[1], rand_of(row, 1, MLX_FLOAT32)};
  int swap = 0;
  /* c is the traced broadcast of a row, of the product's shape */
  run("broadcast c", residual, &swap, false, b, 3, FUSED);
  mlx_array_free(b[2]);
  /* float64: no rewrite (not a dtype of the GEMV kernels) */
  mlx_array ad[3];
  for (int k = 0; k < 3; k++) {
    ad[k] = mlx_array_new();
    CHECK_OK(mlx_astype(&ad[k], a[k], MLX_FLOAT64, cpu));
  }
  run("float64", residual, &swap, false, ad, 3, PLAIN);
  for (int k = 0; k < 3; k++) mlx_array_free(ad[k]);
  /* the switches */
  unsetenv("LACE_FUSE_EPILOGUE");
  run("default scope on the CPU", residual, &swap, false, a, 3, PLAIN);
  setenv("LACE_FUSE_EPILOGUE", "0", 1);
  run("LACE_FUSE_EPILOGUE=0", residual, &swap, false, a, 3, PLAIN);
  setenv("LACE_FUSE_EPILOGUE", "all", 1);
  CHECK_OK(mlx_set_compile_mode(MLX_COMPILE_MODE_NO_FUSE));
  run("mode no_fuse", residual, &swap, false, a, 3, PLAIN);
  CHECK_OK(mlx_set_compile_mode(MLX_COMPILE_MODE_ENABLED));
  for (int k = 0; k < 4; k++) mlx_array_free(a[k]);
}

/* One shapeless compile called at 2 rows, then 7: the second call replays
 * the program traced at 2 rows. */
static void test_shapeless(void) {
  mlx_closure f = mlx_closure_new_func_payload(residual, &(int){0}, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, true));
  for (int rows = 2; rows <= 7; rows += 5) {
    int xs[] = {rows, 48}, ws[] = {48, 16}, rs[] = {rows, 16};
    mlx_array a[3] = {rand_of(xs, 2, MLX_BFLOAT16), rand_of(ws, 2, MLX_BFLOAT16),
                      rand_of(rs, 2, MLX_BFLOAT16)};
    mlx_array o = call1(cf, 3, a, NULL), e = call1(f, 3, a, NULL);
    struct counts got = count(node(o));
    CHECK_MSG(got.mm_c == 1 && got.add == 0, "shapeless rows %d: not fused", rows);
    CHECK_MSG(test_same_bits(o, e), "shapeless rows %d: compiled differs", rows);
    mlx_array_free(o), mlx_array_free(e);
    for (int k = 0; k < 3; k++) mlx_array_free(a[k]);
  }
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

/* tanh(x W + b), b a row; counts its traces in *payload */
static int biased(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  ++*(int *)payload;
  mlx_array x = test_vec_get(in, 0), w = test_vec_get(in, 1), b = test_vec_get(in, 2),
            m = mlx_array_new(), a = mlx_array_new(), o = mlx_array_new();
  int rc = mlx_matmul(&m, x, w, cpu) || mlx_add(&a, m, b, cpu) || mlx_tanh(&o, a, cpu);
  mlx_array_free(x), mlx_array_free(w), mlx_array_free(b), mlx_array_free(m), mlx_array_free(a);
  return rc || test_vec_put(res, &o, 1);
}

/* A shapeless compile of a biased product at 3, 9 and 1 rows (and a
 * vector x): one trace; the bias is the product's c; bit for bit. */
static void test_shapeless_bias(void) {
  int traces = 0, plain_traces = 0;
  mlx_closure f = mlx_closure_new_func_payload(biased, &traces, NULL), cf = mlx_closure_new();
  mlx_closure g = mlx_closure_new_func_payload(biased, &plain_traces, NULL);
  CHECK_OK(mlx_compile(&cf, f, true));
  int rows[] = {3, 9, 1};
  for (int r = 0; r < 3; r++) {
    int xs[] = {rows[r], 40}, ws[] = {40, 24}, bs[] = {24};
    mlx_array a[3] = {rand_of(xs, 2, MLX_FLOAT32), rand_of(ws, 2, MLX_FLOAT32),
                      rand_of(bs, 1, MLX_FLOAT32)};
    mlx_array o = call1(cf, 3, a, NULL), e = call1(g, 3, a, NULL);
    struct counts got = count(node(o));
    CHECK_MSG(got.mm_c == 1 && got.add == 0, "shapeless bias, rows %d: not fused", rows[r]);
    CHECK_MSG(test_same_bits(o, e), "shapeless bias, rows %d: compiled differs", rows[r]);
    mlx_array_free(o), mlx_array_free(e);
    for (int k = 0; k < 3; k++) mlx_array_free(a[k]);
  }
  CHECK_MSG(traces == 1, "shapeless bias: traced %d times over three row counts", traces);
  mlx_closure_free(cf);
  mlx_closure_free(f);
  mlx_closure_free(g);
}

/* (x Wq, x Wk, x Wv, silu-free MLP: (x Wg) * (x Wu)) as outputs 0..3:
 * every product reads x, so they group; payload: number of products. */
static int siblings(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  int np = *(const int *)payload;
  mlx_array x = test_vec_get(in, 0), o[8]; /* at most 6 products and their consumer */
  int rc = 0, no = 0;
  for (int k = 0; k < np && !rc; k++) {
    mlx_array w = test_vec_get(in, 1 + (size_t)k);
    o[no] = mlx_array_new();
    rc = mlx_matmul(&o[no++], x, w, cpu);
    mlx_array_free(w);
  }
  /* one more output: the product of the first two (a consumer of both) */
  if (!rc && np >= 2) {
    o[no] = mlx_array_new();
    rc = mlx_multiply(&o[no++], o[0], o[1], cpu);
  }
  mlx_array_free(x);
  if (rc) {
    for (int k = 0; k < no; k++) mlx_array_free(o[k]);
    return rc;
  }
  return test_vec_put(res, o, (size_t)no);
}

/* np products of x (rows x K) by weights of widths N_k, compiled (shapeless
 * or not) against plain, every output bit for bit; want_groups MATMUL_GROUP
 * nodes behind the outputs. */
static void group_case(mlx_dtype t, int rows, int K, int np, bool shapeless, int want_groups) {
  static const int widths[] = {16, 16, 40, 72, 24, 8};
  mlx_array a[1 + 6];
  int xs[2] = {rows, K};
  a[0] = rand_of(xs, 2, t);
  for (int k = 0; k < np; k++) {
    int ws[2] = {K, widths[k]};
    a[1 + k] = rand_of(ws, 2, t);
  }
  mlx_closure f = mlx_closure_new_func_payload(siblings, &np, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, shapeless));
  for (int call = 0; call < (shapeless ? 2 : 1); call++) {
    if (call) { /* other rows: shapeless replay rebuilds the group */
      mlx_array_free(a[0]);
      int xs2[2] = {rows + 3, K};
      a[0] = rand_of(xs2, 2, t);
    }
    mlx_vector_array in = mlx_vector_array_new_data(a, (size_t)(1 + np));
    mlx_vector_array out = mlx_vector_array_new(), ref = mlx_vector_array_new();
    CHECK_OK(mlx_closure_apply(&out, cf, in));
    CHECK_OK(mlx_closure_apply(&ref, f, in));
    size_t no = mlx_vector_array_size(out);
    CHECK_MSG(no == mlx_vector_array_size(ref) && no >= (size_t)np, "group: %zu outputs", no);
    int groups = 0;
    for (size_t k = 0; k < no; k++) {
      mlx_array o = test_vec_get(out, k), e = test_vec_get(ref, k);
      if (k == 0) groups = count(node(o)).group;
      CHECK_MSG(test_same_bits(o, e), "group dtype %d rows %d np %d call %d: output %zu differs",
                (int)t, rows, np, call, k);
      mlx_array_free(o), mlx_array_free(e);
    }
    CHECK_MSG(groups == want_groups, "group dtype %d np %d call %d: %d groups, want %d", (int)t,
              np, call, groups, want_groups);
    mlx_vector_array_free(in), mlx_vector_array_free(out), mlx_vector_array_free(ref);
  }
  mlx_closure_free(cf), mlx_closure_free(f);
  for (int k = 0; k < 1 + np; k++) mlx_array_free(a[k]);
}

static void test_groups(void) {
  static const mlx_dtype types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16};
  group_case(MLX_FLOAT32, 1, 32, 3, false, 0); /* opt-in: off by default */
  setenv("LACE_GROUP_PRODUCTS", "all", 1);
  for (int t = 0; t < 3; t++) {
    group_case(types[t], 1, 64, 3, false, 1); /* q, k, v */
    group_case(types[t], 3, 40, 2, false, 1); /* gate, up */
    group_case(types[t], 2, 32, 3, true, 1);
  }
  group_case(MLX_FLOAT32, 1, 32, 6, false, 1); /* 4 in the group, 2 in a second one */
  group_case(MLX_FLOAT32, 1, 32, 1, false, 0); /* a lone product */
  setenv("LACE_GROUP_PRODUCTS", "1", 1);
  group_case(MLX_FLOAT32, 1, 32, 3, false, 0); /* =1: GPU streams only */
  setenv("LACE_GROUP_PRODUCTS", "0", 1);
  group_case(MLX_FLOAT32, 1, 32, 3, false, 0);
}

int main(void) {
  test_init();
  setenv("LACE_FUSE_EPILOGUE", "all", 1);
  test_seed(20261206);
  cpu = mlx_default_cpu_stream_new();
  test_residuals();
  test_chain_and_refusals();
  test_shapeless();
  test_shapeless_bias();
  test_groups();
  mlx_stream_free(cpu);
  return test_done();
}
