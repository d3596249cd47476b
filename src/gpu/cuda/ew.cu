// Elementwise primitives on the GPU: one templated kernel per (op, type),
// a grid-stride loop over the contiguous output, inputs read flat
// (contiguous or scalar) or through strides; flat ones by packs. Semantics are the CPU
// kernels' (ops/unary.c, ops/binary.c, ops/ternary.c, astype); float math
// is CUDA's libdevice, so results agree to rounding, not bit for bit.
#include <cuda_runtime.h>
#include <math.h>

#include "gpu/cuda/cu_types.cuh"
#include "gpu/cuda/pdl.cuh"
#include "gpu/cuda/ew_ops.cuh"
#include "gpu/cuda/kernels.h"
#include "gpu/cuda/ew_index.cuh"

enum lc_op_ids {
#define LC_PRIM(id, row) LC_OP_##id,
#include "ops/ops.def"
#undef LC_PRIM
};

namespace {

struct Ew {
  struct lc_cu_ew a;
};

__device__ __forceinline__ int64_t in_offset(const lc_cu_ew &a, int k, int64_t i) {
  return lc_ew_in_offset(a, k, i);
}

template <class TO, class TI, class Op>
__global__ void unary_kernel(lc_cu_ew a, Op op) {
  lc_pdl_begin();
  const TI *x = (const TI *)a.in[0];
  TO *o = (TO *)a.out;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < a.n;
       i += (int64_t)gridDim.x * blockDim.x)
    o[i] = lc_to<TO>::f(op(lc_ld(x[in_offset(a, 0, i)])));
}

template <class TO, class TI, class Op>
__global__ void binary_kernel(lc_cu_ew a, Op op) {
  lc_pdl_begin();
  const TI *x = (const TI *)a.in[0], *y = (const TI *)a.in[1];
  TO *o = (TO *)a.out;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < a.n;
       i += (int64_t)gridDim.x * blockDim.x)
    o[i] = lc_to<TO>::f(op(lc_ld(x[in_offset(a, 0, i)]), lc_ld(y[in_offset(a, 1, i)])));
}

template <class T>
__global__ void select_kernel(lc_cu_ew a) {
  lc_pdl_begin();
  const bool *c = (const bool *)a.in[0];
  const T *x = (const T *)a.in[1], *y = (const T *)a.in[2];
  T *o = (T *)a.out;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < a.n;
       i += (int64_t)gridDim.x * blockDim.x)
    o[i] = c[in_offset(a, 0, i)] ? x[in_offset(a, 1, i)] : y[in_offset(a, 2, i)];
}

// Flat operands (ndim == 0: every input contiguous or a scalar): V
// consecutive elements per thread through one 16-byte access per operand
// (enough bytes in flight to reach the memory's bandwidth), the tail of
// fewer than V elements by the threads past the last pack.
template <class T, int V> struct alignas(sizeof(T) * V) Pk { T e[V]; };

template <class T, int V> __device__ __forceinline__ Pk<T, V> load_pk(const T *p, bool flat, int64_t c) {
  Pk<T, V> r;
  if (flat) return ((const Pk<T, V> *)p)[c];
#pragma unroll
  for (int v = 0; v < V; v++) r.e[v] = p[0];
  return r;
}

template <class TO, class TI, class Op, int V>
__global__ void unary_vec_kernel(lc_cu_ew a, Op op) {
  lc_pdl_begin();
  const TI *x = (const TI *)a.in[0];
  TO *o = (TO *)a.out;
  const int64_t nv = a.n / V, c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (c < nv) {
    const Pk<TI, V> px = load_pk<TI, V>(x, a.flat[0], c);
    Pk<TO, V> po;
#pragma unroll
    for (int v = 0; v < V; v++) po.e[v] = lc_to<TO>::f(op(lc_ld(px.e[v])));
    ((Pk<TO, V> *)o)[c] = po;
  } else {
    const int64_t i = nv * V + (c - nv);
    if (i < a.n) o[i] = lc_to<TO>::f(op(lc_ld(x[a.flat[0] ? i : 0])));
  }
}

