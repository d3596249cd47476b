/* The index and copy family on the GPU (contiguous, concatenate, remap,
 * gather, take_along_axis, dynamic slices, scatters, slice updates,
 * arange) against the CPU, bit for bit: every dtype, contiguous, strided,
 * transposed and broadcast inputs, empty arrays, out-of-range, negative and
 * duplicate indices; that the results were made on the GPU; device memory
 * back to its baseline. Skips without a GPU. */
#include <math.h>

#include "core/node.h"
#include "gpu_bits.h"

#define SAME_BITS(got, want, what) GPU_SAME_BITS((got), (want), false, (what))

static const mlx_dtype all_types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16, MLX_FLOAT64,
                                      MLX_INT8,    MLX_UINT8,   MLX_INT16,    MLX_UINT16,
                                      MLX_INT32,   MLX_UINT32,  MLX_INT64,    MLX_UINT64,
                                      MLX_BOOL,    MLX_COMPLEX64};
#define NTYPES (sizeof all_types / sizeof *all_types)
/* Real dtypes the combining kernels (add, max, ...) handle. */
static const mlx_dtype comb_types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16, MLX_FLOAT64,
                                       MLX_INT8,    MLX_UINT8,   MLX_INT32,    MLX_INT64,
                                       MLX_UINT64,  MLX_BOOL};
#define NCOMB (sizeof comb_types / sizeof *comb_types)

static char what_buf[256];
#define WHAT(...) (snprintf(what_buf, sizeof what_buf, __VA_ARGS__), what_buf)

/* Random values of dtype t (integers in [-50, 50), unsigned ones in
 * [0, 100); complex: random real parts). */
static mlx_array rnd(const int *shape, int nd, mlx_dtype t) {
  bool uns = t == MLX_UINT8 || t == MLX_UINT16 || t == MLX_UINT32 || t == MLX_UINT64;
  if (t == MLX_COMPLEX64) {
    mlx_array f = gpu_rand(shape, nd, MLX_FLOAT32, -4, 4), r = mlx_array_new();
    mlx_astype(&r, f, MLX_COMPLEX64, test_stream());
    mlx_array_eval(r);
    mlx_array_free(f);
    return r;
  }
  return gpu_rand(shape, nd, t, uns ? 0 : -50, uns ? 100 : 50);
}

/* An int array from values (host data). */
static mlx_array ints(const int *v, const int *shape, int nd, mlx_dtype t) {
  mlx_array a = mlx_array_new_data(v, shape, nd, MLX_INT32), r = mlx_array_new();
  mlx_astype(&r, a, t, test_stream());
  mlx_array_eval(r);
  mlx_array_free(a);
  return r;
}

/* Integer values in [lo, hi) as dtype t (sums and products of a few are
 * exact in every order; no negative zeros). */
static mlx_array rnd_int(const int *shape, int nd, mlx_dtype t, double lo, double hi) {
  mlx_array i = gpu_rand(shape, nd, MLX_INT32, lo, hi), r = mlx_array_new();
  mlx_astype(&r, i, t, test_stream());
  mlx_array_eval(r);
  mlx_array_free(i);
  return r;
}

/* Runs CALL (an expression of the stream `s` writing mlx_array *r) on the
 * GPU and on the CPU, checks the GPU made its result (when on_dev) and
 * compares the bits. */
#define SAME(on_dev, what, CALL)                                                        \
  do {                                                                                  \
    mlx_array r_[2] = {mlx_array_new(), mlx_array_new()};                               \
    for (int side_ = 0; side_ < 2; side_++) {                                           \
      mlx_stream s = side_ ? test_stream() : gpu_stream;                                \
      mlx_array *r = &r_[side_];                                                        \
      CHECK_OK(CALL);                                                                   \
      CHECK_OK(mlx_array_eval(*r));                                                     \
    }                                                                                   \
    if (on_dev) CHECK_MSG(made_on_gpu(r_[0]), "%s: the result was not made on the GPU", \
                          (what));                                                      \
    SAME_BITS(r_[0], r_[1], (what));                                                    \
    mlx_array_free(r_[0]);                                                              \
    mlx_array_free(r_[1]);                                                              \
  } while (0)

