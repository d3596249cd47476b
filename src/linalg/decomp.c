/* Decompositions of general (non-square allowed) matrices: QR (two
 * outputs: Q with orthonormal columns, upper trapezoidal R) and the SVD
 * (singular values only, or U, S, Vt). */
#include <string.h>

#include "core/error.h"
#include "linalg/la_internal.h"
#include "linalg/linalg.h"
#include "ops/prim.h"
#include "ops/tuple.h"
#include "transforms/transforms.h"

static int64_t batch_of(const struct lc_node *x) { return lc_shape_size(x->ndim - 2, x->shape); }

/* ---- QR ----
 * geqrf needs A itself: each matrix is copied column-major into scratch;
 * R is read off its upper triangle, then orgqr turns the reflectors into
 * Q's first k columns in place. */
struct qr_ctx {
  mlx_dtype t;
  size_t isz;
  int m, n, k, lwork;
  char *cm, *q, *r;
};

static int qr_item(void *arg, int64_t i, void *scratch) {
  struct qr_ctx *c = arg;
  size_t isz = c->isz;
  char *a = c->cm + (size_t)i * (size_t)c->m * (size_t)c->n * isz;
  char *tau = scratch, *work = tau + (size_t)c->k * isz;
  int info = la_geqrf(c->t, c->m, c->n, a, tau, work, c->lwork);
  if (info) return info;
  char *r = c->r + (size_t)i * (size_t)c->k * (size_t)c->n * isz;
  for (int j = 0; j < c->k; j++)
    for (int col = 0; col < c->n; col++) {
      char *dst = r + ((size_t)j * (size_t)c->n + (size_t)col) * isz;
      if (col < j)
        memset(dst, 0, isz);
      else
        memcpy(dst, a + ((size_t)col * (size_t)c->m + (size_t)j) * isz, isz);
    }
  if ((info = la_orgqr(c->t, c->m, c->k, a, tau, work, c->lwork))) return info;
  char *q = c->q + (size_t)i * (size_t)c->m * (size_t)c->k * isz;
  for (int row = 0; row < c->m; row++)
    for (int col = 0; col < c->k; col++)
      memcpy(q + ((size_t)row * (size_t)c->k + (size_t)col) * isz,
             a + ((size_t)col * (size_t)c->m + (size_t)row) * isz, isz);
  return 0;
}

static int qr_eval(struct lc_node *n) {
  const struct lc_node *x = n->in[0];
  struct qr_ctx c = {.t = x->dtype, .isz = lc_dtype_size(x->dtype), .m = x->shape[x->ndim - 2],
                     .n = x->shape[x->ndim - 1]};
  c.k = c.m < c.n ? c.m : c.n;
  int64_t count = batch_of(x);
  int64_t nbytes[2] = {count * c.m * c.k * (int64_t)c.isz, count * c.k * c.n * (int64_t)c.isz};
  if (lc_node_alloc_data(n)) return 1;
  c.q = la_output(n, 2, nbytes, 0);
  c.r = la_output(n, 2, nbytes, 1);
  if (c.k == 0 || count == 0) return 0; /* Q or R is empty, the other has no rows/cols */
  int lw1 = la_geqrf_lwork(c.t, c.m, c.n), lw2 = la_orgqr_lwork(c.t, c.m, c.k);
  if (lw1 < 0 || lw2 < 0) return lc_error("QRF::eval_cpu: workspace calculation failed");
  c.lwork = lw1 > lw2 ? lw1 : lw2;
  if (!(c.cm = malloc((size_t)(x->size * (int64_t)c.isz)))) return la_report_alloc("QRF::eval_cpu");
  int rc = la_copy_in(x, c.cm, true);
  if (!rc) {
    int64_t bad;
    int info;
    size_t scratch = ((size_t)c.k + (size_t)c.lwork) * c.isz;
    rc = la_batch_run(count, scratch, la_batch_parallel(count, c.k), qr_item, &c, &bad, &info);
    if (rc == 2) la_report_alloc("QRF::eval_cpu");
    else if (rc) lc_error("QRF::eval_cpu: QR factorization failed with error code %d", info);
  }
  free(c.cm);
  return rc ? 1 : 0;
}

