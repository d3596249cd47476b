/* eval_cuda of MATMUL through cuBLASLt (gpu/cuda/blas_lt.c; float types,
 * batches of whole matrices) or cuBLAS (one strided-batched GEMM): float32
 * (TF32 tensor cores only when asked: MLX_ENABLE_TF32 set to a non-zero
 * integer when the first product runs; full float32 otherwise), float16
 * and bfloat16 (float accumulation), float64. Handles
 * operands whose matrices are row- or column-major with one stride per
 * batch (or none: broadcast); an operand of any other layout (a general
 * strided view, batch dims broadcast in part) is first copied row-major
 * into scratch on the GPU, its broadcast batch dims expanded only where
 * they are broadcast in part.
 * gather/segmented products run on the CPU for now.
 *
 * Products of at most LC_CU_GEMV_MAX_M rows (a decode step's) use lace's
 * own GEMV kernels (gemv.cu) when their layout allows 16-byte loads.
 *
 * Row-major C = A B is column-major C^T = B^T A^T: cuBLAS is called with
 * the operands swapped, each transposed or not by its layout. */
#ifdef LACE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "gpu/cuda/blas.h"
#include "gpu/cuda/eval.h"
#include "gpu/cuda/kernels.h"
#include "gpu/cuda/misc.h"
#include "gpu/gpu.h"
#include "ops/linalg.h"
#include "ops/prim.h"
#include "ops/tuple.h"

#define MAX_GPUS LC_CUDA_BLAS_MAX_GPUS

/* One handle per GPU, made on first use; a handle serves one call at a
 * time (its lock). */
static pthread_mutex_t handle_lock[MAX_GPUS] = {[0 ... MAX_GPUS - 1] = PTHREAD_MUTEX_INITIALIZER};
static cublasHandle_t handles[MAX_GPUS];
#define WORKSPACE ((size_t)32 << 20)
static void *workspaces[MAX_GPUS];

int lc_cuda_blas_check(cublasStatus_t st, const char *what, const char *call) {
  return st == CUBLAS_STATUS_SUCCESS
             ? 0
             : lc_error("%s on the GPU: cuBLAS %s failed (status %d)", what, call, (int)st);
}

int lc_cuda_blas_begin(int dev, const char *what, cublasHandle_t *h) {
  pthread_mutex_lock(&handle_lock[dev]);
  int rc = 0;
  if (!handles[dev]) {
    rc = lc_cuda_blas_check(cublasCreate(&handles[dev]), what, "create");
    /* a workspace of its own, so that cuBLAS never allocates while a CUDA
     * graph is captured (gpu/graphs.h); kept for the process's lifetime */
    if (!rc && cudaMalloc(&workspaces[dev], WORKSPACE) != cudaSuccess) workspaces[dev] = NULL;
    (void)cudaGetLastError();
  }
  if (!rc) rc = lc_cuda_blas_check(cublasSetStream(handles[dev], lc_gpu_stream(dev)), what,
                                   "set stream");
  /* cublasSetStream puts the default workspace back: set ours again */
  if (!rc && workspaces[dev])
    rc = lc_cuda_blas_check(cublasSetWorkspace(handles[dev], workspaces[dev], WORKSPACE), what,
                            "set workspace");
  if (rc) {
    pthread_mutex_unlock(&handle_lock[dev]);
    return 1;
  }
  *h = handles[dev];
  return 0;
}

void lc_cuda_blas_end(int dev) { pthread_mutex_unlock(&handle_lock[dev]); }

void *lc_cuda_blas_workspace(int dev, size_t *size) {
  *size = workspaces[dev] ? WORKSPACE : 0;
  return workspaces[dev];
}


/* A matrix operand in cuBLAS's terms: the column-major matrix at ptr with
 * leading dimension ld is op(X)^T's storage. */
struct mat {
  cublasOperation_t op;
  int64_t ld, batch_stride;
  const void *ptr; /* its data on the device */
};

/* The matrices (R x C, dims [nb, split) and [split, ndim)) of an operand of
 * this shape and these strides, row-major (op N on the transpose) or
 * column-major (op T). false: another layout. */
