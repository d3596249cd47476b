/* divmod, linspace, tri/eye, tril/triu, diag, hadamard_transform,
 * masked_scatter and number_of_elements on the GPU (gpu/cuda/eval_misc.c)
 * against the CPU stream, bit for bit (float NaNs match any NaN): every
 * real dtype (complex too where the kernel only moves items), contiguous,
 * transposed, sliced and broadcast inputs, donated inputs, empty arrays
 * and each primitive's edge cases (division by zero, INT_MIN // -1, k
 * offsets past the matrix, one-element linspaces, hadamard rows longer
 * than a shared-memory tile, masks with too few values). Every result
 * must have been made on the GPU: a CPU fallback would leave a host copy.
 * Custom functions (transforms/custom.c) too, against the plain function.
 * Skips without a GPU. */
#include <math.h>

#include "core/node.h"
#include "ops/size.h"
#include "gpu_bits.h"

/* A NaN matches any NaN. */
#define SAME_BITS(got, want, what) GPU_SAME_BITS((got), (want), true, (what))

static const mlx_dtype real_types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16, MLX_FLOAT64,
                                       MLX_INT8,    MLX_UINT8,   MLX_INT16,    MLX_UINT16,
                                       MLX_INT32,   MLX_UINT32,  MLX_INT64,    MLX_UINT64,
                                       MLX_BOOL};
#define NREAL (sizeof real_types / sizeof *real_types)
static const mlx_dtype copy_types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_FLOAT64, MLX_INT8,
                                       MLX_UINT16,  MLX_INT64,   MLX_BOOL,    MLX_COMPLEX64};
#define NCOPY (sizeof copy_types / sizeof *copy_types)

static char what_buf[256];
#define WHAT(...) (snprintf(what_buf, sizeof what_buf, __VA_ARGS__), what_buf)

static const char *tname(mlx_dtype t) {
  switch (t) {
  case MLX_BOOL: return "bool";
  case MLX_UINT8: return "uint8";
  case MLX_UINT16: return "uint16";
  case MLX_UINT32: return "uint32";
  case MLX_UINT64: return "uint64";
  case MLX_INT8: return "int8";
  case MLX_INT16: return "int16";
  case MLX_INT32: return "int32";
  case MLX_INT64: return "int64";
  case MLX_FLOAT16: return "float16";
  case MLX_FLOAT32: return "float32";
  case MLX_FLOAT64: return "float64";
  case MLX_BFLOAT16: return "bfloat16";
  case MLX_COMPLEX64: return "complex64";
  }
  return "?";
}

static bool is_uns(mlx_dtype t) {
  return t == MLX_UINT8 || t == MLX_UINT16 || t == MLX_UINT32 || t == MLX_UINT64;
}

/* Random values of dtype t (integers in [-50, 50), unsigned in [0, 100),
 * bool about half true; complex: random real and imaginary parts). */
static mlx_array rnd(const int *shape, int nd, mlx_dtype t) {
  if (t == MLX_COMPLEX64) {
    mlx_array re = gpu_rand(shape, nd, MLX_FLOAT32, -4, 4), im = gpu_rand(shape, nd, MLX_FLOAT32, -4, 4);
    mlx_array i = mlx_array_new(), r = mlx_array_new(), j = mlx_array_new_complex(0, 1);
    mlx_multiply(&i, im, j, test_stream());
    mlx_add(&r, re, i, test_stream());
    mlx_array_eval(r);
    mlx_array_free(re), mlx_array_free(im), mlx_array_free(i), mlx_array_free(j);
    return r;
  }
  if (t == MLX_BOOL) {
    mlx_array f = gpu_rand(shape, nd, MLX_FLOAT32, -1, 1), z = mlx_array_new_float(0);
    mlx_array r = mlx_array_new();
    mlx_greater(&r, f, z, test_stream());
    mlx_array_eval(r);
    mlx_array_free(f), mlx_array_free(z);
    return r;
  }
  return gpu_rand(shape, nd, t, is_uns(t) ? 0 : -50, is_uns(t) ? 100 : 50);
}

/* Checks r[0] (GPU) against r[1] (CPU): made on the GPU (when on_dev and
 * not empty), then the bits. Frees both. */
