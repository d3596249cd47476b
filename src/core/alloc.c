#include "core/alloc.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"

#define NCLASSES 84 /* classes up to ~4 GiB are cached */
#define ALIGN 64

struct free_block {
  struct free_block *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct free_block *cache[NCLASSES];
static size_t active, peak, cached;
static size_t cache_limit = SIZE_MAX;
static size_t memory_limit; /* 0: unset, computed on first use */
static long fail_countdown;

/* Size classes: up to 4 KiB powers of two; above, four classes per power
 * of two, so at most 25% is wasted. Returns the class and its byte size. */
static int size_class(size_t n, size_t *cls_bytes) {
  if (n <= ALIGN) {
    *cls_bytes = ALIGN;
    return 0;
  }
  int lg = 63 - __builtin_clzll((unsigned long long)(n - 1)); /* 2^lg < n <= 2^(lg+1) */
  if (n <= 4096) {
    *cls_bytes = (size_t)1 << (lg + 1);
    return lg + 1 - 6;
  }
  size_t quarter = (size_t)1 << (lg - 2);
  size_t k = (n - ((size_t)1 << lg) + quarter - 1) / quarter; /* 1..4 */
  *cls_bytes = ((size_t)1 << lg) + k * quarter;
  int c = 7 + (lg - 12) * 4 + (int)k - 1;
  return c < NCLASSES ? c : -1;
}

static size_t default_memory_limit(void) {
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || psz <= 0) return SIZE_MAX;
  return (size_t)pages * (size_t)psz / 10 * 15 / 10; /* 1.5x RAM, as MLX */
}

void *lc_alloc(size_t nbytes) {
  if (nbytes > SIZE_MAX / 4) { /* no size class, and rounding up would wrap */
    lc_error("allocation of %zu bytes is too large", nbytes);
    return NULL;
  }
  size_t bytes;
  int c = size_class(nbytes, &bytes);
  if (c < 0) bytes = (nbytes + ALIGN - 1) / ALIGN * ALIGN;
  void *p = NULL;
  pthread_mutex_lock(&lock);
  if (fail_countdown > 0 && --fail_countdown == 0) {
    pthread_mutex_unlock(&lock);
    lc_error("allocation of %zu bytes failed (injected)", nbytes);
    return NULL;
  }
  if (!memory_limit) memory_limit = default_memory_limit();
  if (c >= 0 && cache[c]) {
    p = cache[c];
    cache[c] = cache[c]->next;
    cached -= bytes;
  }
  if (!p && active + bytes > memory_limit) {
    pthread_mutex_unlock(&lock);
    lc_error("allocation of %zu bytes exceeds the memory limit (%zu bytes)", nbytes,
             memory_limit);
    return NULL;
  }
  active += bytes;
  if (active > peak) peak = active;
  pthread_mutex_unlock(&lock);
  if (!p) {
    p = aligned_alloc(ALIGN, bytes);
    if (!p) {
      pthread_mutex_lock(&lock);
      active -= bytes;
      pthread_mutex_unlock(&lock);
      lc_error("out of memory allocating %zu bytes", nbytes);
    }
  }
  return p;
}

void lc_free(void *p, size_t nbytes) {
  if (!p) return;
  size_t bytes;
  int c = size_class(nbytes, &bytes);
  if (c < 0) bytes = (nbytes + ALIGN - 1) / ALIGN * ALIGN;
  pthread_mutex_lock(&lock);
  active -= bytes;
  if (c >= 0 && cached + bytes <= cache_limit) {
    struct free_block *b = p;
    b->next = cache[c];
    cache[c] = b;
    cached += bytes;
    p = NULL;
  }
  pthread_mutex_unlock(&lock);
  free(p);
}

static void drain_cache_locked(size_t keep) {
  for (int c = 0; c < NCLASSES && cached > keep; c++) {
    while (cache[c] && cached > keep) {
      struct free_block *b = cache[c];
      cache[c] = b->next;
      size_t bytes; /* the class size, recovered from its index */
      if (c <= 6)
        bytes = (size_t)ALIGN << c;
      else {
        int lg = 12 + (c - 7) / 4, k = (c - 7) % 4 + 1;
        bytes = ((size_t)1 << lg) + (size_t)k * ((size_t)1 << (lg - 2));
      }
      cached -= bytes;
      free(b);
    }
  }
}

size_t lc_alloc_active(void) {
  pthread_mutex_lock(&lock);
  size_t v = active;
  pthread_mutex_unlock(&lock);
  return v;
}
size_t lc_alloc_peak(void) {
  pthread_mutex_lock(&lock);
  size_t v = peak;
  pthread_mutex_unlock(&lock);
  return v;
}
void lc_alloc_reset_peak(void) {
  pthread_mutex_lock(&lock);
  peak = active;
  pthread_mutex_unlock(&lock);
}
size_t lc_alloc_cached(void) {
  pthread_mutex_lock(&lock);
  size_t v = cached;
  pthread_mutex_unlock(&lock);
  return v;
}
void lc_alloc_clear_cache(void) {
  pthread_mutex_lock(&lock);
  drain_cache_locked(0);
  pthread_mutex_unlock(&lock);
}
size_t lc_alloc_set_cache_limit(size_t limit) {
  pthread_mutex_lock(&lock);
  size_t old = cache_limit;
  cache_limit = limit;
  drain_cache_locked(limit);
  pthread_mutex_unlock(&lock);
  return old;
}
size_t lc_alloc_set_memory_limit(size_t limit) {
  pthread_mutex_lock(&lock);
  if (!memory_limit) memory_limit = default_memory_limit();
  size_t old = memory_limit;
  memory_limit = limit ? limit : default_memory_limit();
  pthread_mutex_unlock(&lock);
  return old;
}
size_t lc_alloc_memory_limit(void) {
  pthread_mutex_lock(&lock);
  if (!memory_limit) memory_limit = default_memory_limit();
  size_t v = memory_limit;
  pthread_mutex_unlock(&lock);
  return v;
}
void lc_alloc_fail_after(long n) {
  pthread_mutex_lock(&lock);
  fail_countdown = n;
  pthread_mutex_unlock(&lock);
}
