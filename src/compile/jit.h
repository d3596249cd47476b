/* Native code for fused elementwise regions (jit.c). */
#ifndef LC_JIT_H
#define LC_JIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compile/compile.h"

/* Runs a region over n elements: out[o] contiguous outputs, in[k] inputs
 * with element strides is[k] (scalar inputs: read once). */
typedef void (*lc_jit_fn)(long n, void *const *out, const void *const *in, const long *is);

/* The native kernel of elementwise region h, whose inputs marked in
 * `scalars` (bit k: input k) have one element; NULL when the region is not
 * eligible (float32 regions of the arithmetic and math primitives only) or
 * no kernel could be built (the caller interprets it). Thread-safe. */
lc_jit_fn lc_jit_get(const struct lc_fused_hdr *h, unsigned scalars);

/* Native kernels loaded by this process (for tests). */
long lc_jit_kernels(void);

/* The directory of built kernels (CPU objects here, GPU cubins in
 * gpu/cuda/nvrtc.c) into buf, created if missing: LACE_JIT_CACHE, else
 * $XDG_CACHE_HOME/lace, ~/.cache/lace or /tmp/lace-jit-<uid>. False when
 * it cannot be had, or is not a directory of this user's that only this
 * user can write to (code is loaded from it). */
bool lc_jit_cache_dir(char *buf, size_t len);

/* Smallest region (elements) worth a native kernel; -1 when disabled. */
int64_t lc_jit_min_size(void);

#endif