/* ---- SVD ----
 * A = U S Vt gives A^T = V S U^T: gesdd on the row-major buffer (A^T,
 * column-major, n x m) writes V as its "U" and U^T as its "Vt", both
 * column-major, that is Vt and U row-major. The same holds for complex
 * A = U S V^H, whose buffer read column-major is A^T = conj(V) S U^T. */
struct svd_ctx {
  mlx_dtype t;
  size_t isz, ssz; /* element sizes of A (and U, Vt) and of S */
  int m, n, k, lwork, lrwork;
  bool vectors;
  char *a, *u, *s, *vt;
};

static int svd_item(void *arg, int64_t i, void *scratch) {
  struct svd_ctx *c = arg;
  char *a = c->a + (size_t)i * (size_t)c->m * (size_t)c->n * c->isz;
  char *s = c->s + (size_t)i * (size_t)c->k * c->ssz;
  char *u = c->vectors ? c->u + (size_t)i * (size_t)c->m * (size_t)c->m * c->isz : NULL;
  char *vt = c->vectors ? c->vt + (size_t)i * (size_t)c->n * (size_t)c->n * c->isz : NULL;
  char *work = scratch, *rwork = work + (size_t)c->lwork * c->isz;
  int *iwork = (int *)(rwork + (size_t)c->lrwork * sizeof(float));
  return la_gesdd(c->t, c->vectors, c->n, c->m, a, s, vt, u, work, c->lwork, rwork, iwork);
}

/* Identity matrices of size d x d filling `count` slots (LAPACK's factors
 * of an empty matrix). */
static void fill_identity(char *p, int64_t count, int d, mlx_dtype t) {
  size_t isz = lc_dtype_size(t);
  memset(p, 0, (size_t)count * (size_t)d * (size_t)d * isz);
  for (int64_t b = 0; b < count; b++)
    for (int j = 0; j < d; j++)
      lc_dtype_store(p + ((size_t)b * (size_t)d * (size_t)d + (size_t)j * (size_t)d + (size_t)j) * isz,
                     t, 1.0);
}

static int svd_eval(struct lc_node *n) {
  const struct la_vectors_params *p = n->params;
  const struct lc_node *x = n->in[0];
  mlx_dtype st = x->dtype == MLX_COMPLEX64 ? MLX_FLOAT32 : x->dtype;
  struct svd_ctx c = {.t = x->dtype, .isz = lc_dtype_size(x->dtype), .ssz = lc_dtype_size(st),
                      .m = x->shape[x->ndim - 2], .n = x->shape[x->ndim - 1],
                      .vectors = p->vectors};
  c.k = c.m < c.n ? c.m : c.n;
  int64_t count = batch_of(x);
  int64_t nbytes[3] = {count * c.m * c.m * (int64_t)c.isz, count * c.k * (int64_t)c.ssz,
                       count * c.n * c.n * (int64_t)c.isz};
  if (lc_node_alloc_data(n)) return 1;
  if (c.vectors) {
    c.u = la_output(n, 3, nbytes, 0);
    c.s = la_output(n, 3, nbytes, 1);
    c.vt = la_output(n, 3, nbytes, 2);
  } else {
    c.s = la_output(n, 1, nbytes + 1, 0);
  }
  if (count == 0) return 0;
  if (c.k == 0) {
    if (c.vectors) fill_identity(c.u, count, c.m, c.t), fill_identity(c.vt, count, c.n, c.t);
    return 0;
  }
  if ((c.lwork = la_gesdd_lwork(c.t, c.vectors, c.n, c.m)) < 0)
    return lc_error("SVD::eval_cpu: workspace calculation failed");
  c.lrwork = c.t == MLX_COMPLEX64 ? la_gesdd_rwork(c.n, c.m, c.vectors) : 0;
  if (!(c.a = malloc((size_t)(x->size * (int64_t)c.isz)))) return la_report_alloc("SVD::eval_cpu");
  int rc = la_copy_in(x, c.a, false);
  if (!rc) {
    int64_t bad;
    int info;
    size_t scratch = (size_t)c.lwork * c.isz + (size_t)c.lrwork * sizeof(float) +
                     (size_t)(8 * c.k) * sizeof(int);
    rc = la_batch_run(count, scratch, la_batch_parallel(count, c.k), svd_item, &c, &bad, &info);
    if (rc == 2) la_report_alloc("SVD::eval_cpu");
    else if (rc) lc_error("SVD::eval_cpu: SVD failed with error code %d", info);
  }
  free(c.a);
  return rc ? 1 : 0;
}

