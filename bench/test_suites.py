"""Issue 6's benchmark suites: gradcore alone, per device and size.

Run with ``make bench`` (the CPU) or ``make gpu-bench`` (CUDA), or by hand::

    GRADCORE_BENCH_DEVICES=cpu pytest bench/test_suites.py --benchmark-only -k "mlp and w256"

``GRADCORE_BENCH_DEVICES`` (``cpu``, ``cuda`` or ``cpu,cuda``; default ``cpu,cuda``)
picks the devices. A ``cuda`` case skips, with gradcore's reason, where CUDA is not
usable. Every case is a test id ``<device>-<size>``, so ``-k`` picks devices and sizes.

Suites (the sizes per device are in ``SIZES``):

- ``test_mlp_backward``: backward of an MLP ``w-w-w-10`` with cross-entropy, over
  widths ``w`` and batch sizes ``b``;
- ``test_pointwise_backward``: backward of ``gradcore bench``'s 100-op chain of
  ``*``, ``+``, ``tanh`` over ``n`` elements;
- ``test_broadcast_backward``: backward of ``(x[256,N]*w[N]+b[N]).sum()`` (the
  gradients of ``w`` and ``b`` are unbroadcasting reductions);
- ``test_cross_entropy_backward``: backward of ``F.cross_entropy`` over logits of
  ``[batch, classes]``;
- ``test_train_step``: forward, backward and Adam step of an MLP ``784-w-w-10``,
  batch 256;
- ``test_fused_vs_unfused``: every kernel of ``gradcore.kernels.pointwise.KERNELS`` (read when
  this module is imported) called as the device namespace's ``math.<name>`` (the
  fused kernel, or on the CPU its hand-written twin) against the same expression
  composed from the array module's ufuncs, on the same ``n`` elements; both are
  checked to agree before timing.

Timing: the forward pass of the backward suites runs untimed before each timed
backward (pytest-benchmark's pedantic mode, the forward as ``setup``). Each case first
runs its step untimed for ``conftest.WARMUP_S`` seconds (kernel compilation, caches,
allocator), and from that run picks enough rounds to fill ``MAX_TIME_S`` (at least
``--benchmark-min-rounds``, 5 by default). On CUDA the device is synchronized after the
untimed setup and at the end of each timed call, so a figure is the time until the
GPU has finished. Read the medians.
"""

from __future__ import annotations

import functools
import math
import os
import time

import numpy as np
import pytest

import gradcore as gc
import gradcore.nn.functional as F
from gradcore import benchmark as gc_bench
from gradcore.kernels import device as kernels_cuda
from gradcore.kernels import pointwise as fused
from gradcore.kernels import twin

ENV = "GRADCORE_BENCH_DEVICES"
KNOWN_DEVICES = ("cpu", "cuda")
SEED = 0
MAX_TIME_S = 0.5  # seconds of timed rounds per case (58 CPU cases: about 1.5 min in all)
MAX_ROUNDS = 100_000

# pytest-benchmark's own marker: this module's cases time for MAX_TIME_S, not the
# --benchmark-max-time of the run (which issue 3's targets keep)
pytestmark = pytest.mark.benchmark(max_time=MAX_TIME_S)


def bench_devices(spec: str | None = None) -> list[str]:
    """The devices to benchmark: ``spec``, else ``$GRADCORE_BENCH_DEVICES``, else both."""
    if spec is None:
        spec = os.environ.get(ENV, "cpu,cuda")
    names = [d.strip().lower() for d in spec.split(",") if d.strip()]
    bad = [d for d in names if d not in KNOWN_DEVICES]
    if bad or not names:
        raise ValueError(f"{ENV}={spec!r}: expected a comma-separated list of "
                         f"{', '.join(KNOWN_DEVICES)}")
    return list(dict.fromkeys(names))


DEVICES = bench_devices()

