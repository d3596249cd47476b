#!/usr/bin/env python3
"""Runs bench_train's cases in MLX on the CPU (eager and under mx.compile) and
in torch eager on the CPU, when they can be imported, and prints them next to
lace's numbers.

Usage: compare_train.py [LACE_OUTPUT]
  LACE_OUTPUT: a file holding bench_train's output ("BENCH train/..." lines);
  without it, build/bench/bench_train is run. The sizes (batch, hidden) are
  read from lace's output. Timing protocol as in bench_common.h: one warm-up,
  then the best of at least 3 runs and until LACE_BENCH_MIN_TIME seconds
  (default 0.3). Ratios are the other framework's best time over lace
  compiled's: above 1 means lace compiled is faster.

The training step is bench_train's: an MLP 64 -> H -> H -> 16 with
gelu(x) = 0.5 x (1 + erf(x / sqrt 2)) and layer norm (weight and bias) after
each hidden layer, MSE loss, gradients of all 10 parameters, and Adam with
bias correction written with array ops; inputs, loss, new parameters and
moments are evaluated each step. MLX: mx.value_and_grad, mx.fast.layer_norm,
the whole step under mx.compile in the compiled column. torch: autograd
(loss.backward()), F.layer_norm, the Adam update under torch.no_grad(); torch
uses its default threads (LACE_NUM_THREADS when set).
The 1000-op case builds the backward graph of 250 x (x*k + y, tanh, - x) on
16 floats without evaluating it: mx.vjp in MLX (lazy, like lace's mlx_vjp);
torch cannot build a backward graph without running it, so its column is the
forward plus torch.autograd.grad, computed.
mlx on Linux: `pip install "mlx[cpu]"` (wheel mlx-cpu) provides the CPU backend.
"""
import math
import os
import re
import subprocess
import sys

from compare_numpy import best_time  # the shared timing protocol

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEP = re.compile(
    r"^BENCH\s+train/mlp_step_(eager|compiled)\s+shape=(\d+)x(\d+)\s+\S+\s+best_ms=(\S+)")
VJP = re.compile(r"^BENCH\s+train/(vjp|forward)_build_1000\s+nodes=1000\s+best_ms=(\S+)")
D_IN, D_OUT = 64, 16
LR, B1, B2, EPS = 1e-3, 0.9, 0.999, 1e-8


def parse(text):
    """{'eager': s, 'compiled': s, 'batch': B, 'hidden': H, 'vjp': s, 'forward': s}"""
    out = {}
    for line in text.splitlines():
        m = STEP.match(line)
        if m:
            out[m.group(1)] = float(m.group(4)) / 1e3
            out["batch"], out["hidden"] = int(m.group(2)), int(m.group(3))
        m = VJP.match(line)
        if m:
            out[m.group(1)] = float(m.group(2)) / 1e3
    return out


def init(batch, hidden):
    """numpy arrays: the 10 parameters, x and y (float32)."""
    import numpy as np

    rng = np.random.default_rng(0)
    rows = [D_IN, hidden, hidden, hidden, hidden, hidden, hidden, hidden, hidden, D_OUT]
    cols = [hidden, 0, 0, 0, hidden, 0, 0, 0, D_OUT, 0]
    params = []
    for i, (r, c) in enumerate(zip(rows, cols)):
        if c:
            a = math.sqrt(3 / r)
            params.append(rng.uniform(-a, a, size=(r, c)).astype(np.float32))
        else:
            params.append(np.full((r,), 1.0 if i in (2, 6) else 0.0, np.float32))
    x = rng.uniform(-2, 2, size=(batch, D_IN)).astype(np.float32)
    y = rng.uniform(-1, 1, size=(batch, D_OUT)).astype(np.float32)
    return params, x, y


# ---- MLX ----

def mlx_step(mx):
    r2 = 1 / math.sqrt(2)

    def gelu(x):
        return 0.5 * x * (1 + mx.erf(x * r2))

    def loss_fn(p, x, y):
        w1, b1, g1, be1, w2, b2, g2, be2, w3, b3 = p
        h = mx.fast.layer_norm(gelu(x @ w1 + b1), g1, be1, 1e-5)
        h = mx.fast.layer_norm(gelu(h @ w2 + b2), g2, be2, 1e-5)
        return mx.mean(mx.square(h @ w3 + b3 - y))

    vg = mx.value_and_grad(loss_fn)

    def step(p, m, v, t, x, y):
        loss, g = vg(p, x, y)
        c1, c2 = 1 - mx.power(B1, t), 1 - mx.power(B2, t)
        m2 = [B1 * mi + (1 - B1) * gi for mi, gi in zip(m, g)]
        v2 = [B2 * vi + (1 - B2) * gi * gi for vi, gi in zip(v, g)]
        p2 = [pi - LR * (mi / c1) / (mx.sqrt(vi / c2) + EPS) for pi, mi, vi in zip(p, m2, v2)]
        return loss, p2, m2, v2

    return step


