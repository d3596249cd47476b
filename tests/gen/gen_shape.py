#!/usr/bin/env python3
"""Generates tests/data/shape_cases.h: reference results for the view and
copy shape ops, computed with numpy. Each case starts from a random float32
array and applies a sequence of steps; test_shape_cases.c replays the steps
through the public API and compares. Run from the repository root:
    python3 tests/gen/gen_shape.py
"""
import numpy as np

rng = np.random.default_rng(1234)
cases = []


def add(name, shape, steps):
    x = rng.standard_normal(shape).astype(np.float32)
    y = x
    for op, p in steps:
        y = apply(y, op, list(p))
    y = np.array(y, dtype=np.float32, order="C")
    cases.append((name, shape, steps, x, y))


def apply(y, op, p):
    nd = y.ndim
    if op == "reshape":
        return y.reshape(p)
    if op == "transpose":
        return y.transpose(p)
    if op == "transpose_all":
        return y.T
    if op == "swapaxes":
        return np.swapaxes(y, p[0], p[1])
    if op == "moveaxis":
        return np.moveaxis(y, p[0], p[1])
    if op == "squeeze_axes":
        return np.squeeze(y, axis=tuple(p))
    if op == "squeeze":
        return np.squeeze(y)
    if op == "expand_dims_axes":
        return np.expand_dims(y, tuple(p))
    if op == "flatten":
        s, e = p[0] % nd, p[1] % nd
        return y.reshape(y.shape[:s] + (-1,) + y.shape[e + 1:])
    if op == "unflatten":
        ax = p[0] % nd
        return y.reshape(y.shape[:ax] + tuple(p[1:]) + y.shape[ax + 1:])
    if op == "slice":
        return y[tuple(slice(p[i], p[nd + i], p[2 * nd + i]) for i in range(nd))]
    if op == "diagonal":
        return np.diagonal(y, p[0], p[1], p[2])
    if op == "as_strided":
        n = p[0]
        shape, strides, off = p[1:1 + n], p[1 + n:1 + 2 * n], p[1 + 2 * n]
        base = np.ascontiguousarray(y).ravel()
        return np.lib.stride_tricks.as_strided(
            base[off:], shape=shape, strides=[s * base.itemsize for s in strides])
    if op == "broadcast_to":
        return np.broadcast_to(y, p)
    if op == "add_arange":  # consume through an elementwise op
        return y + np.arange(y.size, dtype=np.float32).reshape(y.shape)
    if op == "atleast":
        return [np.atleast_1d, np.atleast_2d, np.atleast_3d][p[0] - 1](y)
    if op == "split":  # p: num, axis, piece
        return np.split(y, p[0], axis=p[1])[p[2]]
    if op == "split_sections":  # p: axis, piece, indices...
        return np.split(y, p[2:], axis=p[0])[p[1]]
    if op in ("pad_edge", "pad_reflect", "pad_symmetric"):  # p: (low, high) per axis
        return np.pad(y, [(p[2 * i], p[2 * i + 1]) for i in range(nd)], mode=op[4:])
    if op == "pad_const":  # p: value, then (low, high) per axis
        return np.pad(y, [(p[1 + 2 * i], p[2 + 2 * i]) for i in range(nd)],
                      constant_values=np.float32(p[0]))
    if op == "tile":
        return np.tile(y, p)
    if op == "repeat":  # p: repeats, axis
        return np.repeat(y, p[0], axis=p[1])
    if op == "repeat_flat":
        return np.repeat(y, p[0])
    if op == "roll":  # p: n, shifts..., axes...
        n = p[0]
        return np.roll(y, p[1:1 + n], axis=tuple(p[1 + n:1 + 2 * n]))
    if op == "roll_flat":
        return np.roll(y, p[0])
    if op == "diag":
        return np.diag(y, p[0])
    if op == "concat_self":  # concatenates y with 2*y along axis p[0]
        return np.concatenate([y, 2 * y], axis=p[0])
    if op == "stack_self":
        return np.stack([y, 2 * y], axis=p[0])
    if op == "trace":
        return np.trace(y, p[0], p[1], p[2])
    if op == "kron_self_t":  # kron(y, y.T[:2])
        return np.kron(y, y.T[:2])
    if op == "kron_vec":  # kron(y, [1, -2, 3])
        return np.kron(y, np.array([1, -2, 3], np.float32))
    if op == "fftshift":
        return np.fft.fftshift(y, axes=tuple(p))
    if op == "ifftshift":
        return np.fft.ifftshift(y, axes=tuple(p))
    if op == "contiguous":
        return np.ascontiguousarray(y)
    raise ValueError(op)


