/* Reduction builders and the REDUCE / ARG_REDUCE primitives. */
#include "ops/reduce.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/iter.h"
#include "core/parallel.h"
#include "ops/dtype_dispatch.h"
#include "ops/elementwise.h"
#include "ops/prim.h"
#include "ops/reduce_math.h"

static const char *const kind_names[LC_RED_NKINDS] = {
    [LC_RED_SUM] = "sum", [LC_RED_PROD] = "prod", [LC_RED_MAX] = "max",
    [LC_RED_MIN] = "min", [LC_RED_AND] = "all",   [LC_RED_OR] = "any",
    [LC_RED_MEAN] = "mean", [LC_RED_VAR] = "var", [LC_RED_STD] = "std",
    [LC_RED_LSE] = "logsumexp"};

int lc_reduce_check_axes(const char *fn, int ndim, const int *axes, int naxes, int *sorted) {
  if (naxes < 0) return lc_error("%s: negative number of axes %d", fn, naxes);
  if (naxes > 0 && !axes) return lc_error("%s: axes is NULL", fn);
  for (int i = 0; i < naxes; i++) {
    int a = axes[i] < 0 ? axes[i] + ndim : axes[i];
    if (a < 0 || a >= ndim)
      return lc_error("%s: axis %d is out of bounds for an array with %d dimensions", fn,
                      axes[i], ndim);
    int j = i;
    for (; j > 0 && sorted[j - 1] > a; j--) sorted[j] = sorted[j - 1];
    if (j > 0 && sorted[j - 1] == a) return lc_error("%s: duplicate axis %d", fn, axes[i]);
    sorted[j] = a;
  }
  return 0;
}

/* The output shape of reducing `a` over the marked dims. */
static int reduced_shape(const struct lc_node *a, const bool *red, bool keepdims, int *shape) {
  int nd = 0;
  for (int d = 0; d < a->ndim; d++) {
    if (!red[d])
      shape[nd++] = a->shape[d];
    else if (keepdims)
      shape[nd++] = 1;
  }
  return nd;
}

struct lc_node *lc_reduce(const char *fn, int kind, struct lc_node *a, const int *axes,
                          int naxes, bool keepdims, int ddof) {
  int cap = naxes > 0 ? naxes : 1, dcap = a->ndim > 0 ? a->ndim : 1;
  if (naxes > a->ndim) {
    lc_error("%s: %d axes given for an array with %d dimensions", fn, naxes, a->ndim);
    return NULL;
  }
  int sorted[cap];
  if (lc_reduce_check_axes(fn, a->ndim, axes, naxes, sorted)) return NULL;
  if (kind == LC_RED_LSE && a->size == 0) {
    lc_error("%s: cannot compute logsumexp of an empty array", fn);
    return NULL;
  }
  if (!lc_rkern_get(kind, a->dtype)) {
    lc_error("%s: %s is not supported for %s", fn, kind_names[kind], lc_dtype_name(a->dtype));
    return NULL;
  }
  if (naxes == 0) { /* MLX's identities for an empty axis list */
    switch (kind) {
    case LC_RED_SUM:
    case LC_RED_PROD:
    case LC_RED_MAX:
    case LC_RED_MIN: return lc_node_retain(a);
    case LC_RED_AND:
    case LC_RED_OR: return lc_astype(a, MLX_BOOL);
    case LC_RED_MEAN: return lc_astype(a, lc_dtype_inexact(a->dtype));
    default: break;
    }
  }
  bool red[dcap];
  memset(red, 0, sizeof red);
  for (int i = 0; i < naxes; i++) red[sorted[i]] = true;
  if (kind == LC_RED_MAX || kind == LC_RED_MIN)
    for (int i = 0; i < naxes; i++)
      if (a->shape[sorted[i]] == 0) {
        lc_error("%s: cannot %s reduce over axis %d with size 0", fn, kind_names[kind],
                 sorted[i]);
        return NULL;
      }
  int shape[dcap];
  int nd = reduced_shape(a, red, keepdims, shape);
  int params[3 + cap];
  params[0] = kind;
  params[1] = (kind == LC_RED_VAR || kind == LC_RED_STD) ? ddof : 0;
  params[2] = naxes;
  memcpy(params + 3, sorted, sizeof(int) * (size_t)naxes);
  return lc_node_new_op(LC_OP_REDUCE, lc_reduce_out_dtype(kind, a->dtype), nd, shape, 1, &a,
                        params, sizeof(int) * (size_t)(3 + naxes));
}

