"""``gradcore bench``: CPU-against-GPU sweeps of backward passes and training steps.

Suites (each a sweep over one size):

- ``mlp``: the backward pass of an MLP ``w-w-w-10`` (cross-entropy) on a batch of
  ``w/2``; sizes are the hidden width ``w``.
- ``pointwise``: the backward pass of a chain of 100 pointwise ops (``x*1.0001``,
  ``x+0.001``, ``tanh``, in turn) summed; sizes are the number of elements.
- ``broadcast``: the backward pass of ``(x[B,N]*w[N]+b[N]).sum()`` with ``B = 256``
  (the gradients of ``w`` and ``b`` are unbroadcasting reductions); sizes are ``N``.
- ``step``: a full training step (forward, backward, Adam) of an MLP ``784-w-w-10`` on a
  batch of 256; sizes are ``w``.

Forward passes of the backward suites run untimed before each timed backward. Each
measurement runs ``WARMUP`` untimed calls, then ``repeat`` timed ones, and reports their
median. On CUDA the device is synchronized before and after each timed call.
``compare_torch`` adds the same workloads written in PyTorch, timed after gradcore's (a
pause in between, so that idle thread pools stop spinning), on each device gradcore ran
on where PyTorch can: the CPU always, a GPU when ``torch.cuda.is_available()``; on a GPU
the whole-step suites also as PyTorch's own CUDA graph of the step (``torch graph``:
captured by hand with ``torch.cuda.graph`` and ``Adam(capturable=True)``).
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import gradcore as gc

__all__ = ["SUITES", "run", "crossover", "format_table", "machine_description", "plot",
           "plot_unavailable_reason", "profile_suite", "PROFILE_SIZES"]

WARMUP = 2
SETTLE_S = 0.3     # pause before the torch phase
BROADCAST_ROWS = 256
STEP_BATCH = 256
CHAIN_LENGTH = 100


# ---- device-specific: the only place that knows the CUDA array module's API ----------------
def _synchronize(dev) -> None:
    """Wait for the device's work to finish (a no-op on the CPU)."""
    if dev.type == "cuda":
        dev.xp.cuda.get_current_stream().synchronize()


def _torch_devices(devices) -> list:
    """The devices among ``devices`` that PyTorch can run on here: the CPU, and a GPU
    when this torch build sees one."""
    import torch  # optional (not a dependency): imported where PyTorch is compared

    return [d for d in devices if d.type == "cpu"
            or (d.type == "cuda" and torch.cuda.is_available())]


def _torch_synchronize(dev) -> None:
    if dev.type == "cuda":
        import torch  # optional (not a dependency): imported where PyTorch is compared

        torch.cuda.synchronize(dev.index or 0)


