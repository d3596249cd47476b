/* Distribution kernels: MLX's sampling formulas applied to threefry bits,
 * each intermediate rounded to the type MLX computes it in (so results are
 * MLX's bit for bit where MLX uses libm or exact arithmetic). */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/half.h"
#include "ops/dtype_dispatch.h"
#include "ops/elementwise.h"
#include "ops/prim.h"
#include "ops/random_internal.h"
#include "ops/binary.h"
#include "ops/creation.h"
#include "ops/index.h"
#include "ops/shape.h"
#include "transforms/transforms.h"

/* x rounded to dtype t (float types). */
static double rt(mlx_dtype t, double x) {
  switch (t) {
  case MLX_FLOAT32: return (float)x;
  case MLX_FLOAT16: return lc_f16_to_f32(lc_f32_to_f16((float)x));
  case MLX_BFLOAT16: return lc_bf16_to_f32(lc_f32_to_bf16((float)x));
  default: return x;
  }
}

/* The largest value below 1 in t, as MLX's uniform clamps to. */
static float below_one(mlx_dtype t) {
  switch (t) {
  case MLX_FLOAT16: return lc_f16_to_f32(0x3bff);
  case MLX_BFLOAT16: return lc_bf16_to_f32(0x3f7f);
  default: return nextafterf(1.0f, 0.0f);
  }
}

/* bits / 2^32 in float32, clamped below 1 (MLX: divide by float(UINT32_MAX),
 * which rounds to 2^32, then minimum with the upper bound). */
static float unit(uint32_t b, float upper) {
  float u = (float)b / 4294967296.0f;
  return u < upper ? u : upper;
}

/* MLX's uniform in dtype t from one draw. */
static double uniform_t(mlx_dtype t, uint32_t b, double lo, double hi) {
  double u = rt(t, unit(b, below_one(t)));
  double range = rt(t, hi - lo);
  return rt(t, rt(t, range * u) + lo);
}

/* Single-precision inverse error function (M. Giles' polynomials, the form
 * MLX's CPU backend evaluates, with fused multiply-adds). */
static inline __attribute__((always_inline)) float erfinv_f32(float a) {
  float t = logf(fmaf(a, 0.0f - a, 1.0f)), p;
  if (fabsf(t) > 6.125f) {
    p = 3.03697567e-10f;
    p = fmaf(p, t, 2.93243101e-8f);
    p = fmaf(p, t, 1.22150334e-6f);
    p = fmaf(p, t, 2.84108955e-5f);
    p = fmaf(p, t, 3.93552968e-4f);
    p = fmaf(p, t, 3.02698812e-3f);
    p = fmaf(p, t, 4.83185798e-3f);
    p = fmaf(p, t, -2.64646143e-1f);
    p = fmaf(p, t, 8.40016484e-1f);
  } else {
    p = 5.43877832e-9f;
    p = fmaf(p, t, 1.43285448e-7f);
    p = fmaf(p, t, 1.22774793e-6f);
    p = fmaf(p, t, 1.12963626e-7f);
    p = fmaf(p, t, -5.61530760e-5f);
    p = fmaf(p, t, -1.47697632e-4f);
    p = fmaf(p, t, 2.31468678e-3f);
    p = fmaf(p, t, 1.15392581e-2f);
    p = fmaf(p, t, -2.32015476e-1f);
    p = fmaf(p, t, 8.86226892e-1f);
  }
  return a * p;
}

/* Single-precision erf (Abramowitz-Stegun 7.1.26 form, as MLX's CPU erf;
 * MLX's own exp approximation is replaced by expf here). */
static float erf_f32(float x) {
  float v = fabsf(x);
  float t = 1.0f / fmaf(0.3275911f, v, 1.0f);
  float r = fmaf(1.061405429f, t, -1.453152027f);
  r = fmaf(r, t, 1.421413741f);
  r = fmaf(r, t, -0.284496736f);
  r = fmaf(r, t, 0.254829592f);
  float e = -expf(-x * x);
  float res = fmaf(e * t, r, 1.0f);
  return x > 0 ? res : -res;
}

