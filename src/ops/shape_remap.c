/* REMAP: a copy where every output axis reads its input axis through an
 * index map (identity, tile, repeat, roll, pad). Covers pad (constant, edge,
 * reflect, symmetric), tile, repeat and roll in one strided kernel; DIAG
 * builds a matrix from a vector. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/iter.h"
#include "core/parallel.h"
#include "ops/binary.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/prim.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/shape_internal.h"
#include "ops/ternary.h"
#include "transforms/transforms.h"

enum remap_kind { MAP_ID, MAP_TILE, MAP_REPEAT, MAP_ROLL, MAP_PAD };
enum { PADM_CONSTANT, PADM_EDGE, PADM_REFLECT, PADM_SYMMETRIC };

/* One per output axis; the input axis has extent `n`. */
struct remap_axis {
  int kind;
  int n;
  int a; /* repeat: repeats; roll: shift in [0, n); pad: low */
  int b; /* pad: mode */
};

#define FILL INT64_MIN

/* Input index along an axis for output index i, or -1 for the fill value. */
static int64_t map_index(const struct remap_axis *m, int64_t i) {
  int64_t n = m->n;
  switch (m->kind) {
  case MAP_TILE: return i % n;
  case MAP_REPEAT: return i / m->a;
  case MAP_ROLL: return (i - m->a + n) % n;
  case MAP_PAD: {
    int64_t j = i - m->a;
    if (j >= 0 && j < n) return j;
    switch (m->b) {
    case PADM_EDGE: return j < 0 ? 0 : n - 1;
    case PADM_SYMMETRIC: {
      int64_t p = 2 * n, r = ((j % p) + p) % p;
      return r < n ? r : p - 1 - r;
    }
    case PADM_REFLECT: {
      if (n == 1) return 0;
      int64_t p = 2 * (n - 1), r = ((j % p) + p) % p;
      return r < n ? r : p - r;
    }
    default: return -1;
    }
  }
  default: return i;
  }
}

struct remap_ctx {
  const struct lc_node *n, *in;
  int64_t **tab; /* per output axis: input element offset, or FILL */
  const char *src;
  char *dst;
  const char *fill; /* one element, or NULL */
  size_t isz;
};

static void remap_rows(void *arg, int64_t lo, int64_t hi) {
  const struct remap_ctx *c = arg;
  int nd = c->n->ndim, last = c->n->shape[nd - 1];
  size_t isz = c->isz;
  int idx[nd];
  int64_t r = lo;
  for (int d = nd - 2; d >= 0; d--) {
    idx[d] = (int)(r % c->n->shape[d]);
    r /= c->n->shape[d];
  }
  const int64_t *tl = c->tab[nd - 1];
  for (int64_t row = lo; row < hi; row++) {
    int64_t base = c->in->offset;
    bool fill = false;
    for (int d = 0; d < nd - 1; d++) {
      int64_t t = c->tab[d][idx[d]];
      if (t == FILL)
        fill = true; /* the marker is not an offset: adding it could overflow */
      else
        base += t;
    }
    char *o = c->dst + row * last * (int64_t)isz;
    if (fill) {
      for (int i = 0; i < last; i++) memcpy(o + (size_t)i * isz, c->fill, isz);
    } else {
      const char *s = c->src + base * (int64_t)isz;
      switch (isz) {
#define ROW(T)                                                                  \
  for (int i = 0; i < last; i++) {                                              \
    int64_t t = tl[i];                                                          \
    if (t == FILL)                                                              \
      memcpy(o + (size_t)i * sizeof(T), c->fill, sizeof(T));                    \
    else                                                                        \
      memcpy(o + (size_t)i * sizeof(T), s + t * (int64_t)sizeof(T), sizeof(T)); \
  }                                                                             \
  break;
      case 1: ROW(uint8_t)
      case 2: ROW(uint16_t)
      case 4: ROW(uint32_t)
      case 8: ROW(uint64_t)
#undef ROW
      default:
        for (int i = 0; i < last; i++) {
          int64_t t = tl[i];
          memcpy(o + (size_t)i * isz, t == FILL ? c->fill : s + t * (int64_t)isz, isz);
        }
      }
    }
    for (int d = nd - 2; d >= 0; d--) { /* next row */
      if (++idx[d] < c->n->shape[d]) break;
      idx[d] = 0;
    }
  }
}

