/* Random numbers on the GPU against the CPU with the same keys: bits of
 * every width and many shapes (odd byte counts per key, batched keys as a
 * key array with leading dimensions, strided keys), key splits, uniform,
 * randint and bernoulli bit for bit; normal (complex too), gumbel, laplace
 * and truncated normal within a few ulps of their dtype (the CPU calls glibc's logf/expf/
 * log1pf, the GPU evaluates them in double and rounds once), with nearly
 * every element exact; categorical and permutations bit for bit; that the
 * results were made on the GPU; device memory back to its baseline. Skips
 * without a GPU. */
#include <math.h>

#include "core/node.h"
#include "gpu_bits.h"

#define SAME_BITS(got, want, what) GPU_SAME_BITS((got), (want), false, (what))
#include "ops/prim.h"

static char what_buf[256];
#define WHAT(...) (snprintf(what_buf, sizeof what_buf, __VA_ARGS__), what_buf)

/* Within 8 ulps of dtype t (relative, or absolute near 0), and (for the
 * float32-based types, over 100 elements or more) at least 80% of the
 * elements identical. glibc's logf/log1pf are not correctly rounded and the
 * GPU's stand-ins (double, rounded once) nearly are, so up to about 8% of
 * laplace draws differ in the last bit (seen on an H100); a systematic error
 * would leave few identical. float64 normals go through float32's erfinv
 * (MLX's arithmetic), so their tolerance is float32's ulp. */
static void near_bits(mlx_array got, mlx_array want, mlx_dtype t, const char *what) {
  test_checks++;
  if (!same_shape(got, want)) {
    test_failures++;
    fprintf(stderr, "%s: shape/dtype differ\n", what);
    return;
  }
  double eps = t == MLX_FLOAT16     ? 0x1p-10
               : t == MLX_BFLOAT16 ? 0x1p-7
                                   : 0x1p-23;
  double *g = test_values(got), *w = test_values(want);
  size_t n = mlx_array_size(got), bad = 0, exact = 0, first = 0;
  for (size_t i = 0; g && w && i < n; i++) {
    bool same = g[i] == w[i] || (isnan(g[i]) && isnan(w[i]));
    exact += same;
    if (!same && !(fabs(g[i] - w[i]) <= 8 * eps * (fabs(w[i]) + 1)) && bad++ == 0) first = i;
  }
  bool ratio_ok = t == MLX_FLOAT64 || n < 100 || exact * 100 >= n * 80;
  if (!g || !w || bad || !ratio_ok) {
    test_failures++;
    if (g && w)
      fprintf(stderr, "%s: %zu of %zu beyond tolerance (first %zu: gpu %.9g cpu %.9g), %zu exact\n",
              what, bad, n, first, g[first], w[first], exact);
    else
      fprintf(stderr, "%s: could not read values (%s)\n", what, test_last_error);
  }
  free(g);
  free(w);
}

enum { EXACT, NEAR };

/* Runs CALL (an expression of stream `s` writing mlx_array *r) on the GPU
 * and on the CPU, checks that the GPU made its result and compares them
 * (EXACT: bits; NEAR: near_bits in dtype T). */
#define BOTH(mode, T, what, CALL)                                                        \
  do {                                                                                   \
    mlx_array r_[2] = {mlx_array_new(), mlx_array_new()};                                \
    for (int side_ = 0; side_ < 2; side_++) {                                            \
      mlx_stream s = side_ ? test_stream() : gpu_stream;                                 \
      mlx_array *r = &r_[side_];                                                         \
      CHECK_MSG((CALL) == 0, "%s on the %s: %s", (what), side_ ? "CPU" : "GPU",          \
                test_last_error);                                                        \
      CHECK_MSG(mlx_array_eval(*r) == 0, "%s: eval on the %s: %s", (what),               \
                side_ ? "CPU" : "GPU", test_last_error);                                 \
    }                                                                                    \
    if (mlx_array_size(r_[1]) > 0)                                                       \
      CHECK_MSG(made_on_gpu(r_[0]), "%s: the result was not made on the GPU", (what));   \
    if ((mode) == EXACT) SAME_BITS(r_[0], r_[1], (what));                                \
    else near_bits(r_[0], r_[1], (T), (what));                                           \
    mlx_array_free(r_[0]);                                                               \
    mlx_array_free(r_[1]);                                                               \
  } while (0)

