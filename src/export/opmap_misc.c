/* MLX <-> lace: matmul and addmm, quantized matmul, arange, full, random
 * bits, and the fast primitives (imported only: lace writes no fast
 * primitive, because MLX's CPU backend cannot run a deserialized one). */
#include <string.h>

#include "core/error.h"
#include "export/export.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/fast.h"
#include "ops/linalg.h"
#include "ops/prim.h"
#include "ops/quant.h"
#include "ops/random.h"
#include "ops/shape.h"

/* ---- import ---- */

static int im_matmul(const struct lc_xbuild *b) {
  return !(b->out[0] = lc_matmul(b->in[0], b->in[1]));
}

/* inputs a, b, c; out = alpha * a @ b + beta * c */
static int im_addmm(const struct lc_xbuild *b) {
  return !(b->out[0] = lc_addmm(b->in[2], b->in[0], b->in[1], (float)b->st->items[0].f,
                                (float)b->st->items[1].f));
}

/* MLX's QuantizedMatmul: state (group_size, bits, mode, transpose), mode
 * a QuantizationMode (0: affine, the only one lace has, whose inputs are
 * x, w, scales, biases, the last three cast to x's dtype by MLX's op).
 * Built as lace's mlx_quantized_matmul builds it: one node where the
 * build device has it (ops/quant.h), else the dequantized decomposition. */
static int im_quantized_matmul(const struct lc_xbuild *b) {
  const struct lc_xitem *s = b->st->items;
  int gs = (int)s[0].i, bits = (int)s[1].i;
  bool transpose = s[3].i != 0;
  if (s[2].i != 0 || b->nin != 4)
    return lc_error("import_function: QuantizedMatmul of mode %d (only affine, mode 0, with "
                    "biases, is implemented)", (int)s[2].i);
  if ((gs != 32 && gs != 64 && gs != 128) || bits < 2 || bits > 8 || bits == 7)
    return lc_error("import_function: QuantizedMatmul with group size %d and %d bits", gs, bits);
  struct lc_node *x = b->in[0];
  if (!lc_dtype_is_float(x->dtype))
    return lc_error("import_function: QuantizedMatmul of a %s x", lc_dtype_name(x->dtype));
  struct lc_node *W = lc_dequantize("import_function (QuantizedMatmul)", b->in[1], b->in[2],
                                    b->in[3], gs, bits, (int)x->dtype);
  if (W && transpose) {
    struct lc_node *t = lc_swapaxes(W, -1, -2);
    lc_node_release(W);
    W = t;
  }
  if (!W) return 1;
  int rc = lc_quantized_matmul_try(x, b->in[1], b->in[2], b->in[3], transpose, gs, bits,
                                   &b->out[0]);
  if (rc < 0) rc = !(b->out[0] = lc_matmul(x, W));
  lc_node_release(W);
  return rc;
}

static int im_arange(const struct lc_xbuild *b) {
  return !(b->out[0] = lc_arange(b->st->items[0].f, b->st->items[1].f, b->st->items[2].f,
                                 b->rec[0].dtype));
}

/* Full broadcasts its (already cast) value to the recorded shape. */
static int im_full(const struct lc_xbuild *b) {
  return !(b->out[0] = lc_broadcast_to(b->in[0], b->rec[0].ndim, b->rec[0].shape));
}

static int im_random_bits(const struct lc_xbuild *b) {
  int sh[64], n = lc_xstate_ints(b->st, 0, sh, 64);
  int width = (int)b->st->items[1].i;
  if (n < 0 || (width != 1 && width != 2 && width != 4))
    return lc_error("import_function: RandomBits has an invalid state");
  return !(b->out[0] = lc_random_bits(n, sh, width, b->in[0]));
}

static int im_rms_norm(const struct lc_xbuild *b) {
  return !(b->out[0] =
               lc_fast_rms_norm(b->in[0], b->nin > 1 ? b->in[1] : NULL, (float)b->st->items[0].f));
}

static int im_layer_norm(const struct lc_xbuild *b) {
  return !(b->out[0] = lc_fast_layer_norm(b->in[0], b->nin > 1 ? b->in[1] : NULL,
                                          b->nin > 2 ? b->in[2] : NULL, (float)b->st->items[0].f));
}

/* State (dims, traditional, base, scale, forward); inputs x, offset and
 * optionally freqs. */
static int im_rope(const struct lc_xbuild *b) {
  const struct lc_xitem *s = b->st->items;
  if (!s[4].i) return lc_error("import_function: RoPE's inverse (its vjp) cannot be imported");
  bool freqs = b->nin > 2;
  return !(b->out[0] = lc_fast_rope(b->in[0], (int)s[0].i, s[1].i != 0, !freqs, (float)s[2].f,
                                    (float)s[3].f, b->in[1], freqs ? b->in[2] : NULL));
}

/* State (scale, causal, has_sinks, output_logsumexp, force_fused); inputs
 * q, k, v, then the mask, then the sinks. */