# ---- views ----
add("reshape_infer", (2, 3, 4), [("reshape", (4, -1))])
add("reshape_ones", (2, 3, 4), [("reshape", (1, 6, 1, 4, 1))])
add("reshape_scalar", (1, 1), [("reshape", ())])
add("reshape_transposed_copy", (3, 4, 5), [("transpose", (2, 0, 1)), ("reshape", (5, 12))])
add("reshape_transposed_view", (3, 4, 5), [("transpose", (1, 0, 2)), ("reshape", (4, 3, 5, 1))])
add("reshape_sliced", (6, 8), [("slice", (0, 0, 6, 8, 2, 1)), ("reshape", (3, 2, 4))])
add("reshape_reversed", (6, 4), [("slice", (5, 0, -7, 4, -1, 1)), ("reshape", (24,))])
add("transpose3", (2, 3, 4), [("transpose", (2, 0, 1))])
add("transpose_neg", (2, 3, 4), [("transpose", (-1, 0, -2))])
add("transpose_all", (2, 3, 4, 5), [("transpose_all", ())])
add("swapaxes", (2, 3, 4), [("swapaxes", (0, -1))])
add("moveaxis", (2, 3, 4, 5), [("moveaxis", (0, -2))])
add("moveaxis_back", (2, 3, 4, 5), [("moveaxis", (3, 1))])
add("squeeze_axes", (1, 3, 1, 4, 1), [("squeeze_axes", (0, -1))])
add("squeeze_all", (1, 3, 1, 4, 1), [("squeeze", ())])
add("expand_dims", (3, 4), [("expand_dims_axes", (0, -1, 2))])
add("flatten_mid", (2, 3, 4, 5), [("flatten", (1, 2))])
add("flatten_all_t", (2, 3, 4), [("transpose_all", ()), ("flatten", (0, -1))])
add("unflatten", (2, 12, 3), [("unflatten", (1, 3, -1, 2))])
add("slice_basic", (5, 6), [("slice", (1, 0, 4, 6, 1, 2))])
add("slice_neg_step", (5, 6), [("slice", (-1, 4, -6, 0, -2, -1))])
add("slice_clamped", (5, 6), [("slice", (-100, 2, 100, 100, 1, 3))])
add("slice_empty", (5, 6), [("slice", (3, 0, 2, 6, 1, 1))])
add("slice_neg_clamp", (5, 6), [("slice", (100, -100, -100, 100, -3, 1))])
add("slice_of_transpose", (4, 5, 6), [("transpose", (2, 0, 1)), ("slice", (1, 3, 0, 6, 0, 5, 2, -1, 2))])
add("diagonal", (4, 5), [("diagonal", (0, 0, 1))])
add("diagonal_off", (4, 5, 3), [("diagonal", (1, 0, 1))])
add("diagonal_neg", (4, 3, 5), [("diagonal", (-2, 2, 0))])
add("diagonal_empty", (3, 4), [("diagonal", (7, 0, 1))])
add("as_strided_windows", (10,), [("as_strided", (2, 4, 3, 2, 1, 1))])
add("as_strided_neg", (12,), [("as_strided", (2, 3, 2, -4, 1, 8))])
add("as_strided_t", (3, 4), [("transpose_all", ()), ("as_strided", (1, 6, 2, 0))])
add("broadcast_to", (3, 1), [("broadcast_to", (2, 3, 4))])
add("broadcast_slice", (1, 5), [("broadcast_to", (4, 5)), ("slice", (3, 4, -5, 0, -2, -1))])
add("add_transposed_slice", (6, 5), [("transpose_all", ()), ("slice", (0, 1, 5, 6, 2, 2)), ("add_arange", ())])
add("add_diagonal", (5, 5), [("diagonal", (1, 0, 1)), ("add_arange", ())])
add("atleast_3d_1", (4,), [("atleast", (3,))])
add("atleast_2d_1", (4,), [("atleast", (2,))])
add("atleast_3d_2", (4, 2), [("atleast", (3,))])
add("atleast_1d_0", (), [("atleast", (1,))])
add("split_equal", (6, 4), [("split", (3, 0, 1))])
add("split_axis", (4, 6), [("split", (2, -1, 1))])
add("split_sections", (10, 3), [("split_sections", (0, 1, 2, 7))])
add("split_sections_last", (10, 3), [("split_sections", (0, 2, 2, 7))])
# ---- copies ----
add("concat0", (2, 3), [("concat_self", (0,))])
add("concat_t", (3, 4), [("transpose_all", ()), ("concat_self", (-1,))])
add("stack0", (2, 3), [("stack_self", (0,))])
add("stack_last", (2, 3), [("stack_self", (-1,))])
add("pad_const", (3, 4), [("pad_const", (7, 1, 2, 0, 3))])
add("pad_edge", (3, 4), [("pad_edge", (2, 1, 3, 2))])
add("pad_edge_t", (3, 4, 2), [("transpose_all", ()), ("pad_edge", (1, 0, 0, 2, 3, 1))])
add("pad_reflect", (3, 4), [("pad_reflect", (2, 7, 3, 1))])
add("pad_symmetric", (3, 4), [("pad_symmetric", (5, 1, 0, 9))])
add("pad_reflect_one", (1, 4), [("pad_reflect", (2, 3, 0, 0))])
add("tile", (2, 3), [("tile", (2, 3))])
add("tile_more", (2, 3), [("tile", (2, 1, 2))])
add("tile_fewer", (2, 3, 2), [("tile", (3,))])
add("repeat", (2, 3), [("repeat", (3, 1))])
add("repeat_neg", (2, 3, 2), [("repeat", (2, -3))])
add("repeat_flat", (2, 3), [("repeat_flat", (2,))])
add("roll", (3, 4), [("roll", (1, 5, 1))])
add("roll_two", (3, 4, 5), [("roll", (2, -1, 2, 0, -1))])
add("roll_flat", (3, 4), [("roll_flat", (-5,))])
add("diag_vec", (4,), [("diag", (0,))])
add("diag_vec_k", (3,), [("diag", (2,))])
add("diag_vec_negk", (3,), [("diag", (-1,))])
add("diag_mat", (4, 5), [("diag", (-1,))])
add("trace", (4, 5), [("trace", (0, 0, 1))])
add("trace_off", (3, 4, 5), [("trace", (-1, 2, 0))])
add("trace_t", (4, 4), [("transpose_all", ()), ("trace", (2, -1, -2))])
add("kron", (2, 3), [("kron_self_t", ())])
add("kron_vec", (2, 2, 2), [("kron_vec", ())])
add("kron_scalar", (), [("kron_vec", ())])
add("fftshift", (5, 4, 3), [("fftshift", (0, -1))])
add("ifftshift", (5, 4, 3), [("ifftshift", (2, 0, 1))])
add("contiguous_t", (3, 4), [("transpose_all", ()), ("contiguous", ())])


