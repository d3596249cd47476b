/* eval_cuda of the index and copy family: contiguous, concatenate, remap,
 * reshape and bitcast view (where they copy), gather, gather_axis,
 * dynamic_slice, scatter, scatter_axis, slice_update, dynamic_slice_update
 * and arange, as launches of gpu/cuda/index.cu.
 *
 * Each evaluator decides first whether the GPU can compute the node exactly
 * as its eval_cpu does (ranks after merging dimensions within
 * LC_CU_MAX_DIMS, dtypes the combine kernels know, exact float aranges)
 * and answers LC_EVAL_ON_CPU before touching anything otherwise; so a
 * donated input buffer is only taken once the launch is certain. Start
 * indices of the dynamic slices are read on the device, so nothing here
 * waits for the GPU. */
#ifdef LACE_CUDA
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "core/graph.h"
#include "core/half.h"
#include "gpu/cuda/eval.h"
#include "gpu/cuda/index.h"
#include "gpu/gpu.h"
#include "ops/index.h"
#include "ops/index_internal.h"
#include "ops/prim.h"
#include "ops/shape_internal.h"

#define MAXD LC_CU_MAX_DIMS
/* Largest scratch table (ints) for last-write-wins scatters. */
#define MAX_WIN ((int64_t)1 << 28)

/* Merges the dimensions of shape that both stride sets step through as one
 * and drops extents of 1, into c (shape, dst and src strides). False when
 * more than MAXD dimensions remain. */
static bool plan_copy(struct lc_cu_copy *c, int nd, const int *shape, const int64_t *ds,
                      const int64_t *ss) {
  int k = 0;
  for (int d = 0; d < nd; d++) {
    if (shape[d] == 1) continue;
    if (k > 0 && c->dst_strides[k - 1] == ds[d] * shape[d] &&
        c->src_strides[k - 1] == ss[d] * shape[d]) {
      c->shape[k - 1] *= shape[d];
      c->dst_strides[k - 1] = ds[d];
      c->src_strides[k - 1] = ss[d];
      continue;
    }
    if (k == MAXD) return false;
    c->shape[k] = shape[d];
    c->dst_strides[k] = ds[d];
    c->src_strides[k] = ss[d];
    k++;
  }
  c->ndim = k;
  return true;
}

/* The launcher's answer for n; on anything but 0 n's buffer is given back
 * (the CPU runs the node, or the error stands). */
static int finish(struct lc_node *n, int launched, const char *name) {
  return lc_cuda_finish(n, lc_cuda_result(launched, name));
}

static void *stream_of(const struct lc_node *n) { return lc_gpu_stream(n->dev); }

/* A copy of x's elements into dst laid out with strides ds (planned in c,
 * which gets its pointers and item size here). */
static int launch_copy(struct lc_cu_copy *c, void *dst, const struct lc_node *x,
                       const struct lc_node *n) {
  c->dst = dst;
  c->src = lc_node_dev_data(x);
  c->itemsize = (int)lc_dtype_size(x->dtype);
  return lc_cu_copy_nd(c, stream_of(n));
}

/* For primitives that start from input 0 (scatters, slice updates): true
 * when input 0 can be donated or copied (planned into c0). */
static bool can_start(struct lc_node *n, struct lc_cu_copy *c0, const int64_t *rs) {
  memset(c0, 0, sizeof *c0);
  return lc_prim_can_donate(n, 0) || plan_copy(c0, n->ndim, n->shape, rs, n->in[0]->strides);
}

/* n's buffer: input 0's (donated) or a fresh copy of it. 0, or 1 after
 * reporting (n has no buffer then). */
static int start_from_input(struct lc_node *n, struct lc_cu_copy *c0, const char *name) {
  if (lc_prim_can_donate(n, 0)) {
    lc_cuda_take_buffer(n, 0);
    return 0;
  }
  if (lc_cuda_alloc_output(n)) return 1;
  return finish(n, launch_copy(c0, n->buf->dev_data, n->in[0], n), name) ? 1 : 0;
}

/* ---- contiguous, concatenate ---- */

/* The row-major copy of input 0's elements into n's fresh buffer (same
 * bytes, whatever n's shape and dtype). */