template <class TO, class TI, class Op, int V>
__global__ void binary_vec_kernel(lc_cu_ew a, Op op) {
  lc_pdl_begin();
  const TI *x = (const TI *)a.in[0], *y = (const TI *)a.in[1];
  TO *o = (TO *)a.out;
  const int64_t nv = a.n / V, c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (c < nv) {
    const Pk<TI, V> px = load_pk<TI, V>(x, a.flat[0], c), py = load_pk<TI, V>(y, a.flat[1], c);
    Pk<TO, V> po;
#pragma unroll
    for (int v = 0; v < V; v++) po.e[v] = lc_to<TO>::f(op(lc_ld(px.e[v]), lc_ld(py.e[v])));
    ((Pk<TO, V> *)o)[c] = po;
  } else {
    const int64_t i = nv * V + (c - nv);
    if (i < a.n)
      o[i] = lc_to<TO>::f(op(lc_ld(x[a.flat[0] ? i : 0]), lc_ld(y[a.flat[1] ? i : 0])));
  }
}

// Strided operands by packs (ndim >= 1, the innermost collapsed extent a
// multiple of V): one offset computation per pack of V consecutive output
// elements, in 32-bit arithmetic (I) when every index and offset fits.
// Within a pack input k steps by its inner stride: 1 and aligned (vk[k]:
// every outer stride a multiple of V, the base 16-byte aligned) is one
// 16-byte load, 0 one element, anything else V loads.
template <class I> struct StridedPacks {
  int nd;
  I inner_packs; // shape[nd - 1] / V
  I shape[LC_CU_MAX_DIMS];
  I st[LC_CU_MAX_IN][LC_CU_MAX_DIMS];
  bool vk[LC_CU_MAX_IN];
};

template <class I, int NIN>
__device__ __forceinline__ void pack_offsets(const StridedPacks<I> &g, I q, int V, I *off) {
  I j = q % g.inner_packs, r = q / g.inner_packs;
#pragma unroll
  for (int k = 0; k < NIN; k++) off[k] = j * (I)V * g.st[k][g.nd - 1];
  for (int d = g.nd - 2; d >= 0; d--) {
    I t = r / g.shape[d], x = r - t * g.shape[d];
#pragma unroll
    for (int k = 0; k < NIN; k++) off[k] += x * g.st[k][d];
    r = t;
  }
}

template <class T, int V, class I>
__device__ __forceinline__ Pk<T, V> load_strided(const T *p, I off, I inner, bool vk) {
  if (vk) return *(const Pk<T, V> *)(p + off);
  Pk<T, V> r;
  if (inner == 0) {
    T v = p[off];
#pragma unroll
    for (int e = 0; e < V; e++) r.e[e] = v;
  } else {
#pragma unroll
    for (int e = 0; e < V; e++) r.e[e] = p[off + (I)e * inner];
  }
  return r;
}

template <class TO, class TI, class Op, int V, class I>
__global__ void unary_strided_kernel(lc_cu_ew a, StridedPacks<I> g, I packs, Op op) {
  lc_pdl_begin();
  const TI *x = (const TI *)a.in[0];
  for (I q = blockIdx.x * (I)blockDim.x + threadIdx.x; q < packs; q += (I)gridDim.x * blockDim.x) {
    I off[1];
    pack_offsets<I, 1>(g, q, V, off);
    const Pk<TI, V> px = load_strided<TI, V, I>(x, off[0], g.st[0][g.nd - 1], g.vk[0]);
    Pk<TO, V> po;
#pragma unroll
    for (int v = 0; v < V; v++) po.e[v] = lc_to<TO>::f(op(lc_ld(px.e[v])));
    ((Pk<TO, V> *)a.out)[q] = po;
  }
}

