/* vjp, jvp and vmap rules of the shape family (reshape, transpose, slice,
 * as_strided, diagonal, contiguous, concatenate, remap, diag) and of the
 * public ops built on them (pad, tile, repeat, roll, split, squeeze,
 * expand_dims, moveaxis, swapaxes, flatten, stack), on random shapes with
 * size-1 axes, negative axes and non-contiguous inputs. */
#include "tx_check.h"

#define S test_stream()

/* Parameters of the functions under test. */
struct shp {
  int nd, sh[6], a[6], b[6], c[6];
  int64_t st[6];
  int axis, k, n;
  const char *mode;
};

static int f_reshape(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct shp *p = ctx;
  (void)n;
  return mlx_reshape(out, in[0], p->sh, (size_t)p->nd, S);
}

static int f_transpose(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct shp *p = ctx;
  (void)n;
  return mlx_transpose_axes(out, in[0], p->a, (size_t)p->nd, S);
}

static int f_slice(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct shp *p = ctx;
  (void)n;
  size_t nd = mlx_array_ndim(in[0]);
  return mlx_slice(out, in[0], p->a, nd, p->b, nd, p->c, nd, S);
}

static int f_as_strided(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct shp *p = ctx;
  (void)n;
  return mlx_as_strided(out, in[0], p->sh, (size_t)p->nd, p->st, (size_t)p->nd, (size_t)p->k, S);
}

static int f_diagonal(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct shp *p = ctx;
  (void)n;
  return mlx_diagonal(out, in[0], p->k, p->a[0], p->a[1], S);
}

static int f_contiguous(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  mlx_array t = mlx_array_new();
  int rc = mlx_transpose(&t, in[0], S) || mlx_contiguous(out, t, false, S);
  mlx_array_free(t);
  return rc;
}

static int f_concat(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct shp *p = ctx;
  mlx_vector_array v = mlx_vector_array_new_data(in, (size_t)n);
  int rc = mlx_concatenate_axis(out, v, p->axis, S);
  mlx_vector_array_free(v);
  return rc;
}

static int f_stack(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct shp *p = ctx;
  mlx_vector_array v = mlx_vector_array_new_data(in, (size_t)n);
  int rc = mlx_stack_axis(out, v, p->axis, S);
  mlx_vector_array_free(v);
  return rc;
}

/* pad along axes a (low b, high c); the pad value is in[1] when given */
static int f_pad(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct shp *p = ctx;
  mlx_array v = n > 1 ? in[1] : mlx_array_new_float64(0.5);
  int rc = mlx_pad(out, in[0], p->a, (size_t)p->n, p->b, (size_t)p->n, p->c, (size_t)p->n, v,
                   p->mode, S);
  if (n == 1) mlx_array_free(v);
  return rc;
}

static int f_tile(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct shp *p = ctx;
  (void)n;
  return mlx_tile(out, in[0], p->a, (size_t)p->n, S);
}

static int f_repeat(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct shp *p = ctx;
  (void)n;
  return mlx_repeat_axis(out, in[0], p->k, p->axis, S);
}

static int f_roll(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct shp *p = ctx;
  (void)n;
  return mlx_roll_axes(out, in[0], p->b, (size_t)p->n, p->a, (size_t)p->n, S);
}

/* split into k pieces along axis, put back together in reverse order */
static int f_split(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct shp *p = ctx;
  (void)n;
  mlx_vector_array parts = mlx_vector_array_new(), rev = mlx_vector_array_new();
  int rc = mlx_split(&parts, in[0], p->k, p->axis, S);
  for (size_t i = mlx_vector_array_size(parts); !rc && i-- > 0;) {
    mlx_array x = mlx_array_new();
    rc = mlx_vector_array_get(&x, parts, i) || mlx_vector_array_append_value(rev, x);
    mlx_array_free(x);
  }
  if (!rc) rc = mlx_concatenate_axis(out, rev, p->axis, S);
  mlx_vector_array_free(parts);
  mlx_vector_array_free(rev);
  return rc;
}

/* one piece of split_sections at the points in a[0..n) */
static int f_split_piece(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct shp *p = ctx;
  (void)n;
  mlx_vector_array parts = mlx_vector_array_new();
  int rc = mlx_split_sections(&parts, in[0], p->a, (size_t)p->n, p->axis, S) ||
           mlx_vector_array_get(out, parts, (size_t)p->k);
  mlx_vector_array_free(parts);
  return rc;
}

/* squeeze axis a[0], then expand_dims at a[1], moveaxis b[0] -> b[1],
 * swapaxes c[0], c[1], flatten, unflatten */
