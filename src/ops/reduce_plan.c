#include "ops/reduce_plan.h"

#include "core/error.h"

static int64_t iabs64(int64_t v) { return v < 0 ? -v : v; }

/* Stable insertion sort of dims by decreasing |input stride|. */
static void sort_dims(int n, int64_t *dim, int64_t *in, int64_t *out) {
  for (int i = 1; i < n; i++) {
    int64_t d = dim[i], s = in[i], o = out[i];
    int j = i;
    for (; j > 0 && iabs64(in[j - 1]) < iabs64(s); j--) {
      dim[j] = dim[j - 1];
      in[j] = in[j - 1];
      out[j] = out[j - 1];
    }
    dim[j] = d;
    in[j] = s;
    out[j] = o;
  }
}

/* Merges inner dims into their outer neighbour when both strides allow. */
static int merge_dims(int n, int64_t *dim, int64_t *in, int64_t *out) {
  int m = 0;
  for (int i = 0; i < n; i++) {
    if (m > 0 && in[m - 1] == in[i] * dim[i] && out[m - 1] == out[i] * dim[i]) {
      dim[m - 1] *= dim[i];
      in[m - 1] = in[i];
      out[m - 1] = out[i];
    } else {
      dim[m] = dim[i];
      in[m] = in[i];
      out[m] = out[i];
      m++;
    }
  }
  return m;
}

int lc_rplan_init(struct lc_rplan *p, const struct lc_node *x, const bool *reduced,
                  const int64_t *out_strides, bool sort) {
  if (x->ndim > LC_RPLAN_MAXD)
    return lc_error("arrays with more than %d dimensions are not supported here (got %d)",
                    LC_RPLAN_MAXD, x->ndim);
  p->nk = p->nr = 0;
  p->in_off = x->offset;
  for (int d = 0; d < x->ndim; d++) {
    if (x->shape[d] == 1) continue;
    if (reduced[d]) {
      p->rdim[p->nr] = x->shape[d];
      p->rin[p->nr] = x->strides[d];
      p->rout[p->nr] = out_strides[d];
      p->nr++;
    } else {
      p->kdim[p->nk] = x->shape[d];
      p->kin[p->nk] = x->strides[d];
      p->kout[p->nk] = out_strides[d];
      p->nk++;
    }
  }
  if (sort) {
    sort_dims(p->nk, p->kdim, p->kin, p->kout);
    sort_dims(p->nr, p->rdim, p->rin, p->rout);
  }
  p->nk = merge_dims(p->nk, p->kdim, p->kin, p->kout);
  p->nr = merge_dims(p->nr, p->rdim, p->rin, p->rout);
  p->nout = 1;
  for (int i = 0; i < p->nk; i++) p->nout *= p->kdim[i];
  p->R = 1;
  for (int i = 0; i < p->nr; i++) p->R *= p->rdim[i];
  return 0;
}

void lc_rplan_kept(const struct lc_rplan *p, int64_t o, int64_t *in_off, int64_t *out_off) {
  int64_t io = p->in_off, oo = 0;
  for (int i = p->nk - 1; i >= 0; i--) {
    int64_t ix = o % p->kdim[i];
    o /= p->kdim[i];
    io += ix * p->kin[i];
    oo += ix * p->kout[i];
  }
  *in_off = io;
  *out_off = oo;
}

void lc_rplan_runs(const struct lc_rplan *p, int64_t in_base, int64_t out_base, int64_t lo,
                   int64_t hi, lc_rplan_run_fn fn, void *ctx) {
  if (lo >= hi) return;
  int nr = p->nr;
  if (nr == 0) {
    fn(ctx, in_base, out_base, 1, 0, 0);
    return;
  }
  int64_t ix[LC_RPLAN_MAXD];
  int64_t rem = lo, io = in_base, oo = out_base;
  for (int d = nr - 1; d >= 0; d--) {
    ix[d] = rem % p->rdim[d];
    rem /= p->rdim[d];
    io += ix[d] * p->rin[d];
    oo += ix[d] * p->rout[d];
  }
  int64_t row = p->rdim[nr - 1], is = p->rin[nr - 1], os = p->rout[nr - 1];
  while (lo < hi) {
    int64_t n = row - ix[nr - 1];
    if (n > hi - lo) n = hi - lo;
    fn(ctx, io, oo, n, is, os);
    lo += n;
    if (lo >= hi) break;
    io -= ix[nr - 1] * is;
    oo -= ix[nr - 1] * os;
    ix[nr - 1] = 0;
    for (int d = nr - 2; d >= 0; d--) {
      if (++ix[d] < p->rdim[d]) {
        io += p->rin[d];
        oo += p->rout[d];
        break;
      }
      ix[d] = 0;
      io -= (p->rdim[d] - 1) * p->rin[d];
      oo -= (p->rdim[d] - 1) * p->rout[d];
    }
  }
}

void lc_rplan_reduce_out_strides(int ndim, const int *shape, const bool *reduced,
                                 int64_t *out_strides) {
  int64_t s = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    if (reduced[d]) {
      out_strides[d] = 0;
    } else {
      out_strides[d] = s;
      s *= shape[d] > 0 ? shape[d] : 1;
    }
  }
}
