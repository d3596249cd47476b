/* Tracing: runs a function once on placeholder inputs and turns the graph it
 * builds into a program.
 *
 * Placeholders are nodes without data (op PLACEHOLDER); evaluating one is
 * an error, and lc_eval is forbidden on this thread while the function
 * runs. Everything the outputs reach that does not depend on a placeholder
 * (arrays captured by the closure, constants it creates) is evaluated when
 * the function returns and becomes a read-only constant of the program, so
 * programs never hold lazy graphs and can be shared across threads.
 * Broadcast views are kept as instructions (see mark()).
 * An array of an enclosing trace (placeholders of an outer compile or
 * vmap, tracers of an outer vjp or jvp, and anything built on them) that
 * the function captures instead of taking it as an input cannot be a
 * constant: the trace gives up (LC_TRACE_CAPTURES) and the compiled
 * function runs as itself inside the enclosing trace instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/compile.h"
#include "core/error.h"
#include "core/graph.h"
#include "core/ptrmap.h"
#include "ops/prim.h"

static _Thread_local long traces_run;

long lc_compile_trace_count(void) { return traces_run; }

static int placeholder_eval(struct lc_node *n) {
  (void)n;
  return lc_error("cannot evaluate an array that depends on the inputs of a function being "
                  "traced (compile, vmap); return it from the function instead");
}

const struct lc_prim lc_prim_placeholder = {.name = "placeholder", .eval_cpu = placeholder_eval};

/* Dependency marks in the tape walk. */
enum { DEP_NONE = 0, DEP_OURS = 1, DEP_FOREIGN = 2 };

struct walk {
  struct lc_tape tape;
  struct lc_ptrmap index; /* node -> tape position */
  unsigned char *dep;
  bool nested; /* another trace encloses this one on this thread */
};

/* Whether n (borrowed) is where traced-ness of an enclosing trace enters
 * the graph: flagged, but none of its unevaluated inputs is (a tracer, an
 * array built on evaluated traced values, an outer placeholder). */
static bool foreign_source(struct walk *w, const struct lc_node *n) {
  if (!w->nested || !(n->flags & LC_NF_TRACED)) return false;
  for (int k = 0; k < n->nin; k++)
    if (!n->in[k]->buf && (n->in[k]->flags & LC_NF_TRACED)) return false;
  return true;
}

/* Marks what depends on our placeholders. LC_TRACE_CAPTURES (nothing
 * reported) when an enclosing trace's arrays are reached; 1 after
 * reporting. */
static int mark(struct walk *w, struct lc_ptrmap *ph, struct lc_node *const *outs, size_t nout) {
  for (size_t i = 0; i < w->tape.len; i++)
    if (lc_ptrmap_put(&w->index, w->tape.nodes[i], (intptr_t)i)) return 1;
  w->dep = calloc(w->tape.len + 1, 1);
  if (!w->dep) return lc_error("out of memory");
  for (size_t i = 0; i < w->tape.len; i++) {
    struct lc_node *n = w->tape.nodes[i];
    if (n->op == LC_OP_PLACEHOLDER && lc_ptrmap_get(ph, n, NULL)) {
      w->dep[i] = DEP_OURS;
      continue;
    }
    if (n->op == LC_OP_PLACEHOLDER || foreign_source(w, n)) {
      w->dep[i] = DEP_FOREIGN;
      continue;
    }
    unsigned char d = 0;
    for (int k = 0; k < n->nin; k++) {
      intptr_t j;
      if (!n->in[k]->buf && lc_ptrmap_get(&w->index, n->in[k], &j)) d |= w->dep[j];
      else if (w->nested && n->in[k]->buf && (n->in[k]->flags & LC_NF_TRACED)) d |= DEP_FOREIGN;
    }
    /* Broadcast views stay in the program even over constants: they cost
     * nothing, fusion absorbs them, and shapeless replay re-derives their
     * shape (zeros_like(x) is a broadcast scalar). */
    if (lc_prims[n->op]->flags & LC_PF_BROADCAST) d |= DEP_OURS;
    w->dep[i] = d;
  }
  for (size_t o = 0; o < nout; o++)
    if (w->nested && outs[o]->buf && (outs[o]->flags & LC_NF_TRACED)) return LC_TRACE_CAPTURES;
  for (size_t i = 0; i < w->tape.len; i++)
    if (w->dep[i] & DEP_FOREIGN) {
      if (w->nested) return LC_TRACE_CAPTURES;
      return lc_error("compile: the function uses an array that depends on the inputs of a "
                      "traced function that has returned; pass it as an input instead");
    }
  return 0;
}

