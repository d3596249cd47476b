/* By-value wrappers over the LAPACK routines of lapack.h, dispatching on
 * the element type (float32, float64, complex64 where LAPACK has it).
 * Each returns LAPACK's info (0: success); *_lwork functions run the
 * workspace query (lwork = -1) and return the size in elements, or -1. */
#include "linalg/la_internal.h"

#include "linalg/lapack.h"

/* A workspace query's answer (stored as the routine's element type). */
static int lwork_of(mlx_dtype t, const void *w, int info) {
  if (info) return -1;
  double v = t == MLX_FLOAT64 ? *(const double *)w : *(const float *)w;
  return v < 1 ? 1 : (int)(v + 0.5);
}

int la_getrf(mlx_dtype t, int m, int n, void *a, int lda, int *ipiv) {
  int info = 0;
  if (t == MLX_FLOAT64)
    dgetrf_(&m, &n, a, &lda, ipiv, &info);
  else
    sgetrf_(&m, &n, a, &lda, ipiv, &info);
  return info;
}

int la_getri_lwork(mlx_dtype t, int n) {
  double w[2] = {0, 0};
  int info = 0, q = -1;
  if (t == MLX_FLOAT64)
    dgetri_(&n, NULL, &n, NULL, (double *)w, &q, &info);
  else
    sgetri_(&n, NULL, &n, NULL, (float *)w, &q, &info);
  return lwork_of(t, w, info);
}

int la_getri(mlx_dtype t, int n, void *a, const int *ipiv, void *work, int lwork) {
  int info = 0;
  if (t == MLX_FLOAT64)
    dgetri_(&n, a, &n, ipiv, work, &lwork, &info);
  else
    sgetri_(&n, a, &n, ipiv, work, &lwork, &info);
  return info;
}

int la_trtri(mlx_dtype t, char uplo, int n, void *a) {
  int info = 0;
  const char diag = 'N';
  if (t == MLX_FLOAT64)
    dtrtri_(&uplo, &diag, &n, a, &n, &info, 1, 1);
  else
    strtri_(&uplo, &diag, &n, a, &n, &info, 1, 1);
  return info;
}

int la_potrf(mlx_dtype t, char uplo, int n, void *a) {
  int info = 0;
  if (t == MLX_FLOAT64)
    dpotrf_(&uplo, &n, a, &n, &info, 1);
  else
    spotrf_(&uplo, &n, a, &n, &info, 1);
  return info;
}

int la_geqrf_lwork(mlx_dtype t, int m, int n) {
  double w[2] = {0, 0};
  int info = 0, q = -1;
  if (t == MLX_FLOAT64)
    dgeqrf_(&m, &n, NULL, &m, NULL, (double *)w, &q, &info);
  else
    sgeqrf_(&m, &n, NULL, &m, NULL, (float *)w, &q, &info);
  return lwork_of(t, w, info);
}

int la_geqrf(mlx_dtype t, int m, int n, void *a, void *tau, void *work, int lwork) {
  int info = 0;
  if (t == MLX_FLOAT64)
    dgeqrf_(&m, &n, a, &m, tau, work, &lwork, &info);
  else
    sgeqrf_(&m, &n, a, &m, tau, work, &lwork, &info);
  return info;
}

int la_orgqr_lwork(mlx_dtype t, int m, int k) {
  double w[2] = {0, 0};
  int info = 0, q = -1;
  if (t == MLX_FLOAT64)
    dorgqr_(&m, &k, &k, NULL, &m, NULL, (double *)w, &q, &info);
  else
    sorgqr_(&m, &k, &k, NULL, &m, NULL, (float *)w, &q, &info);
  return lwork_of(t, w, info);
}

int la_orgqr(mlx_dtype t, int m, int k, void *a, const void *tau, void *work, int lwork) {
  int info = 0;
  if (t == MLX_FLOAT64)
    dorgqr_(&m, &k, &k, a, &m, tau, work, &lwork, &info);
  else
    sorgqr_(&m, &k, &k, a, &m, tau, work, &lwork, &info);
  return info;
}

int la_gesdd_rwork(int m, int n, bool vectors) {
  int64_t mn = m < n ? m : n, mx = m < n ? n : m;
  int64_t r = vectors ? 5 * mn * mn + 5 * mn : 7 * mn;
  if (vectors && 2 * mx * mn + 2 * mn * mn + mn > r) r = 2 * mx * mn + 2 * mn * mn + mn;
  return (int)(r < 1 ? 1 : r);
}

/* gesdd with jobz 'A' (vectors) or 'N'; a is m x n column-major, lda = m,
 * u is m x m and vt n x n (ignored without vectors). */
int la_gesdd(mlx_dtype t, bool vectors, int m, int n, void *a, void *s, void *u, void *vt,
             void *work, int lwork, void *rwork, int *iwork) {
  int info = 0, ldu = vectors ? m : 1, ldvt = vectors ? n : 1;
  const char jobz = vectors ? 'A' : 'N';
  if (t == MLX_FLOAT64)
    dgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, &info, 1);
  else if (t == MLX_COMPLEX64)
    cgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, rwork, iwork, &info, 1);
  else
    sgesdd_(&jobz, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, &info, 1);
  return info;
}

