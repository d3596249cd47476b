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
/* Gives n's output buffer back when nothing was queued (rc != 0: the CPU
 * may run the node instead, or the error stands); returns rc. */
int lc_cuda_finish(struct lc_node *n, int rc);
/* A launcher's answer as an eval_cuda answer: 0, LC_EVAL_ON_CPU, or 1
 * after reporting the CUDA error for primitive `name`. */
int lc_cuda_result(int rc, const char *name);

#endif
