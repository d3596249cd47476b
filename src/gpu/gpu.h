/* The GPU runtime as the rest of lace sees it: devices, memory, copies.
 *
 * Built with CUDA (LACE_CUDA), gpu/cuda/runtime.c implements it; without,
 * gpu/none.c does, and lc_gpu_count() is 0. Every function that returns
 * int gives 0, or 1 after reporting through lc_error.
 *
 * Ordering: all work for GPU d is queued on that device's one CUDA stream
 * (lc_gpu_stream), so kernels, copies and the reuse of freed memory are
 * ordered among themselves; the host waits only in lc_gpu_sync and in
 * copies back to the host. */
#ifndef LC_GPU_H
#define LC_GPU_H

#include <stdbool.h>
#include <stddef.h>

/* Whether lace was built with the CUDA backend. */
bool lc_gpu_built(void);
/* GPUs usable now (0 without CUDA, driver or device). Thread-safe; the
 * first call initialises the runtime. */
int lc_gpu_count(void);
/* Why lc_gpu_count() is 0, for messages ("built without CUDA", ...). */
const char *lc_gpu_unavailable_reason(void);

/* Device memory from the caching allocator (stream-ordered: a block freed
 * after queued work may be handed out again for later queued work). */
void *lc_gpu_malloc(size_t nbytes, int dev); /* NULL (reported) on failure */
void lc_gpu_free(void *p, size_t nbytes, int dev);
size_t lc_gpu_active(void);
size_t lc_gpu_peak(void);
void lc_gpu_reset_peak(void);
size_t lc_gpu_cached(void);
void lc_gpu_clear_cache(void); /* waits for every device, then frees the cache */

int lc_gpu_upload(void *dst, const void *src, size_t nbytes, int dev);   /* host -> GPU, queued */
int lc_gpu_download(void *dst, const void *src, size_t nbytes, int dev); /* GPU -> host, waits */
int lc_gpu_sync(int dev);     /* waits for all work queued on dev */
int lc_gpu_sync_all(void);
void *lc_gpu_stream(int dev); /* the device's cudaStream_t */

/* Matrix products that lace's GEMV kernels (gpu/cuda/gemv.cu) have queued
 * since the process started, so that tests can tell them from cuBLAS's.
 * An evaluation replayed from a CUDA graph runs no evaluator and is not
 * counted. 0 without CUDA. */
unsigned long lc_gpu_gemv_launches(void);

#endif
