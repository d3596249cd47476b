/* A small fork-join pool for data-parallel loops.
 * Worker count: LACE_NUM_THREADS if set, else the online CPU count (at most
 * 8). One loop runs on the pool at a time; a caller that finds the pool busy
 * (another thread's loop, or a nested call) runs its loop serially. */
#ifndef LC_PARALLEL_H
#define LC_PARALLEL_H

#include <stdint.h>

/* Calls fn(ctx, lo, hi) over disjoint ranges covering [0, n), in parallel
 * when n >= 2 * min_chunk. Returns when all ranges are done. */
void lc_parallel_for(int64_t n, int64_t min_chunk, void (*fn)(void *ctx, int64_t lo, int64_t hi),
                     void *ctx);

int lc_parallel_threads(void);

#endif
