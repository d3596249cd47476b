/* Affine quantize / dequantize from elementwise, reduce and shape ops
 * (see quant.h). Intermediate nodes are held in a scope released at the
 * end; a NULL anywhere propagates (already reported). */
#include "ops/quant.h"

#include <stdlib.h>

#include "core/error.h"
#include "ops/binary.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/unary.h"

#define SCOPE_MAX 64
struct scope {
  int n;
  struct lc_node *items[SCOPE_MAX];
};

static struct lc_node *keep(struct scope *s, struct lc_node *x) {
  if (x) {
    if (s->n == SCOPE_MAX) { /* cannot happen with the fixed graphs below */
      lc_node_release(x);
      lc_error("quantize: internal scope overflow");
      return NULL;
    }
    s->items[s->n++] = x;
  }
  return x;
}

static void scope_end(struct scope *s) {
  for (int i = 0; i < s->n; i++) lc_node_release(s->items[i]);
}

typedef struct lc_node *(*fn1)(struct lc_node *);
typedef struct lc_node *(*fn2)(struct lc_node *, struct lc_node *);
/* Each applies a builder to nodes that may be NULL (then NULL), keeping the
 * result in the scope; arguments are evaluated once. */
static struct lc_node *u1(struct scope *s, fn1 f, struct lc_node *a) {
  return a ? keep(s, f(a)) : NULL;
}
static struct lc_node *b2(struct scope *s, fn2 f, struct lc_node *a, struct lc_node *b) {
  return a && b ? keep(s, f(a, b)) : NULL;
}
static struct lc_node *w3(struct scope *s, struct lc_node *c, struct lc_node *x,
                          struct lc_node *y) {
  return c && x && y ? keep(s, lc_where(c, x, y)) : NULL;
}
static struct lc_node *rnd(struct scope *s, struct lc_node *x) {
  return x ? keep(s, lc_round(x, 0)) : NULL;
}
#define B2(f, a, b) b2(&sc, f, a, b)
#define U1(f, a) u1(&sc, f, a)
#define W3(c, x, y) w3(&sc, c, x, y)
#define RND(x) rnd(&sc, x)
#define CST(t, v) keep(&sc, lc_node_new_scalar(t, v))

static struct lc_node *lc_astype_f32(struct lc_node *a) { return lc_astype(a, MLX_FLOAT32); }

int lc_quantize(struct lc_node *w, int group_size, int bits, struct lc_node **out) {
  struct scope sc = {0};
  int nd = w->ndim, K = w->shape[nd - 1], G = K / group_size;
  int gshape[nd + 1], sshape[nd], qshape[nd];
  for (int i = 0; i < nd - 1; i++) gshape[i] = sshape[i] = qshape[i] = w->shape[i];
  gshape[nd - 1] = G;
  gshape[nd] = group_size;
  sshape[nd - 1] = G;
  qshape[nd - 1] = (int)((int64_t)K * bits / 32);
  int last = nd;
  struct lc_node *g = keep(&sc, lc_reshape(w, nd + 1, gshape));
  struct lc_node *gf = U1(lc_astype_f32, g);
  struct lc_node *wmax = gf ? keep(&sc, lc_max(gf, &last, 1, true)) : NULL;
  struct lc_node *wmin = gf ? keep(&sc, lc_min(gf, &last, 1, true)) : NULL;
  struct lc_node *mask = B2(lc_greater, U1(lc_abs, wmin), U1(lc_abs, wmax));
  struct lc_node *nbins = CST(MLX_FLOAT32, (double)((1 << bits) - 1));
  struct lc_node *zero = CST(MLX_FLOAT32, 0.0);
  struct lc_node *scales =
      B2(lc_maximum, B2(lc_divide, B2(lc_subtract, wmax, wmin), nbins), CST(MLX_FLOAT32, 1e-7));
  scales = W3(mask, scales, U1(lc_negative, scales));
  struct lc_node *edge = W3(mask, wmin, wmax);
  struct lc_node *q0 = RND(B2(lc_divide, edge, scales));
  struct lc_node *nz = B2(lc_not_equal, q0, zero);
  struct lc_node *refined = B2(lc_divide, edge, q0);
  scales = W3(nz, refined, scales);
  struct lc_node *biases = W3(nz, edge, zero);
  /* q in [0, 2^bits - 1] as uint32, then a bitstream: bit b of element k
   * goes to bit (k * bits + b) of the row */
  struct lc_node *q = B2(lc_divide, B2(lc_subtract, gf, biases), scales);
  q = RND(q);
  q = q && zero && nbins ? keep(&sc, lc_clip(q, zero, nbins)) : NULL;
  q = q ? keep(&sc, lc_astype(q, MLX_UINT32)) : NULL;
  int bshape[nd + 1];
  for (int i = 0; i < nd - 1; i++) bshape[i] = w->shape[i];
  bshape[nd - 1] = K;
  bshape[nd] = 1;
  struct lc_node *qb = q ? keep(&sc, lc_reshape(q, nd + 1, bshape)) : NULL;
  struct lc_node *bitidx = keep(&sc, lc_arange(0, bits, 1, MLX_UINT32));
  struct lc_node *one = CST(MLX_UINT32, 1);
  struct lc_node *bitsv = B2(lc_bitwise_and, B2(lc_right_shift, qb, bitidx), one);
  int wshape[nd + 1];
  for (int i = 0; i < nd - 1; i++) wshape[i] = w->shape[i];
  wshape[nd - 1] = qshape[nd - 1];
  wshape[nd] = 32;
  struct lc_node *words = bitsv ? keep(&sc, lc_reshape(bitsv, nd + 1, wshape)) : NULL;
  struct lc_node *shifts = keep(&sc, lc_arange(0, 32, 1, MLX_UINT32));
  struct lc_node *packed = B2(lc_left_shift, words, shifts);
  packed = packed ? keep(&sc, lc_sum(packed, &last, 1, false)) : NULL;
  packed = packed ? keep(&sc, lc_astype(packed, MLX_UINT32)) : NULL;
  struct lc_node *s_out = scales ? keep(&sc, lc_reshape(scales, nd, sshape)) : NULL;
  struct lc_node *b_out = biases ? keep(&sc, lc_reshape(biases, nd, sshape)) : NULL;
  s_out = s_out ? keep(&sc, lc_astype(s_out, w->dtype)) : NULL;
  b_out = b_out ? keep(&sc, lc_astype(b_out, w->dtype)) : NULL;
  int rc = 1;
  if (packed && s_out && b_out) {
    out[0] = lc_node_retain(packed);
    out[1] = lc_node_retain(s_out);
    out[2] = lc_node_retain(b_out);
    rc = 0;
  }
  scope_end(&sc);
  return rc;
}