/* MLX's normal and laplace start from uniform float32 on
 * [nextafter(-1, 0), 1). */
static float symmetric_unit(uint32_t b) {
  float lo = nextafterf(-1.0f, 0.0f), range = 1.0f - lo;
  float u = range * unit(b, below_one(MLX_FLOAT32));
  return u + lo;
}

#define LD(k, i) lc_dtype_load((const char *)in[k] + (i) * is[k] * isz[k], dt[k])

static inline __attribute__((always_inline)) void normal_f32_body(
    int64_t n, float *o, const void *const *in, const int64_t *is,
    const struct lc_dist_params *p) {
  const uint32_t *bits = in[0];
  const float *x = in[1], *y = in[2];
  const float s2 = (float)sqrt(2.0);
  for (int64_t i = 0; i < n; i++) {
    float e = erfinv_f32(symmetric_unit(bits[i * is[0]]));
    float sc = p->has_scale ? s2 * x[i * is[1]] : s2, v = sc * e;
    o[i] = p->has_loc ? y[i * is[2]] + v : v;
  }
}

/* Two builds of the loop: with the FMA instruction set fmaf is one
 * instruction instead of a library call; results are identical. */
__attribute__((target("fma"))) static void normal_f32_fma(int64_t n, float *o,
                                                          const void *const *in,
                                                          const int64_t *is,
                                                          const struct lc_dist_params *p) {
  normal_f32_body(n, o, in, is, p);
}

static void normal_f32(int64_t n, float *o, const void *const *in, const int64_t *is,
                       const struct lc_dist_params *p) {
  normal_f32_body(n, o, in, is, p);
}

static bool have_fma(void) { return __builtin_cpu_supports("fma"); }

/* float32 uniform and normal without per-element dispatch (the common
 * case); same arithmetic as the generic path. */
static bool dist_f32_fast(int64_t n, float *o, const void *const *in, const int64_t *is,
                          const struct lc_dist_params *p) {
  const uint32_t *bits = in[0];
  const float *x = in[1], *y = in[2];
  int64_t bs = is[0], xs = is[1], ys = is[2];
  if (p->kind == LC_DIST_UNIFORM) {
    const float up = below_one(MLX_FLOAT32);
    for (int64_t i = 0; i < n; i++) {
      float lo = x[i * xs], range = y[i * ys] - lo;
      o[i] = range * unit(bits[i * bs], up) + lo;
    }
    return true;
  }
  if (p->kind == LC_DIST_NORMAL) {
    if (have_fma())
      normal_f32_fma(n, o, in, is, p);
    else
      normal_f32(n, o, in, is, p);
    return true;
  }
  return false;
}

