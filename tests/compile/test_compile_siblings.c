/* Sibling fusion (compile/fuse.c): elementwise regions of one shape that
 * read a common input and depend on each other in neither direction
 * become one fused kernel with several outputs, so the input is read once:
 *   - x * y and x + y: one FUSED node behind both outputs;
 *   - rope's two outputs from x, y and broadcast rows c, s: one FUSED node;
 *   - a region that depends on another through an unfusable op (a sort)
 *     stays apart, as does a row region beside an elementwise one;
 * and every compiled result equals the uncompiled one bit for bit, at two
 * shapes (the second call replays the cached program). */
#include <string.h>

#include "compile_util.h"
#include "ops/prim.h"
#include "ops/tuple.h"

static mlx_stream cpu;


/* The distinct nodes of op reachable from a or b. */
static int count_op(struct lc_node *a, struct lc_node *b, int op) {
  struct lc_node *stack[512], *seen[512];
  int top = 0, nseen = 0, found = 0;
  stack[top++] = a;
  stack[top++] = b;
  while (top) {
    struct lc_node *n = stack[--top];
    bool dup = false;
    for (int i = 0; i < nseen; i++) dup |= seen[i] == n;
    if (dup || nseen == 512) continue;
    seen[nseen++] = n;
    found += n->op == op;
    for (int k = 0; k < n->nin && top < 512; k++) stack[top++] = n->in[k];
  }
  return found;
}



/* (x * y, x + y) */
static int two_out(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  (void)payload;
  mlx_array x = test_vec_get(in, 0), y = test_vec_get(in, 1), o[2] = {mlx_array_new(), mlx_array_new()};
  int rc = mlx_multiply(&o[0], x, y, cpu) || mlx_add(&o[1], x, y, cpu);
  mlx_array_free(x), mlx_array_free(y);
  return rc || test_vec_put(res, o, 2);
}

/* (x c - y s, x s + y c), c and s one row broadcast over x's rows */
static int rope(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  (void)payload;
  mlx_array x = test_vec_get(in, 0), y = test_vec_get(in, 1), c = test_vec_get(in, 2), s = test_vec_get(in, 3);
  mlx_array t[4] = {mlx_array_new(), mlx_array_new(), mlx_array_new(), mlx_array_new()};
  mlx_array o[2] = {mlx_array_new(), mlx_array_new()};
  int rc = mlx_multiply(&t[0], x, c, cpu) || mlx_multiply(&t[1], y, s, cpu) ||
           mlx_subtract(&o[0], t[0], t[1], cpu) || mlx_multiply(&t[2], x, s, cpu) ||
           mlx_multiply(&t[3], y, c, cpu) || mlx_add(&o[1], t[2], t[3], cpu);
  for (int k = 0; k < 4; k++) mlx_array_free(t[k]);
  mlx_array_free(x), mlx_array_free(y), mlx_array_free(c), mlx_array_free(s);
  return rc || test_vec_put(res, o, 2);
}

/* a = exp(x) * 2; b = (x + sort(a)) * 3: b's region depends on a's
 * through the sort, so merging them would make a cycle. Outputs (a, b). */
static int through_sort(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  (void)payload;
  mlx_array x = test_vec_get(in, 0), two = mlx_array_new_float(2), three = mlx_array_new_float(3);
  mlx_array e = mlx_array_new(), s = mlx_array_new(), u = mlx_array_new();
  mlx_array o[2] = {mlx_array_new(), mlx_array_new()};
  int rc = mlx_exp(&e, x, cpu) || mlx_multiply(&o[0], e, two, cpu) ||
           mlx_sort_axis(&s, o[0], -1, cpu) || mlx_add(&u, x, s, cpu) ||
           mlx_multiply(&o[1], u, three, cpu);
  mlx_array_free(x), mlx_array_free(two), mlx_array_free(three);
  mlx_array_free(e), mlx_array_free(s), mlx_array_free(u);
  return rc || test_vec_put(res, o, 2);
}

/* (exp(x) * 2, x - max(x) over rows): the second is a row region, which
 * stays apart from the elementwise one. */
