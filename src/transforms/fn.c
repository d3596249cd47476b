/* Function-level transforms: run the function on tracers, then hand the
 * graph to the engines (transforms.h). */
#include "transforms/fn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/graph.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/prim.h"
#include "ops/unary.h"
#include "transforms/transforms.h"

/* Calls f on in (borrowed) keeping evaluated graphs attached; a failure is
 * reported again with the transform's name in front. */
static int call_traced(const char *what, struct lc_closure *f, struct lc_node *const *in,
                       size_t nin, struct lc_node ***outs, size_t *nout, bool forbid_eval) {
  if (forbid_eval) lc_eval_forbid(1);
  lc_eval_keep_graph(1);
  lc_trace_enter();
  int rc = lc_closure_call_nodes(f, in, nin, outs, nout);
  lc_trace_leave();
  lc_eval_keep_graph(-1);
  if (forbid_eval) lc_eval_forbid(-1);
  if (rc) {
    char why[512];
    snprintf(why, sizeof why, "%s", lc_last_error());
    return lc_error("%s: the function failed: %s", what, why);
  }
  for (size_t o = 0; o < *nout; o++)
    if (!(*outs)[o]) {
      lc_rule_release(*outs, *nout);
      free(*outs);
      return lc_error("%s: output %zu of the function is an empty array", what, o);
    }
  return 0;
}

/* Tracers for primals[0..n); NULL after reporting. */
static struct lc_node **make_tracers(int n, struct lc_node *const *primals) {
  struct lc_node **tr = calloc((size_t)n + 1, sizeof *tr);
  if (!tr) {
    lc_error("out of memory");
    return NULL;
  }
  for (int i = 0; i < n; i++)
    if (!(tr[i] = lc_tracer(primals[i]))) {
      lc_rule_release(tr, (size_t)i);
      free(tr);
      return NULL;
    }
  return tr;
}

/* Pairs cotangents with outputs (stop_gradient outputs skipped) into
 * pairs[o] (borrowed; NULL for skipped outputs), checking count and shape. */
static int pair_cotangents(const char *what, struct lc_node **outs, size_t nout, int ncot,
                           struct lc_node *const *cot, struct lc_node **pairs, bool scalar_hint) {
  int c = 0;
  for (size_t o = 0; o < nout; o++) {
    pairs[o] = NULL;
    if (outs[o]->op == LC_OP_STOP_GRADIENT) continue;
    if (c >= ncot)
      return lc_error("%s: the number of outputs to compute gradients for (%zu) does not match "
                      "the number of cotangents (%d)",
                      what, nout, ncot);
    if (!lc_shape_equal(outs[o]->ndim, outs[o]->shape, cot[c]->ndim, cot[c]->shape)) {
      char a[64], b[64];
      return lc_error("%s: output shape %s does not match cotangent shape %s.%s", what,
                      lc_shape_str(outs[o]->ndim, outs[o]->shape, a, sizeof a),
                      lc_shape_str(cot[c]->ndim, cot[c]->shape, b, sizeof b),
                      scalar_hint ? " The function must return a scalar (an array of shape ())."
                                  : "");
    }
    pairs[o] = cot[c++];
  }
  return 0;
}

int lc_fn_vjp(struct lc_closure *f, int nprim, struct lc_node *const *primals, int ncot,
              struct lc_node *const *cot, struct lc_node ***outs, size_t *nout,
              struct lc_node **grads) {
  struct lc_node **tr = make_tracers(nprim, primals);
  if (!tr) return 1;
  struct lc_node **o = NULL, **pairs = NULL;
  size_t no = 0;
  int rc = call_traced("vjp", f, tr, (size_t)nprim, &o, &no, false);
  if (!rc) {
    pairs = malloc(sizeof *pairs * (no + 1));
    rc = !pairs ? lc_error("out of memory")
                : pair_cotangents("vjp", o, no, ncot, cot, pairs, false) ||
                      lc_vjp_graph(nprim, tr, (int)no, o, pairs, grads);
    if (rc) {
      lc_rule_release(o, no);
      free(o);
    }
  }
  free(pairs);
  lc_rule_release(tr, (size_t)nprim);
  free(tr);
  if (!rc) {
    *outs = o;
    *nout = no;
  }
  return rc;
}

