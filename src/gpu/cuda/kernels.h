/* The launchers of the nvcc-built kernels (the .cu files here), callable from C.
 * Plain C types only: this header is read by both compilers.
 *
 * Every launcher queues work on `stream` and returns 0, LC_CU_UNSUPPORTED
 * (nothing queued: the caller runs the CPU kernel instead), or a negative
 * cudaError_t value. Pointers are device pointers to element 0. */
#ifndef LC_GPU_CUDA_KERNELS_H
#define LC_GPU_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LC_CU_UNSUPPORTED 2

/* Whether kernels are launched with programmatic stream serialization
 * (gpu/cuda/pdl.cuh): 1 unless LACE_CUDA_PDL=0. */
int lc_cu_pdl_enabled(void);
#define LC_CU_MAX_DIMS 8
#define LC_CU_MAX_IN 3

/* An elementwise op: out (contiguous, n elements of out_dt) from nin
 * inputs of in_dt (for select: inputs 1 and 2; input 0 is bool). Input k
 * is read at flat index i when ndim == 0 and flat[k] (contiguous), at 0
 * when ndim == 0 and !flat[k] (a scalar), else at sum_j idx_j * strides[k][j]
 * over the row-major decomposition of i by shape[0..ndim). */
struct lc_cu_ew {
  int op; /* enum lc_op */
  int out_dt, in_dt;
  int nin;
  int64_t n;
  void *out;
  const void *in[LC_CU_MAX_IN];
  int ndim;
  int flat[LC_CU_MAX_IN];
  int shape[LC_CU_MAX_DIMS];
  int64_t strides[LC_CU_MAX_IN][LC_CU_MAX_DIMS];
  double param[3]; /* nan_to_num: nan, posinf, neginf; isclose: rtol, atol, equal_nan */
};
int lc_cu_elementwise(const struct lc_cu_ew *a, void *stream);
/* The same for ops with a complex64 input or output (gpu/cuda/ew_complex.cu):
 * arithmetic, comparisons, select, conversions and the elementary
 * functions of ops/unary.c that take complex values; LC_CU_UNSUPPORTED
 * for the rest (power, nan_equal, complex to integer). */
int lc_cu_elementwise_complex(const struct lc_cu_ew *a, void *stream);

/* Reduction of a row-major (rows, len) matrix along its rows into out[rows]
 * (contiguous): kind is enum lc_reduce_kind's value; in_dt the input's,
 * out_dt the output's dtype; ddof for var/std. */
struct lc_cu_reduce {
  int kind;
  int in_dt, out_dt;
  int64_t rows, len;
  const void *in;
  void *out;
  int ddof;
  void *scratch; /* device, lc_cu_reduce_scratch(a) bytes (when not 0) */
};
/* Bytes of device scratch reduction a needs: few long rows are cut into
 * segments whose partial results meet there; 0 when it needs none. */
size_t lc_cu_reduce_scratch(const struct lc_cu_reduce *a);
int lc_cu_reduce_rows(const struct lc_cu_reduce *a, void *stream);

/* Reduction of a row-major (outer, R, inner) array over its middle axis
 * into out (outer, inner), contiguous; kinds sum, prod, max, min, and, or,
 * mean (others: LC_CU_UNSUPPORTED). scratch: device memory of
 * lc_cu_reduce_cols_scratch(a) bytes, when not 0 (few columns: R is cut
 * into segments merged there). */
struct lc_cu_reduce_cols {
  int kind;
  int in_dt, out_dt;
  int64_t outer, R, inner;
  const void *in;
  void *out;
  void *scratch;
};
/* Whether the column kernel takes a (its kind, dtypes and size). */
int lc_cu_reduce_cols_ok(const struct lc_cu_reduce_cols *a);
size_t lc_cu_reduce_cols_scratch(const struct lc_cu_reduce_cols *a);
int lc_cu_reduce_cols(const struct lc_cu_reduce_cols *a, void *stream);

