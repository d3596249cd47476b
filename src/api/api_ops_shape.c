/* Public shape ops (views and rearrangements): argument checks, then the
 * builders of ops/shape.h. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/handles.h"
#include "ops/binary.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/shape.h"

/* Checks a (pointer, count) list argument: non-NULL when count > 0 and a
 * count that fits an int. */

int mlx_reshape(mlx_array *res, const mlx_array a, const int *shape, size_t shape_num,
                const mlx_stream s) {
  LC_API_PROLOGUE("mlx_reshape", res, a);
  if (lc_api_check_list("mlx_reshape", "shape", shape, shape_num)) return 1;
  return lc_api_set(res, lc_reshape(lc_arr(a), (int)shape_num, shape));
}

int mlx_flatten(mlx_array *res, const mlx_array a, int start_axis, int end_axis,
                const mlx_stream s) {
  LC_API_PROLOGUE("mlx_flatten", res, a);
  return lc_api_set(res, lc_flatten(lc_arr(a), start_axis, end_axis));
}

int mlx_unflatten(mlx_array *res, const mlx_array a, int axis, const int *shape, size_t shape_num,
                  const mlx_stream s) {
  LC_API_PROLOGUE("mlx_unflatten", res, a);
  if (lc_api_check_list("mlx_unflatten", "shape", shape, shape_num)) return 1;
  return lc_api_set(res, lc_unflatten(lc_arr(a), axis, (int)shape_num, shape));
}

int mlx_squeeze_axes(mlx_array *res, const mlx_array a, const int *axes, size_t axes_num,
                     const mlx_stream s) {
  LC_API_PROLOGUE("mlx_squeeze_axes", res, a);
  if (lc_api_check_list("mlx_squeeze_axes", "axes", axes, axes_num)) return 1;
  return lc_api_set(res, lc_squeeze(lc_arr(a), (int)axes_num, axes));
}

int mlx_squeeze_axis(mlx_array *res, const mlx_array a, int axis, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_squeeze_axis", res, a);
  return lc_api_set(res, lc_squeeze(lc_arr(a), 1, &axis));
}

int mlx_squeeze(mlx_array *res, const mlx_array a, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_squeeze", res, a);
  return lc_api_set(res, lc_squeeze_all(lc_arr(a)));
}

int mlx_expand_dims_axes(mlx_array *res, const mlx_array a, const int *axes, size_t axes_num,
                         const mlx_stream s) {
  LC_API_PROLOGUE("mlx_expand_dims_axes", res, a);
  if (lc_api_check_list("mlx_expand_dims_axes", "axes", axes, axes_num)) return 1;
  return lc_api_set(res, lc_expand_dims(lc_arr(a), (int)axes_num, axes));
}

int mlx_expand_dims(mlx_array *res, const mlx_array a, int axis, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_expand_dims", res, a);
  return lc_api_set(res, lc_expand_dims(lc_arr(a), 1, &axis));
}

int mlx_transpose_axes(mlx_array *res, const mlx_array a, const int *axes, size_t axes_num,
                       const mlx_stream s) {
  LC_API_PROLOGUE("mlx_transpose_axes", res, a);
  if (lc_api_check_list("mlx_transpose_axes", "axes", axes, axes_num)) return 1;
  if (axes_num != (size_t)lc_arr(a)->ndim)
    return lc_error("mlx_transpose_axes: received %zu axes for an array with %d dimensions",
                    axes_num, lc_arr(a)->ndim);
  return lc_api_set(res, lc_transpose(lc_arr(a), axes));
}

int mlx_transpose(mlx_array *res, const mlx_array a, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_transpose", res, a);
  return lc_api_set(res, lc_transpose_all(lc_arr(a)));
}

int mlx_swapaxes(mlx_array *res, const mlx_array a, int axis1, int axis2, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_swapaxes", res, a);
  return lc_api_set(res, lc_swapaxes(lc_arr(a), axis1, axis2));
}

int mlx_moveaxis(mlx_array *res, const mlx_array a, int source, int destination,
                 const mlx_stream s) {
  LC_API_PROLOGUE("mlx_moveaxis", res, a);
  return lc_api_set(res, lc_moveaxis(lc_arr(a), source, destination));
}

