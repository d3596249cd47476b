#!/usr/bin/env python3
"""Runs bench_gpu (lace) and the same cases in torch (eager, torch.compile)
in one job, and prints each as a fraction of the device-to-device copy
bandwidth measured here by torch (bytes read + written). Usage:
  python3 tools/gpu_bench.py path/to/bench_gpu"""
import re, subprocess, sys

def torch_cases():
    import torch
    out, dev = {}, "cuda"
    def t(fn, reps=20):
        for _ in range(3): fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(reps):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); fn(); e.record(); torch.cuda.synchronize()
            ts.append(s.elapsed_time(e) / 1e3)
        ts.sort()
        return ts[len(ts) // 2]
    gelu = lambda x: 0.5 * x * (1 + torch.erf(x * 0.70710678))
    soft = lambda x: torch.softmax(x, -1)
    cg, cs = torch.compile(gelu), torch.compile(soft)
    for dt, name in ((torch.float32, "float32"), (torch.bfloat16, "bfloat16")):
        for n in (1 << 24, 1 << 28):
            x = torch.rand(n, device=dev, dtype=dt) * 2 - 1
            y = torch.rand(n, device=dev, dtype=dt)
            out[("copy", name, n)] = t(lambda: x.clone())
            out[("add", name, n)] = t(lambda: x + y)
            out[("gelu_uncompiled", name, n)] = t(lambda: gelu(x))
            out[("gelu_torch_compile", name, n)] = t(lambda: cg(x))
            x2 = x.view(-1, 4096)
            out[("row_sum", name, n)] = t(lambda: x2.sum(-1))
            out[("softmax_uncompiled", name, n)] = t(lambda: soft(x2))
            out[("softmax_op", name, n)] = out[("softmax_uncompiled", name, n)]
            out[("softmax_torch_compile", name, n)] = t(lambda: cs(x2))
            del x, y, x2
        a = torch.rand(8192, 8192, device=dev, dtype=dt)
        b = torch.rand(8192, 8192, device=dev, dtype=dt)
        out[("matmul8192", name, 8192 * 8192)] = t(lambda: a @ b)
    return out

def main():
    lace = subprocess.run([sys.argv[1]], capture_output=True, text=True)
    print(lace.stdout + lace.stderr)
    tc = torch_cases()
    peak = {}
    for dt in ("float32", "bfloat16"):
        n = 1 << 28
        isz = 4 if dt == "float32" else 2
        peak[dt] = 2 * n * isz / tc[("copy", dt, n)]
    print("torch device-to-device copy: %.0f GB/s (float32, 256M elements, read+write)" % (peak["float32"] / 1e9))
    bpe = {"copy": 2, "add": 3, "gelu_uncompiled": 2, "row_sum": 1, "softmax_uncompiled": 2, "softmax_op": 2}
    print("%-20s %-9s %10s %10s %10s %12s %12s" % ("case", "dtype", "n", "lace ms", "torch ms", "lace/copyBW", "torch/copyBW"))
    for line in lace.stdout.splitlines():
        m = re.match(r"gpu-case (\S+) (\S+) n=(\d+) ms=([\d.]+)", line)
        if not m: continue
        case, dt, n, ms = m.group(1), m.group(2), int(m.group(3)), float(m.group(4))
        tt = tc.get((case, dt, n))
        isz = 4 if dt == "float32" else 2
        if case == "matmul8192":
            fl = 2 * 8192 ** 3
            print("%-20s %-9s %10d %10.3f %10.3f %9.0f TF/s %9.0f TF/s" % (case, dt, n, ms, tt * 1e3, fl / (ms / 1e3) / 1e12, fl / tt / 1e12))
            continue
        b = bpe[case] * n * isz
        print("%-20s %-9s %10d %10.3f %10.3f %12.2f %12.2f" % (case, dt, n, ms, tt * 1e3, b / (ms / 1e3) / peak[dt], b / tt / peak[dt]))
        for extra in ("gelu_torch_compile", "softmax_torch_compile"):
            if extra.split("_")[0] == case.split("_")[0] and (extra, dt, n) in tc:
                t2 = tc[(extra, dt, n)]
                print("%-20s %-9s %10d %10s %10.3f %12s %12.2f" % (extra, dt, n, "", t2 * 1e3, "", b / t2 / peak[dt]))

main()