struct lc_node *lc_dequantize(const char *fn, struct lc_node *wq, struct lc_node *scales,
                              struct lc_node *biases, int group_size, int bits, int dtype) {
  int nd = wq->ndim;
  if (wq->dtype != MLX_UINT32) {
    lc_error("%s: the quantized matrix must be uint32, got %s", fn, lc_dtype_name(wq->dtype));
    return NULL;
  }
  if (nd < 1 || scales->ndim != nd || biases->ndim != nd) {
    lc_error("%s: shape of scales and biases does not match the matrix", fn);
    return NULL;
  }
  int64_t K = (int64_t)wq->shape[nd - 1] * 32 / bits;
  if (K % group_size || (int64_t)wq->shape[nd - 1] * 32 % bits) {
    lc_error("%s: the packed matrix's last dimension (%d) does not hold whole groups of %d "
             "%d-bit values", fn, wq->shape[nd - 1], group_size, bits);
    return NULL;
  }
  for (int i = 0; i < nd; i++) {
    int want = i == nd - 1 ? (int)(K / group_size) : wq->shape[i];
    if (scales->shape[i] != want || biases->shape[i] != want) {
      lc_error("%s: shape of scales and biases does not match the matrix (expected the last "
               "dimension %d)", fn, (int)(K / group_size));
      return NULL;
    }
  }
  if (!lc_dtype_is_float(scales->dtype)) {
    lc_error("%s: scales must be floating point, got %s", fn, lc_dtype_name(scales->dtype));
    return NULL;
  }
  mlx_dtype ot = dtype < 0 ? scales->dtype : (mlx_dtype)dtype;
  if (!lc_dtype_is_float(ot)) {
    lc_error("%s: the output dtype must be floating point, got %s", fn, lc_dtype_name(ot));
    return NULL;
  }
  struct scope sc = {0};
  int last = nd, s1[nd + 1], s2[nd + 1], s3[nd + 1], s4[nd];
  for (int i = 0; i < nd - 1; i++) s1[i] = s2[i] = s3[i] = s4[i] = wq->shape[i];
  /* words -> bits (..., W * 32) -> (..., K, bits) -> values (..., K) */
  s1[nd - 1] = wq->shape[nd - 1];
  s1[nd] = 1;
  struct lc_node *w1 = keep(&sc, lc_reshape(wq, nd + 1, s1));
  struct lc_node *one = CST(MLX_UINT32, 1);
  struct lc_node *b32 = keep(&sc, lc_arange(0, 32, 1, MLX_UINT32));
  struct lc_node *bitsv = B2(lc_bitwise_and, B2(lc_right_shift, w1, b32), one);
  s2[nd - 1] = (int)K;
  s2[nd] = bits;
  struct lc_node *per = bitsv ? keep(&sc, lc_reshape(bitsv, nd + 1, s2)) : NULL;
  struct lc_node *bidx = keep(&sc, lc_arange(0, bits, 1, MLX_UINT32));
  struct lc_node *vals = B2(lc_left_shift, per, bidx);
  vals = vals ? keep(&sc, lc_sum(vals, &last, 1, false)) : NULL;
  s3[nd - 1] = (int)(K / group_size);
  s3[nd] = group_size;
  struct lc_node *g = vals ? keep(&sc, lc_reshape(vals, nd + 1, s3)) : NULL;
  g = g ? keep(&sc, lc_astype(g, MLX_FLOAT32)) : NULL;
  int e = nd;
  struct lc_node *sx = keep(&sc, lc_expand_dims(scales, 1, &e));
  struct lc_node *bx = keep(&sc, lc_expand_dims(biases, 1, &e));
  sx = sx ? keep(&sc, lc_astype(sx, MLX_FLOAT32)) : NULL;
  bx = bx ? keep(&sc, lc_astype(bx, MLX_FLOAT32)) : NULL;
  struct lc_node *r = B2(lc_add, B2(lc_multiply, g, sx), bx);
  s4[nd - 1] = (int)K;
  r = r ? keep(&sc, lc_reshape(r, nd, s4)) : NULL;
  r = r ? lc_astype(r, ot) : NULL;
  scope_end(&sc);
  return r;
}