struct lc_node *lc_sum(struct lc_node *a, const int *axes, int naxes, bool keepdims) {
  return lc_reduce("sum", LC_RED_SUM, a, axes, naxes, keepdims, 0);
}
struct lc_node *lc_prod(struct lc_node *a, const int *axes, int naxes, bool keepdims) {
  return lc_reduce("prod", LC_RED_PROD, a, axes, naxes, keepdims, 0);
}
struct lc_node *lc_max(struct lc_node *a, const int *axes, int naxes, bool keepdims) {
  return lc_reduce("max", LC_RED_MAX, a, axes, naxes, keepdims, 0);
}
struct lc_node *lc_min(struct lc_node *a, const int *axes, int naxes, bool keepdims) {
  return lc_reduce("min", LC_RED_MIN, a, axes, naxes, keepdims, 0);
}
struct lc_node *lc_all(struct lc_node *a, const int *axes, int naxes, bool keepdims) {
  return lc_reduce("all", LC_RED_AND, a, axes, naxes, keepdims, 0);
}
struct lc_node *lc_any(struct lc_node *a, const int *axes, int naxes, bool keepdims) {
  return lc_reduce("any", LC_RED_OR, a, axes, naxes, keepdims, 0);
}
struct lc_node *lc_mean(struct lc_node *a, const int *axes, int naxes, bool keepdims) {
  return lc_reduce("mean", LC_RED_MEAN, a, axes, naxes, keepdims, 0);
}
struct lc_node *lc_var(struct lc_node *a, const int *axes, int naxes, bool keepdims, int ddof) {
  return lc_reduce("var", LC_RED_VAR, a, axes, naxes, keepdims, ddof);
}
struct lc_node *lc_std(struct lc_node *a, const int *axes, int naxes, bool keepdims, int ddof) {
  return lc_reduce("std", LC_RED_STD, a, axes, naxes, keepdims, ddof);
}
struct lc_node *lc_logsumexp(struct lc_node *a, const int *axes, int naxes, bool keepdims) {
  return lc_reduce("logsumexp", LC_RED_LSE, a, axes, naxes, keepdims, 0);
}

static int reduce_eval(struct lc_node *n) {
  const int *p = n->params;
  struct lc_node *x = n->in[0];
  if (lc_node_alloc_data(n)) return 1;
  if (n->size == 0) return 0;
  int dcap = x->ndim > 0 ? x->ndim : 1;
  bool red[dcap];
  memset(red, 0, sizeof red);
  for (int i = 0; i < p[2]; i++) red[p[3 + i]] = true;
  int64_t ost[dcap];
  lc_rplan_reduce_out_strides(x->ndim, x->shape, red, ost);
  struct lc_rplan plan;
  if (lc_rplan_init(&plan, x, red, ost, true)) return 1;
  double arg = p[0] == LC_RED_MEAN                        ? 1.0 / (double)plan.R
               : (p[0] == LC_RED_VAR || p[0] == LC_RED_STD) ? (double)p[1]
                                                            : 1.0;
  return lc_reduce_exec(&plan, p[0], x, n, arg);
}

static int reduce_describe(const struct lc_node *n, char *buf, size_t len) {
  const int *p = n->params;
  int w = snprintf(buf, len, "%s axes=(", kind_names[p[0]]);
  for (int i = 0; i < p[2] && w > 0 && (size_t)w < len; i++)
    w += snprintf(buf + w, len - (size_t)w, i ? ",%d" : "%d", p[3 + i]);
  if (w > 0 && (size_t)w < len) snprintf(buf + w, len - (size_t)w, ")");
  return 0;
}

const struct lc_prim lc_prim_reduce = {.name = "reduce",
                                       .flags = LC_PF_REDUCE,
                                       .eval_cpu = reduce_eval,
                                       .describe = reduce_describe};

/* ---- argmax / argmin ---- */

enum { ARG_MAX, ARG_MIN };

static struct lc_node *argreduce(const char *fn, int kind, struct lc_node *a, int axis,
                                 bool all, bool keepdims) {
  if (a->size == 0) {
    lc_error("%s: cannot %s reduce a zero-size array", fn, fn);
    return NULL;
  }
  int dcap = a->ndim > 0 ? a->ndim : 1, shape[dcap], nd = 0;
  if (all) {
    if (keepdims)
      for (; nd < a->ndim; nd++) shape[nd] = 1;
    axis = -1;
  } else {
    if (lc_axis_check(fn, &axis, a->ndim)) return NULL;
    for (int d = 0; d < a->ndim; d++)
      if (d != axis)
        shape[nd++] = a->shape[d];
      else if (keepdims)
        shape[nd++] = 1;
  }
  int params[2] = {kind, axis};
  return lc_node_new_op(LC_OP_ARG_REDUCE, MLX_UINT32, nd, shape, 1, &a, params, sizeof params);
}

