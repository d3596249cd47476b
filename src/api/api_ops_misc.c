/* Public misc ops (ops.h): windows, median, depends,
 * hadamard_transform, einsum. Checks, then ops/misc.h. */
#include <limits.h>
#include <stdlib.h>

#include "api/api.h"
#include "api/handles.h"
#include "ops/misc.h"
#include "ops/reduce.h"

#define WINDOW(NAME, KIND)                                              \
  int mlx_##NAME(mlx_array *res, int M, const mlx_stream s) {           \
    LC_CHECK_RES("mlx_" #NAME, res);                                    \
    if (lc_api_check_stream("mlx_" #NAME, s)) return 1;                 \
    return lc_api_set(res, lc_window(KIND, M));                         \
  }
WINDOW(bartlett, LC_WIN_BARTLETT)
WINDOW(hanning, LC_WIN_HANNING)
WINDOW(hamming, LC_WIN_HAMMING)
WINDOW(blackman, LC_WIN_BLACKMAN)

int mlx_median(mlx_array *res, const mlx_array a, const int *axes, size_t axes_num, bool keepdims,
               const mlx_stream s) {
  LC_CHECK_RES("mlx_median", res);
  LC_CHECK_ARR("mlx_median", a);
  if (lc_api_check_stream("mlx_median", s)) return 1;
  if (axes_num > INT_MAX || (axes_num && !axes))
    return lc_error("mlx_median: invalid axes argument");
  return lc_api_set(res, lc_median(lc_arr(a), axes, (int)axes_num, keepdims));
}

int mlx_depends(mlx_vector_array *res, const mlx_vector_array inputs,
                const mlx_vector_array dependencies) {
  LC_CHECK_RES("mlx_depends", res);
  struct lc_node **in = NULL, **dep = NULL, **out = NULL;
  size_t nin = 0, ndep = 0;
  int rc = 1;
  if (lc_api_vector_nodes("mlx_depends", inputs, &in, &nin) ||
      lc_api_vector_nodes("mlx_depends", dependencies, &dep, &ndep))
    goto done;
  if (nin == 0) {
    lc_error("mlx_depends: at least one input is required");
    goto done;
  }
  if (nin > INT_MAX / 2 || ndep > INT_MAX / 2) {
    lc_error("mlx_depends: too many arrays");
    goto done;
  }
  out = malloc(sizeof *out * nin);
  if (!out) {
    lc_error("out of memory");
    goto done;
  }
  if (lc_depends((int)nin, in, (int)ndep, dep, out)) goto done;
  rc = lc_vec_array_assign(res, out, nin);
  for (size_t i = 0; i < nin; i++) lc_node_release(out[i]);
done:
  free(in);
  free(dep);
  free(out);
  return rc;
}

int mlx_hadamard_transform(mlx_array *res, const mlx_array a, mlx_optional_float scale,
                           const mlx_stream s) {
  LC_CHECK_RES("mlx_hadamard_transform", res);
  LC_CHECK_ARR("mlx_hadamard_transform", a);
  if (lc_api_check_stream("mlx_hadamard_transform", s)) return 1;
  return lc_api_set(res, lc_hadamard(lc_arr(a), scale.has_value, scale.value));
}

int mlx_einsum(mlx_array *res, const char *subscripts, const mlx_vector_array operands,
               const mlx_stream s) {
  LC_CHECK_RES("mlx_einsum", res);
  if (!subscripts) return lc_error("mlx_einsum: subscripts is NULL");
  if (lc_api_check_stream("mlx_einsum", s)) return 1;
  struct lc_node **ops;
  size_t n;
  if (lc_api_vector_nodes("mlx_einsum", operands, &ops, &n)) return 1;
  if (n > INT_MAX) {
    free(ops);
    return lc_error("mlx_einsum: too many operands");
  }
  int rc = lc_api_set(res, lc_einsum(subscripts, (int)n, ops));
  free(ops);
  return rc;
}
