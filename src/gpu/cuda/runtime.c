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
#include <string.h>

#include "core/error.h"
#include "gpu/cuda/capture.h"
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

/* This thread's capture (gpu/cuda/capture.h); stream NULL: none. */
static _Thread_local struct {
  int dev;
  cudaStream_t stream;
  bool broken;
  void **allocs;
  size_t nalloc, cap;
  void **freed; /* blocks freed meanwhile: held back, the graph may use them */
  size_t *freed_bytes, nfreed, capfreed;
  struct lc_cuda_known *known;
  size_t nknown, capknown;
} capture;

void lc_cuda_capture_note_launch(void *func, const unsigned *grid, const unsigned *block,
                                 unsigned shmem, void *const *args, const size_t *sizes,
                                 int nargs) {
  if (!capture.stream || nargs > 4) return;
  enum cudaStreamCaptureStatus st;
  const cudaGraphNode_t *deps = NULL;
  size_t nd = 0, total = 0;
  if (cudaStreamGetCaptureInfo(capture.stream, &st, NULL, NULL, &deps, NULL, &nd) != cudaSuccess ||
      nd != 1) {
    (void)cudaGetLastError();
    return;
  }
  if (capture.nknown == capture.capknown) {
    size_t cap = capture.capknown ? 2 * capture.capknown : 64;
    struct lc_cuda_known *a = realloc(capture.known, cap * sizeof *a);
    if (!a) return;
    capture.known = a;
    capture.capknown = cap;
  }
  for (int k = 0; k < nargs; k++) total += (sizes[k] + 7) / 8 * 8;
  struct lc_cuda_known *kn = &capture.known[capture.nknown];
  kn->blob = malloc(total ? total : 1);
  if (!kn->blob) return;
  kn->node = deps[0];
  kn->func = func;
  memcpy(kn->grid, grid, sizeof kn->grid);
  memcpy(kn->block, block, sizeof kn->block);
  kn->shmem = shmem;
  kn->nargs = nargs;
  total = 0;
  for (int k = 0; k < nargs; k++) {
    memcpy(kn->blob + total, args[k], sizes[k]);
    kn->size[k] = sizes[k];
    total += (sizes[k] + 7) / 8 * 8;
  }
  capture.nknown++;
}

size_t lc_cuda_capture_take_known(struct lc_cuda_known **known) {
  size_t n = capture.nknown;
  *known = capture.known;
  capture.known = NULL;
  capture.nknown = capture.capknown = 0;
  return n;
}

bool lc_cuda_capturing(void) { return capture.stream != NULL; }

void lc_cuda_capture_begin(int dev, void *stream) {
  capture.dev = dev;
  capture.stream = stream;
  capture.broken = false;
  capture.nalloc = 0;
}

void lc_cuda_capture_end(void) {
  capture.stream = NULL;
  free(capture.allocs);
  capture.allocs = NULL;
  capture.nalloc = capture.cap = 0;
  for (size_t i = 0; i < capture.nfreed; i++) /* not taken: they go back now */
    lc_gpu_free(capture.freed[i], capture.freed_bytes[i], capture.dev);
  free(capture.freed);
  free(capture.freed_bytes);
  for (size_t i = 0; i < capture.nknown; i++) free(capture.known[i].blob);
  free(capture.known);
  capture.known = NULL;
  capture.nknown = capture.capknown = 0;
  capture.freed = NULL;
  capture.freed_bytes = NULL;
  capture.nfreed = capture.capfreed = 0;
}

size_t lc_cuda_capture_take_freed(void ***ptrs, size_t **bytes) {
  size_t n = capture.nfreed;
  *ptrs = capture.freed;
  *bytes = capture.freed_bytes;
  capture.freed = NULL;
  capture.freed_bytes = NULL;
  capture.nfreed = capture.capfreed = 0;
  return n;
}

/* Holds back a block freed while capturing; false when it cannot (the
 * capture is then broken and the block freed as usual). */
static bool capture_hold(void *p, size_t nbytes, int dev) {
  if (!capture.stream || dev != capture.dev) return false;
  if (capture.nfreed == capture.capfreed) {
    size_t cap = capture.capfreed ? 2 * capture.capfreed : 64;
    void **a = realloc(capture.freed, cap * sizeof *a);
    if (a) capture.freed = a;
    size_t *b = a ? realloc(capture.freed_bytes, cap * sizeof *b) : NULL;
    if (b) capture.freed_bytes = b;
    if (!a || !b) {
      capture.broken = true;
      return false;
    }
    capture.capfreed = cap;
  }
  capture.freed[capture.nfreed] = p;
  capture.freed_bytes[capture.nfreed++] = nbytes;
  return true;
}

bool lc_cuda_capture_broken(void) { return capture.broken; }

void *const *lc_cuda_capture_allocs(size_t *n) {
  *n = capture.nalloc;
  return capture.allocs;
}

static void capture_record(void *p, int dev) {
  if (!capture.stream || dev != capture.dev) return;
  if (capture.nalloc == capture.cap) {
    size_t cap = capture.cap ? 2 * capture.cap : 256;
    void **a = realloc(capture.allocs, cap * sizeof *a);
    if (!a) {
      capture.broken = true;
      return;
    }
    capture.allocs = a;
    capture.cap = cap;
  }
  capture.allocs[capture.nalloc++] = p;
}

/* A copy or wait that a graph cannot replay, attempted while capturing. */
static bool capture_refuses(int dev) {
  if (!capture.stream || dev != capture.dev) return false;
  capture.broken = true;
  return true;
}

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
    capture_record(p, dev);
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
  capture_record(p, dev);
  return p;
}

void lc_gpu_free(void *p, size_t nbytes, int dev) {
  if (!p || capture_hold(p, nbytes, dev)) return;
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

void lc_cuda_arena_account(size_t nbytes, int delta) {
  size_t bytes;
  if (size_class(nbytes, &bytes) < 0) bytes = nbytes;
  pthread_mutex_lock(&lock);
  if (delta > 0) {
    active -= bytes;
    cached += bytes;
  } else {
    active += bytes;
    cached -= bytes;
  }
  pthread_mutex_unlock(&lock);
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
  if (capture_refuses(dev)) return lc_error("a copy to the GPU cannot be part of a CUDA graph");
  if (use(dev)) return 1;
  if (!nbytes) return 0;
  return cuda_check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, streams[dev]),
                    "copy to the GPU");
}

int lc_gpu_download(void *dst, const void *src, size_t nbytes, int dev) {
  if (capture_refuses(dev)) return lc_error("a copy from the GPU cannot be part of a CUDA graph");
  if (use(dev)) return 1;
  if (nbytes && cuda_check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, streams[dev]),
                           "copy from the GPU"))
    return 1;
  return cuda_check(cudaStreamSynchronize(streams[dev]), "synchronize");
}

int lc_gpu_sync(int dev) {
  if (capture_refuses(dev)) return lc_error("waiting for the GPU cannot be part of a CUDA graph");
  if (use(dev)) return 1;
  return cuda_check(cudaStreamSynchronize(streams[dev]), "synchronize");
}

int lc_gpu_sync_all(void) {
  int rc = 0;
  for (int d = 0; d < lc_gpu_count(); d++) rc |= lc_gpu_sync(d);
  return rc;
}

void *lc_gpu_stream(int dev) {
  if (capture.stream && dev == capture.dev) return capture.stream;
  return dev >= 0 && dev < lc_gpu_count() ? streams[dev] : NULL;
}
#endif
