/* Linear algebra builders (mlx's linalg namespace) on LAPACK.
 * Each borrows its arguments and returns new references (or fills outs),
 * or NULL / 1 after reporting, with MLX's shape, dtype and error rules.
 * Matrices are the last two dimensions; leading dimensions are a batch.
 * Factorisations accept float32 and float64; svd, eig, eigvals, eigh and
 * eigvalsh also complex64. Errors found while evaluating (a singular
 * matrix for inv, LAPACK non-convergence) are reported by eval. */
#ifndef LC_LINALG_LAPACK_BUILDERS_H
#define LC_LINALG_LAPACK_BUILDERS_H

#include <stdbool.h>

#include "core/node.h"

/* ---- primitives (factor.c, decomp.c, eig.c) ---- */
/* The inverse (tri: of the upper or lower triangle, the other ignored). */
struct lc_node *lc_la_inverse(struct lc_node *a, bool tri, bool upper);
/* L (or U when upper) with A = L L^T; a matrix that is not positive
 * definite gives what LAPACK leaves (MLX reports nothing either). */
struct lc_node *lc_linalg_cholesky(struct lc_node *a, bool upper);
/* The LU primitive: outs[0] LU, outs[1] pivots (uint32, k per matrix),
 * outs[2] row indices (uint32, m per matrix). fn names the caller. */
int lc_la_luf(const char *fn, struct lc_node *a, struct lc_node **outs);
int lc_linalg_qr(struct lc_node *a, struct lc_node **q, struct lc_node **r);
/* compute_uv: outs[0..3) = U, S, Vt; else outs[0] = S. */
int lc_linalg_svd(struct lc_node *a, bool compute_uv, struct lc_node **outs);
int lc_linalg_eig(struct lc_node *a, struct lc_node **w, struct lc_node **v);
struct lc_node *lc_linalg_eigvals(struct lc_node *a);
/* uplo: "L" or "U", the triangle read. */
int lc_linalg_eigh(struct lc_node *a, const char *uplo, struct lc_node **w, struct lc_node **v);
struct lc_node *lc_linalg_eigvalsh(struct lc_node *a, const char *uplo);

/* ---- compositions (compose.c) ---- */
struct lc_node *lc_linalg_inv(struct lc_node *a);
struct lc_node *lc_linalg_tri_inv(struct lc_node *a, bool upper);
struct lc_node *lc_linalg_cholesky_inv(struct lc_node *l, bool upper);
struct lc_node *lc_linalg_pinv(struct lc_node *a);
/* outs[0] row pivots P (uint32), outs[1] L, outs[2] U: A = L[P] U. */
int lc_linalg_lu(struct lc_node *a, struct lc_node **outs);
int lc_linalg_lu_factor(struct lc_node *a, struct lc_node **lu, struct lc_node **pivots);
struct lc_node *lc_linalg_solve(struct lc_node *a, struct lc_node *b);
struct lc_node *lc_linalg_solve_triangular(struct lc_node *a, struct lc_node *b, bool upper);

/* ---- norms and cross (norm.c) ----
 * axes == NULL: MLX's "no axis" (all dimensions); naxes is then ignored. */
struct lc_node *lc_linalg_norm_l2(struct lc_node *a, const int *axes, int naxes, bool keepdims);
struct lc_node *lc_linalg_norm(struct lc_node *a, double ord, const int *axes, int naxes,
                               bool keepdims);
/* ord: "fro" (or "f") or "nuc"; two axes. */
struct lc_node *lc_linalg_norm_matrix(struct lc_node *a, const char *ord, const int *axes,
                                      int naxes, bool keepdims);
struct lc_node *lc_linalg_cross(struct lc_node *a, struct lc_node *b, int axis);

/* ---- random.multivariate_normal (mvn.c); key NULL: the global sequence ---- */
struct lc_node *lc_linalg_multivariate_normal(struct lc_node *mean, struct lc_node *cov, int ndim,
                                              const int *shape, mlx_dtype t, struct lc_node *key);

#endif
