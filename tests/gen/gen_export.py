"""Generates tests/data/export/ (run from the repository root with MLX 0.32,
PyPI mlx-cpu, installed): functions exported by MLX with mx.export_function /
mx.exporter, their inputs and MLX's outputs as .npy, and manifest.txt that
tests/export/test_export_mlx.c reads.

manifest.txt: one line per call of an exported function:
  call file npos kwnames nout atol rtol
kwnames is a comma-separated list or '-'. Inputs are call_a<i>.npy
(positional) and call_k_<name>.npy (keywords), MLX's outputs call_o<j>.npy.
One file may serve several calls (several traces, shapeless calls with new
shapes). Outputs are float32/float64/int/bool (no bfloat16: numpy lacks it)."""
import os

import mlx.core as mx
import numpy as np

D = "tests/data/export/"
os.makedirs(D, exist_ok=True)
rng = np.random.default_rng(20260822)
lines = []


def f32(*shape, lo=-1.0, hi=1.0):
    return mx.array(rng.uniform(lo, hi, size=shape).astype(np.float32))


def save_call(call, file, args, kwargs, outs, atol=1e-5, rtol=1e-5):
    for i, a in enumerate(args):
        np.save(D + f"{call}_a{i}.npy", np.array(a))
    for k, a in kwargs.items():
        np.save(D + f"{call}_k_{k}.npy", np.array(a))
    for j, o in enumerate(outs):
        np.save(D + f"{call}_o{j}.npy", np.array(o))
    kw = ",".join(sorted(kwargs)) if kwargs else "-"
    lines.append(f"{call} {file} {len(args)} {kw} {len(outs)} {atol:g} {rtol:g}")


def export(name, fun, *args, shapeless=False, atol=1e-5, rtol=1e-5, **kwargs):
    """Exports fun traced on args/kwargs and records one call with them."""
    file = name + ".mlxfn"
    mx.export_function(D + file, fun, *args, shapeless=shapeless, **kwargs)
    outs = fun(*args, **kwargs)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    mx.eval(outs)
    save_call(name, file, args, kwargs, outs, atol, rtol)


def call_again(call, file, fun, *args, atol=1e-5, rtol=1e-5, **kwargs):
    """Records another call of an already exported file (MLX's own import)."""
    imported = mx.import_function(D + file)
    outs = imported(*args, **kwargs)
    ref = fun(*args, **kwargs)
    ref = ref if isinstance(ref, (list, tuple)) else [ref]
    for o, r in zip(outs, ref):
        assert np.allclose(np.array(o), np.array(r), atol=1e-5), call
    save_call(call, file, args, kwargs, outs, atol, rtol)


# ---- shapeless: called again with new shapes ----
def shapeless_fn(x, b):
    y = mx.exp(x) * 2.0 + b
    return [y, mx.sum(y, axis=-1, keepdims=True), mx.max(x, axis=0), mx.abs(x) - 1]


export("shapeless", shapeless_fn, f32(3, 4), f32(4), shapeless=True)
call_again("shapeless_b", "shapeless.mlxfn", shapeless_fn, f32(5, 7), f32(7))
call_again("shapeless_c", "shapeless.mlxfn", shapeless_fn, f32(2, 6), f32(6))


# ---- an MLP with captured weights (constants in the file) ----
W1, B1, W2, B2 = f32(8, 16), f32(16), f32(16, 3), f32(3)


def mlp(x):
    h = mx.maximum(x @ W1 + B1, 0.0)
    return [mx.softmax(h @ W2 + B2, axis=-1)]


export("mlp", mlp, f32(4, 8))


# ---- attention-like block ----
def attention(q, k, v, g):
    s = (q @ k.transpose(0, 2, 1)) * (1.0 / np.sqrt(q.shape[-1]))
    mask = mx.triu(mx.full(s.shape[-2:], -1e9), k=1)
    p = mx.softmax(s + mask, axis=-1)
    o = p @ v
    mu = mx.mean(o, axis=-1, keepdims=True)
    var = mx.var(o, axis=-1, keepdims=True)
    ln = (o - mu) * mx.rsqrt(var + 1e-5)
    return [ln, mx.fast.rms_norm(o, g, 1e-5), mx.logsumexp(s, axis=-1)]