def cfloats(a):
    a = np.asarray(a, dtype=np.float32).ravel()
    if a.size == 0:
        return "{0}"
    return "{" + ", ".join(repr(float(v)) + "f" for v in a) + "}"


def cints(v):
    v = list(v)
    return "{" + ", ".join(str(int(i)) for i in v) + "}" if v else "{0}"


out = ["/* Generated by tests/gen/gen_shape.py; do not edit. */",
       "#define SHAPE_MAX_STEPS 4", ""]
for i, (name, shape, steps, x, y) in enumerate(cases):
    out.append("static const float shape_in_%d[] = %s;" % (i, cfloats(x)))
    out.append("static const float shape_out_%d[] = %s;" % (i, cfloats(y)))
out.append("")
out.append("static const struct shape_case shape_cases[] = {")
for i, (name, shape, steps, x, y) in enumerate(cases):
    st = ", ".join('{"%s", %d, %s}' % (op, len(p), cints(p)) for op, p in steps)
    out.append('  {"%s", %d, %s, %d, {%s}, shape_in_%d, %d, %s, shape_out_%d},' % (
        name, len(shape), cints(shape), len(steps), st, i, y.ndim, cints(y.shape), i))
out.append("};")
with open("tests/data/shape_cases.h", "w") as f:
    f.write("\n".join(out) + "\n")
