/* Relocatable CUDA graphs (gpu/cuda/graph_reloc.c): a captured graph whose
 * nodes' device pointers into given memory ranges ("slots") can be moved to
 * new bases before a launch.
 *
 * Building scans every node of the graph: a kernel's arguments (laid out by
 * cudaFuncGetParamInfo) word by word, a memset's destination, a memcpy's
 * source and destination; a word inside slot s at captured base b becomes a
 * relocation (node, byte, s, word - b). A graph with a node it cannot read
 * (another node type, arguments in the "extra" form, an unknown layout) is
 * fixed: it only launches when every slot is where it was captured.
 * Moving slots rewrites only the nodes that point into a slot that moved
 * since the last launch. */
#ifndef LC_GPU_CUDA_GRAPH_RELOC_H
#define LC_GPU_CUDA_GRAPH_RELOC_H

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lc_reloc_graph;

/* Who queued each graph node: node[k] belongs to a unit (a lace node)
 * that touches the slots slots[first[u] .. first[u + 1]). A kernel whose
 * arguments cannot be read (cuBLAS's) is then guarded instead: the graph
 * launches only while none of its unit's slots has moved. */
struct lc_cuda_known;
struct lc_reloc_owners {
  size_t n;
  const cudaGraphNode_t *node;
  const int *unit;
  const size_t *first;
  const int *slots;
  const struct lc_cuda_known *known; /* launchers' notes of their arguments */
  size_t nknown;
};

/* Takes ownership of g and exec; base[s], bytes[s] for nslot slots are the
 * captured ranges; owners may be NULL. NULL when out of memory (g and
 * exec destroyed). */
struct lc_reloc_graph *lc_reloc_build(cudaGraph_t g, cudaGraphExec_t exec, size_t nslot,
                                      void *const *base, const size_t *bytes,
                                      const struct lc_reloc_owners *owners);
void lc_reloc_free(struct lc_reloc_graph *r);
/* Whether every node could be read (slots may move). */
bool lc_reloc_movable(const struct lc_reloc_graph *r);
/* Why it is not ("" when it is). */
const char *lc_reloc_why(const struct lc_reloc_graph *r);
/* The unit and slot whose move refused the last launch, if one did. */
bool lc_reloc_blocked(const struct lc_reloc_graph *r, int *unit, int *slot);
/* Moves the slots to base[] (nslot entries) and launches on stream.
 * False (nothing launched) when a slot moved and the graph is fixed, or
 * when CUDA refused an update or the launch. *patched: nodes rewritten. */
bool lc_reloc_launch(struct lc_reloc_graph *r, void *const *base, void *stream, size_t *patched);

#endif
