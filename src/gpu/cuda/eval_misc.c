/* eval_cuda of divmod, linspace, tri (eye), tril/triu, diag, hadamard,
 * masked_scatter and number_of_elements, as launches of gpu/cuda/misc.cu.
 *
 * Each evaluator computes what its eval_cpu computes, bit for bit (NaN
 * payloads aside), and decides first whether the GPU can: inputs are read
 * in place through views whose dimensions are merged where they step as
 * one (LC_EVAL_ON_CPU beyond LC_CU_MAX_DIMS), complex arithmetic stays on
 * the CPU (copies of complex items do not), and LC_EVAL_ON_CPU is answered
 * before anything is queued or a donated input is taken. Values known on
 * the host (one-element linspaces, number_of_elements, tri's one) are
 * converted by the CPU's lc_dtype_store and written by a fill kernel, so
 * nothing here waits for the GPU, except masked_scatter where the values
 * may run out (fewer values than elements): the count of set mask
 * elements is read back to report that error as the CPU does. */
#ifdef LACE_CUDA
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "gpu/cuda/eval.h"
#include "gpu/cuda/misc.h"
#include "gpu/gpu.h"
#include "ops/prim.h"
#include "ops/tuple.h"

#define MAXD LC_CU_MAX_DIMS

/* v reads x's elements (row-major over x's shape) on x's GPU copy: x's
 * dimensions with extents of 1 dropped and neighbours that step as one
 * merged. False when more than MAXD remain. */
static bool view_of(struct lc_cu_view *v, const struct lc_node *x) {
  memset(v, 0, sizeof *v);
  v->p = lc_node_dev_data(x);
  int k = 0;
  for (int d = 0; d < x->ndim; d++) {
    if (x->shape[d] == 1) continue;
    if (k > 0 && v->strides[k - 1] == x->strides[d] * x->shape[d]) {
      v->shape[k - 1] *= x->shape[d];
      v->strides[k - 1] = x->strides[d];
      continue;
    }
    if (k == MAXD) return false;
    v->shape[k] = x->shape[d];
    v->strides[k] = x->strides[d];
    k++;
  }
  v->ndim = k;
  return true;
}

/* The contiguous view of n's own buffer (an input taken over in place). */
static void own_view(struct lc_cu_view *v, const struct lc_node *n) {
  memset(v, 0, sizeof *v);
  v->p = n->buf->dev_data;
  v->ndim = 1;
  v->shape[0] = n->size;
  v->strides[0] = 1;
}

static int finish(struct lc_node *n, int launched, const char *name) {
  return lc_cuda_finish(n, lc_cuda_result(launched, name));
}

static void *stream_of(const struct lc_node *n) { return lc_gpu_stream(n->dev); }

/* v stored in dtype t as the CPU stores it (lc_dtype_store), as the low
 * bytes of a 64-bit pattern (little-endian; items of at most 8 bytes). */
static uint64_t stored_bits(mlx_dtype t, double v) {
  unsigned char b[16] = {0};
  uint64_t u;
  lc_dtype_store(b, t, v);
  memcpy(&u, b, sizeof u);
  return u;
}

/* n's one element written on the GPU as lc_dtype_store(v) writes it. */
static int store_scalar(struct lc_node *n, double v, const char *name) {
  if (lc_cuda_alloc_output(n)) return 1;
  if (n->size == 0) return 0;
  int isz = (int)lc_dtype_size(n->dtype);
  return finish(n, lc_cu_fill(n->buf->dev_data, 1, isz, stored_bits(n->dtype, v), stream_of(n)),
                name);
}

/* ---- divmod: a tuple of (quotient, remainder), each of the inputs'
 * (broadcast) shape and dtype ---- */