print("wrote %d cases" % len(cases))


# ---------------------------------------------------------------------------
# Indexing references: tests/data/index_cases.h (test_index_cases.c).
# Each case: an op name, input arrays (any dtype; data stored as doubles),
# integer params, and the expected output.
DT = {"bool": 0, "uint8": 1, "uint16": 2, "uint32": 3, "uint64": 4, "int8": 5, "int16": 6,
      "int32": 7, "int64": 8, "float16": 9, "float32": 10, "float64": 11}
icases = []


def farr(shape, ints=False):
    if ints:
        return rng.integers(-5, 6, size=shape).astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


def iadd(name, op, arrays, params, out):
    icases.append((name, op, arrays, list(params), np.asarray(out)))


def wrap(i, n):
    return i + n if i < 0 else i


def gather_ref(a, idx, axes, slice_sizes):
    idx = np.broadcast_arrays(*idx) if idx else []
    ishape = idx[0].shape if idx else ()
    out = np.zeros(ishape + tuple(slice_sizes), a.dtype)
    for pos in np.ndindex(*ishape):
        start = [0] * a.ndim
        for k, ax in enumerate(axes):
            start[ax] = wrap(int(idx[k][pos]), a.shape[ax])
        sl = tuple(slice(start[d], start[d] + slice_sizes[d]) for d in range(a.ndim))
        out[pos] = a[sl]
    return out


def scatter_ref(a, idx, upd, axes, mode):
    out = a.copy()
    idx = np.broadcast_arrays(*idx) if idx else []
    ishape = idx[0].shape if idx else ()
    sl_shape = upd.shape[len(ishape):]
    for pos in np.ndindex(*ishape):
        start = [0] * a.ndim
        for k, ax in enumerate(axes):
            start[ax] = wrap(int(idx[k][pos]), a.shape[ax])
        sl = tuple(slice(start[d], start[d] + sl_shape[d]) for d in range(a.ndim))
        u = upd[pos]
        if mode == "none":
            out[sl] = u
        elif mode == "add":
            out[sl] = out[sl] + u
        elif mode == "prod":
            out[sl] = out[sl] * u
        elif mode == "max":
            out[sl] = np.maximum(out[sl], u)
        else:
            out[sl] = np.minimum(out[sl], u)
    return out


a = farr((3, 4, 5))
i = np.array([[0, -1, 2], [3, 1, -4]], np.int32)
iadd("take_axis1", "take_axis", [a, i], [1], np.take(a, i, axis=1))
iadd("take_axis_neg", "take_axis", [a, i[:, :2].astype(np.int16)], [-1], np.take(a, i[:, :2], axis=-1))
a = farr((3, 4))
i = np.array([11, 0, -12, 5, 5], np.int64)
iadd("take_flat", "take", [a, i], [], np.take(a, i))
i = np.array(2, np.uint8)
iadd("take_scalar_idx", "take_axis", [a, i], [0], np.take(a, 2, axis=0))
i = np.array([[3, 0], [1, 1], [-1, 2]], np.int8)
iadd("take_along1", "take_along", [a, i], [1], np.take_along_axis(a, i % 4, axis=1))
i = np.array([[2, 0, 1, 1]], np.uint32)
iadd("take_along0", "take_along", [a, i], [0], np.take_along_axis(a, i.astype(np.int64), axis=0))
a = farr((3, 2, 4))
i = np.array([[[1], [0], [-2], [1], [1]]], np.int32)  # (1, 5, 1)
iadd("take_along_bcast", "take_along", [a, i], [1], np.take_along_axis(a, i % 2, axis=1))

