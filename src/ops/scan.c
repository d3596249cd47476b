/* The SCAN primitive (see scan.h).
 * Lines along the axis are scanned either one at a time (the axis is the
 * input's inner dimension) or in blocks of adjacent lines advanced together
 * (the axis is outer: each step reads one contiguous slice), which keeps
 * memory access sequential either way. */
#include "ops/scan.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/iter.h"
#include "core/parallel.h"
#include "ops/dtype_dispatch.h"
#include "ops/elementwise.h"
#include "ops/prim.h"
#include "ops/reduce_math.h"
#include "ops/reduce_plan.h"
#include "ops/binary.h"
#include "ops/creation.h"
#include "ops/index.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/unary.h"
#include "transforms/transforms.h"

#define SCAN_BLOCK 256

typedef void (*scan_fn)(const void *x, int64_t xs, int64_t xj, void *out, int64_t os,
                        int64_t oj, int64_t L, int64_t C, bool rev, bool incl);

#define OP_MAXF(a, b) (((b) > (a) || (b) != (b)) ? (b) : (a))
#define OP_MINF(a, b) (((b) < (a) || (b) != (b)) ? (b) : (a))
#define OP_LAE(a, b) logaddexp(a, b)

static inline double logaddexp(double a, double b) {
  if (isnan(a) || isnan(b)) return NAN;
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  if (a == b) return a + M_LN2;
  double m = a > b ? a : b, d = a > b ? b - a : a - b;
  return m + log1p(exp(d));
}

/* K kind tag, DT dtype, S input storage, A accumulator, LD load, OP combine,
 * INIT identity, SO output storage, ST output store macro. */
#define SCAN_DEF(K, DT, S, A, LD, OP, INIT, SO, ST)                                        \
  static void scan_##K##_##DT(const void *xv, int64_t xs, int64_t xj, void *ov, int64_t os, \
                              int64_t oj, int64_t L, int64_t C, bool rev, bool incl) {     \
    const S *x = xv;                                                                       \
    SO *o = ov;                                                                            \
    if (C == 1) { /* one line: a plain sequential loop */                                 \
      A a = (INIT);                                                                        \
      int64_t k = rev ? L - 1 : 0, step = rev ? -1 : 1;                                    \
      if (incl)                                                                            \
        for (int64_t t = 0; t < L; t++, k += step) {                                       \
          a = OP(a, LD(x[k * xs]));                                                        \
          o[k * os] = ST(a);                                                               \
        }                                                                                  \
      else                                                                                 \
        for (int64_t t = 0; t < L; t++, k += step) {                                       \
          o[k * os] = ST(a);                                                               \
          a = OP(a, LD(x[k * xs]));                                                        \
        }                                                                                  \
      return;                                                                              \
    }                                                                                      \
    A acc[SCAN_BLOCK];                                                                     \
    for (int64_t j0 = 0; j0 < C; j0 += SCAN_BLOCK) {                                       \
      int64_t cn = C - j0 < SCAN_BLOCK ? C - j0 : SCAN_BLOCK;                              \
      for (int64_t j = 0; j < cn; j++) acc[j] = (INIT);                                    \
      for (int64_t t = 0; t < L; t++) {                                                    \
        int64_t k = rev ? L - 1 - t : t;                                                   \
        const S *xk = x + k * xs + j0 * xj;                                                \
        SO *ok = o + k * os + j0 * oj;                                                     \
        if (incl)                                                                          \
          for (int64_t j = 0; j < cn; j++) {                                               \
            acc[j] = OP(acc[j], LD(xk[j * xj]));                                           \
            ok[j * oj] = ST(acc[j]);                                                       \
          }                                                                                \
        else                                                                               \
          for (int64_t j = 0; j < cn; j++) {                                               \
            ok[j * oj] = ST(acc[j]);                                                       \
            acc[j] = OP(acc[j], LD(xk[j * xj]));                                           \
          }                                                                                \
      }                                                                                    \
    }                                                                                      \
  }