static void judge(mlx_array *r, bool on_dev, const char *what) {
  if (on_dev && mlx_array_size(r[0]))
    CHECK_MSG(made_on_gpu(r[0]), "%s: the result was not made on the GPU", what);
  SAME_BITS(r[0], r[1], what);
  mlx_array_free(r[0]);
  mlx_array_free(r[1]);
}

/* Runs CALL (an expression of the stream `s` writing mlx_array *r) on the
 * GPU and on the CPU and judges the results. */
#define SAME(on_dev, what, CALL)                                          \
  do {                                                                    \
    mlx_array r_[2] = {mlx_array_new(), mlx_array_new()};                 \
    for (int side_ = 0; side_ < 2; side_++) {                             \
      mlx_stream s = side_ ? test_stream() : gpu_stream;                  \
      mlx_array *r = &r_[side_];                                          \
      CHECK_OK(CALL);                                                     \
      CHECK_OK(mlx_array_eval(*r));                                       \
    }                                                                     \
    judge(r_, (on_dev), (what));                                          \
  } while (0)

/* Layouts of a 2-d x of shape (R, C) giving an (R, C) array on stream s:
 * 0 x itself, 1 the transpose of a (C, R) array (caller passes xt), 2
 * every other column of an (R, 2C) array (caller passes xw), 3 one row
 * broadcast. */
static int layout(mlx_array *r, int kind, mlx_array x, mlx_array xt, mlx_array xw, int R, int C,
                  mlx_stream s) {
  switch (kind) {
  case 0: return mlx_copy(r, x, s);
  case 1: return mlx_transpose(r, xt, s);
  case 2: {
    int st[] = {0, 0}, sp[] = {R, 2 * C}, k[] = {1, 2};
    return mlx_slice(r, xw, st, 2, sp, 2, k, 2, s);
  }
  default: {
    int st[] = {1, 0}, sp[] = {2, C}, k[] = {1, 1}, sh[] = {R, C};
    mlx_array row = mlx_array_new();
    int rc = mlx_slice(&row, x, st, 2, sp, 2, k, 2, s) || mlx_broadcast_to(r, row, sh, 2, s);
    mlx_array_free(row);
    return rc;
  }
  }
}
static const char *layout_name[] = {"contiguous", "transposed", "strided", "broadcast"};

/* A host array of dtype t (integer or float) from int64 / double values. */
static mlx_array host_ints(const long long *v, int n, mlx_dtype t) {
  uint8_t buf[64 * 8];
  size_t isz = mlx_dtype_size(t);
  for (int i = 0; i < n; i++) {
    uint64_t u = (uint64_t)v[i];
    memcpy(buf + (size_t)i * isz, &u, isz); /* little-endian: the low bytes */
  }
  return mlx_array_new_data(buf, &n, 1, t);
}
static mlx_array host_floats(const double *v, int n, mlx_dtype t) {
  mlx_array d = mlx_array_new_data(v, &n, 1, MLX_FLOAT64), r = mlx_array_new();
  mlx_astype(&r, d, t, test_stream());
  mlx_array_eval(r);
  mlx_array_free(d);
  return r;
}

/* ---- divmod ---- */

static int divmod_k(mlx_array *r, mlx_array a, mlx_array b, int k, mlx_stream s) {
  mlx_vector_array v = mlx_vector_array_new();
  int rc = mlx_divmod(&v, a, b, s) || mlx_vector_array_get(r, v, (size_t)k);
  mlx_vector_array_free(v);
  return rc;
}

/* divmod of (x in layout kind, y) (which 0) or (y, x in layout kind). */
static int divmod_layout(mlx_array *r, int kind, int which, mlx_array x, mlx_array xt,
                         mlx_array xw, int R, int C, mlx_array y, int k, mlx_stream s) {
  mlx_array a = mlx_array_new();
  int rc = layout(&a, kind, x, xt, xw, R, C, s) ||
           (which ? divmod_k(r, y, a, k, s) : divmod_k(r, a, y, k, s));
  mlx_array_free(a);
  return rc;
}

