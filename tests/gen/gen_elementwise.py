"""Reference data for tests/ops_elementwise (numpy). Writes tests/data/elementwise_cases.h.

Run from the repository root: python3 tests/gen/gen_elementwise.py

Every case applies one op to random inputs of given dtypes and layouts and
records numpy's result, adjusted where MLX's documented semantics differ
from numpy's (sign(NaN) = 0; floor_divide of floats = floor(a / b); integer
power with negative exponents = 0). float16 references are computed in
float32 and rounded, as MLX does; bfloat16 is emulated by rounding float32
values to 8 significant bits (round to nearest even).

Layouts: "plain" (12,) contiguous; "trans": a (3, 4) input stored as its
(4, 3) transpose (the test transposes it, so the op sees a non-contiguous
view); "bcast": (3, 4) with (4,); "col": (3, 1) with (4,); "scalar": (3, 4)
with a 0-d array.
"""
import math

import numpy as np

rng = np.random.default_rng(20261202)

# mlx_dtype codes
BOOL, U8, U16, U32, U64, I8, I16, I32, I64, F16, F32, F64, BF16, C64 = range(14)
NAMES = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
         "float16", "float32", "float64", "bfloat16", "complex64"]
NP = {BOOL: np.bool_, U8: np.uint8, U16: np.uint16, U32: np.uint32, U64: np.uint64, I8: np.int8,
      I16: np.int16, I32: np.int32, I64: np.int64, F16: np.float16, F32: np.float32,
      F64: np.float64, BF16: np.float32, C64: np.complex64}
FLOATS = (F16, F32, F64, BF16)
INTS = (U8, U16, U32, U64, I8, I16, I32, I64)

# MLX's promotion table (mlx/dtype.cpp, JAX-style), rows/cols in mlx_dtype order.
_b, _u8, _u16, _u32, _u64, _i8, _i16, _i32, _i64, _f16, _f32, _f64, _bf, _c = range(14)
PROMOTE = [
    [_b, _u8, _u16, _u32, _u64, _i8, _i16, _i32, _i64, _f16, _f32, _f64, _bf, _c],
    [_u8, _u8, _u16, _u32, _u64, _i16, _i16, _i32, _i64, _f16, _f32, _f64, _bf, _c],
    [_u16, _u16, _u16, _u32, _u64, _i32, _i32, _i32, _i64, _f16, _f32, _f64, _bf, _c],
    [_u32, _u32, _u32, _u32, _u64, _i64, _i64, _i64, _i64, _f16, _f32, _f64, _bf, _c],
    [_u64, _u64, _u64, _u64, _u64, _f32, _f32, _f32, _f32, _f16, _f32, _f64, _bf, _c],
    [_i8, _i16, _i32, _i64, _f32, _i8, _i16, _i32, _i64, _f16, _f32, _f64, _bf, _c],
    [_i16, _i16, _i32, _i64, _f32, _i16, _i16, _i32, _i64, _f16, _f32, _f64, _bf, _c],
    [_i32, _i32, _i32, _i64, _f32, _i32, _i32, _i32, _i64, _f16, _f32, _f64, _bf, _c],
    [_i64, _i64, _i64, _i64, _f32, _i64, _i64, _i64, _i64, _f16, _f32, _f64, _bf, _c],
    [_f16] * 10 + [_f32, _f64, _f32, _c],
    [_f32] * 11 + [_f64, _f32, _c],
    [_f64] * 13 + [_c],
    [_bf] * 9 + [_f32, _f32, _f64, _bf, _c],
    [_c] * 14,
]


def promote(a, b):
    return PROMOTE[a][b]


def inexact(t):
    return t if t in FLOATS or t == C64 else F32


def to_bf16(x):
    """float32 values rounded to bfloat16 (round to nearest even), as float32."""
    x = np.asarray(x, dtype=np.float32).copy()
    bits = x.view(np.uint32).astype(np.uint64)
    nan = np.isnan(x)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    out = bits.astype(np.uint32).view(np.float32)
    out[nan] = np.nan
    return out


def cast(x, t):
    """Values of x as dtype t's values (as numpy arrays of that dtype; bf16 as rounded f32)."""
    if t == BF16:
        return to_bf16(np.asarray(x, dtype=np.float64).astype(np.float32))
    if t == BOOL:
        return np.asarray(x) != 0
    return np.asarray(x).astype(NP[t])


