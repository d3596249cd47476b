/* Shared between the FFT primitive's files (fft.c, fft_exec.c). */
#ifndef LC_FFT_INTERNAL_H
#define LC_FFT_INTERNAL_H

#include "core/node.h"

#include <stdbool.h>

#include "mlx/c/fft.h"

/* The FFT primitive's params: ints, the axes (non-negative, distinct)
 * from FP_AXES on. FP_NOUT is the output extent along the last axis for a
 * complex-to-real transform (which its input's extent does not fix), else 0.
 * FP_NORM is the mlx_fft_norm, applied from the shapes at evaluation (so a
 * shapeless compiled function rescales for new lengths). */
enum { FP_INVERSE, FP_REAL, FP_NORM, FP_NOUT, FP_NAXES, FP_AXES };

int lc_fft_eval(struct lc_node *n);

/* The product of the transform lengths of FFT node n: its input's extents
 * along the axes for a real forward transform, its output's otherwise. */
double lc_fft_count(const struct lc_node *n);

/* The factor from the unnormalised forward / 1/count inverse transform
 * ("backward") to norm's. */
double lc_fft_norm_factor(double count, bool inverse, mlx_fft_norm norm);

#endif
