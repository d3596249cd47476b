/* The fast family: fused row kernels with MLX's mlx::core::fast semantics
 * (rms_norm, layer_norm, rope, scaled_dot_product_attention).
 *
 * Builders borrow their node arguments (optional ones may be NULL) and
 * return a new reference, or NULL after reporting with the public
 * function's name ("mlx_fast_rms_norm: ..."). They validate shapes and
 * dtypes fully, then cast inputs to the output type as MLX does, so the
 * kernels see one floating dtype (the mask of attention may also be bool).
 *
 * Numerics: float16/bfloat16/float32 are computed in float32, float64 in
 * double. Where MLX rounds an intermediate to the output type (the
 * normalised value before the affine weight/bias), so do the kernels. */
#ifndef LC_FAST_H
#define LC_FAST_H

#include <stdbool.h>
#include <stdint.h>

#include "core/node.h"

/* x * rsqrt(mean(x^2, -1) + eps) [* weight]. weight: NULL or 1-d of x's last extent. */
struct lc_node *lc_fast_rms_norm(struct lc_node *x, struct lc_node *weight, float eps);

/* (x - mean) * rsqrt(var + eps) [* weight] [+ bias] over the last axis. */
struct lc_node *lc_fast_layer_norm(struct lc_node *x, struct lc_node *weight, struct lc_node *bias,
                                   float eps);

/* Rotary embedding of the first `dims` features of the last axis, position =
 * (index along axis -2 + offset) * scale. offset: integer node with 1 or
 * x.shape[0] elements (per batch). Exactly one of has_base / freqs. */
struct lc_node *lc_fast_rope(struct lc_node *x, int dims, bool traditional, bool has_base,
                             float base, float scale, struct lc_node *offset,
                             struct lc_node *freqs);

/* softmax(scale * q k^T + mask) v over (B, H, L, D) arrays with grouped kv
 * heads. mask_mode: "" , "causal" or "array"; mask: NULL, or bool/additive
 * broadcastable to (B, Hq, qL, kL); sinks: NULL or (Hq,). */
struct lc_node *lc_fast_sdpa(struct lc_node *q, struct lc_node *k, struct lc_node *v, float scale,
                             const char *mask_mode, struct lc_node *mask, struct lc_node *sinks);

/* Element offset (relative to lc_node_data) of row r of an evaluated node,
 * rows being the row-major enumeration of its first nlead dimensions. */
static inline int64_t lc_fast_row_offset(const struct lc_node *x, int nlead, int64_t r) {
  int64_t off = 0;
  for (int d = nlead - 1; d >= 0 && r; d--) {
    int64_t e = x->shape[d];
    off += (r % e) * x->strides[d];
    r /= e;
  }
  return off;
}

/* Whether an evaluated node's elements are row-major contiguous (extent-1
 * dimensions ignored). Reads only: safe on inputs shared with other nodes. */
static inline bool lc_fast_row_major(const struct lc_node *x) {
  int64_t want = 1;
  for (int d = x->ndim - 1; d >= 0; d--) {
    if (x->shape[d] != 1 && x->strides[d] != want) return false;
    want *= x->shape[d];
  }
  return true;
}

#endif
