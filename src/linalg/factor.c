/* Primitives over square or general matrices that factor in place:
 * inverse (general, or of one triangle), Cholesky, and LU with partial
 * pivoting (three outputs: LU, pivots, row indices). */
#include <string.h>

#include "core/copy.h"
#include "core/error.h"
#include "linalg/la_internal.h"
#include "linalg/linalg.h"
#include "ops/prim.h"
#include "ops/tuple.h"
#include "transforms/transforms.h"

#define LA_GETRI_FAILED 0x40000000 /* flag on an item's info: getri, not getrf, failed */

/* The number of matrices in x's batch (the product of its leading dims). */
static int64_t matrices(const struct lc_node *x) {
  return lc_shape_size(x->ndim - 2, x->shape);
}

/* Zeroes the strict lower (keep_upper) or strict upper triangle of an
 * n x n row-major matrix. */
static void zero_triangle(char *a, int n, size_t isz, bool keep_upper) {
  for (int r = 0; r < n; r++) {
    char *row = a + (size_t)r * (size_t)n * isz;
    if (keep_upper)
      memset(row, 0, (size_t)r * isz);
    else
      memset(row + (size_t)(r + 1) * isz, 0, (size_t)(n - r - 1) * isz);
  }
}

/* ---- inverse ----
 * (A^T)^-1 = (A^-1)^T: LAPACK inverts the row-major buffer read as A^T
 * and its column-major answer is A^-1 row-major. A row-major upper
 * triangle is LAPACK's lower one. */
struct inv_ctx {
  mlx_dtype t;
  size_t isz;
  int n, lwork;
  bool tri, upper;
  char *data;
};

static int inverse_item(void *arg, int64_t i, void *scratch) {
  struct inv_ctx *c = arg;
  char *a = c->data + (size_t)i * (size_t)c->n * (size_t)c->n * c->isz;
  if (c->tri) {
    int info = la_trtri(c->t, c->upper ? 'L' : 'U', c->n, a);
    zero_triangle(a, c->n, c->isz, c->upper);
    return info;
  }
  void *work = scratch; /* lwork elements, then n pivots */
  int *ipiv = (int *)((char *)scratch + (size_t)c->lwork * c->isz);
  int info = la_getrf(c->t, c->n, c->n, a, c->n, ipiv);
  if (info) return info;
  info = la_getri(c->t, c->n, a, ipiv, work, c->lwork);
  return info ? info | LA_GETRI_FAILED : 0;
}

static int inverse_eval(struct lc_node *n) {
  const struct la_inverse_params *p = n->params;
  struct inv_ctx c = {.t = n->dtype, .isz = lc_dtype_size(n->dtype), .n = n->shape[n->ndim - 1],
                      .tri = p->tri, .upper = p->upper};
  if (lc_node_alloc_data(n) || la_copy_in(n->in[0], n->buf->data, false)) return 1;
  c.data = n->buf->data;
  int64_t count = c.n ? matrices(n) : 0;
  if (!count) return 0;
  size_t scratch = 0;
  if (!c.tri) {
    if ((c.lwork = la_getri_lwork(c.t, c.n)) < 0)
      return lc_error("Inverse::eval_cpu: LU workspace calculation failed");
    scratch = (size_t)c.lwork * c.isz + (size_t)c.n * sizeof(int);
  }
  int64_t bad;
  int info;
  int rc = la_batch_run(count, scratch, la_batch_parallel(count, c.n), inverse_item, &c, &bad, &info);
  if (rc == 2) return la_report_alloc("Inverse::eval_cpu");
  if (rc == 0) return 0;
  if (c.tri)
    return lc_error("Inverse::eval_cpu: triangular inversion failed with error code %d", info);
  if (info & LA_GETRI_FAILED)
    return lc_error("Inverse::eval_cpu: inversion failed with error code %d",
                    info & ~LA_GETRI_FAILED);
  return lc_error("Inverse::eval_cpu: LU factorization failed with error code %d", info);
}

/* ---- Cholesky ----
 * A is symmetric, so the row-major buffer read column-major is A itself;
 * LAPACK's column-major upper factor U (A = U^T U) is the row-major lower
 * factor L = U^T, and conversely. As MLX, a matrix that is not positive
 * definite is not an error: the result is what potrf leaves. */
struct chol_ctx {
  mlx_dtype t;
  size_t isz;
  int n;
  bool upper;
  char *data;
};

