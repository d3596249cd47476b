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
#include "ops/size.h"
#include "ops/binary.h"
#include "ops/index.h"
#include "ops/scan.h"
#include "ops/shape.h"
#include "ops/softmax.h"
#include "ops/unary.h"
#include "transforms/transforms.h"

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

static int reduce_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                      int nargs, struct lc_node **out);
static int reduce_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out);
static int reduce_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                       struct lc_node **out, int *out_ax);

/* Shapeless replay: the input's extents with the reduced axes set to 1
 * (keepdims: the traced rank equals the input's) or dropped. */
static int reduce_output_shape(const void *params, int nin, struct lc_node *const *in, int ndim,
                               int *shape) {
  const int *p = params;
  const struct lc_node *x = in[0];
  if (nin != 1) return 1;
  bool red[x->ndim > 0 ? x->ndim : 1];
  memset(red, 0, sizeof red);
  for (int i = 0; i < p[2]; i++) {
    if (p[3 + i] >= x->ndim) return 1;
    red[p[3 + i]] = true;
  }
  bool keep = ndim == x->ndim;
  if (!keep && ndim != x->ndim - p[2]) return 1;
  return reduced_shape(x, red, keep, shape) != ndim;
}

const struct lc_prim lc_prim_reduce = {.name = "reduce",
                                       .flags = LC_PF_REDUCE,
                                       .eval_cpu = reduce_eval,
                                       .eval_cuda = LC_CUDA(lc_cuda_eval_reduce),
                                       .describe = reduce_describe,
                                       .vjp = reduce_vjp,
                                       .jvp = reduce_jvp,
                                       .vmap = reduce_vmap,
                                       .output_shape = reduce_output_shape};

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
/* Whether v replaces best in an arg reduction: it is strictly beyond it,
 * or the first NaN (NaN is beyond every number). */
#define FIRST_NAN(v, best) ((v) != (v) && (best) == (best))
#define MAX_WINS(LT, v, best) (LT(best, v) || FIRST_NAN(v, best))
#define MIN_WINS(LT, v, best) (LT(v, best) || FIRST_NAN(v, best))

#define ARG_CB 256

#define ARG_BLOCK 1024

/* One contiguous float32 block of an arg reduction: the extreme over the
 * non-NaN elements through integer keys (vectorised), then, only when it
 * beats *best (a strict comparison: ties keep the earlier index), the first
 * element equal to it. Returns that index, or -1 when *best stands. NaN
 * beats every number: a NaN *best stands, else the block's first NaN wins. */
LC_SIMD_CLONES static int64_t f32_arg_block(const float *x, int64_t n, int kind, float *best) {
  int32_t km, anynan = 0;
  if (kind == ARG_MAX) {
    km = INT32_MIN;
    for (int64_t j = 0; j < n; j++) {
      int32_t b;
      memcpy(&b, &x[j], 4);
      int32_t k = b ^ ((b >> 31) & 0x7fffffff), nanm = -(int32_t)(x[j] != x[j]);
      k = (k & ~nanm) | (INT32_MIN & nanm);
      km = k > km ? k : km;
      anynan |= nanm;
    }
  } else {
    km = INT32_MAX;
    for (int64_t j = 0; j < n; j++) {
      int32_t b;
      memcpy(&b, &x[j], 4);
      int32_t k = b ^ ((b >> 31) & 0x7fffffff), nanm = -(int32_t)(x[j] != x[j]);
      k = (k & ~nanm) | (INT32_MAX & nanm);
      km = k < km ? k : km;
      anynan |= nanm;
    }
  }
  if (*best != *best) return -1;
  if (anynan)
    for (int64_t j = 0; j < n; j++)
      if (x[j] != x[j]) {
        *best = x[j];
        return j;
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
        if (MAX_WINS(LT, v, best)) best = v, idx = pos + i;                               \
      }                                                                                   \
    } else {                                                                              \
      for (int64_t i = 0; i < n; i++) {                                                   \
        C v = lc_ld_##DT(x[i * is]);                                                      \
        if (MIN_WINS(LT, v, best)) best = v, idx = pos + i;                               \
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
          if (MAX_WINS(LT, v, best[j])) best[j] = v, out[j] = (uint32_t)r;                \
        }                                                                                 \
      } else {                                                                            \
        for (int64_t j = 0; j < cn; j++) {                                                \
          C v = lc_ld_##DT(xr[j]);                                                        \
          if (MIN_WINS(LT, v, best[j])) best[j] = v, out[j] = (uint32_t)r;                \
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

/* Indices have no cotangent or tangent (vjp/jvp give zeros, as MLX). vmap:
 * batch first; over one axis the axis shifts by one, over the whole array
 * each example is flattened. */
static int arg_reduce_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                           struct lc_node **out, int *out_ax) {
  const int *p = n->params;
  const char *fn = p[0] == ARG_MAX ? "argmax" : "argmin";
  bool keepdims = n->ndim == n->in[0]->ndim;
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false), *f = NULL, *r = NULL;
  if (!x) return 1;
  if (p[1] >= 0) {
    out[0] = argreduce(fn, p[0], x, p[1] + 1, false, keepdims);
  } else {
    int sh[n->ndim + 2];
    sh[0] = x->shape[0];
    sh[1] = (int)n->in[0]->size;
    if ((f = lc_reshape(x, 2, sh))) r = argreduce(fn, p[0], f, 1, false, false);
    for (int d = 0; d < n->ndim; d++) sh[1 + d] = 1;
    out[0] = r ? lc_reshape(r, n->ndim + 1, sh) : NULL;
  }
  lc_node_release(x);
  lc_node_release(f);
  lc_node_release(r);
  *out_ax = 0;
  return !out[0];
}

