"""Where a GPU step's time goes: launch cost, host overhead per call, kernel time.

Run on a machine with a GPU (``python bench/gpu_probe.py [out.json]``); it prints one
table. Each figure comes from ``cupyx.profiler.benchmark`` (host time per call, and
device time between CUDA events), or from a host clock around a loop that synchronizes
once at its end (``per call, queued``: what a sequence of calls costs when the host
does not wait for each). The recorded run is dev/benchmarks/gpu-probe.txt (and .json);
docs/benchmarks.md quotes it.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np


def _bench(fn, args=(), n_repeat=200, n_warmup=20):
    from cupyx.profiler import benchmark

    r = benchmark(fn, args, n_repeat=n_repeat, n_warmup=n_warmup)
    return float(np.median(r.cpu_times)), float(np.median(r.gpu_times[0]))


def _queued(fn, sync, n=500):
    """Host seconds per call over ``n`` calls, synchronizing once at the end."""
    for _ in range(20):
        fn()
    sync()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        times.append((time.perf_counter() - t0) / n)
    return statistics.median(times)


def main(argv):
    import cupy as cp

    import gradcore as gc
    from gradcore import benchmark as gb

    rows = []

    def row(what, host=None, device=None, note=""):
        rows.append({"what": what, "host_us": None if host is None else host * 1e6,
                     "device_us": None if device is None else device * 1e6, "note": note})

    sync = cp.cuda.get_current_stream().synchronize
    dev = gc.device("cuda")
    m = dev.math

    # 1. the cost of one launch: a one-element add
    a, b, c = cp.ones(1, np.float32), cp.ones(1, np.float32), cp.empty(1, np.float32)
    h, d = _bench(cp.add, (a, b, c))
    row("cupy.add, 1 element (out=)", h, d)
    row("cupy.add, 1 element, per call queued", _queued(lambda: cp.add(a, b, c), sync))
    g1, y1 = cp.ones(1, np.float32), cp.ones(1, np.float32)
    m.exp_backward(g1, y1)
    h, d = _bench(m.exp_backward, (g1, y1))
    row("gradcore exp_backward, 1 element", h, d, "one generated kernel")
    row("gradcore exp_backward, 1 element, per call queued",
        _queued(lambda: m.exp_backward(g1, y1), sync))
    try:
        import torch

        ta, tb, tc = (torch.ones(1, device="cuda") for _ in range(3))
        tsync = torch.cuda.synchronize
        row("torch.add, 1 element (out=), per call queued",
            _queued(lambda: torch.add(ta, tb, out=tc), tsync))
    except Exception as exc:  # noqa: BLE001 - torch is optional here
        torch = None
        row("torch", note=f"not measured: {exc}")

    # 2. bandwidth at 16M float32: device time of one kernel against a copy
    n = 1 << 24
    x = cp.random.standard_normal(n, dtype=np.float32)
    g = cp.random.standard_normal(n, dtype=np.float32)
    out = cp.empty_like(x)
    for what, fn, args, nbytes in (
        ("copy 16M float32", cp.copyto, (out, x), 8 * n),
        ("cupy.multiply 16M", cp.multiply, (g, x, out), 12 * n),
        ("gradcore exp_backward 16M", m.exp_backward, (g, x), 12 * n),
        ("gradcore tanh_backward 16M", m.tanh_backward, (g, x), 12 * n),
        ("gradcore mul_backward 16M (both grads)", m.mul_backward, (g, x, x), 20 * n),
    ):
        h, d = _bench(fn, args, n_repeat=100)
        row(what, h, d, f"{nbytes / d / 1e9:.0f} GB/s by device time")

    # 3. a training step and the pointwise chain: device time against host time
    for suite, size in (("step", 512), ("pointwise", 1 << 22), ("mlp", 512)):
        s = gb.SUITES[suite]
        prepare, timed = s.build(dev, size)
        state = prepare()
        timed(state)
        sync()

        def once(prepare=prepare, timed=timed):
            timed(prepare())

        h, d = _bench(once, n_repeat=50, n_warmup=5)
        row(f"gradcore {suite} {size} (with its untimed forward)", h, d)
        try:
            with gc.profile() as prof:
                once()
            sync()
            row(f"gradcore {suite} {size}: launches counted", note=str(prof.launches))
        except Exception as exc:  # noqa: BLE001 - a probe reports and goes on
            row(f"gradcore {suite} {size}: launches", note=f"not counted: {exc}")
        if torch is not None:
            tp, tt = s.build_torch(size, "cuda")

            def tonce(tp=tp, tt=tt):
                tt(tp())
            tonce()
            torch.cuda.synchronize()
            h, d = _bench(tonce, n_repeat=50, n_warmup=5)
            row(f"torch {suite} {size} (with its untimed forward)", h, d)

    if "--profile" in argv:  # where the host's time goes in a step, by function
        import cProfile
        import pstats

        for suite, size in (("step", 512), ("pointwise", 1 << 20)):
            prepare, timed = gb.SUITES[suite].build(dev, size)
            for _ in range(5):
                timed(prepare())
            sync()
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(50):
                timed(prepare())
            sync()
            prof.disable()
            print(f"== cProfile: 50 x gradcore {suite} {size} (forward and backward)")
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)

    width = max(len(r["what"]) for r in rows)
    print(f"{'what':<{width}}  {'host us':>9}  {'device us':>9}  note")
    for r in rows:
        hs = "-" if r["host_us"] is None else f"{r['host_us']:.1f}"
        ds = "-" if r["device_us"] is None else f"{r['device_us']:.1f}"
        print(f"{r['what']:<{width}}  {hs:>9}  {ds:>9}  {r['note']}")
    paths = [a for a in argv[1:] if not a.startswith("--")]
    if paths:
        with open(paths[0], "w") as f:
            json.dump({"machine": gb.machine_description([dev], True), "rows": rows}, f,
                      indent=2)


if __name__ == "__main__":
    main(sys.argv)
