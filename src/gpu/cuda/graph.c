/* CUDA graphs for repeated evaluations (the contract is in gpu/graphs.h).
 *
 * Table: at most NENTRY signatures, guarded by table_lock; an entry is
 * SEEN (evaluated once in graph mode), READY (a relocatable graph and, for
 * each node, how it gets its buffer) or NEVER (capture was refused).
 * Buffers: a node whose array nobody outside the tape holds ("private")
 * keeps, across replays, the block the capture gave it (the entry holds
 * it: an arena); other fresh nodes get new blocks, and external inputs
 * come where they are; those are the graph's slots, relocated before each
 * launch (gpu/cuda/graph_reloc.h). A replay runs under table_lock, so an
 * entry is never evicted while in use; launches of one entry are ordered
 * on the device's stream, so its arena is never used by two at once.
 * Captures run one at a time (capture_lock) on a private stream per
 * device, so other threads' work never joins a graph. */
#ifdef LACE_CUDA
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "core/graph.h"
#include "core/hash.h"
#include "core/ptrmap.h"
#include "gpu/cuda/capture.h"
#include "gpu/cuda/graph_reloc.h"
#include "gpu/gpu.h"
#include "gpu/graphs.h"
#include "ops/prim.h"

#define NENTRY 16
#define MIN_NODES 4
#define MAX_GPUS 16

enum { SEEN, READY, NEVER };
enum { FRESH, SHARE_NODE, SHARE_EXT };
#define CAPTURE_BUSY 3 /* another thread is capturing: try again later */

#define ARENA_MAX ((size_t)1 << 30) /* bytes an entry may hold for private nodes */

struct assign {
  int kind, idx;  /* idx: node or external input */
  size_t nbytes;  /* FRESH */
  int slot;       /* FRESH: the slot of a new block, or -1 (arena[] holds it) */
  int64_t offset;
  unsigned contig;
  size_t strides; /* index of ndim entries in entry.strides */
};

struct entry {
  uint64_t hash;
  uint64_t *sig;
  size_t siglen;
  int state, dev, misses;
  unsigned long used;
  struct lc_reloc_graph *rg;
  struct assign *as;
  struct lc_buffer **arena; /* per node: its block across replays, or NULL */
  int64_t *strides;
  size_t n, next, nslot;
  void **scratch; /* blocks the graph uses that no node holds (owned) */
  size_t *scratch_bytes, nscratch;
};

/* Why this thread's last capture was refused, for LACE_CUDA_VERBOSE. */
static _Thread_local const char *why;
static _Thread_local int why_op = -1;
static bool refuse(const char *reason, int op) {
  if (!why) why = reason, why_op = op;
  return false;
}
static void say_why(void) {
  const char *e = getenv("LACE_CUDA_VERBOSE");
  if (e && atoi(e) >= 1)
    fprintf(stderr, "lace: no CUDA graph for this evaluation: %s%s%s\n", why ? why : "?",
            why_op >= 0 ? " at " : "", why_op >= 0 ? lc_prims[why_op]->name : "");
}

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry table[NENTRY];
static unsigned long clock_tick;
static struct lc_gpu_graph_stats stats;
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;
static cudaStream_t capture_streams[MAX_GPUS];
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static atomic_int graphs_on = 1;
/* The most bytes of private results a tape may make and still run in
 * graph mode (LACE_CUDA_GRAPH_TEMP_MB, default 64): graph mode keeps
 * every one of them until the tape's end, where a normal evaluation frees
 * each after its last consumer (and checkpointing relies on that). Set
 * once, by read_env. */
static size_t temp_max = (size_t)64 << 20;

static void read_env(void) {
  const char *e = getenv("LACE_CUDA_GRAPHS");
  if (e && !strcmp(e, "0")) atomic_store(&graphs_on, 0);
  const char *t = getenv("LACE_CUDA_GRAPH_TEMP_MB");
  if (t && *t) {
    char *end;
    unsigned long long mb = strtoull(t, &end, 10);
    if (*end == 0 && mb < ((unsigned long long)1 << 40)) temp_max = (size_t)mb << 20;
  }
}

