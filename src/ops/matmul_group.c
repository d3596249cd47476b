/* MATMUL_GROUP: n products a @ b_k sharing a, as one tuple node (its
 * outputs back to back, ops/tuple.h). Only compile's product fusion
 * (compile/fuse_epilogue.c) makes it, for GPU instructions, where the GEMV
 * kernels read a once and compute every product in one launch (q, k and v
 * of an attention layer; the gate and up projections of an MLP). A
 * program is never differentiated or vmapped (compile/simplify.c), so the
 * primitive has no rules; its CPU evaluator (a fallback) runs the products
 * one by one with MATMUL's. */
#include <string.h>

#include "core/error.h"
#include "ops/linalg.h"
#include "ops/prim.h"
#include "ops/tuple.h"

int lc_matmul_group_out_shape(const struct lc_mm_group_params *p, struct lc_node *a,
                              struct lc_node *b, int *ndim, int *shape) {
  const struct lc_matmul_params *m = &p->mm;
  int nd = m->a_split + b->ndim - m->b_split;
  if (nd < 0 || nd > LC_MM_GROUP_MAX_NDIM || m->has_c || m->gather || m->segmented) return 1;
  struct lc_node *in[2] = {a, b};
  if (lc_prims[LC_OP_MATMUL]->output_shape(m, 2, in, nd, shape)) return 1;
  *ndim = nd;
  return 0;
}

int lc_matmul_group_outs(const struct lc_node *n, int *nds, int shapes[][LC_MM_GROUP_MAX_NDIM],
                         int64_t *nbytes) {
  const struct lc_mm_group_params *p = n->params;
  for (int k = 0; k < p->n; k++) {
    if (lc_matmul_group_out_shape(p, n->in[0], n->in[1 + k], &nds[k], shapes[k]))
      return lc_error("internal: matmul group %d is not a product", k);
    nbytes[k] = lc_shape_size(nds[k], shapes[k]) * (int64_t)lc_dtype_size(n->in[0]->dtype);
  }
  return 0;
}

static int group_eval(struct lc_node *n) {
  const struct lc_mm_group_params *p = n->params;
  int64_t nbytes[LC_MM_GROUP_MAX];
  int nds[LC_MM_GROUP_MAX], shapes[LC_MM_GROUP_MAX][LC_MM_GROUP_MAX_NDIM];
  if (lc_matmul_group_outs(n, nds, shapes, nbytes) || lc_node_alloc_data(n)) return 1;
  int saved = lc_build_device();
  lc_set_build_device(LC_DEV_CPU);
  int rc = 0;
  for (int k = 0; k < p->n && !rc; k++) {
    struct lc_node *in[2] = {n->in[0], n->in[1 + k]};
    struct lc_node *t = lc_node_new_op(LC_OP_MATMUL, n->in[0]->dtype, nds[k], shapes[k], 2, in,
                                       &p->mm, sizeof p->mm);
    rc = !t || lc_prims[LC_OP_MATMUL]->eval_cpu(t);
    if (!rc) lc_node_copy_out(t, lc_tuple_data(n, p->n, nbytes, k));
    lc_node_release(t);
  }
  lc_set_build_device(saved);
  return rc;
}

/* Shapeless compile: the same products over the new operands. */
static int group_tuple_build(const void *params, int nin, struct lc_node *const *in,
                             struct lc_node **outs) {
  const struct lc_mm_group_params *p = params;
  if (p->n < 1 || p->n > LC_MM_GROUP_MAX || nin != 1 + p->n) return 1;
  mlx_dtype dts[LC_MM_GROUP_MAX];
  int nds[LC_MM_GROUP_MAX], shapes[LC_MM_GROUP_MAX][LC_MM_GROUP_MAX_NDIM];
  const int *shp[LC_MM_GROUP_MAX];
  for (int k = 0; k < p->n; k++) {
    if (in[1 + k]->dtype != in[0]->dtype ||
        lc_matmul_group_out_shape(p, in[0], in[1 + k], &nds[k], shapes[k]))
      return 1;
    dts[k] = in[0]->dtype;
    shp[k] = shapes[k];
  }
  return lc_tuple_new(LC_OP_MATMUL_GROUP, nin, in, p, sizeof *p, p->n, dts, nds, shp, outs);
}

const struct lc_prim lc_prim_matmul_group = {.name = "matmul_group",
                                             .eval_cpu = group_eval,
                                             .eval_cuda = LC_CUDA(lc_cuda_eval_matmul_group),
                                             .tuple_build = group_tuple_build};