int mlx_broadcast_to(mlx_array *res, const mlx_array a, const int *shape, size_t shape_num,
                     const mlx_stream s) {
  LC_API_PROLOGUE("mlx_broadcast_to", res, a);
  if (lc_api_check_list("mlx_broadcast_to", "shape", shape, shape_num)) return 1;
  for (size_t i = 0; i < shape_num; i++)
    if (shape[i] < 0) return lc_error("mlx_broadcast_to: negative dimensions not allowed");
  return lc_api_set(res, lc_broadcast_to(lc_arr(a), (int)shape_num, shape));
}

int mlx_broadcast_arrays(mlx_vector_array *res, const mlx_vector_array inputs, const mlx_stream s) {
  LC_CHECK_RES("mlx_broadcast_arrays", res);
  if (lc_api_check_stream("mlx_broadcast_arrays", s)) return 1;
  struct lc_node **in;
  size_t n;
  if (lc_api_vector_nodes("mlx_broadcast_arrays", inputs, &in, &n)) return 1;
  int nd = 0;
  for (size_t i = 0; i < n; i++) nd = in[i]->ndim > nd ? in[i]->ndim : nd;
  int shape[nd > 0 ? nd : 1], tmp[nd > 0 ? nd : 1], cur = 0;
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    rc = lc_broadcast_shapes("mlx_broadcast_arrays", cur, shape, in[i]->ndim, in[i]->shape, &cur,
                             tmp);
    for (int k = 0; k < cur && !rc; k++) shape[k] = tmp[k];
  }
  struct lc_node **out = rc ? NULL : calloc(n ? n : 1, sizeof *out);
  if (!rc && !out) rc = lc_error("out of memory");
  for (size_t i = 0; i < n && !rc; i++)
    if (!(out[i] = lc_broadcast_to(in[i], cur, shape))) rc = 1;
  if (!rc) rc = lc_vec_array_assign(res, out, n);
  for (size_t i = 0; out && i < n; i++) lc_node_release(out[i]);
  free(out);
  free(in);
  return rc;
}

int mlx_as_strided(mlx_array *res, const mlx_array a, const int *shape, size_t shape_num,
                   const int64_t *strides, size_t strides_num, size_t offset, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_as_strided", res, a);
  if (lc_api_check_list("mlx_as_strided", "shape", shape, shape_num) ||
      lc_api_check_list("mlx_as_strided", "strides", strides, strides_num))
    return 1;
  if (shape_num != strides_num)
    return lc_error("mlx_as_strided: shape has %zu entries but strides has %zu", shape_num,
                    strides_num);
  if (offset > (size_t)INT64_MAX)
    return lc_error("mlx_as_strided: offset %zu is too large", offset);
  return lc_api_set(res, lc_as_strided(lc_arr(a), (int)shape_num, shape, strides, (int64_t)offset));
}

int mlx_slice(mlx_array *res, const mlx_array a, const int *start, size_t start_num,
              const int *stop, size_t stop_num, const int *strides, size_t strides_num,
              const mlx_stream s) {
  LC_API_PROLOGUE("mlx_slice", res, a);
  if (lc_api_check_list("mlx_slice", "start", start, start_num) ||
      lc_api_check_list("mlx_slice", "stop", stop, stop_num) ||
      lc_api_check_list("mlx_slice", "strides", strides, strides_num))
    return 1;
  size_t nd = (size_t)lc_arr(a)->ndim;
  if (start_num != nd || stop_num != nd || strides_num != nd)
    return lc_error(
        "mlx_slice: invalid number of indices or strides (%zu, %zu, %zu) for an "
        "array with %zu dimensions",
        start_num, stop_num, strides_num, nd);
  return lc_api_set(res, lc_slice(lc_arr(a), start, stop, strides));
}

/* Stores nodes out[0..n) (consumed) into *res. */
static int set_vector(mlx_vector_array *res, struct lc_node **out, size_t n) {
  int rc = lc_vec_array_assign(res, out, n);
  for (size_t i = 0; i < n; i++) lc_node_release(out[i]);
  return rc;
}

int mlx_split_sections(mlx_vector_array *res, const mlx_array a, const int *indices,
                       size_t indices_num, int axis, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_split_sections", res, a);
  if (lc_api_check_list_max("mlx_split_sections", "indices", indices, indices_num, INT_MAX - 1)) return 1;
  struct lc_node **out = malloc(sizeof *out * (indices_num + 1));
  if (!out) return lc_error("out of memory");
  int rc = lc_split_sections(lc_arr(a), (int)indices_num, indices, axis, out);
  if (!rc) rc = set_vector(res, out, indices_num + 1);
  free(out);
  return rc;
}

