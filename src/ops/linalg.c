/* The matmul primitive (OpenBLAS gemm over batches) and its builders:
 * matmul, addmm, tensordot, inner, outer. */
#include "ops/linalg.h"

#include <cblas.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "ops/dtype_dispatch.h"
#include "ops/binary.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/prim.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/shape_internal.h"
#include "ops/ternary.h"
#include "ops/unary.h"
#include "transforms/transforms.h"


/* ---- operands ---- */

/* One input viewed as a batch of R x C matrices: element (r, c) of batch
 * offset boff is at base[boff + r * rs + c * cs] (elements of dtype). */
struct operand {
  const char *base;
  mlx_dtype dtype;
  int64_t R, C, rs, cs;
  const int64_t *bstr; /* batch strides (nb entries) */
  int64_t *own_strides;
  void *copy; /* contiguous copy when the groups could not be viewed */
  size_t copy_bytes;
};

bool lc_matmul_group(const int *shape, const int64_t *st, int lo, int hi, int64_t *size,
                     int64_t *stride) {
  int64_t sz = 1, inner = 1, expect = 0;
  bool any = false;
  for (int d = hi - 1; d >= lo; d--) {
    if (shape[d] == 1) continue;
    if (!any) {
      inner = st[d];
      any = true;
    } else if (st[d] != expect) {
      return false;
    }
    expect = st[d] * shape[d];
    sz *= shape[d];
  }
  *size = sz;
  *stride = inner;
  return true;
}

static int operand_init(struct operand *o, const struct lc_node *x, int nb, int split) {
  memset(o, 0, sizeof *o);
  o->dtype = x->dtype;
  size_t isz = lc_dtype_size(x->dtype);
  const int64_t *st = x->strides;
  const char *base = (const char *)x->buf->data + x->offset * (int64_t)isz;
  if (!lc_matmul_group(x->shape, st, nb, split, &o->R, &o->rs) ||
      !lc_matmul_group(x->shape, st, split, x->ndim, &o->C, &o->cs)) {
    o->copy_bytes = (size_t)x->size * isz;
    o->copy = lc_alloc(o->copy_bytes);
    o->own_strides = malloc(sizeof(int64_t) * (size_t)(x->ndim > 0 ? x->ndim : 1));
    if (!o->copy || !o->own_strides) {
      if (o->copy) lc_free(o->copy, o->copy_bytes);
      free(o->own_strides);
      o->copy = NULL;
      return o->own_strides ? 1 : lc_error("matmul: out of memory");
    }
    lc_node_copy_out(x, o->copy);
    lc_shape_strides(x->ndim, x->shape, o->own_strides);
    st = o->own_strides;
    base = o->copy;
    lc_matmul_group(x->shape, st, nb, split, &o->R, &o->rs);
    lc_matmul_group(x->shape, st, split, x->ndim, &o->C, &o->cs);
  }
  o->base = base;
  o->bstr = st;
  return 0;
}

static void operand_free(struct operand *o) {
  if (o->copy) lc_free(o->copy, o->copy_bytes);
  free(o->own_strides);
}

/* Whether the R x C matrix (rs, cs) can be handed to row-major gemm as is:
 * *tr and *ld set. */
static bool blas_layout(int64_t R, int64_t C, int64_t rs, int64_t cs, enum CBLAS_TRANSPOSE *tr,
                        int64_t *ld) {
  if ((cs == 1 || C == 1) && (R == 1 || rs >= (C > 1 ? C : 1))) {
    *tr = CblasNoTrans;
    *ld = R == 1 ? (C > 1 ? C : 1) : rs;
    return *ld <= INT_MAX;
  }
  if ((rs == 1 || R == 1) && (C == 1 || cs >= (R > 1 ? R : 1))) {
    *tr = CblasTrans;
    *ld = C == 1 ? (R > 1 ? R : 1) : cs;
    return *ld <= INT_MAX;
  }
  return false;
}

/* The matrix of batch offset boff in compute type ct: directly when the
 * dtype and layout allow, else packed row-major into *scratch (allocated on
 * first use, R * C elements of ct). NULL after reporting. */
static const void *operand_matrix(const struct operand *o, int64_t boff, mlx_dtype ct,
                                  void **scratch, enum CBLAS_TRANSPOSE *tr, int64_t *ld) {
  size_t isz = lc_dtype_size(o->dtype), csz = lc_dtype_size(ct);
  const char *p = o->base + boff * (int64_t)isz;
  if (o->dtype == ct && blas_layout(o->R, o->C, o->rs, o->cs, tr, ld)) return p;
  if (!*scratch && !(*scratch = lc_alloc((size_t)(o->R * o->C) * csz))) return NULL;
  for (int64_t r = 0; r < o->R; r++)
    lc_convert(o->C, (char *)*scratch + r * o->C * (int64_t)csz, ct,
               p + r * o->rs * (int64_t)isz, o->cs, o->dtype);
  *tr = CblasNoTrans;
  *ld = o->C > 1 ? o->C : 1;
  return *scratch;
}

/* ---- kernels ---- */

static void gemm(mlx_dtype ct, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int64_t M,
                 int64_t N, int64_t K, float alpha, const void *A, int64_t lda, const void *B,
                 int64_t ldb, float beta, void *Cm, int64_t ldc) {
  /* A single row or column is a matrix-vector product: gemv reads the
   * matrix once, where gemm would first repack it (decode-time matmuls). */
  if ((M == 1 || N == 1) && (ct == MLX_FLOAT32 || ct == MLX_FLOAT64)) {
    enum CBLAS_TRANSPOSE t;
    blasint rows, cols, ld, incx, incy;
    const void *mat, *vec;
    if (M == 1) { /* out[n] = sum_k A[k] B[k, n] */
      mat = B;
      ld = (blasint)ldb;
      t = tb == CblasNoTrans ? CblasTrans : CblasNoTrans;
      rows = (blasint)(tb == CblasNoTrans ? K : N);
      cols = (blasint)(tb == CblasNoTrans ? N : K);
      vec = A;
      incx = (blasint)(ta == CblasNoTrans ? 1 : lda);
      incy = 1;
    } else { /* out[m] = sum_k A[m, k] B[k] */
      mat = A;
      ld = (blasint)lda;
      t = ta;
      rows = (blasint)(ta == CblasNoTrans ? M : K);
      cols = (blasint)(ta == CblasNoTrans ? K : M);
      vec = B;
      incx = (blasint)(tb == CblasNoTrans ? ldb : 1);
      incy = (blasint)ldc;
    }
    if (ct == MLX_FLOAT32)
      cblas_sgemv(CblasRowMajor, t, rows, cols, alpha, mat, ld, vec, incx, beta, Cm, incy);
    else
      cblas_dgemv(CblasRowMajor, t, rows, cols, alpha, mat, ld, vec, incx, beta, Cm, incy);
    return;
  }
  switch (ct) {
  case MLX_FLOAT32:
    cblas_sgemm(CblasRowMajor, ta, tb, (blasint)M, (blasint)N, (blasint)K, alpha, A,
                (blasint)lda, B, (blasint)ldb, beta, Cm, (blasint)ldc);
    break;
  case MLX_FLOAT64:
    cblas_dgemm(CblasRowMajor, ta, tb, (blasint)M, (blasint)N, (blasint)K, alpha, A,
                (blasint)lda, B, (blasint)ldb, beta, Cm, (blasint)ldc);
    break;
  default: { /* complex64 */
    float al[2] = {alpha, 0}, be[2] = {beta, 0};
    cblas_cgemm(CblasRowMajor, ta, tb, (blasint)M, (blasint)N, (blasint)K, al, A, (blasint)lda,
                B, (blasint)ldb, be, Cm, (blasint)ldc);
  }
  }
}

