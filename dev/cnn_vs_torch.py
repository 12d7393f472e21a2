"""The CNN step (``gradcore bench --suite conv``), gradcore against PyTorch on the CPU,
interleaved: each round times a few gradcore steps (compiled and eager) and a few
PyTorch steps in turn in one process, so that a busy neighbour slows both alike; the
result is the median over rounds of the per-round ratio, with its quartiles.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        python dev/cnn_vs_torch.py [--size 8] [--rounds 30] [--steps 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import gradcore as gc
from gradcore import benchmark


def _median_time(step, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        step(None)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--steps", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(1)
    suite = benchmark.SUITES["conv"]
    _, eager = suite.build("cpu", a.size)
    _, plain = suite.build("cpu", a.size)
    compiled = gc.compile(plain)
    _, ref = suite.build_torch(a.size)
    for f in (eager, compiled, ref):  # warm up (the compiled step records twice)
        for _ in range(4):
            f(None)
    ratios = {"compiled": [], "eager": []}
    for _ in range(a.rounds):
        t_ref = _median_time(ref, a.steps)
        ratios["compiled"].append(_median_time(compiled, a.steps) / t_ref)
        ratios["eager"].append(_median_time(eager, a.steps) / t_ref)
    for name, r in ratios.items():
        q = statistics.quantiles(r, n=4)
        print(f"CNN step at {a.size}x{a.size}, gradcore {name} / PyTorch: "
              f"{statistics.median(r):.2f}x (quartiles {q[0]:.2f}-{q[2]:.2f}, "
              f"{a.rounds} rounds)")


if __name__ == "__main__":
    main()
