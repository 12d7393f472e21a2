"""``gc.profile()`` and ``gradcore bench --profile``: the kernels a step launches and the
bytes they move, counted as a CUDA device with gradcore's kernels would launch them, on
every test device alike (the count needs no GPU)."""

import contextlib
import re
import sys
import threading

import numpy as np
import pytest

import gradcore as gc
from gradcore import backend, benchmark, cli, creation, launch_count
from gradcore.backend import math_of
from gradcore.kernels import pointwise as fused
from gradcore.kernels.spec import Kernel

from conftest import cuda_standin, host

profile_module = sys.modules["gradcore.profile"]  # gc.profile is the class
F32 = 4


def rows(prof):
    return [(k.name, k.kind, k.launches, k.bytes_read, k.bytes_written)
            for k in prof.key_averages()]


def launches(prof):
    return {k.name: k.launches for k in prof.key_averages()}


# ---- exact counts of small graphs --------------------------------------------------------
def test_mul_sum_backward(device):
    x = gc.ones(1000)
    w = gc.ones(1000, requires_grad=True)
    with gc.profile() as prof:
        (x * w).sum().backward()
    n = 1000 * F32
    assert rows(prof) == [
        # x * w; then the gradient of w: g (the sum's gradient, a broadcast 0-d) * x
        ("multiply", "array", 2, 2 * n + (n + F32), 2 * n),
        ("sum", "array", 1, n, F32),
        # (the root gradient: a one kept per dtype, no launch)
    ]
    assert (prof.launches, prof.bytes, prof.min_bytes) == (3, 24008, 20008)
    # the minimum: x, w, x*w and the root gradient read once; x*w, the loss and w.grad
    # written once (x is read twice, forward and backward)
    assert prof.min_bytes == (3 * n + F32) + (2 * n + F32)
    assert w.grad is not None and np.all(host(w.grad) == 1)


def test_a_fused_kernel_is_one_launch(device):
    """tanh's backward is one kernel, whatever its NumPy twin does inside."""
    x = gc.randn(1000, requires_grad=True)
    with gc.profile() as prof:
        gc.tanh(x).sum().backward()
    n = 1000 * F32
    assert rows(prof) == [("tanh_backward", "fused", 1, n + F32, n),
                          ("tanh", "array", 1, n, n),
                          ("sum", "array", 1, n, F32)]
    assert prof.launches == 3


def test_both_gradients_of_a_product_in_one_kernel(device):
    a = gc.randn(100, requires_grad=True)
    b = gc.randn(100, requires_grad=True)
    with gc.profile() as prof:
        (a * b).sum().backward()
    assert launches(prof) == {"mul_backward": 1, "multiply": 1, "sum": 1}
    assert prof.key_averages()[0].kind == "fused"


def test_matmul_and_broadcast(device):
    a = gc.randn(8, 5, requires_grad=True)
    b = gc.randn(5, 3, requires_grad=True)
    with gc.profile() as prof:
        (a @ b).sum().backward()
    # forward, then a's and b's gradients (against g, a broadcast read at 4 bytes)
    assert rows(prof)[0] == ("matmul", "array", 3, (40 + 15) * F32 + (F32 + 15 * F32) +
                             (40 * F32 + F32), (24 + 40 + 15) * F32)

    x = gc.randn(256, 32)
    w = gc.randn(32, requires_grad=True)
    bias = gc.randn(32, requires_grad=True)
    with gc.profile() as prof:
        (x * w + bias).sum().backward()
    assert launches(prof) == {"multiply": 3, "sum": 2, "add": 1}
    assert prof.min_bytes <= prof.bytes


def test_views_and_empty_launch_nothing(device):
    x = gc.randn(4, 6)
    with gc.profile() as prof:
        x.reshape(6, 4), x.T, x[1:, ::2], x.unsqueeze(0), x.expand(2, 4, 6), gc.empty(3, 3)
    assert prof.launches == 0 and prof.bytes == 0
    with gc.profile() as prof:
        x.T.reshape(-1)             # not contiguous: a copy
        x[gc.tensor([0, 2])]        # index array: a gather (the index comes from the host)
        gc.zeros(3)
    # the index's least and greatest value in one kernel: its range check on a GPU
    # (backend.check_range)
    assert rows(prof) == [("reshape", "array", 1, 24 * F32, 24 * F32),
                          ("getitem", "array", 1, 12 * F32 + 16, 12 * F32),
                          ("index_bounds", "fused", 1, 16, 16),
                          ("zeros", "array", 1, 0, 3 * F32)]