static int f_views(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct shp *p = ctx;
  (void)n;
  mlx_array t[5];
  for (int i = 0; i < 5; i++) t[i] = mlx_array_new();
  int rc = mlx_squeeze_axis(&t[0], in[0], p->a[0], S) || mlx_expand_dims(&t[1], t[0], p->a[1], S) ||
           mlx_moveaxis(&t[2], t[1], p->b[0], p->b[1], S) ||
           mlx_swapaxes(&t[3], t[2], p->c[0], p->c[1], S) || mlx_flatten(&t[4], t[3], 1, -1, S);
  if (!rc) {
    int sh[2] = {-1, p->k};
    rc = mlx_unflatten(out, t[4], 1, sh, 2, S);
  }
  for (int i = 0; i < 5; i++) mlx_array_free(t[i]);
  return rc;
}

static int f_diag(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct shp *p = ctx;
  (void)n;
  return mlx_diag(out, in[0], p->k, S);
}

/* ---- inputs ---- */

static int rdim(void) { return test_randint(0, 3) == 0 ? 1 : test_randint(2, 5); }


/* A float64 array of shape sh, reversed along axis 0 (negative stride). */
static mlx_array rand_reversed(const int *sh, int nd) {
  mlx_array x = tx_rand(sh, nd, -1, 1), t = mlx_array_new();
  int start[6], stop[6], step[6];
  for (int i = 0; i < nd; i++) {
    start[i] = i ? 0 : -1;
    stop[i] = i ? sh[i] : -sh[0] - 1;
    step[i] = i ? 1 : -1;
  }
  mlx_slice(&t, x, start, (size_t)nd, stop, (size_t)nd, step, (size_t)nd, S);
  mlx_array_free(x);
  return t;
}


static void free_all(mlx_array *x, int n) {
  for (int i = 0; i < n; i++) mlx_array_free(x[i]);
}

/* grad checks on x (any layout) and vmap checks over a batch at axes 0
 * and 1 of a fresh input of x's shape. */
static void check_unary(const char *name, tx_fn f, struct shp *p, const int *sh, int nd) {
  char buf[96];
  mlx_array xs[3] = {tx_rand_layout(sh, nd, 1, -1, 1), rand_reversed(sh, nd), tx_rand(sh, nd, -1, 1)};
  for (int i = 0; i < 3; i++) {
    snprintf(buf, sizeof buf, "%s (layout %d)", name, i);
    tx_check_grad(buf, f, p, 1, &xs[i], 1e-6);
  }
  free_all(xs, 3);
  for (int ax = 0; ax <= (nd > 0 ? 1 : 0); ax++) {
    mlx_array xb = tx_rand_batched(sh, nd, ax, 3, -1, 1);
    snprintf(buf, sizeof buf, "%s vmap axis %d", name, ax);
    tx_check_vmap(buf, f, p, 1, &xb, &ax, 1e-12);
    mlx_array_free(xb);
  }
}

static void test_reshape_transpose(void) {
  for (int it = 0; it < 4; it++) {
    struct shp p = {0};
    int sh[4] = {rdim(), rdim(), rdim(), rdim()}, nd = 3 + it % 2;
    int total = 1;
    for (int i = 0; i < nd; i++) total *= sh[i];
    p.nd = 2;
    p.sh[0] = sh[0];
    p.sh[1] = -1;
    check_unary("reshape", f_reshape, &p, sh, nd);
    p.nd = 1;
    p.sh[0] = total;
    check_unary("reshape flat", f_reshape, &p, sh, nd);
    p.nd = nd;
    for (int i = 0; i < nd; i++) p.a[i] = i;
    for (int i = nd - 1; i > 0; i--) { /* random permutation, some entries negative */
      int j = test_randint(0, i), t = p.a[i];
      p.a[i] = p.a[j];
      p.a[j] = t;
    }
    p.a[0] -= nd;
    check_unary("transpose", f_transpose, &p, sh, nd);
  }
}

static void test_slice(void) {
  for (int it = 0; it < 6; it++) {
    struct shp p = {0};
    int nd = 2 + it % 2, sh[3];
    for (int i = 0; i < nd; i++) {
      sh[i] = test_randint(1, 6);
      int step = test_randint(1, 3) * (test_randint(0, 1) ? -1 : 1);
      p.c[i] = step;
      if (step > 0) {
        p.a[i] = test_randint(0, sh[i] - 1);
        p.b[i] = test_randint(p.a[i] + 1, sh[i] + 2); /* past the end clamps */
      } else {
        p.a[i] = test_randint(-1, sh[i] - 1); /* -1: from the last */
        p.b[i] = -sh[i] - 3;                 /* before the start clamps */
      }
    }
    check_unary("slice", f_slice, &p, sh, nd);
  }
  /* an empty slice: zero cotangent */
  struct shp p = {.a = {2, 0}, .b = {1, 3}, .c = {1, 1}};
  int sh[2] = {4, 3};
  mlx_array x = tx_rand(sh, 2, -1, 1);
  tx_check_grad("empty slice", f_slice, &p, 1, &x, 1e-6);
  mlx_array_free(x);
}

