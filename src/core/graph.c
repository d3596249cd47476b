#include "core/graph.h"

#include <stdlib.h>

#include "core/error.h"
#include "core/ptrmap.h"
#include "ops/prim.h"

static _Thread_local int eval_forbidden;
static _Thread_local int keep_graph;

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

int lc_graph_tape(struct lc_node *const *outs, size_t nout, int all, struct lc_tape *tape) {
  tape->nodes = NULL;
  tape->len = tape->cap = 0;
  struct lc_ptrmap seen;
  lc_ptrmap_init(&seen);
  struct frame *stack = NULL;
  size_t top = 0, cap = 0;
  int rc = 1;
  for (size_t o = 0; o < nout; o++) {
    struct lc_node *root = outs[o];
    if ((root->buf && !(all && root->nin)) || lc_ptrmap_get(&seen, root, NULL)) continue;
    if (lc_ptrmap_put(&seen, root, 0)) goto done;
    if (top == cap) {
      cap = cap ? cap * 2 : 256;
      struct frame *ns = realloc(stack, cap * sizeof *ns);
      if (!ns) { lc_error("out of memory"); goto done; }
      stack = ns;
    }
    stack[top++] = (struct frame){root, 0};
    while (top) {
      struct frame *f = &stack[top - 1];
      if (f->next == f->node->nin) {
        if (push(tape, f->node)) goto done;
        top--;
        continue;
      }
      struct lc_node *c = f->node->in[f->next++];
      if ((c->buf && !(all && c->nin)) || lc_ptrmap_get(&seen, c, NULL)) continue;
      if (lc_ptrmap_put(&seen, c, 0)) goto done;
      if (top == cap) {
        cap *= 2;
        struct frame *ns = realloc(stack, cap * sizeof *ns);
        if (!ns) { lc_error("out of memory"); goto done; }
        stack = ns;
      }
      stack[top++] = (struct frame){c, 0};
    }
  }
  rc = 0;
done:
  free(stack);
  lc_ptrmap_free(&seen);
  if (rc) {
    free(tape->nodes);
    tape->nodes = NULL;
    tape->len = tape->cap = 0;
  }
  return rc;
}

int lc_eval(struct lc_node *const *outs, size_t nout) {
  size_t pending = 0;
  for (size_t i = 0; i < nout; i++) pending += !outs[i]->buf;
  if (!pending) return 0;
  if (eval_forbidden > 0)
    return lc_error("cannot evaluate an array while a function is being traced "
                    "(compile, vmap); return it as an output instead");
  struct lc_tape tape;
  if (lc_graph_tape(outs, nout, 0, &tape)) return 1;
  /* Keep the requested outputs alive while their producers detach. */
  for (size_t i = 0; i < nout; i++) lc_node_retain(outs[i]);
  int rc = 0;
  for (size_t i = 0; i < tape.len; i++) {
    struct lc_node *n = tape.nodes[i];
    const struct lc_prim *p = lc_prims[n->op];
    if (!p->eval_cpu) {
      rc = lc_error("%s: no CPU implementation", p->name);
      break;
    }
    if (p->eval_cpu(n)) {
      rc = 1;
      break;
    }
    /* A node is only released by its consumers' detach, which happens later
     * in the tape than the node itself, so tape pointers ahead stay valid. */
    if (!keep_graph) lc_node_detach(n);
  }
  for (size_t i = 0; i < nout; i++) lc_node_release(outs[i]);
  free(tape.nodes);
  return rc;
}
