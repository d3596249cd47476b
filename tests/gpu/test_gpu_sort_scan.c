/* Sorts (sort, argsort, topk, partition, argpartition) and scans (cumsum,
 * cumprod, cummax, cummin, logcumsumexp; inclusive or not, reversed or
 * not) on the GPU against the CPU, for every real dtype: rows of 1 to
 * 100000 elements (both sides of the shared-memory sort's limit), one row
 * or many, along the first, middle and last axis and flattened, of
 * transposed, strided, broadcast and device-resident inputs, with NaNs
 * (either sign, any payload), signed zeros, infinities, extreme integers
 * and many ties. Sorts, topk and exact scans (integers; max/min; float sums
 * and products of values that make them exact in any order) must match
 * bit for bit (any NaN matching any NaN for scans); partitions must meet
 * their contract; other float scans match within the dtype's tolerance.
 * Also: that the results were made on the GPU, that complex64 and empty
 * arrays still give the CPU's results, and that device memory is back to
 * its baseline. Skips without a GPU. */
#include <math.h>

#include "core/node.h"
#include "gpu_bits.h"

#define SAME_BITS GPU_SAME_BITS

static const mlx_dtype real_types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16, MLX_FLOAT64,
                                       MLX_INT8,    MLX_UINT8,   MLX_INT16,    MLX_UINT16,
                                       MLX_INT32,   MLX_UINT32,  MLX_INT64,    MLX_UINT64,
                                       MLX_BOOL};
#define NREAL (sizeof real_types / sizeof *real_types)

static char what_buf[256];
#define WHAT(...) (snprintf(what_buf, sizeof what_buf, __VA_ARGS__), what_buf)

static bool is_float(mlx_dtype t) {
  return t == MLX_FLOAT16 || t == MLX_BFLOAT16 || t == MLX_FLOAT32 || t == MLX_FLOAT64;
}

static size_t numel(const int *shape, int nd) {
  size_t n = 1;
  for (int d = 0; d < nd; d++) n *= (size_t)shape[d];
  return n;
}

/* ---- inputs ---- */

enum fill {
  FILL_BITS,  /* random bits (floats: NaNs of any sign and payload, infinities, subnormals) */
  FILL_TIES,  /* a few values (floats: +-0, +-NaN, +-inf; integers: the extremes, 0, 1) */
  FILL_INTS,  /* integers in [-4, 4] ([0, 8] unsigned): float sums exact in any order */
  FILL_SIGNS, /* -1, 1, sometimes 0 (products exact in any order) */
  FILL_REAL,  /* uniform in [-4, 4) */
  FILL_NEAR1, /* uniform in [0.9, 1.1) */
};

/* Row-major values of dtype t: random bits, or doubles converted by the
 * CPU's astype. nan_every > 0: floats get a NaN (or an infinity) about
 * every nan_every elements. */