static int cholesky_item(void *arg, int64_t i, void *scratch) {
  (void)scratch;
  struct chol_ctx *c = arg;
  char *a = c->data + (size_t)i * (size_t)c->n * (size_t)c->n * c->isz;
  int info = la_potrf(c->t, c->upper ? 'L' : 'U', c->n, a);
  zero_triangle(a, c->n, c->isz, c->upper);
  return info < 0 ? info : 0;
}

static int cholesky_eval(struct lc_node *n) {
  const struct la_cholesky_params *p = n->params;
  struct chol_ctx c = {.t = n->dtype, .isz = lc_dtype_size(n->dtype), .n = n->shape[n->ndim - 1],
                       .upper = p->upper};
  if (lc_node_alloc_data(n) || la_copy_in(n->in[0], n->buf->data, false)) return 1;
  c.data = n->buf->data;
  int64_t count = c.n ? matrices(n) : 0, bad;
  int info;
  int rc = la_batch_run(count, 0, la_batch_parallel(count, c.n), cholesky_item, &c, &bad, &info);
  if (rc == 2) return la_report_alloc("Cholesky::eval_cpu");
  if (rc) return lc_error("Cholesky::eval_cpu: Cholesky decomposition failed with error code %d", info);
  return 0;
}

/* ---- LU ----
 * getrf needs A itself, so each matrix is copied column-major into
 * scratch and the factors copied back row-major. Outputs: LU (L's unit
 * diagonal implied), pivots (uint32, 0-based: row j was swapped with row
 * pivots[j], in order j = 0, 1, ...), row indices (uint32, M per matrix):
 * the permutation P with A = (L U)[P], as MLX computes it. */
struct luf_ctx {
  mlx_dtype t;
  size_t isz;
  int m, n, k;
  char *cm;         /* column-major copies */
  int32_t *pivots;  /* k per matrix (the pivots output) */
  uint32_t *rows;   /* m per matrix */
};

static int luf_item(void *arg, int64_t i, void *scratch) {
  (void)scratch;
  struct luf_ctx *c = arg;
  char *a = c->cm + (size_t)i * (size_t)c->m * (size_t)c->n * c->isz;
  int32_t *piv = c->pivots + i * c->k;
  uint32_t *rows = c->rows + i * c->m;
  int info = la_getrf(c->t, c->m, c->n, a, c->m, piv);
  if (info < 0) return info;
  for (int j = 0; j < c->k; j++) piv[j] -= 1;
  for (int j = 0; j < c->m; j++) rows[j] = (uint32_t)j;
  for (int j = c->k - 1; j >= 0; j--) {
    uint32_t t = rows[piv[j]];
    rows[piv[j]] = rows[j];
    rows[j] = t;
  }
  return 0;
}

static int luf_eval(struct lc_node *n) {
  const struct lc_node *x = n->in[0];
  struct luf_ctx c = {.t = x->dtype, .isz = lc_dtype_size(x->dtype), .m = x->shape[x->ndim - 2],
                      .n = x->shape[x->ndim - 1]};
  c.k = c.m < c.n ? c.m : c.n;
  int64_t count = matrices(x);
  int64_t nbytes[3] = {x->size * (int64_t)c.isz, count * c.k * 4, count * c.m * 4};
  if (lc_node_alloc_data(n)) return 1;
  void *lu = la_output(n, 3, nbytes, 0);
  c.pivots = la_output(n, 3, nbytes, 1);
  c.rows = la_output(n, 3, nbytes, 2);
  if (x->size == 0) { /* nothing to factor: no pivots, rows in order */
    for (int64_t i = 0; i < count * c.m; i++) c.rows[i] = (uint32_t)(i % c.m);
    return 0;
  }
  if (!(c.cm = malloc((size_t)nbytes[0]))) return la_report_alloc("LUF::eval_cpu");
  int rc = la_copy_in(x, c.cm, true);
  int64_t bad;
  int info;
  if (!rc) {
    rc = la_batch_run(count, 0, la_batch_parallel(count, c.k), luf_item, &c, &bad, &info);
    if (rc == 2) la_report_alloc("LUF::eval_cpu");
    else if (rc)
      lc_error("LUF::eval_cpu: LU factorization failed with error code %d because argument had "
               "an illegal value", info);
  }
  if (!rc) { /* column-major scratch -> row-major LU */
    int nd = x->ndim;
    int64_t cst[nd], rst[nd];
    lc_shape_strides(nd, x->shape, rst);
    memcpy(cst, rst, sizeof cst);
    cst[nd - 2] = 1;
    cst[nd - 1] = c.m;
    rc = lc_copy_strided(nd, x->shape, c.isz, lu, rst, 0, c.cm, cst, 0);
  }
  free(c.cm);
  return rc ? 1 : 0;
}

