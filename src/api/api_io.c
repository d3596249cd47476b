/* io.h and io_types.h: user byte streams (reader/writer vtables), .npy and
 * .safetensors loading and saving. Saving to a path appends the format's
 * extension when the path lacks it (".npy", ".safetensors"), like MLX. The
 * stream arguments of the loaders are validated. .npy loading is eager (an
 * evaluated leaf); .safetensors from a path is lazy (io/lazy.h: the arrays
 * read the file when first evaluated), from a user reader eager. Saving to
 * a path writes a temporary file renamed over it (io/io.h). */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/handles.h"
#include "io/io.h"

/* ---- readers / writers ---- */

static void *handle_new(void *desc, mlx_io_vtable vt, const char *fn) {
  struct lc_io_handle *h = malloc(sizeof *h);
  if (!h) {
    lc_error("%s: out of memory", fn);
    return NULL;
  }
  h->desc = desc;
  h->vt = vt;
  return h;
}

static int handle_free(void *ctx) {
  struct lc_io_handle *h = ctx;
  if (!h) return 0;
  if (h->vt.free) h->vt.free(h->desc);
  free(h);
  return 0;
}

static int handle_descriptor(void **desc, void *ctx, const char *fn) {
  LC_CHECK_RES(fn, desc);
  if (!ctx) return lc_error("%s: empty handle", fn);
  *desc = ((struct lc_io_handle *)ctx)->desc;
  return 0;
}

static int handle_tostring(mlx_string *str, void *ctx, const char *fn) {
  LC_CHECK_RES(fn, str);
  struct lc_io_handle *h = ctx;
  if (!h) return lc_error("%s: empty handle", fn);
  const char *l = h->vt.label ? h->vt.label(h->desc) : NULL;
  return lc_string_assign(str, l ? l : "<stream>");
}

mlx_io_reader mlx_io_reader_new(void *desc, mlx_io_vtable vtable) {
  return (mlx_io_reader){handle_new(desc, vtable, "mlx_io_reader_new")};
}
int mlx_io_reader_descriptor(void **desc_, mlx_io_reader io) {
  return handle_descriptor(desc_, io.ctx, "mlx_io_reader_descriptor");
}
int mlx_io_reader_tostring(mlx_string *str_, mlx_io_reader io) {
  return handle_tostring(str_, io.ctx, "mlx_io_reader_tostring");
}
int mlx_io_reader_free(mlx_io_reader io) { return handle_free(io.ctx); }

mlx_io_writer mlx_io_writer_new(void *desc, mlx_io_vtable vtable) {
  return (mlx_io_writer){handle_new(desc, vtable, "mlx_io_writer_new")};
}
int mlx_io_writer_descriptor(void **desc_, mlx_io_writer io) {
  return handle_descriptor(desc_, io.ctx, "mlx_io_writer_descriptor");
}
int mlx_io_writer_tostring(mlx_string *str_, mlx_io_writer io) {
  return handle_tostring(str_, io.ctx, "mlx_io_writer_tostring");
}
int mlx_io_writer_free(mlx_io_writer io) { return handle_free(io.ctx); }

/* path + ext unless path already ends with ext; malloc'd (NULL reported). */
static char *with_ext(const char *fn, const char *path, const char *ext) {
  size_t n = strlen(path), e = strlen(ext);
  int has = n >= e && !strcmp(path + n - e, ext);
  char *p = malloc(n + e + 1);
  if (!p) {
    lc_error("%s: out of memory", fn);
    return NULL;
  }
  memcpy(p, path, n);
  memcpy(p + n, ext, has ? 1 : e + 1);
  if (has) p[n] = 0;
  return p;
}

/* ---- npy ---- */

static int load_npy(mlx_array *res, struct lc_in *in) {
  struct lc_node *n = lc_npy_load(in);
  lc_in_close(in);
  return lc_api_set(res, n);
}

