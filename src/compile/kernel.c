/* The CPU fused kernel: a tiled interpreter over a region's instructions.
 *
 * The region's flat index space (row-major over the region shape) is cut
 * into tiles of LC_FUSED_TILE elements. For each tile, every instruction
 * runs its primitive's ew kernel on tile-sized operands:
 *  - region inputs are read in place when their broadcast strides make the
 *    tile one strided run (contiguous, scalar broadcast, uniform stride),
 *    else gathered into a scratch tile;
 *  - values that escape the region are written straight into the output
 *    buffers (and read back from there by later instructions);
 *  - other values live in scratch tiles (cache resident, reused).
 * Tiles are split over the thread pool for large regions; each chunk
 * allocates its scratch once, so no full-size intermediate and no per-tile
 * allocation exists. Unit-stride inputs are prefetched a few tiles ahead.
 * Modes: flat (tiles of the flat index space; inputs
 * that are not one strided run are gathered) and row (after merging
 * dimensions, tiles within rows of at least LC_FUSED_ROW_MIN elements, so
 * every input is one strided run per tile). Outputs of LC_FUSED_STREAM_MIN
 * bytes or more are computed into scratch and copied out with
 * non-temporal stores (no read-for-ownership of the destination); the
 * environment variable LACE_NO_STREAM turns that off, for comparisons. */
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <immintrin.h>
#define LC_HAVE_STREAM 1
#endif

#include "compile/compile.h"
#include "compile/jit.h"
#include "core/error.h"
#include "core/iter.h"
#include "core/parallel.h"
#include "ops/prim.h"
#include "ops/tuple.h"

#define LC_FUSED_TILE 256
#define LC_JIT_TILE 512 /* native kernels keep values in registers: longer calls */
/* Inputs read as unit-stride runs are prefetched this many tiles ahead:
 * the hardware prefetcher alone does not run far enough ahead of a tile's
 * computation, so loads and arithmetic would not overlap (measured on
 * machine A, BENCHMARKS.md: compiled gelu 7.5 -> 5.9 ms, a fused x*a + y
 * 5.8 -> 4.2 ms for 16M float32 on 2 threads). */
#define LC_FUSED_PREFETCH 2
#define LC_FUSED_ROW_MIN 256 /* inner extent from which tiles follow rows */
#define SLOT_BYTES 8 /* the widest element (float64, int64, complex64) */
#define LC_FUSED_STREAM_MIN ((int64_t)32 << 20) /* bytes of output */

struct fin {
  const char *base; /* element 0, offset applied */
  size_t isz;
  bool affine;
  int64_t stride; /* affine: element i at base + i * stride */
  int64_t *st;    /* ndim broadcast strides (gathered inputs) */
  int gslot;      /* scratch tile of a gathered input */
};

struct fctx {
  const struct lc_fused_hdr *h;
  int ndim;
  int shape[64];
  int64_t size;
  int nin, nout, nslots;
  struct fin *in;
  char *obase[64];
  size_t osz[64];
  /* row mode: merged dimensions, per-input strides (mst[k * mnd + d]) */
  int mnd;
  int64_t mdims[64], mout[64];
  int64_t *mst;
  int64_t row_tile;
  /* Large outputs: computed into scratch tiles (first out_slot0 + k), then
   * copied with non-temporal stores, which skip reading the destination. */
  bool stream;
  int out_slot0;
  lc_jit_fn jit; /* native code for the whole region, or NULL */
  int64_t tile; /* elements per tile */
};

#ifdef LC_HAVE_STREAM
__attribute__((target("avx512f"))) static void copy_nt512(char *dst, const char *src, size_t n) {
  while (n && ((uintptr_t)dst & 63)) {
    *dst++ = *src++;
    n--;
  }
  for (; n >= 64; n -= 64, dst += 64, src += 64)
    _mm512_stream_si512((void *)dst, _mm512_loadu_si512((const void *)src));
  memcpy(dst, src, n);
}
#endif

