"""``gradcore.autograd.forward_ad``, PyTorch's ``torch.autograd.forward_ad``: forward-mode
AD with dual tensors.

Inside a :class:`dual_level`, :func:`make_dual` pairs a tensor with a tangent; the
operations run on the dual tensor as usual, and :func:`unpack_dual` gives any result's
value and its tangent, the Jacobian-vector product ``J @ tangent`` (summed over the dual
inputs the result depends on).

>>> import gradcore as gc
>>> import gradcore.autograd.forward_ad as fwAD
>>> with fwAD.dual_level():
...     x = fwAD.make_dual(gc.tensor([1., 2.]), gc.tensor([1., 0.]))
...     fwAD.unpack_dual(x ** 2).tangent
tensor([2., 0.])

gradcore has no forward-mode formulas: the operations on a dual tensor are recorded as
for ``backward()``, and :func:`unpack_dual` computes the tangent from that graph by the
double-vjp trick (the vector-Jacobian product with a cotangent ``u`` that requires grad,
then the gradient of that with respect to ``u`` along the tangents), as
:func:`gradcore.func.jvp` does: the values are PyTorch's, each ``unpack_dual`` costs two
backward passes. A dual tensor made from a tensor that does not require grad records
its operations all the same, but its results report ``requires_grad`` (and
``is_leaf``, ``backward()``) as PyTorch's do; their ``grad_fn`` shows the recorded node.
Operations run under ``no_grad`` are not recorded, so their results carry no tangent
(PyTorch's do): :func:`make_dual` refuses to run there.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, NamedTuple

from . import tensor_base as _tb
from .function import Function
from .functional import grad as _grad
from .grad_mode import enable_grad
from .grad_mode import state as _mode
from .tensor_base import Tensor, _wrap, fresh_history

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "dual_level"]


class _Level:
    """The open forward AD level: the tensors the tangents are taken with respect to
    (the dual tensors, or for a tensor that does not require grad the hidden leaf under
    it) and their tangents."""

    def __init__(self):
        self.inputs: list[Tensor] = []
        self.tangents: list[Tensor] = []


_current: list = [None]  # the open level (PyTorch has one, for the whole process)
_lock = threading.Lock()


class _Internal(threading.local):
    depth = 0  # inside unpack_dual's passes: tensors report requires_grad as recorded


_internal = _Internal()


def _visible_requires_grad(t: Tensor) -> bool:
    """Whether ``t`` (recorded: ``t._rg``) requires grad as PyTorch reports it: whether
    its graph reaches a leaf that requires grad other than the hidden leaves under dual
    tensors. Installed as ``tensor_base.fw_hidden[0]`` once a dual tensor exists; the
    answer is kept on the node."""
    if _internal.depth:
        return True
    fn = t.grad_fn if t._base is None else fresh_history(t)
    if fn is None:
        return True  # a user's leaf (the hidden leaves are never handed out)
    known = getattr(fn, "_fw_real", None)
    if known is not None:
        return known
    found, stack, seen = False, [fn], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        known = getattr(node, "_fw_real", None)
        if known is not None:
            if known:
                found = True
                break
            continue
        if node.is_sink:
            if not getattr(node, "_fw_only", False):
                found = True
                break
            continue
        stack.extend(n for n, _ in node.next_functions if n is not None)
    fn._fw_real = found
    return found


def _hidden_leaf(data) -> Tensor:
    """A leaf that requires grad for the engine, ``data`` without a copy, whose
    gradients nobody sees: the results that reach only such leaves do not require grad
    for the user."""
    leaf = _wrap(data)
    leaf._rg = True
    leaf._accumulator()._fw_only = True
    _tb.fw_hidden[0] = _visible_requires_grad
    return leaf


class _MakeDual(Function):
    """The dual tensor of a tensor that does not require grad: an alias of its memory
    (so in-place operations on it are recorded) over the hidden leaf."""

    @staticmethod
    def forward(ctx, leaf):
        return _wrap(leaf._data)

    @staticmethod
    def backward(ctx, g):
        return g


def enter_dual_level() -> int:
    """Open a forward AD level and return its index (0: PyTorch supports one level at a
    time, and so does gradcore). :class:`dual_level` opens and closes one around a
    block."""
    with _lock:
        if _current[0] is not None:
            raise RuntimeError("Nested forward mode AD is not supported at the moment")
        _current[0] = _Level()
    return 0


def exit_dual_level(*, level=None) -> None:
    """Close the open forward AD level: the tangents of its dual tensors are dropped
    (``unpack_dual`` then gives ``None``).

    Args:
        level: the level to close (the open one when None).
    """
    current = 0 if _current[0] is not None else -1
    if level is None:
        level = current
    if level != current:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one "
                           "that was created. This is not supported.")
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    with _lock:
        lvl, _current[0] = _current[0], None
    lvl.inputs.clear()
    lvl.tangents.clear()


def _level(level, api):
    """The open level that ``level`` names (None: the open one)."""
    lvl = _current[0]
    if level is None or (lvl is not None and level == 0):
        return lvl
    if lvl is None:
        raise RuntimeError("Trying to access a forward AD level with an invalid index. This "
                           "index was either not created or is already deleted.")
    raise RuntimeError(f"Invalid level given to {api}")


def _depends(t: Tensor, lvl: _Level) -> bool:
    """Whether ``t`` is a dual tensor of ``lvl`` or its graph reaches one."""
    own = t.__dict__.get("_fw_tangent")
    if own is not None and own[0] is lvl:
        return True
    if not t._rg or not lvl.inputs:
        return False
    targets = set()
    for x in lvl.inputs:
        targets.add(id(x.grad_fn if x.grad_fn is not None else x._accumulator()))
    fn = t.grad_fn if t._base is None else fresh_history(t)
    stack, seen = [fn if fn is not None else t._accumulator()], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if id(node) in targets:
            return True
        if not node.is_sink:
            stack.extend(n for n, _ in node.next_functions if n is not None)
    return False


def make_dual(tensor, tangent, *, level=None) -> Tensor:
    """A dual tensor: an alias of ``tensor`` (same memory, same value) carrying
    ``tangent`` at the open level. The results of operations on it carry tangents too,
    which :func:`unpack_dual` reads.

    As in PyTorch, the dual tensor is backward differentiable: made from a tensor that
    requires grad, it is a view of it, and gradients reach ``tensor``.

    Args:
        tensor: the primal, a floating point tensor.
        tangent: its tangent, a floating point tensor of the same shape (kept as it is,
            not copied).
        level: the level (the open one when None).

    >>> import gradcore as gc
    >>> import gradcore.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     d = fwAD.make_dual(gc.tensor([0., 1.]), gc.ones(2))
    ...     fwAD.unpack_dual(d.exp().sum()).tangent
    tensor(3.7183)
    """
    if level is None and _current[0] is None or (level is not None and level < 0):
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level "
                           "exists, make sure to enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    lvl = _level(level, "_make_dual")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than "
                           "that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    if tangent.device != tensor.device:
        raise RuntimeError("Trying to set a forward gradient that is on a different device "
                           "than the original Tensor, this is not supported. Tensor is on "
                           f"{tensor.device} while the given forward gradient is on "
                           f"{tangent.device}.")
    if _depends(tensor, lvl):
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward "
                           "gradient at the same level 0 is not supported.")
    if not _mode.enabled:
        raise NotImplementedError(
            "gradcore computes forward AD tangents from the recorded graph, which no_grad "
            "turns off: make dual tensors and compute with them outside no_grad (the "
            "results require grad only where PyTorch's would)")
    with enable_grad():
        if tensor.requires_grad:
            dual = tensor.view_as(tensor)  # gradients reach tensor, as PyTorch's view
            wrt = dual
        else:
            wrt = _hidden_leaf(tensor._data)
            dual = _MakeDual.apply(wrt)
    dual._fw_tangent = (lvl, tangent, dual.grad_fn)  # (until an in-place op changes it)
    lvl.inputs.append(wrt)
    lvl.tangents.append(tangent)
    return dual


class UnpackedDualTensor(NamedTuple):
    """What :func:`unpack_dual` returns: ``(primal, tangent)``."""

    primal: Tensor
    tangent: Tensor | None


def _tangent(y: Tensor, lvl: _Level):
    """``y``'s tangent: the sum of ``J_i @ t_i`` over the level's inputs that ``y``
    depends on (None when none), by the double-vjp trick."""
    own = y.__dict__.get("_fw_tangent")
    if own is not None and own[0] is lvl and own[2] is y.grad_fn:
        return own[1]
    if not lvl.inputs or not y._rg or y.grad_fn is None or not (
            y.is_floating_point() or y.is_complex()):
        return None
    create = _mode.enabled
    _internal.depth += 1
    try:
        with enable_grad():
            # the vector-Jacobian products with a cotangent that requires grad...
            u = _hidden_leaf(y.new_zeros(y.shape)._data)
            vjps = _grad([y], list(lvl.inputs), [u], retain_graph=True, create_graph=True,
                         allow_unused=True)
            used = [(v, t) for v, t in zip(vjps, lvl.tangents) if v is not None]
            if not used:
                return None
            # ... are linear in it: their gradient along the tangents is J @ t
            used = [(v, t if t.dtype == v.dtype else t.to(v.dtype)) for v, t in used
                    if v._rg]
            got = None
            if used:
                (got,) = _grad([v for v, _ in used], [u], [t for _, t in used],
                               retain_graph=True, create_graph=create, allow_unused=True)
            if got is None:
                got = y.new_zeros(y.shape)
    finally:
        _internal.depth -= 1
    if got._rg and not _visible_requires_grad(got):
        got = got.detach()
    return got


def unpack_dual(tensor, *, level=None) -> UnpackedDualTensor:
    """``tensor``'s value and tangent at the open level: ``UnpackedDualTensor(primal,
    tangent)``. ``tangent`` is None for a tensor that does not depend on a dual tensor of
    the level (and for every tensor once the level is closed); ``primal`` is a view of
    ``tensor`` (keeping its backward history where it requires grad).

    Args:
        tensor: a tensor computed from dual tensors (or any tensor).
        level: the level (the open one when None).

    >>> import gradcore as gc
    >>> import gradcore.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     d = fwAD.make_dual(gc.tensor(3.), gc.tensor(1.))
    ...     fwAD.unpack_dual(d * d)
    UnpackedDualTensor(primal=tensor(9.), tangent=tensor(6.))
    """
    if level is None and _current[0] is None or (level is not None and level < 0):
        return UnpackedDualTensor(tensor, None)
    if not isinstance(tensor, Tensor):
        raise TypeError(f"_unpack_dual(): argument 'dual' (position 1) must be Tensor, not "
                        f"{type(tensor).__name__}")
    lvl = _level(level, "_unpack_dual")
    tangent = _tangent(tensor, lvl)
    if tensor.requires_grad:
        with enable_grad():
            primal = tensor.view_as(tensor)
    else:
        primal = tensor.detach()
    return UnpackedDualTensor(primal, tangent)


class dual_level:
    """Context manager (and decorator) that opens a forward AD level for its block and
    closes it after (the tangents of the block's dual tensors are then dropped).
    ``with dual_level():`` gives the level's index, 0. Levels do not nest (as in
    PyTorch: for higher orders, :func:`gradcore.func.jvp` nests).

    >>> import gradcore as gc
    >>> import gradcore.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     out = fwAD.make_dual(gc.tensor(1.), gc.tensor(2.)) * 3
    ...     fwAD.unpack_dual(out).tangent
    tensor(6.)
    >>> fwAD.unpack_dual(out).tangent is None
    True
    """

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        exit_dual_level()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with dual_level():
                return fn(*args, **kwargs)
        return wrapper
