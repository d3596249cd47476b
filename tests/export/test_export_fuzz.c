/* Bad, truncated and hostile .mlxfn files are rejected cleanly (a message
 * through the error handler, a non-zero result or an empty handle), never
 * a crash, leak or out-of-bounds access (this test also runs under ASan):
 * every MLX-written test file truncated at every byte, thousands of random
 * byte mutations of them (imported, and when that succeeds called and
 * evaluated), a bad version, bad counts, huge shapes, an unknown
 * primitive, an empty file and a missing one. */
#include "export_util.h"
#include "export/export.h"

#define DIR LACE_TEST_DATA "/export/"
/* Mutants per file (more with -DXFUZZ_ROUNDS=... for a longer session;
 * LACE_FUZZ_SEED picks another sequence). */
#ifndef XFUZZ_ROUNDS
#define XFUZZ_ROUNDS 400
#endif

static const char *const files[] = {"mlp", "indexing", "multi", "shapeless", "reductions",
                                    "shapes", "kwargs", "attention", "binary", "linalg"};
#define NFILES (sizeof files / sizeof *files)

static uint8_t *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)n + 1);
  *len = b ? fread(b, 1, (size_t)n, f) : 0;
  fclose(f);
  return b;
}

/* Parses bytes; a failure must have been reported. Returns the file. */
static struct lc_xfile *parse(const uint8_t *b, size_t n) {
  int seen = test_errors_seen;
  struct lc_xfile *f = lc_xfile_parse(b, n, "fuzz");
  if (!f) CHECK_MSG(test_errors_seen > seen, "a rejected file was not reported");
  return f;
}

static void test_truncation(void) {
  for (size_t k = 0; k < NFILES; k++) {
    char path[512];
    snprintf(path, sizeof path, DIR "%s.mlxfn", files[k]);
    size_t len = 0;
    uint8_t *b = read_all(path, &len);
    CHECK(b && len > 32);
    if (!b) continue;
    int accepted = 0;
    for (size_t n = 0; n < len; n++) {
      struct lc_xfile *f = parse(b, n);
      accepted += f != NULL;
      lc_xfile_free(f);
    }
    CHECK_MSG(accepted == 0, "%s: %d truncations accepted", files[k], accepted);
    struct lc_xfile *f = parse(b, len);
    CHECK_MSG(f != NULL, "%s: the whole file is rejected: %s", files[k], test_last_error);
    lc_xfile_free(f);
    free(b);
  }
}

/* Calls every function of f on zeros of its recorded input shapes (the
 * file's own constants keep their values) and evaluates: must not crash. */
static void call_all(struct lc_xfile *f) {
  for (int fi = 0; fi < f->nfun; fi++) {
    const struct lc_xfun *fn = &f->funs[fi];
    struct lc_node *in[64], *out[256];
    if (fn->nin > 64 || fn->nout > 256) continue;
    int ok = 1;
    int64_t total = 0;
    for (int i = 0; i < fn->nin && ok; i++) {
      const struct lc_xval *v = &fn->vals[fn->in[i]];
      total += lc_shape_size(v->ndim, v->shape);
      in[i] = total < (1 << 20) ? lc_node_alloc(v->dtype, v->ndim, v->shape) : NULL;
      if (in[i] && lc_node_alloc_data(in[i])) lc_node_release(in[i]), in[i] = NULL;
      if (in[i]) memset(in[i]->buf->data, 0, (size_t)in[i]->size * lc_dtype_size(v->dtype));
      if (!in[i]) {
        for (int j = 0; j < i; j++) lc_node_release(in[j]);
        ok = 0;
      }
    }
    if (!ok) continue;
    if (!lc_xfun_call(f, fi, in, out)) {
      mlx_vector_array v = mlx_vector_array_new();
      for (int o = 0; o < fn->nout; o++) {
        mlx_array a = {out[o]};
        mlx_vector_array_append_value(v, a);
        lc_node_release(out[o]);
      }
      mlx_eval(v);
      mlx_vector_array_free(v);
    }
    for (int i = 0; i < fn->nin; i++) lc_node_release(in[i]);
  }
}

