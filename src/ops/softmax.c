/* The SOFTMAX primitive (see softmax.h).
 * Each kept position runs three phases over its reduced runs: max (reads
 * x), exp-and-sum (reads x, writes exp to out for float32/float64), scale
 * (rewrites out; float16/bfloat16 recompute exp from x instead). Positions
 * are spread over threads; a few very long rows are instead split into
 * chunks with each phase run in parallel. */
/* Selects on floats must if-convert for the exp loops to vectorise; FP
 * exception flags are not observable here. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include "ops/softmax.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/iter.h"
#include "core/parallel.h"
#include "ops/dtype_dispatch.h"
#include "ops/elementwise.h"
#include "ops/binary.h"
#include "ops/prim.h"
#include "ops/reduce.h"
#include "ops/reduce_math.h"
#include "ops/reduce_plan.h"
#include "transforms/transforms.h"

enum { PH_MAX, PH_EXP, PH_SCALE };

#define SM_BLOCK 512

struct sm_state {
  const char *x;
  char *out;
  double m, s; /* max, sum */
  double inv;  /* 1 / sum */
  int phase;
};

/* ---- float kernels on contiguous blocks (vectorised) ---- */

/* Max through order-preserving integer keys (an integer max reduction
 * vectorises; float selects do not). A NaN may come out as the max or be
 * skipped: either way it makes the row's sum NaN. */
LC_SIMD_CLONES static float fmax_block(const float *x, int64_t n, float m0) {
  int32_t m = INT32_MIN;
  for (int64_t i = 0; i < n; i++) {
    int32_t b;
    memcpy(&b, &x[i], 4);
    int32_t k = b ^ ((b >> 31) & 0x7fffffff);
    m = k > m ? k : m;
  }
  int32_t b = m ^ ((m >> 31) & 0x7fffffff);
  float r;
  memcpy(&r, &b, 4);
  return n == 0 || m0 > r ? m0 : r;
}

/* e[i] = exp(x[i] - m); returns the sum (float lanes, folded in double). */
LC_SIMD_CLONES static double fexp_block(float *restrict e, const float *restrict x, int64_t n,
                                        float m) {
  for (int64_t i = 0; i < n; i++) e[i] = lc_expf_fast(x[i] - m);
  float l[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; k++) l[k] += e[i + k];
  for (; i < n; i++) l[0] += e[i];
  return (double)((l[0] + l[4]) + (l[1] + l[5])) + (double)((l[2] + l[6]) + (l[3] + l[7]));
}

LC_SIMD_CLONES static void fscale_block(float *o, int64_t n, float inv) {
  for (int64_t i = 0; i < n; i++) o[i] *= inv;
}

/* ---- phase callbacks: blocks of SM_BLOCK elements, loaded as float ---- */