static bool layout_of(const int *shape, const int64_t *strides, int ndim, int nb, int split,
                      const int *out_shape, struct mat *m, int64_t *R, int64_t *C) {
  int64_t rs, cs, bs = 0, bsz;
  if (!lc_matmul_group(shape, strides, nb, split, R, &rs) ||
      !lc_matmul_group(shape, strides, split, ndim, C, &cs))
    return false;
  if (nb > 0) {
    /* one stride over the output's batch dims; broadcast dims have 0 */
    int64_t st[16];
    int sh[16];
    if (nb > 16) return false;
    for (int d = 0; d < nb; d++) {
      sh[d] = out_shape[d];
      st[d] = shape[d] == 1 ? 0 : strides[d];
    }
    bool zero = true;
    for (int d = 0; d < nb; d++) zero &= st[d] == 0 || sh[d] == 1;
    if (!zero && (!lc_matmul_group(sh, st, 0, nb, &bsz, &bs) || bs == 0)) return false;
    if (zero) bs = 0;
  }
  m->batch_stride = bs;
  if (cs == 1 || *C == 1) { /* row-major: ld = row stride */
    m->op = CUBLAS_OP_N;
    m->ld = *R == 1 ? *C : rs;
    return m->ld >= *C && m->ld > 0;
  }
  if (rs == 1 || *R == 1) { /* column-major: ld = column stride */
    m->op = CUBLAS_OP_T;
    m->ld = *C == 1 ? *R : cs;
    return m->ld >= *R && m->ld > 0;
  }
  return false;
}

static bool layout(const struct lc_node *x, int nb, int split, const int *out_shape,
                   struct mat *m, int64_t *R, int64_t *C) {
  m->ptr = lc_node_dev_data(x);
  return layout_of(x->shape, x->strides, x->ndim, nb, split, out_shape, m, R, C);
}

/* How an operand of another layout than layout's is copied: row-major
 * with its own shape (a general strided view), or, where batch dims are
 * broadcast in part, with those expanded to the output's. */
struct operand_copy {
  bool needed;
  int nd;
  int shape[LC_CU_MAX_DIMS];
  int64_t strides[LC_CU_MAX_DIMS], count;
  const struct lc_node *x;
};

/* x's matrices as layout gives them, or as they will be once copied
 * (plan_operand, nothing allocated; copy_operand queues the copy). 0, or
 * LC_EVAL_ON_CPU (too many dims or elements, or no layout either way). */
static int plan_operand(const struct lc_node *x, int nb, int split, const int *out_shape,
                        struct mat *m, int64_t *R, int64_t *C, struct operand_copy *cp) {
  cp->needed = false;
  if (layout(x, nb, split, out_shape, m, R, C)) return 0;
  int nd = x->ndim;
  if (nd > LC_CU_MAX_DIMS) return LC_EVAL_ON_CPU;
  int64_t rs[LC_CU_MAX_DIMS];
  cp->needed = true;
  cp->nd = nd;
  cp->x = x;
  for (int expand = 0; expand < 2; expand++) {
    cp->count = 1;
    for (int d = 0; d < nd; d++) {
      bool e = expand && d < nb && x->shape[d] == 1;
      cp->shape[d] = e ? out_shape[d] : x->shape[d];
      cp->strides[d] = e ? 0 : x->strides[d];
      if (cp->shape[d] && cp->count > INT64_MAX / 16 / cp->shape[d]) return LC_EVAL_ON_CPU;
      cp->count *= cp->shape[d];
    }
    lc_shape_strides(nd, cp->shape, rs);
    if (layout_of(cp->shape, rs, nd, nb, split, out_shape, m, R, C)) return 0;
  }
  return LC_EVAL_ON_CPU;
}

/* Queues cp's copy (lc_cuda_copy_to_scratch) and points m there. */
static int copy_operand(const struct operand_copy *cp, struct mat *m, struct lc_buffer **tmp,
                        int dev) {
  if (!cp->needed) return 0;
  return lc_cuda_copy_to_scratch(cp->x, cp->nd, cp->shape, cp->strides, cp->count, tmp, &m->ptr,
                                 dev, "matmul (copy of an operand)");
}

/* LACE_CUDA_BLASLT=0: products go to cublasGemmStridedBatchedEx instead of
 * cuBLASLt (for comparisons). */
