/* io.h / io_types.h: the mlx_io_gguf container and mlx_load_gguf /
 * mlx_save_gguf (format and limits: src/io/gguf.h). mlx_load_gguf returns
 * lazy tensors (io/lazy.h). mlx_save_gguf appends ".gguf" when the path
 * lacks it, like MLX. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/handles.h"
#include "io/gguf.h"

#define G(io) ((struct lc_gguf *)(io).ctx)

#define CHECK_GGUF(fn, io, key)                                         \
  do {                                                                  \
    if (!(io).ctx) return lc_error("%s: the gguf handle is empty", fn); \
    if (!(key)) return lc_error("%s: key is NULL", fn);                 \
  } while (0)

mlx_io_gguf mlx_io_gguf_new(void) { return (mlx_io_gguf){lc_gguf_new()}; }

int mlx_io_gguf_free(mlx_io_gguf io) {
  lc_gguf_delete(G(io));
  return 0;
}

int mlx_io_gguf_get_keys(mlx_vector_string *keys, mlx_io_gguf io) {
  LC_CHECK_RES("mlx_io_gguf_get_keys", keys);
  if (!io.ctx) return lc_error("mlx_io_gguf_get_keys: the gguf handle is empty");
  return mlx_vector_string_set_data(keys, (const char **)G(io)->names, G(io)->narr);
}

int mlx_io_gguf_get_array(mlx_array *arr, mlx_io_gguf io, const char *key) {
  const char *fn = "mlx_io_gguf_get_array";
  LC_CHECK_RES(fn, arr);
  CHECK_GGUF(fn, io, key);
  for (size_t i = 0; i < G(io)->narr; i++)
    if (!strcmp(G(io)->names[i], key)) return lc_api_set(arr, lc_node_retain(G(io)->arrs[i]));
  return lc_error("%s: no array named '%s'", fn, key);
}

static struct lc_gguf_meta *meta_of(const char *fn, mlx_io_gguf io, const char *key,
                                    enum lc_gguf_kind kind) {
  struct lc_gguf_meta *m = lc_gguf_find_meta(G(io), key);
  static const char *names[] = {"an array", "a string", "a list of strings"};
  if (!m) lc_error("%s: no metadata named '%s'", fn, key);
  else if (m->kind != kind) lc_error("%s: metadata '%s' is %s, not %s", fn, key, names[m->kind],
                                     names[kind]);
  else return m;
  return NULL;
}

int mlx_io_gguf_get_metadata_array(mlx_array *arr, mlx_io_gguf io, const char *key) {
  const char *fn = "mlx_io_gguf_get_metadata_array";
  LC_CHECK_RES(fn, arr);
  CHECK_GGUF(fn, io, key);
  struct lc_gguf_meta *m = meta_of(fn, io, key, LC_GGUF_ARRAY);
  return m ? lc_api_set(arr, lc_node_retain(m->arr)) : 1;
}

int mlx_io_gguf_get_metadata_string(mlx_string *str, mlx_io_gguf io, const char *key) {
  const char *fn = "mlx_io_gguf_get_metadata_string";
  LC_CHECK_RES(fn, str);
  CHECK_GGUF(fn, io, key);
  struct lc_gguf_meta *m = meta_of(fn, io, key, LC_GGUF_STRING);
  return m ? lc_string_assign(str, m->str) : 1;
}

int mlx_io_gguf_get_metadata_vector_string(mlx_vector_string *vstr, mlx_io_gguf io,
                                           const char *key) {
  const char *fn = "mlx_io_gguf_get_metadata_vector_string";
  LC_CHECK_RES(fn, vstr);
  CHECK_GGUF(fn, io, key);
  struct lc_gguf_meta *m = meta_of(fn, io, key, LC_GGUF_STRINGS);
  return m ? mlx_vector_string_set_data(vstr, (const char **)m->strs, m->nstrs) : 1;
}

static int has(bool *flag, mlx_io_gguf io, const char *key, enum lc_gguf_kind kind,
               const char *fn) {
  LC_CHECK_RES(fn, flag);
  CHECK_GGUF(fn, io, key);
  struct lc_gguf_meta *m = lc_gguf_find_meta(G(io), key);
  *flag = m && m->kind == kind;
  return 0;
}

int mlx_io_gguf_has_metadata_array(bool *flag, mlx_io_gguf io, const char *key) {
  return has(flag, io, key, LC_GGUF_ARRAY, "mlx_io_gguf_has_metadata_array");
}
int mlx_io_gguf_has_metadata_string(bool *flag, mlx_io_gguf io, const char *key) {
  return has(flag, io, key, LC_GGUF_STRING, "mlx_io_gguf_has_metadata_string");
}
int mlx_io_gguf_has_metadata_vector_string(bool *flag, mlx_io_gguf io, const char *key) {
  return has(flag, io, key, LC_GGUF_STRINGS, "mlx_io_gguf_has_metadata_vector_string");
}

int mlx_io_gguf_set_array(mlx_io_gguf io, const char *key, const mlx_array arr) {
  const char *fn = "mlx_io_gguf_set_array";
  CHECK_GGUF(fn, io, key);
  LC_CHECK_ARR(fn, arr);
  return lc_gguf_put_array(G(io), key, lc_arr(arr));
}

static int put_meta(const char *fn, mlx_io_gguf io, const char *key, struct lc_gguf_meta *m) {
  if (!(m->key = strdup(key))) {
    lc_gguf_meta_clear(m);
    return lc_error("%s: out of memory", fn);
  }
  return lc_gguf_put_meta(G(io), m);
}

int mlx_io_gguf_set_metadata_array(mlx_io_gguf io, const char *key, const mlx_array marr) {
  const char *fn = "mlx_io_gguf_set_metadata_array";
  CHECK_GGUF(fn, io, key);
  LC_CHECK_ARR(fn, marr);
  struct lc_gguf_meta m = {.kind = LC_GGUF_ARRAY, .arr = lc_node_retain(lc_arr(marr))};
  return put_meta(fn, io, key, &m);
}

int mlx_io_gguf_set_metadata_string(mlx_io_gguf io, const char *key, const char *mstr) {
  const char *fn = "mlx_io_gguf_set_metadata_string";
  CHECK_GGUF(fn, io, key);
  if (!mstr) return lc_error("%s: value is NULL", fn);
  struct lc_gguf_meta m = {.kind = LC_GGUF_STRING, .str = strdup(mstr)};
  if (!m.str) return lc_error("%s: out of memory", fn);
  return put_meta(fn, io, key, &m);
}

int mlx_io_gguf_set_metadata_vector_string(mlx_io_gguf io, const char *key,
                                           const mlx_vector_string mvstr) {
  const char *fn = "mlx_io_gguf_set_metadata_vector_string";
  CHECK_GGUF(fn, io, key);
  struct lc_vec_string *v = mvstr.ctx;
  if (!v) return lc_error("%s: the string vector is an empty handle", fn);
  struct lc_gguf_meta m = {.kind = LC_GGUF_STRINGS, .strs = calloc(v->len ? v->len : 1, sizeof(char *))};
  if (!m.strs) return lc_error("%s: out of memory", fn);
  for (; m.nstrs < v->len; m.nstrs++)
    if (!(m.strs[m.nstrs] = strdup(v->items[m.nstrs]))) {
      lc_gguf_meta_clear(&m);
      return lc_error("%s: out of memory", fn);
    }
  return put_meta(fn, io, key, &m);
}

int mlx_load_gguf(mlx_io_gguf *gguf, const char *file, const mlx_stream s) {
  const char *fn = "mlx_load_gguf";
  LC_CHECK_RES(fn, gguf);
  if (!file) return lc_error("%s: file is NULL", fn);
  struct lc_in in;
  if (lc_api_check_stream(fn, s) || lc_in_open_file(&in, fn, file)) return 1;
  struct lc_gguf *g = lc_gguf_load(&in);
  lc_in_close(&in);
  if (!g) return 1;
  lc_gguf_delete(G(*gguf));
  gguf->ctx = g;
  return 0;
}

int mlx_save_gguf(const char *file, mlx_io_gguf gguf) {
  const char *fn = "mlx_save_gguf";
  if (!file) return lc_error("%s: file is NULL", fn);
  if (!gguf.ctx) return lc_error("%s: the gguf handle is empty", fn);
  size_t n = strlen(file);
  int has_ext = n >= 5 && !strcmp(file + n - 5, ".gguf");
  char *path = malloc(n + 6);
  if (!path) return lc_error("%s: out of memory", fn);
  memcpy(path, file, n + 1);
  if (!has_ext) memcpy(path + n, ".gguf", 6);
  struct lc_out out;
  int rc = lc_out_open_file(&out, fn, path);
  free(path);
  if (rc) return 1;
  rc = lc_gguf_save(&out, G(gguf));
  return lc_out_close(&out, rc);
}
