/* Epilogue fusion on the GPU (compile/fuse_epilogue.c, gemv.cu): compiled
 * x W + r on a GPU stream is one MATMUL node adding r to the rounded
 * product, and equals the uncompiled product-then-add bit for bit, for
 * float32, float16 and bfloat16:
 *   - GEMV kernels (one row, a few rows, batches of one row, transposed
 *     weights, a k long enough to be split over blocks and summed by a
 *     second kernel): one GEMV launch, r read in place;
 *   - r a strided view (a transpose: copied into the output first) and a
 *     row broadcast over the rows;
 *   - 16 rows (cuBLAS, then the add kernel);
 * and with CUDA graphs on, a replayed call equals a plain one. Product
 * grouping: x Wq, x Wk, x Wv compiled are one MATMUL_GROUP node made by one
 * GEMV launch (row-major weights; k split or not), or by one product at a
 * time (transposed weights: cuBLAS-free GEMV launches, one per product),
 * bit for bit the uncompiled products. Device memory back to its
 * baseline. Skips without a GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/node.h"
#include "gpu/gpu.h"
#include "gpu/graphs.h"
#include "../compile/compile_util.h"
#include "gpu_util.h"
#include "ops/linalg.h"
#include "ops/prim.h"

/* ADD nodes and MATMULs with a rounded c reachable from a (unevaluated). */
static void count(struct lc_node *a, int *adds, int *mm_c) {
  struct lc_node *stack[64], *seen[64];
  int top = 0, nseen = 0;
  *adds = *mm_c = 0;
  stack[top++] = a;
  while (top) {
    struct lc_node *n = stack[--top];
    bool dup = false;
    for (int i = 0; i < nseen; i++) dup |= seen[i] == n;
    if (dup || nseen == 64) continue;
    seen[nseen++] = n;
    *adds += n->op == LC_OP_ADD;
    if (n->op == LC_OP_MATMUL) {
      const struct lc_matmul_params *p = n->params;
      *mm_c += p->has_c && p->c_rounded;
    }
    for (int k = 0; k < n->nin && top < 64; k++) stack[top++] = n->in[k];
  }
}


static int residual(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  (void)payload;
  mlx_array x = test_vec_get(in, 0), w = test_vec_get(in, 1), r = test_vec_get(in, 2), m = mlx_array_new(),
            o = mlx_array_new();
  int rc = mlx_matmul(&m, x, w, gpu_stream) || mlx_add(&o, m, r, gpu_stream);
  mlx_array_free(x), mlx_array_free(w), mlx_array_free(r), mlx_array_free(m);
  if (!rc) rc = mlx_vector_array_set_data(res, &o, 1);
  mlx_array_free(o);
  return rc;
}

static unsigned long gemv_delta(void) {
  static unsigned long last;
  unsigned long now = lc_gpu_gemv_launches(), d = now - last;
  last = now;
  return d;
}

enum { R_PLAIN, R_TRANSPOSED, R_ROW };

/* x (batch x rows x K, batch 0: none) W (K x N; stored transposed when
 * tb) + r; gemv: whether the GEMV kernels are meant to take it. */
