/* Helpers shared by the shape and index families (not public API). */
#ifndef LC_SHAPE_INTERNAL_H
#define LC_SHAPE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/node.h"

/* Copies the elements of an n-d index space from src to dst (both with
 * element strides and offsets, itemsize isz); parallel when large. 0, or 1
 * after reporting. */
int lc_copy_strided(int ndim, const int *shape, size_t isz, void *dst, const int64_t *dst_strides,
                    int64_t dst_off, const void *src, const int64_t *src_strides, int64_t src_off);

/* Copies an evaluated node's elements, row-major, into dst. 0 or 1. */
int lc_copy_node(const struct lc_node *x, void *dst);

#endif