/* out (M x N contiguous) = A @ B for exact types, in the dtype's arithmetic. */
#define NAIVE_LOOP(DT, S, Ct)                                                           \
  static void naive_##DT(int64_t M, int64_t N, int64_t K, const void *a, int64_t ars,    \
                         int64_t acs, const void *b, int64_t brs, int64_t bcs, void *out) { \
    const S *A = a, *B = b;                                                             \
    S *o = out;                                                                         \
    for (int64_t i = 0; i < M; i++)                                                     \
      for (int64_t j = 0; j < N; j++) {                                                 \
        Ct acc = 0;                                                                     \
        for (int64_t k = 0; k < K; k++)                                                 \
          acc = (Ct)(acc + lc_ld_##DT(A[i * ars + k * acs]) * lc_ld_##DT(B[k * brs + j * bcs])); \
        o[i * N + j] = lc_st_##DT(acc);                                                 \
      }                                                                                 \
  }
NAIVE_LOOP(MLX_BOOL, bool, bool)
LC_FOR_INT_DTYPES(NAIVE_LOOP)

static void naive(mlx_dtype t, int64_t M, int64_t N, int64_t K, const void *a, int64_t ars,
                  int64_t acs, const void *b, int64_t brs, int64_t bcs, void *out) {
  switch (t) {
  case MLX_BOOL: naive_MLX_BOOL(M, N, K, a, ars, acs, b, brs, bcs, out); break;
#define CASE(DT, S, C) \
  case DT: naive_##DT(M, N, K, a, ars, acs, b, brs, bcs, out); break;
    LC_FOR_INT_DTYPES(CASE)
#undef CASE
  default: break;
  }
}

/* ---- eval ---- */

static mlx_dtype compute_type(mlx_dtype t) {
  return t == MLX_FLOAT16 || t == MLX_BFLOAT16 ? MLX_FLOAT32 : t;
}

/* out += c (input 2, the output's shape) as the ADD primitive computes it
 * in the output dtype. */
static int add_c_rounded(struct lc_node *n) {
  size_t isz = lc_dtype_size(n->dtype);
  void *c = lc_alloc((size_t)n->size * isz);
  if (!c) return 1;
  lc_node_copy_out(n->in[2], c);
  const void *in[2] = {n->buf->data, c};
  const int64_t is[2] = {1, 1};
  lc_prims[LC_OP_ADD]->ew(n->size, n->buf->data, n->dtype, in, is, n->dtype, NULL);
  lc_free(c, (size_t)n->size * isz);
  return 0;
}

static int matmul_eval(struct lc_node *n) {
  const struct lc_matmul_params *p = n->params;
  if (lc_node_alloc_data(n)) return 1;
  if (n->size == 0) return 0;
  const struct lc_node *xa = n->in[0], *xb = n->in[1];
  struct operand A, B;
  int64_t idx[p->nb > 0 ? p->nb : 1];
  int64_t M, K, N, batches = 1;
  for (int d = 0; d < p->nb; d++) batches *= n->shape[d];
  uint32_t *gi = NULL; /* gather: a's then b's index per batch */
  if (p->gather || p->segmented) {
    if (!(gi = malloc(sizeof(uint32_t) * 2 * (size_t)(batches > 0 ? batches : 1))))
      return lc_error("matmul: out of memory");
    lc_node_copy_out(n->in[2], gi);
    if (p->gather) lc_node_copy_out(n->in[3], gi + batches);
  }
  int onb = p->gather ? 1 : p->segmented ? 0 : p->nb;
  if (operand_init(&A, xa, onb, p->a_split)) {
    free(gi);
    return 1;
  }
  if (operand_init(&B, xb, onb, p->b_split)) {
    operand_free(&A);
    free(gi);
    return 1;
  }
  M = A.R, K = A.C, N = B.C;
  mlx_dtype ot = n->dtype, ct = compute_type(ot);
  bool blas = lc_dtype_is_inexact(ot);
  size_t csz = lc_dtype_size(ct);
  int rc = 0;
  void *work = n->buf->data, *sa = NULL, *sb = NULL;
  size_t work_bytes = 0;

  /* One gemm for all batches when b does not vary over them and a's
   * batch and row dimensions flatten into one row dimension. */
  int64_t a_rows_stride = 0, fold_rows = 0;
  bool bconst = true;
  for (int d = 0; d < p->nb; d++) bconst &= B.bstr[d] == 0 || n->shape[d] == 1;
  bool fold = !p->gather && !p->segmented && blas && batches > 1 && bconst && xa->dtype == ct && (A.cs == 1 || K == 1) &&
              lc_matmul_group(xa->shape, A.bstr, 0, p->a_split, &fold_rows, &a_rows_stride);
  if (fold) {
    M *= batches;
    A.R = M;
    A.rs = a_rows_stride;
    batches = 1;
  }
  size_t sa_bytes = (size_t)(M * K) * csz, sb_bytes = (size_t)(K * N) * csz;
  if (M > INT_MAX || N > INT_MAX || K > INT_MAX) {
    rc = lc_error("matmul: matrix dimensions too large for BLAS (%lld x %lld x %lld)",
                  (long long)M, (long long)K, (long long)N);
    goto done;
  }
  /* segmented: packed scratch sized for the whole contraction, as the
   * segments' lengths vary from batch to batch (operand_matrix would size
   * it by the first one) */
  if (p->segmented && blas && ((sa_bytes && !(sa = lc_alloc(sa_bytes))) ||
                               (sb_bytes && !(sb = lc_alloc(sb_bytes))))) {
    rc = 1;
    goto done;
  }
  if (ct != ot) {
    work_bytes = (size_t)n->size * csz;
    if (!(work = lc_alloc(work_bytes))) {
      rc = 1;
      goto done;
    }
  }
  /* c_rounded: c is added after the product is rounded (add_c_rounded) */
  bool with_c = p->has_c && !p->c_rounded;
  if (with_c) {
    lc_node_copy_out(n->in[2], n->buf->data);
    if (ct != ot) lc_convert(n->size, work, ct, n->buf->data, 1, ot);
  }
  float beta = with_c ? p->beta : 0.0f;
  memset(idx, 0, sizeof idx);
  int64_t aoff = 0, boff = 0;
  for (int64_t bi = 0; bi < batches; bi++) {
    char *out = (char *)work + bi * M * N * (int64_t)csz;
    if (p->gather) {
      uint32_t ia = gi[bi], ib = gi[batches + bi];
      if (ia >= (uint32_t)xa->shape[0] || ib >= (uint32_t)xb->shape[0]) {
        rc = lc_error("gather_mm: index (%u, %u) out of range for %d and %d matrices", ia, ib,
                      xa->shape[0], xb->shape[0]);
        break;
      }
      aoff = (int64_t)ia * A.bstr[0];
      boff = (int64_t)ib * B.bstr[0];
    }
    int64_t kb = K; /* this batch's contraction length */
    if (p->segmented) {
      uint32_t ks = gi[2 * bi], ke = gi[2 * bi + 1];
      if (ks > K || ke > K) {
        rc = lc_error("segmented_mm: segment [%u, %u) is out of range for K = %lld", ks, ke,
                      (long long)K);
        break;
      }
      kb = ke > ks ? ke - ks : 0;
      aoff = (int64_t)ks * A.cs;
      boff = (int64_t)ks * B.rs;
    }
    if (!blas) {
      naive(ot, M, N, K, A.base + aoff * (int64_t)csz, A.rs, A.cs, B.base + boff * (int64_t)csz,
            B.rs, B.cs, out);
    } else if (kb == 0) {
      if (!with_c) memset(out, 0, (size_t)(M * N) * csz);
      else if (beta != 1.0f)
        for (int64_t i = 0; i < M * N; i++) {
          if (ct == MLX_FLOAT64) ((double *)out)[i] *= beta;
          else if (ct == MLX_FLOAT32) ((float *)out)[i] *= beta;
          else ((lc_c64 *)out)[i] *= beta;
        }
    } else {
      enum CBLAS_TRANSPOSE ta, tb;
      int64_t lda, ldb;
      struct operand Ak = A, Bk = B;
      Ak.C = Bk.R = kb;
      const void *pa = operand_matrix(&Ak, aoff, ct, &sa, &ta, &lda);
      const void *pb = pa ? operand_matrix(&Bk, boff, ct, &sb, &tb, &ldb) : NULL;
      if (!pb) {
        rc = 1;
        break;
      }
      gemm(ct, ta, tb, M, N, kb, p->alpha, pa, lda, pb, ldb, beta, out, N);
    }
    /* advance the batch index (row-major over the output's batch dims) */
    for (int d = p->gather || p->segmented ? -1 : p->nb - 1; d >= 0; d--) {
      aoff += A.bstr[d];
      boff += B.bstr[d];
      if (++idx[d] < n->shape[d]) break;
      aoff -= A.bstr[d] * n->shape[d];
      boff -= B.bstr[d] * n->shape[d];
      idx[d] = 0;
    }
  }
  if (ct != ot && !rc) lc_convert(n->size, n->buf->data, ot, work, 1, ct);
  if (!rc && p->c_rounded) rc = add_c_rounded(n);
done:
  if (sa) lc_free(sa, sa_bytes);
  if (sb) lc_free(sb, sb_bytes);
  if (work != n->buf->data && work) lc_free(work, work_bytes);
  operand_free(&A);
  operand_free(&B);
  free(gi);
  return rc;
}

static int matmul_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                      int nargs, struct lc_node **out);
static int matmul_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out);
static int matmul_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                       struct lc_node **out, int *out_ax);

