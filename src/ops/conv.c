/* The CONV primitive and the convolution builders (see conv.h). */
#include "ops/conv.h"

#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "ops/binary.h"
#include "ops/elementwise.h"
#include "ops/prim.h"
#include "ops/shape.h"
#include "transforms/transforms.h"

/* Rows of the im2col matrix built at once, bounding its memory. */
#define ROW_BLOCK_ELEMS (1 << 22)

/* Fills col (rows x K, K = prod(k) * cg) for output rows [r0, r0 + rows)
 * of group g. x is the contiguous input (N, in..., C). */
#define IM2COL(T, NAME)                                                                         \
  static void NAME(T *col, const T *x, const struct lc_node *n, const struct lc_node *in,      \
                   const struct lc_node *wt, const struct lc_conv_params *p, int64_t r0,        \
                   int64_t rows, int g, int cg) {                                               \
    int nsp = p->nsp, C = in->shape[nsp + 1];                                                   \
    int64_t ostr[LC_CONV_MAXSP + 1], istr[LC_CONV_MAXSP + 1];                                   \
    ostr[nsp] = 1;                                                                              \
    istr[nsp - 1] = C;                                                                          \
    for (int i = nsp - 1; i >= 0; i--) ostr[i] = ostr[i + 1] * n->shape[i + 1];                 \
    for (int i = nsp - 2; i >= 0; i--) istr[i] = istr[i + 1] * in->shape[i + 2];                \
    int64_t ktaps = 1;                                                                          \
    for (int i = 0; i < nsp; i++) ktaps *= wt->shape[i + 1];                                    \
    int64_t K = ktaps * cg;                                                                     \
    for (int64_t r = 0; r < rows; r++) {                                                        \
      int64_t m = r0 + r, rem = m % ostr[0];                                                \
      int64_t b = m / ostr[0];                                                                  \
      int64_t ot[LC_CONV_MAXSP];                                                                \
      for (int i = 0; i < nsp; i++) {                                                           \
        ot[i] = rem / ostr[i + 1];                                                              \
        rem %= ostr[i + 1];                                                                     \
      }                                                                                         \
      T *dst = col + r * K;                                                                     \
      int kj[LC_CONV_MAXSP] = {0, 0, 0};                                                        \
      for (int64_t t = 0; t < ktaps; t++) {                                                     \
        int64_t off = b * istr[0] * in->shape[1] + (int64_t)g * cg;                             \
        int ok = 1;                                                                             \
        for (int i = 0; i < nsp && ok; i++) {                                                   \
          int kk = wt->shape[i + 1];                                                            \
          int j = p->flip ? kk - 1 - kj[i] : kj[i];                                             \
          int64_t q = ot[i] * p->stride[i] + (int64_t)j * p->kdil[i] - p->lo[i];                \
          if (q < 0 || q % p->idil[i]) {                                                        \
            ok = 0;                                                                             \
            break;                                                                              \
          }                                                                                     \
          q /= p->idil[i];                                                                      \
          if (q >= in->shape[i + 1]) ok = 0;                                                    \
          off += q * istr[i];                                                                   \
        }                                                                                       \
        if (ok)                                                                                 \
          memcpy(dst + t * cg, x + off, sizeof(T) * (size_t)cg);                                \
        else                                                                                    \
          memset(dst + t * cg, 0, sizeof(T) * (size_t)cg);                                      \
        for (int i = nsp - 1; i >= 0; i--) { /* next tap, row-major over the kernel */          \
          if (++kj[i] < wt->shape[i + 1]) break;                                                \
          kj[i] = 0;                                                                            \
        }                                                                                       \
      }                                                                                         \
    }                                                                                           \
  }
IM2COL(float, im2col_f32)
IM2COL(double, im2col_f64)

/* A contiguous view of an evaluated input's data: the input's own data when
 * contiguous, else a fresh copy (*owned, to lc_free). */
