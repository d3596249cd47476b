/* Reductions: sum, prod, max, min, all, any, mean, var, std, logsumexp,
 * argmax, argmin.
 *
 * Builders borrow their arguments and return a new reference, or NULL
 * after reporting. `axes` may be negative (counted from the end), must be
 * in range and distinct; naxes == 0 follows MLX (sum/prod/max/min return
 * the input itself, all/any cast it to bool, mean casts to float; var, std
 * and logsumexp reduce over nothing). Output dtypes follow MLX: sum/prod of
 * bool and signed ints up to 32 bits give int32, unsigned up to 32 bits
 * uint32; mean/logsumexp of integers give float32; var/std of complex give
 * float32; arg reductions give uint32; all/any give bool.
 *
 * One REDUCE primitive computes every kind (params: int[3 + naxes] =
 * {kind, ddof, naxes, sorted axes...}); ARG_REDUCE computes argmax/argmin
 * over one axis or over the whole array in row-major order (params:
 * {kind, axis or -1}). Outputs are row-major over the kept dims. */
#ifndef LC_REDUCE_H
#define LC_REDUCE_H

#include <stdbool.h>

#include "core/node.h"
#include "ops/reduce_kern.h"
#include "ops/reduce_plan.h"

struct lc_node *lc_sum(struct lc_node *a, const int *axes, int naxes, bool keepdims);
struct lc_node *lc_prod(struct lc_node *a, const int *axes, int naxes, bool keepdims);
struct lc_node *lc_max(struct lc_node *a, const int *axes, int naxes, bool keepdims);
struct lc_node *lc_min(struct lc_node *a, const int *axes, int naxes, bool keepdims);
struct lc_node *lc_all(struct lc_node *a, const int *axes, int naxes, bool keepdims);
struct lc_node *lc_any(struct lc_node *a, const int *axes, int naxes, bool keepdims);
struct lc_node *lc_mean(struct lc_node *a, const int *axes, int naxes, bool keepdims);
struct lc_node *lc_var(struct lc_node *a, const int *axes, int naxes, bool keepdims, int ddof);
struct lc_node *lc_std(struct lc_node *a, const int *axes, int naxes, bool keepdims, int ddof);
/* Errors on an empty array and on complex input. */
struct lc_node *lc_logsumexp(struct lc_node *a, const int *axes, int naxes, bool keepdims);

/* Index of the first maximum (minimum) along axis; uint32. NaN counts as
 * beyond every number: the first NaN of a line is selected (as MLX 0.32). */
struct lc_node *lc_argmax(struct lc_node *a, int axis, bool keepdims);
struct lc_node *lc_argmin(struct lc_node *a, int axis, bool keepdims);
/* Over the flattened array: shape () or, with keepdims, all extents 1. */
struct lc_node *lc_argmax_all(struct lc_node *a, bool keepdims);
struct lc_node *lc_argmin_all(struct lc_node *a, bool keepdims);

/* Any reduction kind (enum lc_reduce_kind) by name of the calling function
 * (used in messages). ddof is read by var/std only. */
struct lc_node *lc_reduce(const char *fn, int kind, struct lc_node *a, const int *axes,
                          int naxes, bool keepdims, int ddof);

/* Validates axes against ndim and writes them normalised and sorted into
 * sorted (capacity naxes). 0, or 1 after reporting "fn: axis 3 is out of
 * bounds for an array with 2 dimensions" / "fn: duplicate axis 1". */
int lc_reduce_check_axes(const char *fn, int ndim, const int *axes, int naxes, int *sorted);

/* Runs reduction `kind` of x over plan p into out (allocated, contiguous);
 * arg is the kernel's fin argument (mean scale, ddof). 0, or 1 after
 * reporting. */
int lc_reduce_exec(const struct lc_rplan *p, int kind, const struct lc_node *x,
                   struct lc_node *out, double arg);

#endif