def compute_dtype(t):
    """numpy dtype the reference is computed in, for results of dtype t."""
    return {F16: np.float32, BF16: np.float32, F32: np.float64, F64: np.float64}.get(t)


def finish(v, t):
    """Rounds a reference computed in compute_dtype(t) to t's values, as float64."""
    v = np.asarray(v)
    if t == F16:
        return v.astype(np.float16).astype(np.float64)
    if t == BF16:
        return to_bf16(v.astype(np.float32)).astype(np.float64)
    return v.astype(np.float64)


TOL = {F16: (2e-3, 1e-6), BF16: (1.6e-2, 1e-6), F32: (4e-7, 1e-37), F64: (1e-13, 1e-300)}

vals = []
cases = []


def emit_vals(a):
    off = len(vals)
    vals.extend(float(v) for v in np.asarray(a, dtype=np.float64).ravel())
    return off


def gen_input(t, lo, hi, shape, special=False, nonzero=False):
    n = int(np.prod(shape)) if shape else 1
    if t == BOOL:
        x = rng.integers(0, 2, n).astype(bool)
    elif t in INTS:
        info = np.iinfo(NP[t])
        l, h = max(int(lo), info.min), min(int(hi), info.max)
        x = rng.integers(l, h + 1, n)
        if nonzero:
            x[x == 0] = 1
    else:
        x = rng.uniform(lo, hi, n)
        if special and n >= 5:
            x[:5] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    return cast(x, t).reshape(shape)


def add_case(op, ins, dts, layouts, out, out_dt, param=0, tol=None):
    """ins: logical numpy inputs; layouts: per input 'plain' or 'trans'."""
    entry = {"op": op, "nin": len(ins), "dt": dts, "in": [], "out_dt": out_dt, "param": param}
    for x, lay in zip(ins, layouts):
        x = np.asarray(x)
        stored = x.T if lay == "trans" else x
        entry["in"].append((list(x.shape), 1 if lay == "trans" else 0, emit_vals(stored.astype(np.float64))))
    out = np.asarray(out, dtype=np.float64)
    entry["out_shape"] = list(out.shape)
    entry["out_off"] = emit_vals(out)
    entry["out_n"] = out.size
    rt, at = tol if tol else TOL.get(out_dt, (0.0, 0.0))
    entry["rtol"], entry["atol"] = rt, at
    cases.append(entry)


# ---------------- unary ----------------

def erfinv_ref(y):
    if np.isnan(y) or y <= -1 or y >= 1:
        return {1.0: np.inf, -1.0: -np.inf}.get(float(y), np.nan)
    lo, hi = -6.0, 6.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if math.erf(mid) < y:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