/* Views of x (shape {7, 12, 10}) that are not row-major. */
static mlx_array view_of(mlx_array x, int kind) {
  mlx_array r = mlx_array_new();
  switch (kind) {
  case 0: { /* transposed */
    int ax[] = {2, 0, 1};
    mlx_transpose_axes(&r, x, ax, 3, test_stream());
    break;
  }
  case 1: { /* sliced with steps */
    int st[] = {1, 0, 1}, sp[] = {7, 12, 9}, k[] = {2, 3, 2};
    mlx_slice(&r, x, st, 3, sp, 3, k, 3, test_stream());
    break;
  }
  case 2: { /* broadcast of one row */
    int st[] = {0, 0, 0}, sp[] = {1, 12, 10}, k[] = {1, 1, 1}, shape[] = {7, 12, 10};
    mlx_array row = mlx_array_new();
    mlx_slice(&row, x, st, 3, sp, 3, k, 3, test_stream());
    mlx_broadcast_to(&r, row, shape, 3, test_stream());
    mlx_array_free(row);
    break;
  }
  default: { /* inner columns: contiguous innermost, strided rows */
    int st[] = {0, 0, 2}, sp[] = {7, 12, 10}, k[] = {1, 1, 1};
    mlx_slice(&r, x, st, 3, sp, 3, k, 3, test_stream());
  }
  }
  return r;
}
#define NVIEWS 4

/* A view of a fresh random array (the view keeps its data alive). */
static mlx_array fresh_view(const int *shape, mlx_dtype t, int kind) {
  mlx_array x = rnd(shape, 3, t), v = view_of(x, kind);
  mlx_array_free(x);
  return v;
}

static void test_copy(void) {
  int shape[] = {7, 12, 10};
  for (size_t t = 0; t < NTYPES; t++) {
    mlx_array x = rnd(shape, 3, all_types[t]), xg = on_gpu(x);
    for (int v = 0; v < NVIEWS; v++) {
      mlx_array w = view_of(v % 2 ? xg : x, v);
      SAME(true, WHAT("contiguous dtype %d view %d", (int)all_types[t], v),
           mlx_contiguous(r, w, false, s));
      mlx_array_free(w);
    }
    SAME(false, "contiguous (already)", mlx_contiguous(r, x, false, s));
    mlx_array_free(x);
    mlx_array_free(xg);
  }
  /* aligned packs: 16-byte rows of a column slice; column-major allowed */
  int s2[] = {64, 128};
  mlx_array x = rnd(s2, 2, MLX_FLOAT32), c = mlx_array_new(), tr = mlx_array_new();
  int st[] = {0, 32}, sp[] = {64, 96}, k[] = {1, 1};
  mlx_slice(&c, x, st, 2, sp, 2, k, 2, test_stream());
  SAME(true, "contiguous of a column slice", mlx_contiguous(r, c, false, s));
  mlx_transpose(&tr, x, test_stream());
  SAME(false, "contiguous col-major allowed", mlx_contiguous(r, tr, true, s));
  SAME(true, "contiguous of a transpose", mlx_contiguous(r, tr, false, s));
  int e[] = {0, 5};
  mlx_array z = rnd(e, 2, MLX_FLOAT32), zt = mlx_array_new();
  mlx_transpose(&zt, z, test_stream());
  SAME(false, "contiguous of an empty transpose", mlx_contiguous(r, zt, false, s));
  mlx_array_free(x);
  mlx_array_free(c);
  mlx_array_free(tr);
  mlx_array_free(z);
  mlx_array_free(zt);
}