# Sizes per suite and device. The CUDA sizes reach further: a GPU only pays off once
# the arrays are large enough to hide a kernel launch per op.
SIZES = {
    "mlp": {"cpu": [(w, b) for w in (64, 256, 1024) for b in (32, 256)],
            "cuda": [(w, b) for w in (256, 1024, 4096) for b in (256, 2048)]},
    "pointwise": {"cpu": [2**12, 2**18, 2**22], "cuda": [2**16, 2**20, 2**24]},
    "broadcast": {"cpu": [256, 4096, 65536], "cuda": [4096, 65536, 262144]},
    "cross_entropy": {"cpu": [(256, 10), (256, 1000), (4096, 1000)],
                      "cuda": [(256, 1000), (4096, 1000), (4096, 32000)]},
    "step": {"cpu": [64, 256, 1024], "cuda": [256, 1024, 4096]},
    "fused": {"cpu": [2**22], "cuda": [2**24]},
}
SIZE_IDS = {
    "mlp": lambda s: f"w{s[0]}-b{s[1]}",
    "cross_entropy": lambda s: f"{s[0]}x{s[1]}",
}


def cases(suite: str, devices=None) -> list:
    """``pytest.param(device, size, id="<device>-<size>")`` for every device and size."""
    name = SIZE_IDS.get(suite, lambda s: f"n{s}")
    return [pytest.param(dev, size, id=f"{dev}-{name(size)}")
            for dev in (DEVICES if devices is None else devices)
            for size in SIZES[suite][dev]]


# the optimizer updates, timed as kernels.updates' one call per parameter (one kernel on
# CUDA) against the same update composed from array-module calls (kernels.updates.UPDATES)
UPDATE_CASES = {
    "adam_update": dict(step=3, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                        weight_decay=0.01, decoupled_weight_decay=True),
    "sgd_update": dict(lr=0.1, momentum=0.9, nesterov=True),
}


def fused_cases(devices=None) -> list:
    """``pytest.param(device, n, kernel name, impl)`` for every kernel and optimizer
    update, fused and not."""
    return [pytest.param(dev, n, name, impl, id=f"{dev}-{name}-{impl}")
            for dev in (DEVICES if devices is None else devices)
            for n in SIZES["fused"][dev]
            for name in [*fused.KERNELS, *UPDATE_CASES]
            for impl in ("fused", "unfused")]


def copy_cases(devices=None) -> list:
    return [pytest.param(dev, n, id=f"{dev}-copy-n{n}")
            for dev in (DEVICES if devices is None else devices)
            for n in SIZES["fused"][dev]]


def moved_bytes(args, outputs) -> int:
    """What a kernel must read and write at least: each array argument once, each
    output once (the bandwidth figures count these bytes)."""
    return sum(a.nbytes for a in list(args) + list(outputs) if hasattr(a, "nbytes"))


# ---- workloads: (device, *size) -> (prepare, timed); prepare() runs untimed -------------
def mlp_backward(dev, width, batch):
    gc.manual_seed(SEED)
    nn = gc.nn
    model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width),
                          nn.ReLU(), nn.Linear(width, 10)).to(dev)
    x = gc.randn(batch, width, device=dev)
    y = gc.randint(0, 10, (batch,), device=dev)

    def prepare():
        model.zero_grad()
        return F.cross_entropy(model(x), y)

    return prepare, lambda loss: loss.backward()


def cross_entropy_backward(dev, batch, classes):
    gc.manual_seed(SEED)
    logits = gc.randn(batch, classes, device=dev, requires_grad=True)
    y = gc.randint(0, classes, (batch,), device=dev)

    def prepare():
        logits.grad = None
        return F.cross_entropy(logits, y)

    return prepare, lambda loss: loss.backward()


# the chain, the broadcast graph and the training step are gradcore bench's own
pointwise_backward = gc_bench.SUITES["pointwise"].build
broadcast_backward = gc_bench.SUITES["broadcast"].build
train_step = gc_bench.SUITES["step"].build


# kernels whose inputs lie elsewhere: acosh's derivative is real for x > 1
_SHIFT = {"acosh_backward": np.float32(1.1)}


def fused_inputs(kernel, dev, n):
    """The arguments of ``kernel``: one array of ``n`` elements per parameter (``g``
    float32 normal; masks boolean, half true; the others float32 uniform in [0.1, 1),
    so that every kernel's domain holds, for sqrt, pow and division, and ``a``/``b``,
    ``x``/``lo``/``hi`` fall on both sides of each other), then 0.5 per scalar."""
    rng = np.random.default_rng(SEED)
    masks = getattr(kernel, "masks", ())
    arrays = [rng.standard_normal(n, dtype=np.float32) if p == "g"
              else rng.random(n) < 0.5 if p in masks
              else rng.uniform(0.1, 1.0, n).astype(np.float32) + _SHIFT.get(kernel.name, 0)
              for p in kernel.params]
    return [dev.asarray(a) for a in arrays] + [0.5] * len(getattr(kernel, "scalars", ()))