template <class TO, class TI, class Op, int V, class I>
__global__ void binary_strided_kernel(lc_cu_ew a, StridedPacks<I> g, I packs, Op op) {
  lc_pdl_begin();
  const TI *x = (const TI *)a.in[0], *y = (const TI *)a.in[1];
  for (I q = blockIdx.x * (I)blockDim.x + threadIdx.x; q < packs; q += (I)gridDim.x * blockDim.x) {
    I off[2];
    pack_offsets<I, 2>(g, q, V, off);
    const Pk<TI, V> px = load_strided<TI, V, I>(x, off[0], g.st[0][g.nd - 1], g.vk[0]),
                    py = load_strided<TI, V, I>(y, off[1], g.st[1][g.nd - 1], g.vk[1]);
    Pk<TO, V> po;
#pragma unroll
    for (int v = 0; v < V; v++) po.e[v] = lc_to<TO>::f(op(lc_ld(px.e[v]), lc_ld(py.e[v])));
    ((Pk<TO, V> *)a.out)[q] = po;
  }
}

template <class T, int V, class I>
__global__ void select_strided_kernel(lc_cu_ew a, StridedPacks<I> g, I packs) {
  lc_pdl_begin();
  const bool *c = (const bool *)a.in[0];
  const T *x = (const T *)a.in[1], *y = (const T *)a.in[2];
  for (I q = blockIdx.x * (I)blockDim.x + threadIdx.x; q < packs; q += (I)gridDim.x * blockDim.x) {
    I off[3];
    pack_offsets<I, 3>(g, q, V, off);
    const Pk<bool, V> pc = load_strided<bool, V, I>(c, off[0], g.st[0][g.nd - 1], false);
    const Pk<T, V> px = load_strided<T, V, I>(x, off[1], g.st[1][g.nd - 1], g.vk[1]),
                   py = load_strided<T, V, I>(y, off[2], g.st[2][g.nd - 1], g.vk[2]);
    Pk<T, V> po;
#pragma unroll
    for (int v = 0; v < V; v++) po.e[v] = pc.e[v] ? px.e[v] : py.e[v];
    ((Pk<T, V> *)a.out)[q] = po;
  }
}

// Fills g for packs of V (in I) when they apply: ndim >= 1, the inner
// extent a multiple of V, the output aligned, and (32-bit I) every index
// and offset below 2^31. isz[k]: input k's element size.
template <class I, int V>
bool strided_packs_ok(const lc_cu_ew &a, const int *isz, size_t osz, StridedPacks<I> *g, I *packs) {
  if (a.ndim < 1 || a.shape[a.ndim - 1] % V || ((uintptr_t)a.out % (osz * V))) return false;
  const int64_t lim = sizeof(I) == 4 ? INT32_MAX : INT64_MAX;
  if (a.n > lim) return false;
  g->nd = a.ndim;
  g->inner_packs = (I)(a.shape[a.ndim - 1] / V);
  for (int d = 0; d < a.ndim; d++) g->shape[d] = (I)a.shape[d];
  for (int k = 0; k < a.nin; k++) {
    int64_t reach = 0;
    bool vk = a.strides[k][a.ndim - 1] == 1 && ((uintptr_t)a.in[k] % ((size_t)isz[k] * V)) == 0;
    for (int d = 0; d < a.ndim; d++) {
      int64_t s = a.strides[k][d];
      reach += (s < 0 ? -s : s) * (a.shape[d] - 1);
      g->st[k][d] = (I)s;
      if (d < a.ndim - 1) vk &= s % V == 0;
    }
    if (reach > lim / 2) return false;
    g->vk[k] = vk;
  }
  *packs = (I)(a.n / V);
  return true;
}

template <class I> unsigned pack_blocks(I packs) {
  int64_t b = ((int64_t)packs + 255) / 256;
  return (unsigned)(b < 132 * 32 ? (b > 0 ? b : 1) : 132 * 32);
}

