/* Public distributed functions (mlx/c/distributed.h, distributed_group.h).
 * A group handle's ctx is a struct lc_dist_group owning one reference
 * (NULL: the empty handle). As mlx-c, an empty group passed to a
 * collective means the default group, lc_dist_init(false, "any"). */
#include "api/api.h"
#include "distributed/distributed.h"

static struct lc_dist_group *group_of(mlx_distributed_group g) { return g.ctx; }

static int check_group(const char *fn, mlx_distributed_group g) {
  if (!g.ctx) return lc_error("%s: expected a non-empty mlx_distributed_group", fn);
  return 0;
}

/* Stores g (consumed) into *res, releasing what res held. */
static int set_group(mlx_distributed_group *res, struct lc_dist_group *g) {
  if (!g) return 1;
  lc_dist_group_release(res->ctx);
  res->ctx = g;
  return 0;
}

bool mlx_distributed_is_available(const char *bk) { return lc_dist_is_available(bk); }

mlx_distributed_group mlx_distributed_group_new(void) { return (mlx_distributed_group){NULL}; }

int mlx_distributed_group_free(mlx_distributed_group group) {
  lc_dist_group_release(group_of(group));
  return 0;
}

int mlx_distributed_init(mlx_distributed_group *res, bool strict, const char *bk) {
  LC_CHECK_RES("mlx_distributed_init", res);
  return set_group(res, lc_dist_init(strict, bk));
}

int mlx_distributed_group_rank(mlx_distributed_group group) {
  if (check_group("mlx_distributed_group_rank", group)) return 0;
  return group_of(group)->rank;
}

int mlx_distributed_group_size(mlx_distributed_group group) {
  if (check_group("mlx_distributed_group_size", group)) return 0;
  return group_of(group)->size;
}

int mlx_distributed_group_split(mlx_distributed_group *res, mlx_distributed_group group, int color,
                                int key) {
  LC_CHECK_RES("mlx_distributed_group_split", res);
  if (check_group("mlx_distributed_group_split", group)) return 1;
  return set_group(res, lc_dist_split(group_of(group), color, key));
}

/* The group a collective runs on: a new reference to the given one, or
 * the default group. NULL after reporting. */
static struct lc_dist_group *use_group(mlx_distributed_group g) {
  return g.ctx ? lc_dist_group_retain(g.ctx) : lc_dist_init(false, NULL);
}

enum coll { COLL_SUM, COLL_MAX, COLL_MIN, COLL_GATHER, COLL_SCATTER, COLL_SEND };

static struct lc_node *apply(enum coll c, struct lc_node *x, int peer, struct lc_dist_group *g) {
  switch (c) {
    case COLL_SUM: return lc_dist_all_reduce(x, g, LC_DIST_SUM);
    case COLL_MAX: return lc_dist_all_reduce(x, g, LC_DIST_MAX);
    case COLL_MIN: return lc_dist_all_reduce(x, g, LC_DIST_MIN);
    case COLL_GATHER: return lc_dist_all_gather(x, g);
    case COLL_SCATTER: return lc_dist_sum_scatter(x, g);
    case COLL_SEND: return lc_dist_send(x, peer, g);
  }
  return NULL;
}

static int collective(const char *fn, enum coll c, mlx_array *res, mlx_array x, int peer,
                      mlx_distributed_group group, mlx_stream s) {
  struct lc_node *a = NULL;
  if (lc_api_prologue(fn, res, x, s, &a)) return 1;
  struct lc_dist_group *g = use_group(group);
  if (!g) return 1;
  struct lc_node *r = apply(c, a, peer, g);
  lc_dist_group_release(g);
  return lc_api_set(res, r);
}

int mlx_distributed_all_sum(mlx_array *res, const mlx_array x, const mlx_distributed_group group,
                            const mlx_stream s) {
  return collective("mlx_distributed_all_sum", COLL_SUM, res, x, 0, group, s);
}

int mlx_distributed_all_max(mlx_array *res, const mlx_array x, const mlx_distributed_group group,
                            const mlx_stream s) {
  return collective("mlx_distributed_all_max", COLL_MAX, res, x, 0, group, s);
}

int mlx_distributed_all_min(mlx_array *res, const mlx_array x, const mlx_distributed_group group,
                            const mlx_stream s) {
  return collective("mlx_distributed_all_min", COLL_MIN, res, x, 0, group, s);
}

int mlx_distributed_all_gather(mlx_array *res, const mlx_array x, const mlx_distributed_group group,
                               const mlx_stream S) {
  return collective("mlx_distributed_all_gather", COLL_GATHER, res, x, 0, group, S);
}

int mlx_distributed_sum_scatter(mlx_array *res, const mlx_array x,
                                const mlx_distributed_group group, const mlx_stream s) {
  return collective("mlx_distributed_sum_scatter", COLL_SCATTER, res, x, 0, group, s);
}

int mlx_distributed_send(mlx_array *res, const mlx_array x, int dst,
                         const mlx_distributed_group group, const mlx_stream s) {
  return collective("mlx_distributed_send", COLL_SEND, res, x, dst, group, s);
}

int mlx_distributed_recv(mlx_array *res, const int *shape, size_t shape_num, mlx_dtype dtype,
                         int src, const mlx_distributed_group group, const mlx_stream s) {
  const char *fn = "mlx_distributed_recv";
  LC_CHECK_RES(fn, res);
  if (lc_api_check_stream(fn, s) || lc_api_check_list(fn, "shape", shape, shape_num) ||
      lc_shape_check(fn, (int)shape_num, shape))
    return 1;
  if (!lc_dtype_valid(dtype)) return lc_error("%s: invalid dtype %d", fn, (int)dtype);
  struct lc_dist_group *g = use_group(group);
  if (!g) return 1;
  struct lc_node *r = lc_dist_recv((int)shape_num, shape, dtype, src, g);
  lc_dist_group_release(g);
  return lc_api_set(res, r);
}

int mlx_distributed_recv_like(mlx_array *res, const mlx_array x, int src,
                              const mlx_distributed_group group, const mlx_stream s) {
  LC_CHECK_RES("mlx_distributed_recv_like", res);
  LC_CHECK_ARR("mlx_distributed_recv_like", x);
  struct lc_node *a = lc_arr(x);
  return mlx_distributed_recv(res, a->shape, (size_t)a->ndim, a->dtype, src, group, s);
}