static bool lt_disabled(void) {
  const char *e = getenv("LACE_CUDA_BLASLT");
  return e && strcmp(e, "0") == 0;
}

/* Products cuBLASLt takes: its float types, batches that each have their
 * own matrices (broadcast operands stay with cuBLAS's GEMM). */
static bool lt_takes(cudaDataType_t dt, const struct mat *A, const struct mat *B,
                     int64_t batches) {
  return (dt == CUDA_R_32F || dt == CUDA_R_16F || dt == CUDA_R_16BF) && !lt_disabled() &&
         (batches == 1 || (A->batch_stride != 0 && B->batch_stride != 0));
}

/* out (M x N per batch, row-major) = alpha a b + beta out through cuBLASLt:
 * as cuBLAS's column-major out^T = b^T a^T. The caller holds the lock. */
static int lt_product(struct lc_node *n, cudaDataType_t dt, cublasComputeType_t ct,
                      const struct mat *A, const struct mat *B, int64_t M, int64_t K, int64_t N,
                      int64_t batches, const void *alpha, const void *beta) {
  size_t ws_size;
  void *ws = lc_cuda_blas_workspace(n->dev, &ws_size);
  struct lc_cuda_gemm g;
  memset(&g, 0, sizeof g);
  g.key.m = N, g.key.n = M, g.key.k = K;
  g.key.lda = B->ld, g.key.ldb = A->ld, g.key.ldc = N;
  g.key.batch = batches;
  if (batches > 1)
    g.key.stride_a = B->batch_stride, g.key.stride_b = A->batch_stride, g.key.stride_c = M * N;
  g.key.dt = (int32_t)dt, g.key.ct = (int32_t)ct;
  g.key.opa = (int32_t)B->op, g.key.opb = (int32_t)A->op;
  g.a = B->ptr;
  g.b = A->ptr;
  g.c = n->buf->dev_data;
  g.key.align_a = lc_cuda_lt_align(g.a);
  g.key.align_b = lc_cuda_lt_align(g.b);
  g.key.align_c = lc_cuda_lt_align(g.c);
  g.alpha = alpha, g.beta = beta;
  return lc_cuda_lt_gemm(n->dev, &g, lc_gpu_stream(n->dev), ws, ws_size);
}

/* LACE_CUDA_GEMV=0: products of a few rows go to cuBLAS too (for
 * comparisons). */
static bool gemv_disabled(void) {
  const char *e = getenv("LACE_CUDA_GEMV");
  return e && strcmp(e, "0") == 0;
}

/* How a GEMV split over slices of k adds them (LACE_CUDA_GEMV_FINISH, read
 * at each product): "kernel" (the default), a second kernel; "last", the
 * last block of each tile, in the same kernel. The same bits either way. */
static bool gemv_finish_last(void) {
  const char *e = getenv("LACE_CUDA_GEMV_FINISH");
  return e && strcmp(e, "last") == 0;
}

/* The arrival counters for a split product (gemv_finish_last). */
static unsigned *gemv_counters(int dev, int64_t *n) {
  size_t cn = 0;
  unsigned *c = gemv_finish_last() ? lc_gpu_tile_counters(dev, &cn) : NULL;
  *n = (int64_t)cn;
  return c;
}

/* Products the GEMV kernels have queued (lc_gpu_gemv_launches). */
static atomic_ulong gemv_launches;

unsigned long lc_gpu_gemv_launches(void) { return atomic_load(&gemv_launches); }

/* The GEMV kernels' rows of a for a product of M rows per batch: batches
 * of a over one shared b fold into rows, equally spaced. false when they
 * do not (or are too many); else *rows and *lda (row m at a + m * lda). */
static bool gemv_rows_of(const struct mat *A, const struct mat *B, int64_t M, int64_t K,
                         int64_t batches, int64_t *rows, int64_t *lda) {
  if (A->op != CUBLAS_OP_N || (batches > 1 && B->batch_stride != 0)) return false;
  /* a's rows over all batches must be equally spaced */
  if (batches > 1 && M > 1 && A->batch_stride != M * A->ld) return false;
  *rows = M * batches;
  *lda = M > 1 ? A->ld : (batches > 1 ? A->batch_stride : K);
  return *rows <= LC_CU_GEMV_MAX_M && !(batches > 1 && M == 1 && *lda == 0);
}