int mlx_load_reader(mlx_array *res, mlx_io_reader in_stream, const mlx_stream s) {
  const char *fn = "mlx_load_reader";
  LC_CHECK_RES(fn, res);
  struct lc_in in;
  if (lc_api_check_stream(fn, s) || lc_in_open_reader(&in, fn, in_stream)) return 1;
  return load_npy(res, &in);
}

int mlx_load(mlx_array *res, const char *file, const mlx_stream s) {
  const char *fn = "mlx_load";
  LC_CHECK_RES(fn, res);
  if (!file) return lc_error("%s: file is NULL", fn);
  struct lc_in in;
  if (lc_api_check_stream(fn, s) || lc_in_open_file(&in, fn, file)) return 1;
  return load_npy(res, &in);
}

int mlx_save_writer(mlx_io_writer out_stream, const mlx_array a) {
  const char *fn = "mlx_save_writer";
  LC_CHECK_ARR(fn, a);
  struct lc_out out;
  if (lc_out_open_writer(&out, fn, out_stream)) return 1;
  return lc_npy_save(&out, lc_arr(a));
}

int mlx_save(const char *file, const mlx_array a) {
  const char *fn = "mlx_save";
  if (!file) return lc_error("%s: file is NULL", fn);
  LC_CHECK_ARR(fn, a);
  char *path = with_ext(fn, file, ".npy");
  if (!path) return 1;
  struct lc_out out;
  int rc = lc_out_open_file(&out, fn, path);
  free(path);
  if (rc) return 1;
  rc = lc_npy_save(&out, lc_arr(a));
  return lc_out_close(&out, rc);
}

/* ---- safetensors ---- */

static int st_check_res(const char *fn, mlx_map_string_to_array *a, mlx_map_string_to_string *m) {
  LC_CHECK_RES(fn, a);
  LC_CHECK_RES(fn, m);
  return 0;
}

int mlx_load_safetensors_reader(mlx_map_string_to_array *res_0, mlx_map_string_to_string *res_1,
                                mlx_io_reader in_stream, const mlx_stream s) {
  const char *fn = "mlx_load_safetensors_reader";
  struct lc_in in;
  if (st_check_res(fn, res_0, res_1) || lc_api_check_stream(fn, s) ||
      lc_in_open_reader(&in, fn, in_stream))
    return 1;
  int rc = lc_st_load(&in, res_0, res_1);
  lc_in_close(&in);
  return rc;
}

int mlx_load_safetensors(mlx_map_string_to_array *res_0, mlx_map_string_to_string *res_1,
                         const char *file, const mlx_stream s) {
  const char *fn = "mlx_load_safetensors";
  if (st_check_res(fn, res_0, res_1)) return 1;
  if (!file) return lc_error("%s: file is NULL", fn);
  struct lc_in in;
  if (lc_api_check_stream(fn, s) || lc_in_open_file(&in, fn, file)) return 1;
  int rc = lc_st_load(&in, res_0, res_1);
  lc_in_close(&in);
  return rc;
}

int mlx_save_safetensors_writer(mlx_io_writer in_stream, const mlx_map_string_to_array param,
                                const mlx_map_string_to_string metadata) {
  const char *fn = "mlx_save_safetensors_writer";
  if (!param.ctx) return lc_error("%s: the array map is an empty handle", fn);
  struct lc_out out;
  if (lc_out_open_writer(&out, fn, in_stream)) return 1;
  return lc_st_save(&out, param, metadata);
}

int mlx_save_safetensors(const char *file, const mlx_map_string_to_array param,
                         const mlx_map_string_to_string metadata) {
  const char *fn = "mlx_save_safetensors";
  if (!file) return lc_error("%s: file is NULL", fn);
  if (!param.ctx) return lc_error("%s: the array map is an empty handle", fn);
  char *path = with_ext(fn, file, ".safetensors");
  if (!path) return 1;
  struct lc_out out;
  int rc = lc_out_open_file(&out, fn, path);
  free(path);
  if (rc) return 1;
  rc = lc_st_save(&out, param, metadata);
  return lc_out_close(&out, rc);
}
