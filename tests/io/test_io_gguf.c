/* GGUF: a hand-written reference file (F32/F16/I32/I8 tensors, string,
 * scalar, bool, numeric-list and string-list metadata, alignment 64), the
 * mlx_io_gguf accessors, round trips through mlx_save_gguf, Q4_0 / Q4_1 /
 * Q8_0 tensors loaded as MLX affine-quantized triples (checked by
 * dequantizing against numpy's decoding of the ggml blocks), K-quants
 * reported as unsupported, malformed / truncated files. */
#include "io_util.h"
#include "../data/io_quant_ref.h"

static const char *data_path(const char *name) {
  static char buf[512];
  snprintf(buf, sizeof buf, "%s/%s", LACE_TEST_DATA, name);
  return buf;
}

static double f_float(int i) { return i * 0.75 - 4.5; }
static double f_i32(int i) { return (i * 2039.0 + 7) * (i % 2 ? -1 : 1); }
static double f_i8(int i) { return (i * 37 + 5) % 251 - 125; }

static void check_arr(mlx_io_gguf g, const char *key, mlx_dtype t, int ndim, const int *shape,
                      double (*f)(int)) {
  mlx_array a = mlx_array_new();
  CHECK_OK(mlx_io_gguf_get_array(&a, g, key));
  CHECK_MSG(mlx_array_dtype(a) == t, "%s: dtype", key);
  CHECK_MSG((int)mlx_array_ndim(a) == ndim &&
                !memcmp(mlx_array_shape(a), shape, sizeof(int) * (size_t)ndim),
            "%s: shape", key);
  double ref[64];
  for (int i = 0; i < 12; i++) ref[i] = f(i);
  CHECK_CLOSE(a, ref, 12, 0, 0);
  mlx_array_free(a);
}

static void check_reference(mlx_io_gguf g) {
  check_arr(g, "w", MLX_FLOAT32, 2, (int[]){3, 4}, f_float);
  check_arr(g, "h", MLX_FLOAT16, 2, (int[]){2, 6}, f_float);
  check_arr(g, "idx", MLX_INT32, 2, (int[]){4, 3}, f_i32);
  check_arr(g, "b", MLX_INT8, 1, (int[]){12}, f_i8);
  mlx_vector_string keys = mlx_vector_string_new();
  CHECK_OK(mlx_io_gguf_get_keys(&keys, g));
  CHECK(mlx_vector_string_size(keys) == 4);
  char *k0 = NULL;
  mlx_vector_string_get(&k0, keys, 0);
  CHECK(k0 && !strcmp(k0, "w"));
  mlx_string s = mlx_string_new();
  CHECK_OK(mlx_io_gguf_get_metadata_string(&s, g, "general.name"));
  CHECK(!strcmp(mlx_string_data(s), "lace test"));
  mlx_array a = mlx_array_new();
  CHECK_OK(mlx_io_gguf_get_metadata_array(&a, g, "count"));
  CHECK(mlx_array_ndim(a) == 0 && mlx_array_dtype(a) == MLX_UINT32);
  double v = 4099;
  CHECK_CLOSE(a, &v, 1, 0, 0);
  CHECK_OK(mlx_io_gguf_get_metadata_array(&a, g, "scale"));
  v = -0.75;
  CHECK(mlx_array_dtype(a) == MLX_FLOAT32);
  CHECK_CLOSE(a, &v, 1, 0, 0);
  CHECK_OK(mlx_io_gguf_get_metadata_array(&a, g, "flag"));
  CHECK(mlx_array_dtype(a) == MLX_BOOL);
  v = 1;
  CHECK_CLOSE(a, &v, 1, 0, 0);
  CHECK_OK(mlx_io_gguf_get_metadata_array(&a, g, "ids"));
  CHECK_SHAPE(a, 5);
  double ids[] = {3, -1, 4, -1, 5};
  CHECK_CLOSE(a, ids, 5, 0, 0);
  mlx_vector_string toks = mlx_vector_string_new();
  CHECK_OK(mlx_io_gguf_get_metadata_vector_string(&toks, g, "tokens"));
  CHECK(mlx_vector_string_size(toks) == 3);
  char *t = NULL;
  mlx_vector_string_get(&t, toks, 2);
  CHECK(t && !strcmp(t, "\xc3\xa9t\xc3\xa9"));
  mlx_vector_string_get(&t, toks, 1);
  CHECK(t && !strcmp(t, ""));
  bool flag = true;
  CHECK_OK(mlx_io_gguf_has_metadata_string(&flag, g, "count"));
  CHECK(!flag);
  CHECK_OK(mlx_io_gguf_has_metadata_array(&flag, g, "count"));
  CHECK(flag);
  CHECK_OK(mlx_io_gguf_has_metadata_vector_string(&flag, g, "tokens"));
  CHECK(flag);
  CHECK_OK(mlx_io_gguf_has_metadata_vector_string(&flag, g, "missing"));
  CHECK(!flag);
  CHECK_FAILS(mlx_io_gguf_get_metadata_string(&s, g, "count"), "is an array, not a string");
  CHECK_FAILS(mlx_io_gguf_get_metadata_array(&a, g, "nope"), "no metadata named 'nope'");
  CHECK_FAILS(mlx_io_gguf_get_array(&a, g, "nope"), "no array named 'nope'");
  CHECK_FAILS(mlx_io_gguf_get_array(&a, g, NULL), "key is NULL");
  mlx_array_free(a);
  mlx_string_free(s);
  mlx_vector_string_free(keys);
  mlx_vector_string_free(toks);
}

