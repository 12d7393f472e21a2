"""What one ``gc.compile`` recording (CPU) and one capture (CUDA, on the CuPy stand-in)
of the small MLP step cost in a process holding many live objects, before and after a
change, side by side.

    PYTHONPATH=. python dev/capture_live_objects.py [--before REV] [--repeat N]

Each side runs in a process of its own: "before" on gradcore as it was at ``REV``
(``git archive``, default ``HEAD~2``), "after" on the working tree, both with the
working tree's ``tests/`` (the stand-in). The process first imports SciPy and
scikit-learn when installed (else keeps 300,000 small objects alive), as a process
training next to them does. Printed: the live objects the collector tracks, and the
time of one ``gc.get_objects()``, and the best and the median over ``N`` fresh compiled functions
(the heap collected before each) of one eager call, one CPU recording (the
first call of a CPU step) and one stand-in capture (the second call of a CUDA step).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import gc as pygc, json, sys, time
sys.path.insert(0, sys.argv[1])  # tests/: the stand-in
try:
    import scipy, scipy.stats, scipy.signal, sklearn, sklearn.linear_model, sklearn.ensemble
    loaded = "scipy+sklearn"
except ImportError:
    import torch  # noqa
    loaded = "300000 objects"
    keep = [[i] for i in range(300_000)]
import numpy as np
import gradcore as gc
from conftest import cuda_standin

n = int(sys.argv[2])

def make(device):
    gc.manual_seed(0)
    model = gc.nn.Sequential(gc.nn.Linear(64, 128), gc.nn.ReLU(), gc.nn.Linear(128, 128),
                             gc.nn.ReLU(), gc.nn.Linear(128, 10)).to(device)
    opt = gc.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    x = gc.tensor(rng.standard_normal((32, 64)).astype(np.float32), device=device)
    y = gc.tensor(rng.integers(0, 10, 32), device=device)

    def step(x, y):
        opt.zero_grad()
        loss = gc.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step, x, y

def timed(fn, *args):
    pygc.collect()  # (no collection of the whole heap inside the call timed)
    t = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t

passes = []
for _ in range(n):
    t = time.perf_counter()
    out = {"loaded": loaded, "objects": len(pygc.get_objects())}
    passes.append(time.perf_counter() - t)
out["one pass over them"] = passes
eager, record = [], []
step, x, y = make("cpu")
for _ in range(n):
    eager.append(timed(step, x, y))
    fn = gc.compile(step)
    record.append(timed(fn, x, y))
    assert fn.recordings == 1
out["cpu eager call"] = eager
out["cpu recording"] = record
with cuda_standin():
    step, x, y = make("cuda")
    eager, capture = [], []
    for _ in range(n):
        eager.append(timed(step, x, y))
        fn = gc.compile(step)
        fn(x, y)  # (the eager first call)
        capture.append(timed(fn, x, y))
        assert fn.recordings == 1
    out["stand-in eager call"] = eager
    out["stand-in capture"] = capture
print(json.dumps(out))
"""


def run(tree, repeat):
    env = dict(os.environ, PYTHONPATH=tree, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-c", CHILD, os.path.join(ROOT, "tests"),
                          str(repeat)], env=env, capture_output=True, text=True, cwd=tree)
    if res.returncode:
        raise SystemExit(res.stderr)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default="HEAD~2")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as old:
        archive = subprocess.run(["git", "-C", ROOT, "archive", args.before, "gradcore",
                                  "kernels"], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", old], input=archive, check=True)
        before = run(old, args.repeat)
    after = run(ROOT, args.repeat)
    print(f"process: {after['loaded']} loaded, {after['objects']} live objects tracked "
          f"(before: {before['objects']})")
    print(f"milliseconds, best of {args.repeat} (median)")
    print(f"{'':22}{'before (' + args.before + ')':>22}{'after':>20}")
    for key in ("one pass over them", "cpu eager call", "cpu recording",
                "stand-in eager call", "stand-in capture"):
        cells = [f"{min(side[key]) * 1e3:8.1f} ({statistics.median(side[key]) * 1e3:6.1f})"
                 for side in (before, after)]
        print(f"{key:22}{cells[0]:>22}{cells[1]:>20}")


if __name__ == "__main__":
    main()
