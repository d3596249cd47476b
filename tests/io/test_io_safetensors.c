/* .safetensors loading and saving: a hand-written reference file (every
 * common dtype, 0-d, empty, metadata with escapes and UTF-8), round trips of
 * every dtype incl. views and metadata through files and user streams,
 * mlx-c's example-safe-tensors.c flow, and malformed / truncated files. */
#include "io_util.h"

static char *data_path(const char *name) {
  static char buf[512];
  snprintf(buf, sizeof buf, "%s/%s", LACE_TEST_DATA, name);
  return buf;
}

static mlx_array get(mlx_map_string_to_array m, const char *key) {
  mlx_array a = mlx_array_new();
  CHECK_OK(mlx_map_string_to_array_get(&a, m, key));
  return a;
}

static size_t map_len(mlx_map_string_to_array m) {
  mlx_map_string_to_array_iterator it = mlx_map_string_to_array_iterator_new(m);
  const char *k;
  mlx_array v = mlx_array_new();
  size_t n = 0;
  while (mlx_map_string_to_array_iterator_next(&k, &v, it) == 0) n++;
  mlx_array_free(v);
  mlx_map_string_to_array_iterator_free(it);
  return n;
}

static void check_f(mlx_map_string_to_array m, const char *key, mlx_dtype t, int ndim,
                    const int *shape, double (*f)(int)) {
  mlx_array a = get(m, key);
  CHECK_MSG(mlx_array_dtype(a) == t, "%s: dtype %d", key, (int)mlx_array_dtype(a));
  CHECK_MSG((int)mlx_array_ndim(a) == ndim &&
                (!ndim || !memcmp(mlx_array_shape(a), shape, sizeof(int) * (size_t)ndim)),
            "%s: shape", key);
  double ref[64];
  size_t n = mlx_array_size(a);
  for (size_t i = 0; i < n && i < 64; i++) ref[i] = f((int)i);
  if (n) CHECK_CLOSE(a, ref, n, 0, 0);
  mlx_array_free(a);
}

static double f_float(int i) { return i * 0.75 - 4.5; }
static double f_i32(int i) { return (i * 2039.0 + 7) * (i % 2 ? -1 : 1); }
static double f_bool(int i) { return i % 3 == 0; }
static double f_u8(int i) { return (i * 37 + 5) % 251; }
static double f_scalar(int i) { return -2.25; }

static void test_reference(void) {
  mlx_map_string_to_array m = mlx_map_string_to_array_new();
  mlx_map_string_to_string md = mlx_map_string_to_string_new();
  CHECK_OK(mlx_load_safetensors(&m, &md, data_path("io_ref.safetensors"), test_stream()));
  CHECK(map_len(m) == 9);
  check_f(m, "w", MLX_FLOAT32, 2, (int[]){3, 4}, f_float);
  check_f(m, "h", MLX_FLOAT16, 2, (int[]){2, 6}, f_float);
  check_f(m, "bf", MLX_BFLOAT16, 1, (int[]){12}, f_float);
  check_f(m, "idx", MLX_INT32, 2, (int[]){4, 3}, f_i32);
  check_f(m, "mask", MLX_BOOL, 2, (int[]){3, 4}, f_bool);
  check_f(m, "bytes", MLX_UINT8, 1, (int[]){12}, f_u8);
  check_f(m, "big", MLX_INT64, 3, (int[]){2, 2, 3}, f_i32);
  check_f(m, "scalar", MLX_FLOAT64, 0, NULL, f_scalar);
  check_f(m, "empty", MLX_FLOAT32, 2, (int[]){0, 5}, f_float);
  const char *v = NULL;
  CHECK_OK(mlx_map_string_to_string_get(&v, md, "format"));
  CHECK(v && !strcmp(v, "lace"));
  CHECK_OK(mlx_map_string_to_string_get(&v, md, "note"));
  CHECK(v && !strcmp(v, "quote \" and \xc3\xa9"));
  mlx_map_string_to_array_free(m);
  mlx_map_string_to_string_free(md);
}

static int maps_equal(mlx_map_string_to_array a, mlx_map_string_to_array b) {
  if (map_len(a) != map_len(b)) return 0;
  mlx_map_string_to_array_iterator it = mlx_map_string_to_array_iterator_new(a);
  const char *k;
  mlx_array v = mlx_array_new();
  int ok = 1;
  while (ok && mlx_map_string_to_array_iterator_next(&k, &v, it) == 0) {
    mlx_array w = mlx_array_new();
    if (mlx_map_string_to_array_get(&w, b, k)) {
      ok = 0;
    } else {
      size_t n1, n2;
      void *p1 = raw_bytes(v, &n1), *p2 = raw_bytes(w, &n2);
      ok = mlx_array_dtype(v) == mlx_array_dtype(w) && mlx_array_ndim(v) == mlx_array_ndim(w) &&
           (!mlx_array_ndim(v) ||
            !memcmp(mlx_array_shape(v), mlx_array_shape(w), sizeof(int) * mlx_array_ndim(v))) &&
           n1 == n2 && !memcmp(p1, p2, n1);
      if (!ok) fprintf(stderr, "array '%s' differs\n", k);
      free(p1);
      free(p2);
    }
    mlx_array_free(w);
  }
  mlx_array_free(v);
  mlx_map_string_to_array_iterator_free(it);
  return ok;
}

