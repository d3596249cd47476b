#!/usr/bin/env python3
"""Reference fixtures for tests/fast: rms_norm, layer_norm, rope and
scaled_dot_product_attention computed in float64 with numpy, following MLX's
semantics (mlx/fast.cpp). Inputs are rounded to the case's dtype first, so
the C test feeds exactly these values. Writes tests/data/fast_cases.h.

Run: python3 tests/gen/gen_fast.py   (deterministic; seed fixed)"""
import os
import numpy as np

OUT = os.path.join(os.path.dirname(__file__), "..", "data", "fast_cases.h")
rng = np.random.default_rng(20261202)

# mlx_dtype values (mlx/c/array.h)
F16, F32, F64, BF16, BOOL = 9, 10, 11, 12, 0
LOWEST = {F16: -65504.0, BF16: -3.3895313892515355e38, F32: -3.4028234663852886e38,
          F64: -1.7976931348623157e308}


def round_to(a, dt):
    a = np.asarray(a, dtype=np.float64)
    if dt == F16:
        return a.astype(np.float16).astype(np.float64)
    if dt == F32:
        return a.astype(np.float32).astype(np.float64)
    if dt == BF16:
        b = a.astype(np.float32).view(np.uint32).astype(np.uint64)
        b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16 << 16
        return b.astype(np.uint32).view(np.float32).astype(np.float64)
    return a


def promote(a, b):
    if a == b:
        return a
    s = {a, b}
    if F64 in s:
        return F64
    if F32 in s or s == {F16, BF16}:
        return F32
    return a


out = []
counter = [0]


def arr(name, values, ctype="double", digits=9):
    """digits: 9 is exact for float32-representable inputs; references use
    10 (float cases) or 17 (float64 cases)."""
    values = np.asarray(values).ravel()
    if values.size == 0:
        out.append(f"static const {ctype} {name}[1] = {{0}};")
        return name
    body = ", ".join(f"{float(v):.{digits}g}" if ctype == "double" else str(int(v)) for v in values)
    out.append(f"static const {ctype} {name}[{values.size}] = {{{body}}};")
    return name


def shape_str(shape):
    s = list(shape) + [0] * (5 - len(shape))
    return "{" + ", ".join(str(int(v)) for v in s) + "}"


# ---------------------------------------------------------------- norms
norm_rows = []


def norm_case(layer, shape, dt, wdt=None, bdt=None, eps=1e-5, scale=1.0, shift=0.0):
    i = counter[0]
    counter[0] += 1
    x = round_to(rng.normal(shift, scale, size=shape), dt)
    d = shape[-1]
    w = round_to(rng.uniform(-2, 2, size=d), wdt) if wdt is not None else None
    b = round_to(rng.normal(0, 1, size=d), bdt) if bdt is not None else None
    ot = dt
    if w is not None:
        ot = promote(ot, wdt)
    if b is not None:
        ot = promote(ot, bdt)
    xc = round_to(x, ot)
    if layer:
        mu = xc.mean(-1, keepdims=True)
        var = ((xc - mu) ** 2).mean(-1, keepdims=True)
        y = (xc - mu) / np.sqrt(var + np.float64(np.float32(eps)))
    else:
        y = xc / np.sqrt((xc ** 2).mean(-1, keepdims=True) + np.float64(np.float32(eps)))
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    dg = 17 if dt == F64 else 9
    nx = arr(f"norm{i}_x", x, digits=dg)
    nw = arr(f"norm{i}_w", w, digits=17 if wdt == F64 else 9) if w is not None else "NULL"
    nb = arr(f"norm{i}_b", b, digits=17 if bdt == F64 else 9) if b is not None else "NULL"
    ny = arr(f"norm{i}_y", y, digits=17 if ot == F64 else 10)
    norm_rows.append(
        f"  {{{int(layer)}, {len(shape)}, {shape_str(shape)}, {dt}, {wdt if wdt is not None else -1}, "
        f"{bdt if bdt is not None else -1}, {ot}, {eps!r}f, {nx}, {nw}, {nb}, {ny}}},")


for layer in (0, 1):
    norm_case(layer, (5, 33), F32, F32, F32 if layer else None)
    norm_case(layer, (2, 3, 16), F32)
    norm_case(layer, (7,), F32, F32, None, eps=1e-2)
    norm_case(layer, (2, 130), F16, F16, F16 if layer else None)
    norm_case(layer, (4, 24), BF16, BF16, BF16 if layer else None)
    norm_case(layer, (2, 40), F16, F32, None)  # mixed: output float32
    norm_case(layer, (3, 17), F64, F64, F64 if layer else None)
    norm_case(layer, (2, 64), F32, None, None, scale=1e-3, shift=5.0)  # large mean, small spread
    norm_case(layer, (1, 9), F16)
norm_case(1, (2, 12), F32, None, F32)  # bias without weight

# ---------------------------------------------------------------- rope
rope_rows = []


