/* One export: the function traced on placeholders of its inputs
 * (positional, then keyword inputs sorted by key, as MLX flattens them),
 * simplified but not fused (fused regions have no MLX primitive), and
 * appended to the exporter's file. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "export/export.h"

/* The traced closure's payload: the user's function and how to split the
 * flat inputs (the last nkw are the keyword inputs, named keys). */
struct flat_fn {
  struct lc_closure *fun;    /* positional: sees the positional inputs only */
  struct lc_xclosure *kwfun; /* or kwargs: sees both */
  int nkw;
  const char *const *keys;
};

static int flat_call(mlx_vector_array *res, const mlx_vector_array in, void *payload) {
  const struct flat_fn *ff = payload;
  size_t n = mlx_vector_array_size(in), npos = n - (size_t)ff->nkw;
  mlx_vector_array args = mlx_vector_array_new();
  mlx_map_string_to_array kwargs = mlx_map_string_to_array_new();
  mlx_array a = mlx_array_new();
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    rc = mlx_vector_array_get(&a, in, i);
    if (!rc)
      rc = i < npos ? mlx_vector_array_append_value(args, a)
                    : mlx_map_string_to_array_insert(kwargs, ff->keys[i - npos], a);
  }
  if (!rc) {
    if (ff->kwfun) {
      struct lc_xclosure *c = ff->kwfun;
      rc = LC_XCLOSURE_CALL(c, lc_kw_fn, lc_kw_fnp, res, args, kwargs);
    } else {
      rc = ff->fun->call(ff->fun, res, args);
    }
  }
  mlx_array_free(a);
  mlx_vector_array_free(args);
  mlx_map_string_to_array_free(kwargs);
  return rc;
}

static int by_key(const void *a, const void *b) {
  return strcmp(**(const char *const *const *)a, **(const char *const *const *)b);
}

static int trace(struct lc_xporter *x, int nin, struct lc_node *const *in, int nkw,
                 const char *const *keys, struct lc_cprog **p) {
  struct flat_fn *ff = malloc(sizeof *ff);
  if (!ff) return lc_error("export_function: out of memory");
  *ff = (struct flat_fn){x->fun, x->kwfun, nkw, keys};
  struct lc_closure *c = lc_closure_make(flat_call, ff, free);
  if (!c) return 1;
  mlx_dtype dts[nin > 0 ? nin : 1];
  int nds[nin > 0 ? nin : 1];
  const int *shapes[nin > 0 ? nin : 1];
  for (int i = 0; i < nin; i++) {
    dts[i] = in[i]->dtype;
    nds[i] = in[i]->ndim;
    shapes[i] = in[i]->shape;
  }
  int rc = lc_compile_trace(c, nin, dts, nds, shapes, p);
  lc_closure_release(c);
  if (!rc && lc_compile_simplify(*p)) {
    lc_cprog_free(*p);
    *p = NULL;
    rc = 1;
  }
  return rc;
}

int lc_xporter_apply(struct lc_xporter *x, int nargs, struct lc_node *const *args, int nkw,
                     const char *const *keys, struct lc_node *const *kwv) {
  int nin = nargs + nkw;
  struct lc_node *in[nin > 0 ? nin : 1];
  const char *sorted[nkw > 0 ? nkw : 1];
  const char *const *order[nkw > 0 ? nkw : 1];
  for (int i = 0; i < nargs; i++) in[i] = args[i];
  for (int j = 0; j < nkw; j++) order[j] = &keys[j];
  qsort(order, (size_t)nkw, sizeof *order, by_key);
  for (int j = 0; j < nkw; j++) {
    if (j && !strcmp(*order[j], *order[j - 1]))
      return lc_error("export_function: keyword '%s' given twice", *order[j]);
    sorted[j] = *order[j];
    in[nargs + j] = kwv[order[j] - keys];
  }
  for (int k = 0; k < x->done.nfun; k++)
    if (lc_xfun_matches(&x->done.funs[k], x->shapeless, nargs, in, nkw, sorted, in + nargs))
      return lc_error("export_function: exporting a function twice with the same signature is "
                      "not allowed");
  struct lc_cprog *p = NULL;
  if (trace(x, nin, in, nkw, sorted, &p)) return 1;
  int rc = lc_xporter_write(x, p, nkw, sorted);
  lc_cprog_free(p);
  return rc || lc_xporter_remember(x, nin, in, nkw, sorted);
}