static int with_row(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  (void)payload;
  mlx_array x = test_vec_get(in, 0), two = mlx_array_new_float(2), e = mlx_array_new(), m = mlx_array_new();
  mlx_array o[2] = {mlx_array_new(), mlx_array_new()};
  int rc = mlx_exp(&e, x, cpu) || mlx_multiply(&o[0], e, two, cpu) ||
           mlx_max_axis(&m, x, -1, true, cpu) || mlx_subtract(&o[1], x, m, cpu);
  mlx_array_free(x), mlx_array_free(two), mlx_array_free(e), mlx_array_free(m);
  return rc || test_vec_put(res, o, 2);
}

/* Applies f compiled and not to args at shape rows x cols (extra args one
 * row each); checks the outputs agree and returns the FUSED nodes behind
 * each compiled output and whether both outputs share their FUSED node. */
static void run(const char *what, int (*fn)(mlx_vector_array *, const mlx_vector_array, void *),
                int nfull, int nrow, int want_fused, bool want_shared) {
  mlx_closure f = mlx_closure_new_func_payload(fn, NULL, NULL), cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  static const int shapes[2][2] = {{6, 40}, {3, 17}};
  for (int sh = 0; sh < 2; sh++) {
    mlx_array a[4];
    int full[2] = {shapes[sh][0], shapes[sh][1]}, row[1] = {shapes[sh][1]};
    for (int k = 0; k < nfull; k++) a[k] = test_rand_f32(full, 2, -2, 2);
    for (int k = 0; k < nrow; k++) a[nfull + k] = test_rand_f32(row, 1, -1, 1);
    mlx_vector_array in = mlx_vector_array_new_data(a, (size_t)(nfull + nrow));
    mlx_vector_array out = mlx_vector_array_new(), ref = mlx_vector_array_new();
    CHECK_OK(mlx_closure_apply(&out, cf, in));
    CHECK_OK(mlx_closure_apply(&ref, f, in));
    CHECK_MSG(mlx_vector_array_size(out) == 2, "%s: %zu outputs", what, mlx_vector_array_size(out));
    if (mlx_vector_array_size(out) == 2) {
      mlx_array o0 = test_vec_get(out, 0), o1 = test_vec_get(out, 1), e0 = test_vec_get(ref, 0), e1 = test_vec_get(ref, 1);
      /* the structure, before evaluation replaces it */
      struct lc_node *f0 = node(o0)->op == LC_OP_TUPLE_GET ? node(o0)->in[0] : node(o0);
      struct lc_node *f1 = node(o1)->op == LC_OP_TUPLE_GET ? node(o1)->in[0] : node(o1);
      bool shared = f0 == f1 && f0->op == LC_OP_FUSED;
      int fused = count_op(node(o0), node(o1), LC_OP_FUSED);
      CHECK_MSG(shared == want_shared, "%s shape %d: outputs %s one fused node", what, sh,
                shared ? "share" : "do not share");
      CHECK_MSG(fused == want_fused, "%s shape %d: %d fused nodes, want %d", what, sh, fused,
                want_fused);
      CHECK_MSG(test_same_bits(o0, e0) && test_same_bits(o1, e1), "%s shape %d: compiled differs", what, sh);
      mlx_array_free(o0), mlx_array_free(o1), mlx_array_free(e0), mlx_array_free(e1);
    }
    mlx_vector_array_free(in), mlx_vector_array_free(out), mlx_vector_array_free(ref);
    for (int k = 0; k < nfull + nrow; k++) mlx_array_free(a[k]);
  }
  mlx_closure_free(cf);
  mlx_closure_free(f);
}

int main(void) {
  test_init();
  cpu = mlx_default_cpu_stream_new();
  run("x*y, x+y", two_out, 2, 0, 1, true);
  run("rope", rope, 2, 2, 1, true);
  run("through a sort", through_sort, 1, 0, 2, false);
  run("a row region beside", with_row, 1, 0, 2, false);
  mlx_stream_free(cpu);
  return test_done();
}
