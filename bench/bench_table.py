#!/usr/bin/env python3
"""Prints the BENCHMARKS.md tables (markdown) from `make bench`'s saved output.

Usage: bench_table.py [BENCH_OPS_TXT [COMPARE_TXT]]
  defaults: build/bench/bench_ops.txt and build/bench/compare_numpy.txt
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = {"sum_last": "sum, last axis", "sum_first": "sum, first axis", "max": "max (all)",
         "cblas_sgemm": "cblas_sgemm (direct)"}
LINE = re.compile(r"^BENCH\s+ops/(\S+)\s+shape=(\S+)\s+dtype=\S+\s*(.*)$")


def fmt(v, digits=4):
    return "%.*g" % (digits, float(v))


def ops_table(path):
    print("| case | shape | best ms | GB/s | GFLOP/s | copy_frac |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    first_add = True
    for line in open(path):
        m = LINE.match(line)
        if not m:
            continue
        case, shape, rest = m.groups()
        f = dict(kv.split("=", 1) for kv in rest.split() if "=" in kv)
        name = NAMES.get(case, case)
        if case == "add" and first_add and "GBps" not in f:
            name, first_add = "add (dispatch overhead)", False
        if "skipped" in f:
            print("| %s | %s | skipped (%s) | | | |" % (name, shape, f["skipped"]))
            continue
        print("| %s | %s | %s | %s | %s | %s |" % (
            name, shape, fmt(f["best_ms"]), fmt(f.get("GBps", 0)) if "GBps" in f else "",
            fmt(f["GFLOPs"]) if "GFLOPs" in f else "", f.get("copy_frac", "")))


def compare_table(path):
    rows = [l.split() for l in open(path) if l.strip() and not l.startswith("#")]
    head, body = rows[0], rows[1:]
    others = [h[:-3] for h in head[3::2]]
    print("| case | shape | lace ms | " +
          " | ".join("%s ms | %s / lace" % (o, o) for o in others) + " |")
    print("| --- | --- | ---: |" + " ---: | ---: |" * len(others))
    for r in body:
        print("| %s | %s | %s | %s |" % (NAMES.get(r[0], r[0]), r[1], r[2], " | ".join(r[3:])))


def main():
    ops = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/bench/bench_ops.txt")
    cmp_ = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "build/bench/compare_numpy.txt")
    ops_table(ops)
    if os.path.exists(cmp_):
        print()
        compare_table(cmp_)


if __name__ == "__main__":
    main()