static mlx_array key_of(uint64_t seed) {
  mlx_array k = mlx_array_new();
  CHECK_OK(mlx_random_key(&k, seed));
  return k;
}

static mlx_array scalar_f32(float v) { return mlx_array_new_float(v); }

/* Shapes with odd element counts, counts not multiples of 2 or 4, empty. */
static const int shapes[][4] = {{1, 1},  {1, 2},   {1, 3},      {1, 5},   {1, 7},
                                {1, 0},  {2, 3, 5}, {3, 2, 3, 5}, {1, 1000}, {1, 4097},
                                {2, 1, 9}, {2, 33, 65}};
#define NSHAPES (sizeof shapes / sizeof *shapes)
#define SHAPE(i) (shapes[i] + 1), ((size_t)shapes[i][0])

static void check_bits(void) {
  static const uint64_t seeds[] = {0, 1, 42, 0xdeadbeefcafef00dull};
  for (size_t k = 0; k < 4; k++) {
    mlx_array key = key_of(seeds[k]);
    for (size_t i = 0; i < NSHAPES; i++)
      for (int width = 1; width <= 4; width *= 2)
        BOTH(EXACT, 0, WHAT("bits seed %zu shape %zu width %d", k, i, width),
             mlx_random_bits(r, SHAPE(i), width, key, s));
    mlx_array_free(key);
  }
  /* a 0-d draw */
  mlx_array key = key_of(7);
  for (int width = 1; width <= 4; width *= 2)
    BOTH(EXACT, 0, WHAT("bits 0-d width %d", width), mlx_random_bits(r, NULL, 0, width, key, s));
  mlx_array_free(key);
}

static void check_split(void) {
  mlx_array key = key_of(1234);
  static const int nums[] = {0, 1, 2, 3, 5, 17, 1000};
  for (size_t i = 0; i < sizeof nums / sizeof *nums; i++)
    BOTH(EXACT, 0, WHAT("split %d", nums[i]), mlx_random_split_num(r, key, nums[i], s));
  /* split twice: the first half of a GPU split as the next key */
  mlx_array a[2] = {mlx_array_new(), mlx_array_new()}, b[2] = {mlx_array_new(), mlx_array_new()};
  for (int side = 0; side < 2; side++) {
    mlx_stream s = side ? test_stream() : gpu_stream;
    mlx_array k1 = mlx_array_new(), k2 = mlx_array_new();
    CHECK_OK(mlx_random_split(&k1, &k2, key, s));
    CHECK_OK(mlx_random_split(&a[side], &b[side], k2, s));
    CHECK_OK(mlx_array_eval(a[side]));
    CHECK_OK(mlx_array_eval(b[side]));
    mlx_array_free(k1);
    mlx_array_free(k2);
  }
  SAME_BITS(a[0], a[1], "split of a split (first)");
  SAME_BITS(b[0], b[1], "split of a split (second)");
  for (int i = 0; i < 2; i++) {
    mlx_array_free(a[i]);
    mlx_array_free(b[i]);
  }
  mlx_array_free(key);
}

/* Bits from a key array with leading dimensions (what vmap of bits
 * builds): key i gives the i-th block. keys: contiguous, and a transposed
 * (strided) view. */