static void test_reference(void) {
  mlx_io_gguf g = mlx_io_gguf_new();
  CHECK_OK(mlx_load_gguf(&g, data_path("io_ref.gguf"), test_stream()));
  check_reference(g);
  /* save and reload: same content (alignment 64 is kept) */
  CHECK_OK(mlx_save_gguf(tmp_path("rt"), g));
  mlx_io_gguf g2 = mlx_io_gguf_new();
  CHECK_OK(mlx_load_gguf(&g2, tmp_path("rt.gguf"), test_stream()));
  check_reference(g2);
  size_t n1 = 0, n2 = 0;
  char *p1 = slurp(data_path("io_ref.gguf"), &n1), *p2 = slurp(tmp_path("rt.gguf"), &n2);
  CHECK_MSG(p1 && p2 && n1 == n2 && !memcmp(p1, p2, n1), "rewritten file differs (%zu vs %zu)",
            n1, n2);
  free(p1);
  free(p2);
  mlx_io_gguf_free(g);
  mlx_io_gguf_free(g2);
}

static void test_build_and_save(void) {
  mlx_io_gguf g = mlx_io_gguf_new();
  mlx_dtype ok[] = {MLX_FLOAT32, MLX_FLOAT16, MLX_BFLOAT16, MLX_FLOAT64, MLX_INT8, MLX_INT16,
                    MLX_INT32, MLX_INT64};
  mlx_array arrs[8];
  for (int k = 0; k < 8; k++) {
    int sh[] = {2, 3, 5};
    arrs[k] = rand_array(ok[k], sh, 3);
    mlx_array tr = mlx_array_new();
    mlx_transpose(&tr, arrs[k], test_stream()); /* a view: written row-major */
    char name[32];
    snprintf(name, sizeof name, "t%d", k);
    CHECK_OK(mlx_io_gguf_set_array(g, name, tr));
    mlx_array_free(arrs[k]);
    arrs[k] = tr;
  }
  mlx_array z = rand_array(MLX_FLOAT32, NULL, 0);
  CHECK_OK(mlx_io_gguf_set_array(g, "scalar", z));
  mlx_array m1 = rand_array(MLX_INT64, (int[]){7}, 1), m0 = mlx_array_new_int(-3);
  CHECK_OK(mlx_io_gguf_set_metadata_array(g, "list", m1));
  CHECK_OK(mlx_io_gguf_set_metadata_array(g, "one", m0));
  CHECK_OK(mlx_io_gguf_set_metadata_string(g, "name", "first"));
  CHECK_OK(mlx_io_gguf_set_metadata_string(g, "name", "second")); /* replaces */
  const char *words[] = {"x", "yy", "zzz"};
  mlx_vector_string vs = mlx_vector_string_new_data(words, 3);
  CHECK_OK(mlx_io_gguf_set_metadata_vector_string(g, "words", vs));
  CHECK_OK(mlx_save_gguf(tmp_path("b.gguf"), g));
  mlx_io_gguf r = mlx_io_gguf_new();
  CHECK_OK(mlx_load_gguf(&r, tmp_path("b.gguf"), test_stream()));
  for (int k = 0; k < 8; k++) {
    char name[32];
    snprintf(name, sizeof name, "t%d", k);
    mlx_array b = mlx_array_new();
    CHECK_OK(mlx_io_gguf_get_array(&b, r, name));
    CHECK_SHAPE(b, 5, 3, 2);
    size_t n1, n2;
    void *p1 = raw_bytes(arrs[k], &n1), *p2 = raw_bytes(b, &n2);
    CHECK_MSG(mlx_array_dtype(b) == ok[k] && n1 == n2 && !memcmp(p1, p2, n1), "tensor %s", name);
    free(p1);
    free(p2);
    mlx_array_free(b);
  }
  mlx_array b = mlx_array_new();
  CHECK_OK(mlx_io_gguf_get_array(&b, r, "scalar"));
  CHECK(mlx_array_ndim(b) == 0);
  CHECK_OK(mlx_io_gguf_get_metadata_array(&b, r, "list"));
  size_t n1, n2;
  void *p1 = raw_bytes(m1, &n1), *p2 = raw_bytes(b, &n2);
  CHECK(mlx_array_dtype(b) == MLX_INT64 && n1 == n2 && !memcmp(p1, p2, n1));
  free(p1);
  free(p2);
  CHECK_OK(mlx_io_gguf_get_metadata_array(&b, r, "one"));
  double v = -3;
  CHECK(mlx_array_ndim(b) == 0 && mlx_array_dtype(b) == MLX_INT32);
  CHECK_CLOSE(b, &v, 1, 0, 0);
  mlx_string s = mlx_string_new();
  CHECK_OK(mlx_io_gguf_get_metadata_string(&s, r, "name"));
  CHECK(!strcmp(mlx_string_data(s), "second"));
  mlx_vector_string vs2 = mlx_vector_string_new();
  CHECK_OK(mlx_io_gguf_get_metadata_vector_string(&vs2, r, "words"));
  char *w = NULL;
  CHECK(mlx_vector_string_size(vs2) == 3);
  mlx_vector_string_get(&w, vs2, 2);
  CHECK(w && !strcmp(w, "zzz"));
  /* unsupported content is refused before anything is written */
  mlx_array u8 = rand_array(MLX_UINT8, (int[]){4}, 1), c = rand_array(MLX_COMPLEX64, NULL, 0);
  mlx_io_gguf bad = mlx_io_gguf_new();
  CHECK_OK(mlx_io_gguf_set_array(bad, "u", u8));
  CHECK_FAILS(mlx_save_gguf(tmp_path("x.gguf"), bad), "GGUF cannot store");
  mlx_io_gguf_free(bad);
  bad = mlx_io_gguf_new();
  CHECK_OK(mlx_io_gguf_set_metadata_array(bad, "c", c));
  CHECK_FAILS(mlx_save_gguf(tmp_path("x.gguf"), bad), "GGUF value type");
  mlx_io_gguf_free(bad);
  CHECK_FAILS(mlx_save_gguf(NULL, g), "NULL");
  CHECK_FAILS(mlx_save_gguf(tmp_path("x.gguf"), (mlx_io_gguf){NULL}), "empty");
  CHECK_FAILS(mlx_io_gguf_set_array(g, "k", mlx_array_new()), "empty array");
  mlx_array_free(u8);
  mlx_array_free(c);
  for (int k = 0; k < 8; k++) mlx_array_free(arrs[k]);
  mlx_array_free(z);
  mlx_array_free(m1);
  mlx_array_free(m0);
  mlx_array_free(b);
  mlx_string_free(s);
  mlx_vector_string_free(vs);
  mlx_vector_string_free(vs2);
  mlx_io_gguf_free(g);
  mlx_io_gguf_free(r);
}