int lc_cuda_eval_divmod(struct lc_node *n) {
  const struct lc_node *a = n->in[0], *b = n->in[1];
  mlx_dtype dt = a->dtype;
  if (dt == MLX_COMPLEX64 || b->dtype != dt || b->size != a->size) return LC_EVAL_ON_CPU;
  struct lc_cu_divmod d;
  memset(&d, 0, sizeof d);
  if (!view_of(&d.x, a) || !view_of(&d.y, b)) return LC_EVAL_ON_CPU;
  int64_t isz = (int64_t)lc_dtype_size(dt), nbytes[2] = {a->size * isz, a->size * isz}, offs[2];
  lc_tuple_layout(2, nbytes, offs);
  if (lc_cuda_alloc_output(n)) return 1;
  if (a->size == 0) return 0;
  d.dt = dt;
  d.n = a->size;
  d.q = (char *)n->buf->dev_data + offs[0];
  d.r = (char *)n->buf->dev_data + offs[1];
  return finish(n, lc_cu_divmod(&d, stream_of(n)), "divmod");
}

/* ---- linspace ---- */

/* creation.c's struct linspace_params; kept equal to it. */
struct linspace_params {
  double start, stop;
  int den;
};

int lc_cuda_eval_linspace(struct lc_node *n) {
  const struct linspace_params *p = n->params;
  if (n->dtype == MLX_COMPLEX64 || n->params_size != sizeof *p) return LC_EVAL_ON_CPU;
  if (n->size == 1) return store_scalar(n, p->start, "linspace");
  if (lc_cuda_alloc_output(n)) return 1;
  return finish(n, lc_cu_linspace(n->buf->dev_data, n->dtype, n->size, p->start, p->stop, p->den,
                                  stream_of(n)),
                "linspace");
}

/* ---- tri (eye) ---- */

/* creation.c's struct tri_params. */
struct tri_params {
  int k;
  int eye;
};

int lc_cuda_eval_tri(struct lc_node *n) {
  const struct tri_params *p = n->params;
  if (n->ndim != 2 || n->params_size != sizeof *p) return LC_EVAL_ON_CPU;
  if (lc_cuda_alloc_output(n)) return 1;
  return finish(n, lc_cu_tri(n->buf->dev_data, (int)lc_dtype_size(n->dtype), n->shape[0],
                             n->shape[1], p->k, p->eye, stored_bits(n->dtype, 1.0), stream_of(n)),
                "tri");
}

/* ---- tril, triu: in place when the input can be taken over ---- */

/* creation.c's struct tril_params. */
struct tril_params {
  int k;
  int upper;
};

int lc_cuda_eval_tril(struct lc_node *n) {
  const struct tril_params *p = n->params;
  int nd = n->ndim;
  struct lc_cu_view in;
  if (nd < 2 || n->params_size != sizeof *p || !view_of(&in, n->in[0])) return LC_EVAL_ON_CPU;
  if (lc_prim_can_donate(n, 0)) {
    lc_cuda_take_buffer(n, 0);
    own_view(&in, n);
  } else if (lc_cuda_alloc_output(n)) {
    return 1;
  }
  return finish(n, lc_cu_tril(n->buf->dev_data, &in, (int)lc_dtype_size(n->dtype), n->size,
                              n->shape[nd - 2], n->shape[nd - 1], p->k, p->upper, stream_of(n)),
                "tril");
}

/* ---- diag of a vector: an (m, m) matrix, m = len + |k| ---- */

int lc_cuda_eval_diag(struct lc_node *n) {
  const struct lc_node *v = n->in[0];
  if (v->ndim != 1 || n->ndim != 2) return LC_EVAL_ON_CPU;
  int k = *(const int *)n->params;
  int64_t r0 = k < 0 ? -(int64_t)k : 0, c0 = k > 0 ? k : 0;
  if (lc_cuda_alloc_output(n)) return 1;
  return finish(n, lc_cu_diag(n->buf->dev_data, lc_node_dev_data(v), v->strides[0],
                              (int)lc_dtype_size(n->dtype), v->size, n->shape[1], r0, c0,
                              stream_of(n)),
                "diag");
}

/* ---- hadamard: rows along the last axis (float32 or float64; the
 * builder casts and checks the length is a power of two) ---- */