static int copy_row_major(struct lc_node *n, const char *name) {
  const struct lc_node *in = n->in[0];
  int64_t rs[in->ndim > 0 ? in->ndim : 1];
  lc_shape_strides(in->ndim, in->shape, rs);
  struct lc_cu_copy c;
  memset(&c, 0, sizeof c);
  if (!plan_copy(&c, in->ndim, in->shape, rs, in->strides)) return LC_EVAL_ON_CPU;
  /* views reach here without their inputs uploaded (core/graph.c) */
  if ((lc_prims[n->op]->flags & LC_PF_VIEW) && lc_node_inputs_to_device(n)) return 1;
  if (lc_cuda_alloc_output(n)) return 1;
  return finish(n, launch_copy(&c, n->buf->dev_data, in, n), name);
}

/* As the CPU: contiguous inputs (column-major ones when allowed) are
 * shared, others copied row-major. */
int lc_cuda_eval_copy(struct lc_node *n) {
  struct lc_node *in = n->in[0];
  bool allow_col = n->params && *(const int *)n->params;
  if (lc_contiguous_shares(in, allow_col)) {
    lc_node_set_view(n, in, in->strides, in->offset);
    return 0;
  }
  return copy_row_major(n, "contiguous");
}

/* reshape and the bitcast view: shared where the CPU shares, else copied
 * here rather than through the host. */
int lc_cuda_eval_reshape(struct lc_node *n) {
  return lc_reshape_shares(n) ? 0 : copy_row_major(n, "reshape");
}

int lc_cuda_eval_bitcast(struct lc_node *n) {
  return lc_bitcast_shares(n) ? 0 : copy_row_major(n, "view");
}

int lc_cuda_eval_concatenate(struct lc_node *n) {
  int axis = *(const int *)n->params, nd = n->ndim;
  int64_t rs[nd > 0 ? nd : 1];
  lc_shape_strides(nd, n->shape, rs);
  struct lc_cu_copy c;
  for (int k = 0; k < n->nin; k++) {
    memset(&c, 0, sizeof c);
    if (!plan_copy(&c, nd, n->in[k]->shape, rs, n->in[k]->strides)) return LC_EVAL_ON_CPU;
  }
  if (lc_cuda_alloc_output(n)) return 1;
  size_t isz = lc_dtype_size(n->dtype);
  int64_t off = 0;
  for (int k = 0; k < n->nin; k++) {
    const struct lc_node *x = n->in[k];
    if (x->size) {
      memset(&c, 0, sizeof c);
      plan_copy(&c, nd, x->shape, rs, x->strides);
      int rc = launch_copy(&c, (char *)n->buf->dev_data + off * (int64_t)isz, x, n);
      if (rc) return finish(n, rc, "concatenate");
    }
    off += (int64_t)x->shape[axis] * rs[axis];
  }
  return 0;
}

/* ---- remap ----
 * params: per output axis the four ints of shape_remap.c's struct
 * remap_axis (kind, input extent, a, b). */
int lc_cuda_eval_remap(struct lc_node *n) {
  const int *m = n->params;
  const struct lc_node *in = n->in[0];
  int nd = n->ndim;
  if (nd > MAXD || n->params_size != sizeof(int) * 4 * (size_t)nd) return LC_EVAL_ON_CPU;
  if (lc_cuda_alloc_output(n)) return 1;
  if (n->size == 0) return 0;
  struct lc_cu_remap a;
  memset(&a, 0, sizeof a);
  a.out = n->buf->dev_data;
  a.src = lc_node_dev_data(in);
  a.fill = n->nin > 1 ? lc_node_dev_data(n->in[1]) : NULL;
  a.itemsize = (int)lc_dtype_size(n->dtype);
  a.ndim = nd;
  for (int d = 0; d < nd; d++) {
    a.shape[d] = n->shape[d];
    a.strides[d] = in->strides[d];
    a.kind[d] = m[4 * d];
    a.n[d] = m[4 * d + 1];
    a.a[d] = m[4 * d + 2];
    a.b[d] = m[4 * d + 3];
  }
  return finish(n, lc_cu_remap(&a, stream_of(n)), "remap");
}

/* ---- arange ---- */

/* creation.c's conversion of a double to an integer pattern (C++'s
 * conversion for values in range); kept equal to it. */
