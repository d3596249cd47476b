/* Lazy loading (src/io/lazy.h): safetensors and GGUF files give LOAD nodes
 * that read when evaluated. Checked: every dtype gives the same bytes as
 * eager loading (LACE_LAZY_LOAD=0) and as what was saved; opening allocates
 * no tensor memory; aligned tensors are zero-copy windows of the mapping,
 * unaligned ones and bools needing normalisation are copies; arrays outlive
 * the map and the file (deleted after opening); a file truncated after
 * opening is an eval-time error; lazily loaded captures of compiled
 * functions; user readers stay eager; saved safetensors keys are sorted. */
#include <dirent.h>
#include <sys/stat.h>

#include "io_util.h"
#include "core/node.h"
#include "ops/prim.h"

static struct lc_node *node_of(mlx_array a) { return a.ctx; }

static mlx_array get(mlx_map_string_to_array m, const char *key) {
  mlx_array a = mlx_array_new();
  CHECK_OK(mlx_map_string_to_array_get(&a, m, key));
  return a;
}

static void set_lazy(int on) {
  if (on) unsetenv("LACE_LAZY_LOAD");
  else setenv("LACE_LAZY_LOAD", "0", 1);
}

static int load_st(mlx_map_string_to_array *m, const char *path, int lazy) {
  mlx_map_string_to_string md = mlx_map_string_to_string_new();
  set_lazy(lazy);
  int rc = mlx_load_safetensors(m, &md, path, test_stream());
  set_lazy(1);
  mlx_map_string_to_string_free(md);
  return rc;
}

static bool same_bytes(mlx_array a, mlx_array b) {
  size_t na = 0, nb = 0;
  void *pa = raw_bytes(a, &na), *pb = raw_bytes(b, &nb);
  bool same = na == nb && !memcmp(pa, pb, na);
  free(pa);
  free(pb);
  return same;
}

/* Every dtype, 0-d, empty and odd-sized tensors (so that later ones are
 * unaligned): lazy == eager == saved, bytewise; lazy nodes are unevaluated
 * LOAD nodes until evaluated. */
static void test_all_dtypes(void) {
  mlx_map_string_to_array src = mlx_map_string_to_array_new();
  size_t nd = sizeof all_dtypes / sizeof all_dtypes[0];
  char name[32];
  test_seed(3);
  for (size_t i = 0; i < nd; i++) {
    int shapes[3][2] = {{test_randint(1, 7), test_randint(1, 5)}, {0, 3}, {0, 0}};
    for (int s = 0; s < 3; s++) {
      int ndim = s == 2 ? 0 : 2;
      mlx_array a = rand_array(all_dtypes[i], shapes[s], ndim);
      snprintf(name, sizeof name, "t%02zu_%d", i, s);
      mlx_map_string_to_array_insert(src, name, a);
      mlx_array_free(a);
    }
  }
  CHECK_OK(mlx_save_safetensors(tmp_path("all.safetensors"), src, (mlx_map_string_to_string){0}));
  mlx_map_string_to_array lz = mlx_map_string_to_array_new(),
                          eg = mlx_map_string_to_array_new();
  CHECK_OK(load_st(&lz, tmp_path("all.safetensors"), 1));
  CHECK_OK(load_st(&eg, tmp_path("all.safetensors"), 0));
  int lazy_nodes = 0, eager_leaves = 0, bad = 0;
  for (size_t i = 0; i < nd; i++)
    for (int s = 0; s < 3; s++) {
      snprintf(name, sizeof name, "t%02zu_%d", i, s);
      mlx_array l = get(lz, name), e = get(eg, name), o = get(src, name);
      lazy_nodes += node_of(l)->op == LC_OP_LOAD && !node_of(l)->buf;
      eager_leaves += node_of(e)->buf != NULL;
      CHECK(mlx_array_dtype(l) == all_dtypes[i]);
      if (!same_bytes(l, e) || !same_bytes(l, o)) {
        bad++;
        fprintf(stderr, "  %s (dtype %d) differs\n", name, (int)all_dtypes[i]);
      }
      mlx_array_free(l);
      mlx_array_free(e);
      mlx_array_free(o);
    }
  CHECK_MSG(lazy_nodes == (int)(3 * nd), "%d lazy nodes", lazy_nodes);
  CHECK_MSG(eager_leaves == (int)(3 * nd), "%d eager leaves", eager_leaves);
  CHECK(bad == 0);
  mlx_map_string_to_array_free(src);
  mlx_map_string_to_array_free(lz);
  mlx_map_string_to_array_free(eg);
}

