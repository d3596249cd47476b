/* Strided element copies, for any itemsize: a transposing copy goes
 * through cache-sized 2-d tiles, everything else runs along the innermost
 * axis; large copies use the thread pool. */
#ifndef LC_COPY_H
#define LC_COPY_H

#include <stddef.h>
#include <stdint.h>

/* Copies the elements of an n-d index space from src to dst (both with
 * element strides and offsets, itemsize isz). 0, or 1 after reporting. */
int lc_copy_strided(int ndim, const int *shape, size_t isz, void *dst, const int64_t *dst_strides,
                    int64_t dst_off, const void *src, const int64_t *src_strides, int64_t src_off);

#endif
