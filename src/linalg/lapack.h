/* The LAPACK routines lace calls, as OpenBLAS exports them (the Fortran
 * symbols; no lapacke.h is installed). Every argument is passed by
 * pointer; character arguments carry their hidden lengths at the end, as
 * gfortran expects. Complex matrices are interleaved (re, im) float pairs.
 *
 * LAPACK is column-major. The callers in src/linalg/ hand it lace's
 * row-major buffers where the transpose is harmless or useful, and say so
 * at each call: a row-major M x N matrix read column-major is its N x M
 * transpose. */
#ifndef LC_LINALG_LAPACK_H
#define LC_LINALG_LAPACK_H

#include <stddef.h>

typedef size_t lc_flen; /* a Fortran CHARACTER argument's hidden length */

/* LU with partial pivoting; inverse from it. */
void sgetrf_(const int *m, const int *n, float *a, const int *lda, int *ipiv, int *info);
void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
void sgetri_(const int *n, float *a, const int *lda, const int *ipiv, float *work,
             const int *lwork, int *info);
void dgetri_(const int *n, double *a, const int *lda, const int *ipiv, double *work,
             const int *lwork, int *info);

/* Triangular inverse; Cholesky. */
void strtri_(const char *uplo, const char *diag, const int *n, float *a, const int *lda, int *info,
             lc_flen, lc_flen);
void dtrtri_(const char *uplo, const char *diag, const int *n, double *a, const int *lda,
             int *info, lc_flen, lc_flen);
void spotrf_(const char *uplo, const int *n, float *a, const int *lda, int *info, lc_flen);
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info, lc_flen);

/* QR: Householder factorisation, then the explicit Q. */
void sgeqrf_(const int *m, const int *n, float *a, const int *lda, float *tau, float *work,
             const int *lwork, int *info);
void dgeqrf_(const int *m, const int *n, double *a, const int *lda, double *tau, double *work,
             const int *lwork, int *info);
void sorgqr_(const int *m, const int *n, const int *k, float *a, const int *lda, const float *tau,
             float *work, const int *lwork, int *info);
void dorgqr_(const int *m, const int *n, const int *k, double *a, const int *lda,
             const double *tau, double *work, const int *lwork, int *info);

/* SVD (divide and conquer). */
void sgesdd_(const char *jobz, const int *m, const int *n, float *a, const int *lda, float *s,
             float *u, const int *ldu, float *vt, const int *ldvt, float *work, const int *lwork,
             int *iwork, int *info, lc_flen);
void dgesdd_(const char *jobz, const int *m, const int *n, double *a, const int *lda, double *s,
             double *u, const int *ldu, double *vt, const int *ldvt, double *work,
             const int *lwork, int *iwork, int *info, lc_flen);
void cgesdd_(const char *jobz, const int *m, const int *n, float *a, const int *lda, float *s,
             float *u, const int *ldu, float *vt, const int *ldvt, float *work, const int *lwork,
             float *rwork, int *iwork, int *info, lc_flen);

/* General eigenproblem. */
void sgeev_(const char *jobvl, const char *jobvr, const int *n, float *a, const int *lda,
            float *wr, float *wi, float *vl, const int *ldvl, float *vr, const int *ldvr,
            float *work, const int *lwork, int *info, lc_flen, lc_flen);
void dgeev_(const char *jobvl, const char *jobvr, const int *n, double *a, const int *lda,
            double *wr, double *wi, double *vl, const int *ldvl, double *vr, const int *ldvr,
            double *work, const int *lwork, int *info, lc_flen, lc_flen);
void cgeev_(const char *jobvl, const char *jobvr, const int *n, float *a, const int *lda, float *w,
            float *vl, const int *ldvl, float *vr, const int *ldvr, float *work, const int *lwork,
            float *rwork, int *info, lc_flen, lc_flen);

/* Symmetric / Hermitian eigenproblem (divide and conquer). */
void ssyevd_(const char *jobz, const char *uplo, const int *n, float *a, const int *lda, float *w,
             float *work, const int *lwork, int *iwork, const int *liwork, int *info, lc_flen,
             lc_flen);
void dsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda,
             double *w, double *work, const int *lwork, int *iwork, const int *liwork, int *info,
             lc_flen, lc_flen);
void cheevd_(const char *jobz, const char *uplo, const int *n, float *a, const int *lda, float *w,
             float *work, const int *lwork, float *rwork, const int *lrwork, int *iwork,
             const int *liwork, int *info, lc_flen, lc_flen);

#endif
