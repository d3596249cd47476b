// Matrix-vector products for a few rows (M <= 8): out(M, N) = a(M, K) b(K, N)
// for float32, float16 and bfloat16, float accumulation. At batch 1 a
// decode step's matmuls are these, and the weights are read exactly once:
// the kernels are bound by memory, so every weight byte is read with 16-byte
// loads, several in flight per thread, and each a value is reused for all
// M rows.
//
// Two layouts of b:
//  - rows: b(k, n) at b[k * ldb + n] (x @ W with W row-major). A warp reads
//    4 rows of 128 contiguous bytes; a block covers 8 vectors of columns
//    and a slice of k; slices of k are split over blocks (ksplit) and their
//    float partial sums added in a fixed order by a second kernel, so the
//    result does not depend on scheduling.
//  - cols: b(k, n) at b[n * ldb + k] (x @ W^T with W row-major, as for tied
//    embeddings). One warp per column: a dot product of contiguous rows.
// a: row m at a[m * lda], contiguous along k, in both.
#include <cuda_runtime.h>

#include "gpu/cuda/cu_types.cuh"
#include "gpu/cuda/kernels.h"
extern "C" {
#include "gpu/gpu.h"
}

namespace {

constexpr int kWarps = 8;       // per block
constexpr int kColLanes = 8;    // lanes of a warp side by side along n (rows kernel)
constexpr int kRowLanes = 32 / kColLanes;
constexpr int kUnroll = 4;      // 16-byte loads in flight per thread

template <class T> struct Vec { static constexpr int n = 16 / sizeof(T); };

// The 16 bytes at p (aligned) as float values.
template <class T> __device__ __forceinline__ void load_vec(const T *p, float *v) {
  uint4 raw = __ldg(reinterpret_cast<const uint4 *>(p));
  const T *e = reinterpret_cast<const T *>(&raw);
#pragma unroll
  for (int i = 0; i < Vec<T>::n; i++) v[i] = lc_ld(e[i]);
}

// Rows layout. Grid: (column tiles of kColLanes vectors, ksplit). Block z
// slice: rows [k0, k1). part: nullptr = write out directly (ksplit == 1),
// else part[(slice * M + m) * N + n] gets this slice's float sum.
template <class T, int MT>
__global__ void __launch_bounds__(kWarps * 32)
    gemv_rows(const T *__restrict__ a, int64_t lda, const T *__restrict__ b, int64_t ldb,
              T *__restrict__ out, float *__restrict__ part, int M, int64_t N, int64_t K,
              int64_t kchunk) {
  constexpr int V = Vec<T>::n;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int cl = lane % kColLanes, rl = lane / kColLanes;
  const int64_t n0 = ((int64_t)blockIdx.x * kColLanes + cl) * V;
  const int64_t k0 = (int64_t)blockIdx.y * kchunk;
  const int64_t k1 = min(K, k0 + kchunk);
  const bool live = n0 < N;
  float acc[MT][V];
#pragma unroll
  for (int m = 0; m < MT; m++)
#pragma unroll
    for (int i = 0; i < V; i++) acc[m][i] = 0.f;
  constexpr int step = kWarps * kRowLanes; // rows per block iteration
  int64_t k = k0 + warp * kRowLanes + rl;
  if (live) {
    for (; k + (kUnroll - 1) * step < k1; k += kUnroll * step) {
      float w[kUnroll][V];
#pragma unroll
      for (int u = 0; u < kUnroll; u++) load_vec(b + (k + u * step) * ldb + n0, w[u]);
#pragma unroll
      for (int u = 0; u < kUnroll; u++)
#pragma unroll
        for (int m = 0; m < MT; m++) {
          float x = m < M ? lc_ld(a[m * lda + k + u * step]) : 0.f;
#pragma unroll
          for (int i = 0; i < V; i++) acc[m][i] = __fmaf_rn(x, w[u][i], acc[m][i]);
        }
    }
    for (; k < k1; k += step) {
      float w[V];
      load_vec(b + k * ldb + n0, w);
#pragma unroll
      for (int m = 0; m < MT; m++) {
        float x = m < M ? lc_ld(a[m * lda + k]) : 0.f;
#pragma unroll
        for (int i = 0; i < V; i++) acc[m][i] = __fmaf_rn(x, w[i], acc[m][i]);
      }
    }
  }
  // the kRowLanes rows of a warp, then the warps
#pragma unroll
  for (int m = 0; m < MT; m++)
#pragma unroll
    for (int i = 0; i < V; i++)
#pragma unroll
      for (int s = kColLanes; s < 32; s <<= 1)
        acc[m][i] += __shfl_xor_sync(0xffffffffu, acc[m][i], s);
  __shared__ float red[kWarps][kColLanes][MT * V];
  if (rl == 0)
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
      for (int i = 0; i < V; i++) red[warp][cl][m * V + i] = acc[m][i];
  __syncthreads();
  for (int j = threadIdx.x; j < kColLanes * MT * V; j += kWarps * 32) {
    int c = j / (MT * V), mi = j % (MT * V), m = mi / V, i = mi % V;
    int64_t n = ((int64_t)blockIdx.x * kColLanes + c) * V + i;
    if (m >= M || n >= N) continue;
    float s = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; w++) s += red[w][c][mi];
    if (part) part[((int64_t)blockIdx.y * M + m) * N + n] = s;
    else out[m * N + n] = lc_to<T>::f(s);
  }
}