#define SM_DEF(DT, S)                                                                       \
  static void sm_cb_##DT(void *ctx, int64_t io, int64_t oo, int64_t n, int64_t is,          \
                         int64_t os) {                                                      \
    struct sm_state *st = ctx;                                                              \
    const S *x = (const S *)st->x + io;                                                     \
    S *o = (S *)st->out + oo;                                                               \
    float tmp[SM_BLOCK], *t;                                                                \
    for (int64_t i0 = 0; i0 < n; i0 += SM_BLOCK) {                                          \
      int64_t bn = n - i0 < SM_BLOCK ? n - i0 : SM_BLOCK;                                   \
      bool direct = DT == MLX_FLOAT32 && is == 1; /* read x in place */                    \
      if (direct) {                                                                         \
        t = (float *)(void *)(x + i0);                                                      \
      } else if (st->phase != PH_SCALE || DT != MLX_FLOAT32) {                              \
        for (int64_t j = 0; j < bn; j++) tmp[j] = SM_LD_##DT(x[(i0 + j) * is]);              \
        t = tmp;                                                                            \
      } else {                                                                              \
        t = tmp;                                                                            \
      }                                                                                     \
      if (st->phase == PH_MAX) {                                                            \
        st->m = fmax_block(t, bn, (float)st->m);                                            \
      } else if (st->phase == PH_EXP && DT == MLX_FLOAT32) {                                \
        /* float32 keeps the exp values in out for the scale phase */                      \
        float *e = os == 1 ? (float *)(void *)(o + i0) : tmp;                               \
        st->s += fexp_block(e, t, bn, (float)st->m);                                        \
        if (os != 1)                                                                        \
          for (int64_t j = 0; j < bn; j++) o[(i0 + j) * os] = lc_st_##DT(tmp[j]);           \
      } else if (st->phase == PH_EXP) {                                                     \
        st->s += fexp_block(tmp, t, bn, (float)st->m);                                      \
      } else if (DT == MLX_FLOAT32) {                                                       \
        if (os == 1) {                                                                      \
          fscale_block((float *)(void *)(o + i0), bn, (float)st->inv);                      \
        } else {                                                                            \
          for (int64_t j = 0; j < bn; j++) tmp[j] = lc_ld_##DT(o[(i0 + j) * os]);           \
          fscale_block(tmp, bn, (float)st->inv);                                            \
          for (int64_t j = 0; j < bn; j++) o[(i0 + j) * os] = lc_st_##DT(tmp[j]);           \
        }                                                                                   \
      } else { /* half types: recompute exp from x */                                       \
        fexp_block(tmp, t, bn, (float)st->m);                                               \
        fscale_block(tmp, bn, (float)st->inv);                                              \
        for (int64_t j = 0; j < bn; j++) o[(i0 + j) * os] = lc_st_##DT(tmp[j]);             \
      }                                                                                     \
    }                                                                                       \
  }

#define SM_LD_MLX_FLOAT32(v) (v)
#define SM_LD_MLX_FLOAT16(v) lc_f16_to_f32_fast(v)
#define SM_LD_MLX_BFLOAT16(v) lc_bf16_to_f32(v)
SM_DEF(MLX_FLOAT32, float)
SM_DEF(MLX_FLOAT16, uint16_t)
SM_DEF(MLX_BFLOAT16, uint16_t)

/* float64: plain loops in double. */
static void sm_cb_MLX_FLOAT64(void *ctx, int64_t io, int64_t oo, int64_t n, int64_t is,
                              int64_t os) {
  struct sm_state *st = ctx;
  const double *x = (const double *)st->x + io;
  double *o = (double *)st->out + oo;
  if (st->phase == PH_MAX) {
    double m = st->m;
    for (int64_t i = 0; i < n; i++) m = x[i * is] > m ? x[i * is] : m;
    st->m = m;
  } else if (st->phase == PH_EXP) {
    double s0 = 0;
    for (int64_t i = 0; i < n; i++) s0 += o[i * os] = exp(x[i * is] - st->m);
    st->s += s0;
  } else {
    for (int64_t i = 0; i < n; i++) o[i * os] *= st->inv;
  }
}

static lc_rplan_run_fn sm_cb(mlx_dtype t) {
  switch (t) {
  case MLX_FLOAT32: return sm_cb_MLX_FLOAT32;
  case MLX_FLOAT64: return sm_cb_MLX_FLOAT64;
  case MLX_FLOAT16: return sm_cb_MLX_FLOAT16;
  case MLX_BFLOAT16: return sm_cb_MLX_BFLOAT16;
  default: return NULL;
  }
}

struct sm_exec {
  const struct lc_rplan *p;
  lc_rplan_run_fn cb;
  const char *x;
  char *out;
  /* chunked mode (one long row): */
  int64_t io, oo, nchunk;
  struct sm_state *parts;
  int phase;
  mlx_dtype dt;
};

static void sm_rows(void *ctx, int64_t lo, int64_t hi) {
  const struct sm_exec *e = ctx;
  for (int64_t o = lo; o < hi; o++) {
    int64_t io, oo;
    lc_rplan_kept(e->p, o, &io, &oo);
    struct sm_state st = {e->x, e->out, -INFINITY, 0, 0, PH_MAX};
    lc_rplan_runs(e->p, io, oo, 0, e->p->R, e->cb, &st);
    st.phase = PH_EXP;
    lc_rplan_runs(e->p, io, oo, 0, e->p->R, e->cb, &st);
    st.inv = 1.0 / st.s;
    st.phase = PH_SCALE;
    lc_rplan_runs(e->p, io, oo, 0, e->p->R, e->cb, &st);
  }
}