static void test_divmod(void) {
  const int R = 37, C = 53, sh[] = {R, C}, sht[] = {C, R}, shw[] = {R, 2 * C};
  for (size_t ti = 0; ti < NREAL; ti++) {
    mlx_dtype t = real_types[ti];
    const char *tn = tname(t);
    mlx_array x = rnd(sh, 2, t), xt = rnd(sht, 2, t), xw = rnd(shw, 2, t);
    /* divisors with zeros: values in a narrower range */
    mlx_array y = t == MLX_BOOL ? rnd(sh, 2, t) : gpu_rand(sh, 2, t, is_uns(t) ? 0 : -4, 5);
    for (int kind = 0; kind < 4; kind++)
      for (int k = 0; k < 2; k++) {
        SAME(true, WHAT("divmod %s %s x, output %d", tn, layout_name[kind], k),
             divmod_layout(r, kind, 0, x, xt, xw, R, C, y, k, s));
        SAME(true, WHAT("divmod %s y %s, output %d", tn, layout_name[kind], k),
             divmod_layout(r, kind, 1, x, xt, xw, R, C, y, k, s));
      }
    /* a row broadcast against a matrix, by the builder */
    int shr[] = {C};
    mlx_array row = t == MLX_BOOL ? rnd(shr, 1, t) : gpu_rand(shr, 1, t, is_uns(t) ? 0 : -4, 5);
    for (int k = 0; k < 2; k++) SAME(true, WHAT("divmod %s by a row, %d", tn, k), divmod_k(r, x, row, k, s));
    mlx_array_free(row);
    /* the rules' edges */
    mlx_array ex, ey;
    if (t == MLX_FLOAT32 || t == MLX_FLOAT16 || t == MLX_BFLOAT16 || t == MLX_FLOAT64) {
      const double vx[] = {5, -5, 5, -5, 0, -0.0, INFINITY, 1, NAN, 3, 7.5, -7.5, 1e30, -2.5};
      const double vy[] = {3, 3, -3, -3, 2, 2, 2, INFINITY, 1, 0, 0, 0, 1e-30, -INFINITY};
      ex = host_floats(vx, 14, t);
      ey = host_floats(vy, 14, t);
    } else if (t == MLX_BOOL) {
      const long long vx[] = {0, 0, 1, 1}, vy[] = {0, 1, 0, 1};
      ex = host_ints(vx, 4, t);
      ey = host_ints(vy, 4, t);
    } else {
      int bits = 8 * (int)mlx_dtype_size(t);
      long long mn = is_uns(t) ? 0 : (long long)(~0ull << (bits - 1));
      long long mx = is_uns(t) ? (long long)(bits == 64 ? ~0ull : (1ull << bits) - 1)
                               : (long long)((1ull << (bits - 1)) - 1);
      const long long vx[] = {mn, mn, mn, 7, -7, 7, -7, 0, 5, mx, -1, mx, 6, -6, mn, mx};
      const long long vy[] = {-1, 1, 0, 2, 2, -2, -2, 0, 0, -1, mn, mx, 3, 3, mx, mn};
      ex = host_ints(vx, 16, t);
      ey = host_ints(vy, 16, t);
    }
    for (int k = 0; k < 2; k++) SAME(true, WHAT("divmod %s edges, %d", tn, k), divmod_k(r, ex, ey, k, s));
    if (t == MLX_FLOAT64) { /* beyond float's range: remainders in double */
      const double bx[] = {1e300, -3e250, 1e-310, 7.3e100, -1e200, 5e-320};
      const double by[] = {7, 3.3, 1e-300, -1e-100, 1e199, 3e-321};
      mlx_array bxa = host_floats(bx, 6, t), bya = host_floats(by, 6, t);
      for (int k = 0; k < 2; k++)
        SAME(true, WHAT("divmod float64 beyond float, %d", k), divmod_k(r, bxa, bya, k, s));
      mlx_array_free(bxa), mlx_array_free(bya);
    }
    int zero[] = {0, 3};
    mlx_array e0 = mlx_array_new(), e1 = mlx_array_new();
    mlx_zeros(&e0, zero, 2, t, test_stream());
    mlx_zeros(&e1, zero, 2, t, test_stream());
    SAME(true, WHAT("divmod %s empty", tn), divmod_k(r, e0, e1, 1, s));
    mlx_array_free(e0), mlx_array_free(e1), mlx_array_free(ex), mlx_array_free(ey);
    mlx_array_free(x), mlx_array_free(xt), mlx_array_free(xw), mlx_array_free(y);
  }
}

