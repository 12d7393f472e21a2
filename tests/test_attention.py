"""F.scaled_dot_product_attention against PyTorch and by finite differences."""

import numpy as np
import pytest

import gradcore as gc
import gradcore.nn.functional as F
from gradcore.autograd import gradcheck, gradgradcheck

from conftest import host, needs_torch

CASES = [
    (((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 7)), {}),
    (((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 7)), dict(is_causal=True)),
    (((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 7)), dict(scale=0.3, mask="bool")),
    (((2, 3, 5, 4), (1, 3, 6, 4), (1, 3, 6, 7)), dict(mask="float")),
    (((2, 4, 5, 4), (2, 2, 6, 4), (2, 2, 6, 7)), dict(enable_gqa=True)),
    (((5, 4), (6, 4), (6, 7)), dict(is_causal=True)),
]


@needs_torch
@pytest.mark.parametrize("shapes, kw", CASES)
def test_values_and_gradients_are_pytorch_s(shapes, kw, device):
    import torch

    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    kw = dict(kw)
    mask = kw.pop("mask", None)
    if mask == "bool":
        mask = rng.random((5, 6)) > 0.3
        mask[:, 0] = True  # (no query without a key)
    elif mask == "float":
        mask = rng.standard_normal((3, 1, 6))
    ours = [gc.tensor(a, device=device, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    a = F.scaled_dot_product_attention(
        *ours, attn_mask=None if mask is None else gc.tensor(mask, device=device), **kw)
    b = torch.nn.functional.scaled_dot_product_attention(
        *theirs, attn_mask=None if mask is None else torch.tensor(mask), **kw)
    np.testing.assert_allclose(host(a.detach()), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = rng.standard_normal(tuple(b.shape))
    (a * gc.tensor(w, device=device)).sum().backward()
    (b * torch.tensor(w)).sum().backward()
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(host(x.grad), y.grad.numpy(), rtol=1e-9, atol=1e-11)


def test_second_derivatives_dropout_and_errors():
    rng = np.random.default_rng(1)
    q, k, v = (gc.tensor(rng.standard_normal(s), requires_grad=True)
               for s in ((2, 3, 2), (2, 4, 2), (2, 4, 3)))
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    assert gradcheck(fn, (q, k, v))
    assert gradgradcheck(fn, (q, k, v))
    gc.manual_seed(5)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    gc.manual_seed(5)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    np.testing.assert_array_equal(host(a.detach()), host(b.detach()))
    with pytest.raises(RuntimeError, match="should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=gc.ones(3, 4), is_causal=True)
