#!/usr/bin/env python3
"""Runs bench_gpu (lace) and the same cases in torch (eager and
torch.compile) and jax (jax.jit) in one job, and prints each as a fraction
of the device-to-device copy bandwidth measured here by torch (bytes read
+ written). Usage:
  python3 tools/gpu_bench.py path/to/bench_gpu [--skip-jax] [--sizes 24,28]"""
import os, re, subprocess, sys, time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
ROW = 4096

# name -> (fn over (x, y, c, s), full inputs read, full outputs written, row outputs);
# rmax/rsum/rmean reduce the last axis keeping it
def cases(xp, erf, sigmoid, rsqrt, rmax, rsum, rmean):
    def gelu(x, y, c, s): return 0.5 * x * (1 + erf(x * 0.7071067811865476))
    def silu_mul(x, y, c, s): return x * sigmoid(x) * y
    def rope(x, y, c, s): return (x * c - y * s, x * s + y * c)
    def rope1(x, y, c, s): return x * c - y * s
    def two_out(x, y, c, s): return (x * y, x + y)
    def layer_norm(x, y, c, s):
        m = rmean(x)
        v = rmean((x - m) ** 2)
        return (x - m) * rsqrt(v + 1e-5) * c + s
    def softmax(x, y, c, s):
        e = xp.exp(x - rmax(x))
        return e / rsum(e)
    def rms_norm(x, y, c, s): return x * rsqrt(rmean(x * x) + 1e-6) * c
    def logsumexp(x, y, c, s):
        m = rmax(x)
        return xp.log(rsum(xp.exp(x - m))) + m
    return {"gelu": (gelu, 1, 1, 0), "silu_mul": (silu_mul, 2, 1, 0), "rope": (rope, 2, 2, 0),
            "rope1": (rope1, 2, 1, 0), "two_out": (two_out, 2, 2, 0),
            "layer_norm": (layer_norm, 1, 1, 0), "softmax": (softmax, 1, 1, 0),
            "rms_norm": (rms_norm, 1, 1, 0), "logsumexp": (logsumexp, 1, 0, 1)}

def median_time(fn, sync, reps=20):
    for _ in range(3): fn()
    sync()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); fn(); sync(); ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2]

class Results(dict):
    """Prints each result as it is measured (a run cut short keeps them)."""
    def __setitem__(self, k, v):
        print("ref-case %s %s n=%d ms=%.4f" % (k[0], k[1], k[2], v * 1e3), flush=True)
        dict.__setitem__(self, k, v)