with np.errstate(all="ignore"):
    vec = np.vectorize
    MATH = {  # name: (function on float arrays, lo, hi)
        "sqrt": (np.sqrt, 0, 100), "rsqrt": (lambda x: 1 / np.sqrt(x), 0.01, 100),
        "reciprocal": (lambda x: 1 / x, -10, 10), "exp": (np.exp, -30, 30),
        "expm1": (np.expm1, -2, 2), "log": (np.log, 0.001, 1000), "log1p": (np.log1p, -0.9, 5),
        "log2": (np.log2, 0.001, 1000), "log10": (np.log10, 0.001, 1000),
        "sin": (np.sin, -10, 10), "cos": (np.cos, -10, 10), "tan": (np.tan, -1.5, 1.5),
        "arcsin": (np.arcsin, -1, 1), "arccos": (np.arccos, -1, 1), "arctan": (np.arctan, -10, 10),
        "sinh": (np.sinh, -5, 5), "cosh": (np.cosh, -5, 5), "tanh": (np.tanh, -6, 6),
        "arcsinh": (np.arcsinh, -10, 10), "arccosh": (np.arccosh, 1, 10),
        "arctanh": (np.arctanh, -0.99, 0.99), "sigmoid": (sigmoid, -20, 20),
        "erf": (vec(math.erf, otypes=[np.float64]), -4, 4),
        "erfinv": (vec(erfinv_ref, otypes=[np.float64]), -0.999, 0.999),
        "floor": (np.floor, -10, 10), "ceil": (np.ceil, -10, 10),
        "round": (np.rint, -10, 10),
        "degrees": (np.degrees, -7, 7), "radians": (np.radians, -400, 400),
    }
    layouts = ["plain", "trans"]
    for name, (f, lo, hi) in MATH.items():
        for k, t in enumerate((F32, F64, F16, BF16, I32, U8, BOOL)):
            if t in (I32, U8, BOOL):
                if name in ("floor", "ceil", "round"):
                    # identity on integers
                    x = gen_input(t, -100 if t == I32 else 0, 100, (3, 4))
                    add_case(name, [x], [t], ["trans"], x.astype(np.float64), t)
                    continue
                if t == BOOL and name not in ("sqrt", "exp", "sin"):
                    continue
                ilo, ihi = (max(lo, -100), min(hi, 100)) if t == I32 else (max(lo, 0), min(hi, 255))
                if name in ("erfinv", "arcsin", "arccos", "arctanh") and t != BOOL:
                    ilo, ihi = 0, 0  # integers only hit the domain at 0 (and +-1)
                x = gen_input(t, math.ceil(ilo), math.floor(ihi), (3, 4))
                ref = f(x.astype(np.float32).astype(np.float64))
                add_case(name, [x], [t], ["plain"], ref, F32)
                continue
            special = k == 0
            shape = (12,) if k % 2 == 0 else (3, 4)
            x = gen_input(t, lo, hi, shape, special=special)
            if name in ("sqrt", "rsqrt", "log", "log2", "log10") and k == 1:
                x[0] = -1.0  # NaN domain
            if name in ("floor", "ceil", "round") and t != BOOL:
                x = x.copy()
                x.ravel()[5:9] = [0.5, 1.5, 2.5, -2.5]  # ties: round to even
            cd = compute_dtype(t)
            ref = finish(f(np.asarray(x, dtype=np.float64).astype(cd)), t)
            add_case(name, [x], [t], ["plain" if len(shape) == 1 else "trans"], ref, t)

    # round with decimals (numpy: rint(x * 10^d) / 10^d, or * for d < 0)
    for t, d in ((F32, 2), (F64, 3), (F32, -1), (I32, -2), (I32, 2), (F16, 1)):
        x = gen_input(t, -1000 if t == I32 else -50, 1000 if t == I32 else 50, (3, 4))
        if t == I32:
            xs = x.astype(np.float32)
            ref = (np.rint(xs / np.float32(10.0 ** -d)) * np.float32(10.0 ** -d)).astype(np.int32) if d < 0 else x
            add_case("round", [x], [t], ["plain"], np.asarray(ref, np.float64), t, param=d)
            continue
        cd = NP[t]  # float16: each step rounds to float16, as MLX computes it
        xs = x.astype(cd)
        if d > 0:
            ref = np.rint(xs * cd(10.0 ** d)) / cd(10.0 ** d)
        else:
            ref = np.rint(xs / cd(10.0 ** -d)) * cd(10.0 ** -d)
        add_case("round", [x], [t], ["trans"], finish(ref, t), t, param=d)

    # dtype-preserving unary ops over every dtype
    for name in ("abs", "negative", "sign", "square"):
        for t in (F32, F64, F16, BF16, I8, I32, I64, U8, U32, BOOL):
            if t == BOOL and name == "negative":
                continue
            lo, hi = {I8: (-128, 127), U8: (0, 255), U32: (0, 100000)}.get(t, (-1000, 1000))
            special = t in (F32, F64)
            x = gen_input(t, lo, hi, (3, 4), special=special)
            if t == I8:
                x.ravel()[0] = -128
            if t in FLOATS:
                xv = np.asarray(x, np.float64).astype(compute_dtype(t))
                ref = {"abs": np.abs, "negative": np.negative, "sign": np.sign,
                       "square": np.square}[name](xv)
                if name == "sign":
                    ref = np.where(np.isnan(ref), 0.0, ref)
                ref = finish(ref, t)
            else:
                if name == "sign" and t == BOOL:
                    ref = x
                else:
                    ref = {"abs": np.abs, "negative": np.negative, "sign": np.sign,
                           "square": np.square}[name](x)
            add_case(name, [x], [t], ["trans" if t in (F32, I32, U8) else "plain"],
                     np.asarray(ref, np.float64), t)

    # predicates
    for name, f in (("isnan", np.isnan), ("isinf", np.isinf), ("isposinf", np.isposinf),
                    ("isneginf", np.isneginf), ("isfinite", np.isfinite)):
        for t in (F32, F64, F16, BF16, I32, U8, BOOL):
            x = gen_input(t, -5, 5, (3, 4))
            if t in FLOATS:
                x = np.array(x)
                x.ravel()[[0, 3, 5, 7, 8]] = [np.nan, np.inf, -np.inf, -np.nan, np.inf]
            add_case(name, [x], [t], ["trans" if t in (F32, F16) else "plain"],
                     f(np.asarray(x, np.float64)).astype(np.float64), BOOL)
    for t in (BOOL, I32, F32, U8):
        x = gen_input(t, -3, 3, (3, 4))
        add_case("logical_not", [x], [t], ["trans"], np.logical_not(x).astype(np.float64), BOOL)
    for t in (I8, I32, I64, U8, U16, U32, BOOL):
        x = gen_input(t, -1000, 1000, (3, 4))
        add_case("bitwise_invert", [x], [t], ["trans" if t == I32 else "plain"],
                 np.invert(x).astype(np.float64), t)

    # nan_to_num: param 0 default bounds, 1: posinf=7, neginf=-9 and nan=3
    for t in (F32, F64, F16, BF16):
        for p in (0, 1):
            x = np.array(gen_input(t, -5, 5, (3, 4)))
            x.ravel()[[1, 4, 6, 10]] = [np.nan, np.inf, -np.inf, np.nan]
            big = {F32: np.finfo(np.float32).max, F64: np.finfo(np.float64).max,
                   F16: 65504.0, BF16: 3.3895313892515355e38}[t]
            if p == 0:
                ref = np.nan_to_num(np.asarray(x, np.float64), nan=0.0, posinf=big, neginf=-big)
            else:
                ref = np.nan_to_num(np.asarray(x, np.float64), nan=3.0, posinf=7.0, neginf=-9.0)
            add_case("nan_to_num", [x], [t], ["trans" if t == F32 else "plain"], ref, t, param=p)

    # ---------------- binary ----------------
    BIN_LAYOUTS = [("plain", (12,), (12,)), ("trans", (3, 4), (3, 4)), ("bcast", (3, 4), (4,)),
                   ("col", (3, 1), (4,)), ("scalar", (3, 4), ())]

    def bin_inputs(lay, ta, tb, lo, hi, lo2=None, hi2=None, nonzero=False):
        _, sa, sb = lay
        a = gen_input(ta, lo, hi, sa)
        b = gen_input(tb, lo if lo2 is None else lo2, hi if hi2 is None else hi2, sb,
                      nonzero=nonzero)
        return a, b

    def binary(name, f, pairs, lo, hi, lo2=None, hi2=None, out_bool=False, floatout=False,
               nonzero=False, special=False):
        for k, (ta, tb) in enumerate(pairs):
            lay = BIN_LAYOUTS[k % len(BIN_LAYOUTS)]
            a, b = bin_inputs(lay, ta, tb, lo, hi, lo2, hi2, nonzero)
            t = promote(ta, tb)
            if floatout:
                t = inexact(t)
            if special and ta in FLOATS and a.size >= 5:
                a = np.array(a)
                a.ravel()[:5] = [np.nan, np.inf, -np.inf, 1.0, 0.0]
            if t in FLOATS:
                cd = compute_dtype(t)
                av = cast(np.asarray(a, np.float64), t).astype(cd)
                bv = cast(np.asarray(b, np.float64), t).astype(cd)
                ref = f(av, bv)
                ref = ref.astype(np.float64) if out_bool else finish(ref, t)
            else:
                ref = f(cast(a, t), cast(b, t))
            layouts = ["trans" if lay[0] == "trans" else "plain", "plain"]
            add_case(name, [a, b], [ta, tb], layouts, np.asarray(ref, np.float64),
                     BOOL if out_bool else t)

    ARITH = [(F32, F32), (F64, F64), (I32, I32), (U8, U8), (F16, F16), (BF16, BF16), (I8, U8),
             (I32, F32), (I64, I64), (U32, I16), (F16, I32), (BOOL, F32)]
    binary("add", np.add, ARITH + [(BOOL, BOOL)], -100, 100, special=True)
    binary("subtract", np.subtract, ARITH, -100, 100, special=True)
    binary("multiply", np.multiply, ARITH + [(BOOL, BOOL)], -100, 100, special=True)
    binary("divide", np.divide, ARITH, -100, 100, floatout=True)
    binary("maximum", np.maximum, ARITH + [(BOOL, BOOL)], -100, 100, special=True)
    binary("minimum", np.minimum, ARITH + [(BOOL, BOOL)], -100, 100, special=True)
    DIVS = [(F32, F32), (F64, F64), (I32, I32), (U8, U8), (F16, F16), (BF16, BF16), (I8, I8),
            (I64, I64), (I32, F32), (U16, U16)]
    binary("floor_divide", lambda a, b: np.floor(a / b) if a.dtype.kind == "f"
           else np.floor_divide(a, b), DIVS, -100, 100)
    binary("remainder", np.remainder, DIVS, -100, 100)
    binary("power", np.power, [(F32, F32), (F64, F64), (F16, F16), (BF16, BF16)], 0.1, 3, -2, 2)
    binary("power", np.power, [(I32, I32), (U8, U8), (I64, I64), (I8, I8)], -6, 6, 0, 5)
    binary("arctan2", np.arctan2, [(F32, F32), (F64, F64), (F16, F16), (BF16, BF16), (I32, I32)],
           -10, 10, floatout=True)
    binary("logaddexp", np.logaddexp, [(F32, F32), (F64, F64), (F16, F16), (BF16, BF16),
                                       (I32, I32)], -20, 20, floatout=True, special=True)
    CMP = [(F32, F32), (F64, F64), (I32, I32), (U8, I8), (F16, F16), (BF16, BF16), (BOOL, BOOL),
           (I32, F32), (U64, U64)]
    for name, f in (("equal", np.equal), ("not_equal", np.not_equal), ("greater", np.greater),
                    ("greater_equal", np.greater_equal), ("less", np.less),
                    ("less_equal", np.less_equal)):
        binary(name, f, CMP, -3, 3, out_bool=True, special=True)
    for name, f in (("logical_and", np.logical_and), ("logical_or", np.logical_or)):
        for k, (ta, tb) in enumerate([(BOOL, BOOL), (F32, I32), (U8, BOOL)]):
            lay = BIN_LAYOUTS[k % len(BIN_LAYOUTS)]
            a, b = bin_inputs(lay, ta, tb, -2, 2)
            add_case(name, [a, b], [ta, tb], ["trans" if lay[0] == "trans" else "plain", "plain"],
                     f(a, b).astype(np.float64), BOOL)
    BITS = [(I32, I32), (U8, U8), (I8, I16), (I64, I64), (BOOL, BOOL), (U32, U32)]
    for name, f in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                    ("bitwise_xor", np.bitwise_xor)):
        binary(name, f, BITS, -1000, 1000)
    SHIFTS = [(I32, I32), (U8, U8), (I8, I8), (I64, I64), (U16, U16)]
    binary("left_shift", np.left_shift, SHIFTS, -1000, 1000, 0, 40)
    binary("right_shift", np.right_shift, SHIFTS, -1000, 1000, 0, 40)

    # ---------------- where / clip / isclose ----------------
    for k, (tx, ty) in enumerate([(F32, F32), (I32, F16), (U8, I8), (F64, F32), (BOOL, BOOL)]):
        c = gen_input(BOOL, 0, 1, (3, 4) if k % 2 == 0 else (3, 1))
        x = gen_input(tx, -50, 50, (4,) if k != 1 else (3, 4))
        y = gen_input(ty, -50, 50, () if k == 2 else (3, 4))
        t = promote(tx, ty)
        ref = np.where(c, cast(x, t), cast(y, t)).astype(np.float64)
        add_case("where", [c, x, y], [BOOL, tx, ty], ["plain", "plain", "trans" if k == 0 else "plain"],
                 ref, t)
    # clip: param 0 both bounds, 1 only a_min, 2 only a_max
    for p, (t, tl) in enumerate([(F32, F32), (I32, I32), (F64, I32)]):
        x = gen_input(t, -10, 10, (3, 4))
        lo = gen_input(tl, -5, 0, (4,))
        hi = gen_input(tl, 1, 5, ())
        tt = promote(promote(t, tl), tl)
        xv = cast(x, tt)
        ref = np.minimum(np.maximum(xv, cast(lo, tt)), cast(hi, tt)) if p == 0 else (
            np.maximum(xv, cast(lo, tt)) if p == 1 else np.minimum(xv, cast(hi, tt)))
        add_case("clip", [x, lo, hi], [t, tl, tl], ["trans", "plain", "plain"],
                 np.asarray(ref, np.float64), tt, param=p)
    # isclose: param bit 0 = equal_nan; rtol 1e-3, atol 1e-2
    for p, (ta, tb) in enumerate([(F32, F32), (F64, F64), (I32, F32), (F16, F16), (F32, F64)]):
        a = gen_input(ta, -2, 2, (3, 4))
        b = (np.asarray(a, np.float64) + rng.choice([0, 1e-4, 5e-3, 0.1], size=(3, 4)))
        b = cast(b, tb)
        if ta in FLOATS:
            a = np.array(a)
            b = np.array(b)
            a.ravel()[[0, 1, 2, 3]] = [np.nan, np.inf, np.inf, -np.inf]
            b.ravel()[[0, 1, 2, 3]] = [np.nan, np.inf, -np.inf, 5.0]
        en = p % 2
        t = promote(ta, tb)
        cd = np.float32 if t in (F16, BF16, F32) else np.float64
        ref = np.isclose(np.asarray(a, cd), np.asarray(b, cd), rtol=1e-3, atol=1e-2,
                         equal_nan=bool(en))
        add_case("isclose", [a, b], [ta, tb], ["trans", "plain"], ref.astype(np.float64), BOOL,
                 param=en)


