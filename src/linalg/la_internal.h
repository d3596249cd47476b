/* Internals of the linalg family (src/linalg/): the primitives' params,
 * the typed LAPACK wrappers (lapack.c), the batch runner and layout
 * helpers (batch.c) and the argument checks shared by the builders.
 *
 * Every primitive treats its input as a batch of matrices over the last
 * two dimensions; leading dimensions are the batch, in row-major order. */
#ifndef LC_LA_INTERNAL_H
#define LC_LA_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/node.h"

/* ---- params (plain data, compared bytewise) ---- */
struct la_inverse_params {
  int32_t tri, upper; /* tri: triangular inverse of the `upper` (or lower) triangle */
};
struct la_cholesky_params {
  int32_t upper;
};
struct la_vectors_params {
  int32_t vectors; /* svd: compute_uv; eig/eigh: eigenvectors too */
  int32_t uplo;    /* eigh only: 'L' or 'U', the triangle read */
};

/* ---- LAPACK wrappers (lapack.c); t: MLX_FLOAT32, MLX_FLOAT64, or
 * MLX_COMPLEX64 where noted. Return LAPACK's info; *_lwork return the
 * workspace size in elements, or -1 when the query failed. ---- */
int la_getrf(mlx_dtype t, int m, int n, void *a, int lda, int *ipiv);
int la_getri_lwork(mlx_dtype t, int n);
int la_getri(mlx_dtype t, int n, void *a, const int *ipiv, void *work, int lwork);
int la_trtri(mlx_dtype t, char uplo, int n, void *a);
int la_potrf(mlx_dtype t, char uplo, int n, void *a);
int la_geqrf_lwork(mlx_dtype t, int m, int n);
int la_geqrf(mlx_dtype t, int m, int n, void *a, void *tau, void *work, int lwork);
int la_orgqr_lwork(mlx_dtype t, int m, int k);
int la_orgqr(mlx_dtype t, int m, int k, void *a, const void *tau, void *work, int lwork);
int la_gesdd_rwork(int m, int n, bool vectors); /* complex64's real workspace (floats) */
int la_gesdd_lwork(mlx_dtype t, bool vectors, int m, int n);             /* + complex64 */
int la_gesdd(mlx_dtype t, bool vectors, int m, int n, void *a, void *s, void *u, void *vt,
             void *work, int lwork, void *rwork, int *iwork);            /* + complex64 */
int la_geev_lwork(mlx_dtype t, bool vectors, int n);                     /* + complex64 */
int la_geev(mlx_dtype t, bool vectors, int n, void *a, void *w, void *vl, void *work, int lwork,
            void *rwork);                                                /* + complex64 */
int la_syevd_sizes(mlx_dtype t, bool vectors, char uplo, int n, int *lwork, int *lrwork,
                   int *liwork);                                         /* + complex64 */
int la_syevd(mlx_dtype t, bool vectors, char uplo, int n, void *a, void *w, void *work, int lwork,
             void *rwork, int lrwork, int *iwork, int liwork);           /* + complex64 */

/* ---- batches (batch.c) ---- */

/* One matrix of a batch: item(ctx, i, scratch) processes matrix i with
 * `scratch` (the runner's per-worker buffer of scratch_bytes, 64-byte
 * aligned) and returns LAPACK's info for it (0: success). */
typedef int (*la_item_fn)(void *ctx, int64_t i, void *scratch);

/* Runs item over matrices 0..count-1, on the thread pool when `parallel`.
 * Returns 0; or 1 with *bad = the lowest failing index and *info its
 * info; or 2 when scratch could not be allocated (nothing reported: the
 * caller reports, on its own thread). */
int la_batch_run(int64_t count, size_t scratch_bytes, bool parallel, la_item_fn item, void *ctx,
                 int64_t *bad, int *info);

/* Whether a batch of count n x n problems is worth the pool. */
bool la_batch_parallel(int64_t count, int n);

/* Copies x's elements (evaluated, any layout) into dst as a batch of
 * contiguous matrices, each row-major, or column-major when col_major.
 * 0, or 1 after reporting. */
int la_copy_in(const struct lc_node *x, void *dst, bool col_major);

/* Reports "fn: out of memory" (rc 2 of la_batch_run). Returns 1. */
int la_report_alloc(const char *fn);

/* ---- argument checks: 0, or 1 after reporting "fn: ..." ---- */
int la_check_float(const char *fn, mlx_dtype t);            /* float32, float64 */
int la_check_float_or_complex(const char *fn, mlx_dtype t); /* + complex64 */
int la_check_matrix(const char *fn, const struct lc_node *a); /* ndim >= 2 */
int la_check_square(const char *fn, const struct lc_node *a, const char *what);

/* The output pointer of output k of a primitive node with nout outputs
 * (nout 1: the node's own data; else its tuple's). n is allocated. */
void *la_output(struct lc_node *n, int nout, const int64_t *nbytes, int k);

#endif