/* sum/prod rows: X(DT, S, A, LD, SO, ST) */
#define SUM_ROWS(X)                                                           \
  X(MLX_BOOL, bool, uint32_t, LD_U32, int32_t, lc_st_MLX_INT32)               \
  X(MLX_UINT8, uint8_t, uint32_t, LD_U32, uint8_t, lc_st_MLX_UINT8)           \
  X(MLX_UINT16, uint16_t, uint32_t, LD_U32, uint16_t, lc_st_MLX_UINT16)       \
  X(MLX_UINT32, uint32_t, uint32_t, LD_U32, uint32_t, lc_st_MLX_UINT32)       \
  X(MLX_UINT64, uint64_t, uint64_t, LD_U64, uint64_t, lc_st_MLX_UINT64)       \
  X(MLX_INT8, int8_t, uint32_t, LD_U32, int8_t, lc_st_MLX_INT8)               \
  X(MLX_INT16, int16_t, uint32_t, LD_U32, int16_t, lc_st_MLX_INT16)           \
  X(MLX_INT32, int32_t, uint32_t, LD_U32, int32_t, lc_st_MLX_INT32)           \
  X(MLX_INT64, int64_t, uint64_t, LD_U64, int64_t, lc_st_MLX_INT64)           \
  X(MLX_FLOAT16, uint16_t, float, LD_F16, uint16_t, lc_st_MLX_FLOAT16)        \
  X(MLX_FLOAT32, float, double, LD_D, float, lc_st_MLX_FLOAT32)               \
  X(MLX_FLOAT64, double, double, LD_D, double, lc_st_MLX_FLOAT64)             \
  X(MLX_BFLOAT16, uint16_t, float, LD_BF16, uint16_t, lc_st_MLX_BFLOAT16)     \
  X(MLX_COMPLEX64, lc_c64, lc_c64, LD_ID, lc_c64, lc_st_MLX_COMPLEX64)