/* ---- linspace ---- */

static void test_linspace(void) {
  const struct { double a, b; int num; } c[] = {
      {0, 1, 50},       {-3.5, 7.25, 1000}, {5, -5, 7},  {1, 1, 1},      {2.5, 9, 0},
      {-100, 100, 1},   {0, 255, 256},      {-7.3, 13.9, 33}, {1e6, -1e6, 1 << 20},
      {0.1, 0.7, 2},    {-300, 300, 601},   {3.999, 3.999, 5},
  };
  for (size_t ti = 0; ti < NREAL; ti++)
    for (size_t i = 0; i < sizeof c / sizeof *c; i++)
      SAME(true, WHAT("linspace %s (%g, %g, %d)", tname(real_types[ti]), c[i].a, c[i].b,
                      c[i].num),
           mlx_linspace(r, c[i].a, c[i].b, c[i].num, real_types[ti], s));
}

/* ---- tri, eye, tril, triu ---- */

static void test_tri(void) {
  const int c[][3] = {{5, 7, 0},  {7, 5, -2},  {6, 6, 3},   {4, 9, -10}, {9, 4, 20},
                      {0, 3, 0},  {1, 1, 0},   {300, 257, 5}, {3, 8, -3}, {8, 3, 7}};
  for (size_t ti = 0; ti < NCOPY; ti++)
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
      mlx_dtype t = copy_types[ti];
      SAME(true, WHAT("tri %s (%d, %d, %d)", tname(t), c[i][0], c[i][1], c[i][2]),
           mlx_tri(r, c[i][0], c[i][1], c[i][2], t, s));
      SAME(true, WHAT("eye %s (%d, %d, %d)", tname(t), c[i][0], c[i][1], c[i][2]),
           mlx_eye(r, c[i][0], c[i][1], c[i][2], t, s));
    }
}

static int tril_of(mlx_array *r, mlx_array a, int k, int up, mlx_stream s) {
  return up ? mlx_triu(r, a, k, s) : mlx_tril(r, a, k, s);
}
static int tril_layout(mlx_array *r, int kind, mlx_array x, mlx_array xt, mlx_array xw, int R,
                       int C, int k, int up, mlx_stream s) {
  mlx_array a = mlx_array_new();
  int rc = layout(&a, kind, x, xt, xw, R, C, s) || tril_of(r, a, k, up, s);
  mlx_array_free(a);
  return rc;
}
/* Of a fresh node only the tril holds: its buffer may be taken over. */
static int tril_fresh(mlx_array *r, mlx_array b, int k, int up, mlx_stream s) {
  mlx_array a = mlx_array_new();
  int rc = mlx_add(&a, b, b, s) || tril_of(r, a, k, up, s);
  mlx_array_free(a);
  return rc;
}

static void test_tril(void) {
  const int R = 13, C = 17, sh[] = {R, C}, sht[] = {C, R}, shw[] = {R, 2 * C}, sb[] = {3, 9, 11};
  const int ks[] = {0, 2, -3, 40, -40, 16, -12};
  for (size_t ti = 0; ti < NCOPY; ti++) {
    mlx_dtype t = copy_types[ti];
    const char *tn = tname(t);
    mlx_array x = rnd(sh, 2, t), xt = rnd(sht, 2, t), xw = rnd(shw, 2, t), b = rnd(sb, 3, t);
    for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++) {
      int k = ks[ki];
      for (int up = 0; up < 2; up++) {
        for (int kind = 0; kind < 4; kind++)
          SAME(true, WHAT("%s %s %s k=%d", up ? "triu" : "tril", tn, layout_name[kind], k),
               tril_layout(r, kind, x, xt, xw, R, C, k, up, s));
        SAME(true, WHAT("%s %s batched k=%d", up ? "triu" : "tril", tn, k),
             tril_of(r, b, k, up, s));
        if (t != MLX_BOOL)
          SAME(true, WHAT("%s %s donated k=%d", up ? "triu" : "tril", tn, k),
               tril_fresh(r, b, k, up, s));
      }
    }
    int e[] = {4, 0, 5};
    mlx_array z = mlx_array_new();
    mlx_zeros(&z, e, 3, t, test_stream());
    SAME(true, WHAT("tril %s empty", tn), mlx_tril(r, z, 1, s));
    mlx_array_free(z), mlx_array_free(x), mlx_array_free(xt), mlx_array_free(xw), mlx_array_free(b);
  }
}

