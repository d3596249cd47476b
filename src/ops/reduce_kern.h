/* Typed accumulation kernels for the plain reductions.
 *
 * A reduction folds input elements into accumulators of a per (kind, dtype)
 * accumulator type A (asz bytes): integers of 4 bytes or less sum and
 * multiply in 32-bit unsigned arithmetic (wrapping like MLX's int32
 * accumulator, without signed-overflow UB), 8-byte integers in 64 bits,
 * float16/bfloat16 in float, float32/float64 in double, complex64 in
 * complex64; max/min keep the compute type and propagate NaN; all/any fold
 * "x != 0" into bool; mean sums integers in double.
 *
 * run folds n elements (any stride) into one accumulator, using several
 * independent partial accumulators in blocks on contiguous data (accurate
 * and vectorisable); col folds n contiguous elements into n accumulators
 * (column reductions); merge folds accumulators into accumulators; fin
 * converts n accumulators to the output dtype, times `arg` for mean.
 * var/std keep (count, mean, M2) (Welford within columns, blocked two-pass
 * within runs, Chan's merge); logsumexp keeps (max, sum of exp(x - max)).
 * lc_rkern_get returns NULL for unsupported pairs (complex logsumexp). */
#ifndef LC_REDUCE_KERN_H
#define LC_REDUCE_KERN_H

#include <stddef.h>
#include <stdint.h>

#include "mlx/c/array.h"

enum lc_reduce_kind {
  LC_RED_SUM,
  LC_RED_PROD,
  LC_RED_MAX,
  LC_RED_MIN,
  LC_RED_AND,
  LC_RED_OR,
  LC_RED_MEAN,
  LC_RED_VAR, /* fin arg: ddof */
  LC_RED_STD, /* fin arg: ddof */
  LC_RED_LSE, /* logsumexp; real dtypes only */
  LC_RED_NKINDS
};

struct lc_rkern {
  size_t asz;
  void (*init)(void *acc, int64_t n);
  void (*run)(void *acc, const void *x, int64_t n, int64_t stride);
  void (*col)(void *acc, const void *x, int64_t n);
  void (*merge)(void *acc, const void *other, int64_t n);
  void (*fin)(void *out, mlx_dtype out_dt, const void *acc, int64_t n, double arg);
};

const struct lc_rkern *lc_rkern_get(int kind, mlx_dtype in);

/* MLX's output dtype of reduction `kind` over dtype `in`. */
mlx_dtype lc_reduce_out_dtype(int kind, mlx_dtype in);

/* Largest accumulator size over all kernels. */
#define LC_RKERN_MAX_ASZ 32

#endif
