/* Evaluation of the FFT primitive: one-dimensional passes along each
 * transformed axis. A pass walks the lines of its source along the axis
 * (any strides), gathers a line when it is not unit-stride (or when the
 * pass runs in place), transforms it with the axis's plan and writes it to
 * the row-major destination, scaled on the last pass of an inverse
 * transform or a non-"backward" norm. Lines are split over the thread pool.
 *
 * Pass order (as pocketfft's, which MLX uses): complex to complex along
 * the axes in the given order, the first pass reading the input and the
 * others rewriting the output; real to complex first along the last axis,
 * then complex passes over the output; complex to real first with complex
 * passes into a scratch array of the input's shape, then the real pass
 * along the last axis into the output. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/parallel.h"
#include "fft/fft_internal.h"
#include "fft/fft_plan.h"
#include "ops/prim.h"

enum pass_kind { PASS_C2C, PASS_R2C, PASS_C2R };

/* One pass. The lines are indexed by the dimensions other than the axis
 * (nd of them, extents `shape`), with element strides s_st / d_st. */
struct pass {
  const struct lc_fft_plan *plan;
  enum pass_kind kind;
  const char *src;
  char *dst;
  int64_t s_ax, d_ax; /* element strides along the axis */
  int64_t nin, nout;  /* line lengths */
  bool in_place;      /* src and dst are the same array */
  float scale;        /* applied to the output when != 1 */
  int nd;
  const int *shape;
  const int64_t *s_st, *d_st;
  atomic_int failed;
};

static size_t src_isz(const struct pass *ps) { return ps->kind == PASS_R2C ? 4 : 8; }
static size_t dst_isz(const struct pass *ps) { return ps->kind == PASS_C2R ? 4 : 8; }

/* The line starting at element so of src, contiguous: in place or
 * strided lines are copied into buf. */
static const void *line_in(const struct pass *ps, int64_t so, void *buf) {
  const char *s = ps->src + (size_t)so * src_isz(ps);
  if (ps->s_ax == 1 && !ps->in_place) return s;
  if (ps->kind == PASS_R2C) {
    const float *f = (const float *)s;
    float *b = buf;
    for (int64_t i = 0; i < ps->nin; i++) b[i] = f[i * ps->s_ax];
  } else {
    const lc_c64 *c = (const lc_c64 *)s;
    lc_c64 *b = buf;
    for (int64_t i = 0; i < ps->nin; i++) b[i] = c[i * ps->s_ax];
  }
  return buf;
}

/* Writes the transformed line (in buf) to dst at element dof. */
static void line_out(const struct pass *ps, const void *buf, int64_t dof) {
  char *d = ps->dst + (size_t)dof * dst_isz(ps);
  float s = ps->scale;
  if (ps->kind == PASS_C2R) {
    const float *b = buf;
    float *o = (float *)d;
    for (int64_t i = 0; i < ps->nout; i++) o[i * ps->d_ax] = b[i] * s;
  } else {
    const lc_c64 *b = buf;
    lc_c64 *o = (lc_c64 *)d;
    for (int64_t i = 0; i < ps->nout; i++) o[i * ps->d_ax] = b[i] * s;
  }
}

static void run_line(const struct pass *ps, int64_t so, int64_t dof, lc_c64 *work) {
  lc_c64 *gather = work, *result = work + ps->nin, *scratch = result + ps->nout;
  const void *in = line_in(ps, so, gather);
  bool direct = ps->d_ax == 1 && ps->scale == 1.0f;
  void *out = direct ? ps->dst + (size_t)dof * dst_isz(ps) : (void *)result;
  if (ps->kind == PASS_C2C)
    lc_fft_c2c(ps->plan, in, out, scratch);
  else if (ps->kind == PASS_R2C)
    lc_fft_r2c(ps->plan, in, out, scratch);
  else
    lc_fft_c2r(ps->plan, in, out, scratch);
  if (!direct) line_out(ps, result, dof);
}

static size_t work_elems(const struct pass *ps) {
  return (size_t)(ps->nin + ps->nout) + ps->plan->scratch;
}

static void pass_lines(void *ctx, int64_t lo, int64_t hi) {
  struct pass *ps = ctx;
  lc_c64 *work = malloc(sizeof(lc_c64) * work_elems(ps));
  if (!work) {
    atomic_store(&ps->failed, 1);
    return;
  }
  int nd = ps->nd, idx[nd > 0 ? nd : 1];
  int64_t so = 0, dof = 0, rest = lo;
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = (int)(rest % ps->shape[d]);
    rest /= ps->shape[d];
    so += idx[d] * ps->s_st[d];
    dof += idx[d] * ps->d_st[d];
  }
  for (int64_t l = lo; l < hi; l++) {
    run_line(ps, so, dof, work);
    for (int d = nd - 1; d >= 0; d--) { /* next line, row-major over the other dims */
      so += ps->s_st[d];
      dof += ps->d_st[d];
      if (++idx[d] < ps->shape[d]) break;
      so -= ps->s_st[d] * ps->shape[d];
      dof -= ps->d_st[d] * ps->shape[d];
      idx[d] = 0;
    }
  }
  free(work);
}

