/* .npy loading and saving: numpy-written reference files (every dtype,
 * versions 1-3, Fortran order, big-endian, 0-d, empty), byte-identical
 * output to numpy's, round trips of every dtype incl. views, user
 * reader/writer vtables, and malformed / truncated files (errors, no crash). */
#include <complex.h>

#include "io_util.h"

/* Element i of the reference files (see tests/gen/gen_io.py). */
static double ref_value(mlx_dtype t, int i) {
  switch (t) {
    case MLX_BOOL: return i % 3 == 0;
    case MLX_UINT8: return (i * 37 + 5) % 251;
    case MLX_INT8: return (i * 37 + 5) % 251 - 125;
    case MLX_UINT16: case MLX_UINT32: case MLX_UINT64: return i * 2039.0 + 7;
    case MLX_INT16: case MLX_INT32: case MLX_INT64: return (i * 2039.0 + 7) * (i % 2 ? -1 : 1);
    default: return i * 0.75 - 4.5;
  }
}

static const struct {
  const char *code;
  mlx_dtype t;
} codes[] = {{"b1", MLX_BOOL},  {"u1", MLX_UINT8},   {"u2", MLX_UINT16},  {"u4", MLX_UINT32},
             {"u8", MLX_UINT64}, {"i1", MLX_INT8},   {"i2", MLX_INT16},   {"i4", MLX_INT32},
             {"i8", MLX_INT64},  {"f2", MLX_FLOAT16}, {"f4", MLX_FLOAT32}, {"f8", MLX_FLOAT64},
             {"c8", MLX_COMPLEX64}};

static int load_file(mlx_array *a, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", LACE_TEST_DATA, name);
  return mlx_load(a, path, test_stream());
}

static void check_ref(mlx_array a, mlx_dtype t, int n) {
  double ref[64];
  for (int i = 0; i < n; i++) ref[i] = ref_value(t, i);
  CHECK(mlx_array_dtype(a) == t);
  CHECK_CLOSE(a, ref, (size_t)n, 0, 0);
}

static void test_numpy_files(void) {
  for (size_t k = 0; k < sizeof codes / sizeof codes[0]; k++) {
    char name[64];
    snprintf(name, sizeof name, "io_%s.npy", codes[k].code);
    mlx_array a = mlx_array_new();
    CHECK_OK(load_file(&a, name));
    CHECK_SHAPE(a, 3, 4);
    check_ref(a, codes[k].t, 12);
    if (codes[k].t == MLX_COMPLEX64) {
      const mlx_complex64_t *c = mlx_array_data_complex64(a);
      for (int i = 0; c && i < 12; i++) CHECK(cimagf(c[i]) == (float)(-0.5 * i));
    }
    mlx_array_free(a);
  }
  const char *floats[] = {"io_fortran.npy", "io_v2.npy", "io_v3.npy"};
  for (int k = 0; k < 3; k++) {
    mlx_array a = mlx_array_new();
    CHECK_OK(load_file(&a, floats[k]));
    CHECK_SHAPE(a, 3, 4);
    check_ref(a, MLX_FLOAT32, 12);
    mlx_array_free(a);
  }
  mlx_array a = mlx_array_new();
  CHECK_OK(load_file(&a, "io_fortran3d.npy"));
  CHECK_SHAPE(a, 2, 3, 2);
  check_ref(a, MLX_FLOAT64, 12);
  CHECK_OK(load_file(&a, "io_be_i4.npy"));
  check_ref(a, MLX_INT32, 12);
  CHECK_OK(load_file(&a, "io_be_f8.npy"));
  check_ref(a, MLX_FLOAT64, 12);
  CHECK_OK(load_file(&a, "io_be_c8.npy"));
  check_ref(a, MLX_COMPLEX64, 12);
  const mlx_complex64_t *c = mlx_array_data_complex64(a);
  for (int i = 0; c && i < 12; i++) CHECK(cimagf(c[i]) == (float)(-0.5 * i));
  CHECK_OK(load_file(&a, "io_1d.npy"));
  CHECK_SHAPE(a, 12);
  check_ref(a, MLX_INT64, 12);
  CHECK_OK(load_file(&a, "io_scalar.npy"));
  CHECK(mlx_array_ndim(a) == 0 && mlx_array_dtype(a) == MLX_FLOAT32);
  double v = 3.5;
  CHECK_CLOSE(a, &v, 1, 0, 0);
  CHECK_OK(load_file(&a, "io_empty.npy"));
  CHECK_SHAPE(a, 0, 3);
  CHECK(mlx_array_size(a) == 0);
  mlx_array_free(a);
}