int mlx_split(mlx_vector_array *res, const mlx_array a, int num_splits, int axis,
              const mlx_stream s) {
  LC_API_PROLOGUE("mlx_split", res, a);
  struct lc_node *x = lc_arr(a);
  if (lc_axis_check("mlx_split", &axis, x->ndim)) return 1;
  if (num_splits <= 0)
    return lc_error("mlx_split: num_splits must be positive and non-zero but got %d", num_splits);
  if (x->shape[axis] % num_splits)
    return lc_error(
        "mlx_split: array split does not result in sub arrays with equal size: "
        "attempting %d splits along axis %d of size %d",
        num_splits, axis, x->shape[axis]);
  int step = x->shape[axis] / num_splits;
  int *idx = malloc(sizeof(int) * (size_t)num_splits);
  struct lc_node **out = malloc(sizeof *out * (size_t)num_splits);
  int rc = 0;
  if (!idx || !out) rc = lc_error("out of memory");
  if (!rc) {
    for (int i = 0; i < num_splits - 1; i++) idx[i] = (i + 1) * step;
    rc = lc_split_sections(x, num_splits - 1, idx, axis, out);
    if (!rc) rc = set_vector(res, out, (size_t)num_splits);
  }
  free(idx);
  free(out);
  return rc;
}

int mlx_diagonal(mlx_array *res, const mlx_array a, int offset, int axis1, int axis2,
                 const mlx_stream s) {
  LC_API_PROLOGUE("mlx_diagonal", res, a);
  return lc_api_set(res, lc_diagonal(lc_arr(a), offset, axis1, axis2));
}

int mlx_atleast_1d(mlx_array *res, const mlx_array a, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_atleast_1d", res, a);
  return lc_api_set(res, lc_atleast(lc_arr(a), 1));
}

int mlx_atleast_2d(mlx_array *res, const mlx_array a, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_atleast_2d", res, a);
  return lc_api_set(res, lc_atleast(lc_arr(a), 2));
}

int mlx_atleast_3d(mlx_array *res, const mlx_array a, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_atleast_3d", res, a);
  return lc_api_set(res, lc_atleast(lc_arr(a), 3));
}

int mlx_contiguous(mlx_array *res, const mlx_array a, bool allow_col_major, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_contiguous", res, a);
  return lc_api_set(res, lc_contiguous(lc_arr(a), allow_col_major));
}

static int concat_impl(const char *fn, mlx_array *res, mlx_vector_array arrays, int axis, bool flat,
                       bool stack) {
  LC_CHECK_RES(fn, res);
  struct lc_node **in;
  size_t n;
  if (lc_api_vector_nodes(fn, arrays, &in, &n)) return 1;
  if (n > INT_MAX) {
    free(in);
    return lc_error("%s: too many arrays", fn);
  }
  struct lc_node **flat_in = NULL;
  int rc = 0;
  if (flat) { /* concatenate without an axis flattens every input */
    flat_in = calloc(n ? n : 1, sizeof *flat_in);
    if (!flat_in) rc = lc_error("out of memory");
    for (size_t i = 0; i < n && !rc; i++)
      if (!(flat_in[i] = lc_flatten(in[i], 0, -1))) rc = 1;
  }
  if (!rc) {
    struct lc_node *const *src = flat ? flat_in : in;
    rc = lc_api_set(res, stack ? lc_stack((int)n, src, axis) : lc_concatenate((int)n, src, axis));
  }
  for (size_t i = 0; flat_in && i < n; i++) lc_node_release(flat_in[i]);
  free(flat_in);
  free(in);
  return rc;
}

int mlx_concatenate_axis(mlx_array *res, const mlx_vector_array arrays, int axis,
                         const mlx_stream s) {
  if (lc_api_check_stream("mlx_concatenate_axis", s)) return 1;
  return concat_impl("mlx_concatenate_axis", res, arrays, axis, false, false);
}

int mlx_concatenate(mlx_array *res, const mlx_vector_array arrays, const mlx_stream s) {
  if (lc_api_check_stream("mlx_concatenate", s)) return 1;
  return concat_impl("mlx_concatenate", res, arrays, 0, true, false);
}