static void sm_chunks(void *ctx, int64_t lo, int64_t hi) {
  const struct sm_exec *e = ctx;
  int64_t R = e->p->R;
  for (int64_t c = lo; c < hi; c++) {
    struct sm_state *st = &e->parts[c];
    st->phase = e->phase;
    lc_rplan_runs(e->p, e->io, e->oo, R * c / e->nchunk, R * (c + 1) / e->nchunk, e->cb, st);
  }
}

/* One long row: each phase in parallel over chunks, partials combined. */
static int sm_long_row(struct sm_exec *e, int64_t o) {
  int64_t nc = 4 * lc_parallel_threads();
  struct sm_state *parts = malloc(sizeof *parts * (size_t)nc);
  if (!parts) return lc_error("out of memory");
  lc_rplan_kept(e->p, o, &e->io, &e->oo);
  e->nchunk = nc;
  e->parts = parts;
  for (int64_t c = 0; c < nc; c++) parts[c] = (struct sm_state){e->x, e->out, -INFINITY, 0, 0, 0};
  e->phase = PH_MAX;
  lc_parallel_for(nc, 1, sm_chunks, e);
  double m = -INFINITY;
  for (int64_t c = 0; c < nc; c++) m = parts[c].m > m ? parts[c].m : m;
  for (int64_t c = 0; c < nc; c++) parts[c].m = m;
  e->phase = PH_EXP;
  lc_parallel_for(nc, 1, sm_chunks, e);
  double s = 0;
  for (int64_t c = 0; c < nc; c++) s += parts[c].s;
  for (int64_t c = 0; c < nc; c++) parts[c].inv = 1.0 / s;
  e->phase = PH_SCALE;
  lc_parallel_for(nc, 1, sm_chunks, e);
  free(parts);
  return 0;
}

/* ---- column strategy: the axes are outer, the inner kept dim contiguous:
 * a block of SM_CB adjacent rows advances together, one contiguous slice
 * per reduced position (float32/float16/bfloat16). ---- */

#define SM_CB 256

LC_SIMD_CLONES static void col_max(float *m, const float *t, int64_t n) {
  for (int64_t j = 0; j < n; j++) m[j] = lc__fsel(t[j] > m[j], t[j], m[j]);
}
LC_SIMD_CLONES static void col_exp(float *e, double *s, const float *t, const float *m,
                                   int64_t n) {
  for (int64_t j = 0; j < n; j++) {
    e[j] = lc_expf_fast(t[j] - m[j]);
    s[j] += e[j];
  }
}
LC_SIMD_CLONES static void col_scale(float *o, const float *inv, int64_t n) {
  for (int64_t j = 0; j < n; j++) o[j] *= inv[j];
}
LC_SIMD_CLONES static void col_exp_scale(float *e, const float *t, const float *m,
                                         const float *inv, int64_t n) {
  for (int64_t j = 0; j < n; j++) e[j] = lc_expf_fast(t[j] - m[j]) * inv[j];
}

struct sm_col {
  const struct sm_exec *e;
  mlx_dtype dt;
  int64_t cn;
  int phase;
  float m[SM_CB], inv[SM_CB], t[SM_CB], tmp[SM_CB];
  double s[SM_CB];
};

static const float *col_load(struct sm_col *c, const char *x) {
  if (c->dt == MLX_FLOAT32) return (const float *)(const void *)x;
  const uint16_t *h = (const void *)x;
  if (c->dt == MLX_FLOAT16)
    for (int64_t j = 0; j < c->cn; j++) c->t[j] = lc_f16_to_f32_fast(h[j]);
  else
    for (int64_t j = 0; j < c->cn; j++) c->t[j] = lc_bf16_to_f32(h[j]);
  return c->t;
}