static mlx_array make(const int *shape, int nd, mlx_dtype t, enum fill f, int nan_every) {
  size_t n = numel(shape, nd), isz = mlx_dtype_size(t);
  bool uns = t == MLX_UINT8 || t == MLX_UINT16 || t == MLX_UINT32 || t == MLX_UINT64;
  if (f == FILL_BITS || (f == FILL_TIES && !is_float(t))) {
    uint8_t *b = malloc(n * isz + 8);
    for (size_t i = 0; i < n; i++) {
      uint64_t v = test_rand_u64();
      if (t == MLX_BOOL) v &= 1;
      if (f == FILL_TIES && t != MLX_BOOL) { /* 0, 1, 5, lowest, highest */
        uint64_t top = (uint64_t)1 << (isz * 8 - 1);
        uint64_t pool[5] = {0, 1, 5, uns ? 0 : top, uns ? ~(uint64_t)0 : top - 1};
        v = pool[v % 5];
      }
      memcpy(b + i * isz, &v, isz); /* little-endian: the low bytes */
    }
    mlx_array r = mlx_array_new_data(b, shape, nd, t);
    free(b);
    return r;
  }
  double *v = malloc(sizeof(double) * (n ? n : 1));
  static const double ties[] = {-0.0, 0.0, 1.5, -2.0, NAN, -NAN, INFINITY, -INFINITY};
  for (size_t i = 0; i < n; i++) {
    switch (f) {
    case FILL_TIES: v[i] = ties[test_rand_u64() % 8]; break;
    case FILL_INTS: v[i] = uns ? test_randint(0, 8) : test_randint(-4, 4); break;
    case FILL_SIGNS: v[i] = (double[]){-1, 1, -1, 1, -1, 1, 0}[test_rand_u64() % 7]; break;
    case FILL_NEAR1: v[i] = test_uniform(0.9, 1.1); break;
    default: v[i] = test_uniform(-4, 4); break;
    }
    if (t == MLX_BOOL) v[i] = v[i] > 0;
    if (nan_every > 0 && is_float(t) && test_rand_u64() % (uint64_t)nan_every == 0)
      v[i] = (double[]){NAN, INFINITY, -INFINITY}[test_rand_u64() % 3];
  }
  mlx_array d = mlx_array_new_data(v, shape, nd, MLX_FLOAT64), r = mlx_array_new();
  free(v);
  CHECK_OK(mlx_astype(&r, d, t, test_stream()));
  CHECK_OK(mlx_array_eval(r));
  mlx_array_free(d);
  return r;
}

/* Elements [lo, hi) of x along axis (a view). */
static mlx_array slice_axis(mlx_array x, int axis, int lo, int hi, int step) {
  int nd = (int)mlx_array_ndim(x), st[8], sp[8], k[8];
  for (int d = 0; d < nd; d++) {
    st[d] = d == axis ? lo : 0;
    sp[d] = d == axis ? hi : mlx_array_shape(x)[d];
    k[d] = d == axis ? step : 1;
  }
  mlx_array r = mlx_array_new();
  CHECK_OK(mlx_slice(&r, x, st, (size_t)nd, sp, (size_t)nd, k, (size_t)nd, test_stream()));
  return r;
}

/* ---- comparisons ---- */

/* got and want within rtol of |want| + the largest finite |want| (NaN
 * matches NaN; infinities exactly). */
#define NEAR(got, want, rtol, what) near(__FILE__, __LINE__, (got), (want), (rtol), (what))
static void near(const char *file, int line, mlx_array got, mlx_array want, double rtol,
                 const char *what) {
  test_checks++;
  if (!same_shape(got, want)) {
    test_failures++;
    fprintf(stderr, "%s:%d: %s: shape/dtype differ\n", file, line, what);
    return;
  }
  size_t n = mlx_array_size(got), bad = 0, first = 0;
  double *g = test_values(got), *w = test_values(want), scale = 0;
  for (size_t i = 0; w && i < n; i++)
    if (isfinite(w[i]) && fabs(w[i]) > scale) scale = fabs(w[i]);
  for (size_t i = 0; g && w && i < n; i++) {
    bool ok = (isnan(g[i]) && isnan(w[i])) || g[i] == w[i] ||
              (isfinite(w[i]) && fabs(g[i] - w[i]) <= rtol * (fabs(w[i]) + scale));
    if (!ok && bad++ == 0) first = i;
  }
  if (!g || !w || bad) {
    test_failures++;
    if (g && w)
      fprintf(stderr, "%s:%d: %s: %zu of %zu differ, first at %zu: gpu %.9g cpu %.9g\n", file,
              line, what, bad, n, first, g[first], w[first]);
    else
      fprintf(stderr, "%s:%d: %s: could not read values (%s)\n", file, line, what,
              test_last_error);
  }
  free(g);
  free(w);
}

/* Runs CALL (an expression of stream `s` writing mlx_array *r) on the GPU
 * into g and on the CPU into c; with on_dev, checks that the GPU made g. */
