#include "core/graph.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/profile.h"
#include "core/ptrmap.h"
#include "gpu/gpu.h"
#include "gpu/graphs.h"
#include "ops/prim.h"

static _Thread_local int eval_forbidden;
static _Thread_local int keep_graph;
static _Thread_local int trace_depth;
/* Bit d: GPU d has been handed work by lc_eval_async (never cleared: a
 * clear could race with another thread's queueing). Once set, eval of an
 * array already evaluated on that GPU waits for it, as MLX's eval waits on
 * an array whose async_eval is still running. On GPUs from ASYNC_GPUS on,
 * async_eval waits as eval does. */
#define ASYNC_GPUS 32
static atomic_uint async_gpus;

void lc_trace_enter(void) { trace_depth++; }
void lc_trace_leave(void) { trace_depth--; }
bool lc_tracing(void) { return trace_depth > 0; }

void lc_eval_keep_graph(int delta) { keep_graph += delta; }
bool lc_eval_keeps_graph(void) { return keep_graph > 0; }

void lc_eval_forbid(int delta) { eval_forbidden += delta; }
int lc_eval_forbid_depth(void) { return eval_forbidden; }

static int push(struct lc_tape *t, struct lc_node *n) {
  if (t->len == t->cap) {
    size_t ncap = t->cap ? t->cap * 2 : 256;
    struct lc_node **nn = realloc(t->nodes, ncap * sizeof *nn);
    if (!nn) return lc_error("out of memory");
    t->nodes = nn;
    t->cap = ncap;
  }
  t->nodes[t->len++] = n;
  return 0;
}

struct frame {
  struct lc_node *node;
  int next; /* next input to visit */
};

struct walk {
  struct lc_ptrmap seen;
  struct frame *stack;
  size_t top, cap;
  struct lc_tape *tape;
  int (*step)(const struct lc_node *n, void *ctx);
  void *ctx;
};

/* Reaches n: lists it now (STOP), later (DESCEND: a frame on the stack)
 * or never (SKIP, or already reached). 0, or 1 after reporting. */
static int reach(struct walk *w, struct lc_node *n) {
  if (lc_ptrmap_get(&w->seen, n, NULL)) return 0;
  if (lc_ptrmap_put(&w->seen, n, 0)) return 1;
  int st = w->step(n, w->ctx);
  if (st == LC_WALK_SKIP) return 0;
  if (st == LC_WALK_STOP) return push(w->tape, n);
  if (w->top == w->cap) {
    size_t ncap = w->cap ? w->cap * 2 : 256;
    struct frame *ns = realloc(w->stack, ncap * sizeof *ns);
    if (!ns) return lc_error("out of memory");
    w->stack = ns;
    w->cap = ncap;
  }
  w->stack[w->top++] = (struct frame){n, 0};
  return 0;
}

int lc_graph_walk(struct lc_node *const *outs, size_t nout,
                  int (*step)(const struct lc_node *n, void *ctx), void *ctx,
                  struct lc_tape *tape) {
  tape->nodes = NULL;
  tape->len = tape->cap = 0;
  struct walk w = {.tape = tape, .step = step, .ctx = ctx};
  lc_ptrmap_init(&w.seen);
  int rc = 1;
  for (size_t o = 0; o < nout; o++) {
    if (reach(&w, outs[o])) goto done;
    while (w.top) {
      struct frame *f = &w.stack[w.top - 1];
      if (f->next < f->node->nin) {
        if (reach(&w, f->node->in[f->next++])) goto done;
      } else {
        if (push(tape, f->node)) goto done;
        w.top--;
      }
    }
  }
  rc = 0;
done:
  free(w.stack);
  lc_ptrmap_free(&w.seen);
  if (rc) {
    free(tape->nodes);
    tape->nodes = NULL;
    tape->len = tape->cap = 0;
  }
  return rc;
}

/* Evaluated nodes are skipped (with `all`, only those without inputs). */
static int tape_step(const struct lc_node *n, void *ctx) {
  bool all = *(const int *)ctx;
  return n->buf && !(all && n->nin) ? LC_WALK_SKIP : LC_WALK_DESCEND;
}

int lc_graph_tape(struct lc_node *const *outs, size_t nout, int all, struct lc_tape *tape) {
  return lc_graph_walk(outs, nout, tape_step, &all, tape);
}

int lc_node_inputs_to_device(struct lc_node *n) {
  int slot = lc_gpu_current_slot(n->dev);
  for (int i = 0; i < n->nin; i++) {
    struct lc_buffer *b = n->in[i]->buf;
    if (lc_buffer_to_device(b, n->dev)) return 1;
    if (b->slot != slot && lc_gpu_after(n->dev, b->slot)) return 1;
  }
  return 0;
}

/* Computes n where it belongs. A node on a GPU runs its primitive's
 * eval_cuda on device copies of its inputs; a primitive without one (or
 * whose eval_cuda answers LC_EVAL_ON_CPU for these inputs) runs on the CPU
 * on host copies, and its result moves to the GPU when a GPU node reads it.
 * Views run eval_cpu on any device: they set strides and touch data only
 * through lc_node_data, which brings it to the host where needed. A view
 * with an eval_cuda (dynamic_slice, whose offset may live on the GPU;
 * reshape and bitcast, which copy where they cannot share) runs that on a
 * GPU without its inputs being uploaded: where it shares, a host input
 * stays on the host; where it copies, it uploads them itself
 * (lc_node_inputs_to_device); where it answers LC_EVAL_ON_CPU, its
 * eval_cpu copies through the host.
 * Sets *gpu to the GPU used, if any. 0, or 1 after reporting. */
