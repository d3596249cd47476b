/* Launcher of the convolution's im2col kernel (gpu/cuda/conv.cu), callable
 * from C; conventions as kernels.h: plain C types, work queued on `stream`,
 * 0, LC_CU_UNSUPPORTED (nothing queued) or a negative cudaError_t. */
#ifndef LC_GPU_CUDA_CONV_H
#define LC_GPU_CUDA_CONV_H

#include <stdint.h>

#include "gpu/cuda/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LC_CU_CONV_MAXSP 3

/* The im2col matrices of output rows [r0, r0 + rows) for every group, as
 * col (groups, rows, K) row-major with K = ktaps * cg: entry (g, r, t * cg
 * + c) is input channel g * cg + c at kernel tap t (row-major over the
 * kernel extents k[]) of output row r0 + r (row-major over (N, out...)),
 * read at the input position ops/conv.h defines (0 in the padding and
 * between dilated elements). The input x (element 0) has any element
 * strides: xs[0] batch, xs[1..nsp] spatial, xs[nsp + 1] channels. dt is
 * MLX_FLOAT32 or MLX_FLOAT64 (others: LC_CU_UNSUPPORTED). */
struct lc_cu_im2col {
  int dt, nsp, flip, groups, cg;
  int64_t r0, rows;
  int out[LC_CU_CONV_MAXSP], in[LC_CU_CONV_MAXSP], k[LC_CU_CONV_MAXSP];
  int stride[LC_CU_CONV_MAXSP], lo[LC_CU_CONV_MAXSP], kdil[LC_CU_CONV_MAXSP],
      idil[LC_CU_CONV_MAXSP];
  int64_t xs[LC_CU_CONV_MAXSP + 2];
  const void *x;
  void *col;
};
int lc_cu_im2col(const struct lc_cu_im2col *a, void *stream);

#ifdef __cplusplus
}
#endif
#endif