/* Opening allocates nothing; an aligned float32 tensor evaluates as a
 * window of the mapping (still nothing allocated), an unaligned one as a
 * fresh buffer of its size. */
static void test_memory_and_zero_copy(void) {
  int big = 1 << 18; /* 1 MiB of float32 each */
  mlx_map_string_to_array src = mlx_map_string_to_array_new();
  mlx_array a = rand_array(MLX_UINT8, (int[]){3}, 1);  /* "a": 3 bytes at 0 */
  mlx_array b = rand_array(MLX_FLOAT32, &big, 1);      /* "b": at 3, unaligned */
  mlx_array c = rand_array(MLX_FLOAT32, (int[]){1}, 1); /* "c": at 3 + 4 big */
  mlx_array d = rand_array(MLX_FLOAT32, &big, 1);      /* "d": at 7 + 4 big */
  mlx_map_string_to_array_insert(src, "b", b);
  mlx_map_string_to_array_insert(src, "a", a);
  mlx_map_string_to_array_insert(src, "d", d);
  mlx_map_string_to_array_insert(src, "c", c);
  mlx_map_string_to_array_insert(src, "e", b); /* at 7 + 8 big */
  CHECK_OK(mlx_save_safetensors(tmp_path("mem.safetensors"), src, (mlx_map_string_to_string){0}));
  /* an aligned layout: b alone, then e */
  mlx_map_string_to_array al = mlx_map_string_to_array_new();
  mlx_map_string_to_array_insert(al, "b", b);
  mlx_map_string_to_array_insert(al, "e", d);
  CHECK_OK(mlx_save_safetensors(tmp_path("al.safetensors"), al, (mlx_map_string_to_string){0}));
  mlx_map_string_to_array_free(al);
  mlx_clear_cache();

  size_t m0 = test_active_memory();
  mlx_map_string_to_array m = mlx_map_string_to_array_new();
  CHECK_OK(load_st(&m, tmp_path("al.safetensors"), 1));
  size_t m1 = test_active_memory();
  CHECK_MSG(m1 == m0, "open allocated %zu bytes", m1 - m0);
  mlx_array lb = get(m, "b"), le = get(m, "e");
  CHECK_OK(mlx_array_eval(lb));
  CHECK_OK(mlx_array_eval(le));
  size_t m2 = test_active_memory();
  CHECK_MSG(m2 == m0, "zero-copy eval allocated %zu bytes", m2 - m0);
  CHECK(node_of(lb)->buf && !node_of(lb)->buf->owned && !node_of(le)->buf->owned);
  CHECK(same_bytes(lb, b) && same_bytes(le, d));
  /* an op whose only input is a window, referenced by nothing else: the
   * (read-only) mapping must not be donated as its output */
  mlx_map_string_to_array_free(m);
  mlx_array one = mlx_array_new_float(1.0f), y = mlx_array_new(), yref = mlx_array_new();
  CHECK_OK(mlx_add(&y, lb, one, test_stream()));
  mlx_array_free(lb);
  CHECK_OK(mlx_add(&yref, b, one, test_stream()));
  CHECK_OK(mlx_array_eval(y));
  CHECK(same_bytes(y, yref));
  mlx_array_free(one);
  mlx_array_free(y);
  mlx_array_free(yref);
  mlx_array_free(le);

  /* the packed layout: every float32 after "a" sits at an offset of 3 mod 4,
   * so each is a copy */
  m = mlx_map_string_to_array_new();
  mlx_clear_cache();
  m0 = test_active_memory();
  CHECK_OK(load_st(&m, tmp_path("mem.safetensors"), 1));
  CHECK(test_active_memory() == m0);
  mlx_array ub = get(m, "b");
  CHECK_OK(mlx_array_eval(ub));
  size_t grew = test_active_memory() - m0;
  CHECK_MSG(grew >= (size_t)big * 4, "unaligned eval allocated only %zu bytes", grew);
  CHECK(node_of(ub)->buf->owned);
  CHECK(same_bytes(ub, b));
  const char *names[] = {"a", "c", "d", "e"};
  mlx_array refs[] = {a, c, d, b};
  for (int i = 0; i < 4; i++) {
    mlx_array x = get(m, names[i]);
    CHECK_MSG(same_bytes(x, refs[i]), "%s", names[i]);
    mlx_array_free(x);
  }
  mlx_array_free(ub);
  mlx_map_string_to_array_free(m);
  mlx_map_string_to_array_free(src);
  mlx_array_free(a);
  mlx_array_free(b);
  mlx_array_free(c);
  mlx_array_free(d);
}

