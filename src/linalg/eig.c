/* Eigenproblems of square matrices: general (geev; complex64 values and
 * vectors whatever the input type, as MLX) and symmetric / Hermitian
 * (syevd / heevd; real values, ascending). Each has a values-only form
 * (one output) and a values-and-vectors form (two outputs: values, then
 * vectors as the columns of a matrix). */
#include <string.h>

#include "core/error.h"
#include "linalg/la_internal.h"
#include "linalg/linalg.h"
#include "ops/prim.h"
#include "ops/tuple.h"
#include "transforms/transforms.h"

/* ---- general ----
 * The row-major buffer read column-major is A^T. geev's left eigenvectors
 * of A^T (u^H A^T = w u^H) are, conjugated, the right eigenvectors of A
 * (A conj(u) = w conj(u)); the eigenvalues of A^T are A's. For real types
 * LAPACK packs a conjugate pair (w, conj w) as the columns re, im of u. */
struct eig_ctx {
  mlx_dtype t;
  size_t isz;
  int n, lwork;
  bool vectors;
  char *a;
  float *w, *v; /* complex64 outputs: n values, n x n vectors per matrix */
};

static double elem(const char *p, mlx_dtype t, size_t i) {
  return t == MLX_FLOAT64 ? ((const double *)p)[i] : ((const float *)p)[i];
}

/* Writes output column j (re + i*im per row) of the n x n vector matrix. */
static void eig_column(const struct eig_ctx *c, float *v, int j, const char *re, const char *im,
                       double im_sign) {
  for (int r = 0; r < c->n; r++) {
    float *z = v + 2 * ((size_t)r * (size_t)c->n + (size_t)j);
    z[0] = (float)elem(re, c->t, (size_t)r);
    z[1] = im ? (float)(im_sign * elem(im, c->t, (size_t)r)) : 0.0f;
  }
}

static void eig_real_outputs(const struct eig_ctx *c, const char *w, const char *vl, float *vals,
                             float *v) {
  int n = c->n;
  size_t col = (size_t)n * c->isz;
  for (int j = 0; j < n; j++) {
    vals[2 * j] = (float)elem(w, c->t, (size_t)j);
    vals[2 * j + 1] = (float)elem(w, c->t, (size_t)(n + j));
  }
  if (!v) return;
  for (int j = 0; j < n; j++) {
    if (elem(w, c->t, (size_t)(n + j)) != 0 && j + 1 < n) {
      const char *re = vl + (size_t)j * col, *im = vl + (size_t)(j + 1) * col;
      eig_column(c, v, j, re, im, -1.0);
      eig_column(c, v, j + 1, re, im, 1.0);
      j++;
    } else {
      eig_column(c, v, j, vl + (size_t)j * col, NULL, 0);
    }
  }
}

static int eig_item(void *arg, int64_t i, void *scratch) {
  struct eig_ctx *c = arg;
  int n = c->n;
  size_t nn = (size_t)n * (size_t)n;
  char *a = c->a + (size_t)i * nn * c->isz;
  float *vals = c->w + 2 * (size_t)i * (size_t)n;
  float *v = c->vectors ? c->v + 2 * (size_t)i * nn : NULL;
  /* scratch: work (lwork), w (2n reals or n complex), vl (n x n), rwork (2n floats) */
  char *work = scratch, *w = work + (size_t)c->lwork * c->isz, *vl = w + 2 * (size_t)n * c->isz;
  char *rwork = vl + (c->vectors ? nn : 1) * c->isz;
  if (c->t != MLX_COMPLEX64) {
    int info = la_geev(c->t, c->vectors, n, a, w, vl, work, c->lwork, NULL);
    if (!info) eig_real_outputs(c, w, vl, vals, v);
    return info;
  }
  /* complex: values straight into the output, vectors conjugated */
  int info = la_geev(c->t, c->vectors, n, a, vals, c->vectors ? vl : NULL, work, c->lwork, rwork);
  if (info || !v) return info;
  const float *u = (const float *)vl;
  for (int j = 0; j < n; j++)
    for (int r = 0; r < n; r++) {
      const float *src = u + 2 * ((size_t)j * (size_t)n + (size_t)r);
      float *dst = v + 2 * ((size_t)r * (size_t)n + (size_t)j);
      dst[0] = src[0];
      dst[1] = -src[1];
    }
  return 0;
}

