"""More of PyTorch's names (issue 14): shape and view ops, indexing by flat positions,
products with an added term, determinants and inverses, medians and NaN-aware sums,
compared with PyTorch: values, dtypes, shapes, gradients and error types, on every
device under test (the ``device`` fixture: the CPU and the CUDA code path).

Each case is written once over a module ``m``, ``gradcore`` or ``torch``, whose names
agree."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradcore as gc

from conftest import assert_same, host, needs_torch

NAN = float("nan")
M = [[3.0, 1.0, 2.0, 2.0], [NAN, 1.0, 0.0, 5.0], [4.0, 4.0, -1.0, 0.5]]
SQ = [[2.0, 1.0, 0.5], [1.0, 3.0, -1.0], [0.0, 1.5, 4.0]]


def _ar(m, *shape):
    return m.arange(float(np.prod(shape))).reshape(*shape)


CASES = {
    "narrow": lambda m: _ar(m, 3, 4).narrow(1, -3, 2),
    "narrow_tensor_start": lambda m: m.narrow(_ar(m, 3, 4), 0, m.tensor(1), 2),
    "narrow_copy": lambda m: _ar(m, 3, 4).narrow_copy(0, 1, 1),
    "select": lambda m: m.select(_ar(m, 2, 3, 4), 1, -1),
    "ravel": lambda m: _ar(m, 2, 3).mT.ravel(),
    "moveaxis": lambda m: m.moveaxis(_ar(m, 2, 3, 4), (0, 1), (2, 0)),
    "tile_short": lambda m: _ar(m, 2, 3).tile((2,)),
    "tile_long": lambda m: m.tile(_ar(m, 2, 3), (2, 1, 2)),
    "tile_ints": lambda m: (_ar(m, 2, 3).tile(2, 1), _ar(m, 3).tile([2])),
    "rot90": lambda m: _ar(m, 2, 3).rot90(),
    "rot90_k": lambda m: tuple(m.rot90(_ar(m, 2, 3, 2), k, (2, 0)) for k in (-1, 0, 2, 3, 5)),
    "take": lambda m: _ar(m, 2, 3).take(m.tensor([[0, -1], [4, 2]])),
    "put": lambda m: _ar(m, 2, 3).put(m.tensor([1, -1]), m.tensor([9.0, 8.0])),
    "put_accumulate": lambda m: _ar(m, 2, 3).put(m.tensor([1, 1]), m.tensor([9.0, 8.0]),
                                                 accumulate=True),
    "put_": lambda m: _ar(m, 2, 3).put_(m.tensor([0, 5]), m.tensor([7.0, 6.0])),
    "index_put": lambda m: _ar(m, 2, 3).index_put((m.tensor([1, 0]),), m.tensor(-1.0)),
    "index_put_accumulate": lambda m: m.index_put(
        _ar(m, 2, 3), (m.tensor([0, 0]), m.tensor([1, 2])), m.tensor(1.0), accumulate=True),
    "index_put_rows_accumulate": lambda m: _ar(m, 2, 3).index_put(
        (m.tensor([0, 0]),), m.tensor([1.0, 2.0, 3.0]), True),
    "index_put_": lambda m: _ar(m, 2, 3).index_put_((m.tensor([True, False]),), m.tensor(5.0)),
    "index_fill": lambda m: _ar(m, 2, 3).index_fill(1, m.tensor([0, 2]), 5.0),
    "index_fill_tensor": lambda m: m.index_fill(_ar(m, 2, 3), 0, m.tensor(1), m.tensor(-2.0)),
    "index_fill_": lambda m: _ar(m, 2, 3).index_fill_(1, m.tensor([1]), -1.0),
    "split_with_sizes": lambda m: _ar(m, 5, 2).split_with_sizes([2, 3]),
    "tensor_split_int": lambda m: m.tensor_split(_ar(m, 2, 7), 3, 1),
    "tensor_split_indices": lambda m: _ar(m, 7).tensor_split([1, 5, 3, 9]),
    "tensor_split_tensor": lambda m: _ar(m, 7).tensor_split(m.tensor([2, 4])),
    "tensor_split_0d_tensor": lambda m: _ar(m, 7).tensor_split(m.tensor(4)),
    "hsplit": lambda m: m.hsplit(_ar(m, 2, 4), 2),
    "hsplit_1d": lambda m: _ar(m, 6).hsplit([2]),
    "vsplit": lambda m: _ar(m, 4, 2).vsplit(2),
    "dsplit": lambda m: m.dsplit(_ar(m, 1, 2, 4), [1, 3]),
    "sum_to_size": lambda m: _ar(m, 2, 3, 4).sum_to_size(3, 1),
    "stride": lambda m: (_ar(m, 2, 3, 4).stride(), _ar(m, 2, 3, 4).mT.stride(),
                         _ar(m, 2, 3).stride(-1), _ar(m, 3).expand(2, 3).stride()),
    "storage_offset": lambda m: (_ar(m, 4, 3)[1:, 1:].storage_offset(),
                                 _ar(m, 4)[2:].storage_offset(), _ar(m, 3).storage_offset()),
    "as_strided": lambda m: _ar(m, 3, 3).as_strided((2, 2), (1, 3)),
    "as_strided_offset": lambda m: m.as_strided(_ar(m, 9), (3, 2), (2, 1), 1),
    "as_strided_of_view": lambda m: _ar(m, 9)[3:].as_strided((2,), (2,)),
    "addmm": lambda m: m.addmm(_ar(m, 3), _ar(m, 2, 4), _ar(m, 4, 3), beta=0.5, alpha=2),
    "addmm_": lambda m: _ar(m, 2, 2).addmm_(_ar(m, 2, 3), _ar(m, 3, 2)),
    "addmm_beta0_nan": lambda m: m.addmm(m.full((2, 2), NAN), _ar(m, 2, 3), _ar(m, 3, 2),
                                         beta=0),
    "addmv": lambda m: m.addmv(_ar(m, 2), _ar(m, 2, 3), _ar(m, 3), alpha=-1),
    "addr": lambda m: _ar(m, 2, 3).addr(_ar(m, 2), _ar(m, 3), beta=2),
    "addbmm": lambda m: m.addbmm(_ar(m, 2, 4), _ar(m, 3, 2, 5), _ar(m, 3, 5, 4)),
    "baddbmm": lambda m: _ar(m, 3, 2, 4).baddbmm(_ar(m, 3, 2, 5), _ar(m, 3, 5, 4), alpha=0.5),
    "addcmul": lambda m: m.addcmul(_ar(m, 2, 3), _ar(m, 3), _ar(m, 2, 1), value=0.5),
    "addcdiv": lambda m: _ar(m, 2, 3).addcdiv(_ar(m, 3), _ar(m, 2, 1) + 1, value=-2),
    "addcdiv_": lambda m: _ar(m, 2, 3).addcdiv_(_ar(m, 3), _ar(m, 2, 1) + 1),
    "inner": lambda m: m.inner(_ar(m, 2, 3), _ar(m, 4, 3)),
    "inner_0d": lambda m: m.inner(m.tensor(2.0), _ar(m, 3)),
    "vdot": lambda m: m.vdot(_ar(m, 3), _ar(m, 3) - 1),
    "kron": lambda m: m.kron(_ar(m, 2, 2), _ar(m, 3)),
    "kron_int": lambda m: m.tensor([[1, 2], [3, 4]]).kron(m.tensor([[0, 1], [1, 0]])),
    "inverse": lambda m: m.inverse(m.tensor(SQ)),
    "det": lambda m: (m.det(m.tensor(SQ)), m.tensor([SQ, SQ]).det(),
                      m.det(m.tensor([[1.0, 2.0], [2.0, 4.0]]))),
    "slogdet": lambda m: m.slogdet(m.tensor([[1.0, 2.0], [2.0, 1.0]])),
    "logdet": lambda m: (m.logdet(m.tensor(SQ)), m.logdet(m.tensor([[1.0, 2.0], [2.0, 1.0]]))),
    "matrix_power": lambda m: tuple(m.matrix_power(m.tensor(SQ, dtype=m.float64), n)
                                    for n in (0, 1, 3, -2)),
    "pinverse": lambda m: m.pinverse(_ar(m, 2, 3).double()),
    "median": lambda m: (m.tensor(M).median(), m.tensor(M)[0].median()),
    "median_dim": lambda m: m.tensor(M).median(1),
    "median_dim0_keepdim": lambda m: m.median(m.tensor(M), 0, keepdim=True),
    "median_int": lambda m: m.tensor([[5, 1, 3, 1]]).median(-1),
    "median_0d": lambda m: m.tensor(3.0).median(0),
    "nanmedian": lambda m: (m.tensor(M).nanmedian(), m.tensor(M).nanmedian(1),
                            m.nanmedian(m.tensor([NAN, NAN]), 0)),
    "nansum": lambda m: (m.tensor(M).nansum(), m.nansum(m.tensor(M), 1, keepdim=True),
                         m.tensor([1, 2]).nansum()),
    "nanmean": lambda m: (m.tensor(M).nanmean(), m.tensor(M).nanmean(0)),
    "diff": lambda m: (m.tensor(M).diff(), m.diff(m.tensor(M), 2, 0), m.tensor([1, 4, 9]).diff(),
                       m.tensor([True, False, False]).diff()),
    "diff_prepend_append": lambda m: m.diff(_ar(m, 2, 3), dim=1, prepend=_ar(m, 2, 1),
                                            append=_ar(m, 2, 2) * 3),
    "diff_past_length": lambda m: m.tensor([1.0, 2.0]).diff(n=4),
    "is_predicates": lambda m: tuple(f(t) for t in (m.ones(2), m.tensor([True]),
                                                    m.tensor([1], dtype=m.uint8),
                                                    m.tensor([1], dtype=m.int8))
                                     for f in (m.is_signed, m.is_complex, m.is_conj, m.is_neg,
                                               m.is_inference)),
    "is_methods": lambda m: (m.ones(2).is_signed(), m.tensor([2]).is_nonzero(),
                             m.is_nonzero(m.tensor([[0.0]])), m.ones(2, 1).is_same_size(m.ones(2)),
                             m.is_same_size(m.ones(2), m.zeros(2)), m.ones(1).is_complex()),
    "conj": lambda m: (m.conj(_ar(m, 2)), _ar(m, 2).resolve_conj(), m.resolve_neg(_ar(m, 2))),
    "byte_char_short": lambda m: (m.tensor([1.5, 2.7, 200.0]).byte(), _ar(m, 3).char(),
                                  m.tensor([1.9, -7000.7]).short()),
    "atleast_1d": lambda m: (m.atleast_1d(m.tensor(1.0)), m.atleast_1d(_ar(m, 2, 2)),
                             m.atleast_1d(m.tensor(1), _ar(m, 2)), m.atleast_1d([m.tensor(2)])),
    "atleast_2d": lambda m: m.atleast_2d(m.tensor(1.0), _ar(m, 3), _ar(m, 1, 2, 3)),
    "atleast_3d": lambda m: m.atleast_3d(m.tensor(1.0), _ar(m, 3), _ar(m, 2, 3)),
    "hstack": lambda m: (m.hstack([_ar(m, 2), m.tensor(5.0)]),
                         m.hstack((_ar(m, 2, 1), _ar(m, 2, 3)))),
    "vstack": lambda m: (m.vstack([_ar(m, 3), _ar(m, 2, 3)]),
                         m.row_stack([m.tensor(1.0), m.tensor(2.0)])),
    "dstack": lambda m: m.dstack([_ar(m, 3), _ar(m, 1, 3), _ar(m, 1, 3, 2)]),
    "column_stack": lambda m: m.column_stack([m.tensor(1.0), m.ones(1), _ar(m, 1, 2)]),
    "broadcast_tensors": lambda m: m.broadcast_tensors(_ar(m, 2, 1), _ar(m, 3), m.tensor(1.0)),
    "cartesian_prod": lambda m: (m.cartesian_prod(_ar(m, 2), _ar(m, 3), m.tensor([7.0])),
                                 m.cartesian_prod(_ar(m, 3))),
    "combinations": lambda m: tuple(m.combinations(m.tensor([4, 5, 6]), r, rep)
                                    for r in (0, 1, 2, 3, 4) for rep in (False, True)),
    "diag_embed": lambda m: (m.diag_embed(_ar(m, 2, 3)), _ar(m, 2, 3).diag_embed(-1, 0, 2),
                             m.diag_embed(_ar(m, 3), 2, 1, 0)),
    "diagflat": lambda m: (m.diagflat(_ar(m, 2, 2)), _ar(m, 3).diagflat(-1)),
    "block_diag": lambda m: (m.block_diag(m.tensor(1), m.tensor([2.0, 3.0]),
                                          m.ones(2, 2, dtype=m.int32)), m.block_diag(),
                             m.block_diag(m.ones(0, 2), _ar(m, 2, 1))),
    "tril_indices": lambda m: (m.tril_indices(3, 4, 1), m.tril_indices(2, 3, -1, dtype=m.int32),
                               m.tril_indices(0, 0), m.tril_indices(4, 2, 5)),
    "triu_indices": lambda m: (m.triu_indices(2, 3, -1), m.triu_indices(3, 3, 1),
                               m.triu_indices(3, 2, -5)),
    "mode": lambda m: (m.tensor([[1.0, 2.0, 2.0, 3.0, 3.0], [5.0, 4.0, 4.0, 5.0, 1.0]]).mode(),
                       m.mode(m.tensor([[1, 2], [5, 2], [1, 3]]), 0, keepdim=True),
                       m.tensor([1, 1, 2, 2]).mode(), m.tensor(3.0).mode()),
    "quantile": lambda m: (m.tensor(M).quantile(0.3), m.tensor(M)[0].quantile(0.5),
                           m.quantile(m.tensor(M), m.tensor([0.1, 0.9]), dim=1, keepdim=True),
                           m.tensor(M).quantile(0.25, 0, keepdim=True),
                           m.tensor(M).quantile(m.tensor([0.0, 1.0]), keepdim=True)),
    "quantile_interpolation": lambda m: tuple(
        m.tensor(M).quantile(m.tensor([0.1, 0.4, 0.5, 0.75]), 1, interpolation=i)
        for i in ("linear", "lower", "higher", "midpoint", "nearest")),
    "nanquantile": lambda m: (m.tensor(M).nanquantile(0.3), m.nanquantile(m.tensor(M), 0.5, 1),
                              m.tensor([NAN, NAN]).nanquantile(m.tensor([0.2, 0.7])),
                              m.tensor(M).nanquantile(0.4, 1, interpolation="nearest")),
    "cov": lambda m: (m.cov(m.tensor(SQ)), m.tensor(SQ)[0].cov(), m.cov(m.tensor(SQ), correction=0),
                      m.cov(m.tensor(SQ), fweights=m.tensor([1, 2, 1])),
                      m.cov(m.tensor(SQ), aweights=m.tensor([0.5, 1.0, 2.0])),
                      m.cov(m.tensor(SQ), fweights=m.tensor([1, 2, 1]),
                            aweights=m.tensor([0.5, 1.0, 2.0]), correction=2),
                      m.cov(m.tensor([[1, 2, 4]]))),
    "corrcoef": lambda m: (m.corrcoef(m.tensor(SQ)), m.tensor(SQ)[1].corrcoef()),
    "unique_consecutive": lambda m: (
        m.unique_consecutive(m.tensor([1, 1, 2, 2, 3, 1, 1, 2])),
        m.tensor([[1, 1], [2, 3]]).unique_consecutive(return_inverse=True, return_counts=True),
        m.unique_consecutive(m.tensor([[1, 1], [1, 1], [2, 3]]), True, True, dim=0),
        m.unique_consecutive(m.tensor([[1, 1, 2], [1, 1, 3]]), return_counts=True, dim=1),
        m.unique_consecutive(m.tensor([]), return_inverse=True, return_counts=True)),
    "histogram": lambda m: (m.histogram(m.tensor([1.0, 2.0, 2.0, 5.0]), bins=3),
                            m.tensor(M).histogram(m.tensor([-1.0, 0.5, 2.0, 6.0]), density=True),
                            m.histogram(m.tensor([1.0, 2.0, 2.0, 5.0]), 2, range=(0.0, 4.0),
                                        weight=m.tensor([1.0, 2.0, 3.0, 4.0])),
                            m.histogram(m.tensor([2.0, 2.0]), 2),
                            m.histogram(m.tensor([]), 2)),
    "in_place_functions": lambda m: (
        m.index_put_(m.zeros(3), (m.tensor([0, 0, 2]),), m.tensor(1.0), True),
        m.addmv_(m.ones(2), _ar(m, 2, 2), _ar(m, 2), beta=2)),
}


def _plain(value):
    import torch

    if isinstance(value, gc.Tensor):
        return ("tensor", host(value.detach()), str(value.dtype).rsplit(".", 1)[-1],
                tuple(value.shape))
    if isinstance(value, torch.Tensor):
        return ("tensor", value.detach().numpy(), str(value.dtype).rsplit(".", 1)[-1],
                tuple(value.shape))
    if isinstance(value, (tuple, list)):
        return tuple(_plain(v) for v in value)
    return value


@needs_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_pytorch(name, device):
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = CASES[name](gc), CASES[name](torch)
    assert_same(_plain(ours), _plain(theirs), name)
    if type(theirs).__module__ == "torch.return_types":
        assert type(ours).__name__ == type(theirs).__name__
        assert ours._fields == tuple(f for f in ("values", "indices", "sign", "logabsdet",
                                                 "hist", "bin_edges") if hasattr(theirs, f))
    for t in ours if isinstance(ours, tuple) else (ours,):
        if isinstance(t, gc.Tensor) and name not in ("conj",):
            assert t.device.type == gc.device(device).type, name


# ---- gradients: the same as PyTorch's, each input given a distinct upstream ----------
GRADS = {
    "narrow": (lambda m, x: x.narrow(1, 1, 2), [(3, 4)]),
    "select": (lambda m, x: x.select(0, 1), [(3, 4)]),
    "tile": (lambda m, x: x.tile((2, 1, 2)), [(3, 4)]),
    "rot90": (lambda m, x: x.rot90(3, (1, 0)), [(3, 4)]),
    "take": (lambda m, x: x.take(m.tensor([[0, 5], [5, -1]])), [(3, 4)]),
    "put": (lambda m, x, s: x.put(m.tensor([0, 5, 5]), s), [(3, 4), (3,)]),
    "put_accumulate": (lambda m, x, s: x.put(m.tensor([0, 5, 5]), s, accumulate=True),
                       [(3, 4), (3,)]),
    "index_put_accumulate": (lambda m, x, v: x.index_put((m.tensor([2, 0, 2]),), v, True),
                             [(3, 4), (4,)]),
    "index_fill_tensor": (lambda m, x, v: x.index_fill(1, m.tensor([0, 3]), v.sum()),
                          [(3, 4), (2,)]),
    "tensor_split": (lambda m, x: x.tensor_split(3, 1)[1] * 2 + x.tensor_split([1], 1)[0],
                     [(3, 4)]),
    "sum_to_size": (lambda m, x: x.sum_to_size(3, 1), [(3, 4)]),
    "as_strided": (lambda m, x: x.as_strided((3, 3), (1, 2), 1), [(3, 4)]),
    "addmm": (lambda m, a, b, c: m.addmm(a, b, c, beta=0.5, alpha=1.5), [(4,), (3, 2), (2, 4)]),
    "addmv": (lambda m, a, b, c: m.addmv(a, b, c, beta=2), [(3,), (3, 2), (2,)]),
    "addr": (lambda m, a, b, c: m.addr(a, b, c, alpha=-1), [(3, 4), (3,), (4,)]),
    "addbmm": (lambda m, a, b, c: m.addbmm(a, b, c), [(2, 4), (3, 2, 5), (3, 5, 4)]),
    "baddbmm": (lambda m, a, b, c: m.baddbmm(a, b, c), [(3, 2, 4), (3, 2, 5), (3, 5, 4)]),
    "addcmul": (lambda m, a, b, c: m.addcmul(a, b, c, value=0.5), [(2, 3), (3,), (2, 1)]),
    "addcdiv": (lambda m, a, b, c: m.addcdiv(a, b, c * c + 1, value=2), [(2, 3), (3,), (2, 1)]),
    "inner": (lambda m, a, b: m.inner(a, b), [(2, 3), (4, 3)]),
    "kron": (lambda m, a, b: m.kron(a, b), [(2, 3), (3, 2)]),
    "inverse": (lambda m, a: m.inverse(a + 3 * m.eye(3, dtype=a.dtype)), [(2, 3, 3)]),
    "det": (lambda m, a: m.det(a), [(2, 3, 3)]),
    "det_singular_in_batch": (lambda m, a: m.det(m.stack([a, a[[0, 0]]])), [(2, 2)]),
    "slogdet": (lambda m, a: m.slogdet(a)[1], [(3, 3)]),
    "logdet": (lambda m, a: m.logdet(a @ a.mT + m.eye(3, dtype=a.dtype)), [(3, 3)]),
    "matrix_power": (lambda m, a: m.matrix_power(a + 3 * m.eye(3, dtype=a.dtype), -3),
                     [(3, 3)]),
    "pinverse": (lambda m, a: m.pinverse(a), [(3, 2)]),
    "median": (lambda m, x: x.median(), [(3, 4)]),
    "median_dim": (lambda m, x: x.median(0)[0], [(3, 4)]),
    "nanmedian_dim": (lambda m, x: x.nanmedian(1, keepdim=True).values, [(3, 4)]),
    "nansum": (lambda m, x: x.nansum(1), [(3, 4)]),
    "nanmean": (lambda m, x: x.nanmean(0), [(3, 4)]),
    "diff": (lambda m, x, p: m.diff(x, 2, 0, prepend=p), [(3, 4), (1, 4)]),
    "cartesian_prod": (lambda m, a, b: m.cartesian_prod(a, b), [(3,), (2,)]),
    "combinations": (lambda m, a: m.combinations(a, 3, True), [(3,)]),
    "diag_embed": (lambda m, a: m.diag_embed(a, 1, 0, 2), [(2, 3)]),
    "diagflat": (lambda m, a: m.diagflat(a, -1), [(2, 2)]),
    "block_diag": (lambda m, a, b, c: m.block_diag(a, b, c), [(2, 3), (), (2,)]),
    "stacks": (lambda m, a, b: m.hstack([a, b]) + m.vstack([a, b]).sum() +
               m.dstack([a, b]).sum() + m.column_stack([a, b]).sum(), [(3, 1), (3, 1)]),
    "broadcast_tensors": (lambda m, a, b: m.broadcast_tensors(a, b)[0] * 2 +
                          m.broadcast_tensors(a, b)[1], [(2, 1), (3,)]),
    "mode": (lambda m, x: m.mode(x.round(), 0)[0], [(3, 4)]),
    "quantile": (lambda m, x: m.quantile(x, m.tensor([0.2, 0.5, 0.9], dtype=x.dtype), 1), [(3, 4)]),
    "nanquantile": (lambda m, x: m.nanquantile(x, 0.3, 1, interpolation="midpoint"), [(3, 4)]),
    "cov": (lambda m, x, a: m.cov(x, aweights=a.abs() + 0.5), [(3, 4), (4,)]),
    "corrcoef": (lambda m, x: m.corrcoef(x), [(3, 4)]),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_match_pytorch(name, device):
    import torch

    fn, shapes = GRADS[name]
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s) for s in shapes]
    if name.startswith(("nan", "median")):
        arrays[0][1, 2] = NAN if name.startswith("nan") else arrays[0][1, 2]
    ours = [gc.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = fn(gc, *ours), fn(torch, *theirs)
    up = rng.standard_normal(tuple(ref.shape))
    out.backward(gc.tensor(up))
    ref.backward(torch.tensor(up))
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert (a.grad is None) == (b.grad is None), (name, k)
        if b.grad is not None:
            np.testing.assert_allclose(host(a.grad), b.grad.numpy(), rtol=1e-6, atol=1e-9,
                                       err_msg=f"{name}: input {k}")


# ---- errors: the same exception type as PyTorch's ----------
ERRORS = {
    "narrow_start": lambda m: _ar(m, 2, 3).narrow(0, 3, 1),
    "narrow_length": lambda m: _ar(m, 2, 3).narrow(0, 1, 5),
    "narrow_negative": lambda m: _ar(m, 2, 3).narrow(0, 0, -1),
    "select_index": lambda m: _ar(m, 2, 3).select(1, -4),
    "select_0d": lambda m: m.tensor(1.0).select(0, 0),
    "rot90_dims": lambda m: _ar(m, 2, 3).rot90(1, [0]),
    "rot90_same": lambda m: _ar(m, 2, 3).rot90(1, [0, 0]),
    "take_range": lambda m: _ar(m, 2, 3).take(m.tensor([6])),
    "take_int32": lambda m: _ar(m, 2, 3).take(m.tensor([1], dtype=m.int32)),
    "put_sizes": lambda m: _ar(m, 2, 3).put(m.tensor([1, 2]), m.tensor([1.0])),
    "index_fill_2d": lambda m: _ar(m, 2, 3).index_fill(0, m.tensor([[0]]), 1.0),
    "index_fill_float": lambda m: _ar(m, 2, 3).index_fill(0, m.tensor([0.0]), 1.0),
    "index_fill_range": lambda m: _ar(m, 2, 3).index_fill(0, m.tensor([5]), 1.0),
    "index_fill_value_1d": lambda m: _ar(m, 2, 3).index_fill(0, m.tensor([0]), m.ones(1)),
    "index_put_shape": lambda m: _ar(m, 2, 3).index_put((m.tensor([0]),), m.ones(2)),
    "tensor_split_zero": lambda m: _ar(m, 2, 3).tensor_split(0),
    "tensor_split_2d": lambda m: _ar(m, 2, 3).tensor_split(m.tensor([[1]])),
    "tensor_split_0d": lambda m: m.tensor(1.0).tensor_split(1),
    "hsplit_divide": lambda m: _ar(m, 2, 3).hsplit(2),
    "vsplit_1d": lambda m: _ar(m, 3).vsplit(1),
    "dsplit_2d": lambda m: _ar(m, 2, 3).dsplit(1),
    "sum_to_size": lambda m: _ar(m, 2, 3).sum_to_size(3, 3),
    "squeeze_dim": lambda m: _ar(m, 2, 3).squeeze_(5),
    "unsqueeze_dim": lambda m: _ar(m, 2, 3).unsqueeze_(3),
    "as_strided_bounds": lambda m: _ar(m, 2, 3).as_strided((3, 3), (1, 2)),
    "addmm_shapes": lambda m: m.addmm(_ar(m, 2, 3), _ar(m, 2, 3), _ar(m, 2, 3)),
    "addmm_1d": lambda m: m.addmm(_ar(m, 2, 3), _ar(m, 3), _ar(m, 3, 3)),
    "addmm_input": lambda m: m.addmm(_ar(m, 4), _ar(m, 2, 3), _ar(m, 3, 2)),
    "addmm_dtypes": lambda m: m.addmm(_ar(m, 2, 2).double(), _ar(m, 2, 3), _ar(m, 3, 2)),
    "addmv_sizes": lambda m: m.addmv(_ar(m, 3), _ar(m, 2, 3), _ar(m, 3)),
    "addbmm_sizes": lambda m: m.addbmm(_ar(m, 2, 3), _ar(m, 1, 2, 3), _ar(m, 1, 2, 3)),
    "addcdiv_ints": lambda m: m.addcdiv(m.ones(2, dtype=m.int64), m.ones(2, dtype=m.int64),
                                        m.ones(2, dtype=m.int64)),
    "inner_sizes": lambda m: m.inner(_ar(m, 2, 3), _ar(m, 4)),
    "vdot_2d": lambda m: m.vdot(_ar(m, 2, 2), _ar(m, 2, 2)),
    "inverse_square": lambda m: m.inverse(_ar(m, 2, 3)),
    "inverse_singular": lambda m: m.inverse(m.zeros(2, 2)),
    "det_long": lambda m: m.det(m.ones(2, 2, dtype=m.int64)),
    "det_half": lambda m: m.det(m.ones(2, 2, dtype=m.float16)),
    "matrix_power_square": lambda m: m.matrix_power(_ar(m, 2, 3), 2),
    "median_empty_dim": lambda m: m.zeros(2, 0).median(1),
    "nanmean_long": lambda m: m.tensor([1, 2]).nanmean(),
    "diff_0d": lambda m: m.tensor(1.0).diff(),
    "diff_order": lambda m: m.tensor([1.0]).diff(n=-1),
    "is_nonzero_many": lambda m: m.ones(2).is_nonzero(),
    "is_nonzero_none": lambda m: m.ones(0).is_nonzero(),
    "hstack_empty": lambda m: m.hstack([]),
    "block_diag_3d": lambda m: m.block_diag(m.ones(1, 1, 1)),
    "combinations_2d": lambda m: m.combinations(m.ones(2, 2)),
    "combinations_negative": lambda m: m.combinations(m.ones(2), -1),
    "cartesian_prod_2d": lambda m: m.cartesian_prod(m.ones(2, 2)),
    "diag_embed_dims": lambda m: m.diag_embed(m.ones(3), 0, 0, 0),
    "diag_embed_0d": lambda m: m.diag_embed(m.tensor(1.0)),
    "broadcast_tensors": lambda m: m.broadcast_tensors(m.ones(2), m.ones(3)),
    "tril_indices_float": lambda m: m.tril_indices(3, 3, dtype=m.float32),
    "tril_indices_negative": lambda m: m.triu_indices(-1, 3),
    "mode_empty": lambda m: m.zeros(2, 0).mode(1),
    "quantile_q": lambda m: m.ones(3).quantile(1.5),
    "quantile_interpolation": lambda m: m.ones(3).quantile(0.5, interpolation="foo"),
    "quantile_int": lambda m: m.tensor([1, 2]).quantile(0.5),
    "quantile_q_2d": lambda m: m.ones(3).quantile(m.tensor([[0.5]])),
    "quantile_empty": lambda m: m.zeros(0).quantile(0.5),
    "quantile_q_dtype": lambda m: m.ones(3).quantile(m.tensor([0.5], dtype=m.float64)),
    "cov_3d": lambda m: m.cov(m.ones(2, 2, 2)),
    "cov_fweights_float": lambda m: m.cov(m.ones(2, 3), fweights=m.ones(3)),
    "cov_weights_numel": lambda m: m.cov(m.ones(2, 3), aweights=m.ones(2)),
    "histogram_int": lambda m: m.histogram(m.tensor([1, 2]), 2),
    "histogram_bins": lambda m: m.histogram(m.ones(2), 0),
    "histogram_range": lambda m: m.histogram(m.ones(2), 2, range=(3.0, 1.0)),
    "histogram_edges_2d": lambda m: m.histogram(m.ones(2), m.ones(1, 2)),
    "histogram_weight": lambda m: m.histogram(m.ones(2), 2, weight=m.ones(3)),
    "histogram_nan": lambda m: m.histogram(m.tensor([1.0, NAN]), 2),
    "histogram_edges_dtype": lambda m: m.histogram(m.ones(2).double(), m.tensor([0.0, 1.0])),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_pytorch(name):
    import torch

    with pytest.raises(Exception) as theirs:
        ERRORS[name](torch)
    expected = type(theirs.value)
    if expected.__module__ != "builtins":  # torch.linalg.LinAlgError: a RuntimeError
        expected = next(c for c in expected.__mro__ if c.__module__ == "builtins")
    with pytest.raises(expected):
        ERRORS[name](gc)


# ---- in-place view ops ----------
@needs_torch
@pytest.mark.parametrize("call", [
    lambda t: t.squeeze_(), lambda t: t.squeeze_(1), lambda t: t.squeeze_((1, 3)),
    lambda t: t.unsqueeze_(-1), lambda t: t.transpose_(0, 2), lambda t: t.swapaxes_(0, -1),
    lambda t: t.swapdims_(1, 2)])
def test_in_place_view_ops_change_the_tensor_itself(call, device):
    import torch

    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 1, 3, 1))
    w = rng.standard_normal(a.size)
    ours, theirs = [], []
    for m, out in ((gc, ours), (torch, theirs)):
        leaf = m.tensor(a, requires_grad=True)
        x = leaf * 1
        view = x[:]  # an earlier view of x: its version moves on too
        r = call(x)
        assert r is x
        out += [tuple(x.shape), x.stride(), x.grad_fn.name(), x._version, view._version]
        (x * m.tensor(w).reshape(x.shape)).sum().backward()
        out.append(leaf.grad.numpy() if m is torch else host(leaf.grad))
    assert ours[:5] == theirs[:5]
    np.testing.assert_allclose(ours[5], theirs[5])


def test_in_place_view_ops_refuse_a_leaf_that_requires_grad():
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        gc.zeros(2, 1, requires_grad=True).squeeze_()
    with gc.no_grad():
        x = gc.zeros(2, 1, requires_grad=True)
        assert x.unsqueeze_(0).shape == (1, 2, 1) and x.is_leaf


def test_as_strided_gradient_reaches_each_read_element(device):
    x = gc.arange(6.0).requires_grad_()
    y = x.as_strided((2, 2), (1, 1))  # elements 1 and 2 read twice
    assert y.grad_fn.name() == "AsStridedBackward0" and y._base is x
    y.sum().backward()
    assert host(x.grad).tolist() == [1.0, 2.0, 1.0, 0.0, 0.0, 0.0]


def test_second_order_gradients_of_the_matrix_functions():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    for fn in (gc.inverse, gc.det, lambda t: gc.slogdet(t)[1], gc.pinverse,
               lambda t: gc.addmm(t[0], t, t, beta=0.5)):
        x = gc.tensor(a, requires_grad=True)
        assert gc.autograd.gradcheck(fn, [x])
        assert gc.autograd.gradgradcheck(fn, [x])


# ---- hooks after accumulation, new_empty_strided ----------
def test_post_accumulate_grad_hooks_run_after_the_add(device):
    x = gc.ones(2, requires_grad=True)
    seen = []
    handle = x.register_post_accumulate_grad_hook(lambda t: seen.append(host(t.grad).tolist()))
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    assert seen == [[2.0, 2.0], [5.0, 5.0]]
    gc.autograd.grad((x * 2).sum(), x)  # nothing accumulated: no call
    handle.remove()
    (x * 2).sum().backward()
    assert len(seen) == 2
    x.register_post_accumulate_grad_hook(lambda t: 1)
    with pytest.raises(TypeError, match="hook returned 'int'"):
        (x * 2).sum().backward()
    with pytest.raises(RuntimeError, match="non-leaf"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        gc.ones(2).register_post_accumulate_grad_hook(lambda t: None)


def test_new_empty_strided_has_the_strides_asked(device):
    t = gc.ones(1, dtype=gc.float64).new_empty_strided((2, 3), (1, 2), requires_grad=True)
    assert (t.shape, t.stride(), t.dtype, t.requires_grad) == ((2, 3), (1, 2), gc.float64, True)
    assert t.device.type == gc.device(device).type
    assert gc.zeros(1).new_empty_strided((2, 0), (1, 2)).shape == (2, 0)
    with pytest.raises(RuntimeError, match="mismatch in length"):
        gc.zeros(1).new_empty_strided((2, 3), (1,))


def test_is_cpu(device):
    assert gc.ones(1).is_cpu == (gc.device(device).type == "cpu")


def test_other_device_and_layout_kinds_are_false():
    # pytorch/examples' dcgan tests `input.is_cuda or input.is_xpu`
    t = gc.ones(2)
    for kind in ("is_xpu", "is_mps", "is_meta", "is_xla", "is_ipu", "is_vulkan", "is_maia",
                 "is_mtia", "is_mkldnn", "is_sparse", "is_sparse_csr", "is_quantized",
                 "is_nested"):
        assert getattr(t, kind) is False, kind


TYPED = ["FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor",
         "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"]


@needs_torch
@pytest.mark.parametrize("name", TYPED)
def test_legacy_typed_constructors_match_pytorch(name):
    # pytorch/examples' gcn and gat: torch.FloatTensor(ndarray), torch.LongTensor(labels)
    import torch

    for args in [([[1, 0], [2, 3]],), (np.array([[1, 2]], dtype=np.int32),), (2, 3),
                 (torch.Size([2]),), (), ((1, 2),)]:
        want = getattr(torch, name)(*args)
        got = getattr(gc, name)(*[gc.Size(a) if isinstance(a, torch.Size) else a
                                  for a in args])
        assert got.dtype.name == str(want.dtype).split(".")[1] and got.shape == want.shape
        if args and not isinstance(args[-1], (int, torch.Size)):  # (sizes: uninitialized)
            np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert isinstance(got, gc.Tensor) and isinstance(got, getattr(gc, name))
    other = "LongTensor" if name != "LongTensor" else "FloatTensor"
    assert not isinstance(gc.zeros(1, dtype=getattr(gc, other).dtype), getattr(gc, name))
    with pytest.raises(TypeError):
        torch.FloatTensor(2, "a")
    with pytest.raises(TypeError, match="failed to unpack the object at pos 2"):
        gc.FloatTensor(2, "a")


def test_legacy_typed_constructor_of_a_tensor_and_casts():
    t = gc.tensor([1.0, 2.0])
    a = gc.FloatTensor(t)
    assert a is not t and a.data_ptr() == t.data_ptr()
    with pytest.raises(TypeError, match="expected gradcore.int64"):
        gc.LongTensor(t)
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cpu but "
                                           "device type: cuda was passed"):
        gc.FloatTensor([1.0], device="cuda")
    assert t.type(gc.LongTensor).dtype == gc.int64
    assert repr(gc.Tensor()) == "tensor([])" and gc.Tensor(gc.Size([2, 3])).shape == (2, 3)