static uint64_t dbl_bits(double v) {
  if (isnan(v)) return 0;
  if (v >= 9223372036854775808.0) return v >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)v;
  if (v < -9223372036854775808.0) return (uint64_t)INT64_MIN;
  return (uint64_t)(int64_t)v;
}

/* The pattern truncated to dt's width and widened back (sign-extended for
 * signed types), as the CPU's (S) casts do. */
static uint64_t narrow(uint64_t v, mlx_dtype dt) {
  switch (dt) {
  case MLX_UINT8: return (uint8_t)v;
  case MLX_UINT16: return (uint16_t)v;
  case MLX_UINT32: return (uint32_t)v;
  case MLX_INT8: return (uint64_t)(int64_t)(int8_t)v;
  case MLX_INT16: return (uint64_t)(int64_t)(int16_t)v;
  case MLX_INT32: return (uint64_t)(int64_t)(int32_t)v;
  default: return v;
  }
}

/* The CPU adds the step to a running value, rounding each sum to the
 * dtype. That equals x0 + i*dx when every value is k * 2^-e with |k| <=
 * 2^mant (each sum is then exact); those cases run here, others on the CPU. */
static bool exact_sequence(double x0, double dx, int64_t n, int mant) {
  for (int e = 0; e <= 24; e++) {
    double a = ldexp(x0, e), b = ldexp(dx, e);
    if (a != floor(a) || b != floor(b)) continue;
    return fabs(a) + (double)(n > 0 ? n - 1 : 0) * fabs(b) <= ldexp(1.0, mant);
  }
  return false;
}

static float round16(float x, mlx_dtype dt) {
  return dt == MLX_FLOAT16 ? lc_f16_to_f32(lc_f32_to_f16(x)) : lc_bf16_to_f32(lc_f32_to_bf16(x));
}

int lc_cuda_eval_arange(struct lc_node *n) {
  const double *p = n->params; /* creation.c's struct arange_params: start, step */
  double start = p[0], step = p[1], x0 = 0, dx = 0;
  uint64_t a = 0, d = 0;
  mlx_dtype dt = n->dtype;
  if (lc_dtype_is_int(dt)) {
    a = narrow(dbl_bits(start), dt);
    d = narrow(dbl_bits(start + step), dt) - a;
  } else if (dt == MLX_FLOAT32 || dt == MLX_COMPLEX64) {
    float c0 = (float)start, c1 = (float)(start + step), fd = c1 - c0;
    x0 = c0;
    dx = fd;
    if (!exact_sequence(x0, dx, n->size, 24)) return LC_EVAL_ON_CPU;
  } else if (dt == MLX_FLOAT64) {
    x0 = start;
    dx = (start + step) - start;
    if (!exact_sequence(x0, dx, n->size, 53)) return LC_EVAL_ON_CPU;
  } else if (dt == MLX_FLOAT16 || dt == MLX_BFLOAT16) {
    float c0 = round16((float)start, dt), c1 = round16((float)(start + step), dt);
    float fd = round16(c1 - c0, dt);
    x0 = c0;
    dx = fd;
    if (!exact_sequence(x0, dx, n->size, dt == MLX_FLOAT16 ? 11 : 8)) return LC_EVAL_ON_CPU;
  } else {
    return LC_EVAL_ON_CPU;
  }
  if (lc_cuda_alloc_output(n)) return 1;
  return finish(n, lc_cu_arange(n->buf->dev_data, dt, n->size, a, d, x0, dx, stream_of(n)),
                "arange");
}

/* ---- gather, gather_axis, dynamic_slice ---- */

/* Index array k of n (input first + k) for axis ax of an array with
 * extent ext, stride astride and slice extent slice. */
static void set_index(struct lc_cu_idx *ix, int k, const struct lc_node *idx, int64_t ext,
                      int64_t slice, int64_t astride) {
  ix->idx[k] = lc_node_dev_data(idx);
  ix->dt[k] = idx->dtype;
  for (int d = 0; d < ix->ind; d++) ix->istrides[k][d] = idx->strides[d];
  ix->ext[k] = ext;
  ix->slice[k] = slice;
  ix->astride[k] = astride;
}

