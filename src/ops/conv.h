/* Convolution, channels-last as MLX (new reference, or NULL after
 * reporting; node arguments are borrowed).
 *
 * input (N, spatial..., C_in), weight (C_out, kernel..., C_in / groups),
 * 1 to 3 spatial dimensions; output (N, out..., C_out) with
 *   out_i = (dil_in(in_i) + lo_i + hi_i - dil_k(k_i)) / stride_i + 1,
 *   dil(x) = (x - 1) * d + 1.
 * Output tap t of axis i reads the padded, input-dilated input at
 * t * stride_i + j * kdil_i - lo_i for kernel index j (k_i - 1 - j with
 * flip); positions between dilated elements or in the padding read 0.
 * Negative padding crops the input first (MLX). Floating inputs only; the
 * dtypes are promoted; float16/bfloat16 compute in float32.
 * One CONV primitive (im2col + OpenBLAS gemm per group; on a GPU im2col +
 * cuBLAS, gpu/cuda/eval_conv.c). */
#ifndef LC_CONV_H
#define LC_CONV_H

#include <stdbool.h>

#include "core/node.h"

#define LC_CONV_MAXSP 3

/* Params of a CONV node (plain old data, compared bytewise). Padding is
 * already non-negative (negative padding was turned into a slice). hi: the
 * padding after each spatial axis (read only by output_shape: the output's
 * extents already say how far the last window reaches). The node's inputs
 * and output have its dtype, float32 or float64. */
struct lc_conv_params {
  int nsp, groups, flip;
  int stride[LC_CONV_MAXSP], lo[LC_CONV_MAXSP], kdil[LC_CONV_MAXSP], idil[LC_CONV_MAXSP];
  int hi[LC_CONV_MAXSP];
};

/* Each per-axis array has nsp entries (nsp = input ndim - 2, checked). */
struct lc_node *lc_conv_general(const char *fn, struct lc_node *in, struct lc_node *wt,
                                const int *stride, const int *pad_lo, const int *pad_hi,
                                const int *kdil, const int *idil, int groups, bool flip);

/* MLX's transposed convolution (weight (C_out, kernel..., C_in / groups)):
 * conv_general with unit stride, input dilation = stride, kernel
 * dilation, padding lo = dil_k(k) - 1 - padding, hi = lo + output_padding,
 * flipped kernel. */
struct lc_node *lc_conv_transpose(const char *fn, struct lc_node *in, struct lc_node *wt,
                                  const int *stride, const int *padding, const int *dilation,
                                  const int *output_padding, int groups);

#endif
