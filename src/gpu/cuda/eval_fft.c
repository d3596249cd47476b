/* eval_cuda of FFT through cuFFT (complex64 / float32, the only dtypes the
 * primitive has; its builder casts). The transform runs as passes, each a
 * batched cuFFT transform of rank 1 to 3 over some of the axes:
 *  - complex to complex: the axes in the given order, three at a time;
 *  - real to complex: first along the last axis (with up to two of the
 *    other axes in the same plan), then the other axes as complex ones;
 *  - complex to real: the leading axes as complex ones into scratch, then
 *    one rank-1 pass along the last axis, whose bins 0 and n/2 are made
 *    real first (the CPU ignores their imaginary parts, which cuFFT would
 *    not for a half spectrum that is not Hermitian).
 * Axes of extent 1 are left out of complex passes (the identity). A pass
 * moves its axes last (a strided copy, gpu/cuda/kernels.h) unless the
 * source is already laid out so, transforms the contiguous batch, and
 * moves them back into place; the result is row-major, scaled at the end
 * by the norm (fft/fft_internal.h), as the CPU's (fft/fft_exec.c).
 *
 * CUDA graphs: while a graph is captured (host reads refused) the
 * evaluator answers LC_EVAL_ON_CPU, which refuses the capture the
 * documented way (a primitive on the CPU, docs/ARCHITECTURE.md): cuFFT's
 * kernels read tables owned by cached plans that the cache may destroy
 * while a graph still points at them. */
#ifdef LACE_CUDA
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <string.h>

#include "core/error.h"
#include "fft/fft_internal.h"
#include "gpu/cuda/eval.h"
#include "gpu/cuda/fft.h"
#include "gpu/cuda/fft_plans.h"
#include "gpu/cuda/kernels.h"
#include "gpu/gpu.h"
#include "ops/prim.h"

#define MAXD LC_CU_MAX_DIMS
#define MAXPASS (MAXD + 1)

/* One pass: a cuFFT transform of `kind` over axes[0..rank) (plan order;
 * for r2c / c2r the real axis last). */
struct pass {
  enum lc_cufft_kind kind;
  int rank;
  int axes[LC_CUFFT_MAX_RANK];
};

/* An array a pass reads or writes (element 0 at p). */
struct arr {
  char *p;
  const int *shape;
  const int64_t *st;
};

/* Runs pass ps from src to dst (row-major, shape dshape; src's shape
 * differs only along the real axis). 0, or 1 after reporting. */