void lc_fused_copy_out(char *dst, const char *src, size_t n, bool stream) {
#ifdef LC_HAVE_STREAM
  if (stream && __builtin_cpu_supports("avx512f")) {
    copy_nt512(dst, src, n);
    return;
  }
  if (stream) {
    while (n && ((uintptr_t)dst & 15)) {
      *dst++ = *src++;
      n--;
    }
    for (; n >= 16; n -= 16, dst += 16, src += 16)
      _mm_stream_si128((__m128i *)(void *)dst, _mm_loadu_si128((const __m128i *)(const void *)src));
  }
#else
  (void)stream;
#endif
  memcpy(dst, src, n);
}

void lc_fused_stream_done(bool stream) {
#ifdef LC_HAVE_STREAM
  if (stream) _mm_sfence();
#else
  (void)stream;
#endif
}

bool lc_fused_want_stream(int64_t out_bytes) {
#ifdef LC_HAVE_STREAM
  return out_bytes >= LC_FUSED_STREAM_MIN && !getenv("LACE_NO_STREAM");
#else
  (void)out_bytes;
  return false;
#endif
}

static void copy_out(const struct fctx *c, char *dst, const char *src, size_t n) {
  lc_fused_copy_out(dst, src, n, c->stream);
}

static void chunk_done(const struct fctx *c) { lc_fused_stream_done(c->stream); }

static void prefetch_run(const char *p, int64_t bytes) {
  for (int64_t q = 0; q < bytes; q += 64) __builtin_prefetch(p + q, 0, 3);
}

/* Copies len elements starting at flat index t of input f into dst. */
static void gather(const struct fctx *c, const struct fin *f, int64_t t, int64_t len, char *dst) {
  int nd = c->ndim;
  int64_t idx[64];
  int64_t rem = t, off = 0;
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = rem % c->shape[d];
    rem /= c->shape[d];
    off += idx[d] * f->st[d];
  }
  size_t isz = f->isz;
  int64_t s = f->st[nd - 1];
  while (len > 0) {
    int64_t run = c->shape[nd - 1] - idx[nd - 1];
    if (run > len) run = len;
    const char *src = f->base + off * (int64_t)isz;
    switch (isz) {
    case 1:
      for (int64_t i = 0; i < run; i++) dst[i] = src[i * s];
      break;
    case 2:
      for (int64_t i = 0; i < run; i++) memcpy(dst + 2 * i, src + 2 * i * s, 2);
      break;
    case 4:
      for (int64_t i = 0; i < run; i++) memcpy(dst + 4 * i, src + 4 * i * s, 4);
      break;
    default:
      for (int64_t i = 0; i < run; i++) memcpy(dst + 8 * i, src + 8 * i * s, 8);
      break;
    }
    dst += run * (int64_t)isz;
    len -= run;
    off += (run - 1) * s; /* at the run's last element */
    idx[nd - 1] += run - 1;
    /* step the odometer by one */
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < c->shape[d]) {
        off += f->st[d];
        break;
      }
      off -= (idx[d] - 1) * f->st[d];
      idx[d] = 0;
    }
  }
}

/* Runs the region's instructions on one tile of len elements starting at
 * flat output index t, the inputs at iptr/istr. */