def unfused(kernel, dev):
    """``kernel``'s expression composed from ``dev``'s array-module functions, one
    temporary per operation: the names the registry gives an expression, the array
    namespace's own (``math.erf``, ``math.where``, ...), ``pow`` as ``power``."""
    names = fused.namespace_names(dev.math)
    return kernel.compile({k: getattr(dev.math, "power" if k == "pow" else k)
                           for k in names})


def fused_impl(kernel, dev):
    """The device namespace's kernel and what it is, in words."""
    fn = getattr(dev.math, kernel.name)
    if kernel.cpu is not None and fn is kernel.cpu:
        what = "hand-written CPU twin"
    elif dev.type == "cuda" and kernels_cuda.device_kernels_enabled():
        what = "generated CUDA kernel"
    elif dev.type == "cpu" and twin.generate(kernel) is not None:
        what = "CPU twin generated from the expression"
    else:
        what = "the expression (as unfused)"
    return fn, what


def update_vs_unfused(name, dev, n, impl):
    """``(prepare, timed, what, bytes)`` for an optimizer update: ``math.<name>`` (one
    kernel per parameter on CUDA) or the NumPy-style update composed from array calls,
    after checking the two agree on one step."""
    from gradcore.kernels import updates as fused_optim

    rng = np.random.default_rng(SEED)
    xp = dev.xp

    def state():
        vals = [rng.standard_normal(n, dtype=np.float32) for _ in range(3)]
        vals.append(rng.uniform(0.0, 1.0, n).astype(np.float32))  # v >= 0
        return [dev.asarray(v) for v in vals]

    kw = UPDATE_CASES[name]
    fused_fn = getattr(dev.math, name)
    plain = functools.partial(fused_optim.UPDATES[name], xp)
    arrays = state()
    check = [a.copy() for a in arrays]
    a_args = arrays if name == "adam_update" else arrays[:3]
    c_args = check if name == "adam_update" else check[:3]
    fused_fn(*a_args, **kw)
    plain(*c_args, **kw)
    if not np.allclose(gc.backend.to_host(arrays[0]), gc.backend.to_host(check[0]),
                       rtol=1e-5, atol=1e-6):
        raise AssertionError(f"{name} on {dev}: the fused and composed updates disagree")
    what = ("one CUDA kernel per parameter" if getattr(dev.math, "device_kernels", False)
            else "NumPy ufuncs with out= (kernels.updates)")
    call = fused_fn if impl == "fused" else plain
    # Adam reads p, g, m, v and writes p, m, v; SGD with momentum p, g, buf / p, buf
    nbytes = (7 if name == "adam_update" else 5) * 4 * n
    return (lambda: None), (lambda _: call(*a_args, **kw)), what, nbytes


def fused_vs_unfused(kernel, dev, n, impl):
    """``(prepare, timed, what, bytes)`` for one side, after checking both sides
    agree."""
    if kernel in UPDATE_CASES:
        return update_vs_unfused(kernel, dev, n, impl)
    kernel = fused.KERNELS[kernel]
    args = fused_inputs(kernel, dev, n)
    fn, what = fused_impl(kernel, dev)
    plain = unfused(kernel, dev)
    got, want = fn(*args), plain(*args)
    if not isinstance(want, tuple):  # one output; several come as a tuple
        got, want = (got,), (want,)
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        if not np.allclose(gc.backend.to_host(a), gc.backend.to_host(b), rtol=1e-5,
                           atol=1e-6):
            raise AssertionError(f"{kernel.name} on {dev}: output {i} of the fused kernel "
                                 f"({what}) and of the unfused expression disagree")
    call = fn if impl == "fused" else plain
    return (lambda: None), (lambda _: call(*args)), what, moved_bytes(args, got)


def copy_case(dev, n):
    """A device-to-device copy of ``n`` float32: the bandwidth the kernels are held to."""
    src = dev.asarray(np.random.default_rng(SEED).standard_normal(n, dtype=np.float32))
    dst = dev.xp.empty_like(src)
    return (lambda: None), (lambda _: dev.xp.copyto(dst, src)), 2 * src.nbytes


