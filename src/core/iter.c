#include "core/iter.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/parallel.h"

/* The merged iteration space: dims[0..nd) outermost first; strides are
 * stored operand-major: st[k * nd + d]. */
struct space {
  int nd, narr;
  int64_t *dims;
  int64_t *st;
  const int64_t *base;
  lc_run_fn fn;
  void *ctx;
};

/* Visits flat (row-major) element indices [lo, hi). */
static void run_range(void *arg, int64_t lo, int64_t hi) {
  struct space *s = arg;
  int nd = s->nd, narr = s->narr;
  int64_t idx[64], offs[LC_ITER_MAX_OPERANDS], inner[LC_ITER_MAX_OPERANDS];
  int64_t *ix = nd <= 64 ? idx : malloc(sizeof(int64_t) * (size_t)nd);
  if (!ix) return; /* ranks above 64 need a heap index; allocation failed */
  int64_t rem = lo;
  for (int d = nd - 1; d >= 0; d--) {
    ix[d] = rem % s->dims[d];
    rem /= s->dims[d];
  }
  for (int k = 0; k < narr; k++) {
    int64_t o = s->base ? s->base[k] : 0;
    for (int d = 0; d < nd; d++) o += ix[d] * s->st[k * nd + d];
    offs[k] = o;
    inner[k] = s->st[k * nd + nd - 1];
  }
  int64_t row = s->dims[nd - 1];
  while (lo < hi) {
    int64_t n = row - ix[nd - 1];
    if (n > hi - lo) n = hi - lo;
    s->fn(s->ctx, n, offs, inner);
    lo += n;
    if (lo >= hi) break;
    /* back to the row start, then step the odometer over the outer dims */
    for (int k = 0; k < narr; k++) offs[k] -= ix[nd - 1] * inner[k];
    ix[nd - 1] = 0;
    for (int d = nd - 2; d >= 0; d--) {
      if (++ix[d] < s->dims[d]) {
        for (int k = 0; k < narr; k++) offs[k] += s->st[k * nd + d];
        break;
      }
      ix[d] = 0;
      for (int k = 0; k < narr; k++) offs[k] -= (s->dims[d] - 1) * s->st[k * nd + d];
    }
  }
  if (ix != idx) free(ix);
}

int lc_iter_runs(int ndim, const int *shape, int narr, const int64_t *const *strides,
                 const int64_t *base_offs, lc_run_fn fn, void *ctx, bool parallel) {
  if (narr < 1 || narr > LC_ITER_MAX_OPERANDS)
    return lc_error("internal: %d operands in one iteration (max %d)", narr,
                    LC_ITER_MAX_OPERANDS);
  int64_t total = 1;
  for (int d = 0; d < ndim; d++) total *= shape[d];
  if (total == 0) return 0;
  int cap = ndim > 0 ? ndim : 1;
  int64_t *mem = malloc(sizeof(int64_t) * (size_t)cap * (size_t)(narr + 1));
  if (!mem) return lc_error("out of memory");
  struct space s = {0, narr, mem, mem + cap, base_offs, fn, ctx};
  /* Drop extent-1 dims, then merge d into its outer neighbour when every
   * operand satisfies stride[outer] == stride[d] * dim[d]. Built outermost
   * first; merging happens against the last kept dim. */
  int nd = 0;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] == 1) continue;
    bool merge = nd > 0;
    for (int k = 0; merge && k < narr; k++)
      if (s.st[k * cap + nd - 1] != strides[k][d] * shape[d]) merge = false;
    if (merge) {
      s.dims[nd - 1] *= shape[d];
      for (int k = 0; k < narr; k++) s.st[k * cap + nd - 1] = strides[k][d];
    } else {
      s.dims[nd] = shape[d];
      for (int k = 0; k < narr; k++) s.st[k * cap + nd] = strides[k][d];
      nd++;
    }
  }
  if (nd == 0) { /* a single element */
    s.dims[0] = 1;
    for (int k = 0; k < narr; k++) s.st[k * cap] = 0;
    nd = 1;
  }
  /* repack strides from row length cap to nd */
  if (nd != cap)
    for (int k = 1; k < narr; k++) memmove(s.st + k * nd, s.st + k * cap, sizeof(int64_t) * (size_t)nd);
  s.nd = nd;
  if (parallel)
    lc_parallel_for(total, LC_PARALLEL_MIN, run_range, &s);
  else
    run_range(&s, 0, total);
  free(mem);
  return 0;
}
