"""Ops say where they are public at their definition (``@export``, gradcore/ops/_export.py),
and gradcore, gradcore.ops and the Tensor methods are built from that table."""

import inspect

import numpy as np
import pytest

import gradcore as gc
from gradcore import ops
from gradcore.ops import _export
from gradcore.ops._export import FUNCTIONS, METHODS, OPS, export


def test_namespaces_hold_the_exported_objects():
    for name, fn in FUNCTIONS.items():
        assert getattr(ops, name) is fn
        assert getattr(gc, name) is fn or getattr(gc, name).__wrapped__ is fn, name
    for name, fn in METHODS.items():
        assert getattr(gc.Tensor, name) is fn, name
    for name, fn in OPS.items():
        assert getattr(ops, name) is fn, name


def test_aliases_are_one_function():
    assert gc.clip is gc.clamp and gc.Tensor.clip is gc.Tensor.clamp
    assert gc.Tensor.swapdims is gc.Tensor.transpose is gc.transpose.__wrapped__
    assert gc.divide is gc.div and gc.Tensor.true_divide is gc.div
    assert gc.true_divide is gc.div and gc.swapdims.__wrapped__ is gc.transpose.__wrapped__


def _decorators(fn):
    """The decorator lines of ``fn``'s source."""
    lines, _ = inspect.getsourcelines(fn)
    return [line for line in lines if line.startswith("@")]


def test_each_def_says_where_it_is_public():
    """`grep "def tanh"` finds the line that makes it gc.tanh and Tensor.tanh."""
    seen = set()
    for fn in list(FUNCTIONS.values()) + list(METHODS.values()) + list(OPS.values()):
        if not inspect.isfunction(fn) or fn.__code__.co_name != fn.__name__ or id(fn) in seen:
            continue  # (made by a factory: its assignment line says it)
        seen.add(id(fn))
        assert any(d.startswith("@export(") for d in _decorators(fn)), fn.__qualname__
    assert len(seen) > 60


def test_export_returns_the_function_itself():
    def probe(x):
        return x

    try:
        assert export(torch=("probe_a", "probe_b"), method=True)(probe) is probe
        assert FUNCTIONS["probe_a"] is FUNCTIONS["probe_b"] is METHODS["probe"] is probe
        assert OPS["probe_a"] is OPS["probe"] is probe
        assert export()(probe) is probe  # (ops only: no new gradcore or Tensor name)
    finally:
        for table in (FUNCTIONS, METHODS, OPS):
            for name in ("probe", "probe_a", "probe_b"):
                table.pop(name, None)


def test_export_refuses_a_name_taken_and_a_bad_target():
    with pytest.raises(ValueError, match="'tanh' is already"):
        export(torch="tanh")(lambda x: x)
    with pytest.raises(TypeError, match="takes True, a name or a tuple of names"):
        export(method=["x"])(lambda x: x)
    assert _export.FUNCTIONS["tanh"] is ops.pointwise.tanh


def test_dunders_stay_out_of_the_ops_namespace():
    assert not [n for n in OPS if n.startswith("__")]


def test_star_import_gives_all_public_names():
    namespace = {}
    exec("from gradcore import *", namespace)
    # (less the submodules imported later, gradcore.cli say, which become attributes)
    public = {n for n in dir(gc) if not n.startswith("_") and
              not (inspect.ismodule(getattr(gc, n)) and n not in gc.__all__)}
    assert set(gc.__all__) == public
    assert public <= set(namespace)
    assert namespace["tanh"] is gc.tanh and namespace["Tensor"] is gc.Tensor


def test_bitwise_logical_xor_mv_layer_norm_are_public_as_in_pytorch():
    """torch.bitwise_* (and the methods), torch.logical_xor, torch.mv, torch.layer_norm."""
    a, b = gc.tensor([1, 2, 12]), gc.tensor([3, 1, 10])
    np.testing.assert_array_equal(gc.bitwise_and(a, b).tolist(), [1, 0, 8])
    np.testing.assert_array_equal(a.bitwise_or(b).tolist(), [3, 3, 14])
    np.testing.assert_array_equal(gc.bitwise_xor(a, b).tolist(), [2, 3, 6])
    np.testing.assert_array_equal(a.bitwise_not().tolist(), [-2, -3, -13])
    np.testing.assert_array_equal(gc.logical_xor(a > 1, b > 1).tolist(), [True, True, False])
    np.testing.assert_array_equal(gc.mv(gc.ones(2, 3), gc.ones(3)).tolist(), [3.0, 3.0])
    x = gc.tensor([[1.0, 2.0, 4.0]])
    np.testing.assert_allclose(gc.layer_norm(x, (3,)).tolist(),
                               gc.nn.functional.layer_norm(x, (3,)).tolist())
