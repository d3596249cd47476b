/* Binary elementwise primitives. */
#include "ops/binary.h"

#include "core/error.h"
#include "ops/dtype_dispatch.h"
#include "ops/elementwise.h"

/* Defines a kernel applying C expression EXPR(x, y) (compute types) for every dtype. */
#define BINARY_LOOP(NAME, DT, S, C, EXPR)                                        \
  static void NAME##_##DT(int64_t n, void *out, const void *a, int64_t sa, const void *b, \
                          int64_t sb) {                                          \
    S *o = out;                                                                  \
    const S *x = a, *y = b;                                                      \
    if (sa == 1 && sb == 1)                                                      \
      for (int64_t i = 0; i < n; i++) {                                          \
        C xv = lc_ld_##DT(x[i]), yv = lc_ld_##DT(y[i]);                          \
        o[i] = lc_st_##DT(EXPR(xv, yv));                                         \
      }                                                                          \
    else                                                                         \
      for (int64_t i = 0; i < n; i++) {                                          \
        C xv = lc_ld_##DT(x[i * sa]), yv = lc_ld_##DT(y[i * sb]);                \
        o[i] = lc_st_##DT(EXPR(xv, yv));                                         \
      }                                                                          \
  }

#define ADD_EXPR(x, y) ((x) + (y))
#define ADD_LOOP(DT, S, C) BINARY_LOOP(add, DT, S, C, ADD_EXPR)
LC_FOR_DTYPES(ADD_LOOP)

static void add_kernel(int64_t n, void *out, mlx_dtype out_dt, const void *const *in,
                       const int64_t *is, mlx_dtype in_dt, const void *params) {
  switch (in_dt) {
#define CASE(DT, S, C) \
  case DT: add_##DT(n, out, in[0], is[0], in[1], is[1]); break;
    LC_FOR_DTYPES(CASE)
#undef CASE
  }
}

const struct lc_prim lc_prim_add = {
    .name = "add", .flags = LC_PF_ELEMWISE, .eval_cpu = lc_ew_eval_cpu, .ew = add_kernel};

struct lc_node *lc_add(struct lc_node *a, struct lc_node *b) {
  struct lc_node *x, *y;
  if (lc_ew_prepare2("add", a, b, lc_dtype_promote(a->dtype, b->dtype), &x, &y)) return NULL;
  struct lc_node *in[2] = {x, y};
  struct lc_node *r = lc_ew_new(LC_OP_ADD, x->dtype, 2, in, NULL, 0);
  lc_node_release(x);
  lc_node_release(y);
  return r;
}
