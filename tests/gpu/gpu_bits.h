/* Shared by the GPU tests that look past values: where a result's data
 * lives, its raw bytes, and a bitwise GPU-vs-CPU comparison. Needs the
 * internal node header (a result's buffer and its validity bits). */
#ifndef LACE_TEST_GPU_BITS_H
#define LACE_TEST_GPU_BITS_H

#include <stdint.h>
#include <string.h>

#include "core/node.h"
#include "gpu_util.h"

/* x's values in a buffer that lives only on the GPU (a GPU copy). */
static mlx_array on_gpu(mlx_array x) {
  mlx_array r = mlx_array_new();
  CHECK_OK(mlx_copy(&r, x, gpu_stream));
  CHECK_OK(mlx_array_eval(r));
  return r;
}

/* Whether a's data was made on the GPU (no host copy yet). */
static bool made_on_gpu(mlx_array a) {
  const struct lc_node *n = a.ctx;
  return n && n->buf && !(atomic_load(&n->buf->valid) & LC_BUF_HOST);
}

/* a's bytes, row-major (a CPU copy; malloc'd, NULL on failure). */
static uint8_t *bytes_of(mlx_array a, size_t *nbytes) {
  mlx_array f = mlx_array_new(), c = mlx_array_new(), v = mlx_array_new();
  uint8_t *out = NULL;
  *nbytes = mlx_array_size(a) * mlx_array_itemsize(a);
  int flat = mlx_array_ndim(a) == 0 ? mlx_reshape(&f, a, (int[]){1}, 1, test_stream())
                                    : mlx_flatten(&f, a, 0, -1, test_stream());
  if (!flat && !mlx_contiguous(&c, f, false, test_stream()) &&
      !mlx_view(&v, c, MLX_UINT8, test_stream()) && !mlx_array_eval(v)) {
    out = malloc(*nbytes ? *nbytes : 1);
    if (out && *nbytes) memcpy(out, mlx_array_data_uint8(v), *nbytes);
  }
  mlx_array_free(f);
  mlx_array_free(c);
  mlx_array_free(v);
  return out;
}

/* Whether the item at p (dtype t) is a NaN. */
static bool nan_bits(mlx_dtype t, const uint8_t *p) {
  uint16_t h;
  uint32_t w;
  uint64_t q;
  switch (t) {
  case MLX_FLOAT16: memcpy(&h, p, 2); return (h & 0x7fff) > 0x7c00;
  case MLX_BFLOAT16: memcpy(&h, p, 2); return (h & 0x7fff) > 0x7f80;
  case MLX_FLOAT32: memcpy(&w, p, 4); return (w & 0x7fffffffu) > 0x7f800000u;
  case MLX_FLOAT64: memcpy(&q, p, 8); return (q & ~(1ull << 63)) > 0x7ff0000000000000ull;
  default: return false;
  }
}

static bool same_shape(mlx_array a, mlx_array b) {
  if (mlx_array_ndim(a) != mlx_array_ndim(b) || mlx_array_dtype(a) != mlx_array_dtype(b))
    return false;
  for (size_t d = 0; d < mlx_array_ndim(a); d++)
    if (mlx_array_shape(a)[d] != mlx_array_shape(b)[d]) return false;
  return true;
}

/* got (GPU) and want (CPU): same shape, dtype and bits; with any_nan, a
 * NaN matches any NaN. A mismatch reports the first differing element's
 * bits and (real dtypes) values. */
#define GPU_SAME_BITS(got, want, any_nan, what) \
  gpu_same_bits(__FILE__, __LINE__, (got), (want), (any_nan), (what))
