/* Scans along one axis: cumsum, cumprod, cummax, cummin, logcumsumexp.
 *
 * Semantics follow MLX: the output has the input's shape and dtype, except
 * cumsum of bool gives int32 and logcumsumexp of integers/bool computes in
 * float32 (the input is cast first), as MLX 0.32.
 * Integer sums and products wrap. cummax/cummin propagate NaN. inclusive =
 * false shifts by one: position k combines elements before k (after k with
 * reverse), the first position holding the identity (0, 1, the dtype's
 * lowest/highest value or -inf/+inf, -inf for logcumsumexp).
 * One SCAN primitive (params: {kind, axis, reverse, inclusive}). */
#ifndef LC_SCAN_H
#define LC_SCAN_H

#include <stdbool.h>

#include "core/node.h"

enum lc_scan_kind { LC_SCAN_SUM, LC_SCAN_PROD, LC_SCAN_MAX, LC_SCAN_MIN, LC_SCAN_LOGADDEXP };

/* fn names the caller in messages; axis may be negative. */
struct lc_node *lc_scan(const char *fn, int kind, struct lc_node *a, int axis, bool reverse,
                        bool inclusive);

struct lc_node *lc_cumsum(struct lc_node *a, int axis, bool reverse, bool inclusive);
struct lc_node *lc_cumprod(struct lc_node *a, int axis, bool reverse, bool inclusive);
struct lc_node *lc_cummax(struct lc_node *a, int axis, bool reverse, bool inclusive);
struct lc_node *lc_cummin(struct lc_node *a, int axis, bool reverse, bool inclusive);
struct lc_node *lc_logcumsumexp(struct lc_node *a, int axis, bool reverse, bool inclusive);

#endif
