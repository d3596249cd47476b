/* Fuzz harness: GGUF loading (mlx_load_gguf). Every array and metadata
 * entry of a loaded file is read back through the public getters; when the
 * container can be saved again, the saved file must load. */
#include "fuzz.h"

#include "io/gguf.h"

static void gguf_touch_meta(mlx_io_gguf g) {
  struct lc_gguf *c = g.ctx;
  for (size_t i = 0; i < c->nmeta; i++) {
    const char *key = c->meta[i].key;
    bool has_a = false, has_s = false, has_v = false;
    FUZZ_CALL(mlx_io_gguf_has_metadata_array(&has_a, g, key));
    FUZZ_CALL(mlx_io_gguf_has_metadata_string(&has_s, g, key));
    FUZZ_CALL(mlx_io_gguf_has_metadata_vector_string(&has_v, g, key));
    if (has_a + has_s + has_v != 1) abort(); /* exactly one kind per entry */
    if (has_a) {
      mlx_array a = mlx_array_new();
      if (FUZZ_CALL(mlx_io_gguf_get_metadata_array(&a, g, key)) == 0) fuzz_touch_array(a);
      mlx_array_free(a);
    } else if (has_s) {
      mlx_string str = mlx_string_new();
      FUZZ_CALL(mlx_io_gguf_get_metadata_string(&str, g, key));
      mlx_string_free(str);
    } else {
      mlx_vector_string v = mlx_vector_string_new();
      if (FUZZ_CALL(mlx_io_gguf_get_metadata_vector_string(&v, g, key)) == 0)
        for (size_t k = 0; k < mlx_vector_string_size(v); k++) {
          char *e = NULL;
          FUZZ_CALL(mlx_vector_string_get(&e, v, k));
        }
      mlx_vector_string_free(v);
    }
  }
}

static void gguf_touch_arrays(mlx_io_gguf g) {
  mlx_vector_string keys = mlx_vector_string_new();
  if (FUZZ_CALL(mlx_io_gguf_get_keys(&keys, g)) == 0)
    for (size_t k = 0; k < mlx_vector_string_size(keys); k++) {
      char *key = NULL;
      if (FUZZ_CALL(mlx_vector_string_get(&key, keys, k))) continue;
      mlx_array a = mlx_array_new();
      if (FUZZ_CALL(mlx_io_gguf_get_array(&a, g, key))) abort(); /* a listed key must exist */
      fuzz_touch_array(a);
      mlx_array_free(a);
    }
  mlx_vector_string_free(keys);
}

static void gguf_roundtrip(mlx_io_gguf g, const char *path, mlx_stream s) {
  if (FUZZ_CALL(mlx_save_gguf(path, g))) return;
  mlx_io_gguf g2 = mlx_io_gguf_new();
  if (FUZZ_CALL(mlx_load_gguf(&g2, path, s))) abort(); /* what was saved must load */
  mlx_io_gguf_free(g2);
}

FUZZ_ENTRY(gguf) {
  fuzz_setup();
  mlx_stream s = mlx_default_cpu_stream_new();
  mlx_io_gguf g = mlx_io_gguf_new();
  const char *path = fuzz_write_temp(".gguf", data, size);
  if (path && FUZZ_CALL(mlx_load_gguf(&g, path, s)) == 0) {
    gguf_touch_arrays(g);
    gguf_touch_meta(g);
    gguf_roundtrip(g, path, s);
  }
  if (path) unlink(path);
  mlx_io_gguf_free(g);
  mlx_stream_free(s);
  return 0;
}