static void test_concatenate(void) {
  int sa[] = {7, 12, 10}, sb[] = {7, 3, 10}, se[] = {7, 0, 10};
  for (size_t t = 0; t < NTYPES; t++) {
    mlx_array a = rnd(sa, 3, all_types[t]), b = rnd(sb, 3, all_types[t]);
    mlx_array e = rnd(se, 3, all_types[t]), at = view_of(a, 1), ab = view_of(a, 2);
    mlx_vector_array v = mlx_vector_array_new();
    mlx_vector_array_append_value(v, a);
    mlx_vector_array_append_value(v, e);
    mlx_vector_array_append_value(v, b);
    mlx_vector_array_append_value(v, ab);
    SAME(true, WHAT("concatenate axis 1 dtype %d", (int)all_types[t]),
         mlx_concatenate_axis(r, v, 1, s));
    mlx_vector_array_free(v);
    v = mlx_vector_array_new();
    mlx_vector_array_append_value(v, at);
    mlx_vector_array_append_value(v, at);
    SAME(true, WHAT("concatenate axis 2 of strided views dtype %d", (int)all_types[t]),
         mlx_concatenate_axis(r, v, 2, s));
    SAME(true, "concatenate axis 0", mlx_concatenate_axis(r, v, 0, s));
    mlx_vector_array_free(v);
    mlx_array_free(a);
    mlx_array_free(b);
    mlx_array_free(e);
    mlx_array_free(at);
    mlx_array_free(ab);
  }
}

static void test_gather(void) {
  /* embedding lookup: out-of-range (clamped) and negative indices */
  int vs[] = {50, 64}, is[] = {3, 5};
  int iv[] = {0, 49, -1, 7, 7, 100, -50, -51, 3, 12, 0, 1, 2, 48, -200};
  mlx_dtype idt[] = {MLX_INT32, MLX_INT64, MLX_INT16, MLX_INT8};
  for (size_t t = 0; t < NTYPES; t++) {
    mlx_array w = rnd(vs, 2, all_types[t]), wt = mlx_array_new();
    mlx_transpose(&wt, w, test_stream());
    for (int k = 0; k < 4; k++) {
      mlx_array idx = ints(iv, is, 2, idt[k]);
      SAME(true, WHAT("take axis 0 dtype %d index dtype %d", (int)all_types[t], (int)idt[k]),
           mlx_take_axis(r, w, idx, 0, s));
      SAME(true, WHAT("take axis 1 of a transpose dtype %d", (int)all_types[t]),
           mlx_take_axis(r, wt, idx, 1, s));
      mlx_array_free(idx);
    }
    mlx_array_free(w);
    mlx_array_free(wt);
  }
  /* unsigned indices, values past INT64_MAX, device-resident indices */
  int uv[] = {0, 3, 200, 5};
  int us[] = {4};
  mlx_array w = rnd(vs, 2, MLX_BFLOAT16), u8 = ints(uv, us, 1, MLX_UINT8);
  uint64_t bigv = UINT64_MAX;
  mlx_array big = mlx_array_new_data(&bigv, NULL, 0, MLX_UINT64), ig = on_gpu(u8);
  SAME(true, "take uint8 indices", mlx_take_axis(r, w, u8, 0, s));
  SAME(true, "take uint64 max index", mlx_take_axis(r, w, big, 0, s));
  SAME(true, "take device indices", mlx_take_axis(r, w, ig, 1, s));
  SAME(true, "take flat", mlx_take(r, w, ig, s));
  /* several index arrays, slices larger than 1, broadcast indices */
  int a3[] = {6, 9, 8}, i0v[] = {0, 5, -1, 9}, i1v[] = {2, -3, 7};
  int s0[] = {4, 1}, s1[] = {1, 3};
  mlx_array a = rnd(a3, 3, MLX_FLOAT32), i0 = ints(i0v, s0, 2, MLX_INT32);
  mlx_array i1 = ints(i1v, s1, 2, MLX_INT64), at = fresh_view(a3, MLX_FLOAT32, 0);
  mlx_vector_array vi = mlx_vector_array_new();
  mlx_vector_array_append_value(vi, i0);
  mlx_vector_array_append_value(vi, i1);
  int axes[] = {0, 2}, sl[] = {2, 9, 3};
  SAME(true, "gather two axes, slices", mlx_gather(r, a, vi, axes, 2, sl, 3, s));
  int axes2[] = {2, 0}, sl2[] = {3, 4, 1};
  SAME(true, "gather of a transpose", mlx_gather(r, at, vi, axes2, 2, sl2, 3, s));
  int sl0[] = {0, 9, 8};
  SAME(false, "gather empty slice", mlx_gather(r, a, vi, axes, 2, sl0, 3, s));
  int es[] = {0};
  mlx_array ie = ints(iv, es, 1, MLX_INT32);
  SAME(false, "take with no indices", mlx_take_axis(r, a, ie, 1, s));
  mlx_vector_array_free(vi);
  mlx_array_free(w);
  mlx_array_free(u8);
  mlx_array_free(big);
  mlx_array_free(ig);
  mlx_array_free(a);
  mlx_array_free(i0);
  mlx_array_free(i1);
  mlx_array_free(at);
  mlx_array_free(ie);
}

