/* NUMBER_OF_ELEMENTS (size.h). Params: int[2 + naxes] = {inverted, naxes
 * (-1: all), axes (normalised)...}; the output's dtype is the node's. */
#include "ops/size.h"

#include <stdlib.h>

#include "core/error.h"
#include "ops/prim.h"
#include "ops/reduce.h"
#include "transforms/transforms.h"

struct lc_node *lc_number_of_elements(struct lc_node *x, const int *axes, int naxes,
                                      bool inverted, mlx_dtype t) {
  int cap = naxes > 0 ? naxes : 0;
  int *p = malloc(sizeof(int) * (size_t)(2 + cap));
  if (!p) {
    lc_error("out of memory");
    return NULL;
  }
  p[0] = inverted;
  p[1] = naxes < 0 ? -1 : naxes;
  if (naxes > 0 && lc_reduce_check_axes("number_of_elements", x->ndim, axes, naxes, p + 2)) {
    free(p);
    return NULL;
  }
  struct lc_node *n =
      lc_node_new_op(LC_OP_NUMBER_OF_ELEMENTS, t, 0, NULL, 1, &x, p, sizeof(int) * (size_t)(2 + cap));
  free(p);
  return n;
}

static double count(const int *p, const struct lc_node *x) {
  double c = 1;
  if (p[1] < 0)
    for (int d = 0; d < x->ndim; d++) c *= x->shape[d];
  else
    for (int k = 0; k < p[1]; k++) c *= x->shape[p[2 + k]];
  return c;
}

static int noe_eval(struct lc_node *n) {
  const int *p = n->params;
  double c = count(p, n->in[0]);
  if (lc_node_alloc_data(n)) return 1;
  lc_dtype_store(n->buf->data, n->dtype, p[0] ? 1.0 / c : c);
  return 0;
}

/* 0-d whatever the input's shape; independent of its values (zero vjp
 * and jvp). */
static int noe_shape(const void *params, int nin, struct lc_node *const *in, int ndim,
                     int *shape) {
  (void)params, (void)nin, (void)in, (void)shape;
  return ndim != 0;
}

/* The count is per example: axes shift past the batch axis moved first. */
static int noe_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                    struct lc_node **out, int *out_ax) {
  const int *p = n->params;
  int na = p[1] < 0 ? n->in[0]->ndim : p[1];
  int axes[na > 0 ? na : 1];
  for (int k = 0; k < na; k++) axes[k] = (p[1] < 0 ? k : p[2 + k]) + 1;
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  if (!x) return 1;
  out[0] = lc_number_of_elements(x, axes, na, p[0], n->dtype);
  lc_node_release(x);
  *out_ax = -1;
  return !out[0];
}

const struct lc_prim lc_prim_number_of_elements = {.name = "number_of_elements",
                                                   .eval_cpu = noe_eval,
                                                   .eval_cuda =
                                                       LC_CUDA(lc_cuda_eval_number_of_elements),
                                                   .vjp = lc_rule_zero_vjp,
                                                   .jvp = lc_rule_zero_jvp,
                                                   .vmap = noe_vmap,
                                                   .output_shape = noe_shape};
