/* Collective primitives (distributed.h). Params: struct lc_dist_params, whose
 * group pointer is one counted reference (params_ref); the rest is plain
 * data. Each eval_cpu hands row-major host buffers to the group's backend
 * (eval_cuda, prims_cuda.c: device buffers). */
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "distributed/distributed.h"
#include "ops/prim.h"
#include "ops/shape.h"
#include "transforms/transforms.h"

static const char *const reduce_names[] = {"all_sum", "all_max", "all_min"};

static struct lc_node *build(int op, mlx_dtype dt, int ndim, const int *shape, int nin,
                             struct lc_node *const *in, struct lc_dist_group *g, int kind,
                             int peer) {
  struct lc_dist_params p = {.g = g, .op = kind, .peer = peer};
  return lc_node_new_op(op, dt, ndim, shape, nin, in, &p, sizeof p);
}

static struct lc_dist_group *group_of(const struct lc_node *n) {
  return ((const struct lc_dist_params *)n->params)->g;
}

/* ---- builders ---- */

struct lc_node *lc_dist_all_reduce(struct lc_node *x, struct lc_dist_group *g,
                                   enum lc_dist_reduce op) {
  if (g->size == 1) return lc_node_retain(x);
  return build(LC_OP_DIST_ALL_REDUCE, x->dtype, x->ndim, x->shape, 1, &x, g, op, 0);
}

struct lc_node *lc_dist_all_gather(struct lc_node *x, struct lc_dist_group *g) {
  if (g->size == 1) return lc_node_retain(x);
  int nd = x->ndim ? x->ndim : 1;
  int shape[nd];
  shape[0] = g->size;
  for (int d = 0; d < x->ndim; d++) shape[d] = x->shape[d];
  if (x->ndim) {
    if ((int64_t)x->shape[0] * g->size > INT32_MAX) {
      lc_error("all_gather: axis 0 of %d times %d ranks is too large", x->shape[0], g->size);
      return NULL;
    }
    shape[0] = x->shape[0] * g->size;
  }
  return build(LC_OP_DIST_ALL_GATHER, x->dtype, nd, shape, 1, &x, g, 0, 0);
}

struct lc_node *lc_dist_sum_scatter(struct lc_node *x, struct lc_dist_group *g) {
  if (g->size == 1) return lc_node_retain(x);
  if (x->ndim == 0 || x->shape[0] % g->size) {
    char buf[64];
    lc_error(
        "[sum_scatter] Invalid shape=%s for a group of size %d. The first dimension "
        "(axis 0) must be divisible by the group size and the input must have at least "
        "one.",
        lc_shape_str(x->ndim, x->shape, buf, sizeof buf), g->size);
    return NULL;
  }
  int shape[x->ndim];
  for (int d = 0; d < x->ndim; d++) shape[d] = x->shape[d];
  shape[0] /= g->size;
  return build(LC_OP_DIST_SUM_SCATTER, x->dtype, x->ndim, shape, 1, &x, g, 0, 0);
}

static int check_peer(const char *fn, const char *what, int peer, const struct lc_dist_group *g) {
  if (g->size == 1) return lc_error("Cannot %s a singleton group", fn);
  if (peer < 0 || peer >= g->size)
    return lc_error("Invalid %s=%d for a group of size %d", what, peer, g->size);
  /* a blocking send to oneself waits for a receive that comes after it */
  if (peer == g->rank) return lc_error("Cannot %s this rank itself (%d)", fn, peer);
  return 0;
}

struct lc_node *lc_dist_send(struct lc_node *x, int dst, struct lc_dist_group *g) {
  if (check_peer("send to", "destination", dst, g)) return NULL;
  return build(LC_OP_DIST_SEND, x->dtype, x->ndim, x->shape, 1, &x, g, 0, dst);
}

struct lc_node *lc_dist_recv(int ndim, const int *shape, mlx_dtype dt, int src,
                             struct lc_dist_group *g) {
  if (check_peer("recv from", "source", src, g)) return NULL;
  return build(LC_OP_DIST_RECV, dt, ndim, shape, 0, NULL, g, 0, src);
}

/* ---- evaluation ---- */

/* {n, -n, dt, -dt} all-reduced with max: every rank sees a disagreement
 * if any rank has one. */
int lc_dist_ranks_agree(const char *fn, struct lc_dist_group *g, int64_t n, mlx_dtype dt) {
  int64_t v[4] = {n, -n, (int64_t)dt, -(int64_t)dt};
  if (g->be->all_reduce(g->comm, v, v, 4, MLX_INT64, LC_DIST_MAX)) return 1;
  if (v[0] == n && v[1] == -n && v[2] == dt && v[3] == -(int64_t)dt) return 0;
  return lc_error(
      "%s: the ranks of the group disagree on the array: rank %d has %lld elements "
      "of %s, the group's range over %lld..%lld elements, dtypes %s..%s",
      fn, g->rank, (long long)n, lc_dtype_name(dt), (long long)-v[1], (long long)v[0],
      lc_dtype_name((mlx_dtype)-v[3]), lc_dtype_name((mlx_dtype)v[2]));
}