static const void *contig_data(struct lc_node *x, void **owned, size_t *bytes) {
  *owned = NULL;
  *bytes = 0;
  if (lc_node_is_contiguous(x)) return lc_node_data(x);
  *bytes = (size_t)x->size * lc_dtype_size(x->dtype);
  *owned = lc_alloc(*bytes);
  if (!*owned) return NULL;
  lc_node_copy_out(x, *owned);
  return *owned;
}

static int conv_eval(struct lc_node *n) {
  const struct lc_conv_params *p = n->params;
  struct lc_node *in = n->in[0], *wt = n->in[1];
  if (lc_node_alloc_data(n)) return 1;
  int nsp = p->nsp, G = p->groups;
  int O = n->shape[nsp + 1], og = O / G, cg = wt->shape[nsp + 1];
  int64_t M = n->size / (O ? O : 1), ktaps = 1;
  for (int i = 0; i < nsp; i++) ktaps *= wt->shape[i + 1];
  int64_t K = ktaps * cg;
  size_t es = lc_dtype_size(n->dtype);
  if (n->size == 0) return 0;
  if (K == 0) {
    memset(lc_node_data(n), 0, (size_t)n->size * es);
    return 0;
  }
  void *xo, *wo;
  size_t xb, wb;
  const void *x = contig_data(in, &xo, &xb);
  const void *w = x ? contig_data(wt, &wo, &wb) : NULL;
  int rc = 1;
  void *col = NULL;
  int64_t block = ROW_BLOCK_ELEMS / K;
  if (block < 1) block = 1;
  if (block > M) block = M;
  size_t col_bytes = (size_t)(block * K) * es;
  if (w) col = lc_alloc(col_bytes);
  if (!col) goto done;
  for (int64_t r0 = 0; r0 < M; r0 += block) {
    int64_t rows = M - r0 < block ? M - r0 : block;
    for (int g = 0; g < G; g++) {
      if (n->dtype == MLX_FLOAT64) {
        im2col_f64(col, x, n, in, wt, p, r0, rows, g, cg);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)rows, og, (blasint)K, 1.0,
                    col, (blasint)K, (const double *)w + (int64_t)g * og * K, (blasint)K, 0.0,
                    (double *)lc_node_data(n) + r0 * O + (int64_t)g * og, O);
      } else {
        im2col_f32(col, x, n, in, wt, p, r0, rows, g, cg);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)rows, og, (blasint)K, 1.0f,
                    col, (blasint)K, (const float *)w + (int64_t)g * og * K, (blasint)K, 0.0f,
                    (float *)lc_node_data(n) + r0 * O + (int64_t)g * og, O);
      }
    }
  }
  rc = 0;
done:
  if (col) lc_free(col, col_bytes);
  if (xo) lc_free(xo, xb);
  if (w && wo) lc_free(wo, wb);
  return rc;
}

static int conv_describe(const struct lc_node *n, char *buf, size_t len) {
  const struct lc_conv_params *p = n->params;
  return snprintf(buf, len, "nsp=%d groups=%d flip=%d", p->nsp, p->groups, p->flip);
}

static int conv_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                    int nargs, struct lc_node **out);
static int conv_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out);
static int conv_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                     struct lc_node **out, int *out_ax);

static int64_t dilate(int64_t x, int d) { return x > 0 ? (x - 1) * d + 1 : 0; }

/* Shapeless compile: batch of x, output channels of w, each spatial extent
 * from the (dilated, padded) input and kernel spans as the builder computes
 * it; channel counts must still agree with the groups. */
static int conv_output_shape(const void *params, int nin, struct lc_node *const *in, int ndim,
                             int *shape) {
  const struct lc_conv_params *p = params;
  const struct lc_node *x = in[0], *w = in[1];
  int nsp = p->nsp;
  if (nin != 2 || ndim != nsp + 2 || x->ndim != ndim || w->ndim != ndim ||
      x->shape[nsp + 1] != p->groups * w->shape[nsp + 1] || w->shape[0] % p->groups)
    return 1;
  shape[0] = x->shape[0];
  shape[nsp + 1] = w->shape[0];
  for (int i = 0; i < nsp; i++) {
    int64_t span = dilate(x->shape[i + 1], p->idil[i]) + (int64_t)p->lo[i] + p->hi[i];
    int64_t kspan = dilate(w->shape[i + 1], p->kdil[i]);
    int64_t o = span >= kspan && kspan > 0 ? (span - kspan) / p->stride[i] + 1 : 0;
    if (o <= 0 || o > INT32_MAX) return 1;
    shape[i + 1] = (int)o;
  }
  return 0;
}

