"""Reference data for tests/ops_misc/test_mlx_semantics.c, computed with MLX itself
(CPU). Writes tests/data/mlx_semantics_cases.h.

Run from the repository root: python3 tests/gen/gen_mlx_semantics.py (needs mlx.core; the
data in the repository came from MLX 0.32.4).

Each case applies one op (with fixed parameters, named in the op string) to 1-d inputs
of given dtypes and records MLX's output dtype and values: the corners where MLX's
semantics are easy to get wrong (integer overflow and reduction dtypes, ties, NaN in
sort/clip/max, rounding halves, integer power, division and remainder signs, shifts).
The mean of int32/uint32 sums that overflow is left out: MLX sums in the input's 32-bit
type (wrapping) before dividing, lace sums integers exactly (a documented deviation).
Cases whose MLX result is undefined (integer division by zero, INT_MIN // -1, shifts by
the width or more, out-of-range float -> int) are not generated here; lace defines them
and tests them separately.
"""
import math

import mlx.core as mx
import numpy as np

D = {"bool": mx.bool_, "u8": mx.uint8, "u16": mx.uint16, "u32": mx.uint32, "u64": mx.uint64,
     "i8": mx.int8, "i16": mx.int16, "i32": mx.int32, "i64": mx.int64, "f16": mx.float16,
     "f32": mx.float32, "f64": mx.float64, "bf16": mx.bfloat16}
CODE = {mx.bool_: 0, mx.uint8: 1, mx.uint16: 2, mx.uint32: 3, mx.uint64: 4, mx.int8: 5,
        mx.int16: 6, mx.int32: 7, mx.int64: 8, mx.float16: 9, mx.float32: 10, mx.float64: 11,
        mx.bfloat16: 12, mx.complex64: 13}
CPU = mx.cpu

UNARY = {
    "abs": mx.abs, "negative": mx.negative, "sign": mx.sign, "square": mx.square,
    "sqrt": mx.sqrt, "exp": mx.exp, "floor": mx.floor, "ceil": mx.ceil,
    "round": lambda x: mx.round(x), "round1": lambda x: mx.round(x, 1),
    "round_m1": lambda x: mx.round(x, -1),
    "reciprocal": mx.reciprocal, "sigmoid": mx.sigmoid, "bitwise_invert": mx.bitwise_invert,
    "logical_not": mx.logical_not, "erfinv": mx.erfinv,
    "sum": mx.sum, "prod": mx.prod, "mean": mx.mean, "max": mx.max, "min": mx.min,
    "argmax": mx.argmax, "argmin": mx.argmin, "all": mx.all, "any": mx.any,
    "var": mx.var, "std": mx.std, "var_ddof1": lambda x: mx.var(x, ddof=1),
    "logsumexp": mx.logsumexp,
    "cumsum": lambda x: mx.cumsum(x, 0), "cumprod": lambda x: mx.cumprod(x, 0),
    "cummax": lambda x: mx.cummax(x, 0), "cummin": lambda x: mx.cummin(x, 0),
    "logcumsumexp": lambda x: mx.logcumsumexp(x, 0),
    "sort": mx.sort, "argsort": mx.argsort, "softmax": lambda x: mx.softmax(x, axis=0),
    "nan_to_num": mx.nan_to_num, "median": lambda x: mx.median(x, axis=0),
}
BINARY = {
    "add": mx.add, "subtract": mx.subtract, "multiply": mx.multiply, "divide": mx.divide,
    "floor_divide": mx.floor_divide, "remainder": mx.remainder, "power": mx.power,
    "maximum": mx.maximum, "minimum": mx.minimum, "logaddexp": mx.logaddexp,
    "left_shift": mx.left_shift, "right_shift": mx.right_shift, "arctan2": mx.arctan2,
    "equal": mx.equal, "less": mx.less,
    "isclose_nan": lambda a, b: mx.isclose(a, b, equal_nan=True),
}
TERNARY = {"clip": mx.clip, "where": mx.where}

NAN, INF = math.nan, math.inf
I32MIN, I32MAX = -(2 ** 31), 2 ** 31 - 1

cases = []


def case(op, *inputs):
    cases.append((op, inputs))