// out[m, n] = sum over the ksplit slices of part, in slice order.
template <class T>
__global__ void gemv_finish(const float *__restrict__ part, T *__restrict__ out, int64_t MN,
                            int ksplit) {
  int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= MN) return;
  float s = 0.f;
  for (int z = 0; z < ksplit; z++) s += part[z * MN + j];
  out[j] = lc_to<T>::f(s);
}

// Cols layout: warp w of block x computes column n = x * kWarps + w for
// every row m. K is a multiple of V; rows of a and b are 16-byte aligned.
template <class T, int MT>
__global__ void __launch_bounds__(kWarps * 32)
    gemv_cols(const T *__restrict__ a, int64_t lda, const T *__restrict__ b, int64_t ldb,
              T *__restrict__ out, int M, int64_t N, int64_t K) {
  constexpr int V = Vec<T>::n;
  const int lane = threadIdx.x & 31;
  const int64_t n = (int64_t)blockIdx.x * kWarps + (threadIdx.x >> 5);
  if (n >= N) return;
  const T *col = b + n * ldb;
  float acc[MT];
#pragma unroll
  for (int m = 0; m < MT; m++) acc[m] = 0.f;
  const int64_t nv = K / V;
  int64_t v = lane;
  for (; v + (kUnroll - 1) * 32 < nv; v += kUnroll * 32) {
    float w[kUnroll][V];
#pragma unroll
    for (int u = 0; u < kUnroll; u++) load_vec(col + (v + u * 32) * V, w[u]);
#pragma unroll
    for (int m = 0; m < MT; m++) {
      if (m >= M) break;
#pragma unroll
      for (int u = 0; u < kUnroll; u++) {
        float x[V];
        load_vec(a + m * lda + (v + u * 32) * V, x);
#pragma unroll
        for (int i = 0; i < V; i++) acc[m] = __fmaf_rn(x[i], w[u][i], acc[m]);
      }
    }
  }
  for (; v < nv; v += 32) {
    float w[V];
    load_vec(col + v * V, w);
#pragma unroll
    for (int m = 0; m < MT; m++) {
      if (m >= M) break;
      float x[V];
      load_vec(a + m * lda + v * V, x);
#pragma unroll
      for (int i = 0; i < V; i++) acc[m] = __fmaf_rn(x[i], w[i], acc[m]);
    }
  }
#pragma unroll
  for (int m = 0; m < MT; m++) {
#pragma unroll
    for (int s = 16; s > 0; s >>= 1) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], s);
    if (lane == 0 && m < M) out[m * N + n] = lc_to<T>::f(acc[m]);
  }
}

bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

template <class T, int MT> int launch(const struct lc_cu_gemv *g, cudaStream_t st) {
  constexpr int V = Vec<T>::n;
  const T *a = (const T *)g->a, *b = (const T *)g->b;
  T *out = (T *)g->out;
  if (!g->b_cols) {
    int64_t tiles = (g->N / V + kColLanes - 1) / kColLanes;
    int sms = 132;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, g->dev) != cudaSuccess)
      return -(int)cudaGetLastError();
    // about 4 blocks per SM; each thread still makes kUnroll loads or more
    constexpr int64_t min_rows = (int64_t)kWarps * kRowLanes * kUnroll;
    int64_t want = (4 * (int64_t)sms + tiles - 1) / tiles;
    int64_t most = (g->K + min_rows - 1) / min_rows;
    int64_t ksplit = want < most ? want : most;
    if (ksplit < 1) ksplit = 1;
    if (ksplit > 64) ksplit = 64;
    int64_t kchunk = (g->K + ksplit - 1) / ksplit;
    kchunk = (kchunk + kWarps * kRowLanes - 1) / (kWarps * kRowLanes) * (kWarps * kRowLanes);
    ksplit = (g->K + kchunk - 1) / kchunk;
    if (tiles > 0x7fffffff) return LC_CU_UNSUPPORTED;
    float *part = nullptr;
    size_t part_bytes = 0;
    if (ksplit > 1) {
      part_bytes = (size_t)ksplit * g->M * g->N * sizeof(float);
      part = (float *)lc_gpu_malloc(part_bytes, g->dev);
      if (!part) return -(int)cudaErrorMemoryAllocation;
    }
    gemv_rows<T, MT><<<dim3((unsigned)tiles, (unsigned)ksplit), kWarps * 32, 0, st>>>(
        a, g->lda, b, g->ldb, out, part, g->M, g->N, g->K, kchunk);
    if (part) {
      int64_t mn = (int64_t)g->M * g->N;
      gemv_finish<T><<<(unsigned)((mn + 255) / 256), 256, 0, st>>>(part, out, mn, (int)ksplit);
      lc_gpu_free(part, part_bytes, g->dev); // stream-ordered: after the finish kernel
    }
  } else {
    int64_t blocks = (g->N + kWarps - 1) / kWarps;
    if (blocks > 0x7fffffff) return LC_CU_UNSUPPORTED;
    gemv_cols<T, MT><<<(unsigned)blocks, kWarps * 32, 0, st>>>(a, g->lda, b, g->ldb, out, g->M,
                                                              g->N, g->K);
  }
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : -(int)e;
}

template <class T> int launch_m(const struct lc_cu_gemv *g, cudaStream_t st) {
  constexpr int V = Vec<T>::n;
  // 16-byte loads: vectors never straddle a row's end or an alignment
  if (!aligned16(g->b) || g->ldb % V) return LC_CU_UNSUPPORTED;
  if (g->b_cols ? (g->K % V || g->lda % V || !aligned16(g->a)) : g->N % V)
    return LC_CU_UNSUPPORTED;
  if (g->M <= 1) return launch<T, 1>(g, st);
  if (g->M <= 2) return launch<T, 2>(g, st);
  if (g->M <= 4) return launch<T, 4>(g, st);
  return launch<T, 8>(g, st);
}

} // namespace

extern "C" int lc_cu_gemv(const struct lc_cu_gemv *g, void *stream) {
  if (g->M < 1 || g->M > LC_CU_GEMV_MAX_M || g->N < 1 || g->K < 1) return LC_CU_UNSUPPORTED;
  cudaStream_t st = (cudaStream_t)stream;
  switch (g->dt) {
    case MLX_FLOAT32: return launch_m<float>(g, st);
    case MLX_FLOAT16: return launch_m<__half>(g, st);
    case MLX_BFLOAT16: return launch_m<__nv_bfloat16>(g, st);
    default: return LC_CU_UNSUPPORTED;
  }
}
