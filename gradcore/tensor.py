"""The user-facing :class:`Tensor`: an array, and where its gradient comes from.

The class is defined with its state, conversions and autograd bookkeeping in
:mod:`gradcore.autograd.tensor_base`, the engine's layer, so that the engine and the
ops can hold tensors without importing this module; its name is
``gradcore.tensor.Tensor``. This module, above the ops, makes it the tensor users
use: every operation of :mod:`gradcore.ops` is bound as a method (``add``, ``+``,
``__getitem__``, ``to``, ``add_``, ...), and so are ``backward`` and ``size``, which
need the engine's user-facing entry points and the ops' argument parsing.
"""

from __future__ import annotations

from . import ops as _ops
from .autograd.functional import _root_grads, backward_to_inputs
from .autograd.graph import run_backward
from .autograd.tensor_base import Parameter, Tensor, fresh_history
from .ops._core import int_arg, normalize_dim

__all__ = ["Tensor", "Parameter"]


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(self)/d(leaf) into every leaf's ``.grad``.

    ``gradient`` is required unless the tensor has one element.  The graph's saved
    values are freed afterwards unless ``retain_graph=True``.
    """
    if retain_graph is None:
        retain_graph = create_graph
    (g,) = _root_grads([self], [gradient], create_graph)
    fn = self.grad_fn if self._base is None else fresh_history(self)
    node = fn if fn is not None else self._accumulator()
    if inputs is not None:
        backward_to_inputs(self, g, inputs, retain_graph, create_graph)
        return
    run_backward([(node, self._out_nr)], [g], retain_graph=retain_graph,
                 create_graph=create_graph)


def size(self, dim=None):
    if dim is None:
        return self._data.shape
    shape = self._data.shape
    if type(dim) is int:
        try:
            return shape[dim]  # (negative dims wrap as PyTorch's do)
        except IndexError:
            pass
    if not shape:
        raise IndexError(f"Dimension specified as {int_arg(dim, 'size')} but tensor has "
                         "no dimensions")
    return shape[normalize_dim(dim, len(shape), "size")]


for _fn in (backward, size):
    _fn.__qualname__ = f"Tensor.{_fn.__name__}"
    setattr(Tensor, _fn.__name__, _fn)
del _fn

# Methods: every operation lives in gradcore.ops; see ops/__init__.py for the binding.
_ops.bind_methods(Tensor)
