/* Rules of SCAN (cumsum, cumprod, cummax, cummin, logcumsumexp; reverse
 * and exclusive variants), SOFTMAX (any axes) and SORT (sort, argsort,
 * partition, argpartition, topk; along an axis and flattened): vjp and jvp
 * against finite differences, vmap against a loop, over random shapes
 * (size-1 dims included) and non-contiguous inputs. Inputs are random, so
 * the max/min and sort families see no ties. */
#include "tx_check.h"


static void random_shape(int *shape, int *nd, int min_nd, int max_nd) {
  *nd = test_randint(min_nd, max_nd);
  for (int d = 0; d < *nd; d++) shape[d] = test_randint(1, 4);
}

/* The batched version of shape: extent B inserted at axis bax. */
static void batched_shape(const int *shape, int nd, int bax, int B, int *bs) {
  for (int d = 0, k = 0; d <= nd; d++) bs[d] = d == bax ? B : shape[k++];
}

/* ---- scans ---- */

enum { S_SUM, S_PROD, S_MAX, S_MIN, S_LAE, S_N };
static const char *const scan_names[S_N] = {"cumsum", "cumprod", "cummax", "cummin",
                                            "logcumsumexp"};

struct scan {
  int kind, axis;
  bool reverse, inclusive;
};

static int f_scan(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  const struct scan *c = ctx;
  mlx_stream s = test_stream();
  switch (c->kind) {
  case S_SUM: return mlx_cumsum(out, in[0], c->axis, c->reverse, c->inclusive, s);
  case S_PROD: return mlx_cumprod(out, in[0], c->axis, c->reverse, c->inclusive, s);
  case S_MAX: return mlx_cummax(out, in[0], c->axis, c->reverse, c->inclusive, s);
  case S_MIN: return mlx_cummin(out, in[0], c->axis, c->reverse, c->inclusive, s);
  default: return mlx_logcumsumexp(out, in[0], c->axis, c->reverse, c->inclusive, s);
  }
}

/* One vjp (with cotangent u) or jvp (tangent u) of f at x. */
static mlx_array run_transform(bool vjp, tx_fn f, void *ctx, mlx_array x, mlx_array u) {
  mlx_closure cls = tx_closure(f, ctx);
  mlx_vector_array prim = mlx_vector_array_new_value(x), v = mlx_vector_array_new_value(u);
  mlx_vector_array r0 = mlx_vector_array_new(), r1 = mlx_vector_array_new();
  mlx_array g = mlx_array_new();
  int rc = vjp ? mlx_vjp(&r0, &r1, cls, prim, v) : mlx_jvp(&r0, &r1, cls, prim, v);
  CHECK_MSG(rc == 0, "%s failed: %s", vjp ? "vjp" : "jvp", test_last_error);
  if (!rc) mlx_vector_array_get(&g, r1, 0);
  mlx_vector_array_free(r0);
  mlx_vector_array_free(r1);
  mlx_vector_array_free(prim);
  mlx_vector_array_free(v);
  mlx_closure_free(cls);
  return g;
}

/* a shifted by one along axis (extent L), a zero entering: towards higher
 * indices (r[k] = a[k-1]) when up, else towards lower ones. */
static mlx_array shift(mlx_array a, int axis, int L, bool up) {
  mlx_stream s = test_stream();
  int nd = (int)mlx_array_ndim(a), start[4], stop[4], step[4], zs[4];
  for (int d = 0; d < nd; d++) {
    start[d] = 0, step[d] = 1;
    stop[d] = zs[d] = mlx_array_shape(a)[d];
  }
  start[axis] = up ? 0 : 1;
  stop[axis] = up ? L - 1 : L;
  zs[axis] = 1;
  mlx_array part = mlx_array_new(), z = mlx_array_new(), r = mlx_array_new();
  mlx_slice(&part, a, start, (size_t)nd, stop, (size_t)nd, step, (size_t)nd, s);
  mlx_zeros(&z, zs, (size_t)nd, MLX_FLOAT64, s);
  mlx_array pieces[2] = {up ? z : part, up ? part : z};
  mlx_vector_array v = mlx_vector_array_new_data(pieces, 2);
  mlx_concatenate_axis(&r, v, axis, s);
  mlx_vector_array_free(v);
  mlx_array_free(part);
  mlx_array_free(z);
  return r;
}