const struct lc_prim lc_prim_conv = {.name = "conv",
                                     .eval_cpu = conv_eval,
                                     .eval_cuda = LC_CUDA(lc_cuda_eval_conv),
                                     .describe = conv_describe,
                                     .vjp = conv_vjp,
                                     .jvp = conv_jvp,
                                     .vmap = conv_vmap,
                                     .output_shape = conv_output_shape};

/* ---- builders ---- */

static char *fmt_shape(const struct lc_node *a, char *buf) {
  return lc_shape_str(a->ndim, a->shape, buf, 96);
}

static int conv_checks(const char *fn, struct lc_node *in, struct lc_node *wt, int groups) {
  char s1[96], s2[96];
  if (!lc_dtype_is_float(in->dtype))
    return lc_error("%s: invalid input array with type %s; convolution only supports floating "
                    "point types", fn, lc_dtype_name(in->dtype));
  if (!lc_dtype_is_float(wt->dtype))
    return lc_error("%s: invalid weight array with type %s; convolution only supports floating "
                    "point types", fn, lc_dtype_name(wt->dtype));
  int nsp = in->ndim - 2;
  if (nsp < 1 || nsp > 3)
    return lc_error("%s: only inputs with 1 to 3 spatial dimensions are supported (got an "
                    "input with %d dimensions; the format is [N, ..., C_in])", fn, in->ndim);
  if (wt->ndim != in->ndim)
    return lc_error("%s: invalid weight array with %d dimensions for %dD convolution; expected "
                    "%d dimensions in the format [C_out, ..., C_in]", fn, wt->ndim, nsp,
                    in->ndim);
  if (groups < 1) return lc_error("%s: groups must be positive, got %d", fn, groups);
  int C = in->shape[nsp + 1];
  if (C % groups)
    return lc_error("%s: the input channels (%d) must be divisible by the number of groups (%d)",
                    fn, C, groups);
  if (wt->shape[0] % groups)
    return lc_error("%s: the output channels (%d) must be divisible by the number of groups "
                    "(%d)", fn, wt->shape[0], groups);
  if (C != groups * wt->shape[nsp + 1])
    return lc_error("%s: input with shape %s and weight with shape %s and groups=%d: expected "
                    "%d input channels but got %d", fn, fmt_shape(in, s1), fmt_shape(wt, s2),
                    groups, groups * wt->shape[nsp + 1], C);
  return 0;
}

