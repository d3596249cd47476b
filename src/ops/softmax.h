/* Softmax over any set of axes as one primitive.
 *
 * out = exp(x - max) / sum(exp(x - max)) over the axes, computed per kept
 * position in at most two passes over the input (max; exp, store and sum)
 * plus a scaling pass over the output. float16/bfloat16 compute in float32
 * whatever `precise` says (so precise = true is always honoured); float32
 * computes in float32 with a double sum; float64 in double. Integer and
 * bool inputs are cast to float32 (MLX's at_least_float); complex input is
 * an error. A size-0 array is returned as is; an empty axis list gives
 * exp(x - x) = 1 (NaN where x is not finite), as in MLX. Rows containing
 * NaN or +inf give NaN.
 * Params of SOFTMAX: int[2 + naxes] = {precise, naxes, sorted axes...}. */
#ifndef LC_SOFTMAX_H
#define LC_SOFTMAX_H

#include <stdbool.h>

#include "core/node.h"

struct lc_node *lc_softmax(struct lc_node *a, const int *axes, int naxes, bool precise);

/* As lc_softmax, naming the caller `fn` in messages. */
struct lc_node *lc_softmax_fn(const char *fn, struct lc_node *a, const int *axes, int naxes,
                              bool precise);

#endif
