/* CUDA graphs for repeated evaluations (gpu/cuda/graph.c; gpu/none.c
 * declines everything).
 *
 * An evaluation whose pending nodes all run on one GPU is identified by a
 * signature: every pending node's primitive, params, dtype and shape,
 * where each input comes from (an earlier pending node, or an evaluated
 * array's buffer, offset and strides, not its address) and which nodes
 * only their consumers in the tape hold. The first evaluation with a
 * signature runs normally; the second is captured into a CUDA graph while
 * it runs; later ones give each node its buffer without running any
 * evaluator (private nodes keep the capture's blocks, others get new
 * ones), move the graph's pointers to the new inputs' and outputs'
 * addresses and launch it: one launch instead of one per kernel. Any
 * evaluation a graph cannot express (a primitive running on the CPU, a
 * host read or copy during capture, scratch memory) is refused and runs
 * normally from then on.
 *
 * Graph-mode evaluations never donate input buffers and free intermediates
 * after the whole tape has run, so that capture and replay allocate alike;
 * so a tape whose private results total more than LACE_CUDA_GRAPH_TEMP_MB
 * (64 MiB) runs normally instead, each intermediate freed after its last
 * consumer (large tapes are bound by their kernels, not by launches).
 * LACE_CUDA_GRAPHS=0 turns graphs off; the table holds a bounded number of
 * signatures (least recently used ones are evicted). */
#ifndef LC_GPU_GRAPHS_H
#define LC_GPU_GRAPHS_H

#include <stddef.h>

#include "core/node.h"

#define LC_GRAPH_DECLINED 2

/* Evaluates the tape `nodes` (every node unevaluated, inputs first) through
 * a graph where it can: 0 (done; *gpu set to the device), 1 after
 * reporting, or LC_GRAPH_DECLINED (nothing done: evaluate normally).
 * eval_node is lc_eval's per-node step. */
int lc_gpu_graph_eval(struct lc_node *const *nodes, size_t n,
                      int (*eval_node)(struct lc_node *n, int *gpu), int *gpu);

/* Turns graphs on or off for the process (initially: LACE_CUDA_GRAPHS). */
void lc_gpu_graphs_set(int on);
int lc_gpu_graphs_on(void);
/* Drops every captured graph. */
void lc_gpu_graphs_clear(void);

struct lc_gpu_graph_stats {
  unsigned long warmed;     /* first sightings, evaluated normally */
  unsigned long captured;   /* graphs captured and stored */
  unsigned long replayed;   /* evaluations done by one graph launch */
  unsigned long patched;    /* graph nodes rewritten to follow moved buffers */
  unsigned long mismatched; /* replays that could not be done */
  unsigned long refused;    /* captures abandoned (not expressible) */
  unsigned long large;      /* evaluations left to run normally: too much private memory */
};
void lc_gpu_graph_stats(struct lc_gpu_graph_stats *s);

#endif
