"""Generates the reference files of tests/io (run from the repository root):
numpy-written .npy files (every dtype, versions 1/2/3, Fortran order,
big-endian, 0-d, empty) and hand-written .safetensors files. Element i of
the dtype files is a formula of i that tests/io recomputes in C:
  bool: i % 3 == 0; unsigned: (i * 37 + 5) % 251 (u8) / (i * 2039 + 7) (wider);
  signed: (i * 37 + 5) % 251 - 125 (i8) / (i * 2039 + 7) * (-1)^i (wider);
  float: (i * 0.75 - 4.5) (exact in f16/bf16); complex64: real (i*0.75-4.5), imag (-i*0.5).
Shape (3, 4) unless the name says otherwise."""
import json
import struct

import numpy as np

D = "tests/data/"
N = 12


def values(kind, size):
    i = np.arange(N, dtype=np.int64)
    if kind == "b":
        return i % 3 == 0
    if kind == "u":
        return (i * 37 + 5) % 251 if size == 1 else i * 2039 + 7
    if kind == "i":
        return (i * 37 + 5) % 251 - 125 if size == 1 else (i * 2039 + 7) * np.where(i % 2, -1, 1)
    if kind == "f":
        return i * 0.75 - 4.5
    if kind == "c":
        return (i * 0.75 - 4.5) - 1j * (i * 0.5)
    raise ValueError(kind)


for code in ["b1", "u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8", "f2", "f4", "f8", "c8"]:
    a = values(code[0], int(code[1:])).astype(code).reshape(3, 4)
    np.save(D + f"io_{code}.npy", a)

f4 = values("f", 4).astype("<f4").reshape(3, 4)
np.save(D + "io_fortran.npy", np.asfortranarray(f4))
np.save(D + "io_fortran3d.npy", np.asfortranarray(values("f", 4).astype("<f8").reshape(2, 3, 2)))
np.save(D + "io_be_i4.npy", values("i", 4).astype(">i4").reshape(3, 4))
np.save(D + "io_be_f8.npy", values("f", 8).astype(">f8").reshape(3, 4))
np.save(D + "io_be_c8.npy", values("c", 8).astype(">c8").reshape(3, 4))
np.save(D + "io_scalar.npy", np.float32(3.5))
np.save(D + "io_empty.npy", np.zeros((0, 3), dtype="<f4"))
np.save(D + "io_1d.npy", values("i", 8).astype("<i8"))
for v in [(2, 0), (3, 0)]:
    with open(D + f"io_v{v[0]}.npy", "wb") as fh:
        np.lib.format.write_array(fh, f4, version=v)


def write_safetensors(path, tensors, metadata=None, pad=True):
    header, blobs, off = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def bf16_bytes(x):
    u = np.asarray(x, dtype="<f4").view("<u4")
    return (u >> 16).astype("<u2").tobytes()  # values are exact in bf16


t = {
    "w": ("F32", (3, 4), values("f", 4).astype("<f4").tobytes()),
    "h": ("F16", (2, 6), values("f", 2).astype("<f2").tobytes()),
    "bf": ("BF16", (12,), bf16_bytes(values("f", 4))),
    "idx": ("I32", (4, 3), values("i", 4).astype("<i4").tobytes()),
    "mask": ("BOOL", (3, 4), values("b", 1).astype("|b1").tobytes()),
    "bytes": ("U8", (12,), values("u", 1).astype("|u1").tobytes()),
    "big": ("I64", (2, 2, 3), values("i", 8).astype("<i8").tobytes()),
    "scalar": ("F64", (), np.float64(-2.25).tobytes()),
    "empty": ("F32", (0, 5), b""),
}
write_safetensors(D + "io_ref.safetensors", t, {"format": "lace", "note": "quote \" and \u00e9"})
# The same layout as mlx-c's examples/arrays.safetensors (unpadded header).
write_safetensors(D + "io_arrays.safetensors",
                  {"b": ("F32", (1,), np.float32(2).tobytes()), "a": ("F32", (1,), np.float32(1).tobytes())},
                  {"format": "mlx"}, pad=False)


