"""Module.register_full_backward_hook / register_full_backward_pre_hook, as PyTorch's."""

import warnings

import numpy as np
import pytest

import gradcore as gc

from conftest import needs_torch


def _run(lib, state, x, pre=False, input_grad=True, replace=False):
    log = []
    mod = lib.nn.Linear(3, 2, dtype=lib.float64)
    mod.load_state_dict({k: lib.tensor(v) for k, v in state.items()})

    def hook(module, gin, gout):
        log.append(("hook", [None if g is None else g.detach().numpy().round(8).tolist()
                             for g in gin], [g.detach().numpy().round(8).tolist() for g in gout]))
        if replace:
            return tuple(None if g is None else g * 2 for g in gin)

    def prehook(module, gout):
        log.append(("pre", [g.detach().numpy().round(8).tolist() for g in gout]))
        return tuple(g * 3 for g in gout)

    mod.register_full_backward_hook(hook)
    if pre:
        mod.register_full_backward_pre_hook(prehook)
    xt = lib.tensor(x, requires_grad=input_grad)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (mod(xt) * lib.tensor(np.arange(4.0).reshape(2, 2))).sum().backward()
    grad = None if xt.grad is None else xt.grad.numpy().round(8).tolist()
    return log, grad, mod.weight.grad.numpy().round(8).tolist(), len(caught)


@needs_torch
@pytest.mark.parametrize("kw", [{}, dict(pre=True), dict(input_grad=False), dict(replace=True),
                                dict(pre=True, input_grad=False)])
def test_hooks_see_and_replace_what_pytorch_s_do(kw):
    import torch

    rng = np.random.default_rng(0)
    state = {"weight": rng.standard_normal((2, 3)), "bias": rng.standard_normal(2)}
    x = rng.standard_normal((2, 3))
    assert _run(gc, state, x, **kw) == _run(torch, state, x, **kw)


def test_a_removed_hook_no_longer_runs():
    calls = []
    layer = gc.nn.Linear(2, 2)
    handle = layer.register_full_backward_hook(lambda m, gi, go: calls.append(1))
    layer(gc.ones(1, 2, requires_grad=True)).sum().backward()
    handle.remove()
    layer(gc.ones(1, 2, requires_grad=True)).sum().backward()
    assert calls == [1]
