/* Fused regions (compile/compile.h's FUSED blobs) on the GPU: CUDA C++
 * source generated per region and launch plan (fused_src.c), built by
 * NVRTC and cached in memory and on disk (nvrtc.c), launched by
 * eval_fused.c. */
#ifndef LC_GPU_CUDA_FUSED_H
#define LC_GPU_CUDA_FUSED_H

#include <stdbool.h>
#include <stdint.h>

#include "compile/compile.h"
#include "gpu/cuda/fk_args.h"

/* How a region is launched; with the blob, all its source depends on.
 * Plain data, hashed as bytes (zero it before filling). */
struct lc_fk_plan {
  int32_t rows;  /* 0: elementwise kernels lc_fk_ew (and lc_fk_ewv); 1: lc_fk_rows */
  int32_t nd;    /* elementwise: dims of strided inputs; rows: outer dims */
  int32_t idx64; /* elementwise: 64-bit flat indices */
  int32_t vec;   /* elementwise: also emit lc_fk_ewv (every input contiguous or scalar) */
  int32_t V;     /* lc_fk_ewv: elements per thread; rows: elements per pack */
  int32_t U;     /* lc_fk_ewv: packs per thread */
  int32_t G;     /* rows: threads per row (32: a warp; more: the block) */
  int32_t K;     /* rows: packs of V cached per thread (0: none, re-read) */
  uint32_t nocache; /* rows: FULL inputs read by every pass instead (bit k: input k) */
  /* elementwise input layouts: 'c' flat, 's' scalar, 'g' strided, 'r' its
   * first D elements repeated (D in args st[k][0]) */
  char lay[LC_FK_MAX_IN];
};

/* Threads per block of the elementwise kernels; of the row kernel, G when
 * G > 32, else 256 (8 rows per block). */
#define LC_FK_THREADS 256

/* Whether the GPU kernels can compute region h (dtypes and primitives). */
bool lc_fk_supported(const struct lc_fused_hdr *h);
/* Register arrays the row kernel of h keeps per thread when it caches
 * rows (FULL inputs, and FULL values read again by a later pass). */
int lc_fk_row_arrays(const struct lc_fused_hdr *h);
/* The elements per thread of lc_fk_ewv for region h. */
int lc_fk_vector_width(const struct lc_fused_hdr *h);
/* The kernels' source (malloc'ed) for h under plan p; NULL when
 * unsupported or out of memory. */
char *lc_fk_source(const struct lc_fused_hdr *h, const struct lc_fk_plan *p);

/* The kernel named `name` ("lc_fk_ew", "lc_fk_ewv" or "lc_fk_rows") of
 * the module of region h under plan p on GPU dev, building the module on
 * first use (memory cache by region and plan, disk cache by source
 * and architecture); NULL when it cannot be built, which is remembered.
 * Thread-safe. Reports nothing: callers fall back to the CPU. */
void *lc_fk_kernel(const struct lc_fused_hdr *h, const struct lc_fk_plan *p, int dev,
                   const char *name);
/* Modules built or loaded in this process (tests). */
long lc_fk_modules(void);
/* Compiles CUDA C++ source for sm_<arch> into a cubin (malloc'ed, *len);
 * NULL with the compiler's log on stderr when LACE_CUDA_VERBOSE is set.
 * Needs no GPU (tests build kernels on machines without one). */
void *lc_nvrtc_compile(const char *src, int arch, size_t *len);

#endif
