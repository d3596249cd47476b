/* Public reductions, scans and softmax: argument checks, then the builders.
 * Plain variants reduce over every axis; _axis over one; _axes over a list. */
#include "api/api.h"
#include "ops/reduce.h"
#include "ops/scan.h"
#include "ops/softmax.h"

/* Validates the common arguments; on success *x is the input node. */

/* Every axis of x, for the plain variants (at most LC_RPLAN_MAXD). */
static int all_axes(const char *fn, const struct lc_node *x, int *axes) {
  if (x->ndim > LC_RPLAN_MAXD)
    return lc_error("%s: arrays with more than %d dimensions are not supported", fn,
                    LC_RPLAN_MAXD);
  for (int i = 0; i < x->ndim; i++) axes[i] = i;
  return 0;
}

static int reduce_all(const char *fn, int kind, mlx_array *res, mlx_array a, bool keepdims,
                      int ddof, mlx_stream s) {
  struct lc_node *x = NULL;
  int axes[LC_RPLAN_MAXD];
  if (lc_api_prologue(fn, res, a, s, &x) || all_axes(fn, x, axes)) return 1;
  return lc_api_set(res, lc_reduce(fn, kind, x, axes, x->ndim, keepdims, ddof));
}

static int reduce_axis(const char *fn, int kind, mlx_array *res, mlx_array a, int axis,
                       bool keepdims, int ddof, mlx_stream s) {
  struct lc_node *x = NULL;
  if (lc_api_prologue(fn, res, a, s, &x) || lc_axis_check(fn, &axis, x->ndim)) return 1;
  return lc_api_set(res, lc_reduce(fn, kind, x, &axis, 1, keepdims, ddof));
}

static int reduce_axes(const char *fn, int kind, mlx_array *res, mlx_array a, const int *axes,
                       size_t naxes, bool keepdims, int ddof, mlx_stream s) {
  struct lc_node *x = NULL;
  if (lc_api_prologue(fn, res, a, s, &x)) return 1;
  if (naxes > 0 && !axes) return lc_error("%s: axes is NULL", fn);
  if (naxes > (size_t)x->ndim)
    return lc_error("%s: %zu axes given for an array with %d dimensions", fn, naxes, x->ndim);
  return lc_api_set(res, lc_reduce(fn, kind, x, axes, (int)naxes, keepdims, ddof));
}

