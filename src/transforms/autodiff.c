/* Reverse and forward mode over a walked graph (see transforms.h).
 *
 * Reverse mode visits dependent nodes from the outputs back, handing each
 * primitive's vjp rule the cotangents of its outputs and adding what it
 * returns into its inputs' cotangents. Each node's cotangent is released
 * once its rule has run, so the engine holds only the cotangents of the
 * current frontier. A tuple primitive's outputs are its TUPLE_GET nodes:
 * their cotangents are gathered per output index and handed to the tuple's
 * rule together. Forward mode is the mirror image. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ops/binary.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/prim.h"
#include "ops/tuple.h"
#include "transforms/transforms.h"
#include "transforms/walk.h"

struct lc_node *lc_tracer(struct lc_node *x) {
  struct lc_node *t = lc_node_new_op(LC_OP_BROADCAST, x->dtype, x->ndim, x->shape, 1, &x, NULL, 0);
  if (t) t->flags |= LC_NF_TRACED;
  return t;
}

/* v (consumed) checked to have like's shape and cast to its dtype; NULL
 * after reporting. `what` names the rule kind, prim the primitive. */
static struct lc_node *conform(struct lc_node *v, const struct lc_node *like, const char *what,
                               const char *prim) {
  if (!lc_shape_equal(v->ndim, v->shape, like->ndim, like->shape)) {
    char a[64], b[64];
    lc_error("internal: the %s rule of %s gave shape %s for an array of shape %s", what, prim,
             lc_shape_str(v->ndim, v->shape, a, sizeof a),
             lc_shape_str(like->ndim, like->shape, b, sizeof b));
    lc_node_release(v);
    return NULL;
  }
  if (v->dtype == like->dtype) return v;
  struct lc_node *c = lc_astype(v, like->dtype);
  lc_node_release(v);
  return c;
}

/* *acc += v (v consumed, conformed to `like`; the sum of two arrays of
 * one dtype keeps it). */
static int accumulate(struct lc_node **acc, struct lc_node *v, const struct lc_node *like,
                      const char *what, const char *prim) {
  if (!(v = conform(v, like, what, prim))) return 1;
  if (!*acc) {
    *acc = v;
    return 0;
  }
  struct lc_node *s = lc_add(*acc, v);
  lc_node_release(v);
  if (!s) return 1;
  lc_node_release(*acc);
  *acc = s;
  return 0;
}

/* res[k] = the value the walk holds for nodes[k] (vals, by walk index),
 * or zeros like nodes[k] when it has none (new references). 0, or 1 after
 * reporting (res then holds nothing). */
static int collect(const struct lc_twalk *w, struct lc_node *const *vals, int n,
                   struct lc_node *const *nodes, struct lc_node **res) {
  for (int k = 0; k < n; k++) {
    long j = lc_twalk_dep(w, nodes[k]);
    res[k] = j >= 0 && vals[j] ? lc_node_retain(vals[j]) : lc_zeros_like(nodes[k]);
    if (!res[k]) {
      lc_rule_release(res, (size_t)k);
      return 1;
    }
  }
  return 0;
}

/* Frees the per-node values and the tuples' per-output values of a walk. */
static void free_values(const struct lc_twalk *w, struct lc_node **vals,
                        struct lc_node ***tvals) {
  for (size_t i = 0; i < w->len; i++) {
    if (vals) lc_node_release(vals[i]);
    if (tvals && tvals[i]) {
      lc_rule_release(tvals[i], (size_t)w->tnout[i]);
      free(tvals[i]);
    }
  }
  free(vals);
  free(tvals);
}