struct lc_node *lc_conv_general(const char *fn, struct lc_node *in, struct lc_node *wt,
                                const int *stride, const int *pad_lo, const int *pad_hi,
                                const int *kdil, const int *idil, int groups, bool flip) {
  if (conv_checks(fn, in, wt, groups)) return NULL;
  int nsp = in->ndim - 2;
  struct lc_conv_params p;
  memset(&p, 0, sizeof p);
  p.nsp = nsp;
  p.groups = groups;
  p.flip = flip;
  int lo[LC_CONV_MAXSP], hi[LC_CONV_MAXSP], start[LC_CONV_MAXSP + 2] = {0},
      stop[LC_CONV_MAXSP + 2];
  bool crop = false;
  for (int i = 0; i < in->ndim; i++) stop[i] = in->shape[i];
  for (int i = 0; i < nsp; i++) {
    if (stride[i] <= 0) {
      lc_error("%s: stride sizes must be positive, got %d at axis %d", fn, stride[i], i);
      return NULL;
    }
    if (kdil[i] <= 0 || idil[i] <= 0) {
      lc_error("%s: %s dilation sizes must be positive, got %d at axis %d", fn,
               kdil[i] <= 0 ? "kernel" : "input", kdil[i] <= 0 ? kdil[i] : idil[i], i);
      return NULL;
    }
    lo[i] = pad_lo[i];
    hi[i] = pad_hi[i];
    if (lo[i] < 0) { /* MLX: crop the (undilated) input */
      start[i + 1] = -lo[i];
      lo[i] = 0;
      crop = true;
    }
    if (hi[i] < 0) {
      stop[i + 1] += hi[i];
      hi[i] = 0;
      crop = true;
    }
    p.stride[i] = stride[i];
    p.lo[i] = lo[i];
    p.hi[i] = hi[i];
    p.kdil[i] = kdil[i];
    p.idil[i] = idil[i];
  }
  mlx_dtype ot = lc_dtype_promote(in->dtype, wt->dtype);
  mlx_dtype ct = ot == MLX_FLOAT64 ? MLX_FLOAT64 : MLX_FLOAT32;
  struct lc_node *x = crop ? lc_slice(in, start, stop, NULL) : lc_node_retain(in);
  if (!x) return NULL;
  int shape[LC_CONV_MAXSP + 2];
  shape[0] = x->shape[0];
  shape[nsp + 1] = wt->shape[0];
  for (int i = 0; i < nsp; i++) {
    int64_t span = dilate(x->shape[i + 1], idil[i]) + (int64_t)lo[i] + hi[i];
    int64_t kspan = dilate(wt->shape[i + 1], kdil[i]);
    int64_t o = span >= kspan && kspan > 0 ? (span - kspan) / stride[i] + 1 : 0;
    if (o <= 0 || o > INT32_MAX) {
      char s1[96], s2[96];
      lc_error("%s: spatial dimensions of the input after padding cannot be smaller than the "
               "weight's (axis %d, input %s, weight %s)", fn, i + 1, fmt_shape(x, s1),
               fmt_shape(wt, s2));
      lc_node_release(x);
      return NULL;
    }
    shape[i + 1] = (int)o;
  }
  struct lc_node *xc = lc_astype(x, ct);
  lc_node_release(x);
  struct lc_node *wc = xc ? lc_astype(wt, ct) : NULL;
  struct lc_node *r = NULL;
  if (wc) {
    struct lc_node *ins[2] = {xc, wc};
    r = lc_node_new_op(LC_OP_CONV, ct, nsp + 2, shape, 2, ins, &p, sizeof p);
  }
  lc_node_release(xc);
  lc_node_release(wc);
  if (r && ct != ot) {
    struct lc_node *c = lc_astype(r, ot);
    lc_node_release(r);
    r = c;
  }
  return r;
}

struct lc_node *lc_conv_transpose(const char *fn, struct lc_node *in, struct lc_node *wt,
                                  const int *stride, const int *padding, const int *dilation,
                                  const int *output_padding, int groups) {
  if (conv_checks(fn, in, wt, groups)) return NULL;
  int nsp = in->ndim - 2;
  int lo[LC_CONV_MAXSP], hi[LC_CONV_MAXSP], one[LC_CONV_MAXSP] = {1, 1, 1};
  for (int i = 0; i < nsp; i++) {
    if (dilation[i] <= 0 || stride[i] <= 0) {
      lc_error("%s: %s must be positive, got %d at axis %d", fn,
               stride[i] <= 0 ? "stride" : "dilation", stride[i] <= 0 ? stride[i] : dilation[i],
               i);
      return NULL;
    }
    int64_t ks = dilate(wt->shape[i + 1], dilation[i]);
    int64_t l = ks - padding[i] - 1, h = l + (int64_t)output_padding[i];
    if (l < INT32_MIN || l > INT32_MAX || h < INT32_MIN || h > INT32_MAX) {
      lc_error("%s: padding out of range at axis %d", fn, i);
      return NULL;
    }
    lo[i] = (int)l;
    hi[i] = (int)h;
  }
  return lc_conv_general(fn, in, wt, one, lo, hi, dilation, stride, groups, true);
}

