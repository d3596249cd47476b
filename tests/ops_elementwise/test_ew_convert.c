/* Floating -> integer conversions are defined for every value: truncation
 * toward zero, saturation at the target's limits, NaN -> 0 (C leaves the
 * out-of-range casts undefined; MLX's CPU results there are whatever x86's
 * cvtt instructions give, e.g. INT32_MIN for NaN and 1e20, wrapping for
 * narrower targets). Checked for every float source (float16, bfloat16,
 * float32, float64, complex64's real part) and integer target, contiguous
 * and strided, through astype, full and item. A reference computed here
 * catches the hardware's results without -fsanitize=float-cast-overflow
 * (which gcc's -fsanitize=undefined does not include). */
#include "test.h"

static mlx_stream S(void) { return test_stream(); }

static const mlx_dtype targets[] = {MLX_UINT8, MLX_UINT16, MLX_UINT32, MLX_UINT64,
                                    MLX_INT8,  MLX_INT16,  MLX_INT32,  MLX_INT64};

static int bits_of(mlx_dtype t) { return (int)mlx_dtype_size(t) * 8; }
static bool is_signed(mlx_dtype t) { return t >= MLX_INT8 && t <= MLX_INT64; }

/* The saturating conversion of x to t, as (signed or unsigned) 64-bit. */
static void sat_ref(double x, mlx_dtype t, int64_t *s, uint64_t *u) {
  int b = bits_of(t);
  double top = ldexp(1.0, is_signed(t) ? b - 1 : b); /* first value beyond the max */
  *s = 0, *u = 0;
  if (isnan(x)) return;
  double r = trunc(x);
  if (is_signed(t)) {
    int64_t mx = b == 64 ? INT64_MAX : ((int64_t)1 << (b - 1)) - 1;
    *s = r >= top ? mx : r < -top ? -mx - 1 : (int64_t)r;
  } else {
    uint64_t mx = b == 64 ? UINT64_MAX : ((uint64_t)1 << b) - 1;
    *u = r >= top ? mx : r < 0 ? 0 : (uint64_t)r;
  }
}

/* Element i of an evaluated contiguous integer array, as 64-bit. */
static void get_int(mlx_array a, size_t i, int64_t *s, uint64_t *u) {
  *s = 0, *u = 0;
  switch (mlx_array_dtype(a)) {
  case MLX_UINT8: *u = mlx_array_data_uint8(a)[i]; break;
  case MLX_UINT16: *u = mlx_array_data_uint16(a)[i]; break;
  case MLX_UINT32: *u = mlx_array_data_uint32(a)[i]; break;
  case MLX_UINT64: *u = mlx_array_data_uint64(a)[i]; break;
  case MLX_INT8: *s = mlx_array_data_int8(a)[i]; break;
  case MLX_INT16: *s = mlx_array_data_int16(a)[i]; break;
  case MLX_INT32: *s = mlx_array_data_int32(a)[i]; break;
  case MLX_INT64: *s = mlx_array_data_int64(a)[i]; break;
  default: break;
  }
}

/* Checks r (integer dtype t, n elements) against the saturating
 * conversion of the float64 values src. */
static void check_sat(mlx_array r, const double *src, size_t n, mlx_dtype t, const char *what) {
  CHECK_MSG(mlx_array_dtype(r) == t, "%s: dtype %d", what, (int)mlx_array_dtype(r));
  if (mlx_array_eval(r) || mlx_array_size(r) != n) {
    CHECK_MSG(0, "%s: eval failed or size %zu", what, mlx_array_size(r));
    return;
  }
  int bad = 0;
  for (size_t i = 0; i < n && bad < 5; i++) {
    int64_t s, es;
    uint64_t u, eu;
    get_int(r, i, &s, &u);
    sat_ref(src[i], t, &es, &eu);
    if (s != es || u != eu) {
      bad++;
      CHECK_MSG(0, "%s -> dtype %d: [%zu] %.17g gives %lld/%llu, want %lld/%llu", what, (int)t, i,
                src[i], (long long)s, (unsigned long long)u, (long long)es,
                (unsigned long long)eu);
    }
  }
  test_checks++;
}

/* Values around every target's limits, specials, and random magnitudes
 * from 2^-3 to 2^70 of both signs. */
static size_t make_values(double *v, size_t cap) {
  static const double special[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 0.5, -0.5, -0.99, -1.0,
                                   2.5, -2.5, 1e20, -1e20, 1e300, -1e300, 9.3e18, 1.9e19};
  size_t n = 0;
  for (size_t i = 0; i < sizeof special / sizeof *special; i++) v[n++] = special[i];
  for (int b = 7; b <= 64; b++) {
    double p = ldexp(1.0, b);
    const double around[] = {p, -p, p - 1, -p + 1, p + 1, -p - 1, p - 0.5, -p - 0.5,
                             nextafter(p, 0), nextafter(-p, 0), nextafter(p, INFINITY),
                             nextafter(-p, -INFINITY)};
    for (size_t i = 0; i < sizeof around / sizeof *around; i++) v[n++] = around[i];
  }
  while (n < cap) {
    double m = ldexp(test_uniform(1, 2), test_randint(-3, 70));
    v[n++] = test_rand_u64() & 1 ? -m : m;
  }
  return n;
}

/* x: the float64 values; each source dtype rounds them first (the
 * reference converts the rounded value). */