/* ---- builders ---- */

int lc_linalg_qr(struct lc_node *a, struct lc_node **q, struct lc_node **r) {
  const char *fn = "linalg::qr";
  if (la_check_float(fn, a->dtype) || la_check_matrix(fn, a)) return 1;
  int nd = a->ndim, m = a->shape[nd - 2], n = a->shape[nd - 1], k = m < n ? m : n;
  int qs[nd], rs[nd];
  memcpy(qs, a->shape, sizeof qs);
  memcpy(rs, a->shape, sizeof rs);
  qs[nd - 1] = k;
  rs[nd - 2] = k;
  const mlx_dtype dts[2] = {a->dtype, a->dtype};
  const int nds[2] = {nd, nd};
  const int *shapes[2] = {qs, rs};
  struct lc_node *outs[2];
  if (lc_tuple_new(LC_OP_LA_QRF, 1, &a, NULL, 0, 2, dts, nds, shapes, outs)) return 1;
  *q = outs[0];
  *r = outs[1];
  return 0;
}

int lc_linalg_svd(struct lc_node *a, bool compute_uv, struct lc_node **outs) {
  const char *fn = "linalg::svd";
  if (la_check_float_or_complex(fn, a->dtype)) return 1;
  if (a->ndim < 2)
    return lc_error("%s: Input array must have >= 2 dimensions. Received array with %d "
                    "dimensions.", fn, a->ndim);
  int nd = a->ndim, m = a->shape[nd - 2], n = a->shape[nd - 1];
  int us[nd], ss[nd], vs[nd];
  memcpy(us, a->shape, sizeof us);
  memcpy(ss, a->shape, sizeof ss);
  memcpy(vs, a->shape, sizeof vs);
  us[nd - 1] = m;
  ss[nd - 2] = m < n ? m : n;
  vs[nd - 2] = n;
  mlx_dtype st = a->dtype == MLX_COMPLEX64 ? MLX_FLOAT32 : a->dtype;
  struct la_vectors_params p = {compute_uv, 0};
  if (!compute_uv) {
    outs[0] = lc_node_new_op(LC_OP_LA_SVD, st, nd - 1, ss, 1, &a, &p, sizeof p);
    return outs[0] ? 0 : 1;
  }
  const mlx_dtype dts[3] = {a->dtype, st, a->dtype};
  const int nds[3] = {nd, nd - 1, nd};
  const int *shapes[3] = {us, ss, vs};
  return lc_tuple_new(LC_OP_LA_SVD, 1, &a, &p, sizeof p, 3, dts, nds, shapes, outs);
}

/* ---- rules: vmap only (as MLX; QR has none there, but batching is free) ---- */

static int qr_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                   struct lc_node **out, int *out_ax) {
  (void)n;
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  int rc = !x || lc_linalg_qr(x, &out[0], &out[1]);
  lc_node_release(x);
  out_ax[0] = out_ax[1] = 0;
  return rc;
}

static int svd_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                    struct lc_node **out, int *out_ax) {
  const struct la_vectors_params *p = n->params;
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  int rc = !x || lc_linalg_svd(x, p->vectors, out);
  lc_node_release(x);
  for (int k = 0; k < (p->vectors ? 3 : 1); k++) out_ax[k] = 0;
  return rc;
}

/* Shapeless compile: the tuples built again over new shapes. */
static int qr_tuple_build(const void *params, int nin, struct lc_node *const *in,
                          struct lc_node **outs) {
  (void)params;
  return nin != 1 || lc_linalg_qr(in[0], &outs[0], &outs[1]);
}
static int svd_tuple_build(const void *params, int nin, struct lc_node *const *in,
                           struct lc_node **outs) {
  const struct la_vectors_params *p = params;
  return nin != 1 || !p->vectors || lc_linalg_svd(in[0], true, outs);
}

const struct lc_prim lc_prim_la_qrf = {
    .name = "qr", .eval_cpu = qr_eval, .vmap = qr_vmap, .tuple_build = qr_tuple_build};
const struct lc_prim lc_prim_la_svd = {
    .name = "svd", .eval_cpu = svd_eval, .vmap = svd_vmap, .tuple_build = svd_tuple_build};