# integer overflow: results wrap in the (MLX) result dtype
for t in ("i8", "u8", "i16", "i32", "u32"):
    big = {"i8": 100, "u8": 200, "i16": 30000, "i32": I32MAX - 5, "u32": 2 ** 32 - 10}[t]
    case("add", (t, [big, big, 1]), (t, [big, 1, -1 if t[0] == "i" else 1]))
    case("multiply", (t, [big, 3, 7]), (t, [big, big, 5]))
    case("square", (t, [big, -3 if t[0] == "i" else 3, 7]))
    case("sum", (t, [big, big, big, 1]))
    case("prod", (t, [big, 3, 5, 7]))
    case("cumsum", (t, [big, big, big, 1]))
    case("cumprod", (t, [big, 3, 5, 7]))
    if t not in ("i32", "u32"):  # MLX's mean of these sums in the wrapping int32 (lace: double)
        case("mean", (t, [big, big, 3, 1]))
for t in ("bool",):
    case("sum", (t, [1, 1, 0, 1]))
    case("prod", (t, [1, 1, 0, 1]))
    case("mean", (t, [1, 1, 0, 1]))
    case("cumsum", (t, [1, 0, 1, 1]))
    case("max", (t, [0, 1, 0]))
    case("argmax", (t, [0, 1, 1]))
case("abs", ("i8", [-128, -127, 5]))
case("negative", ("i8", [-128, 127, 0]))
case("negative", ("u8", [1, 0, 200]))
case("abs", ("i32", [I32MIN, -1, 3]))
case("sign", ("u8", [0, 3, 255]))
case("sign", ("i32", [-7, 0, 9]))
case("sign", ("f32", [-0.0, NAN, -2.5, 3.0]))
# reduction dtypes
for t in ("i8", "u16", "i64", "f16", "bf16"):
    case("sum", (t, [1, 2, 3, 4]))
    case("mean", (t, [1, 2, 3, 5]))
    case("var", (t, [1, 2, 3, 5]))
    case("logsumexp", (t, [1, 2, 3, 5]))
    case("softmax", (t, [1, 2, 3, 5]))
    case("prod", (t, [1, 2, 3, 5]))
case("var", ("f32", [1.0, 2.0]))
case("var_ddof1", ("f32", [3.0]))
case("std", ("f32", [1.0, 4.0, 9.0]))
case("mean", ("f32", []))
case("sum", ("i32", []))
case("prod", ("f32", []))
case("all", ("f32", []))
case("any", ("f32", []))
case("logsumexp", ("f32", [-INF, -INF]))
case("logsumexp", ("f32", [INF, 1.0]))
case("logsumexp", ("f32", [NAN, 1.0]))
# ties and NaN
case("argmax", ("f32", [1.0, 3.0, 3.0, 2.0]))
case("argmin", ("f32", [2.0, 1.0, 1.0, 3.0]))
case("argmax", ("f32", [1.0, NAN, 3.0]))
case("argmin", ("f32", [1.0, NAN, 0.0]))
case("argmax", ("i32", [5, 5, 5]))
case("max", ("f32", [1.0, NAN, 3.0]))
case("min", ("f32", [1.0, NAN, 3.0]))
case("maximum", ("f32", [NAN, 1.0, NAN, -0.0]), ("f32", [1.0, NAN, NAN, 0.0]))
case("minimum", ("f32", [NAN, 1.0, NAN, -0.0]), ("f32", [1.0, NAN, NAN, 0.0]))
case("cummax", ("f32", [1.0, NAN, 3.0, 0.5]))
case("cummin", ("f32", [1.0, NAN, 3.0, 0.5]))
case("sort", ("f32", [3.0, NAN, -1.0, INF, -INF, NAN, 0.0]))
case("argsort", ("f32", [3.0, NAN, -1.0, 3.0, NAN, 0.0]))
case("argsort", ("i32", [2, 1, 2, 1, 2]))
case("sort", ("u8", [200, 3, 0, 255, 3]))
case("median", ("f32", [3.0, 1.0, 2.0, 10.0]))
case("median", ("f32", [3.0, NAN, 2.0]))
case("clip", ("f32", [NAN, -5.0, 5.0, 0.5]), ("f32", [0.0]), ("f32", [1.0]))
case("clip", ("f32", [-5.0, 5.0, 0.5]), ("f32", [NAN]), ("f32", [1.0]))
case("clip", ("f32", [-5.0, 5.0, 0.5]), ("f32", [0.0]), ("f32", [NAN]))
case("clip", ("i32", [-5, 5, 1]), ("f32", [0.5]), ("f32", [2.5]))
case("clip", ("f32", [-5.0, 5.0, 0.5]), ("f32", [2.0]), ("f32", [1.0]))
case("clip", ("u8", [0, 100, 255]), ("i32", [10]), ("i32", [200]))
case("where", ("bool", [1, 0, 1]), ("i32", [1, 2, 3]), ("f32", [0.5, 0.5, 0.5]))
case("nan_to_num", ("f32", [NAN, INF, -INF, 1.5]))
case("nan_to_num", ("f16", [NAN, INF, -INF, 1.5]))
# rounding: halves to even
case("round", ("f32", [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.4999998, NAN, INF]))
case("round1", ("f32", [0.25, 0.35, 1.15, -0.25, 2.675]))
case("round_m1", ("f32", [15.0, 25.0, -35.0, 44.0]))
case("round", ("i32", [3, -4, 7]))
case("round1", ("i32", [3, -4, 7]))
case("round_m1", ("i32", [15, 25, -35]))
case("floor", ("i32", [3, -4]))
case("ceil", ("u8", [3, 200]))
case("floor", ("f32", [-0.5, 0.5, -0.0, NAN]))
# integer power
case("power", ("i32", [-2, -2, 2, 0, 0, 3, -1, -1, 1, 2]),
      ("i32", [3, 2, -1, 0, -1, 20, -3, -2, -5, 31]))
