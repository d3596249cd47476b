/* Fuzz harness: .safetensors loading (from a file and from a memory
 * stream). Every loaded array is evaluated and printed when small; the maps
 * are saved and loaded again, which must succeed with the same names. */
#include "fuzz.h"

static void st_touch(mlx_map_string_to_array arrays) {
  mlx_map_string_to_array_iterator it = mlx_map_string_to_array_iterator_new(arrays);
  const char *k;
  mlx_array v = mlx_array_new();
  while (mlx_map_string_to_array_iterator_next(&k, &v, it) == 0) fuzz_touch_array(v);
  mlx_array_free(v);
  mlx_map_string_to_array_iterator_free(it);
}

static size_t st_count(mlx_map_string_to_array arrays) {
  mlx_map_string_to_array_iterator it = mlx_map_string_to_array_iterator_new(arrays);
  const char *k;
  mlx_array v = mlx_array_new();
  size_t n = 0;
  while (mlx_map_string_to_array_iterator_next(&k, &v, it) == 0) n++;
  mlx_array_free(v);
  mlx_map_string_to_array_iterator_free(it);
  return n;
}

static void st_roundtrip(mlx_map_string_to_array arrays, mlx_map_string_to_string meta,
                         mlx_stream s) {
  struct fuzz_mem w;
  mlx_io_writer wr = fuzz_writer(&w);
  if (FUZZ_CALL(mlx_save_safetensors_writer(wr, arrays, meta)) == 0) {
    struct fuzz_mem r;
    mlx_io_reader rd = fuzz_reader(&r, w.data, w.size);
    mlx_map_string_to_array a2 = mlx_map_string_to_array_new();
    mlx_map_string_to_string m2 = mlx_map_string_to_string_new();
    if (FUZZ_CALL(mlx_load_safetensors_reader(&a2, &m2, rd, s))) abort();
    if (st_count(a2) != st_count(arrays)) abort();
    mlx_map_string_to_array_free(a2);
    mlx_map_string_to_string_free(m2);
    mlx_io_reader_free(rd);
  }
  mlx_io_writer_free(wr);
  free(w.data);
}

FUZZ_ENTRY(safetensors) {
  fuzz_setup();
  mlx_stream s = mlx_default_cpu_stream_new();
  mlx_map_string_to_array arrays = mlx_map_string_to_array_new();
  mlx_map_string_to_string meta = mlx_map_string_to_string_new();
  const char *path = fuzz_write_temp(".safetensors", data, size);
  if (path && FUZZ_CALL(mlx_load_safetensors(&arrays, &meta, path, s)) == 0) {
    st_touch(arrays);
    st_roundtrip(arrays, meta, s);
  }
  if (path) unlink(path);
  struct fuzz_mem m;
  mlx_io_reader rd = fuzz_reader(&m, data, size);
  if (FUZZ_CALL(mlx_load_safetensors_reader(&arrays, &meta, rd, s)) == 0) st_touch(arrays);
  mlx_io_reader_free(rd);
  mlx_map_string_to_array_free(arrays);
  mlx_map_string_to_string_free(meta);
  mlx_stream_free(s);
  return 0;
}
