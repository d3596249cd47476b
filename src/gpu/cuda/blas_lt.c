/* Products through cuBLASLt (gpu/cuda/blas.h, lc_cuda_lt_gemm): the path
 * MATMUL takes for float32, float16 and bfloat16 on the GPU.
 *
 * A plan (the matmul descriptor, the three layouts and the algorithm) is
 * made once per product signature (lc_cuda_lt_key: dtypes, operations,
 * sizes, leading dimensions, batch strides and the operands' address
 * alignment) and kept in its GPU's table of LT_PLANS plans, least
 * recently used first out. The table belongs to the GPU's cuBLAS lock:
 * every function here runs between lc_cuda_blas_begin and
 * lc_cuda_blas_end for that GPU, so nothing here needs a lock of its own.
 *
 * The algorithm is cuBLASLt's first heuristic answer (of LT_CANDIDATES
 * asked for) that fits lace's workspace, so a signature always gets the
 * same algorithm and a product the same bits. (Timing the candidates and
 * keeping the fastest, as autotuners do, was tried on an H100 on
 * 2026-12-06: no faster than the first answer on the shapes of
 * bench_cublas.) */
#ifdef LACE_CUDA
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "gpu/cuda/blas.h"

#define LT_PLANS 64
#define LT_CANDIDATES 8

struct lt_plan {
  struct lc_cuda_lt_key key;
  uint64_t used; /* the table's clock at the last use; 0: empty slot */
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulAlgo_t algo;
};

struct lt_table {
  cublasLtHandle_t handle;
  uint64_t clock;
  struct lt_plan plans[LT_PLANS];
};

/* Guarded by the GPU's cuBLAS lock (see the file's comment). */
static struct lt_table tables[LC_CUDA_BLAS_MAX_GPUS];

static int lt_check(cublasStatus_t st, const char *call) {
  return lc_cuda_blas_check(st, "matmul", call);
}

/* The largest power of two (at most 256) dividing the address. */
unsigned lc_cuda_lt_align(const void *p) {
  uintptr_t a = (uintptr_t)p;
  unsigned al = 256;
  while (al > 1 && a % al) al /= 2;
  return al;
}

static void plan_clear(struct lt_plan *p) {
  if (p->desc) cublasLtMatmulDescDestroy(p->desc);
  if (p->la) cublasLtMatrixLayoutDestroy(p->la);
  if (p->lb) cublasLtMatrixLayoutDestroy(p->lb);
  if (p->lc) cublasLtMatrixLayoutDestroy(p->lc);
  memset(p, 0, sizeof *p);
}

static int layout_new(cublasLtMatrixLayout_t *l, cudaDataType_t dt, int64_t rows, int64_t cols,
                      int64_t ld, int64_t batch, int64_t stride) {
  if (lt_check(cublasLtMatrixLayoutCreate(l, dt, (uint64_t)rows, (uint64_t)cols, ld), "layout"))
    return 1;
  if (batch > 1) {
    int32_t b = (int32_t)batch;
    if (lt_check(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b,
                                                  sizeof b),
                 "layout batch") ||
        lt_check(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                  &stride, sizeof stride),
                 "layout stride"))
      return 1;
  }
  return 0;
}

/* Makes p's descriptors and chooses its algorithm. 0, LC_CUDA_LT_DECLINED
 * (no algorithm: p stays empty), or 1 after reporting. */
