/* Transforms through linalg: vmap of every primitive (batch axis at the
 * front, in the middle, or among the matrix dimensions) against a loop;
 * gradients of the compositions built only from differentiable ops (norms
 * other than 2 / -2 / nuc, cross) against finite differences; a reported
 * error, as in MLX, when differentiating through a factorisation. */
#include "la_test.h"

#include "../transforms/tx_check.h"

/* ctx: which output of the op (for multi-output functions). */
#define K(ctx) ((int)(intptr_t)(ctx))

static int pick(mlx_vector_array v, int k, mlx_array *out, int rc) {
  if (!rc) rc = mlx_vector_array_get(out, v, (size_t)k);
  mlx_vector_array_free(v);
  return rc;
}

/* x + 3 I (well conditioned for the random x used here). */
static int shifted(mlx_array *o, mlx_array x) {
  int n = mlx_array_shape(x)[mlx_array_ndim(x) - 1];
  mlx_array e = mlx_array_new(), three = mlx_array_new_double(3.0);
  int rc = mlx_eye(&e, n, n, 0, MLX_FLOAT64, test_stream()) ||
           mlx_multiply(&e, e, three, test_stream()) || mlx_add(o, x, e, test_stream());
  mlx_array_free(e), mlx_array_free(three);
  return rc;
}
static int f_inv(mlx_array *o, const mlx_array *in, int n, void *c) {
  (void)n, (void)c;
  mlx_array x = mlx_array_new();
  int rc = shifted(&x, in[0]) || mlx_linalg_inv(o, x, test_stream());
  mlx_array_free(x);
  return rc;
}
static int f_inv_plain(mlx_array *o, const mlx_array *in, int n, void *c) {
  (void)n, (void)c;
  return mlx_linalg_inv(o, in[0], test_stream());
}
static int f_tri_inv(mlx_array *o, const mlx_array *in, int n, void *c) {
  (void)n;
  mlx_array x = mlx_array_new();
  int rc = shifted(&x, in[0]) || mlx_linalg_tri_inv(o, x, K(c), test_stream());
  mlx_array_free(x);
  return rc;
}
static int f_cholesky(mlx_array *o, const mlx_array *in, int n, void *c) {
  (void)n;
  mlx_array g = mlx_array_new(), t = mlx_array_new(), m = mlx_array_new();
  int rc = mlx_swapaxes(&t, in[0], -1, -2, test_stream()) || /* A A^T + 3 I */
           mlx_matmul(&g, in[0], t, test_stream()) || shifted(&m, g) ||
           mlx_linalg_cholesky(o, m, K(c), test_stream());
  mlx_array_free(g), mlx_array_free(t), mlx_array_free(m);
  return rc;
}
static int f_qr(mlx_array *o, const mlx_array *in, int n, void *c) {
  (void)n;
  mlx_array q = mlx_array_new(), r = mlx_array_new();
  int rc = mlx_linalg_qr(&q, &r, in[0], test_stream());
  if (!rc) rc = mlx_array_set(o, K(c) ? r : q);
  mlx_array_free(q), mlx_array_free(r);
  return rc;
}
static int f_svd(mlx_array *o, const mlx_array *in, int n, void *c) {
  (void)n;
  mlx_vector_array v = mlx_vector_array_new();
  int k = K(c);
  return pick(v, k < 3 ? k : 0, o, mlx_linalg_svd(&v, in[0], k < 3, test_stream()));
}
static int f_lu(mlx_array *o, const mlx_array *in, int n, void *c) {
  (void)n;
  mlx_vector_array v = mlx_vector_array_new();
  return pick(v, K(c), o, mlx_linalg_lu(&v, in[0], test_stream()));
}
static int f_eig(mlx_array *o, const mlx_array *in, int n, void *c) {
  (void)n;
  mlx_array w = mlx_array_new(), v = mlx_array_new();
  int rc = K(c) == 2 ? mlx_linalg_eigvals(&w, in[0], test_stream())
                     : mlx_linalg_eig(&w, &v, in[0], test_stream());
  mlx_array re = mlx_array_new();
  if (!rc) rc = mlx_real(&re, K(c) == 1 ? v : w, test_stream()); /* tx_check reads reals */
  if (!rc) rc = mlx_array_set(o, re);
  mlx_array_free(w), mlx_array_free(v), mlx_array_free(re);
  return rc;
}
static int f_eigh(mlx_array *o, const mlx_array *in, int n, void *c) {
  (void)n;
  mlx_array w = mlx_array_new(), v = mlx_array_new();
  int rc = K(c) == 2 ? mlx_linalg_eigvalsh(&w, in[0], "U", test_stream())
                     : mlx_linalg_eigh(&w, &v, in[0], "L", test_stream());
  if (!rc) rc = mlx_array_set(o, K(c) == 1 ? v : w);
  mlx_array_free(w), mlx_array_free(v);
  return rc;
}
static int f_solve(mlx_array *o, const mlx_array *in, int n, void *c) {
  (void)n, (void)c;
  return mlx_linalg_solve(o, in[0], in[1], test_stream());
}

