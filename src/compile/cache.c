/* The compile cache: traced programs by function and input signature.
 *
 * Keys: (kind, id) names the function: kind 0 is a compiled closure's
 * private id (its entries are erased when the closure is freed), kind 1 an
 * mlx_detail_compile fun_id (entries stay until erased, cleared or evicted).
 * Within a function an entry matches on the default stream (device and
 * stream index) the call is made on, the inputs' count, dtypes and ranks,
 * the constants vector, and the shapes unless the call is shapeless and the
 * entry's program is shape-polymorphic.
 *
 * Policy: each function keeps its entries most recently used first, at most
 * LC_CACHE_PER_FN (the least recently used one is dropped beyond that); all
 * functions together keep at most LC_CACHE_MAX entries (beyond that the
 * globally least recently used entry is dropped). Dropping an entry never
 * invalidates a replay in flight: entries are refcounted and a caller holds
 * one while it replays.
 *
 * Concurrency: one mutex guards the tables, list links and stamps; entries'
 * programs are immutable once inserted. Each function also has a recursive
 * trace lock (lc_cache_lock_fn) so that threads sharing a compiled closure
 * trace it once, and the closure's payload is never traced concurrently. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "compile/compile.h"
#include "core/error.h"

#define LC_CACHE_PER_FN 64
#define LC_CACHE_MAX 4096
#define NBUCKETS 256

struct fnrec;

struct lc_centry {
  atomic_int refs;
  struct fnrec *fn; /* NULL once removed */
  struct lc_centry *prev, *next;
  uint64_t stamp;
  uint64_t stream;
  int nin;
  mlx_dtype *dtypes;
  int *ndims;
  int *shapes; /* concatenated */
  size_t nconst;
  uint64_t *consts;
  struct lc_cprog *prog;
};

struct fnrec {
  int kind;
  uintptr_t id;
  struct fnrec *next; /* bucket chain */
  bool linked;
  int refs; /* table link + trace-lock holders; guarded by lock */
  struct lc_centry *head, *tail;
  int count;
  pthread_mutex_t trace_lock;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fnrec *buckets[NBUCKETS];
static size_t total;
static uint64_t clock_;

static unsigned bucket_of(int kind, uintptr_t id) {
  uint64_t h = (uint64_t)id * 0x9e3779b97f4a7c15ULL + (uint64_t)kind;
  return (unsigned)(h >> 56) % NBUCKETS;
}

static struct fnrec *lookup(int kind, uintptr_t id) {
  for (struct fnrec *f = buckets[bucket_of(kind, id)]; f; f = f->next)
    if (f->kind == kind && f->id == id) return f;
  return NULL;
}

static struct fnrec *lookup_or_create(int kind, uintptr_t id) {
  struct fnrec *f = lookup(kind, id);
  if (f) return f;
  f = calloc(1, sizeof *f);
  if (!f) return NULL;
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&f->trace_lock, &a);
  pthread_mutexattr_destroy(&a);
  f->kind = kind;
  f->id = id;
  f->linked = true;
  f->refs = 1;
  unsigned b = bucket_of(kind, id);
  f->next = buckets[b];
  buckets[b] = f;
  return f;
}

static void fn_unref(struct fnrec *f) {
  if (--f->refs > 0) return;
  pthread_mutex_destroy(&f->trace_lock);
  free(f);
}

static void entry_free(struct lc_centry *e) {
  lc_cprog_free(e->prog);
  free(e->dtypes);
  free(e->ndims);
  free(e->shapes);
  free(e->consts);
  free(e);
}

void lc_centry_release(struct lc_centry *e) {
  if (e && atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1) entry_free(e);
}

const struct lc_cprog *lc_centry_prog(const struct lc_centry *e) { return e->prog; }

static void unlink_entry(struct lc_centry *e) {
  struct fnrec *f = e->fn;
  if (e->prev)
    e->prev->next = e->next;
  else
    f->head = e->next;
  if (e->next)
    e->next->prev = e->prev;
  else
    f->tail = e->prev;
  e->prev = e->next = NULL;
  f->count--;
  total--;
  e->fn = NULL;
}

static void push_front(struct fnrec *f, struct lc_centry *e) {
  e->fn = f;
  e->prev = NULL;
  e->next = f->head;
  if (f->head) f->head->prev = e;
  f->head = e;
  if (!f->tail) f->tail = e;
  f->count++;
  total++;
}

/* Removes a function from the table (entries are dropped by the caller). */
static void unlink_fn(struct fnrec *f) {
  struct fnrec **pp = &buckets[bucket_of(f->kind, f->id)];
  while (*pp != f) pp = &(*pp)->next;
  *pp = f->next;
  f->linked = false;
  fn_unref(f);
}

/* Collects removed entries to release after the lock is dropped. */
struct dropped {
  struct lc_centry *list;
};

static void drop(struct dropped *d, struct lc_centry *e) {
  unlink_entry(e);
  e->next = d->list;
  d->list = e;
}

static void release_dropped(struct dropped *d) {
  while (d->list) {
    struct lc_centry *e = d->list;
    d->list = e->next;
    lc_centry_release(e);
  }
}