static void test_gather_axis(void) {
  int as[] = {7, 12, 10}, is[] = {7, 5, 10}, ib[] = {1, 5, 1};
  for (size_t t = 0; t < NTYPES; t++) {
    mlx_array a = rnd(as, 3, all_types[t]), at = view_of(a, 1);
    mlx_array ix = gpu_rand(is, 3, MLX_INT32, -20, 20); /* out of range both ways */
    mlx_array ibc = gpu_rand(ib, 3, MLX_INT64, -12, 12);
    SAME(true, WHAT("take_along_axis dtype %d", (int)all_types[t]),
         mlx_take_along_axis(r, a, ix, 1, s));
    SAME(true, "take_along_axis broadcast indices", mlx_take_along_axis(r, a, ibc, 1, s));
    SAME(true, "take_along_axis strided", mlx_take_along_axis(r, at, ibc, 1, s));
    mlx_array_free(a);
    mlx_array_free(at);
    mlx_array_free(ix);
    mlx_array_free(ibc);
  }
}

static void test_arange(void) {
  struct {
    double start, stop, step;
    mlx_dtype t;
    bool on_dev;
  } c[] = {
      {0, 100, 3, MLX_INT32, true},      {5, -7, -2, MLX_INT64, true},
      {0, 300, 1, MLX_INT8, true},       {0, 300, 1, MLX_UINT8, true},
      {-3, 1e6, 7, MLX_UINT64, true},    {0, 10, 0.5, MLX_FLOAT32, true},
      {-4, 4, 0.25, MLX_FLOAT16, true},  {0, 200, 1, MLX_BFLOAT16, true},
      {1, 1e5, 3, MLX_FLOAT64, true},    {0, 20, 1, MLX_COMPLEX64, true},
      {0.1, 1, 0.1, MLX_FLOAT32, false}, {0, 5000, 1, MLX_FLOAT16, false},
      {0, 1, 1e-3, MLX_FLOAT64, false},  {3, 3, 1, MLX_FLOAT32, false},
      {0, 1000, 1.5, MLX_BFLOAT16, false},
  };
  for (size_t i = 0; i < sizeof c / sizeof *c; i++)
    SAME(c[i].on_dev, WHAT("arange(%g, %g, %g) dtype %d", c[i].start, c[i].stop, c[i].step,
                           (int)c[i].t),
         mlx_arange(r, c[i].start, c[i].stop, c[i].step, c[i].t, s));
}

static void test_dynamic_slice(void) {
  int as[] = {7, 12, 10}, ss[] = {3, 12, 4}, axes[] = {0, 2}, sv[3][2] = {{2, 5}, {6, 9}, {-4, 3}};
  int s2[] = {2};
  for (size_t t = 0; t < NTYPES; t++) {
    mlx_array a = rnd(as, 3, all_types[t]), at = view_of(a, 3);
    for (int k = 0; k < 3; k++) {
      mlx_array st = ints(sv[k], s2, 1, k == 2 ? MLX_INT8 : MLX_INT32), sg = on_gpu(st);
      SAME(false, WHAT("slice_dynamic host start %d dtype %d", k, (int)all_types[t]),
           mlx_slice_dynamic(r, a, st, axes, 2, ss, 3, s));
      SAME(true, WHAT("slice_dynamic device start %d dtype %d", k, (int)all_types[t]),
           mlx_slice_dynamic(r, a, sg, axes, 2, ss, 3, s));
      int ss2[] = {3, 12, 3};
      /* a view whose layout the copy kernel does not plan: the CPU's view
       * path (reading the start back) is right too */
      SAME(false, "slice_dynamic of a view, device start",
           mlx_slice_dynamic(r, at, sg, axes, 2, ss2, 3, s));
      mlx_array_free(st);
      mlx_array_free(sg);
    }
    mlx_array_free(a);
    mlx_array_free(at);
  }
}

