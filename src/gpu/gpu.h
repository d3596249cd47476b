/* The GPU runtime as the rest of lace sees it: devices, memory, copies.
 *
 * Built with CUDA (LACE_CUDA), gpu/cuda/runtime.c implements it; without,
 * gpu/none.c does, and lc_gpu_count() is 0. Every function that returns
 * int gives 0, or 1 after reporting through lc_error.
 *
 * Ordering: work for GPU d is queued on one of its LC_GPU_SLOTS CUDA
 * streams ("slots"): slot 0 is the device's default stream (mlx stream
 * index 0), the streams of mlx_stream_new_device share slots 1.. (index i
 * on slot lc_gpu_slot_of(i)). lc_gpu_stream(d) is the calling thread's
 * current slot of d (lc_gpu_set_slot; slot 0 unless an evaluation of a
 * node of another stream is under way). Work on one slot is ordered; a
 * node reading a buffer another slot wrote first orders its slot after
 * that one (lc_gpu_after: an event). While only slot 0 has been used on a
 * device, a freed block is handed out again for later queued work without
 * an event; once another slot has (lc_gpu_multi_stream, which then stays
 * true), every freed block carries an event of each slot used, which the
 * next user's stream waits for. The host waits only in lc_gpu_sync (every
 * slot), lc_gpu_sync_slot and copies back to the host. */
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
 * after queued work may be handed out again for later queued work). A new
 * block that would take the device's active memory past the memory limit
 * (lc_alloc_memory_limit, as on the host) is refused, reported. */
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
void *lc_gpu_stream(int dev); /* the calling thread's current cudaStream_t of dev */

#define LC_GPU_SLOTS 8
/* The slot of mlx stream index i (0 for 0; others round robin on 1..). */
int lc_gpu_slot_of(int index);
/* Makes slot the calling thread's current slot of dev; returns the slot
 * that was current (to restore after). Slots other than 0 are made on
 * first use (0 when that fails, after reporting it: the work is then
 * ordered on slot 0, correct but serial). */
int lc_gpu_set_slot(int dev, int slot);
/* The calling thread's current slot of dev. */
int lc_gpu_current_slot(int dev);
/* Orders the current slot of dev after the work queued so far on slot
 * `from` (an event: no host wait). */
int lc_gpu_after(int dev, int from);
/* Whether a slot other than 0 has been used on dev (stays true). */
bool lc_gpu_multi_stream(int dev);
/* Waits for the work queued on one slot of dev. */
int lc_gpu_sync_slot(int dev, int slot);

/* Arrival counters for kernels that split work over blocks and let the
 * last block of each piece finish it (gpu/cuda/gemv.cu): *n zeroed uint32
 * in device memory, one array per device and slot (made on first use,
 * kept for the process, not counted as active memory). Only kernels
 * queued on that slot use it, so they run one after another and each
 * leaves every counter zero. While capturing, the array of slot 0 (where
 * graphs are replayed), or NULL when it does not exist yet; NULL (*n 0)
 * also without a GPU or when it cannot be made: the caller then finishes
 * its split without counters. */
#define LC_GPU_TILE_COUNTERS 65536
unsigned *lc_gpu_tile_counters(int dev, size_t *n);

/* Matrix products that lace's GEMV kernels (gpu/cuda/gemv.cu) have queued
 * since the process started, so that tests can tell them from cuBLAS's.
 * An evaluation replayed from a CUDA graph runs no evaluator and is not
 * counted. 0 without CUDA. */
unsigned long lc_gpu_gemv_launches(void);
/* Whether complex64 elementwise ops run as GPU kernels (gpu/cuda/
 * ew_complex.cu; the default) rather than on the CPU on host copies
 * (LACE_CUDA_COMPLEX=0). Read once. */
bool lc_gpu_complex_kernels(void);

#endif
