/* Launchers of the index and copy kernels (gpu/cuda/index.cu), callable
 * from C; conventions as kernels.h: plain C types, work queued on `stream`,
 * 0, LC_CU_UNSUPPORTED (nothing queued) or a negative cudaError_t.
 *
 * Every offset and stride is in elements of the descriptor's item (itemsize
 * bytes; the launchers may widen items to 16-byte packs themselves); data
 * pointers point at element 0. Index arrays are read on the device with
 * the CPU's rules (ops/index_internal.h): any integer dtype, uint64 values
 * past INT64_MAX read as INT64_MAX, negative values wrapped once. */
#ifndef LC_GPU_CUDA_INDEX_H
#define LC_GPU_CUDA_INDEX_H

#include <stdint.h>

#include "gpu/cuda/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An element offset read on the device from n start indices:
 * sum_k clamp(start[k * sstride], 0, hi[k]) * mul[k] (never wrapped: the
 * dynamic slices' rule). n == 0: no offset. */
struct lc_cu_dyn {
  const void *start;
  int dt; /* the start array's dtype */
  int n;
  int64_t sstride;
  int64_t hi[LC_CU_MAX_DIMS], mul[LC_CU_MAX_DIMS];
};

/* dst[off_d(i) (+ dyn)] (mode)= src[off_s(i) (+ dyn)] for every i of
 * shape, where off_x(i) = sum_j i_j * x_strides[j]. mode is enum
 * lc_scatter_mode's value: NONE copies itemsize bytes (any dtype); the
 * others combine values of dtype dt (real dtypes; positions never repeat,
 * so no atomics). dyn_dst: the dynamic offset moves dst (1) or src (0). */
struct lc_cu_copy {
  void *dst;
  const void *src;
  int itemsize, mode, dt;
  int ndim;
  int64_t shape[LC_CU_MAX_DIMS];
  int64_t dst_strides[LC_CU_MAX_DIMS], src_strides[LC_CU_MAX_DIMS];
  struct lc_cu_dyn dyn;
  int dyn_dst;
};
int lc_cu_copy_nd(const struct lc_cu_copy *a, void *stream);

/* The index arrays of a gather or scatter: nidx arrays, all of shape
 * ishape[0..ind), array k indexing axis axes' extent ext[k] with element
 * stride astride[k] in the sliced/scattered array. */
struct lc_cu_idx {
  int nidx, ind;
  int64_t ishape[LC_CU_MAX_DIMS];
  const void *idx[LC_CU_MAX_DIMS];
  int dt[LC_CU_MAX_DIMS];
  int64_t istrides[LC_CU_MAX_DIMS][LC_CU_MAX_DIMS];
  int64_t ext[LC_CU_MAX_DIMS], slice[LC_CU_MAX_DIMS], astride[LC_CU_MAX_DIMS];
};

/* GATHER: out (contiguous: ishape then slice shape) from src: the slice at
 * every index position, each index clamped into [0, ext - slice]. */
struct lc_cu_gather {
  void *out;
  const void *src;
  int itemsize;
  int nd; /* slice dimensions */
  int64_t shape[LC_CU_MAX_DIMS], strides[LC_CU_MAX_DIMS];
  struct lc_cu_idx ix;
};
int lc_cu_gather(const struct lc_cu_gather *a, void *stream);

/* GATHER_AXIS: out (contiguous, shape) at position p reads src at p with
 * p[axis] replaced by idx[p] clamped into [0, ext - 1]. */
struct lc_cu_gather_axis {
  void *out;
  const void *src, *idx;
  int itemsize, idx_dt, ndim, axis;
  int64_t shape[LC_CU_MAX_DIMS], src_strides[LC_CU_MAX_DIMS], idx_strides[LC_CU_MAX_DIMS];
  int64_t ext;
};
int lc_cu_gather_axis(const struct lc_cu_gather_axis *a, void *stream);

/* SCATTER into out (row-major over its shape, already holding the input):
 * the update slice at every index position (shape: ishape then slice)
 * combined in at the indexed position; positions whose index falls
 * outside [0, ext - slice] are dropped. mode NONE: the update of the last
 * index position (row-major) that writes an element wins, as on the CPU;
 * other modes combine atomically (dt: real dtypes). */
struct lc_cu_scatter {
  void *out;
  const void *upd;
  int mode, dt, itemsize;
  int nd; /* out's (= the slice's) dimensions */
  int64_t slice[LC_CU_MAX_DIMS], out_strides[LC_CU_MAX_DIMS];
  int64_t upd_strides[2 * LC_CU_MAX_DIMS]; /* the index axes, then the slice's */
  struct lc_cu_idx ix;
};
/* win: NULL (mode NONE with one index position, or another mode), else
 * device scratch of nslots ints, nslots the product over indexed axes of
 * (ext - slice + 1), where every indexed axis has slice 1 or ext (so that
 * two index tuples write the same elements exactly when they are equal). */
int lc_cu_scatter(const struct lc_cu_scatter *a, void *stream, int *win, int64_t nslots);

/* SCATTER_AXIS: at every position p of shape, upd[p] is combined into out
 * (row-major over out_shape) at p with p[axis] replaced by idx[p]; indices
 * outside [0, ext) are dropped. Mode NONE: the last write (row-major p)
 * wins, as on the CPU. */
struct lc_cu_scatter_axis {
  void *out;
  const void *upd, *idx;
  int mode, dt, itemsize, idx_dt, ndim, axis;
  int64_t shape[LC_CU_MAX_DIMS], out_strides[LC_CU_MAX_DIMS];
  int64_t upd_strides[LC_CU_MAX_DIMS], idx_strides[LC_CU_MAX_DIMS];
  int64_t ext, out_size;
};
/* win: NULL for modes other than NONE and where no two positions can
 * write one element (idx's extent along axis is 1), else device scratch of
 * out_size ints. */
int lc_cu_scatter_axis(const struct lc_cu_scatter_axis *a, void *stream, int *win);

/* REMAP (ops/shape_remap.c): per output axis d a map kind[d] (0 identity,
 * 1 tile, 2 repeat, 3 roll, 4 pad) with the input extent n[d] and its
 * arguments a[d], b[d]; out (contiguous, shape) reads src at the mapped
 * position, or *fill (device, one item) where a constant pad maps outside. */
struct lc_cu_remap {
  void *out;
  const void *src, *fill;
  int itemsize, ndim;
  int64_t shape[LC_CU_MAX_DIMS], strides[LC_CU_MAX_DIMS];
  int kind[LC_CU_MAX_DIMS], n[LC_CU_MAX_DIMS], a[LC_CU_MAX_DIMS], b[LC_CU_MAX_DIMS];
};
int lc_cu_remap(const struct lc_cu_remap *a, void *stream);

/* ARANGE of n elements of dtype dt into out: integers o[i] = a + i*d
 * (64-bit wrapping, then truncated to the type); floats (exact cases only,
 * see eval_index.c) o[i] = x0 + i*dx computed in double. */
int lc_cu_arange(void *out, int dt, int64_t n, uint64_t a, uint64_t d, double x0, double dx,
                 void *stream);

#ifdef __cplusplus
}
#endif
#endif