struct lc_node *lc_argmax(struct lc_node *a, int axis, bool keepdims) {
  return argreduce("argmax", ARG_MAX, a, axis, false, keepdims);
}
struct lc_node *lc_argmin(struct lc_node *a, int axis, bool keepdims) {
  return argreduce("argmin", ARG_MIN, a, axis, false, keepdims);
}
struct lc_node *lc_argmax_all(struct lc_node *a, bool keepdims) {
  return argreduce("argmax", ARG_MAX, a, 0, true, keepdims);
}
struct lc_node *lc_argmin_all(struct lc_node *a, bool keepdims) {
  return argreduce("argmin", ARG_MIN, a, 0, true, keepdims);
}

static inline bool c64_less(lc_c64 a, lc_c64 b) {
  return crealf(a) < crealf(b) || (crealf(a) == crealf(b) && cimagf(a) < cimagf(b));
}
#define LT_REAL(a, b) ((a) < (b))
#define LT_CPLX(a, b) c64_less(a, b)

#define ARG_CB 256

#define ARG_BLOCK 1024

/* One contiguous float32 block of an arg reduction: the extreme over the
 * non-NaN elements through integer keys (vectorised), then, only when it
 * beats *best (a strict comparison, as MLX's loop), the first element equal
 * to it. Returns that index, or -1 when *best stands. A NaN *best (the
 * line's first element) is never replaced. */
LC_SIMD_CLONES static int64_t f32_arg_block(const float *x, int64_t n, int kind, float *best) {
  int32_t km;
  if (kind == ARG_MAX) {
    km = INT32_MIN;
    for (int64_t j = 0; j < n; j++) {
      int32_t b;
      memcpy(&b, &x[j], 4);
      int32_t k = b ^ ((b >> 31) & 0x7fffffff), nanm = -(int32_t)(x[j] != x[j]);
      k = (k & ~nanm) | (INT32_MIN & nanm);
      km = k > km ? k : km;
    }
  } else {
    km = INT32_MAX;
    for (int64_t j = 0; j < n; j++) {
      int32_t b;
      memcpy(&b, &x[j], 4);
      int32_t k = b ^ ((b >> 31) & 0x7fffffff), nanm = -(int32_t)(x[j] != x[j]);
      k = (k & ~nanm) | (INT32_MAX & nanm);
      km = k < km ? k : km;
    }
  }
  int32_t b = km ^ ((km >> 31) & 0x7fffffff);
  float v;
  memcpy(&v, &b, 4);
  if (!(kind == ARG_MAX ? v > *best : v < *best)) return -1;
  for (int64_t j = 0; j < n; j++)
    if (x[j] == v) {
      *best = v;
      return j;
    }
  return -1;
}