static void test_round_trips(void) {
  mlx_map_string_to_array m = mlx_map_string_to_array_new();
  mlx_map_string_to_string md = mlx_map_string_to_string_new();
  for (size_t k = 0; k < sizeof all_dtypes / sizeof all_dtypes[0]; k++) {
    int sh[] = {3, 5, 2}, e[] = {0, 4};
    mlx_array a = rand_array(all_dtypes[k], sh, 3), z = rand_array(all_dtypes[k], NULL, 0),
              em = rand_array(all_dtypes[k], e, 2), tr = mlx_array_new();
    mlx_transpose(&tr, a, test_stream());
    char name[64];
    snprintf(name, sizeof name, "a%zu", k);
    mlx_map_string_to_array_insert(m, name, a);
    snprintf(name, sizeof name, "scalar %zu", k);
    mlx_map_string_to_array_insert(m, name, z);
    snprintf(name, sizeof name, "empty.%zu", k);
    mlx_map_string_to_array_insert(m, name, em);
    snprintf(name, sizeof name, "view\"\n\\%zu", k); /* names needing JSON escapes */
    mlx_map_string_to_array_insert(m, name, tr);
    mlx_array_free(a);
    mlx_array_free(z);
    mlx_array_free(em);
    mlx_array_free(tr);
  }
  mlx_map_string_to_string_insert(md, "format", "mlx");
  mlx_map_string_to_string_insert(md, "odd \"key\"\t", "line\nbreak \x01 \xe2\x82\xac");
  mlx_map_string_to_array r = mlx_map_string_to_array_new();
  mlx_map_string_to_string rm = mlx_map_string_to_string_new();
  /* file; the extension is appended */
  CHECK_OK(mlx_save_safetensors(tmp_path("rt"), m, md));
  CHECK_OK(mlx_load_safetensors(&r, &rm, tmp_path("rt.safetensors"), test_stream()));
  CHECK(maps_equal(m, r));
  const char *v = NULL;
  CHECK_OK(mlx_map_string_to_string_get(&v, rm, "odd \"key\"\t"));
  CHECK(v && !strcmp(v, "line\nbreak \x01 \xe2\x82\xac"));
  size_t n = 0;
  char *p = slurp(tmp_path("rt.safetensors"), &n);
  uint64_t hl = 0;
  for (int i = 0; p && i < 8; i++) hl |= (uint64_t)(unsigned char)p[i] << (8 * i);
  CHECK(hl % 8 == 0 && hl < n);
  free(p);
  /* streams */
  struct mem s = {0};
  s.growable = true;
  mlx_io_writer w = mlx_io_writer_new(&s, mem_vtable);
  CHECK_OK(mlx_save_safetensors_writer(w, m, md));
  mlx_io_writer_free(w);
  CHECK(s.size == n);
  s.pos = 0;
  mlx_io_reader rd = mlx_io_reader_new(&s, mem_vtable);
  mlx_map_string_to_array r2 = mlx_map_string_to_array_new();
  CHECK_OK(mlx_load_safetensors_reader(&r2, &rm, rd, test_stream()));
  CHECK(maps_equal(m, r2));
  mlx_io_reader_free(rd);
  CHECK(s.frees == 2);
  free(s.data);
  /* no metadata: nothing written for it, an empty map read back */
  mlx_map_string_to_string none = mlx_map_string_to_string_new();
  CHECK_OK(mlx_save_safetensors(tmp_path("nm.safetensors"), m, none));
  p = slurp(tmp_path("nm.safetensors"), &n);
  CHECK(p && n > 8 && !memmem(p, n, "__metadata__", 12));
  free(p);
  CHECK_OK(mlx_load_safetensors(&r2, &rm, tmp_path("nm.safetensors"), test_stream()));
  mlx_map_string_to_string_iterator it = mlx_map_string_to_string_iterator_new(rm);
  const char *k;
  CHECK(mlx_map_string_to_string_iterator_next(&k, &v, it) != 0);
  mlx_map_string_to_string_iterator_free(it);
  /* errors */
  mlx_map_string_to_array bad = mlx_map_string_to_array_new();
  mlx_array one = mlx_array_new_float(1.0f);
  mlx_map_string_to_array_insert(bad, "__metadata__", one);
  CHECK_FAILS(mlx_save_safetensors(tmp_path("x.safetensors"), bad, none), "reserved");
  CHECK_FAILS(mlx_save_safetensors(NULL, m, md), "NULL");
  CHECK_FAILS(mlx_save_safetensors(tmp_path("x"), (mlx_map_string_to_array){NULL}, md), "empty");
  CHECK_FAILS(mlx_load_safetensors(NULL, &rm, tmp_path("x"), test_stream()), "NULL");
  mlx_array_free(one);
  mlx_map_string_to_array_free(bad);
  mlx_map_string_to_string_free(none);
  mlx_map_string_to_array_free(m);
  mlx_map_string_to_array_free(r);
  mlx_map_string_to_array_free(r2);
  mlx_map_string_to_string_free(md);
  mlx_map_string_to_string_free(rm);
}