#define BOTH(g, c, on_dev, what, CALL)                                                  \
  do {                                                                                  \
    for (int side_ = 0; side_ < 2; side_++) {                                           \
      mlx_stream s = side_ ? test_stream() : gpu_stream;                                \
      mlx_array *r = side_ ? &(c) : &(g);                                               \
      CHECK_OK(CALL);                                                                   \
      CHECK_OK(mlx_array_eval(*r));                                                     \
    }                                                                                   \
    if (on_dev) CHECK_MSG(made_on_gpu(g), "%s: the result was not made on the GPU", (what)); \
  } while (0)

/* ---- sorts ---- */

static bool less_nan_last(double a, double b) { return !isnan(a) && (isnan(b) || a < b); }

/* Partition's contract for g (GPU) against c (CPU) along axis of x: the
 * same element at kth, the same elements in all, none after kth smaller
 * and none before it larger (arg: g and c are indices into x). */
static void check_partition(mlx_array x, mlx_array g, mlx_array c, int kth, int axis, bool arg,
                            const char *what) {
  int L = mlx_array_shape(x)[axis], k = kth < 0 ? kth + L : kth;
  mlx_array gk = slice_axis(g, axis, k, k + 1, 1), ck = slice_axis(c, axis, k, k + 1, 1);
  SAME_BITS(gk, ck, false, WHAT("%s: element kth", what));
  mlx_array gs = mlx_array_new(), cs = mlx_array_new(), vals = mlx_array_new(),
            last = mlx_array_new();
  CHECK_OK(mlx_sort_axis(&gs, g, axis, test_stream()));
  CHECK_OK(mlx_sort_axis(&cs, c, axis, test_stream()));
  CHECK_OK(mlx_array_eval(gs));
  CHECK_OK(mlx_array_eval(cs));
  if (arg)
    SAME_BITS(gs, cs, false, WHAT("%s: a permutation", what));
  else
    CHECK_SAME(gs, cs, 0, 0, WHAT("%s: the same values", what));
  if (arg)
    CHECK_OK(mlx_take_along_axis(&vals, x, g, axis, test_stream()));
  else
    CHECK_OK(mlx_copy(&vals, g, test_stream()));
  CHECK_OK(mlx_moveaxis(&last, vals, axis, -1, test_stream()));
  CHECK_OK(mlx_array_eval(last));
  double *v = test_values(last);
  size_t rows = L ? mlx_array_size(last) / (size_t)L : 0, bad = 0;
  for (size_t r = 0; v && r < rows; r++) {
    const double *row = v + r * (size_t)L;
    for (int j = 0; j < L; j++)
      if (j < k ? less_nan_last(row[k], row[j]) : j > k && less_nan_last(row[j], row[k])) bad++;
  }
  CHECK_MSG(v && bad == 0, "%s: %zu elements on the wrong side of kth %d", what, bad, kth);
  free(v);
  mlx_array_free(gk);
  mlx_array_free(ck);
  mlx_array_free(gs);
  mlx_array_free(cs);
  mlx_array_free(vals);
  mlx_array_free(last);
}

#define FLAT (-1000)