/* Per-output state of a typed arg reduction; runs arrive in logical order. */
#define ARG_DEF(DT, S, C, LT)                                                             \
  struct arg_##DT {                                                                       \
    const S *x;                                                                           \
    C best;                                                                               \
    int64_t pos, idx;                                                                     \
    int kind;                                                                             \
  };                                                                                      \
  static void arg_cb_##DT(void *ctx, int64_t io, int64_t oo, int64_t n, int64_t is,       \
                          int64_t os) {                                                   \
    (void)oo;                                                                             \
    (void)os;                                                                             \
    struct arg_##DT *s = ctx;                                                             \
    const S *x = s->x + io;                                                               \
    C best = s->best;                                                                     \
    int64_t idx = s->idx, pos = s->pos;                                                   \
    if (DT == MLX_FLOAT32 && is == 1) { /* vectorised blocks */                           \
      float fb = (float)best;                                                             \
      for (int64_t i = 0; i < n; i += ARG_BLOCK) {                                        \
        int64_t bn = n - i < ARG_BLOCK ? n - i : ARG_BLOCK;                               \
        int64_t j = f32_arg_block((const float *)(const void *)(x + i), bn, s->kind, &fb); \
        if (j >= 0) idx = pos + i + j;                                                    \
      }                                                                                   \
      s->best = (C)fb;                                                                    \
      s->idx = idx;                                                                       \
      s->pos = pos + n;                                                                   \
      return;                                                                             \
    }                                                                                     \
    if (s->kind == ARG_MAX) {                                                             \
      for (int64_t i = 0; i < n; i++) {                                                   \
        C v = lc_ld_##DT(x[i * is]);                                                      \
        if (LT(best, v)) best = v, idx = pos + i;                                         \
      }                                                                                   \
    } else {                                                                              \
      for (int64_t i = 0; i < n; i++) {                                                   \
        C v = lc_ld_##DT(x[i * is]);                                                      \
        if (LT(v, best)) best = v, idx = pos + i;                                         \
      }                                                                                   \
    }                                                                                     \
    s->best = best;                                                                       \
    s->idx = idx;                                                                         \
    s->pos = pos + n;                                                                     \
  }                                                                                       \
  /* cn adjacent outputs whose lines (L elements, stride rs) start at x: */   \
  static void arg_col_##DT(const S *x, int64_t L, int64_t rs, int64_t cn, uint32_t *out,   \
                           int kind) {                                                    \
    C best[ARG_CB];                                                                       \
    for (int64_t j = 0; j < cn; j++) best[j] = lc_ld_##DT(x[j]), out[j] = 0;              \
    for (int64_t r = 1; r < L; r++) {                                                     \
      const S *xr = x + r * rs;                                                           \
      if (kind == ARG_MAX) {                                                              \
        for (int64_t j = 0; j < cn; j++) {                                                \
          C v = lc_ld_##DT(xr[j]);                                                        \
          if (LT(best[j], v)) best[j] = v, out[j] = (uint32_t)r;                          \
        }                                                                                 \
      } else {                                                                            \
        for (int64_t j = 0; j < cn; j++) {                                                \
          C v = lc_ld_##DT(xr[j]);                                                        \
          if (LT(v, best[j])) best[j] = v, out[j] = (uint32_t)r;                          \
        }                                                                                 \
      }                                                                                   \
    }                                                                                     \
  }                                                                                       \
  static uint32_t arg_one_##DT(const struct lc_rplan *p, const void *x, int64_t io,       \
                               int kind) {                                                \
    struct arg_##DT s = {x, lc_ld_##DT(((const S *)x)[io]), 0, 0, kind};                  \
    lc_rplan_runs(p, io, 0, 0, p->R, arg_cb_##DT, &s);                                    \
    return (uint32_t)s.idx;                                                               \
  }
#define ARG_REAL(DT, S, C) ARG_DEF(DT, S, C, LT_REAL)
LC_FOR_REAL_DTYPES(ARG_REAL)
ARG_DEF(MLX_COMPLEX64, lc_c64, lc_c64, LT_CPLX)

struct arg_exec {
  const struct lc_rplan *p;
  const void *x;
  uint32_t *out;
  mlx_dtype dt;
  int kind;
  int64_t C, nblk; /* column mode: inner kept extent and blocks per row; else 0 */
};

static void arg_tasks(void *ctx, int64_t lo, int64_t hi) {
  const struct arg_exec *e = ctx;
  const struct lc_rplan *p = e->p;
  for (int64_t u = lo; u < hi; u++) {
    int64_t io, oo;
    if (e->C) { /* one reduced dim, outer to a contiguous kept dim */
      int64_t c0 = u % e->nblk * ARG_CB, cn = e->C - c0 < ARG_CB ? e->C - c0 : ARG_CB;
      lc_rplan_kept(p, u / e->nblk * e->C + c0, &io, &oo);
      switch (e->dt) {
#define CASE(DT, S, C)                                                                  \
  case DT:                                                                              \
    arg_col_##DT((const S *)e->x + io, p->rdim[0], p->rin[0], cn, e->out + oo, e->kind); \
    break;
        LC_FOR_DTYPES(CASE)
#undef CASE
      }
      continue;
    }
    lc_rplan_kept(p, u, &io, &oo);
    uint32_t r = 0;
    switch (e->dt) {
#define CASE(DT, S, C) \
  case DT: r = arg_one_##DT(p, e->x, io, e->kind); break;
      LC_FOR_DTYPES(CASE)
#undef CASE
    }
    e->out[oo] = r;
  }
}

static int arg_reduce_eval(struct lc_node *n) {
  const int *p = n->params;
  struct lc_node *x = n->in[0];
  if (lc_node_alloc_data(n)) return 1;
  if (n->size == 0) return 0;
  int dcap = x->ndim > 0 ? x->ndim : 1;
  bool red[dcap];
  for (int d = 0; d < dcap; d++) red[d] = p[1] < 0 || d == p[1];
  int64_t ost[dcap];
  lc_rplan_reduce_out_strides(x->ndim, x->shape, red, ost);
  struct lc_rplan plan;
  if (lc_rplan_init(&plan, x, red, ost, false)) return 1;
  struct arg_exec e = {&plan, x->buf->data, lc_node_data(n), x->dtype, p[0], 0, 0};
  int64_t units = plan.nout, per = plan.R > 0 ? plan.R : 1;
  if (plan.nr == 1 && plan.nk > 0 && plan.rin[0] != 1 && plan.kin[plan.nk - 1] == 1 &&
      plan.kout[plan.nk - 1] == 1 && plan.kdim[plan.nk - 1] >= 8) {
    e.C = plan.kdim[plan.nk - 1];
    e.nblk = (e.C + ARG_CB - 1) / ARG_CB;
    units = plan.nout / e.C * e.nblk;
    per = n->size / units * per;
  }
  lc_parallel_for(units, LC_PARALLEL_MIN / per + 1, arg_tasks, &e);
  return 0;
}

const struct lc_prim lc_prim_arg_reduce = {
    .name = "arg_reduce", .flags = LC_PF_REDUCE, .eval_cpu = arg_reduce_eval};