case("power", ("u8", [2, 3, 0]), ("u8", [7, 6, 0]))
case("power", ("i8", [2, 3, -2]), ("i8", [7, 5, 7]))
case("power", ("f32", [-8.0, -2.0, 0.0, 0.0, NAN, 1.0]), ("f32", [1.0 / 3, 0.5, -1.0, 0.0, 0.0, NAN]))
case("power", ("i32", [2, 4]), ("f32", [0.5, -0.5]))
# division and remainder (Python signs), float corner cases
case("floor_divide", ("i32", [7, -7, 7, -7, 0, 1, -1, -128]), ("i32", [2, 2, -2, -2, 3, -3, 3, -1]))
case("remainder", ("i32", [7, -7, 7, -7, 0, 1, -1, -128]), ("i32", [2, 2, -2, -2, 3, -3, 3, -1]))
case("floor_divide", ("i8", [7, -7, 7, -7, -1, 127]), ("i8", [2, 2, -2, -2, 3, -128]))
case("remainder", ("i8", [7, -7, 7, -7, -1, 127]), ("i8", [2, 2, -2, -2, 3, -128]))
case("floor_divide", ("u8", [7, 0, 255, 3]), ("u8", [2, 3, 7, 7]))
case("remainder", ("u8", [7, 0, 255, 3]), ("u8", [2, 3, 7, 7]))
case("floor_divide", ("i64", [7, -7, -9]), ("i64", [2, 2, 4]))
case("remainder", ("i64", [7, -7, -9]), ("i64", [2, 2, 4]))
case("floor_divide", ("u8", [7, 200]), ("i8", [-2, 3]))
case("remainder", ("u8", [7, 200]), ("i8", [-2, 3]))
case("floor_divide", ("f32", [7.5, -7.5, 1.0, -1.0, 0.0, 5.0, -5.0, 5.0, -5.0]),
      ("f32", [2.0, 2.0, 0.0, 0.0, 0.0, -3.0, 3.0, INF, INF]))
case("remainder", ("f32", [7.5, -7.5, 1.0, -1.0, 0.0, 5.0, -5.0, 5.0, -5.0, -0.0, 6.0]),
      ("f32", [2.0, 2.0, 0.0, 0.0, 0.0, -3.0, 3.0, INF, INF, 3.0, -3.0]))