static void test_mutations(void) {
  int accepted = 0, total = 0;
  for (size_t k = 0; k < NFILES; k++) {
    char path[512];
    snprintf(path, sizeof path, DIR "%s.mlxfn", files[k]);
    size_t len = 0;
    uint8_t *b = read_all(path, &len);
    if (!b) continue;
    uint8_t *m = malloc(len);
    for (int t = 0; t < XFUZZ_ROUNDS; t++, total++) {
      memcpy(m, b, len);
      int nmut = test_randint(1, 3);
      for (int j = 0; j < nmut; j++) {
        size_t at = (size_t)test_randint(0, (int)len - 1);
        switch (test_randint(0, 3)) {
        case 0: m[at] = (uint8_t)test_randint(0, 255); break;
        case 1: m[at] ^= (uint8_t)(1u << test_randint(0, 7)); break;
        case 2: m[at] = 0xff; break;
        default: m[at] = (uint8_t)(m[at] + 1); break;
        }
      }
      struct lc_xfile *f = parse(m, len);
      if (f) {
        accepted++;
        call_all(f);
      }
      lc_xfile_free(f);
    }
    free(m);
    free(b);
  }
  printf("mutations: %d of %d files accepted (then called and evaluated)\n", accepted, total);
  CHECK(accepted < total);
}

/* ---- hand-made files ---- */

static void header(struct lc_xwr *w, const char *version, int count) {
  lc_xwr_str(w, version);
  lc_xwr_i32(w, count);
  lc_xwr_bool(w, false);
  lc_xwr_str(w, "");
}

/* A function of one float32 input of shape (2,) whose tape is written by
 * `tape` (entries after the input's). */
static void one_function(struct lc_xwr *w, uint64_t ntape, void (*tape)(struct lc_xwr *)) {
  int two = 2;
  lc_xwr_u64(w, 0);    /* kwarg keys */
  lc_xwr_u64(w, 1);    /* input ids */
  lc_xwr_u64(w, 7);
  lc_xwr_u64(w, 1);    /* inputs */
  lc_xwr_shape(w, 1, &two);
  lc_xwr_dtype(w, MLX_FLOAT32);
  lc_xwr_u64(w, 1);    /* output ids */
  lc_xwr_u64(w, 8);
  lc_xwr_u64(w, ntape);
  lc_xwr_u64(w, 7);
  lc_xwr_bool(w, false);
  lc_xwr_bool(w, false);
  tape(w);
}

static void prim_head(struct lc_xwr *w, const char *name) {
  lc_xwr_u64(w, 8);
  lc_xwr_bool(w, true);
  lc_xwr_u64(w, 1);
  lc_xwr_u64(w, 7);
  for (int k = 0; k < 3; k++) lc_xwr_i32(w, 0);
  lc_xwr_str(w, name);
}

static void prim_tail(struct lc_xwr *w) {
  int two = 2;
  lc_xwr_u64(w, 0);
  lc_xwr_shape(w, 1, &two);
  lc_xwr_dtype(w, MLX_FLOAT32);
}

static void tape_exp(struct lc_xwr *w) { prim_head(w, "Exp"), prim_tail(w); }
static void tape_unknown(struct lc_xwr *w) { prim_head(w, "FancyOp"), prim_tail(w); }
static void tape_bad_ref(struct lc_xwr *w) {
  lc_xwr_u64(w, 8);
  lc_xwr_bool(w, true);
  lc_xwr_u64(w, 1);
  lc_xwr_u64(w, 99); /* never defined */
}
static void tape_huge_const(struct lc_xwr *w) {
  int sh[2] = {1 << 30, 1 << 30};
  lc_xwr_u64(w, 9);
  lc_xwr_bool(w, false);
  lc_xwr_bool(w, true);
  lc_xwr_shape(w, 2, sh);
  lc_xwr_dtype(w, MLX_FLOAT32);
}
static void tape_bad_dtype(struct lc_xwr *w) {
  prim_head(w, "Exp");
  lc_xwr_u64(w, 0);
  lc_xwr_shape(w, 0, NULL);
  lc_xwr_i32(w, 42);
  lc_xwr_u8(w, 4);
}
static void tape_bad_reshape(struct lc_xwr *w) {
  int big = 1 << 30;
  prim_head(w, "Reshape");
  lc_xwr_shape(w, 1, &big);
  prim_tail(w);
}
static void tape_huge_vector(struct lc_xwr *w) {
  prim_head(w, "Transpose");
  lc_xwr_u64(w, UINT64_C(1) << 60);
}
static void tape_twice(struct lc_xwr *w) {
  prim_head(w, "Exp"), prim_tail(w);
  prim_head(w, "Exp"), prim_tail(w);
}

