"""Calls with PyTorch's argument spellings, checked value for value and gradient for
gradient against PyTorch (skipped, with a reason, when PyTorch is not installed)."""

import numpy as np
import pytest

import gradcore as gc

from conftest import host, needs_torch

IDX = [[0, 2, 1, 0], [1, 1, 0, 2], [2, 0, 0, 1]]

CALLS = {
    "squeeze_tuple": lambda m, x: x.reshape(3, 1, 4, 5).squeeze((1,)),
    "unsqueeze_neg": lambda m, x: x.unsqueeze(-1),
    "flatten_range": lambda m, x: x.flatten(1, 2),
    "unflatten": lambda m, x: x.unflatten(2, (5, 1)),
    "transpose_neg": lambda m, x: x.transpose(-1, 0),
    "permute": lambda m, x: x.permute(1, 2, 0),
    "expand_minus1": lambda m, x: x[:, :1].expand(-1, 2, -1),
    "expand_new_dim": lambda m, x: x[0, 0].expand(2, 5),
    "repeat": lambda m, x: x[0].repeat(2, 1, 1),
    "split_sizes": lambda m, x: m.cat([p * (i + 1) for i, p in enumerate(x.split([1, 3], 1))], 1),
    "chunk_uneven": lambda m, x: m.cat([p * (i + 2) for i, p in enumerate(x.chunk(3, 2))], 2),
    "cat_neg_dim": lambda m, x: m.cat([x, x * 2], -1),
    "stack_neg": lambda m, x: m.stack([x, x * 3], -2),
    "gather": lambda m, x: m.gather(x[:, :, 0], 1, m.tensor(IDX)),
    "scatter_add": lambda m, x: m.scatter_add(x[:, :, 0] * 1, 1, m.tensor(IDX), x[:, :, 1]),
    "index_select": lambda m, x: m.index_select(x, 2, m.tensor([4, 0, 4])),
    "masked_fill_bcast": lambda m, x: x.masked_fill(m.tensor([True, False, True, False, True]),
                                                   0.5),
    "where_scalars": lambda m, x: m.where(x > 0, x, 0.25),
    "clamp_min_only": lambda m, x: x.clamp(min=-0.2),
    "clamp_max_only": lambda m, x: x.clamp(max=0.3),
    "pow_neg_base": lambda m, x: (x - 2) ** 3,
    "norm_p1": lambda m, x: x.norm(p=1, dim=1),
    "norm_inf": lambda m, x: m.norm(x, p=float("inf"), dim=(0, 2)),
    "var_unbiased_false": lambda m, x: x.var(1, unbiased=False),
    "std_correction0": lambda m, x: x.std(dim=(0, 2), correction=0, keepdim=True),
    "logsumexp_dims": lambda m, x: m.logsumexp(x, (0, 2)),
    "prod_dim": lambda m, x: (x + 2).prod(1),
    "max_dim_keep": lambda m, x: x.max(dim=2, keepdim=True).values,
    "min_dim": lambda m, x: x.min(0)[0],
    "amax_tuple": lambda m, x: x.amax((1, 2), keepdim=True),
    "mean_neg_dims": lambda m, x: x.mean((-1, -2)),
    "sum_keep": lambda m, x: x.sum(1, keepdim=True),
    "matmul_1d": lambda m, x: x @ x[0, 0],
    "bmm": lambda m, x: m.bmm(x, x.transpose(1, 2)),
    "getitem_mix": lambda m, x: x[1:, None, [0, 2, 2], 1::2],
    "getitem_bool": lambda m, x: x[x[:, :, 0] > 0],
    "getitem_ellipsis": lambda m, x: x[..., 1],
    "rsub_rdiv": lambda m, x: 2.0 - 3.0 / (x.abs() + 1),
    "softmax_like": lambda m, x: (x - x.logsumexp(-1, keepdim=True)).exp(),
    "sigmoid_relu": lambda m, x: m.sigmoid(x).relu() * m.relu(x - 0.1),
    "minimum_scalar_tensor": lambda m, x: m.minimum(x, m.tensor(0.1, dtype=x.dtype)),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(CALLS))
def test_matches_pytorch(name):
    import torch

    fn = CALLS[name]
    data = np.random.default_rng(7).standard_normal((3, 4, 5))
    gx = gc.tensor(data, requires_grad=True)
    tx = torch.tensor(data, requires_grad=True)
    gout, tout = fn(gc, gx), fn(torch, tx)
    assert tuple(gout.shape) == tuple(tout.shape)
    np.testing.assert_allclose(host(gout), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    u = np.random.default_rng(8).standard_normal(tuple(tout.shape))
    gout.backward(gc.tensor(u))
    tout.backward(torch.tensor(u))
    np.testing.assert_allclose(host(gx.grad), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