int mlx_stack_axis(mlx_array *res, const mlx_vector_array arrays, int axis, const mlx_stream s) {
  if (lc_api_check_stream("mlx_stack_axis", s)) return 1;
  return concat_impl("mlx_stack_axis", res, arrays, axis, false, true);
}

int mlx_stack(mlx_array *res, const mlx_vector_array arrays, const mlx_stream s) {
  if (lc_api_check_stream("mlx_stack", s)) return 1;
  return concat_impl("mlx_stack", res, arrays, 0, false, true);
}

int mlx_pad(mlx_array *res, const mlx_array a, const int *axes, size_t axes_num,
            const int *low_pad_size, size_t low_pad_size_num, const int *high_pad_size,
            size_t high_pad_size_num, const mlx_array pad_value, const char *mode,
            const mlx_stream s) {
  LC_API_PROLOGUE("mlx_pad", res, a);
  if (lc_api_check_list("mlx_pad", "axes", axes, axes_num) ||
      lc_api_check_list("mlx_pad", "low_pad_size", low_pad_size, low_pad_size_num) ||
      lc_api_check_list("mlx_pad", "high_pad_size", high_pad_size, high_pad_size_num))
    return 1;
  if (axes_num != low_pad_size_num || axes_num != high_pad_size_num)
    return lc_error("mlx_pad: invalid number of padding sizes (%zu low, %zu high) for %zu axes",
                    low_pad_size_num, high_pad_size_num, axes_num);
  return lc_api_set(res, lc_pad_mode(lc_arr(a), (int)axes_num, axes, low_pad_size, high_pad_size,
                                     lc_arr(pad_value), mode));
}

int mlx_pad_symmetric(mlx_array *res, const mlx_array a, int pad_width, const mlx_array pad_value,
                      const char *mode, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_pad_symmetric", res, a);
  int nd = lc_arr(a)->ndim;
  int axes[nd > 0 ? nd : 1], w[nd > 0 ? nd : 1];
  for (int i = 0; i < nd; i++) {
    axes[i] = i;
    w[i] = pad_width;
  }
  return lc_api_set(res, lc_pad_mode(lc_arr(a), nd, axes, w, w, lc_arr(pad_value), mode));
}

int mlx_tile(mlx_array *res, const mlx_array arr, const int *reps, size_t reps_num,
             const mlx_stream s) {
  LC_API_PROLOGUE("mlx_tile", res, arr);
  if (lc_api_check_list("mlx_tile", "reps", reps, reps_num)) return 1;
  return lc_api_set(res, lc_tile(lc_arr(arr), (int)reps_num, reps));
}

int mlx_repeat_axis(mlx_array *res, const mlx_array arr, int repeats, int axis,
                    const mlx_stream s) {
  LC_API_PROLOGUE("mlx_repeat_axis", res, arr);
  return lc_api_set(res, lc_repeat(lc_arr(arr), repeats, axis));
}

int mlx_repeat(mlx_array *res, const mlx_array arr, int repeats, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_repeat", res, arr);
  struct lc_node *f = lc_flatten(lc_arr(arr), 0, -1);
  if (!f) return 1;
  struct lc_node *r = lc_repeat(f, repeats, 0);
  lc_node_release(f);
  return lc_api_set(res, r);
}

/* Sum of shifts, as MLX does when one axis (or the flattened array) gets
 * several shifts. */
static int sum_shifts(const char *fn, const int *shift, size_t n, int *out) {
  if (lc_api_check_list(fn, "shift", shift, n)) return 1;
  int64_t t = 0;
  for (size_t i = 0; i < n; i++) t += shift[i];
  if (t > INT_MAX || t < INT_MIN) return lc_error("%s: total shift is too large", fn);
  *out = (int)t;
  return 0;
}

int mlx_roll(mlx_array *res, const mlx_array a, const int *shift, size_t shift_num,
             const mlx_stream s) {
  LC_API_PROLOGUE("mlx_roll", res, a);
  int sh, ax = 0;
  if (sum_shifts("mlx_roll", shift, shift_num, &sh)) return 1;
  struct lc_node *x = lc_arr(a), *f = lc_flatten(x, 0, -1);
  struct lc_node *r = f ? lc_roll(f, 1, &ax, &sh) : NULL;
  struct lc_node *out = r ? lc_reshape(r, x->ndim, x->shape) : NULL;
  lc_node_release(f);
  lc_node_release(r);
  return lc_api_set(res, out);
}