def mlx_cases(mx, lace):
    params, x, y = init(lace["batch"], lace["hidden"])
    p = [mx.array(a) for a in params]
    m = [mx.zeros_like(a) for a in p]
    v = [mx.zeros_like(a) for a in p]
    t, xa, ya = mx.array(1.0), mx.array(x), mx.array(y)
    mx.eval(p, m, v, xa, ya)
    step = mlx_step(mx)
    cstep = mx.compile(step)
    res = {
        "eager": best_time(lambda: mx.eval(step(p, m, v, t, xa, ya))),
        "compiled": best_time(lambda: mx.eval(cstep(p, m, v, t, xa, ya))),
    }

    def chain(a, b):
        s = a
        for _ in range(250):
            s = mx.tanh(s * 1.0001 + b) - a
        return s

    a, b, ct = (mx.array(r) for r in init(16, 1)[1][:3, :16])
    mx.eval(a, b, ct)
    res["vjp"] = best_time(lambda: mx.vjp(chain, [a, b], [ct]))
    res["forward"] = best_time(lambda: chain(a, b))
    return res


# ---- torch ----

def torch_cases(torch, lace):
    import torch.nn.functional as F

    if os.environ.get("LACE_NUM_THREADS"):
        torch.set_num_threads(int(os.environ["LACE_NUM_THREADS"]))
    params, x, y = init(lace["batch"], lace["hidden"])
    p = [torch.tensor(a, requires_grad=True) for a in params]
    m = [torch.zeros_like(a) for a in p]
    v = [torch.zeros_like(a) for a in p]
    xt, yt, t = torch.tensor(x), torch.tensor(y), torch.tensor(1.0)
    r2 = 1 / math.sqrt(2)
    H = lace["hidden"]

    def gelu(z):
        return 0.5 * z * (1 + torch.erf(z * r2))

    def step():
        w1, b1, g1, be1, w2, b2, g2, be2, w3, b3 = p
        h = F.layer_norm(gelu(xt @ w1 + b1), (H,), g1, be1, 1e-5)
        h = F.layer_norm(gelu(h @ w2 + b2), (H,), g2, be2, 1e-5)
        loss = torch.mean(torch.square(h @ w3 + b3 - yt))
        g = torch.autograd.grad(loss, p)
        with torch.no_grad():
            c1, c2 = 1 - torch.pow(B1, t), 1 - torch.pow(B2, t)
            m2 = [B1 * mi + (1 - B1) * gi for mi, gi in zip(m, g)]
            v2 = [B2 * vi + (1 - B2) * gi * gi for vi, gi in zip(v, g)]
            p2 = [pi - LR * (mi / c1) / (torch.sqrt(vi / c2) + EPS)
                  for pi, mi, vi in zip(p, m2, v2)]
        return loss.item(), p2, m2, v2

    res = {"eager": best_time(step)}
    a = torch.tensor(init(16, 1)[1][0, :16], requires_grad=True)
    b = torch.tensor(init(16, 1)[1][1, :16], requires_grad=True)
    ct = torch.tensor(init(16, 1)[1][2, :16])

    def chain_grad():
        s = a
        for _ in range(250):
            s = torch.tanh(s * 1.0001 + b) - a
        return torch.autograd.grad(s, [a, b], ct)

    res["vjp"] = best_time(chain_grad)
    return res


def main():
    if len(sys.argv) > 1:
        text = open(sys.argv[1]).read()
    else:
        text = subprocess.run([os.path.join(ROOT, "build/bench/bench_train")],
                              capture_output=True, text=True, check=True).stdout
    lace = parse(text)
    if "compiled" not in lace:
        sys.exit("compare_train.py: no train/mlp_step lines in lace's output")
    cols = [("lace", lace)]
    try:
        import mlx.core as mx
    except Exception as e:
        print(f"# mlx not importable: skipped ({type(e).__name__}; pip install \"mlx[cpu]\")")
        mx = None
    if mx is not None:
        cols.append(("mlx", mlx_cases(mx, lace)))
    try:
        import torch
    except Exception as e:  # ImportError, or OSError from a partial install
        print(f"# torch not importable: skipped ({type(e).__name__})")
        torch = None
    if torch is not None:
        cols.append(("torch", torch_cases(torch, lace)))
    ref = lace["compiled"]
    print(f"# training step, MLP {D_IN} -> {lace['hidden']} -> {lace['hidden']} -> {D_OUT}, "
          f"batch {lace['batch']}; ratio = time / lace compiled")
    print("framework | eager ms (ratio) | compiled ms (ratio) | 1000-op vjp build ms"
          " | 1000-op forward build ms")
    for name, r in cols:
        def cell(key, base=None):
            if key not in r:
                return "n/a"
            s = f"{r[key] * 1e3:.3f}"
            return f"{s} ({r[key] / base:.2f}x)" if base else s
        vjp = cell("vjp") + (" (computed)" if name == "torch" and "vjp" in r else "")
        print(" | ".join([name, cell("eager", ref), cell("compiled", ref), vjp, cell("forward")]),
              flush=True)


if __name__ == "__main__":
    main()
