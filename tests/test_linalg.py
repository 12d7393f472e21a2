"""``gradcore.linalg`` against ``torch.linalg``: values and gradients on both devices."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gradcore as gc

from conftest import host, needs_torch

_RNG = np.random.default_rng(0)
X = _RNG.standard_normal((3, 4, 5))
A = _RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
B = _RNG.standard_normal((2, 3, 2))
V = _RNG.standard_normal((2, 3))

CASES = [(f"vector_norm_{o}", lambda m, x, o=o: m.linalg.vector_norm(x, o, dim=(1, 2)), [X])
         for o in (2, 1, math.inf, -math.inf, 3.5, 0.5)] + \
    [(f"matrix_norm_{o}", lambda m, x, o=o: m.linalg.matrix_norm(x, o), [X])
     for o in ("fro", 1, -1, math.inf, -math.inf)] + \
    [(f"matrix_norm_{o}_dims", lambda m, x, o=o: m.linalg.matrix_norm(x, o, dim=(0, 2),
                                                                      keepdim=True), [X])
     for o in ("fro", 1, -math.inf)] + [
    ("vector_norm_all", lambda m, x: m.linalg.vector_norm(x), [X]),
    ("norm", lambda m, x: m.linalg.norm(x), [X]),
    ("norm_dim", lambda m, x: m.linalg.norm(x, dim=1, keepdim=True), [X]),
    ("norm_matrix_ord", lambda m, x: m.linalg.norm(x[0], 1), [X]),
    ("inv", lambda m, a: m.linalg.inv(a), [A]),
    ("det", lambda m, a: m.linalg.det(a), [A]),
    ("slogdet", lambda m, a: m.linalg.slogdet(a).logabsdet, [A]),
    ("solve", lambda m, a, b: m.linalg.solve(a, b), [A, B]),
    ("solve_vector", lambda m, a, v: m.linalg.solve(a, v), [A, V]),
    ("solve_right", lambda m, a, b: m.linalg.solve(a, b.transpose(1, 2), left=False), [A, B]),
    ("matrix_power", lambda m, a: m.linalg.matrix_power(a, -2), [A]),
    ("pinv", lambda m, a: m.linalg.pinv(a), [_RNG.standard_normal((2, 4, 3))]),
    ("vecdot", lambda m, x, y: m.linalg.vecdot(x, y), [X, X[::-1].copy()]),
    ("cross", lambda m, x, y: m.linalg.cross(x, y), [_RNG.standard_normal((4, 3)),
                                                      _RNG.standard_normal((4, 3))]),
    ("multi_dot_vectors", lambda m, a, b, c: m.linalg.multi_dot([a, b, c]),
     [_RNG.standard_normal(3), _RNG.standard_normal((3, 4)), _RNG.standard_normal(4)]),
    ("multi_dot", lambda m, a, b, c: m.linalg.multi_dot([a, b, c]),
     [_RNG.standard_normal((2, 3)), _RNG.standard_normal((3, 4)),
      _RNG.standard_normal((4, 5))]),
    ("diagonal", lambda m, x: m.linalg.diagonal(x, offset=1), [X]),
]


@needs_torch
@pytest.mark.parametrize("name, fn, arrays", CASES, ids=[c[0] for c in CASES])
def test_linalg_is_pytorch_s(name, fn, arrays, device):
    import torch

    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    gs = [gc.tensor(a, device=device, requires_grad=True) for a in arrays]
    want, got = fn(torch, *ts), fn(gc, *gs)
    np.testing.assert_allclose(host(got.detach()), want.detach().numpy(), rtol=1e-9,
                               atol=1e-12)
    w = np.random.default_rng(1).standard_normal(tuple(want.shape))
    (want * torch.tensor(w)).sum().backward()
    (got * gc.tensor(w, device=device)).sum().backward()
    for t, g in zip(ts, gs):
        np.testing.assert_allclose(host(g.grad), t.grad.numpy(), rtol=1e-8, atol=1e-11)


def test_linalg_errors():
    with pytest.raises(RuntimeError, match="Order 3 not supported"):
        gc.linalg.matrix_norm(gc.ones(2, 2), 3)
    with pytest.raises(RuntimeError, match="square matrices"):
        gc.linalg.solve(gc.ones(2, 3), gc.ones(2))
    with pytest.raises(RuntimeError, match="floating point"):
        gc.linalg.vector_norm(gc.ones(3, dtype=gc.int64))
    assert gc.linalg.slogdet(gc.eye(2)).sign.item() == 1.0
