/* The SORT primitive (see sort.h).
 * Each line along the axis is gathered into (value, index) pairs in the
 * compute type (float16/bfloat16 as float, exact), ordered by the total
 * order "value (NaN last), then index", then written out. Sorting is a
 * bottom-up merge sort (insertion-sorted runs of 16); partition and topk use
 * quickselect (median of three) on the same order. */
#include "ops/sort.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/iter.h"
#include "core/parallel.h"
#include "ops/dtype_dispatch.h"
#include "ops/prim.h"
#include "ops/creation.h"
#include "ops/index.h"
#include "ops/reduce_plan.h"
#include "ops/shape.h"
#include "ops/unary.h"
#include "transforms/transforms.h"

enum { M_SORT, M_ARGSORT, M_PARTITION, M_ARGPARTITION, M_TOPK };

static inline int c64_isnan(lc_c64 v) { return isnan(crealf(v)) || isnan(cimagf(v)); }
#define LESS_I(a, b) ((a) < (b))
#define LESS_F(a, b) (!isnan(a) && (isnan(b) || (a) < (b)))
#define LESS_C(a, b)                                                                  \
  (!c64_isnan(a) && (c64_isnan(b) || crealf(a) < crealf(b) ||                         \
                     (crealf(a) == crealf(b) && cimagf(a) < cimagf(b))))

