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
//    and a slice of k; slices of k are split over blocks (ksplit). Up to
//    kMaxCluster slices form one thread block cluster: the first block of
//    the cluster adds the others' float sums, read from their shared memory,
//    in slice order, and writes the result (one kernel). More slices than
//    that write float partial sums, added in slice order either by a
//    second kernel or, given arrival counters (lc_cu_gemv's done), by the
//    block of each tile that arrives last (one kernel: it counts the tile's
//    finished slices, and the last one adds them all and puts the count
//    back to zero). Either way the result does not depend on scheduling,
//    and all three give the same bits for the same slices.
//  - cols: b(k, n) at b[n * ldb + k] (x @ W^T with W row-major, as for tied
//    embeddings). One warp per column: a dot product of contiguous rows.
// a: row m at a[m * lda], contiguous along k, in both. With c, the result
// rounded to T gets c[m * ldc + n] added in T, as an add after the product
// would (compile's epilogue fusion): one kernel instead of two.
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <stdlib.h>

#include "gpu/cuda/cu_types.cuh"
#include "gpu/cuda/pdl.cuh"
#include "gpu/cuda/kernels.h"

namespace {

constexpr int kWarps = 8;       // per block
constexpr int kColLanes = 8;    // lanes of a warp side by side along n (rows kernel)
constexpr int kRowLanes = 32 / kColLanes;
constexpr int kUnroll = 4;      // 16-byte loads in flight per thread
constexpr int kMaxCluster = 8;  // slices of k summed inside one cluster (portable size)

template <class T> struct Vec { static constexpr int n = 16 / sizeof(T); };

// The value stored for float sum s: s rounded to T, plus addend[ci] when
// there is an addend (the add primitive's arithmetic: in float, rounded to
// T). The addend may be out itself (each element read, then written, by
// one thread), so out is not __restrict__.
template <class T>
__device__ __forceinline__ T result(float s, const T *addend, int64_t ci) {
  T r = lc_to<T>::f(s);
  return addend ? lc_to<T>::f(lc_ld(r) + lc_ld(addend[ci])) : r;
}

// The 16 bytes at p (aligned) as float values.
template <class T> __device__ __forceinline__ void load_vec(const T *p, float *v) {
  uint4 raw = __ldg(reinterpret_cast<const uint4 *>(p));
  const T *e = reinterpret_cast<const T *>(&raw);
#pragma unroll
  for (int i = 0; i < Vec<T>::n; i++) v[i] = lc_ld(e[i]);
}

// The one-kernel split's end, in every block of a tile after its slice's
// sums are in part: the block that raises the tile's count to the number
// of slices (gridDim.y) adds all of them in slice order, as gemv_finish
// does, writes out and leaves the count zero for the next launch. Kernels
// using one counter array are ordered (one stream; gpu.h), so the count
// starts at zero. The fence makes each block's sums visible before its
// arrival is counted; the last block reads them through L2 (__ldcg), where
// the other blocks' stores went, never from its own L1.
template <class T>
__device__ __forceinline__ void add_slices_if_last(const float *part, T *out, const T *addend,
                                                   int64_t ldc, int M, int64_t N, int64_t tile,
                                                   unsigned *count) {
  constexpr int V = Vec<T>::n;
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(count, 1u) == gridDim.y - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  const int64_t MN = (int64_t)M * N;
  for (int j = threadIdx.x; j < kColLanes * M * V; j += blockDim.x) {
    const int c = j / (M * V), mi = j % (M * V), m = mi / V, i = mi % V;
    const int64_t n = (tile * kColLanes + c) * V + i;
    if (n >= N) continue;
    float s = 0.f;
    for (unsigned z = 0; z < gridDim.y; z++) s += __ldcg(part + z * MN + m * N + n);
    out[m * N + n] = result(s, addend, m * ldc + n);
  }
  if (threadIdx.x == 0) *count = 0;
}

// Rows layout. Grid: (column tiles of kColLanes vectors, ksplit). Block z
// slice: rows [k0, k1). Cluster: the ksplit blocks of a tile are one
// cluster (1, ksplit, 1), whose rank 0 writes out. Otherwise part: nullptr
// = write out directly (ksplit == 1), else part[(slice * M + m) * N + n]
// gets this slice's float sum.
// The body of one block: column tile `tile` (blockIdx.x of a single
// product; the tile within its product in a group).
template <class T, int MT, bool Cluster>
__device__ __forceinline__ void gemv_rows_body(const T *__restrict__ a, int64_t lda,
                                               const T *__restrict__ b, int64_t ldb, T *out,
                                               float *__restrict__ part, const T *addend,
                                               int64_t ldc, int M, int64_t N, int64_t K,
                                               int64_t kchunk, int64_t tile,
                                               unsigned *__restrict__ done) {
  constexpr int V = Vec<T>::n;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int cl = lane % kColLanes, rl = lane / kColLanes;
  const int64_t n0 = (tile * kColLanes + cl) * V;
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
  // this block's sums; with clusters, rank 0 then adds the cluster's in rank
  // (= slice) order
  __shared__ float sums[Cluster ? kColLanes * MT * V : 1];
  for (int j = threadIdx.x; j < kColLanes * MT * V; j += kWarps * 32) {
    int c = j / (MT * V), mi = j % (MT * V), m = mi / V, i = mi % V;
    float s = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; w++) s += red[w][c][mi];
    int64_t n = (tile * kColLanes + c) * V + i;
    if constexpr (Cluster) sums[j] = s;
    else if (m < M && n < N) {
      if (part) part[((int64_t)blockIdx.y * M + m) * N + n] = s;
      else out[m * N + n] = result(s, addend, m * ldc + n);
    }
  }
  if constexpr (!Cluster)
    if (part && done) add_slices_if_last(part, out, addend, ldc, M, N, tile, done + blockIdx.x);
  if constexpr (Cluster) {
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    cluster.sync();
    if (cluster.block_rank() == 0) {
      const unsigned nb = cluster.num_blocks();
      for (int j = threadIdx.x; j < kColLanes * MT * V; j += kWarps * 32) {
        int c = j / (MT * V), mi = j % (MT * V), m = mi / V, i = mi % V;
        int64_t n = (tile * kColLanes + c) * V + i;
        if (m >= M || n >= N) continue;
        float s = sums[j];
        for (unsigned r = 1; r < nb; r++) s += cluster.map_shared_rank(sums, r)[j];
        out[m * N + n] = result(s, addend, m * ldc + n);
      }
    }
    cluster.sync(); // the other blocks' shared memory lives until rank 0 has read it
  }
}