/* out = a b (+ c, rounded first: c_rounded) through lc_cu_gemv when there
 * are at most LC_CU_GEMV_MAX_M rows in all (batches of a over one shared b
 * fold into rows; c's row r at c + r * ldc). 0 (done),
 * LC_CU_UNSUPPORTED (nothing queued: cuBLAS instead), or 1 after
 * reporting. The k-split scratch comes from lc_gpu_malloc, which reports
 * its own failure. */
static int try_gemv(struct lc_node *n, const struct mat *A, const struct mat *B, int64_t M,
                    int64_t K, int64_t N, int64_t batches, const void *c, int64_t ldc) {
  int64_t rows, lda;
  if (gemv_disabled() || !gemv_rows_of(A, B, M, K, batches, &rows, &lda)) return LC_CU_UNSUPPORTED;
  struct lc_cu_gemv g = {.dt = n->dtype, .dev = n->dev, .M = (int)rows, .N = N, .K = K,
                         .lda = lda, .ldb = B->ld, .b_cols = B->op == CUBLAS_OP_T,
                         .a = A->ptr, .b = B->ptr,
                         .out = n->buf->dev_data, .c = c, .ldc = ldc};
  size_t part = 0;
  int rc = lc_cu_gemv_plan(&g, &part);
  if (rc == LC_CU_UNSUPPORTED) return rc;
  if (!rc && part && !(g.part = lc_gpu_malloc(part, n->dev))) return 1;
  if (part) g.done = gemv_counters(n->dev, &g.ndone);
  if (!rc) rc = lc_cu_gemv(&g, lc_gpu_stream(n->dev));
  /* stream-ordered: reused only by work queued after the kernels reading it */
  if (g.part) lc_gpu_free(g.part, part, n->dev);
  if (rc == 0) {
    atomic_fetch_add(&gemv_launches, 1);
    return 0;
  }
  /* a negative CUDA error (lc_cu_gemv declines only where the plan did) */
  return rc == LC_CU_UNSUPPORTED ? rc : lc_cuda_result(rc, "matmul (gemv)");
}

/* c_rounded's c as the GEMV kernels read it: row r (of the M * batches
 * rows) at c + r * ldc, contiguous along n; else a copy of it in out
 * (ldc = N), which each output element reads before writing it. NULL
 * after reporting a failed copy. */
static const void *gemv_addend(struct lc_node *n, const struct lc_matmul_params *p, int64_t M,
                               int64_t N, int64_t batches, int64_t *ldc) {
  const struct lc_node *c = n->in[2];
  struct mat C;
  int64_t R, Cn;
  if (layout(c, p->nb, p->a_split, n->shape, &C, &R, &Cn) && R == M && Cn == N &&
      C.op == CUBLAS_OP_N) {
    int64_t ld = M > 1 ? C.ld : (batches > 1 ? C.batch_stride : N);
    if (batches == 1 || M == 1 || C.batch_stride == M * C.ld) {
      *ldc = ld;
      return lc_node_dev_data(c);
    }
  }
  *ldc = N;
  if (lc_cuda_result(lc_cu_copy_strided(n->buf->dev_data, lc_node_dev_data(c),
                                        (int)lc_dtype_size(n->dtype), c->ndim, c->shape,
                                        c->strides, c->size, lc_gpu_stream(n->dev)),
                     "matmul (copy of c)"))
    return NULL;
  return n->buf->dev_data;
}

/* out += c (input 2, the output's shape) with the add primitive's kernel:
 * c_rounded where the product went through cuBLAS. */
static int add_c_after(struct lc_node *n) {
  const struct lc_node *c = n->in[2];
  struct lc_cu_ew e = {.op = LC_OP_ADD, .out_dt = n->dtype, .in_dt = n->dtype, .nin = 2,
                       .n = n->size, .out = n->buf->dev_data};
  e.in[0] = n->buf->dev_data;
  e.in[1] = lc_node_dev_data(c);
  if (c->ndim > LC_CU_MAX_DIMS) return lc_error("matmul on the GPU: c has too many dimensions");
  e.ndim = c->ndim;
  for (int d = 0; d < c->ndim; d++) {
    e.shape[d] = c->shape[d];
    e.strides[1][d] = c->strides[d];
  }
  lc_shape_strides(c->ndim, c->shape, e.strides[0]); /* out is contiguous */
  int rc = lc_cu_elementwise(&e, lc_gpu_stream(n->dev));
  return rc == LC_CU_UNSUPPORTED ? lc_error("matmul on the GPU: no kernel adds c")
                                 : lc_cuda_result(rc, "matmul (add of c)");
}

