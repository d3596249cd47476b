// Index and copy kernels: strided n-d copies and slice combines, gather,
// take_along_axis, scatter (atomic combines; last-write-wins by a winner
// table for plain assignment), remap and arange. Data movement works on
// items of the element's size (1, 2, 4, 8 bytes) or on packs of up to 16
// bytes where the innermost dimension is contiguous and aligned, so every
// dtype moves bit for bit. Semantics are the CPU evaluators' (ops/gather.c,
// ops/scatter.c, ops/shape_copy.c, ops/shape_remap.c, ops/creation.c).
#include <cuda_runtime.h>
#include <string.h>

#include "gpu/cuda/cu_types.cuh"
#include "gpu/cuda/pdl.cuh"
#include "gpu/cuda/index.h"
#include "gpu/cuda/launch.cuh"

namespace {

enum { M_NONE, M_ADD, M_PROD, M_MAX, M_MIN }; // enum lc_scatter_mode

void grid_of(int64_t n, unsigned *blocks) {
  int64_t b = (n + 255) / 256;
  *blocks = (unsigned)(b < 132 * 32 ? (b > 0 ? b : 1) : 132 * 32);
}

__device__ __forceinline__ int64_t ld_idx(const void *p, int dt, int64_t off) {
  switch (dt) {
    case MLX_INT8: return ((const int8_t *)p)[off];
    case MLX_INT16: return ((const int16_t *)p)[off];
    case MLX_INT32: return ((const int32_t *)p)[off];
    case MLX_INT64: return ((const long long *)p)[off];
    case MLX_UINT8: return ((const uint8_t *)p)[off];
    case MLX_UINT16: return ((const uint16_t *)p)[off];
    case MLX_UINT32: return ((const uint32_t *)p)[off];
    case MLX_UINT64: {
      unsigned long long v = ((const unsigned long long *)p)[off];
      return v > (unsigned long long)INT64_MAX ? INT64_MAX : (int64_t)v;
    }
    default: return 0;
  }
}

__device__ __forceinline__ int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

__device__ int64_t dyn_offset(const lc_cu_dyn &d) {
  int64_t off = 0;
  for (int k = 0; k < d.n; k++)
    off += clamp64(ld_idx(d.start, d.dt, k * d.sstride), 0, d.hi[k]) * d.mul[k];
  return off;
}

// The value combine of the CPU's lc_combine for real dtypes (bool: add is
// or, prod is and; max/min keep d unless s compares greater/less).
template <class T> __device__ __forceinline__ T comb(int mode, T d, T s) {
  switch (mode) {
    case M_ADD: return lc_to<T>::f(lc_ld(d) + lc_ld(s));
    case M_PROD: return lc_to<T>::f(lc_ld(d) * lc_ld(s));
    case M_MAX: return lc_ld(s) > lc_ld(d) ? s : d;
    case M_MIN: return lc_ld(s) < lc_ld(d) ? s : d;
    default: return s;
  }
}

// comb applied atomically: a compare-and-swap loop on the aligned 32- or
// 64-bit word holding *p (items of 1 or 2 bytes share a word).
template <class T> __device__ void atomic_comb(int mode, T *p, T s) {
  if constexpr (sizeof(T) == 8) {
    unsigned long long *w = (unsigned long long *)p, old = *w, seen;
    do {
      seen = old;
      T d, r;
      memcpy(&d, &seen, 8);
      r = comb<T>(mode, d, s);
      unsigned long long nv;
      memcpy(&nv, &r, 8);
      if (nv == seen) return;
      old = atomicCAS(w, seen, nv);
    } while (old != seen);
  } else {
    uintptr_t a = (uintptr_t)p;
    unsigned *w = (unsigned *)(a & ~(uintptr_t)3);
    const int shift = sizeof(T) == 4 ? 0 : (int)(a & 3) * 8;
    const unsigned mask = sizeof(T) == 4 ? 0xffffffffu : ((1u << (8 * sizeof(T))) - 1u) << shift;
    unsigned old = *w, seen;
    do {
      seen = old;
      unsigned bits = (seen & mask) >> shift;
      T d, r;
      memcpy(&d, &bits, sizeof(T)); // little-endian: the low bytes
      r = comb<T>(mode, d, s);
      unsigned rb = 0;
      memcpy(&rb, &r, sizeof(T));
      unsigned nv = (seen & ~mask) | ((rb << shift) & mask);
      if (nv == seen) return;
      old = atomicCAS(w, seen, nv);
    } while (old != seen);
  }
}

// ---- n-d copy / combine ----

// Offsets of flat index i (row-major over shape) through two stride sets.
template <class I>
__device__ __forceinline__ void offsets2(const lc_cu_copy &a, I i, int64_t *od, int64_t *os) {
  int64_t d = 0, s = 0;
  for (int j = a.ndim - 1; j >= 0; j--) {
    I q = i / (I)a.shape[j], c = i - q * (I)a.shape[j];
    d += (int64_t)c * a.dst_strides[j];
    s += (int64_t)c * a.src_strides[j];
    i = q;
  }
  *od = d;
  *os = s;
}

template <class U, class I> __global__ void copy_k(lc_cu_copy a, I n) {
  lc_pdl_begin();
  int64_t off = a.dyn.n ? dyn_offset(a.dyn) : 0;
  U *dst = (U *)a.dst + (a.dyn_dst ? off : 0);
  const U *src = (const U *)a.src + (a.dyn_dst ? 0 : off);
  for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
    int64_t od, os;
    offsets2<I>(a, i, &od, &os);
    dst[od] = src[os];
  }
}

