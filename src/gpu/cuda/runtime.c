/* The CUDA runtime behind gpu/gpu.h: device discovery, the non-blocking
 * streams of each device (slot 0 made at start, the others on first use),
 * a caching device allocator, host<->device copies.
 *
 * Allocator: blocks are rounded up to size classes (256 B granules below
 * 1 MiB, then four classes per power of two, as the host allocator) and
 * freed blocks wait in per-device, per-class lists. While a device has
 * used only slot 0, its work is on one stream, so a block freed after
 * queued kernels can be handed to later queued work without an event.
 * A slot made later first waits for everything queued on slot 0 (an
 * event), so blocks freed before it are safe for it too; from then on a
 * freed block carries one event per slot made, recorded at the free, and
 * whoever takes it makes its stream wait for them (gpu.h). A failing
 * cudaMalloc empties the cache (after a device sync) and tries once more.
 * Counters, lists, slot streams and the event pool are guarded by one lock;
 * `made` is also read without it (set after the stream it announces). */
#ifdef LACE_CUDA
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "gpu/cuda/capture.h"
#include "gpu/gpu.h"

#define MAX_GPUS 16
#define NCLASSES 96

struct cached_block {
  struct cached_block *next;
  void *ptr;
  int nev;
  cudaEvent_t ev[LC_GPU_SLOTS]; /* recorded at the free, one per slot made then */
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int ngpus;
static char unavailable[160] = "not initialised";
static cudaStream_t streams[MAX_GPUS];
/* slots[d][0] == streams[d]; slot s > 0 exists once bit s of made[d] is set */
static cudaStream_t slots[MAX_GPUS][LC_GPU_SLOTS];
static atomic_uint made[MAX_GPUS];
/* spare events (no timing) of each device, for orderings between slots */
static cudaEvent_t *spare_ev[MAX_GPUS];
static size_t nspare[MAX_GPUS], capspare[MAX_GPUS];
/* The calling thread's current slot (of GPU cur_dev): lc_gpu_set_slot. */
static _Thread_local int cur_dev = -1, cur_slot;

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
    atomic_store(&made[d], 1u);
    if (cudaSetDevice(d) != cudaSuccess ||
        cudaStreamCreateWithFlags(&streams[d], cudaStreamNonBlocking) != cudaSuccess) {
      snprintf(unavailable, sizeof unavailable, "CUDA device %d: %s", d,
               cudaGetErrorString(cudaGetLastError()));
      n = d;
      break;
    }
  }
  for (int d = 0; d < n; d++) slots[d][0] = streams[d];
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

/* An event of dev from the pool (made when it is empty), or NULL after
 * reporting. The caller has made dev current; `locked`: holds the lock. */
