/* The ternary elementwise primitive: select (where). */
#include "ops/ew_loops.h"

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/ternary.h"
#include "transforms/transforms.h"

/* o[i] = c[i] ? x[i] : y[i], on element bits of type T. */
#define SELECT_LOOP(T)                                                                    \
  LC_EW_HOT static void select_##T(int64_t n, T *restrict o, const bool *restrict c,      \
                                   int64_t sc, const T *restrict x, int64_t sx,           \
                                   const T *restrict y, int64_t sy) {                     \
    if (sc == 1 && sx == 1 && sy == 1) {                                                  \
      for (int64_t i = 0; i < n; i++) o[i] = c[i] ? x[i] : y[i];                          \
    } else {                                                                              \
      for (int64_t i = 0; i < n; i++) o[i] = c[i * sc] ? x[i * sx] : y[i * sy];           \
    }                                                                                     \
  }
SELECT_LOOP(uint8_t)
SELECT_LOOP(uint16_t)
SELECT_LOOP(uint32_t)
SELECT_LOOP(uint64_t)

/* in_dt is the dtype of x and y; the condition is bool. */
static void select_kernel(int64_t n, void *out, mlx_dtype out_dt, const void *const *in,
                          const int64_t *is, mlx_dtype in_dt, const void *params) {
  (void)out_dt;
  (void)params;
  switch (lc_dtype_size(in_dt)) {
  case 1: select_uint8_t(n, out, in[0], is[0], in[1], is[1], in[2], is[2]); break;
  case 2: select_uint16_t(n, out, in[0], is[0], in[1], is[1], in[2], is[2]); break;
  case 4: select_uint32_t(n, out, in[0], is[0], in[1], is[1], in[2], is[2]); break;
  default: select_uint64_t(n, out, in[0], is[0], in[1], is[1], in[2], is[2]); break;
  }
}

/* where(c, v, 0) or where(c, 0, v) (v borrowed): v routed to the branch
 * it came from, zeros to the other. */
static struct lc_node *routed(struct lc_node *c, struct lc_node *v, bool to_x) {
  struct lc_node *z = lc_node_new_scalar(v->dtype, 0);
  if (!z) return NULL;
  struct lc_node *r = to_x ? lc_where(c, v, z) : lc_where(c, z, v);
  lc_node_release(z);
  return r;
}

/* Inputs (cond, x, y): x gets the cotangent where cond holds, y where it
 * does not; cond, a bool, gets none. */
static int select_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                      int nargs, struct lc_node **out) {
  for (int j = 0; j < nargs; j++) {
    out[j] = NULL;
    if (argnums[j] == 0) continue;
    if (!(out[j] = routed(n->in[0], cot[0], argnums[j] == 1))) {
      lc_rule_release(out, j);
      return 1;
    }
  }
  return 0;
}

/* where(cond, tan_x, tan_y), a missing tangent being zero. */
static int select_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  struct lc_node *c = n->in[0], *tx = tan[1], *ty = tan[2];
  if (tx && ty) out[0] = lc_where(c, tx, ty);
  else if (tx || ty) out[0] = routed(c, tx ? tx : ty, tx != NULL);
  else out[0] = NULL;
  return (tx || ty) && !out[0];
}

const struct lc_prim lc_prim_select = {.name = "select",
                                       .flags = LC_PF_ELEMWISE,
                                       .eval_cpu = lc_ew_eval_cpu,
                                       .eval_cuda = LC_CUDA(lc_cuda_eval_elementwise),
                                       .ew = select_kernel,
                                       .vjp = select_vjp,
                                       .jvp = select_jvp,
                                       .vmap = lc_rule_vmap_elementwise};

struct lc_node *lc_where(struct lc_node *cond, struct lc_node *x, struct lc_node *y) {
  int n1, n2;
  int c1 = cond->ndim > x->ndim ? cond->ndim : x->ndim;
  int s1[c1 > 0 ? c1 : 1];
  if (lc_broadcast_shapes("where", cond->ndim, cond->shape, x->ndim, x->shape, &n1, s1))
    return NULL;
  int c2 = n1 > y->ndim ? n1 : y->ndim;
  int s2[c2 > 0 ? c2 : 1];
  if (lc_broadcast_shapes("where", n1, s1, y->ndim, y->shape, &n2, s2)) return NULL;
  mlx_dtype t = lc_dtype_promote(x->dtype, y->dtype);
  struct lc_node *cb = lc_astype(cond, MLX_BOOL);
  struct lc_node *xt = cb ? lc_astype(x, t) : NULL, *yt = xt ? lc_astype(y, t) : NULL;
  struct lc_node *in[3] = {NULL, NULL, NULL}, *r = NULL;
  if (yt) in[0] = lc_broadcast_to(cb, n2, s2);
  if (in[0]) in[1] = lc_broadcast_to(xt, n2, s2);
  if (in[1]) in[2] = lc_broadcast_to(yt, n2, s2);
  if (in[2]) r = lc_ew_new(LC_OP_SELECT, t, 3, in, NULL, 0);
  lc_node_release(cb);
  lc_node_release(xt);
  lc_node_release(yt);
  for (int k = 0; k < 3; k++) lc_node_release(in[k]);
  return r;
}