def fmt(v):
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    if v == int(v) and abs(v) < 1e15:
        return "-0.0" if (v == 0 and math.copysign(1, v) < 0) else str(int(v))
    return repr(v)


with open("tests/data/elementwise_cases.h", "w") as f:
    f.write("/* Generated by tests/gen/gen_elementwise.py (numpy); do not edit. */\n")
    f.write("#include <math.h>\n\n")
    f.write("struct ew_input { int ndim; int shape[2]; int trans; int off; };\n")
    f.write("struct ew_case {\n  const char *op;\n  int nin;\n  int dt[3];\n"
            "  struct ew_input in[3];\n  int out_dt, out_ndim, out_shape[2], out_off, out_n;\n"
            "  double rtol, atol;\n  int param;\n};\n\n")
    f.write("static const double ew_vals[] = {\n")
    for i in range(0, len(vals), 8):
        f.write("  " + ", ".join(fmt(v) for v in vals[i:i + 8]) + ",\n")
    f.write("};\n\nstatic const struct ew_case ew_cases[] = {\n")
    for c in cases:
        ins = []
        for shape, tr, off in c["in"]:
            s = shape + [0] * (2 - len(shape))
            ins.append(f"{{{len(shape)}, {{{s[0]}, {s[1]}}}, {tr}, {off}}}")
        while len(ins) < 3:
            ins.append("{0, {0, 0}, 0, 0}")
        dts = c["dt"] + [0] * (3 - len(c["dt"]))
        os_ = c["out_shape"] + [0] * (2 - len(c["out_shape"]))
        f.write(f'  {{"{c["op"]}", {c["nin"]}, {{{dts[0]}, {dts[1]}, {dts[2]}}}, '
                f'{{{", ".join(ins)}}}, {c["out_dt"]}, {len(c["out_shape"])}, '
                f'{{{os_[0]}, {os_[1]}}}, {c["out_off"]}, {c["out_n"]}, {c["rtol"]!r}, '
                f'{c["atol"]!r}, {c["param"]}}},\n')
    f.write("};\n#define EW_NCASES (sizeof ew_cases / sizeof ew_cases[0])\n")
print(f"{len(cases)} cases, {len(vals)} values")