static void test_as_strided(void) {
  /* overlapping sliding windows of the flat input: elements read several
   * times accumulate */
  int sh[2] = {3, 4};
  struct shp p = {.nd = 2, .sh = {5, 4}, .st = {2, 1}, .k = 0};
  check_unary("as_strided windows", f_as_strided, &p, sh, 2);
  struct shp q = {.nd = 3, .sh = {2, 3, 2}, .st = {-1, 4, 0}, .k = 2};
  check_unary("as_strided negative and zero strides", f_as_strided, &q, sh, 2);
}

static void test_diagonal(void) {
  int sh[3] = {3, 4, 5};
  struct shp p = {.k = 1, .a = {0, -1}};
  check_unary("diagonal", f_diagonal, &p, sh, 3);
  struct shp q = {.k = -2, .a = {2, 1}};
  check_unary("diagonal axes reversed", f_diagonal, &q, sh, 3);
  struct shp e = {.k = 7, .a = {1, 2}}; /* empty diagonal */
  check_unary("diagonal empty", f_diagonal, &e, sh, 3);
  int s2[2] = {4, 1};
  struct shp r = {.k = 0, .a = {0, 1}};
  check_unary("diagonal size-1", f_diagonal, &r, s2, 2);
  int v[1] = {3};
  for (int k = -2; k <= 2; k += 2) {
    struct shp d = {.k = k};
    check_unary("diag of vector", f_diag, &d, v, 1);
    check_unary("diag of matrix", f_diag, &d, sh, 2);
  }
}

static void test_contiguous(void) {
  int sh[3] = {2, 1, 4};
  struct shp p = {0};
  check_unary("contiguous", f_contiguous, &p, sh, 3);
}

static void test_concat_stack(void) {
  for (int it = 0; it < 3; it++) {
    struct shp p = {0};
    int nd = 3, ax = test_randint(0, nd - 1);
    p.axis = ax - (it == 1 ? nd : 0); /* a negative axis once */
    int sh[3][3];
    for (int k = 0; k < 3; k++)
      for (int d = 0; d < nd; d++) sh[k][d] = d == ax ? test_randint(1, 3) : (k ? sh[0][d] : rdim());
    mlx_array x[3] = {tx_rand_layout(sh[0], nd, 1, -1, 1), rand_reversed(sh[1], nd), tx_rand(sh[2], nd, -1, 1)};
    tx_check_grad("concatenate", f_concat, &p, 3, x, 1e-6);
    free_all(x, 3);
    /* vmap: input 0 batched at 0, input 1 at 1, input 2 unbatched */
    mlx_array xb[3] = {tx_rand_batched(sh[0], nd, 0, 2, -1, 1), tx_rand_batched(sh[1], nd, 1, 2, -1, 1),
                       tx_rand(sh[2], nd, -1, 1)};
    int axes[3] = {0, 1, -1};
    tx_check_vmap("concatenate vmap", f_concat, &p, 3, xb, axes, 1e-12);
    free_all(xb, 3);
  }
  int sh[2] = {3, 1};
  struct shp p = {.axis = -1};
  mlx_array x[2] = {tx_rand_layout(sh, 2, 1, -1, 1), tx_rand(sh, 2, -1, 1)};
  tx_check_grad("stack", f_stack, &p, 2, x, 1e-6);
  free_all(x, 2);
  mlx_array xb[2] = {tx_rand_batched(sh, 2, 1, 3, -1, 1), tx_rand(sh, 2, -1, 1)};
  int axes[2] = {1, -1};
  tx_check_vmap("stack vmap", f_stack, &p, 2, xb, axes, 1e-12);
  free_all(xb, 2);
}