static void gpu_same_bits(const char *file, int line, mlx_array got, mlx_array want,
                          bool any_nan, const char *what) {
  test_checks++;
  if (!same_shape(got, want)) {
    test_failures++;
    fprintf(stderr,
            "%s:%d: %s: shape/dtype differ (ndim %d vs %d, size %zu vs %zu, dtype %d vs %d)\n",
            file, line, what, (int)mlx_array_ndim(got), (int)mlx_array_ndim(want),
            mlx_array_size(got), mlx_array_size(want), (int)mlx_array_dtype(got),
            (int)mlx_array_dtype(want));
    return;
  }
  size_t ng = 0, nw = 0, isz = mlx_array_itemsize(got), bad = 0, first = 0;
  mlx_dtype t = mlx_array_dtype(got);
  uint8_t *g = bytes_of(got, &ng), *w = bytes_of(want, &nw);
  for (size_t i = 0; g && w && i < ng / isz; i++) {
    const uint8_t *a = g + i * isz, *b = w + i * isz;
    if (memcmp(a, b, isz) && !(any_nan && nan_bits(t, a) && nan_bits(t, b)) && bad++ == 0)
      first = i;
  }
  if (!g || !w) {
    test_failures++;
    fprintf(stderr, "%s:%d: %s: could not read values (%s)\n", file, line, what, test_last_error);
  } else if (bad) {
    test_failures++;
    fprintf(stderr, "%s:%d: %s: %zu of %zu elements differ, first at flat index %zu: gpu 0x",
            file, line, what, bad, ng / isz, first);
    for (size_t k = isz; k-- > 0;) fprintf(stderr, "%02x", g[first * isz + k]);
    fprintf(stderr, " cpu 0x");
    for (size_t k = isz; k-- > 0;) fprintf(stderr, "%02x", w[first * isz + k]);
    if (t != MLX_COMPLEX64) {
      double *gv = test_values(got), *wv = test_values(want);
      if (gv && wv) fprintf(stderr, " (%.9g vs %.9g)", gv[first], wv[first]);
      free(gv);
      free(wv);
    }
    fprintf(stderr, "\n");
  }
  free(g);
  free(w);
}

/* How many elements of a and b (same shape, a floating dtype) differ in
 * their bits, where both being NaN counts as agreeing; counted on the GPU,
 * for arrays too large to copy back. A failed count is a failed check and
 * answers 1, so it can never cancel a real mismatch in a sum. */
static long gpu_count_differing(mlx_array a, mlx_array b) {
  size_t isz = mlx_array_itemsize(a);
  mlx_dtype ut = isz == 2 ? MLX_UINT16 : isz == 4 ? MLX_UINT32 : MLX_UINT64;
  mlx_stream s = gpu_stream;
  mlx_array ua = mlx_array_new(), ub = mlx_array_new(), eq = mlx_array_new(), na = mlx_array_new(),
            nb = mlx_array_new(), nn = mlx_array_new(), ok = mlx_array_new(), bad = mlx_array_new(),
            sum = mlx_array_new(), cnt = mlx_array_new();
  int64_t c = -1;
  /* sum the booleans, then widen the one total (not one int64 per element) */
  if (!mlx_view(&ua, a, ut, s) && !mlx_view(&ub, b, ut, s) && !mlx_equal(&eq, ua, ub, s) &&
      !mlx_isnan(&na, a, s) && !mlx_isnan(&nb, b, s) && !mlx_logical_and(&nn, na, nb, s) &&
      !mlx_logical_or(&ok, eq, nn, s) && !mlx_logical_not(&bad, ok, s) &&
      !mlx_sum(&sum, bad, false, s) && !mlx_astype(&cnt, sum, MLX_INT64, s) &&
      !mlx_array_eval(cnt))
    mlx_array_item_int64(&c, cnt);
  CHECK_MSG(c >= 0, "could not count differing elements (%s)", test_last_error);
  mlx_array tmp[] = {ua, ub, eq, na, nb, nn, ok, bad, sum, cnt};
  for (size_t k = 0; k < sizeof tmp / sizeof *tmp; k++) mlx_array_free(tmp[k]);
  return c >= 0 ? (long)c : 1;
}

#endif