def _torch_cuda_graph(torch, step):
    """``step`` captured into a CUDA graph after three warm-up calls on a side stream
    (PyTorch's recipe for whole-network capture); returns a function that replays it."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step(None)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step(None)

    def replay(_, step=step):  # (step holds the static tensors the graph reads: alive)
        graph.replay()
    return replay


def _gpu_description(dev) -> dict:
    """Name, driver and CuPy version of a usable CUDA device (what can be read)."""
    xp = dev.xp
    info = {"device": str(dev), "cupy_version": getattr(xp, "__version__", None)}
    runtime = xp.cuda.runtime
    try:
        name = runtime.getDeviceProperties(dev.index or 0)["name"]
        info["name"] = name.decode() if isinstance(name, bytes) else str(name)
    except Exception as exc:  # noqa: BLE001 - a description must not stop the run
        info["name"] = f"unknown ({exc})"
    for key, call in (("driver_version", "driverGetVersion"),
                      ("runtime_version", "runtimeGetVersion")):
        try:
            info[key] = int(getattr(runtime, call)())
        except Exception:  # noqa: BLE001
            info[key] = None
    return info


# ---- workloads ------------------------------------------------------------------------------
# Each workload takes (m, device, size), m being gradcore or torch (their APIs agree), and
# returns (prepare, timed): prepare() runs untimed and returns the state timed(state)
# needs. Suite.build binds it to gradcore on a device, Suite.build_torch to torch on one.
def _mlp(n_in, hidden, n_out, nn, dev):
    """The MLP with its parameters made on ``dev`` (not on the default device, which
    ``GRADCORE_DEVICE`` may set to one that is not timed, or not usable)."""
    layers = []
    for width in hidden:
        layers += [nn.Linear(n_in, width, device=dev), nn.ReLU()]
        n_in = width
    layers.append(nn.Linear(n_in, n_out, device=dev))
    return nn.Sequential(*layers)


def _mlp_backward(m, dev, w):
    m.manual_seed(0)
    model = _mlp(w, [w, w], 10, m.nn, dev)
    batch = max(1, w // 2)
    x = m.randn(batch, w, device=dev)
    y = m.randint(0, 10, (batch,), device=dev)
    loss_fn = m.nn.CrossEntropyLoss()

    def prepare():
        model.zero_grad()
        return loss_fn(model(x), y)

    return prepare, lambda loss: loss.backward()


def _chain(x, tanh):
    h = x
    for i in range(CHAIN_LENGTH):
        kind = i % 3
        h = h * 1.0001 if kind == 0 else h + 0.001 if kind == 1 else tanh(h)
    return h.sum()


def _pointwise_backward(m, dev, n):
    m.manual_seed(0)
    x = m.randn(n, device=dev, requires_grad=True)

    def prepare():
        x.grad = None
        return _chain(x, m.tanh)

    return prepare, lambda loss: loss.backward()


def _broadcast_backward(m, dev, n):
    m.manual_seed(0)
    x = m.randn(BROADCAST_ROWS, n, device=dev)
    w = m.randn(n, device=dev, requires_grad=True)
    b = m.randn(n, device=dev, requires_grad=True)

    def prepare():
        w.grad = b.grad = None
        return (x * w + b).sum()

    return prepare, lambda loss: loss.backward()


def _train_step(m, dev, w, capturable=False):
    m.manual_seed(0)
    model = _mlp(784, [w, w], 10, m.nn, dev)
    return _adam_steps(m, model, m.randn(STEP_BATCH, 784, device=dev),
                       m.randint(0, 10, (STEP_BATCH,), device=dev), capturable)


def _adam_steps(m, model, x, y, capturable=False):
    """``(prepare, timed)`` of a whole training step (cross-entropy, Adam) on ``x, y``;
    ``capturable`` asks for PyTorch's ``Adam(capturable=True)`` (its state on the device,
    as a CUDA graph of the step needs)."""
    extra = {"capturable": True} if capturable else {}
    opt = m.optim.Adam(model.parameters(), lr=1e-3, **extra)
    loss_fn = m.nn.CrossEntropyLoss()

    def step(_):
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return lambda: None, step


def _conv_step(m, dev, w, capturable=False):
    """An Adam step of a CNN on ``w`` x ``w`` images, batch 64: the digits network of
    ``gradcore train --model cnn`` at w = 8, the CIFAR-sized stack (3 channels; 32, 64,
    128 wide; batch 128) from w = 32 on."""
    m.manual_seed(0)
    nn = m.nn
    cifar = w >= 32
    chans = (3, 32, 64, 128) if cifar else (1, 16, 32)
    layers = []
    for c_in, c_out in zip(chans, chans[1:]):
        layers += [nn.Conv2d(c_in, c_out, 3, padding=1, device=dev),
                   nn.BatchNorm2d(c_out, device=dev), nn.ReLU(), nn.MaxPool2d(2)]
    side = w >> (len(chans) - 1)
    model = nn.Sequential(*layers, nn.Flatten(), nn.Linear(chans[-1] * side * side, 10,
                                                           device=dev))
    batch = 128 if cifar else 64
    return _adam_steps(m, model, m.randn(batch, chans[0], w, w, device=dev),
                       m.randint(0, 10, (batch,), device=dev), capturable)


@dataclass(frozen=True)
class Suite:
    name: str
    what: str                      # one line: what is timed, and what a size means
    sizes: tuple[int, ...]         # the default sweep
    workload: Callable             # workload(m, device, size) -> (prepare, timed)
    compilable: bool = False       # whether `timed` is a whole step gc.compile can capture

    def build(self, dev, size):
        """The workload in gradcore on ``dev``: ``(prepare, timed)``."""
        return self.workload(gc, str(dev), size)

    def build_torch(self, size, device="cpu", graph=False):
        """The same workload in PyTorch on ``device`` (a torch device string); with
        ``graph`` (a whole step on CUDA), captured by hand into one CUDA graph as
        PyTorch's documentation does it (``torch.cuda.graph``, ``capturable=True``
        Adam), and timed as its replays."""
        import torch  # optional (not a dependency): imported where PyTorch is compared

        if not graph:
            return self.workload(torch, device, size)
        prepare, timed = self.workload(torch, device, size, capturable=True)
        return prepare, _torch_cuda_graph(torch, timed)


SUITES = {s.name: s for s in (
    Suite("mlp", "backward of an MLP w-w-w-10, batch w/2 (size: w)",
          (64, 128, 256, 512, 1024, 2048), _mlp_backward),
    Suite("pointwise", f"backward of a {CHAIN_LENGTH}-op chain of *, +, tanh (size: elements)",
          (1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216),
          _pointwise_backward),
    Suite("broadcast", f"backward of (x[{BROADCAST_ROWS},N]*w[N]+b[N]).sum() (size: N)",
          (64, 256, 1024, 4096, 16384, 65536), _broadcast_backward),
    Suite("step", f"Adam training step of an MLP 784-w-w-10, batch {STEP_BATCH} (size: w)",
          (64, 128, 256, 512, 1024), _train_step, compilable=True),
    Suite("conv", "Adam training step of a CNN (conv-bn-relu-pool blocks, then linear) on "
          "w x w images: 1-16-32 channels, batch 64 at w = 8; 3-32-64-128, batch 128 from "
          "w = 32 on (size: w)", (8, 16, 32), _conv_step, compilable=True),
)}


# ---- timing ---------------------------------------------------------------------------------
def _measure(prepare, timed, sync, repeat: int) -> list[float]:
    times = []
    for i in range(WARMUP + repeat):
        state = prepare()
        sync()
        t0 = time.perf_counter()
        timed(state)
        sync()
        if i >= WARMUP:
            times.append(time.perf_counter() - t0)
    return times


class _Progress:
    """One line per measurement on stderr, or a tqdm bar when tqdm is installed and
    stderr is a terminal (in a log, a bar is a line per update)."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.done, self.bar = total, 0, None
        self.enabled = enabled
        if enabled and sys.stderr.isatty():
            try:
                from tqdm import tqdm  # optional: a progress bar where installed
            except ImportError:
                pass
            else:
                self.bar = tqdm(total=total, unit="run", leave=False, dynamic_ncols=True)

    def start(self, label: str) -> None:
        if self.bar is not None:
            self.bar.set_description(label)

    def finish(self, label: str, median: float) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)
        elif self.enabled:
            print(f"[{self.done}/{self.total}] {label}: {format_time(median)}",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run(suites, devices, sizes=None, repeat: int = 10, compare_torch: bool = False,
        progress: bool = True, compile: bool = True) -> list[dict]:
    """Time every suite at every size on every device (gradcore), the whole-step suites
    also compiled (``gc.compile``: a replay on the CPU, a CUDA graph on a GPU) unless
    ``compile`` is False, then, when asked, with torch on each of those devices it can
    use. Returns one dict per measurement."""
    plan = [(s, size) for s in suites for size in (sizes or s.sizes)]
    impls = [("gradcore", dev) for dev in devices]
    if compile:
        impls += [("compiled", dev) for dev in devices]
    if compare_torch:
        seen = _torch_devices(devices)
        impls += [("torch", dev) for dev in seen]
        # PyTorch's own CUDA graph of a whole step, captured by hand (torch.cuda.graph)
        impls += [("torch graph", dev) for dev in seen if dev.type == "cuda"]
    runs = [(impl, dev, suite, size) for impl, dev in impls for suite, size in plan
            if impl not in ("compiled", "torch graph") or suite.compilable]
    bar = _Progress(len(runs), progress)
    results = []
    try:
        for k, (impl, dev, suite, size) in enumerate(runs):
            torch_impl = impl.startswith("torch")
            if torch_impl and not runs[k - 1][0].startswith("torch"):
                time.sleep(SETTLE_S)
            label = f"{suite.name} {size} {'' if impl == 'gradcore' else impl + ' '}{dev}"
            bar.start(label)
            if torch_impl:
                where = "cpu" if dev.type == "cpu" else f"cuda:{dev.index or 0}"
                prepare, timed = suite.build_torch(size, where, graph=impl == "torch graph")
                sync = lambda: _torch_synchronize(dev)
            else:
                prepare, timed = suite.build(dev, size)
                if impl == "compiled":
                    timed = gc.compile(timed)
                sync = lambda: _synchronize(dev)
            times = _measure(prepare, timed, sync, repeat)
            median = statistics.median(times)
            results.append({"suite": suite.name, "size": size, "impl": impl,
                            "device": str(dev), "median_s": median, "times_s": times})
            bar.finish(label, median)
    finally:
        bar.close()
    return results


# ---- --profile: the kernels one run launches -------------------------------------------------
# the size each suite is profiled at without --sizes (issue 6's targets for mlp and step)
PROFILE_SIZES = {"mlp": 512, "pointwise": 1048576, "broadcast": 4096, "step": 512}


def profile_suite(suite: Suite, dev, size: int):
    """The :func:`gradcore.profile` of one run of what the suite times (after one warm-up
    run; the forward pass of the backward suites runs before it, untimed and uncounted)."""
    prepare, timed = suite.build(dev, size)
    timed(prepare())
    state = prepare()
    with gc.profile() as prof:
        timed(state)
    _synchronize(dev)
    return prof


# ---- reading the results --------------------------------------------------------------------
def _medians(results, suite, impl, device_type):
    return {r["size"]: r["median_s"] for r in results
            if r["suite"] == suite and r["impl"] == impl
            and r["device"].split(":")[0] == device_type}


def crossover(results, suite: str):
    """The smallest size from which the GPU is faster than the CPU at every larger size;
    ``"GPU never wins"``, or ``None`` when there are no GPU (or no CPU) figures."""
    cpu = _medians(results, suite, "gradcore", "cpu")
    gpu = _medians(results, suite, "gradcore", "cuda")
    common = sorted(set(cpu) & set(gpu))
    if not common:
        return None
    found = None
    for size in reversed(common):
        if gpu[size] < cpu[size]:
            found = size
        else:
            break
    return "GPU never wins" if found is None else found


def crossover_text(results, suite: str) -> str:
    c = crossover(results, suite)
    if c is None:
        has_gpu = bool(_medians(results, suite, "gradcore", "cuda"))
        return "no CPU figures to compare with" if has_gpu else "no GPU"
    if isinstance(c, str):
        return c
    return f"GPU wins from size {c}"


def format_time(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.3f} s"


def _ratio(a, b) -> str:
    return f"{a / b:.2f}x" if a is not None and b is not None else "-"


def format_table(results, suites) -> str:
    """Per suite and size: gradcore's CPU and GPU medians and the GPU speedup; with torch
    figures, torch's median on each device it ran on and gradcore / torch there."""
    torch_on = [t for t in ("cpu", "cuda")
                if any(r["impl"] == "torch" and r["device"].split(":")[0] == t
                       for r in results)]
    compiled = any(r["impl"] == "compiled" and r["device"] == "cpu" for r in results)
    gpu_compiled = any(r["impl"] == "compiled" and r["device"] != "cpu" for r in results)
    header = ["suite", "size", "CPU", "GPU", "GPU speedup"]
    if compiled:
        header += ["CPU compiled", "compiled speedup"]
    if gpu_compiled:
        header += ["GPU compiled", "GPU compiled speedup"]
    for t in torch_on:
        name = "CPU" if t == "cpu" else "GPU"
        header += [f"torch {name}", f"{name} vs torch"]
    torch_graph = any(r["impl"] == "torch graph" for r in results)
    if torch_graph:
        header += ["torch GPU graph", "GPU compiled vs torch graph"]
    rows = []
    for suite in suites:
        cpu = _medians(results, suite.name, "gradcore", "cpu")
        gpu = _medians(results, suite.name, "gradcore", "cuda")
        comp = _medians(results, suite.name, "compiled", "cpu")
        gcomp = _medians(results, suite.name, "compiled", "cuda")
        tch = {t: _medians(results, suite.name, "torch", t) for t in torch_on}
        tgraph = _medians(results, suite.name, "torch graph", "cuda")
        for size in sorted(set(cpu) | set(gpu) | {n for m in tch.values() for n in m}):
            c, g = cpu.get(size), gpu.get(size)
            row = [suite.name, str(size), format_time(c), format_time(g), _ratio(c, g)]
            if compiled:
                row += [format_time(comp.get(size)), _ratio(c, comp.get(size))]
            if gpu_compiled:
                row += [format_time(gcomp.get(size)), _ratio(g, gcomp.get(size))]
            for t in torch_on:
                mine = (cpu if t == "cpu" else gpu).get(size)
                row += [format_time(tch[t].get(size)), _ratio(mine, tch[t].get(size))]
            if torch_graph:
                row += [format_time(tgraph.get(size)), _ratio(gcomp.get(size), tgraph.get(size))]
            rows.append(row)
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) if i < 2 else h.rjust(w)
                       for i, (h, w) in enumerate(zip(header, widths)))]
    lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        lines.append("  ".join(v.ljust(w) if i < 2 else v.rjust(w)
                               for i, (v, w) in enumerate(zip(r, widths))))
    lines.append("")
    for suite in suites:
        lines.append(f"crossover {suite.name}: {crossover_text(results, suite.name)}")
    return "\n".join(lines)