template <class T> __global__ void comb_k(lc_cu_copy a, int64_t n) {
  lc_pdl_begin();
  int64_t off = a.dyn.n ? dyn_offset(a.dyn) : 0;
  T *dst = (T *)a.dst + (a.dyn_dst ? off : 0);
  const T *src = (const T *)a.src + (a.dyn_dst ? 0 : off);
  GRID_LOOP(i, n) {
    int64_t od, os;
    offsets2<int64_t>(a, i, &od, &os);
    dst[od] = comb<T>(a.mode, dst[od], src[os]);
  }
}

// Packs of up to 16 bytes along a contiguous innermost dimension: the
// largest width that divides it, every other stride, the dynamic offset's
// multipliers and both pointers' alignment.
void widen_copy(lc_cu_copy &a) {
  int nd = a.ndim;
  if (nd == 0 || a.dst_strides[nd - 1] != 1 || a.src_strides[nd - 1] != 1) return;
  for (int w = 16; w > a.itemsize; w /= 2) {
    int64_t k = w / a.itemsize;
    bool ok = w % a.itemsize == 0 && a.shape[nd - 1] % k == 0 && (uintptr_t)a.dst % w == 0 &&
              (uintptr_t)a.src % w == 0;
    for (int j = 0; ok && j < nd - 1; j++)
      ok = a.dst_strides[j] % k == 0 && a.src_strides[j] % k == 0;
    for (int j = 0; ok && j < a.dyn.n; j++) ok = a.dyn.mul[j] % k == 0;
    if (!ok) continue;
    a.shape[nd - 1] /= k;
    for (int j = 0; j < nd - 1; j++) {
      a.dst_strides[j] /= k;
      a.src_strides[j] /= k;
    }
    for (int j = 0; j < a.dyn.n; j++) a.dyn.mul[j] /= k;
    a.itemsize = w;
    return;
  }
}

}  // namespace

extern "C" int lc_cu_copy_nd(const struct lc_cu_copy *in, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  lc_cu_copy a = *in;
  int64_t n = 1;
  for (int j = 0; j < a.ndim; j++) n *= a.shape[j];
  if (n == 0) return 0;
  unsigned b;
  if (a.mode != M_NONE) {
    int rc = LC_CU_UNSUPPORTED;
    grid_of(n, &b);
    lc_dispatch_real(a.dt, [&](auto *p) {
      using T = std::remove_pointer_t<decltype(p)>;
      lc_launch(comb_k<T>, dim3(b), dim3(256), 0, s, a, n);
      rc = 0;
    });
    return rc ? rc : done();
  }
  bool flat = a.dyn.n == 0 && (a.ndim == 0 || (a.ndim == 1 && a.dst_strides[0] == 1 &&
                                              a.src_strides[0] == 1));
  if (flat) {
    cudaError_t e = cudaMemcpyAsync(a.dst, a.src, (size_t)n * a.itemsize,
                                    cudaMemcpyDeviceToDevice, s);
    return e == cudaSuccess ? 0 : -(int)e;
  }
  widen_copy(a);
  n = 1;
  for (int j = 0; j < a.ndim; j++) n *= a.shape[j];
  grid_of(n, &b);
  bool ok = by_size<true>(a.itemsize, [&](auto *p) {
    using U = std::remove_pointer_t<decltype(p)>;
    if (n < INT32_MAX) lc_launch(copy_k<U, uint32_t>, dim3(b), dim3(256), 0, s, a, (uint32_t)n);
    else lc_launch(copy_k<U, int64_t>, dim3(b), dim3(256), 0, s, a, n);
  });
  return ok ? done() : LC_CU_UNSUPPORTED;
}