static int eig_eval(struct lc_node *n) {
  const struct la_vectors_params *p = n->params;
  const struct lc_node *x = n->in[0];
  struct eig_ctx c = {.t = x->dtype, .isz = lc_dtype_size(x->dtype), .n = x->shape[x->ndim - 1],
                      .vectors = p->vectors};
  int64_t count = lc_shape_size(x->ndim - 2, x->shape);
  int64_t nbytes[2] = {count * c.n * 8, count * c.n * c.n * 8};
  if (lc_node_alloc_data(n)) return 1;
  c.w = la_output(n, c.vectors ? 2 : 1, nbytes, 0);
  c.v = c.vectors ? la_output(n, 2, nbytes, 1) : NULL;
  if (count == 0 || c.n == 0) return 0;
  if ((c.lwork = la_geev_lwork(c.t, c.vectors, c.n)) < 0)
    return lc_error("Eig::eval_cpu: workspace calculation failed");
  if (!(c.a = malloc((size_t)(x->size * (int64_t)c.isz)))) return la_report_alloc("Eig::eval_cpu");
  int rc = la_copy_in(x, c.a, false);
  if (!rc) {
    size_t nn = (size_t)c.n * (size_t)c.n;
    size_t scratch = ((size_t)c.lwork + 2 * (size_t)c.n + (c.vectors ? nn : 1)) * c.isz +
                     2 * (size_t)c.n * sizeof(float);
    int64_t bad;
    int info;
    rc = la_batch_run(count, scratch, la_batch_parallel(count, c.n), eig_item, &c, &bad, &info);
    if (rc == 2) la_report_alloc("Eig::eval_cpu");
    else if (rc)
      lc_error("Eig::eval_cpu: Eigenvalue decomposition failed with error code %d", info);
  }
  free(c.a);
  return rc ? 1 : 0;
}

/* ---- symmetric / Hermitian ----
 * The row-major buffer read column-major is A^T (= conj(A) for Hermitian
 * A): its lower triangle is A's upper one, so UPLO is flipped. Its
 * eigenvalues are A's; its eigenvectors conj(v) come back as columns of
 * the column-major buffer, transposed (and conjugated) into the output. */
struct eigh_ctx {
  mlx_dtype t;
  size_t isz, wsz;
  int n, lwork, lrwork, liwork;
  bool vectors;
  char uplo; /* LAPACK's, already flipped */
  char *a, *w, *v;
};

static int eigh_item(void *arg, int64_t i, void *scratch) {
  struct eigh_ctx *c = arg;
  int n = c->n;
  size_t nn = (size_t)n * (size_t)n;
  char *a = c->a + (size_t)i * nn * c->isz;
  char *w = c->w + (size_t)i * (size_t)n * c->wsz;
  char *work = scratch, *rwork = work + (size_t)c->lwork * c->isz;
  int *iwork = (int *)(rwork + (size_t)c->lrwork * sizeof(float));
  int info = la_syevd(c->t, c->vectors, c->uplo, n, a, w, work, c->lwork, rwork, c->lrwork, iwork,
                      c->liwork);
  if (info || !c->vectors) return info;
  char *v = c->v + (size_t)i * nn * c->isz;
  for (int r = 0; r < n; r++)
    for (int col = 0; col < n; col++) {
      char *dst = v + ((size_t)r * (size_t)n + (size_t)col) * c->isz;
      memcpy(dst, a + ((size_t)col * (size_t)n + (size_t)r) * c->isz, c->isz);
      if (c->t == MLX_COMPLEX64) ((float *)dst)[1] = -((float *)dst)[1];
    }
  return 0;
}

static int eigh_eval(struct lc_node *n) {
  const struct la_vectors_params *p = n->params;
  const struct lc_node *x = n->in[0];
  mlx_dtype wt = x->dtype == MLX_COMPLEX64 ? MLX_FLOAT32 : x->dtype;
  struct eigh_ctx c = {.t = x->dtype, .isz = lc_dtype_size(x->dtype), .wsz = lc_dtype_size(wt),
                       .n = x->shape[x->ndim - 1], .vectors = p->vectors,
                       .uplo = p->uplo == 'L' ? 'U' : 'L'};
  int64_t count = lc_shape_size(x->ndim - 2, x->shape);
  int64_t nbytes[2] = {count * c.n * (int64_t)c.wsz, x->size * (int64_t)c.isz};
  if (lc_node_alloc_data(n)) return 1;
  c.w = la_output(n, c.vectors ? 2 : 1, nbytes, 0);
  c.v = c.vectors ? la_output(n, 2, nbytes, 1) : NULL;
  if (count == 0 || c.n == 0) return 0;
  if (la_syevd_sizes(c.t, c.vectors, c.uplo, c.n, &c.lwork, &c.lrwork, &c.liwork))
    return lc_error("Eigh::eval_cpu: workspace calculation failed");
  if (c.t != MLX_COMPLEX64) c.lrwork = 0;
  if (!(c.a = malloc((size_t)nbytes[1]))) return la_report_alloc("Eigh::eval_cpu");
  int rc = la_copy_in(x, c.a, false);
  if (!rc) {
    size_t scratch = (size_t)c.lwork * c.isz + (size_t)c.lrwork * sizeof(float) +
                     (size_t)c.liwork * sizeof(int);
    int64_t bad;
    int info;
    rc = la_batch_run(count, scratch, la_batch_parallel(count, c.n), eigh_item, &c, &bad, &info);
    if (rc == 2) la_report_alloc("Eigh::eval_cpu");
    else if (rc)
      lc_error("Eigh::eval_cpu: Eigenvalue decomposition failed with error code %d", info);
  }
  free(c.a);
  return rc ? 1 : 0;
}