#define DEF_SUM(DT, S, A, LD, SO, ST)                  \
  SCAN_DEF(sum, DT, S, A, LD, OP_ADD, (A)0, SO, ST)    \
  SCAN_DEF(prod, DT, S, A, LD, OP_MUL, (A)1, S, lc_st_##DT)
SUM_ROWS(DEF_SUM)

#define DEF_MINMAX(DT, S, A, LD, LO, HI, MAXOP, MINOP)     \
  SCAN_DEF(max, DT, S, A, LD, MAXOP, LO, S, lc_st_##DT)   \
  SCAN_DEF(min, DT, S, A, LD, MINOP, HI, S, lc_st_##DT)
MINMAX_ROWS(DEF_MINMAX)

SCAN_DEF(lae, MLX_FLOAT16, uint16_t, double, LD_F16D, OP_LAE, -INFINITY, uint16_t,
         lc_st_MLX_FLOAT16)
SCAN_DEF(lae, MLX_BFLOAT16, uint16_t, double, LD_BF16D, OP_LAE, -INFINITY, uint16_t,
         lc_st_MLX_BFLOAT16)
SCAN_DEF(lae, MLX_FLOAT32, float, double, LD_D, OP_LAE, -INFINITY, float, lc_st_MLX_FLOAT32)
SCAN_DEF(lae, MLX_FLOAT64, double, double, LD_D, OP_LAE, -INFINITY, double, lc_st_MLX_FLOAT64)

#define TAB_SUM(DT, S, A, LD, SO, ST) [DT] = scan_sum_##DT,
#define TAB_PROD(DT, S, A, LD, SO, ST) [DT] = scan_prod_##DT,
#define TAB_MAX(DT, S, A, LD, LO, HI, MX, MN) [DT] = scan_max_##DT,
#define TAB_MIN(DT, S, A, LD, LO, HI, MX, MN) [DT] = scan_min_##DT,
static const scan_fn table[5][LC_NDTYPES] = {
    [LC_SCAN_SUM] = {SUM_ROWS(TAB_SUM)},
    [LC_SCAN_PROD] = {SUM_ROWS(TAB_PROD)},
    [LC_SCAN_MAX] = {MINMAX_ROWS(TAB_MAX)},
    [LC_SCAN_MIN] = {MINMAX_ROWS(TAB_MIN)},
    [LC_SCAN_LOGADDEXP] = {[MLX_FLOAT16] = scan_lae_MLX_FLOAT16,
                           [MLX_BFLOAT16] = scan_lae_MLX_BFLOAT16,
                           [MLX_FLOAT32] = scan_lae_MLX_FLOAT32,
                           [MLX_FLOAT64] = scan_lae_MLX_FLOAT64},
};

static const char *const kind_names[5] = {"cumsum", "cumprod", "cummax", "cummin",
                                          "logcumsumexp"};

struct lc_node *lc_scan(const char *fn, int kind, struct lc_node *a, int axis, bool reverse,
                        bool inclusive) {
  if (kind < 0 || kind > LC_SCAN_LOGADDEXP) {
    lc_error("%s: invalid scan kind %d", fn, kind);
    return NULL;
  }
  int ax = axis;
  if (lc_axis_check(fn, &ax, a->ndim)) return NULL;
  struct lc_node *x = lc_node_retain(a);
  if (kind == LC_SCAN_LOGADDEXP && !lc_dtype_is_inexact(a->dtype)) {
    lc_node_release(x);
    if (!(x = lc_astype(a, MLX_FLOAT32))) return NULL;
  }
  if (!table[kind][x->dtype]) {
    lc_error("%s: %s is not supported for %s", fn, kind_names[kind], lc_dtype_name(x->dtype));
    lc_node_release(x);
    return NULL;
  }
  mlx_dtype odt = kind == LC_SCAN_SUM && x->dtype == MLX_BOOL ? MLX_INT32 : x->dtype;
  int params[4] = {kind, ax, reverse, inclusive};
  struct lc_node *r =
      lc_node_new_op(LC_OP_SCAN, odt, x->ndim, x->shape, 1, &x, params, sizeof params);
  lc_node_release(x);
  return r;
}

struct lc_node *lc_cumsum(struct lc_node *a, int axis, bool reverse, bool inclusive) {
  return lc_scan("cumsum", LC_SCAN_SUM, a, axis, reverse, inclusive);
}
struct lc_node *lc_cumprod(struct lc_node *a, int axis, bool reverse, bool inclusive) {
  return lc_scan("cumprod", LC_SCAN_PROD, a, axis, reverse, inclusive);
}
struct lc_node *lc_cummax(struct lc_node *a, int axis, bool reverse, bool inclusive) {
  return lc_scan("cummax", LC_SCAN_MAX, a, axis, reverse, inclusive);
}
struct lc_node *lc_cummin(struct lc_node *a, int axis, bool reverse, bool inclusive) {
  return lc_scan("cummin", LC_SCAN_MIN, a, axis, reverse, inclusive);
}
struct lc_node *lc_logcumsumexp(struct lc_node *a, int axis, bool reverse, bool inclusive) {
  return lc_scan("logcumsumexp", LC_SCAN_LOGADDEXP, a, axis, reverse, inclusive);
}

struct scan_exec {
  const struct lc_rplan *p;
  scan_fn f;
  const char *x;
  char *out;
  size_t isz, osz;
  int64_t L, xs, os;   /* along the axis */
  int64_t C, xj, oj;   /* lines advanced together (block strategy), else C = 1 */
  int64_t nblk;
  bool rev, incl;
};

static void scan_tasks(void *ctx, int64_t lo, int64_t hi) {
  const struct scan_exec *e = ctx;
  for (int64_t u = lo; u < hi; u++) {
    int64_t line = u, cn = 1, io, oo;
    if (e->C > 1) {
      int64_t b = u % e->nblk, c0 = b * SCAN_BLOCK;
      line = u / e->nblk * e->C + c0;
      cn = e->C - c0 < SCAN_BLOCK ? e->C - c0 : SCAN_BLOCK;
    }
    lc_rplan_kept(e->p, line, &io, &oo);
    e->f(e->x + io * (int64_t)e->isz, e->xs, e->xj, e->out + oo * (int64_t)e->osz, e->os,
         e->oj, e->L, cn, e->rev, e->incl);
  }
}

static int scan_eval(struct lc_node *n) {
  const int *p = n->params;
  struct lc_node *x = n->in[0];
  if (lc_node_alloc_data(n)) return 1;
  if (n->size == 0) return 0;
  int nd = x->ndim;
  bool red[nd];
  for (int d = 0; d < nd; d++) red[d] = d == p[1];
  int64_t ost[nd];
  lc_shape_strides(nd, n->shape, ost);
  struct lc_rplan plan;
  if (lc_rplan_init(&plan, x, red, ost, true)) return 1;
  struct scan_exec e = {.p = &plan,
                        .f = table[p[0]][x->dtype],
                        .x = x->buf->data,
                        .out = n->buf->data,
                        .isz = lc_dtype_size(x->dtype),
                        .osz = lc_dtype_size(n->dtype),
                        .L = plan.nr ? plan.rdim[0] : 1,
                        .xs = plan.nr ? plan.rin[0] : 0,
                        .os = plan.nr ? plan.rout[0] : 0,
                        .C = 1,
                        .rev = p[2],
                        .incl = p[3]};
  int64_t units = plan.nout;
  if (plan.nk > 0 && plan.kdim[plan.nk - 1] > 1 && e.xs != 1 &&
      llabs(plan.kin[plan.nk - 1]) < llabs(e.xs)) {
    e.C = plan.kdim[plan.nk - 1];
    e.xj = plan.kin[plan.nk - 1];
    e.oj = plan.kout[plan.nk - 1];
    e.nblk = (e.C + SCAN_BLOCK - 1) / SCAN_BLOCK;
    units = plan.nout / e.C * e.nblk;
  }
  int64_t per = n->size / units;
  lc_parallel_for(units, LC_PARALLEL_MIN / (per > 0 ? per : 1) + 1, scan_tasks, &e);
  return 0;
}


/* ---- transformation rules ----
 * Notation: a scan combines, at position k, the elements of its window
 * W(k) along the axis (j <= k, or j < k when exclusive; mirrored when
 * reversed). The transpose of a cumsum is the cumsum in the other
 * direction with the same inclusivity. Intermediate nodes go into a small
 * scope released at the end of each rule. */

#define TRY(var, expr) LC_RULE_TRY(sc, var, expr)

/* The dtype's lowest finite value (MLX's finfo.min), standing for log 0
 * in the log-domain split of logcumsumexp's rules. */
static double lowest_finite(mlx_dtype t) {
  switch (t) {
  case MLX_FLOAT16: return -65504.0;
  case MLX_BFLOAT16: return -3.3895313892515355e38;
  case MLX_FLOAT32: return -FLT_MAX;
  default: return -DBL_MAX;
  }
}

/* For each position of the scan's output whose value comes from an input
 * element, the index along the axis of that element (the latest one in
 * scan order among ties): where the input equals the inclusive running
 * extreme, a running max (min when reversed) of the index. Exclusive scans
 * use the input without its last element in scan order against the output
 * without its first (which holds the identity), so the result is one
 * shorter along the axis. Index values are uint32, cut from the gradient. */
static struct lc_node *extreme_owner(struct lc_node *n, int axis, bool rev, bool incl) {
  struct lc_rule_scope sc = {.n = 0};
  struct lc_node *x = n->in[0], *xw = x, *ew = n, *io, *iota, *fill, *eq, *m, *own, *u32,
                 *r = NULL;
  int L = x->shape[axis], lo = incl || !rev ? 0 : 1, hi = incl || rev ? L : L - 1;
  int ish[x->ndim];
  for (int d = 0; d < x->ndim; d++) ish[d] = d == axis ? hi - lo : 1;
  if (!incl) {
    TRY(xw, lc_slice_axis(x, axis, lo, hi));
    TRY(ew, lc_slice_axis(n, axis, rev ? 0 : 1, rev ? L - 1 : L));
  }
  TRY(io, lc_arange(lo, hi, 1, MLX_INT32));
  TRY(iota, lc_reshape(io, x->ndim, ish));
  TRY(fill, lc_node_new_scalar(MLX_INT32, rev ? L : -1));
  TRY(eq, lc_equal(xw, ew));
  TRY(m, lc_where(eq, iota, fill));
  TRY(own, rev ? lc_cummin(m, axis, true, true) : lc_cummax(m, axis, false, true));
  TRY(u32, lc_astype(own, MLX_UINT32));
  TRY(r, lc_stop_gradient(u32));
done:;
  struct lc_node *o;
  lc_rule_scope_end(&sc, r, &o);
  return o;
}

/* cumprod's masks: *eqz where the inclusive product is zero, *first at
 * the first zero of each line (inclusive zero, exclusive not), *c1 the
 * scan of x with that first zero replaced by one. Scope-owned. */
static int prod_zero_parts(struct lc_rule_scope *s, struct lc_node *n, const int *p, struct lc_node **eqz,
                           struct lc_node **first, struct lc_node **c1) {
  struct lc_node *x = n->in[0];
  int axis = p[1];
  bool rev = p[2], incl = p[3];
  struct lc_node *other = lc_rule_keep(s, lc_cumprod(x, axis, rev, !incl));
  struct lc_node *inc = incl ? n : other, *exc = incl ? other : n;
  struct lc_node *z = other ? lc_rule_keep(s, lc_node_new_scalar(x->dtype, 0)) : NULL;
  struct lc_node *one = z ? lc_rule_keep(s, lc_node_new_scalar(x->dtype, 1)) : NULL;
  struct lc_node *nz = one ? lc_rule_keep(s, lc_not_equal(exc, z)) : NULL;
  *eqz = nz ? lc_rule_keep(s, lc_equal(inc, z)) : NULL;
  *first = *eqz ? lc_rule_keep(s, lc_logical_and(*eqz, nz)) : NULL;
  struct lc_node *x1 = *first ? lc_rule_keep(s, lc_where(*first, one, x)) : NULL;
  *c1 = x1 ? lc_rule_keep(s, lc_cumprod(x1, axis, rev, incl)) : NULL;
  return *c1 == NULL;
}

static int scan_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                    int nargs, struct lc_node **out) {
  (void)argnums, (void)nargs;
  const int *p = n->params;
  int axis = p[1];
  bool rev = p[2], incl = p[3];
  struct lc_node *x = n->in[0], *c = cot[0], *g = NULL;
  if (x->size == 0 || (!incl && x->shape[axis] < 2)) return 0; /* nothing depends on x */
  struct lc_rule_scope sc = {.n = 0};
  struct lc_node *a, *b, *d, *e, *f, *h, *k;
  switch (p[0]) {
  case LC_SCAN_SUM: TRY(g, lc_cumsum(c, axis, !rev, incl)); break;
  case LC_SCAN_PROD: {
    /* before the first zero: sum over later outputs of c_k y_k / x_j; at
     * it: the same with that zero replaced by one; after it: zero */
    struct lc_node *eqz, *first, *c1;
    if (prod_zero_parts(&sc, n, p, &eqz, &first, &c1)) goto done;
    TRY(a, lc_multiply(c1, c));
    TRY(b, lc_cumsum(a, axis, !rev, incl));
    TRY(d, lc_multiply(n, c));
    TRY(e, lc_cumsum(d, axis, !rev, incl));
    TRY(f, lc_divide(e, x));
    TRY(h, lc_zeros_like(f));
    TRY(k, lc_where(eqz, h, f));
    TRY(g, lc_where(first, b, k));
    break;
  }
  case LC_SCAN_MAX:
  case LC_SCAN_MIN: /* each cotangent goes to the element holding the extreme */
    TRY(a, extreme_owner(n, axis, rev, incl));
    if (!incl) {
      int L = x->shape[axis];
      TRY(c, lc_slice_axis(c, axis, rev ? 0 : 1, rev ? L - 1 : L));
    }
    TRY(b, lc_zeros_like(x));
    TRY(g, lc_scatter_axis(b, a, c, axis, LC_SCATTER_ADD));
    break;
  case LC_SCAN_LOGADDEXP: {
    /* g_j = sum over later k of c_k exp(x_j - y_k), with c split by sign
     * so that each part is an exp of a logcumsumexp */
    struct lc_node *zero, *low, *la, *part[2];
    TRY(zero, lc_node_new_scalar(c->dtype, 0));
    TRY(low, lc_node_new_scalar(c->dtype, lowest_finite(c->dtype)));
    TRY(a, lc_abs(c));
    TRY(la, lc_log(a));
    for (int sgn = 0; sgn < 2; sgn++) {
      TRY(b, sgn ? lc_less(c, zero) : lc_greater(c, zero));
      TRY(d, lc_where(b, la, low));
      TRY(e, lc_subtract(d, n));
      TRY(f, lc_logcumsumexp(e, axis, !rev, incl));
      TRY(h, lc_add(f, x));
      TRY(part[sgn], lc_exp(h));
    }
    TRY(g, lc_subtract(part[0], part[1]));
    break;
  }
  default: break;
  }
done:
  return lc_rule_scope_end(&sc, g, out);
}

/* jvp: MLX has it for cumsum only; the others follow from the same
 * decompositions as their vjps. */
static int scan_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  const int *p = n->params;
  int axis = p[1];
  bool rev = p[2], incl = p[3];
  struct lc_node *x = n->in[0], *t = tan[0], *g = NULL;
  if (x->size == 0 || (!incl && x->shape[axis] < 2)) return 0;
  struct lc_rule_scope sc = {.n = 0};
  struct lc_node *a, *b, *d, *e, *f, *h, *k;
  switch (p[0]) {
  case LC_SCAN_SUM: TRY(g, lc_cumsum(t, axis, rev, incl)); break;
  case LC_SCAN_PROD: {
    /* windows without a zero: y_k * scan-sum of t/x; windows with one
     * (y_k == 0): t at the first zero times the product of the others */
    struct lc_node *eqz, *first, *c1, *zero;
    if (prod_zero_parts(&sc, n, p, &eqz, &first, &c1)) goto done;
    TRY(zero, lc_zeros_like(t));
    TRY(a, lc_where(first, t, zero));
    TRY(b, lc_sum(a, &axis, 1, true));
    TRY(d, lc_multiply(b, c1));
    TRY(e, lc_divide(t, x));
    TRY(f, lc_cumsum(e, axis, rev, incl));
    TRY(h, lc_multiply(n, f));
    TRY(k, lc_equal(n, zero));
    TRY(g, lc_where(k, d, h));
    break;
  }
  case LC_SCAN_MAX:
  case LC_SCAN_MIN: /* the tangent of the element holding the extreme */
    TRY(a, extreme_owner(n, axis, rev, incl));
    TRY(b, lc_take_along_axis(t, a, axis));
    if (incl) {
      g = b;
    } else { /* the identity position has a zero tangent */
      int lo = rev ? 0 : 1, hi = rev ? 1 : 0;
      TRY(g, lc_pad(b, 1, &axis, &lo, &hi, NULL, LC_PAD_CONSTANT));
    }
    break;
  case LC_SCAN_LOGADDEXP: {
    /* dy_k = sum over W(k) of t_j exp(x_j - y_k), t split by sign; an
     * output at -inf (the exclusive identity) has a zero tangent */
    struct lc_node *zero, *low, *la, *part[2];
    TRY(zero, lc_node_new_scalar(t->dtype, 0));
    TRY(low, lc_node_new_scalar(t->dtype, lowest_finite(t->dtype)));
    TRY(a, lc_abs(t));
    TRY(la, lc_log(a));
    for (int sgn = 0; sgn < 2; sgn++) {
      TRY(b, sgn ? lc_less(t, zero) : lc_greater(t, zero));
      TRY(d, lc_where(b, la, low));
      TRY(e, lc_add(d, x));
      TRY(f, lc_logcumsumexp(e, axis, rev, incl));
      TRY(h, lc_subtract(f, n));
      TRY(part[sgn], lc_exp(h));
    }
    TRY(a, lc_subtract(part[0], part[1]));
    TRY(b, lc_isneginf(n));
    TRY(d, lc_zeros_like(a));
    TRY(g, lc_where(b, d, a));
    break;
  }
  default: break;
  }
done:
  return lc_rule_scope_end(&sc, g, out);
}

/* Batch axis first, scan axis shifted past it. */
static int scan_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                     struct lc_node **out, int *out_ax) {
  const int *p = n->params;
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  if (!x) return 1;
  out[0] = lc_scan(kind_names[p[0]], p[0], x, p[1] + 1, p[2], p[3]);
  lc_node_release(x);
  *out_ax = 0;
  return !out[0];
}

const struct lc_prim lc_prim_scan = {.name = "scan",
                                     .eval_cpu = scan_eval,
                                     .eval_cuda = LC_CUDA(lc_cuda_eval_scan),
                                     .vjp = scan_vjp,
                                     .jvp = scan_jvp,
                                     .vmap = scan_vmap,
                                     .output_shape = lc_prim_shape_of_input0};