static void check_batched_keys(void) {
  static const struct {
    int nk, kshape[3], width, ndim, shape[4];
  } cases[] = {
      {2, {3, 2}, 4, 2, {3, 5}},        {2, {4, 2}, 1, 2, {4, 3}},
      {3, {2, 3, 2}, 2, 3, {2, 3, 7}},  {2, {5, 2}, 1, 2, {5, 1}},
      {2, {3, 2}, 2, 3, {3, 3, 3}},     {2, {6, 2}, 4, 2, {6, 1001}},
      {2, {2, 2}, 1, 2, {2, 0}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
    for (int strided = 0; strided < 2; strided++) {
      int nkeys = 1;
      for (int d = 0; d < cases[c].nk - 1; d++) nkeys *= cases[c].kshape[d];
      mlx_array k0 = key_of(99 + c), split = mlx_array_new(), keys = mlx_array_new();
      CHECK_OK(mlx_random_split_num(&split, k0, nkeys, test_stream()));
      if (strided) { /* (2, nkeys) contiguous, transposed back to (nkeys, 2) */
        mlx_array t = mlx_array_new(), c2 = mlx_array_new();
        CHECK_OK(mlx_transpose(&t, split, test_stream()));
        CHECK_OK(mlx_contiguous(&c2, t, false, test_stream()));
        CHECK_OK(mlx_transpose(&split, c2, test_stream()));
        mlx_array_free(t);
        mlx_array_free(c2);
      }
      CHECK_OK(mlx_reshape(&keys, split, cases[c].kshape, (size_t)cases[c].nk, test_stream()));
      CHECK_OK(mlx_array_eval(keys));
      mlx_dtype t = cases[c].width == 4 ? MLX_UINT32 : cases[c].width == 2 ? MLX_UINT16 : MLX_UINT8;
      mlx_array r[2];
      for (int side = 0; side < 2; side++) {
        lc_set_build_device(side ? LC_DEV_CPU : 0);
        struct lc_node *kn = keys.ctx;
        r[side].ctx = lc_node_new_op(LC_OP_RANDOM_BITS, t, cases[c].ndim, cases[c].shape, 1, &kn,
                                     NULL, 0);
        CHECK(r[side].ctx != NULL);
        CHECK_OK(mlx_array_eval(r[side]));
      }
      lc_set_build_device(LC_DEV_CPU);
      if (lc_shape_size(cases[c].ndim, cases[c].shape) > 0)
        CHECK_MSG(made_on_gpu(r[0]), "batched keys %zu: not made on the GPU", c);
      SAME_BITS(r[0], r[1], WHAT("batched keys case %zu strided %d", c, strided));
      for (int side = 0; side < 2; side++) mlx_array_free(r[side]);
      mlx_array_free(k0);
      mlx_array_free(split);
      mlx_array_free(keys);
    }
}

static const mlx_dtype float_types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16};

static void check_uniform(void) {
  mlx_array key = key_of(5), lo = scalar_f32(-2.5f), hi = scalar_f32(3.0f);
  mlx_array zero = scalar_f32(0.0f), one = scalar_f32(1.0f);
  int bs_lo[] = {5, 1}, bs_hi[] = {1, 7}, shape[] = {5, 7};
  mlx_array alo = test_rand_f32(bs_lo, 2, -10, 0), ahi = test_rand_f32(bs_hi, 2, 1, 10);
  for (size_t t = 0; t < 3; t++) {
    mlx_dtype dt = float_types[t];
    for (size_t i = 0; i < NSHAPES; i++) {
      BOTH(EXACT, 0, WHAT("uniform [0,1) dtype %d shape %zu", (int)dt, i),
           mlx_random_uniform(r, zero, one, SHAPE(i), dt, key, s));
      BOTH(EXACT, 0, WHAT("uniform [-2.5,3) dtype %d shape %zu", (int)dt, i),
           mlx_random_uniform(r, lo, hi, SHAPE(i), dt, key, s));
    }
    BOTH(EXACT, 0, WHAT("uniform broadcast bounds dtype %d", (int)dt),
         mlx_random_uniform(r, alo, ahi, shape, 2, dt, key, s));
  }
  mlx_array_free(key);
  mlx_array_free(lo);
  mlx_array_free(hi);
  mlx_array_free(zero);
  mlx_array_free(one);
  mlx_array_free(alo);
  mlx_array_free(ahi);
}

static void check_normal(void) {
  mlx_array key = key_of(77);
  static const mlx_dtype types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16, MLX_FLOAT64};
  int shape[] = {6, 9}, bs[] = {6, 1};
  mlx_array loc = test_rand_f32(bs, 2, -3, 3), scale = test_rand_f32(shape, 2, 0.5, 2);
  for (size_t t = 0; t < 4; t++) {
    mlx_dtype dt = types[t];
    for (size_t i = 0; i < NSHAPES; i++) {
      BOTH(NEAR, dt, WHAT("normal dtype %d shape %zu", (int)dt, i),
           mlx_random_normal(r, SHAPE(i), dt, 0.0f, 1.0f, key, s));
      BOTH(NEAR, dt, WHAT("normal loc/scale dtype %d shape %zu", (int)dt, i),
           mlx_random_normal(r, SHAPE(i), dt, 1.5f, 0.25f, key, s));
    }
    BOTH(NEAR, dt, WHAT("normal broadcast loc/scale dtype %d", (int)dt),
         mlx_random_normal_broadcast(r, shape, 2, dt, loc, scale, key, s));
  }
  mlx_array_free(loc);
  mlx_array_free(scale);
  mlx_array_free(key);
}