/* ---- transformation rules ----
 *
 * Notation per spatial axis: in = input extent (of the node's input, after
 * any crop), k = kernel extent, out = output extent, s = stride, kd/id =
 * kernel/input dilation, lo = low padding. Output tap t reads the padded,
 * input-dilated input at t*s + j*kd - lo for kernel index j (k-1-j with
 * flip). Both cotangents are convolutions again (as MLX's). */

static const struct lc_conv_params *conv_p(const struct lc_node *n) { return n->params; }

/* x (consumed) cut to [start[i], start[i] + len[i]) on spatial axis i
 * (axes 1..nsp), or x itself when nothing needs cutting. */
static struct lc_node *cut_spatial(struct lc_node *x, int nsp, const int *start,
                                   const int *len) {
  if (!x) return NULL;
  int st[LC_CONV_MAXSP + 2] = {0}, sp[LC_CONV_MAXSP + 2];
  bool cut = false;
  for (int d = 0; d < x->ndim; d++) sp[d] = x->shape[d];
  for (int i = 0; i < nsp; i++) {
    st[i + 1] = start[i];
    sp[i + 1] = start[i] + len[i];
    cut |= start[i] != 0 || len[i] != x->shape[i + 1];
  }
  if (!cut) return x;
  struct lc_node *r = lc_slice(x, st, sp, NULL);
  lc_node_release(x);
  return r;
}

/* x (O, k..., cg) regrouped for the transposed convolution: (G cg, k..., og). */
static struct lc_node *weight_transposed(struct lc_node *w, int G) {
  int nd = w->ndim, sh[LC_CONV_MAXSP + 3];
  sh[0] = G;
  sh[1] = w->shape[0] / G;
  for (int d = 1; d < nd; d++) sh[d + 1] = w->shape[d];
  struct lc_node *r = lc_reshape(w, nd + 1, sh), *t = r ? lc_swapaxes(r, 1, nd) : NULL;
  lc_node_release(r);
  if (!t) return NULL;
  int fs[LC_CONV_MAXSP + 2];
  fs[0] = G * t->shape[1];
  for (int d = 2; d <= nd; d++) fs[d - 1] = t->shape[d];
  struct lc_node *f = lc_reshape(t, nd, fs);
  lc_node_release(t);
  return f;
}

/* d(input): the cotangent convolved with the regrouped, flipped weight,
 * stride and input dilation exchanged; low padding dil(k) - 1 - lo, high
 * padding what makes the result cover the input. Negative paddings start
 * the result earlier (by whole strides) or later; the extra rows are cut. */
static struct lc_node *conv_vjp_input(struct lc_node *n, struct lc_node *g) {
  const struct lc_conv_params *p = conv_p(n);
  const struct lc_node *x = n->in[0];
  struct lc_node *w = n->in[1];
  int nsp = p->nsp, lo[LC_CONV_MAXSP], hi[LC_CONV_MAXSP], skip[LC_CONV_MAXSP],
      len[LC_CONV_MAXSP];
  for (int i = 0; i < nsp; i++) {
    int64_t l = dilate(w->shape[i + 1], p->kdil[i]) - 1 - p->lo[i];
    int64_t h = dilate(x->shape[i + 1], p->idil[i]) + p->lo[i] -
                (int64_t)(n->shape[i + 1] - 1) * p->stride[i] - 1;
    int64_t m = l < 0 ? (-l + p->idil[i] - 1) / p->idil[i] : 0;
    lo[i] = (int)(l + m * p->idil[i]);
    hi[i] = h < 0 ? 0 : (int)h;
    skip[i] = (int)m;
    len[i] = x->shape[i + 1];
  }
  struct lc_node *wt = weight_transposed(w, p->groups);
  if (!wt) return NULL;
  struct lc_node *r = lc_conv_general("conv vjp", g, wt, p->idil, lo, hi, p->kdil, p->stride,
                                      p->groups, !p->flip);
  lc_node_release(wt);
  return cut_spatial(r, nsp, skip, len);
}

