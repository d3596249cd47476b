/* Fuzz harness: .npy loading (mlx_load from a file and mlx_load_reader from
 * a memory stream). A loaded array is evaluated, printed when small, saved
 * and loaded again: the reloaded array must equal it. */
#include "fuzz.h"

#include "core/node.h"

/* Loaded arrays are contiguous leaves: their bytes compare directly. */
static bool same_bytes(mlx_array a, mlx_array b) {
  size_t n = mlx_array_nbytes(a);
  if (n != mlx_array_nbytes(b)) return false;
  if (n == 0) return true;
  if (mlx_array_eval(a) || mlx_array_eval(b)) return false;
  struct lc_node *x = a.ctx, *y = b.ctx;
  return lc_node_is_contiguous(x) && lc_node_is_contiguous(y) &&
         memcmp(lc_node_data(x), lc_node_data(y), n) == 0;
}

static void npy_roundtrip(mlx_array a, mlx_stream s) {
  struct fuzz_mem w;
  mlx_io_writer wr = fuzz_writer(&w);
  if (FUZZ_CALL(mlx_save_writer(wr, a)) == 0) {
    struct fuzz_mem r;
    mlx_io_reader rd = fuzz_reader(&r, w.data, w.size);
    mlx_array b = mlx_array_new();
    if (FUZZ_CALL(mlx_load_reader(&b, rd, s))) abort(); /* what was saved must load */
    if (mlx_array_dtype(a) != mlx_array_dtype(b) || mlx_array_ndim(a) != mlx_array_ndim(b) ||
        memcmp(mlx_array_shape(a), mlx_array_shape(b), sizeof(int) * mlx_array_ndim(a)) ||
        !same_bytes(a, b))
      abort();
    mlx_array_free(b);
    mlx_io_reader_free(rd);
  }
  mlx_io_writer_free(wr);
  free(w.data);
}

FUZZ_ENTRY(npy) {
  fuzz_setup();
  mlx_stream s = mlx_default_cpu_stream_new();
  mlx_array a = mlx_array_new();
  const char *path = fuzz_write_temp(".npy", data, size);
  if (path && FUZZ_CALL(mlx_load(&a, path, s)) == 0) {
    fuzz_touch_array(a);
    npy_roundtrip(a, s);
  }
  if (path) unlink(path);
  struct fuzz_mem m;
  mlx_io_reader rd = fuzz_reader(&m, data, size);
  if (FUZZ_CALL(mlx_load_reader(&a, rd, s)) == 0) fuzz_touch_array(a);
  mlx_io_reader_free(rd);
  mlx_array_free(a);
  mlx_stream_free(s);
  return 0;
}