/* Shapeless compile: batch dims (of a, or of the indices / segments), a's
 * row dims, b's column dims; 1 when that is not the traced rank (outer's
 * 2-d view of its groups). */
static int matmul_output_shape(const void *params, int nin, struct lc_node *const *in, int ndim,
                               int *shape) {
  const struct lc_matmul_params *p = params;
  const struct lc_node *a = in[0], *b = in[1];
  int k = 0;
  if (p->gather || p->segmented) {
    if (in[2]->ndim < p->nb || ndim != p->nb + 2) return 1;
    /* gather: both index arrays were broadcast to the batch shape (a
     * default one is a constant over the traced batch) */
    if (p->gather && (nin < 4 || !lc_shape_equal(in[2]->ndim, in[2]->shape, in[3]->ndim,
                                                 in[3]->shape)))
      return 1;
    if (a->ndim < 2 || b->ndim < 2 || a->shape[a->ndim - 1] != b->shape[b->ndim - 2]) return 1;
    for (int d = 0; d < p->nb; d++) shape[k++] = in[2]->shape[d];
    shape[k++] = a->shape[a->ndim - 2];
    shape[k++] = b->shape[b->ndim - 1];
    return 0;
  }
  if (ndim != p->a_split + b->ndim - p->b_split || a->ndim < p->a_split || b->ndim < p->b_split)
    return 1;
  int64_t ka = 1, kb = 1; /* batch and contracted extents must still agree */
  for (int d = 0; d < p->nb; d++)
    if (a->shape[d] != b->shape[d]) return 1;
  for (int d = p->a_split; d < a->ndim; d++) ka *= a->shape[d];
  for (int d = p->nb; d < p->b_split; d++) kb *= b->shape[d];
  if (ka != kb) return 1;
  for (int d = 0; d < p->a_split; d++) shape[k++] = a->shape[d];
  for (int d = p->b_split; d < b->ndim; d++) shape[k++] = b->shape[d];
  return p->has_c && (nin < 3 || !lc_shape_equal(in[2]->ndim, in[2]->shape, ndim, shape));
}

/* Shapeless compile: a c that was a broadcast in the trace (addmm's, or
 * the bias of an epilogue: compile/fuse_epilogue.c) has the product's
 * shape, which a and b give. */
static int matmul_input_shape(const void *params, int nin, struct lc_node *const *in,
                              const char *bcast, int k, int ndim, int *shape) {
  const struct lc_matmul_params *p = params;
  if (!p->has_c || p->gather || p->segmented || nin != 3 || k != 2 || bcast[0] || bcast[1])
    return 1;
  struct lc_matmul_params q = *p;
  q.has_c = 0;
  return matmul_output_shape(&q, 2, in, ndim, shape);
}

const struct lc_prim lc_prim_matmul = {.name = "matmul",
                                       .eval_cpu = matmul_eval,
                                       .eval_cuda = LC_CUDA(lc_cuda_eval_matmul),
                                       .vjp = matmul_vjp,
                                       .jvp = matmul_jvp,
                                       .vmap = matmul_vmap,
                                       .output_shape = matmul_output_shape,
                                       .input_shape = matmul_input_shape};

/* ---- permute (private view used by tensordot) ---- */

static int permute_eval(struct lc_node *n) {
  const int *perm = n->params;
  const struct lc_node *x = n->in[0];
  int64_t st[n->ndim > 0 ? n->ndim : 1];
  for (int i = 0; i < n->ndim; i++) st[i] = x->strides[perm[i]];
  lc_node_set_view(n, x, st, x->offset);
  return 0;
}

const struct lc_prim lc_prim_mm_permute = {.name = "mm_permute",
                                           .flags = LC_PF_VIEW,
                                           .eval_cpu = permute_eval,
                                           .vjp = lc_transpose_vjp, /* rules: a transpose's */
                                           .jvp = lc_view_jvp,
                                           .vmap = lc_transpose_vmap,
                                           .output_shape = lc_transpose_shape};

static struct lc_node *permute(struct lc_node *x, const int *perm) {
  bool ident = true;
  for (int i = 0; i < x->ndim; i++) ident &= perm[i] == i;
  if (ident) return lc_node_retain(x);
  int shape[x->ndim > 0 ? x->ndim : 1];
  for (int i = 0; i < x->ndim; i++) shape[i] = x->shape[perm[i]];
  return lc_node_new_op(LC_OP_MM_PERMUTE, x->dtype, x->ndim, shape, 1, &x, perm,
                        sizeof(int) * (size_t)x->ndim);
}

/* ---- builders ---- */

/* The matmul node for a (cast to t, broadcast to its batch+matrix shape
 * ashape) and b likewise, with optional c broadcast to the output shape. */
static struct lc_node *mm_node(const char *fn, struct lc_node *a, int and_, const int *ashape,
                               struct lc_node *b, int bnd, const int *bshape, struct lc_node *c,
                               mlx_dtype t, struct lc_matmul_params p, int ond, const int *oshape) {
  struct lc_node *in[3] = {NULL, NULL, NULL}, *r = NULL;
  struct lc_node *ca = lc_astype(a, t), *cb = ca ? lc_astype(b, t) : NULL;
  if (!cb) goto out;
  if (!(in[0] = lc_broadcast_to(ca, and_, ashape))) goto out;
  if (!(in[1] = lc_broadcast_to(cb, bnd, bshape))) goto out;
  if (c) {
    struct lc_node *cc = lc_astype(c, t);
    if (!cc) goto out;
    in[2] = lc_broadcast_to(cc, ond, oshape);
    lc_node_release(cc);
    if (!in[2]) goto out;
  }
  r = lc_node_new_op(LC_OP_MATMUL, t, ond, oshape, c ? 3 : 2, in, &p, sizeof p);
out:
  lc_node_release(ca);
  lc_node_release(cb);
  for (int i = 0; i < 3; i++) lc_node_release(in[i]);
  return r;
}

static int check_inexact(const char *fn, mlx_dtype t, mlx_dtype x, mlx_dtype y) {
  if (lc_dtype_is_inexact(t)) return 0;
  return lc_error("%s: only inexact types are supported but %s and %s were provided which "
                  "results in %s, which is not a floating point type",
                  fn, lc_dtype_name(x), lc_dtype_name(y), lc_dtype_name(t));
}

static struct lc_node *matmul_impl(const char *fn, struct lc_node *c, struct lc_node *a,
                                   struct lc_node *b, float alpha, float beta) {
  if (a->ndim == 0 || b->ndim == 0) {
    lc_error("%s: got 0 dimension input; inputs must have at least one dimension", fn);
    return NULL;
  }
  mlx_dtype t = lc_dtype_promote(a->dtype, b->dtype);
  if (c) t = lc_dtype_promote(t, c->dtype);
  bool avec = a->ndim == 1, bvec = b->ndim == 1;
  int K = a->shape[a->ndim - 1], Kb = bvec ? b->shape[0] : b->shape[b->ndim - 2];
  if (K != Kb) {
    char sa[128], sb[128];
    lc_error("%s: last dimension of first input with shape %s must match second to last "
             "dimension of second input with shape %s",
             fn, lc_shape_str(a->ndim, a->shape, sa, sizeof sa),
             lc_shape_str(b->ndim, b->shape, sb, sizeof sb));
    return NULL;
  }
  if (check_inexact(fn, t, a->dtype, b->dtype)) return NULL;
  int nba = a->ndim > 2 ? a->ndim - 2 : 0, nbb = b->ndim > 2 ? b->ndim - 2 : 0;
  int cap = (nba > nbb ? nba : nbb) + 2, nb;
  int batch[cap], ashape[cap], bshape[cap], oshape[cap];
  if (lc_broadcast_shapes(fn, nba, a->shape, nbb, b->shape, &nb, batch)) return NULL;
  memcpy(ashape, batch, sizeof(int) * (size_t)nb);
  memcpy(bshape, batch, sizeof(int) * (size_t)nb);
  memcpy(oshape, batch, sizeof(int) * (size_t)nb);
  int and_ = nb, bnd = nb, ond = nb;
  if (!avec) ashape[and_++] = oshape[ond++] = a->shape[a->ndim - 2];
  ashape[and_++] = K;
  bshape[bnd++] = K;
  if (!bvec) bshape[bnd++] = oshape[ond++] = b->shape[b->ndim - 1];
  struct lc_matmul_params p = {.nb = nb, .a_split = avec ? nb : nb + 1, .b_split = nb + 1,
                            .has_c = c != NULL, .alpha = alpha, .beta = beta};
  return mm_node(fn, a, and_, ashape, b, bnd, bshape, c, t, p, ond, oshape);
}