/* d(weight): the input (channels regrouped into the batch position) convolved
 * with the cotangent (batch as its input channels), stride and kernel
 * dilation exchanged; then kernel taps reversed for a flipped kernel. */
static struct lc_node *conv_vjp_weight(struct lc_node *n, struct lc_node *g) {
  const struct lc_conv_params *p = conv_p(n);
  struct lc_node *x = n->in[0];
  const struct lc_node *w = n->in[1];
  int nsp = p->nsp, G = p->groups, nd = x->ndim, N = x->shape[0], C = x->shape[nd - 1];
  int hi[LC_CONV_MAXSP], zero[LC_CONV_MAXSP] = {0}, klen[LC_CONV_MAXSP];
  for (int i = 0; i < nsp; i++) {
    int64_t h = (int64_t)(w->shape[i + 1] - 1) * p->kdil[i] +
                (int64_t)(n->shape[i + 1] - 1) * p->stride[i] + 1 -
                dilate(x->shape[i + 1], p->idil[i]) - p->lo[i];
    hi[i] = h < 0 ? 0 : (int)h;
    klen[i] = w->shape[i + 1];
  }
  /* x (N, sp..., G cg) -> (N, sp..., G, cg) -> (cg, sp..., G, N) -> (cg, sp..., G N) */
  int sh[LC_CONV_MAXSP + 3];
  memcpy(sh, x->shape, sizeof(int) * (size_t)nd);
  sh[nd - 1] = G;
  sh[nd] = C / G;
  struct lc_node *x5 = lc_reshape(x, nd + 1, sh), *xt = x5 ? lc_swapaxes(x5, 0, nd) : NULL;
  lc_node_release(x5);
  if (!xt) return NULL;
  memcpy(sh, xt->shape, sizeof(int) * (size_t)(nd - 1));
  sh[nd - 1] = G * N;
  struct lc_node *xin = lc_reshape(xt, nd, sh);
  lc_node_release(xt);
  struct lc_node *gt = xin ? lc_swapaxes(g, 0, nd - 1) : NULL, *r = NULL;
  if (gt)
    r = lc_conv_general("conv vjp", xin, gt, p->kdil, p->lo, hi, p->stride, p->idil, G, false);
  lc_node_release(xin);
  lc_node_release(gt);
  r = cut_spatial(r, nsp, zero, klen);
  if (r && p->flip) {
    int st[LC_CONV_MAXSP + 2], sp[LC_CONV_MAXSP + 2], step[LC_CONV_MAXSP + 2];
    for (int d = 0; d < nd; d++) {
      bool spatial = d >= 1 && d <= nsp;
      st[d] = spatial ? r->shape[d] - 1 : 0;
      sp[d] = spatial ? -r->shape[d] - 1 : r->shape[d];
      step[d] = spatial ? -1 : 1;
    }
    struct lc_node *rev = lc_slice(r, st, sp, step);
    lc_node_release(r);
    r = rev;
  }
  struct lc_node *o = r ? lc_swapaxes(r, 0, nd - 1) : NULL;
  lc_node_release(r);
  return o;
}

static int conv_vjp(struct lc_node *n, struct lc_node *const *cot, const int *argnums,
                    int nargs, struct lc_node **out) {
  for (int j = 0; j < nargs; j++) {
    out[j] = argnums[j] == 0 ? conv_vjp_input(n, cot[0]) : conv_vjp_weight(n, cot[0]);
    if (!out[j]) {
      lc_rule_release(out, j);
      return 1;
    }
  }
  return 0;
}