/* x's elements as one row-major host buffer: its own data when contiguous,
 * else a copy in *tmp (freed by the caller). */
static int row_major(struct lc_node *x, const void **data, void **tmp) {
  *tmp = NULL;
  if (lc_node_is_contiguous(x)) {
    *data = lc_node_data(x);
    return 0;
  }
  *tmp = malloc((size_t)x->size * lc_dtype_size(x->dtype));
  if (!*tmp) return lc_error("distributed: out of memory");
  *data = *tmp;
  return lc_node_copy_out(x, *tmp);
}

static int all_reduce_eval(struct lc_node *n) {
  const struct lc_dist_params *p = n->params;
  struct lc_node *x = n->in[0];
  if (lc_dist_ranks_agree(reduce_names[p->op], p->g, x->size, x->dtype) ||
      lc_prim_donate_or_alloc(n))
    return 1;
  void *out = lc_node_data(n);
  const void *in = out;
  if (n->buf != x->buf) {
    if (lc_node_is_contiguous(x))
      in = lc_node_data(x);
    else if (lc_node_copy_out(x, out))
      return 1;
  }
  return p->g->be->all_reduce(p->g->comm, in, out, n->size, n->dtype, p->op);
}

static int all_gather_eval(struct lc_node *n) {
  const struct lc_dist_params *p = n->params;
  struct lc_node *x = n->in[0];
  const void *in = NULL;
  void *tmp = NULL;
  if (lc_dist_ranks_agree("all_gather", p->g, x->size, x->dtype) || lc_node_alloc_data(n) ||
      row_major(x, &in, &tmp)) {
    return 1;
  }
  int rc = p->g->be->all_gather(p->g->comm, in, lc_node_data(n), x->size, x->dtype);
  free(tmp);
  return rc;
}

static int sum_scatter_eval(struct lc_node *n) {
  const struct lc_dist_params *p = n->params;
  struct lc_node *x = n->in[0];
  const void *in = NULL;
  void *tmp = NULL;
  if (lc_dist_ranks_agree("sum_scatter", p->g, x->size, x->dtype) || lc_node_alloc_data(n) ||
      row_major(x, &in, &tmp))
    return 1;
  int rc = p->g->be->sum_scatter(p->g->comm, in, lc_node_data(n), n->size, n->dtype);
  free(tmp);
  return rc;
}

static int send_eval(struct lc_node *n) {
  const struct lc_dist_params *p = n->params;
  struct lc_node *x = n->in[0];
  const void *in = NULL;
  void *tmp = NULL;
  if (row_major(x, &in, &tmp)) return 1;
  int rc = p->g->be->send(p->g->comm, in, x->size, x->dtype, p->peer);
  free(tmp);
  if (!rc) lc_node_set_view(n, x, x->strides, x->offset);
  return rc;
}

static int recv_eval(struct lc_node *n) {
  const struct lc_dist_params *p = n->params;
  if (lc_node_alloc_data(n)) return 1;
  return p->g->be->recv(p->g->comm, lc_node_data(n), n->size, n->dtype, p->peer);
}

/* ---- rules (as MLX's: the vjp of an all-reduce passes the cotangent
 * through; all_gather's takes this rank's block) ---- */

static int identity_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                        int nargs, struct lc_node **out) {
  (void)n, (void)argnums, (void)nargs;
  out[0] = lc_node_retain(cot[0]);
  return 0;
}

static int all_reduce_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  const struct lc_dist_params *p = n->params;
  out[0] = lc_dist_all_reduce(tan[0], p->g, p->op);
  return !out[0];
}

static int all_reduce_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                           struct lc_node **out, int *out_ax) {
  const struct lc_dist_params *p = n->params;
  *out_ax = ax[0];
  out[0] = lc_dist_all_reduce(in[0], p->g, p->op);
  return !out[0];
}

static int all_gather_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                          int nargs, struct lc_node **out) {
  (void)argnums, (void)nargs;
  struct lc_node *x = n->in[0];
  int rank = group_of(n)->rank, n0 = x->ndim ? x->shape[0] : 1;
  struct lc_node *s = lc_slice_axis(cot[0], 0, rank * n0, (rank + 1) * n0);
  if (s && x->ndim == 0) {
    int axis = 0;
    struct lc_node *q = lc_squeeze(s, 1, &axis);
    lc_node_release(s);
    s = q;
  }
  out[0] = s;
  return !s;
}

static int all_gather_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  out[0] = lc_dist_all_gather(tan[0], group_of(n));
  return !out[0];
}

/* The batch axis goes to position 1 (after a leading axis of extent 1 for
 * 0-d examples), so that gathering along axis 0 gathers each example. */
static int all_gather_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                           struct lc_node **out, int *out_ax) {
  int zero = 0;
  struct lc_node *x =
      n->in[0]->ndim ? lc_moveaxis(in[0], ax[0], 1) : lc_expand_dims(in[0], 1, &zero);
  if (!x) return 1;
  out[0] = lc_dist_all_gather(x, group_of(n));
  lc_node_release(x);
  *out_ax = 1;
  return !out[0];
}

