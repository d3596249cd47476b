/* Broadcasting, casting and the generic elementwise evaluator. */
#include "ops/ew_loops.h" /* first: its pragma covers the casts */

#include "ops/elementwise.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "core/iter.h"
#include "ops/dtype_dispatch.h"
#include "ops/prim.h"
#include "ops/shape.h"
#include "transforms/transforms.h"

int lc_broadcast_shapes(const char *fn, int na, const int *a, int nb, const int *b, int *nd,
                        int *out) {
  int n = na > nb ? na : nb;
  for (int i = 0; i < n; i++) {
    int da = i < n - na ? 1 : a[i - (n - na)];
    int db = i < n - nb ? 1 : b[i - (n - nb)];
    if (da != db && da != 1 && db != 1) {
      char sa[128], sb[128];
      return lc_error("%s: shapes %s and %s cannot be broadcast", fn,
                      lc_shape_str(na, a, sa, sizeof sa), lc_shape_str(nb, b, sb, sizeof sb));
    }
    out[i] = da == 1 ? db : da;
  }
  *nd = n;
  return 0;
}

struct lc_node *lc_broadcast_to(struct lc_node *a, int ndim, const int *shape) {
  if (lc_shape_equal(a->ndim, a->shape, ndim, shape)) return lc_node_retain(a);
  if (ndim < a->ndim) goto bad;
  for (int i = 0; i < a->ndim; i++) {
    int d = a->shape[i], t = shape[ndim - a->ndim + i];
    if (d != t && d != 1) goto bad;
  }
  return lc_node_new_op(LC_OP_BROADCAST, a->dtype, ndim, shape, 1, &a, NULL, 0);
bad:;
  char sa[128], sb[128];
  lc_error("broadcast_to: cannot broadcast shape %s to %s",
           lc_shape_str(a->ndim, a->shape, sa, sizeof sa), lc_shape_str(ndim, shape, sb, sizeof sb));
  return NULL;
}

struct lc_node *lc_broadcast_like(const char *fn, struct lc_node *v, struct lc_node *like) {
  int cap = v->ndim > like->ndim ? v->ndim : like->ndim, nd;
  int shape[cap > 0 ? cap : 1];
  if (lc_broadcast_shapes(fn, v->ndim, v->shape, like->ndim, like->shape, &nd, shape)) return NULL;
  if (!lc_tracing()) return lc_broadcast_to(v, nd, shape);
  struct lc_node *in[2] = {v, like};
  return lc_node_new_op(LC_OP_BROADCAST, v->dtype, nd, shape, 2, in, NULL, 0);
}

int lc_broadcast_eval_cpu(struct lc_node *n) {
  const struct lc_node *a = n->in[0];
  int64_t st[n->ndim > 0 ? n->ndim : 1];
  lc_node_broadcast_strides(a, n->ndim, st);
  lc_node_set_view(n, a, st, a->offset);
  return 0;
}

static int broadcast_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                         int nargs, struct lc_node **out) {
  const struct lc_node *a = n->in[0];
  for (int j = 0; j < nargs; j++) { /* a shape partner (lc_broadcast_like) gets zero */
    out[j] = NULL;
    if (argnums[j] == 0 && !(out[j] = lc_rule_unbroadcast(cot[0], a->ndim, a->shape))) {
      while (j-- > 0) lc_node_release(out[j]);
      return 1;
    }
  }
  return 0;
}

static int broadcast_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  if (!tan[0]) return out[0] = NULL, 0; /* only the shape partner has a tangent */
  return !(out[0] = lc_broadcast_to(tan[0], n->ndim, n->shape));
}

/* The batched input (batch first) gets extent-1 axes after the batch axis
 * for the dimensions the broadcast prepends, then broadcasts. A batched
 * shape partner alone (lc_broadcast_like) leaves the result unbatched. */
static int broadcast_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                          struct lc_node **out, int *out_ax) {
  if (ax[0] == -1) {
    *out_ax = -1;
    return !(out[0] = lc_broadcast_to(in[0], n->ndim, n->shape));
  }
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  if (!x) return 1;
  int lead = n->ndim - (x->ndim - 1), sh[n->ndim + 1];
  sh[0] = x->shape[0];
  for (int d = 0; d < lead; d++) sh[1 + d] = 1;
  for (int d = 1; d < x->ndim; d++) sh[lead + d] = x->shape[d];
  struct lc_node *r = lc_reshape(x, n->ndim + 1, sh);
  lc_node_release(x);
  if (!r) return 1;
  if (n->ndim) memcpy(sh + 1, n->shape, sizeof(int) * (size_t)n->ndim);
  out[0] = lc_broadcast_to(r, n->ndim + 1, sh);
  lc_node_release(r);
  *out_ax = 0;
  return !out[0];
}