// ---- gather, gather_axis ----
namespace {

// Element offset of index position p (row-major over ix.ishape) into the
// indexed array; *drop (when given) says an index fell outside
// [0, ext - slice] (scatter), otherwise indices are clamped (gather).
__device__ int64_t index_base(const lc_cu_idx &ix, int64_t p, bool *drop) {
  int64_t io[LC_CU_MAX_DIMS];
  for (int k = 0; k < ix.nidx; k++) io[k] = 0;
  for (int d = ix.ind - 1; d >= 0; d--) {
    int64_t q = p / ix.ishape[d], c = p - q * ix.ishape[d];
    for (int k = 0; k < ix.nidx; k++) io[k] += c * ix.istrides[k][d];
    p = q;
  }
  int64_t off = 0;
  for (int k = 0; k < ix.nidx; k++) {
    int64_t ext = ix.ext[k], v = ld_idx(ix.idx[k], ix.dt[k], io[k]);
    if (v < 0) v += ext;
    if (drop) {
      if (v < 0 || v > ext - ix.slice[k]) *drop = true;
    } else {
      v = clamp64(v, 0, ext - ix.slice[k]);
    }
    off += v * ix.astride[k];
  }
  return off;
}

// The slot of index position p among all index tuples (for last-write-wins)
// or -1 when it is dropped.
__device__ int64_t index_slot(const lc_cu_idx &ix, int64_t p) {
  int64_t io[LC_CU_MAX_DIMS];
  for (int k = 0; k < ix.nidx; k++) io[k] = 0;
  for (int d = ix.ind - 1; d >= 0; d--) {
    int64_t q = p / ix.ishape[d], c = p - q * ix.ishape[d];
    for (int k = 0; k < ix.nidx; k++) io[k] += c * ix.istrides[k][d];
    p = q;
  }
  int64_t slot = 0;
  for (int k = 0; k < ix.nidx; k++) {
    int64_t ext = ix.ext[k], range = ext - ix.slice[k] + 1, v = ld_idx(ix.idx[k], ix.dt[k], io[k]);
    if (v < 0) v += ext;
    if (v < 0 || v >= range) return -1;
    slot = slot * range + v;
  }
  return slot;
}

__device__ __forceinline__ int64_t nd_offset(int nd, const int64_t *shape, const int64_t *strides,
                                             int64_t i) {
  int64_t off = 0;
  for (int d = nd - 1; d >= 0; d--) {
    int64_t q = i / shape[d];
    off += (i - q * shape[d]) * strides[d];
    i = q;
  }
  return off;
}

template <class U> __global__ void gather_k(struct lc_cu_gather a, int64_t n, int64_t slice_n) {
  lc_pdl_begin();
  U *out = (U *)a.out;
  const U *src = (const U *)a.src;
  GRID_LOOP(i, n) {
    int64_t p = i / slice_n;
    int64_t off = index_base(a.ix, p, nullptr);
    out[i] = src[off + nd_offset(a.nd, a.shape, a.strides, i - p * slice_n)];
  }
}

template <class U> __global__ void gather_axis_k(struct lc_cu_gather_axis a, int64_t n) {
  lc_pdl_begin();
  U *out = (U *)a.out;
  const U *src = (const U *)a.src;
  GRID_LOOP(i, n) {
    int64_t r = i, so = 0, io = 0;
    for (int d = a.ndim - 1; d >= 0; d--) {
      int64_t q = r / a.shape[d], c = r - q * a.shape[d];
      io += c * a.idx_strides[d];
      if (d != a.axis) so += c * a.src_strides[d];
      r = q;
    }
    int64_t v = ld_idx(a.idx, a.idx_dt, io);
    if (v < 0) v += a.ext;
    so += clamp64(v, 0, a.ext - 1) * a.src_strides[a.axis];
    out[i] = src[so];
  }
}

// Gather packs: the slice's innermost dimension contiguous in src and every
// src stride, index stride and pointer a multiple of the pack.
void widen_gather(struct lc_cu_gather &a) {
  int nd = a.nd;
  if (nd == 0 || a.strides[nd - 1] != 1) return;
  for (int w = 16; w > a.itemsize; w /= 2) {
    int64_t k = w / a.itemsize;
    bool ok = w % a.itemsize == 0 && a.shape[nd - 1] % k == 0 && (uintptr_t)a.out % w == 0 &&
              (uintptr_t)a.src % w == 0;
    for (int j = 0; ok && j < nd - 1; j++) ok = a.strides[j] % k == 0;
    for (int j = 0; ok && j < a.ix.nidx; j++) ok = a.ix.astride[j] % k == 0;
    if (!ok) continue;
    a.shape[nd - 1] /= k;
    for (int j = 0; j < nd - 1; j++) a.strides[j] /= k;
    for (int j = 0; j < a.ix.nidx; j++) a.ix.astride[j] /= k;
    a.itemsize = w;
    return;
  }
}

}  // namespace