/* A hand-written file: BOOL bytes 0/2/1/255 (normalised: a copy) and valid
 * bools (zero-copy), u64 header length, 8-aligned data. */
static void test_bools(void) {
  const char *hdr = "{\"b\":{\"dtype\":\"BOOL\",\"shape\":[4],\"data_offsets\":[0,4]},"
                    "\"g\":{\"dtype\":\"BOOL\",\"shape\":[4],\"data_offsets\":[4,8]}}";
  size_t hl = strlen(hdr);
  unsigned char buf[512];
  for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)hl >> (8 * i));
  memcpy(buf + 8, hdr, hl);
  const unsigned char data[8] = {0, 2, 1, 255, 1, 0, 0, 1};
  memcpy(buf + 8 + hl, data, 8);
  spit(tmp_path("bool.safetensors"), buf, 16 + hl);
  mlx_map_string_to_array m = mlx_map_string_to_array_new();
  CHECK_OK(load_st(&m, tmp_path("bool.safetensors"), 1));
  mlx_array b = get(m, "b"), g = get(m, "g");
  CHECK_OK(mlx_array_eval(b));
  CHECK_OK(mlx_array_eval(g));
  const bool *pb = mlx_array_data_bool(b), *pg = mlx_array_data_bool(g);
  const unsigned char *ub = (const unsigned char *)pb, *ug = (const unsigned char *)pg;
  CHECK(ub && ub[0] == 0 && ub[1] == 1 && ub[2] == 1 && ub[3] == 1);
  CHECK(ug && ug[0] == 1 && ug[1] == 0 && ug[2] == 0 && ug[3] == 1);
  CHECK(node_of(b)->buf->owned && !node_of(g)->buf->owned);
  mlx_array_free(b);
  mlx_array_free(g);
  mlx_map_string_to_array_free(m);
}

/* Arrays outlive their map and the file's name; truncation after opening
 * is an eval-time error that leaves other arrays usable. */