// Calls launch(g, packs) with strided packs of V in 32-bit indices if
// they fit, else in 64-bit ones; false when packs do not apply.
template <int V, class F>
bool launch_strided(const lc_cu_ew &a, const int *isz, size_t osz, F &&launch) {
  StridedPacks<int> g32;
  int p32;
  if (strided_packs_ok<int, V>(a, isz, osz, &g32, &p32)) {
    launch(g32, p32);
    return true;
  }
  StridedPacks<int64_t> g64;
  int64_t p64;
  if (strided_packs_ok<int64_t, V>(a, isz, osz, &g64, &p64)) {
    launch(g64, p64);
    return true;
  }
  return false;
}

// Whether the flat kernels apply (V elements per pack of the widest type):
// flat operands, aligned pointers, enough elements; *blocks for them.
template <class TO, class TI, int V>
bool vec_ok(const lc_cu_ew &a, unsigned *blocks) {
  if (a.ndim != 0 || a.n < 256 * V || ((uintptr_t)a.out & (sizeof(TO) * V - 1))) return false;
  for (int k = 0; k < a.nin; k++)
    if (a.flat[k] && ((uintptr_t)a.in[k] & (sizeof(TI) * V - 1))) return false;
  int64_t threads = a.n / V + a.n % V, b = (threads + 255) / 256;
  if (b > 0x7fffffff) return false;
  *blocks = (unsigned)b;
  return true;
}
template <class TO, class TI> constexpr int vec_width() {
  return 16 / (sizeof(TO) > sizeof(TI) ? sizeof(TO) : sizeof(TI));
}

void grid_of(int64_t n, unsigned *blocks, unsigned *threads) {
  *threads = 256;
  int64_t b = (n + 255) / 256;
  *blocks = (unsigned)(b < 132 * 32 ? (b > 0 ? b : 1) : 132 * 32);
}

template <class TO, class TI, class Op>
int launch_unary(const lc_cu_ew &a, Op op, cudaStream_t s) {
  unsigned b, t;
  constexpr int V = vec_width<TO, TI>();
  if (vec_ok<TO, TI, V>(a, &b)) {
    lc_launch(unary_vec_kernel<TO, TI, Op, V>, dim3(b), dim3(256), 0, s, a, op);
    return 0;
  }
  const int isz[1] = {(int)sizeof(TI)};
  if (launch_strided<V>(a, isz, sizeof(TO), [&](auto g, auto packs) {
        using I = decltype(packs);
        lc_launch(unary_strided_kernel<TO, TI, Op, V, I>, dim3(pack_blocks(packs)), dim3(256), 0, s,
                  a, g, packs, op);
      }))
    return 0;
  grid_of(a.n, &b, &t);
  lc_launch(unary_kernel<TO, TI, Op>, dim3(b), dim3(t), 0, s, a, op);
  return 0;
}
template <class TO, class TI, class Op>
int launch_binary(const lc_cu_ew &a, Op op, cudaStream_t s) {
  unsigned b, t;
  constexpr int V = vec_width<TO, TI>();
  if (vec_ok<TO, TI, V>(a, &b)) {
    lc_launch(binary_vec_kernel<TO, TI, Op, V>, dim3(b), dim3(256), 0, s, a, op);
    return 0;
  }
  const int isz[2] = {(int)sizeof(TI), (int)sizeof(TI)};
  if (launch_strided<V>(a, isz, sizeof(TO), [&](auto g, auto packs) {
        using I = decltype(packs);
        lc_launch(binary_strided_kernel<TO, TI, Op, V, I>, dim3(pack_blocks(packs)), dim3(256), 0,
                  s, a, g, packs, op);
      }))
    return 0;
  grid_of(a.n, &b, &t);
  lc_launch(binary_kernel<TO, TI, Op>, dim3(b), dim3(t), 0, s, a, op);
  return 0;
}