int mlx_roll_axis(mlx_array *res, const mlx_array a, const int *shift, size_t shift_num, int axis,
                  const mlx_stream s) {
  LC_API_PROLOGUE("mlx_roll_axis", res, a);
  int sh;
  if (sum_shifts("mlx_roll_axis", shift, shift_num, &sh)) return 1;
  return lc_api_set(res, lc_roll(lc_arr(a), 1, &axis, &sh));
}

int mlx_roll_axes(mlx_array *res, const mlx_array a, const int *shift, size_t shift_num,
                  const int *axes, size_t axes_num, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_roll_axes", res, a);
  if (lc_api_check_list("mlx_roll_axes", "shift", shift, shift_num) ||
      lc_api_check_list("mlx_roll_axes", "axes", axes, axes_num))
    return 1;
  if (shift_num < axes_num)
    return lc_error(
        "mlx_roll_axes: at least one shift value per axis is required, %zu provided "
        "for %zu axes",
        shift_num, axes_num);
  return lc_api_set(res, lc_roll(lc_arr(a), (int)axes_num, axes, shift));
}

int mlx_diag(mlx_array *res, const mlx_array a, int k, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_diag", res, a);
  return lc_api_set(res, lc_diag(lc_arr(a), k));
}

int mlx_meshgrid(mlx_vector_array *res, const mlx_vector_array arrays, bool sparse,
                 const char *indexing, const mlx_stream s) {
  const char *fn = "mlx_meshgrid";
  LC_CHECK_RES(fn, res);
  if (lc_api_check_stream(fn, s)) return 1;
  bool xy;
  if (!indexing || !strcmp(indexing, "xy"))
    xy = true;
  else if (!strcmp(indexing, "ij"))
    xy = false;
  else
    return lc_error("%s: invalid indexing value '%s'; valid values are 'xy' and 'ij'", fn,
                    indexing);
  struct lc_node **in;
  size_t n;
  if (lc_api_vector_nodes(fn, arrays, &in, &n)) return 1;
  if (n > LC_API_MAX_DIMS) {
    free(in);
    return lc_error("%s: too many arrays (%zu)", fn, n);
  }
  struct lc_node *out[n > 0 ? n : 1], *bc[n > 0 ? n : 1];
  int shape[n > 0 ? n : 1], full[n > 0 ? n : 1], rc = 0;
  for (size_t i = 0; i < n; i++) {
    out[i] = bc[i] = NULL;
    full[i] = 1;
  }
  /* array i varies along axis i ("ij"); "xy" swaps the first two axes */
  for (size_t i = 0; i < n && !rc; i++) {
    size_t at = xy && n > 1 && i < 2 ? 1 - i : i;
    if (in[i]->size > INT_MAX) {
      rc = lc_error("%s: array %zu is too large", fn, i);
      break;
    }
    for (size_t k = 0; k < n; k++) shape[k] = k == at ? (int)in[i]->size : 1;
    full[at] = (int)in[i]->size;
    if (!(out[i] = lc_reshape(in[i], (int)n, shape))) rc = 1;
  }
  for (size_t i = 0; i < n && !rc && !sparse; i++)
    if (!(bc[i] = lc_broadcast_to(out[i], (int)n, full))) rc = 1;
  if (!rc) rc = lc_vec_array_assign(res, sparse ? out : bc, n);
  for (size_t i = 0; i < n; i++) {
    lc_node_release(out[i]);
    lc_node_release(bc[i]);
  }
  free(in);
  return rc;
}

int mlx_trace(mlx_array *res, const mlx_array a, int offset, int axis1, int axis2, mlx_dtype dtype,
              const mlx_stream s) {
  LC_API_PROLOGUE("mlx_trace", res, a);
  struct lc_node *x = lc_arr(a);
  if (x->ndim < 2)
    return lc_error("mlx_trace: array must have at least two dimensions, but got %d dimensions",
                    x->ndim);
  struct lc_node *d = lc_diagonal(x, offset, axis1, axis2);
  struct lc_node *c = d ? lc_astype(d, dtype) : NULL;
  int last = x->ndim - 2;
  struct lc_node *r = c ? lc_sum(c, &last, 1, false) : NULL;
  lc_node_release(d);
  lc_node_release(c);
  return lc_api_set(res, r);
}