# ---- machine --------------------------------------------------------------------------------
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _blas() -> str:
    try:
        config = np.show_config(mode="dicts")
        blas = config["Build Dependencies"]["blas"]
        return f"{blas.get('name', 'unknown')} {blas.get('version', '')}".strip()
    except Exception:  # noqa: BLE001 - NumPy < 1.25 has no mode="dicts"
        pass
    try:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            np.__config__.show()
        for line in buf.getvalue().splitlines():
            if "blas" in line.lower() and ("name" in line.lower() or "libraries" in line):
                return line.split("=", 1)[-1].split(":", 1)[-1].strip()
    except Exception:  # noqa: BLE001
        pass
    return "unknown"


def machine_description(devices=(), compare_torch: bool = False) -> dict:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    info = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu_model": _cpu_model(),
        "cpu_cores": os.cpu_count(),
        "cpu_cores_usable": usable,
        "platform": platform.platform(),
        "python_version": platform.python_version(),
        "numpy_version": np.__version__,
        "blas": _blas(),
        "gradcore_version": gc.__version__,
        "gpu": None,
    }
    gpus = [_gpu_description(d) for d in devices if d.type == "cuda"]
    if gpus:
        info["gpu"] = gpus[0] if len(gpus) == 1 else gpus
    else:
        info["gpu_unavailable_reason"] = gc.cuda.unavailable_reason()
    if compare_torch:
        try:
            import torch  # optional (not a dependency): imported where PyTorch is compared

            info["torch_version"] = torch.__version__
            info["torch_threads"] = torch.get_num_threads()
            info["torch_cuda"] = (torch.cuda.get_device_name(0)
                                  if torch.cuda.is_available() else None)
        except ImportError:
            info["torch_version"] = None
    return info


