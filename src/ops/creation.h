/* Array creation builders (new reference, or NULL after reporting).
 *
 * full/zeros/ones are a broadcast view of one scalar: cheap and lazy, no
 * buffer of the full size is allocated until something copies them.
 * Negative dimensions and invalid dtypes are reported. */
#ifndef LC_CREATION_H
#define LC_CREATION_H

#include <stdbool.h>

#include "core/node.h"

/* shape filled with value converted to t (complex: real part value). */
struct lc_node *lc_full(int ndim, const int *shape, mlx_dtype t, double value);
/* vals (borrowed) cast to t and broadcast to shape (vals must broadcast). */
struct lc_node *lc_full_array(int ndim, const int *shape, struct lc_node *vals, mlx_dtype t);
struct lc_node *lc_zeros(int ndim, const int *shape, mlx_dtype t);
struct lc_node *lc_ones(int ndim, const int *shape, mlx_dtype t);
/* The "like" builders follow a's shape (lc_broadcast_like): zeros and ones
 * of a's shape and dtype; vals cast to t in the broadcast of a's and vals'
 * shapes (fn names the caller in errors). */
struct lc_node *lc_zeros_like(struct lc_node *a);
struct lc_node *lc_ones_like(struct lc_node *a);
struct lc_node *lc_full_like(const char *fn, struct lc_node *a, struct lc_node *vals, mlx_dtype t);

/* MLX's arange: length max(ceil((stop - start) / step), 0); values are
 * accumulated in t as MLX does (start, start + d, ...), d = t(start + step)
 * - t(start). bool is refused, as are NaN/infinite bounds and step 0. */
struct lc_node *lc_arange(double start, double stop, double step, mlx_dtype t);

/* num evenly spaced values from start to stop inclusive, computed in float32
 * (float64 for t == float64) as (1 - i/(num-1)) * start + i/(num-1) * stop,
 * then cast to t. */
struct lc_node *lc_linspace(double start, double stop, int num, mlx_dtype t);

/* (n, m) with ones on diagonal k (eye) or on and below it (tri). */
struct lc_node *lc_eye(int n, int m, int k, mlx_dtype t);
struct lc_node *lc_tri(int n, int m, int k, mlx_dtype t);

/* x (ndim >= 2) with the elements above diagonal k (tril) or below it
 * (triu, upper = true) of its last two dimensions set to zero. */
struct lc_node *lc_tril(struct lc_node *x, int k, bool upper);

#endif