/* ---- diag of a vector ---- */

/* diag of w[start:stop:step]. */
static int diag_slice(mlx_array *r, mlx_array w, int start, int stop, int step, int k,
                      mlx_stream s) {
  mlx_array a = mlx_array_new();
  int rc = mlx_slice(&a, w, &start, 1, &stop, 1, &step, 1, s) || mlx_diag(r, a, k, s);
  mlx_array_free(a);
  return rc;
}

static void test_diag(void) {
  const int ks[] = {0, 3, -4, 1, -1, 12};
  int n = 9, nw = 20, ne = 0;
  for (size_t ti = 0; ti < NCOPY; ti++) {
    mlx_dtype t = copy_types[ti];
    const char *tn = tname(t);
    mlx_array v = rnd(&n, 1, t), w = rnd(&nw, 1, t), e = mlx_array_new();
    mlx_zeros(&e, &ne, 1, t, test_stream());
    for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++) {
      int k = ks[ki];
      SAME(true, WHAT("diag %s k=%d", tn, k), mlx_diag(r, v, k, s));
      SAME(true, WHAT("diag %s strided k=%d", tn, k), diag_slice(r, w, 1, 20, 3, k, s));
      SAME(true, WHAT("diag %s reversed k=%d", tn, k), diag_slice(r, w, 19, -21, -1, k, s));
      SAME(true, WHAT("diag %s empty k=%d", tn, k), mlx_diag(r, e, k, s));
    }
    mlx_array_free(v), mlx_array_free(w), mlx_array_free(e);
  }
}

/* ---- hadamard_transform ---- */

static int had_transposed(mlx_array *r, mlx_array xt, mlx_optional_float sc, mlx_stream s) {
  mlx_array a = mlx_array_new();
  int rc = mlx_transpose(&a, xt, s) || mlx_hadamard_transform(r, a, sc, s);
  mlx_array_free(a);
  return rc;
}
/* A fresh input only the transform holds: transformed in place. */
static int had_fresh(mlx_array *r, mlx_array x, mlx_optional_float sc, mlx_stream s) {
  mlx_array a = mlx_array_new();
  int rc = mlx_multiply(&a, x, x, s) || mlx_hadamard_transform(r, a, sc, s);
  mlx_array_free(a);
  return rc;
}

static void test_hadamard(void) {
  const int c[][2] = {{7, 1},   {5, 2},    {9, 8},     {3, 64},   {4, 1024}, {2, 4096},
                      {3, 8192}, {1, 16384}, {2, 65536}, {1000, 4}, {1, 1 << 20}};
  const mlx_dtype types[] = {MLX_FLOAT32, MLX_FLOAT64, MLX_FLOAT16, MLX_BFLOAT16, MLX_INT32};
  for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
      mlx_dtype t = types[ti];
      const char *tn = tname(t);
      int sh[] = {c[i][0], c[i][1]}, sht[] = {c[i][1], c[i][0]};
      mlx_array x = rnd(sh, 2, t);
      mlx_optional_float none = {0, false}, sc = {0.37f, true};
      SAME(true, WHAT("hadamard %s (%d, %d)", tn, sh[0], sh[1]),
           mlx_hadamard_transform(r, x, none, s));
      SAME(true, WHAT("hadamard %s (%d, %d) scale", tn, sh[0], sh[1]),
           mlx_hadamard_transform(r, x, sc, s));
      if (sh[1] <= 8192) {
        mlx_array xt = rnd(sht, 2, t);
        SAME(true, WHAT("hadamard %s (%d, %d) transposed", tn, sh[0], sh[1]),
             had_transposed(r, xt, none, s));
        mlx_array_free(xt);
      }
      SAME(true, WHAT("hadamard %s (%d, %d) donated", tn, sh[0], sh[1]), had_fresh(r, x, sc, s));
      mlx_array_free(x);
    }
}

