/* eval_cuda of FUSED nodes: chooses the launch plan of a region for the
 * shapes and layouts of this call, gets its kernels (gpu/cuda/nvrtc.c)
 * and queues one launch. Regions the GPU kernels cannot compute (complex
 * values, random draws, a few primitives), more than LC_FK_MAX_DIMS
 * strided dimensions, or failed builds run on the CPU instead
 * (LC_EVAL_ON_CPU); LACE_CUDA_FUSE=0 sends every region there. */
#ifdef LACE_CUDA
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "gpu/cuda/capture.h"
#include "gpu/cuda/eval.h"
#include "gpu/cuda/fused.h"
#include "gpu/cuda/kernels.h"
#include "gpu/gpu.h"
#include "ops/prim.h"
#include "ops/tuple.h"

_Static_assert(LC_FK_MAX_IN == LC_FUSED_GPU_MAX_IN && LC_FK_MAX_OUT == LC_FUSED_GPU_MAX_OUT,
               "the fuser's GPU limits are the kernel argument's");

static bool fuse_disabled(void) {
  const char *e = getenv("LACE_CUDA_FUSE");
  return e && strcmp(e, "0") == 0;
}

/* Every fused kernel starts with lc_pdl_begin (fk_prelude.cuh), so it may
 * be launched as a programmatic dependent (gpu/cuda/pdl.cuh). */
static int launch(void *fn, unsigned blocks, unsigned threads, struct lc_fk_args *a, int dev) {
  void *args[] = {a};
  cudaLaunchAttribute at = {.id = cudaLaunchAttributeProgrammaticStreamSerialization,
                            .val.programmaticStreamSerializationAllowed = 1};
  cudaLaunchConfig_t cfg = {.gridDim = {blocks, 1, 1}, .blockDim = {threads, 1, 1},
                            .stream = (cudaStream_t)lc_gpu_stream(dev), .attrs = &at,
                            .numAttrs = lc_cu_pdl_enabled() ? 1 : 0};
  cudaError_t e = cudaLaunchKernelExC(&cfg, fn, args);
  size_t size = sizeof *a;
  unsigned gr[3] = {blocks, 1, 1}, bl[3] = {threads, 1, 1};
  if (e == cudaSuccess) lc_cuda_capture_note_launch(fn, gr, bl, 0, args, &size, 1); /* graphs */
  else (void)cudaGetLastError();
  return e == cudaSuccess ? 0 : -(int)e;
}

/* Output k's device pointer (tuple layout when there are several). */
static void set_outputs(struct lc_node *n, const struct lc_fused_hdr *h, int64_t full, int64_t rows,
                        struct lc_fk_args *a) {
  const struct lc_fused_out *fo = lc_fused_outs(h);
  if (h->nout == 1) {
    a->out[0] = n->buf->dev_data;
    return;
  }
  int64_t nbytes[LC_FK_MAX_OUT], offs[LC_FK_MAX_OUT];
  for (int k = 0; k < h->nout; k++)
    nbytes[k] = (fo[k].kind == LC_FK_FULL ? full : rows) * (int64_t)lc_dtype_size((mlx_dtype)fo[k].dtype);
  lc_tuple_layout(h->nout, nbytes, offs);
  for (int k = 0; k < h->nout; k++) a->out[k] = (char *)n->buf->dev_data + offs[k];
}

static bool aligned(const void *p, size_t to) { return ((uintptr_t)p & (to - 1)) == 0; }