/* Bytes of the private results of the tape (views aside: they share). */
static size_t private_bytes(struct lc_node *const *nodes, size_t n, const bool *priv) {
  size_t b = 0;
  for (size_t i = 0; i < n; i++)
    if (priv[i] && !(lc_prims[nodes[i]->op]->flags & LC_PF_VIEW))
      b += (size_t)nodes[i]->size * lc_dtype_size(nodes[i]->dtype);
  return b;
}
void lc_gpu_graphs_set(int on) {
  pthread_once(&env_once, read_env);
  atomic_store(&graphs_on, on != 0);
}
int lc_gpu_graphs_on(void) {
  pthread_once(&env_once, read_env);
  return atomic_load(&graphs_on);
}

void lc_gpu_graph_stats(struct lc_gpu_graph_stats *s) {
  pthread_mutex_lock(&table_lock);
  *s = stats;
  pthread_mutex_unlock(&table_lock);
}

static void entry_clear(struct entry *e) {
  lc_reloc_free(e->rg); /* an exec in flight is freed when done */
  for (size_t i = 0; e->arena && i < e->n; i++)
    if (e->arena[i]) {
      lc_cuda_arena_account(e->arena[i]->nbytes, -1);
      lc_buffer_release(e->arena[i]);
    }
  free(e->arena);
  for (size_t i = 0; i < e->nscratch; i++) {
    lc_cuda_arena_account(e->scratch_bytes[i], -1);
    lc_gpu_free(e->scratch[i], e->scratch_bytes[i], e->dev);
  }
  free(e->scratch);
  free(e->scratch_bytes);
  free(e->sig);
  free(e->as);
  free(e->strides);
  memset(e, 0, sizeof *e);
}

void lc_gpu_graphs_clear(void) {
  pthread_mutex_lock(&table_lock);
  for (int i = 0; i < NENTRY; i++) entry_clear(&table[i]);
  pthread_mutex_unlock(&table_lock);
}

/* ---- signatures ---- */

struct sig {
  uint64_t *w;
  size_t len, cap;
  bool oom;
};
static void put(struct sig *s, uint64_t v) {
  if (s->len == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 1024;
    uint64_t *w = realloc(s->w, cap * sizeof *w);
    if (!w) {
      s->oom = true;
      return;
    }
    s->w = w;
    s->cap = cap;
  }
  s->w[s->len++] = v;
}

/* Whether a primitive may be captured: views (host metadata only) and
 * GPU evaluators, but none that runs user code, reads files or talks to
 * other processes. */
static bool capturable(const struct lc_node *n) {
  const struct lc_prim *p = lc_prims[n->op];
  switch (n->op) {
    case LC_OP_CUSTOM: case LC_OP_LOAD: case LC_OP_PLACEHOLDER:
    case LC_OP_DIST_ALL_REDUCE: case LC_OP_DIST_ALL_GATHER: case LC_OP_DIST_SUM_SCATTER:
    case LC_OP_DIST_SEND: case LC_OP_DIST_RECV:
      return false;
    default:
      return (p->flags & LC_PF_VIEW) || p->eval_cuda;
  }
}

/* The signature of the tape, with its external inputs (evaluated arrays,
 * uploaded to dev here) listed in first-use order in *ext and, per node,
 * whether it is private (held only by its consumers in the tape). Device
 * addresses are left out: graphs are relocated. 0, 1 after reporting, or
 * LC_GRAPH_DECLINED. */