static bool is_dep(struct walk *w, struct lc_node *n) {
  intptr_t j;
  return !n->buf && lc_ptrmap_get(&w->index, n, &j) && w->dep[j];
}

/* Evaluates the input-independent nodes that dependent nodes or outputs use. */
static int eval_constants(struct walk *w, struct lc_node **outs, size_t nout) {
  struct lc_node **roots = malloc(sizeof *roots * (w->tape.len + nout + 1));
  if (!roots) return lc_error("out of memory");
  size_t nr = 0;
  struct lc_ptrmap seen;
  lc_ptrmap_init(&seen);
  int rc = 0;
  for (size_t i = 0; i < w->tape.len + nout && !rc; i++) {
    struct lc_node *n = i < w->tape.len ? w->tape.nodes[i] : NULL;
    if (n && !w->dep[i]) continue;
    int cnt = n ? n->nin : 1;
    for (int k = 0; k < cnt && !rc; k++) {
      struct lc_node *c = n ? n->in[k] : outs[i - w->tape.len];
      if (c->buf || is_dep(w, c) || lc_ptrmap_get(&seen, c, NULL)) continue;
      rc = lc_ptrmap_put(&seen, c, 0);
      roots[nr++] = lc_node_retain(c);
    }
  }
  lc_ptrmap_free(&seen);
  if (!rc && nr) {
    int depth = lc_eval_forbid_depth();
    lc_eval_forbid(-depth);
    rc = lc_eval(roots, nr);
    lc_eval_forbid(depth);
  }
  for (size_t i = 0; i < nr; i++) lc_node_release(roots[i]);
  free(roots);
  return rc;
}

/* Value id of n (evaluated: constant; placeholder: input; else traced). */
static int add_const(struct lc_cprog *p, struct lc_ptrmap *vid, struct lc_node *n, int *cap) {
  if (lc_ptrmap_get(vid, n, NULL)) return 0;
  if (p->nconst == *cap) {
    int ncap = *cap ? *cap * 2 : 16;
    struct lc_node **nc = realloc(p->consts, sizeof *nc * (size_t)ncap);
    if (!nc) return lc_error("out of memory");
    p->consts = nc;
    *cap = ncap;
  }
  int id = lc_cprog_add_val(p, n->dtype, n->ndim, n->shape);
  if (id < 0) return 1;
  p->consts[p->nconst++] = lc_node_retain(n);
  return lc_ptrmap_put(vid, n, id);
}