// A unary op over float types (out = in).
template <class Op> int un_float(const lc_cu_ew &a, cudaStream_t s, Op op = Op()) {
  int rc = LC_CU_UNSUPPORTED;
  lc_dispatch_float(a.in_dt, [&](auto *p) {
    using T = std::remove_pointer_t<decltype(p)>;
    rc = launch_unary<T, T>(a, op, s);
  });
  return rc;
}
// A unary op between a float type and the fixed type F: from in_dt's to
// F (fixed_out), else from F to out_dt's.
template <class F, bool fixed_out, class Op>
int un_float_fixed(const lc_cu_ew &a, cudaStream_t s, Op op) {
  int rc = LC_CU_UNSUPPORTED;
  lc_dispatch_float(fixed_out ? a.in_dt : a.out_dt, [&](auto *p) {
    using T = std::remove_pointer_t<decltype(p)>;
    if constexpr (fixed_out) rc = launch_unary<F, T>(a, op, s);
    else rc = launch_unary<T, F>(a, op, s);
  });
  return rc;
}
// A unary op over every real type (out = in).
template <class Op> int un_real(const lc_cu_ew &a, cudaStream_t s, bool ints) {
  int rc = LC_CU_UNSUPPORTED;
  auto f = [&](auto *p) {
    using T = std::remove_pointer_t<decltype(p)>;
    if constexpr (!std::is_same<T, bool>::value) rc = launch_unary<T, T>(a, Op(), s);
  };
  if (!lc_dispatch_float(a.in_dt, f) && ints) lc_dispatch_int(a.in_dt, f);
  return rc;
}
template <class Op> int bin_float(const lc_cu_ew &a, cudaStream_t s) {
  int rc = LC_CU_UNSUPPORTED;
  lc_dispatch_float(a.in_dt, [&](auto *p) {
    using T = std::remove_pointer_t<decltype(p)>;
    rc = launch_binary<T, T>(a, Op(), s);
  });
  return rc;
}
template <class Op> int bin_int(const lc_cu_ew &a, cudaStream_t s) {
  int rc = LC_CU_UNSUPPORTED;
  lc_dispatch_int(a.in_dt, [&](auto *p) {
    using T = std::remove_pointer_t<decltype(p)>;
    rc = launch_binary<T, T>(a, Op(), s);
  });
  return rc;
}
// out = in type over every real type, bool included (for + and *: or/and)
template <class Op> int bin_real(const lc_cu_ew &a, cudaStream_t s, bool with_bool) {
  int rc = LC_CU_UNSUPPORTED;
  lc_dispatch_real(a.in_dt, [&](auto *p) {
    using T = std::remove_pointer_t<decltype(p)>;
    if (!std::is_same<T, bool>::value || with_bool) rc = launch_binary<T, T>(a, Op(), s);
  });
  return rc;
}
// bool = op(x, y) over every real type; op may carry parameters.
template <class Op> int bin_pred_with(const lc_cu_ew &a, cudaStream_t s, Op op) {
  int rc = LC_CU_UNSUPPORTED;
  lc_dispatch_real(a.in_dt, [&](auto *p) {
    using T = std::remove_pointer_t<decltype(p)>;
    rc = launch_binary<bool, T>(a, op, s);
  });
  return rc;
}
template <class Op> int bin_pred(const lc_cu_ew &a, cudaStream_t s) {
  return bin_pred_with(a, s, Op());
}

int astype(const lc_cu_ew &a, cudaStream_t s) {
  int rc = LC_CU_UNSUPPORTED;
  lc_dispatch_real(a.in_dt, [&](auto *pi) {
    using TI = std::remove_pointer_t<decltype(pi)>;
    lc_dispatch_real(a.out_dt, [&](auto *po) {
      using TO = std::remove_pointer_t<decltype(po)>;
      rc = launch_unary<TO, TI>(a, Copy(), s);
    });
  });
  return rc;
}

int select(const lc_cu_ew &a, cudaStream_t s) {
  int rc = LC_CU_UNSUPPORTED;
  lc_dispatch_real(a.in_dt, [&](auto *p) {
    using T = std::remove_pointer_t<decltype(p)>;
    constexpr int V = 16 / sizeof(T);
    const int isz[3] = {1, (int)sizeof(T), (int)sizeof(T)};
    rc = 0;
    if (launch_strided<V>(a, isz, sizeof(T), [&](auto g, auto packs) {
          using I = decltype(packs);
          lc_launch(select_strided_kernel<T, V, I>, dim3(pack_blocks(packs)), dim3(256), 0, s, a, g,
                    packs);
        }))
      return;
    unsigned b, t;
    grid_of(a.n, &b, &t);
    lc_launch(select_kernel<T>, dim3(b), dim3(t), 0, s, a);
  });
  return rc;
}