static void residual_case(mlx_dtype t, int batch, int rows, int K, int N, bool tb, int rkind,
                          bool gemv) {
  int xs[3] = {batch, rows, K}, nd = batch ? 3 : 2;
  int ws[2] = {tb ? N : K, tb ? K : N};
  mlx_array x = gpu_rand(batch ? xs : xs + 1, nd, t, -1, 1), w0 = gpu_rand(ws, 2, t, -1, 1);
  mlx_array w = mlx_array_new(), r = mlx_array_new();
  CHECK_OK(tb ? mlx_transpose(&w, w0, test_stream()) : mlx_array_set(&w, w0));
  if (rkind == R_ROW) {
    int rs[1] = {N};
    r = gpu_rand(rs, 1, t, -1, 1);
  } else {
    /* r of the output's shape, or the transpose of its transpose */
    int os[3] = {batch, rows, N}, ts[3] = {batch, N, rows};
    if (rkind == R_PLAIN) {
      r = gpu_rand(batch ? os : os + 1, nd, t, -1, 1);
    } else {
      mlx_array r0 = gpu_rand(batch ? ts : ts + 1, nd, t, -1, 1);
      CHECK_OK(mlx_swapaxes(&r, r0, -1, -2, test_stream()));
      mlx_array_free(r0);
    }
  }
  char what[160];
  snprintf(what, sizeof what, "dtype %d batch %d rows %d K %d N %d tb %d r %d", (int)t, batch,
           rows, K, N, tb, rkind);
  mlx_closure f = mlx_closure_new_func_payload(residual, NULL, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  mlx_array a[3] = {x, w, r};
  mlx_vector_array in = mlx_vector_array_new_data(a, 3);
  mlx_vector_array out = mlx_vector_array_new(), ref = mlx_vector_array_new();
  gemv_delta();
  CHECK_OK(mlx_closure_apply(&out, cf, in));
  mlx_array o = test_vec_get(out, 0);
  int adds, mm_c;
  count(node(o), &adds, &mm_c);
  CHECK_MSG(adds == 0 && mm_c == 1, "%s: %d adds, %d products with c", what, adds, mm_c);
  CHECK_OK(mlx_array_eval(o));
  unsigned long got = gemv_delta();
  CHECK_MSG(got == (gemv ? 1u : 0u), "%s: %lu GEMV launches compiled", what, got);
  CHECK_OK(mlx_closure_apply(&ref, f, in));
  mlx_array e = test_vec_get(ref, 0);
  CHECK_OK(mlx_array_eval(e));
  CHECK_MSG(test_same_bits(o, e), "%s: compiled differs from uncompiled", what);
  /* and against the CPU, loosely (the sums' order differs) */
  mlx_array m = mlx_array_new(), c = mlx_array_new();
  CHECK_OK(mlx_matmul(&m, x, w, test_stream()));
  CHECK_OK(mlx_add(&c, m, r, test_stream()));
  /* float32: sums of K terms in another order (test_gpu_gemv's bound);
   * halves: a rounding of the product and one of the sum */
  double tol = t == MLX_FLOAT32 ? 2e-6 * sqrt((double)K) + 1e-6 : 2 * gpu_rtol(t);
  CHECK_SAME(o, c, tol, tol, what);
  mlx_array_free(o), mlx_array_free(e), mlx_array_free(m), mlx_array_free(c);
  mlx_vector_array_free(in), mlx_vector_array_free(out), mlx_vector_array_free(ref);
  mlx_closure_free(cf), mlx_closure_free(f);
  mlx_array_free(x), mlx_array_free(w0), mlx_array_free(w), mlx_array_free(r);
}

static void test_cases(void) {
  static const mlx_dtype types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16};
  for (int t = 0; t < 3; t++)
    for (int tb = 0; tb < 2; tb++) {
      residual_case(types[t], 0, 1, 256, 136, tb, R_PLAIN, true);
      residual_case(types[t], 0, 3, 256, 136, tb, R_PLAIN, true);
      residual_case(types[t], 3, 1, 256, 136, tb, R_PLAIN, true);  /* batches of one row */
      residual_case(types[t], 0, 1, 5632, 2048, tb, R_PLAIN, true); /* k split */
      residual_case(types[t], 0, 4, 256, 136, tb, R_TRANSPOSED, true);
      residual_case(types[t], 0, 5, 256, 136, tb, R_ROW, true);
      residual_case(types[t], 0, 16, 256, 136, tb, R_PLAIN, false); /* cuBLAS */
    }
}

