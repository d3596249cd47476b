/* The launchers of the fast-family kernels (gpu/cuda/fast.cu): rms_norm,
 * layer_norm, rope and scaled dot-product attention. Conventions of
 * kernels.h: plain C types, device pointers to element 0, work queued on
 * `stream`, answers 0, LC_CU_UNSUPPORTED (nothing queued) or a negative
 * cudaError_t. Semantics are those of the CPU kernels (ops/fast_*.c). */
#ifndef LC_GPU_CUDA_FAST_H
#define LC_GPU_CUDA_FAST_H

#include <stdint.h>

#include "gpu/cuda/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where row r of an input starts (elements from element 0): r * len when
 * nlead == 0 (row-major rows), else the row-major decomposition of r over
 * shape[0..nlead) with strides[0..nlead). */
struct lc_cu_rows {
  int nlead;
  int shape[LC_CU_MAX_DIMS];
  int64_t strides[LC_CU_MAX_DIMS];
};

/* rms_norm (layer == 0) or layer_norm over rows of length d into out
 * (row-major, rows x d): sums in double, the normalised value rounded to
 * dt through float, then the weight and bias applied in the compute type
 * (float; double for float64), rounding each step. w, b: NULL when absent,
 * else 1-d with element strides sw, sb. sx: x's stride along a row. */
struct lc_cu_norm {
  int dt, layer;
  int64_t rows, d;
  const void *x, *w, *b;
  void *out;
  int64_t sx, sw, sb;
  struct lc_cu_rows xr;
  float eps;
};
int lc_cu_norm(const struct lc_cu_norm *a, void *stream);

/* rope of x (rows of length D, T rows per sequence, B = x's extent 0)
 * into out (row-major): the first 2 * half features rotate, the rest are
 * copied. Row r is sequence index t = r % T of batch r / rows_per_batch;
 * its position is (offset[noff > 1 ? batch : 0] + t) * scale. offset:
 * noff integers of dtype off_dt, stride ostride. Frequencies: 1 / freqs[i]
 * (float32, stride fstride) when freqs, else base^(-i / half). */
struct lc_cu_rope {
  int dt;
  int64_t rows, T, D, rows_per_batch;
  int half, traditional, forward;
  const void *x;
  void *out;
  int64_t sx;
  struct lc_cu_rows xr;
  const void *off;
  int off_dt, noff;
  int64_t ostride;
  const float *freqs;
  int64_t fstride;
  float base, scale;
};
int lc_cu_rope(const struct lc_cu_rope *a, void *stream);

/* Attention of q (B, Hq, qL, D) over k (B, Hkv, kL, D), v (B, Hkv, kL, Dv)
 * (element strides qs, ks, vs; the last one 1) into out (B, Hq, qL, Dv)
 * row-major, all of float dtype dt. mask: NULL, or (B, Hq, qL, kL) with
 * strides ms, of bool (mask_bool) or dt (added to the scores). sinks:
 * NULL or Hq values of dt, stride ss. causal: key t is seen by row i iff
 * t <= i + kL - qL (a row that sees none scores every key `lowest`).
 * `work`: NULL, or a float scratch of lc_cu_sdpa_work_floats() elements. */
struct lc_cu_sdpa {
  int dt;
  int B, Hq, Hkv, qL, kL, D, Dv; /* D: q's and k's head dim; Dv: v's (the output's) */
  const void *q, *k, *v, *mask, *sinks;
  void *out;
  int64_t qs[4], ks[4], vs[4], ms[4], ss;
  int mask_bool, causal;
  float scale, lowest;
  float *work;
};
/* Scratch the launcher needs for a (0: none); -1: unsupported shape. */
int64_t lc_cu_sdpa_work_floats(const struct lc_cu_sdpa *a);
int lc_cu_sdpa(const struct lc_cu_sdpa *a, void *stream);

#ifdef __cplusplus
}
#endif
#endif