/* Dequantizes name / name.scales / name.biases (group size 32) and compares. */
static void check_quant(mlx_io_gguf g, const char *name, const char *stem, int bits, int rows,
                        int cols, const double *ref) {
  char key[64];
  mlx_array w = mlx_array_new(), sc = mlx_array_new(), bi = mlx_array_new();
  CHECK_OK(mlx_io_gguf_get_array(&w, g, name));
  snprintf(key, sizeof key, "%s.scales", stem);
  CHECK_OK(mlx_io_gguf_get_array(&sc, g, key));
  snprintf(key, sizeof key, "%s.biases", stem);
  CHECK_OK(mlx_io_gguf_get_array(&bi, g, key));
  CHECK(mlx_array_dtype(w) == MLX_UINT32 && mlx_array_dtype(sc) == MLX_FLOAT16 &&
        mlx_array_dtype(bi) == MLX_FLOAT16);
  int per = 32 / bits;
  CHECK_MSG(mlx_array_ndim(w) == 2 && mlx_array_shape(w)[0] == rows &&
                mlx_array_shape(w)[1] == cols / per,
            "%s: weight shape", name);
  CHECK_MSG(mlx_array_ndim(sc) == 2 && mlx_array_shape(sc)[1] == cols / 32, "%s: scale shape",
            name);
  const uint32_t *wq = mlx_array_data_uint32(w);
  double *s = test_values(sc), *b = test_values(bi);
  int bad = 0;
  for (int i = 0; wq && s && b && i < rows * cols; i++) {
    uint32_t q = (wq[i / per] >> ((i % per) * bits)) & ((1u << bits) - 1);
    double v = q * s[i / 32] + b[i / 32];
    if (fabs(v - ref[i]) > 1e-3 * fabs(ref[i]) + 2e-3) bad++;
  }
  CHECK_MSG(wq && s && b && !bad, "%s: %d values differ", name, bad);
  free(s);
  free(b);
  mlx_array_free(w);
  mlx_array_free(sc);
  mlx_array_free(bi);
}

