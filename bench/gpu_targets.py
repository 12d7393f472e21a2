"""The GPU targets of ``gc.compile`` in one process, on a machine with a GPU:

1. the 784-512-512-10 Adam step (batch 256): gradcore eager, gradcore compiled (one
   CUDA graph), PyTorch eager and PyTorch's own hand-captured CUDA graph
   (``torch.cuda.graph``, ``Adam(capturable=True)``), interleaved round by round; each
   round times ``STEPS`` calls queued (one synchronization at the end, as a training
   loop runs) and the median of the rounds is reported, with the ratios;
2. the kernels in one step: the nodes of gradcore's captured graph (kernels, copies,
   memsets), which is what an eager step launches too;
3. the compiled step's parameters after a few steps against eager's (bit for bit);
4. memory over ``MEMORY_STEPS`` compiled steps: the device pool, the device's free
   memory and the process's resident memory, read along the way.

``python bench/gpu_targets.py [OUT.json]`` prints one table per part; the recorded runs
are in dev/benchmarks/ (``gpu-targets-*``).
"""

from __future__ import annotations

import gc as _pygc
import json
import statistics
import sys
import time
import warnings

import numpy as np

STEPS = 200          # calls per timed round
ROUNDS = 9
MEMORY_STEPS = 10_000
WIDTH = 512


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


_NODE_TYPES = {0: "kernel", 1: "memcpy", 2: "memset", 3: "host", 4: "graph", 5: "empty",
               6: "wait_event", 7: "event_record", 10: "mem_alloc", 11: "mem_free",
               12: "batch_mem_op", 13: "conditional"}


def _graph_nodes(compiled) -> dict:
    """The node types of the CUDA graph(s) a compiled function captured (the driver's
    cuGraphGetNodes and cuGraphNodeGetType, through ctypes)."""
    import ctypes

    cuda = ctypes.CDLL("libcuda.so.1")
    counts: dict = {}
    for entry in compiled._cache.values():
        step = getattr(entry, "graph", None)
        if step is None:
            continue
        handle = ctypes.c_void_p(step.graph.graph)
        n = ctypes.c_size_t(0)
        if cuda.cuGraphGetNodes(handle, None, ctypes.byref(n)):
            raise RuntimeError("cuGraphGetNodes failed")
        nodes = (ctypes.c_void_p * n.value)()
        if cuda.cuGraphGetNodes(handle, nodes, ctypes.byref(n)):
            raise RuntimeError("cuGraphGetNodes failed")
        for node in nodes[:n.value]:
            kind = ctypes.c_int(-1)
            cuda.cuGraphNodeGetType(ctypes.c_void_p(node), ctypes.byref(kind))
            name = _NODE_TYPES.get(kind.value, str(kind.value))
            counts[name] = counts.get(name, 0) + 1
    return counts


def _graph_nodes_from_dot(compiled) -> dict:
    counts: dict = {}
    for entry in compiled._cache.values():
        step = getattr(entry, "graph", None)
        if step is None:
            continue
        dot = step.graph.debug_dot_str()
        for kind in ("KERNEL", "MEMCPY", "MEMSET", "HOST", "EMPTY"):
            counts[kind.lower()] = counts.get(kind.lower(), 0) + dot.count("{" + kind)
    return counts


