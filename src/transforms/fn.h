/* Transforms of functions (closures), on top of the graph engines: what
 * mlx_vjp, mlx_jvp, mlx_value_and_grad and vmap do, for the API layer and
 * for custom transforms. Arrays are borrowed; results are malloc'd arrays
 * of new references. Each returns 0, or 1 after reporting, leaving
 * nothing behind. */
#ifndef LC_TRANSFORMS_FN_H
#define LC_TRANSFORMS_FN_H

#include <stddef.h>

#include "api/handles.h"

/* vjp of f at primals (all of them differentiated). Cotangents pair with
 * the outputs in order, skipping outputs that are stop_gradient nodes;
 * there must be at least as many as those outputs, each of its output's
 * shape (cast to its dtype). Sets *outs and *nout to f's outputs and
 * grads[0..nprim) to the gradients. */
int lc_fn_vjp(struct lc_closure *f, int nprim, struct lc_node *const *primals, int ncot,
              struct lc_node *const *cot, struct lc_node ***outs, size_t *nout,
              struct lc_node **grads);

/* jvp of f: tan[i] of primals[i]'s shape (NULL = zero). *outs, *tout: f's
 * outputs and their tangents (*nout of each). */
int lc_fn_jvp(struct lc_closure *f, int nprim, struct lc_node *const *primals,
              struct lc_node *const *tan, struct lc_node ***outs, struct lc_node ***tout,
              size_t *nout);

/* value_and_grad: f's outputs (the first must be a scalar; the others are
 * returned through stop_gradient) and the gradient of the first with
 * respect to the inputs listed in argnums (MLX's rules: negative counts
 * from the end, no repeats, at least one; returned in ascending order). */
int lc_fn_value_and_grad(struct lc_closure *f, int nin, struct lc_node *const *in,
                         const int *argnums, int nargs, struct lc_node ***outs, size_t *nout,
                         struct lc_node ***grads, size_t *ngrads);

/* vmap of f over in with in_axes (-1 unbatched) and out_axes (NULL: all
 * 0). */
int lc_fn_vmap(struct lc_closure *f, int nin, struct lc_node *const *in, const int *in_axes,
               const int *out_axes, size_t nout_axes, struct lc_node ***outs, size_t *nout);

/* vmap's trace step over f: s_in[0..nin) and f's outputs over them. */
int lc_fn_vmap_trace(struct lc_closure *f, int nin, struct lc_node *const *in, const int *in_axes,
                     struct lc_node **s_in, struct lc_node ***s_out, size_t *nout);

#endif
