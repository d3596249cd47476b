/* eval_cuda of the collectives: on a group whose backend takes the memory
 * of the node's GPU (NCCL, with the communicator on that GPU), the
 * backend reads and writes device buffers, queued on the GPU's stream.
 * Any other group (MPI), another GPU or a strided input runs eval_cpu on
 * host copies instead (LC_EVAL_ON_CPU). */
#ifdef LACE_CUDA
#include "core/error.h"
#include "distributed/distributed.h"
#include "gpu/cuda/eval.h"
#include "ops/prim.h"

static struct lc_dist_group *group_of(const struct lc_node *n) {
  return ((const struct lc_dist_params *)n->params)->g;
}

/* Whether the group's backend works on n's GPU memory. */
static bool on_this_gpu(const struct lc_node *n) {
  const struct lc_dist_group *g = group_of(n);
  return g->be && g->be->device && g->be->device(g->comm) == n->dev;
}

static bool usable(struct lc_node *n) {
  return on_this_gpu(n) && (n->nin == 0 || lc_node_is_contiguous(n->in[0]));
}

static void drop_output(struct lc_node *n) {
  lc_buffer_release(n->buf);
  n->buf = NULL;
}

/* The output n writes: x's buffer when n may take it over, else new. */
static int output_for(struct lc_node *n) {
  if (lc_prim_can_donate(n, 0)) {
    lc_cuda_take_buffer(n, 0);
    return 0;
  }
  return lc_cuda_alloc_output(n);
}

static const char *const reduce_names[] = {"all_sum", "all_max", "all_min"};

int lc_dist_all_reduce_cuda(struct lc_node *n) {
  if (!usable(n)) return LC_EVAL_ON_CPU;
  const struct lc_dist_params *p = n->params;
  struct lc_node *x = n->in[0];
  if (lc_dist_ranks_agree(reduce_names[p->op], p->g, x->size, x->dtype)) return 1;
  const void *in = lc_node_dev_data(x); /* before output_for: x may lose its buffer */
  if (output_for(n)) return 1;
  if (p->g->be->all_reduce(p->g->comm, in, n->buf->dev_data, n->size, n->dtype, p->op)) {
    drop_output(n);
    return 1;
  }
  return 0;
}

int lc_dist_all_gather_cuda(struct lc_node *n) {
  if (!usable(n)) return LC_EVAL_ON_CPU;
  const struct lc_dist_params *p = n->params;
  struct lc_node *x = n->in[0];
  if (lc_dist_ranks_agree("all_gather", p->g, x->size, x->dtype) || lc_cuda_alloc_output(n))
    return 1;
  if (p->g->be->all_gather(p->g->comm, lc_node_dev_data(x), n->buf->dev_data, x->size,
                           x->dtype)) {
    drop_output(n);
    return 1;
  }
  return 0;
}

int lc_dist_sum_scatter_cuda(struct lc_node *n) {
  if (!usable(n)) return LC_EVAL_ON_CPU;
  const struct lc_dist_params *p = n->params;
  struct lc_node *x = n->in[0];
  if (lc_dist_ranks_agree("sum_scatter", p->g, x->size, x->dtype) || lc_cuda_alloc_output(n))
    return 1;
  if (p->g->be->sum_scatter(p->g->comm, lc_node_dev_data(x), n->buf->dev_data, n->size,
                            n->dtype)) {
    drop_output(n);
    return 1;
  }
  return 0;
}

/* The result is x itself (a view of its buffer), as on the CPU. */
int lc_dist_send_cuda(struct lc_node *n) {
  if (!usable(n)) return LC_EVAL_ON_CPU;
  const struct lc_dist_params *p = n->params;
  struct lc_node *x = n->in[0];
  if (p->g->be->send(p->g->comm, lc_node_dev_data(x), x->size, x->dtype, p->peer)) return 1;
  lc_node_set_view(n, x, x->strides, x->offset);
  return 0;
}

int lc_dist_recv_cuda(struct lc_node *n) {
  if (!usable(n)) return LC_EVAL_ON_CPU;
  const struct lc_dist_params *p = n->params;
  if (lc_cuda_alloc_output(n)) return 1;
  if (p->g->be->recv(p->g->comm, n->buf->dev_data, n->size, n->dtype, p->peer)) {
    drop_output(n);
    return 1;
  }
  return 0;
}
#endif