static void run_tile(const struct fctx *c, char *scratch, size_t slot_bytes, int64_t t,
                     int64_t len, const void *const *iptr, const int64_t *istr) {
  const struct lc_fused_hdr *h = c->h;
  if (c->jit) {
    void *outs[64];
    for (int o = 0; o < h->nout; o++)
      outs[o] = c->stream ? scratch + slot_bytes * (size_t)(c->out_slot0 + o)
                          : c->obase[o] + t * (int64_t)c->osz[o];
    c->jit(len, outs, iptr, istr);
    if (c->stream)
      for (int o = 0; o < h->nout; o++)
        copy_out(c, c->obase[o] + t * (int64_t)c->osz[o], outs[o], (size_t)len * c->osz[o]);
    return;
  }
  const struct lc_fused_ins *ins = lc_fused_instrs(h);
  const void *vptr[h->ninstr > 0 ? h->ninstr : 1];
  for (int m = 0; m < h->ninstr; m++) {
    const struct lc_fused_ins *x = &ins[m];
    const void *a[LC_FUSED_MAXARG];
    int64_t as[LC_FUSED_MAXARG];
    for (int k = 0; k < x->nin; k++) {
      int r = x->arg[k];
      if (r < 0) {
        a[k] = iptr[-r - 1];
        as[k] = istr[-r - 1];
      } else {
        a[k] = vptr[r];
        as[k] = 1;
      }
    }
    void *out;
    if (x->out < 0)
      out = scratch + slot_bytes * (size_t)x->slot;
    else if (c->stream)
      out = scratch + slot_bytes * (size_t)(c->out_slot0 + x->out);
    else
      out = c->obase[x->out] + t * (int64_t)c->osz[x->out];
    const void *params = x->params_size ? (const char *)h + x->params_off : NULL;
    lc_prims[x->op]->ew(len, out, (mlx_dtype)x->dtype, a, as, (mlx_dtype)x->in_dt, params);
    if (x->out >= 0 && c->stream)
      copy_out(c, c->obase[x->out] + t * (int64_t)c->osz[x->out], out,
               (size_t)len * c->osz[x->out]);
    vptr[m] = out;
  }
}

/* One tile of flat mode: elements [t, t + len) of a stream ending at end. */
static void flat_tile(const struct fctx *c, char *scratch, size_t slot_bytes, int64_t T, int64_t t,
                      int64_t end) {
  int64_t len = end - t < T ? end - t : T;
  const void *iptr[c->nin > 0 ? c->nin : 1];
  int64_t istr[c->nin > 0 ? c->nin : 1];
  for (int k = 0; k < c->nin; k++) {
    const struct fin *f = &c->in[k];
    if (f->affine) {
      iptr[k] = f->base + t * f->stride * (int64_t)f->isz;
      istr[k] = f->stride;
    } else {
      char *dst = scratch + slot_bytes * (size_t)f->gslot;
      gather(c, f, t, len, dst);
      iptr[k] = dst;
      istr[k] = 1;
    }
  }
  int64_t ahead = t + LC_FUSED_PREFETCH * T;
  if (ahead + T <= end && !c->jit) /* native kernels prefetch for themselves */
    for (int k = 0; k < c->nin; k++)
      if (c->in[k].affine && c->in[k].stride == 1)
        prefetch_run(c->in[k].base + ahead * (int64_t)c->in[k].isz, T * (int64_t)c->in[k].isz);
  run_tile(c, scratch, slot_bytes, t, len, iptr, istr);
}

/* Flat mode: tiles of the flat index space; inputs that are not one
 * strided run over the whole space are gathered. A chunk is walked as two
 * streams, [lo, mid) and [mid, hi), taking tiles from each in turn: memory
 * serves two distant places better than one (+5% on DRAM-bound chains,
 * the way glibc's large memcpy interleaves pages). */
static void run_flat(void *arg, int64_t lo, int64_t hi) {
  const struct fctx *c = arg;
  int64_t T = hi - lo < c->tile ? hi - lo : c->tile;
  size_t slot_bytes = (size_t)T * SLOT_BYTES;
  char *scratch = c->nslots ? malloc(slot_bytes * (size_t)c->nslots) : NULL;
  if (c->nslots && !scratch) return; /* the caller probed this allocation */
  int64_t mid = lo + (hi - lo) / 2 / T * T;
  if (mid == lo) mid = hi; /* one stream */
  for (int64_t t = 0; lo + t < mid || mid + t < hi; t += T) {
    if (lo + t < mid) flat_tile(c, scratch, slot_bytes, T, lo + t, mid);
    if (mid + t < hi) flat_tile(c, scratch, slot_bytes, T, mid + t, hi);
  }
  chunk_done(c);
  free(scratch);
}

