/* The transform engines' graph walk (lc_graph_walk) stops at tracers, so
 * an enclosing trace's graph below the tracers is never visited, then marks
 * what depends on them. */
#include "transforms/walk.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "ops/prim.h"
#include "ops/tuple.h"

/* Whether the walk goes below n. */
static bool descend(const struct lc_ptrmap *trs, const struct lc_node *n, bool block_stop) {
  if (n->nin == 0 || lc_ptrmap_get(trs, n, NULL)) return false;
  return !(block_stop && n->op == LC_OP_STOP_GRADIENT);
}

struct step_ctx {
  const struct lc_ptrmap *trs;
  bool block_stop;
};

/* Tracers, leaves and (block_stop) stop_gradient are listed but not
 * walked below. */
static int step(const struct lc_node *n, void *ctx) {
  const struct step_ctx *c = ctx;
  return descend(c->trs, n, c->block_stop) ? LC_WALK_DESCEND : LC_WALK_STOP;
}

int lc_twalk_build(struct lc_twalk *w, int ntr, struct lc_node *const *tr, int nout,
                   struct lc_node *const *outs, bool block_stop) {
  memset(w, 0, sizeof *w);
  lc_ptrmap_init(&w->pos);
  struct lc_ptrmap trs;
  lc_ptrmap_init(&trs);
  int rc = 1;
  for (int i = 0; i < ntr; i++)
    if (lc_ptrmap_put(&trs, tr[i], 0)) goto done;
  struct step_ctx sc = {&trs, block_stop};
  struct lc_tape tape;
  if (lc_graph_walk(outs, (size_t)nout, step, &sc, &tape)) goto done;
  w->nodes = tape.nodes;
  w->len = tape.len;
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
  lc_ptrmap_free(&trs);
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
