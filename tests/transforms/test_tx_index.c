/* vjp, jvp and vmap rules of the index family (gather, gather_axis,
 * dynamic_slice, scatter in every mode, scatter_axis, slice_update in
 * every mode, dynamic_slice_update, masked_scatter) through the public
 * ops, with negative and repeated indices, non-contiguous sources, and
 * vmap over batched sources, indices, updates and start indices. */
#include "tx_check.h"

#define S test_stream()

/* Parameters of the functions under test. */
struct idx {
  int axis, mode, n;
  int a[4], b[4], c[4];
};

static int g_take(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct idx *p = ctx;
  (void)n;
  return mlx_take_axis(out, in[0], in[1], p->axis, S);
}

static int g_take_flat(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  return mlx_take(out, in[0], in[1], S);
}

/* gather with n index arrays in[1..n] along axes a, slice sizes b */
static int g_gather(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct idx *p = ctx;
  (void)n;
  mlx_vector_array v = mlx_vector_array_new_data(in + 1, (size_t)p->n);
  int rc = mlx_gather(out, in[0], v, p->a, (size_t)p->n, p->b, mlx_array_ndim(in[0]), S);
  mlx_vector_array_free(v);
  return rc;
}

static int g_take_along(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct idx *p = ctx;
  (void)n;
  return mlx_take_along_axis(out, in[0], in[1], p->axis, S);
}

/* put_along_axis (mode 0) or scatter_add_axis (mode 1) */
static int g_put_along(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct idx *p = ctx;
  (void)n;
  return p->mode ? mlx_scatter_add_axis(out, in[0], in[1], in[2], p->axis, S)
                 : mlx_put_along_axis(out, in[0], in[1], in[2], p->axis, S);
}

enum { M_NONE, M_ADD, M_PROD, M_MAX, M_MIN };

/* scatter of in[last] into in[0] at the index arrays in[1..n] (axes a) */
static int g_scatter(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct idx *p = ctx;
  (void)n;
  mlx_vector_array v = mlx_vector_array_new_data(in + 1, (size_t)p->n);
  const mlx_array u = in[1 + p->n];
  size_t na = (size_t)p->n;
  int rc;
  switch (p->mode) {
  case M_ADD: rc = mlx_scatter_add(out, in[0], v, u, p->a, na, S); break;
  case M_PROD: rc = mlx_scatter_prod(out, in[0], v, u, p->a, na, S); break;
  case M_MAX: rc = mlx_scatter_max(out, in[0], v, u, p->a, na, S); break;
  case M_MIN: rc = mlx_scatter_min(out, in[0], v, u, p->a, na, S); break;
  default: rc = mlx_scatter(out, in[0], v, u, p->a, na, S);
  }
  mlx_vector_array_free(v);
  return rc;
}

/* slice_update of in[1] into in[0] at start a, stop b, step c */
static int g_slice_update(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct idx *p = ctx;
  (void)n;
  size_t nd = mlx_array_ndim(in[0]);
  switch (p->mode) {
  case M_ADD: return mlx_slice_update_add(out, in[0], in[1], p->a, nd, p->b, nd, p->c, nd, S);
  case M_PROD: return mlx_slice_update_prod(out, in[0], in[1], p->a, nd, p->b, nd, p->c, nd, S);
  case M_MAX: return mlx_slice_update_max(out, in[0], in[1], p->a, nd, p->b, nd, p->c, nd, S);
  case M_MIN: return mlx_slice_update_min(out, in[0], in[1], p->a, nd, p->b, nd, p->c, nd, S);
  default: return mlx_slice_update(out, in[0], in[1], p->a, nd, p->b, nd, p->c, nd, S);
  }
}

/* slice_dynamic of in[0] at start in[1] along axes a (n of them), sizes b */
static int g_slice_dynamic(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct idx *p = ctx;
  (void)n;
  return mlx_slice_dynamic(out, in[0], in[1], p->a, (size_t)p->n, p->b, mlx_array_ndim(in[0]), S);
}

