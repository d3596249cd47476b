/* The CUDA runtime behind gpu/gpu.h: device discovery, one non-blocking
 * stream per device, a caching device allocator, host<->device copies.
 *
 * Allocator: blocks are rounded up to size classes (256 B granules below
 * 1 MiB, then four classes per power of two, as the host allocator) and
 * freed blocks wait in per-device, per-class lists. All of a device's work
 * is on its one stream, so a block freed after queued kernels can be
 * handed to later queued work without an event. A failing cudaMalloc
 * empties the cache (after a device sync) and tries once more.
 * Counters are exact and, with the lists, guarded by one lock. */
#ifdef LACE_CUDA
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "gpu/gpu.h"

#define MAX_GPUS 16
#define NCLASSES 96

struct cached_block {
  struct cached_block *next;
  void *ptr;
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int ngpus;
static char unavailable[160] = "not initialised";
static cudaStream_t streams[MAX_GPUS];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct cached_block *cache[MAX_GPUS][NCLASSES];
static size_t active, peak, cached;

static void init(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n <= 0) {
    snprintf(unavailable, sizeof unavailable, "no CUDA device (%s)",
             e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    (void)cudaGetLastError();
    return;
  }
  if (n > MAX_GPUS) n = MAX_GPUS;
  for (int d = 0; d < n; d++) {
    if (cudaSetDevice(d) != cudaSuccess ||
        cudaStreamCreateWithFlags(&streams[d], cudaStreamNonBlocking) != cudaSuccess) {
      snprintf(unavailable, sizeof unavailable, "CUDA device %d: %s", d,
               cudaGetErrorString(cudaGetLastError()));
      n = d;
      break;
    }
  }
  if (n > 0) (void)cudaSetDevice(0);
  ngpus = n;
}

bool lc_gpu_built(void) { return true; }

int lc_gpu_count(void) {
  pthread_once(&init_once, init);
  return ngpus;
}

const char *lc_gpu_unavailable_reason(void) {
  pthread_once(&init_once, init);
  return ngpus ? "" : unavailable;
}

static int cuda_check(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return 0;
  (void)cudaGetLastError();
  return lc_error("CUDA %s: %s", what, cudaGetErrorString(e));
}

/* The calling thread's current device is dev (CUDA's is per thread). */
static int use(int dev) {
  if (dev < 0 || dev >= lc_gpu_count()) return lc_error("no GPU %d (%d present)", dev, ngpus);
  return cuda_check(cudaSetDevice(dev), "set device");
}

static int size_class(size_t n, size_t *bytes) {
  if (n <= ((size_t)1 << 20)) {
    size_t g = (n + 255) / 256;
    if (g == 0) g = 1;
    /* classes 0..31: 256 B granules up to 8 KiB, then powers of two */
    if (g <= 32) {
      *bytes = g * 256;
      return (int)g - 1;
    }
    int lg = 64 - __builtin_clzll((unsigned long long)(n - 1)); /* 2^(lg-1) < n <= 2^lg */
    *bytes = (size_t)1 << lg;
    return 32 + (lg - 14); /* lg in 14..20 -> 32..38 */
  }
  int lg = 63 - __builtin_clzll((unsigned long long)(n - 1));
  size_t quarter = (size_t)1 << (lg - 2);
  size_t k = (n - ((size_t)1 << lg) + quarter - 1) / quarter; /* 1..4 */
  *bytes = ((size_t)1 << lg) + k * quarter;
  int c = 39 + (lg - 20) * 4 + (int)k - 1;
  return c < NCLASSES ? c : -1; /* -1: not cached */
}

/* Frees every cached block of dev (the caller zeroes `cached`). */
static void drain_locked(int dev) {
  for (int c = 0; c < NCLASSES; c++)
    while (cache[dev][c]) {
      struct cached_block *b = cache[dev][c];
      cache[dev][c] = b->next;
      (void)cudaFree(b->ptr);
      free(b);
    }
}

void *lc_gpu_malloc(size_t nbytes, int dev) {
  if (use(dev)) return NULL;
  size_t bytes;
  int c = size_class(nbytes, &bytes);
  if (c < 0) bytes = nbytes;
  pthread_mutex_lock(&lock);
  if (c >= 0 && cache[dev][c]) {
    struct cached_block *b = cache[dev][c];
    cache[dev][c] = b->next;
    cached -= bytes;
    active += bytes;
    if (active > peak) peak = active;
    pthread_mutex_unlock(&lock);
    void *p = b->ptr;
    free(b);
    return p;
  }
  pthread_mutex_unlock(&lock);
  void *p = NULL;
  cudaError_t e = cudaMalloc(&p, bytes);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    lc_gpu_clear_cache();
    (void)use(dev);
    e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      lc_error("GPU %d: cannot allocate %zu bytes (%s)", dev, nbytes, cudaGetErrorString(e));
      return NULL;
    }
  }
  pthread_mutex_lock(&lock);
  active += bytes;
  if (active > peak) peak = active;
  pthread_mutex_unlock(&lock);
  return p;
}