static int im_sdpa(const struct lc_xbuild *b) {
  const struct lc_xitem *s = b->st->items;
  if (s[3].i) return lc_error("import_function: attention returning its logsumexp cannot be imported");
  bool sinks = s[2].i != 0;
  int nmask = b->nin - 3 - (sinks ? 1 : 0);
  if (nmask < 0 || nmask > 1) return lc_error("import_function: ScaledDotProductAttention inputs");
  const char *mode = s[1].i ? "causal" : nmask ? "array" : "";
  return !(b->out[0] = lc_fast_sdpa(b->in[0], b->in[1], b->in[2], (float)s[0].f, mode,
                                    nmask ? b->in[3] : NULL, sinks ? b->in[b->nin - 1] : NULL));
}

const struct lc_ximp lc_ximp_misc[] = {
    {"Matmul", "", 2, 2, im_matmul},
    {"AddMM", "ff", 3, 3, im_addmm},
    {"QuantizedMatmul", "iiib", 3, 4, im_quantized_matmul},
    {"Arange", "ddd", 0, 0, im_arange},
    {"Full", "", 1, 1, im_full},
    {"RandomBits", "Ii", 1, 1, im_random_bits},
    {"RMSNorm", "f", 1, 2, im_rms_norm},
    {"LayerNorm", "f", 1, 3, im_layer_norm},
    {"RoPE", "ibffb", 2, 3, im_rope},
    {"ScaledDotProductAttention", "fbbbb", 3, 5, im_sdpa},
    {NULL, NULL, 0, 0, NULL}};

/* ---- export ---- */

/* MATMUL (ops/linalg.h): MLX's Matmul/AddMM are the plain
 * (..., M, K) @ (..., K, N) case. (c_rounded products come from compile's
 * fusion pass only, which exported programs never run.) */
static int ex_matmul(struct lc_xemit *e, const struct lc_cinstr *ins) {
  struct lc_matmul_params p;
  if (ins->params_size != sizeof p) return lc_error("internal: matmul params changed layout");
  memcpy(&p, ins->params, sizeof p);
  const struct lc_cval *a = &e->p->vals[ins->in[0]], *bv = &e->p->vals[ins->in[1]];
  bool plain = !p.gather && !p.segmented && a->ndim == p.nb + 2 && bv->ndim == p.nb + 2 &&
               p.a_split == p.nb + 1 && p.b_split == p.nb + 1;
  if (!plain)
    return lc_error("export_function: this matmul form (gather, segmented or multi-axis) has no "
                    "MLX equivalent to export");
  if (!p.has_c) return lc_xe_same(e, ins, "Matmul", "");
  return lc_xe_same(e, ins, "AddMM", "ff", (double)p.alpha, (double)p.beta);
}

/* QUANTIZED_MATMUL (ops/quant.h) as MLX's QuantizedMatmul in affine mode
 * (state: group_size, bits, mode 0, transpose) over x, w, scales, biases.
 * MLX's kernels read scales and biases in x's dtype (its op casts them);
 * the node reads them in their own and rounds the dequantized weights to
 * x's dtype, so scales or biases of another dtype are cast to x's first. */
static int ex_quantized_matmul(struct lc_xemit *e, const struct lc_cinstr *ins) {
  struct lc_qmm_params p;
  if (ins->params_size != sizeof p || ins->nin != 4)
    return lc_error("internal: quantized_matmul params changed layout");
  memcpy(&p, ins->params, sizeof p);
  mlx_dtype dt = e->p->vals[ins->in[0]].dtype;
  uint64_t in[4];
  for (int k = 0; k < 4; k++) {
    in[k] = lc_xe_id(e, ins->in[k]);
    struct lc_xout v = lc_xe_val(e, ins->in[k]);
    if (k < 2 || v.dtype == dt) continue;
    struct lc_xout c = {lc_xe_new_id(e), dt, v.ndim, v.shape};
    if (lc_xe_prim(e, "AsType", 1, &in[k], 1, &c, "D", (int)dt)) return 1;
    in[k] = c.id;
  }
  struct lc_xout o = lc_xe_val(e, ins->out[0]);
  return lc_xe_prim(e, "QuantizedMatmul", 4, in, 1, &o, "iiib", p.group_size, p.bits, 0,
                    p.transpose != 0);
}

/* lace's params {start, step}; the length is the output's. */
static int ex_arange(struct lc_xemit *e, const struct lc_cinstr *ins) {
  const double *p = ins->params;
  int len = e->p->vals[ins->out[0]].shape[0];
  return lc_xe_same(e, ins, "Arange", "ddd", p[0], p[0] + len * p[1], p[1]);
}

static int ex_random_bits(struct lc_xemit *e, const struct lc_cinstr *ins) {
  const struct lc_cval *o = &e->p->vals[ins->out[0]];
  return lc_xe_same(e, ins, "RandomBits", "Ii", o->ndim, o->shape, (int)lc_dtype_size(o->dtype));
}

const struct lc_xexp lc_xexp_misc[] = {
    {LC_OP_MATMUL, ex_matmul},
    {LC_OP_QUANTIZED_MATMUL, ex_quantized_matmul},
    {LC_OP_ARANGE, ex_arange},
    {LC_OP_RANDOM_BITS, ex_random_bits},
    {-1, NULL}};