const struct lc_prim lc_prim_broadcast = {
    .name = "broadcast",
    .flags = LC_PF_VIEW | LC_PF_BROADCAST,
    .eval_cpu = lc_broadcast_eval_cpu,
    .vjp = broadcast_vjp,
    .jvp = broadcast_jvp,
    .vmap = broadcast_vmap,
};

struct lc_node *lc_ew_new(int op, mlx_dtype out_dt, int nin, struct lc_node *const *in,
                          const void *params, size_t params_size) {
  return lc_node_new_op(op, out_dt, in[0]->ndim, in[0]->shape, nin, in, params, params_size);
}

struct lc_node *lc_astype(struct lc_node *a, mlx_dtype t) {
  if (!lc_dtype_valid(t)) {
    lc_error("astype: invalid dtype %d", (int)t);
    return NULL;
  }
  if (a->dtype == t) return lc_node_retain(a);
  return lc_ew_new(LC_OP_ASTYPE, t, 1, &a, NULL, 0);
}

int lc_ew_prepare2(const char *fn, struct lc_node *a, struct lc_node *b, mlx_dtype t,
                   struct lc_node **ra, struct lc_node **rb) {
  int cap = a->ndim > b->ndim ? a->ndim : b->ndim, nd;
  int shape[cap > 0 ? cap : 1];
  if (lc_broadcast_shapes(fn, a->ndim, a->shape, b->ndim, b->shape, &nd, shape)) return 1;
  struct lc_node *ca = lc_astype(a, t), *cb = ca ? lc_astype(b, t) : NULL;
  struct lc_node *xa = cb ? lc_broadcast_to(ca, nd, shape) : NULL;
  struct lc_node *xb = xa ? lc_broadcast_to(cb, nd, shape) : NULL;
  lc_node_release(ca);
  lc_node_release(cb);
  if (!xb) {
    lc_node_release(xa);
    return 1;
  }
  *ra = xa;
  *rb = xb;
  return 0;
}

/* ---- the generic evaluator ---- */

struct ew_ctx {
  struct lc_node *n;
  lc_ew_kernel k;
  char *base[LC_ITER_MAX_OPERANDS];
  size_t isz[LC_ITER_MAX_OPERANDS];
  mlx_dtype in_dt;
};

static void ew_run(void *arg, int64_t len, const int64_t *offs, const int64_t *inner) {
  struct ew_ctx *c = arg;
  int nin = c->n->nin;
  const void *in[LC_ITER_MAX_OPERANDS];
  for (int k = 0; k < nin; k++) in[k] = c->base[k + 1] + offs[k + 1] * (int64_t)c->isz[k + 1];
  c->k(len, c->base[0] + offs[0] * (int64_t)c->isz[0], c->n->dtype, in, inner + 1, c->in_dt,
       c->n->params);
}

int lc_ew_eval_cpu(struct lc_node *n) {
  const struct lc_prim *p = lc_prims[n->op];
  int nin = n->nin;
  if (nin + 1 > LC_ITER_MAX_OPERANDS) return lc_error("%s: too many inputs", p->name);
  /* Take over an input's buffer when nobody else can see it. */
  if (lc_prim_donate_or_alloc(n)) return 1;
  struct ew_ctx c = {.n = n, .k = p->ew, .in_dt = n->in[nin - 1]->dtype};
  const int64_t *strides[LC_ITER_MAX_OPERANDS];
  int64_t offs[LC_ITER_MAX_OPERANDS];
  c.base[0] = n->buf->data;
  c.isz[0] = lc_dtype_size(n->dtype);
  strides[0] = n->strides;
  offs[0] = 0;
  for (int k = 0; k < nin; k++) {
    c.base[k + 1] = n->in[k]->buf->data;
    c.isz[k + 1] = lc_dtype_size(n->in[k]->dtype);
    strides[k + 1] = n->in[k]->strides;
    offs[k + 1] = n->in[k]->offset;
  }
  return lc_iter_runs(n->ndim, n->shape, nin + 1, strides, offs, ew_run, &c, true);
}

/* ---- astype ---- */

#define CONVERT_LOOP(ATTR, DI, SI, CI, DO, SO, CO)               \
  ATTR static void convert_##DI##_##DO(int64_t n, void *out, const void *in, int64_t s) { \
    SO *o = out;                                                 \
    const SI *x = in;                                            \
    if (s == 1)                                                  \
      for (int64_t i = 0; i < n; i++) o[i] = lc_st_##DO(lc_ld_##DI(x[i])); \
    else                                                         \
      for (int64_t i = 0; i < n; i++) o[i] = lc_st_##DO(lc_ld_##DI(x[i * s])); \
  }