/* Element offset of unit u's first element in input k (row mode). */
static int64_t unit_offset(const struct fctx *c, int k, int64_t u, int64_t tpr, int64_t T) {
  int nd = c->mnd;
  const int64_t *st = c->mst + (size_t)k * (size_t)nd;
  int64_t off = (u % tpr) * T * st[nd - 1], rem = u / tpr;
  for (int d = nd - 2; d >= 0; d--) {
    off += (rem % c->mdims[d]) * st[d];
    rem /= c->mdims[d];
  }
  return off;
}

/* One unit of row mode, of a stream of units ending at end. */
static void row_unit(const struct fctx *c, char *scratch, size_t slot_bytes, int64_t u,
                     int64_t end) {
  int64_t L = c->mdims[c->mnd - 1], T = c->row_tile, tpr = (L + T - 1) / T;
  int64_t row = u / tpr, col0 = (u % tpr) * T, len = L - col0 < T ? L - col0 : T;
  const void *iptr[c->nin > 0 ? c->nin : 1];
  int64_t istr[c->nin > 0 ? c->nin : 1];
  for (int k = 0; k < c->nin; k++) {
    iptr[k] = c->in[k].base + unit_offset(c, k, u, tpr, T) * (int64_t)c->in[k].isz;
    istr[k] = c->mst[(size_t)k * (size_t)c->mnd + (size_t)c->mnd - 1];
  }
  int64_t u2 = u + LC_FUSED_PREFETCH;
  if (u2 < end && !c->jit) { /* native kernels prefetch for themselves */
    int64_t col2 = (u2 % tpr) * T, len2 = L - col2 < T ? L - col2 : T;
    for (int k = 0; k < c->nin; k++)
      if (c->mst[(size_t)k * (size_t)c->mnd + (size_t)c->mnd - 1] == 1)
        prefetch_run(c->in[k].base + unit_offset(c, k, u2, tpr, T) * (int64_t)c->in[k].isz,
                     len2 * (int64_t)c->in[k].isz);
  }
  run_tile(c, scratch, slot_bytes, row * L + col0, len, iptr, istr);
}

/* Row mode (long inner rows after merging dimensions): work units are
 * tiles within one row, so every input is one strided run per tile;
 * walked as two interleaved streams like flat mode. */
static void run_rows(void *arg, int64_t lo, int64_t hi) {
  const struct fctx *c = arg;
  size_t slot_bytes = (size_t)c->row_tile * SLOT_BYTES;
  char *scratch = c->nslots ? malloc(slot_bytes * (size_t)c->nslots) : NULL;
  if (c->nslots && !scratch) return;
  int64_t mid = lo + (hi - lo) / 2;
  if (mid == lo) mid = hi;
  for (int64_t t = 0; lo + t < mid || mid + t < hi; t++) {
    if (lo + t < mid) row_unit(c, scratch, slot_bytes, lo + t, mid);
    if (mid + t < hi) row_unit(c, scratch, slot_bytes, mid + t, hi);
  }
  chunk_done(c);
  free(scratch);
}

/* Merges dimensions that are contiguous for every operand (inputs' broadcast
 * strides and the row-major output), dropping extent-1 dimensions. */
static void merge_dims(struct fctx *c, const int64_t *rs) {
  int nd = 0, nin = c->nin;
  for (int d = 0; d < c->ndim; d++) {
    if (c->shape[d] == 1) continue;
    bool merge = nd > 0 && c->mout[nd - 1] == rs[d] * c->shape[d];
    for (int k = 0; merge && k < nin; k++)
      if (c->in[k].st[d - 0] * c->shape[d] != c->mst[(size_t)k * (size_t)c->ndim + nd - 1])
        merge = false;
    if (merge) {
      c->mdims[nd - 1] *= c->shape[d];
      c->mout[nd - 1] = rs[d];
      for (int k = 0; k < nin; k++) c->mst[(size_t)k * (size_t)c->ndim + nd - 1] = c->in[k].st[d];
    } else {
      c->mdims[nd] = c->shape[d];
      c->mout[nd] = rs[d];
      for (int k = 0; k < nin; k++) c->mst[(size_t)k * (size_t)c->ndim + nd] = c->in[k].st[d];
      nd++;
    }
  }
  /* repack strides from row length ndim to nd */
  for (int k = 1; k < nin && nd != c->ndim; k++)
    memmove(c->mst + (size_t)k * (size_t)nd, c->mst + (size_t)k * (size_t)c->ndim,
            sizeof(int64_t) * (size_t)nd);
  c->mnd = nd;
}

