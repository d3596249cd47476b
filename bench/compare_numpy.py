#!/usr/bin/env python3
"""Runs bench_ops' cases in numpy (and torch / mlx on the CPU when they can be
imported) and prints them next to lace's numbers.

Usage: compare_numpy.py [LACE_OUTPUT]
  LACE_OUTPUT: a file holding bench_ops' output ("BENCH ..." lines); without
  it, build/bench/bench_ops is run. Each framework's time is the best of at
  least 3 runs after a warm-up (LACE_BENCH_MIN_TIME seconds per case, default
  0.3), the same protocol as bench_common.h. A ratio is the other framework's
  best time over lace's: above 1 means lace is faster.
Threads: torch and mlx are left at their defaults, except that torch is set to
LACE_NUM_THREADS when that is given; numpy's elementwise ops and reductions
run on one thread, its matmul on OpenBLAS's threads.
mlx on Linux: `pip install "mlx[cpu]"` (wheel mlx-cpu) provides the CPU backend.
"""
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIN_TIME = float(os.environ.get("LACE_BENCH_MIN_TIME", "0.3"))
LINE = re.compile(r"^BENCH\s+(\S+)\s+shape=(\S+)\s+dtype=(\S+)\s*(.*)$")


def parse(text):
    """(case, shape tuple) -> best seconds, or None for skipped cases."""
    rows = []
    for line in text.splitlines():
        m = LINE.match(line)
        if not m or not m.group(1).startswith("ops/"):
            continue
        fields = dict(kv.split("=", 1) for kv in m.group(4).split() if "=" in kv)
        shape = tuple(int(d) for d in m.group(2).split("x"))
        best = float(fields["best_ms"]) / 1e3 if "best_ms" in fields else None
        rows.append((m.group(1)[4:], shape, best))
    return rows


def best_time(fn):
    fn()
    times, start = [], time.perf_counter()
    while len(times) < 64 and (len(times) < 3 or time.perf_counter() - start < MIN_TIME):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def numpy_cases():
    import numpy as np

    rng = np.random.default_rng(0)

    def make(shape):
        return rng.uniform(-1, 1, size=shape).astype(np.float32)

    return "numpy", {
        "add": lambda a, b: (lambda: np.add(a, b)),
        "multiply": lambda a, b: (lambda: np.multiply(a, b)),
        "exp": lambda a, b: (lambda: np.exp(a)),
        "tanh": lambda a, b: (lambda: np.tanh(a)),
        "sum_last": lambda a, b: (lambda: a.sum(axis=-1)),
        "sum_first": lambda a, b: (lambda: a.sum(axis=0)),
        "max": lambda a, b: (lambda: a.max()),
        "matmul": lambda a, b: (lambda: a @ b),
    }, make


def torch_cases():
    import numpy as np
    import torch

    if os.environ.get("LACE_NUM_THREADS"):
        torch.set_num_threads(int(os.environ["LACE_NUM_THREADS"]))
    rng = np.random.default_rng(0)

    def make(shape):
        return torch.from_numpy(rng.uniform(-1, 1, size=shape).astype(np.float32))

    return "torch", {
        "add": lambda a, b: (lambda: torch.add(a, b)),
        "multiply": lambda a, b: (lambda: torch.mul(a, b)),
        "exp": lambda a, b: (lambda: torch.exp(a)),
        "tanh": lambda a, b: (lambda: torch.tanh(a)),
        "sum_last": lambda a, b: (lambda: a.sum(dim=-1)),
        "sum_first": lambda a, b: (lambda: a.sum(dim=0)),
        "max": lambda a, b: (lambda: a.max()),
        "matmul": lambda a, b: (lambda: a @ b),
    }, make


def mlx_cases():
    import numpy as np
    import mlx.core as mx

    mx.set_default_device(mx.cpu)
    rng = np.random.default_rng(0)

    def make(shape):
        a = mx.array(rng.uniform(-1, 1, size=shape).astype(np.float32))
        mx.eval(a)
        return a

    def ev(f):
        return lambda a, b: (lambda: mx.eval(f(a, b)))

    return "mlx", {
        "add": ev(lambda a, b: mx.add(a, b)),
        "multiply": ev(lambda a, b: mx.multiply(a, b)),
        "exp": ev(lambda a, b: mx.exp(a)),
        "tanh": ev(lambda a, b: mx.tanh(a)),
        "sum_last": ev(lambda a, b: mx.sum(a, axis=-1)),
        "sum_first": ev(lambda a, b: mx.sum(a, axis=0)),
        "max": ev(lambda a, b: mx.max(a)),
        "matmul": ev(lambda a, b: a @ b),
    }, make


def main():
    if len(sys.argv) > 1:
        with open(sys.argv[1]) as f:
            text = f.read()
    else:
        exe = os.path.join(ROOT, "build", "bench", "bench_ops")
        text = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    rows = parse(text)
    frameworks = []
    for loader in (numpy_cases, torch_cases, mlx_cases):
        try:
            frameworks.append(loader())
        except ImportError as e:
            print("# %s: not importable (%s), skipped" % (loader.__name__[:-6], e))
    if not frameworks:
        print("# compare_numpy: nothing to compare against")
        return 0
    rows = [r for r in rows if r[0] != "cblas_sgemm"]
    times = {}
    for name, cases, make in frameworks:
        inputs = {}  # shape -> (a, b), one framework at a time
        for i, (case, shape, _) in enumerate(rows):
            if case in cases:
                if shape not in inputs:
                    inputs.clear()
                    inputs[shape] = (make(shape), make(shape))
                times[name, i] = best_time(cases[case](*inputs[shape]))
    head = "%-12s %-12s %10s" % ("case", "shape", "lace_ms")
    for name, _, _ in frameworks:
        head += " %10s %8s" % (name + "_ms", "ratio")
    print(head)
    for i, (case, shape, lace) in enumerate(rows):
        line = "%-12s %-12s %10s" % (case, "x".join(map(str, shape)),
                                     "%.4f" % (lace * 1e3) if lace else "skipped")
        for name, _, _ in frameworks:
            t = times.get((name, i))
            if t is None:
                line += " %10s %8s" % ("-", "-")
            else:
                line += " %10.4f %8s" % (t * 1e3, "%.2f" % (t / lace) if lace else "-")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
