"""Matrix products: matmul (1-D, 2-D, batched N-D with broadcast batch dims), mm, bmm,
dot, outer."""

from __future__ import annotations

import numpy as np

from ..autograd.grad_mode import autocast_blocks as _autocast_blocks
from ..backend import math_of
from . import _autocast
from ._core import (
    TENSOR_TYPES,
    Node,
    Tensor,
    as_tensor,
    check_same_device,
    make_view,
    mode,
    record,
    wrap,
)
from ._export import export
from .pointwise import _float

_ndarray = np.ndarray


class MatmulBackward(Node):
    """``out = a @ b``; 1-D operands are treated as a row (a) or a column (b)."""

    fresh_grads = True

    def apply(self, F, g):
        a, b = self.unpack(F)
        a1d, b1d = a.ndim == 1, b.ndim == 1
        if a1d and b1d:  # dot product
            return (g * b if self.needs(0) else None), (g * a if self.needs(1) else None)
        a2 = a.reshape((1,) + a.shape) if a1d else a
        b2 = b.reshape(b.shape + (1,)) if b1d else b
        if a1d:
            g = F.expand_dims(g, -2)
        if b1d:
            g = F.expand_dims(g, -1)
        ga = gb = None
        if self.needs(0):
            ga = g @ b2.swapaxes(-1, -2)
            if a1d:
                ga = ga.reshape(ga.shape[:-2] + ga.shape[-1:])
        if self.needs(1):
            gb = a2.swapaxes(-1, -2) @ g
            if b1d:
                gb = gb.reshape(gb.shape[:-1])
        return ga, gb

    def name(self):
        return self._name


def _names(a, b):
    if a.ndim == 2 and b.ndim == 2:
        return "MmBackward0"
    if a.ndim == 1 and b.ndim == 1:
        return "DotBackward0"
    if a.ndim == 2 and b.ndim == 1:
        return "MvBackward0"
    if a.ndim == 1 and b.ndim == 2:
        return "SqueezeBackward4"  # PyTorch: unsqueeze(0), mm, squeeze(0)
    # batched: PyTorch's matmul ends in a view (bmm() itself names BmmBackward0)
    return "UnsafeViewBackward0"


@export(torch=True, method=True)
def matmul(a, b):
    """Matrix product with NumPy's/PyTorch's rules for 1-D and batched operands."""
    if _autocast_blocks[0]:  # inside gc.autocast: the block's dtype
        a, b = _autocast.lower(a, b)
    if type(a) in TENSOR_TYPES and type(b) in TENSOR_TYPES:
        ad, bd = a._data, b._data
        # fast path: two host matrices of one float dtype with matching inner sizes
        if ad.ndim == 2 and bd.ndim == 2 and type(ad) is _ndarray and type(bd) is _ndarray \
                and ad.dtype is bd.dtype and ad.shape[1] == bd.shape[0] and \
                ad.dtype.kind == "f":
            out = ad @ bd
            if not (mode.enabled and (a._rg or b._rg)):
                return wrap(out)
            t = record(out, MatmulBackward, a, b)
            node = t.grad_fn
            node._name = "MmBackward0"
            node.saved = (a, b)
            node.versions = (a._version, b._version)
            return t
    a = a if isinstance(a, Tensor) else as_tensor(a, b)
    b = b if isinstance(b, Tensor) else as_tensor(b, a)
    ad, bd = a._data, b._data
    check_same_device(ad, bd, "matmul")
    if ad.ndim == 0 or bd.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{ad.ndim}D and {bd.ndim}D")
    if ad.dtype.kind == "b" and bd.dtype.kind == "b":  # PyTorch has no boolean products
        raise NotImplementedError(f'"matmul" not implemented for \'Bool\' (matmul of shapes '
                                  f"{tuple(ad.shape)} and {tuple(bd.shape)})")
    if ad.dtype != bd.dtype:
        if ad.dtype.kind == "f" or bd.dtype.kind == "f" or "b" in (ad.dtype.kind, bd.dtype.kind):
            raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                               f"{a.dtype!r} != {b.dtype!r} (matmul of shapes "
                               f"{tuple(ad.shape)} and {tuple(bd.shape)})")
    k_a = ad.shape[-1]
    k_b = bd.shape[-2] if bd.ndim > 1 else bd.shape[0]
    if k_a != k_b and ad.ndim == 2 and bd.ndim == 2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({ad.shape[0]}x{k_a} "
                           f"and {k_b}x{bd.shape[1]}) (matmul of shapes {tuple(ad.shape)} "
                           f"and {tuple(bd.shape)})")
    if k_a != k_b:
        raise RuntimeError(f"matmul: shapes {tuple(ad.shape)} and {tuple(bd.shape)} cannot be "
                           f"multiplied ({k_a} != {k_b})")
    try:
        out = math_of(ad).matmul(ad, bd)
    except ValueError as exc:
        raise RuntimeError(f"matmul: shapes {tuple(ad.shape)} and {tuple(bd.shape)} cannot be "
                           f"multiplied: batch dimensions do not broadcast ({exc})") from None
    if not (mode.enabled and (a._rg or b._rg)):
        return wrap(out)
    t = record(out, MatmulBackward, a, b)
    node = t.grad_fn
    node._name = _names(ad, bd)
    node.save(a, b)
    if ad.ndim > 2 or bd.ndim > 2:
        node.shapes = (ad.shape, bd.shape)  # batch dimensions may have broadcast
    return t


