#!/usr/bin/env python3
"""Runs bench_compile's cases in numpy and, when importable, in MLX on the CPU
(eager and under mx.compile), and prints them next to lace's numbers.

Usage: compare_compile.py [LACE_OUTPUT]
  LACE_OUTPUT: a file holding bench_compile's output ("BENCH compile/..."
  lines); without it, build/bench/bench_compile is run. Timing protocol as in
  bench_common.h: one warm-up, then the best of at least 3 runs and until
  LACE_BENCH_MIN_TIME seconds (default 0.3). Ratios are the other
  framework's best time over lace compiled's: above 1 means lace compiled is
  faster. numpy runs on one thread and has no erf (gelu is skipped there);
  MLX uses its default CPU threads.
mlx on Linux: `pip install "mlx[cpu]"` (wheel mlx-cpu) provides the CPU backend.
"""
import math
import os
import re
import subprocess
import sys

from compare_numpy import best_time  # the shared timing protocol

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINE = re.compile(r"^BENCH\s+compile/(\S+)_(eager|compiled)\s+shape=(\S+)\s+\S+\s+best_ms=(\S+)")


def parse(text):
    """case -> (shape, eager seconds, compiled seconds)."""
    out = {}
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        shape = tuple(int(d) for d in m.group(3).split("x"))
        ent = out.setdefault(m.group(1), [shape, None, None])
        ent[1 if m.group(2) == "eager" else 2] = float(m.group(4)) / 1e3
    return out


def cases(xp, erf):
    """The bench_compile functions over array module xp (numpy or mlx.core)."""
    r2 = 1 / math.sqrt(2)

    def layer_norm(x, w, b):
        m = xp.mean(x, axis=-1, keepdims=True)
        d = x - m
        v = xp.mean(d * d, axis=-1, keepdims=True)
        return d * (1 / xp.sqrt(v + 1e-5)) * w + b

    def softmax(x):
        e = xp.exp(x - xp.max(x, axis=-1, keepdims=True))
        return e / xp.sum(e, axis=-1, keepdims=True)

    def logsumexp(x):
        m = xp.max(x, axis=-1, keepdims=True)
        return xp.log(xp.sum(xp.exp(x - m), axis=-1, keepdims=True)) + m

    return {
        "gelu": (1, (lambda x: x * 0.5 * (1 + erf(x * r2))) if erf else None),
        "silu_mul": (2, lambda x, y: x / (1 + xp.exp(-x)) * y),
        "rope_chain": (4, lambda x, y, c, s: (x * c - y * s) * 0.125),
        "layer_norm": (3, layer_norm),
        "softmax": (1, softmax),
        "rms_norm": (2, lambda x, w: x * (1 / xp.sqrt(xp.mean(x * x, axis=-1, keepdims=True) + 1e-5)) * w),
        "logsumexp": (1, logsumexp),
    }


def inputs(shape, n, make):
    rows, cols = shape
    shapes = {1: [shape], 2: [shape, shape], 3: [shape, (cols,), (cols,)],
              4: [shape, shape, (1, cols), (1, cols)]}[n]
    return [make(s) for s in shapes]


def main():
    if len(sys.argv) > 1:
        text = open(sys.argv[1]).read()
    else:
        text = subprocess.run([os.path.join(ROOT, "build/bench/bench_compile")],
                              capture_output=True, text=True, check=True).stdout
    lace = parse(text)
    import numpy as np

    rng = np.random.default_rng(0)
    make = lambda s: rng.uniform(-2, 2, size=s).astype(np.float32)
    columns = [("numpy", None)]
    try:
        import mlx.core as mx

        columns += [("mlx", False), ("mlx.compile", True)]
    except ImportError:
        mx = None
    print("case | lace eager ms | lace compiled ms | " + " | ".join(f"{c} ms (ratio)" for c, _ in columns))
    for name, (shape, eager, comp) in lace.items():
        row = [name, f"{eager * 1e3:.2f}", f"{comp * 1e3:.2f}"]
        args = inputs(shape, cases(np, None)[name][0], make)
        for col, compiled in columns:
            if col == "numpy":
                fn = cases(np, None)[name][1]
                t = best_time(lambda: fn(*args)) if fn else None
            else:
                fn = cases(mx, mx.erf)[name][1]
                margs = [mx.array(a) for a in args]
                if compiled:
                    fn = mx.compile(fn)
                t = best_time(lambda: mx.eval(fn(*margs)))
            row.append("n/a" if t is None else f"{t * 1e3:.2f} ({t / comp:.2f}x)")
        print(" | ".join(row), flush=True)


if __name__ == "__main__":
    main()
