/* Transformation rules of FUSED nodes: a region is expanded back into the
 * primitives it fused (lazy nodes over the FUSED node's inputs, exactly the
 * graph the trace recorded, up to the broadcasts fusion absorbed), and the
 * transform runs on that graph. So a compiled function under grad, jvp or
 * vmap is differentiated through the rules of its instructions; nothing
 * depends on fusion having happened. */
#include <stdlib.h>

#include "compile/compile.h"
#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/prim.h"
#include "ops/shape.h"
#include "transforms/transforms.h"

/* v (a value of kind `from` for region shape F) as a value of kind `to`
 * (FULL reads a ROW value repeated along the row). New reference. */
static struct lc_node *as_kind(struct lc_node *v, int from, int to, int ndim, const int *F) {
  int sh[ndim > 0 ? ndim : 1];
  int nd = lc_fused_kind_shape(to, ndim, F, sh);
  if (from == to) return lc_node_retain(v);
  if (from == LC_FK_FULL) {
    lc_error("internal: fused region reads a full value per row");
    return NULL;
  }
  if (to == LC_FK_ROW_DROP) return lc_reshape(v, nd, sh);
  struct lc_node *k = v;
  if (from == LC_FK_ROW_DROP) { /* (O...) -> (O..., 1) */
    int ksh[ndim > 0 ? ndim : 1];
    int knd = lc_fused_kind_shape(LC_FK_ROW_KEEP, ndim, F, ksh);
    if (!(k = lc_reshape(v, knd, ksh))) return NULL;
  } else {
    lc_node_retain(k);
  }
  struct lc_node *r = lc_broadcast_to(k, nd, sh);
  lc_node_release(k);
  return r;
}

/* The region of FUSED node n (a single node or a tuple) over inputs in:
 * outs[k] (new references) for each region output. */
static int expand(const struct lc_node *n, struct lc_node *const *in, struct lc_node **outs) {
  const struct lc_fused_hdr *h = n->params;
  const struct lc_fused_in *fin = lc_fused_ins_in(h);
  const struct lc_fused_ins *fi = lc_fused_instrs(h);
  const struct lc_fused_out *fo = lc_fused_outs(h);
  int ndim = h->ndim;
  int F[ndim > 0 ? ndim : 1];
  for (int d = 0; d < ndim; d++) F[d] = lc_fused_shape(h)[d];
  struct lc_node **v = calloc((size_t)h->ninstr + 1, sizeof *v);
  if (!v) return lc_error("out of memory");
  int rc = 1;
  for (int m = 0; m < h->ninstr; m++) {
    const struct lc_fused_ins *x = &fi[m];
    bool reduce = x->op == LC_OP_REDUCE;
    int want = reduce ? LC_FK_FULL : x->kind;
    struct lc_node *args[LC_FUSED_MAXARG];
    int k = 0;
    for (; k < x->nin; k++) {
      int a = x->arg[k];
      if (a >= 0) {
        args[k] = as_kind(v[a], fi[a].kind, want, ndim, F);
      } else {
        int sh[ndim > 0 ? ndim : 1];
        int nd = lc_fused_kind_shape(fin[-a - 1].mode, ndim, F, sh);
        struct lc_node *b = lc_broadcast_to(in[-a - 1], nd, sh);
        args[k] = b ? as_kind(b, fin[-a - 1].mode, want, ndim, F) : NULL;
        lc_node_release(b);
      }
      if (!args[k]) break;
    }
    if (k == x->nin) {
      int sh[ndim > 0 ? ndim : 1];
      int nd = lc_fused_kind_shape(x->kind, ndim, F, sh);
      const void *params = x->params_size ? (const char *)h + x->params_off : NULL;
      v[m] = lc_node_new_op(x->op, (mlx_dtype)x->dtype, nd, sh, x->nin, args, params,
                            (size_t)x->params_size);
    }
    lc_rule_release(args, k);
    if (!v[m]) goto done;
  }
  for (int o = 0; o < h->nout; o++) outs[o] = lc_node_retain(v[fo[o].ins]);
  rc = 0;
done:
  lc_rule_release(v, h->ninstr);
  free(v);
  return rc;
}

/* Tracers of n's inputs (identity views), so the expanded graph's walk
 * stops at them. */
static int tracers(const struct lc_node *n, struct lc_node **tr) {
  for (int k = 0; k < n->nin; k++)
    if (!(tr[k] = lc_tracer(n->in[k]))) {
      lc_rule_release(tr, k);
      return 1;
    }
  return 0;
}

int lc_fused_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                 struct lc_node **out) {
  const struct lc_fused_hdr *h = n->params;
  int nin = n->nin, nout = h->nout;
  struct lc_node *tr[nin], *outs[nout], *grads[nin];
  if (tracers(n, tr)) return 1;
  int rc = expand(n, tr, outs);
  if (!rc) {
    rc = lc_vjp_graph(nin, tr, nout, outs, cot, grads);
    lc_rule_release(outs, nout);
  }
  if (!rc) {
    for (int j = 0; j < nargs; j++) {
      out[j] = grads[argnums[j]];
      grads[argnums[j]] = NULL;
    }
    lc_rule_release(grads, nin);
  }
  lc_rule_release(tr, nin);
  return rc;
}

int lc_fused_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  const struct lc_fused_hdr *h = n->params;
  int nin = n->nin, nout = h->nout;
  struct lc_node *tr[nin], *outs[nout];
  if (tracers(n, tr)) return 1;
  int rc = expand(n, tr, outs);
  if (!rc) {
    rc = lc_jvp_graph(nin, tr, tan, nout, outs, out);
    lc_rule_release(outs, nout);
  }
  lc_rule_release(tr, nin);
  return rc;
}

int lc_fused_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                  struct lc_node **out, int *out_ax) {
  const struct lc_fused_hdr *h = n->params;
  int nin = n->nin, nout = h->nout;
  struct lc_node *s_in[nin], *outs[nout];
  int zeros[nout];
  for (int o = 0; o < nout; o++) zeros[o] = 0;
  for (int k = 0; k < nin; k++) {
    s_in[k] = ax[k] == -1 ? lc_node_retain(n->in[k]) : lc_tracer(n->in[k]);
    if (!s_in[k]) {
      lc_rule_release(s_in, k);
      return 1;
    }
  }
  int rc = expand(n, s_in, outs);
  if (!rc) {
    rc = lc_vmap_graph(nin, in, s_in, ax, nout, outs, zeros, out);
    lc_rule_release(outs, nout);
  }
  for (int o = 0; !rc && o < nout; o++) out_ax[o] = 0;
  lc_rule_release(s_in, nin);
  return rc;
}