static bool matches(const struct lc_centry *e, const struct lc_ckey *k) {
  if (e->stream != k->stream || e->nin != k->nin || e->nconst != k->nconst) return false;
  if (k->nconst && memcmp(e->consts, k->consts, sizeof(uint64_t) * k->nconst)) return false;
  bool any_shape = k->shapeless && e->prog->poly;
  const int *sh = e->shapes;
  for (int i = 0; i < k->nin; i++) {
    if (e->dtypes[i] != k->dtypes[i] || e->ndims[i] != k->ndims[i]) return false;
    if (!any_shape && k->ndims[i] &&
        memcmp(sh, k->shapes[i], sizeof(int) * (size_t)k->ndims[i]))
      return false;
    sh += e->ndims[i];
  }
  return true;
}

int lc_cache_find(const struct lc_ckey *key, struct lc_centry **out, int max) {
  int n = 0;
  pthread_mutex_lock(&lock);
  struct fnrec *f = lookup(key->kind, key->id);
  for (struct lc_centry *e = f ? f->head : NULL; e && n < max; e = e->next)
    if (matches(e, key)) {
      atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
      out[n++] = e;
    }
  pthread_mutex_unlock(&lock);
  return n;
}

void lc_cache_touch(struct lc_centry *e) {
  pthread_mutex_lock(&lock);
  struct fnrec *f = e->fn;
  e->stamp = ++clock_;
  if (f && f->head != e) {
    unlink_entry(e);
    push_front(f, e);
  }
  pthread_mutex_unlock(&lock);
}

struct lc_centry *lc_cache_insert(const struct lc_ckey *key, struct lc_cprog *prog) {
  struct lc_centry *e = calloc(1, sizeof *e);
  size_t nsh = 0;
  for (int i = 0; i < key->nin; i++) nsh += (size_t)key->ndims[i];
  if (e) {
    e->dtypes = malloc(sizeof(mlx_dtype) * ((size_t)key->nin + 1));
    e->ndims = malloc(sizeof(int) * ((size_t)key->nin + 1));
    e->shapes = malloc(sizeof(int) * (nsh + 1));
    e->consts = malloc(sizeof(uint64_t) * (key->nconst + 1));
  }
  if (!e || !e->dtypes || !e->ndims || !e->shapes || !e->consts) {
    if (e) {
      e->prog = prog;
      entry_free(e);
    } else {
      lc_cprog_free(prog);
    }
    lc_error("out of memory");
    return NULL;
  }
  atomic_init(&e->refs, 2); /* the cache's and the caller's */
  e->prog = prog;
  e->stream = key->stream;
  e->nin = key->nin;
  e->nconst = key->nconst;
  if (key->nconst) memcpy(e->consts, key->consts, sizeof(uint64_t) * key->nconst);
  int *sh = e->shapes;
  for (int i = 0; i < key->nin; i++) {
    e->dtypes[i] = key->dtypes[i];
    e->ndims[i] = key->ndims[i];
    if (key->ndims[i]) memcpy(sh, key->shapes[i], sizeof(int) * (size_t)key->ndims[i]);
    sh += key->ndims[i];
  }
  struct dropped d = {NULL};
  pthread_mutex_lock(&lock);
  struct fnrec *f = lookup_or_create(key->kind, key->id);
  if (!f) {
    pthread_mutex_unlock(&lock);
    atomic_store(&e->refs, 1);
    lc_centry_release(e);
    lc_error("out of memory");
    return NULL;
  }
  e->stamp = ++clock_;
  push_front(f, e);
  while (f->count > LC_CACHE_PER_FN) drop(&d, f->tail);
  while (total > LC_CACHE_MAX) {
    struct lc_centry *old = NULL;
    for (int b = 0; b < NBUCKETS; b++)
      for (struct fnrec *g = buckets[b]; g; g = g->next)
        if (g->tail && g->tail != e && (!old || g->tail->stamp < old->stamp)) old = g->tail;
    if (!old) break;
    drop(&d, old);
  }
  pthread_mutex_unlock(&lock);
  release_dropped(&d);
  return e;
}

int lc_cache_lock_fn(int kind, uintptr_t id, void **token) {
  pthread_mutex_lock(&lock);
  struct fnrec *f = lookup_or_create(kind, id);
  if (f) f->refs++;
  pthread_mutex_unlock(&lock);
  if (!f) return lc_error("out of memory");
  pthread_mutex_lock(&f->trace_lock);
  *token = f;
  return 0;
}

void lc_cache_unlock_fn(void *token) {
  struct fnrec *f = token;
  pthread_mutex_unlock(&f->trace_lock);
  pthread_mutex_lock(&lock);
  fn_unref(f);
  pthread_mutex_unlock(&lock);
}

static void erase_fn(struct fnrec *f, struct dropped *d) {
  while (f->head) drop(d, f->head);
  unlink_fn(f);
}

void lc_cache_erase(int kind, uintptr_t id) {
  struct dropped d = {NULL};
  pthread_mutex_lock(&lock);
  struct fnrec *f = lookup(kind, id);
  if (f) erase_fn(f, &d);
  pthread_mutex_unlock(&lock);
  release_dropped(&d);
}

void lc_cache_clear(void) {
  struct dropped d = {NULL};
  pthread_mutex_lock(&lock);
  for (int b = 0; b < NBUCKETS; b++)
    while (buckets[b]) erase_fn(buckets[b], &d);
  pthread_mutex_unlock(&lock);
  release_dropped(&d);
}

size_t lc_cache_count(int kind, uintptr_t id) {
  pthread_mutex_lock(&lock);
  size_t n = total;
  if (id) {
    struct fnrec *f = lookup(kind, id);
    n = f ? (size_t)f->count : 0;
  }
  pthread_mutex_unlock(&lock);
  return n;
}