int la_gesdd_lwork(mlx_dtype t, bool vectors, int m, int n) {
  double w[2] = {0, 0};
  int mn = m < n ? m : n;
  int *iwork = malloc(sizeof(int) * (size_t)(8 * (mn > 0 ? mn : 1)));
  float *rwork = t == MLX_COMPLEX64 ? malloc(sizeof(float) * (size_t)la_gesdd_rwork(m, n, vectors))
                                    : NULL;
  int info = -1;
  if (iwork && (rwork || t != MLX_COMPLEX64)) {
    int q = -1, ldu = vectors ? m : 1, ldvt = vectors ? n : 1;
    const char jobz = vectors ? 'A' : 'N';
    info = 0;
    if (t == MLX_FLOAT64)
      dgesdd_(&jobz, &m, &n, NULL, &m, NULL, NULL, &ldu, NULL, &ldvt, (double *)w, &q, iwork,
              &info, 1);
    else if (t == MLX_COMPLEX64)
      cgesdd_(&jobz, &m, &n, NULL, &m, NULL, NULL, &ldu, NULL, &ldvt, (float *)w, &q, rwork,
              iwork, &info, 1);
    else
      sgesdd_(&jobz, &m, &n, NULL, &m, NULL, NULL, &ldu, NULL, &ldvt, (float *)w, &q, iwork,
              &info, 1);
  }
  free(iwork);
  free(rwork);
  return lwork_of(t == MLX_COMPLEX64 ? MLX_FLOAT32 : t, w, info);
}

/* geev for left eigenvectors only (jobvl 'V' when vectors, jobvr 'N').
 * Real types: w holds 2n values (real parts, then imaginary parts);
 * complex: n pairs. vl is n x n column-major (ignored without vectors). */
int la_geev(mlx_dtype t, bool vectors, int n, void *a, void *w, void *vl, void *work, int lwork,
            void *rwork) {
  int info = 0, ldvl = vectors ? n : 1, one = 1;
  const char jl = vectors ? 'V' : 'N', jr = 'N';
  size_t isz = t == MLX_FLOAT64 ? sizeof(double) : sizeof(float);
  if (t == MLX_FLOAT64)
    dgeev_(&jl, &jr, &n, a, &n, w, (void *)((char *)w + isz * (size_t)n), vl, &ldvl, NULL, &one, work,
           &lwork, &info, 1, 1);
  else if (t == MLX_COMPLEX64)
    cgeev_(&jl, &jr, &n, a, &n, w, vl, &ldvl, NULL, &one, work, &lwork, rwork, &info, 1, 1);
  else
    sgeev_(&jl, &jr, &n, a, &n, w, (void *)((char *)w + isz * (size_t)n), vl, &ldvl, NULL, &one, work,
           &lwork, &info, 1, 1);
  return info;
}

int la_geev_lwork(mlx_dtype t, bool vectors, int n) {
  double w[2] = {0, 0};
  float rw[2];
  int info = 0, ldvl = vectors ? n : 1, one = 1, q = -1;
  const char jl = vectors ? 'V' : 'N', jr = 'N';
  if (t == MLX_FLOAT64)
    dgeev_(&jl, &jr, &n, NULL, &n, NULL, NULL, NULL, &ldvl, NULL, &one, (double *)w, &q, &info, 1,
           1);
  else if (t == MLX_COMPLEX64)
    cgeev_(&jl, &jr, &n, NULL, &n, NULL, NULL, &ldvl, NULL, &one, (float *)w, &q, rw, &info, 1,
           1);
  else
    sgeev_(&jl, &jr, &n, NULL, &n, NULL, NULL, NULL, &ldvl, NULL, &one, (float *)w, &q, &info, 1,
           1);
  return lwork_of(t == MLX_COMPLEX64 ? MLX_FLOAT32 : t, w, info);
}

/* syevd / heevd sizes: lwork (elements of t), lrwork (floats, complex
 * only) and liwork (ints). 0, or -1 when the query failed. */
int la_syevd_sizes(mlx_dtype t, bool vectors, char uplo, int n, int *lwork, int *lrwork,
                   int *liwork) {
  double w[2] = {0, 0};
  float rw[2] = {0, 0};
  int iw[2] = {0, 0}, info = 0, q = -1;
  const char jobz = vectors ? 'V' : 'N';
  if (t == MLX_FLOAT64)
    dsyevd_(&jobz, &uplo, &n, NULL, &n, NULL, (double *)w, &q, iw, &q, &info, 1, 1);
  else if (t == MLX_COMPLEX64)
    cheevd_(&jobz, &uplo, &n, NULL, &n, NULL, (float *)w, &q, rw, &q, iw, &q, &info, 1, 1);
  else
    ssyevd_(&jobz, &uplo, &n, NULL, &n, NULL, (float *)w, &q, iw, &q, &info, 1, 1);
  if (info) return -1;
  *lwork = lwork_of(t == MLX_COMPLEX64 ? MLX_FLOAT32 : t, w, 0);
  *lrwork = rw[0] < 1 ? 1 : (int)(rw[0] + 0.5f);
  *liwork = iw[0] < 1 ? 1 : iw[0];
  return 0;
}

int la_syevd(mlx_dtype t, bool vectors, char uplo, int n, void *a, void *w, void *work, int lwork,
             void *rwork, int lrwork, int *iwork, int liwork) {
  int info = 0;
  const char jobz = vectors ? 'V' : 'N';
  if (t == MLX_FLOAT64)
    dsyevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, &info, 1, 1);
  else if (t == MLX_COMPLEX64)
    cheevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, rwork, &lrwork, iwork, &liwork, &info, 1,
            1);
  else
    ssyevd_(&jobz, &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, &info, 1, 1);
  return info;
}
