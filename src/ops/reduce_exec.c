/* Driving the accumulation kernels over a plan (see reduce.h).
 *
 * Strategy: when the innermost reduced dim is contiguous, or the kept dims
 * have no contiguous inner dim, each output position folds its reduced
 * runs ("row" strategy, rkern run). Otherwise the innermost kept dim is
 * contiguous in input and output: blocks of adjacent output positions are
 * folded together, one contiguous input slice per reduced position
 * ("column" strategy, rkern col), which vectorises across outputs.
 * Work is split over threads by output positions, and, when there are too
 * few of those, also over the reduced range with per-chunk partial
 * accumulators merged at the end. */
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "core/iter.h"
#include "core/parallel.h"
#include "ops/reduce.h"

/* Accumulators per column block: wide enough that each reduced position
 * reads a long contiguous slice (few TLB misses), small enough for L2. */
#define COL_BLOCK 2048

struct exec {
  const struct lc_rplan *p;
  const struct lc_rkern *k;
  const char *x;
  size_t isz, osz;
  char *out;
  mlx_dtype odt;
  double scale;
  int64_t nchunk; /* reduced-range chunks per output (or block) */
  char *partials; /* nchunk accumulators per output/block when nchunk > 1 */
  int64_t C, nblk; /* column strategy: inner kept extent, blocks per row */
};

struct fold {
  const struct exec *e;
  char *acc;
  int64_t cn; /* column strategy: accumulators in the block */
};

static void row_cb(void *ctx, int64_t io, int64_t oo, int64_t n, int64_t is, int64_t os) {
  (void)oo;
  (void)os;
  struct fold *f = ctx;
  f->e->k->run(f->acc, f->e->x + io * (int64_t)f->e->isz, n, is);
}

static void col_cb(void *ctx, int64_t io, int64_t oo, int64_t n, int64_t is, int64_t os) {
  (void)oo;
  (void)os;
  struct fold *f = ctx;
  const struct exec *e = f->e;
  int64_t step = is * (int64_t)e->isz;
  const char *x = e->x + io * (int64_t)e->isz;
  for (int64_t i = 0; i < n; i++) e->k->col(f->acc, x + i * step, f->cn);
}

/* Tasks are (unit, chunk) pairs; a unit is an output position (row) or a
 * block of one (row, C-block) (column). */
static void unit_range(const struct exec *e, int64_t unit, int64_t *io, int64_t *oo, int64_t *cn) {
  if (e->C) {
    int64_t ko = unit / e->nblk, b = unit % e->nblk, c0 = b * COL_BLOCK;
    lc_rplan_kept(e->p, ko * e->C + c0, io, oo);
    *cn = e->C - c0 < COL_BLOCK ? e->C - c0 : COL_BLOCK;
  } else {
    lc_rplan_kept(e->p, unit, io, oo);
    *cn = 1;
  }
}

static void tasks(void *arg, int64_t lo, int64_t hi) {
  const struct exec *e = arg;
  _Alignas(16) char one[LC_RKERN_MAX_ASZ];
  char *local = one;
  if (e->C && e->nchunk == 1) { /* reserved by lc_reduce_exec's probe */
    local = malloc((size_t)COL_BLOCK * e->k->asz);
    if (!local) return;
  }
  for (int64_t t = lo; t < hi; t++) {
    int64_t unit = t / e->nchunk, c = t % e->nchunk, io, oo, cn;
    unit_range(e, unit, &io, &oo, &cn);
    int64_t R = e->p->R, rlo = R * c / e->nchunk, rhi = R * (c + 1) / e->nchunk;
    int64_t width = e->C ? COL_BLOCK : 1;
    char *acc = e->nchunk > 1 ? e->partials + t * width * (int64_t)e->k->asz : local;
    struct fold f = {e, acc, cn};
    e->k->init(acc, cn);
    lc_rplan_runs(e->p, io, 0, rlo, rhi, e->C ? col_cb : row_cb, &f);
    if (e->nchunk == 1) e->k->fin(e->out + oo * (int64_t)e->osz, e->odt, acc, cn, e->scale);
  }
  if (local != one) free(local);
}

int lc_reduce_exec(const struct lc_rplan *p, int kind, const struct lc_node *x,
                   struct lc_node *out, double scale) {
  struct exec e = {.p = p,
                   .k = lc_rkern_get(kind, x->dtype),
                   .x = x->buf->data,
                   .isz = lc_dtype_size(x->dtype),
                   .osz = lc_dtype_size(out->dtype),
                   .out = lc_node_data(out),
                   .odt = out->dtype,
                   .scale = scale,
                   .nchunk = 1};
  if (p->nout == 0) return 0;
  bool col = p->nk > 0 && p->nr > 0 && p->rin[p->nr - 1] != 1 && p->kin[p->nk - 1] == 1 &&
             p->kout[p->nk - 1] == 1;
  int64_t units = p->nout;
  if (col) {
    e.C = p->kdim[p->nk - 1];
    e.nblk = (e.C + COL_BLOCK - 1) / COL_BLOCK;
    units = p->nout / e.C * e.nblk;
  }
  int threads = lc_parallel_threads();
  int64_t work = p->nout * p->R;
  if (threads > 1 && units < 2 * threads && work >= 4 * LC_PARALLEL_MIN) {
    /* too few outputs to share: split the reduced range too */
    int64_t want = 4 * threads / units + 1;
    int64_t maxc = p->R / 1024 > 1 ? p->R / 1024 : 1;
    e.nchunk = want < maxc ? want : maxc;
  }
  int64_t ntask = units * e.nchunk;
  int64_t width = col ? COL_BLOCK : 1;
  if (e.nchunk > 1) {
    e.partials = malloc((size_t)(ntask * width) * e.k->asz);
    if (!e.partials) return lc_error("out of memory");
  } else if (col) { /* per-task accumulators are allocated by the tasks */
    void *probe = malloc((size_t)COL_BLOCK * e.k->asz);
    if (!probe) return lc_error("out of memory");
    free(probe);
  }
  int64_t per_task = work / ntask > 0 ? work / ntask : 1;
  int64_t min_chunk = LC_PARALLEL_MIN / per_task > 0 ? LC_PARALLEL_MIN / per_task : 1;
  lc_parallel_for(ntask, min_chunk, tasks, &e);
  if (e.nchunk > 1) {
    size_t ub = (size_t)width * e.k->asz;
    for (int64_t u = 0; u < units; u++) {
      char *acc = e.partials + (size_t)(u * e.nchunk) * ub;
      int64_t io, oo, cn;
      unit_range(&e, u, &io, &oo, &cn);
      for (int64_t c = 1; c < e.nchunk; c++) e.k->merge(acc, acc + (size_t)c * ub, cn);
      e.k->fin(e.out + oo * (int64_t)e.osz, e.odt, acc, cn, scale);
    }
    free(e.partials);
  }
  return 0;
}