/* mlx-c's examples/example-safe-tensors.c: file -> fixed 2048-byte memory
 * writer -> reader over the same memory. */
static void test_example_flow(void) {
  mlx_map_string_to_array data = mlx_map_string_to_array_new();
  mlx_map_string_to_string meta = mlx_map_string_to_string_new();
  CHECK_OK(mlx_load_safetensors(&data, &meta, data_path("io_arrays.safetensors"), test_stream()));
  struct mem s = {malloc(2048), 0, 0, 2048, false, false, 0};
  mlx_io_writer w = mlx_io_writer_new(&s, mem_vtable);
  CHECK_OK(mlx_save_safetensors_writer(w, data, meta));
  mlx_io_writer_free(w);
  CHECK(!s.err && s.pos > 8);
  s.size = s.pos;
  s.pos = 0;
  mlx_io_reader r = mlx_io_reader_new(&s, mem_vtable);
  mlx_map_string_to_array d2 = mlx_map_string_to_array_new();
  mlx_map_string_to_string m2 = mlx_map_string_to_string_new();
  CHECK_OK(mlx_load_safetensors_reader(&d2, &m2, r, test_stream()));
  mlx_io_reader_free(r);
  double one = 1, two = 2;
  mlx_array a = get(d2, "a"), b = get(d2, "b");
  CHECK_SHAPE(a, 1);
  CHECK_CLOSE(a, &one, 1, 0, 0);
  CHECK_CLOSE(b, &two, 1, 0, 0);
  const char *v = NULL;
  CHECK_OK(mlx_map_string_to_string_get(&v, m2, "format"));
  CHECK(v && !strcmp(v, "mlx"));
  /* a writer that runs out of room reports */
  struct mem tiny = {malloc(40), 0, 0, 40, false, false, 0};
  w = mlx_io_writer_new(&tiny, mem_vtable);
  CHECK_FAILS(mlx_save_safetensors_writer(w, data, meta), "failed to write");
  mlx_io_writer_free(w);
  free(tiny.data);
  free(s.data);
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_map_string_to_array_free(data);
  mlx_map_string_to_array_free(d2);
  mlx_map_string_to_string_free(meta);
  mlx_map_string_to_string_free(m2);
}

/* Writes an 8-byte length + header text + data bytes and loads it. */
static int load_text(const char *header, size_t data_bytes, mlx_map_string_to_array *m,
                     mlx_map_string_to_string *md) {
  size_t hl = strlen(header);
  char *buf = calloc(1, 8 + hl + data_bytes + 1);
  for (int i = 0; i < 8; i++) buf[i] = (char)((uint64_t)hl >> (8 * i));
  memcpy(buf + 8, header, hl);
  spit(tmp_path("m.safetensors"), buf, 8 + hl + data_bytes);
  free(buf);
  return mlx_load_safetensors(m, md, tmp_path("m.safetensors"), test_stream());
}