template <class T, int MT, bool Cluster>
__global__ void __launch_bounds__(kWarps * 32)
    gemv_rows(const T *__restrict__ a, int64_t lda, const T *__restrict__ b, int64_t ldb,
              T *out, float *__restrict__ part, const T *addend, int64_t ldc, int M,
              int64_t N, int64_t K, int64_t kchunk, unsigned *done) {
  lc_pdl_begin();
  gemv_rows_body<T, MT, Cluster>(a, lda, b, ldb, out, part, addend, ldc, M, N, K, kchunk,
                                 blockIdx.x, done);
}

// A group of products sharing a (rows layout, one k split): their column
// tiles side by side along grid x; segment g owns tiles [tile0[g],
// tile0[g + 1]) and, with a split, the partial sums from part0[g] on.
constexpr int kMaxSeg = LC_CU_GEMV_GROUP;
template <class T> struct Segs {
  const T *b[kMaxSeg];
  T *out[kMaxSeg];
  int64_t ldb[kMaxSeg], N[kMaxSeg], part0[kMaxSeg];
  int64_t tile0[kMaxSeg + 1], mn0[kMaxSeg + 1];
  int n;
};

template <class T> __device__ __forceinline__ int seg_of(const Segs<T> &s, const int64_t *start,
                                                        int64_t x) {
  int g = 0;
  while (g + 1 < s.n && x >= start[g + 1]) g++;
  return g;
}

