/* export.h: functions written to and read from .mlxfn files (MLX's
 * format, src/export/). Handles: mlx_function_exporter.ctx is a struct
 * lc_xporter, mlx_imported_function.ctx a struct lc_xfile. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/handles.h"
#include "export/export.h"

/* A map's entries as borrowed keys and retained nodes. */
struct kwlist {
  int n;
  const char **keys;
  struct lc_node **vals;
};

static void kw_free(struct kwlist *k) {
  for (int i = 0; i < k->n; i++) lc_node_release(k->vals[i]);
  free(k->keys);
  free(k->vals);
}

static int kw_read(const char *fn, mlx_map_string_to_array m, struct kwlist *k) {
  *k = (struct kwlist){0};
  if (!m.ctx) return lc_error("%s: empty keyword map", fn);
  mlx_map_string_to_array_iterator it = mlx_map_string_to_array_iterator_new(m);
  mlx_array v = mlx_array_new();
  const char *key;
  int rc, cap = 0;
  while ((rc = mlx_map_string_to_array_iterator_next(&key, &v, it)) == 0) {
    if (k->n == cap) {
      cap = cap ? 2 * cap : 8;
      const char **nk = realloc(k->keys, sizeof *nk * (size_t)cap);
      if (nk) k->keys = nk;
      struct lc_node **nv = realloc(k->vals, sizeof *nv * (size_t)cap);
      if (nv) k->vals = nv;
      if (!nk || !nv) {
        rc = lc_error("%s: out of memory", fn);
        break;
      }
    }
    if (!v.ctx) {
      rc = lc_error("%s: keyword '%s' holds an empty array", fn, key);
      break;
    }
    k->keys[k->n] = key;
    k->vals[k->n++] = lc_node_retain(lc_arr(v));
  }
  mlx_array_free(v);
  mlx_map_string_to_array_iterator_free(it);
  if (rc != 2) {
    kw_free(k);
    return 1;
  }
  /* sorted by key, as MLX flattens keyword inputs (insertion sort: maps
   * are small) */
  for (int i = 1; i < k->n; i++)
    for (int j = i; j > 0 && strcmp(k->keys[j - 1], k->keys[j]) > 0; j--) {
      const char *tk = k->keys[j];
      struct lc_node *tv = k->vals[j];
      k->keys[j] = k->keys[j - 1];
      k->vals[j] = k->vals[j - 1];
      k->keys[j - 1] = tk;
      k->vals[j - 1] = tv;
    }
  return 0;
}

/* ---- exporting ---- */

static int export_apply(const char *fn, struct lc_xporter *x, mlx_vector_array args,
                        const mlx_map_string_to_array *kwargs) {
  struct lc_node **in = NULL;
  size_t n = 0;
  struct kwlist kw = {0};
  if (lc_api_vector_nodes(fn, args, &in, &n)) return 1;
  int rc = kwargs ? kw_read(fn, *kwargs, &kw) : 0;
  if (!rc) rc = lc_xporter_apply(x, (int)n, in, kw.n, kw.keys, kw.vals);
  kw_free(&kw);
  free(in);
  return rc;
}

static int check_file(const char *fn, const char *file) {
  return file ? 0 : lc_error("%s: file name is NULL", fn);
}

int mlx_export_function(const char *file, const mlx_closure fun, const mlx_vector_array args,
                        bool shapeless) {
  const char *fn = "mlx_export_function";
  if (check_file(fn, file)) return 1;
  if (!fun.ctx) return lc_error("%s: empty closure", fn);
  struct lc_xporter *x = lc_xporter_new(file, lc_closure_of(fun), NULL, shapeless);
  if (!x) return 1;
  int rc = export_apply(fn, x, args, NULL);
  lc_xporter_free(x);
  return rc;
}

int mlx_export_function_kwargs(const char *file, const mlx_closure_kwargs fun,
                               const mlx_vector_array args, const mlx_map_string_to_array kwargs,
                               bool shapeless) {
  const char *fn = "mlx_export_function_kwargs";
  if (check_file(fn, file)) return 1;
  if (!fun.ctx) return lc_error("%s: empty closure", fn);
  struct lc_xporter *x = lc_xporter_new(file, NULL, fun.ctx, shapeless);
  if (!x) return 1;
  int rc = export_apply(fn, x, args, &kwargs);
  lc_xporter_free(x);
  return rc;
}