static void test_lifetime_and_truncation(void) {
  int n = 1000;
  mlx_array x = rand_array(MLX_FLOAT32, &n, 1), y = rand_array(MLX_INT16, &n, 1);
  mlx_map_string_to_array src = mlx_map_string_to_array_new();
  mlx_map_string_to_array_insert(src, "x", x);
  mlx_map_string_to_array_insert(src, "y", y);
  CHECK_OK(mlx_save_safetensors(tmp_path("life.safetensors"), src, (mlx_map_string_to_string){0}));
  mlx_map_string_to_array m = mlx_map_string_to_array_new();
  CHECK_OK(load_st(&m, tmp_path("life.safetensors"), 1));
  mlx_array lx = get(m, "x"), ly = get(m, "y");
  mlx_map_string_to_array_free(m);
  CHECK(unlink(tmp_path("life.safetensors")) == 0);
  CHECK(same_bytes(lx, x) && same_bytes(ly, y));
  mlx_array_free(lx);
  mlx_array_free(ly);

  CHECK_OK(mlx_save_safetensors(tmp_path("trunc.safetensors"), src, (mlx_map_string_to_string){0}));
  m = mlx_map_string_to_array_new();
  CHECK_OK(load_st(&m, tmp_path("trunc.safetensors"), 1));
  lx = get(m, "x"); /* first in the file */
  ly = get(m, "y");
  mlx_array sum = mlx_array_new();
  CHECK_OK(mlx_sum(&sum, ly, false, test_stream()));
  struct stat st;
  CHECK(stat(tmp_path("trunc.safetensors"), &st) == 0);
  CHECK(truncate(tmp_path("trunc.safetensors"), st.st_size - 10) == 0);
  CHECK_FAILS(mlx_array_eval(ly), "truncated after loading");
  CHECK_FAILS(mlx_array_eval(sum), "truncated after loading");
  CHECK_OK(mlx_array_eval(lx)); /* still within the file */
  CHECK(same_bytes(lx, x));
  mlx_array_free(sum);
  mlx_array_free(lx);
  mlx_array_free(ly);
  mlx_map_string_to_array_free(m);
  /* eager loading of the truncated file fails at open */
  m = mlx_map_string_to_array_new();
  CHECK_FAILS(load_st(&m, tmp_path("trunc.safetensors"), 1), "truncated or corrupt");
  CHECK_FAILS(load_st(&m, tmp_path("trunc.safetensors"), 0), "mlx_load_safetensors");
  mlx_map_string_to_array_free(m);
  mlx_map_string_to_array_free(src);
  mlx_array_free(x);
  mlx_array_free(y);
}

/* f(x) = x * w + w with w lazily loaded and captured: a constant of the
 * compiled program; the results match the eager computation. */
static int scale_fn(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  mlx_array w = *(mlx_array *)payload, x = mlx_array_new(), y = mlx_array_new(),
            z = mlx_array_new();
  mlx_vector_array_get(&x, in, 0);
  int rc = mlx_multiply(&y, x, w, test_stream()) || mlx_add(&z, y, w, test_stream());
  if (!rc) rc = mlx_vector_array_set_value(res, z);
  mlx_array_free(x);
  mlx_array_free(y);
  mlx_array_free(z);
  return rc;
}

static void test_compile_capture(void) {
  int shape[2] = {8, 16};
  mlx_array w = rand_array(MLX_FLOAT32, shape, 2), x = test_rand_f32(shape, 2, -1, 1);
  mlx_map_string_to_array src = mlx_map_string_to_array_new();
  mlx_map_string_to_array_insert(src, "w", w);
  CHECK_OK(mlx_save_safetensors(tmp_path("cap.safetensors"), src, (mlx_map_string_to_string){0}));
  mlx_map_string_to_array m = mlx_map_string_to_array_new();
  CHECK_OK(load_st(&m, tmp_path("cap.safetensors"), 1));
  mlx_array lw = get(m, "w");
  CHECK(node_of(lw)->op == LC_OP_LOAD && !node_of(lw)->buf);
  mlx_closure f = mlx_closure_new_func_payload(scale_fn, &lw, NULL);
  mlx_closure cf = mlx_closure_new();
  CHECK_OK(mlx_compile(&cf, f, false));
  mlx_vector_array in = mlx_vector_array_new_value(x);
  double *xv = test_values(x), *wv = test_values(w);
  double ref[128];
  for (int i = 0; i < 128; i++) ref[i] = xv[i] * wv[i] + wv[i];
  for (int call = 0; call < 2; call++) {
    mlx_vector_array out = mlx_vector_array_new();
    CHECK_OK(mlx_closure_apply(&out, cf, in));
    mlx_array r = mlx_array_new();
    CHECK_OK(mlx_vector_array_get(&r, out, 0));
    CHECK_CLOSE(r, ref, 128, 1e-6, 1e-6);
    mlx_array_free(r);
    mlx_vector_array_free(out);
  }
  CHECK(node_of(lw)->buf != NULL); /* evaluated as the trace's constant */
  free(xv);
  free(wv);
  mlx_vector_array_free(in);
  mlx_closure_free(cf);
  mlx_closure_free(f);
  mlx_array_free(lw);
  mlx_map_string_to_array_free(m);
  mlx_map_string_to_array_free(src);
  mlx_array_free(w);
  mlx_array_free(x);
}