static void test_slice_update(void) {
  int as[] = {7, 12, 10}, us[] = {3, 4, 10}, st[] = {1, 2, 0}, sp[] = {7, 10, 10}, k[] = {2, 2, 1};
  typedef int (*su_fn)(mlx_array *, const mlx_array, const mlx_array, const int *, size_t,
                       const int *, size_t, const int *, size_t, const mlx_stream);
  su_fn fns[] = {mlx_slice_update, mlx_slice_update_add, mlx_slice_update_prod,
                 mlx_slice_update_max, mlx_slice_update_min};
  for (size_t t = 0; t < NTYPES; t++) {
    mlx_array a = rnd(as, 3, all_types[t]), u = rnd(us, 3, all_types[t]);
    mlx_array ub = mlx_array_new(), ag = on_gpu(a);
    int one[] = {10};
    mlx_array row = rnd(one, 1, all_types[t]);
    mlx_broadcast_to(&ub, row, us, 3, test_stream());
    bool comb = all_types[t] != MLX_COMPLEX64;
    for (int f = 0; f < (comb ? 5 : 1); f++) {
      SAME(true, WHAT("slice_update mode %d dtype %d", f, (int)all_types[t]),
           fns[f](r, ag, u, st, 3, sp, 3, k, 3, s));
      SAME(true, WHAT("slice_update broadcast update mode %d", f),
           fns[f](r, a, ub, st, 3, sp, 3, k, 3, s));
    }
    int st2[] = {0, 0, 0}, sp2[] = {7, 12, 10}, k2[] = {1, 1, 1};
    int s3[] = {7, 12, 10};
    mlx_array full = rnd(s3, 3, all_types[t]), fv = view_of(full, 0), fvt = mlx_array_new();
    int back[] = {1, 2, 0};
    mlx_transpose_axes(&fvt, fv, back, 3, test_stream()); /* full's values, strided */
    SAME(true, "slice_update of everything, strided update",
         mlx_slice_update(r, a, fvt, st2, 3, sp2, 3, k2, 3, s));
    mlx_array_free(full);
    mlx_array_free(fv);
    mlx_array_free(fvt);
    mlx_array_free(a);
    mlx_array_free(u);
    mlx_array_free(ub);
    mlx_array_free(ag);
    mlx_array_free(row);
  }
}

/* A KV-cache step: the cache is a fresh GPU result that only the update
 * reads, so it is donated; dynamic position on the device. */