def write_json(path, results, suites, machine, settings) -> None:
    doc = {"machine": machine, "settings": settings,
           "crossover": {s.name: crossover(results, s.name) for s in suites},
           "results": results}
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


# ---- plot -----------------------------------------------------------------------------------
PLOT_MISSING = "--plot needs matplotlib: pip install 'gradcore[plot]'"


def _pyplot():
    """matplotlib's pyplot, drawing to files (Agg); ImportError without matplotlib."""
    import matplotlib  # optional: only for --plot

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_unavailable_reason() -> str | None:
    """None when :func:`plot` can draw, else why not (``PLOT_MISSING`` and the import's
    error): ``gradcore bench --plot`` asks before its sweep, not after it."""
    try:
        _pyplot()
    except Exception as exc:  # noqa: BLE001 - ImportError, or a broken install raising anything
        return f"{PLOT_MISSING} ({exc})"
    return None


def plot(path, results, suites, machine) -> bool:
    """A log-log PNG of time against size, one panel per suite, a line per device (and
    torch), the crossover marked. False (and nothing written) without matplotlib."""
    try:
        plt = _pyplot()
    except ImportError:
        return False

    width = max(6.5, 4.5 * len(suites))  # room for the title over a single panel
    fig, axes = plt.subplots(1, len(suites), figsize=(width, 4), squeeze=False)
    for ax, suite in zip(axes[0], suites):
        for impl, dtype, label in (("gradcore", "cpu", "gradcore CPU"),
                                   ("gradcore", "cuda", "gradcore GPU"),
                                   ("torch", "cpu", "torch CPU"),
                                   ("compiled", "cpu", "gradcore CPU compiled"),
                                   ("compiled", "cuda", "gradcore GPU compiled"),
                                   ("torch", "cuda", "torch GPU"),
                                   ("torch graph", "cuda", "torch GPU graph")):
            m = _medians(results, suite.name, impl, dtype)
            if m:
                xs = sorted(m)
                ax.loglog(xs, [m[x] for x in xs], marker="o", label=label)
        c = crossover(results, suite.name)
        if isinstance(c, int):
            ax.axvline(c, color="grey", linestyle="--", label=f"crossover {c}")
        ax.set_title(suite.name)
        ax.set_xlabel("size")
        ax.set_ylabel("median time (s)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    gpu = machine.get("gpu")
    gpu_name = gpu.get("name") if isinstance(gpu, dict) else "no GPU"
    fig.suptitle(f"gradcore bench: {machine['cpu_model']} / {gpu_name}, {machine['date'][:10]}",
                 fontsize="medium")
    fig.tight_layout()
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True
