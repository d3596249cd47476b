/* Iteration plans for reductions and axis-wise operations.
 *
 * A plan splits an input's dimensions into "kept" dimensions (one output
 * position per index) and "reduced" dimensions (walked for each output
 * position). Extent-1 dimensions are dropped and neighbours that are
 * contiguous with each other (for the input and for the output) are merged,
 * so a contiguous row reduction has one kept and one reduced dimension.
 *
 * Output positions are addressed through per-dimension output strides, so
 * dimensions may be reordered: with `sort`, each group is ordered by
 * decreasing input stride (memory order). Order-sensitive users (argmax,
 * scans, sorts) keep logical order, where merged reduced dims are walked in
 * row-major order of the input's logical index.
 *
 * Invariants after lc_rplan_init: nk >= 0, nr >= 0; nout = prod(kdim),
 * R = prod(rdim) (1 for no dims). All offsets are in elements. */
#ifndef LC_REDUCE_PLAN_H
#define LC_REDUCE_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "core/node.h"

#define LC_RPLAN_MAXD 64

struct lc_rplan {
  int nk, nr;
  int64_t kdim[LC_RPLAN_MAXD], kin[LC_RPLAN_MAXD], kout[LC_RPLAN_MAXD];
  int64_t rdim[LC_RPLAN_MAXD], rin[LC_RPLAN_MAXD], rout[LC_RPLAN_MAXD];
  int64_t nout, R;
  int64_t in_off; /* the input's element offset */
};

/* Builds the plan for input x (evaluated) where reduced[d] marks reduced
 * dims and out_strides[d] gives the output stride of every input dim (0 for
 * reduced dims when the output has no entry along them). 0, or 1 after
 * reporting (too many dimensions). */
int lc_rplan_init(struct lc_rplan *p, const struct lc_node *x, const bool *reduced,
                  const int64_t *out_strides, bool sort);

/* Input and output offsets of kept position o (flat index in plan order). */
void lc_rplan_kept(const struct lc_rplan *p, int64_t o, int64_t *in_off, int64_t *out_off);

/* Visits reduced positions [lo, hi) in runs along the innermost reduced dim:
 * fn(ctx, in_off, out_off, n, in_stride, out_stride), offsets relative to
 * the kept position's base offsets (which are added). With nr == 0 the
 * single position is one run of length 1. */
typedef void (*lc_rplan_run_fn)(void *ctx, int64_t in_off, int64_t out_off, int64_t n,
                                int64_t in_stride, int64_t out_stride);
void lc_rplan_runs(const struct lc_rplan *p, int64_t in_base, int64_t out_base, int64_t lo,
                   int64_t hi, lc_rplan_run_fn fn, void *ctx);

/* Row-major output strides for `x`'s dims given a reduction mask, for an
 * output that keeps (as extent 1) or drops the reduced dims: kept dims get
 * the contiguous strides of the kept shape, reduced dims 0. */
void lc_rplan_reduce_out_strides(int ndim, const int *shape, const bool *reduced,
                                 int64_t *out_strides);

#endif