a = farr((3, 4), ints=True)
i = np.array([[1], [3], [0]], np.int32)
v = farr((3, 1), ints=True)
o = a.copy()
np.put_along_axis(o, i, v, axis=1)
iadd("put_along", "put_along", [a, i, v], [1], o)
o = a.copy()
np.put_along_axis(o, i, np.float32(7), axis=1)
iadd("put_along_scalar", "put_along", [a, i, np.array(7, np.float32)], [1], o)
i = np.array([[0, 1, 0, 2], [0, 2, 2, -1]], np.int64)
v = farr((2, 4), ints=True)
o = a.copy()
for r in range(2):
    for c in range(4):
        o[i[r, c] % 3, c] += v[r, c]
iadd("scatter_add_axis0", "scatter_add_axis", [a, i, v], [0], o)

a = farr((4, 5, 6))
i0 = np.array([0, 3, -1], np.int32)
i1 = np.array([4, 0, 2], np.int32)
iadd("gather2", "gather", [a, i0, i1], [2, 0, 2, 1, 5, 2], gather_ref(a, [i0, i1], [0, 2], [1, 5, 2]))
i0 = np.array([[1], [2]], np.uint16)
i1 = np.array([0, 1, -2], np.int8)
iadd("gather_bcast", "gather", [a, i0, i1], [2, 1, 0, 2, 3, 3],
     gather_ref(a, [i0, i1], [1, 0], [2, 3, 3]))
iadd("gather_none", "gather", [a], [0, 2, 2, 2], gather_ref(a, [], [], [2, 2, 2]))

a = farr((5, 4), ints=True)
i = np.array([3, 0, 4], np.int32)
u = farr((3, 1, 4), ints=True)
iadd("scatter_none", "scatter", [a, i, u], [1, 0], scatter_ref(a, [i], u, [0], "none"))
i = np.array([3, 0, 3, -2, 0], np.int32)
u = farr((5, 1, 4), ints=True)
for mode in ("add", "prod", "max", "min"):
    iadd("scatter_" + mode, "scatter_" + mode, [a, i, u], [1, 0], scatter_ref(a, [i], u, [0], mode))
i0 = np.array([1, 2, 1], np.int64)
i1 = np.array([0, 2, 2], np.int64)
u = farr((3, 2, 2), ints=True)
iadd("scatter_add_2d", "scatter_add", [a, i0, i1, u], [2, 0, 1],
     scatter_ref(a, [i0, i1], u, [0, 1], "add"))

a = farr((5, 6), ints=True)
u = farr((3, 3), ints=True)
o = a.copy()
o[0:5:2, 0:6:2] = u
iadd("slice_update", "slice_update", [a, u], [0, 0, 5, 6, 2, 2], o)
u = farr((3,), ints=True)
for mode, fn in (("add", np.add), ("prod", np.multiply), ("max", np.maximum), ("min", np.minimum)):
    o = a.copy()
    o[4:0:-1, 1:4] = fn(o[4:0:-1, 1:4], u)
    iadd("slice_update_" + mode, "slice_update_" + mode, [a, u], [4, 1, 0, 4, -1, 1], o)
o = a.copy()
o[:, :] = u[:1]
iadd("slice_update_whole", "slice_update", [a, u[:1]], [0, 0, 5, 6, 1, 1], o)

