/* The CPU kernel of row regions: reductions over the last axis fused with
 * their elementwise prologues and epilogues (layout in compile.h).
 *
 * Work units are rows (one index of the outer dims). For each row the
 * region's instructions run in order over the whole row: FULL values are
 * rows of L elements in scratch (L <= LC_FUSE_ROW_MAX when traced, so a few
 * of them stay in cache), ROW values one element in a per-instruction
 * cell; a reduction folds its row with the accumulation kernel of its kind
 * (ops/reduce_kern.h), the same arithmetic as the REDUCE primitive. So a
 * softmax reads each input row from memory once and writes each output row
 * once. Escaping FULL values are copied to their outputs, with
 * non-temporal stores for large outputs. */
#include <stdlib.h>
#include <string.h>

#include "compile/compile.h"
#include "core/error.h"
#include "core/iter.h"
#include "core/parallel.h"
#include "ops/prim.h"
#include "ops/reduce_kern.h"
#include "ops/tuple.h"

#define CELL 16 /* bytes per ROW value */
#define MAXD 64
#define MAXOUT 64

struct rin {
  const char *base; /* element 0, offset applied */
  size_t isz;
  int64_t ost[MAXD]; /* strides over the outer dims */
  int64_t inner;     /* stride along a row: FULL mode only, else 0 */
};

struct rctx {
  const struct lc_fused_hdr *h;
  const struct lc_fused_ins *fi;
  int nouter;
  int64_t odims[MAXD];
  int64_t L, nrows;
  int nin;
  const struct rin *in;
  char *obase[MAXOUT];
  size_t osz[MAXOUT];
  const struct lc_rkern **rk; /* per instruction (reductions) */
  const double *rarg;         /* per instruction: the kernel's fin argument */
  size_t elem;                /* scratch bytes per element: the widest FULL value */
  bool stream;
};

/* One scratch row, a whole number of cache lines (rows stay aligned). */
static size_t row_bytes(const struct rctx *c) {
  return ((size_t)c->L * c->elem + 63) & ~(size_t)63;
}

static size_t scratch_bytes(const struct rctx *c) {
  return row_bytes(c) * (size_t)c->h->nslot + (size_t)CELL * (size_t)c->h->ninstr;
}

static void run_rows(void *arg, int64_t lo, int64_t hi) {
  const struct rctx *c = arg;
  const struct lc_fused_hdr *h = c->h;
  const struct lc_fused_ins *fi = c->fi;
  size_t rb = row_bytes(c);
  char *scratch = aligned_alloc(64, (scratch_bytes(c) + 63) & ~(size_t)63);
  if (!scratch) return; /* the caller probed this allocation */
  char *cells = scratch + rb * (size_t)h->nslot;
  const char *iptr[c->nin > 0 ? c->nin : 1];
  const void *val[h->ninstr];
  for (int64_t r = lo; r < hi; r++) {
    int64_t idx[MAXD], rem = r;
    for (int d = c->nouter - 1; d >= 0; d--) {
      idx[d] = rem % c->odims[d];
      rem /= c->odims[d];
    }
    for (int k = 0; k < c->nin; k++) {
      int64_t off = 0;
      for (int d = 0; d < c->nouter; d++) off += idx[d] * c->in[k].ost[d];
      iptr[k] = c->in[k].base + off * (int64_t)c->in[k].isz;
    }
    for (int m = 0; m < h->ninstr; m++) {
      const struct lc_fused_ins *x = &fi[m];
      bool full = x->kind == LC_FK_FULL, reads_full = full || x->op == LC_OP_REDUCE;
      void *out = full ? scratch + rb * (size_t)x->slot : cells + (size_t)CELL * (size_t)m;
      const void *a[LC_FUSED_MAXARG];
      int64_t as[LC_FUSED_MAXARG];
      for (int k = 0; k < x->nin; k++) {
        int g = x->arg[k];
        if (g < 0) {
          a[k] = iptr[-g - 1];
          as[k] = reads_full ? c->in[-g - 1].inner : 0;
        } else {
          a[k] = val[g];
          as[k] = fi[g].kind == LC_FK_FULL ? 1 : 0; /* a ROW value repeats along the row */
        }
      }
      if (x->op == LC_OP_REDUCE) {
        _Alignas(16) char acc[LC_RKERN_MAX_ASZ];
        const struct lc_rkern *k = c->rk[m];
        k->init(acc, 1);
        k->run(acc, a[0], c->L, as[0]);
        k->fin(out, (mlx_dtype)x->dtype, acc, 1, c->rarg[m]);
      } else {
        const void *params = x->params_size ? (const char *)h + x->params_off : NULL;
        lc_prims[x->op]->ew(full ? c->L : 1, out, (mlx_dtype)x->dtype, a, as,
                            (mlx_dtype)x->in_dt, params);
      }
      val[m] = out;
      if (x->out >= 0) {
        size_t osz = c->osz[x->out];
        if (full)
          lc_fused_copy_out(c->obase[x->out] + (size_t)(r * c->L) * osz, out,
                            (size_t)c->L * osz, c->stream);
        else
          memcpy(c->obase[x->out] + (size_t)r * osz, out, osz);
      }
    }
  }
  lc_fused_stream_done(c->stream);
  free(scratch);
}