/* slice_update_dynamic of in[1] into in[0] at start in[2] along axes a */
static int g_slice_update_dynamic(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct idx *p = ctx;
  (void)n;
  return mlx_slice_update_dynamic(out, in[0], in[1], in[2], p->a, (size_t)p->n, S);
}

static int g_masked_scatter(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n, (void)ctx;
  return mlx_masked_scatter(out, in[0], in[1], in[2], S);
}

/* ---- holding the integer inputs fixed for the gradient checks ---- */

struct fixed {
  tx_fn f;
  void *ctx;
  int total;
  mlx_array arr[6]; /* arr[i] used where is_fixed[i] */
  int is_fixed[6];
};

static int f_fixed(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  struct fixed *x = ctx;
  mlx_array all[6];
  for (int i = 0, k = 0; i < x->total; i++) all[i] = x->is_fixed[i] ? x->arr[i] : in[k++];
  (void)n;
  return x->f(out, all, x->total, x->ctx);
}

/* Gradient check of f over the float inputs of in[0..total), the others
 * (indices, masks) held fixed. */
static void grad_fixed(const char *name, tx_fn f, void *ctx, int total, const mlx_array *in,
                       const int *is_fixed) {
  struct fixed x = {.f = f, .ctx = ctx, .total = total};
  mlx_array vars[6];
  int nv = 0;
  for (int i = 0; i < total; i++) {
    x.is_fixed[i] = is_fixed[i];
    x.arr[i] = in[i];
    if (!is_fixed[i]) vars[nv++] = in[i];
  }
  tx_check_grad(name, f_fixed, &x, nv, vars, 1e-6);
}

/* ---- inputs ---- */

static mlx_array int_array(const int *vals, const int *shape, int nd) {
  return mlx_array_new_data(vals, shape, nd, MLX_INT32);
}

/* n random indices into an axis of extent ext, negative ones included */
static mlx_array rand_idx(const int *shape, int nd, int ext, bool negative) {
  int n = 1, v[256];
  for (int i = 0; i < nd; i++) n *= shape[i];
  for (int i = 0; i < n; i++) v[i] = test_randint(negative ? -ext : 0, ext - 1);
  return int_array(v, shape, nd);
}


/* A random array of shape sh reversed along its last axis. */
static mlx_array rand_reversed(const int *sh, int nd) {
  mlx_array x = tx_rand(sh, nd, -1, 1), t = mlx_array_new();
  int start[6], stop[6], step[6];
  for (int i = 0; i < nd; i++) {
    bool last = i == nd - 1;
    start[i] = last ? -1 : 0;
    stop[i] = last ? -sh[i] - 1 : sh[i];
    step[i] = last ? -1 : 1;
  }
  mlx_slice(&t, x, start, (size_t)nd, stop, (size_t)nd, step, (size_t)nd, S);
  mlx_array_free(x);
  return t;
}

/* shape sh with a batch axis of extent b inserted at ax */
static void batched_shape(const int *sh, int nd, int ax, int b, int *out) {
  for (int i = 0, k = 0; i <= nd; i++) out[i] = i == ax ? b : sh[k++];
}


static mlx_array idx_batched(const int *sh, int nd, int ax, int b, int ext, bool negative) {
  int s[7];
  batched_shape(sh, nd, ax, b, s);
  return rand_idx(s, nd + 1, ext, negative);
}

static void free_all(mlx_array *x, int n) {
  for (int i = 0; i < n; i++) mlx_array_free(x[i]);
}

/* Every combination of (batched at axis 0, batched at axis 1, unbatched)
 * of a source and an index array for a two-input function; at least one
 * batched. src has shape ss (nd dims), idx shape is (ni dims). */
