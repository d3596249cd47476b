#!/usr/bin/env python3
"""Runs bench_fft's cases in numpy.fft (pocketfft) and MLX (CPU, when it can
be imported) and prints them next to lace's numbers, with the same timing
protocol as bench_common.h (warm-up, then the best of at least 3 runs and
LACE_BENCH_MIN_TIME seconds, default 0.3). A ratio is the other library's
best time over lace's: above 1 means lace is faster.

Usage: compare_fft.py [LACE_OUTPUT]
  LACE_OUTPUT: a file holding bench_fft's output; without it,
  build/bench/bench_fft (or $LACE_BENCH_FFT) is run."""
import os
import re
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIN_TIME = float(os.environ.get("LACE_BENCH_MIN_TIME", "0.3"))
LINE = re.compile(r"^BENCH\s+fft/(\S+)\s+shape=(\S+)\s+dtype=(\S+)\s*(.*)$")


def best_time(fn):
    fn()
    times, start = [], time.perf_counter()
    while len(times) < 64 and (len(times) < 3 or time.perf_counter() - start < MIN_TIME):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def make(shape, dtype):
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=shape).astype(np.float32)
    if dtype == "complex64":
        x = (x + 1j * rng.uniform(-1, 1, size=shape)).astype(np.complex64)
    return x


def np_call(case, x):
    f = {"fft": np.fft.fft, "rfft": np.fft.rfft, "fft_batch": np.fft.fft,
         "rfft_batch": np.fft.rfft, "fft2": np.fft.fft2, "rfft2": np.fft.rfft2}[case]
    return lambda: f(x)


def mx_call(case, x):
    import mlx.core as mx
    a = mx.array(x)
    mx.eval(a)
    f = {"fft": mx.fft.fft, "rfft": mx.fft.rfft, "fft_batch": mx.fft.fft,
         "rfft_batch": mx.fft.rfft, "fft2": mx.fft.fft2, "rfft2": mx.fft.rfft2}[case]
    return lambda: mx.eval(f(a, stream=mx.cpu))


def main():
    if len(sys.argv) > 1:
        text = open(sys.argv[1]).read()
    else:
        exe = os.environ.get("LACE_BENCH_FFT", os.path.join(ROOT, "build", "bench", "bench_fft"))
        text = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    try:
        import mlx.core  # noqa: F401
        have_mx = True
    except ImportError:
        have_mx = False
    print(f"numpy {np.__version__}" + (", mlx " + __import__("mlx.core").core.__version__ if have_mx else ", no mlx"))
    hdr = f"{'case':<12} {'shape':<11} {'dtype':<9} {'lace ms':>9} {'GFLOPs':>7} {'numpy ms':>9} {'ratio':>6}"
    if have_mx:
        hdr += f" {'mlx ms':>8} {'ratio':>6}"
    print(hdr)
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        case, shape_s, dtype, rest = m.groups()
        fields = dict(kv.split("=", 1) for kv in rest.split() if "=" in kv)
        if "best_ms" not in fields:
            print(f"{case:<12} {shape_s:<11} {dtype:<9} {'skipped':>9}")
            continue
        lace = float(fields["best_ms"])
        shape = tuple(int(d) for d in shape_s.split("x"))
        x = make(shape, dtype)
        t_np = best_time(np_call(case, x)) * 1e3
        row = (f"{case:<12} {shape_s:<11} {dtype:<9} {lace:>9.2f} {float(fields.get('GFLOPs', 0)):>7.2f}"
               f" {t_np:>9.2f} {t_np / lace:>6.2f}")
        if have_mx:
            t_mx = best_time(mx_call(case, x)) * 1e3
            row += f" {t_mx:>8.2f} {t_mx / lace:>6.2f}"
        print(row, flush=True)


if __name__ == "__main__":
    main()