static int plan_make(struct lt_table *t, struct lt_plan *p, const struct lc_cuda_gemm *g,
                     size_t ws_size) {
  const struct lc_cuda_lt_key *k = &g->key;
  cublasOperation_t ta = (cublasOperation_t)k->opa, tb = (cublasOperation_t)k->opb;
  cudaDataType_t dt = (cudaDataType_t)k->dt;
  cublasComputeType_t ct = (cublasComputeType_t)k->ct;
  cudaDataType_t scale = ct == CUBLAS_COMPUTE_64F ? CUDA_R_64F : CUDA_R_32F;
  if (lt_check(cublasLtMatmulDescCreate(&p->desc, ct, scale), "descriptor") ||
      lt_check(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
               "descriptor") ||
      lt_check(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
               "descriptor"))
    goto fail;
  /* stored shapes: op(A) is m x k, op(B) is k x n (column-major) */
  bool na = ta == CUBLAS_OP_N, nb = tb == CUBLAS_OP_N;
  if (layout_new(&p->la, dt, na ? k->m : k->k, na ? k->k : k->m, k->lda, k->batch,
                 k->stride_a) ||
      layout_new(&p->lb, dt, nb ? k->k : k->n, nb ? k->n : k->k, k->ldb, k->batch,
                 k->stride_b) ||
      layout_new(&p->lc, dt, k->m, k->n, k->ldc, k->batch, k->stride_c))
    goto fail;
  cublasLtMatmulPreference_t pref;
  if (lt_check(cublasLtMatmulPreferenceCreate(&pref), "preference")) goto fail;
  uint64_t wsb = ws_size;
  uint32_t al[4] = {k->align_a, k->align_b, k->align_c, k->align_c};
  cublasLtMatmulPreferenceAttributes_t names[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  int rc = lt_check(cublasLtMatmulPreferenceSetAttribute(
                        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb),
                    "preference");
  for (int i = 0; i < 4 && !rc; i++)
    rc = lt_check(cublasLtMatmulPreferenceSetAttribute(pref, names[i], &al[i], sizeof al[i]),
                  "preference");
  cublasLtMatmulHeuristicResult_t res[LT_CANDIDATES];
  int nres = 0;
  if (!rc && cublasLtMatmulAlgoGetHeuristic(t->handle, p->desc, p->la, p->lb, p->lc, p->lc, pref,
                                            LT_CANDIDATES, res, &nres) != CUBLAS_STATUS_SUCCESS)
    nres = 0; /* no algorithm for this signature: cuBLAS's GEMM instead */
  cublasLtMatmulPreferenceDestroy(pref);
  if (rc) goto fail;
  int best = -1;
  for (int i = 0; i < nres && best < 0; i++)
    if (res[i].state == CUBLAS_STATUS_SUCCESS && res[i].workspaceSize <= ws_size) best = i;
  if (best < 0) {
    plan_clear(p);
    return LC_CUDA_LT_DECLINED;
  }
  p->algo = res[best].algo;
  p->key = *k;
  return 0;
fail:
  plan_clear(p);
  return 1;
}

int lc_cuda_lt_gemm(int dev, const struct lc_cuda_gemm *g, void *stream, void *ws,
                    size_t ws_size) {
  if (dev < 0 || dev >= LC_CUDA_BLAS_MAX_GPUS) return LC_CUDA_LT_DECLINED;
  struct lt_table *t = &tables[dev];
  if (!t->handle && lt_check(cublasLtCreate(&t->handle), "create")) {
    t->handle = NULL;
    return 1;
  }
  cudaStream_t st = (cudaStream_t)stream;
  struct lt_plan *p = NULL, *victim = &t->plans[0];
  for (int i = 0; i < LT_PLANS; i++) {
    struct lt_plan *q = &t->plans[i];
    if (q->used && memcmp(&q->key, &g->key, sizeof q->key) == 0) {
      p = q;
      break;
    }
    if (q->used < victim->used) victim = q;
  }
  if (!p) {
    plan_clear(victim);
    int rc = plan_make(t, victim, g, ws_size);
    if (rc) return rc;
    p = victim;
  }
  p->used = ++t->clock;
  return lt_check(cublasLtMatmul(t->handle, p->desc, g->alpha, g->a, p->la, g->b, p->lb, g->beta,
                                 g->c, p->lc, g->c, p->lc, &p->algo, ws, ws_size, st),
                  "Lt matmul");
}
#endif