static void check_vmaps(void) {
  struct {
    const char *name;
    tx_fn f;
    int k;
    int m, n;
  } fs[] = {{"inv", f_inv, 0, 4, 4},           {"tri_inv lower", f_tri_inv, 0, 4, 4},
            {"tri_inv upper", f_tri_inv, 1, 4, 4}, {"cholesky", f_cholesky, 0, 4, 4},
            {"cholesky upper", f_cholesky, 1, 4, 4}, {"qr Q", f_qr, 0, 5, 3},
            {"qr R", f_qr, 1, 5, 3},           {"svd U", f_svd, 0, 3, 4},
            {"svd S", f_svd, 1, 3, 4},         {"svd Vt", f_svd, 2, 3, 4},
            {"svd values", f_svd, 3, 4, 3},    {"lu P", f_lu, 0, 4, 4},
            {"lu L", f_lu, 1, 4, 3},           {"lu U", f_lu, 2, 3, 4},
            {"eig w", f_eig, 0, 4, 4},         {"eig v", f_eig, 1, 4, 4},
            {"eigvals", f_eig, 2, 4, 4},       {"eigh w", f_eigh, 0, 4, 4},
            {"eigh v", f_eigh, 1, 4, 4},       {"eigvalsh", f_eigh, 2, 4, 4}};
  for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++)
    for (int ax = 0; ax < 3; ax++) { /* batch axis 0, 1 (a matrix row axis) or 2 */
      int shape[2] = {fs[i].m, fs[i].n};
      mlx_array x = tx_rand_batched(shape, 2, ax, 3, -1, 1);
      char nm[64];
      snprintf(nm, sizeof nm, "vmap %s axis %d", fs[i].name, ax);
      tx_check_vmap(nm, fs[i].f, (void *)(intptr_t)fs[i].k, 1, &x, &ax, 1e-9);
      mlx_array_free(x);
    }
  /* solve: a batched, b batched or not */
  int sa[2] = {3, 3}, sb[1] = {3};
  for (int ax = 0; ax < 2; ax++) {
    mlx_array in[2] = {tx_rand_batched(sa, 2, 0, 4, -1, 1), tx_rand_batched(sb, 1, ax ? -1 : 0, 4, -1, 1)};
    int axes[2] = {0, ax ? -1 : 0};
    tx_check_vmap("vmap solve", f_solve, NULL, 2, in, axes, 1e-8);
    mlx_array_free(in[0]), mlx_array_free(in[1]);
  }
}

struct norm_ctx {
  int kind; /* 0 numeric ord, 1 "fro", 2 l2, 3 cross */
  double ord;
  int naxes, axes[2], keepdims;
};

static int f_norm(mlx_array *o, const mlx_array *in, int n, void *c) {
  (void)n;
  const struct norm_ctx *k = c;
  const int *ax = k->naxes ? k->axes : NULL;
  mlx_stream s = test_stream();
  switch (k->kind) {
  case 0: return mlx_linalg_norm(o, in[0], k->ord, ax, (size_t)k->naxes, k->keepdims, s);
  case 1: return mlx_linalg_norm_matrix(o, in[0], "fro", ax, (size_t)k->naxes, k->keepdims, s);
  case 2: return mlx_linalg_norm_l2(o, in[0], ax, (size_t)k->naxes, k->keepdims, s);
  default: return mlx_linalg_cross(o, in[0], in[1], k->axes[0], s);
  }
}

static void check_grads(void) {
  int s34[2] = {3, 4}, s43[2] = {4, 3};
  struct norm_ctx cs[] = {{0, 1.0, 1, {1, 0}, 0},  {0, 3.0, 1, {0, 0}, 1},
                          {0, 2.0, 1, {-1, 0}, 0}, {0, INFINITY, 1, {1, 0}, 0},
                          {0, 1.0, 2, {0, 1}, 0},  {0, -INFINITY, 2, {1, 0}, 1},
                          {1, 0, 2, {0, 1}, 0},    {2, 0, 0, {0, 0}, 0},
                          {2, 0, 1, {0, 0}, 1}};
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    mlx_array x = tx_rand(s34, 2, 0.2, 1);
    char nm[48];
    snprintf(nm, sizeof nm, "grad norm case %zu", i);
    tx_check_grad(nm, f_norm, &cs[i], 1, &x, 1e-5);
    mlx_array_free(x);
  }
  struct norm_ctx cr = {3, 0, 0, {1, 0}, 0};
  mlx_array in[2] = {tx_rand(s43, 2, -1, 1), tx_rand(s43, 2, -1, 1)};
  tx_check_grad("grad cross", f_norm, &cr, 2, in, 1e-6);
  mlx_array_free(in[0]), mlx_array_free(in[1]);

  /* no derivative for the factorisations (as MLX): a report, not a crash */
  int s33[2] = {3, 3};
  mlx_array x = tx_rand(s33, 2, -1, 1);
  mlx_closure cls = tx_closure(f_inv_plain, NULL);
  mlx_vector_array prim = mlx_vector_array_new_data(&x, 1), cot = mlx_vector_array_new_data(&x, 1);
  mlx_vector_array r0 = mlx_vector_array_new(), r1 = mlx_vector_array_new();
  CHECK_FAILS(mlx_vjp(&r0, &r1, cls, prim, cot), "inverse operation has no vjp rule");
  mlx_vector_array_free(prim), mlx_vector_array_free(cot), mlx_vector_array_free(r0);
  mlx_vector_array_free(r1), mlx_closure_free(cls), mlx_array_free(x);
}

int main(void) {
  test_init();
  test_seed(5);
  check_vmaps();
  check_grads();
  return test_done();
}
