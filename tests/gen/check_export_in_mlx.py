"""Checks that functions lace exported import and run in MLX 0.32 (lace -> MLX).

Usage (from the repository root, MLX installed; not part of `make test`):
  rm -rf /tmp/lace_keep && LACE_EXPORT_KEEP=/tmp/lace_keep build/tests/test_export_roundtrip
  python3 tests/gen/check_export_in_mlx.py /tmp/lace_keep

The directory holds lace-written .mlxfn files with each call's inputs and
lace's outputs and a manifest.txt in the format of tests/data/export/.
Every call is imported with mx.import_function and run on MLX's CPU; its
outputs must match lace's in dtype, shape and value."""
import sys

import mlx.core as mx
import numpy as np


def load(d, name):
    return mx.array(np.load(f"{d}/{name}.npy"))


def check(d):
    failures, calls = 0, 0
    for line in open(f"{d}/manifest.txt"):
        call, file, npos, kw, nout, atol, rtol = line.split()
        npos, nout, atol, rtol = int(npos), int(nout), float(atol), float(rtol)
        args = [load(d, f"{call}_a{i}") for i in range(npos)]
        kwargs = {k: load(d, f"{call}_k_{k}") for k in kw.split(",")} if kw != "-" else {}
        try:
            outs = mx.import_function(f"{d}/{file}")(*args, **kwargs)
            mx.eval(outs)
        except Exception as e:  # report and go on
            print(f"FAIL {call}: {e}")
            failures += 1
            continue
        calls += 1
        if len(outs) != nout:
            print(f"FAIL {call}: {len(outs)} outputs, lace {nout}")
            failures += 1
            continue
        for j, o in enumerate(outs):
            want = np.load(f"{d}/{call}_o{j}.npy")
            got = np.array(o.astype(mx.float32) if o.dtype == mx.bfloat16 else o)
            if got.dtype != want.dtype or got.shape != want.shape:
                print(f"FAIL {call} output {j}: {got.dtype}{got.shape}, lace {want.dtype}{want.shape}")
                failures += 1
            elif not np.allclose(got.astype(np.float64), want.astype(np.float64), atol=atol,
                                 rtol=rtol, equal_nan=True):
                print(f"FAIL {call} output {j}: values differ (max |d| "
                      f"{np.max(np.abs(got.astype(np.float64) - want)):.3g})")
                failures += 1
    print(f"{calls} calls run in MLX {mx.__version__}, {failures} failed")
    return failures


if __name__ == "__main__":
    sys.exit(1 if check(sys.argv[1] if len(sys.argv) > 1 else "/tmp/lace_keep") else 0)