def test_in_place_and_unary_operators(device):
    a, b = gc.randn(100), gc.randn(100)
    mask = a > 0
    with gc.profile() as prof:
        a += b           # one ufunc into a's memory: reads a and b, writes a
        flipped = ~mask  # writes a new mask, not the old one
    n = 100 * F32
    assert rows(prof) == [("add", "array", 1, 2 * n, n), ("invert", "array", 1, 100, 100)]
    assert prof.min_bytes == 2 * n + n + 100 + 100 and flipped.shape == (100,)


def test_kernels_are_read_when_the_profile_starts(device, monkeypatch):
    """A kernel added to the pointwise declarations counts as one."""
    kernel = Kernel("scale_add_backward", ("g", "y"), "g * y + y * 2")
    monkeypatch.setitem(fused.KERNELS, kernel.name, kernel)
    m = gc.device(device).math
    monkeypatch.setattr(m, kernel.name, kernel.compile({}), raising=False)
    a, b = gc.randn(100), gc.randn(100)
    with gc.profile() as prof:
        math_of(a._data).scale_add_backward(a._data, b._data)
    assert rows(prof) == [("scale_add_backward", "fused", 1, 800, 400)]


# ---- the same count everywhere --------------------------------------------------------------
def _mlp_step(dev, steps=1):
    gc.manual_seed(0)
    model = gc.nn.Sequential(gc.nn.Linear(12, 16), gc.nn.Tanh(), gc.nn.Linear(16, 4)).to(dev)
    opt = gc.optim.Adam(model.parameters(), lr=1e-2)
    x = gc.randn(32, 12, device=dev)
    y = gc.randn(32, 4, device=dev)

    def step():
        loss = gc.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return model, step


def test_the_count_is_the_same_on_the_cpu_and_the_cuda_path():
    counts = []
    for dev in ("cpu", "cuda"):
        with cuda_standin() if dev == "cuda" else contextlib.nullcontext():
            _, step = _mlp_step(dev)
            step()
            with gc.profile() as prof:
                step()
            counts.append((rows(prof), prof.min_bytes))
    # (on CUDA, Adam's update is one launch for the 4 parameters, adam_step_multi,
    # reading a row of 16 scalars each and the table of where they are: 5 offsets and
    # 4 x 4 addresses)
    extra = 4 * 16 * 4 + (5 + 16) * 8
    cuda_rows = [("adam_update", kind, 4, read - extra, written)
                 if name == "adam_step_multi" else (name, kind, n, read, written)
                 for name, kind, n, read, written in counts[1][0]]
    assert counts[0][0] == cuda_rows
    assert next(r[2] for r in counts[1][0] if r[0] == "adam_step_multi") == 1
    assert counts[1][1] == counts[0][1] + extra
    names = {r[0] for r in counts[0][0]}
    assert {"adam_update", "mse_backward", "tanh_backward_"} <= names


def test_minimum_is_at_most_what_moves(device):
    for name in ("mlp", "step", "broadcast", "pointwise"):
        prof = benchmark.profile_suite(benchmark.SUITES[name], gc.device(device), 16)
        assert 0 < prof.min_bytes <= prof.bytes
        assert prof.launches == sum(k.launches for k in prof.key_averages())
        totals = [k.bytes for k in prof.key_averages()]
        assert totals == sorted(totals, reverse=True)


def test_step_marks_steps(device):
    _, step = _mlp_step(device)
    with gc.profile() as prof:
        for _ in range(3):
            step()
            prof.step()
    s = prof.steps
    assert len(s) == 3
    assert s[1] == s[2]                               # the same work every step ...
    assert s[0].launches == s[1].launches + 8         # ... once Adam's 2x4 zeros exist
    assert prof.launches == sum(x.launches for x in s)
    assert prof.min_bytes == sum(x.min_bytes for x in s)
    text = prof.table()
    assert text.startswith("per step (mean of 3 steps): ")


def test_profiling_does_not_change_the_results(device):
    def train(profiled):
        model, step = _mlp_step(device)
        with gc.profile() if profiled else contextlib.nullcontext():
            step()
            step()
        return [host(p.detach()) for p in model.parameters()]

    for a, b in zip(train(False), train(True)):
        np.testing.assert_array_equal(a, b)


# ---- restoring, threads ---------------------------------------------------------------------
def _installed_state(device):
    # a profile counts NumPy's work too, and so makes the CPU's array namespace, once per
    # process (it then serves NumPy arrays in backend._math_by_type): not installed by
    # the profile, and already there in a run that tests the CPU too
    backend._cpu_math()
    m = gc.device(device).math
    return (dict(m.__dict__), dict(vars(m.ndarray)), dict(backend._math_by_type),
            creation._wrap, backend.to_host)