# ---- GGUF v3, written by hand (layout: src/io/gguf.c) ----
def gguf_str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def write_gguf(path, kvs, tensors, align=32, quant=False):
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, vtype, payload in kvs:
        out += gguf_str(key) + struct.pack("<I", vtype) + payload
    off, blobs = 0, []
    for name, ggml, shape, raw in tensors:
        out += gguf_str(name) + struct.pack("<I", len(shape))
        out += b"".join(struct.pack("<Q", d) for d in reversed(shape))
        out += struct.pack("<IQ", ggml, off)
        blobs.append((off, raw))
        off += len(raw)
        if len(blobs) < len(tensors):  # no padding after the last tensor
            off += -off % align
    out += b"\0" * (-len(out) % align)
    data = bytearray(off)
    for o, raw in blobs:
        data[o:o + len(raw)] = raw
    with open(path, "wb") as fh:
        fh.write(out + bytes(data))


kvs = [
    ("general.name", 8, gguf_str("lace test")),
    ("general.alignment", 4, struct.pack("<I", 64)),
    ("count", 4, struct.pack("<I", 4099)),
    ("scale", 6, struct.pack("<f", -0.75)),
    ("flag", 7, b"\x01"),
    ("ids", 9, struct.pack("<IQ", 5, 5) + np.array([3, -1, 4, -1, 5], "<i4").tobytes()),
    ("tokens", 9, struct.pack("<IQ", 8, 3) + gguf_str("a") + gguf_str("") + gguf_str("\u00e9t\u00e9")),
]
tensors = [
    ("w", 0, (3, 4), values("f", 4).astype("<f4").tobytes()),
    ("h", 1, (2, 6), values("f", 2).astype("<f2").tobytes()),
    ("idx", 26, (4, 3), values("i", 4).astype("<i4").tobytes()),
    ("b", 24, (12,), values("i", 1).astype("|i1").tobytes()),
]
write_gguf(D + "io_ref.gguf", kvs, tensors, align=64)
# Quantized tensors (ggml blocks of 32) and their dequantized values, for tests/io.
rng = np.random.default_rng(3)


def q_blocks(kind, nblocks):
    raw, deq = b"", []
    for _ in range(nblocks):
        d = np.float16(rng.uniform(0.01, 0.2))
        if kind == 8:
            q = rng.integers(-128, 128, 32).astype("i1")
            raw += d.tobytes() + q.tobytes()
            deq += list(q.astype(np.float64) * float(d))
            continue
        nib = rng.integers(0, 16, 32).astype("u1")
        qs = (nib[:16] | (nib[16:] << 4)).astype("u1").tobytes()
        if kind == 2:
            raw += d.tobytes() + qs
            deq += list((nib.astype(np.float64) - 8) * float(d))
        else:
            m = np.float16(rng.uniform(-1, 1))
            raw += d.tobytes() + m.tobytes() + qs
            deq += list(nib.astype(np.float64) * float(d) + float(m))
    return raw, deq


qt, qref = [], {}
for name, kind, shape in [("q40.weight", 2, (2, 64)), ("q41", 3, (3, 32)), ("q80.weight", 8, (2, 32))]:
    raw, deq = q_blocks(kind, shape[0] * shape[1] // 32)
    qt.append((name, kind, shape, raw))
    qref[name.split(".")[0]] = deq
write_gguf(D + "io_quant.gguf", kvs[:1], qt)
with open(D + "io_quant_ref.h", "w") as fh:
    fh.write("/* Dequantized values of tests/data/io_quant.gguf (tests/gen/gen_io.py). */\n")
    for name, deq in qref.items():
        fh.write(f"static const double {name}_ref[{len(deq)}] = {{\n")
        fh.write(",\n".join(", ".join(repr(float(v)) for v in deq[i:i + 8]) for i in range(0, len(deq), 8)))
        fh.write("};\n")
# "d.weight" quantized adds "d.scales", which also names a plain tensor: an error.
write_gguf(D + "io_qdup.gguf", kvs[:1], [("d.scales", 0, (1,), bytes(4)), ("d.weight", 8, (32,), bytes(34))])
write_gguf(D + "io_q4k.gguf", kvs[:1], [("k", 12, (256,), bytes(144))])