/* Whether float32 products may use TF32 (MLX_ENABLE_TF32, read once: a
 * captured CUDA graph keeps the compute type it was captured with). */
static pthread_once_t tf32_once = PTHREAD_ONCE_INIT;
static bool tf32_on; /* written once, under tf32_once */
static void read_tf32(void) {
  const char *e = getenv("MLX_ENABLE_TF32");
  tf32_on = e && atoi(e) != 0;
}

/* alpha or beta as cuBLAS reads it for compute type ct: a double for
 * 64F, else a float pair (complex's re and im; real types read the
 * first). */
struct blas_scalar {
  float f[2];
  double d;
};
static const void *blas_scalar(struct blas_scalar *s, double v, cublasComputeType_t ct) {
  s->f[0] = (float)v, s->f[1] = 0.0f, s->d = v;
  return ct == CUBLAS_COMPUTE_64F ? (const void *)&s->d : (const void *)s->f;
}

/* gather_mm (params gather): a (na, M, K) and b (nb, K, N), inputs 2 and 3
 * choosing a's and b's matrix for each output batch, as one batched GEMM
 * over pointer arrays that a kernel builds from the indices on the device
 * (no host read: graph capture stays possible). tmp[0..5): operand and
 * index copies, the pointer arrays. Empty products run on the CPU. */
static int gather_with(struct lc_node *n, cudaDataType_t dt, cublasComputeType_t ct,
                       struct lc_buffer **tmp) {
  const struct lc_matmul_params *p = n->params;
  const struct lc_node *a = n->in[0], *b = n->in[1];
  if (n->nin != 4 || p->has_c || n->dtype == MLX_COMPLEX64 || a->dtype != n->dtype ||
      b->dtype != n->dtype || a->ndim != 3 || b->ndim != 3 || n->in[2]->dtype != MLX_UINT32 ||
      n->in[3]->dtype != MLX_UINT32 || n->dev >= MAX_GPUS || n->size == 0)
    return LC_EVAL_ON_CPU;
  struct mat A, B;
  int64_t M, K, K2, N, batches = 1;
  struct operand_copy ca, cb;
  /* one batch dim each, strided over its own matrices */
  int orc = plan_operand(a, 1, p->a_split, a->shape, &A, &M, &K, &ca);
  if (!orc) orc = plan_operand(b, 1, p->b_split, b->shape, &B, &K2, &N, &cb);
  if (orc) return orc;
  for (int d = 0; d < p->nb; d++) batches *= n->shape[d];
  if (K != K2 || K == 0 || M > INT32_MAX || N > INT32_MAX || K > INT32_MAX ||
      batches > INT32_MAX || A.ld > INT32_MAX || B.ld > INT32_MAX)
    return LC_EVAL_ON_CPU;
  const void *ia, *ib; /* the indices, row-major over the output's batch shape */
  int rc = lc_cuda_row_major(n->in[2], n->dev, "gather_mm (copy of indices)", &tmp[2], &ia);
  if (!rc) rc = lc_cuda_row_major(n->in[3], n->dev, "gather_mm (copy of indices)", &tmp[3], &ib);
  if (rc) return rc;
  if (copy_operand(&ca, &A, &tmp[0], n->dev) || copy_operand(&cb, &B, &tmp[1], n->dev)) return 1;
  if (!(tmp[4] = lc_buffer_new_device(sizeof(void *) * 3 * (size_t)batches, n->dev))) return 1;
  if (lc_cuda_alloc_output(n)) return 1;
  size_t isz = lc_dtype_size(n->dtype);
  void *stream = lc_gpu_stream(n->dev), **ptrs = tmp[4]->dev_data;
  struct lc_cu_gather_mm g = {
      .ia = ia, .ib = ib, .n = batches, .a = A.ptr, .b = B.ptr, .out = n->buf->dev_data,
      .a_step = A.batch_stride * (int64_t)isz, .b_step = B.batch_stride * (int64_t)isz,
      .out_step = M * N * (int64_t)isz, .na = (uint32_t)a->shape[0], .nb = (uint32_t)b->shape[0],
      .ptrs = ptrs};
  rc = lc_cuda_result(lc_cu_gather_mm_ptrs(&g, stream), "gather_mm (pointers)");
  if (rc) return lc_cuda_finish(n, rc);
  cublasHandle_t h;
  if (lc_cuda_blas_begin(n->dev, "gather_mm", &h)) return lc_cuda_finish(n, 1);
  struct blas_scalar sa, sb;
  const void *alpha = blas_scalar(&sa, p->alpha, ct), *beta = blas_scalar(&sb, 0.0, ct);
  /* row-major out = a b as cuBLAS's column-major out^T = b^T a^T */
  rc = lc_cuda_blas_check(
      cublasGemmBatchedEx(h, B.op, A.op, (int)N, (int)M, (int)K, alpha,
                          (const void *const *)(ptrs + batches), dt, (int)B.ld,
                          (const void *const *)ptrs, dt, (int)A.ld, beta, ptrs + 2 * batches, dt,
                          (int)N, (int)batches, ct, CUBLAS_GEMM_DEFAULT),
      "gather_mm", "batched gemm");
  lc_cuda_blas_end(n->dev);
  return rc ? lc_cuda_finish(n, 1) : 0;
}

