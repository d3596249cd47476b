/* matmul on the GPU against cuBLAS called directly, side by side in one
 * run: lace's mlx_matmul on a GPU stream, cublasGemmEx with its default
 * algorithm and cublasLtMatmul with cuBLASLt's first heuristic answer, on
 * the same random operands, two ways:
 *   one call: lace's median wall time of building the node and mlx_eval
 *     (which waits for the GPU); the direct calls' median of CUDA events
 *     around one call;
 *   pipelined: PIPE products queued back to back (lace: mlx_async_eval
 *     each, one mlx_synchronize; direct: events around the PIPE calls),
 *     time per product: what a loop of products costs once the host keeps
 *     ahead of the GPU.
 * Prints "cublas-case" lines and the ratios lace / best direct call.
 * Built without CUDA, or run without a GPU, it says so and exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

#ifdef LACE_BENCH_CUDA
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#define REPS 15
#define PIPE 16
#define WS ((size_t)32 << 20)

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* float to bfloat16 bits, round to nearest even (finite inputs) */
static unsigned short to_bf16(float f) {
  unsigned u;
  memcpy(&u, &f, 4);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

struct direct {
  int m, n, k; /* row-major C (m x n) = A (m x k) B (k x n) */
  cudaDataType_t dt;
  void *a, *b, *c, *ws;
  cublasHandle_t h;
  cublasLtHandle_t lt;
  cudaEvent_t e0, e1;
};

/* The descriptors of d's product for cublasLtMatmul, as column-major
 * C^T (n x m) = B^T (n x k) A^T (k x m), and cuBLASLt's first `want`
 * heuristic answers (fitting WS) in res[0..*nres). Non-zero on failure;
 * the caller destroys whatever was made. */
static int lt_plan(struct direct *d, cublasLtMatmulDesc_t *desc, cublasLtMatrixLayout_t *la,
                   cublasLtMatrixLayout_t *lb, cublasLtMatrixLayout_t *lc,
                   cublasLtMatmulPreference_t *pref, int want,
                   cublasLtMatmulHeuristicResult_t *res, int *nres) {
  uint64_t wsb = WS;
  return cublasLtMatmulDescCreate(desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) ||
         cublasLtMatrixLayoutCreate(la, d->dt, d->n, d->k, d->n) ||
         cublasLtMatrixLayoutCreate(lb, d->dt, d->k, d->m, d->k) ||
         cublasLtMatrixLayoutCreate(lc, d->dt, d->n, d->m, d->n) ||
         cublasLtMatmulPreferenceCreate(pref) ||
         cublasLtMatmulPreferenceSetAttribute(*pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                              &wsb, sizeof wsb) ||
         cublasLtMatmulAlgoGetHeuristic(d->lt, *desc, *la, *lb, *lc, *lc, *pref, want, res, nres);
}

/* Median milliseconds of `which` (0: cublasGemmEx, 1: cublasLt) per call
 * of `batch` calls queued back to back, or -1. */
static float time_direct(struct direct *d, int which, int batch) {
  float one = 1, zero = 0, ms[REPS];
  cublasLtMatmulDesc_t desc = NULL;
  cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
  cublasLtMatmulPreference_t pref = NULL;
  cublasLtMatmulHeuristicResult_t res;
  int nres = 0;
  float out = -1;
  if (which == 1 && (lt_plan(d, &desc, &la, &lb, &lc, &pref, 1, &res, &nres) || nres < 1))
    goto done;
  for (int r = -2; r < REPS; r++) {
    if (r >= 0) cudaEventRecord(d->e0, 0);
    int st = 0;
    for (int b = 0; b < batch && !st; b++)
      st = which == 0
                 ? (int)cublasGemmEx(d->h, CUBLAS_OP_N, CUBLAS_OP_N, d->n, d->m, d->k, &one, d->b,
                                     d->dt, d->n, d->a, d->dt, d->k, &zero, d->c, d->dt, d->n,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
                 : (int)cublasLtMatmul(d->lt, desc, &one, d->b, la, d->a, lb, &zero, d->c, lc,
                                       d->c, lc, &res.algo, d->ws, WS, 0);
    if (st) goto done;
    if (r >= 0) {
      cudaEventRecord(d->e1, 0);
      cudaEventSynchronize(d->e1);
      cudaEventElapsedTime(&ms[r], d->e0, d->e1);
      ms[r] /= (float)batch;
    }
  }
  qsort(ms, REPS, sizeof ms[0], cmp_float);
  out = ms[REPS / 2];
done:
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (la) cublasLtMatrixLayoutDestroy(la);
  if (lb) cublasLtMatrixLayoutDestroy(lb);
  if (lc) cublasLtMatrixLayoutDestroy(lc);
  if (desc) cublasLtMatmulDescDestroy(desc);
  return out;
}

static mlx_stream gs;
static mlx_array la_, lb_;
static int lace_matmul(void *arg) {
  (void)arg;
  mlx_array r = mlx_array_new();
  int rc = mlx_matmul(&r, la_, lb_, gs) || mlx_array_eval(r);
  mlx_array_free(r);
  return rc;
}

static int lace_pipelined(void *arg) {
  (void)arg;
  int rc = 0;
  for (int i = 0; i < PIPE && !rc; i++) {
    mlx_array r = mlx_array_new();
    mlx_vector_array v = mlx_vector_array_new();
    rc = mlx_matmul(&r, la_, lb_, gs) || mlx_vector_array_append_value(v, r) ||
         mlx_async_eval(v);
    mlx_vector_array_free(v);
    mlx_array_free(r);
  }
  return rc || mlx_synchronize(gs);
}

/* LACE_BENCH_CANDIDATES=1: for the bfloat16 cases, the pipelined
 * products of cublasGemmEx, of each of cuBLASLt's first CANDS heuristic
 * answers and of lace, timed in interleaved rounds (each round visits
 * every path once, starting one further along each time), so that clock
 * and temperature drift reach every path alike. Prints one
 * "cublas-candidates" line per path: median ms per product, and the
 * algorithm's id, tile and stages where it has one. */
#define CANDS 8

static float time_lt_algo(struct direct *d, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t la,
                          cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc,
                          const cublasLtMatmulAlgo_t *algo) {
  float one = 1, zero = 0, ms = -1;
  cudaEventRecord(d->e0, 0);
  for (int b = 0; b < PIPE; b++)
    if (algo ? cublasLtMatmul(d->lt, desc, &one, d->b, la, d->a, lb, &zero, d->c, lc, d->c, lc,
                              algo, d->ws, WS, 0)
             : cublasGemmEx(d->h, CUBLAS_OP_N, CUBLAS_OP_N, d->n, d->m, d->k, &one, d->b, d->dt,
                            d->n, d->a, d->dt, d->k, &zero, d->c, d->dt, d->n,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT))
      return -1;
  cudaEventRecord(d->e1, 0);
  cudaEventSynchronize(d->e1);
  cudaEventElapsedTime(&ms, d->e0, d->e1);
  return ms / PIPE;
}

static void candidates(struct direct *d, const char *name) {
  cublasLtMatmulDesc_t desc = NULL;
  cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
  cublasLtMatmulPreference_t pref = NULL;
  cublasLtMatmulHeuristicResult_t res[CANDS];
  int nres = 0;
  if (lt_plan(d, &desc, &la, &lb, &lc, &pref, CANDS, res, &nres)) nres = 0;
  enum { ROUNDS = 15 };
  int npath = nres + 2; /* gemmex, candidates, lace */
  float t[CANDS + 2][ROUNDS];
  for (int r = -1; r < ROUNDS; r++)
    for (int j = 0; j < npath; j++) {
      int p = (j + (r < 0 ? 0 : r)) % npath;
      float ms;
      if (p == npath - 1) {
        double t0 = bench_now();
        ms = lace_pipelined(NULL) ? -1 : (float)((bench_now() - t0) * 1e3 / PIPE);
      } else {
        ms = time_lt_algo(d, desc, la, lb, lc, p ? &res[p - 1].algo : NULL);
      }
      if (r >= 0) t[p][r] = ms;
    }
  for (int p = 0; p < npath; p++) {
    qsort(t[p], ROUNDS, sizeof t[p][0], cmp_float);
    int id = -1, tile = -1, stages = -1;
    size_t got;
    if (p > 0 && p < npath - 1) {
      const cublasLtMatmulAlgo_t *a = &res[p - 1].algo;
      cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &got);
      cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile,
                                           &got);
      cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages,
                                           sizeof stages, &got);
    }
    printf("cublas-candidates %s %s ms=%.4f%s", name,
           p == 0 ? "gemmex" : p == npath - 1 ? "lace" : "lt", t[p][ROUNDS / 2],
           p > 0 && p < npath - 1 ? "" : "\n");
    if (p > 0 && p < npath - 1)
      printf(" heuristic=%d algo=%d tile=%d stages=%d waves=%.2f\n", p - 1, id, tile, stages,
             (double)res[p - 1].wavesCount);
  }
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (la) cublasLtMatrixLayoutDestroy(la);
  if (lb) cublasLtMatrixLayoutDestroy(lb);
  if (lc) cublasLtMatrixLayoutDestroy(lc);
  if (desc) cublasLtMatmulDescDestroy(desc);
}

