// Sorting rows on the GPU (contract: gpu/cuda/sort_scan.h).
// Each element becomes an unsigned key whose unsigned order is the CPU's
// value order (ops/sort.c: NaN last, -0 equal to +0), paired with its
// index along the row. The (key, index) pairs of a row are distinct, so
// any correct sort of them gives exactly the CPU's permutation. Rows of up
// to kBitonicMax elements: one block per row, a bitonic network in shared
// memory, padded to a power of two with pairs greater than every real one.
// Longer rows: CUB's radix sort (stable, so equal keys keep index order),
// one call per row for a few rows, the segmented sort for more. Values are
// then copied from the input by index, bit for bit but for 16-bit float
// NaNs (as the CPU writes them).
#define CCCL_DISABLE_NVTX
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cuda_runtime.h>

#include "gpu/cuda/sort_scan.h"
#include "mlx/c/array.h"

namespace {

constexpr int64_t kBitonicMax = 4096; // 4096 pairs of 8-byte keys: 48 KiB of shared memory
constexpr int64_t kFewRows = 8;       // up to this many long rows: one radix sort each
constexpr int kThreads = 256;

enum KeyKind { kUnsigned, kSigned, kFloat };

// A dtype's key: K the unsigned type of its width, KIND how its bits map
// to an ordered key, INF the bits of +inf (kFloat).
template <class K_, int KIND_, unsigned long long INF_> struct KeyOf {
  using K = K_;
  enum : int { kind = KIND_ };
  enum : unsigned long long { inf = INF_ };
};

template <class F> bool dispatch_key(int dt, F &&f) {
  switch (dt) {
    case MLX_BOOL:
    case MLX_UINT8: f(KeyOf<uint8_t, kUnsigned, 0>{}); return true;
    case MLX_UINT16: f(KeyOf<uint16_t, kUnsigned, 0>{}); return true;
    case MLX_UINT32: f(KeyOf<uint32_t, kUnsigned, 0>{}); return true;
    case MLX_UINT64: f(KeyOf<unsigned long long, kUnsigned, 0>{}); return true;
    case MLX_INT8: f(KeyOf<uint8_t, kSigned, 0>{}); return true;
    case MLX_INT16: f(KeyOf<uint16_t, kSigned, 0>{}); return true;
    case MLX_INT32: f(KeyOf<uint32_t, kSigned, 0>{}); return true;
    case MLX_INT64: f(KeyOf<unsigned long long, kSigned, 0>{}); return true;
    case MLX_FLOAT16: f(KeyOf<uint16_t, kFloat, 0x7c00>{}); return true;
    case MLX_BFLOAT16: f(KeyOf<uint16_t, kFloat, 0x7f80>{}); return true;
    case MLX_FLOAT32: f(KeyOf<uint32_t, kFloat, 0x7f800000>{}); return true;
    case MLX_FLOAT64: f(KeyOf<unsigned long long, kFloat, 0x7ff0000000000000ull>{}); return true;
    default: return false;
  }
}

// The key of raw bits b. Integers: order-preserving (the sign bit
// flipped for signed ones). Floats: every NaN maps to the largest key,
// -0 to +0's key, negatives below positives in value order.
template <class Key> __device__ __forceinline__ typename Key::K sort_key(typename Key::K b) {
  using K = typename Key::K;
  constexpr K sign = K(K(1) << (sizeof(K) * 8 - 1));
  if constexpr (Key::kind == kUnsigned) {
    return b;
  } else if constexpr (Key::kind == kSigned) {
    return K(b ^ sign);
  } else {
    K mag = K(b & K(~sign));
    if (mag > K(Key::inf)) return K(~K(0));
    if (mag == 0) b = 0;
    return (b & sign) ? K(~b) : K(b | sign);
  }
}

// A value as the CPU writes it: its bits, except that 16-bit float NaNs
// come out as the CPU's round trip through float makes them (float16: the
// sign and 0x7e00; bfloat16: the quiet bit set).
template <class Key> __device__ __forceinline__ typename Key::K out_bits(typename Key::K b) {
  using K = typename Key::K;
  if constexpr (Key::kind == kFloat && sizeof(K) == 2) {
    if ((b & 0x7fff) > Key::inf) return Key::inf == 0x7c00 ? K((b & 0x8000) | 0x7e00) : K(b | 0x40);
  }
  return b;
}

// Writes element j of row `row`'s output: src is the index along the row
// of the element sorted to position keep_from + j.
template <class Key>
__device__ __forceinline__ void emit(const typename Key::K *x, uint32_t src, void *out,
                                     int64_t row, int64_t j, int64_t lout, int64_t inner,
                                     int arg) {
  int64_t dst = ((row / inner) * lout + j) * inner + row % inner;
  if (arg)
    ((uint32_t *)out)[dst] = src;
  else
    ((typename Key::K *)out)[dst] = out_bits<Key>(x[src]);
}

// One block per row of len <= n2 elements, n2 a power of two >= 64.
// Shared memory: n2 indices, then n2 keys (8-byte aligned as n2 >= 64).
template <class Key>
__global__ void bitonic_rows(const typename Key::K *in, void *out, int64_t len, int n2, int arg,
                             int64_t keep_from, int64_t inner) {
  using K = typename Key::K;
  extern __shared__ unsigned long long smem[];
  uint32_t *idx = reinterpret_cast<uint32_t *>(smem);
  K *key = reinterpret_cast<K *>(idx + n2);
  const int64_t row = blockIdx.x;
  const K *x = in + row * len;
  for (int t = threadIdx.x; t < n2; t += blockDim.x) {
    if (t < len) {
      key[t] = sort_key<Key>(x[t]);
      idx[t] = (uint32_t)t;
    } else { // padding: after every real pair (real indices are < len)
      key[t] = K(~K(0));
      idx[t] = 0xffffffffu;
    }
  }
  __syncthreads();
  for (int k = 2; k <= n2; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int t = threadIdx.x; t < n2 / 2; t += blockDim.x) {
        int lo = 2 * t - (t & (j - 1)); // t = q*j + r -> 2qj + r: bit j of lo is clear
        int hi = lo + j;
        bool up = (lo & k) == 0;
        K ka = key[lo], kb = key[hi];
        uint32_t ia = idx[lo], ib = idx[hi];
        bool a_after_b = ka > kb || (ka == kb && ia > ib);
        if (a_after_b == up) { // pairs are distinct: not after means before
          key[lo] = kb, key[hi] = ka;
          idx[lo] = ib, idx[hi] = ia;
        }
      }
      __syncthreads();
    }
  }
  const int64_t lout = len - keep_from;
  for (int64_t j = threadIdx.x; j < lout; j += blockDim.x)
    emit<Key>(x, idx[keep_from + j], out, row, j, lout, inner, arg);
}