@export(torch=True, method=True)
def mm(a, b):
    """2-D matrix product."""
    if a.ndim != 2 or b.ndim != 2:
        raise RuntimeError(f"mm: expected 2-D tensors, got shapes {tuple(a.shape)} and "
                           f"{tuple(b.shape)}")
    return matmul(a, b)


@export(torch=True, method=True)
def bmm(a, b):
    """Batched matrix product of two 3-D tensors with equal batch size."""
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0]:
        raise RuntimeError(f"bmm: expected 3-D tensors with the same batch size, got shapes "
                           f"{tuple(a.shape)} and {tuple(b.shape)}")
    out = matmul(a, b)
    if out.grad_fn is not None:
        out.grad_fn._name = "BmmBackward0"
    return out


@export(torch=True, method=True)
def dot(a, b):
    """Inner product of two 1-D tensors."""
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors "
                           f"(shapes {tuple(a.shape)} and {tuple(b.shape)})")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                           f"[{b.shape[0]}] to have the same number of elements, but got "
                           f"{a.shape[0]} and {b.shape[0]} elements respectively")
    return matmul(a, b)


@export(torch=True, method=True)
def outer(a, b):
    """Outer product of two 1-D tensors."""
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"outer: expected 1-D tensors, got shapes {tuple(a.shape)} and "
                           f"{tuple(b.shape)}")
    return a.reshape(-1, 1) * b.reshape(1, -1)


@export(torch=True, method=True)
def mv(a, b):
    return matmul(a, b)


__all__ = ["matmul", "mm", "bmm", "dot", "outer", "mv", "diag", "diagonal", "_float"]


# ---- diag / diagonal ----------
def _diagonal_positions(m, shape, offset):
    """Row and column indices of diagonal ``offset`` of a matrix of ``shape``."""
    rows, cols = shape
    n = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    i = m.arange(n)
    return (i, i + offset) if offset >= 0 else (i - offset, i)


class DiagEmbedBackward0(Node):  # vector -> matrix
    fresh_grads = True

    def apply(self, F, g):
        return (g[self.index],)


class DiagonalBackward0(Node):  # matrix -> vector
    fresh_grads = True

    def apply(self, F, g):
        return (F.place_into_zeros(g, self.index, self.in_shape),)


@export(torch=True, method=True)
def diagonal(x, offset=0):
    """The ``offset``-th diagonal of a matrix, as a vector: a view, as PyTorch's
    (``A.diagonal().add_(eps)`` changes ``A``)."""
    return _diagonal(x, offset, True)


def _diagonal(x, offset, as_view):
    xd = x._data
    if xd.ndim != 2:
        raise RuntimeError(f"diagonal: expected a 2-D tensor, got shape {tuple(xd.shape)}")
    m = math_of(xd)
    index = _diagonal_positions(m, xd.shape, offset)
    if as_view:
        out = xd.diagonal(offset)
        if type(out) is np.ndarray and not out.flags.writeable and xd.flags.writeable:
            out.flags.writeable = True  # NumPy's is read-only by policy only; CuPy's not
    else:
        out = xd[index]
    if not (mode.enabled and x._rg):
        t = wrap(out)
    else:
        t = record(out, DiagonalBackward0, x)
        node = t.grad_fn
        node.index, node.in_shape = index, xd.shape
    return make_view(t, x) if as_view else t


@export(torch=True, method=True)
def diag(x, diagonal=0):
    """A square matrix with vector ``x`` on diagonal ``diagonal``; or, for a matrix,
    that diagonal as a vector (as ``torch.diag``)."""
    xd = x._data
    if xd.ndim == 2:
        return _diagonal(x, diagonal, False)  # torch.diag copies
    if xd.ndim != 1:
        raise RuntimeError(f"diag: expected a 1-D or 2-D tensor, got shape {tuple(xd.shape)}")
    m = math_of(xd)
    size = xd.shape[0] + abs(diagonal)
    index = _diagonal_positions(m, (size, size), diagonal)
    out = m.zeros((size, size), dtype=xd.dtype)
    out[index] = xd
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record(out, DiagEmbedBackward0, x)
    t.grad_fn.index = index
    return t
