/* How RESHAPE nodes remember the rule their shape came from, for shapeless
 * compile. A reshape built with an explicit shape carries no params (its
 * shape is fixed: shapeless compile traces again for new input shapes); one
 * whose shape follows its input's carries params naming the rule, as
 * MLX's Reshape (a -1 entry), Squeeze, ExpandDims, Flatten and Unflatten:
 *   {RS_INFER, infer, shape[ndim]}     shape with a -1 at index infer
 *   {RS_SQUEEZE, in_ndim, drop[in_ndim]} input axes dropped (extent 1)
 *   {RS_EXPAND, ndim, ins[ndim]}        output axes inserted (extent 1)
 *   {RS_FLATTEN, start, end}            input axes start..end merged
 *   {RS_UNFLATTEN, axis, n, sub[n]}     input axis split into sub (one -1
 *                                       at most)
 * The params are plain ints, so equal rules on equal inputs still CSE. */
#include <limits.h>
#include <string.h>

#include "ops/prim.h"
#include "ops/shape_internal.h"

/* Resolves at most one -1 among sub[0..n) against size into out; false
 * when size does not fit. */
static bool infer_into(int64_t size, int n, const int *sub, int *out) {
  int64_t prod = 1;
  int infer = -1;
  for (int i = 0; i < n; i++) {
    out[i] = sub[i];
    if (sub[i] == -1)
      infer = i;
    else
      prod *= sub[i];
  }
  if (infer < 0) return prod == size;
  if (prod <= 0 || size % prod || size / prod > INT_MAX) return false;
  out[infer] = (int)(size / prod);
  return true;
}

static int squeeze_shape(const int *p, const struct lc_node *x, int ndim, int *shape) {
  if (x->ndim != p[1]) return 1;
  int k = 0;
  for (int d = 0; d < x->ndim; d++) {
    if (p[2 + d] && x->shape[d] != 1) return 1;
    if (!p[2 + d]) shape[k++] = x->shape[d];
  }
  return k != ndim;
}

static int expand_shape(const int *p, const struct lc_node *x, int ndim, int *shape) {
  if (p[1] != ndim) return 1;
  int k = 0;
  for (int d = 0; d < ndim; d++) {
    if (!p[2 + d] && k == x->ndim) return 1;
    shape[d] = p[2 + d] ? 1 : x->shape[k++];
  }
  return k != x->ndim;
}

static int flatten_shape(const int *p, const struct lc_node *x, int ndim, int *shape) {
  int s = p[1], e = p[2], k = 0;
  if (e >= x->ndim || ndim != x->ndim - (e - s)) return 1;
  int64_t m = 1;
  for (int d = 0; d < s; d++) shape[k++] = x->shape[d];
  for (int d = s; d <= e; d++) m *= x->shape[d];
  if (m > INT_MAX) return 1;
  shape[k++] = (int)m;
  for (int d = e + 1; d < x->ndim; d++) shape[k++] = x->shape[d];
  return 0;
}

static int unflatten_shape(const int *p, const struct lc_node *x, int ndim, int *shape) {
  int axis = p[1], n = p[2], k = 0;
  if (axis >= x->ndim || ndim != x->ndim - 1 + n) return 1;
  for (int d = 0; d < axis; d++) shape[k++] = x->shape[d];
  if (!infer_into(x->shape[axis], n, p + 3, shape + k)) return 1;
  k += n;
  for (int d = axis + 1; d < x->ndim; d++) shape[k++] = x->shape[d];
  return 0;
}

int lc_reshape_output_shape(const void *params, int nin, struct lc_node *const *in, int ndim,
                            int *shape) {
  const int *p = params;
  const struct lc_node *x = in[0];
  if (!p || nin != 1) return 1;
  switch (p[0]) {
  case LC_RS_INFER: return !infer_into(x->size, ndim, p + 2, shape);
  case LC_RS_SQUEEZE: return squeeze_shape(p, x, ndim, shape);
  case LC_RS_EXPAND: return expand_shape(p, x, ndim, shape);
  case LC_RS_FLATTEN: return flatten_shape(p, x, ndim, shape);
  case LC_RS_UNFLATTEN: return unflatten_shape(p, x, ndim, shape);
  default: return 1;
  }
}
