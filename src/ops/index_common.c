/* Index loading, combining kernels and input setup shared by gather and
 * scatter primitives. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/iter.h"
#include "ops/dtype_dispatch.h"
#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/index_internal.h"
#include "ops/prim.h"
#include "ops/shape_internal.h"

int64_t lc_idx_load(const void *data, mlx_dtype dt, int64_t off) {
  switch (dt) {
  case MLX_INT8: return ((const int8_t *)data)[off];
  case MLX_INT16: return ((const int16_t *)data)[off];
  case MLX_INT32: return ((const int32_t *)data)[off];
  case MLX_INT64: return ((const int64_t *)data)[off];
  case MLX_UINT8: return ((const uint8_t *)data)[off];
  case MLX_UINT16: return ((const uint16_t *)data)[off];
  case MLX_UINT32: return ((const uint32_t *)data)[off];
  case MLX_UINT64: {
    uint64_t v = ((const uint64_t *)data)[off];
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
  }
  default: return 0;
  }
}

int lc_idx_check(const char *fn, const struct lc_node *idx) {
  if (idx->dtype == MLX_BOOL) return lc_error("%s: boolean indices are not supported", fn);
  if (!lc_dtype_is_int(idx->dtype))
    return lc_error("%s: indices must be integral, got %s", fn, lc_dtype_name(idx->dtype));
  return 0;
}

/* bool: add is "or", prod is "and" (C's conversion of the int result). */
#pragma GCC diagnostic ignored "-Wint-in-bool-context"
#define CMP_GT(x, y) ((x) > (y))
#define CMP_LT(x, y) ((x) < (y))
#define COMBINE_LOOP(DT, S, C)                                                                \
  static void combine_##DT(int mode, int64_t n, S *d, int64_t ds, const S *s, int64_t ss) {   \
    switch (mode) {                                                                           \
    case LC_SCATTER_ADD:                                                                      \
      for (int64_t i = 0; i < n; i++)                                                         \
        d[i * ds] = lc_st_##DT(lc_ld_##DT(d[i * ds]) + lc_ld_##DT(s[i * ss]));                \
      break;                                                                                  \
    case LC_SCATTER_PROD:                                                                     \
      for (int64_t i = 0; i < n; i++)                                                         \
        d[i * ds] = lc_st_##DT(lc_ld_##DT(d[i * ds]) * lc_ld_##DT(s[i * ss]));                \
      break;                                                                                  \
    case LC_SCATTER_MAX:                                                                      \
      for (int64_t i = 0; i < n; i++)                                                         \
        if (CMP(GT, DT, lc_ld_##DT(s[i * ss]), lc_ld_##DT(d[i * ds]))) d[i * ds] = s[i * ss]; \
      break;                                                                                  \
    case LC_SCATTER_MIN:                                                                      \
      for (int64_t i = 0; i < n; i++)                                                         \
        if (CMP(LT, DT, lc_ld_##DT(s[i * ss]), lc_ld_##DT(d[i * ds]))) d[i * ds] = s[i * ss]; \
      break;                                                                                  \
    default:                                                                                  \
      for (int64_t i = 0; i < n; i++) d[i * ds] = s[i * ss];                                  \
    }                                                                                         \
  }
/* Complex values order lexicographically (real part, then imaginary). */
static inline bool cgt(lc_c64 x, lc_c64 y) {
  return crealf(x) > crealf(y) || (crealf(x) == crealf(y) && cimagf(x) > cimagf(y));
}
static inline bool clt(lc_c64 x, lc_c64 y) { return cgt(y, x); }
#define CMP(OP, DT, x, y) CMP_##OP(x, y)
LC_FOR_REAL_DTYPES(COMBINE_LOOP)
#undef CMP
#define CMP(OP, DT, x, y) CMPC_##OP(x, y)
#define CMPC_GT(x, y) cgt(x, y)
#define CMPC_LT(x, y) clt(x, y)
COMBINE_LOOP(MLX_COMPLEX64, lc_c64, lc_c64)
#undef CMP

void lc_combine(int mode, mlx_dtype dt, int64_t n, void *dst, int64_t ds, const void *src,
                int64_t ss) {
  switch (dt) {
#define CASE(DT, S, C) \
  case DT: combine_##DT(mode, n, dst, ds, src, ss); break;
    LC_FOR_DTYPES(CASE)
#undef CASE
  }
}

struct comb_ctx {
  int mode;
  mlx_dtype dt;
  char *dst;
  const char *src;
  size_t isz;
};

static void comb_run(void *arg, int64_t n, const int64_t *offs, const int64_t *inner) {
  struct comb_ctx *c = arg;
  lc_combine(c->mode, c->dt, n, c->dst + offs[0] * (int64_t)c->isz, inner[0],
             c->src + offs[1] * (int64_t)c->isz, inner[1]);
}

int lc_combine_strided(int mode, mlx_dtype dt, int ndim, const int *shape, void *dst,
                       const int64_t *dst_strides, int64_t dst_off, const void *src,
                       const int64_t *src_strides, int64_t src_off, bool parallel) {
  if (lc_shape_size(ndim, shape) == 1) {
    size_t isz = lc_dtype_size(dt);
    lc_combine(mode, dt, 1, (char *)dst + dst_off * (int64_t)isz, 1,
               (const char *)src + src_off * (int64_t)isz, 1);
    return 0;
  }
  const int64_t *st[2] = {dst_strides, src_strides};
  int64_t base[2] = {dst_off, src_off};
  struct comb_ctx c = {mode, dt, dst, src, lc_dtype_size(dt)};
  return lc_iter_runs(ndim, shape, 2, st, base, comb_run, &c, parallel);
}

int lc_start_from_input(struct lc_node *n) {
  struct lc_node *a = n->in[0];
  if (lc_prim_can_donate(n, 0)) {
    lc_prim_take_buffer(n, 0);
    return 0;
  }
  if (lc_node_alloc_data(n)) return 1;
  if (n->size && lc_node_copy_out(a, n->buf->data)) return 1;
  return 0;
}

int lc_idx_broadcast(const char *fn, int n, struct lc_node *const *idx, struct lc_node **out) {
  int nd = 0;
  for (int k = 0; k < n; k++) nd = idx[k]->ndim > nd ? idx[k]->ndim : nd;
  int shape[nd > 0 ? nd : 1], tmp[nd > 0 ? nd : 1], cur = 0;
  for (int k = 0; k < n; k++) {
    if (lc_idx_check(fn, idx[k])) return 1;
    if (lc_broadcast_shapes(fn, cur, shape, idx[k]->ndim, idx[k]->shape, &cur, tmp)) return 1;
    memcpy(shape, tmp, sizeof(int) * (size_t)cur);
  }
  for (int k = 0; k < n; k++)
    if (!(out[k] = lc_broadcast_to(idx[k], cur, shape))) {
      while (k--) lc_node_release(out[k]);
      return 1;
    }
  return 0;
}