/* ---- builders ---- */

static int validate_eig(const char *fn, const struct lc_node *a) {
  return la_check_float_or_complex(fn, a->dtype) || la_check_matrix(fn, a) ||
         la_check_square(fn, a, "Only defined for square matrices.");
}

/* values (complex64 for eig, real for eigh) and, when vectors, the vectors. */
static int eig_new(const char *fn, int op, struct lc_node *a, bool vectors, int uplo,
                   struct lc_node **outs) {
  if (validate_eig(fn, a)) return 1;
  bool general = op == LC_OP_LA_EIG;
  mlx_dtype wt = general ? MLX_COMPLEX64 : a->dtype == MLX_COMPLEX64 ? MLX_FLOAT32 : a->dtype;
  mlx_dtype vt = general ? MLX_COMPLEX64 : a->dtype;
  struct la_vectors_params p = {vectors, uplo};
  if (!vectors) {
    outs[0] = lc_node_new_op(op, wt, a->ndim - 1, a->shape, 1, &a, &p, sizeof p);
    return outs[0] ? 0 : 1;
  }
  const mlx_dtype dts[2] = {wt, vt};
  const int nds[2] = {a->ndim - 1, a->ndim};
  const int *shapes[2] = {a->shape, a->shape};
  return lc_tuple_new(op, 1, &a, &p, sizeof p, 2, dts, nds, shapes, outs);
}

int lc_linalg_eig(struct lc_node *a, struct lc_node **w, struct lc_node **v) {
  struct lc_node *outs[2];
  if (eig_new("linalg::eig", LC_OP_LA_EIG, a, true, 0, outs)) return 1;
  *w = outs[0];
  *v = outs[1];
  return 0;
}

struct lc_node *lc_linalg_eigvals(struct lc_node *a) {
  struct lc_node *w;
  return eig_new("linalg::eigvals", LC_OP_LA_EIG, a, false, 0, &w) ? NULL : w;
}

/* MLX reads only UPLO's first character ('L': lower, anything else:
 * upper); lace accepts "L" and "U" only. */
static int check_uplo(const char *fn, const char *uplo) {
  if (uplo && (!strcmp(uplo, "L") || !strcmp(uplo, "U"))) return 0;
  return lc_error("%s: UPLO must be 'L' or 'U', got %s%s%s", fn, uplo ? "'" : "",
                  uplo ? uplo : "NULL", uplo ? "'" : "");
}

int lc_linalg_eigh(struct lc_node *a, const char *uplo, struct lc_node **w, struct lc_node **v) {
  struct lc_node *outs[2];
  if (check_uplo("linalg::eigh", uplo) ||
      eig_new("linalg::eigh", LC_OP_LA_EIGH, a, true, uplo[0], outs))
    return 1;
  *w = outs[0];
  *v = outs[1];
  return 0;
}

struct lc_node *lc_linalg_eigvalsh(struct lc_node *a, const char *uplo) {
  struct lc_node *w;
  if (check_uplo("linalg::eigvalsh", uplo)) return NULL;
  return eig_new("linalg::eigvalsh", LC_OP_LA_EIGH, a, false, uplo[0], &w) ? NULL : w;
}

/* ---- rules: vmap (as MLX) ---- */

static int eig_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                    struct lc_node **out, int *out_ax) {
  const struct la_vectors_params *p = n->params;
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  int rc = !x || eig_new(n->op == LC_OP_LA_EIG ? "linalg::eig" : "linalg::eigh", n->op, x,
                         p->vectors, p->uplo, out);
  lc_node_release(x);
  for (int k = 0; k < (p->vectors ? 2 : 1); k++) out_ax[k] = 0;
  return rc;
}

/* Shapeless compile: the tuples (values and vectors) built again. */
static int eig_tuple_build(const void *params, int nin, struct lc_node *const *in,
                           struct lc_node **outs) {
  const struct la_vectors_params *p = params;
  return nin != 1 || !p->vectors || eig_new("linalg::eig", LC_OP_LA_EIG, in[0], true, 0, outs);
}
static int eigh_tuple_build(const void *params, int nin, struct lc_node *const *in,
                            struct lc_node **outs) {
  const struct la_vectors_params *p = params;
  return nin != 1 || !p->vectors ||
         eig_new("linalg::eigh", LC_OP_LA_EIGH, in[0], true, p->uplo, outs);
}

const struct lc_prim lc_prim_la_eig = {
    .name = "eig", .eval_cpu = eig_eval, .vmap = eig_vmap, .tuple_build = eig_tuple_build};
const struct lc_prim lc_prim_la_eigh = {
    .name = "eigh", .eval_cpu = eigh_eval, .vmap = eig_vmap, .tuple_build = eigh_tuple_build};
