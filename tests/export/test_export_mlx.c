/* Functions exported by MLX 0.32 (tests/gen/gen_export.py) imported and
 * run in lace: every call listed in tests/data/export/manifest.txt gives
 * MLX's outputs (dtype, shape, values). Covers an MLP with captured
 * weights, an attention-like block, reductions, unary/binary/integer ops,
 * dtypes, shape ops, indexing, shapeless calls with new shapes, keyword
 * inputs and several traces in one file.
 * Each positional call is also exported again by lace (a closure over the
 * imported function, so every MLX primitive read is written back),
 * imported and compared; with LACE_EXPORT_KEEP=dir those files stay for
 * tests/gen/check_export_in_mlx.py. */
#include "export_util.h"

#define DIR LACE_TEST_DATA "/export/"

static mlx_array load(const char *call, const char *what) {
  char path[512];
  snprintf(path, sizeof path, DIR "%s_%s.npy", call, what);
  mlx_array a = mlx_array_new();
  CHECK_OK(mlx_load(&a, path, test_stream()));
  return a;
}

static void compare(const char *call, int j, mlx_array got, mlx_array want, double atol,
                    double rtol) {
  CHECK_MSG(mlx_array_dtype(got) == mlx_array_dtype(want), "%s output %d: dtype %d, MLX %d", call,
            j, (int)mlx_array_dtype(got), (int)mlx_array_dtype(want));
  bool same = mlx_array_ndim(got) == mlx_array_ndim(want) &&
              !memcmp(mlx_array_shape(got), mlx_array_shape(want),
                      sizeof(int) * mlx_array_ndim(want));
  CHECK_MSG(same, "%s output %d: shape differs from MLX's", call, j);
  if (!same) return;
  double *ref = test_values(want);
  CHECK(ref != NULL);
  if (!ref) return;
  int before = test_failures;
  CHECK_CLOSE(got, ref, mlx_array_size(want), rtol, atol);
  if (test_failures != before) fprintf(stderr, "  (in %s output %d)\n", call, j);
  free(ref);
}

static int call_imported(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  return mlx_imported_function_apply(res, *(mlx_imported_function *)payload, in);
}

/* lace exports the imported function again; the re-import gives want. */
static void reexport(const char *call, mlx_imported_function f, mlx_vector_array args,
                     mlx_vector_array want) {
  char path[1024], base[160];
  snprintf(base, sizeof base, "re_%.100s.mlxfn", call);
  xu_path(path, sizeof path, base);
  mlx_closure c = mlx_closure_new_func_payload(call_imported, &f, NULL);
  int rc = mlx_export_function(path, c, args, false);
  CHECK_MSG(rc == 0, "%s: lace could not export it again: %s", call, test_last_error);
  mlx_imported_function g = rc ? (mlx_imported_function){NULL} : mlx_imported_function_new(path);
  CHECK(rc || g.ctx);
  if (g.ctx) {
    mlx_vector_array got = mlx_vector_array_new();
    CHECK_OK(mlx_imported_function_apply(&got, g, args));
    char what[160];
    snprintf(what, sizeof what, "re_%.100s", call);
    xu_compare(what, got, want, 1e-6);
    xu_keep_call(what, base, args, NULL, NULL, 0, want);
    mlx_vector_array_free(got);
  }
  mlx_imported_function_free(g);
  mlx_closure_free(c);
}

static void run_call(const char *call, const char *file, int npos, char *kwnames, int nout,
                     double atol, double rtol) {
  char path[512];
  snprintf(path, sizeof path, DIR "%s", file);
  mlx_imported_function f = mlx_imported_function_new(path);
  CHECK_MSG(f.ctx != NULL, "%s: import failed: %s", call, test_last_error);
  if (!f.ctx) return;
  mlx_vector_array args = mlx_vector_array_new(), res = mlx_vector_array_new();
  mlx_map_string_to_array kw = mlx_map_string_to_array_new();
  char what[128];
  for (int i = 0; i < npos; i++) {
    snprintf(what, sizeof what, "a%d", i);
    mlx_array a = load(call, what);
    mlx_vector_array_append_value(args, a);
    mlx_array_free(a);
  }
  bool has_kw = strcmp(kwnames, "-") != 0;
  for (char *k = has_kw ? strtok(kwnames, ",") : NULL; k; k = strtok(NULL, ",")) {
    snprintf(what, sizeof what, "k_%s", k);
    mlx_array a = load(call, what);
    mlx_map_string_to_array_insert(kw, k, a);
    mlx_array_free(a);
  }
  int rc = has_kw ? mlx_imported_function_apply_kwargs(&res, f, args, kw)
                  : mlx_imported_function_apply(&res, f, args);
  CHECK_MSG(rc == 0, "%s: apply failed: %s", call, test_last_error);
  if (!rc) {
    CHECK_MSG(mlx_vector_array_size(res) == (size_t)nout, "%s: %zu outputs, MLX %d", call,
              mlx_vector_array_size(res), nout);
    for (int j = 0; j < nout && j < (int)mlx_vector_array_size(res); j++) {
      mlx_array got = mlx_array_new();
      mlx_vector_array_get(&got, res, (size_t)j);
      snprintf(what, sizeof what, "o%d", j);
      mlx_array want = load(call, what);
      compare(call, j, got, want, atol, rtol);
      mlx_array_free(got);
      mlx_array_free(want);
    }
    if (!has_kw) reexport(call, f, args, res);
  }
  mlx_vector_array_free(args);
  mlx_vector_array_free(res);
  mlx_map_string_to_array_free(kw);
  mlx_imported_function_free(f);
}

int main(void) {
  test_init();
  FILE *m = fopen(DIR "manifest.txt", "r");
  CHECK(m != NULL);
  if (!m) return test_done();
  char line[1024], call[128], file[128], kw[512];
  int npos, nout, calls = 0;
  double atol, rtol;
  while (fgets(line, sizeof line, m)) {
    if (sscanf(line, "%127s %127s %d %511s %d %lf %lf", call, file, &npos, kw, &nout, &atol,
               &rtol) != 7)
      continue;
    run_call(call, file, npos, kw, nout, atol, rtol);
    calls++;
  }
  fclose(m);
  CHECK_MSG(calls >= 16, "only %d calls in the manifest", calls);
  xu_cleanup();
  return test_done();
}