/* Shapeless compile: the input's extents without the reduced axis (all of
 * them when axis < 0), or with it set to 1 (keepdims: the traced rank is
 * the input's). Empty inputs are an error the builder reports. */
static int arg_reduce_output_shape(const void *params, int nin, struct lc_node *const *in,
                                   int ndim, int *shape) {
  const int *p = params;
  const struct lc_node *x = in[0];
  if (nin != 1 || x->size == 0) return 1;
  bool keep = ndim == x->ndim;
  if (!keep && ndim != (p[1] < 0 ? 0 : x->ndim - 1)) return 1;
  for (int d = 0, k = 0; d < x->ndim; d++) {
    bool red = p[1] < 0 || d == p[1];
    if (!red)
      shape[k++] = x->shape[d];
    else if (keep)
      shape[k++] = 1;
  }
  return 0;
}

const struct lc_prim lc_prim_arg_reduce = {.name = "arg_reduce",
                                           .flags = LC_PF_REDUCE,
                                           .eval_cpu = arg_reduce_eval,
                                           .eval_cuda = LC_CUDA(lc_cuda_eval_arg_reduce),
                                           .vjp = lc_rule_zero_vjp,
                                           .jvp = lc_rule_zero_jvp,
                                           .vmap = arg_reduce_vmap,
                                           .output_shape = arg_reduce_output_shape};

/* ---- transformation rules ----
 *
 * A REDUCE node keeps or drops its reduced dims (keepdims iff n->ndim ==
 * x->ndim); rules first view cotangents and outputs with the reduced dims
 * kept (extent 1), so they broadcast against the input. Intermediate nodes
 * go into a scope (lc_rule_scope) released at the end of each rule. */

#define TRY(var, expr) LC_RULE_TRY(sc, var, expr)

/* x's shape with extent 1 at the reduced axes of params p. */
static void kept_shape(const struct lc_node *x, const int *p, int *shape) {
  memcpy(shape, x->shape, sizeof(int) * (size_t)x->ndim);
  for (int i = 0; i < p[2]; i++) shape[p[3 + i]] = 1;
}

/* Elements reduced into each output. */
static int64_t reduced_count(const struct lc_node *x, const int *p) {
  int64_t r = 1;
  for (int i = 0; i < p[2]; i++) r *= x->shape[p[3 + i]];
  return r;
}

/* The permutation putting the kept axes first (in order), then the
 * reduced ones (sorted); *nkept receives how many axes are kept. */
static void reduced_last_perm(const struct lc_node *x, const int *p, int *perm, int *nkept) {
  bool red[x->ndim > 0 ? x->ndim : 1];
  memset(red, 0, sizeof red);
  for (int i = 0; i < p[2]; i++) red[p[3 + i]] = true;
  int k = 0;
  for (int d = 0; d < x->ndim; d++)
    if (!red[d]) perm[k++] = d;
  *nkept = k;
  for (int i = 0; i < p[2]; i++) perm[k++] = p[3 + i];
}

