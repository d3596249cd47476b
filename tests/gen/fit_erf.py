#!/usr/bin/env python3
"""Fits the float32 coefficients of lc_verff (src/ops/vmath.h) and checks the
resulting float32 function's error in float32 arithmetic.

The function, for a = |x|:
  a <  A:  erf(a) = a + a * S(a^2)          S ~ erf(a)/a - 1, relative error
  a >= A:  erf(a) = 1 - H(min(a, C) - X0)   H ~ erfc, absolute error
and the sign of x is put back. erf(C) rounds to 1 in float32 and the fit
makes 1 - H(C - X0) round to exactly 1, so erf(+-inf) = +-1.

Method: minimax fits by Lawson's iteratively reweighted least squares on a
Chebyshev basis (the weight of each sample point is multiplied by its error
every round, which converges to the equioscillating minimax polynomial),
then conversion to monomials and rounding to float32 one coefficient at a
time, highest degree first, refitting the not yet rounded ones after each
rounding. The reference is Python's math.erf / math.erfc (double precision,
far below float32's resolution).

The check evaluates the generated code in float32 both with fused
multiply-adds (the AVX2/AVX-512 kernels) and without (the baseline kernel and
the test's inline copy), over every float32 in [2^-12, 4.25) with a stride,
and prints the maximum error in float32 ulps of the correctly rounded result
(ulp as tests/ops_elementwise/test_ew_vmath.c measures it).

Run: python3 tests/gen/fit_erf.py   (needs numpy; deterministic) and paste
the printed lines into lc_verff."""
import math
import sys

import numpy as np
from numpy.polynomial import chebyshev as cheb
from numpy.polynomial import polynomial as poly

A = 0.75       # split point: the small branch takes a < A
C = 4.0        # clamp; erfc(C) = 1.5e-8 < 2^-25, so erf(C) rounds to 1
X0 = 2.375     # expansion point of H (midpoint of [A, C])
DEG_S = 4      # degree of S in a^2
DEG_H = 14     # degree of H in a - X0

_erf = np.frompyfunc(math.erf, 1, 1)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def erf(x):
    return _erf(np.asarray(x, dtype=np.float64)).astype(np.float64)


def erfc(x):
    return _erfc(np.asarray(x, dtype=np.float64)).astype(np.float64)


def nodes(lo, hi, n):
    """Chebyshev-distributed sample points on [lo, hi], endpoints included."""
    return lo + (hi - lo) * (1 - np.cos(np.linspace(0, np.pi, n))) / 2


def lawson(basis, target, scale, iters=400):
    """Coefficients c minimising max |basis @ c - target| / scale."""
    w = np.ones(len(target))
    best = None
    for _ in range(iters):
        sw = np.sqrt(w) / scale
        c, *_ = np.linalg.lstsq(basis * sw[:, None], target * sw, rcond=None)
        err = np.abs(basis @ c - target) / scale
        if best is None or err.max() < best[0]:
            best = (err.max(), c)
        w = np.maximum(w * err, 1e-300)
        w /= w.sum()
    return best


def fit_monomial(v, target, scale, deg, half):
    """Minimax polynomial in v (|v| <= half) with float32 coefficients:
    the Chebyshev fit gives the start, then coefficients are rounded from the
    highest degree down, each rounding followed by a refit of the lower ones
    in the (scaled) monomial basis."""
    s = v / half
    e, cc = lawson(cheb.chebvander(s, deg), target, scale)
    mono = cheb.cheb2poly(cc)  # in s
    fixed = {}
    for k in range(deg, -1, -1):
        coef_v = mono[k] / half**k
        fixed[k] = float(np.float32(coef_v))
        free = list(range(k))
        if not free:
            break
        rhs = target - sum(fixed[j] * v**j for j in fixed)
        basis = np.stack([s**j for j in free], axis=1)
        _, c = lawson(basis, rhs, scale, iters=200)
        mono = np.zeros(deg + 1)
        mono[:k] = c
    return [fixed[k] for k in range(deg + 1)], e


