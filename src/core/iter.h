/* Strided iteration over an n-d index space shared by several operands.
 *
 * lc_iter_runs visits every index of `shape` in row-major order, in runs
 * along the innermost dimension, after merging adjacent dimensions that are
 * contiguous for every operand (so a fully contiguous space is one run).
 * For each run it calls fn(ctx, n, offs, inner) where offs[k] is operand k's
 * element offset at the run's start and inner[k] its element stride along
 * the run. Strides may be any value, including 0 (broadcast) and negative.
 * With `parallel`, runs are split across the worker threads (fn must then be
 * safe to call concurrently on disjoint runs). */
#ifndef LC_ITER_H
#define LC_ITER_H

#include <stdbool.h>
#include <stdint.h>

typedef void (*lc_run_fn)(void *ctx, int64_t n, const int64_t *offs, const int64_t *inner);

/* Operand count limit for one iteration. */
#define LC_ITER_MAX_OPERANDS 16

/* 0, or 1 after reporting (bad operand count, out of memory). */
int lc_iter_runs(int ndim, const int *shape, int narr, const int64_t *const *strides,
                 const int64_t *base_offs, lc_run_fn fn, void *ctx, bool parallel);

/* Elements below which work is not split across threads. */
#define LC_PARALLEL_MIN 32768

#endif
