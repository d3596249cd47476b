/* Helpers shared by gather.c and scatter.c. */
#ifndef LC_INDEX_INTERNAL_H
#define LC_INDEX_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/node.h"

/* Element `off` (element units) of integer data of dtype dt, as int64. */
int64_t lc_idx_load(const void *data, mlx_dtype dt, int64_t off);

/* Checks that an index array has an integer dtype; 0 or 1 after reporting. */
int lc_idx_check(const char *fn, const struct lc_node *idx);

/* Wraps a negative index once (i + n). */
static inline int64_t lc_idx_wrap(int64_t i, int64_t n) { return i < 0 ? i + n : i; }

/* dst[k*ds] (op)= src[k*ss] for k < n, dtype dt (mode: enum lc_scatter_mode). */
void lc_combine(int mode, mlx_dtype dt, int64_t n, void *dst, int64_t ds, const void *src,
                int64_t ss);

/* lc_combine over an n-d index space with element strides/offsets. */
int lc_combine_strided(int mode, mlx_dtype dt, int ndim, const int *shape, void *dst,
                       const int64_t *dst_strides, int64_t dst_off, const void *src,
                       const int64_t *src_strides, int64_t src_off, bool parallel);

/* Gives n (same shape and dtype as input 0) a contiguous copy of input 0,
 * taking over its buffer when allowed. 0, or 1 after reporting. */
int lc_start_from_input(struct lc_node *n);

/* Broadcasts idx[0..n) together into out (new references); 0 or 1. */
int lc_idx_broadcast(const char *fn, int n, struct lc_node *const *idx, struct lc_node **out);

/* gather.c helpers reused by scatter.c. */
int lc_broadcast_except_axis(const char *fn, int n, struct lc_node *const *x, int axis,
                             struct lc_node **out);
int64_t lc_dynamic_offset(const struct lc_node *a, const struct lc_node *start, int naxes,
                          const int *axes, const int *ext, const int64_t *strides);
int lc_dynamic_check(const char *fn, const struct lc_node *a, const struct lc_node *start,
                     int naxes, const int *axes, int *ax);

/* For vmap rules over batched start indices st ([B] for one axis, or
 * [B, naxes]): column k as a [B] array, made non-negative. */
struct lc_node *lc_batched_start(struct lc_node *st, int k);
#endif
