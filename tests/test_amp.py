"""Mixed precision (issue 14 item 7): gc.autocast casts as PyTorch's lists say, and
GradScaler scales, unscales, skips and adapts as torch.amp.GradScaler does."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradcore as gc
from gradcore import nn
from gradcore.nn import functional as F

from conftest import needs_torch


def test_autocast_lists():
    lin = nn.Linear(4, 3)
    x = gc.ones(2, 4)
    w = gc.ones(4, 4, requires_grad=True)
    with gc.autocast("cpu", dtype=gc.float16):
        y = lin(x)
        assert y.dtype == gc.float16 and (x @ w).dtype == gc.float16
        assert F.linear(x, lin.weight).dtype == gc.float16
        # (softmax and log_softmax are on CUDA's float32 list, not on the CPU's)
        assert F.softmax(y, dim=1).dtype == gc.float16
        assert F.log_softmax(y, dim=1).dtype == gc.float16
        loss = F.cross_entropy(y, gc.tensor([0, 1]))
        assert loss.dtype == gc.float32
        assert F.mse_loss(y, gc.zeros(2, 3)).dtype == gc.float32
        with gc.autocast("cpu", enabled=False):
            assert lin(x).dtype == gc.float32
        assert lin(x).dtype == gc.float16
    assert lin(x).dtype == gc.float32
    loss.backward()  # the casts are differentiable: gradients in the parameters' dtype
    assert lin.weight.grad.dtype == gc.float32 and lin.bias.grad.dtype == gc.float32
    with gc.autocast("cuda"):  # another device's block leaves CPU tensors alone
        assert lin(x).dtype == gc.float32


def test_autocast_as_a_decorator_and_errors():
    @gc.autocast("cpu", dtype=gc.float16)
    def f(a, b):
        return a @ b

    assert f(gc.ones(2, 2), gc.ones(2, 2)).dtype == gc.float16
    assert (gc.ones(2, 2) @ gc.ones(2, 2)).dtype == gc.float32
    with pytest.raises(RuntimeError, match="unsupported autocast device_type"):
        gc.autocast("tpu")
    with pytest.raises(TypeError, match="bfloat16"):
        gc.autocast("cpu")  # PyTorch's CPU default, which gradcore lacks
    assert gc.amp.is_autocast_available("cuda")


@needs_torch
def test_autocast_dtypes_match_torch():
    import torch
    results = []
    for lib in (gc, torch):
        lin = lib.nn.Linear(4, 3)
        x = lib.ones(2, 4)
        with lib.autocast("cpu", dtype=lib.float16):
            y = lin(x)
            fn = lib.nn.functional
            out = [y, x @ lin.weight.T, fn.softmax(y, dim=1), fn.log_softmax(y, dim=1),
                   fn.layer_norm(y, (3,)), fn.cross_entropy(y, lib.tensor([0, 1])),
                   fn.mse_loss(y, lib.zeros(2, 3)), fn.nll_loss(y, lib.tensor([0, 1])),
                   fn.binary_cross_entropy_with_logits(y, lib.zeros(2, 3))]
        results.append([str(t.dtype).split(".")[1] for t in out])
    assert results[0] == results[1]


def _scaler_run(lib, grads_seq, **kw):
    p = lib.nn.Parameter(lib.ones(3))
    opt = lib.optim.SGD([p], lr=0.1)
    scaler = lib.amp.GradScaler("cpu", **kw)
    scales, params, stepped = [], [], []
    for g in grads_seq:
        opt.zero_grad()
        loss = (p * lib.tensor(g)).sum()
        scaler.scale(loss).backward()
        before = p.detach().clone()
        scaler.step(opt)
        stepped.append(not bool((p.detach() == before).all()))
        scaler.update()
        scales.append(scaler.get_scale())
        params.append(p.detach().numpy().copy())
    return scales, params, stepped, scaler.state_dict()


@needs_torch
def test_grad_scaler_matches_torch():
    import torch
    inf, nan = float("inf"), float("nan")
    seq = [[1.0, 2.0, 3.0], [inf, 1.0, 1.0], [0.5, 0.5, 0.5], [1.0, nan, 1.0],
           [1.0, 1.0, 1.0], [2.0, 2.0, 2.0], [1.0, 1.0, 1.0]]
    kw = {"init_scale": 2.0 ** 10, "growth_interval": 2}
    mine = _scaler_run(gc, seq, **kw)
    theirs = _scaler_run(torch, seq, **kw)
    assert mine[0] == theirs[0] and mine[2] == theirs[2]
    for a, b in zip(mine[1], theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert mine[3] == theirs[3]


def test_grad_scaler_order_errors_and_state():
    p = nn.Parameter(gc.ones(2))
    opt = gc.optim.SGD([p], lr=0.1)
    s = gc.amp.GradScaler("cpu", init_scale=8.0)
    s.scale(p.sum()).backward()
    np.testing.assert_array_equal(p.grad.numpy(), [8.0, 8.0])
    s.unscale_(opt)
    np.testing.assert_array_equal(p.grad.numpy(), [1.0, 1.0])
    with pytest.raises(RuntimeError, match="already been called"):
        s.unscale_(opt)
    s.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        s.step(opt)
    s.update()
    with pytest.raises(RuntimeError, match="Closure"):
        s.step(opt, closure=lambda: 0)
    s.update(4.0)
    assert s.get_scale() == 4.0
    other = gc.amp.GradScaler("cpu")
    other.load_state_dict(s.state_dict())
    assert other.state_dict() == s.state_dict()
    assert s.scale([p.sum(), (p.sum(),)])[1][0].item() == 4.0 * p.sum().item()


def test_disabled_scaler_passes_through():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = gc.cuda.amp.GradScaler()  # CUDA is not available here: disabled, warned
    if not gc.cuda.is_available():
        assert not s.is_enabled() and any("Disabling" in str(w.message) for w in caught)
    # (the older spelling says so, with PyTorch's warning)
    assert any(w.category is FutureWarning and "torch.amp.GradScaler('cuda'" in
               str(w.message) for w in caught)
    assert isinstance(s, gc.amp.GradScaler)
    s = gc.amp.GradScaler(enabled=False)
    p = nn.Parameter(gc.ones(2))
    opt = gc.optim.SGD([p], lr=1.0)
    loss = p.sum()
    assert s.scale(loss) is loss
    loss.backward()
    s.step(opt)
    s.update()
    assert p.tolist() == [0.0, 0.0] and s.get_scale() == 1.0 and s.state_dict() == {}


def test_names_programs_use():
    assert not gc.cuda.is_bf16_supported()
    table = {"float32": gc.float32, "bfloat16": gc.bfloat16, "float16": gc.float16}
    assert table["float16"] is gc.float16
    with pytest.raises(TypeError, match="no bfloat16"):
        gc.zeros(2, dtype=gc.bfloat16)
    with pytest.warns(FutureWarning, match="torch.amp.autocast"):
        ctx = gc.cuda.amp.autocast(enabled=False)
    assert isinstance(ctx, gc.amp.autocast)
    with ctx:
        pass


def test_autocast_state_queries_match_pytorch():
    assert not gc.is_autocast_enabled() and not gc.is_autocast_enabled("cpu")
    assert gc.get_autocast_dtype("cuda") is gc.float16
    assert gc.get_autocast_dtype("cpu") is gc.bfloat16  # (PyTorch's default there)
    with gc.autocast("cpu", dtype=gc.float16):
        assert gc.is_autocast_enabled("cpu") and not gc.is_autocast_enabled()
        assert gc.get_autocast_dtype("cpu") is gc.float16
        with gc.autocast("cpu", enabled=False):
            assert not gc.is_autocast_enabled("cpu")
        with pytest.warns(DeprecationWarning, match="is_autocast_enabled\\('cpu'\\)"):
            assert gc.is_autocast_cpu_enabled()
        with pytest.warns(DeprecationWarning):
            assert gc.get_autocast_cpu_dtype() is gc.float16
    with pytest.warns(DeprecationWarning):
        assert gc.get_autocast_gpu_dtype() is gc.float16


class _MulCast(gc.autograd.Function):
    """A custom op under autocast: its forward records the dtype it saw."""

    seen = []

    @staticmethod
    @gc.amp.custom_fwd(device_type="cpu", cast_inputs=gc.float32)
    def forward(ctx, a, b):
        _MulCast.seen.append((a.dtype, gc.is_autocast_enabled("cpu")))
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    @gc.amp.custom_bwd(device_type="cpu")
    def backward(ctx, g):
        _MulCast.seen.append(("backward", gc.is_autocast_enabled("cpu")))
        a, b = ctx.saved_tensors
        return g @ b.T, a.T @ g


class _MulKeep(_MulCast):
    @staticmethod
    @gc.amp.custom_fwd(device_type="cpu")
    def forward(ctx, a, b):
        _MulCast.seen.append((a.dtype, gc.is_autocast_enabled("cpu")))
        ctx.save_for_backward(a, b)
        return a @ b


def test_custom_fwd_and_bwd_follow_pytorchs_rules():
    a = gc.ones(2, 3, dtype=gc.float16, requires_grad=True)
    b = gc.ones(3, 2, dtype=gc.float16, requires_grad=True)
    _MulCast.seen.clear()
    with gc.autocast("cpu", dtype=gc.float16):
        y = _MulCast.apply(a, b)  # cast to float32, autocast off inside
        z = _MulKeep.apply(a, b)  # the block's state, the inputs as they are
    assert y.dtype == gc.float32 and z.dtype == gc.float16
    (y.sum() + z.float().sum()).backward()
    assert _MulCast.seen[:2] == [(gc.float32, False), (gc.float16, True)]
    # backward runs in forward's state: off for the cast one, on for the other
    assert sorted(_MulCast.seen[2:]) == [("backward", False), ("backward", True)]
    assert a.grad.dtype == gc.float16 and a.grad.tolist() == [[4.0] * 3] * 2
    _MulCast.seen.clear()
    assert _MulCast.apply(a.float(), b.float()).dtype == gc.float32  # no block: as is
    assert _MulCast.seen == [(gc.float32, False)]
    with pytest.raises(ValueError, match="device_type"):
        gc.amp.custom_fwd(device_type=0)
    with pytest.warns(FutureWarning, match="custom_fwd"):
        gc.cuda.amp.custom_fwd(cast_inputs=gc.float32)


def test_autocast_on_cuda_uses_cudas_lists(standin):
    lin = nn.Linear(4, 3).to("cuda")
    x = gc.ones(2, 4, device="cuda")
    with gc.autocast("cuda"):
        y = lin(x)
        assert y.dtype == gc.float16 and y.device == gc.device("cuda")
        assert F.softmax(y, dim=1).dtype == gc.float32  # CUDA's float32 list has softmax
        assert F.layer_norm(y, (3,)).dtype == gc.float32
        loss = F.cross_entropy(y, gc.tensor([0, 1], device="cuda"))
    loss.backward()
    assert lin.weight.grad.dtype == gc.float32
    with gc.autocast("cpu", dtype=gc.float16):  # a CPU block leaves CUDA tensors alone
        assert lin(x).dtype == gc.float32


def _skipping_run(device, make, seq, standin=None):
    """A scaler's steps over the gradients ``seq`` (inf and NaN among them); on a CUDA
    device, the loop must not read anything back (the stand-in counts)."""
    p = nn.Parameter(gc.ones(3, device=device))
    q = nn.Parameter(gc.full((2, 3), 0.5, device=device))
    opt = make([p, q])
    scaler = gc.amp.GradScaler(device, init_scale=2.0 ** 10, growth_interval=2)
    grads = [gc.tensor(g, device=device) for g in seq]
    scaler.scale(p.sum()).backward()  # (the scale made, kernels compiled, pool filled)
    p.grad = None
    if standin is not None:
        standin.reset_syncs(log=True)
    for g in grads:
        opt.zero_grad()
        scaler.scale((p * g).sum() + (q * q).sum()).backward()
        scaler.step(opt)
        scaler.update()
    if standin is not None:
        assert standin.host_syncs() == 0, standin.sync_log()
    steps = [float(opt.state[t].get("step", -1)) for t in (p, q)]
    return scaler.state_dict(), [t.detach().cpu().numpy() for t in (p, q)], steps, opt


_SKIPPING = {
    # the first step skipped: the momentum buffer starts at the first step that runs
    "sgd": lambda ps: gc.optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.3),
    "adam": lambda ps: gc.optim.Adam(ps, lr=0.1, amsgrad=True),
    "adamw": lambda ps: gc.optim.AdamW(ps, lr=0.1),
}


@pytest.mark.parametrize("name", list(_SKIPPING))
def test_cuda_steps_skip_on_the_device_as_the_cpu_skips_after_a_read(standin, name):
    inf, nan = float("inf"), float("nan")
    seq = [[inf, 1.0, 1.0], [1.0, 2.0, 3.0], [0.5, 0.5, 0.5], [1.0, nan, 1.0],
           [1.0, 1.0, 1.0], [2.0, 2.0, 2.0], [-1.0, 1.0, 1.0]]
    cpu = _skipping_run("cpu", _SKIPPING[name], seq)
    cuda = _skipping_run("cuda", _SKIPPING[name], seq, standin)
    assert cuda[0] == cpu[0]  # the scales and good-step counts, adapted on the device
    for a, b in zip(cuda[1], cpu[1]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert cuda[2] == cpu[2]  # Adam's counts skip the skipped steps (5 of 7)
    if name != "sgd":
        assert cuda[2] == [5.0, 5.0]
        # counted on the device from the first skip on, a 0-d tensor as PyTorch's fused
        step = cuda[3].state[cuda[3].param_groups[0]["params"][0]]["step"]
        assert isinstance(step, gc.Tensor) and step.device.type == "cuda"
        # a state saved then loaded (counts as numbers) goes on counting on the device
        opt = _SKIPPING[name]([nn.Parameter(gc.ones(3, device="cuda"))])
        saved = cuda[3].state_dict()
        opt.load_state_dict({"state": {0: saved["state"][0]},
                             "param_groups": [dict(saved["param_groups"][0], params=[0])]})
        assert opt.state[opt.param_groups[0]["params"][0]]["step"] == 5
    with pytest.raises(AssertionError, match="No inf checks were recorded for this"):
        w = nn.Parameter(gc.ones(2))
        s = gc.amp.GradScaler("cpu")
        s.scale(w.sum())
        s.step(gc.optim.SGD([w], lr=0.1))


def test_other_optimizers_read_the_verdict_on_cuda(standin):
    seq = [[float("inf"), 1.0, 1.0], [1.0, 2.0, 3.0]]
    make = lambda ps: gc.optim.RMSprop(ps, lr=0.01)  # noqa: E731
    cpu = _skipping_run("cpu", make, seq)
    cuda = _skipping_run("cuda", make, seq)
    assert cuda[0] == cpu[0]
    for a, b in zip(cuda[1], cpu[1]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert not cuda[3]._step_supports_amp_scaling


def test_update_before_scale_and_scale_on_the_outputs_device():
    s = gc.amp.GradScaler("cpu", init_scale=4.0)
    with pytest.raises(AssertionError, match="Attempted update but _scale is None"):
        s.update()
    assert s.get_scale() == 4.0 and s.state_dict()["_growth_tracker"] == 0
    y = s.scale(gc.ones(2, dtype=gc.float16))
    assert y.dtype == gc.float16 and y.tolist() == [4.0, 4.0]
    s.update(gc.tensor(8.0))
    assert s.get_scale() == 8.0
    with pytest.raises(ValueError, match="new_scale should be a float or a 1-element"):
        s.update(gc.ones(2))
    h = nn.Parameter(gc.ones(2, dtype=gc.float16))  # float16 weights: PyTorch refuses
    s.scale(h.sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
        s.unscale_(gc.optim.SGD([h], lr=0.1))


def test_the_cpu_modules_older_spellings_are_pytorchs_deprecated_subclasses():
    with pytest.warns(FutureWarning, match=r"torch.amp.autocast\('cpu'"):
        a = gc.cpu.amp.autocast(enabled=False)
    with pytest.warns(FutureWarning, match=r"torch.amp.GradScaler\('cpu'"):
        s = gc.cpu.amp.GradScaler(enabled=False)
    assert isinstance(a, gc.amp.autocast) and a.device == "cpu"
    assert isinstance(s, gc.amp.GradScaler) and not s.is_enabled()