/* Bilinear: conv(t_in, w) + conv(in, t_w). */
static int conv_jvp(struct lc_node *n, struct lc_node *const *tan, struct lc_node **out) {
  struct lc_node *parts[2] = {NULL, NULL};
  for (int k = 0; k < 2; k++) {
    if (!tan[k]) continue;
    struct lc_node *in[2] = {n->in[0], n->in[1]};
    in[k] = tan[k];
    if (!(parts[k] = lc_rule_clone(n, in))) {
      lc_node_release(parts[0]);
      return 1;
    }
  }
  if (parts[0] && parts[1]) {
    out[0] = lc_add(parts[0], parts[1]);
    lc_node_release(parts[0]);
    lc_node_release(parts[1]);
    return !out[0];
  }
  out[0] = parts[0] ? parts[0] : parts[1];
  return 0;
}

/* A CONV node like n over (x, w) with `groups`, its output shape from n's
 * spatial extents, x's batch and w's output channels. */
static struct lc_node *conv_like(struct lc_node *n, struct lc_node *x, struct lc_node *w,
                                 int groups) {
  struct lc_conv_params p = *conv_p(n);
  p.groups = groups;
  int nd = n->ndim, sh[LC_CONV_MAXSP + 2];
  memcpy(sh, n->shape, sizeof(int) * (size_t)nd);
  sh[0] = x->shape[0];
  sh[nd - 1] = w->shape[0];
  struct lc_node *in[2] = {x, w};
  return lc_node_new_op(LC_OP_CONV, n->dtype, nd, sh, 2, in, &p, sizeof p);
}

/* x (consumed) with dims [d, d + 2) merged into one. */
static struct lc_node *merge2(struct lc_node *x, int d) {
  if (!x) return NULL;
  struct lc_node *r = lc_flatten(x, d, d + 1);
  lc_node_release(x);
  return r;
}

/* x (consumed) with dim d split into (a, x.shape[d] / a). */
static struct lc_node *split2(struct lc_node *x, int d, int a) {
  if (!x) return NULL;
  int parts[2] = {a, x->shape[d] / a};
  struct lc_node *r = lc_unflatten(x, d, 2, parts);
  lc_node_release(x);
  return r;
}

static struct lc_node *moved(struct lc_node *x, int from, int to) {
  if (!x) return NULL;
  struct lc_node *r = lc_moveaxis(x, from, to);
  lc_node_release(x);
  return r;
}

/* Batched input: folded into N. Batched weight: folded into the output
 * channels, (G, B, og) so that each group keeps its channels. Both: a
 * convolution with B * G groups, the batch folded into the channels.
 * Results come back with the batch axis first or just before the channels. */
static int conv_vmap(struct lc_node *n, struct lc_node *const *in, const int *ax,
                     struct lc_node **out, int *out_ax) {
  const struct lc_conv_params *p = conv_p(n);
  int B = lc_rule_batch_size(2, in, ax), G = p->groups, nd = n->ndim, ch = nd - 1;
  struct lc_node *x = lc_rule_batch_front(in[0], ax[0], false);
  struct lc_node *w = x ? lc_rule_batch_front(in[1], ax[1], false) : NULL, *r = NULL;
  if (!w) goto done;
  if (ax[1] == -1) { /* (B, N, ...) -> (B N, ...) */
    x = merge2(x, 0);
    r = x ? split2(conv_like(n, x, w, G), 0, B) : NULL;
    *out_ax = 0;
  } else if (ax[0] == -1) { /* w (B, G og, ...) -> (G, B, og, ...) -> (G B og, ...) */
    w = merge2(merge2(moved(split2(w, 1, G), 0, 1), 0), 0);
    r = w ? split2(split2(conv_like(n, x, w, G), ch, G), ch + 1, B) : NULL; /* (.., G, B, og) */
    r = merge2(moved(r, ch + 1, ch), ch + 1);                              /* (.., B, O) */
    *out_ax = ch;
  } else { /* x (N, ..., B, C) -> (N, ..., B C); w (B O, ...); groups B G */
    x = merge2(moved(x, 0, ch), ch);
    w = merge2(w, 0);
    r = x && w ? split2(conv_like(n, x, w, B * G), ch, B) : NULL;
    *out_ax = ch;
  }
done:
  lc_node_release(x);
  lc_node_release(w);
  out[0] = r;
  return r == NULL;
}
