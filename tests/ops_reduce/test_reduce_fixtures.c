/* Every reduction, scan and softmax against numpy references
 * (tests/data/reduce_cases.h from tests/gen/gen_reduce.py): random shapes of
 * 1-4 dims, all API variants, keepdims, many dtypes, contiguous, transposed,
 * broadcast and reversed inputs. */
#include "fixture.h"

#include "../data/reduce_cases.h"

typedef int (*all_fn)(mlx_array *, const mlx_array, bool, const mlx_stream);
typedef int (*axis_fn)(mlx_array *, const mlx_array, int, bool, const mlx_stream);
typedef int (*axes_fn)(mlx_array *, const mlx_array, const int *, size_t, bool,
                       const mlx_stream);
typedef int (*dall_fn)(mlx_array *, const mlx_array, bool, int, const mlx_stream);
typedef int (*daxis_fn)(mlx_array *, const mlx_array, int, bool, int, const mlx_stream);
typedef int (*daxes_fn)(mlx_array *, const mlx_array, const int *, size_t, bool, int,
                        const mlx_stream);
typedef int (*scan_fn)(mlx_array *, const mlx_array, int, bool, bool, const mlx_stream);

static const struct {
  const char *name;
  all_fn all;
  axis_fn axis;
  axes_fn axes;
} reducers[] = {
    {"sum", mlx_sum, mlx_sum_axis, mlx_sum_axes},
    {"prod", mlx_prod, mlx_prod_axis, mlx_prod_axes},
    {"max", mlx_max, mlx_max_axis, mlx_max_axes},
    {"min", mlx_min, mlx_min_axis, mlx_min_axes},
    {"mean", mlx_mean, mlx_mean_axis, mlx_mean_axes},
    {"all", mlx_all, mlx_all_axis, mlx_all_axes},
    {"any", mlx_any, mlx_any_axis, mlx_any_axes},
    {"logsumexp", mlx_logsumexp, mlx_logsumexp_axis, mlx_logsumexp_axes},
    {"argmax", mlx_argmax, mlx_argmax_axis, NULL},
    {"argmin", mlx_argmin, mlx_argmin_axis, NULL},
};

static const struct {
  const char *name;
  scan_fn f;
} scans[] = {{"cumsum", mlx_cumsum},
             {"cumprod", mlx_cumprod},
             {"cummax", mlx_cummax},
             {"cummin", mlx_cummin},
             {"logcumsumexp", mlx_logcumsumexp}};

static int run_case(const struct fixture *f, mlx_array *r, mlx_array x) {
  mlx_stream s = test_stream();
  for (size_t i = 0; i < sizeof reducers / sizeof reducers[0]; i++)
    if (!strcmp(f->op, reducers[i].name)) {
      if (f->variant == 0) return reducers[i].all(r, x, f->keepdims, s);
      if (f->variant == 1) return reducers[i].axis(r, x, f->axes[0], f->keepdims, s);
      return reducers[i].axes(r, x, f->axes, (size_t)f->naxes, f->keepdims, s);
    }
  if (!strcmp(f->op, "var") || !strcmp(f->op, "std")) {
    bool v = !strcmp(f->op, "var");
    dall_fn fa = v ? mlx_var : mlx_std;
    daxis_fn f1 = v ? mlx_var_axis : mlx_std_axis;
    daxes_fn fs = v ? mlx_var_axes : mlx_std_axes;
    if (f->variant == 0) return fa(r, x, f->keepdims, f->ddof, s);
    if (f->variant == 1) return f1(r, x, f->axes[0], f->keepdims, f->ddof, s);
    return fs(r, x, f->axes, (size_t)f->naxes, f->keepdims, f->ddof, s);
  }
  for (size_t i = 0; i < sizeof scans / sizeof scans[0]; i++)
    if (!strcmp(f->op, scans[i].name)) return scans[i].f(r, x, f->axes[0], f->p1, f->p2, s);
  if (!strcmp(f->op, "softmax")) {
    if (f->variant == 0) return mlx_softmax(r, x, f->p1, s);
    if (f->variant == 1) return mlx_softmax_axis(r, x, f->axes[0], f->p1, s);
    return mlx_softmax_axes(r, x, f->axes, (size_t)f->naxes, f->p1, s);
  }
  fprintf(stderr, "unknown op %s\n", f->op);
  return 1;
}

int main(void) {
  test_init();
  size_t before = test_active_memory();
  size_t n = sizeof reduce_cases / sizeof reduce_cases[0];
  int failed_before;
  for (size_t i = 0; i < n; i++) {
    const struct fixture *f = &reduce_cases[i];
    mlx_array x = fixture_input(f, reduce_data), r = mlx_array_new();
    failed_before = test_failures;
    int rc = run_case(f, &r, x);
    CHECK_MSG(rc == 0, "case %zu (%s): failed: %s", i, f->op, test_last_error);
    if (rc == 0 && fixture_meta(f, (int)i, r)) {
      double rtol, atol;
      fixture_tol(f->out_dtype, &rtol, &atol);
      CHECK_CLOSE(r, reduce_data + f->out_off, (size_t)f->out_n, rtol, atol);
    }
    if (test_failures != failed_before)
      fprintf(stderr, "  ^ case %zu: %s dtype %d layout %d variant %d naxes %d keepdims %d\n", i,
              f->op, f->dtype, f->layout, f->variant, f->naxes, f->keepdims);
    mlx_array_free(x);
    mlx_array_free(r);
  }
  CHECK_MSG(test_active_memory() == before, "leaked %zu bytes",
            test_active_memory() - before);
  return test_done();
}
