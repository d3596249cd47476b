/* Public indexing ops: take, gather, scatter, slice updates, dynamic
 * slices. Argument checks, then the builders of ops/index.h. */
#include <limits.h>
#include <stdlib.h>

#include "api/api.h"
#include "ops/index.h"


int mlx_take_axis(mlx_array *res, const mlx_array a, const mlx_array indices, int axis,
                  const mlx_stream s) {
  LC_API_PROLOGUE("mlx_take_axis", res, a);
  LC_CHECK_ARR("mlx_take_axis", indices);
  return lc_api_set(res, lc_take(lc_arr(a), lc_arr(indices), axis));
}

int mlx_take(mlx_array *res, const mlx_array a, const mlx_array indices, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_take", res, a);
  LC_CHECK_ARR("mlx_take", indices);
  return lc_api_set(res, lc_take_flat(lc_arr(a), lc_arr(indices)));
}

int mlx_take_along_axis(mlx_array *res, const mlx_array a, const mlx_array indices, int axis,
                        const mlx_stream s) {
  LC_API_PROLOGUE("mlx_take_along_axis", res, a);
  LC_CHECK_ARR("mlx_take_along_axis", indices);
  return lc_api_set(res, lc_take_along_axis(lc_arr(a), lc_arr(indices), axis));
}

int mlx_put_along_axis(mlx_array *res, const mlx_array a, const mlx_array indices,
                       const mlx_array values, int axis, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_put_along_axis", res, a);
  LC_CHECK_ARR("mlx_put_along_axis", indices);
  LC_CHECK_ARR("mlx_put_along_axis", values);
  return lc_api_set(
      res, lc_scatter_axis(lc_arr(a), lc_arr(indices), lc_arr(values), axis, LC_SCATTER_NONE));
}

int mlx_scatter_add_axis(mlx_array *res, const mlx_array a, const mlx_array indices,
                         const mlx_array values, int axis, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_scatter_add_axis", res, a);
  LC_CHECK_ARR("mlx_scatter_add_axis", indices);
  LC_CHECK_ARR("mlx_scatter_add_axis", values);
  return lc_api_set(
      res, lc_scatter_axis(lc_arr(a), lc_arr(indices), lc_arr(values), axis, LC_SCATTER_ADD));
}

int mlx_gather(mlx_array *res, const mlx_array a, const mlx_vector_array indices, const int *axes,
               size_t axes_num, const int *slice_sizes, size_t slice_sizes_num,
               const mlx_stream s) {
  LC_API_PROLOGUE("mlx_gather", res, a);
  if (lc_api_check_list("mlx_gather", "axes", axes, axes_num) ||
      lc_api_check_list("mlx_gather", "slice_sizes", slice_sizes, slice_sizes_num))
    return 1;
  struct lc_node **idx;
  size_t n;
  if (lc_api_vector_nodes("mlx_gather", indices, &idx, &n)) return 1;
  int rc;
  if (n != axes_num)
    rc = lc_error("mlx_gather: number of index arrays (%zu) does not match number of axes (%zu)", n,
                  axes_num);
  else if (slice_sizes_num != (size_t)lc_arr(a)->ndim)
    rc = lc_error("mlx_gather: got %zu slice sizes for an array with %d dimensions",
                  slice_sizes_num, lc_arr(a)->ndim);
  else
    rc = lc_api_set(res, lc_gather(lc_arr(a), (int)n, idx, axes, slice_sizes));
  free(idx);
  return rc;
}

int mlx_gather_single(mlx_array *res, const mlx_array a, const mlx_array indices, int axis,
                      const int *slice_sizes, size_t slice_sizes_num, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_gather_single", res, a);
  LC_CHECK_ARR("mlx_gather_single", indices);
  if (lc_api_check_list("mlx_gather_single", "slice_sizes", slice_sizes, slice_sizes_num)) return 1;
  if (slice_sizes_num != (size_t)lc_arr(a)->ndim)
    return lc_error("mlx_gather_single: got %zu slice sizes for an array with %d dimensions",
                    slice_sizes_num, lc_arr(a)->ndim);
  struct lc_node *ix = lc_arr(indices);
  return lc_api_set(res, lc_gather(lc_arr(a), 1, &ix, &axis, slice_sizes));
}

static int scatter_impl(const char *fn, mlx_array *res, mlx_array a, mlx_vector_array indices,
                        mlx_array updates, const int *axes, size_t axes_num, mlx_stream s,
                        enum lc_scatter_mode mode) {
  LC_API_PROLOGUE(fn, res, a);
  LC_CHECK_ARR(fn, updates);
  if (lc_api_check_list(fn, "axes", axes, axes_num)) return 1;
  struct lc_node **idx;
  size_t n;
  if (lc_api_vector_nodes(fn, indices, &idx, &n)) return 1;
  int rc;
  if (n != axes_num)
    rc = lc_error("%s: number of index arrays (%zu) does not match number of axes (%zu)", fn, n,
                  axes_num);
  else
    rc = lc_api_set(res, lc_scatter(lc_arr(a), (int)n, idx, lc_arr(updates), axes, mode));
  free(idx);
  return rc;
}

static int scatter_single_impl(const char *fn, mlx_array *res, mlx_array a, mlx_array indices,
                               mlx_array updates, int axis, mlx_stream s,
                               enum lc_scatter_mode mode) {
  LC_API_PROLOGUE(fn, res, a);
  LC_CHECK_ARR(fn, indices);
  LC_CHECK_ARR(fn, updates);
  struct lc_node *ix = lc_arr(indices);
  return lc_api_set(res, lc_scatter(lc_arr(a), 1, &ix, lc_arr(updates), &axis, mode));
}