int lc_vjp_graph(int nprim, struct lc_node *const *prim, int nout, struct lc_node *const *outs,
                 struct lc_node *const *cot, struct lc_node **grads) {
  struct lc_twalk w;
  if (lc_twalk_build(&w, nprim, prim, nout, outs, true)) return 1;
  size_t len = w.len;
  struct lc_node **cots = calloc(len + 1, sizeof *cots);
  struct lc_node ***tcots = calloc(len + 1, sizeof *tcots);
  int maxin = 1;
  for (size_t i = 0; i < len; i++)
    if (w.nodes[i]->nin > maxin) maxin = w.nodes[i]->nin;
  int *argnums = malloc(sizeof(int) * (size_t)maxin);
  struct lc_node **res = calloc((size_t)maxin, sizeof *res);
  int rc = 1;
  if (!cots || !tcots || !argnums || !res) {
    lc_error("out of memory");
    goto done;
  }
  for (int o = 0; o < nout; o++) {
    long j = lc_twalk_dep(&w, outs[o]);
    if (!cot[o] || j < 0) continue;
    if (accumulate(&cots[j], lc_node_retain(cot[o]), outs[o], "cotangent", "an output"))
      goto done;
  }
  for (size_t ii = len; ii-- > 0;) {
    struct lc_node *n = w.nodes[ii];
    if (!w.dep[ii] || w.tracer[ii]) continue;
    if (n->op == LC_OP_TUPLE_GET) {
      if (!cots[ii]) continue;
      int nt, k = lc_tuple_index(n, &nt);
      long t = lc_twalk_dep(&w, n->in[0]);
      if (!tcots[t] && !(tcots[t] = calloc((size_t)nt, sizeof **tcots))) {
        lc_error("out of memory");
        goto done;
      }
      struct lc_node *c = cots[ii];
      cots[ii] = NULL;
      if (accumulate(&tcots[t][k], c, n, "cotangent", "tuple_get")) goto done;
      continue;
    }
    struct lc_node **cv = w.tnout[ii] ? tcots[ii] : &cots[ii];
    if (!cv || (!w.tnout[ii] && !cv[0])) continue; /* no cotangent reached n */
    int na = 0;
    for (int k = 0; k < n->nin; k++)
      if (lc_twalk_dep(&w, n->in[k]) >= 0) argnums[na++] = k;
    const struct lc_prim *p = lc_prims[n->op];
    if (na) {
      if (!p->vjp) {
        lc_error("vjp: the %s operation has no vjp rule (cannot differentiate through it)",
                 p->name);
        goto done;
      }
      memset(res, 0, sizeof *res * (size_t)na);
      if (p->vjp(n, cv, argnums, na, res)) goto done;
      for (int j = 0; j < na; j++) {
        if (!res[j]) continue;
        struct lc_node *x = n->in[argnums[j]];
        struct lc_node *g = res[j];
        res[j] = NULL;
        if (accumulate(&cots[lc_twalk_dep(&w, x)], g, x, "vjp", p->name)) {
          lc_rule_release(res + j + 1, (size_t)(na - j - 1));
          goto done;
        }
      }
    }
    if (w.tnout[ii]) {
      lc_rule_release(tcots[ii], (size_t)w.tnout[ii]);
      free(tcots[ii]);
      tcots[ii] = NULL;
    } else {
      lc_node_release(cots[ii]);
      cots[ii] = NULL;
    }
  }
  rc = collect(&w, cots, nprim, prim, grads);
done:
  free_values(&w, cots, tcots);
  free(argnums);
  free(res);
  lc_twalk_free(&w);
  return rc;
}

int lc_jvp_graph(int nprim, struct lc_node *const *prim, struct lc_node *const *tan, int nout,
                 struct lc_node *const *outs, struct lc_node **tout) {
  struct lc_twalk w;
  if (lc_twalk_build(&w, nprim, prim, nout, outs, true)) return 1;
  size_t len = w.len;
  struct lc_node **tans = calloc(len + 1, sizeof *tans);
  struct lc_node ***ttans = calloc(len + 1, sizeof *ttans);
  int maxin = 1;
  for (size_t i = 0; i < len; i++)
    if (w.nodes[i]->nin > maxin) maxin = w.nodes[i]->nin;
  struct lc_node **tin = calloc((size_t)maxin, sizeof *tin);
  struct lc_node *one[1];
  int rc = 1;
  if (!tans || !ttans || !tin) {
    lc_error("out of memory");
    goto done;
  }
  for (int i = 0; i < nprim; i++) {
    long j = lc_twalk_dep(&w, prim[i]);
    if (j >= 0 && tan[i]) {
      lc_node_release(tans[j]);
      tans[j] = lc_node_retain(tan[i]);
    }
  }
  for (size_t i = 0; i < len; i++) {
    struct lc_node *n = w.nodes[i];
    if (!w.dep[i] || w.tracer[i]) continue;
    if (n->op == LC_OP_TUPLE_GET) {
      int nt, k = lc_tuple_index(n, &nt);
      long t = lc_twalk_dep(&w, n->in[0]);
      if (ttans[t]) tans[i] = lc_node_retain(ttans[t][k]);
      continue;
    }
    bool any = false;
    for (int k = 0; k < n->nin; k++) {
      long j = lc_twalk_dep(&w, n->in[k]);
      tin[k] = j >= 0 ? tans[j] : NULL;
      any |= tin[k] != NULL;
    }
    if (!any) continue;
    const struct lc_prim *p = lc_prims[n->op];
    if (!p->jvp) {
      lc_error("jvp: the %s operation has no jvp rule (cannot differentiate through it)",
               p->name);
      goto done;
    }
    struct lc_node **out = one;
    one[0] = NULL;
    if (w.tnout[i] && !(out = ttans[i] = calloc((size_t)w.tnout[i], sizeof *out))) {
      lc_error("out of memory");
      goto done;
    }
    if (p->jvp(n, tin, out)) goto done;
    /* (a tuple's tangents, one per output, are kept as its rule gives them) */
    if (!w.tnout[i] && one[0] && !(tans[i] = conform(one[0], n, "jvp", p->name))) goto done;
  }
  rc = collect(&w, tans, nout, outs, tout);
done:
  free_values(&w, tans, ttans);
  free(tin);
  lc_twalk_free(&w);
  return rc;
}
