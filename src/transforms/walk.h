/* The graph walk shared by the transform engines (internal to
 * src/transforms/). */
#ifndef LC_TRANSFORMS_WALK_H
#define LC_TRANSFORMS_WALK_H

#include <stdbool.h>
#include <stddef.h>

#include "core/node.h"
#include "core/ptrmap.h"

/* Every node between the tracers and the outputs, inputs first.
 * Invariants after lc_twalk_build:
 *  - nodes[0..len) is a topological order of what the outputs reach,
 *    not descending below tracers, leaves and (block_stop) stop_gradient;
 *  - pos maps each listed node to its index;
 *  - dep[i]: node i is a tracer or has an input with dep (a blocked
 *    stop_gradient never has it); tracer[i]: node i is a tracer;
 *  - tnout[i] > 0 for a tuple node some dependent TUPLE_GET reads: its
 *    number of outputs. */
struct lc_twalk {
  struct lc_node **nodes; /* borrowed */
  size_t len;
  struct lc_ptrmap pos;
  unsigned char *dep, *tracer;
  int *tnout;
};

int lc_twalk_build(struct lc_twalk *w, int ntr, struct lc_node *const *tr, int nout,
                   struct lc_node *const *outs, bool block_stop);
void lc_twalk_free(struct lc_twalk *w);

/* Index of n in the walk, or -1 when it is not listed or not dependent. */
static inline long lc_twalk_dep(const struct lc_twalk *w, const struct lc_node *n) {
  intptr_t i;
  if (!lc_ptrmap_get(&w->pos, n, &i) || !w->dep[i]) return -1;
  return (long)i;
}

#endif