export("attention", attention, f32(2, 4, 8), f32(2, 4, 8), f32(2, 4, 8), f32(8), atol=1e-4,
       rtol=1e-4)


# ---- reductions and scans ----
def reductions(x):
    return [mx.sum(x, axis=1), mx.mean(x, axis=(0, 2)), mx.max(x, axis=-1), mx.min(x),
            mx.prod(x, axis=0), mx.argmax(x, axis=1), mx.argmin(x, axis=2),
            mx.logsumexp(x, axis=(0, 1)), mx.cumsum(x, axis=1), mx.cumprod(x, axis=2, reverse=True),
            mx.cummax(x, axis=0), mx.all(x > -0.9, axis=1), mx.any(x > 0.9), mx.std(x, axis=0),
            mx.sum(x, axis=1, keepdims=True), mx.argmax(x)]


export("reductions", reductions, f32(3, 4, 5), atol=1e-5, rtol=1e-4)


# ---- unary math ----
def unary(x, p):
    return [mx.abs(x), mx.negative(x), mx.sign(x), mx.square(x), mx.sqrt(p), mx.rsqrt(p),
            mx.exp(x), mx.expm1(x), mx.log(p), mx.log1p(p), mx.log2(p), mx.log10(p), mx.sin(x),
            mx.cos(x), mx.tan(x), mx.arcsin(x * 0.9), mx.arccos(x * 0.9), mx.arctan(x),
            mx.sinh(x), mx.cosh(x), mx.tanh(x), mx.arcsinh(x), mx.arccosh(p + 1.0),
            mx.arctanh(x * 0.9), mx.sigmoid(x), mx.erf(x), mx.erfinv(x * 0.9), mx.floor(x * 3),
            mx.ceil(x * 3), mx.round(x * 3), mx.logical_not(x > 0), mx.reciprocal(p),
            mx.stop_gradient(x), mx.round(x, 2), mx.degrees(x), mx.isnan(x), mx.clip(x, -0.5, 0.5)]


export("unary", unary, f32(3, 5), f32(3, 5, lo=0.1, hi=2.0), atol=1e-5, rtol=1e-5)


# ---- binary and integer ops ----
def binary(a, b, i, j):
    return [a + b, a - b, a * b, a / b, mx.power(mx.abs(a), b), mx.maximum(a, b),
            mx.minimum(a, b), mx.arctan2(a, b), mx.logaddexp(a, b), a == b, a != b, a > b,
            a >= b, a < b, a <= b, mx.logical_and(a > 0, b > 0), mx.logical_or(a > 0, b > 0),
            mx.remainder(a, b), mx.floor_divide(a, b), i & j, i | j, i ^ j, i << 2, j >> 1,
            mx.remainder(i, j), mx.floor_divide(i, j), i * 3 + j, mx.where(a > b, a, b),
            a + 1.5, i + 2, mx.array_equal(a, a), mx.divmod(a, b)[0]]


ii = mx.array(rng.integers(1, 50, size=(3, 4)).astype(np.int32))
jj = mx.array(rng.integers(1, 7, size=(3, 4)).astype(np.int32))
export("binary", binary, f32(3, 4), f32(3, 4, lo=0.5, hi=2.0), ii, jj)


# ---- broadcasting and dtypes ----
def dtypes(x, row, h):
    y = x * row
    z = (x.astype(mx.float16) * 2).astype(mx.float32)
    w = (x.astype(mx.bfloat16) + 1).astype(mx.float32)
    return [y, z, w, h.astype(mx.float32) * 0.5, x.astype(mx.int32), (x > 0).astype(mx.float32),
            mx.broadcast_to(row, (2, 3, 4))]


export("dtypes", dtypes, f32(3, 4), f32(4), mx.array(rng.integers(-5, 5, (3, 4)).astype(np.int16)),
       atol=1e-2, rtol=1e-2)