/* What we write for numpy's own files is byte-identical to numpy's. */
static void test_numpy_identical(void) {
  const char *names[] = {"io_f4.npy", "io_b1.npy", "io_c8.npy", "io_scalar.npy", "io_empty.npy",
                         "io_1d.npy", "io_fortran3d.npy"};
  for (int k = 0; k < 7; k++) {
    mlx_array a = mlx_array_new();
    CHECK_OK(load_file(&a, names[k]));
    CHECK_OK(mlx_save(tmp_path("same.npy"), a));
    char ref[512];
    snprintf(ref, sizeof ref, "%s/%s", LACE_TEST_DATA, names[k]);
    size_t n1 = 0, n2 = 0;
    char *p1 = slurp(ref, &n1), *p2 = slurp(tmp_path("same.npy"), &n2);
    if (k == 6) { /* numpy wrote it in Fortran order: compare only the size */
      CHECK(p1 && p2 && n1 == n2);
    } else {
      CHECK_MSG(p1 && p2 && n1 == n2 && !memcmp(p1, p2, n1), "%s differs from numpy's", names[k]);
    }
    free(p1);
    free(p2);
    mlx_array_free(a);
  }
}

static void round_trip(mlx_array a, const char *what) {
  mlx_array b = mlx_array_new();
  CHECK_OK(mlx_save(tmp_path("rt"), a)); /* ".npy" is appended */
  CHECK_OK(mlx_load(&b, tmp_path("rt.npy"), test_stream()));
  size_t n1, n2;
  void *p1 = raw_bytes(a, &n1), *p2 = raw_bytes(b, &n2);
  CHECK_MSG(mlx_array_dtype(a) == mlx_array_dtype(b) && mlx_array_ndim(a) == mlx_array_ndim(b) &&
                (!mlx_array_ndim(a) ||
                 !memcmp(mlx_array_shape(a), mlx_array_shape(b), sizeof(int) * mlx_array_ndim(a))) &&
                n1 == n2 && !memcmp(p1, p2, n1),
            "round trip of %s (dtype %d)", what, (int)mlx_array_dtype(a));
  free(p1);
  free(p2);
  mlx_array_free(b);
}

static void test_round_trips(void) {
  for (size_t k = 0; k < sizeof all_dtypes / sizeof all_dtypes[0]; k++) {
    mlx_dtype t = all_dtypes[k];
    int s3[] = {3, 4, 5}, s0[] = {0}, se[] = {2, 0, 3};
    mlx_array a = rand_array(t, s3, 3), z = rand_array(t, NULL, 0), e = rand_array(t, s0, 1),
              e2 = rand_array(t, se, 3);
    round_trip(a, "3-d");
    round_trip(z, "0-d");
    round_trip(e, "empty 1-d");
    round_trip(e2, "empty 3-d");
    /* views: transposed and strided slices are written in row-major order */
    mlx_array tr = mlx_array_new(), sl = mlx_array_new(), lazy = mlx_array_new();
    mlx_transpose(&tr, a, test_stream());
    int st[] = {0, 3, 4}, sp[] = {3, 0, 0}, ss[] = {2, -1, -2};
    CHECK_OK(mlx_slice(&sl, a, st, 3, sp, 3, ss, 3, test_stream()));
    round_trip(tr, "transposed view");
    round_trip(sl, "strided slice");
    mlx_add(&lazy, a, a, test_stream()); /* unevaluated: saving evaluates */
    round_trip(lazy, "lazy array");
    mlx_array_free(a);
    mlx_array_free(z);
    mlx_array_free(e);
    mlx_array_free(e2);
    mlx_array_free(tr);
    mlx_array_free(sl);
    mlx_array_free(lazy);
  }
}

static void test_streams(void) {
  struct mem m = {0};
  m.growable = true;
  mlx_io_writer w = mlx_io_writer_new(&m, mem_vtable);
  void *desc = NULL;
  CHECK_OK(mlx_io_writer_descriptor(&desc, w));
  CHECK(desc == &m);
  mlx_string s = mlx_string_new();
  CHECK_OK(mlx_io_writer_tostring(&s, w));
  CHECK(!strcmp(mlx_string_data(s), "<memory stream>"));
  int sh[] = {4, 7};
  mlx_array a = rand_array(MLX_FLOAT32, sh, 2), b = mlx_array_new();
  CHECK_OK(mlx_save_writer(w, a));
  CHECK_OK(mlx_io_writer_free(w));
  CHECK(m.frees == 1);
  CHECK(m.size >= 128 && m.size % 64 == 4 * 28 % 64);
  m.pos = 0;
  mlx_io_reader r = mlx_io_reader_new(&m, mem_vtable);
  CHECK_OK(mlx_io_reader_descriptor(&desc, r));
  CHECK(desc == &m);
  CHECK_OK(mlx_io_reader_tostring(&s, r));
  CHECK(!strcmp(mlx_string_data(s), "<memory stream>"));
  CHECK_OK(mlx_load_reader(&b, r, test_stream()));
  CHECK_OK(mlx_array_equal(&b, a, b, false, test_stream()) ? 1 : 0);
  bool eq = false;
  mlx_array_item_bool(&eq, b);
  CHECK(eq);
  /* a truncated stream: the reader reports through good() */
  m.pos = 0;
  m.size -= 5;
  CHECK_FAILS(mlx_load_reader(&b, r, test_stream()), "unexpected end of stream");
  CHECK_FAILS(mlx_load_reader(&b, r, test_stream()), "<memory stream>");
  CHECK_OK(mlx_io_reader_free(r));
  CHECK(m.frees == 2);
  /* a full writer */
  struct mem small = {malloc(16), 0, 0, 16, false, false, 0};
  w = mlx_io_writer_new(&small, mem_vtable);
  CHECK_FAILS(mlx_save_writer(w, a), "failed to write");
  mlx_io_writer_free(w);
  free(small.data);
  CHECK_FAILS(mlx_save_writer((mlx_io_writer){NULL}, a), "empty handle");
  CHECK_FAILS(mlx_load_reader(&b, (mlx_io_reader){NULL}, test_stream()), "empty handle");
  CHECK_FAILS(mlx_io_reader_descriptor(&desc, (mlx_io_reader){NULL}), "empty handle");
  CHECK_FAILS(mlx_save_writer(w = (mlx_io_writer){NULL}, mlx_array_new()), "empty array");
  mlx_string_free(s);
  mlx_array_free(a);
  mlx_array_free(b);
  free(m.data);
}