/* Loading from a user reader stays eager. */
static void test_reader_eager(void) {
  int n = 10;
  mlx_array x = rand_array(MLX_FLOAT32, &n, 1);
  mlx_map_string_to_array src = mlx_map_string_to_array_new();
  mlx_map_string_to_array_insert(src, "x", x);
  struct mem w = {.growable = true};
  mlx_io_writer wr = mlx_io_writer_new(&w, mem_vtable);
  CHECK_OK(mlx_save_safetensors_writer(wr, src, (mlx_map_string_to_string){0}));
  mlx_io_writer_free(wr);
  struct mem r = {.data = w.data, .size = w.size};
  mlx_io_reader rd = mlx_io_reader_new(&r, mem_vtable);
  mlx_map_string_to_array m = mlx_map_string_to_array_new();
  mlx_map_string_to_string md = mlx_map_string_to_string_new();
  CHECK_OK(mlx_load_safetensors_reader(&m, &md, rd, test_stream()));
  mlx_array lx = get(m, "x");
  CHECK(node_of(lx)->buf != NULL && node_of(lx)->op == LC_OP_NONE);
  CHECK(same_bytes(lx, x));
  mlx_array_free(lx);
  mlx_io_reader_free(rd);
  free(w.data);
  mlx_map_string_to_array_free(m);
  mlx_map_string_to_string_free(md);
  mlx_map_string_to_array_free(src);
  mlx_array_free(x);
}

/* Keys of a saved file are in sorted order whatever the insertion order,
 * "__metadata__" among them, metadata keys sorted too; loading gives the
 * map in name order. */
static void test_sorted_keys(void) {
  const char *ins[] = {"zeta", "alpha", "Mid", "beta", "b", "_x"};
  const char *sorted[] = {"\"Mid\"", "\"__metadata__\"", "\"_x\"", "\"alpha\"", "\"b\"",
                          "\"beta\"", "\"zeta\""};
  mlx_map_string_to_array src = mlx_map_string_to_array_new();
  mlx_map_string_to_string md = mlx_map_string_to_string_new();
  for (int i = 0; i < 6; i++) {
    int n = i + 1;
    mlx_array a = rand_array(MLX_FLOAT32, &n, 1);
    mlx_map_string_to_array_insert(src, ins[i], a);
    mlx_array_free(a);
  }
  mlx_map_string_to_string_insert(md, "zz", "1");
  mlx_map_string_to_string_insert(md, "aa", "2");
  CHECK_OK(mlx_save_safetensors(tmp_path("sorted.safetensors"), src, md));
  size_t n = 0;
  char *f = slurp(tmp_path("sorted.safetensors"), &n);
  CHECK(f && n > 8);
  uint64_t hl = 0;
  for (int i = 0; f && i < 8; i++) hl |= (uint64_t)(unsigned char)f[i] << (8 * i);
  CHECK(hl % 8 == 0 && hl + 8 <= n);
  char *hdr = f ? strndup(f + 8, (size_t)hl) : NULL;
  const char *prev = hdr;
  for (int i = 0; hdr && i < 7; i++) {
    const char *at = strstr(hdr, sorted[i]);
    CHECK_MSG(at && at >= prev, "%s is out of order in %s", sorted[i], hdr);
    if (at) prev = at;
  }
  CHECK(hdr && strstr(hdr, "\"aa\"") < strstr(hdr, "\"zz\""));
  /* data offsets follow the sorted order: "Mid" (3 floats) first */
  CHECK(hdr && strstr(hdr, "\"Mid\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}"));
  mlx_map_string_to_array m = mlx_map_string_to_array_new();
  CHECK_OK(load_st(&m, tmp_path("sorted.safetensors"), 1));
  mlx_map_string_to_array_iterator it = mlx_map_string_to_array_iterator_new(m);
  const char *k, *last = "";
  mlx_array v = mlx_array_new();
  int count = 0;
  while (mlx_map_string_to_array_iterator_next(&k, &v, it) == 0) {
    CHECK_MSG(strcmp(last, k) < 0, "%s after %s", k, last);
    last = k;
    mlx_array o = get(src, k);
    CHECK_MSG(same_bytes(v, o), "%s", k);
    mlx_array_free(o);
    count++;
  }
  CHECK(count == 6);
  mlx_array_free(v);
  mlx_map_string_to_array_iterator_free(it);
  mlx_map_string_to_array_free(m);
  free(hdr);
  free(f);
  mlx_map_string_to_array_free(src);
  mlx_map_string_to_string_free(md);
}