extern "C" int lc_cu_gather(const struct lc_cu_gather *in, void *stream) {
  struct lc_cu_gather a = *in;
  widen_gather(a);
  int64_t count = 1, slice_n = 1;
  for (int d = 0; d < a.ix.ind; d++) count *= a.ix.ishape[d];
  for (int d = 0; d < a.nd; d++) slice_n *= a.shape[d];
  int64_t n = count * slice_n;
  if (n == 0) return 0;
  unsigned b;
  grid_of(n, &b);
  bool ok = by_size<true>(a.itemsize, [&](auto *p) {
    using U = std::remove_pointer_t<decltype(p)>;
    lc_launch(gather_k<U>, dim3(b), dim3(256), 0, (cudaStream_t)stream, a, n, slice_n);
  });
  return ok ? done() : LC_CU_UNSUPPORTED;
}

extern "C" int lc_cu_gather_axis(const struct lc_cu_gather_axis *a, void *stream) {
  int64_t n = 1;
  for (int d = 0; d < a->ndim; d++) n *= a->shape[d];
  if (n == 0) return 0;
  unsigned b;
  grid_of(n, &b);
  bool ok = by_size<true>(a->itemsize, [&](auto *p) {
    using U = std::remove_pointer_t<decltype(p)>;
    lc_launch(gather_axis_k<U>, dim3(b), dim3(256), 0, (cudaStream_t)stream, *a, n);
  });
  return ok ? done() : LC_CU_UNSUPPORTED;
}

// ---- scatter, scatter_axis ----
namespace {

// Update element i = (index position p, slice element e): its offset in
// upd and its destination in out (false: dropped).
__device__ __forceinline__ bool scatter_at(const struct lc_cu_scatter &a, int64_t i,
                                           int64_t slice_n, int64_t *p, int64_t *uo,
                                           int64_t *oo) {
  *p = i / slice_n;
  int64_t e = i - *p * slice_n;
  bool drop = false;
  int64_t base = index_base(a.ix, *p, &drop);
  if (drop) return false;
  *uo = nd_offset(a.ix.ind, a.ix.ishape, a.upd_strides, *p) +
        nd_offset(a.nd, a.slice, a.upd_strides + a.ix.ind, e);
  *oo = base + nd_offset(a.nd, a.slice, a.out_strides, e);
  return true;
}

template <class T>
__global__ void scatter_comb_k(struct lc_cu_scatter a, int64_t n, int64_t slice_n) {
  lc_pdl_begin();
  GRID_LOOP(i, n) {
    int64_t p, uo, oo;
    if (scatter_at(a, i, slice_n, &p, &uo, &oo))
      atomic_comb<T>(a.mode, (T *)a.out + oo, ((const T *)a.upd)[uo]);
  }
}

// Last write wins: win[slot] = the last index position writing the slot.
__global__ void scatter_win_k(struct lc_cu_scatter a, int *win, int64_t count) {
  lc_pdl_begin();
  GRID_LOOP(p, count) {
    int64_t slot = index_slot(a.ix, p);
    if (slot >= 0) atomicMax(win + slot, (int)p);
  }
}

template <class U>
__global__ void scatter_set_k(struct lc_cu_scatter a, const int *win, int64_t n, int64_t slice_n) {
  lc_pdl_begin();
  GRID_LOOP(i, n) {
    int64_t p, uo, oo;
    if (!scatter_at(a, i, slice_n, &p, &uo, &oo)) continue;
    if (win && win[index_slot(a.ix, p)] != (int)p) continue;
    ((U *)a.out)[oo] = ((const U *)a.upd)[uo];
  }
}

// scatter_axis element p: offsets in upd and out (false: dropped).
__device__ __forceinline__ bool saxis_at(const struct lc_cu_scatter_axis &a, int64_t p, int64_t *uo,
                                         int64_t *oo) {
  int64_t r = p, io = 0, u = 0, o = 0;
  for (int d = a.ndim - 1; d >= 0; d--) {
    int64_t q = r / a.shape[d], c = r - q * a.shape[d];
    io += c * a.idx_strides[d];
    u += c * a.upd_strides[d];
    if (d != a.axis) o += c * a.out_strides[d];
    r = q;
  }
  int64_t v = ld_idx(a.idx, a.idx_dt, io);
  if (v < 0) v += a.ext;
  if (v < 0 || v >= a.ext) return false;
  *uo = u;
  *oo = o + v * a.out_strides[a.axis];
  return true;
}

template <class T> __global__ void saxis_comb_k(struct lc_cu_scatter_axis a, int64_t n) {
  lc_pdl_begin();
  GRID_LOOP(p, n) {
    int64_t uo, oo;
    if (saxis_at(a, p, &uo, &oo)) atomic_comb<T>(a.mode, (T *)a.out + oo, ((const T *)a.upd)[uo]);
  }
}

__global__ void saxis_win_k(struct lc_cu_scatter_axis a, int *win, int64_t n) {
  lc_pdl_begin();
  GRID_LOOP(p, n) {
    int64_t uo, oo;
    if (saxis_at(a, p, &uo, &oo)) atomicMax(win + oo, (int)p);
  }
}

template <class U>
__global__ void saxis_set_k(struct lc_cu_scatter_axis a, const int *win, int64_t n) {
  lc_pdl_begin();
  GRID_LOOP(p, n) {
    int64_t uo, oo;
    if (saxis_at(a, p, &uo, &oo) && (!win || win[oo] == (int)p))
      ((U *)a.out)[oo] = ((const U *)a.upd)[uo];
  }
}

}  // namespace

