/* Launchers of the random kernels (gpu/cuda/random.cu), callable from C;
 * conventions as kernels.h: plain C types, work queued on `stream`, 0,
 * LC_CU_UNSUPPORTED (nothing queued) or a negative cudaError_t. Strides and
 * offsets are in elements; data pointers point at element 0. Each kernel
 * computes what its CPU evaluator (ops/random.c, ops/random_dist.c) does,
 * operation for operation. */
#ifndef LC_GPU_CUDA_RANDOM_H
#define LC_GPU_CUDA_RANDOM_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/cuda/kernels.h"
#include "gpu/cuda/misc.h" /* struct lc_cu_view */

#ifdef __cplusplus
extern "C" {
#endif

/* MLX's threefry bit stream: key j = (keys[2j], keys[2j+1]) in the row-major
 * order of `keys` (nkeys keys) fills bytes [j * bytes_per_key, (j + 1) *
 * bytes_per_key) of out, as lc_threefry_fill. */
int lc_cu_random_bits(const uint32_t *keys, const struct lc_cu_view *kv, int64_t nkeys,
                      int64_t bytes_per_key, void *out, void *stream);

#define LC_CU_DIST_IN 5
/* The kinds, as enum lc_dist_kind (ops/random_internal.h; eval_random.c
 * checks that they agree). */
enum {
  LC_CU_DIST_UNIFORM,
  LC_CU_DIST_NORMAL,
  LC_CU_DIST_LAPLACE,
  LC_CU_DIST_GUMBEL,
  LC_CU_DIST_TRUNC,
  LC_CU_DIST_BERNOULLI,
  LC_CU_DIST_RANDINT
};
/* A RANDOM_DIST node (ops/random_internal.h): out (n contiguous elements of
 * out_dt) from the uint32 bits (input 0) and the kind's extra inputs,
 * input k of dtype in_dt[k] read at sum_d coord_d * strides[k][d] over the
 * output's shape (ndim dimensions). */
struct lc_cu_dist {
  int kind, has_scale, has_loc, p_f64;
  float loc, scale;
  int out_dt;
  int64_t n;
  void *out;
  int nin;
  const void *in[LC_CU_DIST_IN];
  int in_dt[LC_CU_DIST_IN];
  int ndim;
  int shape[LC_CU_MAX_DIMS];
  int64_t strides[LC_CU_DIST_IN][LC_CU_MAX_DIMS];
};
int lc_cu_random_dist(const struct lc_cu_dist *a, void *stream);

/* A RANDOM_CNORMAL node: out[i] (complex64, n contiguous) = loc + scale *
 * (e(bits[2i]) + e(bits[2i+1]) i), e the normal draw's erfinv of the
 * symmetric unit (no sqrt 2 factor), bits row-major (2n words); scale
 * and loc complex64 or NULL, element i read at sum_d coord_d * strides[k][d]
 * over shape (ndim dims; k = 0 scale, 1 loc). */
struct lc_cu_cnormal {
  int64_t n;
  void *out;
  const uint32_t *bits;
  const void *in[2]; /* scale, loc */
  int ndim;
  int shape[LC_CU_MAX_DIMS];
  int64_t strides[2][LC_CU_MAX_DIMS];
};
int lc_cu_random_cnormal(const struct lc_cu_cnormal *a, void *stream);

/* Categorical: out[a * inner + j] (uint32) = the first k maximising
 * g[a, k, j] + l[a, k, j] (float64 sum when l is float64, else float32; a
 * NaN wins over numbers, the first NaN stays) over the views' shape, whose
 * axis `axis` has extent K (> 0). g and l have dtypes g_dt, l_dt. */
struct lc_cu_categorical {
  const void *g, *l;
  int g_dt, l_dt;
  struct lc_cu_view gv, lv; /* same shape */
  int axis;
  int64_t outer, K, inner;
  uint32_t *out;
};
int lc_cu_random_categorical(const struct lc_cu_categorical *a, void *stream);

/* Stable argsort of n uint32 keys x[i * stride] into out (n uint32): the
 * permutation. Scratch: lc_cu_random_argsort_scratch(n) bytes of device
 * memory (aligned as device allocations are). */
size_t lc_cu_random_argsort_scratch(int64_t n);
int lc_cu_random_argsort(const uint32_t *x, int64_t stride, int64_t n, uint32_t *out,
                         void *scratch, size_t scratch_bytes, void *stream);

/* out (contiguous, x's shape) = x reordered along axis: out[.., k, ..] =
 * x[.., idx[k * idx_stride], ..] (an index past the axis gives zero
 * bytes). itemsize 1, 2, 4 or 8. */
int lc_cu_random_take(const void *x, const struct lc_cu_view *xv, int itemsize, int axis,
                      const uint32_t *idx, int64_t idx_stride, int64_t n, void *out,
                      void *stream);

#ifdef __cplusplus
}
#endif
#endif
