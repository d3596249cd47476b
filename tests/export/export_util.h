/* Helpers of the export tests: scratch files, vector building, output
 * comparison, and (with LACE_EXPORT_KEEP=dir) keeping what lace exports
 * with inputs and outputs for tests/gen/check_export_in_mlx.py. */
#ifndef LACE_EXPORT_UTIL_H
#define LACE_EXPORT_UTIL_H

#include <sys/stat.h>

#include "test.h"

static char xu_dir[512];

/* The directory exported files go to: LACE_EXPORT_KEEP, or a scratch one. */
static const char *xu_out_dir(void) {
  if (xu_dir[0]) return xu_dir;
  const char *keep = getenv("LACE_EXPORT_KEEP");
  if (keep)
    snprintf(xu_dir, sizeof xu_dir, "%s", keep);
  else
    snprintf(xu_dir, sizeof xu_dir, "/tmp/lace_export_test_%d", (int)getpid());
  mkdir(xu_dir, 0755);
  return xu_dir;
}

static void xu_path(char *buf, size_t n, const char *name) {
  snprintf(buf, n, "%s/%s", xu_out_dir(), name);
}

static void xu_cleanup(void) {
  if (!getenv("LACE_EXPORT_KEEP") && xu_dir[0]) test_remove_dir(xu_dir);
}

static mlx_vector_array xu_vec(int n, const mlx_array *a) {
  mlx_vector_array v = mlx_vector_array_new();
  for (int i = 0; i < n; i++) mlx_vector_array_append_value(v, a[i]);
  return v;
}

static mlx_array xu_int(const int *shape, int ndim, int lo, int hi) {
  size_t n = 1;
  for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
  int *buf = malloc(sizeof(int) * (n ? n : 1));
  for (size_t i = 0; i < n; i++) buf[i] = test_randint(lo, hi);
  mlx_array a = mlx_array_new_data(buf, shape, ndim, MLX_INT32);
  free(buf);
  return a;
}

/* got and want (vectors of arrays) agree in count, dtype, shape and
 * values within tol. */
static void xu_compare(const char *what, mlx_vector_array got, mlx_vector_array want, double tol) {
  size_t n = mlx_vector_array_size(want);
  CHECK_MSG(mlx_vector_array_size(got) == n, "%s: %zu outputs, expected %zu", what,
            mlx_vector_array_size(got), n);
  for (size_t j = 0; j < n && j < mlx_vector_array_size(got); j++) {
    mlx_array g = mlx_array_new(), w = mlx_array_new();
    mlx_vector_array_get(&g, got, j);
    mlx_vector_array_get(&w, want, j);
    CHECK_MSG(mlx_array_dtype(g) == mlx_array_dtype(w), "%s output %zu: dtype %d, expected %d",
              what, j, (int)mlx_array_dtype(g), (int)mlx_array_dtype(w));
    bool same = mlx_array_ndim(g) == mlx_array_ndim(w) &&
                !memcmp(mlx_array_shape(g), mlx_array_shape(w), sizeof(int) * mlx_array_ndim(w));
    CHECK_MSG(same, "%s output %zu: shape differs", what, j);
    double *ref = same ? test_values(w) : NULL;
    if (ref) {
      int before = test_failures;
      CHECK_CLOSE(g, ref, mlx_array_size(w), tol, tol);
      if (test_failures != before) fprintf(stderr, "  (in %s output %zu)\n", what, j);
    }
    free(ref);
    mlx_array_free(g);
    mlx_array_free(w);
  }
}

/* With LACE_EXPORT_KEEP: saves a call's inputs and expected outputs and
 * appends its manifest line (the format of tests/data/export/). */