/* lc_cuda_eval_matmul with its operand copies' owner. */
static int matmul_with(struct lc_node *n, struct lc_buffer **tmp) {
  const struct lc_matmul_params *p = n->params;
  const struct lc_node *a = n->in[0], *b = n->in[1];
  cudaDataType_t dt;
  cublasComputeType_t ct;
  switch (n->dtype) {
    case MLX_FLOAT32:
      pthread_once(&tf32_once, read_tf32);
      dt = CUDA_R_32F, ct = tf32_on ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      break;
    case MLX_FLOAT16: dt = CUDA_R_16F, ct = CUBLAS_COMPUTE_32F; break;
    case MLX_BFLOAT16: dt = CUDA_R_16BF, ct = CUBLAS_COMPUTE_32F; break;
    case MLX_FLOAT64: dt = CUDA_R_64F, ct = CUBLAS_COMPUTE_64F; break;
    case MLX_COMPLEX64: /* cuBLAS's cgemm; no kernel here adds a rounded c */
      if (p->has_c && p->c_rounded) return LC_EVAL_ON_CPU;
      dt = CUDA_C_32F, ct = CUBLAS_COMPUTE_32F;
      break;
    default: return LC_EVAL_ON_CPU;
  }
  if (p->gather) return gather_with(n, dt, ct, tmp);
  if (p->segmented || a->dtype != n->dtype || b->dtype != n->dtype || n->dev >= MAX_GPUS)
    return LC_EVAL_ON_CPU;
  struct mat A, B;
  int64_t M, K, K2, N;
  struct operand_copy ca, cb;
  int orc = plan_operand(a, p->nb, p->a_split, n->shape, &A, &M, &K, &ca);
  if (!orc) orc = plan_operand(b, p->nb, p->b_split, n->shape, &B, &K2, &N, &cb);
  if (orc) return orc;
  if (K != K2) return LC_EVAL_ON_CPU;
  int64_t batches = 1;
  for (int d = 0; d < p->nb; d++) batches *= n->shape[d];
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || batches > INT32_MAX ||
      A.ld > INT32_MAX || B.ld > INT32_MAX)
    return LC_EVAL_ON_CPU;
  /* an empty contraction of addmm is beta c: no kernel here scales c */
  if (K == 0 && p->has_c && !p->c_rounded && p->beta != 1.0) return LC_EVAL_ON_CPU;
  if (K > 0 && n->size > 0 &&
      (copy_operand(&ca, &A, &tmp[0], n->dev) || copy_operand(&cb, &B, &tmp[1], n->dev)))
    return 1;
  if (lc_cuda_alloc_output(n)) return 1;
  if (n->size == 0) return 0;
  void *stream = lc_gpu_stream(n->dev);
  size_t isz = lc_dtype_size(n->dtype);
  double beta = 0.0;
  bool c_after = p->has_c && p->c_rounded; /* c added to the rounded product */
  if (p->has_c && !c_after) { /* out = c first, then out = alpha a b + beta out */
    const struct lc_node *c = n->in[2];
    int rc = lc_cuda_result(lc_cu_copy_strided(n->buf->dev_data, lc_node_dev_data(c), (int)isz,
                                               c->ndim, c->shape, c->strides, c->size, stream),
                            "addmm (copy of c)");
    if (rc) goto fail_rc;
    beta = p->beta;
  }
  if (K == 0) { /* an empty contraction: beta c, or zeros (+ c) */
    if ((!p->has_c || c_after) &&
        cudaMemsetAsync(n->buf->dev_data, 0, (size_t)n->size * isz, stream)) {
      lc_error("matmul on the GPU: memset failed");
      goto fail;
    }
    if (c_after && add_c_after(n)) goto fail;
    return 0;
  }
  if ((!p->has_c || c_after) && p->alpha == 1.0f && n->dtype != MLX_FLOAT64 &&
      n->dtype != MLX_COMPLEX64) {
    int64_t ldc = 0;
    const void *c = NULL;
    if (c_after && !(c = gemv_addend(n, p, M, N, batches, &ldc))) goto fail;
    int g = try_gemv(n, &A, &B, M, K, N, batches, c, ldc);
    if (g == 0) return 0;
    if (g != LC_CU_UNSUPPORTED) goto fail;
  }
  cublasHandle_t h;
  if (lc_cuda_blas_begin(n->dev, "matmul", &h)) goto fail;
  struct blas_scalar sa, sb;
  const void *alpha = blas_scalar(&sa, p->alpha, ct), *betap = blas_scalar(&sb, beta, ct);
  int rc = LC_CUDA_LT_DECLINED;
  if (lt_takes(dt, &A, &B, batches))
    rc = lt_product(n, dt, ct, &A, &B, M, K, N, batches, alpha, betap);
  if (rc == LC_CUDA_LT_DECLINED)
    rc = lc_cuda_blas_check(
      cublasGemmStridedBatchedEx(h, B.op, A.op, (int)N, (int)M, (int)K, alpha,
                                 B.ptr, dt, (int)B.ld, B.batch_stride,
                                 A.ptr, dt, (int)A.ld, A.batch_stride, betap,
                                 n->buf->dev_data, dt, (int)N, M * N, (int)batches, ct,
                                 CUBLAS_GEMM_DEFAULT),
      "matmul", "gemm");
  lc_cuda_blas_end(n->dev);
  if (!rc && c_after) rc = add_c_after(n);
  if (!rc) return 0;
