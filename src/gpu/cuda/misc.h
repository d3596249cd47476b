/* Launchers of the kernels of gpu/cuda/misc.cu (divmod, linspace, tri,
 * tril/triu, diag, hadamard, masked_scatter), callable from C; conventions
 * as kernels.h: plain C types, work queued on `stream`, 0,
 * LC_CU_UNSUPPORTED (nothing queued) or a negative cudaError_t.
 *
 * Outputs are contiguous (row-major) device buffers. An input is read
 * through a view: element i (row-major over the view's shape) is at
 * p + off(i) items, off(i) = sum_j i_j * strides[j] over the row-major
 * decomposition of i by shape[0..ndim) (ndim 0: one element at p). Every
 * size and offset is 64-bit. Items are moved by their size (1, 2, 4 or 8
 * bytes), so the copying kernels (tri, tril, diag, masked_scatter) keep
 * every dtype's bits, complex64 included. */
#ifndef LC_GPU_CUDA_MISC_H
#define LC_GPU_CUDA_MISC_H

#include <stdint.h>

#include "gpu/cuda/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

struct lc_cu_view {
  const void *p;
  int ndim;
  int64_t shape[LC_CU_MAX_DIMS], strides[LC_CU_MAX_DIMS];
};

/* out[i] = in(i) for i < n: a contiguous copy of a view. */
int lc_cu_copy_view(void *out, const struct lc_cu_view *in, int itemsize, int64_t n,
                    void *stream);

/* DIVMOD (ops/binary.c): q[i], r[i] = floor division and remainder of
 * x(i) by y(i), n elements of real dtype dt (not complex), with the CPU's
 * rules: integers in 64-bit arithmetic with Python's signs, by zero (0, x),
 * INT_MIN by -1 (INT_MIN, 0); floats floor(x / y) and fmod corrected to
 * y's sign, float16 and bfloat16 through float. */
struct lc_cu_divmod {
  int dt;
  int64_t n;
  void *q, *r;
  struct lc_cu_view x, y;
};
int lc_cu_divmod(const struct lc_cu_divmod *a, void *stream);

/* LINSPACE of n >= 2 elements of real dtype dt (creation.c): float64
 * (1 - t) a + t b with t = i / den in double; every other dtype the same
 * in float, then converted (as astype from float32). */
int lc_cu_linspace(void *out, int dt, int64_t n, double start, double stop, int den,
                   void *stream);

/* gather_mm's pointer arrays for cuBLAS's batched GEMM: for batch i < n,
 * ptrs[i] = a + ia[i] a_step, ptrs[n + i] = b + ib[i] b_step and
 * ptrs[2 n + i] = out + i out_step (steps in bytes). An index past the
 * last matrix (na, nb matrices) is clamped to it, as the GPU's gathers
 * clamp: the CPU reports it instead, which a GPU cannot while queued. */
struct lc_cu_gather_mm {
  const uint32_t *ia, *ib;
  int64_t n;
  const char *a, *b;
  char *out;
  int64_t a_step, b_step, out_step;
  uint32_t na, nb;
  void **ptrs;
};
int lc_cu_gather_mm_ptrs(const struct lc_cu_gather_mm *g, void *stream);

/* TRI (eye too): out (rows, cols) of items of itemsize bytes, `one` (the
 * low itemsize bytes) where j <= i + k (eye: j == i + k), 0 elsewhere. */
int lc_cu_tri(void *out, int itemsize, int64_t rows, int64_t cols, int64_t k, int eye,
              uint64_t one, void *stream);

/* TRIL / TRIU over the last two axes (rows, cols) of n elements: out[q] =
 * in(q) where j <= i + k (upper: j >= i + k), else 0 bits. out may be
 * in.p exactly (in place, in contiguous). */
int lc_cu_tril(void *out, const struct lc_cu_view *in, int itemsize, int64_t n, int64_t rows,
               int64_t cols, int64_t k, int upper, void *stream);

/* DIAG of a vector of len items (element t at v + t * vstride items) into
 * out (m, m), m = len + |k|: v[t] at (r0 + t, c0 + t), 0 bits elsewhere. */
int lc_cu_diag(void *out, const void *v, int64_t vstride, int itemsize, int64_t len, int64_t m,
               int64_t r0, int64_t c0, void *stream);

/* HADAMARD (misc_ops.c): the fast Walsh-Hadamard transform of each row of
 * len (a power of two) elements of float32 (dt MLX_FLOAT32) or float64,
 * rows * len elements read from in, written to out (contiguous; may be
 * in.p exactly when in is contiguous), then multiplied by scale in
 * double and rounded to dt. The butterflies are the CPU's, stage by stage
 * (h = 1, 2, 4, ...: x[j], x[j + h] = a + b, a - b), so the bits are. */
int lc_cu_hadamard(void *out, const struct lc_cu_view *in, int dt, int64_t rows, int64_t len,
                   double scale, void *stream);

/* MASKED_SCATTER (scatter.c) in steps over tiles of LC_CU_MS_TILE mask
 * elements (row-major over out's n elements): lc_cu_masked_count writes
 * each tile's count of set mask elements, turned into exclusive offsets,
 * into tiles[0..ntiles) (ntiles = lc_cu_masked_tiles(n)) and the total to
 * *total (both device memory); lc_cu_masked_scatter then writes the k-th
 * set position (row-major) of out (contiguous, already holding the input)
 * with values' element k (row-major over the values' view), for k <
 * nvalues. */
#define LC_CU_MS_TILE 2048
int64_t lc_cu_masked_tiles(int64_t n);
int lc_cu_masked_count(const struct lc_cu_view *mask, int64_t n, int64_t *tiles, int64_t *total,
                       void *stream);
int lc_cu_masked_scatter(void *out, int itemsize, const struct lc_cu_view *mask, int64_t n,
                         const struct lc_cu_view *values, int64_t nvalues, const int64_t *tiles,
                         void *stream);

#ifdef __cplusplus
}
#endif
#endif