int lc_cuda_eval_gather(struct lc_node *n) {
  const int *p = n->params, nax = p[0], *axes = p + 1, *slice = p + 1 + nax;
  const struct lc_node *a = n->in[0];
  int ind = n->ndim - a->ndim;
  if (nax > MAXD || ind > MAXD) return LC_EVAL_ON_CPU;
  /* the slice's dimensions, merged where a steps through them as one */
  struct lc_cu_copy c;
  memset(&c, 0, sizeof c);
  if (!plan_copy(&c, a->ndim, slice, a->strides, a->strides)) return LC_EVAL_ON_CPU;
  if (lc_cuda_alloc_output(n)) return 1;
  if (n->size == 0) return 0;
  struct lc_cu_gather g;
  memset(&g, 0, sizeof g);
  g.out = n->buf->dev_data;
  g.src = lc_node_dev_data(a);
  g.itemsize = (int)lc_dtype_size(n->dtype);
  g.nd = c.ndim;
  memcpy(g.shape, c.shape, sizeof g.shape);
  memcpy(g.strides, c.src_strides, sizeof g.strides);
  g.ix.nidx = nax;
  g.ix.ind = ind;
  for (int d = 0; d < ind; d++) g.ix.ishape[d] = n->shape[d];
  for (int k = 0; k < nax; k++)
    set_index(&g.ix, k, n->in[1 + k], a->shape[axes[k]], slice[axes[k]], a->strides[axes[k]]);
  return finish(n, lc_cu_gather(&g, stream_of(n)), "gather");
}

int lc_cuda_eval_gather_axis(struct lc_node *n) {
  const struct lc_node *a = n->in[0], *ix = n->in[1];
  int ax = *(const int *)n->params, nd = n->ndim;
  if (nd > MAXD) return LC_EVAL_ON_CPU;
  if (lc_cuda_alloc_output(n)) return 1;
  if (n->size == 0) return 0;
  struct lc_cu_gather_axis g;
  memset(&g, 0, sizeof g);
  g.out = n->buf->dev_data;
  g.src = lc_node_dev_data(a);
  g.idx = lc_node_dev_data(ix);
  g.itemsize = (int)lc_dtype_size(n->dtype);
  g.idx_dt = ix->dtype;
  g.ndim = nd;
  g.axis = ax;
  g.ext = a->shape[ax];
  for (int d = 0; d < nd; d++) {
    g.shape[d] = n->shape[d];
    g.src_strides[d] = a->strides[d];
    g.idx_strides[d] = ix->strides[d];
  }
  return finish(n, lc_cu_gather_axis(&g, stream_of(n)), "gather_axis");
}

/* The dynamic offset of naxes start indices (start's elements) along axes,
 * each clamped into [0, shape[ax] - ext[ax]], times mul[ax]. */
static void set_dyn(struct lc_cu_dyn *y, const struct lc_node *start, int naxes, const int *axes,
                    const int *shape, const int *ext, const int64_t *mul) {
  y->start = lc_node_dev_data(start);
  y->dt = start->dtype;
  y->n = naxes;
  y->sstride = start->ndim ? start->strides[0] : 0;
  for (int k = 0; k < naxes; k++) {
    y->hi[k] = (int64_t)shape[axes[k]] - ext[axes[k]];
    y->mul[k] = mul[axes[k]];
  }
}

/* A view, as on the CPU, when the start indices are on the host; else a
 * copy whose offset the kernel reads on the device (no wait for the GPU).
 * While a CUDA graph is captured (host reads refused) always the copy: an
 * offset read on the host would be frozen into the graph. */