static void dist_kernel(int64_t n, void *out, mlx_dtype ot, const void *const *in,
                        const int64_t *is, mlx_dtype in_dt, const void *params) {
  (void)in_dt;
  const struct lc_dist_params *p = params;
  if (ot == MLX_FLOAT32 && dist_f32_fast(n, out, in, is, p)) return;
  const uint32_t *bits = in[0];
  size_t osz = lc_dtype_size(ot);
  mlx_dtype dt[5] = {MLX_UINT32, ot, ot, MLX_FLOAT64, MLX_FLOAT64};
  if (p->kind == LC_DIST_RANDINT) dt[1] = dt[2] = MLX_FLOAT32;
  if (p->kind == LC_DIST_BERNOULLI) dt[1] = p->p_f64 ? MLX_FLOAT64 : MLX_FLOAT32;
  size_t isz[5];
  for (int k = 0; k < 5; k++) isz[k] = lc_dtype_size(dt[k]);
  const double sqrt2 = sqrt(2.0);
  for (int64_t i = 0; i < n; i++) {
    uint32_t b = bits[i * is[0]];
    double v = 0;
    switch (p->kind) {
    case LC_DIST_UNIFORM: v = uniform_t(ot, b, LD(1, i), LD(2, i)); break;
    case LC_DIST_NORMAL: {
      double e = rt(ot, erfinv_f32(symmetric_unit(b)));
      double s = rt(ot, sqrt2);
      if (p->has_scale) s = rt(ot, s * LD(1, i));
      v = rt(ot, s * e);
      if (p->has_loc) v = rt(ot, LD(2, i) + v);
      break;
    }
    case LC_DIST_LAPLACE: {
      float u = symmetric_unit(b);
      double sg = u > 0 ? 1.0 : (u < 0 ? -1.0 : 0.0);
      if (ot == MLX_FLOAT64)
        v = sg * log1p(-1.0 * fabs((double)u));
      else
        v = (float)(sg * log1pf(-1.0f * fabsf(u)));
      v = rt(ot, v);
      if (p->scale != 1.0f) v = rt(ot, rt(ot, p->scale) * v);
      if (p->loc != 0.0f) v = rt(ot, rt(ot, p->loc) + v);
      break;
    }
    case LC_DIST_GUMBEL: {
      double u = rt(ot, unit(b, below_one(ot)));
      double l1 = rt(ot, logf((float)u));
      double l2 = rt(ot, logf((float)-l1));
      v = -l2;
      break;
    }
    case LC_DIST_TRUNC: {
      double lower = LD(1, i), upper = LD(2, i), s = rt(ot, sqrt2);
      double a = rt(ot, erf_f32((float)rt(ot, lower / s)));
      double c = rt(ot, erf_f32((float)rt(ot, upper / s)));
      double u = uniform_t(ot, b, a, c);
      v = rt(ot, s * rt(ot, erfinv_f32((float)u)));
      v = upper < v ? upper : v;
      v = v > lower ? v : lower;
      break;
    }
    case LC_DIST_BERNOULLI: {
      const float upper = 4294967808.0f; /* nextafter(float(UINT32_MAX), +inf) */
      double pr = LD(1, i);
      if (dt[1] == MLX_FLOAT64)
        v = (double)b < pr * (double)upper;
      else
        v = (float)b < (float)(pr * upper);
      break;
    }
    case LC_DIST_RANDINT: {
      float lo = (float)LD(1, i), hi = (float)LD(2, i), range = hi - lo;
      float u = range * unit(b, below_one(MLX_FLOAT32));
      u = u + lo;
      double f = floorf(u), h = trunc(LD(4, i) - 1.0), l = trunc(LD(3, i));
      v = f < h ? f : h;
      v = v > l ? v : l;
      break;
    }
    default: break;
    }
    lc_dtype_store((char *)out + i * (int64_t)osz, ot, v);
  }
}

/* ---- rules of the distributions ----
 * uniform: out = lo + (hi - lo) u, so d/dlo = 1 - u, d/dhi = u;
 * normal: out = loc + scale z, so d/dscale = z, d/dloc = 1, with u and z
 * the same node's draws on its bits with lo = 0, hi = 1 / no scale and
 * loc. Bernoulli and randint outputs are piecewise constant in their
 * parameters (zero, as MLX's comparison / floor); the bits are integers.
 * Truncated normal bounds are not differentiated (reported). */

/* The node's draw with unit parameters: u (uniform) or z (normal). */
static struct lc_node *unit_draw(struct lc_node *n) {
  struct lc_dist_params p = *(const struct lc_dist_params *)n->params;
  bool uniform = p.kind == LC_DIST_UNIFORM;
  p.has_scale = p.has_loc = 0;
  struct lc_node *z = lc_zeros(n->ndim, n->shape, n->dtype);
  struct lc_node *o = uniform ? lc_ones(n->ndim, n->shape, n->dtype) : lc_node_retain(z);
  struct lc_node *r = NULL;
  if (z && o) {
    struct lc_node *in[3] = {n->in[0], z, o};
    r = lc_node_new_op(LC_OP_RANDOM_DIST, n->dtype, n->ndim, n->shape, 3, in, &p, sizeof p);
  }
  lc_node_release(z);
  lc_node_release(o);
  return r;
}

/* The derivative of the output in parameter input k (1 or 2), given the
 * unit draw d; NULL with *zero set when it is identically zero. */