static int run_pass(int dev, const struct pass *ps, bool inverse, int nd, struct arr src,
                    char *dst, const int *dshape) {
  void *stream = lc_gpu_stream(dev);
  int r = ps->rank, perm[MAXD], k = 0;
  bool moved[MAXD] = {false}, identity = true;
  for (int i = 0; i < r; i++) moved[ps->axes[i]] = true;
  for (int d = 0; d < nd; d++)
    if (!moved[d]) perm[k++] = d;
  for (int i = 0; i < r; i++) perm[k++] = ps->axes[i];
  int sshape[MAXD], oshape[MAXD];
  int64_t sst[MAXD], nin = 1, nout = 1, batch = 1, len[LC_CUFFT_MAX_RANK];
  for (int d = 0; d < nd; d++) {
    identity &= perm[d] == d;
    sshape[d] = src.shape[perm[d]];
    oshape[d] = dshape[perm[d]];
    sst[d] = src.st[perm[d]];
    nin *= sshape[d];
    nout *= oshape[d];
    if (d < nd - r) batch *= sshape[d];
  }
  for (int i = 0; i < r; i++) {
    int ax = ps->axes[i];
    len[i] = ps->kind == LC_CUFFT_C2R && i == r - 1 ? dshape[ax] : src.shape[ax];
  }
  size_t isz = ps->kind == LC_CUFFT_R2C ? 4 : 8, osz = ps->kind == LC_CUFFT_C2R ? 4 : 8;
  /* the source in cuFFT's layout, 16-byte aligned; c2r always copies (it
   * fixes the real bins, and cuFFT may overwrite its input) */
  bool direct = ps->kind != LC_CUFFT_C2R && (uintptr_t)src.p % 16 == 0;
  int64_t expect = 1;
  for (int d = nd - 1; d >= 0 && direct; d--) {
    if (sshape[d] != 1 && sst[d] != expect) direct = false;
    expect *= sshape[d];
  }
  void *a = NULL, *b = NULL;
  char *in = src.p, *out = dst;
  int rc = 0;
  if (!direct) {
    if (!(a = lc_gpu_malloc((size_t)nin * isz, dev))) return 1;
    rc = lc_cuda_result(lc_cu_copy_strided(a, src.p, (int)isz, nd, sshape, sst, nin, stream),
                        "fft (copy)");
    in = a;
    if (!rc && ps->kind == LC_CUFFT_C2R) {
      int64_t half = sshape[nd - 1], n = len[r - 1];
      rc = lc_cuda_result(lc_cu_fft_real_bins(a, nin / half, half, n % 2 ? -1 : n / 2, stream),
                          "fft");
    }
  }
  if (!rc && !identity) {
    if ((b = lc_gpu_malloc((size_t)nout * osz, dev))) out = b;
    else rc = 1;
  }
  if (!rc) {
    if (ps->kind != LC_CUFFT_C2C && len[r - 1] == 1) /* rank 1: in and out have one shape */
      rc = lc_cuda_result(
          lc_cu_fft_len1(ps->kind == LC_CUFFT_R2C, (const float *)in, (float *)out, nin, stream),
          "fft");
    else
      rc = lc_cuda_fft_exec(dev, ps->kind, r, len, batch, inverse, in, out, "fft");
  }
  if (!rc && b) { /* out is row-major over oshape: dst reads it through perm */
    int64_t ost[MAXD], back[MAXD];
    lc_shape_strides(nd, oshape, ost);
    for (int d = 0; d < nd; d++) back[perm[d]] = ost[d];
    rc = lc_cuda_result(lc_cu_copy_strided(dst, b, (int)osz, nd, dshape, back, nout, stream),
                        "fft (copy)");
  }
  /* stream-ordered: the kernels reading them are queued */
  lc_gpu_free(a, (size_t)nin * isz, dev);
  lc_gpu_free(b, (size_t)nout * osz, dev);
  return rc;
}

/* Appends complex passes over the axes ax[0..m) with extent > 1 (shape),
 * three at a time. */
static void complex_passes(struct pass *ps, int *np, const int *ax, int m, const int *shape) {
  for (int i = 0; i < m; i++) {
    if (shape[ax[i]] == 1) continue;
    if (*np == 0 || ps[*np - 1].kind != LC_CUFFT_C2C || ps[*np - 1].rank == LC_CUFFT_MAX_RANK)
      ps[(*np)++] = (struct pass){.kind = LC_CUFFT_C2C, .rank = 0};
    struct pass *q = &ps[*np - 1];
    q->axes[q->rank++] = ax[i];
  }
}

/* The passes of FFT node n (see the top): *np of them into ps. */
static void plan_passes(const struct lc_node *n, struct pass *ps, int *np) {
  const int *p = n->params;
  const struct lc_node *x = n->in[0];
  int na = p[FP_NAXES], last = p[FP_AXES + na - 1];
  const int *axes = p + FP_AXES;
  *np = 0;
  if (!p[FP_REAL]) {
    complex_passes(ps, np, axes, na, n->shape);
    return;
  }
  if (p[FP_INVERSE]) {
    complex_passes(ps, np, axes, na - 1, x->shape);
    ps[*np] = (struct pass){.kind = LC_CUFFT_C2R, .rank = 1, .axes = {last}};
    (*np)++;
    return;
  }
  /* r2c: the real axis with up to two of the last other non-unit axes */
  struct pass *f = &ps[(*np)++];
  f->kind = LC_CUFFT_R2C;
  int with[2], nw = 0, rest[MAXD], nr = 0;
  for (int i = na - 2; i >= 0; i--)
    if (x->shape[last] > 1 && x->shape[axes[i]] > 1 && nw < 2) with[nw++] = axes[i];
  f->rank = 0;
  for (int i = nw - 1; i >= 0; i--) f->axes[f->rank++] = with[i];
  f->axes[f->rank++] = last;
  for (int i = 0; i < na - 1; i++) {
    bool used = false;
    for (int j = 0; j < nw; j++) used |= with[j] == axes[i];
    if (!used) rest[nr++] = axes[i];
  }
  complex_passes(ps, np, rest, nr, n->shape);
}