static int build(struct walk *w, struct lc_node **ph, int nin, struct lc_node **outs,
                 size_t nout, struct lc_cprog *p) {
  struct lc_ptrmap vid;
  lc_ptrmap_init(&vid);
  int rc = 1, ccap = 0;
  int *args = NULL;
  for (int i = 0; i < nin; i++)
    if (lc_cprog_add_val(p, ph[i]->dtype, ph[i]->ndim, ph[i]->shape) < 0 ||
        lc_ptrmap_put(&vid, ph[i], i))
      goto done;
  /* Constants first: ids [nin, nin + nconst). */
  for (size_t i = 0; i < w->tape.len; i++) {
    struct lc_node *n = w->tape.nodes[i];
    if (!w->dep[i] || n->op == LC_OP_PLACEHOLDER) continue;
    for (int k = 0; k < n->nin; k++)
      if (n->in[k]->buf && add_const(p, &vid, n->in[k], &ccap)) goto done;
  }
  for (size_t o = 0; o < nout; o++)
    if (outs[o]->buf && add_const(p, &vid, outs[o], &ccap)) goto done;
  int maxin = 1;
  for (size_t i = 0; i < w->tape.len; i++) /* non-dependent nodes may be gone */
    if (w->dep[i] && w->tape.nodes[i]->nin > maxin) maxin = w->tape.nodes[i]->nin;
  args = malloc(sizeof(int) * (size_t)maxin);
  if (!args) {
    lc_error("out of memory");
    goto done;
  }
  for (size_t i = 0; i < w->tape.len; i++) {
    struct lc_node *n = w->tape.nodes[i];
    if (!w->dep[i] || n->op == LC_OP_PLACEHOLDER) continue;
    for (int k = 0; k < n->nin; k++) {
      intptr_t v;
      if (!lc_ptrmap_get(&vid, n->in[k], &v)) {
        lc_error("internal: compile trace lost an argument");
        goto done;
      }
      args[k] = (int)v;
    }
    if (n->op == LC_OP_BROADCAST && n->nin == 1 &&
        lc_shape_equal(n->ndim, n->shape, n->in[0]->ndim, n->in[0]->shape)) {
      /* an identity view (a transform's tracer) is its input; one with a
       * shape partner (lc_broadcast_like) stays, the partner's shape may
       * change */
      if (lc_ptrmap_put(&vid, n, args[0])) goto done;
      continue;
    }
    int id = lc_cprog_add_val(p, n->dtype, n->ndim, n->shape);
    int at = id < 0 ? -1 : lc_cprog_add_instr(p, n->op, n->nin, args, 1, &id, n->params,
                                                n->params_size);
    if (at < 0) goto done;
    p->instrs[at].dev = n->dev;
    p->instrs[at].stream = n->stream;
    if (lc_ptrmap_put(&vid, n, id)) goto done;
  }
  p->outs = malloc(sizeof(int) * (nout + 1));
  if (!p->outs) {
    lc_error("out of memory");
    goto done;
  }
  for (size_t o = 0; o < nout; o++) {
    intptr_t v;
    if (!lc_ptrmap_get(&vid, outs[o], &v)) {
      lc_error("internal: compile trace lost an output");
      goto done;
    }
    p->outs[o] = (int)v;
  }
  p->nout = (int)nout;
  rc = 0;
done:
  free(args);
  lc_ptrmap_free(&vid);
  return rc;
}

int lc_compile_trace(struct lc_closure *c, int nin, const mlx_dtype *dtypes, const int *ndims,
                     const int *const *shapes, struct lc_cprog **out) {
  struct lc_node **ph = calloc((size_t)nin + 1, sizeof *ph);
  struct lc_node **outs = NULL;
  size_t nout = 0;
  struct lc_cprog *p = NULL;
  struct walk w;
  memset(&w, 0, sizeof w);
  lc_ptrmap_init(&w.index);
  struct lc_ptrmap phmap;
  lc_ptrmap_init(&phmap);
  int rc = 1;
  if (!ph) {
    lc_error("out of memory");
    goto done;
  }
  for (int i = 0; i < nin; i++) {
    ph[i] = lc_node_new_op(LC_OP_PLACEHOLDER, dtypes[i], ndims[i], shapes[i], 0, NULL, &i,
                           sizeof i);
    if (!ph[i] || lc_ptrmap_put(&phmap, ph[i], i)) goto done;
  }
  traces_run++;
  w.nested = lc_tracing();
  lc_trace_enter();
  lc_eval_forbid(1);
  int crc = lc_closure_call_nodes(c, ph, (size_t)nin, &outs, &nout);
  lc_eval_forbid(-1);
  lc_trace_leave();
  if (crc) {
    char why[512];
    snprintf(why, sizeof why, "%s", lc_last_error());
    lc_error("compile: the function failed while being traced: %s", why);
    outs = NULL;
    nout = 0;
    goto done;
  }
  for (size_t o = 0; o < nout; o++)
    if (!outs[o]) {
      lc_error("compile: output %zu of the traced function is an empty array", o);
      goto done;
    }
  if (lc_graph_tape(outs, nout, 0, &w.tape)) goto done;
  int mrc = mark(&w, &phmap, outs, nout);
  if (mrc) {
    rc = mrc;
    goto done;
  }
  if (eval_constants(&w, outs, nout)) goto done;
  p = lc_cprog_new(nin);
  if (!p || build(&w, ph, nin, outs, nout, p)) goto done;
  rc = 0;
done:
  if (rc) {
    lc_cprog_free(p);
    p = NULL;
  }
  for (size_t o = 0; o < nout; o++) lc_node_release(outs[o]);
  free(outs);
  for (int i = 0; ph && i < nin; i++) lc_node_release(ph[i]);
  free(ph);
  free(w.tape.nodes);
  free(w.dep);
  lc_ptrmap_free(&w.index);
  lc_ptrmap_free(&phmap);
  *out = p;
  return rc;
}