static int remap_eval(struct lc_node *n) {
  const struct lc_node *in = n->in[0];
  const struct remap_axis *m = n->params;
  if (lc_node_alloc_data(n)) return 1;
  if (n->size == 0) return 0;
  int nd = n->ndim;
  int64_t total = 0;
  for (int d = 0; d < nd; d++) total += n->shape[d];
  int64_t *store = malloc(sizeof(int64_t) * (size_t)total);
  int64_t *tab[nd];
  if (!store) return lc_error("out of memory");
  int64_t *p = store;
  for (int d = 0; d < nd; d++) {
    tab[d] = p;
    for (int64_t i = 0; i < n->shape[d]; i++) {
      int64_t j = map_index(&m[d], i);
      p[i] = j < 0 ? FILL : j * in->strides[d];
    }
    p += n->shape[d];
  }
  struct remap_ctx c = {.n = n,
                        .in = in,
                        .tab = tab,
                        .src = in->buf->data,
                        .dst = n->buf->data,
                        .fill = n->nin > 1 ? lc_node_data(n->in[1]) : NULL,
                        .isz = lc_dtype_size(n->dtype)};
  int64_t rows = n->size / n->shape[nd - 1];
  int64_t min_rows = LC_PARALLEL_MIN / n->shape[nd - 1] + 1;
  lc_parallel_for(rows, min_rows, remap_rows, &c);
  free(store);
  return 0;
}

/* Output extents are computed by the callers; fill (0-d, a's dtype) only
 * for constant padding. */
static struct lc_node *remap_new(struct lc_node *a, const int *shape, const struct remap_axis *m,
                                 struct lc_node *fill) {
  struct lc_node *in[2] = {a, fill};
  return lc_node_new_op(LC_OP_REMAP, a->dtype, a->ndim, shape, fill ? 2 : 1, in, m,
                        sizeof *m * (size_t)a->ndim);
}

/* ---- remap rules ----
 * The map is separable: output element (i_0, ..) reads input element
 * (map_0(i_0), ..), or the fill when some map_d(i_d) is -1 (constant
 * padding only). So its adjoint is the product of the per-axis adjoints,
 * applied one axis at a time, and the fill collects what no axis maps. */

static bool pads_constant(const struct remap_axis *m) {
  return m->kind == MAP_PAD && m->b == PADM_CONSTANT;
}

/* g with axis d (the map's output extent) split into (e0, e1), then
 * summed over part `drop` (0 or 1). */
static struct lc_node *split_sum(struct lc_node *g, int d, int e0, int e1, int drop) {
  int sh[g->ndim + 1];
  for (int i = 0, k = 0; i < g->ndim; i++) {
    if (i == d) {
      sh[k++] = e0;
      sh[k++] = e1;
    } else {
      sh[k++] = g->shape[i];
    }
  }
  struct lc_node *r = lc_reshape(g, g->ndim + 1, sh);
  int axis = d + drop;
  struct lc_node *s = r ? lc_sum(r, &axis, 1, false) : NULL;
  lc_node_release(r);
  return s;
}

/* Scatter-adds g along axis d at the input index each output index reads
 * (every map_index is in range: edge, reflect and symmetric padding). */