/* a (x's shape, or x's with reduced extents 1) transposed so the reduced
 * axes of p come last and flattened into one last axis: (kept..., R). */
static struct lc_node *reduced_to_last(struct lc_node *a, const struct lc_node *x, const int *p) {
  int perm[x->ndim > 0 ? x->ndim : 1], nk;
  reduced_last_perm(x, p, perm, &nk);
  struct lc_node *t = lc_transpose(a, perm);
  if (!t) return NULL;
  int sh[nk + 1];
  for (int i = 0; i < nk; i++) sh[i] = a->shape[perm[i]];
  sh[nk] = (int)reduced_count(a, p);
  struct lc_node *r = lc_reshape(t, nk + 1, sh);
  lc_node_release(t);
  return r;
}

/* The inverse of reduced_to_last: g of shape (kept..., R) back to x's
 * shape and axis order. */
static struct lc_node *reduced_from_last(struct lc_node *g, const struct lc_node *x,
                                         const int *p) {
  int nd = x->ndim > 0 ? x->ndim : 1, perm[nd], inv[nd], sh[nd], nk;
  reduced_last_perm(x, p, perm, &nk);
  for (int i = 0; i < x->ndim; i++) sh[i] = x->shape[perm[i]], inv[perm[i]] = i;
  struct lc_node *r = lc_reshape(g, x->ndim, sh);
  if (!r) return NULL;
  struct lc_node *t = lc_transpose(r, inv);
  lc_node_release(r);
  return t;
}

/* prod: the product of the other elements of each reduced group, from two
 * exclusive cumulative products (exact with zeros in the input). */
static struct lc_node *prod_others(struct lc_node *xf) {
  struct lc_node *a = lc_cumprod(xf, -1, false, false);
  struct lc_node *b = a ? lc_cumprod(xf, -1, true, false) : NULL;
  struct lc_node *r = b ? lc_multiply(a, b) : NULL;
  lc_node_release(a);
  lc_node_release(b);
  return r;
}

/* cot * d var / dx without the cotangent: 2 (x - mean) / max(N - ddof, 0),
 * conjugated for complex input (MLX's var is the mean of d * conj(d));
 * std divides by 2 std. */
static struct lc_node *var_grad(struct lc_node *n, struct lc_node *x, const int *p,
                                const int *kd) {
  struct lc_rule_scope sc = {.n = 0};
  struct lc_node *mu, *d, *dc, *s, *g = NULL, *o, *okd;
  const int *axes = p + 3;
  struct lc_node *cnt, *dd, *zero, *den, *num;
  TRY(mu, lc_mean(x, axes, p[2], true));
  TRY(d, lc_subtract(x, mu));
  TRY(dc, lc_conjugate(d));
  /* max(N - ddof, 0) from the shape at evaluation (shapeless replay) */
  mlx_dtype rt = dc->dtype == MLX_COMPLEX64 ? MLX_FLOAT32 : dc->dtype;
  TRY(cnt, lc_number_of_elements(x, axes, p[2], false, rt));
  TRY(dd, lc_node_new_scalar(rt, (double)p[1]));
  TRY(zero, lc_node_new_scalar(rt, 0.0));
  TRY(num, lc_subtract(cnt, dd));
  TRY(den, lc_maximum(num, zero));
  if (p[0] == LC_RED_VAR) {
    TRY(s, lc_scalar_for(dc, 2.0));
    TRY(o, lc_divide(s, den));
    TRY(g, lc_multiply(dc, o));
  } else {
    TRY(o, lc_divide(dc, den));
    TRY(okd, lc_reshape(n, x->ndim, kd));
    TRY(g, lc_divide(o, okd));
  }
done:;
  struct lc_node *r;
  lc_rule_scope_end(&sc, g, &r);
  return r;
}

