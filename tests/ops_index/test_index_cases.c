/* Indexing ops against numpy references (tests/gen/gen_shape.py): take,
 * take_along_axis, put_along_axis, scatter_add_axis, gather, scatter (all
 * modes), slice_update (all modes), dynamic slices. Index arrays of many
 * integer dtypes, negative indices. */
#include "test.h"

struct index_arr {
  int dtype, ndim, shape[6];
  const double *data;
};
struct index_case {
  const char *name, *op;
  int narr;
  struct index_arr arr[4];
  int np, p[16];
  struct index_arr out;
};
#include "../data/index_cases.h"

static mlx_array make(const struct index_arr *x) {
  size_t n = 1;
  for (int i = 0; i < x->ndim; i++) n *= (size_t)x->shape[i];
  mlx_array d = mlx_array_new_data(x->data, x->shape, x->ndim, MLX_FLOAT64), r = mlx_array_new();
  mlx_astype(&r, d, (mlx_dtype)x->dtype, test_stream());
  mlx_array_free(d);
  return r;
}

static int run(mlx_array *r, const struct index_case *c, mlx_array *in) {
  mlx_stream s = test_stream();
  const char *op = c->op;
  const int *p = c->p;
  if (!strcmp(op, "take_axis")) return mlx_take_axis(r, in[0], in[1], p[0], s);
  if (!strcmp(op, "take")) return mlx_take(r, in[0], in[1], s);
  if (!strcmp(op, "take_along")) return mlx_take_along_axis(r, in[0], in[1], p[0], s);
  if (!strcmp(op, "put_along")) return mlx_put_along_axis(r, in[0], in[1], in[2], p[0], s);
  if (!strcmp(op, "scatter_add_axis")) return mlx_scatter_add_axis(r, in[0], in[1], in[2], p[0], s);
  if (!strcmp(op, "gather") || !strncmp(op, "scatter", 7)) {
    int nidx = p[0];
    mlx_vector_array v = mlx_vector_array_new_data(in + 1, (size_t)nidx);
    int rc;
    if (!strcmp(op, "gather"))
      rc = mlx_gather(r, in[0], v, p + 1, (size_t)nidx, p + 1 + nidx, mlx_array_ndim(in[0]), s);
    else {
      mlx_array u = in[1 + nidx];
      int (*fn)(mlx_array *, mlx_array, mlx_vector_array, mlx_array, const int *, size_t,
                mlx_stream) = !strcmp(op, "scatter")        ? mlx_scatter
                              : !strcmp(op, "scatter_add")  ? mlx_scatter_add
                              : !strcmp(op, "scatter_prod") ? mlx_scatter_prod
                              : !strcmp(op, "scatter_max")  ? mlx_scatter_max
                                                            : mlx_scatter_min;
      rc = fn(r, in[0], v, u, p + 1, (size_t)nidx, s);
    }
    mlx_vector_array_free(v);
    return rc;
  }
  if (!strncmp(op, "slice_update_dynamic", 20))
    return mlx_slice_update_dynamic(r, in[0], in[1], in[2], p + 1, (size_t)p[0], s);
  if (!strncmp(op, "slice_update", 12)) {
    size_t nd = mlx_array_ndim(in[0]);
    int (*fn)(mlx_array *, mlx_array, mlx_array, const int *, size_t, const int *, size_t,
              const int *, size_t, mlx_stream) = !strcmp(op, "slice_update")        ? mlx_slice_update
                                                 : !strcmp(op, "slice_update_add")  ? mlx_slice_update_add
                                                 : !strcmp(op, "slice_update_prod") ? mlx_slice_update_prod
                                                 : !strcmp(op, "slice_update_max")  ? mlx_slice_update_max
                                                                                    : mlx_slice_update_min;
    return fn(r, in[0], in[1], p, nd, p + nd, nd, p + 2 * nd, nd, s);
  }
  if (!strcmp(op, "slice_dynamic"))
    return mlx_slice_dynamic(r, in[0], in[1], p + 1, (size_t)p[0], p + 1 + p[0],
                             mlx_array_ndim(in[0]), s);
  if (!strcmp(op, "masked_scatter")) return mlx_masked_scatter(r, in[0], in[1], in[2], s);
  if (!strcmp(op, "meshgrid")) {
    mlx_vector_array v = mlx_vector_array_new_data(in, (size_t)c->narr), out = mlx_vector_array_new();
    int rc = mlx_meshgrid(&out, v, p[0], p[1] ? "ij" : "xy", s);
    if (!rc) rc = mlx_vector_array_get(r, out, (size_t)p[2]);
    mlx_vector_array_free(v);
    mlx_vector_array_free(out);
    return rc;
  }
  fprintf(stderr, "unknown op %s\n", op);
  return 1;
}

static void run_case(const struct index_case *c) {
  mlx_array in[4];
  for (int k = 0; k < c->narr; k++) in[k] = make(&c->arr[k]);
  mlx_array r = mlx_array_new();
  int rc = run(&r, c, in);
  CHECK_MSG(rc == 0, "case %s failed: %s", c->name, test_last_error);
  if (!rc) {
    const struct index_arr *o = &c->out;
    CHECK_MSG(mlx_array_ndim(r) == (size_t)o->ndim &&
                  (o->ndim == 0 || !memcmp(mlx_array_shape(r), o->shape, sizeof(int) * (size_t)o->ndim)),
              "case %s: wrong shape", c->name);
    CHECK_MSG(mlx_array_dtype(r) == (mlx_dtype)o->dtype, "case %s: dtype %d, expected %d", c->name,
              (int)mlx_array_dtype(r), o->dtype);
    size_t n = 1;
    for (int i = 0; i < o->ndim; i++) n *= (size_t)o->shape[i];
    int before = test_failures;
    CHECK_CLOSE(r, o->data, n, 0, 0);
    if (test_failures != before) fprintf(stderr, "  (in case %s)\n", c->name);
  }
  mlx_array_free(r);
  for (int k = 0; k < c->narr; k++) mlx_array_free(in[k]);
}

int main(void) {
  test_init();
  size_t base = test_active_memory();
  const char *only = getenv("INDEX_CASE");
  for (size_t i = 0; i < sizeof index_cases / sizeof index_cases[0]; i++)
    if (!only || !strcmp(only, index_cases[i].name)) run_case(&index_cases[i]);
  CHECK_MSG(test_active_memory() == base, "active memory %zu, expected %zu", test_active_memory(),
            base);
  return test_done();
}
