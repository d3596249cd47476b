/* Discrete Fourier transforms (MLX's mx.fft): the FFT primitive and its
 * builders.
 *
 * The FFT primitive transforms its input along a list of distinct axes:
 * complex to complex, real to complex (forward; the last listed axis
 * becomes n/2+1 long) or complex to real (inverse; the last listed axis
 * becomes the n its params record). It computes in single precision
 * (complex64, float32: its input is cast, as MLX does) and applies its
 * norm itself ("backward": the inverse divided by the product of the
 * transformed lengths; "ortho", "forward" as numpy's), from the shapes at
 * evaluation. Multi-axis transforms run as successive one-dimensional passes
 * over the plans of fft/fft_plan.h (on a GPU: cuFFT, gpu/cuda/eval_fft.c). */
#ifndef LC_FFT_H
#define LC_FFT_H

#include <stdbool.h>

#include "core/node.h"
#include "mlx/c/fft.h"

/* MLX's fftn / ifftn / rfftn / irfftn over axes[0..naxes) (negative count
 * from the end; distinct) with sizes n[0..naxes) (NULL: the axes' extents,
 * and for irfftn 2 * (extent - 1) along the last axis). Each axis is cut or
 * zero-padded to its size first (for irfftn the last to n/2+1). naxes == 0
 * returns a itself. fn names the caller in messages. */
struct lc_node *lc_fftn(const char *fn, struct lc_node *a, int naxes, const int *n,
                        const int *axes, bool real, bool inverse, mlx_fft_norm norm);

/* The sample frequencies of a transform of length n with spacing d
 * (numpy's fftfreq; rfftfreq when real): float32. */
struct lc_node *lc_fftfreq(const char *fn, int n, double d, bool real);

#endif