/* Builds a file and checks that importing (and calling on (2,) float32)
 * fails with `needle`, or succeeds when needle is NULL. */
static void made(const char *version, int count, uint64_t ntape, void (*tape)(struct lc_xwr *),
                 const char *needle) {
  struct lc_xwr w = {0};
  header(&w, version, count);
  if (tape) one_function(&w, ntape, tape);
  char path[1024];
  xu_path(path, sizeof path, "made.mlxfn");
  FILE *f = fopen(path, "wb");
  fwrite(w.buf, 1, w.len, f);
  fclose(f);
  lc_xwr_free(&w);
  test_last_error[0] = 0;
  mlx_imported_function fn = mlx_imported_function_new(path);
  int two = 2;
  mlx_array x = test_rand_f32(&two, 1, -1, 1);
  mlx_vector_array args = xu_vec(1, &x), res = mlx_vector_array_new();
  int rc = fn.ctx ? mlx_imported_function_apply(&res, fn, args) : 1;
  if (needle) {
    CHECK_MSG(rc != 0 && strstr(test_last_error, needle), "expected '%s', got rc %d '%s'", needle,
              rc, test_last_error);
  } else {
    CHECK_MSG(rc == 0, "a valid hand-made file failed: %s", test_last_error);
  }
  mlx_imported_function_free(fn);
  mlx_vector_array_free(args);
  mlx_vector_array_free(res);
  mlx_array_free(x);
}

static void test_made(void) {
  made("0.32.4", 1, 2, tape_exp, NULL);
  made("0.31.0", 1, 2, tape_exp, "unsupported .mlxfn version '0.31.0'");
  made("1.0.0", 1, 2, tape_exp, "unsupported .mlxfn version");
  made("0.32.4", 1000000, 2, tape_exp, "invalid function count");
  made("0.32.4", -1, 2, tape_exp, "invalid function count");
  made("0.32.4", 2, 2, tape_exp, "truncated");
  made("0.32.4", 1, UINT64_C(1) << 62, tape_exp, "invalid count");
  made("0.32.4", 1, 2, tape_unknown, "unsupported primitive 'FancyOp'");
  made("0.32.4", 1, 2, tape_bad_ref, "unknown array id 99");
  made("0.32.4", 1, 2, tape_huge_const, "constant larger than the file");
  made("0.32.4", 1, 2, tape_bad_dtype, "unknown dtype value 42");
  made("0.32.4", 1, 2, tape_bad_reshape, "reshape");
  made("0.32.4", 1, 2, tape_huge_vector, "invalid count");
  made("0.32.4", 1, 3, tape_twice, "defined twice");
  made("0.32.4", 0, 0, NULL, "no imported function matches");
  CHECK(lc_xfile_parse((const uint8_t *)"", 0, "empty") == NULL);
  mlx_imported_function none = mlx_imported_function_new("/nonexistent/x.mlxfn");
  CHECK(none.ctx == NULL && strstr(test_last_error, "failed to open"));
}

int main(void) {
  test_init();
  test_seed(getenv("LACE_FUZZ_SEED") ? strtoull(getenv("LACE_FUZZ_SEED"), NULL, 10) : 77);
  test_truncation();
  test_mutations();
  test_made();
  xu_cleanup();
  return test_done();
}