int lc_cuda_eval_dynamic_slice(struct lc_node *n) {
  const int *p = n->params;
  struct lc_node *a = n->in[0], *start = n->in[1];
  int naxes = p[0];
  int64_t rs[n->ndim > 0 ? n->ndim : 1];
  lc_shape_strides(n->ndim, n->shape, rs);
  struct lc_cu_copy c;
  memset(&c, 0, sizeof c);
  if (lc_host_reads_refused > 0 || !(atomic_load(&start->buf->valid) & LC_BUF_HOST)) {
    if (naxes <= MAXD && plan_copy(&c, n->ndim, n->shape, rs, a->strides)) {
      if (lc_node_inputs_to_device(n) || lc_cuda_alloc_output(n)) return 1;
      if (n->size == 0) return 0;
      set_dyn(&c.dyn, start, naxes, p + 1, a->shape, n->shape, a->strides);
      c.dyn_dst = 0;
      return finish(n, launch_copy(&c, n->buf->dev_data, a, n), "dynamic_slice");
    }
    if (lc_buffer_on_host(start->buf)) return 1; /* rare: waits, then the view */
  }
  int64_t off = n->size ? lc_dynamic_offset(a, start, naxes, p + 1, n->shape, a->strides) : 0;
  lc_node_set_view(n, a, a->strides, a->offset + off);
  return 0;
}

/* ---- slice_update, dynamic_slice_update ---- */

int lc_cuda_eval_slice_update(struct lc_node *n) {
  const int *p = n->params;
  int mode = p[0], nd = n->ndim;
  const int *start = p + 1, *step = p + 1 + nd;
  const struct lc_node *u = n->in[1];
  if (mode != LC_SCATTER_NONE && n->dtype == MLX_COMPLEX64) return LC_EVAL_ON_CPU;
  int64_t rs[nd > 0 ? nd : 1], st[nd > 0 ? nd : 1], off = 0;
  lc_shape_strides(nd, n->shape, rs);
  for (int d = 0; d < nd; d++) {
    st[d] = rs[d] * step[d];
    off += (int64_t)start[d] * rs[d];
  }
  struct lc_cu_copy c0, c;
  memset(&c, 0, sizeof c);
  if (!can_start(n, &c0, rs) || !plan_copy(&c, nd, u->shape, st, u->strides)) return LC_EVAL_ON_CPU;
  if (start_from_input(n, &c0, "slice_update")) return 1;
  if (u->size == 0) return 0;
  c.mode = mode;
  c.dt = n->dtype;
  size_t isz = lc_dtype_size(n->dtype);
  return finish(n, launch_copy(&c, (char *)n->buf->dev_data + off * (int64_t)isz, u, n),
                "slice_update");
}

int lc_cuda_eval_dynamic_slice_update(struct lc_node *n) {
  const int *p = n->params;
  const struct lc_node *u = n->in[1], *start = n->in[2];
  int nd = n->ndim, naxes = p[0];
  int64_t rs[nd > 0 ? nd : 1];
  lc_shape_strides(nd, n->shape, rs);
  struct lc_cu_copy c0, c;
  memset(&c, 0, sizeof c);
  if (naxes > MAXD || !can_start(n, &c0, rs) || !plan_copy(&c, nd, u->shape, rs, u->strides))
    return LC_EVAL_ON_CPU;
  if (start_from_input(n, &c0, "dynamic_slice_update")) return 1;
  if (u->size == 0) return 0;
  set_dyn(&c.dyn, start, naxes, p + 1, n->shape, u->shape, rs);
  c.dyn_dst = 1;
  return finish(n, launch_copy(&c, n->buf->dev_data, u, n), "dynamic_slice_update");
}

/* ---- scatter, scatter_axis ---- */

/* Device scratch of count ints (NULL buffer when count is 0). 0, or 1
 * after reporting. */
static int scratch(struct lc_node *n, int64_t count, struct lc_buffer **b) {
  *b = NULL;
  if (count == 0) return 0;
  return !(*b = lc_buffer_new_device((size_t)count * sizeof(int), n->dev));
}

