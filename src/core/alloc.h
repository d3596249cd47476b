/* Host memory for array data: a caching allocator.
 * Blocks are 64-byte aligned and rounded up to a size class; freed blocks go
 * to a per-class free list (the cache) until the cache limit is reached.
 * Counters (active, peak, cache) are exact and guarded by one lock.
 * Small bookkeeping structures use plain malloc and are not counted. */
#ifndef LC_ALLOC_H
#define LC_ALLOC_H

#include <stddef.h>

void *lc_alloc(size_t nbytes); /* NULL (reported) on failure; nbytes may be 0 */
void lc_free(void *p, size_t nbytes); /* nbytes must be what was asked for */

size_t lc_alloc_active(void);
size_t lc_alloc_peak(void);
void lc_alloc_reset_peak(void);
size_t lc_alloc_cached(void);
void lc_alloc_clear_cache(void);
size_t lc_alloc_set_cache_limit(size_t limit);   /* returns the old limit */
size_t lc_alloc_set_memory_limit(size_t limit);  /* returns the old limit */
size_t lc_alloc_memory_limit(void);

/* Test hook: make the n-th allocation from now fail (0 disables). */
void lc_alloc_fail_after(long n);

#endif