fail:
  rc = 1;
fail_rc:
  lc_buffer_release(n->buf);
  n->buf = NULL;
  return rc;
}

int lc_cuda_eval_matmul(struct lc_node *n) {
  struct lc_buffer *tmp[5] = {NULL, NULL, NULL, NULL, NULL};
  int rc = matmul_with(n, tmp);
  for (int k = 0; k < 5; k++) lc_buffer_release(tmp[k]); /* stream-ordered */
  return rc;
}

/* The group's products in one GEMV launch: 0, LC_CU_UNSUPPORTED (nothing
 * queued), or 1 after reporting. Each product must take the GEMV kernels'
 * rows layout (row-major weights) with the same rows of a. */
static int try_gemv_group(struct lc_node *n, const struct lc_mm_group_params *gp,
                          int shapes[][LC_MM_GROUP_MAX_NDIM], const int64_t *offs) {
  const struct lc_matmul_params *p = &gp->mm;
  struct lc_cu_gemv_group g = {.dt = n->in[0]->dtype, .dev = n->dev, .n = gp->n,
                               .a = lc_node_dev_data(n->in[0])};
  if (gemv_disabled() || (g.dt != MLX_FLOAT32 && g.dt != MLX_FLOAT16 && g.dt != MLX_BFLOAT16))
    return LC_CU_UNSUPPORTED;
  for (int k = 0; k < gp->n; k++) {
    const struct lc_node *b = n->in[1 + k];
    struct mat A, B;
    int64_t M, K, K2, N, batches = 1;
    if ((int)b->dtype != g.dt || !layout(n->in[0], p->nb, p->a_split, shapes[k], &A, &M, &K) ||
        !layout(b, p->nb, p->b_split, shapes[k], &B, &K2, &N) || K != K2 ||
        B.op != CUBLAS_OP_N)
      return LC_CU_UNSUPPORTED;
    for (int d = 0; d < p->nb; d++) batches *= shapes[k][d];
    int64_t rows, lda;
    if (!gemv_rows_of(&A, &B, M, K, batches, &rows, &lda) || K > INT32_MAX || N > INT32_MAX)
      return LC_CU_UNSUPPORTED;
    if (k == 0) {
      g.M = (int)rows;
      g.K = K;
      g.lda = lda;
    } else if (g.M != rows || g.K != K || g.lda != lda) {
      return LC_CU_UNSUPPORTED;
    }
    g.b[k] = lc_node_dev_data(b);
    g.ldb[k] = B.ld;
    g.N[k] = N;
    g.out[k] = (char *)n->buf->dev_data + offs[k];
  }
  size_t part = 0;
  int rc = lc_cu_gemv_group_plan(&g, &part);
  if (rc == LC_CU_UNSUPPORTED) return rc;
  if (!rc && part && !(g.part = lc_gpu_malloc(part, n->dev))) return 1;
  if (part) g.done = gemv_counters(n->dev, &g.ndone);
  if (!rc) rc = lc_cu_gemv_group(&g, lc_gpu_stream(n->dev));
  if (g.part) lc_gpu_free(g.part, part, n->dev);
  if (rc == 0) {
    atomic_fetch_add(&gemv_launches, 1);
    return 0;
  }
  return rc == LC_CU_UNSUPPORTED ? rc : lc_cuda_result(rc, "matmul group (gemv)");
}