#define CONVERT_TO_ALL(ATTR, DI, SI, CI)                               \
  CONVERT_LOOP(ATTR, DI, SI, CI, MLX_BOOL, bool, bool)                 \
  CONVERT_LOOP(ATTR, DI, SI, CI, MLX_UINT8, uint8_t, uint8_t)          \
  CONVERT_LOOP(ATTR, DI, SI, CI, MLX_UINT16, uint16_t, uint16_t)       \
  CONVERT_LOOP(ATTR, DI, SI, CI, MLX_UINT32, uint32_t, uint32_t)       \
  CONVERT_LOOP(ATTR, DI, SI, CI, MLX_UINT64, uint64_t, uint64_t)       \
  CONVERT_LOOP(ATTR, DI, SI, CI, MLX_INT8, int8_t, int8_t)             \
  CONVERT_LOOP(ATTR, DI, SI, CI, MLX_INT16, int16_t, int16_t)          \
  CONVERT_LOOP(ATTR, DI, SI, CI, MLX_INT32, int32_t, int32_t)          \
  CONVERT_LOOP(ATTR, DI, SI, CI, MLX_INT64, int64_t, int64_t)          \
  CONVERT_LOOP(ATTR, DI, SI, CI, MLX_FLOAT16, uint16_t, float)         \
  CONVERT_LOOP(ATTR, DI, SI, CI, MLX_FLOAT32, float, float)            \
  CONVERT_LOOP(ATTR, DI, SI, CI, MLX_FLOAT64, double, double)          \
  CONVERT_LOOP(ATTR, DI, SI, CI, MLX_BFLOAT16, uint16_t, float)        \
  CONVERT_LOOP(ATTR, DI, SI, CI, MLX_COMPLEX64, lc_c64, lc_c64)
/* From floating types the saturating casts are worth the wider vectors. */
#define CONVERT_FROM(DI, SI, CI) CONVERT_TO_ALL(, DI, SI, CI)
#define CONVERT_FROM_FLOAT(DI, SI, CI) CONVERT_TO_ALL(LC_EW_HOT, DI, SI, CI)
CONVERT_FROM(MLX_BOOL, bool, bool)
LC_FOR_INT_DTYPES(CONVERT_FROM)
LC_FOR_FLOAT_DTYPES(CONVERT_FROM_FLOAT)
CONVERT_FROM(MLX_COMPLEX64, lc_c64, lc_c64)

typedef void (*convert_fn)(int64_t, void *, const void *, int64_t);

#define TABLE_ROW(DI, SI, CI)                                         \
  [DI] = {                                                            \
      [MLX_BOOL] = convert_##DI##_MLX_BOOL,                           \
      [MLX_UINT8] = convert_##DI##_MLX_UINT8,                         \
      [MLX_UINT16] = convert_##DI##_MLX_UINT16,                       \
      [MLX_UINT32] = convert_##DI##_MLX_UINT32,                       \
      [MLX_UINT64] = convert_##DI##_MLX_UINT64,                       \
      [MLX_INT8] = convert_##DI##_MLX_INT8,                           \
      [MLX_INT16] = convert_##DI##_MLX_INT16,                         \
      [MLX_INT32] = convert_##DI##_MLX_INT32,                         \
      [MLX_INT64] = convert_##DI##_MLX_INT64,                         \
      [MLX_FLOAT16] = convert_##DI##_MLX_FLOAT16,                     \
      [MLX_FLOAT32] = convert_##DI##_MLX_FLOAT32,                     \
      [MLX_FLOAT64] = convert_##DI##_MLX_FLOAT64,                     \
      [MLX_BFLOAT16] = convert_##DI##_MLX_BFLOAT16,                   \
      [MLX_COMPLEX64] = convert_##DI##_MLX_COMPLEX64,                 \
  },
static const convert_fn convert_table[LC_NDTYPES][LC_NDTYPES] = {LC_FOR_DTYPES(TABLE_ROW)};

void lc_convert(int64_t n, void *out, mlx_dtype out_dt, const void *in, int64_t in_stride,
                mlx_dtype in_dt) {
  convert_table[in_dt][out_dt](n, out, in, in_stride);
}

static void astype_kernel(int64_t n, void *out, mlx_dtype out_dt, const void *const *in,
                          const int64_t *is, mlx_dtype in_dt, const void *params) {
  (void)params;
  convert_table[in_dt][out_dt](n, out, in[0], is[0]);
}

/* astype is linear: the cotangent goes back to the input's dtype, the
 * tangent to the output's. */
static int astype_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                      int nargs, struct lc_node **out) {
  (void)argnums, (void)nargs;
  return !(out[0] = lc_astype(cot[0], n->in[0]->dtype));
}

static int astype_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  return !(out[0] = lc_astype(tan[0], n->dtype));
}

const struct lc_prim lc_prim_astype = {
    .name = "astype",
    .flags = LC_PF_ELEMWISE,
    .eval_cpu = lc_ew_eval_cpu,
    .eval_cuda = LC_CUDA(lc_cuda_eval_elementwise),
    .ew = astype_kernel,
    .vjp = astype_vjp,
    .jvp = astype_jvp,
    .vmap = lc_rule_vmap_elementwise,
};