static struct lc_node *dist_partial(struct lc_node *n, int k, struct lc_node *d, bool *zero) {
  const struct lc_dist_params *p = n->params;
  *zero = false;
  if (p->kind == LC_DIST_UNIFORM) {
    if (k == 2) return lc_node_retain(d);
    struct lc_node *one = lc_node_new_scalar(n->dtype, 1.0);
    struct lc_node *r = one ? lc_subtract(one, d) : NULL;
    lc_node_release(one);
    return r;
  }
  if (p->kind == LC_DIST_NORMAL) {
    if (k == 1 && p->has_scale) return lc_node_retain(d);
    if (k == 2 && p->has_loc) return lc_ones(n->ndim, n->shape, n->dtype);
  }
  *zero = true;
  return NULL;
}

/* Whether the derivatives in the parameters are zero (no unit draw needed);
 * reports and sets *bad for the truncated normal. */
static bool dist_flat(const struct lc_node *n, bool *bad) {
  int kind = ((const struct lc_dist_params *)n->params)->kind;
  *bad = kind == LC_DIST_TRUNC;
  if (*bad)
    lc_error("%s: truncated_normal cannot be differentiated with respect to its bounds",
             "transforms");
  return kind != LC_DIST_UNIFORM && kind != LC_DIST_NORMAL;
}

static int dist_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                    struct lc_node **out) {
  bool bad, any = false;
  for (int j = 0; j < nargs; j++) out[j] = NULL;
  for (int j = 0; j < nargs; j++) any |= argnums[j] > 0;
  if (!any || dist_flat(n, &bad)) return any && bad;
  struct lc_node *d = unit_draw(n);
  if (!d) return 1;
  for (int j = 0; j < nargs; j++) {
    if (argnums[j] == 0) continue;
    bool zero;
    struct lc_node *dv = dist_partial(n, argnums[j], d, &zero);
    if (zero) continue;
    out[j] = dv ? lc_multiply(cot[0], dv) : NULL;
    lc_node_release(dv);
    if (!out[j]) {
      lc_rule_release(out, j);
      lc_node_release(d);
      return 1;
    }
  }
  lc_node_release(d);
  return 0;
}

static int dist_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  bool bad, any = false;
  out[0] = NULL;
  for (int k = 1; k < n->nin; k++) any |= tan[k] != NULL;
  if (!any || dist_flat(n, &bad)) return any && bad;
  struct lc_node *d = unit_draw(n), *acc = NULL;
  int rc = d == NULL;
  for (int k = 1; !rc && k < n->nin; k++) {
    if (!tan[k]) continue;
    bool zero;
    struct lc_node *dv = dist_partial(n, k, d, &zero), *t = NULL;
    if (zero) continue;
    t = dv ? lc_multiply(tan[k], dv) : NULL;
    lc_node_release(dv);
    if (t && acc) { /* acc += t */
      struct lc_node *sum = lc_add(acc, t);
      lc_node_release(t);
      t = sum;
    }
    lc_node_release(acc);
    acc = t;
    rc = acc == NULL;
  }
  lc_node_release(d);
  if (rc) lc_node_release(acc);
  else out[0] = acc;
  return rc;
}

const struct lc_prim lc_prim_random_dist = {.name = "random_dist",
                                            .flags = LC_PF_ELEMWISE,
                                            .eval_cpu = lc_ew_eval_cpu,
                                            .eval_cuda = LC_CUDA(lc_cuda_eval_random_dist),
                                            .ew = dist_kernel,
                                            .vjp = dist_vjp,
                                            .jvp = dist_jvp,
                                            .vmap = lc_rule_vmap_elementwise};

/* ---- complex normal: MLX draws shape + (2,) uniform values on
 * [nextafter(-1, 0), 1), takes erfinv of each (no sqrt 2 factor) and
 * pairs them as (real, imaginary); then scale * z, then loc + z. ---- */

struct cnormal_params {
  int has_scale, has_loc; /* inputs 1 (scale) and 2 (loc) when present */
};