/* Exclusive cummax/cummin/logcumsumexp start with an infinite identity,
 * where finite differences fail; their rules are checked against the
 * (finite-difference checked) inclusive ones: the exclusive scan is the
 * inclusive one shifted by a position in scan order. */
static void check_exclusive(const struct scan *c, mlx_array x, const char *name) {
  struct scan ci = *c;
  ci.inclusive = true;
  int nd = (int)mlx_array_ndim(x), axis = c->axis < 0 ? c->axis + nd : c->axis;
  int L = mlx_array_shape(x)[axis];
  size_t sz = mlx_array_size(x);
  mlx_array u = tx_rand((const int *)mlx_array_shape(x), nd, -1, 1);
  mlx_array us = shift(u, axis, L, c->reverse);
  mlx_array g = run_transform(true, f_scan, (void *)c, x, u);
  mlx_array gi = run_transform(true, f_scan, &ci, x, us);
  double *want = test_values(gi);
  if (want) CHECK_CLOSE(g, want, sz, 1e-12, 1e-12);
  CHECK_MSG(want != NULL, "%s: vjp", name);
  free(want);
  mlx_array j = run_transform(false, f_scan, (void *)c, x, u);
  mlx_array ji = run_transform(false, f_scan, &ci, x, u);
  mlx_array js = shift(ji, axis, L, !c->reverse);
  want = test_values(js);
  if (want) CHECK_CLOSE(j, want, sz, 1e-12, 1e-12);
  CHECK_MSG(want != NULL, "%s: jvp", name);
  free(want);
  mlx_array_free(u);
  mlx_array_free(us);
  mlx_array_free(g);
  mlx_array_free(gi);
  mlx_array_free(j);
  mlx_array_free(ji);
  mlx_array_free(js);
}

static void check_scans(void) {
  for (int kind = 0; kind < S_N; kind++)
    for (int t = 0; t < 12; t++) {
      int shape[4], nd;
      random_shape(shape, &nd, 1, 3);
      struct scan c = {kind, test_randint(-nd, nd - 1), t & 1, (t >> 1) & 1};
      /* cumprod: factors of either sign, away from zero */
      double lo = kind == S_PROD ? 0.5 : -2, hi = kind == S_PROD ? 1.5 : 2;
      mlx_array x = tx_rand_layout(shape, nd, t % 3, lo, hi);
      if (kind == S_PROD && t % 4 == 3) {
        mlx_array m = mlx_array_new(), neg = mlx_array_new_double(-1.0);
        mlx_multiply(&m, x, neg, test_stream());
        mlx_array_free(x);
        mlx_array_free(neg);
        x = m;
      }
      char name[96];
      snprintf(name, sizeof name, "%s nd=%d axis=%d reverse=%d inclusive=%d layout=%d",
               scan_names[kind], nd, c.axis, c.reverse, c.inclusive, t % 3);
      if (!c.inclusive && kind != S_SUM && kind != S_PROD)
        check_exclusive(&c, x, name);
      else
        tx_check_grad(name, f_scan, &c, 1, &x, 1e-5);
      mlx_array_free(x);
      if (t >= 8) continue;
      for (int bax = 0; bax <= 1; bax++) {
        int bs[5];
        batched_shape(shape, nd, bax, test_randint(1, 3), bs);
        mlx_array xb = tx_rand_layout(bs, nd + 1, t % 3, lo, hi);
        snprintf(name, sizeof name, "vmap %s nd=%d axis=%d reverse=%d inclusive=%d in_axis=%d",
                 scan_names[kind], nd, c.axis, c.reverse, c.inclusive, bax);
        tx_check_vmap(name, f_scan, &c, 1, &xb, &bax, 1e-12);
        mlx_array_free(xb);
      }
    }
}

/* cumprod with zeros (one and two per line), every direction; cumprod is
 * multilinear, so finite differences are exact there. */