struct lc_node *lc_matmul(struct lc_node *a, struct lc_node *b) {
  return matmul_impl("matmul", NULL, a, b, 1.0f, 0.0f);
}

struct lc_node *lc_addmm(struct lc_node *c, struct lc_node *a, struct lc_node *b, float alpha,
                         float beta) {
  return matmul_impl("addmm", c, a, b, alpha, beta);
}

/* a's free dims (rows) times b's free dims (columns), contracting the
 * permuted-last axes of a with the permuted-first axes of b. exact: allow
 * non-inexact types (outer, 0-d inner). */
static struct lc_node *contract(const char *fn, struct lc_node *a, struct lc_node *b,
                                const int *pa, const int *pb, int ncontract, bool exact) {
  mlx_dtype t = lc_dtype_promote(a->dtype, b->dtype);
  if (!exact && check_inexact(fn, t, a->dtype, b->dtype)) return NULL;
  struct lc_node *xa = permute(a, pa), *xb = xa ? permute(b, pb) : NULL, *r = NULL;
  if (xb) {
    int fa = a->ndim - ncontract, fb = b->ndim - ncontract, ond = fa + fb;
    int oshape[ond > 0 ? ond : 1];
    memcpy(oshape, xa->shape, sizeof(int) * (size_t)fa);
    memcpy(oshape + fa, xb->shape + ncontract, sizeof(int) * (size_t)fb);
    struct lc_matmul_params p = {.nb = 0, .a_split = fa, .b_split = ncontract, .alpha = 1.0f};
    r = mm_node(fn, xa, xa->ndim, xa->shape, xb, xb->ndim, xb->shape, NULL, t, p, ond, oshape);
  }
  lc_node_release(xa);
  lc_node_release(xb);
  return r;
}

struct lc_node *lc_tensordot(struct lc_node *a, struct lc_node *b, const int *axes_a,
                             const int *axes_b, int n) {
  if (n < 0 || n > a->ndim || n > b->ndim) {
    lc_error("tensordot: %d axes given for arrays with %d and %d dimensions", n, a->ndim, b->ndim);
    return NULL;
  }
  int pa[a->ndim > 0 ? a->ndim : 1], pb[b->ndim > 0 ? b->ndim : 1];
  bool ua[a->ndim + 1], ub[b->ndim + 1];
  memset(ua, 0, sizeof ua);
  memset(ub, 0, sizeof ub);
  for (int i = 0; i < n; i++) {
    int x = axes_a[i] < 0 ? axes_a[i] + a->ndim : axes_a[i];
    int y = axes_b[i] < 0 ? axes_b[i] + b->ndim : axes_b[i];
    if (x < 0 || x >= a->ndim || y < 0 || y >= b->ndim) {
      lc_error("tensordot: axis pair (%d, %d) is out of bounds for arrays with %d and %d "
               "dimensions", axes_a[i], axes_b[i], a->ndim, b->ndim);
      return NULL;
    }
    if (ua[x] || ub[y]) {
      lc_error("tensordot: repeated axis in (%d, %d)", axes_a[i], axes_b[i]);
      return NULL;
    }
    if (a->shape[x] != b->shape[y]) {
      lc_error("tensordot: a and b must have the same shape on the contracted axes "
               "(%d vs %d)", a->shape[x], b->shape[y]);
      return NULL;
    }
    ua[x] = ub[y] = true;
    pa[a->ndim - n + i] = x;
    pb[i] = y;
  }
  for (int i = 0, k = 0; i < a->ndim; i++)
    if (!ua[i]) pa[k++] = i;
  for (int i = 0, k = n; i < b->ndim; i++)
    if (!ub[i]) pb[k++] = i;
  return contract("tensordot", a, b, pa, pb, n, false);
}

struct lc_node *lc_tensordot_axis(struct lc_node *a, struct lc_node *b, int axis) {
  if (axis < 0) {
    lc_error("tensordot: axis must be greater or equal to 0 (got %d)", axis);
    return NULL;
  }
  if (axis > a->ndim || axis > b->ndim) {
    lc_error("tensordot: axis %d is larger than the number of dimensions of a (%d) or b (%d)",
             axis, a->ndim, b->ndim);
    return NULL;
  }
  int aa[axis > 0 ? axis : 1], bb[axis > 0 ? axis : 1];
  for (int i = 0; i < axis; i++) {
    aa[i] = a->ndim - axis + i;
    bb[i] = i;
  }
  return lc_tensordot(a, b, aa, bb, axis);
}

struct lc_node *lc_inner(struct lc_node *a, struct lc_node *b) {
  if (a->ndim == 0 || b->ndim == 0) {
    int pa[a->ndim > 0 ? a->ndim : 1], pb[b->ndim > 0 ? b->ndim : 1];
    for (int i = 0; i < a->ndim; i++) pa[i] = i;
    for (int i = 0; i < b->ndim; i++) pb[i] = i;
    return contract("inner", a, b, pa, pb, 0, true);
  }
  if (a->shape[a->ndim - 1] != b->shape[b->ndim - 1]) {
    lc_error("inner: a and b must have the same last dimension (%d vs %d)",
             a->shape[a->ndim - 1], b->shape[b->ndim - 1]);
    return NULL;
  }
  int x = -1;
  return lc_tensordot(a, b, &x, &x, 1);
}

struct lc_node *lc_outer(struct lc_node *a, struct lc_node *b) {
  int pa[a->ndim > 0 ? a->ndim : 1], pb[b->ndim > 0 ? b->ndim : 1];
  for (int i = 0; i < a->ndim; i++) pa[i] = i;
  for (int i = 0; i < b->ndim; i++) pb[i] = i;
  struct lc_node *r = contract("outer", a, b, pa, pb, 0, true);
  if (!r || (r->ndim == 2 && a->ndim == 1 && b->ndim == 1)) return r;
  /* MLX's outer is 2-d, (a.size, b.size): view the result so */
  int shape[2] = {(int)a->size, (int)b->size};
  struct lc_matmul_params p = *(const struct lc_matmul_params *)r->params;
  p.a_split = a->ndim;
  p.b_split = 0;
  struct lc_node *in[2] = {r->in[0], r->in[1]};
  struct lc_node *o = lc_node_new_op(LC_OP_MATMUL, r->dtype, 2, shape, 2, in, &p, sizeof p);
  lc_node_release(r);
  return o;
}

/* ---- gather_mm ---- */

/* idx (borrowed) as uint32, or arange over x's batch (x.shape[:-2]). */
static struct lc_node *gather_indices(struct lc_node *idx, struct lc_node *x) {
  if (idx) {
    if (!lc_dtype_is_int(idx->dtype)) {
      lc_error("gather_mm: got indices with invalid dtype %s; indices must be integral",
               lc_dtype_name(idx->dtype));
      return NULL;
    }
    return lc_astype(idx, MLX_UINT32);
  }
  int nb = x->ndim - 2;
  int64_t total = lc_shape_size(nb, x->shape);
  struct lc_node *r = lc_arange(0, (double)total, 1, MLX_UINT32);
  struct lc_node *v = r ? lc_reshape(r, nb, x->shape) : NULL;
  lc_node_release(r);
  return v;
}

