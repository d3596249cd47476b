/* Internal to the fast family's transformation rules (fast_norm.c,
 * fast_rope.c, fast_attention.c): a scope of temporary nodes and
 * NULL-propagating builders over it, so that a rule reads as the formula it
 * computes. Every builder returns a node the scope owns (released by
 * lc_fx_end), or NULL when an argument is NULL (nothing is built) or the
 * builder failed (it reported, and the scope's `failed` is set);
 * lc_fx_keep hands one node out as a new reference. */
#ifndef LC_FAST_RULES_H
#define LC_FAST_RULES_H

#include <stdbool.h>

#include "core/error.h"
#include "core/node.h"
#include "ops/binary.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/ternary.h"
#include "ops/unary.h"
#include "transforms/transforms.h"

struct lc_fx {
  struct lc_rule_scope sc; /* the temporaries */
  bool failed;
};

/* Takes a builder's result x (a new reference, or NULL after it reported)
 * into the scope. */
static inline struct lc_node *lc_fx_own(struct lc_fx *s, struct lc_node *x) {
  if (!(x = lc_rule_keep(&s->sc, x))) s->failed = true;
  return x;
}

static inline struct lc_node *lc_fx_keep(struct lc_node *x) { return lc_node_retain(x); }

static inline void lc_fx_end(struct lc_fx *s) {
  lc_rule_release(s->sc.v, (size_t)s->sc.n);
  s->sc.n = 0;
}

#define LC_FX_BIN(NAME, FN)                                                                  \
  static inline struct lc_node *NAME(struct lc_fx *s, struct lc_node *a, struct lc_node *b) { \
    return a && b ? lc_fx_own(s, FN(a, b)) : NULL;                                           \
  }
LC_FX_BIN(lc_fx_add, lc_add)
LC_FX_BIN(lc_fx_sub, lc_subtract)
LC_FX_BIN(lc_fx_mul, lc_multiply)
LC_FX_BIN(lc_fx_mm, lc_matmul)
#undef LC_FX_BIN

/* a + b where either may be NULL meaning zero (NULL when both are). */
static inline struct lc_node *lc_fx_add0(struct lc_fx *s, struct lc_node *a, struct lc_node *b) {
  return !a ? b : !b ? a : lc_fx_add(s, a, b);
}

/* A 0-d constant of x's dtype. */
static inline struct lc_node *lc_fx_const(struct lc_fx *s, struct lc_node *like, double v) {
  return like ? lc_fx_own(s, lc_node_new_scalar(like->dtype, v)) : NULL;
}

static inline struct lc_node *lc_fx_scale(struct lc_fx *s, struct lc_node *x, double v) {
  return v == 1.0 ? x : lc_fx_mul(s, x, lc_fx_const(s, x, v));
}

static inline struct lc_node *lc_fx_sum(struct lc_fx *s, struct lc_node *x, const int *axes,
                                       int naxes, bool keepdims) {
  return x ? lc_fx_own(s, lc_sum(x, axes, naxes, keepdims)) : NULL;
}

/* Over the last axis, keeping it. */
static inline struct lc_node *lc_fx_mean_last(struct lc_fx *s, struct lc_node *x) {
  int ax = x ? x->ndim - 1 : 0;
  return x ? lc_fx_own(s, lc_mean(x, &ax, 1, true)) : NULL;
}

static inline struct lc_node *lc_fx_sum_last(struct lc_fx *s, struct lc_node *x) {
  int ax = x ? x->ndim - 1 : 0;
  return lc_fx_sum(s, x, &ax, 1, true);
}

/* Sum over every axis but the last (to a 1-d result). */
static inline struct lc_node *lc_fx_sum_lead(struct lc_fx *s, struct lc_node *x) {
  if (!x) return NULL;
  int axes[x->ndim > 1 ? x->ndim - 1 : 1];
  for (int d = 0; d + 1 < x->ndim; d++) axes[d] = d;
  return x->ndim == 1 ? x : lc_fx_sum(s, x, axes, x->ndim - 1, false);
}

static inline struct lc_node *lc_fx_reshape(struct lc_fx *s, struct lc_node *x, int ndim,
                                           const int *shape) {
  return x ? lc_fx_own(s, lc_reshape(x, ndim, shape)) : NULL;
}

static inline struct lc_node *lc_fx_swap_last(struct lc_fx *s, struct lc_node *x) {
  return x ? lc_fx_own(s, lc_swapaxes(x, x->ndim - 2, x->ndim - 1)) : NULL;
}

static inline struct lc_node *lc_fx_rsqrt(struct lc_fx *s, struct lc_node *x) {
  return x ? lc_fx_own(s, lc_rsqrt(x)) : NULL;
}

static inline struct lc_node *lc_fx_where(struct lc_fx *s, struct lc_node *c, struct lc_node *a,
                                         struct lc_node *b) {
  return c && a && b ? lc_fx_own(s, lc_where(c, a, b)) : NULL;
}

#endif