/* a's real or imaginary parts (float32, on the CPU) */
static mlx_array part(mlx_array a, bool imag) {
  mlx_array r = mlx_array_new();
  CHECK_OK(imag ? mlx_imag(&r, a, test_stream()) : mlx_real(&r, a, test_stream()));
  return r;
}

/* re + im i from two float32 arrays of one shape (a CPU array) */
static mlx_array complex_of(mlx_array re, mlx_array im) {
  mlx_array i = mlx_array_new_complex(0.0f, 1.0f), t = mlx_array_new(), r = mlx_array_new();
  CHECK_OK(mlx_multiply(&t, im, i, test_stream()));
  CHECK_OK(mlx_add(&r, re, t, test_stream()));
  CHECK_OK(mlx_array_eval(r));
  mlx_array_free(i), mlx_array_free(t);
  return r;
}

/* Complex normal draws: each part within float32's few ulps of the CPU's
 * (erfinv's logf as for real normals; scale * z is C's complex product on
 * both sides), scalar and broadcast complex loc and scale. */
static void check_complex_normal(void) {
  mlx_array key = key_of(4242);
  int shape[] = {6, 9}, bs[] = {6, 1};
  mlx_array lr = test_rand_f32(bs, 2, -3, 3), li = test_rand_f32(bs, 2, -3, 3);
  mlx_array sr = test_rand_f32(shape, 2, -2, 2), si = test_rand_f32(shape, 2, -2, 2);
  mlx_array loc = complex_of(lr, li), scale = complex_of(sr, si);
  for (int c = 0; c < 3; c++)
    for (size_t i = 0; i < NSHAPES; i++) {
      if (c == 2 && i > 0) break;
      mlx_array r[2] = {mlx_array_new(), mlx_array_new()};
      for (int side = 0; side < 2; side++) {
        mlx_stream s = side ? test_stream() : gpu_stream;
        int rc = c == 0   ? mlx_random_normal(&r[side], SHAPE(i), MLX_COMPLEX64, 0, 1, key, s)
                 : c == 1 ? mlx_random_normal(&r[side], SHAPE(i), MLX_COMPLEX64, 1.5f, 0.25f, key,
                                              s)
                          : mlx_random_normal_broadcast(&r[side], shape, 2, MLX_COMPLEX64, loc,
                                                        scale, key, s);
        CHECK_MSG(rc == 0, "complex normal %d shape %zu: %s", c, i, test_last_error);
        CHECK_OK(mlx_array_eval(r[side]));
      }
      const char *what = WHAT("complex normal %s shape %zu",
                              c == 0 ? "standard" : c == 1 ? "scalar loc/scale" : "broadcast", i);
      if (mlx_array_size(r[1]) > 0)
        CHECK_MSG(made_on_gpu(r[0]), "%s: the result was not made on the GPU", what);
      CHECK_MSG(mlx_array_dtype(r[0]) == MLX_COMPLEX64, "%s: dtype %d", what,
                (int)mlx_array_dtype(r[0]));
      for (int im = 0; im < 2; im++) {
        mlx_array g = part(r[0], im), w = part(r[1], im);
        near_bits(g, w, MLX_FLOAT32, what);
        mlx_array_free(g), mlx_array_free(w);
      }
      mlx_array_free(r[0]), mlx_array_free(r[1]);
    }
  mlx_array_free(lr), mlx_array_free(li), mlx_array_free(sr), mlx_array_free(si);
  mlx_array_free(loc), mlx_array_free(scale), mlx_array_free(key);
}