#define SCATTER_FNS(name, mode)                                                                   \
  int mlx_##name(mlx_array *res, const mlx_array a, const mlx_vector_array indices,               \
                 const mlx_array updates, const int *axes, size_t axes_num, const mlx_stream s) { \
    return scatter_impl("mlx_" #name, res, a, indices, updates, axes, axes_num, s, mode);         \
  }                                                                                               \
  int mlx_##name##_single(mlx_array *res, const mlx_array a, const mlx_array indices,             \
                          const mlx_array updates, int axis, const mlx_stream s) {                \
    return scatter_single_impl("mlx_" #name "_single", res, a, indices, updates, axis, s, mode);  \
  }
SCATTER_FNS(scatter, LC_SCATTER_NONE)
SCATTER_FNS(scatter_add, LC_SCATTER_ADD)
SCATTER_FNS(scatter_prod, LC_SCATTER_PROD)
SCATTER_FNS(scatter_max, LC_SCATTER_MAX)
SCATTER_FNS(scatter_min, LC_SCATTER_MIN)

static int slice_update_impl(const char *fn, mlx_array *res, mlx_array src, mlx_array update,
                             const int *start, size_t start_num, const int *stop, size_t stop_num,
                             const int *strides, size_t strides_num, mlx_stream s,
                             enum lc_scatter_mode mode) {
  LC_API_PROLOGUE(fn, res, src);
  LC_CHECK_ARR(fn, update);
  if (lc_api_check_list(fn, "start", start, start_num) || lc_api_check_list(fn, "stop", stop, stop_num) ||
      lc_api_check_list(fn, "strides", strides, strides_num))
    return 1;
  size_t nd = (size_t)lc_arr(src)->ndim;
  if (start_num != nd || stop_num != nd || strides_num != nd)
    return lc_error(
        "%s: invalid number of indices or strides (%zu, %zu, %zu) for an array with "
        "%zu dimensions",
        fn, start_num, stop_num, strides_num, nd);
  return lc_api_set(res, lc_slice_update(lc_arr(src), lc_arr(update), start, stop, strides, mode));
}

#define SLICE_UPDATE_FN(name, mode)                                                             \
  int mlx_##name(mlx_array *res, const mlx_array src, const mlx_array update, const int *start, \
                 size_t start_num, const int *stop, size_t stop_num, const int *strides,        \
                 size_t strides_num, const mlx_stream s) {                                      \
    return slice_update_impl("mlx_" #name, res, src, update, start, start_num, stop, stop_num,  \
                             strides, strides_num, s, mode);                                    \
  }
SLICE_UPDATE_FN(slice_update, LC_SCATTER_NONE)
SLICE_UPDATE_FN(slice_update_add, LC_SCATTER_ADD)
SLICE_UPDATE_FN(slice_update_prod, LC_SCATTER_PROD)
SLICE_UPDATE_FN(slice_update_max, LC_SCATTER_MAX)
SLICE_UPDATE_FN(slice_update_min, LC_SCATTER_MIN)

int mlx_slice_dynamic(mlx_array *res, const mlx_array a, const mlx_array start, const int *axes,
                      size_t axes_num, const int *slice_size, size_t slice_size_num,
                      const mlx_stream s) {
  LC_API_PROLOGUE("mlx_slice_dynamic", res, a);
  LC_CHECK_ARR("mlx_slice_dynamic", start);
  if (lc_api_check_list("mlx_slice_dynamic", "axes", axes, axes_num) ||
      lc_api_check_list("mlx_slice_dynamic", "slice_size", slice_size, slice_size_num))
    return 1;
  if (slice_size_num != (size_t)lc_arr(a)->ndim)
    return lc_error(
        "mlx_slice_dynamic: invalid slice size (%zu entries) for an array with %d "
        "dimensions",
        slice_size_num, lc_arr(a)->ndim);
  return lc_api_set(res,
                    lc_slice_dynamic(lc_arr(a), lc_arr(start), (int)axes_num, axes, slice_size));
}

int mlx_slice_update_dynamic(mlx_array *res, const mlx_array src, const mlx_array update,
                             const mlx_array start, const int *axes, size_t axes_num,
                             const mlx_stream s) {
  LC_API_PROLOGUE("mlx_slice_update_dynamic", res, src);
  LC_CHECK_ARR("mlx_slice_update_dynamic", update);
  LC_CHECK_ARR("mlx_slice_update_dynamic", start);
  if (lc_api_check_list("mlx_slice_update_dynamic", "axes", axes, axes_num)) return 1;
  return lc_api_set(res, lc_slice_update_dynamic(lc_arr(src), lc_arr(update), lc_arr(start),
                                                 (int)axes_num, axes));
}

int mlx_masked_scatter(mlx_array *res, const mlx_array a, const mlx_array mask, const mlx_array src,
                       const mlx_stream s) {
  LC_API_PROLOGUE("mlx_masked_scatter", res, a);
  LC_CHECK_ARR("mlx_masked_scatter", mask);
  LC_CHECK_ARR("mlx_masked_scatter", src);
  return lc_api_set(res, lc_masked_scatter(lc_arr(a), lc_arr(mask), lc_arr(src)));
}