def fit():
    # small branch: S(t) = erf(a)/a - 1 in t = a^2, error relative to erf(a)/a
    a = nodes(1e-4, A, 3000)
    t = a * a
    g = erf(a) / a
    s_coef, s_err = fit_monomial(t - 0.0, g - 1, g, DEG_S, A * A)
    # H(u) = erfc(X0 + u), absolute error; C is weighted so that H(C) is tight
    x = nodes(A, C, 6000)
    scale = np.ones_like(x)
    scale[-40:] = 0.05
    h_coef, h_err = fit_monomial(x - X0, erfc(x), scale, DEG_H, max(C - X0, X0 - A))
    return s_coef, s_err, h_coef, h_err


def f32_fma(a, b, c):
    """float32 fma(a, b, c): the product is exact in double, one rounding."""
    return (a.astype(np.float64) * np.float64(b) + np.float64(c)).astype(np.float32) \
        if np.isscalar(b) or np.ndim(b) == 0 else \
        (a.astype(np.float64) * b.astype(np.float64) + np.float64(c)).astype(np.float32)


def horner(coef, v, fma):
    f = np.float32
    acc = np.full_like(v, f(coef[-1]))
    for k in range(len(coef) - 2, -1, -1):
        acc = f32_fma(acc, v, f(coef[k])) if fma else (acc * v + f(coef[k])).astype(np.float32)
    return acc


def verff(x, s_coef, h_coef, fma):
    f = np.float32
    x = x.astype(np.float32)
    ax = np.abs(x)
    t = (ax * ax).astype(np.float32)
    s = horner(s_coef, t, fma)
    small = f32_fma(ax, s, ax) if fma else (ax * s + ax).astype(np.float32)
    u = (np.minimum(ax, f(C)) - f(X0)).astype(np.float32)
    big = (f(1) - horner(h_coef, u, fma)).astype(np.float32)
    r = np.where(ax < f(A), small, big)
    return np.copysign(r, x)


def ulp_err(r, x):
    ref = erf(x.astype(np.float64))
    rf = ref.astype(np.float32)
    u = (np.nextafter(rf, np.float32(np.inf)) - rf).astype(np.float64)
    u[u == 0] = 1.4e-45
    return np.abs(r.astype(np.float64) - ref) / u


def check(s_coef, h_coef, stride):
    lo, hi = np.float32(2.0**-12).view(np.uint32), np.float32(4.25).view(np.uint32)
    x = np.arange(lo, hi, stride, dtype=np.uint32).view(np.float32)
    out = []
    for fma in (True, False):
        worst, at = 0.0, 0.0
        for i in range(0, len(x), 1 << 20):
            xs = x[i:i + (1 << 20)]
            e = ulp_err(verff(xs, s_coef, h_coef, fma), xs)
            j = int(e.argmax())
            if e[j] > worst:
                worst, at = float(e[j]), float(xs[j])
        inf = verff(np.array([np.inf], dtype=np.float32), s_coef, h_coef, fma)[0]
        out.append((fma, worst, at, float(inf)))
    return out


def f32_str(c):
    """Shortest decimal that reads back as the float32 c."""
    return np.format_float_scientific(np.float32(c), unique=True, trim="-")


def c_lines(var, arg, coef):
    lines = ["  float %s = %sf;" % (var, f32_str(coef[-1]))]
    for k in range(len(coef) - 2, -1, -1):
        c = coef[k]
        lines.append("  %s = %s * %s %s %sf;" % (var, var, arg, "-" if c < 0 else "+", f32_str(abs(c))))
    return "\n".join(lines)


def main():
    np.seterr(invalid="ignore", over="ignore")  # the unused branch at +-inf
    stride = int(sys.argv[1]) if len(sys.argv) > 1 else 61
    s_coef, s_err, h_coef, h_err = fit()
    print("/* fit: S relative error %.3g, H absolute error %.3g (before rounding) */" % (s_err, h_err))
    print(c_lines("s", "t", s_coef))
    print(c_lines("h", "u", h_coef))
    for fma, worst, at, inf in check(s_coef, h_coef, stride):
        print("/* %s: max %.3f ulp at %.9g; erf(inf) = %r */" % ("fma" if fma else "no fma", worst, at, inf))


if __name__ == "__main__":
    main()