static void check_randint(void) {
  mlx_array key = key_of(31337);
  static const mlx_dtype types[] = {MLX_INT32, MLX_INT8, MLX_UINT8, MLX_INT16,
                                    MLX_UINT32, MLX_INT64, MLX_UINT64};
  mlx_array lo = mlx_array_new_int(-5), hi = mlx_array_new_int(17);
  mlx_array ulo = mlx_array_new_int(3), uhi = mlx_array_new_int(250);
  int lshape[] = {4, 1}, hshape[] = {1, 6}, shape[] = {4, 6};
  int lv[] = {-100, 0, 7, 1000000}, hv[] = {-99, 1, 50, 2000000, 3, 1 << 30};
  mlx_array alo = mlx_array_new_data(lv, lshape, 2, MLX_INT32);
  mlx_array ahi = mlx_array_new_data(hv, hshape, 2, MLX_INT32);
  for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
    bool uns = types[t] == MLX_UINT8 || types[t] == MLX_UINT32 || types[t] == MLX_UINT64;
    for (size_t i = 0; i < NSHAPES; i++)
      BOTH(EXACT, 0, WHAT("randint dtype %d shape %zu", (int)types[t], i),
           mlx_random_randint(r, uns ? ulo : lo, uns ? uhi : hi, SHAPE(i), types[t], key, s));
  }
  BOTH(EXACT, 0, "randint broadcast bounds int32",
       mlx_random_randint(r, alo, ahi, shape, 2, MLX_INT32, key, s));
  BOTH(EXACT, 0, "randint broadcast bounds int64",
       mlx_random_randint(r, alo, ahi, shape, 2, MLX_INT64, key, s));
  mlx_array_free(lo);
  mlx_array_free(hi);
  mlx_array_free(ulo);
  mlx_array_free(uhi);
  mlx_array_free(alo);
  mlx_array_free(ahi);
  mlx_array_free(key);
}

static void check_bernoulli(void) {
  mlx_array key = key_of(2024), p = scalar_f32(0.3f);
  int shape[] = {8, 13};
  mlx_array ap = test_rand_f32(shape, 2, 0, 1), ap64 = mlx_array_new();
  CHECK_OK(mlx_astype(&ap64, ap, MLX_FLOAT64, test_stream()));
  mlx_array ap16 = mlx_array_new();
  CHECK_OK(mlx_astype(&ap16, ap, MLX_FLOAT16, test_stream()));
  for (size_t i = 0; i < NSHAPES; i++)
    BOTH(EXACT, 0, WHAT("bernoulli p=0.3 shape %zu", i),
         mlx_random_bernoulli(r, p, SHAPE(i), key, s));
  BOTH(EXACT, 0, "bernoulli p array f32", mlx_random_bernoulli(r, ap, shape, 2, key, s));
  BOTH(EXACT, 0, "bernoulli p array f64", mlx_random_bernoulli(r, ap64, shape, 2, key, s));
  BOTH(EXACT, 0, "bernoulli p array f16", mlx_random_bernoulli(r, ap16, shape, 2, key, s));
  mlx_array_free(p);
  mlx_array_free(ap);
  mlx_array_free(ap64);
  mlx_array_free(ap16);
  mlx_array_free(key);
}

static void check_gumbel_laplace(void) {
  mlx_array key = key_of(555);
  static const mlx_dtype types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16, MLX_FLOAT64};
  for (size_t t = 0; t < 4; t++) {
    mlx_dtype dt = types[t];
    for (size_t i = 0; i < NSHAPES; i++) {
      if (dt != MLX_FLOAT64)
        BOTH(NEAR, dt, WHAT("gumbel dtype %d shape %zu", (int)dt, i),
             mlx_random_gumbel(r, SHAPE(i), dt, key, s));
      BOTH(NEAR, dt, WHAT("laplace dtype %d shape %zu", (int)dt, i),
           mlx_random_laplace(r, SHAPE(i), dt, 0.0f, 1.0f, key, s));
      BOTH(NEAR, dt, WHAT("laplace loc/scale dtype %d shape %zu", (int)dt, i),
           mlx_random_laplace(r, SHAPE(i), dt, -1.0f, 3.0f, key, s));
    }
  }
  mlx_array_free(key);
}