/* The faster of two direct timings (-1: failed), or -1. */
static double best_of(double a, double b) { return a > 0 && (b <= 0 || a < b) ? a : b; }

static void run_case(int m, int k, int n, mlx_dtype t, struct direct *d) {
  const char *tn = t == MLX_FLOAT32 ? "float32" : "bfloat16";
  size_t isz = t == MLX_FLOAT32 ? 4 : 2;
  size_t na = (size_t)m * k, nb = (size_t)k * n;
  float *fa = malloc(na * 4), *fb = malloc(nb * 4);
  void *ha = malloc(na * isz), *hb = malloc(nb * isz);
  for (size_t i = 0; i < na; i++) fa[i] = (float)rand() / RAND_MAX - 0.5f;
  for (size_t i = 0; i < nb; i++) fb[i] = (float)rand() / RAND_MAX - 0.5f;
  for (size_t i = 0; i < na; i++)
    if (isz == 2) ((unsigned short *)ha)[i] = to_bf16(fa[i]); else ((float *)ha)[i] = fa[i];
  for (size_t i = 0; i < nb; i++)
    if (isz == 2) ((unsigned short *)hb)[i] = to_bf16(fb[i]); else ((float *)hb)[i] = fb[i];
  d->m = m, d->n = n, d->k = k;
  d->dt = t == MLX_FLOAT32 ? CUDA_R_32F : CUDA_R_16BF;
  cudaMalloc(&d->a, na * isz);
  cudaMalloc(&d->b, nb * isz);
  cudaMalloc(&d->c, (size_t)m * n * isz);
  cudaMemcpy(d->a, ha, na * isz, cudaMemcpyHostToDevice);
  cudaMemcpy(d->b, hb, nb * isz, cudaMemcpyHostToDevice);
  float gemm = time_direct(d, 0, 1), lt = time_direct(d, 1, 1);
  float gemm_p = time_direct(d, 0, PIPE), lt_p = time_direct(d, 1, PIPE);

  /* lace on the same values (made on the CPU, moved to the GPU once) */
  int sa[2] = {m, k}, sb[2] = {k, n};
  mlx_array fa_ = mlx_array_new_data(fa, sa, 2, MLX_FLOAT32),
            fb_ = mlx_array_new_data(fb, sb, 2, MLX_FLOAT32);
  la_ = mlx_array_new(), lb_ = mlx_array_new();
  mlx_astype(&la_, fa_, t, gs);
  mlx_astype(&lb_, fb_, t, gs);
  mlx_array_eval(la_);
  mlx_array_eval(lb_);
  if (t == MLX_BFLOAT16 && getenv("LACE_BENCH_CANDIDATES")) {
    char name[64];
    snprintf(name, sizeof name, "%dx%dx%d_%s", m, k, n, tn);
    candidates(d, name);
  }
  cudaFree(d->a), cudaFree(d->b), cudaFree(d->c);
  bench_stats st = bench_time(lace_matmul, NULL), sp = bench_time(lace_pipelined, NULL);
  double flop = 2.0 * m * n * k, pm = sp.median / PIPE;
  double best = best_of(gemm, lt), best_p = best_of(gemm_p, lt_p);
  if (st.failed || sp.failed)
    printf("cublas-case %dx%dx%d %s lace failed: %s\n", m, k, n, tn, bench_last_error);
  else
    printf("cublas-case %dx%dx%d %s one call: lace_ms=%.4f gemmex_ms=%.4f lt_ms=%.4f "
           "lace_TFLOPs=%.1f best_direct_TFLOPs=%.1f lace/best=%.3f; pipelined x%d: "
           "lace_ms=%.4f gemmex_ms=%.4f lt_ms=%.4f lace_TFLOPs=%.1f best_direct_TFLOPs=%.1f "
           "lace/best=%.3f\n",
           m, k, n, tn, st.median * 1e3, gemm, lt, flop / st.median / 1e12,
           best > 0 ? flop / (best * 1e-3) / 1e12 : 0.0, best > 0 ? best * 1e-3 / st.median : 0.0,
           PIPE, pm * 1e3, gemm_p, lt_p, flop / pm / 1e12,
           best_p > 0 ? flop / (best_p * 1e-3) / 1e12 : 0.0,
           best_p > 0 ? best_p * 1e-3 / pm : 0.0);
  mlx_array_free(fa_), mlx_array_free(fb_), mlx_array_free(la_), mlx_array_free(lb_);
  free(fa), free(fb), free(ha), free(hb);
}
#endif