/* One pass along axis of an array of `shape` (ndim dims; the extent along
 * the axis is the source's) from src (strides s_st) to dst (strides d_st).
 * len: the transform length. 0, or 1 after reporting. */
static int run_pass(enum pass_kind kind, int ndim, const int *shape, int axis, int len,
                    bool inverse, const char *src, const int64_t *s_st, char *dst,
                    const int64_t *d_st, float scale) {
  struct lc_fft_plan *plan = lc_fft_plan_get(len, inverse, kind != PASS_C2C);
  if (!plan) return 1;
  int nd = ndim - 1, oshape[ndim];
  int64_t os[ndim], od[ndim], lines = 1;
  for (int d = 0, k = 0; d < ndim; d++) {
    if (d == axis) continue;
    oshape[k] = shape[d], os[k] = s_st[d], od[k++] = d_st[d];
    lines *= shape[d];
  }
  int64_t half = len / 2 + 1;
  struct pass ps = {.plan = plan,
                    .kind = kind,
                    .src = src,
                    .dst = dst,
                    .s_ax = s_st[axis],
                    .d_ax = d_st[axis],
                    .nin = kind == PASS_C2R ? half : len,
                    .nout = kind == PASS_R2C ? half : len,
                    .in_place = src == dst,
                    .scale = scale,
                    .nd = nd,
                    .shape = oshape,
                    .s_st = os,
                    .d_st = od};
  atomic_init(&ps.failed, 0);
  int64_t per_line = ps.nin + ps.nout;
  lc_parallel_for(lines, 32768 / per_line + 1, pass_lines, &ps);
  lc_fft_plan_put(plan);
  if (atomic_load(&ps.failed))
    return lc_error("fft: out of memory (work space for a transform of length %d)", len);
  return 0;
}

int lc_fft_eval(struct lc_node *n) {
  const int *p = n->params;
  struct lc_node *x = n->in[0];
  bool inverse = p[FP_INVERSE], real = p[FP_REAL];
  int na = p[FP_NAXES];
  const int *axes = p + FP_AXES;
  if (lc_node_alloc_data(n)) return 1;
  if (n->size == 0) return 0;
  double count = lc_fft_count(n);
  double factor = lc_fft_norm_factor(count, inverse, (mlx_fft_norm)p[FP_NORM]);
  float scale = (float)((inverse ? 1.0 / count : 1.0) * factor);
  const char *xs = lc_node_data(x);
  char *out = lc_node_data(n);
  int nd = n->ndim, last = axes[na - 1];
  if (!real) {
    for (int i = 0; i < na; i++) {
      int ax = axes[i];
      if (run_pass(PASS_C2C, nd, n->shape, ax, n->shape[ax], inverse, i ? out : xs,
                   i ? n->strides : x->strides, out, n->strides, i == na - 1 ? scale : 1.0f))
        return 1;
    }
    return 0;
  }
  if (!inverse) {
    if (run_pass(PASS_R2C, nd, x->shape, last, x->shape[last], false, xs, x->strides, out,
                 n->strides, na == 1 ? scale : 1.0f))
      return 1;
    for (int i = 0; i < na - 1; i++)
      if (run_pass(PASS_C2C, nd, n->shape, axes[i], n->shape[axes[i]], false, out, n->strides,
                   out, n->strides, i == na - 2 ? scale : 1.0f))
        return 1;
    return 0;
  }
  /* complex to real: the leading axes into scratch, then the last one */
  const char *src = xs;
  const int64_t *src_st = x->strides;
  char *tmp = NULL;
  size_t tmp_bytes = sizeof(lc_c64) * (size_t)x->size;
  int64_t tmp_st[nd];
  int rc = 0;
  if (na > 1) {
    if (!(tmp = lc_alloc(tmp_bytes))) return 1;
    lc_shape_strides(nd, x->shape, tmp_st);
    for (int i = 0; i < na - 1 && !rc; i++)
      rc = run_pass(PASS_C2C, nd, x->shape, axes[i], x->shape[axes[i]], true, i ? tmp : xs,
                    i ? tmp_st : x->strides, tmp, tmp_st, 1.0f);
    src = tmp;
    src_st = tmp_st;
  }
  if (!rc)
    rc = run_pass(PASS_C2R, nd, x->shape, last, n->shape[last], true, src, src_st, out,
                  n->strides, scale);
  if (tmp) lc_free(tmp, tmp_bytes);
  return rc;
}
