/* Helpers shared by the primitives' transformation rules. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/prim.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "transforms/transforms.h"

/* Two sums, no reshape (reductions replay shapelessly; a reshape to a
 * traced shape would not): extent-1 axes with keepdims, then the leading
 * axes without. */
struct lc_node *lc_rule_unbroadcast(struct lc_node *cot, int ndim, const int *shape) {
  if (lc_shape_equal(cot->ndim, cot->shape, ndim, shape)) return lc_node_retain(cot);
  int lead = cot->ndim - ndim;
  int keep[cot->ndim > 0 ? cot->ndim : 1], nk = 0, drop[lead > 0 ? lead : 1];
  for (int d = lead; d < cot->ndim; d++)
    if (shape[d - lead] == 1 && cot->shape[d] != 1) keep[nk++] = d;
  for (int d = 0; d < lead; d++) drop[d] = d;
  struct lc_node *s = nk ? lc_sum(cot, keep, nk, true) : lc_node_retain(cot);
  if (!s || !lead) return s;
  struct lc_node *r = lc_sum(s, drop, lead, false);
  lc_node_release(s);
  return r;
}

struct lc_node *lc_rule_batch_front(struct lc_node *x, int ax, bool expand) {
  if (ax == -1) {
    if (!expand) return lc_node_retain(x);
    int zero = 0;
    return lc_expand_dims(x, 1, &zero);
  }
  return ax == 0 ? lc_node_retain(x) : lc_moveaxis(x, ax, 0);
}

struct lc_node *lc_rule_batch_front_full(struct lc_node *x, int ax, int b) {
  struct lc_node *f = lc_rule_batch_front(x, ax, true);
  if (!f || ax != -1 || b == 1) return f;
  int sh[f->ndim];
  memcpy(sh, f->shape, sizeof sh);
  sh[0] = b;
  struct lc_node *r = lc_broadcast_to(f, f->ndim, sh);
  lc_node_release(f);
  return r;
}

int lc_rule_batch_size(int nin, struct lc_node *const *in, const int *ax) {
  for (int k = 0; k < nin; k++)
    if (ax[k] != -1) return in[k]->shape[ax[k]];
  return 1;
}

int lc_rule_vmap_elementwise(struct lc_node *n, struct lc_node *const *in, const int *ax,
                             struct lc_node **out, int *out_ax) {
  int b = lc_rule_batch_size(n->nin, in, ax);
  int sh[n->ndim + 1];
  sh[0] = b;
  if (n->ndim) memcpy(sh + 1, n->shape, sizeof(int) * (size_t)n->ndim);
  struct lc_node *args[n->nin > 0 ? n->nin : 1];
  int k = 0, rc = 1;
  for (; k < n->nin; k++) {
    struct lc_node *f = lc_rule_batch_front(in[k], ax[k], false);
    args[k] = f ? lc_broadcast_to(f, n->ndim + 1, sh) : NULL;
    lc_node_release(f);
    if (!args[k]) goto done;
  }
  out[0] = lc_ew_new(n->op, n->dtype, n->nin, args, n->params, n->params_size);
  out_ax[0] = 0;
  rc = out[0] == NULL;
done:
  lc_rule_release(args, k);
  return rc;
}

int lc_rule_zero_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                     struct lc_node **out) {
  (void)n, (void)cot, (void)argnums;
  for (int j = 0; j < nargs; j++) out[j] = NULL;
  return 0;
}

int lc_rule_zero_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  (void)n, (void)tan;
  out[0] = NULL; /* a tuple's other entries arrive NULL */
  return 0;
}

struct lc_node *lc_rule_clone(struct lc_node *n, struct lc_node *const *in) {
  return lc_node_new_op(n->op, n->dtype, n->ndim, n->shape, n->nin, in, n->params,
                        n->params_size);
}

void lc_rule_release(struct lc_node **out, size_t n) {
  for (size_t i = 0; out && i < n; i++) {
    lc_node_release(out[i]);
    out[i] = NULL;
  }
}

struct lc_node *lc_rule_keep(struct lc_rule_scope *s, struct lc_node *x) {
  if (!x) return NULL;
  if (s->n == LC_RULE_SCOPE_CAP) {
    lc_node_release(x);
    lc_error("internal error: a transformation rule kept more than %d nodes", LC_RULE_SCOPE_CAP);
    return NULL;
  }
  return s->v[s->n++] = x;
}

int lc_rule_scope_end(struct lc_rule_scope *s, struct lc_node *final, struct lc_node **out) {
  *out = final ? lc_node_retain(final) : NULL;
  lc_rule_release(s->v, s->n);
  return final == NULL;
}

int lc_rule_missing(int which, const char **names, int max) {
  int cnt = 0;
  for (int op = 0; op < LC_OP_COUNT; op++) {
    const struct lc_prim *p = lc_prims[op];
    bool has = which == 0 ? p->vjp != NULL : which == 1 ? p->jvp != NULL : p->vmap != NULL;
    /* leaves and placeholders are never transformed; the engines handle
     * tuple getters themselves */
    if (has || op == LC_OP_NONE || op == LC_OP_PLACEHOLDER || op == LC_OP_TUPLE_GET) continue;
    if (cnt < max) names[cnt] = p->name;
    cnt++;
  }
  return cnt;
}