static int cnormal_eval(struct lc_node *n) {
  const struct cnormal_params *p = n->params;
  if (lc_node_alloc_data(n)) return 1;
  const struct lc_node *bn = n->in[0];
  size_t bytes = sizeof(lc_c64) * (size_t)(n->size > 0 ? n->size : 1);
  uint32_t *bits = malloc(sizeof(uint32_t) * 2 * (size_t)(n->size > 0 ? n->size : 1));
  lc_c64 *sc = p->has_scale ? malloc(bytes) : NULL, *lo = p->has_loc ? malloc(bytes) : NULL;
  if (!bits || (p->has_scale && !sc) || (p->has_loc && !lo)) {
    free(bits);
    free(sc);
    free(lo);
    return lc_error("normal: out of memory");
  }
  lc_node_copy_out(bn, bits);
  int k = 1;
  if (p->has_scale) lc_node_copy_out(n->in[k++], sc);
  if (p->has_loc) lc_node_copy_out(n->in[k], lo);
  lc_c64 *o = n->buf->data;
  for (int64_t i = 0; i < n->size; i++) {
    float re = erfinv_f32(symmetric_unit(bits[2 * i]));
    float im = erfinv_f32(symmetric_unit(bits[2 * i + 1]));
    lc_c64 z = re + im * I;
    if (sc) z = sc[i] * z;
    if (lo) z = lo[i] + z;
    o[i] = z;
  }
  free(bits);
  free(sc);
  free(lo);
  return 0;
}

/* Batch first everywhere (unbatched inputs broadcast): one more leading
 * dimension of the output and of the bits' (shape..., 2). */
static int batched_like(struct lc_node *n, struct lc_node *const *in, const int *ax,
                        const void *params, size_t psize, struct lc_node **out) {
  int B = lc_rule_batch_size(n->nin, in, ax), rc = 1, k = 0;
  struct lc_node *ins[4] = {NULL};
  for (; k < n->nin; k++) {
    if (!(ins[k] = lc_rule_batch_front_full(in[k], ax[k], B))) goto done;
  }
  {
    int sh[n->ndim + 1];
    sh[0] = B;
    memcpy(sh + 1, n->shape, sizeof(int) * (size_t)n->ndim);
    out[0] = lc_node_new_op(n->op, n->dtype, n->ndim + 1, sh, n->nin, ins, params, psize);
    rc = out[0] == NULL;
  }
done:
  lc_rule_release(ins, k);
  return rc;
}

static int cnormal_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                        struct lc_node **out, int *out_ax) {
  *out_ax = 0;
  return batched_like(n, in, ax, n->params, n->params_size, out);
}

/* The bits give nothing; complex scale / loc are not differentiated. */
static int cnormal_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                       int nargs, struct lc_node **out) {
  (void)n, (void)cot;
  for (int j = 0; j < nargs; j++) {
    out[j] = NULL;
    if (argnums[j] > 0)
      return lc_error("vjp: complex normal samples cannot be differentiated with respect to "
                      "scale or loc");
  }
  return 0;
}

static int cnormal_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  out[0] = NULL;
  for (int k = 1; k < n->nin; k++)
    if (tan[k])
      return lc_error("jvp: complex normal samples cannot be differentiated with respect to "
                      "scale or loc");
  return 0;
}

const struct lc_prim lc_prim_random_cnormal = {.name = "random_cnormal",
                                               .eval_cpu = cnormal_eval,
                                               .eval_cuda = LC_CUDA(lc_cuda_eval_random_cnormal),
                                               .vjp = cnormal_vjp,
                                               .jvp = cnormal_jvp,
                                               .vmap = cnormal_vmap};

/* ---- categorical: argmax over axis of gumbel noise + logits ---- */

struct cat_params {
  int axis; /* in the inputs' shape */
};