extern "C" int lc_cu_scatter(const struct lc_cu_scatter *a, void *stream, int *win,
                             int64_t nslots) {
  cudaStream_t s = (cudaStream_t)stream;
  int64_t count = 1, slice_n = 1;
  for (int d = 0; d < a->ix.ind; d++) count *= a->ix.ishape[d];
  for (int d = 0; d < a->nd; d++) slice_n *= a->slice[d];
  int64_t n = count * slice_n;
  if (n == 0) return 0;
  unsigned b;
  grid_of(n, &b);
  if (a->mode != M_NONE) {
    int rc = LC_CU_UNSUPPORTED;
    lc_dispatch_real(a->dt, [&](auto *p) {
      using T = std::remove_pointer_t<decltype(p)>;
      lc_launch(scatter_comb_k<T>, dim3(b), dim3(256), 0, s, *a, n, slice_n);
      rc = 0;
    });
    return rc ? rc : done();
  }
  if (win) {
    cudaError_t e = cudaMemsetAsync(win, 0xff, (size_t)nslots * sizeof(int), s);
    if (e != cudaSuccess) return -(int)e;
    unsigned bc;
    grid_of(count, &bc);
    lc_launch(scatter_win_k, dim3(bc), dim3(256), 0, s, *a, win, count);
  }
  bool ok = by_size<true>(a->itemsize, [&](auto *p) {
    using U = std::remove_pointer_t<decltype(p)>;
    lc_launch(scatter_set_k<U>, dim3(b), dim3(256), 0, s, *a, win, n, slice_n);
  });
  return ok ? done() : LC_CU_UNSUPPORTED;
}

extern "C" int lc_cu_scatter_axis(const struct lc_cu_scatter_axis *a, void *stream, int *win) {
  cudaStream_t s = (cudaStream_t)stream;
  int64_t n = 1;
  for (int d = 0; d < a->ndim; d++) n *= a->shape[d];
  if (n == 0) return 0;
  unsigned b;
  grid_of(n, &b);
  if (a->mode != M_NONE) {
    int rc = LC_CU_UNSUPPORTED;
    lc_dispatch_real(a->dt, [&](auto *p) {
      using T = std::remove_pointer_t<decltype(p)>;
      lc_launch(saxis_comb_k<T>, dim3(b), dim3(256), 0, s, *a, n);
      rc = 0;
    });
    return rc ? rc : done();
  }
  if (win) {
    cudaError_t e = cudaMemsetAsync(win, 0xff, (size_t)a->out_size * sizeof(int), s);
    if (e != cudaSuccess) return -(int)e;
    lc_launch(saxis_win_k, dim3(b), dim3(256), 0, s, *a, win, n);
  }
  bool ok = by_size<true>(a->itemsize, [&](auto *p) {
    using U = std::remove_pointer_t<decltype(p)>;
    lc_launch(saxis_set_k<U>, dim3(b), dim3(256), 0, s, *a, win, n);
  });
  return ok ? done() : LC_CU_UNSUPPORTED;
}