static void col_store(struct sm_col *c, char *o, const float *v) {
  uint16_t *h = (void *)o;
  if (c->dt == MLX_FLOAT16)
    for (int64_t j = 0; j < c->cn; j++) h[j] = lc_f32_to_f16(v[j]);
  else
    for (int64_t j = 0; j < c->cn; j++) h[j] = lc_f32_to_bf16(v[j]);
}

static void smcol_cb(void *ctx, int64_t io, int64_t oo, int64_t n, int64_t is, int64_t os) {
  struct sm_col *c = ctx;
  size_t isz = lc_dtype_size(c->dt);
  for (int64_t i = 0; i < n; i++) {
    const char *x = c->e->x + (io + i * is) * (int64_t)isz;
    char *o = c->e->out + (oo + i * os) * (int64_t)isz;
    bool f32 = c->dt == MLX_FLOAT32;
    if (c->phase == PH_MAX) {
      col_max(c->m, col_load(c, x), c->cn);
    } else if (c->phase == PH_EXP) {
      float *e = f32 ? (float *)(void *)o : c->tmp;
      col_exp(e, c->s, col_load(c, x), c->m, c->cn);
    } else if (f32) {
      col_scale((float *)(void *)o, c->inv, c->cn);
    } else {
      col_exp_scale(c->tmp, col_load(c, x), c->m, c->inv, c->cn);
      col_store(c, o, c->tmp);
    }
  }
}

static void sm_cols(void *ctx, int64_t lo, int64_t hi) {
  const struct sm_exec *e = ctx;
  const struct lc_rplan *p = e->p;
  int64_t C = p->kdim[p->nk - 1], nblk = (C + SM_CB - 1) / SM_CB;
  struct sm_col *c = malloc(sizeof *c);
  if (!c) return; /* the caller probed this allocation */
  c->e = e;
  c->dt = e->dt;
  for (int64_t u = lo; u < hi; u++) {
    int64_t c0 = u % nblk * SM_CB, io, oo;
    c->cn = C - c0 < SM_CB ? C - c0 : SM_CB;
    lc_rplan_kept(p, u / nblk * C + c0, &io, &oo);
    for (int64_t j = 0; j < c->cn; j++) c->m[j] = -INFINITY, c->s[j] = 0;
    for (int ph = PH_MAX; ph <= PH_SCALE; ph++) {
      c->phase = ph;
      lc_rplan_runs(p, io, oo, 0, p->R, smcol_cb, c);
      if (ph == PH_EXP)
        for (int64_t j = 0; j < c->cn; j++) c->inv[j] = (float)(1.0 / c->s[j]);
    }
  }
  free(c);
}

static int softmax_eval(struct lc_node *n) {
  const int *p = n->params;
  struct lc_node *x = n->in[0];
  if (lc_node_alloc_data(n)) return 1;
  if (n->size == 0) return 0;
  int dcap = x->ndim > 0 ? x->ndim : 1;
  bool red[dcap];
  memset(red, 0, sizeof red);
  for (int i = 0; i < p[1]; i++) red[p[2 + i]] = true;
  int64_t ost[dcap];
  lc_shape_strides(x->ndim, x->shape, ost);
  struct lc_rplan plan;
  if (lc_rplan_init(&plan, x, red, ost, true)) return 1;
  struct sm_exec e = {&plan, sm_cb(x->dtype), x->buf->data, n->buf->data, 0, 0, 0, NULL, 0,
                      x->dtype};
  int threads = lc_parallel_threads();
  if (x->dtype != MLX_FLOAT64 && plan.nk > 0 && plan.nr > 0 && plan.rin[plan.nr - 1] != 1 &&
      plan.kin[plan.nk - 1] == 1 && plan.kout[plan.nk - 1] == 1 && plan.kdim[plan.nk - 1] >= 8) {
    void *probe = malloc(sizeof(struct sm_col));
    if (!probe) return lc_error("out of memory");
    free(probe);
    int64_t C = plan.kdim[plan.nk - 1], units = plan.nout / C * ((C + SM_CB - 1) / SM_CB);
    int64_t per = n->size / units;
    lc_parallel_for(units, LC_PARALLEL_MIN / (per > 0 ? per : 1) + 1, sm_cols, &e);
    return 0;
  }
  if (threads > 1 && plan.nout < threads && plan.R >= (1 << 20)) {
    for (int64_t o = 0; o < plan.nout; o++)
      if (sm_long_row(&e, o)) return 1;
    return 0;
  }
  lc_parallel_for(plan.nout, LC_PARALLEL_MIN / (plan.R > 0 ? plan.R : 1) + 1, sm_rows, &e);
  return 0;
}