template <class T, int MT>
__global__ void __launch_bounds__(kWarps * 32)
    gemv_rows_group(const T *__restrict__ a, int64_t lda, const Segs<T> s, float *part, int M,
                    int64_t K, int64_t kchunk, unsigned *done) {
  lc_pdl_begin();
  const int g = seg_of(s, s.tile0, blockIdx.x);
  gemv_rows_body<T, MT, false>(a, lda, s.b[g], s.ldb[g], s.out[g], part ? part + s.part0[g] : nullptr,
                               nullptr, 0, M, s.N[g], K, kchunk, blockIdx.x - s.tile0[g], done);
}

// out_g[j] = the sum over the ksplit slices of segment g's partial sums,
// in slice order; j runs over every segment's M * N_g outputs.
template <class T>
__global__ void gemv_finish_group(const float *__restrict__ part, const Segs<T> s, int ksplit) {
  lc_pdl_begin();
  int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= s.mn0[s.n]) return;
  const int g = seg_of(s, s.mn0, j);
  const int64_t jl = j - s.mn0[g], mn = s.mn0[g + 1] - s.mn0[g];
  float sum = 0.f;
  for (int z = 0; z < ksplit; z++) sum += part[s.part0[g] + z * mn + jl];
  s.out[g][jl] = lc_to<T>::f(sum);
}

// out[m, n] = sum over the ksplit slices of part, in slice order.
template <class T>
__global__ void gemv_finish(const float *__restrict__ part, T *out, const T *addend,
                            int64_t ldc, int64_t N, int64_t MN, int ksplit) {
  lc_pdl_begin();
  int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= MN) return;
  float s = 0.f;
  for (int z = 0; z < ksplit; z++) s += part[z * MN + j];
  out[j] = result(s, addend, j / N * ldc + j % N);
}

// Cols layout: warp w of block x computes column n = x * kWarps + w for
// every row m. K is a multiple of V; rows of a and b are 16-byte aligned.
template <class T, int MT>
__global__ void __launch_bounds__(kWarps * 32)
    gemv_cols(const T *__restrict__ a, int64_t lda, const T *__restrict__ b, int64_t ldb,
              T *out, const T *addend, int64_t ldc, int M, int64_t N, int64_t K) {
  lc_pdl_begin();
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
    if (lane == 0 && m < M) out[m * N + n] = result(acc[m], addend, m * ldc + n);
  }
}

bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

// Clusters only with LACE_CUDA_GEMV_CLUSTER=1: else partial sums through
// memory and a second kernel. Off by default: on an H100 the decode step
// took 10% longer with them (at most 8 slices per tile, so fewer blocks in
// flight than the two-kernel split). Read once.
bool cluster_disabled() {
  static const bool off = [] {
    const char *e = getenv("LACE_CUDA_GEMV_CLUSTER");
    return !(e && e[0] == '1' && !e[1]);
  }();
  return off;
}

// Blocks per SM a rows-layout product aims for (LACE_CUDA_GEMV_FILL, 1 to
// 64, default 4). Read once.
int64_t fill_per_sm() {
  static const int64_t f = [] {
    const char *e = getenv("LACE_CUDA_GEMV_FILL");
    int v = e ? atoi(e) : 0;
    return (int64_t)(v >= 1 && v <= 64 ? v : 4);
  }();
  return f;
}

// Values per 16-byte load for dtype dt; 0 for dtypes without a kernel.
int vec_of(int dt) {
  switch (dt) {
    case MLX_FLOAT32: return 4;
    case MLX_FLOAT16: case MLX_BFLOAT16: return 8;
    default: return 0;
  }
}

// The grid of one product: rows layout, (tiles, ksplit) blocks over slices
// of kchunk rows of b (cluster: the slices of a tile are one cluster; else
// ksplit > 1: float partial sums in scratch); cols layout, `tiles` blocks
// of kWarps columns.
struct Plan {
  int64_t tiles, ksplit, kchunk;
  bool cluster;
  bool one_kernel; // a split's sums added by each tile's last block (done counters)
};

