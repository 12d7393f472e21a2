"""A/B of the CPU speed targets: two source trees of gradcore, side by side.

    python dev/ab_targets.py OLD_TREE NEW_TREE [--rounds 8] [--budget 1.5] [targets...]

Each round times every target once in each tree (a fresh process per tree and round,
the order reversed on alternate rounds), with bench/report.py's method: gradcore and
NumPy written by hand taking turns in the same process, so each figure is a ratio,
gradcore / NumPy, that a busy neighbour slows alike. The result per target is the
median over rounds of new(gc/np) / old(gc/np), with the interquartile range of those
per-round ratios as the noise. torch is left out (bench/report.py compares with it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

DRIVER = r"""
import json, sys
sys.path.insert(0, sys.argv[1] + "/bench")
import report
report.torch = None  # NumPy and gradcore only
from workloads import TARGETS
out = {}
for t in TARGETS:
    if sys.argv[3:] and t.key not in sys.argv[3:]:
        continue
    res = report.run_target(t, float(sys.argv[2]))
    out[t.key] = res["gradcore"][0] / res["numpy"][0]
print(json.dumps(out))
"""


def run(tree: str, budget: float, targets: list[str]) -> dict:
    env = dict(os.environ, PYTHONPATH=tree, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", DRIVER, tree, str(budget), *targets],
                          capture_output=True, text=True, env=env, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("targets", nargs="*")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--budget", type=float, default=1.5)
    args = parser.parse_intermixed_args()
    per_round: dict[str, list[float]] = {}
    old_r: dict[str, list[float]] = {}
    new_r: dict[str, list[float]] = {}
    for r in range(args.rounds):
        order = [("old", args.old), ("new", args.new)]
        if r % 2:
            order.reverse()
        got = {name: run(tree, args.budget, args.targets) for name, tree in order}
        for key in got["old"]:
            per_round.setdefault(key, []).append(got["new"][key] / got["old"][key])
            old_r.setdefault(key, []).append(got["old"][key])
            new_r.setdefault(key, []).append(got["new"][key])
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.3f}" for k, v in per_round.items()),
              flush=True)
    print(f"\n{'target':<10} {'new/old':>8} {'IQR':>13} {'gc/np old':>10} {'gc/np new':>10}")
    for key, ratios in per_round.items():
        q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
        print(f"{key:<10} {statistics.median(ratios):8.3f} {q[0]:6.3f}-{q[2]:<6.3f} "
              f"{statistics.median(old_r[key]):10.2f} {statistics.median(new_r[key]):10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
