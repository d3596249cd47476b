/* QUANTIZED_MATMUL (see quant.h): the builder, the CPU evaluator (a plain
 * loop: the node is only built for GPUs, so this runs when the GPU kernels
 * decline) and the transformation rules, which expand the node into the
 * decomposition it stands for and transform that graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/half.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/prim.h"
#include "ops/quant.h"
#include "ops/shape.h"
#include "transforms/transforms.h"

static bool qmm_dtype(mlx_dtype t) {
  return t == MLX_FLOAT32 || t == MLX_FLOAT16 || t == MLX_BFLOAT16;
}

/* The batch shape of a (nda batch dims) and b (ndb) broadcast into out
 * (rank max(nda, ndb)); false when they do not broadcast. */
static bool batch_bcast(int nda, const int *a, int ndb, const int *b, int *out, int *nd) {
  *nd = nda > ndb ? nda : ndb;
  for (int i = 0; i < *nd; i++) {
    int da = i < *nd - nda ? 1 : a[i - (*nd - nda)];
    int db = i < *nd - ndb ? 1 : b[i - (*nd - ndb)];
    if (da != db && da != 1 && db != 1) return false;
    out[i] = da == 1 ? db : da;
  }
  return true;
}

int lc_quantized_matmul_node(struct lc_node *x, struct lc_node *w, struct lc_node *scales,
                             struct lc_node *biases, bool transpose, int group_size, int bits,
                             struct lc_node **out) {
  *out = NULL;
  if (!qmm_dtype(x->dtype) || !qmm_dtype(scales->dtype) || !qmm_dtype(biases->dtype) ||
      w->dtype != MLX_UINT32 || x->ndim < 1 || w->ndim < 2 || scales->ndim != w->ndim ||
      biases->ndim != w->ndim)
    return -1;
  int wnd = w->ndim, R = w->shape[wnd - 2];
  int64_t C = (int64_t)w->shape[wnd - 1] * 32 / bits;
  int K = x->shape[x->ndim - 1], M = x->ndim == 1 ? 1 : x->shape[x->ndim - 2];
  int64_t N = transpose ? R : C;
  if (K != (transpose ? C : R) || N > 0x7fffffff) return -1;
  int xnb = x->ndim >= 2 ? x->ndim - 2 : 0, wnb = wnd - 2, nb;
  int cap = (xnb > wnb ? xnb : wnb) + 2, bs[cap];
  if (!batch_bcast(xnb, x->shape, wnb, w->shape, bs, &nb)) return -1;
  struct lc_node *in[4] = {NULL}, *src[4] = {x, w, scales, biases}, *r = NULL;
  int rc = 1;
  for (int k = 0; k < 4; k++) {
    struct lc_node *v = src[k];
    int sh[nb + 2];
    memcpy(sh, bs, sizeof(int) * (size_t)nb);
    if (k == 0) {
      sh[nb] = M;
      sh[nb + 1] = K;
    } else {
      sh[nb] = v->shape[wnd - 2];
      sh[nb + 1] = v->shape[wnd - 1];
    }
    struct lc_node *m = NULL;
    if (k == 0 && x->ndim == 1) {
      int two[2] = {1, K};
      if (!(m = lc_reshape(x, 2, two))) goto done;
      v = m;
    }
    in[k] = lc_broadcast_to(v, nb + 2, sh);
    lc_node_release(m);
    if (!in[k]) goto done;
  }
  {
    int osh[nb + 2];
    memcpy(osh, bs, sizeof(int) * (size_t)nb);
    osh[nb] = M;
    osh[nb + 1] = (int)N;
    struct lc_qmm_params p = {group_size, bits, transpose};
    r = lc_node_new_op(LC_OP_QUANTIZED_MATMUL, x->dtype, nb + 2, osh, 4, in, &p, sizeof p);
    if (!r) goto done;
    if (x->ndim == 1) { /* drop the promoted row */
      osh[nb] = (int)N;
      struct lc_node *s = lc_reshape(r, nb + 1, osh);
      lc_node_release(r);
      if (!(r = s)) goto done;
    }
  }
  *out = r;
  rc = 0;
done:
  for (int k = 0; k < 4; k++) lc_node_release(in[k]);
  return rc;
}