def rope_case(shape, dims, traditional, dt, base=10000.0, scale=1.0, offset=0, freqs=False,
              offsets=None):
    i = counter[0]
    counter[0] += 1
    x = round_to(rng.normal(0, 1, size=shape), dt)
    half = dims // 2
    fr = None
    if freqs:
        fr = round_to(rng.uniform(0.5, 50.0, size=half), F32)
        inv = 1.0 / fr
    else:
        inv = np.exp(-np.arange(half) * np.log(np.float64(np.float32(base))) / half)
    B, T = shape[0], shape[-2]
    offs = np.array(offsets if offsets is not None else [offset], dtype=np.float64)
    y = x.copy()
    xr = x.reshape(B, -1, T, shape[-1])
    yr = y.reshape(B, -1, T, shape[-1])
    for b in range(B):
        off = offs[b] if offs.size > 1 else offs[0]
        pos = (np.arange(T) + off) * np.float64(np.float32(scale))
        th = pos[:, None] * inv[None, :]
        c, s = np.cos(th), np.sin(th)
        if traditional:
            x1, x2 = xr[b, :, :, 0:dims:2], xr[b, :, :, 1:dims:2]
            yr[b, :, :, 0:dims:2] = x1 * c - x2 * s
            yr[b, :, :, 1:dims:2] = x1 * s + x2 * c
        else:
            x1, x2 = xr[b, :, :, :half], xr[b, :, :, half:dims]
            yr[b, :, :, :half] = x1 * c - x2 * s
            yr[b, :, :, half:dims] = x1 * s + x2 * c
    nx = arr(f"rope{i}_x", x, digits=17 if dt == F64 else 9)
    nf = arr(f"rope{i}_f", fr) if fr is not None else "NULL"
    no = arr(f"rope{i}_off", offs.astype(np.int64), "int")
    ny = arr(f"rope{i}_y", y, digits=17 if dt == F64 else 10)
    rope_rows.append(
        f"  {{{len(shape)}, {shape_str(shape)}, {dims}, {int(traditional)}, {dt}, {base!r}f, "
        f"{scale!r}f, {offs.size if offsets is not None else 0}, {no}, {nf}, {nx}, {ny}}},")


rope_case((1, 2, 5, 8), 8, False, F32)
rope_case((1, 2, 5, 8), 8, True, F32)
rope_case((2, 3, 4, 10), 6, False, F32, offset=7)  # partial rotation, the rest copied
rope_case((2, 3, 4, 10), 6, True, F32, offset=3, scale=0.5)
rope_case((2, 6, 16), 16, False, F32, base=500.0, offset=100)  # 3-d input
rope_case((2, 2, 2, 3, 8), 4, True, F32, offset=2)  # 5-d input
rope_case((2, 2, 3, 8), 8, False, F32, freqs=True, offset=1)
rope_case((3, 1, 4, 8), 8, False, F32, offsets=[0, 5, 11])  # per-batch offsets
rope_case((3, 1, 4, 8), 8, True, F32, offsets=[2, 0, 9])
rope_case((4, 2, 3, 8), 8, False, F32, offsets=[5, 7, 5, 6], scale=0.5)  # overlapping positions
rope_case((1, 2, 6, 32), 32, False, F16, offset=20)
rope_case((1, 2, 6, 32), 32, True, BF16, offset=4)
rope_case((1, 2, 3, 12), 12, False, F64, offset=1000)

# ---------------------------------------------------------------- attention
sdpa_rows = []


def sdpa_case(B, Hq, Hkv, qL, kL, D, Dv, dt, mode="", mask_shape=None, mask_bool=False,
              sinks=False, scale=None, mask_dt=None, full_row_masked=False):
    i = counter[0]
    counter[0] += 1
    q = round_to(rng.normal(0, 1, size=(B, Hq, qL, D)), dt)
    k = round_to(rng.normal(0, 1, size=(B, Hkv, kL, D)), dt)
    v = round_to(rng.normal(0, 1, size=(B, Hkv, kL, Dv)), dt)
    if scale is None:
        scale = float(np.float32(1.0 / np.sqrt(D)))
    rep = Hq // Hkv
    kk = np.repeat(k, rep, axis=1)
    vv = np.repeat(v, rep, axis=1)
    sc = np.float64(np.float32(scale)) * q @ kk.swapaxes(-1, -2)
    low = LOWEST[dt]
    mask = None
    if mode == "causal":
        allowed = np.arange(qL)[:, None] + (kL - qL) >= np.arange(kL)[None, :]
        sc = np.where(allowed, sc, low)
    elif mask_shape is not None:
        if mask_bool:
            mask = rng.uniform(size=mask_shape) < 0.7
            if full_row_masked:
                mask[..., 0, :] = False
            sc = np.where(np.broadcast_to(mask, sc.shape), sc, low)
        else:
            mask = round_to(rng.normal(0, 2, size=mask_shape), mask_dt or dt)
            sc = sc + mask
    sk = None
    if sinks:
        sk = round_to(rng.normal(0, 1, size=Hq), dt)
        full = np.concatenate([np.broadcast_to(sk[None, :, None, None], (B, Hq, qL, 1)), sc], -1)
        m = full.max(-1, keepdims=True)
        e = np.exp(full - m)
        p = (e / e.sum(-1, keepdims=True))[..., 1:]
    else:
        m = sc.max(-1, keepdims=True)
        e = np.exp(sc - m)
        p = e / e.sum(-1, keepdims=True)
    y = p @ vv
    dg = 17 if dt == F64 else 9
    nq, nk, nv = (arr(f"sdpa{i}_q", q, digits=dg), arr(f"sdpa{i}_k", k, digits=dg),
                  arr(f"sdpa{i}_v", v, digits=dg))
    nm = arr(f"sdpa{i}_m", mask.astype(np.float64), digits=dg) if mask is not None else "NULL"
    ns = arr(f"sdpa{i}_s", sk, digits=dg) if sk is not None else "NULL"
    ny = arr(f"sdpa{i}_y", y, digits=17 if dt == F64 else 10)
    ms = mask_shape if mask is not None else ()
    mdt = BOOL if mask_bool else (mask_dt or dt)
    sdpa_rows.append(
        f"  {{{B}, {Hq}, {Hkv}, {qL}, {kL}, {D}, {Dv}, {dt}, \"{mode}\", {len(ms)}, "
        f"{shape_str(ms)}, {mdt}, {scale!r}f, {nq}, {nk}, {nv}, {nm}, {ns}, {ny}}},")