static struct lc_node *scatter_back(struct lc_node *g, int d, const struct remap_axis *m) {
  int ext = g->shape[d];
  int32_t *idx = malloc(sizeof(int32_t) * (size_t)(ext > 0 ? ext : 1));
  if (!idx) {
    lc_error("out of memory");
    return NULL;
  }
  for (int i = 0; i < ext; i++) idx[i] = (int32_t)map_index(m, i);
  struct lc_node *iv = lc_node_new_data(MLX_INT32, 1, &ext, idx);
  free(idx);
  int sh[g->ndim];
  for (int i = 0; i < g->ndim; i++) sh[i] = i == d ? ext : 1;
  struct lc_node *ir = iv ? lc_reshape(iv, g->ndim, sh) : NULL;
  for (int i = 0; i < g->ndim; i++) sh[i] = i == d ? m->n : g->shape[i];
  struct lc_node *z = ir ? lc_zeros(g->ndim, sh, g->dtype) : NULL;
  struct lc_node *r = z ? lc_scatter_axis(z, ir, g, d, LC_SCATTER_ADD) : NULL;
  lc_node_release(iv);
  lc_node_release(ir);
  lc_node_release(z);
  return r;
}

/* The cotangent g (axis d of the map's output extent) brought back to the
 * input extent m->n of axis d. */
static struct lc_node *axis_adjoint(struct lc_node *g, int d, const struct remap_axis *m) {
  if (g->size == 0) {
    int sh[g->ndim];
    for (int i = 0; i < g->ndim; i++) sh[i] = i == d ? m->n : g->shape[i];
    return lc_zeros(g->ndim, sh, g->dtype);
  }
  int ext = g->shape[d];
  switch (m->kind) {
  case MAP_TILE: return split_sum(g, d, ext / m->n, m->n, 0);
  case MAP_REPEAT: return split_sum(g, d, m->n, m->a, 1);
  case MAP_ROLL: {
    int back = -m->a;
    return lc_roll(g, 1, &d, &back);
  }
  case MAP_PAD:
    if (m->b == PADM_CONSTANT) return lc_slice_axis(g, d, m->a, m->a + m->n);
    return scatter_back(g, d, m);
  default: return lc_node_retain(g);
  }
}

/* The part of g that reads the input: g sliced to the interior of every
 * constant-padded axis (g itself when there are none). */
static struct lc_node *constant_interior(struct lc_node *g, const struct remap_axis *m) {
  struct lc_node *r = lc_node_retain(g);
  for (int d = 0; r && d < g->ndim; d++) {
    if (!pads_constant(&m[d])) continue;
    struct lc_node *s = lc_slice_axis(r, d, m[d].a, m[d].a + m[d].n);
    lc_node_release(r);
    r = s;
  }
  return r;
}

static struct lc_node *sum_all(struct lc_node *x) {
  int axes[x->ndim > 0 ? x->ndim : 1];
  for (int d = 0; d < x->ndim; d++) axes[d] = d;
  return lc_sum(x, axes, x->ndim, false);
}

static int remap_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                     int nargs, struct lc_node **out) {
  const struct remap_axis *m = n->params;
  for (int j = 0; j < nargs; j++) {
    struct lc_node *g = NULL;
    if (argnums[j] == 0) {
      g = lc_node_retain(cot[0]);
      for (int d = 0; g && d < n->ndim; d++) {
        if (m[d].kind == MAP_ID) continue;
        struct lc_node *h = axis_adjoint(g, d, &m[d]);
        lc_node_release(g);
        g = h;
      }
    } else { /* the fill value: everything outside the interior */
      struct lc_node *in = constant_interior(cot[0], m);
      struct lc_node *all = in ? sum_all(cot[0]) : NULL, *part = all ? sum_all(in) : NULL;
      g = part ? lc_subtract(all, part) : NULL;
      lc_node_release(in);
      lc_node_release(all);
      lc_node_release(part);
    }
    if (!(out[j] = g)) {
      lc_rule_release(out, j);
      return 1;
    }
  }
  return 0;
}

/* jvp: the remap is linear in (input, fill) together. */
static int remap_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  struct lc_node *t[2] = {NULL, NULL};
  int k = 0;
  for (; k < n->nin; k++)
    if (!(t[k] = tan[k] ? lc_node_retain(tan[k]) : lc_zeros_like(n->in[k]))) break;
  if (k == n->nin) out[0] = lc_rule_clone(n, t);
  lc_rule_release(t, k);
  return !out[0];
}

/* vmap: the batch axis in front with an identity map. A batched fill
 * (one per example) is applied afterwards through the mask of positions
 * that read the input. */