static int sum_scatter_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                           int nargs, struct lc_node **out) {
  (void)argnums, (void)nargs;
  out[0] = lc_dist_all_gather(cot[0], group_of(n));
  return !out[0];
}

static int sum_scatter_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  out[0] = lc_dist_sum_scatter(tan[0], group_of(n));
  return !out[0];
}

static int sum_scatter_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                            struct lc_node **out, int *out_ax) {
  struct lc_node *x = lc_moveaxis(in[0], ax[0], 1);
  if (!x) return 1;
  out[0] = lc_dist_sum_scatter(x, group_of(n));
  lc_node_release(x);
  *out_ax = 1;
  return !out[0];
}

static int send_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                     struct lc_node **out, int *out_ax) {
  const struct lc_dist_params *p = n->params;
  *out_ax = ax[0];
  out[0] = lc_dist_send(in[0], p->peer, p->g);
  return !out[0];
}

/* ---- shapes, params, descriptions ---- */

static int gather_shape(const void *params, int nin, struct lc_node *const *in, int ndim,
                        int *shape) {
  const struct lc_dist_params *p = params;
  (void)nin;
  if (ndim != (in[0]->ndim ? in[0]->ndim : 1)) return 1;
  shape[0] = p->g->size;
  for (int d = 0; d < in[0]->ndim; d++) shape[d] = in[0]->shape[d];
  if (in[0]->ndim) shape[0] = in[0]->shape[0] * p->g->size;
  return 0;
}

static int scatter_shape(const void *params, int nin, struct lc_node *const *in, int ndim,
                         int *shape) {
  const struct lc_dist_params *p = params;
  (void)nin;
  if (ndim != in[0]->ndim || ndim == 0 || in[0]->shape[0] % p->g->size) return 1;
  for (int d = 0; d < ndim; d++) shape[d] = in[0]->shape[d];
  shape[0] /= p->g->size;
  return 0;
}

static void dist_params_ref(const void *params, int delta) {
  struct lc_dist_group *g = ((const struct lc_dist_params *)params)->g;
  if (delta > 0)
    lc_dist_group_retain(g);
  else
    lc_dist_group_release(g);
}

static int dist_describe(const struct lc_node *n, char *buf, size_t len) {
  const struct lc_dist_params *p = n->params;
  const char *what = n->op == LC_OP_DIST_ALL_REDUCE ? reduce_names[p->op] : "";
  if (n->op == LC_OP_DIST_SEND || n->op == LC_OP_DIST_RECV)
    return snprintf(buf, len, "%s %d, group of %d", n->op == LC_OP_DIST_SEND ? "to" : "from",
                    p->peer, p->g->size);
  return snprintf(buf, len, "%s%sgroup of %d", what, *what ? ", " : "", p->g->size);
}

const struct lc_prim lc_prim_dist_all_reduce = {.name = "all_reduce",
                                                .eval_cpu = all_reduce_eval,
                                                .eval_cuda = LC_CUDA(lc_dist_all_reduce_cuda),
                                                .vjp = identity_vjp,
                                                .jvp = all_reduce_jvp,
                                                .vmap = all_reduce_vmap,
                                                .params_ref = dist_params_ref,
                                                .describe = dist_describe,
                                                .output_shape = lc_prim_shape_of_input0};
const struct lc_prim lc_prim_dist_all_gather = {.name = "all_gather",
                                                .eval_cpu = all_gather_eval,
                                                .eval_cuda = LC_CUDA(lc_dist_all_gather_cuda),
                                                .vjp = all_gather_vjp,
                                                .jvp = all_gather_jvp,
                                                .vmap = all_gather_vmap,
                                                .params_ref = dist_params_ref,
                                                .describe = dist_describe,
                                                .output_shape = gather_shape};
const struct lc_prim lc_prim_dist_sum_scatter = {.name = "sum_scatter",
                                                 .eval_cpu = sum_scatter_eval,
                                                 .eval_cuda = LC_CUDA(lc_dist_sum_scatter_cuda),
                                                 .vjp = sum_scatter_vjp,
                                                 .jvp = sum_scatter_jvp,
                                                 .vmap = sum_scatter_vmap,
                                                 .params_ref = dist_params_ref,
                                                 .describe = dist_describe,
                                                 .output_shape = scatter_shape};
/* send and recv have effects beyond their value: never merged (NOCSE). */
const struct lc_prim lc_prim_dist_send = {.name = "send",
                                          .flags = LC_PF_NOCSE,
                                          .eval_cpu = send_eval,
                                          .eval_cuda = LC_CUDA(lc_dist_send_cuda),
                                          .vmap = send_vmap,
                                          .params_ref = dist_params_ref,
                                          .describe = dist_describe,
                                          .output_shape = lc_prim_shape_of_input0};
const struct lc_prim lc_prim_dist_recv = {.name = "recv",
                                          .flags = LC_PF_NOCSE,
                                          .eval_cpu = recv_eval,
                                          .eval_cuda = LC_CUDA(lc_dist_recv_cuda),
                                          .params_ref = dist_params_ref,
                                          .describe = dist_describe};