static void test_malformed(void) {
  mlx_array a = mlx_array_new();
  CHECK_FAILS(mlx_load(&a, tmp_path("missing.npy"), test_stream()), "failed to open");
  CHECK_FAILS(mlx_load(&a, NULL, test_stream()), "NULL");
  CHECK_FAILS(mlx_save(NULL, a), "NULL");
  CHECK_FAILS(mlx_save(tmp_path("x.npy"), a), "empty array");
  mlx_array one = mlx_array_new_float(1.0f);
  CHECK_FAILS(mlx_save("/nonexistent-dir/x.npy", one), "failed to open");
  mlx_array_free(one);
  char ref[512];
  snprintf(ref, sizeof ref, "%s/io_f8.npy", LACE_TEST_DATA);
  size_t n = 0;
  char *good = slurp(ref, &n);
  CHECK(good && n == 128 + 96);
  /* every truncation fails with a message */
  for (size_t len = 0; len < n; len++) {
    spit(tmp_path("t.npy"), good, len);
    CHECK_FAILS(mlx_load(&a, tmp_path("t.npy"), test_stream()), "mlx_load");
  }
  CHECK(mlx_array_ndim(a) == 0 && !a.ctx);
  char *bad = malloc(n);
  struct {
    size_t at;
    const char *text, *needle;
  } cases[] = {
      {0, "\x94", "bad magic"},
      {6, "\x05", "version 5"},
      {10, "[", "expected a dictionary"},
      {11, "'dexcr'", "unknown key"},
      {20, "'<c16',", "unsupported npy dtype '<c16'"},
      {20, "[", "structured"},
      {20, "'<q8'", "unsupported npy dtype '<q8'"},
      {20, "'>V4'", "unsupported npy dtype"},
      {44, "Maybe", "fortran_order"},
      {60, "(3,-4)", "shape"},
      {60, "(99999999999)", "INT_MAX"},
      {60, "(3, 400), } ", "bytes but only 96 remain"},
      {60, "(65536, 65536, 65536, 65536, 65536), }", "too large"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    memcpy(bad, good, n);
    memcpy(bad + cases[k].at, cases[k].text, strlen(cases[k].text));
    spit(tmp_path("b.npy"), bad, n);
    CHECK_FAILS(mlx_load(&a, tmp_path("b.npy"), test_stream()), cases[k].needle);
  }
  /* random corruption of the header: load or fail, never crash or leak */
  test_seed(7);
  for (int it = 0; it < 400; it++) {
    memcpy(bad, good, n);
    for (int j = 0; j < 3; j++) bad[test_randint(0, 127)] = (char)test_randint(0, 255);
    spit(tmp_path("b.npy"), bad, n);
    mlx_array c = mlx_array_new();
    if (mlx_load(&c, tmp_path("b.npy"), test_stream()) == 0) CHECK(c.ctx != NULL);
    mlx_array_free(c);
  }
  free(bad);
  free(good);
  mlx_array_free(a);
}

int main(void) {
  test_init();
  make_tmp_dir();
  size_t base = test_active_memory();
  test_numpy_files();
  test_numpy_identical();
  test_round_trips();
  test_streams();
  test_malformed();
  CHECK_MSG(test_active_memory() == base, "active memory %zu, baseline %zu", test_active_memory(),
            base);
  const char *names[] = {"same.npy", "rt.npy", "t.npy", "b.npy", "x.npy"};
  remove_tmp_dir(names, 5);
  return test_done();
}
