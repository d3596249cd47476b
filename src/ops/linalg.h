/* The matmul family (new reference, or NULL after reporting; node arguments
 * are borrowed).
 *
 * One primitive, MATMUL, computes out[b] = alpha * A[b] @ B[b] (+ beta * C)
 * over batch index b. Its inputs share nb leading batch dimensions (already
 * broadcast, possibly as stride-0 views); after them, an input's dimensions
 * split into a row group and a column group, each viewed as one flattened
 * dimension. float32/float64/complex64 run on OpenBLAS (gemm straight on the
 * input strides when a group layout allows NoTrans/Trans, otherwise packed);
 * float16/bfloat16 are computed in float32; integer and bool types use a
 * plain loop (only outer and 0-d inner reach it, as in MLX). */
#ifndef LC_LINALG_H
#define LC_LINALG_H

#include "core/node.h"

/* numpy/MLX matmul: 1-d operands are promoted and the dimension dropped;
 * batch dimensions broadcast. Inexact types only. */
struct lc_node *lc_matmul(struct lc_node *a, struct lc_node *b);
/* beta * c + alpha * (a @ b), c broadcast to the result's shape. */
struct lc_node *lc_addmm(struct lc_node *c, struct lc_node *a, struct lc_node *b, float alpha,
                         float beta);
/* Contracts axes_a of a with axes_b of b (n pairs); the result has a's free
 * dimensions then b's. */
struct lc_node *lc_tensordot(struct lc_node *a, struct lc_node *b, const int *axes_a,
                             const int *axes_b, int n);
/* The last `axis` dimensions of a with the first `axis` of b. */
struct lc_node *lc_tensordot_axis(struct lc_node *a, struct lc_node *b, int axis);
struct lc_node *lc_inner(struct lc_node *a, struct lc_node *b);
/* MLX's gather_mm: lhs/rhs (integer, either may be NULL = every matrix in
 * order) pick matrices of a and b over their flattened batch dimensions;
 * the result has the indices' broadcast shape + (M, N). */
struct lc_node *lc_gather_mm(struct lc_node *a, struct lc_node *b, struct lc_node *lhs,
                             struct lc_node *rhs);
/* MLX's segmented_mm: a (M, K), b (K, N), segments (..., 2) of [start, end)
 * ranges of K; result (..., M, N), each a[:, s:e] @ b[s:e, :] (zeros when
 * empty). */
struct lc_node *lc_segmented_mm(struct lc_node *a, struct lc_node *b, struct lc_node *segments);
/* MLX's block_masked_mm: masks of (block x block) tiles (block 32 or 64)
 * for a (..., M/b, K/b), b (..., K/b, N/b) and the output (..., M/b, N/b),
 * any may be NULL; bool masks zero tiles, other masks scale them. */
struct lc_node *lc_block_masked_mm(struct lc_node *a, struct lc_node *b, int block,
                                   struct lc_node *mask_out, struct lc_node *mask_lhs,
                                   struct lc_node *mask_rhs);
/* (a.size, b.size): a flattened times b flattened; any dtype. */
struct lc_node *lc_outer(struct lc_node *a, struct lc_node *b);

/* The MATMUL primitive's params (rows of a are dims [nb, a_split), its
 * columns [a_split, ndim); likewise for b). */
struct lc_matmul_params {
  int nb;      /* leading batch dimensions shared by every input and the output */
  int a_split; /* a: rows are dims [nb, a_split), columns [a_split, ndim) */
  int b_split; /* b: likewise */
  int has_c;   /* third input c (output's shape): out = alpha * a @ b + beta * c */
  int gather;  /* gather_mm: a and b have one flattened batch dim; inputs 2 and 3 are
                  uint32 indices (the output's batch shape) choosing a's and b's matrix */
  int segmented; /* segmented_mm: a (M, K), b (K, N); input 2 holds uint32 [start, end)
                    pairs, one per output batch, restricting the contraction to them */
  int c_rounded; /* has_c, alpha = beta = 1: out = (a @ b rounded to the output dtype) + c,
                    added in that dtype: bit for bit the value add(matmul(a, b), c) has
                    (compile's epilogue fusion, compile/fuse_epilogue.c) */
  float alpha, beta;
};

/* MATMUL_GROUP (ops/matmul_group.c, made by compile's product fusion only):
 * a tuple of n products a @ b_k (inputs a, b_1..b_n) that share a and mm's
 * params (plain: no c, alpha 1, not gather or segmented), each of a's
 * dtype. On a GPU the GEMV kernels compute them in one launch. */
#define LC_MM_GROUP_MAX 4
#define LC_MM_GROUP_MAX_NDIM 32 /* the products' ranks it takes */
struct lc_mm_group_params {
  struct lc_matmul_params mm;
  int32_t n, pad;
};
/* Output k's shape (ndim, shape[LC_MM_GROUP_MAX_NDIM]) of a group node's
 * params over a and b: 0, or 1 when they do not form a product. */
int lc_matmul_group_out_shape(const struct lc_mm_group_params *p, struct lc_node *a,
                              struct lc_node *b, int *ndim, int *shape);
/* Every output's rank, shape and bytes of group node n. 0, or 1 after
 * reporting. */
int lc_matmul_group_outs(const struct lc_node *n, int *nds, int shapes[][LC_MM_GROUP_MAX_NDIM],
                         int64_t *nbytes);

/* Flattens dims [lo, hi) of (shape, st) into one (size, stride); false
 * when they are not equally spaced. Extent-1 dimensions are ignored. */
bool lc_matmul_group(const int *shape, const int64_t *st, int lo, int hi, int64_t *size,
                     int64_t *stride);

#endif