sdpa_case(1, 2, 2, 3, 3, 8, 8, F32)
sdpa_case(2, 4, 2, 5, 7, 8, 8, F32)  # GQA
sdpa_case(1, 8, 2, 1, 9, 16, 16, F32, mode="causal")  # decode step
sdpa_case(2, 4, 1, 4, 10, 8, 6, F32, mode="causal")  # qL < kL, Dv != D, MQA
sdpa_case(1, 2, 2, 6, 6, 8, 8, F32, mode="causal")
sdpa_case(1, 2, 2, 5, 3, 8, 8, F32, mode="causal")  # qL > kL: first rows fully masked
sdpa_case(2, 4, 2, 3, 5, 8, 8, F32, mode="array", mask_shape=(3, 5), mask_bool=False)
sdpa_case(2, 4, 2, 3, 5, 8, 8, F32, mode="array", mask_shape=(2, 4, 3, 5), mask_bool=True)
sdpa_case(2, 4, 4, 3, 5, 8, 8, F32, mode="array", mask_shape=(2, 1, 3, 5), mask_bool=True,
          full_row_masked=True)
sdpa_case(1, 4, 2, 2, 6, 8, 8, F32, mode="array", mask_shape=(4, 1, 6), mask_bool=False)
sdpa_case(1, 4, 2, 3, 6, 8, 8, F32, sinks=True)
sdpa_case(1, 4, 2, 3, 6, 8, 8, F32, mode="causal", sinks=True, scale=0.7)
sdpa_case(1, 4, 2, 4, 8, 16, 16, F16, mode="causal")
sdpa_case(1, 4, 2, 4, 8, 16, 16, BF16)
sdpa_case(1, 2, 1, 3, 4, 8, 8, F16, mode="array", mask_shape=(3, 4), mask_bool=False)
sdpa_case(1, 2, 2, 3, 4, 8, 8, F64, mode="causal")
sdpa_case(1, 2, 1, 2, 33, 16, 16, F32)  # longer rows
sdpa_case(1, 2, 1, 3, 37, 40, 36, F32, mode="causal")  # blocks of 32 keys/features + remainders
sdpa_case(1, 2, 1, 2, 35, 8, 34, BF16, mode="array", mask_shape=(2, 35), mask_bool=True)

with open(OUT, "w") as f:
    f.write("/* Generated by tests/gen/gen_fast.py: do not edit. float64 references\n"
            " * following MLX's fast ops; inputs already rounded to the case dtype. */\n")
    f.write("#include <stddef.h>\n\n")
    f.write("\n".join(out))
    f.write("\n\nstruct norm_case { int layer, ndim, shape[5], dt, wdt, bdt, odt; float eps;\n"
            "  const double *x, *w, *b, *y; };\n")
    f.write("static const struct norm_case norm_cases[] = {\n" + "\n".join(norm_rows) + "\n};\n\n")
    f.write("struct rope_case { int ndim, shape[5], dims, traditional, dt; float base, scale;\n"
            "  int noffsets; const int *offsets; const double *freqs, *x, *y; };\n")
    f.write("static const struct rope_case rope_cases[] = {\n" + "\n".join(rope_rows) + "\n};\n\n")
    f.write("struct sdpa_case { int B, Hq, Hkv, qL, kL, D, Dv, dt; const char *mode;\n"
            "  int mask_ndim, mask_shape[5], mask_dt; float scale;\n"
            "  const double *q, *k, *v, *mask, *sinks, *y; };\n")
    f.write("static const struct sdpa_case sdpa_cases[] = {\n" + "\n".join(sdpa_rows) + "\n};\n")
print("wrote", OUT)