static void check_cumprod_zeros(void) {
  double v[15];
  for (int i = 0; i < 15; i++) v[i] = test_uniform(0.5, 1.5);
  v[2] = 0;             /* line 0: one zero in the middle */
  v[5 + 1] = 0;         /* line 1: two zeros */
  v[5 + 3] = 0;
  v[10 + 0] = 0;        /* line 2: zeros at both ends */
  v[10 + 4] = 0;
  int shape[2] = {3, 5};
  mlx_array x = mlx_array_new_data(v, shape, 2, MLX_FLOAT64);
  for (int t = 0; t < 4; t++) {
    struct scan c = {S_PROD, 1, t & 1, (t >> 1) & 1};
    char name[64];
    snprintf(name, sizeof name, "cumprod with zeros reverse=%d inclusive=%d", c.reverse,
             c.inclusive);
    tx_check_grad(name, f_scan, &c, 1, &x, 1e-6);
  }
  mlx_array_free(x);
}

/* ---- softmax ---- */

struct smax {
  int naxes;
  int axes[4];
  bool precise;
};

static int f_softmax(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  const struct smax *c = ctx;
  return mlx_softmax_axes(out, in[0], c->axes, (size_t)c->naxes, c->precise, test_stream());
}

static void check_softmax(void) {
  for (int t = 0; t < 12; t++) {
    int shape[4], nd;
    random_shape(shape, &nd, 1, 4);
    struct smax c = {.precise = t & 1};
    while (c.naxes == 0)
      for (int d = 0; d < nd; d++)
        if (test_randint(0, 1)) c.axes[c.naxes++] = test_randint(0, 1) ? d : d - nd;
    mlx_array x = tx_rand_layout(shape, nd, t % 3, -2, 2);
    char name[96];
    snprintf(name, sizeof name, "softmax nd=%d naxes=%d layout=%d", nd, c.naxes, t % 3);
    tx_check_grad(name, f_softmax, &c, 1, &x, 1e-5);
    mlx_array_free(x);
    for (int bax = 0; bax <= 1 && t < 6; bax++) {
      int bs[5];
      batched_shape(shape, nd, bax, test_randint(1, 3), bs);
      mlx_array xb = tx_rand_layout(bs, nd + 1, t % 3, -2, 2);
      snprintf(name, sizeof name, "vmap softmax nd=%d naxes=%d in_axis=%d", nd, c.naxes, bax);
      tx_check_vmap(name, f_softmax, &c, 1, &xb, &bax, 1e-12);
      mlx_array_free(xb);
    }
  }
  /* an unbatched input beside a batched one the function ignores */
  int shape[2] = {3, 4}, bshape[2] = {2, 5};
  struct smax c = {.naxes = 1, .axes = {-1}};
  mlx_array in[2] = {tx_rand(shape, 2, -1, 1), tx_rand(bshape, 2, -1, 1)};
  int axes[2] = {-1, 0};
  tx_check_vmap("vmap softmax unbatched input", f_softmax, &c, 2, in, axes, 1e-12);
  mlx_array_free(in[0]);
  mlx_array_free(in[1]);
}

/* ---- sort family ---- */

enum { M_SORT, M_ARGSORT, M_PARTITION, M_ARGPARTITION, M_TOPK, M_N };
static const char *const sort_names[M_N] = {"sort", "argsort", "partition", "argpartition",
                                            "topk"};

struct srt {
  int mode, axis, k;
  bool flat;
};

static int f_sort(mlx_array *out, const mlx_array *in, int n, void *ctx) {
  (void)n;
  const struct srt *c = ctx;
  mlx_stream s = test_stream();
  if (c->flat) switch (c->mode) {
    case M_SORT: return mlx_sort(out, in[0], s);
    case M_ARGSORT: return mlx_argsort(out, in[0], s);
    case M_PARTITION: return mlx_partition(out, in[0], c->k, s);
    case M_ARGPARTITION: return mlx_argpartition(out, in[0], c->k, s);
    default: return mlx_topk(out, in[0], c->k, s);
    }
  switch (c->mode) {
  case M_SORT: return mlx_sort_axis(out, in[0], c->axis, s);
  case M_ARGSORT: return mlx_argsort_axis(out, in[0], c->axis, s);
  case M_PARTITION: return mlx_partition_axis(out, in[0], c->k, c->axis, s);
  case M_ARGPARTITION: return mlx_argpartition_axis(out, in[0], c->k, c->axis, s);
  default: return mlx_topk_axis(out, in[0], c->k, c->axis, s);
  }
}

/* Random parameters for shape: an axis (or flat), kth in range (negative
 * sometimes) or k in [1, extent]. */
