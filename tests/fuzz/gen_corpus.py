#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz harnesses into tests/fuzz/corpus/<harness>/.

Seeds: the small files of tests/data/ plus hand-made edge cases (zero-size
dimensions next to huge ones, overflowing shapes, truncated and overlapping
data, deep JSON, ...) and byte programs for the API harness. Deterministic;
rerun after changing it. Inputs found by fuzzing live in tests/fuzz/crashes/
and are not written here."""
import json
import os
import random
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
OUT = os.path.join(HERE, "corpus")


def put(harness, name, data):
    d = os.path.join(OUT, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def copy_data(harness, ext):
    for f in sorted(os.listdir(DATA)):
        if f.endswith(ext) and os.path.getsize(os.path.join(DATA, f)) <= 4096:
            shutil.copy(os.path.join(DATA, f), os.path.join(OUT, harness, f))


def npy(header, data=b"", major=1):
    h = header.encode()
    if major == 1:
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + data
    return b"\x93NUMPY" + bytes([major, 0]) + struct.pack("<I", len(h)) + h + data


def gen_npy():
    big = 2**31 - 1
    cases = {
        "zero_huge": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (0, %d, %d, %d), }\n"
                         % (big, big, big)),
        "zero_huge_fortran": npy("{'descr': '<f8', 'fortran_order': True, 'shape': (%d, 0, %d), }\n"
                                 % (big, big)),
        "overflow": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d, %d), }\n"
                        % (big, big, big)),
        "int_max_dim": npy("{'descr': '|u1', 'fortran_order': False, 'shape': (2147483648,), }\n"),
        "huge_1d": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }\n"),
        "small_v2": npy("{'descr': '<i2', 'fortran_order': False, 'shape': (2, 2), }\n",
                        struct.pack("<4h", 1, -2, 3, -4), 2),
        "be_fortran": npy("{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3), }\n",
                          struct.pack(">6i", *range(6))),
        "empty_shape": npy("{'descr': '<c8', 'fortran_order': False, 'shape': (), }\n",
                           struct.pack("<2f", 1.5, -2)),
        "bool": npy("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }\n", b"\x00\x01\x02"),
        "bad_key": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}\n",
                       b"\0\0\0\0"),
        "trunc_data": npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }\n", b"\0" * 9),
        "bf16": npy("{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }\n", b"\x80\x3f\0\xc0"),
    }
    for k, v in cases.items():
        put("npy", k, v)
    copy_data("npy", ".npy")


def st(header, data=b""):
    h = json.dumps(header).encode() if not isinstance(header, bytes) else header
    return struct.pack("<Q", len(h)) + h + data


def gen_safetensors():
    big = 2**31 - 1
    cases = {
        "zero_huge": st({"a": {"dtype": "F32", "shape": [0, big, big, big],
                               "data_offsets": [0, 0]}}),
        "overflow": st({"a": {"dtype": "F64", "shape": [big, big, big, 16],
                              "data_offsets": [0, 0]}}),
        "many_empty": st({"t%d" % i: {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}
                          for i in range(200)}),
        "dup_offsets": st({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
                           "b": {"dtype": "U8", "shape": [2], "data_offsets": [1, 3]}}, b"abc"),
        "meta": st({"__metadata__": {"k": "v", "\u00e9": "\u2603"},
                    "x": {"dtype": "BF16", "shape": [1, 2], "data_offsets": [0, 4]}}, b"\x80?\0@"),
        "gap": st({"x": {"dtype": "I16", "shape": [2], "data_offsets": [4, 8]}}, b"padd\1\0\2\0"),
        "bad_dtype": st({"x": {"dtype": "F8", "shape": [1], "data_offsets": [0, 1]}}, b"\0"),
        "neg_dim": st({"x": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 0]}}),
        "huge_hlen": struct.pack("<Q", 2**63) + b"{}",
        "not_obj": st(b"[1,2,3]"),
        "c64": st({"z": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}},
                  struct.pack("<2f", 1, 2)),
    }
    for k, v in cases.items():
        put("safetensors", k, v)
    copy_data("safetensors", ".safetensors")


def gstr(s):
    s = s.encode()
    return struct.pack("<Q", len(s)) + s


def gguf(kvs, tensors, data=b"", align=32):
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for k, v in kvs:
        out += gstr(k) + v
    for name, dims, typ, off in tensors:
        out += gstr(name) + struct.pack("<I", len(dims))
        out += b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", typ, off)
    out += b"\0" * ((align - len(out) % align) % align)
    return out + data


def gen_gguf():
    big = 2**31 - 1
    u32 = lambda v: struct.pack("<II", 4, v)
    cases = {
        "zero_huge": gguf([], [("a", [big, big, 0, big], 0, 0)]),
        "overflow": gguf([], [("a", [big, big, big], 0, 0)]),
        "dim_over_int": gguf([], [("a", [2**32], 0, 0)]),
        "two_f32": gguf([("general.alignment", u32(16))],
                        [("a", [2], 0, 0), ("b", [1, 2], 0, 16)], struct.pack("<8f", *range(8)), 16),
        "strings": gguf([("s", struct.pack("<I", 8) + gstr("hi")),
                         ("l", struct.pack("<IIQ", 9, 8, 2) + gstr("x") + gstr("yz")),
                         ("n", struct.pack("<IIQ", 9, 5, 3) + struct.pack("<3i", 1, -2, 3))], []),
        "bad_align": gguf([("general.alignment", u32(3))], []),
        "q8_0": gguf([], [("w.weight", [32], 8, 0)], struct.pack("<H", 0x3c00) + bytes(range(32))),
        "huge_count": b"GGUF" + struct.pack("<IQQ", 3, 2**40, 0),
        "dup": gguf([], [("a", [1], 0, 0), ("a", [1], 0, 32)], b"\0" * 36),
    }
    for k, v in cases.items():
        put("gguf", k, v)
    copy_data("gguf", ".gguf")


def gen_json():
    cases = {
        "entry": b'{"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}',
        "escapes": b'["a\\"b\\\\c\\/\\b\\f\\n\\r\\t", "\\u00e9\\ud83d\\ude00", "\\u0000"]',
        "numbers": b'[0, -0, 1.5e3, -2E-2, 9223372036854775807, -9223372036854775808, 1e999]',
        "overflow_int": b'[9223372036854775808]',
        "deep": b"[" * 70 + b"]" * 70,
        "deep_ok": b"[" * 60 + b"]" * 60,
        "lits": b'{"a": true, "b": false, "c": null, "": {}}',
        "bad_surrogate": b'"\\ud800x"',
        "trailing": b'{} x',
        "leading_zero": b'[01]',
        "ctrl": b'"a\x01b"',
        "utf8": '{"k\u00e9y": "\u2603\U0001F600"}'.encode(),
        "empty": b"",
        "ws": b" \t\r\n{ } \n",
    }
    for k, v in cases.items():
        put("json", k, v)


def gen_api():
    # opcode byte % 10: 0-1 create, 2-3 shape op, 4-5 compute, 6 print,
    # 7 split, 8 compile, 9 drop; see fuzz_api.c for the operand bytes.
    cases = {
        # zeros of dtype float32, rank 3, dims INT_MAX x3 (rejected), then print
        "huge_zeros": bytes([0, 0, 10, 3, 227, 227, 227, 0, 6, 0, 0]),
        # full with dims (0, INT_MAX, INT_MAX, INT_MAX): empty but its strides overflow
        "zero_huge_full": bytes([0, 2, 10, 4, 0, 227, 227, 227, 4, 0, 6, 0, 0]),
        # zeros of 2^40 elements (dims 2^20 x 2^20), materialised: must fail cleanly
        "alloc_2_40": bytes([0, 0, 10, 2, 228, 228, 0, 4, 0]),
        # small create then reductions / compile
        "small_ops": bytes([0, 0, 10, 2, 3, 4, 0, 4, 0, 0, 0, 2, 1, 255, 0, 1, 6, 0, 0,
                            8, 0, 0, 1, 2, 3, 4, 5, 0, 1]),
        "failing_closure": bytes([0, 1, 10, 1, 5, 0, 8, 0, 0, 9, 17, 25, 33, 210, 0]),
        "empty_handles": bytes([4, 8, 0, 0, 2, 8, 0, 1, 6, 8, 0, 8, 8, 8, 0, 0, 0, 0, 250, 1]),
    }
    for k, v in cases.items():
        put("api", k, v)
    rnd = random.Random(1234)
    for i in range(24):
        put("api", "random_%02d" % i, bytes(rnd.randrange(256) for _ in range(rnd.randrange(16, 200))))


if __name__ == "__main__":
    gen_npy()
    gen_safetensors()
    gen_gguf()
    gen_json()
    gen_api()