static void test_cache_update(void) {
  int cs[] = {2, 4, 32, 16}, ks[] = {2, 4, 1, 16}, one[] = {1};
  for (int pos = 0; pos < 3; pos++) {
    int pv[] = {pos == 2 ? 40 : pos * 7};
    mlx_array base = rnd(cs, 4, MLX_FLOAT16), k = rnd(ks, 4, MLX_FLOAT16);
    mlx_array p = ints(pv, one, 1, MLX_INT32), pg = on_gpu(p);
    int axes[] = {2};
    mlx_array res[2];
    for (int side = 0; side < 2; side++) {
      mlx_stream s = side ? test_stream() : gpu_stream;
      mlx_array cache = mlx_array_new();
      res[side] = mlx_array_new();
      CHECK_OK(mlx_copy(&cache, base, s)); /* lazy: the update is its only reader */
      CHECK_OK(mlx_slice_update_dynamic(&res[side], cache, k, side ? p : pg, axes, 1, s));
      mlx_array_free(cache);
      CHECK_OK(mlx_array_eval(res[side]));
    }
    CHECK_MSG(made_on_gpu(res[0]), "cache update pos %d: not made on the GPU", pos);
    SAME_BITS(res[0], res[1], WHAT("cache update at %d", pv[0]));
    mlx_array_free(res[0]);
    mlx_array_free(res[1]);
    /* other dtypes, a strided update, host start */
    mlx_array kt = fresh_view((int[]){7, 12, 10}, MLX_INT16, 1);
    mlx_array src = rnd((int[]){7, 12, 10}, 3, MLX_INT16);
    int ax2[] = {1, 0};
    int sv[] = {pos * 4 - 2, 9};
    mlx_array st = ints(sv, (int[]){2}, 1, MLX_INT64);
    SAME(true, WHAT("slice_update_dynamic strided update, start %d", sv[0]),
         mlx_slice_update_dynamic(r, src, kt, st, ax2, 2, s));
    mlx_array_free(kt);
    mlx_array_free(src);
    mlx_array_free(st);
    mlx_array_free(base);
    mlx_array_free(k);
    mlx_array_free(p);
    mlx_array_free(pg);
  }
}

static void test_scatter(void) {
  typedef int (*sc_fn)(mlx_array *, const mlx_array, const mlx_vector_array, const mlx_array,
                       const int *, size_t, const mlx_stream);
  sc_fn fns[] = {mlx_scatter, mlx_scatter_add, mlx_scatter_prod, mlx_scatter_max,
                 mlx_scatter_min};
  /* duplicates, negative and out-of-range (dropped) indices */
  int iv[] = {3, -1, 3, 20, 0, 3, -30, 5}, is[] = {8}, as[] = {8, 6}, us[] = {8, 1, 6};
  int axes[] = {0};
  for (size_t t = 0; t < NCOMB; t++) {
    mlx_dtype dt = comb_types[t];
    /* small integers: sums and products are exact in every order */
    mlx_array a = rnd_int(as, 2, dt, dt == MLX_BOOL ? 0 : -3, 4);
    mlx_array u = rnd_int(us, 3, dt, dt == MLX_BOOL ? 0 : -3, 4);
    mlx_array idx = ints(iv, is, 1, MLX_INT32);
    mlx_vector_array vi = mlx_vector_array_new();
    mlx_vector_array_append_value(vi, idx);
    for (int f = 0; f < 5; f++)
      SAME(true, WHAT("scatter mode %d dtype %d", f, (int)dt), fns[f](r, a, vi, u, axes, 1, s));
    mlx_vector_array_free(vi);
    mlx_array_free(a);
    mlx_array_free(u);
    mlx_array_free(idx);
  }
  /* plain assignment of every dtype, two index arrays, strided updates */
  int a3[] = {5, 6, 7}, i0v[] = {1, 4, 1, -1, 9}, i1v[] = {2, 2, 2, 6, 0}, s5[] = {5};
  int u3[] = {5, 1, 6, 1};
  for (size_t t = 0; t < NTYPES; t++) {
    mlx_array a = rnd(a3, 3, all_types[t]), u = rnd(u3, 4, all_types[t]);
    mlx_array i0 = ints(i0v, s5, 1, MLX_INT64), i1 = ints(i1v, s5, 1, MLX_UINT8);
    mlx_vector_array vi = mlx_vector_array_new();
    mlx_vector_array_append_value(vi, i0);
    mlx_vector_array_append_value(vi, i1);
    int ax2[] = {0, 2};
    SAME(true, WHAT("scatter two axes dtype %d", (int)all_types[t]),
         mlx_scatter(r, a, vi, u, ax2, 2, s));
    mlx_vector_array_free(vi);
    mlx_array_free(a);
    mlx_array_free(u);
    mlx_array_free(i0);
    mlx_array_free(i1);
  }
  /* many duplicates of float adds (integer values, exact) */
  int big[] = {4000}, bu[] = {4000, 1, 3}, ba[] = {10, 3};
  mlx_array bi = gpu_rand(big, 1, MLX_INT32, -12, 12), bv = rnd_int(bu, 3, MLX_FLOAT32, -8, 8);
  mlx_array b0 = rnd_int(ba, 2, MLX_FLOAT32, -8, 8);
  mlx_vector_array vi = mlx_vector_array_new();
  mlx_vector_array_append_value(vi, bi);
  SAME(true, "scatter_add 4000 updates into 10 rows", mlx_scatter_add(r, b0, vi, bv, axes, 1, s));
  SAME(true, "scatter 4000 updates into 10 rows (last wins)",
       mlx_scatter(r, b0, vi, bv, axes, 1, s));
  SAME(true, "scatter_max 4000", mlx_scatter_max(r, b0, vi, bv, axes, 1, s));
  mlx_vector_array_free(vi);
  mlx_array_free(bi);
  mlx_array_free(bv);
  mlx_array_free(b0);
}