int lc_quantized_matmul_try(struct lc_node *x, struct lc_node *w, struct lc_node *scales,
                            struct lc_node *biases, bool transpose, int group_size, int bits,
                            struct lc_node **out) {
  *out = NULL;
  if (lc_build_device() == LC_DEV_CPU) return -1;
  return lc_quantized_matmul_node(x, w, scales, biases, transpose, group_size, bits, out);
}

/* ---- CPU evaluator ---- */

static float round_to(mlx_dtype t, float v) {
  if (t == MLX_FLOAT16) return lc_f16_to_f32(lc_f32_to_f16(v));
  if (t == MLX_BFLOAT16) return lc_bf16_to_f32(lc_f32_to_bf16(v));
  return v;
}

/* Offset of batch bi (row-major over shape[0..nb)) in x. */
static int64_t batch_offset(const struct lc_node *x, const int *shape, int nb, int64_t bi) {
  int64_t off = 0;
  for (int d = nb - 1; d >= 0; d--) {
    off += (bi % shape[d]) * x->strides[d];
    bi /= shape[d];
  }
  return off;
}

static double at(const struct lc_node *x, int64_t off) {
  return lc_dtype_load((const char *)lc_node_data(x) + off * (int64_t)lc_dtype_size(x->dtype),
                       x->dtype);
}

/* Batch bi's dequantized (R, C) matrix into W (float, rounded to t), as
 * the decomposition: q * scale + bias in float32, then dtype t. */
static void dequant_batch(const struct lc_node *n, int64_t bi, float *W, int64_t R, int64_t C) {
  const struct lc_qmm_params *p = n->params;
  const struct lc_node *w = n->in[1], *s = n->in[2], *b = n->in[3];
  int nb = n->ndim - 2;
  int64_t wo = batch_offset(w, n->shape, nb, bi), so = batch_offset(s, n->shape, nb, bi),
          bo = batch_offset(b, n->shape, nb, bi);
  const uint32_t *wd = lc_node_data(w);
  for (int64_t r = 0; r < R; r++)
    for (int64_t c = 0; c < C; c++) {
      uint32_t q = 0;
      for (int j = 0; j < p->bits; j++) {
        int64_t pos = c * p->bits + j;
        uint32_t word = wd[wo + r * w->strides[nb] + (pos / 32) * w->strides[nb + 1]];
        q |= ((word >> (pos % 32)) & 1u) << j;
      }
      int64_t g = c / p->group_size;
      float sc = (float)at(s, so + r * s->strides[nb] + g * s->strides[nb + 1]);
      float bs = (float)at(b, bo + r * b->strides[nb] + g * b->strides[nb + 1]);
      float v = (float)q * sc;
      v = v + bs;
      W[r * C + c] = round_to(n->dtype, v);
    }
}

static int qmm_eval(struct lc_node *n) {
  const struct lc_qmm_params *p = n->params;
  const struct lc_node *x = n->in[0], *w = n->in[1];
  if (lc_node_alloc_data(n)) return 1;
  if (n->size == 0) return 0;
  int nb = n->ndim - 2;
  int64_t M = n->shape[nb], N = n->shape[nb + 1], K = x->shape[nb + 1];
  int64_t R = w->shape[nb], C = (int64_t)w->shape[nb + 1] * 32 / p->bits, B = 1;
  for (int d = 0; d < nb; d++) B *= n->shape[d];
  float *W = malloc(sizeof(float) * (size_t)(R * C > 0 ? R * C : 1));
  if (!W) return lc_error("quantized_matmul: out of memory");
  size_t osz = lc_dtype_size(n->dtype);
  char *o = n->buf->data;
  for (int64_t bi = 0; bi < B; bi++) {
    dequant_batch(n, bi, W, R, C);
    int64_t xo = batch_offset(x, n->shape, nb, bi);
    for (int64_t m = 0; m < M; m++)
      for (int64_t j = 0; j < N; j++) {
        float acc = 0.0f;
        for (int64_t k = 0; k < K; k++) {
          float xv = (float)at(x, xo + m * x->strides[nb] + k * x->strides[nb + 1]);
          float wv = p->transpose ? W[j * C + k] : W[k * C + j];
          acc += xv * wv;
        }
        lc_dtype_store(o + ((bi * M + m) * N + j) * (int64_t)osz, n->dtype, acc);
      }
  }
  free(W);
  return 0;
}