def torch_cases(sizes):
    import torch
    out, dev = Results(), "cuda"
    def t(fn, reps=20):  # CUDA events: device time
        for _ in range(3): fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(reps):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); fn(); e.record(); torch.cuda.synchronize()
            ts.append(s.elapsed_time(e) / 1e3)
        ts.sort()
        return ts[len(ts) // 2]
    cs = cases(torch, torch.erf, torch.sigmoid, torch.rsqrt, lambda x: x.amax(-1, keepdim=True),
               lambda x: x.sum(-1, keepdim=True), lambda x: x.mean(-1, keepdim=True))
    soft = lambda x: torch.softmax(x, -1)
    for dt, name in ((torch.float32, "float32"), (torch.bfloat16, "bfloat16")):
        for n in sizes:
            x = torch.rand(n // ROW, ROW, device=dev, dtype=dt) * 2 - 1
            y = torch.rand(n // ROW, ROW, device=dev, dtype=dt)
            c = torch.rand(ROW, device=dev, dtype=dt); s = torch.rand(ROW, device=dev, dtype=dt)
            out[("copy", name, n)] = t(lambda: x.clone())
            out[("add", name, n)] = t(lambda: x + y)
            out[("gelu_uncompiled", name, n)] = t(lambda: cs["gelu"][0](x, y, c, s))
            out[("row_sum", name, n)] = t(lambda: x.sum(-1))
            out[("sum_all", name, n)] = t(lambda: x.sum())
            out[("col_sum", name, n)] = t(lambda: x.sum(0))
            out[("softmax_uncompiled", name, n)] = t(lambda: soft(x))
            out[("softmax_op", name, n)] = out[("softmax_uncompiled", name, n)]
            for k, (fn, _, _, _) in cs.items():
                out[(k + "_eager", name, n)] = t(lambda: fn(x, y, c, s))
                cf = torch.compile(fn, dynamic=False)
                out[(k + "_torch_compile", name, n)] = t(lambda: cf(x, y, c, s))
            del x, y
            torch.cuda.empty_cache()
        a = torch.rand(8192, 8192, device=dev, dtype=dt)
        b = torch.rand(8192, 8192, device=dev, dtype=dt)
        out[("matmul8192", name, 8192 * 8192)] = t(lambda: a @ b)
        del a, b
        # batch-1 products of the decode step (bench_gpu's gemv cases)
        x = torch.rand(1, 2048, device=dev, dtype=dt)
        w = torch.rand(2048, 5632, device=dev, dtype=dt)
        e = torch.rand(32000, 2048, device=dev, dtype=dt)
        out[("gemv_w", name, 2048 * 5632)] = t(lambda: x @ w)
        out[("gemv_wt", name, 2048 * 32000)] = t(lambda: x @ e.t())
        del x, w, e
    # a tiny compiled call, host + device (as lace's tiny_compiled_eval)
    tiny = torch.compile(lambda a, b: a * b + a, dynamic=False)
    a1 = torch.rand(1, device=dev); b1 = torch.rand(1, device=dev)
    out[("tiny", "torch_compile", 1)] = median_time(lambda: tiny(a1, b1), torch.cuda.synchronize, 200)
    torch.cuda.empty_cache()
    return out

def jax_cases(sizes):
    import jax, jax.numpy as jnp
    from jax.scipy.special import erf
    out = Results()
    cs = cases(jnp, erf, jax.nn.sigmoid, jax.lax.rsqrt, lambda x: x.max(-1, keepdims=True),
               lambda x: x.sum(-1, keepdims=True), lambda x: x.mean(-1, keepdims=True))
    key = jax.random.PRNGKey(0)
    for dt, name in ((jnp.float32, "float32"), (jnp.bfloat16, "bfloat16")):
        for n in sizes:
            x = jax.random.uniform(key, (n // ROW, ROW), dt, -1, 1)
            y = jax.random.uniform(key, (n // ROW, ROW), dt)
            c = jax.random.uniform(key, (ROW,), dt); s = jax.random.uniform(key, (ROW,), dt)
            for k, (fn, _, _, _) in cs.items():
                jf = jax.jit(fn)
                sync = lambda: jax.block_until_ready(r[0])
                r = [jf(x, y, c, s)]
                def call(): r[0] = jf(x, y, c, s)
                out[(k + "_jax_jit", name, n)] = median_time(call, sync)
            del x, y
    tiny = jax.jit(lambda a, b: a * b + a)
    a1 = jnp.ones((1,)); b1 = jnp.ones((1,))
    r = [tiny(a1, b1)]
    def call(): r[0] = tiny(a1, b1)
    out[("tiny", "jax_jit", 1)] = median_time(call, lambda: jax.block_until_ready(r[0]), 200)
    return out

def main():
    args = sys.argv[1:]
    sizes = [1 << 24, 1 << 28]
    if "--sizes" in args:
        sizes = [1 << int(v) for v in args[args.index("--sizes") + 1].split(",")]
    lace = subprocess.run([args[0]], capture_output=True, text=True)
    print(lace.stdout + lace.stderr, flush=True)
    tc = torch_cases(sizes)
    if "--skip-jax" not in args:
        try:
            tc.update(jax_cases(sizes))
        except Exception as e:  # report, keep the torch results
            print("jax failed:", e)
    n = max(sizes)
    peak = {dt: 2 * n * (4 if dt == "float32" else 2) / tc[("copy", dt, n)] for dt in ("float32", "bfloat16")}
    print("torch device-to-device copy: %.0f GB/s (float32, %d elements, read+write)" % (peak["float32"] / 1e9, n))
    bpe = {"copy": 2, "add": 3, "gelu_uncompiled": 2, "row_sum": 1, "sum_all": 1, "col_sum": 1, "softmax_uncompiled": 2, "softmax_op": 2}
    names = cases(*([None] * 7))
    for k, (_, fi, fo, ro) in names.items():
        bpe[k + "_compiled"] = fi + fo + ro / ROW
    print("%-22s %-9s %10s %9s %9s | fraction of copy bandwidth: lace, others" % ("case", "dtype", "n", "lace ms", "torch ms"))
    for line in lace.stdout.splitlines():
        m = re.match(r"gpu-case (\S+) (\S+) n=(\d+) ms=([\d.]+)", line)
        if not m: continue
        case, dt, n, ms = m.group(1), m.group(2), int(m.group(3)), float(m.group(4))
        isz = 4 if dt == "float32" else 2
        if case == "matmul8192":
            fl = 2 * 8192 ** 3
            tt = tc.get((case, dt, n))
            print("%-22s %-9s %10d %9.3f %9.3f | %6.0f TF/s, torch %6.0f TF/s" % (case, dt, n, ms, tt * 1e3, fl / (ms / 1e3) / 1e12, fl / tt / 1e12))
            continue
        if case.startswith("gemv"):  # reads the weights once: fraction of copy's read+write rate
            tt = tc.get((case.replace("_cublas", ""), dt, n))
            frac = lambda sec: n * isz / sec / peak[dt]
            print("%-22s %-9s %10d %9.4f %9.4f | lace %.2f  torch %s" % (case, dt, n, ms, tt * 1e3 if tt else 0, frac(ms / 1e3), "%.2f" % frac(tt) if tt else "-"))
            continue
        if case not in bpe: continue
        b = bpe[case] * n * isz
        frac = lambda sec: b / sec / peak[dt]
        if case.endswith("_compiled"):
            base = case[: -len("_compiled")]
            te, tcomp, tj = tc.get((base + "_eager", dt, n)), tc.get((base + "_torch_compile", dt, n)), tc.get((base + "_jax_jit", dt, n))
            print("%-22s %-9s %10d %9.3f %9.3f | lace %.2f  torch %.2f  torch.compile %.2f  jax.jit %s" % (
                case, dt, n, ms, tcomp * 1e3, frac(ms / 1e3), frac(te), frac(tcomp), "%.2f" % frac(tj) if tj else "-"))
        else:
            tt = tc.get((case, dt, n))
            print("%-22s %-9s %10d %9.3f %9.3f | lace %.2f  torch %.2f" % (case, dt, n, ms, tt * 1e3, frac(ms / 1e3), frac(tt)))
    for line in lace.stdout.splitlines():
        if "tiny" in line: print(line)
    for k in (("tiny", "torch_compile", 1), ("tiny", "jax_jit", 1)):
        if k in tc: print("tiny call (host+device) %s: %.1f us" % (k[1], tc[k] * 1e6))

main()