static int signature(struct lc_node *const *nodes, size_t n, int dev, struct sig *s,
                     struct lc_ptrmap *index, struct lc_buffer ***ext, size_t *next,
                     bool *priv) {
  size_t cap = 0;
  int *uses = calloc(n ? n : 1, sizeof *uses);
  if (!uses) return lc_error("out of memory");
  for (size_t i = 0; i < n; i++)
    if (lc_ptrmap_put(index, nodes[i], (intptr_t)i)) {
      free(uses);
      return 1;
    }
  struct lc_ptrmap exts;
  lc_ptrmap_init(&exts);
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    const struct lc_node *x = nodes[i];
    put(s, (uint64_t)x->op | (uint64_t)x->dtype << 16 | (uint64_t)x->ndim << 32 |
               (uint64_t)x->nin << 48);
    for (int d = 0; d < x->ndim; d++) put(s, (uint64_t)x->shape[d]);
    put(s, x->params_size);
    const struct lc_prim *xp = lc_prims[x->op];
    put(s, xp->params_hash ? xp->params_hash(x->params)
                           : lc_fnv1a(LC_FNV_SEED, x->params, x->params_size));
    for (int k = 0; k < x->nin && !rc; k++) {
      struct lc_node *in = x->in[k];
      intptr_t j;
      if (lc_ptrmap_get(index, in, &j)) {
        uses[j]++;
        put(s, 1);
        put(s, (uint64_t)j);
        continue;
      }
      if (!in->buf || lc_buffer_to_device(in->buf, dev)) {
        rc = in->buf ? 1 : LC_GRAPH_DECLINED;
        break;
      }
      intptr_t e;
      if (!lc_ptrmap_get(&exts, in->buf, &e)) {
        if (*next == cap) {
          cap = cap ? 2 * cap : 64;
          struct lc_buffer **a = realloc(*ext, cap * sizeof *a);
          if (!a) {
            rc = lc_error("out of memory");
            break;
          }
          *ext = a;
        }
        e = (intptr_t)*next;
        (*ext)[(*next)++] = in->buf;
        if (lc_ptrmap_put(&exts, in->buf, e)) rc = 1;
      }
      put(s, 2);
      put(s, (uint64_t)e);
      put(s, in->buf->nbytes);
      put(s, (uint64_t)in->offset | (uint64_t)(in->flags & LC_NF_CONTIG) << 63);
      put(s, (uint64_t)in->dtype | (uint64_t)in->ndim << 16);
      for (int d = 0; d < in->ndim; d++) {
        put(s, (uint64_t)in->shape[d]);
        put(s, (uint64_t)in->strides[d]);
      }
    }
  }
  for (size_t i = 0; i < n && !rc; i++) {
    priv[i] = atomic_load(&nodes[i]->refs) == uses[i];
    put(s, priv[i]);
  }
  free(uses);
  lc_ptrmap_free(&exts);
  if (!rc && s->oom) rc = lc_error("out of memory");
  return rc;
}

static struct entry *find(uint64_t hash, const struct sig *s) {
  for (int i = 0; i < NENTRY; i++) {
    struct entry *e = &table[i];
    if (e->sig && e->hash == hash && e->siglen == s->len &&
        !memcmp(e->sig, s->w, s->len * sizeof *s->w))
      return e;
  }
  return NULL;
}

static struct entry *insert(uint64_t hash, struct sig *s, int dev) {
  struct entry *v = &table[0];
  for (int i = 0; i < NENTRY; i++) {
    if (!table[i].sig) {
      v = &table[i];
      break;
    }
    if (table[i].used < v->used) v = &table[i];
  }
  entry_clear(v);
  v->hash = hash;
  v->sig = s->w; /* the entry takes the words */
  v->siglen = s->len;
  v->dev = dev;
  v->state = SEEN;
  s->w = NULL;
  return v;
}

/* ---- running ---- */

static void undo(struct lc_node *const *nodes, size_t upto) {
  for (size_t i = upto; i-- > 0;) {
    lc_buffer_release(nodes[i]->buf);
    nodes[i]->buf = NULL;
  }
}

static void detach_all(struct lc_node *const *nodes, size_t n) {
  for (size_t i = 0; i < n; i++) lc_node_detach(nodes[i]);
}

/* Every node's evaluator, graph-mode allocation (no donation, frees at
 * the end). 0, or 1 after reporting (nodes left as they are). */
static int run_nodes(struct lc_node *const *nodes, size_t n, int (*eval_node)(struct lc_node *, int *),
                     int *gpu) {
  int rc = 0;
  lc_eval_keep_graph(1);
  for (size_t i = 0; i < n && !rc; i++) rc = eval_node(nodes[i], gpu);
  lc_eval_keep_graph(-1);
  return rc;
}