/* Whether scratch of nslots tiles of t elements can be had (so that a
 * failure is reported before the parallel loop, whose chunks cannot). */
static bool probe_scratch(int64_t t, int nslots) {
  void *p = malloc((size_t)t * SLOT_BYTES * (size_t)nslots);
  free(p);
  return p != NULL;
}

static int fused_eval(struct lc_node *n) {
  const struct lc_fused_hdr *h = n->params;
  if (h->rows) return lc_fused_eval_rows(n);
  struct fctx c = {.h = h, .ndim = h->ndim, .nin = n->nin, .nout = h->nout, .size = 1};
  if (h->ndim > 64 || h->nout > 64) return lc_error("fused kernel: too many dimensions or outputs");
  for (int d = 0; d < h->ndim; d++) {
    c.shape[d] = lc_fused_shape(h)[d];
    c.size *= c.shape[d];
  }
  const struct lc_fused_out *fo = lc_fused_outs(h);
  /* outputs: one output takes over an input's buffer when nobody else can
   * see it. Safe because each tile reads every input element before the
   * instruction that writes the output element at the same position (with
   * one output, its producer is the region's last instruction). */
  if (h->nout == 1 ? lc_prim_donate_or_alloc(n) : lc_node_alloc_data(n)) return 1;
  if (h->nout == 1) {
    c.obase[0] = n->buf->data;
    c.osz[0] = lc_dtype_size(n->dtype);
  } else {
    int64_t nbytes[64], offs[64];
    for (int k = 0; k < h->nout; k++) {
      c.osz[k] = lc_dtype_size((mlx_dtype)fo[k].dtype);
      nbytes[k] = c.size * (int64_t)c.osz[k];
    }
    lc_tuple_layout(h->nout, nbytes, offs);
    for (int k = 0; k < h->nout; k++) c.obase[k] = (char *)n->buf->data + offs[k];
  }
  if (c.size == 0) return 0;
  int64_t out_bytes = 0;
  for (int k = 0; k < h->nout; k++) out_bytes += c.size * (int64_t)c.osz[k];
  c.stream = lc_fused_want_stream(out_bytes);
  /* inputs */
  struct fin fins[c.nin > 0 ? c.nin : 1];
  int64_t stmem[(c.nin > 0 ? c.nin : 1) * (c.ndim > 0 ? c.ndim : 1)];
  int64_t rs[c.ndim > 0 ? c.ndim : 1];
  lc_shape_strides(c.ndim, c.shape, rs);
  c.nslots = h->nslot;
  for (int k = 0; k < c.nin; k++) {
    const struct lc_node *x = n->in[k];
    struct fin *f = &fins[k];
    f->isz = lc_dtype_size(x->dtype);
    f->base = (const char *)lc_node_data(x);
    f->st = stmem + (size_t)k * (size_t)(c.ndim > 0 ? c.ndim : 1);
    lc_node_broadcast_strides(x, c.ndim, f->st);
    int last = -1;
    for (int d = 0; d < c.ndim; d++)
      if (c.shape[d] > 1) last = d;
    f->stride = last >= 0 ? f->st[last] : 0;
    f->affine = true;
    for (int d = 0; d < c.ndim; d++)
      if (c.shape[d] > 1 && f->st[d] != f->stride * rs[d]) f->affine = false;
    f->gslot = f->affine ? -1 : c.nslots++;
  }
  c.in = fins;
  int64_t jit_min = lc_jit_min_size();
  if (jit_min >= 0 && c.size >= jit_min && c.nin <= 32) {
    unsigned scalars = 0;
    for (int k = 0; k < c.nin; k++)
      if (n->in[k]->size == 1) scalars |= 1u << k;
    c.jit = lc_jit_get(h, scalars);
  }
  c.tile = c.jit ? LC_JIT_TILE : LC_FUSED_TILE;
  int64_t mst[(c.nin > 0 ? c.nin : 1) * (c.ndim > 0 ? c.ndim : 1)];
  c.mst = mst;
  merge_dims(&c, rs);
  bool rows = c.mnd >= 1 && c.mdims[c.mnd - 1] >= LC_FUSED_ROW_MIN;
  bool gathers = c.nslots > h->nslot;
  if (rows && gathers) {
    int64_t L = c.mdims[c.mnd - 1];
    c.nslots = h->nslot;
    c.out_slot0 = c.nslots;
    if (c.stream) c.nslots += h->nout;
    c.row_tile = L < c.tile ? L : c.tile;
    int64_t units = c.size / L * ((L + c.row_tile - 1) / c.row_tile);
    if (c.nslots && !probe_scratch(c.row_tile, c.nslots)) return lc_error("out of memory");
    int64_t min_units = LC_PARALLEL_MIN / c.row_tile;
    lc_parallel_for(units, min_units > 0 ? min_units : 1, run_rows, &c);
    return 0;
  }
  c.out_slot0 = c.nslots;
  if (c.stream) c.nslots += h->nout;
  int64_t probe_t = c.size < c.tile ? c.size : c.tile;
  if (c.nslots && !probe_scratch(probe_t, c.nslots)) return lc_error("out of memory");
  lc_parallel_for(c.size, LC_PARALLEL_MIN, run_flat, &c);
  return 0;
}