static int eval_elementwise_region(struct lc_node *n, const struct lc_fused_hdr *h) {
  int nd = h->ndim;
  const int32_t *F = lc_fused_shape(h);
  int64_t size = 1;
  for (int d = 0; d < nd; d++) size *= F[d];
  struct lc_fk_plan p;
  memset(&p, 0, sizeof p);
  struct lc_fk_args *a = calloc(1, sizeof *a);
  if (!a) return lc_error("out of memory");
  int64_t rs[nd > 0 ? nd : 1], st[LC_FK_MAX_IN][nd > 0 ? nd : 1];
  lc_shape_strides(nd, F, rs);
  bool strided = false;
  for (int k = 0; k < h->nin; k++) {
    lc_node_broadcast_strides(n->in[k], nd, st[k]);
    bool scalar = true, flat = true;
    for (int d = 0; d < nd; d++) {
      if (F[d] == 1) continue;
      scalar &= st[k][d] == 0;
      flat &= st[k][d] == rs[d];
    }
    p.lay[k] = scalar ? 's' : flat ? 'c' : 'g';
    if (p.lay[k] == 'g') { /* the first D elements repeated (a broadcast over leading dims)? */
      int64_t D = 1;
      int d = nd - 1;
      for (; d >= 0 && (F[d] == 1 || st[k][d] == D); d--) D *= F[d];
      bool lead0 = true;
      for (; d >= 0; d--) lead0 &= F[d] == 1 || st[k][d] == 0;
      if (lead0) {
        p.lay[k] = 'r';
        a->st[k][0] = D;
      }
    }
    strided |= p.lay[k] == 'g';
    a->in[k] = lc_node_dev_data(n->in[k]);
  }
  if (strided) { /* merge dimensions every strided input steps through as one */
    int m = 0;
    for (int d = 0; d < nd; d++) {
      if (F[d] == 1) continue;
      bool merge = m > 0;
      for (int k = 0; merge && k < h->nin; k++)
        if (p.lay[k] == 'g') merge = a->st[k][m - 1] == st[k][d] * F[d];
      if (merge) {
        a->shape[m - 1] *= F[d];
        for (int k = 0; k < h->nin; k++)
          if (p.lay[k] == 'g') a->st[k][m - 1] = st[k][d];
        continue;
      }
      if (m == LC_FK_MAX_DIMS) {
        free(a);
        return LC_EVAL_ON_CPU;
      }
      a->shape[m] = F[d];
      for (int k = 0; k < h->nin; k++)
        if (p.lay[k] == 'g') a->st[k][m] = st[k][d];
      m++;
    }
    p.nd = m;
    a->ndim = m;
  }
  p.idx64 = size >= ((int64_t)1 << 31) - ((int64_t)1 << 24);
  p.vec = !strided && size >= 1024;
  p.V = p.vec ? lc_fk_vector_width(h) : 0;
  for (int k = 0; k < h->nin && p.vec; k++)
    if (p.lay[k] == 'r' && a->st[k][0] % p.V) p.vec = 0, p.V = 0; /* packs must repeat too */
  if (p.vec) { /* packs per thread: LACE_CUDA_EW_UNROLL, default 1 */
    const char *e = getenv("LACE_CUDA_EW_UNROLL");
    p.U = e && atoi(e) > 1 && atoi(e) <= 8 ? atoi(e) : 1;
  }
  a->n = size;
  /* the output: one takes over a flat input's buffer nobody else sees
   * (each thread reads its elements before writing them) */
  int donor = -1;
  for (int k = 0; k < h->nin && h->nout == 1 && donor < 0; k++)
    if (p.lay[k] == 'c' && lc_prim_can_donate(n, k)) donor = k;
  void *fn = NULL;
  bool vec = false;
  if (size > 0) {
    if (p.vec) {
      vec = true;
      for (int k = 0; k < h->nin; k++)
        if (p.lay[k] == 'c' || p.lay[k] == 'r')
          vec &= aligned(a->in[k], (size_t)p.V * lc_dtype_size(n->in[k]->dtype));
    }
    fn = lc_fk_kernel(h, &p, n->dev, "lc_fk_ew");
    if (!fn) {
      free(a);
      return LC_EVAL_ON_CPU;
    }
  }
  if (donor >= 0)
    lc_cuda_take_buffer(n, donor);
  else if (lc_cuda_alloc_output(n)) {
    free(a);
    return 1;
  }
  if (size == 0) {
    free(a);
    return 0;
  }
  set_outputs(n, h, size, 0, a);
  const struct lc_fused_out *fo = lc_fused_outs(h);
  for (int k = 0; k < h->nout && vec; k++)
    vec = aligned(a->out[k], (size_t)p.V * lc_dtype_size((mlx_dtype)fo[k].dtype));
  void *fv = vec ? lc_fk_kernel(h, &p, n->dev, "lc_fk_ewv") : NULL;
  int rc;
  if (fv) {
    int64_t nv = size / p.V, packs = nv + size % p.V, per_block = (int64_t)LC_FK_THREADS * p.U;
    rc = launch(fv, (unsigned)((packs + per_block - 1) / per_block), LC_FK_THREADS, a, n->dev);
  } else {
    int64_t b = (size + LC_FK_THREADS - 1) / LC_FK_THREADS;
    rc = launch(fn, (unsigned)(b < (1 << 20) ? b : (1 << 20)), LC_FK_THREADS, a, n->dev);
  }
  free(a);
  return lc_cuda_result(rc, "fused");
}

/* Threads per row (G) and packs of V elements cached per thread (K) for
 * rows of L elements whose kernel keeps `arrays` register arrays (FULL
 * inputs and kept values): the fewest threads that keep a thread's share
 * within E elements per array (LACE_CUDA_ROW_ELEMS; by default E0, 64
 * bytes of the widest FULL dtype: on the H200 fewer were slower, and more
 * for float32, BENCHMARKS.md) and 4 E in all; rows longer than that are
 * re-read from L2 by 1024 threads (K = 0). */
static void row_shape(int64_t L, int V, int E0, int arrays, int *G, int *K) {
  int w = arrays > 0 ? arrays : 1;
  const char *env = getenv("LACE_CUDA_ROW_ELEMS");
  int64_t E = env && atoi(env) > 0 ? atoi(env) : E0;
  for (int g = 32; g <= 1024; g *= 2) {
    int64_t packs = (L / V + g - 1) / g, k = 1;
    while (k < packs) k *= 2;
    if (k * V <= E && k * V * w <= 4 * E) {
      *G = g;
      *K = (int)k;
      return;
    }
  }
  *G = 1024;
  *K = 0;
}