/* Replays entry e (table_lock held): 0, or LC_GRAPH_DECLINED after undoing
 * (a block could not be had, or the graph could not be moved). */
static int replay(struct entry *e, struct lc_node *const *nodes, size_t n,
                  struct lc_buffer *const *ext, size_t *patched) {
  void **base = malloc((e->nslot ? e->nslot : 1) * sizeof *base);
  if (!base) return LC_GRAPH_DECLINED;
  for (size_t k = 0; k < e->next; k++) base[k] = ext[k]->dev_data;
  lc_error_mute(1);
  size_t i = 0;
  bool ok = true;
  for (; i < n && ok; i++) {
    const struct assign *a = &e->as[i];
    struct lc_node *x = nodes[i];
    struct lc_buffer *b = NULL;
    if (a->kind == FRESH && a->slot >= 0) {
      b = lc_buffer_new_device(a->nbytes, e->dev);
      ok = b != NULL;
      if (b) base[a->slot] = b->dev_data;
    } else if (a->kind == FRESH) {
      b = lc_buffer_retain(e->arena[i]);
    } else {
      b = lc_buffer_retain(a->kind == SHARE_EXT ? ext[a->idx] : nodes[a->idx]->buf);
    }
    x->buf = b;
    x->offset = a->offset;
    if (x->ndim) memcpy(x->strides, e->strides + a->strides, sizeof(int64_t) * (size_t)x->ndim);
    x->flags = (x->flags & ~LC_NF_CONTIG) | a->contig;
  }
  lc_error_mute(-1);
  ok = ok && lc_reloc_launch(e->rg, base, lc_gpu_stream(e->dev), patched);
  free(base);
  if (!ok) {
    undo(nodes, i);
    return LC_GRAPH_DECLINED;
  }
  return 0;
}

/* What each node got in the captured run, the arena and the slots' bases
 * (*base, e->nslot entries, caller frees). False when it cannot be
 * replayed: memory the graph uses that no node owns (scratch), a node
 * whose result is not on dev, or an arena over ARENA_MAX. */