static int remap_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                      struct lc_node **out, int *out_ax) {
  const struct remap_axis *m = n->params;
  int b = lc_rule_batch_size(n->nin, in, ax), nd = n->ndim;
  struct remap_axis m2[nd + 1];
  int sh[nd + 1];
  m2[0] = (struct remap_axis){MAP_ID, b, 0, 0};
  sh[0] = b;
  for (int d = 0; d < nd; d++) {
    m2[1 + d] = m[d];
    sh[1 + d] = n->shape[d];
  }
  *out_ax = 0;
  bool fill_batched = n->nin > 1 && ax[1] != -1;
  struct lc_node *x = lc_rule_batch_front_full(in[0], ax[0], b);
  if (!x) return 1;
  if (!fill_batched) {
    out[0] = remap_new(x, sh, m2, n->nin > 1 ? in[1] : NULL);
    lc_node_release(x);
    return !out[0];
  }
  const struct lc_node *a = n->in[0];
  struct lc_node *zero = lc_node_new_scalar(n->dtype, 0), *no = lc_node_new_scalar(MLX_BOOL, 0);
  struct lc_node *body = zero ? remap_new(x, sh, m2, zero) : NULL;
  struct lc_node *ones = body && no ? lc_ones(a->ndim, a->shape, MLX_BOOL) : NULL;
  struct lc_node *mask = ones ? remap_new(ones, n->shape, m, no) : NULL;
  for (int d = 1; d <= nd; d++) sh[d] = 1;
  struct lc_node *fill = mask ? lc_reshape(in[1], nd + 1, sh) : NULL;
  out[0] = fill ? lc_where(mask, body, fill) : NULL;
  lc_node_release(x);
  lc_node_release(zero);
  lc_node_release(no);
  lc_node_release(body);
  lc_node_release(ones);
  lc_node_release(mask);
  lc_node_release(fill);
  return !out[0];
}

const struct lc_prim lc_prim_remap = {.name = "remap",
                                      .eval_cpu = remap_eval,
                                      .eval_cuda = LC_CUDA(lc_cuda_eval_remap),
                                      .vjp = remap_vjp,
                                      .jvp = remap_jvp,
                                      .vmap = remap_vmap};

static void identity_maps(const struct lc_node *a, struct remap_axis *m, int *shape) {
  for (int d = 0; d < a->ndim; d++) {
    m[d] = (struct remap_axis){MAP_ID, a->shape[d], 0, 0};
    shape[d] = a->shape[d];
  }
}

/* ---- pad ---- */