struct lc_node *lc_gather_mm(struct lc_node *a_in, struct lc_node *b_in, struct lc_node *lhs,
                             struct lc_node *rhs) {
  if (!lhs && !rhs) return lc_matmul(a_in, b_in);
  if (a_in->ndim == 0 || b_in->ndim == 0) {
    lc_error("gather_mm: got 0 dimension input; inputs must have at least one dimension");
    return NULL;
  }
  mlx_dtype t = lc_dtype_promote(a_in->dtype, b_in->dtype);
  if (!lc_dtype_is_float(t)) {
    lc_error("gather_mm: only real floating point types are supported but %s and %s were "
             "provided which results in %s", lc_dtype_name(a_in->dtype),
             lc_dtype_name(b_in->dtype), lc_dtype_name(t));
    return NULL;
  }
  int zero = 0, one = 1;
  struct lc_node *a = NULL, *b = NULL, *a3 = NULL, *b3 = NULL, *li = NULL, *ri = NULL;
  struct lc_node *lb = NULL, *rb = NULL, *r = NULL, *ca = NULL, *cb = NULL;
  int *oshape = NULL, nb;
  a = a_in->ndim == 1 ? lc_expand_dims(a_in, 1, &zero) : lc_node_retain(a_in);
  b = b_in->ndim == 1 ? lc_expand_dims(b_in, 1, &one) : lc_node_retain(b_in);
  if (!a || !b) goto out;
  int M = a->shape[a->ndim - 2], K = a->shape[a->ndim - 1], N = b->shape[b->ndim - 1];
  if (K != b->shape[b->ndim - 2]) {
    char sa[128], sb[128];
    lc_error("gather_mm: last dimension of first input with shape %s must match second to last "
             "dimension of second input with shape %s",
             lc_shape_str(a->ndim, a->shape, sa, sizeof sa),
             lc_shape_str(b->ndim, b->shape, sb, sizeof sb));
    goto out;
  }
  if (!(li = gather_indices(lhs, a)) || !(ri = gather_indices(rhs, b))) goto out;
  int cap = (li->ndim > ri->ndim ? li->ndim : ri->ndim) + 2;
  if (!(oshape = malloc(sizeof(int) * (size_t)cap))) {
    lc_error("gather_mm: out of memory");
    goto out;
  }
  if (lc_broadcast_shapes("gather_mm", li->ndim, li->shape, ri->ndim, ri->shape, &nb, oshape))
    goto out;
  if (!(lb = lc_broadcast_to(li, nb, oshape)) || !(rb = lc_broadcast_to(ri, nb, oshape))) goto out;
  int s3a[3] = {-1, M, K}, s3b[3] = {-1, K, N};
  if (!(ca = lc_astype(a, t)) || !(cb = lc_astype(b, t))) goto out;
  if (!(a3 = lc_reshape(ca, 3, s3a)) || !(b3 = lc_reshape(cb, 3, s3b))) goto out;
  oshape[nb] = M;
  oshape[nb + 1] = N;
  struct lc_matmul_params p = {.nb = nb, .a_split = 2, .b_split = 2, .gather = 1, .alpha = 1.0f};
  struct lc_node *in[4] = {a3, b3, lb, rb};
  r = lc_node_new_op(LC_OP_MATMUL, t, nb + 2, oshape, 4, in, &p, sizeof p);
  if (r && (a_in->ndim == 1 || b_in->ndim == 1)) {
    int axes[2], na = 0;
    if (a_in->ndim == 1) axes[na++] = nb;
    if (b_in->ndim == 1) axes[na++] = nb + 1;
    struct lc_node *sq = lc_squeeze(r, na, axes);
    lc_node_release(r);
    r = sq;
  }
out:
  lc_node_release(a);
  lc_node_release(b);
  lc_node_release(ca);
  lc_node_release(cb);
  lc_node_release(a3);
  lc_node_release(b3);
  lc_node_release(li);
  lc_node_release(ri);
  lc_node_release(lb);
  lc_node_release(rb);
  free(oshape);
  return r;
}

/* ---- segmented_mm ---- */

struct lc_node *lc_segmented_mm(struct lc_node *a, struct lc_node *b, struct lc_node *segments) {
  if (a->ndim != 2 || b->ndim != 2) {
    lc_error("segmented_mm: batched matmul not supported (a and b must be 2-d, got %d and %d "
             "dimensions)", a->ndim, b->ndim);
    return NULL;
  }
  if (segments->ndim < 1 || segments->shape[segments->ndim - 1] != 2) {
    char ss[128];
    lc_error("segmented_mm: the segments should have shape (..., 2) but %s was provided",
             lc_shape_str(segments->ndim, segments->shape, ss, sizeof ss));
    return NULL;
  }
  if (a->shape[1] != b->shape[0]) {
    lc_error("segmented_mm: a's columns (%d) must match b's rows (%d)", a->shape[1], b->shape[0]);
    return NULL;
  }
  mlx_dtype t = lc_dtype_promote(a->dtype, b->dtype);
  if (!lc_dtype_is_float(t)) {
    lc_error("segmented_mm: only real floating point types are supported but %s and %s were "
             "provided which results in %s", lc_dtype_name(a->dtype), lc_dtype_name(b->dtype),
             lc_dtype_name(t));
    return NULL;
  }
  if (!lc_dtype_is_int(segments->dtype)) {
    lc_error("segmented_mm: got segments with invalid dtype %s; segments must be integral",
             lc_dtype_name(segments->dtype));
    return NULL;
  }
  int nb = segments->ndim - 1, oshape[nb + 2];
  for (int i = 0; i < nb; i++) oshape[i] = segments->shape[i];
  oshape[nb] = a->shape[0];
  oshape[nb + 1] = b->shape[1];
  struct lc_node *ca = lc_astype(a, t), *cb = ca ? lc_astype(b, t) : NULL;
  struct lc_node *cs = cb ? lc_astype(segments, MLX_UINT32) : NULL, *r = NULL;
  if (cs) {
    struct lc_matmul_params p = {.nb = nb, .a_split = 1, .b_split = 1, .segmented = 1,
                              .alpha = 1.0f};
    struct lc_node *in[3] = {ca, cb, cs};
    r = lc_node_new_op(LC_OP_MATMUL, t, nb + 2, oshape, 3, in, &p, sizeof p);
  }
  lc_node_release(ca);
  lc_node_release(cb);
  lc_node_release(cs);
  return r;
}

/* ---- block_masked_mm ---- */

/* mask of blocks, broadcast to x's batch + (ceil(rows/block),
 * ceil(cols/block)), expanded to the element mask of x (borrowed, shape
 * (batch..., rows, cols)): each entry repeated block x block times, cut to
 * (rows, cols). bool stays bool, other dtypes become t. */
static struct lc_node *expand_mask(const char *what, struct lc_node *mask, struct lc_node *x,
                                   int block, mlx_dtype t) {
  int rows = x->shape[x->ndim - 2], cols = x->shape[x->ndim - 1];
  int nd = x->ndim, target[nd];
  memcpy(target, x->shape, sizeof(int) * (size_t)nd);
  target[nd - 2] = (rows + block - 1) / block;
  target[nd - 1] = (cols + block - 1) / block;
  (void)what;
  struct lc_node *mb = lc_broadcast_to(mask, nd, target);
  if (!mb) return NULL;
  struct lc_node *m = lc_astype(mb, mask->dtype == MLX_BOOL ? MLX_BOOL : t), *r1 = NULL,
                 *r2 = NULL, *s1 = NULL, *s2 = NULL, *out = NULL;
  if (m && (r1 = lc_repeat(m, block, -2)) && (r2 = lc_repeat(r1, block, -1)) &&
      (s1 = lc_slice_axis(r2, r2->ndim - 2, 0, rows)) &&
      (s2 = lc_slice_axis(s1, s1->ndim - 1, 0, cols)))
    out = lc_node_retain(s2);
  lc_node_release(mb);
  lc_node_release(m);
  lc_node_release(r1);
  lc_node_release(r2);
  lc_node_release(s1);
  lc_node_release(s2);
  return out;
}

/* x masked: where(mask, x, 0) for bool masks, x * mask otherwise. Consumes
 * x and mask (either may be NULL after a failure). */
