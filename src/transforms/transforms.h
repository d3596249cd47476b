/* Function transforms over lazy graphs: reverse mode (vjp), forward mode
 * (jvp) and vectorising map (vmap), plus helpers for the rules that
 * primitives put in their lc_prim rows (ops/prim.h says what a rule gets
 * and returns).
 *
 * The engines work on graphs, not functions: a transform runs the user's
 * function once on "tracer" inputs, then walks the graph between the
 * tracers and the outputs, calling each primitive's rule. All their state
 * is local to the call, so transforms run concurrently on any number of
 * threads; the only thread state is the eval hooks in core/graph.h.
 *
 * Tracers:
 *  - vjp/jvp: each primal gets a distinct identity view (a BROADCAST node
 *    to its own shape) whose input is the primal itself, so the result is
 *    still connected to the primal (nested transforms see through it) and
 *    two arguments given the same array stay distinct. While the function
 *    runs, lc_eval keeps evaluated graphs (lc_eval_keep_graph), so a
 *    function that evaluates intermediates is still differentiated.
 *  - vmap: each batched input gets a PLACEHOLDER of its per-example shape;
 *    evaluating it is an error, as in compile.
 * The walk stops at tracers and at leaves; stop_gradient blocks vjp/jvp
 * (its node never depends on the tracers), not vmap. */
#ifndef LC_TRANSFORMS_H
#define LC_TRANSFORMS_H

#include <stdbool.h>

#include "core/node.h"

/* The tracer of primal x: a new lazy identity view of x. */
struct lc_node *lc_tracer(struct lc_node *x);

/* Reverse mode over the graph from tracers prim[0..nprim) to outs[0..nout).
 * cot[o] is output o's cotangent (NULL: none; it is cast to the output's
 * dtype). grads[i] receives a new reference to the cotangent of prim[i]
 * (zeros when no output depends on it). 0, or 1 after reporting. */
int lc_vjp_graph(int nprim, struct lc_node *const *prim, int nout, struct lc_node *const *outs,
                 struct lc_node *const *cot, struct lc_node **grads);

/* Forward mode: tan[i] is prim[i]'s tangent (its shape; NULL = zero).
 * tout[o] receives output o's tangent (zeros when it does not depend on
 * the tracers). 0, or 1 after reporting. */
int lc_jvp_graph(int nprim, struct lc_node *const *prim, struct lc_node *const *tan, int nout,
                 struct lc_node *const *outs, struct lc_node **tout);

/* vmap's replace step: s_in[i] stands for in[i] with its batch axis
 * in_axes[i] removed (in_axes[i] == -1: unbatched, s_in[i] is in[i]).
 * res[o] receives s_out[o] computed over the batch, its batch axis at
 * out_axes[o]. 0, or 1 after reporting. */
int lc_vmap_graph(int nin, struct lc_node *const *in, struct lc_node *const *s_in,
                  const int *in_axes, int nout, struct lc_node *const *s_out,
                  const int *out_axes, struct lc_node **res);

/* vmap's trace step: s_in[i] (new references) are placeholders for the
 * batched inputs (in[i] itself for unbatched ones); checks the axes and
 * that the batch sizes agree. 0, or 1 after reporting. */
int lc_vmap_inputs(int nin, struct lc_node *const *in, const int *in_axes, struct lc_node **s_in);

/* ---- for rule writers (rules.c) ---- */

/* cot summed down to shape (ndim, shape), which broadcasts to cot's shape
 * (numpy rules): leading axes summed away, extent-1 axes summed with
 * keepdims. A new reference (cot itself when the shapes are equal). */
struct lc_node *lc_rule_unbroadcast(struct lc_node *cot, int ndim, const int *shape);

/* x with its batch axis (ax, -1 = none) moved to the front; unbatched x is
 * given a leading axis of extent 1 when `expand` (so it broadcasts against
 * batched operands), else returned as is. New reference. */
struct lc_node *lc_rule_batch_front(struct lc_node *x, int ax, bool expand);

/* x with its batch axis (ax, -1 = none) at the front, an unbatched x
 * broadcast along a new leading axis of extent b. New reference. */
struct lc_node *lc_rule_batch_front_full(struct lc_node *x, int ax, int b);

/* The batch size of a vmap rule's batched inputs. */
int lc_rule_batch_size(int nin, struct lc_node *const *in, const int *ax);

/* vmap for any LC_PF_ELEMWISE primitive: batch axes to the front,
 * unbatched inputs broadcast, then the same op. */
int lc_rule_vmap_elementwise(struct lc_node *n, struct lc_node *const *in, const int *ax,
                             struct lc_node **out, int *out_ax);

/* Rules of outputs that do not depend on the inputs' values (comparisons,
 * integer and index outputs, shape-derived values): every result zero
 * (NULL). */
int lc_rule_zero_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                     struct lc_node **out);
int lc_rule_zero_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out);

/* A node of n's op, params, dtype and shape over new inputs (shape-
 * preserving replacement; used when a node's inputs changed but not their
 * shapes). New reference or NULL after reporting. */
struct lc_node *lc_rule_clone(struct lc_node *n, struct lc_node *const *in);

/* A rule's temporary nodes, released together when the rule ends:
 *   struct lc_rule_scope sc = {.n = 0};
 *   LC_RULE_TRY(sc, t, lc_exp(x));   (goto done when a builder failed)
 *   ...
 * done:
 *   return lc_rule_scope_end(&sc, result, out);
 * lc_rule_keep records x (NULL passes through); a rule keeping more than
 * LC_RULE_SCOPE_CAP nodes is reported as an internal error. */
#define LC_RULE_SCOPE_CAP 96
struct lc_rule_scope {
  struct lc_node *v[LC_RULE_SCOPE_CAP];
  int n;
};
struct lc_node *lc_rule_keep(struct lc_rule_scope *s, struct lc_node *x);
/* Releases the scope; *out receives `final` retained (or NULL). Returns 1
 * when final is NULL (a builder failed and reported). */
int lc_rule_scope_end(struct lc_rule_scope *s, struct lc_node *final, struct lc_node **out);
#define LC_RULE_TRY(sc, var, expr)                          \
  do {                                                      \
    if (!((var) = lc_rule_keep(&(sc), (expr)))) goto done; \
  } while (0)

/* Releases the non-NULL entries of out[0..n) and clears them (out may be
 * NULL when n is 0 or out was never allocated). */
void lc_rule_release(struct lc_node **out, size_t n);

/* Names of the primitives without a vjp / jvp / vmap rule, for the gap
 * list a test prints. Writes up to max names; returns how many lack it.
 * which: 0 vjp, 1 jvp, 2 vmap. */
int lc_rule_missing(int which, const char **names, int max);

#endif