// Slices of k for `tiles` column tiles: about fill_per_sm() blocks per SM,
// each thread still making kUnroll loads or more, at most 64.
int64_t slices_for(int64_t K, int64_t tiles, int sms) {
  constexpr int64_t min_rows = (int64_t)kWarps * kRowLanes * kUnroll;
  int64_t want = (fill_per_sm() * sms + tiles - 1) / tiles;
  int64_t most = (K + min_rows - 1) / min_rows;
  int64_t ksplit = want < most ? want : most;
  return ksplit < 1 ? 1 : ksplit > 64 ? 64 : ksplit;
}

// p's kchunk (whole block steps of rows) for about ksplit slices of K, and
// the slices that makes.
void set_chunks(Plan *p, int64_t K, int64_t ksplit) {
  int64_t kchunk = (K + ksplit - 1) / ksplit;
  kchunk = (kchunk + kWarps * kRowLanes - 1) / (kWarps * kRowLanes) * (kWarps * kRowLanes);
  p->kchunk = kchunk;
  p->ksplit = (K + kchunk - 1) / kchunk;
}

// 0 with *p, LC_CU_UNSUPPORTED, or a negative cudaError_t. lc_cu_gemv_plan
// and lc_cu_gemv both call it, so that they agree on the scratch.
int plan(const struct lc_cu_gemv *g, Plan *p) {
  if (g->M < 1 || g->M > LC_CU_GEMV_MAX_M || g->N < 1 || g->K < 1) return LC_CU_UNSUPPORTED;
  const int V = vec_of(g->dt);
  if (!V) return LC_CU_UNSUPPORTED;
  // 16-byte loads: vectors never straddle a row's end or an alignment
  if (!aligned16(g->b) || g->ldb % V) return LC_CU_UNSUPPORTED;
  if (g->b_cols ? (g->K % V || g->lda % V || !aligned16(g->a)) : g->N % V)
    return LC_CU_UNSUPPORTED;
  p->ksplit = 1;
  p->kchunk = g->K;
  p->cluster = false;
  p->one_kernel = false;
  if (g->b_cols) {
    p->tiles = (g->N + kWarps - 1) / kWarps;
    return p->tiles > 0x7fffffff ? LC_CU_UNSUPPORTED : 0;
  }
  p->tiles = (g->N / V + kColLanes - 1) / kColLanes;
  if (p->tiles > 0x7fffffff) return LC_CU_UNSUPPORTED;
  int sms = 132, clusters = 0;
  cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, g->dev);
  if (e == cudaSuccess && !cluster_disabled())
    e = cudaDeviceGetAttribute(&clusters, cudaDevAttrClusterLaunch, g->dev);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return -(int)e;
  }
  int64_t ksplit = slices_for(g->K, p->tiles, sms);
  // One kernel rather than two where a cluster holds the slices: fewer
  // blocks in flight, but no second launch (whose latency exceeds the
  // whole read at decode sizes) and no partial sums through memory.
  if (clusters && ksplit > 1) {
    if (ksplit > kMaxCluster) ksplit = kMaxCluster;
    p->cluster = true;
  }
  set_chunks(p, g->K, ksplit);
  // the rounding of kchunk can leave fewer slices; a cluster of one is a block
  if (p->ksplit <= 1) p->cluster = false;
  p->one_kernel = p->ksplit > 1 && !p->cluster && g->done && p->tiles <= g->ndone;
  return 0;
}

size_t part_bytes(const struct lc_cu_gemv *g, const Plan &p) {
  return p.ksplit > 1 && !p.cluster ? (size_t)p.ksplit * g->M * g->N * sizeof(float) : 0;
}