/* ---- builders ---- */

struct lc_node *lc_la_inverse(struct lc_node *a, bool tri, bool upper) {
  const char *fn = "linalg::inv";
  if (la_check_float(fn, a->dtype) || la_check_matrix(fn, a) ||
      la_check_square(fn, a, "Inverses are only defined for square matrices."))
    return NULL;
  struct la_inverse_params p = {tri, tri && upper};
  return lc_node_new_op(LC_OP_LA_INVERSE, a->dtype, a->ndim, a->shape, 1, &a, &p, sizeof p);
}

struct lc_node *lc_linalg_cholesky(struct lc_node *a, bool upper) {
  const char *fn = "linalg::cholesky";
  if (la_check_float(fn, a->dtype) || la_check_matrix(fn, a) ||
      la_check_square(fn, a, "Cholesky decomposition is only defined for square matrices."))
    return NULL;
  struct la_cholesky_params p = {upper};
  return lc_node_new_op(LC_OP_LA_CHOLESKY, a->dtype, a->ndim, a->shape, 1, &a, &p, sizeof p);
}

int lc_la_luf(const char *fn, struct lc_node *a, struct lc_node **outs) {
  if (la_check_float(fn, a->dtype) || la_check_matrix(fn, a)) return 1;
  int nd = a->ndim, m = a->shape[nd - 2], n = a->shape[nd - 1];
  int piv_shape[nd], row_shape[nd];
  memcpy(piv_shape, a->shape, sizeof piv_shape);
  piv_shape[nd - 2] = m < n ? m : n;
  memcpy(row_shape, a->shape, sizeof row_shape);
  const mlx_dtype dts[3] = {a->dtype, MLX_UINT32, MLX_UINT32};
  const int nds[3] = {nd, nd - 1, nd - 1};
  const int *shapes[3] = {a->shape, piv_shape, row_shape};
  return lc_tuple_new(LC_OP_LA_LUF, 1, &a, NULL, 0, 3, dts, nds, shapes, outs);
}

/* ---- rules: vmap only (MLX has no derivatives for these) ----
 * Each primitive batches over leading dimensions, so vmap moves the batch
 * axis to the front and applies the primitive again. */
static int inverse_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                        struct lc_node **out, int *out_ax) {
  const struct la_inverse_params *p = n->params;
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  out[0] = x ? lc_la_inverse(x, p->tri, p->upper) : NULL;
  lc_node_release(x);
  out_ax[0] = 0;
  return out[0] ? 0 : 1;
}

static int cholesky_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                         struct lc_node **out, int *out_ax) {
  const struct la_cholesky_params *p = n->params;
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  out[0] = x ? lc_linalg_cholesky(x, p->upper) : NULL;
  lc_node_release(x);
  out_ax[0] = 0;
  return out[0] ? 0 : 1;
}

static int luf_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                    struct lc_node **out, int *out_ax) {
  (void)n;
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  int rc = !x || lc_la_luf("linalg::lu", x, out);
  lc_node_release(x);
  out_ax[0] = out_ax[1] = out_ax[2] = 0;
  return rc;
}

const struct lc_prim lc_prim_la_inverse = {
    .name = "inverse", .eval_cpu = inverse_eval, .vmap = inverse_vmap};
const struct lc_prim lc_prim_la_cholesky = {
    .name = "cholesky", .eval_cpu = cholesky_eval, .vmap = cholesky_vmap};
/* Shapeless compile: the tuple built again over new shapes. */
static int luf_tuple_build(const void *params, int nin, struct lc_node *const *in,
                           struct lc_node **outs) {
  (void)params;
  return nin != 1 || lc_la_luf("linalg::lu_factor", in[0], outs);
}
const struct lc_prim lc_prim_la_luf = {
    .name = "lu_factor", .eval_cpu = luf_eval, .vmap = luf_vmap, .tuple_build = luf_tuple_build};