static cudaEvent_t event_get(int dev, bool locked) {
  cudaEvent_t e = NULL;
  if (!locked) pthread_mutex_lock(&lock);
  if (nspare[dev]) e = spare_ev[dev][--nspare[dev]];
  if (!locked) pthread_mutex_unlock(&lock);
  if (!e && cuda_check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event"))
    return NULL;
  return e;
}

/* Back to the pool: a stream that waits for an event keeps the record it
 * saw, so the event may be recorded again at once. */
static void event_put(int dev, cudaEvent_t e, bool locked) {
  if (!locked) pthread_mutex_lock(&lock);
  if (nspare[dev] == capspare[dev]) {
    size_t cap = capspare[dev] ? 2 * capspare[dev] : 16;
    cudaEvent_t *a = realloc(spare_ev[dev], cap * sizeof *a);
    if (a) {
      spare_ev[dev] = a;
      capspare[dev] = cap;
    }
  }
  if (nspare[dev] < capspare[dev])
    spare_ev[dev][nspare[dev]++] = e;
  else
    (void)cudaEventDestroy(e);
  if (!locked) pthread_mutex_unlock(&lock);
}

/* The stream of a slot of dev that exists (slot 0 otherwise). */
static cudaStream_t slot_stream(int dev, int slot) {
  return slot > 0 && slot < LC_GPU_SLOTS && (atomic_load(&made[dev]) & (1u << slot))
             ? slots[dev][slot]
             : streams[dev];
}

/* Makes slot s of dev, ordered after everything queued on slot 0 so far
 * (see the allocator's comment). 0, or 1 after reporting. */
static int make_slot(int dev, int s) {
  if (use(dev)) return 1;
  pthread_mutex_lock(&lock);
  int rc = 0;
  if (!(atomic_load(&made[dev]) & (1u << s))) {
    cudaStream_t st;
    cudaEvent_t e = event_get(dev, true);
    rc = !e || cuda_check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream");
    if (!rc) {
      rc = cuda_check(cudaEventRecord(e, streams[dev]), "event record") ||
           cuda_check(cudaStreamWaitEvent(st, e, 0), "stream wait");
      if (rc) {
        (void)cudaStreamDestroy(st);
      } else {
        slots[dev][s] = st;
        atomic_fetch_or(&made[dev], 1u << s);
      }
    }
    if (e) event_put(dev, e, true);
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

int lc_gpu_slot_of(int index) { return index <= 0 ? 0 : 1 + (index - 1) % (LC_GPU_SLOTS - 1); }

int lc_gpu_set_slot(int dev, int slot) {
  int prev = dev == cur_dev ? cur_slot : 0;
  if (slot < 0 || slot >= LC_GPU_SLOTS || dev < 0 || dev >= lc_gpu_count()) slot = 0;
  if (slot && !(atomic_load(&made[dev]) & (1u << slot)) && make_slot(dev, slot)) slot = 0;
  cur_dev = dev;
  cur_slot = slot;
  return prev;
}

int lc_gpu_current_slot(int dev) { return dev == cur_dev ? cur_slot : 0; }

bool lc_gpu_multi_stream(int dev) {
  return dev >= 0 && dev < lc_gpu_count() && (atomic_load(&made[dev]) & ~1u);
}

int lc_gpu_after(int dev, int from) {
  if (dev < 0 || dev >= lc_gpu_count()) return 0;
  cudaStream_t src = slot_stream(dev, from), dst = (cudaStream_t)lc_gpu_stream(dev);
  if (src == dst) return 0;
  if (use(dev)) return 1;
  cudaEvent_t e = event_get(dev, false);
  if (!e) return 1;
  int rc = cuda_check(cudaEventRecord(e, src), "event record") ||
           cuda_check(cudaStreamWaitEvent(dst, e, 0), "stream wait");
  event_put(dev, e, false);
  return rc;
}

/* Waits for every slot of dev (the caller has made dev current). */
static int sync_slots(int dev) {
  unsigned m = atomic_load(&made[dev]);
  int rc = 0;
  for (int s = 0; s < LC_GPU_SLOTS; s++)
    if (m & (1u << s)) rc |= cuda_check(cudaStreamSynchronize(slots[dev][s]), "synchronize");
  return rc;
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
      for (int k = 0; k < b->nev; k++) event_put(dev, b->ev[k], true);
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
    /* its users on every slot come before the work it is taken for */
    cudaStream_t st = (cudaStream_t)lc_gpu_stream(dev);
    for (int k = 0; k < b->nev; k++) {
      if (cudaStreamWaitEvent(st, b->ev[k], 0) != cudaSuccess) {
        (void)cudaGetLastError();
        (void)sync_slots(dev); /* the same order, the slow way */
      }
      event_put(dev, b->ev[k], false);
    }
    free(b);
    capture_record(p, dev);
    return p;
  }
  /* mlx_set_memory_limit binds device memory too (new blocks, as on the
   * host). Read only here, past the cache: the host allocator's lock is
   * taken inside this one, never the other way round. */
  size_t limit = lc_alloc_memory_limit();
  if (bytes > limit || active > limit - bytes) {
    pthread_mutex_unlock(&lock);
    lc_error("GPU %d: allocation of %zu bytes exceeds the memory limit (%zu bytes)", dev, nbytes,
             limit);
    return NULL;
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
  if (b) {
    b->nev = 0;
    unsigned m = atomic_load(&made[dev]);
    if ((m & ~1u) && use(dev) == 0) /* several slots: an event on each */
      for (int s = 0; s < LC_GPU_SLOTS && b; s++) {
        if (!(m & (1u << s))) continue;
        cudaEvent_t e = event_get(dev, false);
        if (e && cudaEventRecord(e, slots[dev][s]) == cudaSuccess) {
          b->ev[b->nev++] = e;
          continue;
        }
        (void)cudaGetLastError();
        if (e) event_put(dev, e, false);
        for (int k = 0; k < b->nev; k++) event_put(dev, b->ev[k], false);
        free(b);
        b = NULL; /* freed as uncached below, after waiting */
      }
  }
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
    (void)sync_slots(dev);
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
  return cuda_check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice,
                                    (cudaStream_t)lc_gpu_stream(dev)),
                    "copy to the GPU");
}

int lc_gpu_download(void *dst, const void *src, size_t nbytes, int dev) {
  if (capture_refuses(dev)) return lc_error("a copy from the GPU cannot be part of a CUDA graph");
  if (use(dev)) return 1;
  /* the writer may be on any slot */
  if ((atomic_load(&made[dev]) & ~1u) && sync_slots(dev)) return 1;
  if (nbytes && cuda_check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, streams[dev]),
                           "copy from the GPU"))
    return 1;
  return cuda_check(cudaStreamSynchronize(streams[dev]), "synchronize");
}