static struct lc_node *apply_mask(struct lc_node *x, struct lc_node *mask) {
  struct lc_node *r = NULL;
  if (x && mask) {
    if (mask->dtype == MLX_BOOL) {
      struct lc_node *z = lc_node_new_scalar(x->dtype, 0.0);
      r = z ? lc_where(mask, x, z) : NULL;
      lc_node_release(z);
    } else {
      r = lc_multiply(x, mask);
    }
  }
  lc_node_release(x);
  lc_node_release(mask);
  return r;
}

struct lc_node *lc_block_masked_mm(struct lc_node *a_in, struct lc_node *b_in, int block,
                                   struct lc_node *mask_out, struct lc_node *mask_lhs,
                                   struct lc_node *mask_rhs) {
  if (!mask_out && !mask_lhs && !mask_rhs) return lc_matmul(a_in, b_in);
  if (block != 32 && block != 64) {
    lc_error("block_masked_mm: only block sizes 32 and 64 are supported, got %d", block);
    return NULL;
  }
  if (a_in->ndim == 0 || b_in->ndim == 0) {
    lc_error("block_masked_mm: got 0 dimension input; inputs must have at least one dimension");
    return NULL;
  }
  mlx_dtype t = lc_dtype_promote(a_in->dtype, b_in->dtype);
  if (!lc_dtype_is_float(t)) {
    lc_error("block_masked_mm: only real floating point types are supported but %s and %s were "
             "provided which results in %s", lc_dtype_name(a_in->dtype),
             lc_dtype_name(b_in->dtype), lc_dtype_name(t));
    return NULL;
  }
  int zero = 0, one = 1, m2 = -2, m1 = -1;
  struct lc_node *a = NULL, *b = NULL, *ml = NULL, *mr = NULL, *mo = NULL, *prod = NULL,
                 *r = NULL, *ca = NULL, *cb = NULL;
  ca = lc_astype(a_in, t);
  cb = ca ? lc_astype(b_in, t) : NULL;
  if (!cb) goto out;
  a = a_in->ndim == 1 ? lc_expand_dims(ca, 1, &zero) : lc_node_retain(ca);
  b = b_in->ndim == 1 ? lc_expand_dims(cb, 1, &one) : lc_node_retain(cb);
  if (!a || !b) goto out;
  if (a->shape[a->ndim - 1] == b->shape[b->ndim - 2]) {
    /* both operands over the common batch shape (views) */
    int nba = a->ndim - 2, nbb = b->ndim - 2, cap = (nba > nbb ? nba : nbb) + 2, nb;
    int sha[cap], shb[cap];
    if (lc_broadcast_shapes("block_masked_mm", nba, a->shape, nbb, b->shape, &nb, sha)) goto out;
    memcpy(shb, sha, sizeof(int) * (size_t)nb);
    sha[nb] = a->shape[a->ndim - 2];
    sha[nb + 1] = a->shape[a->ndim - 1];
    shb[nb] = b->shape[b->ndim - 2];
    shb[nb + 1] = b->shape[b->ndim - 1];
    struct lc_node *xa = lc_broadcast_to(a, nb + 2, sha), *xb = xa ? lc_broadcast_to(b, nb + 2, shb) : NULL;
    lc_node_release(a);
    lc_node_release(b);
    a = xa;
    b = xb;
    if (!a || !b) goto out;
  } else {
    char sa[128], sb[128];
    lc_error("block_masked_mm: last dimension of first input with shape %s must match second to "
             "last dimension of second input with shape %s",
             lc_shape_str(a->ndim, a->shape, sa, sizeof sa),
             lc_shape_str(b->ndim, b->shape, sb, sizeof sb));
    goto out;
  }
  if (mask_lhs) {
    struct lc_node *m = a_in->ndim == 1 ? lc_expand_dims(mask_lhs, 1, &m2) : lc_node_retain(mask_lhs);
    ml = m ? expand_mask("lhs", m, a, block, t) : NULL;
    lc_node_release(m);
    if (!ml) goto out;
  }
  if (mask_rhs) {
    struct lc_node *m = b_in->ndim == 1 ? lc_expand_dims(mask_rhs, 1, &m1) : lc_node_retain(mask_rhs);
    mr = m ? expand_mask("rhs", m, b, block, t) : NULL;
    lc_node_release(m);
    if (!mr) goto out;
  }
  if (ml) {
    a = apply_mask(a, ml);
    ml = NULL;
    if (!a) goto out;
  }
  if (mr) {
    b = apply_mask(b, mr);
    mr = NULL;
    if (!b) goto out;
  }
  if (!(prod = lc_matmul(a, b))) goto out;
  if (mask_out) {
    int ex[2], nex = 0;
    if (a_in->ndim == 1) ex[nex++] = -2;
    if (b_in->ndim == 1) ex[nex++] = -1;
    struct lc_node *m = nex ? lc_expand_dims(mask_out, nex, ex) : lc_node_retain(mask_out);
    mo = m ? expand_mask("out", m, prod, block, t) : NULL;
    lc_node_release(m);
    if (!mo) goto out;
    prod = apply_mask(prod, mo);
    mo = NULL;
    if (!prod) goto out;
  }
  r = prod;
  prod = NULL;
  if (a_in->ndim == 1 || b_in->ndim == 1) {
    int axes[2], na = 0;
    if (a_in->ndim == 1) axes[na++] = r->ndim - 2;
    if (b_in->ndim == 1) axes[na++] = r->ndim - 1;
    struct lc_node *sq = lc_squeeze(r, na, axes);
    lc_node_release(r);
    r = sq;
  }
out:
  lc_node_release(ca);
  lc_node_release(cb);
  lc_node_release(a);
  lc_node_release(b);
  lc_node_release(ml);
  lc_node_release(mr);
  lc_node_release(mo);
  lc_node_release(prod);
  return r;
}

/* ---- transformation rules ----
 *
 * A matmul node is out[b] = alpha * A[b] @ B[b] (+ beta * C) with A's and
 * B's dimensions after the nb batch dimensions grouped into (M, K) and
 * (K, N). The rules are matmul nodes over such groups again (the other
 * operand's two groups permuted), so the same code covers matmul, addmm,
 * tensordot, inner and outer nodes. gather_mm scatters its per-index
 * products back (MLX's GatherMM::vjp); segmented_mm masks the contraction
 * per segment. */

static const struct lc_matmul_params *mm_params(const struct lc_node *n) { return n->params; }

static int64_t dims_size(const int *shape, int lo, int hi) {
  int64_t s = 1;
  for (int d = lo; d < hi; d++) s *= shape[d];
  return s;
}

/* The group sizes of a node: rows M of a, contraction K, columns N of b. */
static void mm_sizes(const struct lc_node *n, int *M, int *K, int *N) {
  const struct lc_matmul_params *p = mm_params(n);
  const struct lc_node *a = n->in[0], *b = n->in[1];
  int onb = p->gather ? 1 : p->segmented ? 0 : p->nb;
  *M = (int)dims_size(a->shape, onb, p->a_split);
  *K = (int)dims_size(a->shape, p->a_split, a->ndim);
  *N = (int)dims_size(b->shape, p->b_split, b->ndim);
}

/* The last two axes of x swapped, conjugated when complex (the adjoint). */
static struct lc_node *adjoint(struct lc_node *x) {
  struct lc_node *t = lc_swapaxes(x, x->ndim - 2, x->ndim - 1);
  if (!t || !lc_dtype_is_complex(t->dtype)) return t;
  struct lc_node *c = lc_conjugate(t);
  lc_node_release(t);
  return c;
}

/* alpha * x[i] @ y[j] for (i, j) = (ix[t], iy[t]), t < T (ix, iy: uint32 (T,)):
 * a (T, R, C) gather node. */
static struct lc_node *mm_gathered(struct lc_node *x, struct lc_node *y, struct lc_node *ix,
                                   struct lc_node *iy) {
  int sh[3] = {ix->shape[0], x->shape[1], y->shape[2]};
  struct lc_matmul_params p = {.nb = 1, .a_split = 2, .b_split = 2, .gather = 1, .alpha = 1.0f};
  struct lc_node *in[4] = {x, y, ix, iy};
  return lc_node_new_op(LC_OP_MATMUL, x->dtype, 3, sh, 4, in, &p, sizeof p);
}

