/* Groups: refcounted communicators, and the per-backend world groups that
 * init builds once (as MLX: a second init of the same backend returns the
 * same group). The table of world groups is guarded by one mutex; a group
 * itself is immutable after creation, so rank/size need no lock. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "distributed/backend.h"

struct lc_dist_group *lc_dist_group_new(const struct lc_dist_backend *be, void *comm) {
  struct lc_dist_group *g = calloc(1, sizeof *g);
  if (!g) {
    if (be && comm) be->release(comm);
    lc_error("distributed: out of memory");
    return NULL;
  }
  atomic_init(&g->refs, 1);
  g->rank = 0;
  g->size = 1;
  if (be && comm) {
    g->be = be;
    g->comm = comm;
    if (be->rank(comm, &g->rank) || be->size(comm, &g->size)) {
      lc_dist_group_release(g);
      return NULL;
    }
  }
  return g;
}

struct lc_dist_group *lc_dist_group_retain(struct lc_dist_group *g) {
  atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed);
  return g;
}

void lc_dist_group_release(struct lc_dist_group *g) {
  if (!g || atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) != 1) return;
  if (g->be) g->be->release(g->comm);
  free(g);
}

#ifdef LACE_CUDA
#define NCCL_TABLE (&lc_dist_nccl)
#else
#define NCCL_TABLE NULL
#endif

/* MLX's backend names, in the order "any" tries them (as MLX: the GPU one
 * first); those lace does not implement have no table. */
static const struct {
  const char *name;
  const struct lc_dist_backend *be;
} backends[] = {{"nccl", NCCL_TABLE}, {"mpi", &lc_dist_mpi}, {"ring", NULL}, {"jaccl", NULL}};
#define NBACKENDS (int)(sizeof backends / sizeof backends[0])

static int backend_index(const char *name) {
  for (int i = 0; i < NBACKENDS; i++)
    if (!strcmp(backends[i].name, name)) return i;
  return -1;
}

static bool backend_available(int i) { return backends[i].be && backends[i].be->available(); }

/* The world groups built so far: slot i for backends[i], slot NBACKENDS
 * for the one "any" picked. Never emptied: a world group lives until the
 * process exits, as in MLX's registry. Guarded by worlds_lock. */
static pthread_mutex_t worlds_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lc_dist_group *worlds[NBACKENDS + 1];

static void world_set(int slot, struct lc_dist_group *g) {
  if (!worlds[slot]) worlds[slot] = lc_dist_group_retain(g);
}

/* Backend i's world group, or the singleton when it has no world here
 * (non-strict; strict reports why: the backend's init says whether its
 * library is missing or the process was not launched). NULL after reporting. Caller holds
 * worlds_lock. */
static struct lc_dist_group *init_backend(int i, bool strict) {
  if (worlds[i]) return lc_dist_group_retain(worlds[i]);
  if (!backends[i].be) {
    if (strict) {
      lc_error("[distributed] backend '%s' is not available in lace", backends[i].name);
      return NULL;
    }
    return lc_dist_group_new(NULL, NULL);
  }
  void *comm = NULL;
  if (backends[i].be->init(strict, &comm)) return NULL;
  struct lc_dist_group *g = lc_dist_group_new(comm ? backends[i].be : NULL, comm);
  if (g && comm) {
    world_set(i, g);
    world_set(NBACKENDS, g);
  }
  return g;
}

/* "any": the first backend that initialises (NCCL where there is a GPU,
 * then MPI). Caller holds worlds_lock. */
static struct lc_dist_group *init_any(bool strict) {
  if (worlds[NBACKENDS]) return lc_dist_group_retain(worlds[NBACKENDS]);
  for (int i = 0; i < NBACKENDS; i++) {
    if (!backend_available(i)) continue;
    struct lc_dist_group *g = init_backend(i, false);
    if (!g || g->be) return g;
    lc_dist_group_release(g);
  }
  if (strict) {
    lc_error("[distributed] Couldn't initialize any backend");
    return NULL;
  }
  return lc_dist_group_new(NULL, NULL);
}

struct lc_dist_group *lc_dist_init(bool strict, const char *bk) {
  if (!bk) bk = "any";
  int i = strcmp(bk, "any") ? backend_index(bk) : NBACKENDS;
  if (i < 0) {
    lc_error(
        "[distributed] The only valid values for backend are 'any', 'mpi', 'nccl', "
        "'jaccl' and 'ring' but '%s' was provided.",
        bk);
    return NULL;
  }
  pthread_mutex_lock(&worlds_lock);
  struct lc_dist_group *g = i == NBACKENDS ? init_any(strict) : init_backend(i, strict);
  pthread_mutex_unlock(&worlds_lock);
  return g;
}

bool lc_dist_is_available(const char *bk) {
  if (!bk || !strcmp(bk, "any")) {
    for (int i = 0; i < NBACKENDS; i++)
      if (backend_available(i)) return true;
    return false;
  }
  int i = backend_index(bk);
  return i >= 0 && backend_available(i);
}

struct lc_dist_group *lc_dist_split(struct lc_dist_group *g, int color, int key) {
  if (!g->be) {
    lc_error("Cannot split the distributed group further.");
    return NULL;
  }
  if (color < 0) {
    lc_error("distributed group split: color must be non-negative, got %d", color);
    return NULL;
  }
  void *comm = NULL;
  if (g->be->split(g->comm, color, key < 0 ? g->rank : key, &comm)) return NULL;
  return lc_dist_group_new(g->be, comm);
}