static int eval_node(struct lc_node *n, int *gpu) {
  const struct lc_prim *p = lc_prims[n->op];
  bool view = p->flags & LC_PF_VIEW;
  if (n->dev != LC_DEV_CPU && p->eval_cuda) {
    /* on its stream's slot, after the slots that wrote its inputs */
    int prev = lc_gpu_set_slot(n->dev, lc_gpu_slot_of(n->stream));
    int slot = lc_gpu_current_slot(n->dev);
    /* a view that shares needs no order of its own: its readers wait on
     * the shared buffer's slot */
    int rc = view ? 0 : lc_node_inputs_to_device(n);
    if (!rc) rc = p->eval_cuda(n);
    if (rc == 0 && !view && n->buf && n->buf->dev_data) n->buf->slot = slot;
    (void)lc_gpu_set_slot(n->dev, prev);
    if (rc != LC_EVAL_ON_CPU) {
      *gpu = n->dev;
      return rc;
    }
  }
  if (!p->eval_cpu) return lc_error("%s: no CPU implementation", p->name);
  for (int i = 0; !view && i < n->nin; i++)
    if (lc_buffer_on_host(n->in[i]->buf)) return 1;
  return p->eval_cpu(n);
}

/* The waits of eval: for GPU `ran` (the one this tape ran on, or
 * LC_DEV_CPU), and for every other GPU that holds one of outs and was
 * handed async work (outs evaluated earlier by async_eval). 0, or 1 after
 * reporting. Never while a CUDA graph is captured (no waiting there). */
static int wait_outputs(struct lc_node *const *outs, size_t nout, int ran) {
  if (ran != LC_DEV_CPU && lc_gpu_sync(ran)) return 1;
  unsigned pend = atomic_load_explicit(&async_gpus, memory_order_acquire), done = 0;
  if (!pend || lc_host_reads_refused > 0) return 0;
  for (size_t i = 0; i < nout; i++) {
    const struct lc_buffer *b = outs[i]->buf;
    if (!b || !b->dev_data || b->dev == ran || b->dev < 0 || b->dev >= ASYNC_GPUS) continue;
    unsigned bit = 1u << b->dev;
    if (!(pend & bit) || (done & bit)) continue;
    done |= bit;
    if (lc_gpu_sync(b->dev)) return 1;
  }
  return 0;
}

static int eval_tape(struct lc_node *const *outs, size_t nout, bool wait) {
  size_t pending = 0;
  for (size_t i = 0; i < nout; i++) pending += !outs[i]->buf;
  if (!pending) return wait ? wait_outputs(outs, nout, LC_DEV_CPU) : 0;
  struct lc_tape tape;
  if (lc_graph_tape(outs, nout, 0, &tape)) return 1;
  for (size_t i = 0; eval_forbidden > 0 && i < tape.len; i++)
    if (tape.nodes[i]->op == LC_OP_PLACEHOLDER) {
      free(tape.nodes);
      return lc_error("cannot evaluate an array that depends on the inputs of a function being "
                      "traced (compile, vmap); return it as an output instead");
    }
  /* Keep the requested outputs alive while their producers detach. */
  for (size_t i = 0; i < nout; i++) lc_node_retain(outs[i]);
  int rc = 0, gpu = LC_DEV_CPU;
  /* a tape on one GPU may run as one CUDA graph (gpu/graphs.h) */
  int g = keep_graph || lc_profile_on() ? LC_GRAPH_DECLINED : lc_gpu_graph_eval(tape.nodes, tape.len, eval_node, &gpu);
  if (g != LC_GRAPH_DECLINED) {
    rc = g;
    tape.len = 0;
  }
  for (size_t i = 0; i < tape.len; i++) {
    struct lc_node *n = tape.nodes[i];
    double t0 = lc_profile_on() ? lc_profile_now() : 0;
    int on = LC_DEV_CPU;
    if (eval_node(n, &on)) {
      rc = 1;
      break;
    }
    if (on != LC_DEV_CPU) gpu = on;
    if (t0 > 0) {
      if (on != LC_DEV_CPU) (void)lc_gpu_sync(on);
      /* views without an eval_cuda only set strides: not a fallback */
      const struct lc_prim *p = lc_prims[n->op];
      bool moved = n->dev != LC_DEV_CPU && (!(p->flags & LC_PF_VIEW) || p->eval_cuda);
      lc_profile_add(n->op,
                     on != LC_DEV_CPU ? LC_PROFILE_GPU
                     : moved          ? LC_PROFILE_GPU_ON_CPU
                                      : LC_PROFILE_CPU,
                     lc_profile_now() - t0);
    }
    /* A node is only released by its consumers' detach, which happens later
     * in the tape than the node itself, so tape pointers ahead stay valid. */
    if (!keep_graph) lc_node_detach(n);
  }
  /* eval returns when the work is done (MLX's eval waits, async_eval
   * does not); one GPU per graph until multi-GPU graphs exist */
  if (wait || gpu >= ASYNC_GPUS) {
    if (wait_outputs(outs, nout, gpu)) rc = 1;
  } else if (gpu != LC_DEV_CPU) {
    atomic_fetch_or_explicit(&async_gpus, 1u << gpu, memory_order_release);
  }
  for (size_t i = 0; i < nout; i++) lc_node_release(outs[i]);
  free(tape.nodes);
  return rc;
}

int lc_eval(struct lc_node *const *outs, size_t nout) { return eval_tape(outs, nout, true); }

int lc_eval_async(struct lc_node *const *outs, size_t nout) {
  return eval_tape(outs, nout, false);
}