int lc_cuda_eval_hadamard(struct lc_node *n) {
  mlx_dtype dt = n->dtype;
  int64_t len = n->ndim ? n->shape[n->ndim - 1] : 1, rows = len ? n->size / len : 0;
  struct lc_cu_view in;
  if ((dt != MLX_FLOAT32 && dt != MLX_FLOAT64) || n->in[0]->dtype != dt ||
      n->params_size != sizeof(float) || len <= 0 || (len & (len - 1)) != 0 ||
      (n->size + 4095) / 4096 > INT32_MAX || !view_of(&in, n->in[0]))
    return LC_EVAL_ON_CPU;
  double scale = *(const float *)n->params;
  if (lc_prim_can_donate(n, 0)) {
    lc_cuda_take_buffer(n, 0);
    own_view(&in, n);
  } else if (lc_cuda_alloc_output(n)) {
    return 1;
  }
  return finish(n, lc_cu_hadamard(n->buf->dev_data, &in, dt, rows, len, scale, stream_of(n)),
                "hadamard");
}

/* ---- masked_scatter: inputs a, mask (bool, a's shape), values ---- */

int lc_cuda_eval_masked_scatter(struct lc_node *n) {
  const struct lc_node *a = n->in[0], *m = n->in[1], *v = n->in[2];
  struct lc_cu_view av, mv, vv;
  int isz = (int)lc_dtype_size(n->dtype);
  int64_t ntiles = lc_cu_masked_tiles(n->size);
  /* the values may run out only when there are fewer than a's elements:
   * then the count is read back (refused while a CUDA graph is captured) */
  bool check = v->size < n->size;
  if (m->dtype != MLX_BOOL || m->size != n->size || v->dtype != n->dtype ||
      ntiles > INT32_MAX || (check && lc_host_reads_refused > 0) || !view_of(&mv, m) ||
      !view_of(&vv, v))
    return LC_EVAL_ON_CPU;
  bool donate = lc_prim_can_donate(n, 0);
  if (!donate && !view_of(&av, a)) return LC_EVAL_ON_CPU;
  if (donate) {
    lc_cuda_take_buffer(n, 0);
  } else {
    if (lc_cuda_alloc_output(n)) return 1;
    int rc = lc_cuda_result(lc_cu_copy_view(n->buf->dev_data, &av, isz, n->size, stream_of(n)),
                            "masked_scatter");
    if (rc) return lc_cuda_finish(n, rc);
  }
  if (n->size == 0) return 0;
  struct lc_buffer *tiles = lc_buffer_new_device((size_t)ntiles * sizeof(int64_t), n->dev);
  struct lc_buffer *total = tiles ? lc_buffer_new_device(sizeof(int64_t), n->dev) : NULL;
  int rc = !total;
  if (!rc)
    rc = lc_cuda_result(lc_cu_masked_count(&mv, n->size, tiles->dev_data, total->dev_data,
                                           stream_of(n)),
                        "masked_scatter");
  if (!rc && check) {
    /* host read: copies the count back after the kernels above */
    if (lc_buffer_on_host(total)) {
      rc = 1;
    } else {
      int64_t set;
      memcpy(&set, total->data, sizeof set);
      if (set > v->size)
        rc = lc_error("masked_scatter: the source does not have enough elements for the mask "
                      "(%lld)",
                      (long long)v->size);
    }
  }
  if (!rc)
    rc = lc_cuda_result(lc_cu_masked_scatter(n->buf->dev_data, isz, &mv, n->size, &vv, v->size,
                                             tiles->dev_data, stream_of(n)),
                        "masked_scatter");
  lc_buffer_release(tiles); /* stream-ordered: reused only by later work */
  lc_buffer_release(total);
  return lc_cuda_finish(n, rc);
}

/* ---- number_of_elements: a 0-d value known from shapes alone ---- */

int lc_cuda_eval_number_of_elements(struct lc_node *n) {
  const int *p = n->params; /* size.c: {inverted, naxes (-1: all), axes...} */
  const struct lc_node *x = n->in[0];
  double c = 1;
  if (p[1] < 0)
    for (int d = 0; d < x->ndim; d++) c *= x->shape[d];
  else
    for (int k = 0; k < p[1]; k++) c *= x->shape[p[2 + k]];
  return store_scalar(n, p[0] ? 1.0 / c : c, "number_of_elements");
}
#endif