# ---- shape ops ----
def shapes(x, y):
    return [x.reshape(4, 6), x.transpose(1, 0, 2), x[:, 1:3], x[::-1], x[::2, ::-1, 1:],
            mx.concatenate([x, y], axis=1), mx.split(x, 2, axis=2)[1], mx.squeeze(x[:, :1], 1),
            mx.expand_dims(x, (0, 2)), mx.flatten(x, 1), mx.pad(x, [(1, 0), (0, 2), (1, 1)]),
            mx.swapaxes(x, 0, 2), mx.moveaxis(x, 0, -1), mx.stack([x, x], axis=1),
            mx.tile(x, (1, 2, 1)), mx.repeat(x, 2, axis=1), mx.unflatten(x, 2, (2, 2)),
            x.T, mx.as_strided(x, (3, 3), (4, 1), 2)]


export("shapes", shapes, f32(2, 3, 4), f32(2, 2, 4))


# ---- indexing ----
def indexing(x, idx, upd):
    y = x.at[idx].add(upd)
    z = mx.array(x)
    z[1:3] = 0.5
    return [x[idx], mx.take(x, idx, axis=1), mx.take_along_axis(x, mx.argsort(x, axis=1), axis=1),
            y, z, mx.sort(x, axis=0), mx.argsort(x, axis=1), mx.topk(x, 2, axis=1),
            mx.partition(x, 1, axis=1)[:, 1], x[idx, 1:3], mx.put_along_axis(x[:3], idx[:, None] % 4, mx.array(2.0), axis=1),
            x.at[idx].multiply(2.0), x.at[idx].maximum(0.0),
            mx.slice(x, mx.array([1]), (0,), (2, 4)),
            mx.slice_update(x, upd[:2], mx.array([2]), (0,)), x[idx[:, None], idx[None]]]


export("indexing", indexing, f32(4, 4), mx.array(np.array([3, 0, 2], np.int32)), f32(3, 4))


# ---- keyword arguments ----
def kwfun(x, *, scale, shift):
    return [x * scale + shift, mx.sum(x * scale)]


export("kwargs", kwfun, f32(2, 3), scale=f32(2, 3), shift=f32(3))


# ---- several traces in one file ----
def multi(*xs):
    return [sum(mx.tanh(x) for x in xs[1:]) + xs[0] if len(xs) > 1 else mx.tanh(xs[0]) * 3]


with mx.exporter(D + "multi.mlxfn", multi) as ex:
    ex(f32(2, 2))
    ex(f32(3), f32(3))
    ex(f32(2, 5), f32(2, 5), f32(2, 5))
call_again("multi_1", "multi.mlxfn", multi, f32(2, 2))
call_again("multi_2", "multi.mlxfn", multi, f32(3), f32(3))
call_again("multi_3", "multi.mlxfn", multi, f32(2, 5), f32(2, 5), f32(2, 5))

# ---- matmul forms and creation ----
def linalg(a, b, c, v):
    return [mx.addmm(c, a, b, alpha=0.5, beta=2.0), a @ b, v @ b, a @ v[:, None], a @ v,
            mx.arange(0, 6, 0.5) * 2, mx.outer(v, v), mx.tril(a @ a.T), mx.eye(4) + a[:, :4]]


export("linalg", linalg, f32(4, 5), f32(5, 3), f32(4, 3), f32(5), atol=1e-5, rtol=1e-4)


# ---- quantized matmul: MLX's QuantizedMatmul (affine), both layouts ----
def quantized(x, wq, ws, wb, vq, vs, vb):
    return [mx.quantized_matmul(x, wq, ws, wb, transpose=True, group_size=64, bits=4),
            mx.quantized_matmul(x, vq, vs, vb, transpose=False, group_size=32, bits=3)]


export("quantized", quantized, f32(3, 128), *mx.quantize(f32(6, 128), group_size=64, bits=4),
       *mx.quantize(f32(128, 64), group_size=32, bits=3), atol=1e-4, rtol=1e-4)

with open(D + "manifest.txt", "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"{len(lines)} calls")