#define PAIR_DEF(NAME, C, LESS)                                                        \
  struct pr_##NAME {                                                                   \
    C v;                                                                               \
    uint32_t i;                                                                        \
  };                                                                                   \
  static inline int lt_##NAME(const struct pr_##NAME *a, const struct pr_##NAME *b) {  \
    if (LESS(a->v, b->v)) return 1;                                                    \
    if (LESS(b->v, a->v)) return 0;                                                    \
    return a->i < b->i;                                                                \
  }                                                                                    \
  static void msort_##NAME(struct pr_##NAME *a, struct pr_##NAME *tmp, int64_t n) {    \
    for (int64_t s = 0; s < n; s += 16) { /* insertion-sorted runs */                 \
      int64_t e = s + 16 < n ? s + 16 : n;                                             \
      for (int64_t i = s + 1; i < e; i++) {                                            \
        struct pr_##NAME t = a[i];                                                     \
        int64_t j = i;                                                                 \
        for (; j > s && lt_##NAME(&t, &a[j - 1]); j--) a[j] = a[j - 1];                \
        a[j] = t;                                                                      \
      }                                                                                \
    }                                                                                  \
    struct pr_##NAME *src = a, *dst = tmp;                                             \
    for (int64_t w = 16; w < n; w *= 2) {                                              \
      for (int64_t lo = 0; lo < n; lo += 2 * w) {                                      \
        int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;   \
        int64_t i = lo, j = mid, k = lo;                                               \
        while (i < mid && j < hi) dst[k++] = lt_##NAME(&src[j], &src[i]) ? src[j++] : src[i++]; \
        while (i < mid) dst[k++] = src[i++];                                           \
        while (j < hi) dst[k++] = src[j++];                                            \
      }                                                                                \
      struct pr_##NAME *t = src;                                                       \
      src = dst;                                                                       \
      dst = t;                                                                         \
    }                                                                                  \
    if (src != a) memcpy(a, src, sizeof(*a) * (size_t)n);                              \
  }                                                                                    \
  /* Reorders a so that a[k] is the k-th in order, smaller before, larger after. */   \
  static void qselect_##NAME(struct pr_##NAME *a, int64_t n, int64_t k) {              \
    int64_t lo = 0, hi = n - 1;                                                        \
    while (hi - lo > 16) {                                                             \
      int64_t mid = lo + (hi - lo) / 2;                                                \
      struct pr_##NAME t;                                                              \
      if (lt_##NAME(&a[mid], &a[lo])) t = a[mid], a[mid] = a[lo], a[lo] = t;           \
      if (lt_##NAME(&a[hi], &a[lo])) t = a[hi], a[hi] = a[lo], a[lo] = t;              \
      if (lt_##NAME(&a[hi], &a[mid])) t = a[hi], a[hi] = a[mid], a[mid] = t;           \
      struct pr_##NAME pv = a[mid];                                                    \
      int64_t i = lo, j = hi;                                                          \
      while (i <= j) {                                                                 \
        while (lt_##NAME(&a[i], &pv)) i++;                                             \
        while (lt_##NAME(&pv, &a[j])) j--;                                             \
        if (i <= j) {                                                                  \
          t = a[i], a[i] = a[j], a[j] = t;                                             \
          i++, j--;                                                                    \
        }                                                                              \
      }                                                                                \
      if (k <= j)                                                                      \
        hi = j;                                                                        \
      else if (k >= i)                                                                 \
        lo = i;                                                                        \
      else                                                                             \
        return;                                                                        \
    }                                                                                  \
    for (int64_t i = lo + 1; i <= hi; i++) { /* small range: insertion sort */         \
      struct pr_##NAME t = a[i];                                                       \
      int64_t j = i;                                                                   \
      for (; j > lo && lt_##NAME(&t, &a[j - 1]); j--) a[j] = a[j - 1];                 \
      a[j] = t;                                                                        \
    }                                                                                  \
  }

PAIR_DEF(u8, uint8_t, LESS_I)
PAIR_DEF(u16, uint16_t, LESS_I)
PAIR_DEF(u32, uint32_t, LESS_I)
PAIR_DEF(u64, uint64_t, LESS_I)
PAIR_DEF(i8, int8_t, LESS_I)
PAIR_DEF(i16, int16_t, LESS_I)
PAIR_DEF(i32, int32_t, LESS_I)
PAIR_DEF(i64, int64_t, LESS_I)
PAIR_DEF(f32, float, LESS_F)
PAIR_DEF(f64, double, LESS_F)
PAIR_DEF(c64, lc_c64, LESS_C)

/* dtype -> pair type name */
#define PAIRS(X)                               \
  X(MLX_BOOL, bool, u8)                        \
  X(MLX_UINT8, uint8_t, u8)                    \
  X(MLX_UINT16, uint16_t, u16)                 \
  X(MLX_UINT32, uint32_t, u32)                 \
  X(MLX_UINT64, uint64_t, u64)                 \
  X(MLX_INT8, int8_t, i8)                      \
  X(MLX_INT16, int16_t, i16)                   \
  X(MLX_INT32, int32_t, i32)                   \
  X(MLX_INT64, int64_t, i64)                   \
  X(MLX_FLOAT16, uint16_t, f32)                \
  X(MLX_FLOAT32, float, f32)                   \
  X(MLX_FLOAT64, double, f64)                  \
  X(MLX_BFLOAT16, uint16_t, f32)               \
  X(MLX_COMPLEX64, lc_c64, c64)

struct sort_exec {
  const struct lc_rplan *p;
  const char *x;
  char *out;
  mlx_dtype dt;
  int mode;
  int64_t kth;   /* partition: kth; topk: k */
  int64_t L;     /* line length */
  int64_t ostep; /* output stride along the line */
};

struct gather {
  void *pairs;
  const char *x;
  int64_t pos;
};

/* Typed per-line work: gather, order, scatter. */
#define LINE_DEF(DT, S, NAME)                                                             \
  static void gather_cb_##DT(void *ctx, int64_t io, int64_t oo, int64_t n, int64_t is,    \
                             int64_t os) {                                                \
    (void)oo;                                                                             \
    (void)os;                                                                             \
    struct gather *g = ctx;                                                               \
    struct pr_##NAME *pr = (struct pr_##NAME *)g->pairs + g->pos;                         \
    const S *x = (const S *)g->x + io;                                                    \
    for (int64_t i = 0; i < n; i++) {                                                     \
      pr[i].v = lc_ld_##DT(x[i * is]);                                                    \
      pr[i].i = (uint32_t)(g->pos + i);                                                   \
    }                                                                                     \
    g->pos += n;                                                                          \
  }                                                                                       \
  static void line_##DT(const struct sort_exec *e, void *buf, int64_t io, int64_t oo) {   \
    struct pr_##NAME *pr = buf, *tmp = pr + e->L;                                         \
    struct gather g = {pr, e->x, 0};                                                      \
    int64_t L = e->L, st = e->ostep;                                                      \
    lc_rplan_runs(e->p, io, 0, 0, L, gather_cb_##DT, &g);                                 \
    if (e->mode == M_SORT || e->mode == M_ARGSORT)                                        \
      msort_##NAME(pr, tmp, L);                                                           \
    else if (e->mode == M_TOPK) {                                                         \
      qselect_##NAME(pr, L, L - e->kth);                                                  \
      msort_##NAME(pr + L - e->kth, tmp, e->kth);                                         \
      pr += L - e->kth;                                                                   \
      L = e->kth;                                                                         \
    } else                                                                                \
      qselect_##NAME(pr, L, e->kth);                                                      \
    if (e->mode == M_ARGSORT || e->mode == M_ARGPARTITION) {                              \
      uint32_t *o = (uint32_t *)e->out + oo;                                              \
      for (int64_t j = 0; j < L; j++) o[j * st] = pr[j].i;                                \
    } else {                                                                              \
      S *o = (S *)e->out + oo;                                                            \
      for (int64_t j = 0; j < L; j++) o[j * st] = lc_st_##DT(pr[j].v);                    \
    }                                                                                     \
  }
PAIRS(LINE_DEF)

static size_t pair_size(mlx_dtype t) {
  switch (t) {
#define CASE(DT, S, NAME) \
  case DT: return sizeof(struct pr_##NAME);
    PAIRS(CASE)
#undef CASE
  }
  return 16;
}

static void sort_tasks(void *ctx, int64_t lo, int64_t hi) {
  const struct sort_exec *e = ctx;
  void *buf = malloc(2 * pair_size(e->dt) * (size_t)e->L);
  if (!buf) return; /* reported by the caller's pre-check allocation */
  for (int64_t o = lo; o < hi; o++) {
    int64_t io, oo;
    lc_rplan_kept(e->p, o, &io, &oo);
    switch (e->dt) {
#define CASE(DT, S, NAME) \
  case DT: line_##DT(e, buf, io, oo); break;
      PAIRS(CASE)
#undef CASE
    }
  }
  free(buf);
}

static int sort_eval(struct lc_node *n) {
  const int *p = n->params;
  struct lc_node *x = n->in[0];
  if (lc_node_alloc_data(n)) return 1;
  if (n->size == 0 || x->size == 0) return 0;
  bool flat = p[1] < 0;
  int dcap = x->ndim > 0 ? x->ndim : 1;
  bool red[dcap];
  int64_t ost[dcap];
  for (int d = 0; d < dcap; d++) red[d] = flat || d == p[1];
  if (flat) {
    lc_shape_strides(x->ndim, x->shape, ost);
  } else {
    int64_t nst[dcap];
    lc_shape_strides(n->ndim, n->shape, nst);
    for (int d = 0; d < x->ndim; d++) ost[d] = nst[d];
  }
  struct lc_rplan plan;
  if (lc_rplan_init(&plan, x, red, ost, false)) return 1;
  struct sort_exec e = {&plan, x->buf->data, n->buf->data, x->dtype, p[0], p[2], plan.R,
                        flat ? 1 : ost[p[1]]};
  /* the per-task buffers: check that one fits before splitting */
  void *probe = malloc(2 * pair_size(x->dtype) * (size_t)plan.R);
  if (!probe) return lc_error("out of memory (sorting %lld elements)", (long long)plan.R);
  free(probe);
  lc_parallel_for(plan.nout, 4096 / plan.R + 1, sort_tasks, &e);
  return 0;
}

static int sort_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                    struct lc_node **out);
static int sort_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out);
static int sort_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                     struct lc_node **out, int *out_ax);

/* Shapeless compile: the input's shape (flattened: its size), with the
 * axis cut to k for topk; kth must stay inside a partition's new axis. */
static int sort_output_shape(const void *params, int nin, struct lc_node *const *in, int ndim,
                             int *shape) {
  const int *p = params;
  const struct lc_node *a = in[0];
  bool flat = p[1] < 0;
  if (nin != 1 || ndim != (flat ? 1 : a->ndim) || a->size == 0 || a->size > INT32_MAX) return 1;
  int64_t extent = flat ? a->size : a->shape[p[1]];
  if (flat)
    shape[0] = (int)a->size;
  else
    memcpy(shape, a->shape, sizeof(int) * (size_t)ndim);
  if (p[0] == M_PARTITION || p[0] == M_ARGPARTITION) return p[2] >= extent;
  if (p[0] == M_TOPK) {
    if (p[2] >= extent) return 1; /* k == extent is the input itself */
    shape[flat ? 0 : p[1]] = p[2];
  }
  return 0;
}

const struct lc_prim lc_prim_sort = {.name = "sort",
                                     .eval_cpu = sort_eval,
                                     .eval_cuda = LC_CUDA(lc_cuda_eval_sort),
                                     .vjp = sort_vjp,
                                     .jvp = sort_jvp,
                                     .vmap = sort_vmap,
                                     .output_shape = sort_output_shape};

/* ---- builders ---- */

static const char *const mode_names[] = {"sort", "argsort", "partition", "argpartition",
                                         "topk"};

static struct lc_node *sort_new(int mode, struct lc_node *a, int axis, int kth) {
  const char *fn = mode_names[mode];
  bool flat = axis == LC_SORT_FLAT;
  int dcap = a->ndim > 0 ? a->ndim : 1, shape[dcap], nd;
  int64_t extent;
  if (flat) {
    if (a->size > INT32_MAX) {
      lc_error("%s: array too large to flatten (%lld elements)", fn, (long long)a->size);
      return NULL;
    }
    nd = 1;
    shape[0] = (int)a->size;
    extent = a->size;
    axis = -1;
  } else {
    if (lc_axis_check(fn, &axis, a->ndim)) return NULL;
    nd = a->ndim;
    memcpy(shape, a->shape, sizeof(int) * (size_t)nd);
    extent = a->shape[axis];
  }
  if (extent > UINT32_MAX) {
    lc_error("%s: %lld elements along the axis exceed uint32 indices", fn, (long long)extent);
    return NULL;
  }
  if (mode == M_PARTITION || mode == M_ARGPARTITION) {
    int64_t k = kth < 0 ? kth + extent : kth;
    if (k < 0 || k >= extent) {
      char sb[128];
      lc_error("%s: kth %d is out of range for extent %lld (array shape %s)", fn, kth,
               (long long)extent, lc_shape_str(a->ndim, a->shape, sb, sizeof sb));
      return NULL;
    }
    kth = (int)k;
  } else if (mode == M_TOPK) {
    if (kth < 0 || kth > extent) {
      char sb[128];
      lc_error("%s: k %d is out of range for extent %lld (array shape %s)", fn, kth,
               (long long)extent, lc_shape_str(a->ndim, a->shape, sb, sizeof sb));
      return NULL;
    }
    if (!flat && kth == extent) return lc_node_retain(a);
    shape[flat ? 0 : axis] = kth;
  } else {
    kth = 0;
  }
  mlx_dtype dt = (mode == M_ARGSORT || mode == M_ARGPARTITION) ? MLX_UINT32 : a->dtype;
  int params[3] = {mode, axis, kth};
  return lc_node_new_op(LC_OP_SORT, dt, nd, shape, 1, &a, params, sizeof params);
}

struct lc_node *lc_sort(struct lc_node *a, int axis) { return sort_new(M_SORT, a, axis, 0); }
struct lc_node *lc_argsort(struct lc_node *a, int axis) {
  return sort_new(M_ARGSORT, a, axis, 0);
}
struct lc_node *lc_partition(struct lc_node *a, int kth, int axis) {
  return sort_new(M_PARTITION, a, axis, kth);
}
struct lc_node *lc_argpartition(struct lc_node *a, int kth, int axis) {
  return sort_new(M_ARGPARTITION, a, axis, kth);
}
struct lc_node *lc_topk(struct lc_node *a, int k, int axis) {
  return sort_new(M_TOPK, a, axis, k);
}

/* ---- transformation rules ----
 * sort, partition and topk pick input elements along the axis by an index
 * permutation that is locally constant in the input (the arg variant of
 * the same order; topk's are argsort's last k, its output being
 * ascending): the jvp gathers the tangent through it, the vjp scatters the
 * cotangent back (MLX). Index outputs get no cotangent or tangent. */

/* The input seen along the sorting axis (flattened for LC_SORT_FLAT: the
 * axis is then 0); new reference. */
static struct lc_node *sort_operand(struct lc_node *n, struct lc_node *a, int *axis) {
  const int *p = n->params;
  *axis = p[1] < 0 ? 0 : p[1];
  if (p[1] >= 0) return lc_node_retain(a);
  int size = (int)n->in[0]->size;
  return lc_reshape(a, 1, &size);
}

/* Indices along the axis of xa (sort_operand of the input) of the
 * elements making n's output, cut from the gradient. */
static struct lc_node *sort_perm(struct lc_node *n, struct lc_node *xa, int axis) {
  const int *p = n->params;
  struct lc_node *i = p[0] == M_PARTITION ? lc_argpartition(xa, p[2], axis) : lc_argsort(xa, axis);
  if (i && p[0] == M_TOPK) {
    int L = xa->shape[axis];
    struct lc_node *t = lc_slice_axis(i, axis, L - p[2], L);
    lc_node_release(i);
    i = t;
  }
  struct lc_node *r = i ? lc_stop_gradient(i) : NULL;
  lc_node_release(i);
  return r;
}

static bool sort_gives_indices(const struct lc_node *n) {
  const int *p = n->params;
  return p[0] == M_ARGSORT || p[0] == M_ARGPARTITION;
}

static int sort_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                    struct lc_node **out) {
  (void)argnums, (void)nargs;
  struct lc_node *x = n->in[0];
  if (sort_gives_indices(n) || n->size == 0) return 0;
  int axis;
  struct lc_node *xa = sort_operand(n, x, &axis);
  struct lc_node *idx = xa ? sort_perm(n, xa, axis) : NULL;
  struct lc_node *z = idx ? lc_zeros_like(xa) : NULL;
  struct lc_node *g = z ? lc_scatter_axis(z, idx, cot[0], axis, LC_SCATTER_ADD) : NULL;
  out[0] = g ? lc_reshape(g, x->ndim, x->shape) : NULL;
  lc_node_release(xa);
  lc_node_release(idx);
  lc_node_release(z);
  lc_node_release(g);
  return !out[0];
}

static int sort_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  if (sort_gives_indices(n) || n->size == 0) return 0;
  int axis;
  struct lc_node *xa = sort_operand(n, n->in[0], &axis);
  struct lc_node *idx = xa ? sort_perm(n, xa, axis) : NULL;
  struct lc_node *ta = idx ? sort_operand(n, tan[0], &axis) : NULL;
  out[0] = ta ? lc_take_along_axis(ta, idx, axis) : NULL;
  lc_node_release(xa);
  lc_node_release(idx);
  lc_node_release(ta);
  return !out[0];
}

/* Batch axis first: the sorting axis shifts by one; a flat sort sorts
 * each example flattened. */
static int sort_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                     struct lc_node **out, int *out_ax) {
  const int *p = n->params;
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false), *xb = NULL;
  if (!x) return 1;
  int axis = p[1] + 1;
  if (p[1] < 0) {
    int sh[2] = {x->shape[0], (int)n->in[0]->size};
    xb = lc_reshape(x, 2, sh);
    axis = 1;
  } else {
    xb = lc_node_retain(x);
  }
  out[0] = xb ? sort_new(p[0], xb, axis, p[2]) : NULL;
  lc_node_release(x);
  lc_node_release(xb);
  *out_ax = 0;
  return !out[0];
}
