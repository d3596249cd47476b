/* FNV-1a, 64 bits: the one byte hash of lace's caches and tables (kernel
 * and graph keys, on-disk kernel names, map buckets). Not for hostile
 * input where collisions matter: callers that need equality compare the
 * bytes too. */
#ifndef LC_HASH_H
#define LC_HASH_H

#include <stddef.h>
#include <stdint.h>

/* The starting value: FNV's offset basis with its last digit lost, as the
 * JIT and NVRTC caches have always used it; kept, since their keys name
 * kernel files on disk. */
#define LC_FNV_SEED 1469598103934665603ULL

/* h extended by n bytes at p (start from LC_FNV_SEED). */
static inline uint64_t lc_fnv1a(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}

#endif