static void test_astype_all(void) {
  enum { CAP = 1200 };
  double v[CAP];
  int n = (int)make_values(v, CAP);
  mlx_array x64 = mlx_array_new_data(v, &n, 1, MLX_FLOAT64);
  const mlx_dtype sources[] = {MLX_FLOAT16, MLX_BFLOAT16, MLX_FLOAT32, MLX_FLOAT64,
                               MLX_COMPLEX64};
  for (size_t si = 0; si < sizeof sources / sizeof *sources; si++) {
    mlx_array x = mlx_array_new(), back = mlx_array_new(), strided = mlx_array_new();
    CHECK_OK(mlx_astype(&x, x64, sources[si], S()));
    /* the source's own values (complex: the real part) */
    if (sources[si] == MLX_COMPLEX64) CHECK_OK(mlx_real(&back, x, S()));
    CHECK_OK(mlx_astype(&back, sources[si] == MLX_COMPLEX64 ? back : x, MLX_FLOAT64, S()));
    double *sv = test_values(back);
    /* every other element, backwards: a strided input */
    int start = n - 1, stop = -1 - n, step = -2;
    CHECK_OK(mlx_slice(&strided, x, &start, 1, &stop, 1, &step, 1, S()));
    size_t ns = mlx_array_size(strided);
    double *svs = malloc(sizeof(double) * ns);
    for (size_t i = 0; sv && i < ns; i++) svs[i] = sv[n - 1 - 2 * i];
    for (size_t ti = 0; sv && ti < sizeof targets / sizeof *targets; ti++) {
      char what[64];
      mlx_array r = mlx_array_new();
      snprintf(what, sizeof what, "astype from dtype %d", (int)sources[si]);
      CHECK_OK(mlx_astype(&r, x, targets[ti], S()));
      check_sat(r, sv, (size_t)n, targets[ti], what);
      snprintf(what, sizeof what, "strided astype from dtype %d", (int)sources[si]);
      CHECK_OK(mlx_astype(&r, strided, targets[ti], S()));
      check_sat(r, svs, ns, targets[ti], what);
      mlx_array_free(r);
    }
    /* to bool: "!= 0", NaN is true */
    mlx_array r = mlx_array_new();
    CHECK_OK(mlx_astype(&r, x, MLX_BOOL, S()));
    const bool *bv = mlx_array_eval(r) ? NULL : mlx_array_data_bool(r);
    for (int i = 0; bv && sv && i < n; i++)
      CHECK_MSG(bv[i] == (sv[i] != 0), "bool of %g from dtype %d", sv[i], (int)sources[si]);
    mlx_array_free(r);
    free(sv);
    free(svs);
    mlx_array_free(x);
    mlx_array_free(back);
    mlx_array_free(strided);
  }
  mlx_array_free(x64);
}

/* full casts its value array through astype; item converts one value. */
static void test_full_and_item(void) {
  const double v[] = {1e20, -1e20, NAN, 300.7, -1.5, 4294967296.0};
  for (size_t k = 0; k < sizeof v / sizeof *v; k++) {
    mlx_array val = mlx_array_new_float32((float)v[k]);
    for (size_t ti = 0; ti < sizeof targets / sizeof *targets; ti++) {
      mlx_array r = mlx_array_new();
      int sh[2] = {3, 5};
      CHECK_OK(mlx_full(&r, sh, 2, val, targets[ti], S()));
      double ref[15];
      for (int i = 0; i < 15; i++) ref[i] = (double)(float)v[k];
      mlx_array c = mlx_array_new();
      CHECK_OK(mlx_contiguous(&c, r, false, S()));
      check_sat(c, ref, 15, targets[ti], "full");
      mlx_array_free(c);
      mlx_array_free(r);
    }
    int32_t i32 = 7;
    int64_t i64 = 7;
    uint8_t u8 = 7;
    CHECK_OK(mlx_array_item_int32(&i32, val));
    CHECK_OK(mlx_array_item_int64(&i64, val));
    CHECK_OK(mlx_array_item_uint8(&u8, val));
    double f = (double)(float)v[k];
    if (isnan(f)) {
      CHECK(i32 == 0 && i64 == 0 && u8 == 0);
    } else if (fabs(f) >= 0x1p63) { /* beyond int64: saturated */
      CHECK(i32 == (f > 0 ? INT32_MAX : INT32_MIN));
      CHECK(i64 == (f > 0 ? INT64_MAX : INT64_MIN));
      CHECK(u8 == (f > 0 ? UINT8_MAX : 0));
    } else { /* through int64, wrapping */
      CHECK(i64 == (int64_t)f);
      CHECK(i32 == (int32_t)(uint32_t)(uint64_t)(int64_t)f);
      CHECK(u8 == (uint8_t)(uint64_t)(int64_t)f);
    }
    mlx_array_free(val);
  }
}

/* A large input takes the parallel, vectorised path. */
static void test_large(void) {
  enum { N = 1 << 18 };
  double *v = malloc(sizeof(double) * N);
  for (int i = 0; i < N; i++) v[i] = ldexp(test_uniform(-2, 2), test_randint(0, 40));
  for (int i = 0; i < N; i += 97) v[i] = NAN;
  int n = N;
  mlx_array x64 = mlx_array_new_data(v, &n, 1, MLX_FLOAT64), x = mlx_array_new();
  CHECK_OK(mlx_astype(&x, x64, MLX_FLOAT32, S()));
  double *sv = test_values(x);
  for (size_t ti = 0; sv && ti < sizeof targets / sizeof *targets; ti++) {
    mlx_array r = mlx_array_new();
    CHECK_OK(mlx_astype(&r, x, targets[ti], S()));
    check_sat(r, sv, N, targets[ti], "large float32");
    mlx_array_free(r);
  }
  free(sv);
  free(v);
  mlx_array_free(x);
  mlx_array_free(x64);
}

int main(void) {
  test_init();
  test_seed(20261204);
  test_astype_all();
  test_full_and_item();
  test_large();
  return test_done();
}
