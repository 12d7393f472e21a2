"""pytest-benchmark setup for bench/: the workloads' import path, a warm-up, and a
ratio summary.

Each test in ``test_targets.py`` records its median in the ``medians`` fixture; at the
end of the run the summary prints gradcore / NumPy-by-hand and torch / NumPy-by-hand
per target next to the goal (``bench/report.py`` prints the same table without pytest).
``test_suites.py``'s fused-vs-unfused cases record theirs in ``fused_medians``, and the
summary prints fused / unfused per kernel and device.
"""

from __future__ import annotations

import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # `import workloads` from this folder

_MEDIANS: dict[tuple[str, str], float] = {}  # (target key, impl) -> median seconds
_FUSED: dict[tuple[str, str], dict] = {}  # (device, kernel) -> impl -> median, and "is"
SETTLE_S = 0.3  # pause before each benchmark's warm-up
WARMUP_S = 0.5  # untimed calls of the step before pytest-benchmark calibrates


@pytest.fixture
def warm_up():
    """Call ``warm_up(step)`` to pause, then run ``step`` untimed for WARMUP_S seconds.

    The pause lets the thread pool of the library used last go idle: NumPy's OpenBLAS
    workers and torch's OpenMP workers spin for a while after their last task, and on
    a machine with few cores a benchmark that starts while the other library's pool
    still spins runs up to 10x slower, measuring the contention instead of the code.
    """
    def run(step):
        time.sleep(SETTLE_S)
        t_end = time.perf_counter() + WARMUP_S
        step()
        while time.perf_counter() < t_end:
            step()
    return run


@pytest.fixture
def medians():
    """Call ``medians(benchmark, key, impl)`` after a benchmark to feed the summary."""
    def record(benchmark, key: str, impl: str) -> None:
        median = _median(benchmark)
        if median:
            _MEDIANS[(key, impl)] = median
    return record


@pytest.fixture
def fused_medians():
    """Call ``fused_medians(benchmark, device, kernel, impl, what)`` after a fused or
    unfused benchmark (``what``: what the fused side is) to feed the summary."""
    def record(benchmark, device: str, kernel: str, impl: str, what: str,
               nbytes: int | None = None) -> None:
        median = _median(benchmark)
        if median:
            entry = _FUSED.setdefault((device, kernel), {})
            entry[impl] = median
            entry["is"] = what
            entry["bytes"] = nbytes
    return record


def _median(benchmark):
    # benchmark.stats is None under --benchmark-disable: nothing to record then
    stats = getattr(getattr(benchmark, "stats", None), "stats", None)
    return getattr(stats, "median", None)


def pytest_terminal_summary(terminalreporter):
    tr = terminalreporter
    if _FUSED:
        tr.section("fused / unfused (medians of this run; below 1 the fused kernel wins); "
                   "fused bandwidth against a device-to-device copy")
        tr.write_line(f"{'kernel':<26} {'device':<7} {'fused':>10} {'unfused':>10} "
                      f"{'ratio':>7} {'GB/s':>7} {'of copy':>8}  fused is")
        for (device, kernel), m in sorted(_FUSED.items()):
            f, u = m.get("fused"), m.get("unfused")
            ratio = f"{f / u:6.2f}x" if f and u else "n/a"
            gbs = m["bytes"] / f / 1e9 if f and m.get("bytes") else None
            copy = _FUSED.get((device, "(copy)"), {})
            copy_gbs = copy["bytes"] / copy["fused"] / 1e9 if copy.get("fused") and \
                copy.get("bytes") else None
            share = f"{gbs / copy_gbs:7.0%}" if gbs and copy_gbs else "n/a"
            tr.write_line(f"{kernel:<26} {device:<7} {_ms(f):>10} {_ms(u):>10} {ratio:>7} "
                          f"{gbs if gbs is None else round(gbs, 1)!s:>7} {share:>8}  "
                          f"{m['is']}")
    if not _MEDIANS:
        return
    from workloads import TARGETS

    tr.section("ratios to NumPy by hand (medians of this run)")
    tr.write_line(f"{'target':<46} {'gradcore':>9} {'compiled':>9} {'torch':>9} {'goal':>6}")
    for t in TARGETS:
        base = _MEDIANS.get((t.key, "numpy"))
        cells = []
        for impl in ("gradcore", "compiled", "torch"):
            m = _MEDIANS.get((t.key, impl))
            cells.append(f"{m / base:8.2f}x" if base and m else "n/a")
        tr.write_line(f"{t.title:<46} {cells[0]:>9} {cells[1]:>9} {cells[2]:>9} "
                      f"{t.ratio:5.2f}x")


def _ms(seconds) -> str:
    return "n/a" if seconds is None else f"{seconds * 1e3:.2f} ms"