static void test_malformed(void) {
  mlx_map_string_to_array m = mlx_map_string_to_array_new();
  mlx_map_string_to_string md = mlx_map_string_to_string_new();
  CHECK_FAILS(mlx_load_safetensors(&m, &md, tmp_path("missing"), test_stream()), "failed to open");
  static const struct {
    const char *text;
    size_t data;
    const char *needle;
  } cases[] = {
      {"[1,2]", 0, "not a JSON object"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", 8, "unexpected end"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}} x", 8, "trailing"},
      {"{\"a\":{\"dtype\":\"F99\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "unsupported dtype 'F99'"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "do not match"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "do not match"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, "remain"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "shape entries"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", 8, "shape entries"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,8]}}", 8,
       "out of range"},
      {"{\"a\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,8]}}",
       8, "shape entries"},
      {"{\"a\":{\"dtype\":\"U8\",\"shape\":[2147483647,2147483647,2147483647],\"data_offsets\":[0,8]}}",
       8, "too large"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "data_offsets"},
      {"{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "dtype"},
      {"{\"a\":5}", 8, "not an object"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
       "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "overlaps"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
       "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "duplicate"},
      {"{\"__metadata__\":{\"k\":1}}", 0, "not a string"},
      {"{\"__metadata__\":[]}", 0, "not an object"},
      {"{\"a\\u00\":1}", 0, "hex digit"},
      {"{\"a\\ud800\":1}", 0, "surrogate"},
      {"{\"a\\u0000\":1}", 0, "NUL"},
      {"{\"a\\q\":1}", 0, "invalid escape"},
      {"{\"a\n\":1}", 0, "control character"},
      {"{\"a\" 1}", 0, "expected ':'"},
      {"{\"a\":1 \"b\":2}", 0, "expected ',' or '}'"},
      {"{\"a\":[1 2]}", 0, "expected ',' or ']'"},
      {"{\"a\":01}", 0, "leading zero"},
      {"{\"a\":-}", 0, "invalid number"},
      {"{\"a\":tru}", 0, "unexpected character"},
      {"", 0, "unexpected end"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    CHECK_FAILS(load_text(cases[k].text, cases[k].data, &m, &md), cases[k].needle);
  }
  /* deep nesting is refused, not recursed into */
  char deep[400];
  memset(deep, '[', sizeof deep);
  deep[sizeof deep - 1] = 0;
  CHECK_FAILS(load_text(deep, 0, &m, &md), "nesting too deep");
  /* gaps between tensors are skipped; valid odd headers load */
  CHECK_OK(load_text("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}, "
                     "\"__metadata__\":{\"x\":\"\\ud83d\\ude00\\/\"}}",
                     8, &m, &md));
  const char *v = NULL;
  CHECK_OK(mlx_map_string_to_string_get(&v, md, "x"));
  CHECK(v && !strcmp(v, "\xf0\x9f\x98\x80/"));
  /* a huge declared header length */
  char hdr[16] = {0};
  hdr[7] = 0x7f;
  spit(tmp_path("m.safetensors"), hdr, 16);
  CHECK_FAILS(mlx_load_safetensors(&m, &md, tmp_path("m.safetensors"), test_stream()), "too large");
  hdr[7] = 0;
  hdr[1] = 1; /* 256 bytes declared, 8 present */
  spit(tmp_path("m.safetensors"), hdr, 16);
  CHECK_FAILS(mlx_load_safetensors(&m, &md, tmp_path("m.safetensors"), test_stream()), "remain");
  /* every truncation of the reference file fails; random corruption of
   * its header loads or fails but never crashes or leaks */
  size_t n = 0;
  char *good = slurp(data_path("io_ref.safetensors"), &n);
  CHECK(good && n > 100);
  for (size_t len = 0; good && len < n; len++) {
    spit(tmp_path("t.safetensors"), good, len);
    CHECK_FAILS(mlx_load_safetensors(&m, &md, tmp_path("t.safetensors"), test_stream()),
                "mlx_load_safetensors");
  }
  uint64_t hl = 0;
  for (int i = 0; good && i < 8; i++) hl |= (uint64_t)(unsigned char)good[i] << (8 * i);
  char *bad = malloc(n);
  test_seed(11);
  int loaded = 0;
  for (int it = 0; good && it < 1500; it++) {
    memcpy(bad, good, n);
    int nm = test_randint(1, 3);
    for (int j = 0; j < nm; j++) {
      const char pool[] = "{}[]\",:0123456789-.eE\\u ";
      int at = test_randint(8, 8 + (int)hl - 1);
      bad[at] = test_randint(0, 1) ? pool[test_randint(0, (int)sizeof pool - 2)]
                                   : (char)test_randint(0, 255);
    }
    spit(tmp_path("b.safetensors"), bad, n);
    mlx_map_string_to_array a = mlx_map_string_to_array_new();
    mlx_map_string_to_string b = mlx_map_string_to_string_new();
    if (mlx_load_safetensors(&a, &b, tmp_path("b.safetensors"), test_stream()) == 0) loaded++;
    mlx_map_string_to_array_free(a);
    mlx_map_string_to_string_free(b);
  }
  CHECK(loaded > 0 && loaded < 1500);
  free(bad);
  free(good);
  /* the results are untouched by failures */
  CHECK(map_len(m) == 1);
  mlx_map_string_to_array_free(m);
  mlx_map_string_to_string_free(md);
}

int main(void) {
  test_init();
  make_tmp_dir();
  size_t base = test_active_memory();
  test_reference();
  test_round_trips();
  test_example_flow();
  test_malformed();
  CHECK_MSG(test_active_memory() == base, "active memory %zu, baseline %zu", test_active_memory(),
            base);
  const char *names[] = {"rt.safetensors", "nm.safetensors", "x.safetensors", "m.safetensors",
                         "t.safetensors",  "b.safetensors"};
  remove_tmp_dir(names, 6);
  return test_done();
}