static int fused_describe(const struct lc_node *n, char *buf, size_t len) {
  const struct lc_fused_hdr *h = n->params;
  const struct lc_fused_ins *fi = lc_fused_instrs(h);
  int p = snprintf(buf, len, "%d ops:", h->ninstr);
  for (int m = 0; m < h->ninstr && p > 0 && (size_t)p < len; m++)
    p += snprintf(buf + p, len - (size_t)p, " %s", lc_prims[fi[m].op]->name);
  return 0;
}

const struct lc_prim lc_prim_fused = {.name = "fused",
                                      .eval_cpu = fused_eval,
                                      .eval_cuda = LC_CUDA(lc_cuda_eval_fused),
                                      .describe = fused_describe,
                                      .vjp = lc_fused_vjp,
                                      .jvp = lc_fused_jvp,
                                      .vmap = lc_fused_vmap};

int lc_fused_build(const struct lc_fused_hdr *blob, int ndim, const int *shape,
                   struct lc_node *const *in, struct lc_node **outs) {
  if (ndim != blob->ndim) return lc_error("internal: fused region rank changed");
  struct lc_fused_hdr *h = malloc((size_t)blob->size);
  if (!h) return lc_error("out of memory");
  memcpy(h, blob, (size_t)blob->size);
  int32_t *sh = (int32_t *)((char *)h + h->shape_off);
  for (int d = 0; d < ndim; d++) sh[d] = shape[d];
  const struct lc_fused_out *fo = lc_fused_outs(h);
  int rc = 0;
  int kshape[3][ndim > 0 ? ndim : 1], knd[3]; /* the shape of each kind */
  for (int k = 0; k < 3; k++) knd[k] = lc_fused_kind_shape(k, ndim, shape, kshape[k]);
  if (h->nout == 1) {
    int k = fo[0].kind;
    outs[0] = lc_node_new_op(LC_OP_FUSED, (mlx_dtype)fo[0].dtype, knd[k], kshape[k], h->nin, in,
                             h, (size_t)h->size);
    rc = outs[0] == NULL;
  } else {
    mlx_dtype dts[h->nout];
    int nds[h->nout];
    const int *shs[h->nout];
    for (int k = 0; k < h->nout; k++) {
      dts[k] = (mlx_dtype)fo[k].dtype;
      nds[k] = knd[fo[k].kind];
      shs[k] = kshape[fo[k].kind];
    }
    rc = lc_tuple_new(LC_OP_FUSED, h->nin, in, h, (size_t)h->size, h->nout, dts, nds, shs, outs);
  }
  free(h);
  return rc;
}
