"""Print issue 3's speed table: gradcore and torch as ratios to NumPy written by hand.

    python bench/report.py              # all five targets, about a minute
    python bench/report.py --budget 4   # seconds of timing per target (default 8)
    python bench/report.py mlp64 bcast  # only these targets

The workloads are the ones ``test_targets.py`` benchmarks (``bench/workloads.py``).
Before timing, each implementation's first step is checked against the NumPy
baseline; a failing one is reported instead of timed. Timing is timeit-style: each
implementation runs ``number`` calls per repeat (enough for about 20 ms) and the figure
is the median over repeats of the time per call. NumPy and gradcore take turns, repeat
after repeat, so a busy neighbour slows both alike. torch is timed in a phase of its
own, after a pause: its OpenMP workers and NumPy's OpenBLAS workers both spin while
idle, and on a machine with few cores two spinning pools slow each other by up to
10x, which would measure the contention instead of the library. Unlike ``timeit``,
the garbage collector stays on, as it is in real use.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from workloads import IMPLS, TARGETS, TORCH_MISSING, torch, verified_step  # noqa: E402

REPEAT_S = 0.02     # aim for this much time in one repeat of one implementation
WARMUP_S = 0.5      # run each step this long, untimed, before calibrating
SETTLE_S = 0.3      # pause between phases: idle thread pools stop spinning
MIN_REPEATS = 5
MAX_REPEATS = 60


def _gradcore_revision() -> str:
    """The checkout's commit, with "+changes" when the working tree differs from it."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "gradcore"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown revision"
    return f"gradcore at {rev}{'+changes' if dirty else ''}"


def _fmt_time(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.0f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def _time_calls(step, number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        step()
    return (time.perf_counter() - t0) / number


def measure(steps: dict, budget_s: float) -> dict:
    """Median seconds per call of each step, repeats interleaved across the steps."""
    numbers, round_s = {}, 0.0
    for name, step in steps.items():
        # warm up: first-call costs (thread pools, caches) are not the subject
        t_end = time.perf_counter() + WARMUP_S
        step()
        while time.perf_counter() < t_end:
            step()
        once = max(_time_calls(step, 1), 1e-9)
        numbers[name] = max(1, math.ceil(REPEAT_S / once))
        round_s += numbers[name] * once
    repeats = int(min(MAX_REPEATS, max(MIN_REPEATS, budget_s // round_s)))
    samples = {name: [] for name in steps}
    for _ in range(repeats):
        for name, step in steps.items():
            samples[name].append(_time_calls(step, numbers[name]))
    return {name: (statistics.median(v), repeats, numbers[name]) for name, v in samples.items()}


def run_target(target, budget_s: float) -> dict:
    """{impl: (median, repeats, number)} or {impl: "why it was not timed"}."""
    inputs = target.inputs()
    steps, result = {}, {}
    for impl in IMPLS:
        if impl == "torch" and torch is None:
            result[impl] = TORCH_MISSING
            continue
        try:
            steps[impl] = verified_step(target, impl, inputs)
        except Exception as exc:  # a failed check is the finding: report it, time the rest
            result[impl] = f"FAILED: {exc}"
    if "numpy" not in steps:
        return result
    torch_step = steps.pop("torch", None)
    time.sleep(SETTLE_S)
    result.update(measure(steps, budget_s * (0.7 if torch_step else 1.0)))
    if torch_step is not None:
        time.sleep(SETTLE_S)
        result.update(measure({"torch": torch_step}, budget_s * 0.3))
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", help="target keys: "
                        + ", ".join(t.key for t in TARGETS))
    parser.add_argument("--budget", type=float, default=8.0,
                        help="seconds of timing per target (default 8)")
    args = parser.parse_args(argv)
    chosen = [t for t in TARGETS if not args.targets or t.key in args.targets]

    torch_info = (f"torch {torch.__version__} ({torch.get_num_threads()} threads)"
                  if torch is not None else "torch missing")
    print(f"{_gradcore_revision()}; python {platform.python_version()}, numpy "
          f"{np.__version__}, {torch_info}, {os.cpu_count()} CPUs, {platform.machine()}")
    head = (f"{'target':<44} {'NumPy':>9} {'gradcore':>9} {'compiled':>9} {'torch':>9} "
            f"{'gc/np':>7} {'comp/np':>7} {'torch/np':>8} {'goal':>6}  met")
    print(head)
    print("-" * len(head))
    failures = []
    t_start = time.perf_counter()
    for target in chosen:
        res = run_target(target, args.budget)
        cells, ratios = [], {}
        base = res.get("numpy")
        for impl in IMPLS:
            r = res.get(impl)
            if isinstance(r, tuple):
                cells.append(_fmt_time(r[0]))
                if isinstance(base, tuple):
                    ratios[impl] = r[0] / base[0]
            else:
                cells.append("n/a" if r == TORCH_MISSING else "FAILED")
                if r != TORCH_MISSING:
                    failures.append(f"{target.key} [{impl}]: {r}")
        gc_r, c_r, t_r = ratios.get("gradcore"), ratios.get("compiled"), ratios.get("torch")
        met = "-" if gc_r is None else ("yes" if gc_r <= target.ratio else "no")

        def ratio(r):
            return f"{r:.2f}x" if r else "n/a"
        print(f"{target.title:<44} {cells[0]:>9} {cells[1]:>9} {cells[2]:>9} {cells[3]:>9} "
              f"{ratio(gc_r):>7} {ratio(c_r):>7} {ratio(t_r):>8} {target.ratio:5.2f}x  {met}",
              flush=True)
    print(f"(medians per step; {time.perf_counter() - t_start:.0f} s in all)")
    for f in failures:
        print(f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