struct lc_node *lc_pad_mode(struct lc_node *a, int naxes, const int *axes, const int *low,
                            const int *high, struct lc_node *value, const char *mode) {
  int mcode;
  if (!mode || !strcmp(mode, "constant"))
    mcode = PADM_CONSTANT;
  else if (!strcmp(mode, "edge"))
    mcode = PADM_EDGE;
  else if (!strcmp(mode, "reflect"))
    mcode = PADM_REFLECT;
  else if (!strcmp(mode, "symmetric"))
    mcode = PADM_SYMMETRIC;
  else {
    lc_error("pad: invalid padding mode '%s'", mode);
    return NULL;
  }
  int nd = a->ndim;
  if (nd == 0) {
    if (naxes == 0) return lc_node_retain(a);
    lc_error("pad: cannot pad a zero-dimensional array");
    return NULL;
  }
  struct remap_axis m[nd];
  int shape[nd];
  bool seen[nd];
  memset(seen, 0, sizeof seen);
  identity_maps(a, m, shape);
  bool any = false;
  for (int i = 0; i < naxes; i++) {
    int ax = axes[i] < 0 ? axes[i] + nd : axes[i];
    if (ax < 0 || ax >= nd) {
      lc_error("pad: axis %d is out of bounds for an array with %d dimensions", axes[i], nd);
      return NULL;
    }
    if (seen[ax]) {
      lc_error("pad: duplicate axis %d", axes[i]);
      return NULL;
    }
    seen[ax] = true;
    if (low[i] < 0 || high[i] < 0) {
      lc_error("pad: invalid %s padding size (%d) for axis %d; padding sizes must be non-negative",
               low[i] < 0 ? "low" : "high", low[i] < 0 ? low[i] : high[i], axes[i]);
      return NULL;
    }
    int64_t ext = (int64_t)a->shape[ax] + low[i] + high[i];
    if (ext > INT_MAX) {
      lc_error("pad: padded axis %d is too large", axes[i]);
      return NULL;
    }
    if (low[i] == 0 && high[i] == 0) continue;
    if (a->shape[ax] == 0 && mcode != PADM_CONSTANT) {
      lc_error("pad: cannot pad empty axis %d using mode '%s'", axes[i], mode);
      return NULL;
    }
    m[ax] = (struct remap_axis){MAP_PAD, a->shape[ax], low[i], mcode};
    shape[ax] = (int)ext;
    any = true;
  }
  if (!any) return lc_node_retain(a);
  struct lc_node *fill = NULL;
  if (mcode == PADM_CONSTANT) {
    if (!value) {
      fill = lc_node_new_scalar(a->dtype, 0);
    } else {
      if (value->size != 1) {
        lc_error("pad: the pad value must be a scalar (got %lld elements)", (long long)value->size);
        return NULL;
      }
      struct lc_node *v = lc_reshape(value, 0, NULL);
      fill = v ? lc_astype(v, a->dtype) : NULL;
      lc_node_release(v);
    }
    if (!fill) return NULL;
  }
  struct lc_node *r = remap_new(a, shape, m, fill);
  lc_node_release(fill);
  return r;
}

struct lc_node *lc_pad(struct lc_node *a, int naxes, const int *axes, const int *low,
                       const int *high, struct lc_node *value, enum lc_pad_mode mode) {
  return lc_pad_mode(a, naxes, axes, low, high, value, mode == LC_PAD_EDGE ? "edge" : "constant");
}

/* ---- tile, repeat, roll ---- */

struct lc_node *lc_tile(struct lc_node *a, int nreps, const int *reps) {
  for (int i = 0; i < nreps; i++)
    if (reps[i] < 0) {
      lc_error("tile: negative repetition count %d", reps[i]);
      return NULL;
    }
  int nd = a->ndim > nreps ? a->ndim : nreps;
  if (nd == 0) return lc_node_retain(a);
  int ishape[nd], shape[nd];
  struct remap_axis m[nd];
  memset(ishape, 0, sizeof ishape);
  for (int d = 0; d < nd; d++) ishape[d] = d < nd - a->ndim ? 1 : a->shape[d - (nd - a->ndim)];
  struct lc_node *x = lc_reshape(a, nd, ishape);
  if (!x) return NULL;
  bool any = nd != a->ndim;
  for (int d = 0; d < nd; d++) {
    int r = d < nd - nreps ? 1 : reps[d - (nd - nreps)];
    int64_t ext = (int64_t)ishape[d] * r;
    if (ext > INT_MAX) {
      lc_node_release(x);
      lc_error("tile: result is too large along axis %d", d);
      return NULL;
    }
    shape[d] = (int)ext;
    m[d] = (struct remap_axis){r == 1 ? MAP_ID : MAP_TILE, ishape[d], 0, 0};
    any = any || r != 1;
  }
  if (!any) return x;
  struct lc_node *res = remap_new(x, shape, m, NULL);
  lc_node_release(x);
  return res;
}

struct lc_node *lc_repeat(struct lc_node *a, int repeats, int axis) {
  int nd = a->ndim;
  int ax = axis < 0 ? axis + nd : axis;
  if (ax < 0 || ax >= nd) {
    lc_error("repeat: axis %d is out of bounds for an array with %d dimensions", axis, nd);
    return NULL;
  }
  if (repeats < 0) {
    lc_error("repeat: number of repeats cannot be negative");
    return NULL;
  }
  if (repeats == 1) return lc_node_retain(a);
  int64_t ext = (int64_t)a->shape[ax] * repeats;
  if (ext > INT_MAX) {
    lc_error("repeat: result is too large along axis %d", axis);
    return NULL;
  }
  struct remap_axis m[nd];
  int shape[nd];
  identity_maps(a, m, shape);
  m[ax] = (struct remap_axis){MAP_REPEAT, a->shape[ax], repeats, 0};
  shape[ax] = (int)ext;
  return remap_new(a, shape, m, NULL);
}

