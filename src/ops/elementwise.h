/* Elementwise machinery shared by the unary, binary and ternary families,
 * by astype and broadcasting, and by fused kernels.
 *
 * Builders return a new reference, or NULL after reporting; their node
 * arguments are borrowed. Elementwise primitives take inputs of exactly the
 * output's shape: builders broadcast (as views) and cast first, as MLX does,
 * so kernels never see shape mismatches. */
#ifndef LC_ELEMENTWISE_H
#define LC_ELEMENTWISE_H

#include "core/node.h"
#include "ops/prim.h"

/* The broadcast of shapes a and b (numpy rules) into out (capacity
 * max(na, nb)), *nd set. 0, or 1 after reporting "fn: shapes (2,3) and (4,)
 * cannot be broadcast". */
int lc_broadcast_shapes(const char *fn, int na, const int *a, int nb, const int *b, int *nd,
                        int *out);

/* a viewed with the given shape (a's shape must broadcast to it). Returns a
 * new reference to a itself when the shape is already equal. */
struct lc_node *lc_broadcast_to(struct lc_node *a, int ndim, const int *shape);
/* v broadcast to the broadcast of v's and like's shapes (fn names the
 * caller in errors). While a transform traces (lc_tracing), like is kept as
 * a second input that is never read, so that shapeless compile replays the
 * result in the shape like then has (zeros_like as an output); otherwise
 * it is a plain broadcast. NULL after reporting. */
struct lc_node *lc_broadcast_like(const char *fn, struct lc_node *v, struct lc_node *like);

/* a converted to dtype t (a new reference to a itself if already t). */
struct lc_node *lc_astype(struct lc_node *a, mlx_dtype t);

/* A node for elementwise primitive op over inputs that already share one
 * shape, with output dtype out_dt. */
struct lc_node *lc_ew_new(int op, mlx_dtype out_dt, int nin, struct lc_node *const *in,
                          const void *params, size_t params_size);

/* Broadcasts a and b to a common shape and casts both to dtype t; *ra and
 * *rb are new references. 0, or 1 after reporting. */
int lc_ew_prepare2(const char *fn, struct lc_node *a, struct lc_node *b, mlx_dtype t,
                   struct lc_node **ra, struct lc_node **rb);

/* eval_cpu for every LC_PF_ELEMWISE primitive: allocates (or donates) the
 * contiguous output and runs the primitive's ew kernel over strided runs. */
int lc_ew_eval_cpu(struct lc_node *n);

/* Converts n elements (input stride in_stride, output contiguous). */
void lc_convert(int64_t n, void *out, mlx_dtype out_dt, const void *in, int64_t in_stride,
                mlx_dtype in_dt);

/* eval_cpu for the broadcast view. */
int lc_broadcast_eval_cpu(struct lc_node *n);

#endif