static void test_quantized(void) {
  mlx_io_gguf g = mlx_io_gguf_new();
  CHECK_OK(mlx_load_gguf(&g, data_path("io_quant.gguf"), test_stream()));
  check_quant(g, "q40.weight", "q40", 4, 2, 64, q40_ref);
  check_quant(g, "q41", "q41", 4, 3, 32, q41_ref);
  check_quant(g, "q80.weight", "q80", 8, 2, 32, q80_ref);
  mlx_vector_string keys = mlx_vector_string_new();
  CHECK_OK(mlx_io_gguf_get_keys(&keys, g));
  CHECK(mlx_vector_string_size(keys) == 9);
  mlx_vector_string_free(keys);
  /* uint32 tensors cannot be saved back as GGUF */
  CHECK_FAILS(mlx_save_gguf(tmp_path("x.gguf"), g), "GGUF cannot store");
  mlx_io_gguf_free(g);
}

static void test_malformed(void) {
  mlx_io_gguf g = mlx_io_gguf_new();
  CHECK_FAILS(mlx_load_gguf(&g, data_path("io_q4k.gguf"), test_stream()), "ggml type 12");
  CHECK_FAILS(mlx_load_gguf(&g, data_path("io_qdup.gguf"), test_stream()),
              "duplicate array name 'd.scales'");
  CHECK_FAILS(mlx_load_gguf(&g, tmp_path("missing.gguf"), test_stream()), "failed to open");
  CHECK_FAILS(mlx_load_gguf(&g, data_path("io_f4.npy"), test_stream()), "not a GGUF file");
  size_t n = 0;
  char *good = slurp(data_path("io_ref.gguf"), &n);
  CHECK(good && n > 200);
  size_t end = n; /* bytes after the last nonzero one could be padding */
  while (good && end > 0 && good[end - 1] == 0) end--;
  CHECK(end + 64 > n);
  for (size_t len = 0; good && len < end; len++) {
    spit(tmp_path("t.gguf"), good, len);
    CHECK_FAILS(mlx_load_gguf(&g, tmp_path("t.gguf"), test_stream()), "mlx_load_gguf");
  }
  char *bad = malloc(n);
  /* version, counts, lengths */
  struct {
    size_t at;
    unsigned char bytes[8];
    size_t nb;
    const char *needle;
  } cases[] = {
      {4, {1}, 1, "unsupported GGUF version 1"},
      {8, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 8, "implausibly large"},
      {16, {0, 1, 0, 0, 0, 0, 0, 0}, 8, "remain"},
      {24, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0}, 8, "implausibly long"},
  };
  for (size_t k = 0; good && k < sizeof cases / sizeof cases[0]; k++) {
    memcpy(bad, good, n);
    memcpy(bad + cases[k].at, cases[k].bytes, cases[k].nb);
    spit(tmp_path("b.gguf"), bad, n);
    CHECK_FAILS(mlx_load_gguf(&g, tmp_path("b.gguf"), test_stream()), cases[k].needle);
  }
  test_seed(5);
  for (int it = 0; good && it < 1500; it++) {
    memcpy(bad, good, n);
    int nm = test_randint(1, 3);
    for (int j = 0; j < nm; j++) bad[test_randint(0, 400)] = (char)test_randint(0, 255);
    spit(tmp_path("b.gguf"), bad, n);
    mlx_io_gguf r = mlx_io_gguf_new();
    mlx_load_gguf(&r, tmp_path("b.gguf"), test_stream());
    mlx_io_gguf_free(r);
  }
  /* failures leave the handle untouched (still empty) */
  mlx_vector_string keys = mlx_vector_string_new();
  CHECK_OK(mlx_io_gguf_get_keys(&keys, g));
  CHECK(mlx_vector_string_size(keys) == 0);
  mlx_vector_string_free(keys);
  free(bad);
  free(good);
  mlx_io_gguf_free(g);
}

int main(void) {
  test_init();
  make_tmp_dir();
  size_t base = test_active_memory();
  test_reference();
  test_build_and_save();
  test_quantized();
  test_malformed();
  CHECK_MSG(test_active_memory() == base, "active memory %zu, baseline %zu", test_active_memory(),
            base);
  const char *names[] = {"rt.gguf", "b.gguf", "x.gguf", "t.gguf"};
  remove_tmp_dir(names, 4);
  return test_done();
}