int lc_fn_jvp(struct lc_closure *f, int nprim, struct lc_node *const *primals,
              struct lc_node *const *tan, struct lc_node ***outs, struct lc_node ***tout,
              size_t *nout) {
  for (int i = 0; i < nprim; i++)
    if (tan[i] && !lc_shape_equal(primals[i]->ndim, primals[i]->shape, tan[i]->ndim, tan[i]->shape)) {
      char a[64], b[64];
      return lc_error("jvp: the shape of input %d %s does not match the shape of its tangent %s",
                      i, lc_shape_str(primals[i]->ndim, primals[i]->shape, a, sizeof a),
                      lc_shape_str(tan[i]->ndim, tan[i]->shape, b, sizeof b));
    }
  struct lc_node **tr = make_tracers(nprim, primals);
  if (!tr) return 1;
  struct lc_node **o = NULL, **t = NULL, **tc = calloc((size_t)nprim + 1, sizeof *tc);
  size_t no = 0;
  int rc = !tc ? lc_error("out of memory") : 0;
  for (int i = 0; !rc && i < nprim; i++)
    if (tan[i] && !(tc[i] = lc_astype(tan[i], primals[i]->dtype))) rc = 1;
  if (!rc) rc = call_traced("jvp", f, tr, (size_t)nprim, &o, &no, false);
  if (!rc) {
    t = malloc(sizeof *t * (no + 1));
    rc = !t ? lc_error("out of memory") : lc_jvp_graph(nprim, tr, tc, (int)no, o, t);
    if (rc) {
      lc_rule_release(o, no);
      free(o);
      free(t);
    }
  }
  lc_rule_release(tc, (size_t)nprim);
  free(tc);
  lc_rule_release(tr, (size_t)nprim);
  free(tr);
  if (!rc) {
    *outs = o;
    *tout = t;
    *nout = no;
  }
  return rc;
}

/* The function value_and_grad differentiates: f with the inputs at argnums
 * replaced by the tracers it is called with, the outputs after the first
 * behind stop_gradient. */
struct vag_fn {
  struct lc_closure *f;
  int nin, nargs;
  struct lc_node *const *in;
  const int *argnums;
};

static int vag_call(mlx_vector_array *res, const mlx_vector_array vin, void *payload) {
  struct vag_fn *g = payload;
  struct lc_vec_array *tv = vin.ctx;
  struct lc_node **in = malloc(sizeof *in * ((size_t)g->nin + 1));
  if (!in) return lc_error("out of memory");
  memcpy(in, g->in, sizeof *in * (size_t)g->nin);
  for (int j = 0; j < g->nargs; j++) in[g->argnums[j]] = tv->items[j];
  struct lc_node **o = NULL;
  size_t no = 0;
  int rc = lc_closure_call_nodes(g->f, in, (size_t)g->nin, &o, &no);
  free(in);
  if (rc) return 1;
  for (size_t k = 1; k < no && !rc; k++) {
    if (!o[k]) continue;
    struct lc_node *s = lc_stop_gradient(o[k]);
    lc_node_release(o[k]);
    o[k] = s;
    if (!s) rc = 1;
  }
  if (!rc) rc = lc_vec_array_assign(res, o, no);
  lc_rule_release(o, no);
  free(o);
  return rc;
}