@pytest.mark.parametrize("fail", [False, True])
def test_exit_restores_everything(device, fail):
    model, step = _mlp_step(device)
    step()
    before = _installed_state(device)
    arrays = [p._data for p in model.parameters()]
    array_type = type(arrays[0])
    inside = []
    with pytest.raises(ZeroDivisionError) if fail else contextlib.nullcontext():
        with gc.profile() as prof:
            step()
            inside.append(model[0].weight.grad)
            inside.append((model[0].weight * 2)._data)
            if fail:
                raise ZeroDivisionError("in the profiled block")
    assert _installed_state(device) == before
    assert launch_count._session is None
    assert all(p._data is a for p, a in zip(model.parameters(), arrays))
    assert type(inside[0]._data) is array_type         # made inside: a plain array again
    assert type(inside[1] * 2) is array_type          # an array kept from inside: plain
    assert prof.launches > 0
    with gc.profile() as again:                       # and a new profile can start
        model[0].weight * 2
    assert again.launches == 1


def test_one_profile_at_a_time():
    with gc.profile():
        with pytest.raises(RuntimeError, match="another profile"):
            with gc.profile():
                pass
        errors = []

        def other():
            try:
                with gc.profile():
                    pass
            except RuntimeError as exc:
                errors.append(exc)

        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert len(errors) == 1
    with gc.profile():
        pass


def test_other_threads_are_not_counted(device):
    a, b = gc.randn(100), gc.randn(100)
    dev = gc.get_default_device()

    def work():
        gc.set_default_device(dev)
        (a * b).sum()

    with gc.profile() as prof:
        t = threading.Thread(target=work)
        t.start()
        t.join()
        a + b
    assert launches(prof) == {"add": 1}


def test_compiled_array_types_are_not_counted(standin):
    assert profile_module.can_count("cpu") and profile_module.can_count("cuda")
    assert not launch_count.patchable(np.ndarray)   # as CuPy's own ndarray


# ---- the table ------------------------------------------------------------------------------
def test_table(device):
    x = gc.ones(1000)
    w = gc.ones(1000, requires_grad=True)
    with gc.profile() as prof:
        (x * w).sum().backward()
    text = prof.table()
    lines = text.splitlines()
    assert lines[0] == ("one step: 3 launches (0 fused), 24.0 kB moved (read 16.0 kB, "
                        "written 8.0 kB); minimum 20.0 kB (each buffer read once and "
                        "written once): 1.20x the minimum")
    assert re.match(r"kernel\s+kind\s+launches\s+read\s+written\s+total$", lines[2])
    assert lines[4].split() == ["multiply", "array", "2", "12.0", "kB", "8.0", "kB", "20.0",
                                "kB"]
    assert lines[-1].split()[:2] == ["total", "3"]
    assert "(3 launches" in repr(prof) or "3 launches" in repr(prof)


# ---- gradcore bench --profile ---------------------------------------------------------------
def test_bench_profile_prints_one_table(capsys):
    argv = ["bench", "--profile", "--suite", "step", "--sizes", "16", "--devices", "cpu"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "step at size 16 on cpu: Adam training step" in out
    summary = re.findall(r"^one step: (\d+) launches \((\d+) fused\), .* minimum .*: "
                         r"[\d.]+x the minimum$", out, re.M)
    prof = benchmark.profile_suite(benchmark.SUITES["step"], gc.device("cpu"), 16)
    fused_launches = sum(k.launches for k in prof.key_averages() if k.kind == "fused")
    assert summary == [(str(prof.launches), str(fused_launches))]
    assert re.search(r"^adam_update\s+fused\s+6\s", out, re.M)   # one per parameter


def test_bench_profile_every_suite_on_cpu_and_the_standin(standin, capsys):
    argv = ["bench", "--profile", "--suite", "all", "--sizes", "8", "--devices", "cpu,cuda"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    titles = re.findall(r"^(\w+) at size 8 on (\w+):", out, re.M)
    assert titles == [(s, d) for s in ("mlp", "pointwise", "broadcast", "step", "conv")
                      for d in ("cpu", "cuda")]
    tables = dict(zip(titles, re.split(r"^\w+ at size 8 on \w+:.*$", out, flags=re.M)[1:]))
    for suite in ("pointwise", "broadcast"):
        assert tables[(suite, "cpu")] == tables[(suite, "cuda")]


def test_bench_profile_takes_no_json(tmp_path, capsys):
    argv = ["bench", "--profile", "--json", str(tmp_path / "x.json"), "--devices", "cpu"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.strip() == "gradcore bench: --profile cannot be combined with --json"