static int reduce_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                      int nargs, struct lc_node **out) {
  (void)argnums, (void)nargs;
  const int *p = n->params;
  struct lc_node *x = n->in[0], *g = NULL;
  if (p[0] == LC_RED_AND || p[0] == LC_RED_OR) return 0; /* boolean: no cotangent */
  struct lc_rule_scope sc = {.n = 0};
  struct lc_node *c, *t, *u, *v, *w;
  int kd[x->ndim > 0 ? x->ndim : 1];
  kept_shape(x, p, kd);
  TRY(c, lc_reshape(cot[0], x->ndim, kd));
  switch (p[0]) {
  case LC_RED_SUM: TRY(g, lc_broadcast_to(c, x->ndim, x->shape)); break;
  case LC_RED_MEAN:
    TRY(t, lc_number_of_elements(x, p + 3, p[2], true, c->dtype)); /* 1/N at evaluation */
    TRY(u, lc_multiply(c, t));
    TRY(g, lc_broadcast_to(u, x->ndim, x->shape));
    break;
  case LC_RED_VAR:
  case LC_RED_STD:
    TRY(t, var_grad(n, x, p, kd));
    TRY(g, lc_multiply(c, t));
    break;
  case LC_RED_LSE:
    TRY(t, lc_softmax(x, p + 3, p[2], true));
    TRY(g, lc_multiply(c, t));
    break;
  case LC_RED_MAX:
  case LC_RED_MIN: /* split evenly among the elements equal to the extreme */
    TRY(t, lc_reshape(n, x->ndim, kd));
    TRY(u, lc_equal(x, t));
    TRY(v, lc_sum(u, p + 3, p[2], true));
    TRY(w, lc_divide(c, v));
    TRY(g, lc_multiply(w, u));
    break;
  case LC_RED_PROD:
    TRY(t, reduced_to_last(x, x, p));
    TRY(u, prod_others(t));
    TRY(v, lc_conjugate(u));
    TRY(w, reduced_to_last(c, x, p));
    TRY(t, lc_multiply(v, w));
    TRY(g, reduced_from_last(t, x, p));
    break;
  default: break;
  }
done:
  return lc_rule_scope_end(&sc, g, out);
}

static int reduce_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  const int *p = n->params;
  struct lc_node *x = n->in[0], *g = NULL, *r = NULL;
  if (p[0] == LC_RED_AND || p[0] == LC_RED_OR) return 0;
  struct lc_rule_scope sc = {.n = 0};
  struct lc_node *t, *u, *v, *w;
  int kd[x->ndim > 0 ? x->ndim : 1];
  kept_shape(x, p, kd);
  const int *axes = p + 3;
  switch (p[0]) {
  case LC_RED_SUM: TRY(g, lc_sum(tan[0], axes, p[2], true)); break;
  case LC_RED_MEAN: TRY(g, lc_mean(tan[0], axes, p[2], true)); break;
  case LC_RED_VAR:
  case LC_RED_STD:
    TRY(t, var_grad(n, x, p, kd));
    TRY(u, lc_multiply(tan[0], t));
    TRY(g, lc_sum(u, axes, p[2], true));
    break;
  case LC_RED_LSE:
    TRY(t, lc_softmax(x, axes, p[2], true));
    TRY(u, lc_multiply(tan[0], t));
    TRY(g, lc_sum(u, axes, p[2], true));
    break;
  case LC_RED_MAX:
  case LC_RED_MIN: /* the tangent at the first extreme (MLX) */
    TRY(t, reduced_to_last(x, x, p));
    TRY(u, p[0] == LC_RED_MAX ? lc_argmax(t, -1, true) : lc_argmin(t, -1, true));
    TRY(v, reduced_to_last(tan[0], x, p));
    TRY(g, lc_take_along_axis(v, u, -1));
    break;
  case LC_RED_PROD:
    TRY(t, reduced_to_last(x, x, p));
    TRY(u, prod_others(t));
    TRY(v, reduced_to_last(tan[0], x, p));
    TRY(w, lc_multiply(u, v));
    TRY(g, lc_sum(w, (int[]){-1}, 1, true));
    break;
  default: break;
  }
  TRY(r, lc_reshape(g, n->ndim, n->shape));
done:
  return lc_rule_scope_end(&sc, r, out);
}

/* Batch axis first, reduced axes shifted past it. */
static int reduce_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                       struct lc_node **out, int *out_ax) {
  const int *p = n->params;
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  if (!x) return 1;
  int axes[p[2] > 0 ? p[2] : 1];
  for (int i = 0; i < p[2]; i++) axes[i] = p[3 + i] + 1;
  bool keepdims = n->ndim == n->in[0]->ndim;
  out[0] = lc_reduce(kind_names[p[0]], p[0], x, axes, p[2], keepdims, p[1]);
  lc_node_release(x);
  *out_ax = 0;
  return !out[0];
}