/* MATMUL_GROUP: the products one by one through MATMUL's evaluator, each
 * copied into its place in the tuple. LC_EVAL_ON_CPU when one of them has
 * no GPU path (nothing is left queued that matters: the tuple's buffer is
 * given back, stream-ordered). */
int lc_cuda_eval_matmul_group(struct lc_node *n) {
  const struct lc_mm_group_params *gp = n->params;
  int nds[LC_MM_GROUP_MAX], shapes[LC_MM_GROUP_MAX][LC_MM_GROUP_MAX_NDIM];
  int64_t nbytes[LC_MM_GROUP_MAX], offs[LC_MM_GROUP_MAX];
  if (n->dev < 0 || n->dev >= MAX_GPUS || gp->n < 1 || gp->n > LC_MM_GROUP_MAX) return LC_EVAL_ON_CPU;
  mlx_dtype dt = n->in[0]->dtype;
  if (lc_matmul_group_outs(n, nds, shapes, nbytes)) return 1;
  lc_tuple_layout(gp->n, nbytes, offs);
  if (lc_cuda_alloc_output(n)) return 1;
  void *stream = lc_gpu_stream(n->dev);
  int g = try_gemv_group(n, gp, shapes, offs);
  if (g == 0) return 0;
  if (g != LC_CU_UNSUPPORTED) return lc_cuda_finish(n, 1);
  int saved = lc_build_device(), rc = 0;
  lc_set_build_device(n->dev);
  for (int k = 0; k < gp->n && !rc; k++) {
    struct lc_node *in[2] = {n->in[0], n->in[1 + k]};
    struct lc_node *t =
        lc_node_new_op(LC_OP_MATMUL, dt, nds[k], shapes[k], 2, in, &gp->mm, sizeof gp->mm);
    if (!t) {
      rc = 1;
      break;
    }
    t->dev = n->dev;
    rc = lc_cuda_eval_matmul(t);
    if (!rc && nbytes[k] &&
        cudaMemcpyAsync((char *)n->buf->dev_data + offs[k],
                        t->buf->dev_data, (size_t)nbytes[k], cudaMemcpyDeviceToDevice,
                        (cudaStream_t)stream) != cudaSuccess) {
      (void)cudaGetLastError();
      rc = lc_error("matmul group on the GPU: copy failed");
    }
    lc_node_release(t);
  }
  lc_set_build_device(saved);
  return lc_cuda_finish(n, rc);
}
#endif