template <class T, int MT>
cudaError_t launch(const struct lc_cu_gemv *g, const Plan &p, cudaStream_t st) {
  const T *a = (const T *)g->a, *b = (const T *)g->b;
  T *out = (T *)g->out;
  const T *c = (const T *)g->c;
  const dim3 block(kWarps * 32);
  if (g->b_cols)
    return lc_launch(gemv_cols<T, MT>, dim3((unsigned)p.tiles), block, 0, st, a, g->lda, b, g->ldb,
                     out, c, g->ldc, g->M, g->N, g->K);
  const dim3 grid((unsigned)p.tiles, (unsigned)p.ksplit);
  if (p.cluster)
    return lc_launch_cluster(gemv_rows<T, MT, true>, grid, block, 0, st,
                             dim3(1, (unsigned)p.ksplit, 1), a, g->lda, b, g->ldb, out,
                             (float *)nullptr, c, g->ldc, g->M, g->N, g->K, p.kchunk,
                             (unsigned *)nullptr);
  float *part = p.ksplit > 1 ? g->part : nullptr;
  unsigned *done = p.one_kernel ? g->done : nullptr; // one_kernel: a split, so part is set
  cudaError_t e = lc_launch(gemv_rows<T, MT, false>, grid, block, 0, st, a, g->lda, b, g->ldb, out,
                            part, part && !done ? nullptr : c, g->ldc, g->M, g->N, g->K,
                            p.kchunk, done);
  if (e != cudaSuccess || !part || done) return e;
  int64_t mn = (int64_t)g->M * g->N;
  return lc_launch(gemv_finish<T>, dim3((unsigned)((mn + 255) / 256)), dim3(256), 0, st, part, out,
                   c, g->ldc, g->N, mn, (int)p.ksplit);
}

// A group's grid (rows layout only): every product's tiles, one k split
// for all (the one each product alone would have). 0 with *p (tiles: the sum), or LC_CU_UNSUPPORTED, or a negative
// cudaError_t.
int plan_group(const struct lc_cu_gemv_group *g, Plan *p, int64_t *tiles_of) {
  if (g->n < 1 || g->n > kMaxSeg || g->M < 1 || g->M > LC_CU_GEMV_MAX_M || g->K < 1)
    return LC_CU_UNSUPPORTED;
  const int V = vec_of(g->dt);
  if (!V) return LC_CU_UNSUPPORTED;
  p->tiles = 0;
  for (int k = 0; k < g->n; k++) {
    if (g->N[k] < 1 || !aligned16(g->b[k]) || g->ldb[k] % V || g->N[k] % V)
      return LC_CU_UNSUPPORTED;
    tiles_of[k] = (g->N[k] / V + kColLanes - 1) / kColLanes;
    p->tiles += tiles_of[k];
  }
  if (p->tiles > 0x7fffffff) return LC_CU_UNSUPPORTED;
  int sms = 132;
  cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, g->dev);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return -(int)e;
  }
  // Each product's slices as its own plan() would cut them, so that a
  // group computes every product bit for bit as alone; products whose
  // slices differ (or would be summed in a cluster) are not grouped.
  for (int k = 0; k < g->n; k++) {
    Plan q;
    set_chunks(&q, g->K, slices_for(g->K, tiles_of[k], sms));
    if (k == 0) {
      p->kchunk = q.kchunk;
      p->ksplit = q.ksplit;
    } else if (q.kchunk != p->kchunk) {
      return LC_CU_UNSUPPORTED;
    }
  }
  if (p->ksplit > 1 && !cluster_disabled()) return LC_CU_UNSUPPORTED;
  p->cluster = false;
  p->one_kernel = p->ksplit > 1 && g->done && p->tiles <= g->ndone;
  return 0;
}

size_t part_bytes_group(const struct lc_cu_gemv_group *g, const Plan &p) {
  if (p.ksplit <= 1) return 0;
  size_t total = 0;
  for (int k = 0; k < g->n; k++) total += (size_t)p.ksplit * g->M * g->N[k] * sizeof(float);
  return total;
}