static int categorical_eval(struct lc_node *n) {
  const struct cat_params *p = n->params;
  const struct lc_node *g = n->in[0], *l = n->in[1];
  if (lc_node_alloc_data(n)) return 1;
  int64_t outer = 1, inner = 1, K = g->shape[p->axis];
  for (int d = 0; d < p->axis; d++) outer *= g->shape[d];
  for (int d = p->axis + 1; d < g->ndim; d++) inner *= g->shape[d];
  size_t gsz = lc_dtype_size(g->dtype), lsz = lc_dtype_size(l->dtype);
  char *gb = malloc((size_t)g->size * gsz + 1), *lb = malloc((size_t)l->size * lsz + 1);
  if (!gb || !lb) {
    free(gb);
    free(lb);
    return lc_error("categorical: out of memory");
  }
  lc_node_copy_out(g, gb);
  lc_node_copy_out(l, lb);
  uint32_t *o = n->buf->data;
  bool f64 = l->dtype == MLX_FLOAT64;
  for (int64_t a = 0; a < outer; a++)
    for (int64_t j = 0; j < inner; j++) {
      double best = 0;
      uint32_t arg = 0;
      for (int64_t k = 0; k < K; k++) {
        int64_t idx = (a * K + k) * inner + j;
        double gv = lc_dtype_load(gb + idx * (int64_t)gsz, g->dtype);
        double lv = lc_dtype_load(lb + idx * (int64_t)lsz, l->dtype);
        double s = f64 ? gv + lv : (float)(gv + lv);
        if (k == 0 || s > best || (isnan(s) && !isnan(best))) {
          best = s;
          arg = (uint32_t)k;
        }
      }
      o[a * inner + j] = arg;
    }
  free(gb);
  free(lb);
  return 0;
}

static int categorical_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                            struct lc_node **out, int *out_ax) {
  struct cat_params p = *(const struct cat_params *)n->params;
  p.axis++;
  *out_ax = 0;
  return batched_like(n, in, ax, &p, sizeof p, out);
}

const struct lc_prim lc_prim_random_categorical = {.name = "random_categorical",
                                                   .eval_cpu = categorical_eval,
                                                   .eval_cuda =
                                                       LC_CUDA(lc_cuda_eval_random_categorical),
                                                   .vjp = lc_rule_zero_vjp,
                                                   .jvp = lc_rule_zero_jvp,
                                                   .vmap = categorical_vmap};

/* ---- argsort of 1-d uint32 bits (stable), the permutation ---- */

struct key_idx {
  uint32_t key, idx;
};

static int cmp_key_idx(const void *x, const void *y) {
  const struct key_idx *a = x, *b = y;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return a->idx < b->idx ? -1 : (a->idx > b->idx);
}

static int argsort_eval(struct lc_node *n) {
  const struct lc_node *x = n->in[0];
  if (lc_node_alloc_data(n)) return 1;
  int64_t len = n->size;
  struct key_idx *v = malloc(sizeof *v * (size_t)(len > 0 ? len : 1));
  if (!v) return lc_error("permutation: out of memory");
  const uint32_t *k = lc_node_data(x);
  for (int64_t i = 0; i < len; i++) v[i] = (struct key_idx){k[i * x->strides[0]], (uint32_t)i};
  qsort(v, (size_t)len, sizeof *v, cmp_key_idx);
  uint32_t *o = n->buf->data;
  for (int64_t i = 0; i < len; i++) o[i] = v[i].idx;
  free(v);
  return 0;
}

/* The evaluator sorts one vector: a batch is sorted row by row (B nodes). */
static int argsort_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                        struct lc_node **out, int *out_ax) {
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  if (!x) return 1;
  int B = x->shape[0], b = 0, rc = 1;
  struct lc_node **rows = calloc((size_t)(B > 0 ? B : 1), sizeof *rows);
  if (!rows) {
    lc_node_release(x);
    return lc_error("vmap: out of memory");
  }
  for (; b < B; b++) {
    int zero = 0;
    struct lc_node *s = lc_slice_axis(x, 0, b, b + 1), *v = s ? lc_squeeze(s, 1, &zero) : NULL;
    rows[b] = v ? lc_rule_clone(n, &v) : NULL;
    lc_node_release(s);
    lc_node_release(v);
    if (!rows[b]) goto done;
  }
  *out_ax = 0;
  rc = !(out[0] = B ? lc_stack(B, rows, 0) : lc_zeros(2, (int[]){0, n->shape[0]}, n->dtype));
done:
  lc_rule_release(rows, b);
  free(rows);
  lc_node_release(x);
  return rc;
}

