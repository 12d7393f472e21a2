"""``contiguous()`` and ``is_contiguous()`` tell the truth, and ``view`` refuses exactly
where PyTorch does (issue 11, item 7): ``x.transpose(1, 2).contiguous().view(B, T, C)``,
the head merge of every GPT-style model, works."""

import random

import numpy as np
import pytest

import gradcore as gc

from conftest import host, needs_torch


def _layouts(m):
    """(name, tensor) pairs of a 3x4 tensor and views of it, with their contiguity."""
    x = m.tensor(np.arange(12.0, dtype=np.float32).reshape(3, 4))
    return [
        ("plain", x, True),
        ("transposed", x.transpose(0, 1), False),
        ("rows", x[1:], True),
        ("one row", x[1], True),
        ("column", x[:, 1], False),
        ("columns", x[:, :2], False),
        ("every other row", x[::2], False),
        ("one column kept 2-D", x[:, 1:2], False),
        ("first row kept 2-D", x[:1], True),
        ("expanded", m.ones(3, 1).expand(3, 4), False),
        ("expanded size 1", m.ones(1, 4).expand(1, 4), True),
        ("unsqueezed transpose", m.ones(2, 1, 3).transpose(0, 1), True),
        ("empty transposed", m.ones(0, 3).transpose(0, 1), True),
        ("scalar", m.tensor(2.0), True),
        ("element", x[1, 2], True),
    ]


def test_is_contiguous(device):
    for name, t, want in _layouts(gc):
        assert t.is_contiguous() is want, name


@needs_torch
def test_is_contiguous_matches_pytorch():
    import torch

    for (name, ours, _), (_, theirs, _) in zip(_layouts(gc), _layouts(torch)):
        assert ours.is_contiguous() == theirs.is_contiguous(), name


def test_contiguous_copies_only_when_needed(device):
    for name, t, was in _layouts(gc):
        c = t.contiguous()
        assert c.is_contiguous(), name
        assert (c is t) == was, name
        np.testing.assert_array_equal(host(c), host(t))
    x = gc.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    c = x.T.contiguous()
    c[0, 1] = 100.0  # a copy: x is untouched
    assert x[1, 0].item() == 3.0


def test_contiguous_is_differentiable(device):
    x = gc.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3), requires_grad=True)
    c = x.transpose(0, 1).contiguous()
    assert c.grad_fn.name() == "CloneBackward0"  # as PyTorch's
    w = gc.tensor(np.arange(6.0, dtype=np.float32).reshape(3, 2))
    (c * w).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]])
    assert x.contiguous() is x


def _head_merge(m, B=2, nh=3, T=4, hs=5):
    """Attention's output (B, nh, T, hs) back to (B, T, C), as nanoGPT writes it."""
    data = np.arange(B * nh * T * hs, dtype=np.float32).reshape(B, nh, T, hs) / 10
    y = m.tensor(data, requires_grad=True)
    out = (y * 1).transpose(1, 2).contiguous().view(B, T, nh * hs)
    w = m.tensor(np.cos(np.arange(out.numel(), dtype=np.float32)).reshape(tuple(out.shape)))
    (out * w).sum().backward()
    return np.asarray(out.detach().tolist()), np.asarray(y.grad.tolist())


def test_transpose_contiguous_view(device):
    out, grad = _head_merge(gc)
    assert out.shape == (2, 4, 15)
    data = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5) / 10
    np.testing.assert_allclose(out, data.transpose(0, 2, 1, 3).reshape(2, 4, 15))
    w = np.cos(np.arange(120, dtype=np.float32)).reshape(2, 4, 3, 5).transpose(0, 2, 1, 3)
    np.testing.assert_allclose(grad, w, rtol=1e-6)


