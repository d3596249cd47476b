/* Graph walks and evaluation.
 * lc_graph_tape lists, in a topological order (inputs first), every node
 * reachable from `outs` that is not yet evaluated; it is iterative, so graph
 * depth is limited only by memory. lc_eval runs a tape: each node's primitive
 * computes it, then the node is detached, dropping its inputs, so an
 * intermediate buffer is freed as soon as its last consumer has run. */
#ifndef LC_GRAPH_H
#define LC_GRAPH_H

#include <stdbool.h>
#include <stddef.h>

#include "core/node.h"

struct lc_tape {
  struct lc_node **nodes; /* borrowed pointers */
  size_t len, cap;
};

/* 0, or 1 after reporting. On success the caller frees tape->nodes. With
 * `all`, evaluated nodes with inputs are walked through too (for compile). */
int lc_graph_tape(struct lc_node *const *outs, size_t nout, int all, struct lc_tape *tape);

/* The general walk under lc_graph_tape: step(n, ctx) says, for each node
 * reached (once), whether it is left out (SKIP), listed without visiting
 * its inputs (STOP), or listed after its inputs (DESCEND). 0, or 1 after
 * reporting; on success the caller frees tape->nodes. */
enum { LC_WALK_SKIP, LC_WALK_STOP, LC_WALK_DESCEND };
int lc_graph_walk(struct lc_node *const *outs, size_t nout,
                  int (*step)(const struct lc_node *n, void *ctx), void *ctx,
                  struct lc_tape *tape);

/* Evaluates outs (any may already be evaluated). 0, or 1 after reporting. */
int lc_eval(struct lc_node *const *outs, size_t nout);

/* For an eval_cuda of a GPU node n, on n's slot: every input's data on
 * n's GPU (uploaded where only the host holds it) and n's slot after the
 * slots that wrote them. Non-view primitives have this done before their
 * eval_cuda; views call it only where they copy. 0, or 1 after reporting. */
int lc_node_inputs_to_device(struct lc_node *n);
/* lc_eval without the final wait: GPU work may still be queued when it
 * returns (mlx_async_eval). Reading a result on the host (a download)
 * waits for it; errors of queued kernels surface at that wait. */
int lc_eval_async(struct lc_node *const *outs, size_t nout);

/* Hook for transforms: while > 0 on this thread, lc_eval refuses to
 * evaluate anything that depends on a placeholder (placeholders have no
 * data); arrays independent of the traced inputs evaluate as usual. */
void lc_eval_forbid(int delta);
/* This thread's current lc_eval_forbid count (compile lifts it briefly to
 * evaluate input-independent constants of a nested trace). */
int lc_eval_forbid_depth(void);

/* Brackets a function's trace by a transform (compile, vjp, jvp, vmap) on
 * this thread; lc_tracing() says whether one is under way, which is when
 * LC_NF_TRACED flags mean something. */
void lc_trace_enter(void);
void lc_trace_leave(void);
bool lc_tracing(void);

/* Hook for vjp/jvp: while > 0 on this thread, lc_eval leaves evaluated
 * nodes attached to their inputs (the graph stays walkable). */
void lc_eval_keep_graph(int delta);
/* Whether it is in effect; then no primitive may overwrite an input's
 * buffer (donation), since the input stays readable. */
bool lc_eval_keeps_graph(void);

#endif