static void vmap_src_idx(const char *name, tx_fn f, void *ctx, const int *ss, int nd,
                         const int *is, int ni, int ext, bool negative) {
  const int B = 3;
  for (int sa = -1; sa <= 1; sa++)
    for (int ia = -1; ia <= (ni > 0 ? 1 : 0); ia++) {
      if (sa == -1 && ia == -1) continue;
      mlx_array in[2];
      in[0] = tx_rand_batched(ss, nd, sa, B, -1, 1);
      in[1] = ia < 0 ? rand_idx(is, ni, ext, negative) : idx_batched(is, ni, ia, B, ext, negative);
      int axes[2] = {sa, ia};
      char buf[96];
      snprintf(buf, sizeof buf, "%s vmap src %d idx %d", name, sa, ia);
      tx_check_vmap(buf, f, ctx, 2, in, axes, 1e-12);
      free_all(in, 2);
    }
}

/* ---- gathers ---- */

static void test_take(void) {
  for (int it = 0; it < 4; it++) {
    int sh[3] = {test_randint(1, 4), test_randint(2, 5), test_randint(1, 3)};
    int ax = test_randint(0, 2), ish[2] = {test_randint(1, 4), 3};
    struct idx p = {.axis = it % 2 ? ax - 3 : ax};
    mlx_array idx = rand_idx(ish, 1 + it % 2, sh[ax], true); /* repeats likely */
    mlx_array in[2] = {tx_rand_layout(sh, 3, 1, -1, 1), idx};
    int fx[2] = {0, 1};
    grad_fixed("take", g_take, &p, 2, in, fx);
    mlx_array_free(in[0]);
    in[0] = rand_reversed(sh, 3);
    grad_fixed("take reversed", g_take, &p, 2, in, fx);
    mlx_array_free(in[0]);
    in[0] = tx_rand(sh, 3, -1, 1);
    mlx_array flat_idx = rand_idx(ish, 1, 2, true);
    grad_fixed("take_flat", g_take_flat, &p, 2, (mlx_array[]){in[0], flat_idx}, fx);
    mlx_array_free(flat_idx);
    free_all(in, 2);
    vmap_src_idx("take", g_take, &p, sh, 3, ish, 1 + it % 2, sh[ax], true);
  }
  int sh[2] = {4, 5}, ish[1] = {6};
  vmap_src_idx("take_flat", g_take_flat, NULL, sh, 2, ish, 1, 20, true);
}

static void test_gather(void) {
  /* a [4, 5, 3], index arrays along axes 0 and 2 (broadcast [2, 3]),
   * slices [2, 5, 1]: indices along axis 0 stay within 4 - 2 */
  int sh[3] = {4, 5, 3};
  struct idx p = {.n = 2, .a = {0, -1}, .b = {2, 5, 1}};
  int s0[2] = {2, 3}, s1[2] = {1, 3};
  mlx_array in[3] = {tx_rand_layout(sh, 3, 1, -1, 1), rand_idx(s0, 2, 3, false), rand_idx(s1, 2, 3, true)};
  int fx[3] = {0, 1, 1};
  grad_fixed("gather", g_gather, &p, 3, in, fx);
  mlx_array_free(in[0]);
  /* vmap: source and each index array batched or not */
  const int B = 2;
  for (int mask = 1; mask < 8; mask++) {
    int axes[3] = {mask & 1 ? 1 : -1, mask & 2 ? 0 : -1, mask & 4 ? 2 : -1};
    mlx_array v[3];
    v[0] = tx_rand_batched(sh, 3, axes[0], B, -1, 1);
    v[1] = axes[1] < 0 ? rand_idx(s0, 2, 3, false) : idx_batched(s0, 2, axes[1], B, 3, false);
    v[2] = axes[2] < 0 ? rand_idx(s1, 2, 3, true) : idx_batched(s1, 2, axes[2], B, 3, true);
    char buf[64];
    snprintf(buf, sizeof buf, "gather vmap %d %d %d", axes[0], axes[1], axes[2]);
    tx_check_vmap(buf, g_gather, &p, 3, v, axes, 1e-12);
    free_all(v, 3);
  }
  free_all(in + 1, 2);
  /* no index arrays: a plain slice from the start */
  struct idx q = {.n = 0, .b = {2, 1, 3}};
  mlx_array x = tx_rand(sh, 3, -1, 1);
  grad_fixed("gather no indices", g_gather, &q, 1, &x, fx);
  int ax1 = 1;
  mlx_array xb = tx_rand_batched(sh, 3, 1, 2, -1, 1);
  tx_check_vmap("gather no indices vmap", g_gather, &q, 1, &xb, &ax1, 1e-12);
  mlx_array_free(x);
  mlx_array_free(xb);
}