void lc_gpu_free(void *p, size_t nbytes, int dev) {
  if (!p) return;
  size_t bytes;
  int c = size_class(nbytes, &bytes);
  if (c < 0) bytes = nbytes;
  struct cached_block *b = c >= 0 ? malloc(sizeof *b) : NULL;
  pthread_mutex_lock(&lock);
  active -= bytes;
  if (b) {
    b->ptr = p;
    b->next = cache[dev][c];
    cache[dev][c] = b;
    cached += bytes;
  }
  pthread_mutex_unlock(&lock);
  if (!b) { /* uncached: wait for queued users first */
    (void)use(dev);
    (void)cudaStreamSynchronize(streams[dev]);
    (void)cudaFree(p);
  }
}

size_t lc_gpu_active(void) {
  pthread_mutex_lock(&lock);
  size_t v = active;
  pthread_mutex_unlock(&lock);
  return v;
}
size_t lc_gpu_peak(void) {
  pthread_mutex_lock(&lock);
  size_t v = peak;
  pthread_mutex_unlock(&lock);
  return v;
}
void lc_gpu_reset_peak(void) {
  pthread_mutex_lock(&lock);
  peak = active;
  pthread_mutex_unlock(&lock);
}
size_t lc_gpu_cached(void) {
  pthread_mutex_lock(&lock);
  size_t v = cached;
  pthread_mutex_unlock(&lock);
  return v;
}

void lc_gpu_clear_cache(void) {
  int n = lc_gpu_count();
  if (!n) return;
  (void)lc_gpu_sync_all();
  pthread_mutex_lock(&lock);
  for (int d = 0; d < n; d++) {
    (void)cudaSetDevice(d);
    drain_locked(d);
  }
  cached = 0;
  pthread_mutex_unlock(&lock);
}

int lc_gpu_upload(void *dst, const void *src, size_t nbytes, int dev) {
  if (use(dev)) return 1;
  if (!nbytes) return 0;
  return cuda_check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, streams[dev]),
                    "copy to the GPU");
}

int lc_gpu_download(void *dst, const void *src, size_t nbytes, int dev) {
  if (use(dev)) return 1;
  if (nbytes && cuda_check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, streams[dev]),
                           "copy from the GPU"))
    return 1;
  return cuda_check(cudaStreamSynchronize(streams[dev]), "synchronize");
}

int lc_gpu_sync(int dev) {
  if (use(dev)) return 1;
  return cuda_check(cudaStreamSynchronize(streams[dev]), "synchronize");
}

int lc_gpu_sync_all(void) {
  int rc = 0;
  for (int d = 0; d < lc_gpu_count(); d++) rc |= lc_gpu_sync(d);
  return rc;
}

void *lc_gpu_stream(int dev) { return dev >= 0 && dev < lc_gpu_count() ? streams[dev] : NULL; }
#endif