#define REDUCE_API(NAME, KIND)                                                             \
  int mlx_##NAME(mlx_array *res, const mlx_array a, bool keepdims, const mlx_stream s) {   \
    return reduce_all("mlx_" #NAME, KIND, res, a, keepdims, 0, s);                         \
  }                                                                                        \
  int mlx_##NAME##_axis(mlx_array *res, const mlx_array a, int axis, bool keepdims,        \
                        const mlx_stream s) {                                              \
    return reduce_axis("mlx_" #NAME "_axis", KIND, res, a, axis, keepdims, 0, s);          \
  }                                                                                        \
  int mlx_##NAME##_axes(mlx_array *res, const mlx_array a, const int *axes, size_t naxes,  \
                        bool keepdims, const mlx_stream s) {                               \
    return reduce_axes("mlx_" #NAME "_axes", KIND, res, a, axes, naxes, keepdims, 0, s);   \
  }

REDUCE_API(sum, LC_RED_SUM)
REDUCE_API(prod, LC_RED_PROD)
REDUCE_API(max, LC_RED_MAX)
REDUCE_API(min, LC_RED_MIN)
REDUCE_API(all, LC_RED_AND)
REDUCE_API(any, LC_RED_OR)
REDUCE_API(mean, LC_RED_MEAN)
REDUCE_API(logsumexp, LC_RED_LSE)

#define DDOF_API(NAME, KIND)                                                                \
  int mlx_##NAME(mlx_array *res, const mlx_array a, bool keepdims, int ddof,                \
                 const mlx_stream s) {                                                      \
    return reduce_all("mlx_" #NAME, KIND, res, a, keepdims, ddof, s);                       \
  }                                                                                         \
  int mlx_##NAME##_axis(mlx_array *res, const mlx_array a, int axis, bool keepdims, int ddof, \
                        const mlx_stream s) {                                               \
    return reduce_axis("mlx_" #NAME "_axis", KIND, res, a, axis, keepdims, ddof, s);        \
  }                                                                                         \
  int mlx_##NAME##_axes(mlx_array *res, const mlx_array a, const int *axes, size_t naxes,   \
                        bool keepdims, int ddof, const mlx_stream s) {                      \
    return reduce_axes("mlx_" #NAME "_axes", KIND, res, a, axes, naxes, keepdims, ddof, s); \
  }

DDOF_API(var, LC_RED_VAR)
DDOF_API(std, LC_RED_STD)

#define ARG_API(NAME, ALL, AXIS)                                                               \
  int mlx_##NAME(mlx_array *res, const mlx_array a, bool keepdims, const mlx_stream s) {       \
    struct lc_node *x = NULL;                                                                  \
    if (lc_api_prologue("mlx_" #NAME, res, a, s, &x)) return 1;                                       \
    return lc_api_set(res, ALL(x, keepdims));                                                  \
  }                                                                                            \
  int mlx_##NAME##_axis(mlx_array *res, const mlx_array a, int axis, bool keepdims,            \
                        const mlx_stream s) {                                                  \
    struct lc_node *x = NULL;                                                                  \
    if (lc_api_prologue("mlx_" #NAME "_axis", res, a, s, &x) ||                                       \
        lc_axis_check("mlx_" #NAME "_axis", &axis, x->ndim))                                     \
      return 1;                                                                                \
    return lc_api_set(res, AXIS(x, axis, keepdims));                                           \
  }

ARG_API(argmax, lc_argmax_all, lc_argmax)
ARG_API(argmin, lc_argmin_all, lc_argmin)

/* ---- scans ---- */

#define SCAN_API(NAME, KIND)                                                                \
  int mlx_##NAME(mlx_array *res, const mlx_array a, int axis, bool reverse, bool inclusive, \
                 const mlx_stream s) {                                                      \
    struct lc_node *x = NULL;                                                                  \
    if (lc_api_prologue("mlx_" #NAME, res, a, s, &x) || lc_axis_check("mlx_" #NAME, &axis, x->ndim)) \
      return 1;                                                                             \
    return lc_api_set(res, lc_scan("mlx_" #NAME, KIND, x, axis, reverse, inclusive));       \
  }

SCAN_API(cumsum, LC_SCAN_SUM)
SCAN_API(cumprod, LC_SCAN_PROD)
SCAN_API(cummax, LC_SCAN_MAX)
SCAN_API(cummin, LC_SCAN_MIN)
SCAN_API(logcumsumexp, LC_SCAN_LOGADDEXP)

/* ---- softmax ---- */

int mlx_softmax(mlx_array *res, const mlx_array a, bool precise, const mlx_stream s) {
  struct lc_node *x = NULL;
  int axes[LC_RPLAN_MAXD];
  if (lc_api_prologue("mlx_softmax", res, a, s, &x) || all_axes("mlx_softmax", x, axes)) return 1;
  return lc_api_set(res, lc_softmax_fn("mlx_softmax", x, axes, x->ndim, precise));
}

int mlx_softmax_axis(mlx_array *res, const mlx_array a, int axis, bool precise,
                     const mlx_stream s) {
  struct lc_node *x = NULL;
  if (lc_api_prologue("mlx_softmax_axis", res, a, s, &x) ||
      lc_axis_check("mlx_softmax_axis", &axis, x->ndim))
    return 1;
  return lc_api_set(res, lc_softmax_fn("mlx_softmax_axis", x, &axis, 1, precise));
}

int mlx_softmax_axes(mlx_array *res, const mlx_array a, const int *axes, size_t naxes,
                     bool precise, const mlx_stream s) {
  struct lc_node *x = NULL;
  if (lc_api_prologue("mlx_softmax_axes", res, a, s, &x)) return 1;
  if (naxes > 0 && !axes) return lc_error("mlx_softmax_axes: axes is NULL");
  if (naxes > (size_t)x->ndim)
    return lc_error("mlx_softmax_axes: %zu axes given for an array with %d dimensions", naxes,
                    x->ndim);
  return lc_api_set(res, lc_softmax_fn("mlx_softmax_axes", x, axes, (int)naxes, precise));
}