/* Every sort mode of x along axis (FLAT: flattened) on both sides. */
static void sort_case(mlx_array x, int axis, bool on_dev, const char *desc) {
  char what[200];
  int nd = (int)mlx_array_ndim(x);
  bool flat = axis == FLAT;
  int ax = flat ? 0 : axis < 0 ? axis + nd : axis;
  int L = flat ? (int)mlx_array_size(x) : mlx_array_shape(x)[ax];
  bool dev = on_dev && mlx_array_size(x) > 0;
  mlx_array g = mlx_array_new(), c = mlx_array_new();
  snprintf(what, sizeof what, "sort %s", desc);
  BOTH(g, c, dev, what, flat ? mlx_sort(r, x, s) : mlx_sort_axis(r, x, axis, s));
  SAME_BITS(g, c, false, what);
  snprintf(what, sizeof what, "argsort %s", desc);
  BOTH(g, c, dev, what, flat ? mlx_argsort(r, x, s) : mlx_argsort_axis(r, x, axis, s));
  SAME_BITS(g, c, false, what);
  if (L > 0) {
    int ks[] = {1, L / 3 + 1, L};
    for (int i = 0; i < 3; i++) {
      int k = ks[i];
      snprintf(what, sizeof what, "topk %d %s", k, desc);
      BOTH(g, c, dev && (flat || k < L), what,
           flat ? mlx_topk(r, x, k, s) : mlx_topk_axis(r, x, k, axis, s));
      SAME_BITS(g, c, false, what);
    }
    mlx_array xf = mlx_array_new();
    if (flat)
      CHECK_OK(mlx_flatten(&xf, x, 0, -1, test_stream()));
    else
      CHECK_OK(mlx_copy(&xf, x, test_stream()));
    int kths[] = {0, L / 2, L - 1, -1};
    for (int i = 0; i < 4; i++) {
      int kth = kths[i];
      for (int arg = 0; arg < 2; arg++) {
        snprintf(what, sizeof what, "%spartition kth %d %s", arg ? "arg" : "", kth, desc);
        if (arg)
          BOTH(g, c, dev, what,
               flat ? mlx_argpartition(r, x, kth, s) : mlx_argpartition_axis(r, x, kth, axis, s));
        else
          BOTH(g, c, dev, what,
               flat ? mlx_partition(r, x, kth, s) : mlx_partition_axis(r, x, kth, axis, s));
        check_partition(xf, g, c, kth, ax, arg, what);
      }
    }
    mlx_array_free(xf);
  }
  mlx_array_free(g);
  mlx_array_free(c);
}