static void xu_keep_call(const char *call, const char *file, mlx_vector_array args,
                         const char *const *kwnames, const mlx_array *kwvals, int nkw,
                         mlx_vector_array outs) {
  if (!getenv("LACE_EXPORT_KEEP")) return;
  char path[1024], kw[512] = "-";
  for (size_t i = 0; i < mlx_vector_array_size(args); i++) {
    mlx_array a = mlx_array_new();
    mlx_vector_array_get(&a, args, i);
    snprintf(path, sizeof path, "%s/%s_a%zu.npy", xu_out_dir(), call, i);
    CHECK_OK(mlx_save(path, a));
    mlx_array_free(a);
  }
  for (int k = 0; k < nkw; k++) {
    snprintf(path, sizeof path, "%s/%s_k_%s.npy", xu_out_dir(), call, kwnames[k]);
    CHECK_OK(mlx_save(path, kwvals[k]));
    size_t l = k ? strlen(kw) : 0;
    snprintf(kw + l, sizeof kw - l, "%s%s", k ? "," : "", kwnames[k]);
  }
  for (size_t j = 0; j < mlx_vector_array_size(outs); j++) {
    mlx_array o = mlx_array_new();
    mlx_vector_array_get(&o, outs, j);
    snprintf(path, sizeof path, "%s/%s_o%zu.npy", xu_out_dir(), call, j);
    CHECK_OK(mlx_save(path, o));
    mlx_array_free(o);
  }
  snprintf(path, sizeof path, "%s/manifest.txt", xu_out_dir());
  FILE *m = fopen(path, "a");
  if (m) {
    fprintf(m, "%s %s %zu %s %zu 1e-05 1e-05\n", call, file, mlx_vector_array_size(args), kw,
            mlx_vector_array_size(outs));
    fclose(m);
  }
}

/* Whether the file at path contains the bytes of s. */
static bool xu_file_has(const char *path, const char *s) {
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  size_t cap = 1 << 16, len = 0, n = strlen(s);
  char *buf = malloc(cap);
  bool found = false;
  for (size_t got; buf && (got = fread(buf + len, 1, cap - len, f)) > 0;) {
    len += got;
    if (len == cap) {
      char *b = realloc(buf, cap *= 2);
      if (!b) break;
      buf = b;
    }
  }
  for (size_t i = 0; buf && i + n <= len && !found; i++) found = !memcmp(buf + i, s, n);
  free(buf);
  fclose(f);
  return found;
}

/* Exports fn on args (checking the file names `must_have` when given),
 * imports it, calls both on args and on call_args (when set), compares. */
static void xu_roundtrip(const char *name, int (*fn)(mlx_vector_array *, const mlx_vector_array),
                         mlx_vector_array args, bool shapeless, mlx_vector_array call_args,
                         double tol, const char *must_have) {
  char file[800], base[160];
  snprintf(base, sizeof base, "%s.mlxfn", name);
  xu_path(file, sizeof file, base);
  mlx_closure c = mlx_closure_new_func(fn);
  CHECK_OK(mlx_export_function(file, c, args, shapeless));
  if (must_have)
    CHECK_MSG(xu_file_has(file, must_have), "%s: no %s in the file", name, must_have);
  mlx_imported_function f = mlx_imported_function_new(file);
  CHECK_MSG(f.ctx != NULL, "%s: import failed: %s", name, test_last_error);
  mlx_vector_array got = mlx_vector_array_new(), want = mlx_vector_array_new();
  for (int k = 0; k < (call_args.ctx ? 2 : 1) && f.ctx; k++) {
    mlx_vector_array a = k ? call_args : args;
    CHECK_OK(mlx_closure_apply(&want, c, a));
    CHECK_OK(mlx_imported_function_apply(&got, f, a));
    xu_compare(name, got, want, tol);
    char call[200];
    snprintf(call, sizeof call, "%s%s", name, k ? "_b" : "");
    xu_keep_call(call, base, a, NULL, NULL, 0, want);
  }
  mlx_vector_array_free(got);
  mlx_vector_array_free(want);
  mlx_imported_function_free(f);
  mlx_closure_free(c);
}

#endif