static bool temp_files_left(void) {
  DIR *d = opendir(tmp_dir);
  struct dirent *e;
  bool found = false;
  while (d && (e = readdir(d)))
    if (strstr(e->d_name, ".lace-")) found = true;
  if (d) closedir(d);
  return found;
}

/* Saving over the file arrays were loaded from: the save writes a new file
 * and renames it into place, so evaluated windows of the old mapping and
 * unevaluated arrays keep the old bytes; the file keeps its mode; a failed
 * save leaves the old file as it was. */
static void test_save_over_source(void) {
  int n = 4096;
  mlx_array x = rand_array(MLX_FLOAT32, &n, 1), y = rand_array(MLX_FLOAT32, &n, 1);
  mlx_map_string_to_array src = mlx_map_string_to_array_new();
  mlx_map_string_to_array_insert(src, "x", x);
  mlx_map_string_to_array_insert(src, "y", x);
  const char *path = tmp_path("over.safetensors");
  CHECK_OK(mlx_save_safetensors(path, src, (mlx_map_string_to_string){0}));
  CHECK(chmod(path, 0640) == 0);
  mlx_map_string_to_array m = mlx_map_string_to_array_new();
  CHECK_OK(load_st(&m, path, 1));
  mlx_array lx = get(m, "x"), ly = get(m, "y");
  CHECK_OK(mlx_array_eval(lx));
  CHECK(!node_of(lx)->buf->owned && !node_of(ly)->buf); /* a window; y still lazy */
  /* new contents, saved over the same path */
  mlx_map_string_to_array upd = mlx_map_string_to_array_new();
  mlx_map_string_to_array_insert(upd, "x", y);
  mlx_map_string_to_array_insert(upd, "y", y);
  CHECK_OK(mlx_save_safetensors(path, upd, (mlx_map_string_to_string){0}));
  struct stat st;
  CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0640);
  CHECK(same_bytes(lx, x) && same_bytes(ly, x));
  mlx_map_string_to_array m2 = mlx_map_string_to_array_new();
  CHECK_OK(load_st(&m2, path, 1));
  mlx_array nx = get(m2, "x");
  CHECK(same_bytes(nx, y));
  /* a save that fails (an array that cannot be evaluated) keeps the file */
  mlx_map_string_to_array_free(m);
  mlx_array_free(nx);
  mlx_map_string_to_array_free(m2);
  CHECK_OK(mlx_save_safetensors(path, upd, (mlx_map_string_to_string){0}));
  m = mlx_map_string_to_array_new();
  CHECK_OK(load_st(&m, path, 1));
  mlx_array bad = get(m, "y");
  mlx_map_string_to_array_free(m);
  CHECK(truncate(path, 100) == 0);
  mlx_map_string_to_array upd2 = mlx_map_string_to_array_new();
  mlx_map_string_to_array_insert(upd2, "z", bad);
  CHECK_FAILS(mlx_save_safetensors(path, upd2, (mlx_map_string_to_string){0}), "truncated");
  CHECK(stat(path, &st) == 0 && st.st_size == 100);
  CHECK(!temp_files_left());
  mlx_map_string_to_array_free(upd2);
  mlx_array_free(bad);
  mlx_array_free(lx);
  mlx_array_free(ly);
  mlx_map_string_to_array_free(upd);
  mlx_map_string_to_array_free(src);
  mlx_array_free(x);
  mlx_array_free(y);
}

