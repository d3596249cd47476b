/* The plan cache (see fft_plan.h): at most CACHE_SLOTS plans, the least
 * recently used one dropped to make room. All making and freeing of
 * backend plans happens under the cache lock (FFTW's planner must not run
 * concurrently). */
#include "fft/fft_plan.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/error.h"

#define CACHE_SLOTS 64

static struct {
  pthread_mutex_t lock;
  struct lc_fft_plan *slot[CACHE_SLOTS];
  uint64_t used[CACHE_SLOTS]; /* clock of the last hand-out */
  uint64_t clock;
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Frees p when its last reference goes; the caller holds the lock. */
static void unref_locked(struct lc_fft_plan *p) {
  if (atomic_fetch_sub(&p->refs, 1) != 1) return;
  lc_fft_impl_free(p);
  free(p);
}

static struct lc_fft_plan *plan_make(int n, bool inverse, bool real) {
  struct lc_fft_plan *p = calloc(1, sizeof *p);
  if (!p) {
    lc_error("fft: out of memory (plan of length %d)", n);
    return NULL;
  }
  p->n = n;
  p->inverse = inverse;
  p->real = real;
  atomic_init(&p->refs, 1);
  if (lc_fft_impl_new(p)) {
    free(p);
    return NULL;
  }
  return p;
}

/* The slot to fill: an empty one, else the least recently used. */
static int victim_slot(void) {
  int v = 0;
  for (int i = 0; i < CACHE_SLOTS; i++) {
    if (!cache.slot[i]) return i;
    if (cache.used[i] < cache.used[v]) v = i;
  }
  return v;
}

struct lc_fft_plan *lc_fft_plan_get(int n, bool inverse, bool real) {
  pthread_mutex_lock(&cache.lock);
  struct lc_fft_plan *p = NULL;
  for (int i = 0; i < CACHE_SLOTS && !p; i++) {
    struct lc_fft_plan *q = cache.slot[i];
    if (q && q->n == n && q->inverse == inverse && q->real == real) {
      p = q;
      cache.used[i] = ++cache.clock;
    }
  }
  if (!p && (p = plan_make(n, inverse, real))) {
    int v = victim_slot();
    if (cache.slot[v]) unref_locked(cache.slot[v]);
    cache.slot[v] = p;
    cache.used[v] = ++cache.clock;
  }
  if (p) atomic_fetch_add(&p->refs, 1);
  pthread_mutex_unlock(&cache.lock);
  return p;
}

void lc_fft_plan_put(struct lc_fft_plan *p) {
  if (!p) return;
  pthread_mutex_lock(&cache.lock);
  unref_locked(p);
  pthread_mutex_unlock(&cache.lock);
}
