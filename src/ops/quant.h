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

#endif