/* ---- masked_scatter ---- */

/* masked_scatter with a (which 0) or the mask (which 1) in layout kind. */
static int ms_layout(mlx_array *r, int kind, int which, mlx_array x, mlx_array xt, mlx_array xw,
                     int R, int C, mlx_array a0, mlx_array m0, mlx_array v, mlx_stream s) {
  mlx_array a = mlx_array_new();
  int rc = layout(&a, kind, x, xt, xw, R, C, s) ||
           (which ? mlx_masked_scatter(r, a0, a, v, s) : mlx_masked_scatter(r, a, m0, v, s));
  mlx_array_free(a);
  return rc;
}
/* Values read through a stride of 2 (MLX takes values of at most one
 * dimension more than the input has beyond the mask's). */
static int ms_tvalues(mlx_array *r, mlx_array x, mlx_array m, mlx_array v2, mlx_stream s) {
  mlx_array a = mlx_array_new();
  int start = 0, stop = (int)mlx_array_size(v2), step = 2;
  int rc = mlx_slice(&a, v2, &start, 1, &stop, 1, &step, 1, s) || mlx_masked_scatter(r, x, m, a, s);
  mlx_array_free(a);
  return rc;
}
/* Into a fresh row-major node only the scatter holds (taken over). */
static int ms_fresh(mlx_array *r, mlx_array xt, mlx_array m, mlx_array v, mlx_stream s) {
  mlx_array a = mlx_array_new(), b = mlx_array_new();
  int rc = mlx_transpose(&a, xt, s) || mlx_contiguous(&b, a, false, s) ||
           mlx_masked_scatter(r, b, m, v, s);
  mlx_array_free(a);
  mlx_array_free(b);
  return rc;
}