/* Softmax along the rows of a row-major (rows, len) matrix of float dtype
 * dt into out (same layout). */
int lc_cu_softmax_rows(int dt, int64_t rows, int64_t len, const void *in, void *out, void *stream);

/* argmax (is_max) or argmin along the rows of a row-major (rows, len)
 * matrix of dtype dt into out[rows] (uint32): first extreme, first NaN. */
int lc_cu_argreduce_rows(int is_max, int dt, int64_t rows, int64_t len, const void *in, void *out,
                         void *stream);

/* out (M, N), contiguous, of dtype dt (float32, float16, bfloat16) =
 * a (M, K) b (K, N) with float accumulation, for M <= LC_CU_GEMV_MAX_M.
 * a's row m starts at a + m * lda (contiguous along k); b(k, n) is at
 * b[n * ldb + k] when b_cols, else at b[k * ldb + n]. LC_CU_UNSUPPORTED
 * for layouts without 16-byte loads (unaligned rows, ragged vectors).
 * Some row-major products split k over blocks and add float partial sums
 * in a scratch the caller supplies (part): lc_cu_gemv_plan gives its size
 * (0: none) and the same checks' answer as lc_cu_gemv for the same g; the
 * caller frees it after lc_cu_gemv (stream-ordered), so that a failed
 * allocation is reported once, by the allocator. With done (ndone zeroed
 * counters that only kernels queued in order use: lc_gpu_tile_counters),
 * a split with at most ndone column tiles is added by its last block
 * instead of a second kernel, bit for bit the same; the counters are zero
 * again when the kernel ends. An optional c (dtype dt) is added to the
 * rounded product, as an add after it would. */
#define LC_CU_GEMV_MAX_M 8
struct lc_cu_gemv {
  int dt, dev;
  int M;
  int64_t N, K, lda, ldb;
  int b_cols;
  const void *a, *b;
  void *out;
  float *part; /* at least lc_cu_gemv_plan's *part bytes of device memory */
  const void *c; /* NULL, or out[m, n] = round(a b) + c[m * ldc + n], added in dt (may be out) */
  int64_t ldc;
  unsigned *done; /* NULL, or ndone arrival counters */
  int64_t ndone;
};
int lc_cu_gemv_plan(const struct lc_cu_gemv *g, size_t *part);
int lc_cu_gemv(const struct lc_cu_gemv *g, void *stream);

/* n products (at most LC_CU_GEMV_GROUP) out_k (M, N_k) = a (M, K) b_k (K,
 * N_k) in one launch (plus one to add split sums): a as in lc_cu_gemv, each
 * b_k row-major (b_k(k, n) at b_k[k * ldb_k + n]), out_k contiguous. The
 * same conditions and scratch rules as lc_cu_gemv, for every product. */
#define LC_CU_GEMV_GROUP 4
struct lc_cu_gemv_group {
  int dt, dev, M, n;
  int64_t K, lda;
  const void *a;
  const void *b[LC_CU_GEMV_GROUP];
  int64_t ldb[LC_CU_GEMV_GROUP], N[LC_CU_GEMV_GROUP];
  void *out[LC_CU_GEMV_GROUP];
  float *part;
  unsigned *done; /* as lc_cu_gemv's, for the group's tiles in all */
  int64_t ndone;
};
int lc_cu_gemv_group_plan(const struct lc_cu_gemv_group *g, size_t *part);
int lc_cu_gemv_group(const struct lc_cu_gemv_group *g, void *stream);

/* Strided gather into a contiguous output (a copy of any view). */
int lc_cu_copy_strided(void *out, const void *in, int itemsize, int ndim, const int *shape,
                       const int64_t *strides, int64_t n, void *stream);

/* dst[0..n) = bits: n items of itemsize bytes (1, 2, 4 or 8), each the low
 * itemsize bytes of bits. n <= 0 queues nothing. */
int lc_cu_fill(void *dst, int64_t n, int itemsize, uint64_t bits, void *stream);

#ifdef __cplusplus
}
#endif
#endif
