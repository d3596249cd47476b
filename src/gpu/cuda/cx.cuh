// complex64 values in device code (ew_complex.cu, random.cu): the pair
// type and C's product of two complex floats, as GCC compiles `a * b`
// for the CPU kernels (so both sides give the same bits).
#pragma once
#include <math.h>

namespace {

struct alignas(8) Cx {
  float re, im;
};

__device__ __forceinline__ Cx cx(float re, float im) { return Cx{re, im}; }
__device__ __forceinline__ Cx cxd(double re, double im) {
  return Cx{__double2float_rn(re), __double2float_rn(im)};
}

// C's a * b for complex float: the naive parts, unfused, then (both NaN)
// the recovery of infinite operands.
__device__ Cx mul(Cx a, Cx b) {
  float ac = __fmul_rn(a.re, b.re), bd = __fmul_rn(a.im, b.im);
  float ad = __fmul_rn(a.re, b.im), bc = __fmul_rn(a.im, b.re);
  float x = __fsub_rn(ac, bd), y = __fadd_rn(ad, bc);
  if (!isnan(x) || !isnan(y)) return cx(x, y);
  float p = a.re, q = a.im, r = b.re, t = b.im;
  bool again = false;
  if (isinf(p) || isinf(q)) { // a infinite: its parts to +-1 / +-0, NaNs of b to 0
    p = copysignf(isinf(p) ? 1.0f : 0.0f, p);
    q = copysignf(isinf(q) ? 1.0f : 0.0f, q);
    if (isnan(r)) r = copysignf(0.0f, r);
    if (isnan(t)) t = copysignf(0.0f, t);
    again = true;
  }
  if (isinf(r) || isinf(t)) {
    r = copysignf(isinf(r) ? 1.0f : 0.0f, r);
    t = copysignf(isinf(t) ? 1.0f : 0.0f, t);
    if (isnan(p)) p = copysignf(0.0f, p);
    if (isnan(q)) q = copysignf(0.0f, q);
    again = true;
  }
  if (!again && (isinf(ac) || isinf(bd) || isinf(ad) || isinf(bc))) { // overflow
    if (isnan(p)) p = copysignf(0.0f, p);
    if (isnan(q)) q = copysignf(0.0f, q);
    if (isnan(r)) r = copysignf(0.0f, r);
    if (isnan(t)) t = copysignf(0.0f, t);
    again = true;
  }
  if (again) {
    x = INFINITY * (p * r - q * t);
    y = INFINITY * (p * t + q * r);
  }
  return cx(x, y);
}

}  // namespace