/* GGUF files (plain and Q4_0/Q4_1/Q8_0 tensors): lazy == eager bytewise. */
static void check_gguf(const char *name, int expect_arrays) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", LACE_TEST_DATA, name);
  mlx_io_gguf lz = mlx_io_gguf_new(), eg = mlx_io_gguf_new();
  CHECK_OK(mlx_load_gguf(&lz, path, test_stream()));
  set_lazy(0);
  CHECK_OK(mlx_load_gguf(&eg, path, test_stream()));
  set_lazy(1);
  mlx_vector_string keys = mlx_vector_string_new(), keys2 = mlx_vector_string_new();
  CHECK_OK(mlx_io_gguf_get_keys(&keys, lz));
  CHECK_OK(mlx_io_gguf_get_keys(&keys2, eg));
  CHECK_MSG((int)mlx_vector_string_size(keys) == expect_arrays, "%s: %zu arrays", name,
            mlx_vector_string_size(keys));
  CHECK(mlx_vector_string_size(keys) == mlx_vector_string_size(keys2));
  for (size_t i = 0; i < mlx_vector_string_size(keys); i++) {
    char *k = NULL, *k2 = NULL;
    mlx_vector_string_get(&k, keys, i);
    mlx_vector_string_get(&k2, keys2, i);
    CHECK_MSG(k && k2 && !strcmp(k, k2), "%s: key %zu", name, i);
    mlx_array a = mlx_array_new(), b = mlx_array_new();
    CHECK_OK(mlx_io_gguf_get_array(&a, lz, k));
    CHECK_OK(mlx_io_gguf_get_array(&b, eg, k));
    CHECK_MSG(node_of(a)->op == LC_OP_LOAD && !node_of(a)->buf, "%s: %s not lazy", name, k);
    CHECK_MSG(same_bytes(a, b), "%s: %s differs", name, k);
    mlx_array_free(a);
    mlx_array_free(b);
  }
  mlx_vector_string_free(keys);
  mlx_vector_string_free(keys2);
  mlx_io_gguf_free(lz);
  mlx_io_gguf_free(eg);
}

static void test_gguf(void) {
  check_gguf("io_ref.gguf", 4);
  check_gguf("io_quant.gguf", 9);
  /* a GGUF tensor whose data runs past the end of the file fails at open */
  size_t n = 0;
  char path[512];
  snprintf(path, sizeof path, "%s/io_quant.gguf", LACE_TEST_DATA);
  char *good = slurp(path, &n);
  CHECK(good && n > 100);
  spit(tmp_path("q.gguf"), good, n - 1);
  mlx_io_gguf g = mlx_io_gguf_new();
  CHECK_FAILS(mlx_load_gguf(&g, tmp_path("q.gguf"), test_stream()), "mlx_load_gguf");
  /* truncated after opening: eval fails cleanly */
  spit(tmp_path("q.gguf"), good, n);
  CHECK_OK(mlx_load_gguf(&g, tmp_path("q.gguf"), test_stream()));
  spit(tmp_path("q.gguf"), good, 64);
  mlx_array a = mlx_array_new();
  CHECK_OK(mlx_io_gguf_get_array(&a, g, "q80.weight"));
  CHECK_FAILS(mlx_array_eval(a), "truncated after loading");
  mlx_array_free(a);
  mlx_io_gguf_free(g);
  free(good);
}

int main(void) {
  test_init();
  make_tmp_dir();
  test_all_dtypes();
  test_memory_and_zero_copy();
  test_bools();
  test_lifetime_and_truncation();
  test_compile_capture();
  test_reader_eager();
  test_sorted_keys();
  test_save_over_source();
  test_gguf();
  const char *names[] = {"all.safetensors", "mem.safetensors", "al.safetensors",
                         "bool.safetensors", "life.safetensors", "trunc.safetensors",
                         "cap.safetensors", "sorted.safetensors", "q.gguf", "over.safetensors"};
  remove_tmp_dir(names, sizeof names / sizeof names[0]);
  return test_done();
}
