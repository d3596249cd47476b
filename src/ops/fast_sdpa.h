/* Internal to the attention primitive (fast_attention.c and its float
 * kernel fast_sdpa_float.c): the evaluation job shared by both kernels. */
#ifndef LC_FAST_SDPA_H
#define LC_FAST_SDPA_H

#include <stdatomic.h>

#include "core/node.h"

struct lc_sdpa_job {
  const struct lc_node *q, *k, *v, *mask, *sinks; /* mask, sinks may be NULL */
  const char *qd, *kd, *vd, *md, *sd;             /* element 0 of each */
  char *out;                                      /* (B, Hq, qL, Dv) contiguous */
  int B, Hq, Hkv, qL, kL, D, Dv;
  float scale;
  int causal;
  double lowest; /* the lowest finite value of the dtype: masked scores */
  atomic_int failed; /* set by a task that ran out of memory */
};

/* Evaluates the job for float16, bfloat16 and float32 (float arithmetic):
 * tasks of (batch, kv head, block of query rows) that share one converted,
 * transposed copy of the kv head; vectorised inner loops. */
void lc_sdpa_float(struct lc_sdpa_job *j);

#endif