/* kron(a, b): a's axes interleaved with b's (both right-aligned to the
 * larger rank), multiplied with broadcasting, then merged pairwise. */
int mlx_kron(mlx_array *res, const mlx_array a, const mlx_array b, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_kron", res, a);
  LC_CHECK_ARR("mlx_kron", b);
  struct lc_node *x = lc_arr(a), *y = lc_arr(b);
  if (x->size == 0 || y->size == 0) return lc_error("mlx_kron: input arrays cannot be empty");
  int nd = x->ndim > y->ndim ? x->ndim : y->ndim;
  if (nd > LC_API_MAX_DIMS / 2) return lc_error("mlx_kron: too many dimensions");
  int xs[2 * nd > 0 ? 2 * nd : 1], ys[2 * nd > 0 ? 2 * nd : 1], os[nd > 0 ? nd : 1];
  for (int i = 0; i < nd; i++) {
    int dx = i < nd - x->ndim ? 1 : x->shape[i - (nd - x->ndim)];
    int dy = i < nd - y->ndim ? 1 : y->shape[i - (nd - y->ndim)];
    xs[2 * i] = dx;
    xs[2 * i + 1] = 1;
    ys[2 * i] = 1;
    ys[2 * i + 1] = dy;
    if ((int64_t)dx * dy > INT_MAX) return lc_error("mlx_kron: result is too large");
    os[i] = dx * dy;
  }
  struct lc_node *rx = lc_reshape(x, 2 * nd, xs);
  struct lc_node *ry = rx ? lc_reshape(y, 2 * nd, ys) : NULL;
  struct lc_node *m = ry ? lc_multiply(rx, ry) : NULL;
  struct lc_node *r = m ? lc_reshape(m, nd, os) : NULL;
  lc_node_release(rx);
  lc_node_release(ry);
  lc_node_release(m);
  return lc_api_set(res, r);
}

/* The product of a's extents along axes (or its inverse) as a 0-d array of
 * dtype, known at build time. */
int mlx_number_of_elements(mlx_array *res, const mlx_array a, const int *axes, size_t axes_num,
                           bool inverted, mlx_dtype dtype, const mlx_stream s) {
  LC_API_PROLOGUE("mlx_number_of_elements", res, a);
  if (lc_api_check_list("mlx_number_of_elements", "axes", axes, axes_num)) return 1;
  struct lc_node *x = lc_arr(a);
  double numel = 1;
  for (size_t i = 0; i < axes_num; i++) {
    int ax = axes[i];
    if (lc_axis_check("mlx_number_of_elements", &ax, x->ndim)) return 1;
    numel *= x->shape[ax];
  }
  if (!lc_dtype_valid(dtype)) return lc_error("mlx_number_of_elements: invalid dtype %d", dtype);
  return lc_api_set(res, lc_node_new_scalar(dtype, inverted ? 1.0 / numel : numel));
}

static int fftshift_impl(const char *fn, mlx_array *res, mlx_array a, const int *axes,
                         size_t axes_num, bool inverse, mlx_stream s) {
  LC_API_PROLOGUE(fn, res, a);
  if (lc_api_check_list(fn, "axes", axes, axes_num)) return 1;
  struct lc_node *x = lc_arr(a);
  int n = (int)axes_num, ax[n > 0 ? n : 1], sh[n > 0 ? n : 1];
  for (int i = 0; i < n; i++) {
    ax[i] = axes[i];
    if (lc_axis_check(fn, &ax[i], x->ndim)) return 1;
    sh[i] = x->shape[ax[i]] / 2 * (inverse ? -1 : 1); /* numpy's shift */
  }
  return lc_api_set(res, lc_roll(x, n, ax, sh));
}

int mlx_fft_fftshift(mlx_array *res, const mlx_array a, const int *axes, size_t axes_num,
                     const mlx_stream s) {
  return fftshift_impl("mlx_fft_fftshift", res, a, axes, axes_num, false, s);
}

int mlx_fft_ifftshift(mlx_array *res, const mlx_array a, const int *axes, size_t axes_num,
                      const mlx_stream s) {
  return fftshift_impl("mlx_fft_ifftshift", res, a, axes, axes_num, true, s);
}
