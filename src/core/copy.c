/* Strided copies (core/copy.h). Copies whose source is
 * read with a large stride along the destination's contiguous axis (a
 * transpose) go through cache-sized 2-d tiles; everything else runs along
 * the innermost axis via lc_iter_runs. Both paths use the thread pool for
 * large copies. */
#include <stdlib.h>
#include <string.h>

#include "core/iter.h"
#include "core/parallel.h"
#include "core/copy.h"
#include "core/node.h"

struct copy_ctx {
  char *dst;
  const char *src;
  size_t isz;
};

static void copy_run(void *arg, int64_t n, const int64_t *offs, const int64_t *inner) {
  struct copy_ctx *c = arg;
  size_t isz = c->isz;
  char *d = c->dst + offs[0] * (int64_t)isz;
  const char *s = c->src + offs[1] * (int64_t)isz;
  int64_t ds = inner[0] * (int64_t)isz, ss = inner[1] * (int64_t)isz;
  if (inner[0] == 1 && inner[1] == 1) {
    memcpy(d, s, (size_t)n * isz);
    return;
  }
  switch (isz) {
  case 1:
    for (int64_t i = 0; i < n; i++) d[i * ds] = s[i * ss];
    break;
  case 2:
    for (int64_t i = 0; i < n; i++) memcpy(d + i * ds, s + i * ss, 2);
    break;
  case 4:
    for (int64_t i = 0; i < n; i++) memcpy(d + i * ds, s + i * ss, 4);
    break;
  case 8:
    for (int64_t i = 0; i < n; i++) memcpy(d + i * ds, s + i * ss, 8);
    break;
  default:
    for (int64_t i = 0; i < n; i++) memcpy(d + i * ds, s + i * ss, isz);
    break;
  }
}

/* ---- tiled path ----
 * Axes L (the destination's innermost) and K (the source's innermost) are
 * copied in TILE x TILE blocks; the other axes are walked per block. */

#define TILE 32
#define MAX_TILED_NDIM 16

struct tile_ctx {
  int ndim, k, l;
  const int *shape;
  const int64_t *ds, *ss;
  int64_t doff, soff;
  char *dst;
  const char *src;
  size_t isz;
  int64_t kt, lt; /* tiles along K and L */
};

static void tile_chunk(void *arg, int64_t lo, int64_t hi) {
  const struct tile_ctx *c = arg;
  size_t isz = c->isz;
  int64_t per_outer = c->kt * c->lt;
  for (int64_t job = lo; job < hi; job++) {
    int64_t outer = job / per_outer, t = job % per_outer;
    int64_t k0 = (t / c->lt) * TILE, l0 = (t % c->lt) * TILE;
    int64_t d = c->doff, s = c->soff, rem = outer;
    for (int ax = c->ndim - 1; ax >= 0; ax--) { /* the outer index, row-major */
      if (ax == c->k || ax == c->l) continue;
      int64_t i = rem % c->shape[ax];
      rem /= c->shape[ax];
      d += i * c->ds[ax];
      s += i * c->ss[ax];
    }
    int64_t k1 = k0 + TILE < c->shape[c->k] ? k0 + TILE : c->shape[c->k];
    int64_t l1 = l0 + TILE < c->shape[c->l] ? l0 + TILE : c->shape[c->l];
    int64_t dk = c->ds[c->k], dl = c->ds[c->l], sk = c->ss[c->k], sl = c->ss[c->l];
    for (int64_t l = l0; l < l1; l++) {
      char *dp = c->dst + (d + l * dl) * (int64_t)isz;
      const char *sp = c->src + (s + l * sl) * (int64_t)isz;
      switch (isz) {
#define LOOP(T)                                                                            \
  for (int64_t k = k0; k < k1; k++)                                                        \
    memcpy(dp + k * dk * (int64_t)sizeof(T), sp + k * sk * (int64_t)sizeof(T), sizeof(T)); \
  break;
      case 1: LOOP(uint8_t)
      case 2: LOOP(uint16_t)
      case 4: LOOP(uint32_t)
      case 8: LOOP(uint64_t)
#undef LOOP
      default:
        for (int64_t k = k0; k < k1; k++)
          memcpy(dp + k * dk * (int64_t)isz, sp + k * sk * (int64_t)isz, isz);
      }
    }
  }
}

static int64_t iabs64(int64_t v) { return v < 0 ? -v : v; }

/* Picks the tiled path: dst contiguous along L, src much closer to
 * contiguous along some other axis K. */
static bool try_tiled(int ndim, const int *shape, size_t isz, void *dst, const int64_t *ds,
                      int64_t doff, const void *src, const int64_t *ss, int64_t soff) {
  if (ndim < 2 || ndim > MAX_TILED_NDIM) return false;
  int l = ndim - 1;
  if (shape[l] < TILE / 2 || ds[l] != 1 || iabs64(ss[l]) <= 1) return false;
  int k = -1;
  for (int ax = 0; ax < l; ax++)
    if (shape[ax] >= TILE / 2 && (k < 0 || iabs64(ss[ax]) < iabs64(ss[k]))) k = ax;
  if (k < 0 || iabs64(ss[k]) * 4 > iabs64(ss[l])) return false;
  struct tile_ctx c = {.ndim = ndim,
                       .k = k,
                       .l = l,
                       .shape = shape,
                       .ds = ds,
                       .ss = ss,
                       .doff = doff,
                       .soff = soff,
                       .dst = dst,
                       .src = src,
                       .isz = isz,
                       .kt = (shape[k] + TILE - 1) / TILE,
                       .lt = (shape[l] + TILE - 1) / TILE};
  int64_t outer = 1;
  for (int ax = 0; ax < ndim; ax++)
    if (ax != k && ax != l) outer *= shape[ax];
  lc_parallel_for(outer * c.kt * c.lt, LC_PARALLEL_MIN / (TILE * TILE) + 1, tile_chunk, &c);
  return true;
}

int lc_copy_strided(int ndim, const int *shape, size_t isz, void *dst, const int64_t *dst_strides,
                    int64_t dst_off, const void *src, const int64_t *src_strides, int64_t src_off) {
  if (lc_shape_size(ndim, shape) == 0) return 0;
  if (try_tiled(ndim, shape, isz, dst, dst_strides, dst_off, src, src_strides, src_off)) return 0;
  const int64_t *strides[2] = {dst_strides, src_strides};
  int64_t base[2] = {dst_off, src_off};
  struct copy_ctx c = {dst, src, isz};
  return lc_iter_runs(ndim, shape, 2, strides, base, copy_run, &c, true);
}