template <class T, int MT>
cudaError_t launch_group(const struct lc_cu_gemv_group *g, const Plan &p, const int64_t *tiles_of,
                         cudaStream_t st) {
  Segs<T> s = {};
  s.n = g->n;
  int64_t t0 = 0, mn0 = 0;
  for (int k = 0; k < g->n; k++) {
    s.b[k] = (const T *)g->b[k];
    s.out[k] = (T *)g->out[k];
    s.ldb[k] = g->ldb[k];
    s.N[k] = g->N[k];
    s.tile0[k] = t0;
    s.mn0[k] = mn0;
    s.part0[k] = mn0 * p.ksplit;
    t0 += tiles_of[k];
    mn0 += (int64_t)g->M * g->N[k];
  }
  s.tile0[g->n] = t0;
  s.mn0[g->n] = mn0;
  float *part = p.ksplit > 1 ? g->part : nullptr;
  unsigned *done = p.one_kernel ? g->done : nullptr; // one_kernel: a split, so part is set
  cudaError_t e = lc_launch(gemv_rows_group<T, MT>, dim3((unsigned)p.tiles, (unsigned)p.ksplit),
                            dim3(kWarps * 32), 0, st, (const T *)g->a, g->lda, s, part, g->M,
                            g->K, p.kchunk, done);
  if (e != cudaSuccess || !part || done) return e;
  return lc_launch(gemv_finish_group<T>, dim3((unsigned)((mn0 + 255) / 256)), dim3(256), 0, st,
                   (const float *)part, s, (int)p.ksplit);
}

template <class T>
cudaError_t launch_group_m(const struct lc_cu_gemv_group *g, const Plan &p,
                           const int64_t *tiles_of, cudaStream_t st) {
  if (g->M <= 1) return launch_group<T, 1>(g, p, tiles_of, st);
  if (g->M <= 2) return launch_group<T, 2>(g, p, tiles_of, st);
  if (g->M <= 4) return launch_group<T, 4>(g, p, tiles_of, st);
  return launch_group<T, 8>(g, p, tiles_of, st);
}

template <class T>
cudaError_t launch_m(const struct lc_cu_gemv *g, const Plan &p, cudaStream_t st) {
  if (g->M <= 1) return launch<T, 1>(g, p, st);
  if (g->M <= 2) return launch<T, 2>(g, p, st);
  if (g->M <= 4) return launch<T, 4>(g, p, st);
  return launch<T, 8>(g, p, st);
}

} // namespace

extern "C" int lc_cu_gemv_plan(const struct lc_cu_gemv *g, size_t *part) {
  Plan p;
  int rc = plan(g, &p);
  *part = rc ? 0 : part_bytes(g, p);
  return rc;
}

extern "C" int lc_cu_gemv(const struct lc_cu_gemv *g, void *stream) {
  Plan p;
  int rc = plan(g, &p);
  if (rc) return rc;
  if (part_bytes(g, p) && !g->part) return -(int)cudaErrorInvalidValue;
  cudaStream_t st = (cudaStream_t)stream;
  cudaError_t e;
  switch (g->dt) {
    case MLX_FLOAT32: e = launch_m<float>(g, p, st); break;
    case MLX_FLOAT16: e = launch_m<__half>(g, p, st); break;
    default: e = launch_m<__nv_bfloat16>(g, p, st); break;  // plan() took only these three
  }
  if (e != cudaSuccess) (void)cudaGetLastError();
  return e == cudaSuccess ? 0 : -(int)e;
}

extern "C" int lc_cu_gemv_group_plan(const struct lc_cu_gemv_group *g, size_t *part) {
  Plan p;
  int64_t tiles_of[kMaxSeg];
  int rc = plan_group(g, &p, tiles_of);
  *part = rc ? 0 : part_bytes_group(g, p);
  return rc;
}

extern "C" int lc_cu_gemv_group(const struct lc_cu_gemv_group *g, void *stream) {
  Plan p;
  int64_t tiles_of[kMaxSeg];
  int rc = plan_group(g, &p, tiles_of);
  if (rc) return rc;
  if (part_bytes_group(g, p) && !g->part) return -(int)cudaErrorInvalidValue;
  cudaStream_t st = (cudaStream_t)stream;
  cudaError_t e;
  switch (g->dt) {
    case MLX_FLOAT32: e = launch_group_m<float>(g, p, tiles_of, st); break;
    case MLX_FLOAT16: e = launch_group_m<__half>(g, p, tiles_of, st); break;
    default: e = launch_group_m<__nv_bfloat16>(g, p, tiles_of, st); break;
  }
  if (e != cudaSuccess) (void)cudaGetLastError();
  return e == cudaSuccess ? 0 : -(int)e;
}