@needs_torch
def test_transpose_contiguous_view_matches_pytorch():
    import torch

    for a, b in zip(_head_merge(gc), _head_merge(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_view_of_a_non_contiguous_tensor(device):
    x = gc.tensor(np.arange(12.0, dtype=np.float32).reshape(3, 4))
    msg = ("view size is not compatible with input tensor's size and stride (at least one "
           "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    for t, shape in [(x.transpose(0, 1), (12,)), (x[:, :2], (6,)),
                     (gc.ones(3, 1).expand(3, 4), (12,)), (x[::2], (8,))]:
        with pytest.raises(RuntimeError) as info:
            t.view(*shape)
        assert str(info.value).startswith(msg)
        assert str(tuple(t.shape)) in str(info.value)
        np.testing.assert_array_equal(host(t.reshape(*shape)), host(t).reshape(shape))
    # views whose strides still chain are allowed, as in PyTorch
    assert x.transpose(0, 1).view(4, 3, 1).shape == (4, 3, 1)
    assert x[:, :2].view(3, 2, 1).shape == (3, 2, 1)
    assert x[:, :2].view(3, 1, 2).shape == (3, 1, 2)
    assert x[::2].view(2, 2, 2).shape == (2, 2, 2)
    assert gc.ones(3, 1).expand(3, 4).view(3, 2, 2).shape == (3, 2, 2)
    y = gc.tensor(np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)).transpose(0, 1)
    v = y.view(3, 2, 2, 2)  # splitting a dimension is fine
    np.testing.assert_array_equal(host(v), host(y).reshape(3, 2, 2, 2))
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        y.view(3, 8)


def _random_view_case(rng, m):
    """A random tensor reached by permutes, slices, expands, selects and unsqueezes,
    and a random shape with its number of elements."""
    nd = rng.randint(1, 4)
    shape = [rng.choice([1, 2, 3, 4]) for _ in range(nd)]
    t = m.tensor(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["perm", "slice", "expand", "select", "unsqueeze"])
        if kind == "perm" and t.ndim >= 2:
            p = list(range(t.ndim))
            rng.shuffle(p)
            t = t.permute(*p)
        elif kind == "slice":
            d = rng.randrange(t.ndim)
            n = t.shape[d]
            s0 = rng.randrange(n)
            t = t[(slice(None),) * d + (slice(s0, rng.randint(s0 + 1, n), rng.choice([1, 2])),)]
        elif kind == "expand":
            d = rng.randrange(t.ndim)
            if t.shape[d] == 1:
                sh = list(t.shape)
                sh[d] = rng.choice([2, 3])
                t = t.expand(*sh)
        elif kind == "select" and t.ndim >= 2:
            d = rng.randrange(t.ndim)
            t = t[(slice(None),) * d + (rng.randrange(t.shape[d]),)]
        elif kind == "unsqueeze":
            t = t.unsqueeze(rng.randint(0, t.ndim))
    n = t.numel()
    target = []
    for _ in range(rng.randint(0, 3)):
        divisors = [d for d in range(1, n + 1) if n % d == 0]
        d = rng.choice(divisors)
        target.append(d)
        n //= d
    target.append(n)
    rng.shuffle(target)
    return t, target


@needs_torch
def test_view_refuses_exactly_where_pytorch_does():
    import torch

    refused = allowed = 0
    for seed in range(600):
        (ours, shape), (theirs, _) = (_random_view_case(random.Random(seed), m)
                                      for m in (gc, torch))
        assert ours.is_contiguous() == theirs.is_contiguous()
        try:
            want = theirs.view(*shape)
        except RuntimeError:
            with pytest.raises(RuntimeError, match="view size is not compatible"):
                ours.view(*shape)
            refused += 1
            continue
        got = ours.view(*shape)
        np.testing.assert_array_equal(host(got), want.numpy())
        allowed += 1
    assert refused > 50 and allowed > 50  # both sides of the rule were tried


def test_memory_format():
    x = gc.ones(2, 3).transpose(0, 1)
    assert repr(gc.contiguous_format) == "gradcore.contiguous_format"
    c = x.contiguous(memory_format=gc.contiguous_format)
    assert c.is_contiguous(memory_format=gc.contiguous_format)
    with pytest.raises(RuntimeError,
                       match="preserve memory format is unsupported by the contiguous operator"):
        x.contiguous(memory_format=gc.preserve_format)
    with pytest.raises(TypeError):
        x.contiguous(gc.contiguous_format)  # keyword-only, as in PyTorch


def _reshape_copy(m):
    x = m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    y = x * 1
    r = y.T.reshape(-1)  # a copy: the transpose is not contiguous
    r.mul_(2)  # changes r only
    s = y.T.reshape(-1)
    y.mul_(10)  # changes y only
    out = (r * m.arange(6.0)).sum() + (s * m.arange(6.0)).sum() + y.sum()
    out.backward()
    return r.tolist(), s.tolist(), y.tolist(), x.grad.tolist()


def test_reshape_that_copies_is_not_a_view(device):
    r, s, y, g = _reshape_copy(gc)
    assert r == [2.0, 8.0, 4.0, 10.0, 6.0, 12.0]
    assert s == [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
    assert y == [[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]]
    assert g == [[10.0, 16.0, 22.0], [13.0, 19.0, 25.0]]
    x = gc.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.reshape(4)._base is x and x.T.reshape(4)._base is None


@needs_torch
def test_reshape_that_copies_matches_pytorch():
    import torch

    assert _reshape_copy(gc) == _reshape_copy(torch)


def test_an_empty_tensors_strides_are_pytorchs_contiguous_ones():
    # (NumPy gives an empty array zero strides; PyTorch counts a size 0 as 1)
    assert gc.empty(0, 3, 2, 2).stride() == (12, 4, 2, 1)
    assert gc.zeros(3, 0, 2).stride() == (2, 2, 1) and gc.ones(2, 3, 0).stride(-1) == 1
    assert gc.tensor([]).stride() == (1,)