static void check_truncated_normal(void) {
  mlx_array key = key_of(8080), lo = scalar_f32(-1.0f), hi = scalar_f32(2.0f);
  mlx_array ninf = scalar_f32(-INFINITY);
  int lshape[] = {3, 1}, shape[] = {3, 11};
  mlx_array alo = test_rand_f32(lshape, 2, -3, -0.5), ahi = test_rand_f32(shape, 2, 0.1, 3);
  for (size_t t = 0; t < 3; t++) {
    mlx_dtype dt = float_types[t];
    for (size_t i = 0; i < NSHAPES; i++)
      BOTH(NEAR, dt, WHAT("truncated_normal dtype %d shape %zu", (int)dt, i),
           mlx_random_truncated_normal(r, lo, hi, SHAPE(i), dt, key, s));
    BOTH(NEAR, dt, WHAT("truncated_normal broadcast bounds dtype %d", (int)dt),
         mlx_random_truncated_normal(r, alo, ahi, shape, 2, dt, key, s));
    BOTH(NEAR, dt, WHAT("truncated_normal (-inf, 2) dtype %d", (int)dt),
         mlx_random_truncated_normal(r, ninf, hi, shape, 2, dt, key, s));
  }
  mlx_array_free(key);
  mlx_array_free(lo);
  mlx_array_free(hi);
  mlx_array_free(ninf);
  mlx_array_free(alo);
  mlx_array_free(ahi);
}

static void check_categorical(void) {
  mlx_array key = key_of(4242);
  int ls[] = {5, 10}, l3[] = {3, 4, 6};
  /* the GPU's gumbel noise is within a few ulps of the CPU's (mostly
   * identical): two candidates whose sums are that close are unlikely at
   * these sizes, so the samples are compared exactly */
  mlx_array l = test_rand_f32(ls, 2, -4, 4), l3d = test_rand_f32(l3, 3, -2, 2);
  mlx_array l16 = mlx_array_new(), l64 = mlx_array_new();
  CHECK_OK(mlx_astype(&l16, l, MLX_FLOAT16, test_stream()));
  CHECK_OK(mlx_astype(&l64, l, MLX_FLOAT64, test_stream()));
  BOTH(EXACT, 0, "categorical axis -1", mlx_random_categorical(r, l, -1, key, s));
  BOTH(EXACT, 0, "categorical axis 0", mlx_random_categorical(r, l, 0, key, s));
  BOTH(EXACT, 0, "categorical f16 logits", mlx_random_categorical(r, l16, -1, key, s));
  BOTH(EXACT, 0, "categorical f64 logits", mlx_random_categorical(r, l64, -1, key, s));
  BOTH(EXACT, 0, "categorical 3-d axis 1", mlx_random_categorical(r, l3d, 1, key, s));
  BOTH(EXACT, 0, "categorical num_samples",
       mlx_random_categorical_num_samples(r, l, -1, 37, key, s));
  int shape[] = {2, 5};
  BOTH(EXACT, 0, "categorical shape", mlx_random_categorical_shape(r, l, -1, shape, 2, key, s));
  mlx_array_free(l);
  mlx_array_free(l3d);
  mlx_array_free(l16);
  mlx_array_free(l64);
  mlx_array_free(key);
}

static void check_permutation(void) {
  mlx_array key = key_of(271828);
  static const int ns[] = {0, 1, 2, 10, 1000, 100000};
  for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
    BOTH(EXACT, 0, WHAT("permutation_arange %d", ns[i]),
         mlx_random_permutation_arange(r, ns[i], key, s));
  static const mlx_dtype types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_INT8, MLX_INT64,
                                    MLX_COMPLEX64, MLX_BOOL};
  int shape[] = {7, 12};
  mlx_array base = test_rand_f32(shape, 2, -50, 50);
  for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
    mlx_array x = mlx_array_new(), xt = mlx_array_new();
    CHECK_OK(mlx_astype(&x, base, types[t], test_stream()));
    CHECK_OK(mlx_transpose(&xt, x, test_stream()));
    for (int axis = -1; axis <= 1; axis++) {
      BOTH(EXACT, 0, WHAT("permutation dtype %d axis %d", (int)types[t], axis),
           mlx_random_permutation(r, x, axis, key, s));
      BOTH(EXACT, 0, WHAT("permutation of a transposed view dtype %d axis %d", (int)types[t],
                          axis),
           mlx_random_permutation(r, xt, axis, key, s));
    }
    mlx_array_free(x);
    mlx_array_free(xt);
  }
  mlx_array_free(base);
  mlx_array_free(key);
}

int main(void) {
  if (!gpu_test_init()) return TEST_SKIP;
  test_seed(20260107);
  size_t base = test_active_memory();
  check_bits();
  check_split();
  check_batched_keys();
  check_uniform();
  check_normal();
  check_complex_normal();
  check_randint();
  check_bernoulli();
  check_gumbel_laplace();
  check_truncated_normal();
  check_categorical();
  check_permutation();
  return gpu_test_done(base);
}