static void test_take_along(void) {
  int sh[3] = {3, 4, 2};
  for (int ax = -3; ax < 3; ax++) {
    struct idx p = {.axis = ax};
    int a = ax < 0 ? ax + 3 : ax, ish[3] = {3, 4, 2};
    ish[a] = 5;
    if (a != 1) ish[1] = 1; /* broadcasts against the source */
    mlx_array in[2] = {rand_reversed(sh, 3), rand_idx(ish, 3, sh[a], true)};
    int fx[2] = {0, 1};
    grad_fixed("take_along_axis", g_take_along, &p, 2, in, fx);
    free_all(in, 2);
    vmap_src_idx("take_along_axis", g_take_along, &p, sh, 3, ish, 3, sh[a], true);
  }
}

/* ---- dynamic slices ---- */

static void test_dynamic(void) {
  int sh[3] = {5, 3, 6};
  struct idx p = {.n = 2, .a = {0, -1}, .b = {2, 3, 4}};
  int st_v[2] = {2, 1}, st_s[1] = {2};
  mlx_array in[2] = {tx_rand_layout(sh, 3, 1, -1, 1), int_array(st_v, st_s, 1)};
  int fx[3] = {0, 1, 1};
  grad_fixed("slice_dynamic", g_slice_dynamic, &p, 2, in, fx);
  /* starts that clamp (past the end, negative) */
  int st_c[2] = {9, -4};
  mlx_array clamp = int_array(st_c, st_s, 1);
  grad_fixed("slice_dynamic clamped", g_slice_dynamic, &p, 2, (mlx_array[]){in[0], clamp}, fx);
  /* vmap: the source batched or not, the starts batched or not */
  const int B = 4;
  int bst[8] = {0, 0, 3, 2, 9, -1, 1, 5}, bsh[2] = {B, 2}, bsh_t[2] = {2, B};
  int bst_t[8] = {0, 3, 9, 1, 0, 2, -1, 5};
  for (int sa = -1; sa <= 1; sa++)
    for (int ta = -1; ta <= 1; ta++) {
      if (sa == -1 && ta == -1) continue;
      mlx_array v[2] = {tx_rand_batched(sh, 3, sa, B, -1, 1),
                        ta < 0   ? int_array(st_v, st_s, 1)
                        : ta == 0 ? int_array(bst, bsh, 2)
                                  : int_array(bst_t, bsh_t, 2)};
      int axes[2] = {sa, ta};
      char buf[64];
      snprintf(buf, sizeof buf, "slice_dynamic vmap %d %d", sa, ta);
      tx_check_vmap(buf, g_slice_dynamic, &p, 2, v, axes, 1e-12);
      free_all(v, 2);
    }
  /* a 0-d start for one axis, batched as [B] */
  struct idx p1 = {.n = 1, .a = {1}, .b = {5, 2, 6}};
  int b1[4] = {0, 2, -1, 7}, b1s[1] = {B};
  mlx_array s0 = mlx_array_new_int(1), x1 = tx_rand_batched(sh, 3, 2, B, -1, 1);
  grad_fixed("slice_dynamic 0-d start", g_slice_dynamic, &p1, 2, (mlx_array[]){in[0], s0}, fx);
  mlx_array v1[2] = {x1, int_array(b1, b1s, 1)};
  int a1[2] = {2, 0}, a2[2] = {-1, 0};
  tx_check_vmap("slice_dynamic vmap 0-d start", g_slice_dynamic, &p1, 2, v1, a1, 1e-12);
  mlx_array v2[2] = {in[0], v1[1]};
  tx_check_vmap("slice_dynamic vmap 0-d start only", g_slice_dynamic, &p1, 2, v2, a2, 1e-12);
  free_all(v1, 2);
  mlx_array_free(s0);
  /* slice_update_dynamic: src [5, 3, 6], update [2, 3, 4] at start */
  int ush[3] = {2, 3, 4};
  mlx_array ui[3] = {in[0], rand_reversed(ush, 3), in[1]};
  int fx3[3] = {0, 0, 1};
  grad_fixed("slice_update_dynamic", g_slice_update_dynamic, &p, 3, ui, fx3);
  ui[2] = clamp;
  grad_fixed("slice_update_dynamic clamped", g_slice_update_dynamic, &p, 3, ui, fx3);
  for (int mask = 1; mask < 8; mask++) {
    int axes[3] = {mask & 1 ? 0 : -1, mask & 2 ? 1 : -1, mask & 4 ? 0 : -1};
    mlx_array v[3] = {tx_rand_batched(sh, 3, axes[0], B, -1, 1),
                      tx_rand_batched(ush, 3, axes[1], B, -1, 1),
                      axes[2] < 0 ? int_array(st_v, st_s, 1) : int_array(bst, bsh, 2)};
    char buf[64];
    snprintf(buf, sizeof buf, "slice_update_dynamic vmap %d %d %d", axes[0], axes[1], axes[2]);
    tx_check_vmap(buf, g_slice_update_dynamic, &p, 3, v, axes, 1e-12);
    free_all(v, 3);
  }
  mlx_array_free(ui[1]);
  mlx_array_free(clamp);
  free_all(in, 2);
}

