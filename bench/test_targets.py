"""Issue 3's speed targets: gradcore, NumPy by hand and torch, side by side per target.

Run with ``make bench`` (or ``pytest bench --benchmark-only``). Each target is one
benchmark group; before timing, the first step of gradcore and torch is checked against
the NumPy baseline's gradients (``np.allclose``), so no benchmark measures a wrong
computation.
"""

from __future__ import annotations

import pytest

from workloads import IMPLS, TARGETS, TORCH_MISSING, torch, verified_step


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("target", TARGETS, ids=[t.key for t in TARGETS])
def test_target(benchmark, medians, warm_up, target, impl):
    if impl == "torch" and torch is None:
        pytest.skip(TORCH_MISSING)
    benchmark.group = target.title
    benchmark.extra_info["goal_ratio"] = target.ratio
    step = verified_step(target, impl, target.inputs())  # raises on a wrong gradient
    warm_up(step)
    benchmark(step)
    medians(benchmark, target.key, impl)
