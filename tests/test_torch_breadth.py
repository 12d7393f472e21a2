"""PyTorch's top-level functions, process-wide settings and Tensor methods that programs
call beside the ops (``torch.tensordot``, ``torch.set_printoptions``,
``Tensor.fill_diagonal_``, ...), compared with PyTorch: values, dtypes, shapes,
gradients, printing, and error types and messages. The differentiable ones have rows
in test_ops_table.py too (finite differences, first and second order).

Each case is written once over a module ``m``, ``gradcore`` or ``torch``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradcore as gc

from conftest import assert_same, host, needs_torch

pytestmark = needs_torch


def _ar(m, *shape, dtype=None):
    return m.arange(float(np.prod(shape)), dtype=dtype).reshape(*shape)


CASES = {
    # shapes, products, norms
    "broadcast_shapes": lambda m: tuple(m.broadcast_shapes(2, (3, 1), [1, 1, 1])),
    "broadcast_shapes_size": lambda m: tuple(m.broadcast_shapes(m.Size([2, 1]), (0,))),
    "broadcast_shapes_none": lambda m: tuple(m.broadcast_shapes()),
    "concatenate": lambda m: m.concatenate([m.ones(2, 1), _ar(m, 2, 2)], axis=1),
    "tensordot_int": lambda m: m.tensordot(_ar(m, 2, 3), _ar(m, 3, 4), 1),
    "tensordot_lists": lambda m: m.tensordot(_ar(m, 2, 3, 4), _ar(m, 4, 3), ([1, 2], [1, 0])),
    "tensordot_outer": lambda m: m.tensordot(_ar(m, 2, 3), _ar(m, 3), 0),
    "tensordot_tensor_dims": lambda m: m.tensordot(_ar(m, 2, 3), _ar(m, 3, 4), m.tensor(1)),
    "chain_matmul": lambda m: m.chain_matmul(_ar(m, 2, 3), _ar(m, 3, 2), m.ones(2, 2)),
    "dist": lambda m: (m.dist(m.tensor([1., 2]), m.tensor([0., 0]), 3),
                       m.dist(m.tensor([1., 2]), m.tensor([0., 0]), float("inf")),
                       m.tensor([1., 2]).dist(m.tensor([[0.], [1.]]), 0)),
    "frobenius_norm": lambda m: m.frobenius_norm(_ar(m, 2, 3), (0, 1), True),
    "renorm": lambda m: m.renorm(_ar(m, 2, 3, 4), 3, -1, 5.),
    "renorm_": lambda m: _ar(m, 2, 3).renorm_(1, 0, 2.),
    # arithmetic, fills
    "rsub": lambda m: (m.rsub(m.tensor([1., 2]), 3, alpha=2),
                       m.rsub(m.tensor([1, 2]), m.tensor([3, 3])),
                       m.rsub(m.tensor([1, 2]), 2.5)),
    "fill": lambda m: (m.fill(m.ones(2), 3.), m.fill(m.ones(2, dtype=m.int64), 3.5),
                       m.fill(m.ones(2), m.tensor(4.))),
    "fill__zero_": lambda m: (m.fill_(m.ones(2), 2), m.zero_(m.ones(2))),
    # polynomials, integration, differences
    "vander": lambda m: (m.vander(m.tensor([1, 2, 3], dtype=m.int32)),
                         m.vander(m.tensor([True, False])),
                         m.vander(m.tensor([1., 2, 3]), N=4, increasing=True),
                         m.vander(m.tensor([1., 2]), N=0)),
    "trapezoid": lambda m: (m.trapezoid(m.tensor([1., 2, 3])),
                            m.trapezoid(m.tensor([1., 2, 3]), dx=0.5),
                            m.trapezoid(_ar(m, 2, 3), m.tensor([0., 1, 3])),
                            m.trapezoid(_ar(m, 2, 3), _ar(m, 2, 3) ** 2),
                            m.trapezoid(_ar(m, 2, 3), m.tensor([0., 1]), dim=0),
                            m.trapezoid(m.tensor([1, 2, 3])),
                            m.trapezoid(m.zeros(2, 0))),
    "trapz": lambda m: (m.trapz(m.tensor([1., 2, 3]), m.tensor([0., 1, 3])),
                        m.trapz(m.tensor([1., 2, 3]), dx=2.)),
    "cumulative_trapezoid": lambda m: (
        m.cumulative_trapezoid(m.tensor([1., 2, 3])),
        m.cumulative_trapezoid(_ar(m, 2, 3), m.tensor([0., 1, 3])),
        m.cumulative_trapezoid(_ar(m, 2, 3), dx=2., dim=0),
        m.cumulative_trapezoid(m.zeros(2, 0)), m.cumulative_trapezoid(m.tensor([1, 2, 4]))),
    "gradient": lambda m: (
        *m.gradient(m.tensor([1., 4., 9., 16.]), spacing=2.),
        *m.gradient(m.tensor([1., 4., 9., 16.]), edge_order=2),
        *m.gradient(_ar(m, 2, 4) ** 2),
        *m.gradient(_ar(m, 2, 4) ** 2, dim=1, spacing=[3.]),
        *m.gradient(m.tensor([1, 4, 9, 16])),
        *m.gradient(_ar(m, 3, 4) ** 2, spacing=(m.tensor([0., 1, 3]), m.tensor([0., 1, 3, 4])),
                    edge_order=2),
        *m.gradient(_ar(m, 2, 4) ** 2, spacing=(m.tensor([0., 1]), m.tensor([0., 1, 3, 4])))),
    # scatters into copies, index_reduce
    "select_scatter": lambda m: (m.select_scatter(m.zeros(2, 3), m.ones(3), 0, 0),
                                 m.zeros(2, 3).select_scatter(m.ones(2), 1, -1)),
    "slice_scatter": lambda m: (m.slice_scatter(m.zeros(4), m.ones(2), start=1, end=3),
                                m.zeros(4, 6).slice_scatter(m.ones(4, 2), 1, 0, 6, 3)),
    "diagonal_scatter": lambda m: (m.diagonal_scatter(m.zeros(3, 3), m.ones(3)),
                                   m.diagonal_scatter(m.zeros(3, 3), m.ones(2), 1),
                                   m.diagonal_scatter(m.zeros(2, 3, 3), m.ones(3, 1), -1, 0, 2)),
    "index_reduce": lambda m: (
        m.index_reduce(m.ones(3), 0, m.tensor([0, 0, 2]), m.tensor([2., 3., 4.]), "prod"),
        m.index_reduce(m.ones(3, 2), 0, m.tensor([0, 0, 2]), _ar(m, 3, 2), "mean"),
        m.index_reduce(m.ones(3, 2), 0, m.tensor([0, 0, 2]), _ar(m, 3, 2), "mean",
                       include_self=False),
        m.index_reduce(m.ones(2, 3), 1, m.tensor([0, 0]), _ar(m, 2, 2), "amax",
                       include_self=False),
        m.ones(2, 3).index_reduce(1, m.tensor([0, 2]), _ar(m, 2, 2) - 2, "amin"),
        m.ones(2, 3).index_reduce_(1, m.tensor([0, 2]), _ar(m, 2, 2) - 2, "amin")),
    # tests
    "isin": lambda m: (m.isin(m.tensor([1, 2, 3]), m.tensor([2, 5])),
                       m.isin(m.tensor([1, 2, 3]), 2), m.isin(2, m.tensor([1, 2])),
                       m.isin(m.tensor([1., 2]), m.tensor([2]), invert=True)),
    "argwhere": lambda m: (m.argwhere(m.tensor([[0, 1], [1, 0]])), m.argwhere(m.tensor(1)),
                           m.tensor([0., 3.]).argwhere()),
    "unravel_index": lambda m: (*m.unravel_index(m.tensor([4, 5, 6, -1]), (2, 3)),
                                *m.unravel_index(m.tensor(5), (2, 3)),
                                *m.unravel_index(m.tensor([1]), 5)),
    "isreal_real": lambda m: (m.isreal(m.tensor([1., 2])), m.real(m.tensor([1., 2])),
                              m.tensor([1, 2]).real),
    "histogramdd": lambda m: (
        m.histogramdd(m.tensor([[0., 1.], [1., 0.], [2., 0.], [2., 2.]]), bins=[3, 3],
                      weight=m.tensor([1., 2., 4., 8.])),
        m.histogramdd(m.ones(3, 2), bins=2),
        m.histogramdd(m.tensor([[0., 1.], [1., 0.], [2., 0.], [2., 2.]]),
                      bins=[m.tensor([0., 1, 2]), m.tensor([0., 2])], density=True),
        m.histogramdd(m.tensor([[0., 1.], [1., 0.], [2., 0.]]), 2, range=[0., 1., 0., 1.]),
        m.histogramdd(_ar(m, 2, 2, 3), [2, 3, 1])),
    # creation
    "scalar_tensor": lambda m: (m.scalar_tensor(1), m.scalar_tensor(True),
                                m.scalar_tensor(1, dtype=m.int64),
                                m.scalar_tensor(1.5, dtype=m.float64)),
    "range": lambda m: (m.range(1, 4), m.range(0, 1, 0.3), m.range(1, 4, dtype=m.int64),
                        m.range(1., 2.5), m.range(0, 10, 3, dtype=m.int32), m.range(3, 0, -1)),
    "asarray": lambda m: (m.asarray([1, 2]), m.asarray([1., 2], dtype=m.float64),
                          m.asarray(3), m.asarray(np.ones(2)), m.asarray(True),
                          m.asarray([[1.5]], dtype=m.int64),
                          m.asarray(m.ones(2), dtype=m.float64)),
    "frombuffer": lambda m: (
        m.frombuffer(bytearray(b"\x01\x00\x00\x00\x02\x00\x00\x00"), dtype=m.int32),
        m.frombuffer(bytearray(8), dtype=m.int32, count=1, offset=4),
        m.frombuffer(bytearray(b"abcd"), dtype=m.uint8, offset=1)),
    "empty_strided": lambda m: (m.empty_strided((2, 3), (1, 2)).stride(),
                                m.empty_strided((2, 3), (3, 1), dtype=m.int32).dtype.is_signed
                                if m is not gc else True),
    "windows": lambda m: tuple(
        f(n, *args) for n in (0, 1, 2, 5, 6) for f, args in (
            (m.hann_window, ()), (m.hann_window, (False,)), (m.hamming_window, ()),
            (m.hamming_window, (False, 0.6)), (m.hamming_window, (True, 0.5, 0.5)),
            (m.blackman_window, ()), (m.blackman_window, (False,)), (m.bartlett_window, ()),
            (m.bartlett_window, (False,)), (m.kaiser_window, ()),
            (m.kaiser_window, (False, 3.0)), (m.kaiser_window, (True, 0.0)))),
    "window_float64": lambda m: m.hann_window(4, dtype=m.float64),
    # Tensor methods
    "fill_diagonal_": lambda m: (m.zeros(3, 3).fill_diagonal_(2),
                                 m.zeros(7, 3).fill_diagonal_(5, wrap=True),
                                 m.zeros(7, 3).fill_diagonal_(5), m.zeros(3, 4).fill_diagonal_(1),
                                 m.zeros(2, 2, 2).fill_diagonal_(1),
                                 m.zeros(3, 7).fill_diagonal_(1, True),
                                 m.zeros(4, 3).fill_diagonal_(1, True)),
    "new": lambda m: (tuple(m.ones(2, 3).new(2, 3).shape), m.ones(2, 3).new([1, 2]),
                      tuple(m.ones(2, 3).new().shape), tuple(m.ones(2).new(m.Size([2])).shape),
                      m.ones(2, 3).new((2, 3)), m.ones(2, dtype=m.int64).new([1.5])),
    "apply_map_": lambda m: (m.ones(3).apply_(lambda v: v * 2),
                             m.ones(2, 2).map_(m.arange(2.), lambda a, b: a + b)),
    "resize_": lambda m: (m.arange(6.).resize_(2, 2), tuple(m.arange(6.).resize_(2, 4).shape),
                          m.arange(6.).resize_(2, 4)[0], m.arange(6.).resize_as_(m.ones(2)),
                          m.resize_as_(m.arange(6.), m.ones(3))),
    "set_": lambda m: (m.ones(3).set_(m.arange(4.)), m.ones(3).set_()),
    "flags": lambda m: (m.ones(3).is_sparse, m.ones(3).is_quantized, m.ones(3).is_meta,
                        m.ones(3).is_mps, m.ones(3).is_xpu, m.ones(3).is_mkldnn,
                        m.ones(3).is_nested, m.ones(3).is_pinned(), m.ones(3).is_shared(),
                        m.ones(3).share_memory_().is_shared(), m.ones(3).output_nr,
                        str(m.ones(3).layout).split(".")[-1], str(m.strided).split(".")[-1],
                        isinstance(m.float32, m.dtype), isinstance(m.strided, m.layout),
                        m.is_floating_point(m.ones(1)),
                        m.is_floating_point(m.ones(1, dtype=m.int64)),
                        m.get_device(m.ones(1)), m.typename(m.ones(2, dtype=m.int64))),
    # the in-place function forms
    "inplace_functions": lambda m: (
        m.relu_(m.tensor([-1., 1])), m.clamp_(m.tensor([-1., 1, 3]), 0, 2),
        m.square_(m.tensor([-1., 3])), m.xlogy_(m.tensor([0., 1, 3]), m.tensor([2., 2, 4])),
        m.nan_to_num_(m.tensor([float("nan"), 1.]), 2.), m.logit_(m.tensor([0.2, 0.5]), 0.1),
        m.celu_(m.tensor([-1., 1]), 2.), m.selu_(m.tensor([-1., 1])),
        m.sigmoid_(m.tensor([0., 1])), m.exp_(m.tensor([0., 1])), m.abs_(m.tensor([-2.]))),
    "embedding": lambda m: (m.embedding(_ar(m, 3, 2), m.tensor([2, 0])),
                            m.embedding(_ar(m, 3, 2), m.tensor([[2, 0]]), 0)),
    "dropout_off": lambda m: (m.dropout(m.ones(4), 0.5, False), m.dropout(m.ones(2, 3), 1., True),
                              m.alpha_dropout(m.ones(4), 1.0, True),
                              m.feature_dropout(m.ones(2, 2), 0., True),
                              m.dropout_(m.ones(4), 0.5, False), m.dropout(m.ones(0), 0.5, True)),
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


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_pytorch(name):
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = CASES[name](gc), CASES[name](torch)
    assert_same(_plain(ours), _plain(theirs), name)


# ---- errors: PyTorch's type and message ----------
ERRORS = {
    "tensordot_mismatch": lambda m: m.tensordot(_ar(m, 2, 3), _ar(m, 4, 3), 1),
    "tensordot_negative": lambda m: m.tensordot(_ar(m, 2, 3), _ar(m, 3, 4), -1),
    "tensordot_lists": lambda m: m.tensordot(_ar(m, 2, 3), _ar(m, 3, 4), ([1, 0], [0])),
    "tensordot_dtypes": lambda m: m.tensordot(_ar(m, 2, 3), m.ones(3, 4, dtype=m.int64), 1),
    "tensordot_too_many": lambda m: m.tensordot(_ar(m, 2, 3), _ar(m, 3, 4), 3),
    "broadcast_shapes": lambda m: m.broadcast_shapes((2, 1), (3, 4)),
    "broadcast_shapes_negative": lambda m: m.broadcast_shapes((2, -1)),
    "chain_matmul_none": lambda m: m.chain_matmul(),
    "chain_matmul_1d": lambda m: m.chain_matmul(m.ones(3)),
    "dist_int": lambda m: m.dist(m.tensor([1, 2]), m.tensor([0, 0])),
    "renorm_int": lambda m: m.renorm(m.ones(2, 2, dtype=m.int64), 2, 0, 1.),
    "renorm_1d": lambda m: m.renorm(m.ones(4), 2, 0, 1.),
    "renorm_p": lambda m: m.renorm(m.ones(2, 2), -1, 0, 1.),
    "renorm_maxnorm": lambda m: m.renorm(m.ones(2, 2), 2, 0, -1.),
    "rsub_bool": lambda m: m.rsub(m.tensor([True]), m.tensor([True])),
    "fill_1d_value": lambda m: m.fill(m.ones(2), m.ones(2)),
    "vander_2d": lambda m: m.vander(m.ones(2, 2)),
    "trapezoid_x": lambda m: m.trapezoid(m.tensor([1., 2, 3]), m.tensor([0., 1])),
    "gradient_small": lambda m: m.gradient(m.tensor([1., 4.]), edge_order=2),
    "gradient_order": lambda m: m.gradient(m.tensor([1., 4.]), edge_order=3),
    "gradient_spacing": lambda m: m.gradient(m.ones(2, 4), dim=(0, 1), spacing=[1.]),
    "select_scatter": lambda m: m.select_scatter(m.zeros(2, 3), m.ones(2), 0, 0),
    "slice_scatter": lambda m: m.slice_scatter(m.zeros(4, 6), m.ones(4, 3), 1, 0, 6, 3),
    "diagonal_scatter": lambda m: m.diagonal_scatter(m.zeros(3, 3), m.ones(2)),
    "index_reduce_sum": lambda m: m.index_reduce(m.ones(2, 3), 1, m.tensor([0, 2]),
                                                 m.ones(2, 2), "sum"),
    "index_reduce_count": lambda m: m.index_reduce(m.ones(2, 3), 1, m.tensor([0, 2, 1]),
                                                   m.ones(2, 2), "amin"),
    "index_reduce_index": lambda m: m.index_reduce(m.ones(2, 3), 1, m.tensor([0., 2]),
                                                   m.ones(2, 2), "amin"),
    "index_reduce_dtypes": lambda m: m.index_reduce(m.ones(2, 3), 1, m.tensor([0, 2]),
                                                    m.ones(2, 2, dtype=m.int64), "amin"),
    "histogramdd_int": lambda m: m.histogramdd(m.ones(3, 2, dtype=m.int64), 2),
    "histogramdd_bins": lambda m: m.histogramdd(m.ones(3, 2), [2, 3, 4]),
    "unravel_float": lambda m: m.unravel_index(m.tensor([1.]), (2, 3)),
    "unravel_negative": lambda m: m.unravel_index(m.tensor([1]), (2, -3)),
    "imag": lambda m: m.imag(m.ones(2)),
    "imag_attribute": lambda m: m.ones(2).imag,
    "range_step": lambda m: m.range(0, 1, 0),
    "range_sign": lambda m: m.range(4, 1),
    "asarray_alias": lambda m: m.asarray(m.ones(2), dtype=m.int64, copy=False),
    "frombuffer_multiple": lambda m: m.frombuffer(bytearray(7), dtype=m.int32),
    "frombuffer_empty": lambda m: m.frombuffer(bytearray(0), dtype=m.int32),
    "frombuffer_count": lambda m: m.frombuffer(bytearray(8), dtype=m.int32, count=3),
    "frombuffer_offset": lambda m: m.frombuffer(bytearray(8), dtype=m.int32, offset=9),
    "window_negative": lambda m: m.hann_window(-1),
    "empty_strided": lambda m: m.empty_strided((2, 3), (3,)),
    "fill_diagonal_1d": lambda m: m.zeros(3).fill_diagonal_(1),
    "fill_diagonal_unequal": lambda m: m.zeros(2, 3, 4).fill_diagonal_(1),
    "new_float": lambda m: m.ones(2).new(2.5),
    "apply_requires_grad": lambda m: m.ones(3, requires_grad=True).apply_(lambda v: v),
    "map_dtype": lambda m: m.ones(3).map_(m.arange(3), lambda a, b: a + b),
    "resize_requires_grad": lambda m: m.ones(2, requires_grad=True).resize_(3),
    "dropout_p": lambda m: m.dropout(m.ones(4), 1.5, True),
    "feature_dropout_1d": lambda m: m.feature_dropout(m.ones(4), 0.5, True),
    "is_floating_point": lambda m: m.is_floating_point(1.0),
    "set_num_threads_zero": lambda m: m.set_num_threads(0),
    "set_num_threads_float": lambda m: m.set_num_threads(1.5),
    "set_num_threads_bool": lambda m: m.set_num_threads(True),
    "set_num_interop_threads": lambda m: m.set_num_interop_threads(0),
    "debug_mode_int": lambda m: m.set_deterministic_debug_mode(5),
    "debug_mode_str": lambda m: m.set_deterministic_debug_mode("x"),
    "debug_mode_type": lambda m: m.set_deterministic_debug_mode(1.5),
    "deterministic_mode": lambda m: m.use_deterministic_algorithms("x"),
    "deterministic_warn_only": lambda m: m.use_deterministic_algorithms(True, warn_only=1),
    "warn_always": lambda m: m.set_warn_always(1),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_pytorch(name):
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as theirs:
            ERRORS[name](torch)
        with pytest.raises(Exception) as ours:
            ERRORS[name](gc)
    assert type(ours.value) is type(theirs.value), (ours.value, theirs.value)
    expected = str(theirs.value).split(" (Triggered internally")[0]
    expected = expected.split("TensorOptions(")[0]  # (C++'s spelling of the options)
    assert str(ours.value).startswith(expected.replace("torch.", "torch.")), \
        (str(ours.value), expected)


def test_errors_that_name_their_dtype_say_it_as_pytorch_does():
    with pytest.raises(RuntimeError, match="hann_window expects floating point dtypes"):
        gc.hann_window(3, dtype=gc.int64)


# ---- warnings PyTorch gives ----------
@pytest.mark.parametrize("call", [
    lambda m: m.range(1, 3), lambda m: m.chain_matmul(m.ones(2, 2)),
    lambda m: m.frobenius_norm(m.ones(2), 0),
    lambda m: m.index_reduce(m.ones(2), 0, m.tensor([0]), m.ones(1), "prod"),
])
def test_deprecated_and_beta_functions_warn_as_pytorch(call):
    with pytest.warns(UserWarning):  # (PyTorch warns once a process: not checked here)
        call(gc)


# ---- gradients, against PyTorch's ----------
GRADS = {
    "tensordot": (lambda m, a, b: m.tensordot(a, b, ([0, 2], [2, 0])), [(2, 3, 4), (4, 5, 2)]),
    "dist_inf": (lambda m, a, b: m.dist(a, b, float("inf")), [(3, 4), (4,)]),
    "dist_p1": (lambda m, a, b: a.dist(b, 1), [(3, 4), (3, 1)]),
    "renorm": (lambda m, x: m.renorm(x, 2, 1, 1.0), [(3, 4, 2)]),
    "fill_value": (lambda m, x, v: m.fill(x, v.sum()) * x, [(3, 2), (2,)]),
    "trapezoid_x": (lambda m, y, x: m.trapezoid(y, x, dim=0), [(4, 3), (4, 3)]),
    "cumulative_trapezoid": (lambda m, y: m.cumulative_trapezoid(y, dx=0.3, dim=0), [(4, 3)]),
    "gradient": (lambda m, y: m.gradient(y, spacing=0.7, edge_order=2)[1], [(3, 5)]),
    "select_scatter": (lambda m, a, b: m.select_scatter(a, b, 1, -1), [(3, 4), (3,)]),
    "slice_scatter": (lambda m, a, b: m.slice_scatter(a, b, 0, 1, None, 2), [(5, 2), (2, 2)]),
    "diagonal_scatter": (lambda m, a, b: m.diagonal_scatter(a, b, -1, 1, 2), [(2, 3, 3), (2, 2)]),
    "index_reduce_amin": (lambda m, a, b: a.index_reduce(0, m.tensor([1, 1, 0]), b, "amin"),
                          [(3, 2), (3, 2)]),
    "index_reduce_mean": (lambda m, a, b: m.index_reduce(a, 1, m.tensor([2, 2]), b, "mean"),
                          [(2, 3), (2, 2)]),
    "rsub": (lambda m, a, b: m.rsub(a, b, alpha=-2), [(3, 1), (4,)]),
    "embedding": (lambda m, w: m.embedding(w, m.tensor([[0, 2], [2, 2]]), 2), [(3, 2)]),
    "fill_diagonal_": (lambda m, x: (x * 1).fill_diagonal_(3.0) * x, [(3, 3)]),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_match_pytorch(name):
    import torch

    fn, shapes = GRADS[name]
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal(s) for s in shapes]
    ours = [gc.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, ref = fn(gc, *ours), fn(torch, *theirs)
    np.testing.assert_allclose(host(out.detach()), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    u = rng.standard_normal(tuple(ref.shape))
    out.backward(gc.tensor(u))
    ref.backward(torch.tensor(u))
    for a, b in zip(ours, theirs):
        if b.grad is None:
            assert a.grad is None or not np.any(host(a.grad))
        else:
            np.testing.assert_allclose(host(a.grad), b.grad.numpy(), rtol=1e-9, atol=1e-12,
                                       err_msg=name)


# ---- printing ----------
@pytest.fixture
def printoptions():
    import torch

    yield
    gc.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


@pytest.mark.parametrize("options", [
    dict(precision=2), dict(precision=6), dict(threshold=5), dict(edgeitems=1, threshold=5),
    dict(linewidth=30), dict(sci_mode=True), dict(sci_mode=False), dict(profile="short"),
    dict(profile="full"), dict(profile="short", precision=5),
])
def test_set_printoptions_prints_as_pytorch(options, printoptions):
    import torch

    gc.set_printoptions(**options)
    torch.set_printoptions(**options)
    for data in ([1.123456789, 2.5, -3.25], [[1e-5, 1.0], [2.0, 3.0]], list(range(12)),
                 [[0.5 * i + j for i in range(9)] for j in range(8)], [1e9, 1.0],
                 np.linspace(0, 1, 1200).tolist()):
        ours = repr(gc.tensor(data))
        theirs = repr(torch.tensor(data))
        assert ours == theirs, (options, ours, theirs)


def test_set_printoptions_keeps_what_it_is_not_given(printoptions):
    gc.set_printoptions(precision=2)
    gc.set_printoptions(threshold=5)
    assert repr(gc.tensor([1.23456])) == "tensor([1.23])"
    assert repr(gc.arange(10)) == "tensor([0, 1, 2,  ..., 7, 8, 9])"
    gc.set_printoptions(profile="default")
    assert repr(gc.tensor([1.23456])) == "tensor([1.2346])"


# ---- process-wide settings ----------
@pytest.fixture
def settings_restored():
    from gradcore import _settings

    saved = (dict(_settings._threads), dict(_settings._deterministic), dict(_settings._matmul),
             dict(_settings._warn))
    yield _settings
    for table, old in zip((_settings._threads, _settings._deterministic, _settings._matmul,
                           _settings._warn), saved):
        table.clear()
        table.update(old)


def test_threads_are_recorded_and_interop_set_once(settings_restored):
    assert gc.get_num_threads() >= 1 and gc.get_num_interop_threads() >= 1
    gc.set_num_threads(3)
    assert gc.get_num_threads() == 3
    settings_restored._threads["interop_set"] = False
    gc.set_num_interop_threads(2)
    assert gc.get_num_interop_threads() == 2
    with pytest.raises(RuntimeError, match="cannot set number of interop threads"):
        gc.set_num_interop_threads(4)


def test_deterministic_switches(settings_restored):
    import torch

    try:
        for m in (gc, torch):
            m.use_deterministic_algorithms(True, warn_only=True)
            assert (m.are_deterministic_algorithms_enabled(),
                    m.is_deterministic_algorithms_warn_only_enabled(),
                    m.get_deterministic_debug_mode()) == (True, True, 1)
            m.set_deterministic_debug_mode("error")
            assert (m.are_deterministic_algorithms_enabled(),
                    m.is_deterministic_algorithms_warn_only_enabled(),
                    m.get_deterministic_debug_mode()) == (True, False, 2)
            m.set_deterministic_debug_mode(0)
            assert not m.are_deterministic_algorithms_enabled()
            assert m.get_deterministic_debug_mode() == 0
    finally:
        torch.use_deterministic_algorithms(False)


def test_matmul_precision_and_warn_always(settings_restored):
    assert gc.get_float32_matmul_precision() == "highest"
    gc.set_float32_matmul_precision("medium")
    assert gc.get_float32_matmul_precision() == "medium"
    with pytest.warns(UserWarning, match="is not one of 'highest', 'high', or 'medium'"):
        gc.set_float32_matmul_precision("fast")
    assert gc.get_float32_matmul_precision() == "medium"
    assert gc.is_warn_always_enabled() is False
    gc.set_warn_always(True)
    assert gc.is_warn_always_enabled() is True


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (0 / 0, on purpose)
def test_set_anomaly_enabled_is_detect_anomaly_without_a_block():
    x = gc.tensor([0.0], requires_grad=True)
    try:
        gc.set_anomaly_enabled(True)
        assert gc.is_anomaly_enabled() and gc.autograd.is_anomaly_enabled()
        with pytest.raises(RuntimeError, match="returned nan"):
            (x / x).sum().backward()
    finally:
        gc.set_anomaly_enabled(False)
    assert not gc.is_anomaly_enabled()
    (x / x).sum().backward()  # off again: NaN passes silently


# ---- Tensor methods beyond values ----------
def test_pin_memory_as_pytorch_without_cuda():
    if gc.cuda.is_available():
        t = gc.ones(2)
        p = t.pin_memory()
        assert p is not t and not p.is_pinned() and p.tolist() == [1.0, 1.0]
    else:
        with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
            gc.ones(2).pin_memory()
    assert gc.ones(2).is_pinned() is False


def test_resize_keeps_data_when_shrinking_and_set_shares_memory():
    t = gc.arange(6.)
    t.resize_(2, 2)
    assert t.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    grown = gc.arange(3.).resize_(5)
    assert grown.shape == (5,) and grown[:3].tolist() == [0.0, 1.0, 2.0]
    src = gc.arange(4.)
    t.set_(src)
    src[0] = 9.0
    assert t.tolist() == [9.0, 1.0, 2.0, 3.0]


def test_new_from_a_tensor_shares_its_memory_and_as_subclass_keeps_the_graph():
    x = gc.ones(3)
    y = gc.zeros(1).new(x)
    y[0] = 5.0
    assert x[0].item() == 5.0

    class Sub(gc.Tensor):
        pass

    a = gc.ones(2, requires_grad=True)
    s = (a * 2).as_subclass(Sub)
    assert type(s) is Sub and s.grad_fn is not None
    s.sum().backward()
    assert a.grad.tolist() == [2.0, 2.0]
    with pytest.raises(TypeError):
        a.as_subclass(int)


def test_real_is_the_tensor_itself():
    import torch

    x, t = gc.ones(2), torch.ones(2)
    assert (gc.real(x) is x, x.real is x) == (torch.real(t) is t, t.real is t)


def test_record_stream_does_nothing_and_share_memory_returns_self():
    x = gc.ones(2)
    assert x.share_memory_() is x and x.is_shared()
    assert x.record_stream(None) is None


# ---- the in-place function forms ----------
def test_the_top_level_in_place_functions_are_pytorchs_set():
    import torch

    theirs = {n for n in dir(torch) if n.endswith("_") and not n.startswith("_")}
    ours = {n for n in dir(gc) if n.endswith("_") and not n.startswith("_") and
            not isinstance(getattr(gc, n), gc.dtype)}  # (gc.bool_ is gc.bool)
    assert ours <= theirs, ours - theirs
    # what gradcore leaves out: no such op (sparse, conjugates, strided in place,
    # embedding_renorm_)
    assert theirs - ours == {"as_strided_", "conj_physical_", "embedding_renorm_",
                             "resize_as_sparse_"}
    x = gc.tensor([-1.0, 2.0])
    assert gc.relu_(x) is x and x.tolist() == [0.0, 2.0]


# ---- dropout at the top level: masks from gradcore's generator ----------
@pytest.mark.parametrize("inplace", [False, True])
def test_dropout_family_structure(inplace):
    gc.manual_seed(0)
    x = gc.ones(64, 32, 3, dtype=gc.float64)
    name = "_" if inplace else ""
    out = getattr(gc, "dropout" + name)(x.clone(), 0.25, True)
    values = set(np.unique(host(out)).tolist())
    assert values <= {0.0, 1 / 0.75} and 0.0 in values
    out = getattr(gc, "feature_dropout" + name)(x.clone(), 0.5, True)
    per_channel = host(out).reshape(64, 32, 3)
    assert np.all(per_channel == per_channel[..., :1])  # whole channels kept or dropped
    out = getattr(gc, "alpha_dropout" + name)(x.clone(), 0.5, True)
    assert set(np.round(np.unique(host(out)), 4).tolist()) <= {1.6656, -0.7792}
    out = getattr(gc, "feature_alpha_dropout" + name)(x.clone(), 0.5, True)
    per_channel = host(out)
    assert np.all(per_channel == per_channel[..., :1])


def test_alpha_dropout_keeps_zero_mean_and_unit_variance():
    gc.manual_seed(1)
    x = gc.randn(200_000, dtype=gc.float64)
    out = host(gc.alpha_dropout(x, 0.3, True))
    assert abs(out.mean()) < 0.01 and abs(out.std() - 1) < 0.01


def test_dropout_is_differentiable():
    gc.manual_seed(2)
    x = gc.ones(100, requires_grad=True)
    out = gc.dropout(x, 0.5, True)
    out.sum().backward()
    np.testing.assert_array_equal(host(x.grad), host(out.detach()))