static void test_scatter_axis(void) {
  int as[] = {6, 9, 5}, is[] = {6, 4, 5}, i1[] = {6, 1, 5};
  for (size_t t = 0; t < NTYPES; t++) {
    mlx_dtype dt = all_types[t];
    mlx_array a = rnd(as, 3, dt), v = rnd(is, 3, dt), v1 = rnd(i1, 3, dt);
    mlx_array ix = gpu_rand(is, 3, MLX_INT32, -11, 11), ix1 = gpu_rand(i1, 3, MLX_INT64, -9, 9);
    SAME(true, WHAT("put_along_axis dtype %d (duplicates, dropped)", (int)dt),
         mlx_put_along_axis(r, a, ix, v, 1, s));
    SAME(true, WHAT("put_along_axis one per row dtype %d", (int)dt),
         mlx_put_along_axis(r, a, ix1, v1, 1, s));
    if (dt != MLX_COMPLEX64) {
      mlx_array ai = rnd_int(as, 3, dt, 0, 4), vi = rnd_int(is, 3, dt, 0, 4);
      SAME(true, WHAT("scatter_add_axis dtype %d", (int)dt),
           mlx_scatter_add_axis(r, ai, ix, vi, 1, s));
      mlx_array_free(ai);
      mlx_array_free(vi);
    }
    mlx_array_free(a);
    mlx_array_free(v);
    mlx_array_free(v1);
    mlx_array_free(ix);
    mlx_array_free(ix1);
  }
}

static void test_remap(void) {
  int as[] = {7, 12, 10};
  const char *modes[] = {"constant", "edge", "reflect", "symmetric"};
  for (size_t t = 0; t < NTYPES; t++) {
    mlx_array a = rnd(as, 3, all_types[t]), at = view_of(a, 0);
    int one[] = {1};
    mlx_array pv = rnd(one, 1, all_types[t]), pv0 = mlx_array_new();
    mlx_reshape(&pv0, pv, NULL, 0, test_stream());
    int axes[] = {0, 2}, lo[] = {2, 13}, hi[] = {3, 0};
    for (int m = 0; m < 4; m++)
      SAME(true, WHAT("pad %s dtype %d", modes[m], (int)all_types[t]),
           mlx_pad(r, at, axes, 2, lo, 2, hi, 2, pv0, modes[m], s));
    int reps[] = {2, 1, 3};
    SAME(true, "tile", mlx_tile(r, at, reps, 3, s));
    SAME(true, "repeat", mlx_repeat_axis(r, a, 3, 1, s));
    int sh[] = {-3};
    SAME(true, "roll", mlx_roll_axis(r, at, sh, 1, 2, s));
    mlx_array_free(a);
    mlx_array_free(at);
    mlx_array_free(pv);
    mlx_array_free(pv0);
  }
}

int main(void) {
  if (!gpu_test_init()) return TEST_SKIP;
  test_seed(20261204);
  size_t base = test_active_memory();
  test_copy();
  test_concatenate();
  test_gather();
  test_gather_axis();
  test_arange();
  test_dynamic_slice();
  test_slice_update();
  test_cache_update();
  test_scatter();
  test_scatter_axis();
  test_remap();
  return gpu_test_done(base);
}