template <class Key>
__global__ void make_pairs(const typename Key::K *in, typename Key::K *keys, uint32_t *vals,
                           int64_t n, int64_t len) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n;
       e += (int64_t)gridDim.x * blockDim.x) {
    keys[e] = sort_key<Key>(in[e]);
    vals[e] = (uint32_t)(e % len);
  }
}

__global__ void row_offsets(int *off, int64_t rows, int64_t len) {
  for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r <= rows;
       r += (int64_t)gridDim.x * blockDim.x)
    off[r] = (int)(r * len);
}

template <class Key>
__global__ void emit_rows(const typename Key::K *in, const uint32_t *perm, void *out,
                          int64_t rows, int64_t len, int arg, int64_t keep_from, int64_t inner) {
  const int64_t lout = len - keep_from, total = rows * lout;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    int64_t r = e / lout, j = e % lout;
    emit<Key>(in + r * len, perm[r * len + keep_from + j], out, r, j, lout, inner, arg);
  }
}

unsigned grid_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return (unsigned)(b < 1 ? 1 : b > 65536 ? 65536 : b);
}

// The radix path's scratch: byte offsets from a 256-aligned base.
struct Layout {
  size_t keys_in, keys_out, vals_in, vals_out, off, temp, temp_bytes, total;
};

size_t align256(size_t v) { return (v + 255) & ~(size_t)255; }

// Host arithmetic (CUB's size queries queue nothing). false: CUB refused.
template <class K> bool radix_layout(int64_t rows, int64_t len, Layout *l) {
  size_t n = (size_t)(rows * len), temp = 0;
  cudaError_t e;
  if (rows <= kFewRows)
    e = cub::DeviceRadixSort::SortPairs(nullptr, temp, (const K *)nullptr, (K *)nullptr,
                                        (const uint32_t *)nullptr, (uint32_t *)nullptr, (int)len,
                                        0, (int)sizeof(K) * 8, (cudaStream_t)0);
  else
    e = cub::DeviceSegmentedRadixSort::SortPairs(
        nullptr, temp, (const K *)nullptr, (K *)nullptr, (const uint32_t *)nullptr,
        (uint32_t *)nullptr, (int)n, (int)rows, (const int *)nullptr, (const int *)nullptr, 0,
        (int)sizeof(K) * 8, (cudaStream_t)0);
  if (e != cudaSuccess) return false;
  size_t at = 0;
  l->keys_in = at, at = align256(at + n * sizeof(K));
  l->keys_out = at, at = align256(at + n * sizeof(K));
  l->vals_in = at, at = align256(at + n * 4);
  l->vals_out = at, at = align256(at + n * 4);
  l->off = at, at = align256(at + (size_t)(rows + 1) * 4);
  l->temp = at, l->temp_bytes = temp, at = align256(at + temp);
  l->total = at + 256; // room to align the base
  return true;
}

