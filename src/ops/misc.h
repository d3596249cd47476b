/* Miscellaneous ops (ops/misc_ops.c, ops/einsum.c): window functions,
 * median, depends, hadamard_transform, einsum. Builders borrow their
 * arguments and return a new reference, or NULL after reporting. */
#ifndef LC_MISC_H
#define LC_MISC_H

#include <stdbool.h>

#include "core/node.h"

enum lc_window { LC_WIN_BARTLETT, LC_WIN_HANNING, LC_WIN_HAMMING, LC_WIN_BLACKMAN };
/* MLX's windows: float32 of length M (empty for M < 1, [1] for M == 1),
 * over n = 0..M-1 with x = 2 pi n / (M - 1):
 * bartlett 1 - |2n/(M-1) - 1|, hanning sin^2(pi n/(M-1)),
 * hamming 0.54 - 0.46 cos x, blackman 0.42 - 0.5 cos x + 0.08 cos 2x. */
struct lc_node *lc_window(int kind, int M);

/* Median over the listed axes (all when naxes < 0): the middle element of
 * the sorted values, or the mean of the two middle ones; at least float32;
 * NaN anywhere along the axes gives NaN (MLX). */
struct lc_node *lc_median(struct lc_node *a, const int *axes, int naxes, bool keepdims);

/* MLX's depends: out[i] is inputs[i] (a view) that also depends on every
 * dependency, so evaluating it evaluates them. 0, or 1 after reporting. */
int lc_depends(int nin, struct lc_node *const *in, int ndep, struct lc_node *const *dep,
               struct lc_node **out);

/* Walsh-Hadamard transform (Sylvester order) along the last axis, times
 * scale (default 1/sqrt(n)). The last extent must be a power of two
 * (MLX's m * 2^k sizes with m in 12, 20, 28 are reported unsupported).
 * Floating types keep their dtype, others give float32. */
struct lc_node *lc_hadamard(struct lc_node *a, bool has_scale, float scale);

/* numpy/MLX einsum: subscripts like "ij,jk->ik", implicit output (labels
 * seen once, sorted), "..." broadcasting, repeated labels (diagonals). */
struct lc_node *lc_einsum(const char *subscripts, int n, struct lc_node *const *ops);

#endif
