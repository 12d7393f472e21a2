"""nn.utils: gradient clipping and the parameter/vector conversions, against PyTorch."""

import math

import numpy as np
import pytest

import gradcore as gc

from conftest import host, needs_torch


def _pair(device, scale=1.0):
    import torch

    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) * scale for s in ((3, 4), (4,), (2, 2, 2))]
    ours = [gc.nn.Parameter(gc.tensor(a, device=device)) for a in arrays]
    theirs = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    for o, t, a in zip(ours, theirs, arrays):
        o.grad = gc.tensor(a * 2 - 1, device=device)
        t.grad = torch.tensor(a * 2 - 1)
    ours[1].grad = theirs[1].grad = None  # a parameter without a gradient is skipped
    return ours, theirs


@needs_torch
@pytest.mark.parametrize("norm_type", [2.0, 1, math.inf, 0.5])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_is_pytorch_s(norm_type, max_norm, device):
    import torch

    ours, theirs = _pair(device)
    a = gc.nn.utils.clip_grad_norm_(ours, max_norm, norm_type)
    b = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert isinstance(a, gc.Tensor) and a.ndim == 0
    np.testing.assert_allclose(host(a), b.numpy(), rtol=1e-12)
    for o, t in zip(ours, theirs):
        if t.grad is None:
            assert o.grad is None
        else:
            np.testing.assert_allclose(host(o.grad), t.grad.numpy(), rtol=1e-12)


@needs_torch
def test_clip_grad_value_and_the_vectors_are_pytorch_s(device):
    import torch

    ours, theirs = _pair(device)
    gc.nn.utils.clip_grad_value_(ours, 0.7)
    torch.nn.utils.clip_grad_value_(theirs, 0.7)
    for o, t in zip(ours, theirs):
        if t.grad is not None:
            np.testing.assert_array_equal(host(o.grad), t.grad.numpy())
    v = gc.nn.utils.parameters_to_vector(ours)
    np.testing.assert_array_equal(host(v.detach()),
                                  torch.nn.utils.parameters_to_vector(theirs).detach().numpy())
    gc.nn.utils.vector_to_parameters(v * 2, ours)
    assert host(ours[2]).tolist() == (host(v.detach())[16:] * 2).reshape(2, 2, 2).tolist()
    assert ours[0].requires_grad and ours[0].is_leaf


def test_no_gradients_empty_generators_and_non_finite_norms():
    p = gc.nn.Parameter(gc.ones(2))
    assert gc.nn.utils.clip_grad_norm_([p], 1.0).item() == 0.0
    with pytest.warns(UserWarning, match="empty generator"):
        gc.nn.utils.clip_grad_norm_((q for q in []), 1.0)
    p.grad = gc.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        gc.nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        gc.nn.utils.vector_to_parameters([1.0, 2.0], [p])
    total = gc.nn.utils.get_total_norm([gc.tensor([3.0]), gc.tensor([4.0])])
    assert total.item() == 5.0


@needs_torch
def test_orthogonal_dirac_and_sparse_init_as_pytorch(device):
    import torch

    w = host(gc.nn.init.orthogonal_(gc.empty(3, 5, dtype=gc.float64, device=device), gain=2.0))
    np.testing.assert_allclose(w @ w.T, 4 * np.eye(3), atol=1e-12)
    w = host(gc.nn.init.orthogonal_(gc.empty(6, 2, 2, dtype=gc.float64))).reshape(6, 4)
    np.testing.assert_allclose(w.T @ w, np.eye(4), atol=1e-12)
    for shape, groups in (((4, 2, 3), 1), ((4, 2, 3, 3), 2), ((2, 3, 3, 3, 3), 1)):
        np.testing.assert_array_equal(
            host(gc.nn.init.dirac_(gc.empty(*shape, device=device), groups)),
            torch.nn.init.dirac_(torch.empty(*shape), groups).numpy())
    s = host(gc.nn.init.sparse_(gc.empty(10, 4, device=device), 0.3))
    assert ((s == 0).sum(0) == 3).all() and 0 < s.std() < 0.05
    g1, g2 = gc.Generator().manual_seed(3), gc.Generator().manual_seed(3)
    a, b = (gc.nn.init.orthogonal_(gc.empty(4, 4, device="cpu"), generator=g)
            for g in (g1, g2))
    np.testing.assert_array_equal(host(a), host(b))
    for call in (lambda: gc.nn.init.orthogonal_(gc.empty(3)),
                 lambda: gc.nn.init.dirac_(gc.empty(3, 3)),
                 lambda: gc.nn.init.sparse_(gc.empty(3), 0.1)):
        with pytest.raises(ValueError, match="Only tensors with"):
            call()
