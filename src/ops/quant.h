/* MLX "affine" quantization, built from other ops (new reference, or NULL
 * after reporting; node arguments borrowed).
 *
 * quantize(w (..., K) floating, group_size 32/64/128, bits 2-6 or 8):
 * per group of group_size consecutive elements of the last axis,
 * scale = max((max - min) / (2^bits - 1), 1e-7) signed toward the edge of
 * larger magnitude, edge = that extreme, q0 = round(edge / scale), scale
 * refined to edge / q0 when q0 != 0, bias = edge (0 when q0 == 0);
 * q = clip(round((w - bias) / scale), 0, 2^bits - 1), packed LSB first as
 * a bitstream into uint32 words: w_q (..., K * bits / 32); scales and
 * biases (..., K / group_size) of w's dtype.
 * dequantize: w = q * scale + bias (dtype of scales unless given). */
#ifndef LC_QUANT_H
#define LC_QUANT_H

#include <stdbool.h>

#include "core/node.h"

/* out[0..3): w_q, scales, biases (new references). 0, or 1 after reporting. */
int lc_quantize(struct lc_node *w, int group_size, int bits, struct lc_node **out);
/* dtype < 0: the scales' dtype. */
struct lc_node *lc_dequantize(const char *fn, struct lc_node *wq, struct lc_node *scales,
                              struct lc_node *biases, int group_size, int bits, int dtype);

/* QUANTIZED_MATMUL (ops/quant_mm.c): x @ W (W^T when transpose), W the
 * dequantized (w, scales, biases), in one node whose inputs are x
 * (B..., M, K) and w, scales, biases (B..., R, packed / groups), all with
 * the output's batch dimensions B... (broadcast views). The node computes
 * what the decomposition (lc_dequantize, then lc_matmul) computes, with W
 * rounded to x's dtype and float32 accumulation; its rules transform that
 * decomposition. */
struct lc_qmm_params {
  int group_size, bits, transpose;
};

/* The primitive for x @ W where it applies (a GPU build device; float32,
 * float16, bfloat16 x, scales and biases; shapes that match): 0 with *out
 * set; -1 when it does not apply (nothing reported: the caller builds the
 * decomposition, which reports any error); 1 after reporting. The arguments
 * must have passed lc_dequantize's checks. */
int lc_quantized_matmul_try(struct lc_node *x, struct lc_node *w, struct lc_node *scales,
                            struct lc_node *biases, bool transpose, int group_size, int bits,
                            struct lc_node **out);
/* The primitive itself, wherever the build device is (for tests); as
 * lc_quantized_matmul_try otherwise. */
int lc_quantized_matmul_node(struct lc_node *x, struct lc_node *w, struct lc_node *scales,
                             struct lc_node *biases, bool transpose, int group_size, int bits,
                             struct lc_node **out);

#endif