int lc_cuda_eval_scatter(struct lc_node *n) {
  const int *p = n->params, mode = p[0], nax = p[1], *axes = p + 2;
  const struct lc_node *u = n->in[1 + nax];
  int nd = n->ndim, ind = u->ndim - nd;
  if (nd > MAXD || ind > MAXD || nax > MAXD) return LC_EVAL_ON_CPU;
  if (mode != LC_SCATTER_NONE && n->dtype == MLX_COMPLEX64) return LC_EVAL_ON_CPU;
  const int *slice = u->shape + ind;
  int64_t count = lc_shape_size(ind, u->shape), nslots = 0;
  if (mode == LC_SCATTER_NONE && count > 1 && u->size > 0) {
    /* last write wins through a table of index tuples: needs slices that
     * coincide exactly or not at all */
    nslots = 1;
    for (int k = 0; k < nax; k++) {
      int64_t ext = n->shape[axes[k]], s = slice[axes[k]];
      if (s != 1 && s != ext) return LC_EVAL_ON_CPU;
      nslots *= ext - s + 1;
      if (nslots > MAX_WIN) return LC_EVAL_ON_CPU;
    }
    if (count > INT32_MAX) return LC_EVAL_ON_CPU;
  }
  int64_t rs[nd > 0 ? nd : 1];
  lc_shape_strides(nd, n->shape, rs);
  struct lc_cu_copy c0;
  if (!can_start(n, &c0, rs)) return LC_EVAL_ON_CPU;
  if (start_from_input(n, &c0, "scatter")) return 1;
  if (u->size == 0) return 0;
  struct lc_cu_scatter a;
  memset(&a, 0, sizeof a);
  a.out = n->buf->dev_data;
  a.upd = lc_node_dev_data(u);
  a.mode = mode;
  a.dt = n->dtype;
  a.itemsize = (int)lc_dtype_size(n->dtype);
  a.nd = nd;
  for (int d = 0; d < nd; d++) {
    a.slice[d] = slice[d];
    a.out_strides[d] = rs[d];
  }
  for (int d = 0; d < u->ndim; d++) a.upd_strides[d] = u->strides[d];
  a.ix.nidx = nax;
  a.ix.ind = ind;
  for (int d = 0; d < ind; d++) a.ix.ishape[d] = u->shape[d];
  for (int k = 0; k < nax; k++)
    set_index(&a.ix, k, n->in[1 + k], n->shape[axes[k]], slice[axes[k]], rs[axes[k]]);
  struct lc_buffer *win;
  if (scratch(n, nslots, &win)) return lc_cuda_finish(n, 1);
  int rc = finish(n, lc_cu_scatter(&a, stream_of(n), win ? win->dev_data : NULL, nslots),
                  "scatter");
  lc_buffer_release(win); /* stream-ordered: reused only by later work */
  return rc;
}

int lc_cuda_eval_scatter_axis(struct lc_node *n) {
  const int *p = n->params;
  int ax = p[0], mode = p[1], nd = n->ndim;
  const struct lc_node *ix = n->in[1], *u = n->in[2];
  if (nd > MAXD || (mode != LC_SCATTER_NONE && n->dtype == MLX_COMPLEX64)) return LC_EVAL_ON_CPU;
  /* last write wins through a table over out's elements, needed only when
   * two positions can meet (more than one index along the axis) */
  int64_t nwin = mode == LC_SCATTER_NONE && ix->size > 0 && ix->shape[ax] > 1 ? n->size : 0;
  if (nwin > MAX_WIN || ix->size > INT32_MAX) return LC_EVAL_ON_CPU;
  int64_t rs[nd > 0 ? nd : 1];
  lc_shape_strides(nd, n->shape, rs);
  struct lc_cu_copy c0;
  if (!can_start(n, &c0, rs)) return LC_EVAL_ON_CPU;
  if (start_from_input(n, &c0, "scatter_axis")) return 1;
  if (ix->size == 0) return 0;
  struct lc_cu_scatter_axis a;
  memset(&a, 0, sizeof a);
  a.out = n->buf->dev_data;
  a.upd = lc_node_dev_data(u);
  a.idx = lc_node_dev_data(ix);
  a.mode = mode;
  a.dt = n->dtype;
  a.itemsize = (int)lc_dtype_size(n->dtype);
  a.idx_dt = ix->dtype;
  a.ndim = nd;
  a.axis = ax;
  a.ext = n->shape[ax];
  a.out_size = n->size;
  for (int d = 0; d < nd; d++) {
    a.shape[d] = ix->shape[d];
    a.out_strides[d] = rs[d];
    a.upd_strides[d] = u->strides[d];
    a.idx_strides[d] = ix->strides[d];
  }
  struct lc_buffer *win;
  if (scratch(n, nwin, &win)) return lc_cuda_finish(n, 1);
  int rc = finish(n, lc_cu_scatter_axis(&a, stream_of(n), win ? win->dev_data : NULL),
                  "scatter_axis");
  lc_buffer_release(win);
  return rc;
}
#endif