int lc_fn_value_and_grad(struct lc_closure *f, int nin, struct lc_node *const *in,
                         const int *argnums, int nargs, struct lc_node ***outs, size_t *nout,
                         struct lc_node ***grads, size_t *ngrads) {
  if (nargs <= 0) return lc_error("value_and_grad: at least one argument must be differentiated");
  int sorted[nargs];
  for (int j = 0; j < nargs; j++) {
    int a = argnums[j] < 0 ? argnums[j] + nin : argnums[j];
    if (a < 0 || a >= nin)
      return lc_error("value_and_grad: invalid argument number %d for a function with %d inputs",
                      argnums[j], nin);
    int p = j;
    while (p > 0 && sorted[p - 1] > a) {
      sorted[p] = sorted[p - 1];
      p--;
    }
    if (p > 0 && sorted[p - 1] == a)
      return lc_error("value_and_grad: repeated argument number %d", argnums[j]);
    sorted[p] = a;
  }
  struct vag_fn g = {f, nin, nargs, in, sorted};
  struct lc_closure *gc = lc_closure_make(vag_call, &g, NULL);
  if (!gc) return 1;
  struct lc_node **prim = malloc(sizeof *prim * (size_t)nargs);
  struct lc_node **gr = calloc((size_t)nargs, sizeof *gr);
  struct lc_node *one = lc_node_new_scalar(MLX_FLOAT32, 1.0);
  struct lc_node **o = NULL;
  size_t no = 0;
  int rc = 1;
  if (!prim || !gr) lc_error("out of memory");
  if (!prim || !gr || !one) goto done;
  for (int j = 0; j < nargs; j++) prim[j] = in[sorted[j]];
  /* The first output must be a scalar: checked here for the message. */
  struct lc_node **tr = make_tracers(nargs, prim);
  if (!tr) goto done;
  rc = call_traced("value_and_grad", gc, tr, (size_t)nargs, &o, &no, false);
  if (!rc && no == 0) {
    rc = lc_error("value_and_grad: the function returned no outputs; it must return a scalar");
    free(o);
    o = NULL;
  }
  if (!rc && o[0]->ndim != 0) {
    char a[64];
    rc = lc_error("value_and_grad: the function must return a scalar (an array of shape ()) as "
                  "its first output, got shape %s",
                  lc_shape_str(o[0]->ndim, o[0]->shape, a, sizeof a));
  }
  if (!rc) {
    struct lc_node *pairs[no];
    for (size_t k = 0; k < no; k++) pairs[k] = NULL;
    pairs[0] = one;
    rc = lc_vjp_graph(nargs, tr, (int)no, o, pairs, gr);
  }
  lc_rule_release(tr, (size_t)nargs);
  free(tr);
  if (rc && o) {
    lc_rule_release(o, no);
    free(o);
  }
done:
  lc_closure_release(gc);
  free(prim);
  lc_node_release(one);
  if (rc) {
    free(gr);
    return 1;
  }
  *outs = o;
  *nout = no;
  *grads = gr;
  *ngrads = (size_t)nargs;
  return 0;
}

int lc_fn_vmap_trace(struct lc_closure *f, int nin, struct lc_node *const *in, const int *in_axes,
                     struct lc_node **s_in, struct lc_node ***s_out, size_t *nout) {
  if (lc_vmap_inputs(nin, in, in_axes, s_in)) return 1;
  if (call_traced("vmap", f, s_in, (size_t)nin, s_out, nout, true)) {
    lc_rule_release(s_in, (size_t)nin);
    return 1;
  }
  return 0;
}

int lc_fn_vmap(struct lc_closure *f, int nin, struct lc_node *const *in, const int *in_axes,
               const int *out_axes, size_t nout_axes, struct lc_node ***outs, size_t *nout) {
  struct lc_node **s_in = calloc((size_t)nin + 1, sizeof *s_in);
  if (!s_in) return lc_error("out of memory");
  struct lc_node **so = NULL, **res = NULL;
  size_t no = 0;
  int rc = lc_fn_vmap_trace(f, nin, in, in_axes, s_in, &so, &no);
  if (rc) {
    free(s_in);
    return 1;
  }
  int *oax = calloc(no + 1, sizeof *oax);
  res = malloc(sizeof *res * (no + 1));
  if (!oax || !res) {
    rc = lc_error("out of memory");
  } else if (out_axes && nout_axes != no) {
    rc = lc_error("vmap: the number of out axes (%zu) must match the number of outputs (%zu)",
                  nout_axes, no);
  } else {
    for (size_t o = 0; out_axes && o < no; o++) oax[o] = out_axes[o];
    rc = lc_vmap_graph(nin, in, s_in, in_axes, (int)no, so, oax, res);
  }
  lc_rule_release(so, no);
  free(so);
  lc_rule_release(s_in, (size_t)nin);
  free(s_in);
  free(oax);
  if (rc) {
    free(res);
    return 1;
  }
  *outs = res;
  *nout = no;
  return 0;
}
