/* vmap: the trace step makes placeholders for the per-example inputs, the
 * replace step walks the traced graph from them and rebuilds every
 * dependent node with its primitive's vmap rule over the batched inputs.
 * Each rebuilt value carries the position of its batch axis (-1: the rule
 * found it unbatched); nodes that depend on the placeholders only through
 * unbatched values are rebuilt over their new inputs unchanged. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/prim.h"
#include "ops/shape.h"
#include "ops/tuple.h"
#include "transforms/transforms.h"
#include "transforms/walk.h"

int lc_vmap_inputs(int nin, struct lc_node *const *in, const int *in_axes, struct lc_node **s_in) {
  int bsize = -1;
  for (int i = 0; i < nin; i++) {
    int a = in_axes[i];
    if (a == -1) continue;
    if (in[i]->ndim == 0) return lc_error("vmap: cannot vmap input %d, which has zero dimensions", i);
    if (a < 0 || a >= in[i]->ndim)
      return lc_error("vmap: axis %d is invalid for input %d with %d dimensions", a, i,
                      in[i]->ndim);
    if (bsize >= 0 && in[i]->shape[a] != bsize)
      return lc_error("vmap: inconsistent axis sizes: %d and %d", in[i]->shape[a], bsize);
    bsize = in[i]->shape[a];
  }
  if (bsize < 0) return lc_error("vmap: at least one of in_axes must be batched (not -1)");
  for (int i = 0; i < nin; i++) {
    int a = in_axes[i];
    if (a == -1) {
      s_in[i] = lc_node_retain(in[i]);
      continue;
    }
    int sh[in[i]->ndim];
    for (int d = 0, e = 0; d < in[i]->ndim; d++)
      if (d != a) sh[e++] = in[i]->shape[d];
    s_in[i] = lc_node_new_op(LC_OP_PLACEHOLDER, in[i]->dtype, in[i]->ndim - 1, sh, 0, NULL, &i,
                             sizeof i);
    if (!s_in[i]) {
      lc_rule_release(s_in, i);
      return 1;
    }
  }
  return 0;
}

/* The output value v (batch axis a, -1 none) placed with its batch axis at
 * `to`; unbatched values are broadcast along a new axis of extent bsize. */
static struct lc_node *place_output(struct lc_node *v, int a, int to, int bsize, int o) {
  if (a == -1) {
    if (to < 0) to += v->ndim + 1;
    if (to < 0 || to > v->ndim) {
      lc_error("vmap: axis %d is invalid for output %d with %d dimensions", to, o, v->ndim + 1);
      return NULL;
    }
    struct lc_node *e = lc_expand_dims(v, 1, &to);
    if (!e) return NULL;
    int sh[v->ndim + 1];
    memcpy(sh, e->shape, sizeof(int) * (size_t)e->ndim);
    sh[to] = bsize;
    struct lc_node *b = lc_broadcast_to(e, e->ndim, sh);
    lc_node_release(e);
    return b;
  }
  if (to < 0) to += v->ndim;
  if (to < 0 || to >= v->ndim) {
    lc_error("vmap: axis %d is invalid for output %d with %d dimensions", to, o, v->ndim);
    return NULL;
  }
  return a == to ? lc_node_retain(v) : lc_moveaxis(v, a, to);
}