static int eval_row_region(struct lc_node *n, const struct lc_fused_hdr *h) {
  int nd = h->ndim;
  if (nd < 1) return LC_EVAL_ON_CPU;
  const int32_t *F = lc_fused_shape(h);
  const struct lc_fused_in *fin = lc_fused_ins_in(h);
  int64_t L = F[nd - 1], rows = 1;
  for (int d = 0; d < nd - 1; d++) rows *= F[d];
  if (rows > 0 && L == 0) return LC_EVAL_ON_CPU; /* the CPU reports it */
  if (rows > 0x7fffffffLL) return LC_EVAL_ON_CPU; /* one block per row at most */
  struct lc_fk_plan p;
  memset(&p, 0, sizeof p);
  p.rows = 1;
  struct lc_fk_args *a = calloc(1, sizeof *a);
  if (!a) return lc_error("out of memory");
  int nfull = 0, m = 0;
  int64_t st[LC_FK_MAX_IN][64];
  if (nd > 64) {
    free(a);
    return LC_EVAL_ON_CPU;
  }
  for (int k = 0; k < h->nin; k++) {
    int T[64], tnd = lc_fused_kind_shape(fin[k].mode, nd, F, T);
    lc_node_broadcast_strides(n->in[k], tnd, st[k]);
    if (fin[k].mode == LC_FK_FULL) {
      nfull++;
      a->inner[k] = st[k][nd - 1];
    }
    a->in[k] = lc_node_dev_data(n->in[k]);
  }
  for (int d = 0; d < nd - 1; d++) { /* outer dims, extents of 1 dropped */
    if (F[d] == 1) continue;
    if (m == LC_FK_MAX_DIMS) {
      free(a);
      return LC_EVAL_ON_CPU;
    }
    a->shape[m] = F[d];
    for (int k = 0; k < h->nin; k++) a->st[k][m] = st[k][d];
    m++;
  }
  a->ndim = p.nd = m;
  a->n = rows;
  a->L = L;
  /* packs of V elements: contiguous, aligned FULL rows of a multiple of V */
  size_t widest = 1;
  const struct lc_fused_out *fo = lc_fused_outs(h);
  for (int k = 0; k < h->nin; k++)
    if (fin[k].mode == LC_FK_FULL && lc_dtype_size((mlx_dtype)fin[k].dtype) > widest)
      widest = lc_dtype_size((mlx_dtype)fin[k].dtype);
  for (int k = 0; k < h->nout; k++)
    if (fo[k].kind == LC_FK_FULL && lc_dtype_size((mlx_dtype)fo[k].dtype) > widest)
      widest = lc_dtype_size((mlx_dtype)fo[k].dtype);
  p.V = (int)(16 / widest);
  if (L % p.V) p.V = 1;
  for (int k = 0; k < h->nin && p.V > 1; k++) {
    if (fin[k].mode != LC_FK_FULL) continue;
    bool ok = a->inner[k] == 1 && aligned(a->in[k], (size_t)p.V * lc_dtype_size(n->in[k]->dtype));
    for (int d = 0; d < m; d++) ok &= a->st[k][d] % p.V == 0;
    if (!ok) p.V = 1;
  }
  /* FULL inputs that are the same row for every row (weights) stay in
   * L1/L2 rather than in each thread's registers */
  int arrays = lc_fk_row_arrays(h);
  for (int k = 0; k < h->nin && k < 32; k++) {
    if (fin[k].mode != LC_FK_FULL) continue;
    bool same = true;
    for (int d = 0; d < m; d++) same &= a->st[k][d] == 0;
    if (same && m > 0) {
      p.nocache |= 1u << k;
      arrays--;
    }
  }
  (void)nfull;
  row_shape(L, p.V, (int)(16 / widest) * 4, arrays, &p.G, &p.K);
  void *fn = rows > 0 ? lc_fk_kernel(h, &p, n->dev, "lc_fk_rows") : NULL;
  if (rows > 0 && !fn) {
    free(a);
    return LC_EVAL_ON_CPU;
  }
  if (lc_cuda_alloc_output(n)) {
    free(a);
    return 1;
  }
  int rc = 0;
  if (rows > 0) {
    set_outputs(n, h, rows * L, rows, a);
    int per_block = p.G > 32 ? 1 : LC_FK_THREADS / 32;
    int64_t blocks = (rows + per_block - 1) / per_block;
    rc = launch(fn, (unsigned)blocks, (unsigned)(p.G > 32 ? p.G : LC_FK_THREADS), a, n->dev);
  }
  free(a);
  return lc_cuda_result(rc, "fused");
}

int lc_cuda_eval_fused(struct lc_node *n) {
  const struct lc_fused_hdr *h = n->params;
  if (fuse_disabled() || h->nin != n->nin || h->nin > LC_FK_MAX_IN || h->nout > LC_FK_MAX_OUT)
    return LC_EVAL_ON_CPU;
  for (int k = 0; k < n->nin; k++)
    if (n->in[k]->dtype == MLX_COMPLEX64) return LC_EVAL_ON_CPU;
  return h->rows ? eval_row_region(n, h) : eval_elementwise_region(n, h);
}
#endif
