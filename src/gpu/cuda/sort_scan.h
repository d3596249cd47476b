/* Launchers of the sort (gpu/cuda/sort.cu) and scan (gpu/cuda/scan.cu)
 * kernels, callable from C; conventions as kernels.h: plain C types, work
 * queued on `stream`, 0, LC_CU_UNSUPPORTED (nothing queued) or a negative
 * cudaError_t. Offsets and strides count elements. */
#ifndef LC_GPU_CUDA_SORT_SCAN_H
#define LC_GPU_CUDA_SORT_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/cuda/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sorting the rows of a row-major (rows, len) matrix `in` of real dtype dt
 * in ops/sort.c's total order: value ascending, NaN last, -0 equal to +0,
 * ties by index. Row r is line (o, i) = (r / inner, r % inner) of the
 * output, whose layout is row-major (outer, len - keep_from, inner): the
 * sorted positions keep_from..len-1 of row r go to
 * out[(o * (len - keep_from) + s - keep_from) * inner + i], as values of dt
 * (bit copies of the input's) or, with arg, as uint32 indices along the row.
 * Every row is fully sorted (which partitions too). */
struct lc_cu_sort {
  int dt;
  int arg;
  int64_t rows, len;
  int64_t keep_from; /* 0, or len - k for topk */
  int64_t inner;
  const void *in;
  void *out;
};
/* Device scratch lc_cu_sort_rows needs (0: none), or SIZE_MAX when the
 * case is not handled (then lc_cu_sort_rows answers LC_CU_UNSUPPORTED).
 * Host arithmetic only: nothing is queued or waited for. */
size_t lc_cu_sort_scratch(const struct lc_cu_sort *a);
/* scratch: a device block of lc_cu_sort_scratch(a) bytes (any alignment),
 * used only by the work this call queues. */
int lc_cu_sort_rows(const struct lc_cu_sort *a, void *scratch, void *stream);

/* A scan (kind: enum lc_scan_kind) along the lines of a (outer, len,
 * inner) array: element k of line (o, i) is in[o * in_so + k * in_sk +
 * i * in_si] (in_dt) and goes to out[(o * len + k) * inner + i] (out_dt,
 * row-major), with ops/scan.c's accumulator types, operators, identities
 * and conversions. */
struct lc_cu_scan {
  int kind;
  int in_dt, out_dt;
  int64_t outer, len, inner;
  int64_t in_so, in_sk, in_si;
  const void *in;
  void *out;
  int reverse, inclusive;
};
int lc_cu_scan_lines(const struct lc_cu_scan *a, void *stream);

#ifdef __cplusplus
}
#endif
#endif