static struct srt random_srt(int mode, int nd, const int *shape, bool flat) {
  struct srt c = {.mode = mode, .flat = flat, .axis = test_randint(-nd, nd - 1)};
  int ext = 1;
  if (flat)
    for (int d = 0; d < nd; d++) ext *= shape[d];
  else
    ext = shape[c.axis < 0 ? c.axis + nd : c.axis];
  if (mode == M_TOPK)
    c.k = test_randint(1, ext);
  else if (mode == M_PARTITION || mode == M_ARGPARTITION)
    c.k = test_randint(0, 1) ? test_randint(0, ext - 1) : -test_randint(1, ext);
  return c;
}

static void check_sorts(void) {
  for (int mode = 0; mode < M_N; mode++)
    for (int t = 0; t < 10; t++) {
      int shape[4], nd;
      random_shape(shape, &nd, 1, 3);
      bool flat = t % 4 == 3;
      struct srt c = random_srt(mode, nd, shape, flat);
      mlx_array x = tx_rand_layout(shape, nd, t % 3, -2, 2);
      char name[96];
      snprintf(name, sizeof name, "%s nd=%d axis=%d k=%d flat=%d layout=%d", sort_names[mode], nd,
               c.axis, c.k, flat, t % 3);
      tx_check_grad(name, f_sort, &c, 1, &x, 1e-6);
      mlx_array_free(x);
      for (int bax = 0; bax <= 1 && t < 8; bax++) {
        int bs[5];
        batched_shape(shape, nd, bax, test_randint(1, 3), bs);
        mlx_array xb = tx_rand_layout(bs, nd + 1, t % 3, -2, 2);
        snprintf(name, sizeof name, "vmap %s nd=%d axis=%d k=%d flat=%d in_axis=%d",
                 sort_names[mode], nd, c.axis, c.k, flat, bax);
        tx_check_vmap(name, f_sort, &c, 1, &xb, &bax, 0);
        mlx_array_free(xb);
      }
    }
  /* a 0-d input sorted flat */
  mlx_array x = mlx_array_new_double(0.25);
  struct srt c = {.mode = M_SORT, .flat = true};
  tx_check_grad("sort of a scalar", f_sort, &c, 1, &x, 1e-6);
  mlx_array_free(x);
}


static void check_second_order(void) {
  int shape[2] = {3, 4}, bshape[3] = {2, 3, 4};
  struct scan sc[] = {{S_SUM, 1, true, false},  {S_PROD, 1, false, true}, {S_PROD, 0, true, false},
                      {S_MAX, 1, false, true},  {S_MIN, 0, true, true},   {S_LAE, 1, false, true},
                      {S_LAE, -1, true, true}};
  for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++) {
    double lo = sc[i].kind == S_PROD ? 0.5 : -2, hi = sc[i].kind == S_PROD ? 1.5 : 2;
    mlx_array x = tx_rand_layout(shape, 2, (int)i % 3, lo, hi), xb = tx_rand(bshape, 3, lo, hi);
    tx_check_second(scan_names[sc[i].kind], f_scan, &sc[i], x, xb, 1e-5);
    mlx_array_free(x);
    mlx_array_free(xb);
  }
  struct smax sm = {.naxes = 2, .axes = {0, 1}}, sm1 = {.naxes = 1, .axes = {-1}, .precise = true};
  struct srt so[] = {{.mode = M_SORT, .axis = 1}, {.mode = M_PARTITION, .axis = 0, .k = 1},
                     {.mode = M_TOPK, .axis = -1, .k = 2}, {.mode = M_SORT, .flat = true}};
  mlx_array x = tx_rand_layout(shape, 2, 1, -2, 2), xb = tx_rand(bshape, 3, -2, 2);
  tx_check_second("softmax", f_softmax, &sm, x, xb, 1e-5);
  tx_check_second("softmax last axis", f_softmax, &sm1, x, xb, 1e-5);
  for (size_t i = 0; i < sizeof so / sizeof so[0]; i++)
    tx_check_second(sort_names[so[i].mode], f_sort, &so[i], x, xb, 1e-5);
  mlx_array_free(x);
  mlx_array_free(xb);
}

int main(void) {
  test_init();
  test_seed(11);
  check_scans();
  check_cumprod_zeros();
  check_softmax();
  check_sorts();
  check_second_order();
  return test_done();
}