// ---- remap, arange ----
namespace {

// ops/shape_remap.c's map_index: the input index along an axis for output
// index i, or -1 for the fill value.
__device__ __forceinline__ int64_t map_index(int kind, int64_t n, int64_t a, int b, int64_t i) {
  switch (kind) {
    case 1: return i % n;
    case 2: return i / a;
    case 3: return (i - a + n) % n;
    case 4: {
      int64_t j = i - a;
      if (j >= 0 && j < n) return j;
      switch (b) {
        case 1: return j < 0 ? 0 : n - 1;
        case 3: {
          int64_t p = 2 * n, r = ((j % p) + p) % p;
          return r < n ? r : p - 1 - r;
        }
        case 2: {
          if (n == 1) return 0;
          int64_t p = 2 * (n - 1), r = ((j % p) + p) % p;
          return r < n ? r : p - r;
        }
        default: return -1;
      }
    }
    default: return i;
  }
}

template <class U> __global__ void remap_k(struct lc_cu_remap a, int64_t n) {
  lc_pdl_begin();
  U *out = (U *)a.out;
  const U *src = (const U *)a.src;
  GRID_LOOP(i, n) {
    int64_t r = i, off = 0;
    bool fill = false;
    for (int d = a.ndim - 1; d >= 0; d--) {
      int64_t q = r / a.shape[d];
      int64_t j = map_index(a.kind[d], a.n[d], a.a[d], a.b[d], r - q * a.shape[d]);
      if (j < 0) fill = true;
      else off += j * a.strides[d];
      r = q;
    }
    out[i] = fill ? *(const U *)a.fill : src[off];
  }
}

template <class T> __global__ void arange_int_k(T *o, int64_t n, uint64_t a, uint64_t d) {
  lc_pdl_begin();
  GRID_LOOP(i, n) o[i] = (T)(a + (uint64_t)i * d);
}

template <class T> __global__ void arange_float_k(T *o, int64_t n, double x0, double dx) {
  lc_pdl_begin();
  GRID_LOOP(i, n) o[i] = lc_to<T>::f(x0 + (double)i * dx);
}

__global__ void arange_c64_k(float2 *o, int64_t n, double x0, double dx) {
  lc_pdl_begin();
  GRID_LOOP(i, n) o[i] = make_float2((float)(x0 + (double)i * dx), 0.0f);
}

}  // namespace

extern "C" int lc_cu_remap(const struct lc_cu_remap *a, void *stream) {
  int64_t n = 1;
  for (int d = 0; d < a->ndim; d++) n *= a->shape[d];
  if (n == 0) return 0;
  unsigned b;
  grid_of(n, &b);
  bool ok = by_size<true>(a->itemsize, [&](auto *p) {
    using U = std::remove_pointer_t<decltype(p)>;
    lc_launch(remap_k<U>, dim3(b), dim3(256), 0, (cudaStream_t)stream, *a, n);
  });
  return ok ? done() : LC_CU_UNSUPPORTED;
}

extern "C" int lc_cu_arange(void *out, int dt, int64_t n, uint64_t a, uint64_t d, double x0,
                            double dx, void *stream) {
  if (n == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  unsigned b;
  grid_of(n, &b);
  if (dt == MLX_COMPLEX64) {
    lc_launch(arange_c64_k, dim3(b), dim3(256), 0, s, (float2 *)out, n, x0, dx);
    return done();
  }
  int rc = LC_CU_UNSUPPORTED;
  if (lc_dispatch_int(dt, [&](auto *p) {
        using T = std::remove_pointer_t<decltype(p)>;
        lc_launch(arange_int_k<T>, dim3(b), dim3(256), 0, s, (T *)out, n, a, d);
        rc = 0;
      }))
    return rc ? rc : done();
  lc_dispatch_float(dt, [&](auto *p) {
    using T = std::remove_pointer_t<decltype(p)>;
    lc_launch(arange_float_k<T>, dim3(b), dim3(256), 0, s, (T *)out, n, x0, dx);
    rc = 0;
  });
  return rc ? rc : done();
}