static bool record(struct entry *e, struct lc_node *const *nodes, size_t n,
                   struct lc_buffer *const *ext, size_t next, const bool *priv, void ***base,
                   size_t **bytes) {
  size_t nst = 0, nalloc = 0, fresh = 0, arena_bytes = 0;
  for (size_t i = 0; i < n; i++) nst += (size_t)nodes[i]->ndim;
  void *const *allocs = lc_cuda_capture_allocs(&nalloc);
  e->n = n;
  e->next = next;
  e->as = calloc(n ? n : 1, sizeof *e->as);
  e->arena = calloc(n ? n : 1, sizeof *e->arena);
  e->strides = malloc((nst ? nst : 1) * sizeof *e->strides);
  bool *shared_out = calloc(n ? n : 1, sizeof *shared_out); /* a sharer is not private */
  int *root = calloc(n ? n : 1, sizeof *root);
  *base = malloc((next + n + 1) * sizeof **base);
  *bytes = malloc((next + n + 1) * sizeof **bytes);
  struct lc_ptrmap owner, seen;
  lc_ptrmap_init(&owner);
  lc_ptrmap_init(&seen);
  bool ok = e->as && e->arena && e->strides && shared_out && root && *base && *bytes &&
            (allocs || !nalloc);
  for (size_t k = 0; ok && k < next; k++) {
    ok = !lc_ptrmap_put(&owner, ext[k], -(intptr_t)k - 1);
    (*base)[k] = ext[k]->dev_data;
    (*bytes)[k] = ext[k]->nbytes;
  }
  for (size_t k = 0; ok && k < nalloc; k++) /* each block once, for nodes or as scratch */
    ok = !lc_ptrmap_get(&seen, allocs[k], NULL) && !lc_ptrmap_put(&seen, allocs[k], 0);
  size_t nheld = 0;
  for (size_t k = 0; ok && k < e->nscratch; k++) nheld += lc_ptrmap_get(&seen, e->scratch[k], NULL);
  nst = 0;
  for (size_t i = 0; ok && i < n; i++) {
    struct lc_node *x = nodes[i];
    struct assign *a = &e->as[i];
    intptr_t o;
    ok = x->buf && x->buf->dev_data && x->buf->dev == e->dev &&
         (atomic_load(&x->buf->valid) & LC_BUF_DEV);
    if (!ok) {
      refuse("a result is not on the GPU", x->op);
      break;
    }
    if (lc_ptrmap_get(&owner, x->buf, &o)) {
      a->kind = o < 0 ? SHARE_EXT : SHARE_NODE;
      a->idx = o < 0 ? (int)(-o - 1) : (int)o;
      root[i] = o < 0 ? -1 : root[o];
      if (root[i] >= 0 && !priv[i]) shared_out[root[i]] = true;
    } else {
      a->kind = FRESH;
      a->nbytes = x->buf->nbytes;
      root[i] = (int)i;
      fresh++;
      ok = lc_ptrmap_get(&seen, x->buf->dev_data, NULL) && !lc_ptrmap_put(&owner, x->buf, (intptr_t)i);
    }
    a->offset = x->offset;
    a->contig = x->flags & LC_NF_CONTIG;
    a->strides = nst;
    if (x->ndim) memcpy(e->strides + nst, x->strides, sizeof(int64_t) * (size_t)x->ndim);
    nst += (size_t)x->ndim;
  }
  e->nslot = next;
  for (size_t i = 0; ok && i < n; i++) {
    struct assign *a = &e->as[i];
    if (a->kind != FRESH) continue;
    if (priv[i] && !shared_out[i]) {
      a->slot = -1;
      e->arena[i] = lc_buffer_retain(nodes[i]->buf);
      lc_cuda_arena_account(a->nbytes, +1);
      arena_bytes += a->nbytes;
    } else {
      a->slot = (int)e->nslot;
      (*base)[e->nslot] = nodes[i]->buf->dev_data;
      (*bytes)[e->nslot++] = a->nbytes;
    }
  }
  lc_ptrmap_free(&owner);
  lc_ptrmap_free(&seen);
  free(shared_out);
  free(root);
  if (ok && fresh + nheld != nalloc) return refuse("memory the graph uses is not all known", -1);
  if (ok && arena_bytes > ARENA_MAX) return refuse("too much memory for private nodes", -1);
  return ok;
}

/* The owners of the captured graph's nodes (graph_reloc.h): which tape
 * node queued each (noted while capturing, note_new_nodes), and the slots
 * each tape node touches (its own buffer's and its inputs'). */
struct owners {
  struct lc_reloc_owners o;
  cudaGraphNode_t *node; /* graph node k was queued by tape node unit[k] */
  int *unit, *slots;
  size_t len, cap;
  size_t *first;
  struct lc_cuda_known *known;
  size_t nknown;
};
/* Adds the graph nodes the capture on cs gained since the last call to
 * w, as queued by tape node unit. False when CUDA cannot say. */
