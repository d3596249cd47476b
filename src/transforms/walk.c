/* The transform engines' graph walk: an iterative depth-first search from
 * the outputs that stops at tracers, so an enclosing trace's graph below
 * the tracers is never visited. */
#include "transforms/walk.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ops/prim.h"
#include "ops/tuple.h"

struct frame {
  struct lc_node *node;
  int next;
};

static int push_node(struct lc_twalk *w, struct lc_node *n) {
  if (w->len == w->cap) {
    size_t ncap = w->cap ? w->cap * 2 : 64;
    struct lc_node **nn = realloc(w->nodes, ncap * sizeof *nn);
    if (!nn) return lc_error("out of memory");
    w->nodes = nn;
    w->cap = ncap;
  }
  w->nodes[w->len++] = n;
  return 0;
}

/* Whether the walk goes below n. */
static bool descend(const struct lc_ptrmap *trs, const struct lc_node *n, bool block_stop) {
  if (n->nin == 0 || lc_ptrmap_get(trs, n, NULL)) return false;
  return !(block_stop && n->op == LC_OP_STOP_GRADIENT);
}

int lc_twalk_build(struct lc_twalk *w, int ntr, struct lc_node *const *tr, int nout,
                   struct lc_node *const *outs, bool block_stop) {
  memset(w, 0, sizeof *w);
  lc_ptrmap_init(&w->pos);
  struct lc_ptrmap trs, seen;
  lc_ptrmap_init(&trs);
  lc_ptrmap_init(&seen);
  struct frame *stack = NULL;
  size_t top = 0, cap = 0;
  int rc = 1;
  for (int i = 0; i < ntr; i++)
    if (lc_ptrmap_put(&trs, tr[i], 0)) goto done;
  for (int o = 0; o < nout; o++) {
    if (lc_ptrmap_get(&seen, outs[o], NULL)) continue;
    if (lc_ptrmap_put(&seen, outs[o], 0)) goto done;
    if (top == cap) {
      cap = cap ? cap * 2 : 64;
      struct frame *ns = realloc(stack, cap * sizeof *ns);
      if (!ns) { lc_error("out of memory"); goto done; }
      stack = ns;
    }
    stack[top++] = (struct frame){outs[o], 0};
    while (top) {
      struct frame *f = &stack[top - 1];
      if (f->next == f->node->nin || !descend(&trs, f->node, block_stop)) {
        if (push_node(w, f->node)) goto done;
        top--;
        continue;
      }
      struct lc_node *c = f->node->in[f->next++];
      if (lc_ptrmap_get(&seen, c, NULL)) continue;
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
  w->dep = calloc(w->len + 1, 1);
  w->tracer = calloc(w->len + 1, 1);
  w->tnout = calloc(w->len + 1, sizeof *w->tnout);
  if (!w->dep || !w->tracer || !w->tnout) {
    lc_error("out of memory");
    goto done;
  }
  for (size_t i = 0; i < w->len; i++) {
    struct lc_node *n = w->nodes[i];
    if (lc_ptrmap_put(&w->pos, n, (intptr_t)i)) goto done;
    if (lc_ptrmap_get(&trs, n, NULL)) {
      w->dep[i] = w->tracer[i] = 1;
      continue;
    }
    if (!descend(&trs, n, block_stop)) continue;
    for (int k = 0; k < n->nin && !w->dep[i]; k++) w->dep[i] = lc_twalk_dep(w, n->in[k]) >= 0;
    if (w->dep[i] && n->op == LC_OP_TUPLE_GET) {
      int nt;
      lc_tuple_index(n, &nt);
      w->tnout[lc_twalk_dep(w, n->in[0])] = nt;
    }
  }
  rc = 0;
done:
  free(stack);
  lc_ptrmap_free(&trs);
  lc_ptrmap_free(&seen);
  if (rc) lc_twalk_free(w);
  return rc;
}

void lc_twalk_free(struct lc_twalk *w) {
  free(w->nodes);
  free(w->dep);
  free(w->tracer);
  free(w->tnout);
  lc_ptrmap_free(&w->pos);
  memset(w, 0, sizeof *w);
}