case("divide", ("i32", [7, -7, 1]), ("i32", [2, 2, 3]))
case("divide", ("i64", [7, -7, 1]), ("i64", [2, 2, 3]))
case("divide", ("u8", [7, 1]), ("u8", [2, 0]))
case("divide", ("f32", [1.0, -1.0, 0.0]), ("f32", [0.0, 0.0, 0.0]))
# shifts (counts within the width)
case("left_shift", ("i32", [1, -1, 3, 1]), ("i32", [3, 4, 30, 31]))
case("right_shift", ("i32", [-16, 16, -1, I32MIN]), ("i32", [2, 2, 5, 31]))
case("right_shift", ("u8", [255, 128]), ("u8", [1, 7]))
case("left_shift", ("u8", [255, 1]), ("u8", [1, 7]))
case("left_shift", ("i8", [64, 1]), ("i8", [1, 7]))
case("left_shift", ("bool", [1, 1]), ("bool", [1, 0]))
case("bitwise_invert", ("u8", [0, 255, 15]))
case("bitwise_invert", ("i32", [0, -1, 15]))
case("bitwise_invert", ("bool", [0, 1]))
case("logical_not", ("f32", [0.0, NAN, -0.0, 2.0]))
# promotions with mixed signedness and floats
case("add", ("u8", [250, 3]), ("i8", [-3, 10]))
case("add", ("u64", [5, 3]), ("i32", [-3, 10]))
case("add", ("i32", [5, 3]), ("f16", [0.5, 1.5]))
case("add", ("bf16", [0.5, 1.5]), ("f16", [0.5, 1.5]))
case("multiply", ("u32", [5, 3]), ("i64", [-3, 10]))
case("equal", ("u32", [2 ** 32 - 1, 3]), ("i32", [-1, 3]))
case("less", ("u8", [255, 3]), ("i8", [-1, 4]))
case("logaddexp", ("f32", [-INF, INF, NAN, 1.0]), ("f32", [-INF, INF, 1.0, -INF]))
case("arctan2", ("f32", [0.0, -0.0, 0.0, -0.0, 1.0]), ("f32", [0.0, 0.0, -0.0, -0.0, 0.0]))
case("isclose_nan", ("f32", [NAN, 1.0, INF, INF]), ("f32", [NAN, NAN, INF, -INF]))
case("sqrt", ("i32", [4, -1]))
case("exp", ("u8", [0, 1]))
case("sigmoid", ("f32", [-100.0, 100.0, 0.0]))
case("reciprocal", ("i32", [2, 0, -4]))
case("erfinv", ("f32", [1.0, -1.0, 2.0, 0.0]))
case("logcumsumexp", ("f32", [-INF, 0.0, -INF, 1.0]))


def fmt(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    v = float(v)
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    if v == 0 and math.copysign(1, v) < 0:
        return "-0.0"
    return repr(v)


NP = {"bool": np.bool_, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
      "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "f16": np.float16,
      "f32": np.float32, "f64": np.float64, "bf16": np.float32}


def make(t, v):
    """The input as MLX sees it and its values (floats rounded to the dtype; integers
    must be exact)."""
    a = np.array(v, dtype=np.float64)
    x = mx.array(a.astype(NP[t]))
    if t == "bf16":
        x = x.astype(mx.bfloat16)
    exact = np.array(x.astype(mx.float64)).reshape(-1)
    if t not in ("f16", "f32", "bf16"):
        assert np.array_equal(exact, a, equal_nan=True), (t, v)
    return x, exact.tolist()


vals = []
rows = []
for op, inputs in cases:
    made = [make(t, v) for t, v in inputs]
    arrs = [m[0] for m in made]
    f = UNARY.get(op) or BINARY.get(op) or TERNARY[op]
    with mx.stream(CPU):
        out = f(*arrs)
        outv = np.array(out.astype(mx.float64)).reshape(-1).tolist()
    offs = []
    for (t, _), (_, v) in zip(inputs, made):
        offs.append((CODE[D[t]], len(vals), len(v)))
        vals.extend(v)
    ooff = len(vals)
    vals.extend(outv)
    rows.append((op, offs, CODE[out.dtype], out.ndim, ooff, len(outv)))

with open("tests/data/mlx_semantics_cases.h", "w") as fh:
    fh.write("/* Generated by tests/gen/gen_mlx_semantics.py (MLX %s, CPU); do not edit. */\n"
             % mx.__version__)
    fh.write("#include <math.h>\n\n")
    fh.write("struct ms_input { int dt, off, n; };\n")
    fh.write("struct ms_case {\n  const char *op;\n  int nin;\n  struct ms_input in[3];\n"
             "  int out_dt, out_ndim, out_off, out_n;\n};\n\n")
    fh.write("static const double ms_vals[] = {\n")
    for i in range(0, len(vals), 8):
        fh.write("  " + ", ".join(fmt(v) for v in vals[i:i + 8]) + ",\n")
    fh.write("};\n\nstatic const struct ms_case ms_cases[] = {\n")
    for op, offs, odt, ond, ooff, on in rows:
        ins = ", ".join("{%d, %d, %d}" % o for o in offs)
        fh.write('  {"%s", %d, {%s}, %d, %d, %d, %d},\n' % (op, len(offs), ins, odt, ond, ooff, on))
    fh.write("};\n")
print(len(rows), "cases")