static bool note_new_nodes(struct owners *w, struct lc_ptrmap *seen, cudaStream_t cs, int unit) {
  enum cudaStreamCaptureStatus st;
  cudaGraph_t cg = NULL;
  size_t cnt = 0;
  if (cudaStreamGetCaptureInfo(cs, &st, NULL, &cg, NULL, NULL, NULL) != cudaSuccess || !cg ||
      cudaGraphGetNodes(cg, NULL, &cnt) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  if (cnt <= seen->len) return true;
  cudaGraphNode_t *all = malloc(cnt * sizeof *all);
  bool ok = all && cudaGraphGetNodes(cg, all, &cnt) == cudaSuccess;
  for (size_t k = 0; ok && k < cnt; k++) {
    if (lc_ptrmap_get(seen, all[k], NULL)) continue;
    if (w->len == w->cap) {
      size_t cap = w->cap ? 2 * w->cap : 256;
      cudaGraphNode_t *a = realloc(w->node, cap * sizeof *a);
      if (a) w->node = a;
      int *b = a ? realloc(w->unit, cap * sizeof *b) : NULL;
      if (b) w->unit = b;
      if (!a || !b) {
        ok = false;
        break;
      }
      w->cap = cap;
    }
    w->node[w->len] = all[k];
    w->unit[w->len++] = unit;
    ok = !lc_ptrmap_put(seen, all[k], 0);
  }
  free(all);
  (void)cudaGetLastError();
  return ok;
}

static bool find_owners(struct owners *w, const struct entry *e, struct lc_node *const *nodes,
                        size_t n, struct lc_buffer *const *ext) {
  size_t ns = 0, capslots = 4 * n + 4;
  w->first = malloc((n + 1) * sizeof *w->first);
  w->slots = malloc(capslots * sizeof *w->slots);
  int *slot_of = malloc((n ? n : 1) * sizeof *slot_of);
  struct lc_ptrmap index, extix;
  lc_ptrmap_init(&index);
  lc_ptrmap_init(&extix);
  bool ok = w->first && w->slots && slot_of;
  for (size_t i = 0; ok && i < n; i++) ok = !lc_ptrmap_put(&index, nodes[i], (intptr_t)i);
  for (size_t k = 0; ok && k < e->next; k++) ok = !lc_ptrmap_put(&extix, ext[k], (intptr_t)k);
  for (size_t i = 0; ok && i < n; i++) {
    const struct assign *a = &e->as[i];
    slot_of[i] = a->kind == FRESH ? a->slot : a->kind == SHARE_EXT ? a->idx : slot_of[a->idx];
    w->first[i] = ns;
    for (int k = -1; ok && k < nodes[i]->nin; k++) {
      int s = slot_of[i];
      if (k >= 0) {
        intptr_t j = -1;
        struct lc_node *in = nodes[i]->in[k];
        if (lc_ptrmap_get(&index, in, &j)) s = slot_of[j];
        else ok = lc_ptrmap_get(&extix, in->buf, &j), s = (int)j;
      }
      if (s < 0) continue;
      if (ns == capslots) {
        int *b = realloc(w->slots, 2 * capslots * sizeof *b);
        if (!b) ok = false;
        else w->slots = b, capslots *= 2;
      }
      if (ok) w->slots[ns++] = s;
    }
  }
  if (ok) w->first[n] = ns;
  lc_ptrmap_free(&index);
  lc_ptrmap_free(&extix);
  free(slot_of);
  (void)cudaGetLastError();
  w->o = (struct lc_reloc_owners){w->len, w->node, w->unit, w->first, w->slots, w->known,
                                  w->nknown};
  return ok;
}
static void free_owners(struct owners *w) {
  free(w->node), free(w->unit), free(w->slots), free(w->first);
  for (size_t k = 0; k < w->nknown; k++) free(w->known[k].blob);
  free(w->known);
}

/* Evaluates the tape while capturing it into a graph, then launches the
 * graph. 0 (*captured says whether e now holds a replayable graph), 1
 * after reporting, LC_GRAPH_DECLINED when the capture could not be made,
 * or CAPTURE_BUSY (nodes untouched in both). */
static int capture(struct entry *e, struct lc_node *const *nodes, size_t n,
                   int (*eval_node)(struct lc_node *, int *), int *gpu,
                   struct lc_buffer *const *ext, size_t next, const bool *priv, bool *captured) {
  int dev = e->dev;
  *captured = false;
  if (dev >= MAX_GPUS || pthread_mutex_trylock(&capture_lock)) return CAPTURE_BUSY;
  if (!capture_streams[dev] &&
      cudaStreamCreateWithFlags(&capture_streams[dev], cudaStreamNonBlocking) != cudaSuccess) {
    (void)cudaGetLastError();
    capture_streams[dev] = NULL;
    pthread_mutex_unlock(&capture_lock);
    return LC_GRAPH_DECLINED;
  }
  cudaStream_t cs = capture_streams[dev];
  struct owners own = {0};
  bool have_owners = false, owners_ok = true;
  cudaGraph_t g = NULL;
  cudaGraphExec_t exec = NULL;
  void **base = NULL;
  size_t *bytes = NULL;
  bool replayable = false;
  unsigned long refused0 = lc_buffer_host_read_refused();
  int rc = cudaStreamBeginCapture(cs, cudaStreamCaptureModeRelaxed) != cudaSuccess;
  if (!rc) {
    lc_error_mute(1);
    lc_host_reads_refused++;
    lc_cuda_capture_begin(dev, cs);
    /* run_nodes, noting which graph nodes each tape node queued */
    struct lc_ptrmap seen;
    lc_ptrmap_init(&seen);
    lc_eval_keep_graph(1);
    for (size_t i = 0; i < n && !rc; i++) {
      rc = eval_node(nodes[i], gpu);
      if (!rc && !note_new_nodes(&own, &seen, cs, (int)i)) owners_ok = false;
    }
    lc_eval_keep_graph(-1);
    lc_ptrmap_free(&seen);
    bool broken = lc_cuda_capture_broken() || lc_buffer_host_read_refused() != refused0;
    lc_host_reads_refused--;
    if (cudaStreamEndCapture(cs, &g) != cudaSuccess || broken) rc = 1;
    if (!rc && cudaGraphInstantiate(&exec, g, 0) != cudaSuccess) rc = 1;
    e->nscratch = lc_cuda_capture_take_freed(&e->scratch, &e->scratch_bytes);
    if (rc) refuse(broken ? "a host copy, wait or read during capture" : "capture failed", -1);
    if (!rc) replayable = record(e, nodes, n, ext, next, priv, &base, &bytes);
    own.nknown = lc_cuda_capture_take_known(&own.known);
    if (replayable && owners_ok) have_owners = find_owners(&own, e, nodes, n, ext);
    if (!have_owners)
      own.o = (struct lc_reloc_owners){0, NULL, NULL, NULL, NULL, own.known, own.nknown};
    lc_cuda_capture_end();
    lc_error_mute(-1);
  }
  (void)cudaGetLastError();
  pthread_mutex_unlock(&capture_lock);
  /* scratch blocks: the entry keeps them, or they are freed once queued
   * work no longer needs them (after the launch, or now if none) */
  bool keep = !rc && replayable;
  for (size_t k = 0; keep && k < e->nscratch; k++) lc_cuda_arena_account(e->scratch_bytes[k], +1);
  if (rc) { /* nothing ran: the nodes start again */
    for (size_t k = 0; k < e->nscratch; k++) lc_gpu_free(e->scratch[k], e->scratch_bytes[k], dev);
    e->nscratch = 0;
    undo(nodes, n);
    if (exec) (void)cudaGraphExecDestroy(exec);
    if (g) (void)cudaGraphDestroy(g);
    free(base);
    free(bytes);
    free_owners(&own);
    return LC_GRAPH_DECLINED;
  }
  /* the relocatable graph owns g and exec from here */
  e->rg = lc_reloc_build(g, exec, replayable ? e->nslot : 0, base, bytes, &own.o);
  free_owners(&own);
  size_t patched = 0;
  bool launched = false;
  if (e->rg) {
    launched = lc_reloc_launch(e->rg, base, lc_gpu_stream(dev), &patched);
  } else {
    lc_error("out of memory");
  }
  free(base);
  free(bytes);
  if (!keep) {
    for (size_t k = 0; k < e->nscratch; k++) lc_gpu_free(e->scratch[k], e->scratch_bytes[k], dev);
    e->nscratch = 0;
  }
  if (!launched) {
    undo(nodes, n);
    return e->rg ? lc_error("CUDA graph launch failed") : 1;
  }
  *captured = replayable;
  return 0;
}

int lc_gpu_graph_eval(struct lc_node *const *nodes, size_t n,
                      int (*eval_node)(struct lc_node *n, int *gpu), int *gpu) {
  if (n < MIN_NODES || !lc_gpu_graphs_on() || lc_eval_keeps_graph()) return LC_GRAPH_DECLINED;
  int dev = nodes[0]->dev;
  /* graphs capture one stream: none once a device has used several */
  if (dev < 0 || lc_gpu_multi_stream(dev)) {
    if (dev >= 0) (void)refuse("several streams have been used on this GPU", -1);
    return LC_GRAPH_DECLINED;
  }
  for (size_t i = 0; i < n; i++)
    if (nodes[i]->dev != dev || nodes[i]->buf || !capturable(nodes[i])) return LC_GRAPH_DECLINED;
  struct sig s = {0};
  struct lc_ptrmap index;
  lc_ptrmap_init(&index);
  struct lc_buffer **ext = NULL;
  size_t next = 0;
  bool *priv = calloc(n, sizeof *priv);
  int rc = priv ? signature(nodes, n, dev, &s, &index, &ext, &next, priv)
                : lc_error("out of memory");
  lc_ptrmap_free(&index);
  if (rc) goto done;
  if (private_bytes(nodes, n, priv) > temp_max) {
    pthread_mutex_lock(&table_lock);
    stats.large++;
    pthread_mutex_unlock(&table_lock);
    rc = LC_GRAPH_DECLINED;
    goto done;
  }
  uint64_t hash = lc_fnv1a(LC_FNV_SEED, s.w, s.len * sizeof *s.w);
  pthread_mutex_lock(&table_lock);
  struct entry *e = find(hash, &s);
  int state = e ? e->state : -1;
  if (e) e->used = ++clock_tick;
  if (state == READY) {
    size_t patched = 0;
    rc = replay(e, nodes, n, ext, &patched);
    if (!rc) {
      stats.replayed++;
      stats.patched += patched;
      e->misses = 0;
    } else {
      stats.mismatched++;
      static _Thread_local char msg[160];
      int unit, slot;
      if (lc_reloc_blocked(e->rg, &unit, &slot)) {
        snprintf(msg, sizeof msg, "cuBLAS's (opaque) kernel of tape node %d reads or writes "
                 "slot %d (%s), which moved; the unit's", unit, slot,
                 slot < (int)e->next ? "an input" : "a fresh result");
        why = msg;
        why_op = nodes[unit]->op;
      } else {
        why = lc_reloc_movable(e->rg) ? "a replay could not be launched" : lc_reloc_why(e->rg);
        why_op = -1;
      }
      if (++e->misses >= 4) {
        say_why();
        entry_clear(e); /* it cannot follow its inputs */
      }
    }
    pthread_mutex_unlock(&table_lock);
    if (!rc) {
      *gpu = dev;
      detach_all(nodes, n);
      goto done;
    }
  } else if (state == NEVER) {
    pthread_mutex_unlock(&table_lock);
    rc = LC_GRAPH_DECLINED;
    goto done;
  } else if (state == SEEN) {
    pthread_mutex_unlock(&table_lock);
    struct entry mine = {0};
    mine.dev = dev;
    bool captured = false;
    why = NULL, why_op = -1;
    rc = capture(&mine, nodes, n, eval_node, gpu, ext, next, priv, &captured);
    /* e may have been evicted meanwhile: look it up again */
    pthread_mutex_lock(&table_lock);
    struct entry *again = find(hash, &s);
    if (captured && again && again->state == SEEN) {
      uint64_t *sig = again->sig;
      size_t siglen = again->siglen;
      unsigned long used = again->used;
      again->sig = NULL;
      entry_clear(again);
      *again = mine;
      again->sig = sig, again->siglen = siglen, again->used = used, again->hash = hash;
      again->state = READY;
      stats.captured++;
      memset(&mine, 0, sizeof mine);
    } else if (!captured && again && rc != CAPTURE_BUSY) {
      again->state = NEVER;
      stats.refused++;
      say_why();
    }
    pthread_mutex_unlock(&table_lock);
    entry_clear(&mine);
    if (rc == CAPTURE_BUSY) rc = LC_GRAPH_DECLINED;
    if (rc != LC_GRAPH_DECLINED) {
      if (!rc) {
        *gpu = dev;
        detach_all(nodes, n);
      }
      goto done;
    }
  } else {
    insert(hash, &s, dev)->used = ++clock_tick;
    stats.warmed++;
    pthread_mutex_unlock(&table_lock);
  }
  /* first sighting or a failed replay: evaluate in graph mode, so that
   * the next capture allocates as later replays will */
  rc = run_nodes(nodes, n, eval_node, gpu);
  if (!rc) detach_all(nodes, n);
done:
  free(s.w);
  free(ext);
  free(priv);
  return rc;
}
#endif