/* x * v (x itself when v == 1). */
static struct lc_node *scaled(struct lc_node *x, float v) {
  if (v == 1.0f) return lc_node_retain(x);
  struct lc_node *s = lc_node_new_scalar(x->dtype, v);
  struct lc_node *r = s ? lc_multiply(x, s) : NULL;
  lc_node_release(s);
  return r;
}

/* x's dims [lo, mid) and [mid, hi) exchanged (x itself when either block
 * is empty), conjugated when complex: the adjoint of x's groups. */
static struct lc_node *swap_groups(struct lc_node *x, int lo, int mid, int hi) {
  struct lc_node *t;
  if (lo == mid || mid == hi) {
    t = lc_node_retain(x);
  } else {
    int perm[x->ndim], k = 0;
    for (int d = 0; d < lo; d++) perm[k++] = d;
    for (int d = mid; d < hi; d++) perm[k++] = d;
    for (int d = lo; d < mid; d++) perm[k++] = d;
    for (int d = hi; d < x->ndim; d++) perm[k++] = d;
    t = lc_transpose(x, perm);
  }
  if (!t || !lc_dtype_is_complex(t->dtype)) return t;
  struct lc_node *c = lc_conjugate(t);
  lc_node_release(t);
  return c;
}

/* alpha * x @ y with x's dims after nb split at xs, y's at ys, giving
 * `like`'s shape (the operand whose cotangent this is). */
static struct lc_node *mm_grouped(struct lc_node *x, int xs, struct lc_node *y, int ys, int nb,
                                  float alpha, const struct lc_node *like) {
  struct lc_matmul_params p = {.nb = nb, .a_split = xs, .b_split = ys, .alpha = alpha};
  struct lc_node *in[2] = {x, y};
  return lc_node_new_op(LC_OP_MATMUL, x->dtype, like->ndim, like->shape, 2, in, &p, sizeof p);
}

/* d(A) = alpha g @ B^H and d(B) = alpha A^H @ g for a plain (batched)
 * matmul node, over the groups as they are: A (batch, Mdims, Kdims),
 * B (batch, Kdims, Ndims), g (batch, Mdims, Ndims) (g is reshaped to that
 * first when the node's output was laid out otherwise, as outer's is).
 * Only the other operand's two groups are permuted, so no reshape is
 * needed (shapeless compile can follow the result). */
static struct lc_node *mm_vjp_operand(struct lc_node *n, struct lc_node *g, int which) {
  const struct lc_matmul_params *p = mm_params(n);
  struct lc_node *a = n->in[0], *b = n->in[1];
  int nb = p->nb, nM = p->a_split - nb, nK = a->ndim - p->a_split, nN = b->ndim - p->b_split;
  struct lc_node *gg = NULL, *adj = NULL, *r = NULL;
  if (n->ndim == nb + nM + nN) {
    gg = lc_node_retain(g);
  } else {
    int sh[nb + nM + nN];
    memcpy(sh, a->shape, sizeof(int) * (size_t)(nb + nM));
    memcpy(sh + nb + nM, b->shape + p->b_split, sizeof(int) * (size_t)nN);
    gg = lc_reshape(g, nb + nM + nN, sh);
  }
  if (!gg) return NULL;
  if (which == 0) { /* g (.., M | N) @ B^H (.., N | K) */
    if ((adj = swap_groups(b, nb, p->b_split, b->ndim)))
      r = mm_grouped(gg, nb + nM, adj, nb + nN, nb, p->alpha, a);
  } else { /* A^H (.., K | M) @ g (.., M | N) */
    if ((adj = swap_groups(a, nb, p->a_split, a->ndim)))
      r = mm_grouped(adj, nb + nK, gg, nb + nM, nb, p->alpha, b);
  }
  lc_node_release(gg);
  lc_node_release(adj);
  return r;
}

/* zeros of shape (rows, R, C) with vals (T, R, C) added at rows idx (T,). */
static struct lc_node *scatter_rows(struct lc_node *vals, struct lc_node *idx, int rows) {
  int zs[3] = {rows, vals->shape[1], vals->shape[2]}, is[3] = {idx->shape[0], 1, 1};
  struct lc_node *z = lc_zeros(3, zs, vals->dtype), *i3 = z ? lc_reshape(idx, 3, is) : NULL;
  struct lc_node *ib = i3 ? lc_broadcast_to(i3, 3, vals->shape) : NULL;
  struct lc_node *r = ib ? lc_scatter_axis(z, ib, vals, 0, LC_SCATTER_ADD) : NULL;
  lc_node_release(z);
  lc_node_release(i3);
  lc_node_release(ib);
  return r;
}

/* gather_mm: d(a)[i] = sum over t with lhs[t] == i of g[t] @ b[rhs[t]]^T,
 * d(b)[j] = sum over t with rhs[t] == j of a[lhs[t]]^T @ g[t]. */
static struct lc_node *gather_vjp_operand(struct lc_node *n, struct lc_node *cot, int which) {
  int M, K, N;
  mm_sizes(n, &M, &K, &N);
  int T = (int)dims_size(n->shape, 0, mm_params(n)->nb), tshape[1] = {T};
  struct lc_node *g3 = NULL, *li = NULL, *ri = NULL, *ar = NULL, *adj = NULL, *prod = NULL,
                 *r = NULL;
  int gs[3] = {T, M, N};
  if (!(g3 = lc_reshape(cot, 3, gs)) || !(li = lc_reshape(n->in[2], 1, tshape)) ||
      !(ri = lc_reshape(n->in[3], 1, tshape)) || !(ar = lc_arange(0, T, 1, MLX_UINT32)))
    goto done;
  if (!(adj = adjoint(n->in[1 - which]))) goto done;
  prod = which == 0 ? mm_gathered(g3, adj, ar, ri) : mm_gathered(adj, g3, li, ar);
  if (prod) r = scatter_rows(prod, which == 0 ? li : ri, n->in[which]->shape[0]);
done:
  lc_node_release(g3);
  lc_node_release(li);
  lc_node_release(ri);
  lc_node_release(ar);
  lc_node_release(adj);
  lc_node_release(prod);
  return r;
}

/* segmented_mm: with m_t the indicator of segment t over K,
 * d(a) = sum_t (g_t @ b^T) * m_t[None, :], d(b) = sum_t m_t[:, None] * (a^T @ g_t). */
static struct lc_node *segmented_vjp_operand(struct lc_node *n, struct lc_node *cot, int which) {
  int M, K, N;
  mm_sizes(n, &M, &K, &N);
  int T = (int)dims_size(n->shape, 0, mm_params(n)->nb);
  int gs[3] = {T, M, N}, ss[2] = {T, 2}, ks[2] = {1, K};
  int ms[3] = {T, which == 0 ? 1 : K, which == 0 ? K : 1}, zero = 0;
  struct lc_node *g3 = NULL, *seg = NULL, *lo = NULL, *hi = NULL, *kk = NULL, *k2 = NULL,
                 *ge = NULL, *lt = NULL, *m = NULL, *mf = NULL, *m3 = NULL, *adj = NULL,
                 *prod = NULL, *masked = NULL, *r = NULL;
  if (!(g3 = lc_reshape(cot, 3, gs)) || !(seg = lc_reshape(n->in[2], 2, ss)) ||
      !(lo = lc_slice_axis(seg, 1, 0, 1)) || !(hi = lc_slice_axis(seg, 1, 1, 2)) ||
      !(kk = lc_arange(0, K, 1, MLX_UINT32)) || !(k2 = lc_reshape(kk, 2, ks)) ||
      !(ge = lc_greater_equal(k2, lo)) || !(lt = lc_less(k2, hi)) ||
      !(m = lc_logical_and(ge, lt)) || !(mf = lc_astype(m, n->dtype)) ||
      !(m3 = lc_reshape(mf, 3, ms)) || !(adj = adjoint(n->in[1 - which])))
    goto done;
  prod = which == 0 ? lc_matmul(g3, adj) : lc_matmul(adj, g3);
  if (prod && (masked = lc_multiply(prod, m3))) r = lc_sum(masked, &zero, 1, false);
done:
  lc_node_release(g3);
  lc_node_release(seg);
  lc_node_release(lo);
  lc_node_release(hi);
  lc_node_release(kk);
  lc_node_release(k2);
  lc_node_release(ge);
  lc_node_release(lt);
  lc_node_release(m);
  lc_node_release(mf);
  lc_node_release(m3);
  lc_node_release(adj);
  lc_node_release(prod);
  lc_node_release(masked);
  return r;
}