/* ---- transformation rules ----
 * With s = softmax(x) over the axes, both the vjp and the jvp are the
 * same self-adjoint map v -> s * v - s * sum(s * v, axes) (keepdims). */
static struct lc_node *softmax_linear(struct lc_node *n, struct lc_node *v) {
  const int *p = n->params;
  struct lc_node *sv = lc_multiply(n, v);
  struct lc_node *t = sv ? lc_sum(sv, p + 2, p[1], true) : NULL;
  struct lc_node *st = t ? lc_multiply(n, t) : NULL;
  struct lc_node *r = st ? lc_subtract(sv, st) : NULL;
  lc_node_release(sv);
  lc_node_release(t);
  lc_node_release(st);
  return r;
}

static int softmax_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                       int nargs, struct lc_node **out) {
  (void)argnums, (void)nargs;
  return !(out[0] = softmax_linear(n, cot[0]));
}

static int softmax_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  return !(out[0] = softmax_linear(n, tan[0]));
}

/* Batch axis first, softmax axes shifted past it. */
static int softmax_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                        struct lc_node **out, int *out_ax) {
  const int *p = n->params;
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  if (!x) return 1;
  int axes[p[1] > 0 ? p[1] : 1];
  for (int i = 0; i < p[1]; i++) axes[i] = p[2 + i] + 1;
  out[0] = lc_softmax_fn("softmax", x, axes, p[1], p[0]);
  lc_node_release(x);
  *out_ax = 0;
  return !out[0];
}

const struct lc_prim lc_prim_softmax = {.name = "softmax",
                                        .eval_cpu = softmax_eval,
                                        .eval_cuda = LC_CUDA(lc_cuda_eval_softmax),
                                        .vjp = softmax_vjp,
                                        .jvp = softmax_jvp,
                                        .vmap = softmax_vmap,
                                        .output_shape = lc_prim_shape_of_input0};

struct lc_node *lc_softmax_fn(const char *fn, struct lc_node *a, const int *axes, int naxes,
                              bool precise) {
  int cap = naxes > 0 ? naxes : 1;
  if (naxes > a->ndim) {
    lc_error("%s: %d axes given for an array with %d dimensions", fn, naxes, a->ndim);
    return NULL;
  }
  int sorted[cap];
  if (lc_reduce_check_axes(fn, a->ndim, axes, naxes, sorted)) return NULL;
  if (lc_dtype_is_complex(a->dtype)) {
    lc_error("%s: softmax is not supported for %s", fn, lc_dtype_name(a->dtype));
    return NULL;
  }
  if (a->size == 0) return lc_node_retain(a);
  struct lc_node *x = lc_astype(a, lc_dtype_inexact(a->dtype));
  if (!x) return NULL;
  int params[2 + cap];
  params[0] = precise;
  params[1] = naxes;
  memcpy(params + 2, sorted, sizeof(int) * (size_t)naxes);
  struct lc_node *r = lc_node_new_op(LC_OP_SOFTMAX, x->dtype, x->ndim, x->shape, 1, &x, params,
                                     sizeof(int) * (size_t)(2 + naxes));
  lc_node_release(x);
  return r;
}

struct lc_node *lc_softmax(struct lc_node *a, const int *axes, int naxes, bool precise) {
  return lc_softmax_fn("softmax", a, axes, naxes, precise);
}