int main(void) {
  bench_init();
#ifndef LACE_BENCH_CUDA
  printf("bench_cublas: built without CUDA, nothing to compare\n");
  return 0;
#else
  int ngpu = 0;
  mlx_device_count(&ngpu, MLX_GPU);
  if (!ngpu) {
    printf("bench_cublas: no GPU on this machine, nothing to compare\n");
    return 0;
  }
  gs = mlx_default_gpu_stream_new();
  struct direct d;
  memset(&d, 0, sizeof d);
  if (cublasCreate(&d.h) || cublasLtCreate(&d.lt) || cudaMalloc(&d.ws, WS) ||
      cublasSetWorkspace(d.h, d.ws, WS) || cudaEventCreate(&d.e0) || cudaEventCreate(&d.e1)) {
    printf("bench_cublas: cuBLAS set-up failed\n");
    return 1;
  }
  static const int shapes[][3] = {{8192, 8192, 8192}, {4096, 4096, 4096}, {512, 2048, 5632},
                                  {4096, 2048, 32000}};
  for (int s = 0; s < 4; s++)
    for (int t = 0; t < 2; t++)
      run_case(shapes[s][0], shapes[s][1], shapes[s][2], t ? MLX_BFLOAT16 : MLX_FLOAT32, &d);
  mlx_stream_free(gs);
  return 0;
#endif
}