static void test_masked_scatter(void) {
  const int R = 37, C = 41, sh[] = {R, C}, sht[] = {C, R}, shw[] = {R, 2 * C}, nall = R * C;
  for (size_t ti = 0; ti < NCOPY; ti++) {
    mlx_dtype t = copy_types[ti];
    const char *tn = tname(t);
    mlx_array x = rnd(sh, 2, t), xt = rnd(sht, 2, t), xw = rnd(shw, 2, t);
    mlx_array m = rnd(sh, 2, MLX_BOOL), mt = rnd(sht, 2, MLX_BOOL), mw = rnd(shw, 2, MLX_BOOL);
    int nall2 = 2 * nall;
    mlx_array v = rnd(&nall, 1, t), vt = rnd(&nall2, 1, t);
    for (int kind = 0; kind < 4; kind++) {
      SAME(true, WHAT("masked_scatter %s a %s", tn, layout_name[kind]),
           ms_layout(r, kind, 0, x, xt, xw, R, C, x, m, v, s));
      SAME(true, WHAT("masked_scatter %s mask %s", tn, layout_name[kind]),
           ms_layout(r, kind, 1, m, mt, mw, R, C, x, m, v, s));
    }
    SAME(true, WHAT("masked_scatter %s strided values", tn), ms_tvalues(r, x, m, vt, s));
    SAME(true, WHAT("masked_scatter %s donated", tn), ms_fresh(r, xt, m, v, s));
    /* exactly as many values as set elements, counted on the host */
    mlx_array cnt = mlx_array_new();
    CHECK_OK(mlx_sum(&cnt, m, false, test_stream()));
    CHECK_OK(mlx_array_eval(cnt));
    mlx_array cnt32 = mlx_array_new();
    mlx_astype(&cnt32, cnt, MLX_INT32, test_stream());
    mlx_array_eval(cnt32);
    int ncnt = *mlx_array_data_int32(cnt32);
    mlx_array vs = rnd(&ncnt, 1, t), vs1 = mlx_array_new();
    SAME(true, WHAT("masked_scatter %s exact values", tn), mlx_masked_scatter(r, x, m, vs, s));
    /* one value short: an error on both sides */
    if (ncnt > 0) {
      int st[] = {1}, sp[] = {ncnt}, step[] = {1};
      mlx_slice(&vs1, vs, st, 1, sp, 1, step, 1, test_stream());
      for (int side = 0; side < 2; side++) {
        mlx_array rr = mlx_array_new();
        CHECK_OK(mlx_masked_scatter(&rr, x, m, vs1, side ? test_stream() : gpu_stream));
        CHECK_FAILS(mlx_array_eval(rr), "does not have enough elements");
        mlx_array_free(rr);
      }
    }
    /* nothing set, with no values at all */
    mlx_array f = mlx_array_new(), ff = mlx_array_new_bool(false), e = mlx_array_new();
    int zero = 0;
    mlx_broadcast_to(&f, ff, sh, 2, test_stream());
    mlx_zeros(&e, &zero, 1, t, test_stream());
    SAME(true, WHAT("masked_scatter %s empty mask", tn), mlx_masked_scatter(r, x, f, e, s));
    mlx_array_free(cnt), mlx_array_free(cnt32), mlx_array_free(vs), mlx_array_free(vs1);
    mlx_array_free(f), mlx_array_free(ff), mlx_array_free(e);
    mlx_array_free(x), mlx_array_free(xt), mlx_array_free(xw);
    mlx_array_free(m), mlx_array_free(mt), mlx_array_free(mw), mlx_array_free(v), mlx_array_free(vt);
  }
  /* many tiles (more than one chunk of the tile scan), mostly unset */
  const int big[] = {1000, 3001};
  int nbig = big[0] * big[1];
  mlx_array x = rnd(big, 2, MLX_FLOAT32), u = gpu_rand(big, 2, MLX_FLOAT32, 0, 1);
  mlx_array th = mlx_array_new_float(0.9f), m = mlx_array_new(), v = rnd(&nbig, 1, MLX_FLOAT32);
  mlx_greater(&m, u, th, test_stream());
  mlx_array_eval(m);
  SAME(true, "masked_scatter large", mlx_masked_scatter(r, x, m, v, s));
  mlx_array_free(x), mlx_array_free(u), mlx_array_free(th), mlx_array_free(m), mlx_array_free(v);
}

/* ---- number_of_elements ---- */

/* The primitive itself on s's device (mlx_number_of_elements makes a host
 * constant; the primitive comes from vmap and shapeless compile). */
static int noe_node(mlx_array *r, mlx_array x, const int *axes, int na, bool inv, mlx_dtype t,
                    mlx_stream s) {
  int saved = lc_build_device();
  lc_set_build_device(mlx_stream_equal(s, gpu_stream) ? 0 : LC_DEV_CPU);
  struct lc_node *n = lc_number_of_elements(x.ctx, axes, na, inv, t);
  lc_set_build_device(saved);
  if (!n) return 1;
  mlx_array_free(*r);
  r->ctx = n;
  return mlx_array_eval(*r);
}

static void test_number_of_elements(void) {
  const int sh[] = {3, 4, 5}, ax02[] = {0, 2}, ax1[] = {1};
  const mlx_dtype types[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16, MLX_FLOAT64, MLX_INT32,
                             MLX_UINT8,   MLX_INT64,   MLX_BOOL,     MLX_COMPLEX64};
  mlx_array x = rnd(sh, 3, MLX_FLOAT32);
  for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
    for (int inv = 0; inv < 2; inv++) {
      mlx_dtype t = types[ti];
      const char *tn = tname(t);
      SAME(false, WHAT("mlx_number_of_elements %s (0, 2) inv=%d", tn, inv),
           mlx_number_of_elements(r, x, ax02, 2, inv, t, s));
      SAME(true, WHAT("number_of_elements %s all inv=%d", tn, inv),
           noe_node(r, x, NULL, -1, inv, t, s));
      SAME(true, WHAT("number_of_elements %s (0, 2) inv=%d", tn, inv),
           noe_node(r, x, ax02, 2, inv, t, s));
      SAME(true, WHAT("number_of_elements %s (1) inv=%d", tn, inv),
           noe_node(r, x, ax1, 1, inv, t, s));
    }
  mlx_array_free(x);
}