int dispatch(const lc_cu_ew &a, cudaStream_t s) {
  bool is_float = a.in_dt == MLX_FLOAT16 || a.in_dt == MLX_FLOAT32 || a.in_dt == MLX_FLOAT64 ||
                  a.in_dt == MLX_BFLOAT16;
  switch (a.op) {
    case LC_OP_ASTYPE: return astype(a, s);
    case LC_OP_SELECT: return select(a, s);
    case LC_OP_EW_COPY: return un_real<Copy>(a, s, true);
    case LC_OP_ABS: return un_real<Abs>(a, s, true);
    case LC_OP_NEGATIVE: return un_real<Neg>(a, s, true);
    case LC_OP_SQUARE: return un_real<Square>(a, s, true);
    case LC_OP_SIGN: return un_real<Sign>(a, s, true);
    case LC_OP_SQRT: return un_float<Sqrt>(a, s);
    case LC_OP_RSQRT: return un_float<Rsqrt>(a, s);
    case LC_OP_EXP: /* rounded to 16 bits: ew_ops.cuh's Exp16, as in fused kernels */
      return a.in_dt == MLX_FLOAT16 || a.in_dt == MLX_BFLOAT16 ? un_float<Exp16>(a, s)
                                                                : un_float<Exp>(a, s);
    case LC_OP_EXPM1: return un_float<Expm1>(a, s);
    case LC_OP_LOG: return un_float<Log>(a, s);
    case LC_OP_LOG1P: return un_float<Log1p>(a, s);
    case LC_OP_LOG2: return un_float<Log2>(a, s);
    case LC_OP_LOG10: return un_float<Log10>(a, s);
    case LC_OP_SIN: return un_float<Sin>(a, s);
    case LC_OP_COS: return un_float<Cos>(a, s);
    case LC_OP_TAN: return un_float<Tan>(a, s);
    case LC_OP_ARCSIN: return un_float<Asin>(a, s);
    case LC_OP_ARCCOS: return un_float<Acos>(a, s);
    case LC_OP_ARCTAN: return un_float<Atan>(a, s);
    case LC_OP_SINH: return un_float<Sinh>(a, s);
    case LC_OP_COSH: return un_float<Cosh>(a, s);
    case LC_OP_TANH: return un_float<Tanh>(a, s);
    case LC_OP_ARCSINH: return un_float<Asinh>(a, s);
    case LC_OP_ARCCOSH: return un_float<Acosh>(a, s);
    case LC_OP_ARCTANH: return un_float<Atanh>(a, s);
    case LC_OP_SIGMOID: return un_float<Sigmoid>(a, s);
    case LC_OP_ERF: /* rounded to bfloat16: ew_ops.cuh's ErfBf, as in fused kernels */
      return a.in_dt == MLX_BFLOAT16 ? un_float<ErfBf>(a, s) : un_float<Erf>(a, s);
    case LC_OP_ERFINV: return un_float<Erfinv>(a, s);
    case LC_OP_FLOOR: return is_float ? un_float<Floor>(a, s) : LC_CU_UNSUPPORTED;
    case LC_OP_CEIL: return is_float ? un_float<Ceil>(a, s) : LC_CU_UNSUPPORTED;
    case LC_OP_ROUND: return is_float ? un_float<Round>(a, s) : LC_CU_UNSUPPORTED;
    case LC_OP_NAN_TO_NUM:
      return un_float(a, s, NanToNum{a.param[0], a.param[1], a.param[2]});
    case LC_OP_TO_FP8:
      if (a.out_dt != MLX_UINT8) return LC_CU_UNSUPPORTED;
      return un_float_fixed<uint8_t, true>(a, s, ToFp8());
    case LC_OP_FROM_FP8:
      if (a.in_dt != MLX_UINT8) return LC_CU_UNSUPPORTED;
      return un_float_fixed<uint8_t, false>(a, s, FromFp8());
    case LC_OP_LOGICAL_NOT:
      if (a.in_dt != MLX_BOOL) return LC_CU_UNSUPPORTED;
      return launch_unary<bool, bool>(a, LogicalNot(), s);
    case LC_OP_BITWISE_INVERT: {
      int rc = LC_CU_UNSUPPORTED;
      lc_dispatch_int(a.in_dt, [&](auto *p) {
        using T = std::remove_pointer_t<decltype(p)>;
        rc = launch_unary<T, T>(a, BitNot(), s);
      });
      return rc;
    }
    case LC_OP_ADD: return bin_real<Add>(a, s, true);
    case LC_OP_SUBTRACT: return bin_real<Sub>(a, s, false);
    case LC_OP_MULTIPLY: return bin_real<Mul>(a, s, true);
    case LC_OP_DIVIDE: return bin_float<Div>(a, s);
    case LC_OP_FLOOR_DIVIDE: return bin_int<FloorDivI>(a, s);
    case LC_OP_REMAINDER: return is_float ? bin_float<RemF>(a, s) : bin_int<RemI>(a, s);
    case LC_OP_POWER: return is_float ? bin_float<PowF>(a, s) : bin_int<PowI>(a, s);
    case LC_OP_MAXIMUM: return bin_real<Max>(a, s, true);
    case LC_OP_MINIMUM: return bin_real<Min>(a, s, true);
    case LC_OP_ARCTAN2: return bin_float<Atan2>(a, s);
    case LC_OP_LOGADDEXP: return bin_float<LogAddExp>(a, s);
    case LC_OP_EQUAL: return bin_pred<Eq>(a, s);
    case LC_OP_NOT_EQUAL: return bin_pred<Ne>(a, s);
    case LC_OP_GREATER: return bin_pred<Gt>(a, s);
    case LC_OP_GREATER_EQUAL: return bin_pred<Ge>(a, s);
    case LC_OP_LESS: return bin_pred<Lt>(a, s);
    case LC_OP_LESS_EQUAL: return bin_pred<Le>(a, s);
    case LC_OP_NAN_EQUAL: return is_float ? bin_pred<NanEq>(a, s) : bin_pred<Eq>(a, s);
    case LC_OP_ISCLOSE: return bin_pred_with(a, s, IsClose{a.param[0], a.param[1], a.param[2]});
    case LC_OP_LOGICAL_AND:
      return a.in_dt == MLX_BOOL ? launch_binary<bool, bool>(a, And(), s) : LC_CU_UNSUPPORTED;
    case LC_OP_LOGICAL_OR:
      return a.in_dt == MLX_BOOL ? launch_binary<bool, bool>(a, Or(), s) : LC_CU_UNSUPPORTED;
    case LC_OP_BITWISE_AND:
      return a.in_dt == MLX_BOOL ? launch_binary<bool, bool>(a, And(), s) : bin_int<BitAnd>(a, s);
    case LC_OP_BITWISE_OR:
      return a.in_dt == MLX_BOOL ? launch_binary<bool, bool>(a, Or(), s) : bin_int<BitOr>(a, s);
    case LC_OP_BITWISE_XOR:
      return a.in_dt == MLX_BOOL ? launch_binary<bool, bool>(a, Ne(), s) : bin_int<BitXor>(a, s);
    case LC_OP_LEFT_SHIFT: return bin_int<Shl>(a, s);
    case LC_OP_RIGHT_SHIFT: return bin_int<Shr>(a, s);
    default: return LC_CU_UNSUPPORTED;
  }
}

}  // namespace

extern "C" int lc_cu_elementwise(const struct lc_cu_ew *a, void *stream) {
  if (a->n == 0) return 0;
  int rc = dispatch(*a, (cudaStream_t)stream);
  if (rc) return rc;
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : -(int)e;
}