/* ---- scatters ---- */

/* k distinct indices into an axis of extent ext (k <= ext), some given
 * as their negative equivalents */
static mlx_array unique_idx(int k, int ext) {
  int perm[64];
  for (int i = 0; i < ext; i++) perm[i] = i;
  for (int i = ext - 1; i > 0; i--) {
    int j = test_randint(0, i), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  for (int i = 0; i < k; i++)
    if (test_randint(0, 1)) perm[i] -= ext;
  return int_array(perm, &k, 1);
}

static void test_scatter(void) {
  /* a [5, 3, 2], indices along axis 0, updates [4] + [1, 3, 2] */
  int sh[3] = {5, 3, 2}, ush[4] = {4, 1, 3, 2}, ish[1] = {4};
  const char *names[5] = {"scatter", "scatter_add", "scatter_prod", "scatter_max", "scatter_min"};
  for (int mode = 0; mode < 5; mode++) {
    struct idx p = {.n = 1, .a = {0}, .mode = mode};
    /* distinct indices where the kept update matters; repeats for add */
    mlx_array idx = mode == M_ADD ? rand_idx(ish, 1, 5, true) : unique_idx(4, 5);
    mlx_array in[3] = {tx_rand_layout(sh, 3, 1, -1, 1), idx, rand_reversed(ush, 4)};
    int fx[3] = {0, 1, 0};
    if (mode == M_PROD) {
      struct fixed x = {.f = g_scatter, .ctx = &p, .total = 3, .arr = {in[0], idx, in[2]},
                        .is_fixed = {0, 1, 0}};
      mlx_closure cls = tx_closure(f_fixed, &x);
      mlx_array prim[2] = {in[0], in[2]};
      mlx_array out = mlx_array_new();
      g_scatter(&out, in, 3, &p);
      mlx_vector_array pv = mlx_vector_array_new_data(prim, 2), cv = mlx_vector_array_new_value(out);
      mlx_vector_array r0 = mlx_vector_array_new(), r1 = mlx_vector_array_new();
      CHECK_FAILS(mlx_vjp(&r0, &r1, cls, pv, cv), "scatter_prod");
      CHECK_FAILS(mlx_jvp(&r0, &r1, cls, pv, pv), "scatter_prod");
      mlx_vector_array_free(pv);
      mlx_vector_array_free(cv);
      mlx_vector_array_free(r0);
      mlx_vector_array_free(r1);
      mlx_array_free(out);
      mlx_closure_free(cls);
    } else {
      grad_fixed(names[mode], g_scatter, &p, 3, in, fx);
    }
    free_all(in, 3);
    /* vmap: source, indices and updates each batched or not */
    const int B = 3;
    for (int mask = 1; mask < 8; mask++) {
      int axes[3] = {mask & 1 ? 1 : -1, mask & 2 ? 0 : -1, mask & 4 ? 2 : -1};
      mlx_array v[3];
      v[0] = tx_rand_batched(sh, 3, axes[0], B, -1, 1);
      if (axes[1] < 0) {
        v[1] = unique_idx(4, 5);
      } else { /* each example its own distinct indices */
        int vals[12], bs[2] = {B, 4};
        for (int b = 0; b < B; b++) {
          mlx_array u = unique_idx(4, 5);
          mlx_array_eval(u);
          memcpy(vals + 4 * b, mlx_array_data_int32(u), sizeof(int) * 4);
          mlx_array_free(u);
        }
        v[1] = int_array(vals, bs, 2);
      }
      v[2] = tx_rand_batched(ush, 4, axes[2], B, -1, 1);
      char buf[64];
      snprintf(buf, sizeof buf, "%s vmap %d %d %d", names[mode], axes[0], axes[1], axes[2]);
      tx_check_vmap(buf, g_scatter, &p, 3, v, axes, 1e-12);
      free_all(v, 3);
    }
  }
  /* two index arrays and a partial slice: a [4, 5, 3] at (i, :, j) with
   * update slices [1, 2, 1] */
  int sh2[3] = {4, 5, 3}, ish2[1] = {3}, ush2[4] = {3, 1, 2, 1};
  struct idx q = {.n = 2, .a = {0, 2}, .mode = M_ADD};
  mlx_array in[4] = {tx_rand_layout(sh2, 3, 1, -1, 1), rand_idx(ish2, 1, 4, true), rand_idx(ish2, 1, 3, true),
                     tx_rand(ush2, 4, -1, 1)};
  int fx[4] = {0, 1, 1, 0};
  grad_fixed("scatter_add two indices", g_scatter, &q, 4, in, fx);
  int axes[4] = {0, -1, 0, 1};
  mlx_array v[4] = {tx_rand_batched(sh2, 3, 0, 2, -1, 1), in[1], idx_batched(ish2, 1, 0, 2, 3, true),
                    tx_rand_batched(ush2, 4, 1, 2, -1, 1)};
  tx_check_vmap("scatter_add two indices vmap", g_scatter, &q, 4, v, axes, 1e-12);
  mlx_array_free(v[0]);
  mlx_array_free(v[2]);
  mlx_array_free(v[3]);
  free_all(in, 4);
}

static void test_put_along(void) {
  /* a [4, 3], indices along axis 0 distinct per column for put */
  int sh[2] = {4, 3}, ish[2] = {2, 3};
  for (int mode = 0; mode < 2; mode++)
    for (int ax = -2; ax < 2; ax++) {
      struct idx p = {.axis = ax, .mode = mode};
      int a = ax < 0 ? ax + 2 : ax, is[2] = {ish[0], ish[1]}, ext = sh[a];
      if (a == 1) is[0] = 4, is[1] = 2;
      int vals[16];
      int lines = a == 0 ? is[1] : is[0], per = is[a];
      for (int l = 0; l < lines; l++) { /* distinct along the axis */
        mlx_array u = unique_idx(per, ext);
        mlx_array_eval(u);
        const int *d = mlx_array_data_int32(u);
        for (int k = 0; k < per; k++) {
          int r = mode ? test_randint(-ext, ext - 1) : d[k];
          if (a == 0) vals[k * is[1] + l] = r;
          else vals[l * is[1] + k] = r;
        }
        mlx_array_free(u);
      }
      mlx_array idx = int_array(vals, is, 2);
      mlx_array in[3] = {tx_rand_layout(sh, 2, 1, -1, 1), idx, rand_reversed(is, 2)};
      int fx[3] = {0, 1, 0};
      grad_fixed(mode ? "scatter_add_axis" : "put_along_axis", g_put_along, &p, 3, in, fx);
      for (int mask = 1; mask < 8; mask++) {
        int axes[3] = {mask & 1 ? 0 : -1, mask & 2 ? 1 : -1, mask & 4 ? 2 : -1};
        mlx_array v[3];
        v[0] = tx_rand_batched(sh, 2, axes[0], 2, -1, 1);
        if (axes[1] < 0) {
          v[1] = idx;
        } else { /* the same indices for every example, batched along axis 1 */
          int bs[3];
          batched_shape(is, 2, 1, 2, bs);
          mlx_array e = mlx_array_new();
          mlx_expand_dims(&e, idx, 1, S);
          v[1] = mlx_array_new();
          mlx_broadcast_to(&v[1], e, bs, 3, S);
          mlx_array_free(e);
        }
        v[2] = tx_rand_batched(is, 2, axes[2], 2, -1, 1);
        char buf[64];
        snprintf(buf, sizeof buf, "%s vmap %d %d %d", mode ? "scatter_add_axis" : "put_along_axis",
                 axes[0], axes[1], axes[2]);
        tx_check_vmap(buf, g_put_along, &p, 3, v, axes, 1e-12);
        mlx_array_free(v[0]);
        if (axes[1] >= 0) mlx_array_free(v[1]);
        mlx_array_free(v[2]);
      }
      free_all(in, 3);
    }
}

static void test_slice_update(void) {
  const char *names[5] = {"slice_update", "slice_update_add", "slice_update_prod",
                          "slice_update_max", "slice_update_min"};
  int sh[3] = {5, 4, 3};
  for (int mode = 0; mode < 5; mode++) {
    /* rows 4, 2, 0 (step -2), columns 1..3, the last axis whole */
    struct idx p = {.mode = mode, .a = {-1, 1, 0}, .b = {-7, 3, 3}, .c = {-2, 1, 1}};
    int ush[3] = {3, 2, 3};
    mlx_array in[2] = {tx_rand_layout(sh, 3, 1, -1, 1), rand_reversed(ush, 3)};
    int fx[2] = {0, 0};
    grad_fixed(names[mode], g_slice_update, &p, 2, in, fx);
    free_all(in, 2);
    for (int sa = -1; sa <= 1; sa++)
      for (int ua = -1; ua <= 1; ua++) {
        if (sa == -1 && ua == -1) continue;
        mlx_array v[2] = {tx_rand_batched(sh, 3, sa, 2, -1, 1),
                          tx_rand_batched(ush, 3, ua, 2, -1, 1)};
        int axes[2] = {sa, ua};
        char buf[64];
        snprintf(buf, sizeof buf, "%s vmap %d %d", names[mode], sa, ua);
        tx_check_vmap(buf, g_slice_update, &p, 2, v, axes, 1e-12);
        free_all(v, 2);
      }
  }
  /* an update that broadcasts to the slice */
  struct idx p = {.a = {0, 0, 0}, .b = {5, 4, 3}, .c = {2, 3, 1}};
  int ush[2] = {1, 3};
  mlx_array in[2] = {tx_rand(sh, 3, -1, 1), tx_rand(ush, 2, -1, 1)};
  int fx[2] = {0, 0};
  grad_fixed("slice_update broadcast", g_slice_update, &p, 2, in, fx);
  free_all(in, 2);
}

static void test_masked_scatter(void) {
  /* mask over all of a [3, 4]; and over its leading axis only */
  int sh[2] = {3, 4}, m1[1] = {3};
  bool mv[12], mrow[3] = {true, false, true};
  for (int i = 0; i < 12; i++) mv[i] = test_randint(0, 1);
  mv[0] = true;
  mlx_array mask = mlx_array_new_data(mv, sh, 2, MLX_BOOL);
  mlx_array mrows = mlx_array_new_data(mrow, m1, 1, MLX_BOOL);
  int vs[1] = {14}, vs2[2] = {3, 4};
  mlx_array in[3] = {tx_rand_layout(sh, 2, 1, -1, 1), mask, rand_reversed(vs, 1)};
  int fx[3] = {0, 1, 0};
  grad_fixed("masked_scatter", g_masked_scatter, NULL, 3, in, fx);
  mlx_array in2[3] = {in[0], mrows, tx_rand(vs2, 2, -1, 1)};
  grad_fixed("masked_scatter rows", g_masked_scatter, NULL, 3, in2, fx);
  /* vmap: every example its own mask (different counts) and values */
  const int B = 3;
  bool bm[36];
  for (int i = 0; i < 36; i++) bm[i] = test_randint(0, 2) == 0;
  int bsh[3] = {B, 3, 4}, bsh1[3] = {3, B, 4};
  for (int mask_i = 1; mask_i < 8; mask_i++) {
    int axes[3] = {mask_i & 1 ? 1 : -1, mask_i & 2 ? 0 : -1, mask_i & 4 ? 0 : -1};
    mlx_array v[3];
    v[0] = axes[0] < 0 ? tx_rand(sh, 2, -1, 1) : mlx_array_new();
    if (axes[0] >= 0) {
      mlx_array_free(v[0]);
      v[0] = tx_rand(bsh1, 3, -1, 1);
    }
    v[1] = axes[1] < 0 ? mlx_array_new_data(mv, sh, 2, MLX_BOOL)
                       : mlx_array_new_data(bm, bsh, 3, MLX_BOOL);
    v[2] = axes[2] < 0 ? tx_rand(vs, 1, -1, 1) : tx_rand_batched(vs, 1, 0, B, -1, 1);
    char buf[64];
    snprintf(buf, sizeof buf, "masked_scatter vmap %d %d %d", axes[0], axes[1], axes[2]);
    tx_check_vmap(buf, g_masked_scatter, NULL, 3, v, axes, 1e-12);
    free_all(v, 3);
  }
  mlx_array_free(in2[2]);
  free_all(in, 3);
  mlx_array_free(mrows);
}



/* f with its index inputs fixed, as a one-input function */
static void check_vjp_of_fixed(const char *name, tx_fn f, void *ctx, int total, mlx_array *in,
                               const int *is_fixed, const int *sh, int nd) {
  struct fixed x = {.f = f, .ctx = ctx, .total = total};
  for (int i = 0; i < total; i++) {
    x.is_fixed[i] = is_fixed[i];
    x.arr[i] = in[i];
  }
  tx_check_vjp_of(name, f_fixed, &x, sh, nd);
}

static void test_higher_order(void) {
  int sh[3] = {4, 3, 2}, ish[2] = {2, 3};
  struct idx p = {.axis = 1};
  mlx_array idx = rand_idx(ish, 2, 3, true);
  mlx_array in[2] = {mlx_array_new(), idx};
  int fx[2] = {0, 1};
  check_vjp_of_fixed("take", g_take, &p, 2, in, fx, sh, 3);
  int tsh[3] = {4, 5, 2};
  mlx_array ta = rand_idx(tsh, 3, 3, true);
  in[1] = ta;
  check_vjp_of_fixed("take_along_axis", g_take_along, &p, 2, in, fx, sh, 3);
  struct idx d = {.n = 2, .a = {0, 2}, .b = {2, 3, 1}};
  int st_v[2] = {1, 1}, st_s[1] = {2};
  mlx_array st = int_array(st_v, st_s, 1);
  in[1] = st;
  check_vjp_of_fixed("slice_dynamic", g_slice_dynamic, &d, 2, in, fx, sh, 3);
  mlx_array_free(idx);
  mlx_array_free(ta);
  mlx_array_free(st);
}

int main(void) {
  test_init();
  test_seed(23);
  test_take();
  test_gather();
  test_take_along();
  test_dynamic();
  test_scatter();
  test_put_along();
  test_slice_update();
  test_masked_scatter();
  test_higher_order();
  return test_done();
}