static void test_pad(void) {
  const char *modes[4] = {"constant", "edge", "reflect", "symmetric"};
  int sh[3] = {3, 1, 4};
  for (int m = 0; m < 4; m++) {
    struct shp p = {.n = 2, .a = {0, -1}, .b = {2, 0}, .c = {1, 5}, .mode = modes[m]};
    if (m == 2) p.a[0] = 2, p.a[1] = 0, p.b[0] = 3, p.c[0] = 2; /* reflect wraps past n - 1 */
    char name[64];
    snprintf(name, sizeof name, "pad %s", modes[m]);
    check_unary(name, f_pad, &p, sh, 3);
  }
  /* the pad value as an input: it gets the cotangent of the padding */
  struct shp p = {.n = 2, .a = {1, 2}, .b = {1, 0}, .c = {2, 1}, .mode = "constant"};
  mlx_array x[2] = {tx_rand_layout(sh, 3, 1, -1, 1), mlx_array_new_float64(0.3)};
  tx_check_grad("pad value", f_pad, &p, 2, x, 1e-6);
  free_all(x, 2);
  /* vmap over the input, the pad value, and both */
  int v1[1] = {3};
  mlx_array xb[2] = {tx_rand_batched(sh, 3, 1, 3, -1, 1), tx_rand(v1, 1, -1, 1)};
  int ax_x[2] = {1, -1}, ax_v[2] = {-1, 0}, ax_b[2] = {1, 0};
  mlx_array xu[2] = {tx_rand(sh, 3, -1, 1), xb[1]}, xs[2] = {xb[0], mlx_array_new_float64(-2)};
  tx_check_vmap("pad vmap input", f_pad, &p, 2, xs, ax_x, 1e-12);
  mlx_array_free(xs[1]);
  tx_check_vmap("pad vmap value", f_pad, &p, 2, xu, ax_v, 1e-12);
  tx_check_vmap("pad vmap both", f_pad, &p, 2, xb, ax_b, 1e-12);
  mlx_array_free(xu[0]);
  free_all(xb, 2);
}

static void test_tile_repeat_roll(void) {
  int sh[3] = {2, 1, 3};
  struct shp t1 = {.n = 2, .a = {3, 2}};
  check_unary("tile", f_tile, &t1, sh, 3);
  struct shp t2 = {.n = 4, .a = {2, 1, 1, 2}}; /* adds a leading axis */
  check_unary("tile new axes", f_tile, &t2, sh, 3);
  for (int ax = -3; ax < 3; ax++) {
    struct shp r = {.k = 3, .axis = ax};
    check_unary("repeat", f_repeat, &r, sh, 3);
  }
  struct shp r0 = {.k = 0, .axis = 0};
  check_unary("repeat 0", f_repeat, &r0, sh, 3);
  struct shp ro = {.n = 3, .a = {0, -1, 2}, .b = {1, -4, 2}};
  check_unary("roll", f_roll, &ro, sh, 3);
}

static void test_split_views(void) {
  int sh[3] = {4, 6, 1};
  struct shp sp = {.k = 3, .axis = 1};
  check_unary("split", f_split, &sp, sh, 3);
  struct shp sp2 = {.k = 2, .axis = -3};
  check_unary("split negative axis", f_split, &sp2, sh, 3);
  struct shp pc = {.n = 2, .a = {1, 4}, .axis = 1, .k = 1};
  check_unary("split_sections piece", f_split_piece, &pc, sh, 3);
  /* squeeze axis 2, expand at 0, moveaxis, swapaxes, flatten, unflatten */
  struct shp v = {.a = {-1, 0}, .b = {0, -1}, .c = {0, 1}, .k = 2};
  check_unary("squeeze/expand_dims/moveaxis/swapaxes/flatten", f_views, &v, sh, 3);
}



static void test_higher_order(void) {
  int sh[3] = {4, 1, 5};
  struct shp sl = {.a = {-1, 0, 1}, .b = {-5, 1, 5}, .c = {-2, 1, 2}};
  tx_check_vjp_of("slice", f_slice, &sl, sh, 3);
  struct shp pe = {.n = 2, .a = {0, 2}, .b = {2, 1}, .c = {1, 3}, .mode = "edge"};
  tx_check_vjp_of("pad edge", f_pad, &pe, sh, 3);
  struct shp pr = {.n = 1, .a = {2}, .b = {3}, .c = {2}, .mode = "reflect"};
  tx_check_vjp_of("pad reflect", f_pad, &pr, sh, 3);
  struct shp t = {.n = 2, .a = {2, 3}};
  tx_check_vjp_of("tile", f_tile, &t, sh, 3);
  struct shp r = {.k = 2, .axis = -1};
  tx_check_vjp_of("repeat", f_repeat, &r, sh, 3);
  struct shp d = {.k = 1, .a = {0, 2}};
  tx_check_vjp_of("diagonal", f_diagonal, &d, sh, 3);
  int s2[2] = {3, 4};
  struct shp as = {.nd = 2, .sh = {4, 3}, .st = {2, 1}, .k = 0};
  tx_check_vjp_of("as_strided", f_as_strided, &as, s2, 2);
  int v[1] = {3};
  struct shp dg = {.k = -1};
  tx_check_vjp_of("diag", f_diag, &dg, v, 1);
}

int main(void) {
  test_init();
  test_seed(11);
  test_reshape_transpose();
  test_slice();
  test_as_strided();
  test_diagonal();
  test_contiguous();
  test_concat_stack();
  test_pad();
  test_tile_repeat_roll();
  test_split_views();
  test_higher_order();
  return test_done();
}