static int matmul_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                      int nargs, struct lc_node **out) {
  const struct lc_matmul_params *p = mm_params(n);
  for (int j = 0; j < nargs; j++) {
    int k = argnums[j];
    if (k >= 2 && (p->gather || p->segmented)) {
      lc_error("vjp: cannot differentiate %s with respect to its indices (use stop_gradient "
               "on them)", p->gather ? "gather_mm" : "segmented_mm");
      goto fail;
    }
    if (k == 2)
      out[j] = scaled(cot[0], p->beta);
    else if (p->gather)
      out[j] = gather_vjp_operand(n, cot[0], k);
    else if (p->segmented)
      out[j] = segmented_vjp_operand(n, cot[0], k);
    else
      out[j] = mm_vjp_operand(n, cot[0], k);
    if (!out[j]) goto fail;
  }
  return 0;
fail:
  lc_rule_release(out, nargs);
  return 1;
}

/* The node's product (no c term) with input k replaced by x. */
static struct lc_node *mm_with(struct lc_node *n, int k, struct lc_node *x) {
  struct lc_matmul_params p = *mm_params(n);
  struct lc_node *in[4];
  int nin = p.has_c ? 2 : n->nin;
  for (int i = 0; i < nin; i++) in[i] = n->in[i];
  in[k] = x;
  p.has_c = p.c_rounded = 0;
  return lc_node_new_op(LC_OP_MATMUL, n->dtype, n->ndim, n->shape, nin, in, &p, sizeof p);
}

/* *acc += v, consuming v; v == NULL is a failure already reported. */
static int add_into(struct lc_node **acc, struct lc_node *v) {
  if (!v) return 1;
  if (!*acc) {
    *acc = v;
    return 0;
  }
  struct lc_node *s = lc_add(*acc, v);
  lc_node_release(v);
  lc_node_release(*acc);
  *acc = s;
  return s == NULL;
}

/* Linear in each of a, b, c: tangents of the indices are ignored. */
static int matmul_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  const struct lc_matmul_params *p = mm_params(n);
  struct lc_node *acc = NULL;
  for (int k = 0; k < 2; k++)
    if (tan[k] && add_into(&acc, mm_with(n, k, tan[k]))) goto fail;
  if (p->has_c && tan[2] && add_into(&acc, scaled(tan[2], p->beta))) goto fail;
  out[0] = acc;
  return 0;
fail:
  lc_node_release(acc);
  return 1;
}

/* (B, idx shape): idx (batched or not) plus b * rows for the matrices of
 * an operand that is batched (its B x rows matrices flattened). */
static struct lc_node *batch_indices(struct lc_node *idx, int iax, int B, bool shift, int rows) {
  struct lc_node *f = lc_rule_batch_front_full(idx, iax, B);
  if (!f || !shift) return f;
  int sh[f->ndim];
  sh[0] = B;
  for (int d = 1; d < f->ndim; d++) sh[d] = 1;
  struct lc_node *ar = lc_arange(0, (double)B * rows, rows, MLX_UINT32);
  struct lc_node *a2 = ar ? lc_reshape(ar, f->ndim, sh) : NULL;
  struct lc_node *r = a2 ? lc_add(f, a2) : NULL;
  lc_node_release(f);
  lc_node_release(ar);
  lc_node_release(a2);
  return r;
}

/* gather_mm: a batched operand's B x n matrices are flattened into one
 * batch of B * n; the indices (batch first) point into it. */
static int gather_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax, int B,
                       struct lc_node **out) {
  struct lc_node *m[2] = {NULL, NULL}, *ix[2] = {NULL, NULL};
  int rc = 1;
  for (int k = 0; k < 2; k++) {
    const struct lc_node *orig = n->in[k];
    if (ax[k] == -1) {
      m[k] = lc_node_retain(in[k]);
    } else {
      struct lc_node *f = lc_rule_batch_front(in[k], ax[k], false);
      int sh[3] = {B * orig->shape[0], orig->shape[1], orig->shape[2]};
      m[k] = f ? lc_reshape(f, 3, sh) : NULL;
      lc_node_release(f);
    }
    ix[k] = m[k] ? batch_indices(in[k + 2], ax[k + 2], B, ax[k] != -1, orig->shape[0]) : NULL;
    if (!ix[k]) goto done;
  }
  {
    struct lc_matmul_params p = *mm_params(n);
    p.nb++;
    int sh[n->ndim + 1];
    sh[0] = B;
    memcpy(sh + 1, n->shape, sizeof(int) * (size_t)n->ndim);
    struct lc_node *ins[4] = {m[0], m[1], ix[0], ix[1]};
    out[0] = lc_node_new_op(LC_OP_MATMUL, n->dtype, n->ndim + 1, sh, 4, ins, &p, sizeof p);
    rc = out[0] == NULL;
  }
done:
  for (int k = 0; k < 2; k++) {
    lc_node_release(m[k]);
    lc_node_release(ix[k]);
  }
  return rc;
}

/* in[k] of example b (in[k] itself when unbatched). */
static struct lc_node *example(struct lc_node *x, int ax, int b) {
  if (ax == -1) return lc_node_retain(x);
  struct lc_node *s = lc_slice_axis(x, ax, b, b + 1);
  struct lc_node *r = s ? lc_squeeze(s, 1, &ax) : NULL;
  lc_node_release(s);
  return r;
}

/* segmented_mm: batched segments only extend the output batch; a batched
 * a or b (which must stay 2-d) is handled one example at a time. */
static int segmented_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax, int B,
                          struct lc_node **out) {
  if (ax[0] == -1 && ax[1] == -1) {
    struct lc_node *seg = lc_rule_batch_front_full(in[2], ax[2], B);
    if (!seg) return 1;
    struct lc_matmul_params p = *mm_params(n);
    p.nb++;
    int sh[n->ndim + 1];
    sh[0] = B;
    memcpy(sh + 1, n->shape, sizeof(int) * (size_t)n->ndim);
    struct lc_node *ins[3] = {in[0], in[1], seg};
    out[0] = lc_node_new_op(LC_OP_MATMUL, n->dtype, n->ndim + 1, sh, 3, ins, &p, sizeof p);
    lc_node_release(seg);
    return out[0] == NULL;
  }
  struct lc_node **parts = calloc((size_t)(B > 0 ? B : 1), sizeof *parts);
  if (!parts) return lc_error("vmap: out of memory");
  int rc = 1, b = 0;
  for (; b < B; b++) {
    struct lc_node *x[3] = {NULL, NULL, NULL};
    int k = 0;
    for (; k < 3 && (x[k] = example(in[k], ax[k], b)); k++) {
    }
    if (k == 3) parts[b] = lc_rule_clone(n, x);
    for (int i = 0; i < k; i++) lc_node_release(x[i]);
    if (!parts[b]) goto done;
  }
  out[0] = lc_stack(B, parts, 0);
  rc = out[0] == NULL;
done:
  lc_rule_release(parts, b);
  free(parts);
  return rc;
}

/* Every operand gets the batch axis first (unbatched ones broadcast, as
 * the primitive wants shared batch dimensions): one more batch dim. */
static int matmul_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                       struct lc_node **out, int *out_ax) {
  const struct lc_matmul_params *p = mm_params(n);
  int B = lc_rule_batch_size(n->nin, in, ax);
  *out_ax = 0;
  if (p->gather) return gather_vmap(n, in, ax, B, out);
  if (p->segmented) return segmented_vmap(n, in, ax, B, out);
  struct lc_node *ins[3] = {NULL, NULL, NULL};
  int k = 0, rc = 1;
  for (; k < n->nin; k++)
    if (!(ins[k] = lc_rule_batch_front_full(in[k], ax[k], B))) goto done;
  {
    struct lc_matmul_params q = *p;
    q.nb++;
    q.a_split++;
    q.b_split++;
    int sh[n->ndim + 1];
    sh[0] = B;
    memcpy(sh + 1, n->shape, sizeof(int) * (size_t)n->ndim);
    out[0] = lc_node_new_op(LC_OP_MATMUL, n->dtype, n->ndim + 1, sh, n->nin, ins, &q, sizeof q);
    rc = out[0] == NULL;
  }
done:
  lc_rule_release(ins, k);
  return rc;
}