a = farr((5, 6))
st = np.array([2, 1], np.int32)
iadd("slice_dynamic", "slice_dynamic", [a, st], [2, 0, 1, 2, 3], a[2:4, 1:4])
st = np.array([3], np.int64)
iadd("slice_dynamic_1", "slice_dynamic", [a, st], [1, -1, 5, 2], a[0:5, 3:5])
u = farr((2, 3))
o = a.copy()
o[1:3, 2:5] = u
iadd("slice_update_dynamic", "slice_update_dynamic", [a, u, np.array([1, 2], np.int32)], [2, 0, 1], o)
u = farr((3,))
o = a.copy()
o[4, 0:3] = u
iadd("slice_update_dynamic_lead", "slice_update_dynamic", [a, u, np.array([4], np.int32)], [1, 0], o)


def masked_ref(a, mask, values):
    out = a.copy()
    m = np.broadcast_to(mask.reshape(mask.shape + (1,) * (a.ndim - mask.ndim)), a.shape)
    u = a.ndim - mask.ndim
    v = values
    if v.ndim < u + 1:
        v = v.reshape((1,) * (u + 1 - v.ndim) + v.shape)
        v = np.broadcast_to(v, (mask.size,) + a.shape[a.ndim - u:])
    else:
        v = np.broadcast_to(v, (v.shape[0],) + a.shape[a.ndim - u:])
    flat = v.ravel()
    k = 0
    for pos in np.ndindex(*a.shape):
        if m[pos]:
            out[pos] = flat[k]
            k += 1
    return out


a = farr((3, 4))
mask = rng.random((3, 4)) < 0.5
vals = farr((12,))
iadd("masked_scatter_full", "masked_scatter", [a, mask, vals], [], masked_ref(a, mask, vals))
a = farr((4, 3, 2))
mask = np.array([True, False, True, True])
vals = farr((3, 3, 2))
iadd("masked_scatter_rows", "masked_scatter", [a, mask, vals], [], masked_ref(a, mask, vals))
vals = farr((2,))
iadd("masked_scatter_bcast", "masked_scatter", [a, mask, vals], [], masked_ref(a, mask, vals))
vals = np.array(5.5, np.float32)
iadd("masked_scatter_scalar", "masked_scatter", [a, mask, vals], [], masked_ref(a, mask, vals))

x, y, z = farr((3,)), farr((2,)), farr((4,))
for sparse in (0, 1):
    for ij in (0, 1):
        for pick in range(3):
            g = np.meshgrid(x, y, z, sparse=bool(sparse), indexing="ij" if ij else "xy")[pick]
            iadd("meshgrid_%d%d%d" % (sparse, ij, pick), "meshgrid", [x, y, z], [sparse, ij, pick], g)
g = np.meshgrid(x.reshape(3, 1), y, indexing="xy")[0]
iadd("meshgrid_2d_in", "meshgrid", [x.reshape(3, 1), y], [0, 0, 0], g)


def carr(x):
    x = np.asarray(x)
    d = x.astype(np.float64).ravel()
    data = "{" + ", ".join(repr(float(v)) for v in d) + "}" if d.size else "{0}"
    return x, data


out = ["/* Generated by tests/gen/gen_shape.py; do not edit. */", ""]
for ci, (name, op, arrays, params, o) in enumerate(icases):
    for k, x in enumerate(arrays + [o]):
        _, data = carr(x)
        out.append("static const double index_d%d_%d[] = %s;" % (ci, k, data))
out.append("")
out.append("static const struct index_case index_cases[] = {")
for ci, (name, op, arrays, params, o) in enumerate(icases):
    arrs = []
    for k, x in enumerate(arrays + [o]):
        x = np.asarray(x)
        arrs.append("{%d, %d, %s, index_d%d_%d}" % (DT[str(x.dtype)], x.ndim, cints(x.shape), ci, k))
    out.append('  {"%s", "%s", %d, {%s}, %d, %s, %s},' % (
        name, op, len(arrays), ", ".join(arrs[:-1]), len(params), cints(params), arrs[-1]))
out.append("};")
with open("tests/data/index_cases.h", "w") as f:
    f.write("\n".join(out) + "\n")
print("wrote %d index cases" % len(icases))