int lc_fused_eval_rows(struct lc_node *n) {
  const struct lc_fused_hdr *h = n->params;
  int nd = h->ndim;
  if (nd < 1 || nd > MAXD || h->nout > MAXOUT || n->nin != h->nin)
    return lc_error("internal: malformed fused row kernel");
  const int32_t *F = lc_fused_shape(h);
  const struct lc_fused_in *fin = lc_fused_ins_in(h);
  const struct lc_fused_out *fo = lc_fused_outs(h);
  struct rctx c = {.h = h, .fi = lc_fused_instrs(h), .nouter = nd - 1, .L = F[nd - 1],
                   .nrows = 1, .nin = h->nin};
  for (int d = 0; d < nd - 1; d++) {
    c.odims[d] = F[d];
    c.nrows *= F[d];
  }
  if (lc_node_alloc_data(n)) return 1;
  int64_t nbytes[MAXOUT], offs[MAXOUT], full_bytes = 0;
  for (int k = 0; k < h->nout; k++) {
    c.osz[k] = lc_dtype_size((mlx_dtype)fo[k].dtype);
    nbytes[k] = (fo[k].kind == LC_FK_FULL ? c.nrows * c.L : c.nrows) * (int64_t)c.osz[k];
    if (fo[k].kind == LC_FK_FULL) full_bytes += nbytes[k];
  }
  if (h->nout == 1) {
    c.obase[0] = (char *)lc_node_data(n);
  } else {
    lc_tuple_layout(h->nout, nbytes, offs);
    for (int k = 0; k < h->nout; k++) c.obase[k] = (char *)n->buf->data + offs[k];
  }
  if (c.nrows == 0) return 0;
  if (c.L == 0) return lc_error("compiled reduction over an empty axis");
  c.stream = lc_fused_want_stream(full_bytes);
  /* inputs: broadcast strides against the shape of their mode */
  struct rin ins[h->nin > 0 ? h->nin : 1];
  for (int k = 0; k < h->nin; k++) {
    const struct lc_node *x = n->in[k];
    int T[MAXD], tnd = lc_fused_kind_shape(fin[k].mode, nd, F, T);
    if (x->ndim > tnd) return lc_error("internal: fused row input of rank %d", x->ndim);
    int64_t st[MAXD];
    lc_node_broadcast_strides(x, tnd, st);
    struct rin *f = &ins[k];
    f->base = (const char *)lc_node_data(x);
    f->isz = lc_dtype_size(x->dtype);
    for (int d = 0; d < nd - 1; d++) f->ost[d] = st[d];
    f->inner = fin[k].mode == LC_FK_FULL ? st[nd - 1] : 0;
  }
  c.in = ins;
  const struct lc_rkern *rk[h->ninstr];
  double rarg[h->ninstr];
  for (int m = 0; m < h->ninstr; m++) {
    const struct lc_fused_ins *x = &c.fi[m];
    rk[m] = NULL;
    rarg[m] = 1.0;
    if (x->op != LC_OP_REDUCE) continue;
    const int *q = (const int *)(const void *)((const char *)h + x->params_off);
    rk[m] = lc_rkern_get(q[0], (mlx_dtype)x->in_dt);
    if (!rk[m]) return lc_error("internal: no reduction kernel in a fused row kernel");
    if (q[0] == LC_RED_MEAN) rarg[m] = 1.0 / (double)c.L;
    if (q[0] == LC_RED_VAR || q[0] == LC_RED_STD) rarg[m] = (double)q[1];
  }
  c.rk = rk;
  c.rarg = rarg;
  c.elem = 1;
  for (int m = 0; m < h->ninstr; m++)
    if (c.fi[m].kind == LC_FK_FULL && lc_dtype_size((mlx_dtype)c.fi[m].dtype) > c.elem)
      c.elem = lc_dtype_size((mlx_dtype)c.fi[m].dtype);
  void *probe = aligned_alloc(64, (scratch_bytes(&c) + 63) & ~(size_t)63);
  if (!probe) return lc_error("out of memory");
  free(probe);
  int64_t min_rows = LC_PARALLEL_MIN / c.L;
  lc_parallel_for(c.nrows, min_rows > 0 ? min_rows : 1, run_rows, &c);
  return 0;
}