struct lc_node *lc_roll(struct lc_node *a, int naxes, const int *axes, const int *shifts) {
  int nd = a->ndim;
  if (naxes == 0) return lc_node_retain(a);
  struct remap_axis m[nd > 0 ? nd : 1];
  int shape[nd > 0 ? nd : 1];
  int64_t total[nd > 0 ? nd : 1];
  memset(total, 0, sizeof total);
  identity_maps(a, m, shape);
  for (int i = 0; i < naxes; i++) {
    int ax = axes[i] < 0 ? axes[i] + nd : axes[i];
    if (ax < 0 || ax >= nd) {
      lc_error("roll: invalid axis %d for an array with %d dimensions", axes[i], nd);
      return NULL;
    }
    total[ax] += shifts[i]; /* rolling an axis twice adds the shifts */
  }
  bool any = false;
  for (int d = 0; d < nd; d++) {
    int64_t n = a->shape[d];
    if (n == 0) continue;
    int64_t s = ((total[d] % n) + n) % n;
    if (s == 0) continue;
    m[d] = (struct remap_axis){MAP_ROLL, (int)n, (int)s, 0};
    any = true;
  }
  if (!any) return lc_node_retain(a);
  return remap_new(a, shape, m, NULL);
}

/* ---- diag ---- */

static int diag_eval(struct lc_node *n) {
  const struct lc_node *v = n->in[0];
  int k = *(const int *)n->params;
  if (lc_node_alloc_data(n)) return 1;
  size_t isz = lc_dtype_size(n->dtype);
  memset(n->buf->data, 0, (size_t)n->size * isz);
  int64_t r0 = k < 0 ? -(int64_t)k : 0, c0 = k > 0 ? k : 0, m = n->shape[1];
  char *o = n->buf->data;
  const char *s = v->buf->data;
  for (int64_t i = 0; i < v->size; i++)
    memcpy(o + ((r0 + i) * m + c0 + i) * (int64_t)isz,
           s + (v->offset + i * v->strides[0]) * (int64_t)isz, isz);
  return 0;
}

/* Rules: diag of a vector and diagonal of a matrix are adjoint. */
static int diag_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                    struct lc_node **out) {
  (void)argnums, (void)nargs;
  return !(out[0] = lc_diagonal(cot[0], *(const int *)n->params, 0, 1));
}

static int diag_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  return !(out[0] = lc_rule_clone(n, tan));
}

static int diag_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                     struct lc_node **out, int *out_ax) {
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  if (!x) return 1;
  out[0] = lc_embed_diagonal(x, n->shape[0], n->shape[1], *(const int *)n->params);
  lc_node_release(x);
  *out_ax = 0;
  return !out[0];
}

const struct lc_prim lc_prim_diag = {.name = "diag",
                                     .eval_cpu = diag_eval,
                                     .eval_cuda = LC_CUDA(lc_cuda_eval_diag),
                                     .vjp = diag_vjp,
                                     .jvp = diag_jvp,
                                     .vmap = diag_vmap};

struct lc_node *lc_diag(struct lc_node *a, int k) {
  if (a->ndim == 2) return lc_diagonal(a, k, 0, 1);
  if (a->ndim != 1) {
    lc_error("diag: array must be 1-D or 2-D, got an array with %d dimensions", a->ndim);
    return NULL;
  }
  int64_t n = (int64_t)a->shape[0] + (k < 0 ? -(int64_t)k : k);
  if (n > INT_MAX) {
    lc_error("diag: result is too large");
    return NULL;
  }
  int shape[2] = {(int)n, (int)n};
  return lc_node_new_op(LC_OP_DIAG, a->dtype, 2, shape, 1, &a, &k, sizeof k);
}