/* With graphs on: the second call replays the first's graph. */
static void test_graph_replay(void) {
  lc_gpu_graphs_set(1);
  int xs[2] = {1, 2048}, ws[2] = {2048, 2048};
  mlx_array x = gpu_rand(xs, 2, MLX_BFLOAT16, -1, 1), w = gpu_rand(ws, 2, MLX_BFLOAT16, -1, 1);
  mlx_array r = gpu_rand(xs, 2, MLX_BFLOAT16, -1, 1);
  mlx_closure f = mlx_closure_new_func_payload(residual, NULL, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  mlx_array a[3] = {x, w, r};
  mlx_vector_array in = mlx_vector_array_new_data(a, 3);
  mlx_array o[3];
  for (int i = 0; i < 3; i++) {
    mlx_vector_array out = mlx_vector_array_new();
    CHECK_OK(mlx_closure_apply(&out, i < 2 ? cf : f, in));
    o[i] = test_vec_get(out, 0);
    CHECK_OK(mlx_array_eval(o[i]));
    mlx_vector_array_free(out);
  }
  CHECK_MSG(test_same_bits(o[0], o[2]) && test_same_bits(o[1], o[2]), "graph replay differs");
  for (int i = 0; i < 3; i++) mlx_array_free(o[i]);
  mlx_vector_array_free(in);
  mlx_closure_free(cf), mlx_closure_free(f);
  mlx_array_free(x), mlx_array_free(w), mlx_array_free(r);
  lc_gpu_graphs_set(0);
}

/* (x W_0, ..., x W_{n-1}) on the GPU stream; payload: n */
static int products(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  int np = *(const int *)payload, rc = 0;
  mlx_array x = test_vec_get(in, 0), o[4];
  for (int k = 0; k < np; k++) {
    mlx_array w = test_vec_get(in, 1 + (size_t)k);
    o[k] = mlx_array_new();
    if (!rc) rc = mlx_matmul(&o[k], x, w, gpu_stream);
    mlx_array_free(w);
  }
  mlx_array_free(x);
  if (!rc) rc = mlx_vector_array_set_data(res, o, (size_t)np);
  for (int k = 0; k < np; k++) mlx_array_free(o[k]);
  return rc;
}

/* launches: the GEMV launches expected (1: one grouped launch; 0: one, or
 * one per product where their k slices differ, which depends on the dtype
 * and the GPU's SMs) */
static void group_case(mlx_dtype t, int rows, int K, const int *widths, int np, bool tb,
                       unsigned long launches) {
  mlx_array a[5], w0[4];
  int xs[2] = {rows, K};
  a[0] = gpu_rand(xs, 2, t, -1, 1);
  for (int k = 0; k < np; k++) {
    int ws[2] = {tb ? widths[k] : K, tb ? K : widths[k]};
    w0[k] = gpu_rand(ws, 2, t, -1, 1);
    a[1 + k] = mlx_array_new();
    CHECK_OK(tb ? mlx_transpose(&a[1 + k], w0[k], test_stream()) : mlx_array_set(&a[1 + k], w0[k]));
  }
  char what[128];
  snprintf(what, sizeof what, "group dtype %d rows %d K %d np %d tb %d", (int)t, rows, K, np, tb);
  mlx_closure f = mlx_closure_new_func_payload(products, &np, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  mlx_vector_array in = mlx_vector_array_new_data(a, (size_t)(1 + np));
  mlx_vector_array out = mlx_vector_array_new(), ref = mlx_vector_array_new();
  gemv_delta();
  CHECK_OK(mlx_closure_apply(&out, cf, in));
  mlx_array o0 = test_vec_get(out, 0);
  struct lc_node *tg = node(o0);
  bool grouped = tg->op == LC_OP_TUPLE_GET && tg->in[0]->op == LC_OP_MATMUL_GROUP;
  CHECK_MSG(grouped, "%s: not one group", what);
  for (size_t k = 0; k < (size_t)np; k++) {
    mlx_array o = test_vec_get(out, k);
    CHECK_OK(mlx_array_eval(o));
    mlx_array_free(o);
  }
  unsigned long got = gemv_delta();
  /* with LACE_CUDA_GEMV_CLUSTER=1 a product split over k sums its slices
   * in a cluster, which a group does not do: then each launches alone */
  const char *cl = getenv("LACE_CUDA_GEMV_CLUSTER");
  bool alone_ok = !launches || (cl && !strcmp(cl, "1"));
  CHECK_MSG((launches && got == launches) || (alone_ok && (got == 1 || got == (unsigned long)np)),
            "%s: %lu GEMV launches, not %lu", what, got, launches);
  CHECK_OK(mlx_closure_apply(&ref, f, in));
  for (size_t k = 0; k < (size_t)np; k++) {
    mlx_array o = test_vec_get(out, k), e = test_vec_get(ref, k);
    CHECK_MSG(test_same_bits(o, e), "%s: product %zu differs from uncompiled", what, k);
    mlx_array_free(o), mlx_array_free(e);
  }
  mlx_array_free(o0);
  mlx_vector_array_free(in), mlx_vector_array_free(out), mlx_vector_array_free(ref);
  mlx_closure_free(cf), mlx_closure_free(f);
  for (int k = 0; k < np; k++) mlx_array_free(w0[k]);
  for (int k = 0; k < 1 + np; k++) mlx_array_free(a[k]);
}

static void test_groups(void) {
  static const mlx_dtype types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16};
  setenv("LACE_GROUP_PRODUCTS", "1", 1); /* opt-in for now */
  static const int qkv[] = {2048, 512, 512}, mlp[] = {5632, 5632}, odd[] = {136, 8, 64, 24};
  for (int t = 0; t < 3; t++) {
    /* k split: where q's slices are not k's and v's, one launch each (a
     * group computes each product as it would alone, bit for bit) */
    group_case(types[t], 1, 2048, qkv, 3, false, 0);
    group_case(types[t], 1, 2048, mlp, 2, false, 1); /* same slices: grouped */
    group_case(types[t], 3, 256, odd, 4, false, 1);
    group_case(types[t], 1, 256, odd, 3, true, 3); /* one product at a time */
  }
}

int main(void) {
  if (!gpu_test_init()) return TEST_SKIP;
  lc_gpu_graphs_set(0); /* every product runs its evaluator (the launch counter) */
  test_seed(20261206);
  size_t base = test_active_memory();
  test_cases();
  test_graph_replay();
  test_groups();
  return gpu_test_done(base);
}
