// The convolution's im2col kernel (the contract is in gpu/cuda/conv.h):
// one thread per entry of the col matrices, grid-stride, int64 indexing.
// The position rule is ops/conv.c's (im2col there): output tap t of
// spatial axis i reads the input-dilated, padded input at
// t * stride + j * kdil - lo, j = k - 1 - kj with flip, else kj.
#include <cuda_runtime.h>

#include "gpu/cuda/conv.h"
#include "mlx/c/array.h"

namespace {

template <class T> __global__ void im2col(const struct lc_cu_im2col a, int64_t total) {
  const T *x = (const T *)a.x;
  T *col = (T *)a.col;
  int64_t ktaps = 1, osp = 1;
  for (int i = 0; i < a.nsp; i++) {
    ktaps *= a.k[i];
    osp *= a.out[i];
  }
  const int64_t K = ktaps * a.cg, per_group = a.rows * K;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    int64_t g = e / per_group, rem = e - g * per_group;
    int64_t r = rem / K, kk = rem - r * K;
    int64_t t = kk / a.cg, c = kk - t * a.cg;
    int64_t m = a.r0 + r, b = m / osp, orest = m - b * osp;
    int64_t off = b * a.xs[0] + (g * a.cg + c) * a.xs[a.nsp + 1];
    bool ok = true;
    // spatial axes from the last: the row-major decompositions of orest
    // (over out[]) and t (over k[])
    for (int i = a.nsp - 1; i >= 0 && ok; i--) {
      int64_t ot = orest % a.out[i], kj = t % a.k[i];
      orest /= a.out[i];
      t /= a.k[i];
      int64_t j = a.flip ? a.k[i] - 1 - kj : kj;
      int64_t q = ot * a.stride[i] + j * a.kdil[i] - a.lo[i];
      if (q < 0 || q % a.idil[i]) {
        ok = false;
        break;
      }
      q /= a.idil[i];
      if (q >= a.in[i]) ok = false;
      off += q * a.xs[i + 1];
    }
    col[e] = ok ? x[off] : T(0);
  }
}

} // namespace

extern "C" int lc_cu_im2col(const struct lc_cu_im2col *a, void *stream) {
  if (a->nsp < 1 || a->nsp > LC_CU_CONV_MAXSP || a->cg < 1 || a->groups < 1)
    return LC_CU_UNSUPPORTED;
  int64_t ktaps = 1;
  for (int i = 0; i < a->nsp; i++) {
    if (a->k[i] < 1 || a->out[i] < 1 || a->stride[i] < 1 || a->idil[i] < 1)
      return LC_CU_UNSUPPORTED;
    ktaps *= a->k[i];
  }
  int64_t total = (int64_t)a->groups * a->rows * ktaps * a->cg;
  if (total == 0) return 0;
  int64_t b = (total + 255) / 256;
  unsigned blocks = (unsigned)(b < 132 * 32 ? b : 132 * 32);
  cudaStream_t s = (cudaStream_t)stream;
  if (a->dt == MLX_FLOAT32)
    im2col<float><<<blocks, 256, 0, s>>>(*a, total);
  else if (a->dt == MLX_FLOAT64)
    im2col<double><<<blocks, 256, 0, s>>>(*a, total);
  else
    return LC_CU_UNSUPPORTED;
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : -(int)e;
}