static void test_sort_shapes(void) {
  struct {
    int nd, shape[3], axis;
  } cases[] = {
      {1, {1}, 0},         {1, {7}, 0},          {1, {33}, -1},       {1, {1024}, 0},
      {1, {4095}, 0},      {1, {4096}, 0},       {1, {4097}, 0},      {1, {100000}, 0},
      {2, {64, 7}, 1},     {2, {7, 64}, 0},      {3, {3, 33, 5}, 1},  {2, {5, 1024}, 1},
      {2, {3, 4097}, -1},  {2, {20, 5000}, 1},   {2, {5000, 20}, 0},  {2, {2, 100000}, 1},
      {3, {4, 3000, 3}, 1}, {2, {33, 65}, FLAT}, {2, {70, 100}, FLAT}, {2, {3000, 2}, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    for (size_t t = 0; t < NREAL; t++) {
      mlx_dtype dt = real_types[t];
      int L = cases[i].axis == FLAT ? (int)numel(cases[i].shape, cases[i].nd)
                                    : cases[i].shape[cases[i].axis < 0 ? cases[i].nd - 1
                                                                       : cases[i].axis];
      /* long rows: one fill per dtype (alternating), short ones: both */
      for (int f = 0; f < 2; f++) {
        if (L > 5000 && f != (int)(t % 2)) continue;
        mlx_array x = make(cases[i].shape, cases[i].nd, dt, f ? FILL_TIES : FILL_BITS, 0);
        char desc[120];
        snprintf(desc, sizeof desc, "case %zu (L %d axis %d) dtype %d fill %d", i, L,
                 cases[i].axis, (int)dt, f);
        sort_case(x, cases[i].axis, true, desc);
        mlx_array_free(x);
      }
    }
}

/* Views of a (33, 70) array: transposed, strided, broadcast, and the same
 * of a device-resident copy. */
static void test_sort_views(void) {
  int shape[] = {33, 70};
  for (size_t t = 0; t < NREAL; t++) {
    mlx_dtype dt = real_types[t];
    mlx_array x = make(shape, 2, dt, t % 2 ? FILL_TIES : FILL_BITS, 0);
    mlx_array xg = on_gpu(x);
    for (int dev = 0; dev < 2; dev++) {
      mlx_array base = dev ? xg : x, tr = mlx_array_new(), bc = mlx_array_new();
      mlx_array st = slice_axis(base, 1, 3, 70, 2);
      CHECK_OK(mlx_transpose(&tr, base, test_stream()));
      mlx_array row = slice_axis(base, 0, 5, 6, 1);
      int bshape[] = {9, 70};
      CHECK_OK(mlx_broadcast_to(&bc, row, bshape, 2, test_stream()));
      char desc[120];
      for (int axis = 0; axis < 2; axis++) {
        snprintf(desc, sizeof desc, "transposed axis %d dtype %d dev %d", axis, (int)dt, dev);
        sort_case(tr, axis, true, desc);
        snprintf(desc, sizeof desc, "strided axis %d dtype %d dev %d", axis, (int)dt, dev);
        sort_case(st, axis, true, desc);
        snprintf(desc, sizeof desc, "broadcast axis %d dtype %d dev %d", axis, (int)dt, dev);
        sort_case(bc, axis, true, desc);
      }
      snprintf(desc, sizeof desc, "transposed flat dtype %d dev %d", (int)dt, dev);
      sort_case(tr, FLAT, true, desc);
      mlx_array_free(tr);
      mlx_array_free(bc);
      mlx_array_free(st);
      mlx_array_free(row);
    }
    mlx_array_free(x);
    mlx_array_free(xg);
  }
  /* a long transposed row (the radix path after the rows-last copy) */
  int ls[] = {6000, 3};
  mlx_array x = make(ls, 2, MLX_FLOAT32, FILL_TIES, 0), tr = mlx_array_new();
  CHECK_OK(mlx_transpose(&tr, x, test_stream()));
  sort_case(tr, 1, true, "transposed (3, 6000) axis 1");
  sort_case(x, 0, true, "(6000, 3) axis 0");
  mlx_array_free(x);
  mlx_array_free(tr);
}

/* Empty arrays, a scalar, complex64: the CPU's results. */
static void test_sort_edges(void) {
  int e1[] = {0}, e2[] = {3, 0}, e3[] = {0, 5};
  mlx_array a = make(e1, 1, MLX_FLOAT32, FILL_REAL, 0), b = make(e2, 2, MLX_INT32, FILL_BITS, 0),
            c = make(e3, 2, MLX_FLOAT16, FILL_REAL, 0);
  sort_case(a, 0, false, "empty (0)");
  sort_case(b, 1, false, "empty (3, 0) axis 1");
  sort_case(b, 0, false, "empty (3, 0) axis 0");
  sort_case(c, 1, false, "empty (0, 5) axis 1");
  sort_case(c, FLAT, false, "empty (0, 5) flat");
  double v = 2.5;
  mlx_array sc = mlx_array_new_data(&v, NULL, 0, MLX_FLOAT64);
  sort_case(sc, FLAT, true, "scalar flat");
  int cs[] = {5, 40};
  mlx_array re = make(cs, 2, MLX_FLOAT32, FILL_TIES, 0), cx = mlx_array_new();
  CHECK_OK(mlx_astype(&cx, re, MLX_COMPLEX64, test_stream()));
  sort_case(cx, 1, false, "complex64");
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(c);
  mlx_array_free(sc);
  mlx_array_free(re);
  mlx_array_free(cx);
}

/* ---- scans ---- */

typedef int (*scan_fn)(mlx_array *, const mlx_array, int, bool, bool, const mlx_stream);
static const scan_fn scan_fns[] = {mlx_cumsum, mlx_cumprod, mlx_cummax, mlx_cummin,
                                   mlx_logcumsumexp};
static const char *const scan_names[] = {"cumsum", "cumprod", "cummax", "cummin",
                                         "logcumsumexp"};

static double scan_rtol(mlx_dtype t) {
  return t == MLX_FLOAT16 ? 2e-3 : t == MLX_BFLOAT16 ? 1.6e-2 : t == MLX_FLOAT64 ? 1e-10 : 4e-6;
}

/* Scan `kind` of x along axis, all four flag combinations; exact: bits
 * (any NaN for any NaN), else within the dtype's tolerance. */
static void scan_case(int kind, mlx_array x, int axis, bool exact, bool on_dev, const char *desc) {
  char what[240];
  bool dev = on_dev && mlx_array_size(x) > 0;
  mlx_dtype t = mlx_array_dtype(x);
  for (int flags = 0; flags < 4; flags++) {
    bool rev = flags & 1, incl = flags & 2;
    mlx_array g = mlx_array_new(), c = mlx_array_new();
    snprintf(what, sizeof what, "%s rev %d incl %d %s", scan_names[kind], rev, incl, desc);
    BOTH(g, c, dev, what, scan_fns[kind](r, x, axis, rev, incl, s));
    if (exact)
      SAME_BITS(g, c, true, what);
    else
      NEAR(g, c, scan_rtol(is_float(t) ? t : MLX_FLOAT32), what);
    mlx_array_free(g);
    mlx_array_free(c);
  }
}

/* The inputs a scan kind is checked with: a fill, NaNs every nan_every
 * elements (0: none), and whether the results must be exact. */
struct scan_run {
  enum fill f;
  int nan_every;
  bool exact;
};
static int scan_runs(int kind, mlx_dtype t, struct scan_run *run) {
  bool fl = is_float(t);
  switch (kind) {
  case 0: /* integers wrap exactly; small float integers add exactly */
    run[0] = (struct scan_run){fl ? FILL_INTS : FILL_BITS, 997, true};
    run[1] = (struct scan_run){FILL_REAL, 0, false};
    return fl ? 2 : 1;
  case 1: /* products of +-1 and 0 are exact in any order */
    run[0] = (struct scan_run){fl ? FILL_SIGNS : FILL_BITS, 997, true};
    run[1] = (struct scan_run){FILL_NEAR1, 0, false};
    return fl ? 2 : 1;
  case 2:
  case 3: /* max/min pick elements: exact for every input */
    run[0] = (struct scan_run){FILL_BITS, 0, true};
    run[1] = (struct scan_run){FILL_TIES, 0, true};
    return 2;
  default: /* logcumsumexp (integers: cast to float32 first) */
    run[0] = (struct scan_run){FILL_REAL, 211, false};
    return 1;
  }
}

static void scan_on(int kind, mlx_dtype t, const int *shape, int nd, int axis, const char *desc) {
  struct scan_run run[2];
  int nrun = scan_runs(kind, t, run);
  for (int i = 0; i < nrun; i++) {
    char d2[200];
    mlx_array x = make(shape, nd, t, run[i].f, run[i].nan_every);
    snprintf(d2, sizeof d2, "%s dtype %d fill %d", desc, (int)t, (int)run[i].f);
    scan_case(kind, x, axis, run[i].exact, true, d2);
    mlx_array_free(x);
  }
}

static void test_scan_shapes(void) {
  struct {
    int nd, shape[3], axis;
  } cases[] = {
      {1, {1}, 0},           {1, {7}, 0},         {1, {33}, -1},       {1, {1024}, 0},
      {1, {4097}, 0},        {1, {100000}, 0},    {2, {64, 33}, 1},    {2, {33, 64}, 0},
      {2, {3000, 40}, 0},    {2, {40, 3000}, 1},  {3, {4, 5, 6}, 1},   {2, {2500, 3}, 1},
      {2, {8, 4097}, -1},    {2, {50, 3000}, 0},  {3, {3, 700, 5}, 1}, {3, {2, 3, 1100}, 0},
      {2, {3000, 1}, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    for (int kind = 0; kind < 5; kind++)
      for (size_t t = 0; t < NREAL; t++) {
        char desc[120];
        snprintf(desc, sizeof desc, "case %zu axis %d", i, cases[i].axis);
        scan_on(kind, real_types[t], cases[i].shape, cases[i].nd, cases[i].axis, desc);
      }
}

/* Views (the rows-last copy), device-resident inputs, empty arrays,
 * complex64 (the CPU's results). */
static void test_scan_views(void) {
  int shape[] = {40, 300};
  for (int kind = 0; kind < 5; kind++)
    for (size_t t = 0; t < NREAL; t++) {
      mlx_dtype dt = real_types[t];
      struct scan_run run[2];
      int nrun = scan_runs(kind, dt, run);
      struct scan_run r = run[nrun - 1]; /* the last: ties, or approximate floats */
      bool exact = r.exact;
      mlx_array x = make(shape, 2, dt, r.f, r.nan_every), xg = on_gpu(x);
      for (int dev = 0; dev < 2; dev++) {
        mlx_array base = dev ? xg : x, tr = mlx_array_new(), bc = mlx_array_new();
        mlx_array st = slice_axis(base, 1, 1, 300, 3), row = slice_axis(base, 0, 2, 3, 1);
        CHECK_OK(mlx_transpose(&tr, base, test_stream()));
        int bshape[] = {5, 300};
        CHECK_OK(mlx_broadcast_to(&bc, row, bshape, 2, test_stream()));
        char desc[120];
        for (int axis = 0; axis < 2; axis++) {
          snprintf(desc, sizeof desc, "transposed axis %d dtype %d dev %d", axis, (int)dt, dev);
          scan_case(kind, tr, axis, exact, true, desc);
          snprintf(desc, sizeof desc, "strided axis %d dtype %d dev %d", axis, (int)dt, dev);
          scan_case(kind, st, axis, exact, true, desc);
          snprintf(desc, sizeof desc, "broadcast axis %d dtype %d dev %d", axis, (int)dt, dev);
          scan_case(kind, bc, axis, exact, true, desc);
        }
        snprintf(desc, sizeof desc, "contiguous dtype %d dev %d", (int)dt, dev);
        scan_case(kind, base, 1, exact, true, desc);
        mlx_array_free(tr);
        mlx_array_free(bc);
        mlx_array_free(st);
        mlx_array_free(row);
      }
      mlx_array_free(x);
      mlx_array_free(xg);
    }
  int e1[] = {0}, e2[] = {3, 0}, e3[] = {0, 4};
  mlx_array a = make(e1, 1, MLX_FLOAT32, FILL_REAL, 0), b = make(e2, 2, MLX_INT32, FILL_BITS, 0),
            c = make(e3, 2, MLX_BOOL, FILL_BITS, 0);
  for (int kind = 0; kind < 5; kind++) {
    scan_case(kind, a, 0, true, false, "empty (0)");
    scan_case(kind, b, 0, kind != 4, false, "empty (3, 0) axis 0");
    scan_case(kind, b, 1, kind != 4, false, "empty (3, 0) axis 1");
    scan_case(kind, c, 1, kind != 4, false, "empty (0, 4) axis 1");
  }
  int cs[] = {6, 50};
  mlx_array re = make(cs, 2, MLX_FLOAT32, FILL_INTS, 0), cx = mlx_array_new();
  CHECK_OK(mlx_astype(&cx, re, MLX_COMPLEX64, test_stream()));
  for (int kind = 0; kind < 4; kind++) scan_case(kind, cx, 1, true, false, "complex64");
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(c);
  mlx_array_free(re);
  mlx_array_free(cx);
}

int main(void) {
  if (!gpu_test_init()) return TEST_SKIP;
  test_seed(20261205);
  size_t base = test_active_memory();
  test_sort_shapes();
  test_sort_views();
  test_sort_edges();
  test_scan_shapes();
  test_scan_views();
  return gpu_test_done(base);
}
