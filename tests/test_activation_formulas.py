"""The activation ops' rules are one formula each (``gradcore.kernels.rows`` and the
pointwise declarations), served on every namespace: these check what that design
promises beyond the op tests (the fused cross-entropy pair, the formulas over tensors)."""

import re
from pathlib import Path

import numpy as np
import pytest

import gradcore as gc
from gradcore.backend import math_of
from gradcore.ops import tensor_math

F = gc.nn.functional


def test_no_rule_in_activation_tests_the_mode_or_the_device():
    src = (Path(gc.__file__).parent / "ops" / "activation.py").read_text()
    classes = re.findall(r"class (\w+)\(.*?\):\n(.*?)(?=\nclass |\ndef |\Z)", src, re.S)
    for name, body in classes:
        if name in ("EmbeddingBackward0",):  # (its padding row: not an activation op)
            continue
        assert "tensor_mode" not in body and "device_kernels" not in body, name


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_pair_second_order_matches_pytorch(reduction):
    """The pair's node computes the input gradient; its log_softmax node passes it on.
    Under create_graph the composite still differentiates through log_softmax."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 5))
    t = rng.integers(0, 5, 6)
    t[2] = -100
    w = rng.uniform(0.5, 2.0, 5)
    gx, tx = gc.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    loss = F.cross_entropy(gx, gc.tensor(t), weight=gc.tensor(w), reduction=reduction)
    tloss = torch.nn.functional.cross_entropy(tx, torch.tensor(t), weight=torch.tensor(w),
                                              reduction=reduction)
    assert loss.grad_fn.name() == "NllLossBackward0"
    assert loss.grad_fn.next_functions[0][0].name() == "LogSoftmaxBackward0"
    u = rng.standard_normal(tuple(tloss.shape))
    (g,) = gc.autograd.grad(loss, gx, gc.tensor(u), create_graph=True)
    (tg,) = torch.autograd.grad(tloss, tx, torch.tensor(u), create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-12,
                               atol=1e-15)
    v = rng.standard_normal(x.shape)
    (g2,) = gc.autograd.grad((g * gc.tensor(v)).sum(), gx, create_graph=True)
    (tg2,) = torch.autograd.grad((tg * torch.tensor(v)).sum(), tx, create_graph=True)
    np.testing.assert_allclose(g2.detach().numpy(), tg2.detach().numpy(), rtol=1e-11,
                               atol=1e-14)
    (g3,) = gc.autograd.grad((g2 * gc.tensor(v)).sum(), gx)
    (tg3,) = torch.autograd.grad((tg2 * torch.tensor(v)).sum(), tx)
    np.testing.assert_allclose(g3.numpy(), tg3.numpy(), rtol=1e-10, atol=1e-13)


def test_a_hook_on_the_pair_log_softmax_node_sees_the_input_gradient():
    x = gc.tensor(np.random.default_rng(1).standard_normal((4, 3)), requires_grad=True)
    loss = F.cross_entropy(x, gc.tensor([0, 2, 1, 1]))
    seen = []
    loss.grad_fn.next_functions[0][0].register_prehook(0, lambda g: seen.append(g.numpy().copy()))
    loss.backward()
    np.testing.assert_array_equal(seen[0],
                                  x.grad.numpy())


@pytest.mark.parametrize("name,args", [
    ("softmax_backward", lambda r: (r.standard_normal((3, 4)), _softmax(r), 1)),
    ("softmax_backward", lambda r: (r.standard_normal((3, 4)), _softmax(r), 0)),
    ("log_softmax_backward", lambda r: (r.standard_normal((3, 4)), np.log(_softmax(r)), 1)),
    ("bce_logits_backward", lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 4)),
                                       r.random((3, 4)), r.random(4) + 0.5, True, True)),
])
def test_the_formulas_give_the_same_values_over_tensors(name, args):
    a = args(np.random.default_rng(2))
    m = math_of(a[0])
    want = getattr(m, name)(*a)
    t = [gc.tensor(v) if isinstance(v, np.ndarray) and i < 3 else v for i, v in enumerate(a)]
    got = getattr(tensor_math, name)(*t)
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    for w, g in zip(want, got):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-14, atol=1e-15)


def _softmax(rng):
    e = np.exp(rng.standard_normal((3, 4)))
    return e / e.sum(1, keepdims=True)