/* ---- rules: on the decomposition ---- */

/* x @ W over inputs in (x, w, scales, biases, the node's layout). */
static struct lc_node *expand(const struct lc_node *n, struct lc_node *const *in) {
  const struct lc_qmm_params *p = n->params;
  struct lc_node *W = lc_dequantize("quantized_matmul", in[1], in[2], in[3], p->group_size,
                                    p->bits, (int)n->dtype);
  if (W && p->transpose) {
    struct lc_node *t = lc_swapaxes(W, -1, -2);
    lc_node_release(W);
    W = t;
  }
  struct lc_node *r = W ? lc_matmul(in[0], W) : NULL;
  lc_node_release(W);
  return r;
}

static int tracers(const struct lc_node *n, struct lc_node **tr) {
  for (int k = 0; k < n->nin; k++)
    if (!(tr[k] = lc_tracer(n->in[k]))) {
      lc_rule_release(tr, k);
      return 1;
    }
  return 0;
}

static int qmm_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                   struct lc_node **out) {
  struct lc_node *tr[4], *grads[4], *o;
  if (tracers(n, tr)) return 1;
  int rc = !(o = expand(n, tr));
  if (!rc) {
    rc = lc_vjp_graph(4, tr, 1, &o, cot, grads);
    lc_node_release(o);
  }
  if (!rc) {
    for (int j = 0; j < nargs; j++) {
      out[j] = grads[argnums[j]];
      grads[argnums[j]] = NULL;
    }
    lc_rule_release(grads, 4);
  }
  lc_rule_release(tr, 4);
  return rc;
}

static int qmm_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  struct lc_node *tr[4], *o;
  if (tracers(n, tr)) return 1;
  int rc = !(o = expand(n, tr));
  if (!rc) {
    rc = lc_jvp_graph(4, tr, tan, 1, &o, out);
    lc_node_release(o);
  }
  lc_rule_release(tr, 4);
  return rc;
}

static int qmm_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                    struct lc_node **out, int *out_ax) {
  struct lc_node *s_in[4], *o;
  int zero = 0;
  for (int k = 0; k < 4; k++) {
    s_in[k] = ax[k] == -1 ? lc_node_retain(n->in[k]) : lc_tracer(n->in[k]);
    if (!s_in[k]) {
      lc_rule_release(s_in, k);
      return 1;
    }
  }
  int rc = !(o = expand(n, s_in));
  if (!rc) {
    rc = lc_vmap_graph(4, in, s_in, ax, 1, &o, &zero, out);
    lc_node_release(o);
  }
  if (!rc) *out_ax = 0;
  lc_rule_release(s_in, 4);
  return rc;
}

static int qmm_describe(const struct lc_node *n, char *buf, size_t len) {
  const struct lc_qmm_params *p = n->params;
  return snprintf(buf, len, "group_size=%d bits=%d transpose=%d", p->group_size, p->bits,
                  p->transpose);
}

const struct lc_prim lc_prim_quantized_matmul = {
    .name = "quantized_matmul",
    .eval_cpu = qmm_eval,
    .eval_cuda = LC_CUDA(lc_cuda_eval_quantized_matmul),
    .vjp = qmm_vjp,
    .jvp = qmm_jvp,
    .vmap = qmm_vmap,
    .describe = qmm_describe};