int lc_cuda_eval_fft(struct lc_node *n) {
  if (lc_host_reads_refused > 0) return LC_EVAL_ON_CPU; /* capturing a graph: see the top */
  const int *p = n->params;
  struct lc_node *x = n->in[0];
  bool inverse = p[FP_INVERSE], real = p[FP_REAL];
  int na = p[FP_NAXES], nd = n->ndim, dev = n->dev;
  mlx_dtype in_t = real && !inverse ? MLX_FLOAT32 : MLX_COMPLEX64;
  if (x->dtype != in_t || nd < 1 || nd > MAXD || x->ndim != nd || na < 1 || na > nd)
    return LC_EVAL_ON_CPU;
  int last = p[FP_AXES + na - 1];
  if (real && inverse && x->shape[last] != n->shape[last] / 2 + 1) return LC_EVAL_ON_CPU;
  if (lc_cuda_alloc_output(n)) return 1;
  if (n->size == 0) return 0;
  double count = lc_fft_count(n);
  double factor = lc_fft_norm_factor(count, inverse, (mlx_fft_norm)p[FP_NORM]);
  float scale = (float)((inverse ? 1.0 / count : 1.0) * factor);
  struct pass ps[MAXPASS];
  int np;
  plan_passes(n, ps, &np);
  void *stream = lc_gpu_stream(dev);
  char *out = n->buf->dev_data;
  size_t osz = lc_dtype_size(n->dtype);
  int rc = 0;
  if (np == 0) /* complex, every axis of extent 1: the input itself */
    rc = lc_cuda_result(lc_cu_copy_strided(out, lc_node_dev_data(x), (int)osz, nd, x->shape,
                                           x->strides, x->size, stream),
                        "fft (copy)");
  /* pass i reads cur and writes scratch, the last one the output */
  struct arr cur = {lc_node_dev_data(x), x->shape, x->strides};
  int64_t st[2][MAXD];
  void *held = NULL; /* the scratch cur points into */
  size_t held_bytes = 0;
  for (int i = 0; i < np && !rc; i++) {
    /* every pass but a c2r keeps the output's shape (r2c: from the first) */
    const int *dshape = ps[i].kind == LC_CUFFT_C2C && real && inverse ? x->shape : n->shape;
    int64_t size = 1;
    for (int d = 0; d < nd; d++) size *= dshape[d];
    size_t bytes = (size_t)size * (ps[i].kind == LC_CUFFT_C2R ? 4 : 8);
    char *dst = out;
    void *mine = NULL;
    if (i < np - 1) {
      if (!(mine = lc_gpu_malloc(bytes, dev))) {
        rc = 1;
        break;
      }
      dst = mine;
    }
    rc = run_pass(dev, &ps[i], inverse, nd, cur, dst, dshape);
    lc_gpu_free(held, held_bytes, dev); /* stream-ordered: its reader is queued */
    held = mine;
    held_bytes = bytes;
    lc_shape_strides(nd, dshape, st[i % 2]);
    cur = (struct arr){dst, dshape, st[i % 2]};
  }
  lc_gpu_free(held, held_bytes, dev);
  if (!rc && scale != 1.0f)
    rc = lc_cuda_result(lc_cu_fft_scale((float *)out, n->size * (int64_t)(osz / 4), scale, stream),
                        "fft (scale)");
  return lc_cuda_finish(n, rc);
}
#endif