int lc_gpu_sync(int dev) {
  if (capture_refuses(dev)) return lc_error("waiting for the GPU cannot be part of a CUDA graph");
  if (use(dev)) return 1;
  return sync_slots(dev);
}

int lc_gpu_sync_slot(int dev, int slot) {
  if (capture_refuses(dev)) return lc_error("waiting for the GPU cannot be part of a CUDA graph");
  if (use(dev)) return 1;
  return cuda_check(cudaStreamSynchronize(slot_stream(dev, slot)), "synchronize");
}

int lc_gpu_sync_all(void) {
  int rc = 0;
  for (int d = 0; d < lc_gpu_count(); d++) rc |= lc_gpu_sync(d);
  return rc;
}

/* Made on first use, under the lock; kept for the process. */
static unsigned *tile_counters[MAX_GPUS][LC_GPU_SLOTS];

unsigned *lc_gpu_tile_counters(int dev, size_t *n) {
  *n = 0;
  if (dev < 0 || dev >= lc_gpu_count()) return NULL;
  bool capturing = capture.stream && dev == capture.dev;
  /* a captured graph is replayed on slot 0 (graphs only while a device has
   * used no other slot) */
  int slot = capturing ? 0 : lc_gpu_current_slot(dev);
  pthread_mutex_lock(&lock);
  unsigned *c = tile_counters[dev][slot];
  if (!c && !capturing && cudaSetDevice(dev) == cudaSuccess &&
      cudaMalloc((void **)&c, LC_GPU_TILE_COUNTERS * sizeof *c) == cudaSuccess) {
    /* zeroed in the slot's order, before any kernel queued there after */
    if (cudaMemsetAsync(c, 0, LC_GPU_TILE_COUNTERS * sizeof *c, slot_stream(dev, slot)) ==
        cudaSuccess) {
      tile_counters[dev][slot] = c;
    } else {
      (void)cudaFree(c);
      c = NULL;
    }
  }
  pthread_mutex_unlock(&lock);
  if (!c) (void)cudaGetLastError(); /* declined: the caller adds its split with a second kernel */
  *n = c ? LC_GPU_TILE_COUNTERS : 0;
  return c;
}

void *lc_gpu_stream(int dev) {
  if (capture.stream && dev == capture.dev) return capture.stream;
  if (dev < 0 || dev >= lc_gpu_count()) return NULL;
  return cur_slot && dev == cur_dev ? slots[dev][cur_slot] : streams[dev];
}
#endif