mlx_function_exporter mlx_function_exporter_new(const char *file, const mlx_closure fun,
                                                bool shapeless) {
  const char *fn = "mlx_function_exporter_new";
  if (check_file(fn, file)) return (mlx_function_exporter){NULL};
  if (!fun.ctx) {
    lc_error("%s: empty closure", fn);
    return (mlx_function_exporter){NULL};
  }
  return (mlx_function_exporter){lc_xporter_new(file, lc_closure_of(fun), NULL, shapeless)};
}

int mlx_function_exporter_free(mlx_function_exporter xfunc) {
  lc_xporter_free(xfunc.ctx);
  return 0;
}

int mlx_function_exporter_apply(const mlx_function_exporter xfunc, const mlx_vector_array args) {
  if (!xfunc.ctx) return lc_error("mlx_function_exporter_apply: empty exporter");
  return export_apply("mlx_function_exporter_apply", xfunc.ctx, args, NULL);
}

int mlx_function_exporter_apply_kwargs(const mlx_function_exporter xfunc,
                                       const mlx_vector_array args,
                                       const mlx_map_string_to_array kwargs) {
  if (!xfunc.ctx) return lc_error("mlx_function_exporter_apply_kwargs: empty exporter");
  return export_apply("mlx_function_exporter_apply_kwargs", xfunc.ctx, args, &kwargs);
}

/* ---- importing ---- */

mlx_imported_function mlx_imported_function_new(const char *file) {
  if (check_file("mlx_imported_function_new", file)) return (mlx_imported_function){NULL};
  return (mlx_imported_function){lc_xfile_read(file)};
}

int mlx_imported_function_free(mlx_imported_function xfunc) {
  lc_xfile_free(xfunc.ctx);
  return 0;
}

static int import_apply(const char *fn, mlx_vector_array *res, mlx_imported_function xfunc,
                        mlx_vector_array args, const mlx_map_string_to_array *kwargs) {
  LC_CHECK_RES(fn, res);
  if (!xfunc.ctx) return lc_error("%s: empty imported function", fn);
  const struct lc_xfile *f = xfunc.ctx;
  struct lc_node **in = NULL;
  size_t n = 0;
  struct kwlist kw = {0};
  if (lc_api_vector_nodes(fn, args, &in, &n)) return 1;
  int rc = kwargs ? kw_read(fn, *kwargs, &kw) : 0;
  int fi = rc ? -1 : lc_xfile_match(f, (int)n, in, kw.n, kw.keys, kw.vals);
  rc = fi < 0;
  struct lc_node **flat = NULL, **out = NULL;
  int nout = 0;
  if (!rc) {
    nout = f->funs[fi].nout;
    flat = malloc(sizeof *flat * (n + (size_t)kw.n + 1));
    out = calloc((size_t)nout + 1, sizeof *out);
    rc = !flat || !out ? lc_error("%s: out of memory", fn) : 0;
    /* positional inputs, then keyword inputs in key order */
    for (size_t i = 0; !rc && i < n; i++) flat[i] = in[i];
    for (int j = 0; !rc && j < kw.n; j++) flat[n + (size_t)j] = kw.vals[j];
    if (!rc) rc = lc_xfun_call(f, fi, flat, out);
    if (!rc) rc = lc_vec_array_assign(res, out, (size_t)nout);
  }
  for (int o = 0; out && o < nout; o++) lc_node_release(out[o]);
  free(out);
  free(flat);
  kw_free(&kw);
  free(in);
  return rc;
}

int mlx_imported_function_apply(mlx_vector_array *res, const mlx_imported_function xfunc,
                                const mlx_vector_array args) {
  return import_apply("mlx_imported_function_apply", res, xfunc, args, NULL);
}

int mlx_imported_function_apply_kwargs(mlx_vector_array *res, const mlx_imported_function xfunc,
                                       const mlx_vector_array args,
                                       const mlx_map_string_to_array kwargs) {
  return import_apply("mlx_imported_function_apply_kwargs", res, xfunc, args, &kwargs);
}