def step_timings(out: dict) -> None:
    import cupy
    import torch

    import gradcore as gc
    from gradcore import benchmark

    suite = benchmark.SUITES["step"]
    dev = gc.device("cuda")
    _, eager = suite.build(dev, WIDTH)
    _, stepped = suite.build(dev, WIDTH)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = gc.compile(stepped)
        for _ in range(4):
            compiled(None)
    out["compile_warnings"] = [str(w.message) for w in caught]
    out["compiled_replays_after_4"] = compiled.replays
    _, teager = suite.build_torch(WIDTH, "cuda:0")
    _, tgraph = suite.build_torch(WIDTH, "cuda:0", graph=True)
    gsync = cupy.cuda.get_current_stream().synchronize

    def tsync():
        torch.cuda.synchronize()

    graphs = [e.graph for e in compiled._cache.values() if getattr(e, "graph", None)]
    variants = {"gradcore eager": (eager, gsync), "gradcore compiled": (compiled, gsync),
                "torch eager": (teager, tsync), "torch graph": (tgraph, tsync)}
    if graphs:  # the captured graph launched bare: its device time, without gradcore's
        # host work around a launch (input copies, the optimizers' scalars, guards)
        g = graphs[0]
        variants["gradcore bare graph"] = (lambda _: g.graph.launch(g.stream),
                                           g.stream.synchronize)
    for fn, sync in variants.values():  # warm
        for _ in range(20):
            fn(None)
        sync()
    times = {k: [] for k in variants}
    synced = {k: [] for k in variants}
    for _ in range(ROUNDS):
        for name, (fn, sync) in variants.items():
            sync()
            t0 = time.perf_counter()
            for _ in range(STEPS):
                fn(None)
            sync()
            times[name].append((time.perf_counter() - t0) / STEPS)
            per = []
            for _ in range(20):  # one call at a time, synchronized (gradcore bench's way)
                t0 = time.perf_counter()
                fn(None)
                sync()
                per.append(time.perf_counter() - t0)
            synced[name].append(statistics.median(per))
    med = {k: statistics.median(v) for k, v in times.items()}
    med_sync = {k: statistics.median(v) for k, v in synced.items()}
    out["step_queued_s"], out["step_synced_s"] = med, med_sync
    out["step_queued_rounds_s"] = times
    out["compiled_replays"] = compiled.replays
    try:
        out["graph_nodes"] = _graph_nodes(compiled)
    except Exception as exc:  # noqa: BLE001 - a count must not stop the run
        out["graph_nodes_error"] = repr(exc)
        try:
            out["graph_nodes"] = _graph_nodes_from_dot(compiled)
        except Exception as exc2:  # noqa: BLE001
            out["graph_nodes_dot_error"] = repr(exc2)
    print(f"\n784-{WIDTH}-{WIDTH}-10 Adam step, batch 256; {ROUNDS} rounds of {STEPS} "
          f"queued calls (median), and one synchronized call (median)")
    for k in variants:
        print(f"  {k:18s} {med[k] * 1e6:9.1f} us/step queued   {med_sync[k] * 1e6:9.1f} us "
              f"synced")
    ce, cc = med["gradcore eager"], med["gradcore compiled"]
    print(f"  compiled vs gradcore eager: {ce / cc:.2f}x faster (target >= 5x)")
    print(f"  compiled vs torch eager:    {med['torch eager'] / cc:.2f}x faster (target >= 4x)")
    print(f"  compiled vs torch graph:    {med['torch graph'] / cc:.2f}x "
          f"(target >= 1.0x: no slower)")
    if "gradcore bare graph" in med:
        bare = med["gradcore bare graph"]
        print(f"  bare graph vs torch graph:  {med['torch graph'] / bare:.2f}x "
              "(device time of the two graphs)")
    print(f"  replays: {compiled.replays}; warnings: {out['compile_warnings']}")
    print(f"  graph nodes: {out.get('graph_nodes')} {out.get('graph_nodes_error', '')}")


def same_as_eager(out: dict) -> None:
    import gradcore as gc
    from gradcore import benchmark

    suite = benchmark.SUITES["step"]
    results = []
    for compiled in (False, True):
        gc.manual_seed(0)
        prepare, step = suite.build(gc.device("cuda"), WIDTH)
        fn = gc.compile(step) if compiled else step
        for _ in range(12):
            fn(None)
        # the model's parameters are reachable through the closure's optimizer
        opt = next(c.cell_contents for c in step.__closure__
                   if isinstance(c.cell_contents, gc.optim.Optimizer))
        results.append([p.detach().cpu().numpy() for g in opt.param_groups
                        for p in g["params"]])
    diffs = [float(np.max(np.abs(a - b))) for a, b in zip(*results)]
    out["compiled_vs_eager_max_abs_diff"] = diffs
    print(f"\n12 steps, compiled against eager: max |difference| per parameter {diffs} "
          f"({'bit for bit' if max(diffs) == 0 else 'NOT bit for bit'})")


def memory(out: dict) -> None:
    import cupy

    import gradcore as gc
    from gradcore import benchmark

    _, step = benchmark.SUITES["step"].build(gc.device("cuda"), WIDTH)
    fn = gc.compile(step)
    pool = cupy.get_default_memory_pool()
    sync = cupy.cuda.get_current_stream().synchronize
    rows = []
    t0 = time.perf_counter()
    for i in range(1, MEMORY_STEPS + 1):
        fn(None)
        if i in (100, 1000, 2500, 5000, 7500, MEMORY_STEPS):
            sync()
            _pygc.collect()
            try:
                free, total = cupy.cuda.runtime.memGetInfo()
            except AttributeError:  # (the tests' CuPy stand-in has no device to ask)
                free = total = 0
            rows.append({"step": i, "pool_used_mb": pool.used_bytes() / 2**20,
                         "pool_total_mb": pool.total_bytes() / 2**20,
                         "device_used_mb": (total - free) / 2**20, "rss_mb": _rss_mb()})
    out["memory"] = rows
    out["memory_seconds"] = time.perf_counter() - t0
    out["memory_replays"] = fn.replays
    print(f"\n{MEMORY_STEPS} compiled steps in {out['memory_seconds']:.1f} s "
          f"({fn.replays} replays)")
    for r in rows:
        print(f"  step {r['step']:6d}: pool used {r['pool_used_mb']:8.2f} MB, pool "
              f"{r['pool_total_mb']:8.2f} MB, device used {r['device_used_mb']:9.1f} MB, "
              f"RSS {r['rss_mb']:8.1f} MB")


def main(argv) -> int:
    out: dict = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    failed = 0
    for part in (step_timings, same_as_eager, memory):
        try:
            part(out)
        except Exception as exc:  # noqa: BLE001 - report and go on to the next part
            import traceback

            traceback.print_exc()
            out[f"{part.__name__}_error"] = repr(exc)
            failed += 1
    if len(argv) > 1:
        with open(argv[1], "w") as f:
            json.dump(out, f, indent=1, default=str)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
