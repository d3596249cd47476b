/* Helpers of the CUDA evaluators (gpu/cuda/eval_*.c). */
#ifndef LC_GPU_CUDA_EVAL_H
#define LC_GPU_CUDA_EVAL_H

#include "core/node.h"

/* A fresh contiguous device buffer for n on its GPU. 0, or 1 after
 * reporting. */
int lc_cuda_alloc_output(struct lc_node *n);
/* n takes over input k's buffer (lc_prim_can_donate holds and the device
 * copy is current): the GPU kernel writes it. */
void lc_cuda_take_buffer(struct lc_node *n, int k);
/* The count elements of x read through (shape, strides) (nd dims, from
 * x's device data), written row-major into fresh scratch *tmp on x's
 * stream (the caller releases *tmp once its readers are queued:
 * stream-ordered); *ptr points there. 0, LC_EVAL_ON_CPU (more dims than
 * the copy kernel takes; nothing allocated), or 1 after reporting. */
int lc_cuda_copy_to_scratch(const struct lc_node *x, int nd, const int *shape,
                            const int64_t *strides, int64_t count, struct lc_buffer **tmp,
                            const void **ptr, int dev, const char *what);
/* x's elements row-major on GPU dev: x's own device data when it is
 * contiguous (LC_NF_CONTIG), else a copy into fresh scratch *tmp
 * (lc_cuda_copy_to_scratch: the caller releases *tmp). x is not empty.
 * 0, LC_EVAL_ON_CPU or 1 after reporting. */
int lc_cuda_row_major(const struct lc_node *x, int dev, const char *what, struct lc_buffer **tmp,
                      const void **ptr);
/* Gives n's output buffer back when nothing was queued (rc != 0: the CPU
 * may run the node instead, or the error stands); returns rc. */
int lc_cuda_finish(struct lc_node *n, int rc);
/* A launcher's answer as an eval_cuda answer: 0, LC_EVAL_ON_CPU, or 1
 * after reporting the CUDA error for primitive `name`. */
int lc_cuda_result(int rc, const char *name);
/* x's elements as rows over the axes red[] marks (kept axes first, then
 * reduced ones, each ascending), row-major at *src: x's own data when its
 * layout is that already, else a strided copy into *tmp on GPU dev (the
 * caller releases it once the kernel reading it is queued; NULL when no
 * copy was made). *len: a row's length. `what` names the copy in
 * messages. 0, LC_EVAL_ON_CPU (the copy kernel declined; nothing made),
 * or 1 after reporting. */
int lc_cuda_rows_last(const struct lc_node *x, const bool *red, int dev, const char *what,
                      const void **src, struct lc_buffer **tmp, int64_t *len);

#endif