# ---- timing ------------------------------------------------------------------------------
def time_case(benchmark, warm_up, dev, prepare, timed, group: str) -> None:
    """Benchmark ``timed(prepare())`` with ``prepare`` untimed, synchronizing on CUDA."""
    benchmark.group = group
    benchmark.extra_info["device"] = str(dev)

    def setup():
        state = prepare()
        gc_bench._synchronize(dev)
        return (state,), {}

    def target(state):
        timed(state)
        gc_bench._synchronize(dev)

    if benchmark.disabled:  # --benchmark-disable: one untimed call, as a smoke test
        benchmark.pedantic(target, setup=setup)
        return
    spent = [0.0, 0]  # wall seconds of warm-up steps, their count

    def step():
        t0 = time.perf_counter()
        args, _ = setup()
        target(*args)
        spent[0] += time.perf_counter() - t0
        spent[1] += 1

    warm_up(step)
    per_round = spent[0] / spent[1]
    # the fixture's settings: the marker's, else the command line's (pedantic mode
    # leaves the number of rounds to the caller)
    max_time = float(getattr(benchmark, "_max_time", MAX_TIME_S))
    min_rounds = int(getattr(benchmark, "_min_rounds", 5))
    rounds = min(max(math.ceil(max_time / per_round), min_rounds), MAX_ROUNDS)
    benchmark.pedantic(target, setup=setup, rounds=rounds, iterations=1)


@pytest.fixture
def device(request):
    """The gradcore device of a case; a ``cuda`` case skips where CUDA is not usable."""
    if request.param == "cuda" and not gc.cuda.is_available():
        pytest.skip(f"CUDA is not usable: {gc.cuda.unavailable_reason()}")
    return gc.device(request.param)


@pytest.mark.parametrize("device, size", cases("mlp"), indirect=["device"])
def test_mlp_backward(benchmark, warm_up, device, size):
    width, batch = size
    time_case(benchmark, warm_up, device, *mlp_backward(device, width, batch),
              group=f"MLP w-w-w-10 backward, {device}")


@pytest.mark.parametrize("device, size", cases("pointwise"), indirect=["device"])
def test_pointwise_backward(benchmark, warm_up, device, size):
    time_case(benchmark, warm_up, device, *pointwise_backward(device, size),
              group=f"100-op pointwise chain backward, {device}")


@pytest.mark.parametrize("device, size", cases("broadcast"), indirect=["device"])
def test_broadcast_backward(benchmark, warm_up, device, size):
    time_case(benchmark, warm_up, device, *broadcast_backward(device, size),
              group=f"(x[{gc_bench.BROADCAST_ROWS},N]*w+b).sum() backward, {device}")


@pytest.mark.parametrize("device, size", cases("cross_entropy"), indirect=["device"])
def test_cross_entropy_backward(benchmark, warm_up, device, size):
    time_case(benchmark, warm_up, device, *cross_entropy_backward(device, *size),
              group=f"cross_entropy[batch, classes] backward, {device}")


@pytest.mark.parametrize("device, size", cases("step"), indirect=["device"])
def test_train_step(benchmark, warm_up, device, size):
    time_case(benchmark, warm_up, device, *train_step(device, size),
              group=f"Adam step 784-w-w-10 batch {gc_bench.STEP_BATCH}, {device}")


@pytest.mark.parametrize("device, n, kernel, impl", fused_cases(), indirect=["device"])
def test_fused_vs_unfused(benchmark, warm_up, fused_medians, device, n, kernel, impl):
    prepare, timed, what, nbytes = fused_vs_unfused(kernel, device, n, impl)
    benchmark.extra_info["fused_is"] = what
    benchmark.extra_info["bytes"] = nbytes
    time_case(benchmark, warm_up, device, prepare, timed,
              group=f"{kernel} fused vs unfused, {n} float32, {device}")
    fused_medians(benchmark, str(device), kernel, impl, what, nbytes)


@pytest.mark.parametrize("device, n", copy_cases(), indirect=["device"])
def test_copy_bandwidth(benchmark, warm_up, fused_medians, device, n):
    """The baseline of the bandwidth column: a copy moves 2 x n x 4 bytes."""
    prepare, timed, nbytes = copy_case(device, n)
    time_case(benchmark, warm_up, device, prepare, timed,
              group=f"device-to-device copy, {n} float32, {device}")
    fused_medians(benchmark, str(device), "(copy)", "fused", "xp.copyto", nbytes)