int lc_vmap_graph(int nin, struct lc_node *const *in, struct lc_node *const *s_in,
                  const int *in_axes, int nout, struct lc_node *const *s_out,
                  const int *out_axes, struct lc_node **res) {
  int bsize = -1, ntr = 0;
  struct lc_node **tr = malloc(sizeof *tr * (size_t)(nin + 1));
  if (!tr) return lc_error("out of memory");
  for (int i = 0; i < nin; i++)
    if (in_axes[i] != -1) {
      bsize = in[i]->shape[in_axes[i]];
      tr[ntr++] = s_in[i];
    }
  if (bsize < 0) {
    free(tr);
    return lc_error("vmap: at least one of in_axes must be batched (not -1)");
  }
  struct lc_twalk w;
  int rtr = lc_twalk_build(&w, ntr, tr, nout, s_out, false);
  free(tr);
  if (rtr) return 1;
  size_t len = w.len;
  struct lc_node **vals = calloc(len + 1, sizeof *vals);
  int *vax = malloc(sizeof(int) * (len + 1));
  struct lc_node ***tvals = calloc(len + 1, sizeof *tvals);
  int **tvax = calloc(len + 1, sizeof *tvax);
  int maxin = 1;
  for (size_t i = 0; i < len; i++)
    if (w.nodes[i]->nin > maxin) maxin = w.nodes[i]->nin;
  struct lc_node **vin = malloc(sizeof *vin * (size_t)maxin);
  int *vinax = malloc(sizeof(int) * (size_t)maxin);
  int rc = 1;
  if (!vals || !vax || !tvals || !tvax || !vin || !vinax) {
    lc_error("out of memory");
    goto done;
  }
  for (int i = 0; i < nin; i++) {
    long j = in_axes[i] == -1 ? -1 : lc_twalk_dep(&w, s_in[i]);
    if (j < 0) continue;
    vals[j] = lc_node_retain(in[i]);
    vax[j] = in_axes[i];
  }
  for (size_t i = 0; i < len; i++) {
    struct lc_node *n = w.nodes[i];
    if (!w.dep[i] || w.tracer[i]) continue;
    if (n->op == LC_OP_TUPLE_GET) {
      long t = lc_twalk_dep(&w, n->in[0]);
      if (tvals[t]) {
        int nt, k = lc_tuple_index(n, &nt);
        vals[i] = lc_node_retain(tvals[t][k]);
        vax[i] = tvax[t][k];
        if (!vals[i]) {
          lc_error("internal: vmap rule of %s gave no output %d", lc_prims[w.nodes[t]->op]->name, k);
          goto done;
        }
        continue;
      }
    }
    bool batched = false;
    for (int k = 0; k < n->nin; k++) {
      long j = lc_twalk_dep(&w, n->in[k]);
      vin[k] = j >= 0 ? vals[j] : n->in[k];
      vinax[k] = j >= 0 ? vax[j] : -1;
      batched |= vinax[k] != -1;
    }
    if (!batched) { /* depends on the batch only through unbatched values */
      if (!(vals[i] = lc_rule_clone(n, vin))) goto done;
      vax[i] = -1;
      continue;
    }
    const struct lc_prim *p = lc_prims[n->op];
    if (!p->vmap) {
      lc_error("vmap: the %s operation has no vmap rule", p->name);
      goto done;
    }
    if (w.tnout[i]) {
      int nt = w.tnout[i];
      tvals[i] = calloc((size_t)nt, sizeof **tvals);
      tvax[i] = malloc(sizeof(int) * (size_t)nt);
      if (!tvals[i] || !tvax[i]) {
        lc_error("out of memory");
        goto done;
      }
      for (int k = 0; k < nt; k++) tvax[i][k] = -1;
      if (p->vmap(n, vin, vinax, tvals[i], tvax[i])) goto done;
    } else {
      vax[i] = -1;
      if (p->vmap(n, vin, vinax, &vals[i], &vax[i])) goto done;
      if (!vals[i]) {
        lc_error("internal: vmap rule of %s gave no output", p->name);
        goto done;
      }
    }
  }
  for (int o = 0; o < nout; o++) {
    long j = lc_twalk_dep(&w, s_out[o]);
    struct lc_node *v = j >= 0 ? vals[j] : s_out[o];
    int a = j >= 0 ? vax[j] : -1;
    if (!(res[o] = place_output(v, a, out_axes[o], bsize, o))) {
      lc_rule_release(res, o);
      goto done;
    }
  }
  rc = 0;
done:
  for (size_t i = 0; i < len; i++) {
    if (vals) lc_node_release(vals[i]);
    if (tvals && tvals[i]) {
      lc_rule_release(tvals[i], w.tnout[i]);
      free(tvals[i]);
    }
    if (tvax) free(tvax[i]);
  }
  free(vals);
  free(vax);
  free(tvals);
  free(tvax);
  free(vin);
  free(vinax);
  lc_twalk_free(&w);
  return rc;
}