bool shape_ok(const lc_cu_sort *a) {
  return a->rows > 0 && a->len > 0 && a->keep_from >= 0 && a->keep_from < a->len &&
         a->inner > 0 && a->rows % a->inner == 0 && a->rows <= 0x7fffffff &&
         a->len <= 0xffffffffll;
}

template <class Key> int radix_rows(const lc_cu_sort *a, void *scratch, cudaStream_t s) {
  using K = typename Key::K;
  Layout l;
  if (!radix_layout<K>(a->rows, a->len, &l)) return LC_CU_UNSUPPORTED;
  char *base = (char *)(((uintptr_t)scratch + 255) & ~(uintptr_t)255);
  K *keys_in = (K *)(base + l.keys_in), *keys_out = (K *)(base + l.keys_out);
  uint32_t *vals_in = (uint32_t *)(base + l.vals_in), *vals_out = (uint32_t *)(base + l.vals_out);
  int *off = (int *)(base + l.off);
  void *temp = base + l.temp;
  const K *in = (const K *)a->in;
  int64_t n = a->rows * a->len;
  const int bits = (int)sizeof(K) * 8;
  make_pairs<Key><<<grid_for(n), kThreads, 0, s>>>(in, keys_in, vals_in, n, a->len);
  cudaError_t e = cudaSuccess;
  if (a->rows <= kFewRows) {
    for (int64_t r = 0; r < a->rows && e == cudaSuccess; r++) {
      size_t tb = l.temp_bytes;
      int64_t o = r * a->len;
      e = cub::DeviceRadixSort::SortPairs(temp, tb, keys_in + o, keys_out + o, vals_in + o,
                                          vals_out + o, (int)a->len, 0, bits, s);
    }
  } else {
    row_offsets<<<grid_for(a->rows + 1), kThreads, 0, s>>>(off, a->rows, a->len);
    size_t tb = l.temp_bytes;
    e = cub::DeviceSegmentedRadixSort::SortPairs(temp, tb, keys_in, keys_out, vals_in, vals_out,
                                                 (int)n, (int)a->rows, off, off + 1, 0, bits, s);
  }
  if (e != cudaSuccess) return -(int)e;
  emit_rows<Key><<<grid_for(a->rows * (a->len - a->keep_from)), kThreads, 0, s>>>(
      in, vals_out, a->out, a->rows, a->len, a->arg, a->keep_from, a->inner);
  return 0;
}

template <class Key> int bitonic(const lc_cu_sort *a, cudaStream_t s) {
  int n2 = 64;
  while (n2 < a->len) n2 <<= 1;
  int threads = n2 / 2 < 512 ? n2 / 2 : 512;
  size_t shmem = (size_t)n2 * (4 + sizeof(typename Key::K));
  bitonic_rows<Key><<<(unsigned)a->rows, threads, shmem, s>>>(
      (const typename Key::K *)a->in, a->out, a->len, n2, a->arg, a->keep_from, a->inner);
  return 0;
}

} // namespace

extern "C" size_t lc_cu_sort_scratch(const struct lc_cu_sort *a) {
  if (!shape_ok(a)) return SIZE_MAX;
  size_t bytes = SIZE_MAX;
  dispatch_key(a->dt, [&](auto key) {
    using K = typename decltype(key)::K;
    Layout l;
    if (a->len <= kBitonicMax)
      bytes = 0;
    else if (a->rows * a->len <= 0x7fffffff && radix_layout<K>(a->rows, a->len, &l))
      bytes = l.total;
  });
  return bytes;
}

extern "C" int lc_cu_sort_rows(const struct lc_cu_sort *a, void *scratch, void *stream) {
  if (lc_cu_sort_scratch(a) == SIZE_MAX) return LC_CU_UNSUPPORTED;
  cudaStream_t s = (cudaStream_t)stream;
  int rc = LC_CU_UNSUPPORTED;
  dispatch_key(a->dt, [&](auto key) {
    using Key = decltype(key);
    rc = a->len <= kBitonicMax ? bitonic<Key>(a, s) : radix_rows<Key>(a, scratch, s);
  });
  if (rc) return rc;
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : -(int)e;
}
