/* Shape builders: views (no copy) and copying rearrangements.
 *
 * Every builder borrows its node arguments and returns a new reference, or
 * NULL after reporting through lc_error. Axes given to builders may be
 * negative (counted from the end) unless a comment says otherwise; they are
 * validated here, so the API layer passes user values through.
 *
 * Views (eval shares the input buffer): reshape (when strides allow),
 * transpose, slice, as_strided, diagonal, and everything built from them
 * (squeeze, expand_dims, flatten, swapaxes, moveaxis, split, atleast_*).
 * Copies: concatenate, pad, tile, repeat, roll, diag of a vector,
 * contiguous. */
#ifndef LC_SHAPE_H
#define LC_SHAPE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/node.h"

/* shape may hold one -1 (inferred). A view when a's layout allows it. */
struct lc_node *lc_reshape(struct lc_node *a, int ndim, const int *shape);
/* perm: a permutation of 0..ndim-1 (negative entries allowed). */
struct lc_node *lc_transpose(struct lc_node *a, const int *perm);
/* Reverses the axes. */
struct lc_node *lc_transpose_all(struct lc_node *a);
struct lc_node *lc_swapaxes(struct lc_node *a, int axis1, int axis2);
struct lc_node *lc_moveaxis(struct lc_node *a, int source, int destination);
/* Removes the listed axes (each of extent 1). */
struct lc_node *lc_squeeze(struct lc_node *a, int naxes, const int *axes);
/* Removes every axis of extent 1. */
struct lc_node *lc_squeeze_all(struct lc_node *a);
/* Inserts axes of extent 1 at the given positions of the output. */
struct lc_node *lc_expand_dims(struct lc_node *a, int naxes, const int *axes);
struct lc_node *lc_flatten(struct lc_node *a, int start_axis, int end_axis);
struct lc_node *lc_unflatten(struct lc_node *a, int axis, int nshape, const int *shape);
/* numpy/MLX slicing semantics: negative start/stop count from the end,
 * out-of-range bounds clamp, step != 0 (negative steps walk backwards).
 * start/stop/step have a->ndim entries; step NULL means all 1. */
struct lc_node *lc_slice(struct lc_node *a, const int *start, const int *stop, const int *step);
/* Slice of one axis [start, stop) with step 1 (clamped as lc_slice). */
struct lc_node *lc_slice_axis(struct lc_node *a, int axis, int start, int stop);
/* A view of a's row-major elements (a copy first if a is not contiguous)
 * with the given shape, strides and offset (elements). Fails when the view
 * would reach outside a's elements. */
struct lc_node *lc_as_strided(struct lc_node *a, int ndim, const int *shape, const int64_t *strides,
                              int64_t offset);
/* Diagonal view over axis1/axis2 (removed), appended as the last axis. */
struct lc_node *lc_diagonal(struct lc_node *a, int offset, int axis1, int axis2);
/* Pieces of a along axis at the sorted-or-not split points (each piece is
 * a slice from the previous point to the next, clamped). *out receives
 * nidx + 1 new references. 0, or 1 after reporting. */
int lc_split_sections(struct lc_node *a, int nidx, const int *idx, int axis, struct lc_node **out);
struct lc_node *lc_atleast(struct lc_node *a, int nd);

/* ---- copies ---- */

/* Arrays with equal shapes except along axis; dtypes are promoted. */
struct lc_node *lc_concatenate(int n, struct lc_node *const *arrays, int axis);
struct lc_node *lc_stack(int n, struct lc_node *const *arrays, int axis);
/* a with row-major contiguous data (or column-major, when allowed): shares
 * a's buffer when its layout already qualifies, copies otherwise. */
struct lc_node *lc_contiguous(struct lc_node *a, bool allow_col_major);

enum lc_pad_mode { LC_PAD_CONSTANT, LC_PAD_EDGE };
/* Pads the listed axes by low[i]/high[i] (>= 0). value: a one-element
 * array (cast to a's dtype; NULL means 0), used in constant mode. mode:
 * "constant" (NULL too), "edge", "reflect" or "symmetric" (numpy's). */
struct lc_node *lc_pad_mode(struct lc_node *a, int naxes, const int *axes, const int *low,
                            const int *high, struct lc_node *value, const char *mode);
struct lc_node *lc_pad(struct lc_node *a, int naxes, const int *axes, const int *low,
                       const int *high, struct lc_node *value, enum lc_pad_mode mode);
struct lc_node *lc_tile(struct lc_node *a, int nreps, const int *reps);
struct lc_node *lc_repeat(struct lc_node *a, int repeats, int axis);
/* Rolls along the listed axes by the matching shifts. */
struct lc_node *lc_roll(struct lc_node *a, int naxes, const int *axes, const int *shifts);
/* 1-D: a square matrix with a on diagonal k; 2-D: diagonal k. */
struct lc_node *lc_diag(struct lc_node *a, int k);

#endif
