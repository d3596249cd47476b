/* Collectives as lazy primitives (MLX's mlx.distributed ops).
 *
 * Builders borrow their arguments and return a new reference, or NULL
 * after reporting. On a group of size 1, all_reduce, all_gather and
 * sum_scatter return x itself (MLX: identities); send and recv are errors
 * there. Nodes hold one reference to their group (params_ref), so a group
 * lives as long as any graph or compiled program using it.
 *
 * Every rank must build and evaluate the same collectives in the same
 * order (as with MPI itself). Arrays that disagree across ranks in element
 * count or dtype are reported on every rank at evaluation instead of
 * reaching MPI (one small extra all-reduce per collective). */
#ifndef LC_DISTRIBUTED_H
#define LC_DISTRIBUTED_H

#include "core/node.h"
#include "distributed/backend.h"

/* The params of every collective node: the group is one counted
 * reference (the primitives' params_ref). */
struct lc_dist_params {
  struct lc_dist_group *g;
  int32_t op;   /* enum lc_dist_reduce (all_reduce) */
  int32_t peer; /* dst (send), src (recv); 0 otherwise */
};

struct lc_node *lc_dist_all_reduce(struct lc_node *x, struct lc_dist_group *g,
                                   enum lc_dist_reduce op);
/* Rank-ordered concatenation along axis 0 (a 0-d x gives shape [size]). */
struct lc_node *lc_dist_all_gather(struct lc_node *x, struct lc_dist_group *g);
/* Block `rank` along axis 0 of the sum; x.shape[0] divisible by size. */
struct lc_node *lc_dist_sum_scatter(struct lc_node *x, struct lc_dist_group *g);
/* Sends x to rank dst when evaluated; the result is x (MLX's send). */
struct lc_node *lc_dist_send(struct lc_node *x, int dst, struct lc_dist_group *g);
struct lc_node *lc_dist_recv(int ndim, const int *shape, mlx_dtype dt, int src,
                             struct lc_dist_group *g);

/* Every rank of g holds n elements of dtype dt (one small all-reduce);
 * else reports the disagreement, on every rank, and returns 1. */
int lc_dist_ranks_agree(const char *fn, struct lc_dist_group *g, int64_t n, mlx_dtype dt);

#ifdef LACE_CUDA
/* eval_cuda of the collectives (prims_cuda.c): on a group whose backend
 * takes this GPU's memory (NCCL), else LC_EVAL_ON_CPU. */
int lc_dist_all_reduce_cuda(struct lc_node *n);
int lc_dist_all_gather_cuda(struct lc_node *n);
int lc_dist_sum_scatter_cuda(struct lc_node *n);
int lc_dist_send_cuda(struct lc_node *n);
int lc_dist_recv_cuda(struct lc_node *n);
#endif

#endif