const struct lc_prim lc_prim_random_argsort = {.name = "random_argsort",
                                               .eval_cpu = argsort_eval,
                                               .eval_cuda = LC_CUDA(lc_cuda_eval_random_argsort),
                                               .vjp = lc_rule_zero_vjp,
                                               .jvp = lc_rule_zero_jvp,
                                               .vmap = argsort_vmap};

/* ---- x reordered along an axis by a uint32 index vector ---- */

static int take_eval(struct lc_node *n) {
  const int *axis = n->params;
  const struct lc_node *x = n->in[0], *ix = n->in[1];
  if (lc_node_alloc_data(n)) return 1;
  size_t isz = lc_dtype_size(x->dtype);
  char *src = malloc((size_t)x->size * isz + 1);
  if (!src) return lc_error("permutation: out of memory");
  lc_node_copy_out(x, src);
  int64_t outer = 1, inner = 1, K = x->shape[*axis];
  for (int d = 0; d < *axis; d++) outer *= x->shape[d];
  for (int d = *axis + 1; d < x->ndim; d++) inner *= x->shape[d];
  const uint32_t *id = lc_node_data(ix);
  char *o = n->buf->data;
  size_t row = (size_t)inner * isz;
  for (int64_t a = 0; a < outer; a++)
    for (int64_t k = 0; k < K; k++)
      memcpy(o + (a * K + k) * (int64_t)row, src + (a * K + id[k * ix->strides[0]]) * (int64_t)row,
             row);
  free(src);
  return 0;
}

/* x reordered by a permutation: the cotangent goes back through the
 * inverse permutation (the argsort of the indices); the tangent is
 * reordered alike. The indices are integers. */
static int take_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums, int nargs,
                    struct lc_node **out) {
  for (int j = 0; j < nargs; j++) out[j] = NULL;
  if (argnums[0] != 0) return 0;
  struct lc_node *ix = n->in[1];
  struct lc_node *inv =
      lc_node_new_op(LC_OP_RANDOM_ARGSORT, MLX_UINT32, ix->ndim, ix->shape, 1, &ix, NULL, 0);
  if (!inv) return 1;
  struct lc_node *in[2] = {cot[0], inv};
  out[0] = lc_rule_clone(n, in);
  lc_node_release(inv);
  return !out[0];
}

static int take_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  out[0] = NULL;
  if (!tan[0]) return 0;
  struct lc_node *in[2] = {tan[0], n->in[1]};
  return !(out[0] = lc_rule_clone(n, in));
}

/* Unbatched indices: the same reordering one axis further. Batched ones:
 * take_along_axis with each example's permutation. */
static int take_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                     struct lc_node **out, int *out_ax) {
  int axis = *(const int *)n->params + 1, B = lc_rule_batch_size(2, in, ax);
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], true), *r = NULL;
  *out_ax = 0;
  if (x && ax[1] == -1) {
    struct lc_node *ins[2] = {x, in[1]};
    r = lc_node_new_op(LC_OP_RANDOM_TAKE, n->dtype, x->ndim, x->shape, 2, ins, &axis,
                       sizeof axis);
  } else if (x) {
    int nd = x->ndim, sh[nd];
    for (int d = 0; d < nd; d++) sh[d] = 1;
    sh[0] = B;
    sh[axis] = n->shape[axis - 1];
    struct lc_node *f = lc_rule_batch_front(in[1], ax[1], false);
    struct lc_node *i2 = f ? lc_reshape(f, nd, sh) : NULL;
    for (int d = 1; d < nd; d++) sh[d] = d == axis ? sh[d] : n->shape[d - 1];
    struct lc_node *xb = i2 ? lc_broadcast_to(x, nd, sh) : NULL;
    r = xb ? lc_take_along_axis(xb, i2, axis) : NULL;
    lc_node_release(f);
    lc_node_release(i2);
    lc_node_release(xb);
  }
  lc_node_release(x);
  out[0] = r;
  return r == NULL;
}

const struct lc_prim lc_prim_random_take = {.name = "random_take",
                                            .eval_cpu = take_eval,
                                            .eval_cuda = LC_CUDA(lc_cuda_eval_random_take),
                                            .vjp = take_vjp,
                                            .jvp = take_jvp,
                                            .vmap = take_vmap};