/* A custom function (here a checkpoint, whose vjp re-runs the function)
 * on a GPU stream: its node holds no data, so it must not bring its
 * inputs (the primals and the function's outputs) to the host. Outputs
 * and gradients stay on the GPU and equal those of the plain function. */
static int ck_body(mlx_vector_array *res, const mlx_vector_array in) {
  mlx_array x = mlx_array_new(), s = mlx_array_new(), y = mlx_array_new();
  int rc = mlx_vector_array_get(&x, in, 0) || mlx_sin(&s, x, gpu_stream) ||
           mlx_multiply(&y, s, x, gpu_stream) || mlx_vector_array_set_value(res, y);
  mlx_array_free(x), mlx_array_free(s), mlx_array_free(y);
  return rc;
}
static void test_custom_function(void) {
  int shape[] = {300, 257};
  mlx_array h = gpu_rand(shape, 2, MLX_FLOAT32, -3, 3), one = mlx_array_new_float(1.0f);
  mlx_array x = mlx_array_new(), c = mlx_array_new();
  CHECK_OK(mlx_multiply(&x, h, one, gpu_stream));
  CHECK_OK(mlx_add(&c, h, one, gpu_stream));
  CHECK_OK(mlx_array_eval(x));
  CHECK_OK(mlx_array_eval(c));
  mlx_closure f = mlx_closure_new_func(ck_body), ck = mlx_closure_new();
  CHECK_OK(mlx_checkpoint(&ck, f));
  mlx_vector_array xs = mlx_vector_array_new_value(x), cs = mlx_vector_array_new_value(c);
  mlx_vector_array y[2] = {mlx_vector_array_new(), mlx_vector_array_new()};
  mlx_vector_array o[2] = {mlx_vector_array_new(), mlx_vector_array_new()},
                   g[2] = {mlx_vector_array_new(), mlx_vector_array_new()};
  mlx_closure fs[2] = {f, ck};
  for (int k = 0; k < 2; k++) {
    CHECK_OK(mlx_closure_apply(&y[k], fs[k], xs));
    CHECK_OK(mlx_vjp(&o[k], &g[k], fs[k], xs, cs));
  }
  mlx_array a[2][3];
  for (int k = 0; k < 2; k++) {
    a[k][0] = mlx_array_new(), a[k][1] = mlx_array_new(), a[k][2] = mlx_array_new();
    CHECK_OK(mlx_vector_array_get(&a[k][0], y[k], 0));
    CHECK_OK(mlx_vector_array_get(&a[k][1], o[k], 0));
    CHECK_OK(mlx_vector_array_get(&a[k][2], g[k], 0));
    for (int j = 0; j < 3; j++) CHECK_OK(mlx_array_eval(a[k][j]));
  }
  static const char *const names[3] = {"output", "vjp output", "gradient"};
  /* before any comparison reads them on the host */
  CHECK_MSG(made_on_gpu(x), "checkpoint: its input was copied to the host");
  for (int j = 0; j < 3; j++)
    CHECK_MSG(made_on_gpu(a[1][j]), "checkpoint %s: computed or copied on the host", names[j]);
  for (int j = 0; j < 3; j++)
    SAME_BITS(a[1][j], a[0][j], WHAT("checkpoint %s against the plain function", names[j]));
  for (int k = 0; k < 2; k++) {
    for (int j = 0; j < 3; j++) mlx_array_free(a[k][j]);
    mlx_vector_array_free(y[k]), mlx_vector_array_free(o[k]), mlx_vector_array_free(g[k]);
  }
  mlx_vector_array_free(xs), mlx_vector_array_free(cs);
  mlx_closure_free(f), mlx_closure_free(ck);
  mlx_array_free(h), mlx_array_free(one), mlx_array_free(x), mlx_array_free(c);
}

int main(void) {
  if (!gpu_test_init()) return TEST_SKIP;
  test_divmod();
  test_linspace();
  test_tri();
  test_tril();
  test_diag();
  test_hadamard();
  test_masked_scatter();
  test_number_of_elements();
  test_custom_function();
  mlx_stream_free(gpu_stream);
  return test_done();
}
