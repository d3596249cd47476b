/* Graph printing: mlx_print_graph (text) and mlx_export_to_dot (Graphviz).
 * Both walk the unevaluated graph behind `outputs` (evaluated arrays are
 * leaves). A namer maps arrays (by node) to names; unnamed arrays get
 * letters in order of appearance (A, B, ..., Z, AA, ...). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/graph.h"
#include "core/ptrmap.h"
#include "ops/prim.h"

struct lc_namer {
  struct lc_ptrmap names; /* node -> index into strs and nodes */
  char **strs;
  struct lc_node **nodes; /* held, so a name never outlives its node's address */
  size_t len, cap;
};

mlx_node_namer mlx_node_namer_new(void) {
  struct lc_namer *n = calloc(1, sizeof *n);
  if (!n)
    lc_error("out of memory");
  else
    lc_ptrmap_init(&n->names);
  return (mlx_node_namer){n};
}

int mlx_node_namer_free(mlx_node_namer namer) {
  struct lc_namer *n = namer.ctx;
  if (!n) return 0;
  for (size_t i = 0; i < n->len; i++) {
    free(n->strs[i]);
    lc_node_release(n->nodes[i]);
  }
  free(n->strs);
  free(n->nodes);
  lc_ptrmap_free(&n->names);
  free(n);
  return 0;
}

/* Records (or replaces) the name of node; the namer holds a reference to
 * the node, so a freed array's address cannot inherit its name. */
static int namer_put(struct lc_namer *n, struct lc_node *node, const char *name) {
  intptr_t old;
  if (lc_ptrmap_get(&n->names, node, &old)) {
    char *d = strdup(name);
    if (!d) return lc_error("out of memory");
    free(n->strs[old]);
    n->strs[old] = d;
    return 0;
  }
  if (n->len == n->cap) {
    size_t ncap = n->cap ? 2 * n->cap : 16;
    char **ns = realloc(n->strs, ncap * sizeof *ns);
    if (ns) n->strs = ns;
    struct lc_node **nn = ns ? realloc(n->nodes, ncap * sizeof *nn) : NULL;
    if (!nn) return lc_error("out of memory");
    n->nodes = nn;
    n->cap = ncap;
  }
  char *d = strdup(name);
  if (!d) return lc_error("out of memory");
  if (lc_ptrmap_put(&n->names, node, (intptr_t)n->len)) {
    free(d);
    return 1;
  }
  n->strs[n->len] = d;
  n->nodes[n->len++] = lc_node_retain(node);
  return 0;
}

int mlx_node_namer_set_name(mlx_node_namer namer, const mlx_array arr, const char *name) {
  if (!namer.ctx) return lc_error("mlx_node_namer_set_name: empty namer");
  LC_CHECK_ARR("mlx_node_namer_set_name", arr);
  if (!name) return lc_error("mlx_node_namer_set_name: name is NULL");
  return namer_put(namer.ctx, lc_arr(arr), name);
}

int mlx_node_namer_get_name(const char **name, mlx_node_namer namer, const mlx_array arr) {
  LC_CHECK_RES("mlx_node_namer_get_name", name);
  if (!namer.ctx) return lc_error("mlx_node_namer_get_name: empty namer");
  LC_CHECK_ARR("mlx_node_namer_get_name", arr);
  struct lc_namer *n = namer.ctx;
  intptr_t i;
  if (!lc_ptrmap_get(&n->names, arr.ctx, &i)) {
    /* MLX names unnamed arrays on first request */
    char buf[16];
    size_t k = n->len, p = sizeof buf - 1;
    buf[p] = 0;
    do {
      buf[--p] = (char)('A' + k % 26);
      k = k / 26;
    } while (k-- > 0);
    if (namer_put(n, lc_arr(arr), buf + p)) return 1;
    lc_ptrmap_get(&n->names, arr.ctx, &i);
  }
  *name = n->strs[i];
  return 0;
}

/* The tape of the graph behind outputs, leaves included, inputs first. */
static int walk(const char *fn, mlx_vector_array outputs, struct lc_tape *tape,
                struct lc_node ***outs, size_t *nout) {
  if (lc_api_vector_nodes(fn, outputs, outs, nout)) return 1;
  if (lc_graph_tape(*outs, *nout, 1, tape)) {
    free(*outs);
    return 1;
  }
  return 0;
}

static const char *name_of(mlx_node_namer namer, struct lc_node *n) {
  const char *s = "?";
  mlx_node_namer_get_name(&s, namer, (mlx_array){n});
  return s;
}

/* Unevaluated graphs hold leaves as inputs; the tape lists only nodes with
 * work, so leaves are named when first met as inputs. */
int mlx_print_graph(FILE *os, const mlx_node_namer namer_in, const mlx_vector_array outputs) {
  if (!os) return lc_error("mlx_print_graph: stream is NULL");
  mlx_node_namer namer = namer_in.ctx ? namer_in : mlx_node_namer_new();
  struct lc_tape tape;
  struct lc_node **outs;
  size_t nout;
  if (!namer.ctx || walk("mlx_print_graph", outputs, &tape, &outs, &nout)) {
    if (!namer_in.ctx) mlx_node_namer_free(namer);
    return 1;
  }
  for (size_t i = 0; i < tape.len; i++) {
    struct lc_node *n = tape.nodes[i];
    if (n->op == LC_OP_NONE) continue;
    fprintf(os, "%s", lc_prims[n->op]->name);
    for (int k = 0; k < n->nin; k++) fprintf(os, " %s", name_of(namer, n->in[k]));
    fprintf(os, " -> %s\n", name_of(namer, n));
  }
  free(tape.nodes);
  free(outs);
  if (!namer_in.ctx) mlx_node_namer_free(namer);
  return 0;
}

int mlx_export_to_dot(FILE *os, const mlx_node_namer namer_in, const mlx_vector_array outputs) {
  if (!os) return lc_error("mlx_export_to_dot: stream is NULL");
  mlx_node_namer namer = namer_in.ctx ? namer_in : mlx_node_namer_new();
  struct lc_tape tape;
  struct lc_node **outs;
  size_t nout;
  if (!namer.ctx || walk("mlx_export_to_dot", outputs, &tape, &outs, &nout)) {
    if (!namer_in.ctx) mlx_node_namer_free(namer);
    return 1;
  }
  fprintf(os, "digraph {\n  rankdir = LR;\n");
  char shape[128];
  for (size_t i = 0; i < tape.len; i++) {
    struct lc_node *n = tape.nodes[i];
    for (int k = 0; k < n->nin; k++) {
      struct lc_node *c = n->in[k];
      if (c->op == LC_OP_NONE)
        fprintf(os, "  \"%p\" [label=\"%s\\n%s %s\", shape=box];\n", (void *)c,
                name_of(namer, c), lc_dtype_name(c->dtype),
                lc_shape_str(c->ndim, c->shape, shape, sizeof shape));
      fprintf(os, "  \"%p\" -> \"%p\";\n", (void *)c, (void *)n);
    }
    if (n->op != LC_OP_NONE || !n->nin)
      fprintf(os, "  \"%p\" [label=\"%s\\n%s\\n%s %s\"%s];\n", (void *)n, name_of(namer, n),
              lc_prims[n->op]->name, lc_dtype_name(n->dtype),
              lc_shape_str(n->ndim, n->shape, shape, sizeof shape),
              n->op == LC_OP_NONE ? ", shape=box" : "");
  }
  fprintf(os, "}\n");
  free(tape.nodes);
  free(outs);
  if (!namer_in.ctx) mlx_node_namer_free(namer);
  return 0;
}
