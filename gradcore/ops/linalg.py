"""Matrix products and matrix-shaped ops: matmul (1-D, 2-D, batched N-D with broadcast
batch dims), mm, bmm, dot, outer, einsum, cross, cdist; diag, diagonal, trace, tril, triu."""

from __future__ import annotations

import builtins
import string
import warnings
from collections import namedtuple

import numpy as np

from .. import dtypes
from ..autograd.grad_mode import autocast_blocks as _autocast_blocks
from ..autograd.grad_mode import no_grad
from ..autograd.graph import (
    _FREED,
    SavedTensorError,
    _hooks_on,
    _pack_output,
    _Packed,
    _raise_modified,
    differentiable,
)
from ..backend import device as _device
from ..backend import get_default_device, math_of, to_host
from . import _autocast
from ._core import (
    TENSOR_TYPES,
    Node,
    Tensor,
    as_tensor,
    check_same_device,
    int_arg,
    make_view,
    mode,
    normalize_dim,
    record,
    wrap,
)
from ._export import export
from .pointwise import _float, clamp, sqrt, where
from .reduce import norm
from .reduce import sum as _sum
from .shape import cat, unsqueeze

_ndarray = np.ndarray
_grad_mode = mode  # (under a name that linalg_qr's argument ``mode`` does not hide)


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
            ga = F.matmul(g, b2.swapaxes(-1, -2))
            if a1d:
                ga = ga.reshape(ga.shape[:-2] + ga.shape[-1:])
        if self.needs(1):
            gb = F.matmul(a2.swapaxes(-1, -2), g)
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


@export(torch=("mm", "spmm"), method=True)
def mm(a, b):
    """2-D matrix product (``spmm`` too: gradcore's tensors are all dense)."""
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


@export(torch=("outer", "ger"), method=("outer", "ger"))
def outer(a, b):
    """Outer product of two 1-D tensors (``ger`` is PyTorch's older name)."""
    for name, v in (("self", a), ("vec2", b)):
        if v.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {v.ndim}-D")
    return a.reshape(-1, 1) * b.reshape(1, -1)


@export(torch=True, method=True)
def mv(a, b):
    """Matrix-vector product: ``a`` of shape ``(n, m)`` times ``b`` of shape ``(m,)``."""
    return matmul(a, b)


__all__ = ["matmul", "mm", "bmm", "dot", "outer", "mv", "diag", "diagonal", "trace", "tril",
           "triu", "einsum", "cross", "cdist", "_float"]


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
def diagonal(input, offset=0, dim1=0, dim2=1):  # noqa: A002
    """The ``offset``-th diagonal of the matrices that dimensions ``dim1`` and ``dim2``
    span, as the last dimension: a view, as PyTorch's (``A.diagonal().add_(eps)``
    changes ``A``).

    >>> import gradcore as gc
    >>> gc.arange(6).reshape(2, 3).diagonal(1)
    tensor([1, 5])
    """
    xd = input._data
    d1 = normalize_dim(dim1, xd.ndim, "diagonal")
    d2 = normalize_dim(dim2, xd.ndim, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    offset = int_arg(offset, "diagonal", "offset")
    m = math_of(xd)
    out = xd.diagonal(offset, d1, d2)
    if type(out) is np.ndarray and not out.flags.writeable and xd.flags.writeable:
        out.flags.writeable = True  # NumPy's is read-only by policy only; CuPy's not
    if not (mode.enabled and input._rg):
        t = wrap(out)
    else:
        t = record(out, DiagonalBackward0, input)
        node = t.grad_fn
        node.index, node.in_shape = _diagonal_index(m, xd.shape, offset, d1, d2), xd.shape
    return make_view(t, input)


def _diagonal_index(m, shape, offset, d1, d2):
    """Where diagonal ``offset`` of dimensions ``d1``, ``d2`` lies in an array of
    ``shape``: one index array per dimension, broadcasting to the diagonal's shape (the
    other dimensions, then the diagonal)."""
    others = [k for k in range(len(shape)) if k not in (d1, d2)]
    rows, cols = _diagonal_positions(m, (shape[d1], shape[d2]), offset)
    index = [None] * len(shape)
    for j, k in enumerate(others):
        index[k] = m.arange(shape[k]).reshape((1,) * j + (-1,) + (1,) * (len(others) - j))
    index[d1] = rows.reshape((1,) * len(others) + (-1,))
    index[d2] = cols.reshape((1,) * len(others) + (-1,))
    return tuple(index)


def _diagonal(x, offset):
    """The diagonal of matrix ``x`` as a new vector (``torch.diag`` copies)."""
    xd = x._data
    if xd.ndim != 2:
        raise RuntimeError(f"diagonal: expected a 2-D tensor, got shape {tuple(xd.shape)}")
    index = _diagonal_positions(math_of(xd), xd.shape, offset)
    out = xd[index]
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record(out, DiagonalBackward0, x)
    node = t.grad_fn
    node.index, node.in_shape = index, xd.shape
    return t


@export(torch=True, method=True)
def trace(input):  # noqa: A002
    """The sum of the main diagonal of a matrix (integers sum to int64).

    >>> import gradcore as gc
    >>> gc.trace(gc.tensor([[1., 2.], [3., 4.]]))
    tensor(5.)
    """
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    if input._data.dtype.kind == "b":
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    return diagonal(input).sum()


@export(torch=True, method=True)
def diag(x, diagonal=0):
    """A square matrix with vector ``x`` on diagonal ``diagonal``; or, for a matrix,
    that diagonal as a vector (as ``torch.diag``)."""
    xd = x._data
    if xd.ndim == 2:
        return _diagonal(x, diagonal)
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



@export(torch=True, method=True)
def diag_embed(input, offset=0, dim1=-2, dim2=-1):  # noqa: A002
    """Matrices with the last dimension of ``input`` on their ``offset``-th diagonal, in
    the plane of the new dimensions ``dim1`` and ``dim2`` (zeros elsewhere).

    >>> import gradcore as gc
    >>> gc.diag_embed(gc.tensor([[1, 2]]))
    tensor([[[1, 0],
             [0, 2]]])
    """
    xd = input._data
    if not xd.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but "
                         f"got {dim1})")
    nd = xd.ndim + 1
    d1 = normalize_dim(dim1, nd, "diag_embed")
    d2 = normalize_dim(dim2, nd, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    offset = int_arg(offset, "diag_embed", "offset")
    lead = list(xd.shape[:-1])
    n = xd.shape[-1] + builtins.abs(offset)
    shape = []
    for k in range(nd):
        shape.append(n if k in (d1, d2) else lead.pop(0))
    m = math_of(xd)
    out = m.zeros(tuple(shape), dtype=xd.dtype)
    index = _diagonal_index(m, tuple(shape), offset, d1, d2)
    out[index] = xd
    if not (mode.enabled and input._rg):
        return wrap(out)
    t = record(out, DiagEmbedBackward0, input)
    t.grad_fn.index = index
    return t


@export(torch=True, method=True)
def diagflat(input, offset=0):  # noqa: A002
    """A square matrix with the elements of ``input``, flattened, on its ``offset``-th
    diagonal."""
    return diag(input.reshape(-1), offset)


@export(torch=True)
def block_diag(*tensors):
    """The tensors as the blocks of a block-diagonal matrix (a 0-d one as ``(1, 1)``, a
    1-D one as a row), in their promoted dtype; differentiable.

    >>> import gradcore as gc
    >>> gc.block_diag(gc.tensor([[1, 2]]), gc.tensor(3))
    tensor([[1, 2, 0],
            [0, 0, 3]])
    """
    mats = []
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"block_diag(): expected Tensors, got {type(t).__name__}")
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.ndim} dimensions")
        mats.append(t.reshape(1, -1) if t.ndim < 2 else t)
    if not mats:
        return wrap(get_default_device().math.zeros((1, 0), dtype=dtypes.default_float.np))
    dt = mats[0].dtype
    for t in mats[1:]:
        dt = dtypes.promote_types(dt, t.dtype)
    mats = [t.to(dtype=dt) for t in mats]
    total = builtins.sum(t.shape[1] for t in mats)
    m = math_of(mats[0]._data)
    rows, before = [], 0
    for t in mats:
        r, c = t.shape
        left = wrap(m.zeros((r, before), dtype=t._data.dtype))
        right = wrap(m.zeros((r, total - before - c), dtype=t._data.dtype))
        rows.append(cat([left, t, right], 1))
        before += c
    return cat(rows, 0)


def _triangle_indices(row, col, offset, dtype, device, lower):
    op = "tril_indices" if lower else "triu_indices"
    row, col = int_arg(row, op, "row"), int_arg(col, op, "col")
    offset = int_arg(offset, op, "offset")
    for name, v in (("row", row), ("col", col)):
        if v < 0:
            raise RuntimeError(f"{name} must be non-negative, got{v}")
    dt = dtypes.int64 if dtype is None else dtypes.to_dtype(dtype)
    if dt not in (dtypes.int64, dtypes.int32):
        raise NotImplementedError(f"\"{op}\" not implemented for '{dtypes.torch_name(dt)}'")
    fn = np.tril_indices if lower else np.triu_indices
    idx = np.stack(fn(row, offset, col)).astype(dt.np).reshape(2, -1)
    dev = get_default_device() if device is None else _device(device)
    return wrap(dev.math.asarray(idx))


@export(torch=True)
def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The ``(row, column)`` indices, as a ``2 x N`` tensor in row-major order, of the
    lower triangle (on and below diagonal ``offset``) of a ``row x col`` matrix.
    ``layout`` is accepted as PyTorch's (strided, the only one).

    >>> import gradcore as gc
    >>> gc.tril_indices(2, 2)
    tensor([[0, 1, 1],
            [0, 0, 1]])
    """
    return _triangle_indices(row, col, offset, dtype, device, True)


@export(torch=True)
def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The ``(row, column)`` indices, as a ``2 x N`` tensor in row-major order, of the
    upper triangle (on and above diagonal ``offset``) of a ``row x col`` matrix.
    ``layout`` is accepted as PyTorch's (strided, the only one)."""
    return _triangle_indices(row, col, offset, dtype, device, False)


# ---- tril / triu ----------
class TrilBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        return (F.where(F.constant(self.mask), g, 0),)


class TriuBackward0(TrilBackward0):
    pass


def _triangle(x, diagonal, lower):
    op = "tril" if lower else "triu"
    xd = x._data
    if xd.ndim < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")
    k = int_arg(diagonal, op, "diagonal")
    m = math_of(xd)
    rows, cols = xd.shape[-2:]
    # the elements [i, j] with j - i <= k (tril) or >= k (triu)
    offsets = m.arange(cols)[None, :] - m.arange(rows)[:, None]
    mask = offsets <= k if lower else offsets >= k
    out = m.where(mask, xd, m.zeros((), dtype=xd.dtype))
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record(out, TrilBackward0 if lower else TriuBackward0, x)
    t.grad_fn.mask = mask
    return t


@export(torch=True, method=True)
def tril(input, diagonal=0):  # noqa: A002
    """The lower triangle of the matrices in the last two dimensions (elements ``[i, j]``
    with ``j - i <= diagonal``), zeros above.

    >>> import gradcore as gc
    >>> gc.tril(gc.ones(3, 3), -1)
    tensor([[0., 0., 0.],
            [1., 0., 0.],
            [1., 1., 0.]])
    """
    return _triangle(input, diagonal, True)


@export(torch=True, method=True)
def triu(input, diagonal=0):  # noqa: A002
    """The upper triangle of the matrices in the last two dimensions (elements ``[i, j]``
    with ``j - i >= diagonal``), zeros below."""
    return _triangle(input, diagonal, False)


# ---- einsum ----------
_LETTERS = string.ascii_uppercase + string.ascii_lowercase  # (sublist label k is _LETTERS[k])


def _einsum_sublists(args):
    """``einsum(op0, sublist0, op1, sublist1, ..., [out])``: the equation and operands."""
    def subscripts(labels):
        out = []
        for k in labels:
            if k is Ellipsis:
                out.append("...")
            elif isinstance(k, int) and 0 <= k < len(_LETTERS):
                out.append(_LETTERS[k])
            else:
                raise ValueError(f"einsum(): expected subscript to be within the range [0, 52) "
                                 f"but got {k!r}")
        return "".join(out)

    operands = list(args[0::2])
    terms = [subscripts(sub) for sub in args[1::2]]
    if len(args) % 2:  # an output sublist
        operands = operands[:-1]
        return ",".join(terms) + "->" + subscripts(args[-1]), operands
    return ",".join(terms), operands


def _einsum_parse(equation, shapes):
    """The equation with every operand's subscripts written out (the dimensions of an
    ellipsis named by letters the equation does not use), the output's, and each
    letter's size (a size 1 broadcasts), checked as PyTorch checks them."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) > len(shapes):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the "
                           "equation")
    if len(terms) < len(shapes):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation")
    for part in terms + [rhs]:
        bad = part.replace("...", "")
        if not all(c in _LETTERS for c in bad) or part.count("...") > 1:
            raise RuntimeError(f"einsum(): invalid subscript given in the equation "
                               f"'{equation}': subscripts are letters (a-z, A-Z) and at most "
                               f"one ellipsis per operand")
    unused = [c for c in _LETTERS if c not in eq]
    ell = 0
    for i, (term, shape) in enumerate(zip(terms, shapes)):
        named = len(term.replace("...", ""))
        if "..." not in term and named != len(shape):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({named}) "
                               f"does not match the number of dimensions ({len(shape)}) for "
                               f"operand {i} and no ellipsis was given")
        if "..." in term:
            if named > len(shape):
                raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                                   f"({named}) is more than the number of dimensions "
                                   f"({len(shape)}) for operand {i}")
            ell = max(ell, len(shape) - named)
    ell_letters = "".join(unused[:ell])
    ops = []
    for term, shape in zip(terms, shapes):
        k = len(shape) - len(term.replace("...", ""))
        ops.append(term.replace("...", ell_letters[ell - k:]) if "..." in term else term)
    sizes = {}
    for i, (letters, shape) in enumerate(zip(ops, shapes)):
        mine = {}
        for c, n in zip(letters, shape):
            if c in mine and mine[c] != n:
                raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {i} but "
                                   f"the sizes don't match, {mine[c]} != {n}")
            mine[c] = n
        for c, n in mine.items():
            seen = sizes.get(c, n)
            if seen != n and 1 not in (seen, n):
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {i} "
                                   f"which does not broadcast with previously seen size "
                                   f"{seen}")
            sizes[c] = n if seen == 1 else seen
    if arrow:
        out = rhs.replace("...", ell_letters)
        for c in out:
            if c not in sizes:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the "
                                   f"equation for any input operand")
            if out.count(c) > 1:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in "
                                   f"the output")
    else:  # implicit: the ellipsis, then the letters seen once, in alphabetical order
        counts = "".join(ops)
        out = ell_letters + "".join(sorted(c for c in set(lhs) if c in _LETTERS and
                                           counts.count(c) == 1))
    return ops, out, sizes


class EinsumBackward0(Node):
    """Operand ``i``'s gradient is the einsum of the output's gradient with the other
    operands, giving ``i``'s subscripts: a letter repeated in ``i`` (a diagonal) is
    renamed and tied to its first name by an identity matrix, a letter found nowhere
    else (summed in the forward) comes from a vector of ones; the engine then sums the
    dimensions that broadcast from size 1 (``shapes``)."""

    fresh_grads = True

    def apply(self, F, g):
        ops = self.unpack(F)
        grads = []
        for i, plan in enumerate(self.plans):
            if plan is None or not self.needs(i):
                grads.append(None)
                continue
            subscripts, constants = plan
            others = [o for j, o in enumerate(ops) if j != i]
            grads.append(F.einsum(subscripts, g, *others, *[F.constant(c) for c in constants]))
        return tuple(grads)


def _einsum_plan(m, i, ops, out, sizes, dtype):
    """The equation and constant operands of operand ``i``'s gradient."""
    fresh = iter(c for c in _LETTERS if c not in "".join(ops) + out)
    target, terms, constants = "", [out] + [o for j, o in enumerate(ops) if j != i], []
    for c in ops[i]:
        if c in target:  # repeated: a new name, equal to c through an identity matrix
            new = next(fresh)
            target += new
            terms.append(c + new)
            constants.append(m.eye(sizes[c], dtype=dtype))
        else:
            target += c
    present = "".join(terms)
    for c in sorted(set(target)):
        if c not in present:  # summed in the forward: the gradient is the same along it
            terms.append(c)
            constants.append(m.ones(sizes[c], dtype=dtype))
    return ",".join(terms) + "->" + target, constants


@export(torch=True)
def einsum(equation, *operands):
    """Sums of products of the operands' elements as the equation says (NumPy's and
    PyTorch's notation: ``"bij,bjk->bik"``, ``"ii"``, ``"...ij,...jk"``; an implicit
    output has the letters seen once, in alphabetical order). The operands may come as
    a list, or in the sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])``. Size-1
    dimensions broadcast; every operand needs the same dtype. Differentiable in every
    operand.

    >>> import gradcore as gc
    >>> a, b = gc.ones(2, 3), gc.ones(3, 4)
    >>> gc.einsum("ij,jk->ik", a, b).shape
    gradcore.Size([2, 4])
    >>> gc.einsum("ii", gc.eye(3))
    tensor(3.)
    """
    if not isinstance(equation, str):
        equation, operands = _einsum_sublists((equation,) + operands)
    elif len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    operands = [o if isinstance(o, Tensor) else as_tensor(o) for o in operands]
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    first = operands[0]
    for o in operands[1:]:
        check_same_device(first._data, o._data, "einsum")
        if o.dtype != first.dtype:
            raise RuntimeError(f"expected scalar type {dtypes.torch_name(first.dtype)} but "
                               f"found {dtypes.torch_name(o.dtype)}")
    arrays = [o._data for o in operands]
    ops, out, sizes = _einsum_parse(equation, [a.shape for a in arrays])
    subscripts = ",".join(ops) + "->" + out
    m = math_of(arrays[0])
    result = m.einsum(subscripts, *arrays)
    if len(arrays) == 1 and result.base is not None:
        result = result.copy()  # (one operand: NumPy may answer with a view of it)
    if not (mode.enabled and builtins.any(o._rg for o in operands)):
        return wrap(result)
    t = record(result, EinsumBackward0, *operands)
    node = t.grad_fn
    node.plans = [_einsum_plan(m, i, ops, out, sizes, arrays[0].dtype) if o._rg else None
                  for i, o in enumerate(operands)]
    node.shapes = tuple(a.shape for a in arrays)
    node.save(*operands)
    return t


# ---- cross ----------
class LinalgCrossBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        a, b = self.unpack(F)
        return (F.cross(b, g, axis=self.axis) if self.needs(0) else None,
                F.cross(g, a, axis=self.axis) if self.needs(1) else None)


@export(torch=True, method=True)
def cross(input, other, dim=None):  # noqa: A002
    """The cross product of 3-vectors along ``dim`` (broadcasting the others); without
    ``dim``, along the first dimension of size 3, with PyTorch's deprecation warning.

    >>> import gradcore as gc
    >>> gc.cross(gc.tensor([1., 0., 0.]), gc.tensor([0., 1., 0.]), dim=0)
    tensor([0., 0., 1.])
    """
    ad, bd = input._data, other._data
    check_same_device(ad, bd, "cross")
    if ad.ndim != bd.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if input.dtype != other.dtype:
        raise RuntimeError(f"expected scalar type {dtypes.torch_name(input.dtype)} but found "
                           f"{dtypes.torch_name(other.dtype)}")
    if dim is None:
        axis = next((k for k, n in enumerate(ad.shape) if n == 3), None)
        if axis is None:
            raise RuntimeError(f"no dimension of size 3 in input (cross of shapes "
                               f"{tuple(ad.shape)} and {tuple(bd.shape)})")
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\n"
                      "Please either pass the dim explicitly or simply use "
                      "torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning,
                      stacklevel=2)
    else:
        axis = normalize_dim(dim, ad.ndim, "cross")
    if ad.shape[axis] != 3 or bd.shape[axis] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {axis} must have length 3. Got "
                           f"{ad.shape[axis]} and {bd.shape[axis]}")
    try:
        out = math_of(ad).cross(ad, bd, axis=axis)
    except ValueError:
        raise RuntimeError(f"linalg.cross: the shapes {tuple(ad.shape)} and "
                           f"{tuple(bd.shape)} do not broadcast together") from None
    if not (mode.enabled and (input._rg or other._rg)):
        return wrap(out)
    t = record(out, LinalgCrossBackward0, input, other)
    node = t.grad_fn
    node.axis = axis
    node.save(input, other)
    if ad.shape != out.shape or bd.shape != out.shape:
        node.shapes = (ad.shape, bd.shape)
    return t


# ---- cdist ----------
_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                "donot_use_mm_for_euclid_dist")


@export(torch=True)
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distances between the rows of ``x1`` (``... x P x M``) and of ``x2``
    (``... x R x M``): ``... x P x R``, batch dimensions broadcasting. For p = 2,
    PyTorch's ``compute_mode``: through a matrix product (``|a|^2 + |b|^2 - 2 a.b``,
    floored at 1e-30 before the square root) when P or R exceeds 25 or when asked,
    else from the differences, as the other p (0, 1, inf, ...). Differentiable, with a
    zero gradient at zero distance.

    >>> import gradcore as gc
    >>> gc.cdist(gc.tensor([[0., 0.], [1., 1.]]), gc.tensor([[3., 4.]]))
    tensor([[5.0000],
            [3.6056]])
    """
    for name, t in (("X1", x1), ("X2", x2)):
        if t.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: "
                               f"{t.ndim}D")
        if t._data.dtype.kind != "f":
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{dtypes.torch_name(t.dtype)}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if x1.dtype != x2.dtype:
        raise RuntimeError(f"expected scalar type {dtypes.torch_name(x1.dtype)} but found "
                           f"{dtypes.torch_name(x2.dtype)}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in _CDIST_MODES:
        raise RuntimeError(f"{compute_mode} is not a valid value for compute_mode")
    check_same_device(x1._data, x2._data, "cdist")
    mm_mode = compute_mode == "use_mm_for_euclid_dist" or \
        (compute_mode == _CDIST_MODES[0] and (x1.shape[-2] > 25 or x2.shape[-2] > 25))
    if p == 2 and mm_mode:
        n1 = _sum(x1 * x1, -1, keepdim=True)
        n2 = _sum(x2 * x2, -1, keepdim=True)
        a = cat([x1 * -2, n1, n1 * 0 + 1], -1)
        b = cat([x2, n2 * 0 + 1, n2], -1)
        return sqrt(clamp(matmul(a, b.mT), min=1e-30))
    return norm(unsqueeze(x1, -2) - unsqueeze(x2, -3), p, dim=-1)


# ---- products with an added term: addmm, addmv, addbmm, baddbmm, addr ----------
def _check_dtypes(op, *ts):
    for t in ts[1:]:
        if t.dtype != ts[0].dtype:
            raise RuntimeError(f"{op}: expected the operands to have the same dtype, but got "
                               f"{dtypes.torch_name(ts[0].dtype)} and "
                               f"{dtypes.torch_name(t.dtype)}")


def _scaled_sum(input, product, beta, alpha):
    """``beta * input + alpha * product``, ``input`` broadcast to the product's shape (its
    shape checked as PyTorch's ``expand``; ``beta == 0`` ignores its values, NaN too)."""
    shape = tuple(product.shape)
    term = input.expand(*shape)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product
    return (term if beta == 1 else term * beta) + product


def _need_dims(op, name, t, n):
    if t.ndim != n:
        what = {1: "vector", 2: "matrix", 3: "batch of matrices"}[n]
        raise RuntimeError(f"{name} must be a {what}, got {t.ndim}-D tensor" if n != 3 else
                           f"{name} must be a 3D tensor")


@export(torch=True, method=True)
def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    """``beta * input + alpha * (mat1 @ mat2)`` for matrices ``mat1`` and ``mat2``,
    ``input`` broadcast to the product's shape (``beta=0`` ignores it, NaN and all).

    >>> import gradcore as gc
    >>> gc.addmm(gc.ones(2, 2), gc.eye(2), gc.eye(2) * 3, alpha=0.5)
    tensor([[2.5000, 1.0000],
            [1.0000, 2.5000]])
    """
    _need_dims("addmm", "mat1", mat1, 2)
    _need_dims("addmm", "mat2", mat2, 2)
    _check_dtypes("addmm", input, mat1, mat2)
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x"
                           f"{mat1.shape[1]} and {mat2.shape[0]}x{mat2.shape[1]})")
    return _scaled_sum(input, matmul(mat1, mat2), beta, alpha)


@export(torch=True, method=True)
def addmv(input, mat, vec, *, beta=1, alpha=1):  # noqa: A002
    """``beta * input + alpha * (mat @ vec)`` for a matrix ``mat`` and a vector ``vec``."""
    _need_dims("addmv", "mat", mat, 2)
    _need_dims("addmv", "vec", vec, 1)
    _check_dtypes("addmv", input, mat, vec)
    if mat.shape[1] != vec.shape[0] or (input.ndim == 1 and input.shape[0] not in
                                        (1, mat.shape[0])):
        raise RuntimeError(f"size mismatch, got input ({', '.join(map(str, input.shape))}), "
                           f"mat ({mat.shape[0]}x{mat.shape[1]}), vec ({vec.shape[0]})")
    return _scaled_sum(input, matmul(mat, vec), beta, alpha)


@export(torch=True, method=True)
def addr(input, vec1, vec2, *, beta=1, alpha=1):  # noqa: A002
    """``beta * input + alpha * outer(vec1, vec2)``."""
    _need_dims("addr", "vec1", vec1, 1)
    _need_dims("addr", "vec2", vec2, 1)
    _check_dtypes("addr", input, vec1, vec2)
    return _scaled_sum(input, outer(vec1, vec2), beta, alpha)


def _check_batches(op, b1, b2):
    for name, t in (("batch1", b1), ("batch2", b2)):
        if t.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    if b1.shape[0] != b2.shape[0] or b1.shape[2] != b2.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({b1.shape[1]}x{b1.shape[2]} "
                           f"and {b2.shape[1]}x{b2.shape[2]})" if b1.shape[0] == b2.shape[0]
                           else f"batch1 and batch2 must have same number of batches, got "
                                f"{b1.shape[0]} and {b2.shape[0]}")


@export(torch=True, method=True)
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    """``beta * input + alpha * bmm(batch1, batch2)``, batch by batch."""
    _check_batches("baddbmm", batch1, batch2)
    _check_dtypes("baddbmm", input, batch1, batch2)
    return _scaled_sum(input, matmul(batch1, batch2), beta, alpha)


@export(torch=True, method=True)
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    """``beta * input + alpha * sum_i(batch1[i] @ batch2[i])``: the batch's products
    added up into one matrix."""
    _check_batches("addbmm", batch1, batch2)
    _check_dtypes("addbmm", input, batch1, batch2)
    return _scaled_sum(input, _sum(matmul(batch1, batch2), 0), beta, alpha)


# ---- inner, vdot, kron ----------
@export(torch=True, method=True)
def inner(input, other):  # noqa: A002
    """The sums of products over the last dimension of both: shape
    ``input.shape[:-1] + other.shape[:-1]`` (a product with a number for a 0-d one)."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    k = input.shape[-1]
    out = matmul(input.reshape(-1, k), other.reshape(-1, k).mT)
    return out.reshape(tuple(input.shape[:-1]) + tuple(other.shape[:-1]))


@export(torch=True, method=True)
def vdot(input, other):  # noqa: A002
    """The dot product of two 1-D tensors (the first conjugated: for real tensors,
    :func:`dot`)."""
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D "
                           f"tensors")
    return dot(input, other)


@export(torch=True, method=True)
def kron(input, other):  # noqa: A002
    """The Kronecker product: each element of ``input`` times the whole of ``other``,
    in blocks (the shorter shape padded with ones in front).

    >>> import gradcore as gc
    >>> gc.kron(gc.tensor([1, 2]), gc.tensor([1, 10]))
    tensor([ 1, 10,  2, 20])
    """
    nd = builtins.max(input.ndim, other.ndim)
    a_shape = (1,) * (nd - input.ndim) + tuple(input.shape)
    b_shape = (1,) * (nd - other.ndim) + tuple(other.shape)
    a = input.reshape(tuple(v for n in a_shape for v in (n, 1)))
    b = other.reshape(tuple(v for n in b_shape for v in (1, n)))
    return (a * b).reshape(tuple(p * q for p, q in zip(a_shape, b_shape)))


# ---- inverse, det, slogdet, logdet, matrix_power, pinverse ----------
def _square(op, a):
    if not isinstance(a, Tensor):
        raise TypeError(f"{op}(): argument 'A' must be Tensor, not {type(a).__name__}")
    if a.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")
    _floating(op, a)


def _floating(op, a):
    kind = a._data.dtype.kind
    if kind != "f":
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{dtypes.torch_name(a.dtype)}")
    if a._data.dtype == np.float16:
        raise NotImplementedError(f"\"{op}\" not implemented for 'Half'")


def _inv_array(a, op="linalg.inv"):
    try:
        return math_of(a).linalg.inv(a)
    except np.linalg.LinAlgError:
        raise RuntimeError(f"{op}: The inversion could not be completed because the input "
                           f"matrix is singular.") from None


def _inv(F, a):
    """``a``'s inverse: an array, or (create_graph) a differentiable tensor."""
    return inverse(a) if isinstance(a, Tensor) else _inv_array(a)


class LinalgInvExBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        it = self.output(F).swapaxes(-1, -2)
        return (-F.matmul(F.matmul(it, g), it),)


@export(torch=True, method=True)
def inverse(input):  # noqa: A002
    """The inverse of each square matrix in the last two dimensions (``gc.linalg.inv``);
    a RuntimeError for a singular one. Differentiable: ``-A^-T g A^-T``.

    >>> import gradcore as gc
    >>> gc.inverse(gc.tensor([[2., 0.], [0., 4.]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.2500]])
    """
    _square("linalg.inv", input)
    out = _inv_array(input._data)
    if not (mode.enabled and input._rg):
        return wrap(out)
    t = record(out, LinalgInvExBackward0, input)
    t.grad_fn.save_output(t)
    return t


def _cofactor(a, det):
    """The gradient of the determinant: ``det * A^-T``; zeros where ``A`` is singular,
    as PyTorch's (its determinant, 0, times the solve)."""
    m = math_of(a)
    try:
        inv_t = m.linalg.inv(a).swapaxes(-1, -2)
    except np.linalg.LinAlgError:  # (NumPy's check; CuPy's inverse does not check)
        inv_t = None
    if inv_t is not None:
        d = det[..., None, None]
        return m.where(d != 0, d * inv_t, 0).astype(a.dtype, copy=False)
    out = m.zeros(a.shape, dtype=a.dtype)
    for pos in np.ndindex(*a.shape[:-2]):  # the invertible ones of a batch
        try:
            out[pos] = det[pos] * m.linalg.inv(a[pos]).swapaxes(-1, -2)
        except np.linalg.LinAlgError:
            pass
    return out


class LinalgDetBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (a,) = self.unpack(F)
        det = self.output(F)
        if isinstance(a, Tensor):  # create_graph: det * A^-T, differentiable
            return ((g * det)[..., None, None] * _inv(F, a).swapaxes(-1, -2),)
        return (g[..., None, None] * _cofactor(a, det),)


@export(torch=True, method=True)
def det(input):  # noqa: A002
    """The determinant of each square matrix in the last two dimensions
    (``gc.linalg.det``). Differentiable (at a singular matrix the gradient is zero, as
    PyTorch's).

    >>> import gradcore as gc
    >>> gc.det(gc.tensor([[1., 2.], [3., 4.]]))
    tensor(-2.)
    """
    _square("linalg.det", input)
    xd = input._data
    out = math_of(xd).asarray(math_of(xd).linalg.det(xd)).astype(xd.dtype, copy=False)
    if not (mode.enabled and input._rg):
        return wrap(out)
    t = record(out, LinalgDetBackward0, input)
    t.grad_fn.save(input)
    t.grad_fn.save_output(t)
    return t


slogdet_result = namedtuple("slogdet", ["sign", "logabsdet"])


class LinalgSlogdetBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (a,) = self.unpack(F)
        return (g[..., None, None] * _inv(F, a).swapaxes(-1, -2),)


@export(torch=True, method=True)
def slogdet(input):  # noqa: A002
    """``(sign, logabsdet)`` of each square matrix's determinant: its sign (0 for a
    singular matrix, whose ``logabsdet`` is ``-inf``) and the log of its absolute value,
    without overflow. Differentiable through ``logabsdet``: ``g A^-T``.

    >>> import gradcore as gc
    >>> gc.slogdet(gc.tensor([[1., 2.], [2., 1.]]))
    slogdet(sign=tensor(-1.), logabsdet=tensor(1.0986))
    """
    _square("linalg.slogdet", input)
    xd = input._data
    m = math_of(xd)
    sign, logabs = m.linalg.slogdet(xd)
    sign = m.asarray(sign).astype(xd.dtype, copy=False)
    logabs = m.asarray(logabs).astype(xd.dtype, copy=False)
    if not (mode.enabled and input._rg):
        return slogdet_result(wrap(sign), wrap(logabs))
    t = record(logabs, LinalgSlogdetBackward0, input)
    t.grad_fn.save(input)
    return slogdet_result(wrap(sign), t)


@export(torch=True, method=True)
def logdet(input):  # noqa: A002
    """The log of each square matrix's determinant: NaN where it is negative, ``-inf``
    where it is 0."""
    sign, logabs = slogdet(input)
    return where(sign < 0, float("nan"), logabs)


@export(torch=True, method=True)
def matrix_power(input, n):  # noqa: A002
    """Each square matrix to the integer power ``n``: the identity for 0, products of
    squares for ``n > 0``, of the inverse's for ``n < 0``.

    >>> import gradcore as gc
    >>> gc.matrix_power(gc.tensor([[1., 1.], [0., 1.]]), 3)
    tensor([[1., 3.],
            [0., 1.]])
    """
    n = int_arg(n, "matrix_power", "n")
    if input.ndim < 2 or input.shape[-1] != input.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but "
                           f"they are {input.shape[-2] if input.ndim > 1 else 1} by "
                           f"{input.shape[-1] if input.ndim else 1} matrices")
    if n == 0:
        m = math_of(input._data)
        eye = m.eye(input.shape[-1], dtype=input._data.dtype)
        return wrap(m.ascontiguousarray(m.broadcast_to(eye, tuple(input.shape))))
    a = inverse(input) if n < 0 else input
    n = builtins.abs(n)
    result = None
    while n:
        if n & 1:
            result = a if result is None else matmul(result, a)
        n >>= 1
        if n:
            a = matmul(a, a)
    return result if result is not input else input * 1


class LinalgPinvBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (a,) = self.unpack(F)
        p = self.output(F)
        pt, gt = p.swapaxes(-1, -2), g.swapaxes(-1, -2)
        mm_ = F.matmul
        # -P^T G P^T + (I - A P) G^T P P^T + P^T P G^T (I - P A)
        first = -mm_(mm_(pt, g), pt)
        gpp = mm_(gt, mm_(p, pt))
        second = gpp - mm_(a, mm_(p, gpp))
        ppg = mm_(mm_(pt, p), gt)
        third = ppg - mm_(mm_(ppg, p), a)
        return (first + second + third,)


@export(torch=True, method=True)
def pinverse(input, rcond=1e-15):  # noqa: A002
    """The Moore-Penrose pseudo-inverse of each matrix in the last two dimensions (from
    its singular value decomposition; singular values below ``rcond`` times the largest
    count as zero). Differentiable where the rank does not change."""
    if input.ndim < 2:
        raise RuntimeError("linalg.pinv(" + dtypes.torch_name(input.dtype) + "{" +
                           ",".join(map(str, input.shape)) + "}): expected a tensor with 2 "
                           "or more dimensions of float, double, cfloat or cdouble types")
    _floating("linalg.pinv", input)
    xd = input._data
    out = math_of(xd).pinv(xd, rcond).astype(xd.dtype, copy=False)
    if not (mode.enabled and input._rg):
        return wrap(out)
    t = record(out, LinalgPinvBackward0, input)
    t.grad_fn.save(input)
    t.grad_fn.save_output(t)
    return t


# ---- factorizations: cholesky, qr, svd, eigh; solve_triangular, matrix_exp ----------
# Their backward rules are PyTorch's (FunctionsManual.cpp), written once over tensors
# with the ops above: under create_graph=True they build the graph of the gradient (any
# order); otherwise they run on the arrays wrapped as constant tensors (_tensor_rule).


class LinAlgError(RuntimeError):
    """A linear-algebra routine failed on its input: a matrix not positive-definite
    (``linalg.cholesky``), a singular one (PyTorch's ``torch.linalg.LinAlgError``)."""


def _tensor_rule(F, rule, *operands):
    """Run a backward ``rule`` written over tensors: with ``F`` the differentiable
    namespace the operands are tensors already and the rule's ops record the gradient's
    graph; otherwise the arrays are wrapped as constants and the results unwrapped."""
    if differentiable(F):
        return rule(*operands)
    with no_grad():
        grads = rule(*[None if a is None else wrap(a) for a in operands])
    return tuple(None if g is None else g._data for g in grads)


class _SavesOutputs(Node):
    """A node whose rule reads several outputs of its op: ``out`` holds one (array,
    version cell, version, output number) per saved output, which the engine frees
    after backward as it frees a single saved output."""

    def save_outputs(self, *tensors):
        entries = []
        for t in tensors:
            vc = t._vc
            if vc is None:
                vc = t._vc = [0]
            data = t._data if not _hooks_on[0] else _pack_output(t)
            entries.append((data, vc, vc[0], t._out_nr))
        self.out = entries

    def outputs(self, F):
        """The saved outputs: arrays, or (create_graph) tensors whose grad_fn is this
        node, so that the gradient's own gradient reaches the input through them."""
        if self.out is None:
            raise SavedTensorError(_FREED)
        found = []
        for data, vc, v, nr in self.out:
            if type(data) is _Packed:  # saved under saved_tensors_hooks
                data = data.unpack()[0]._data
            elif vc[0] != v:
                _raise_modified(self, None, v, vc[0])
            found.append(F.wrap_output(data, self, nr) if differentiable(F) else data)
        return found


def _outputs(node_cls, arrays, input, tracked):  # noqa: A002
    """Tensors of ``arrays``: of one new ``node_cls`` node (output ``i`` of it for each
    ``i`` in ``tracked``), plain tensors for the others."""
    first = builtins.min(tracked)
    head = record(arrays[first], node_cls, input)
    node = head.grad_fn
    outs = []
    for i, arr in enumerate(arrays):
        if i == first:
            head._out_nr = i
            outs.append(head)
        elif i in tracked:
            t = wrap(arr)
            t.grad_fn, t._out_nr, t._rg = node, i, True
            outs.append(t)
        else:
            outs.append(wrap(arr))
    return node, outs


def _matrices(op, a, square=True):
    """PyTorch's checks of a factorization's input: a tensor of matrices (square ones
    where ``square``), of float32 or float64."""
    if not isinstance(a, Tensor):
        raise TypeError(f"{op}(): argument 'A' (position 1) must be Tensor, not "
                        f"{type(a).__name__}")
    if a.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if square and a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")
    _floating(op, a)


def _mH(t):  # noqa: N802
    return t.swapaxes(-1, -2)


def _eye_like(t, n=None, cols=None):
    """The identity of ``t``'s matrix size (or ``n`` by ``n``, or ``n`` by ``cols``),
    dtype and device, as a tensor."""
    d = t._data
    n = d.shape[-1] if n is None else n
    return wrap(math_of(d).eye(n, cols, dtype=d.dtype))


# -- cholesky --
def _cholesky_partial(m, a):
    """The factor of one matrix ``a`` as LAPACK's unblocked potf2 leaves it when ``a``
    is not positive-definite: the columns before the failing one factored, the failing
    diagonal element its non-positive value, the rest ``a``'s lower triangle."""
    n = a.shape[-1]
    low = m.tril(a).copy()
    for j in range(n):
        row = low[j, :j]
        d = low[j, j] - row @ row
        low[j, j] = d
        if not bool(d > 0):
            break
        low[j, j] = m.sqrt(d)
        low[j + 1:, j] = (low[j + 1:, j] - low[j + 1:, :j] @ row) / low[j, j]
    return low


def _cholesky_arrays(a):
    """``(L, info)``: the lower factors and, per matrix, 0 or the order of the first
    leading minor that is not positive-definite (LAPACK's info)."""
    m = math_of(a)
    try:
        low = m.linalg.cholesky(a)
    except np.linalg.LinAlgError:  # (NumPy's check; CuPy leaves the failed factor)
        low = m.empty(a.shape, dtype=a.dtype)
        flat, out = a.reshape((-1,) + a.shape[-2:]), low.reshape((-1,) + a.shape[-2:])
        for i in range(flat.shape[0]):
            try:
                out[i] = m.linalg.cholesky(flat[i])
            except np.linalg.LinAlgError:
                out[i] = _cholesky_partial(m, flat[i])
    diag = low.diagonal(0, -2, -1)
    bad = ~(diag > 0)  # (NaN too)
    if diag.shape[-1] == 0:
        return low, m.zeros(a.shape[:-2], dtype=np.int32)
    info = m.where(bad.any(-1), bad.argmax(-1) + 1, 0).astype(np.int32)
    return low, info


def _raise_at_first_info(info, error):
    """Raise ``error(where, i)`` for the first nonzero entry ``i`` of LAPACK's ``info``
    (an array), ``where`` PyTorch's ``"(Batch element k): "`` for a batched ``info`` (k
    its flat index), ``""`` for one matrix's; return if every entry is 0."""
    info = np.asarray(to_host(info))
    for pos in np.ndindex(*info.shape):
        if info[pos]:
            where = f"(Batch element {np.ravel_multi_index(pos, info.shape)}): " \
                if info.ndim else ""
            raise error(where, int(info[pos]))


def _raise_not_pd(op, info):
    _raise_at_first_info(info, lambda where, i: LinAlgError(
        f"{op}: {where}The factorization could not be completed because the input is not "
        f"positive-definite (the leading minor of order {i} is not positive-definite)."))


class LinalgCholeskyExBackward0(_SavesOutputs):
    fresh_grads = True
    n_outputs = 2  # L, info

    def apply(self, F, grads):
        g = grads[0]
        (low,) = self.outputs(F)[:1]
        upper = self.upper
        return _tensor_rule(F, lambda g, low: (_cholesky_backward(g, low, upper),), g, low)


def _cholesky_backward(g, low, upper):
    """PyTorch's cholesky_backward: with ``A = L L^H``,
    ``gA = sym(L^-H phi(L^H gL) L^-1)``, ``phi`` the lower triangle, its diagonal halved."""
    if upper:
        low, g = _mH(low), _mH(g)
    eye = _eye_like(low)
    low_inv = solve_triangular(low, eye, upper=False)
    phi = tril(matmul(_mH(low), g))
    phi = phi - diag_embed(diagonal(phi, 0, -2, -1) * 0.5)
    ga = matmul(matmul(_mH(low_inv), phi), low_inv)
    return (ga + _mH(ga)) * 0.5


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):  # noqa: N803
    """``(L, info)``: the Cholesky factor of each symmetric positive-definite matrix of
    ``A`` (lower, ``A = L L^T``; ``upper=True``: ``U = L^T``, ``A = U^T U``) and, per
    matrix, 0 or the order of the first leading minor that is not positive-definite
    (``check_errors=True`` raises then). Only the lower triangle of ``A`` is read."""
    _no_out("linalg.cholesky_ex", out)
    _matrices("linalg.cholesky", A)
    low, info = _cholesky_arrays(A._data)
    if check_errors:
        _raise_not_pd("linalg.cholesky_ex", info)
    if upper:
        low = math_of(low).ascontiguousarray(low.swapaxes(-1, -2))
    if not (mode.enabled and A._rg):
        return cholesky_ex_result(wrap(low), wrap(info))
    node, (factor, info_t) = _outputs(LinalgCholeskyExBackward0, (low, info), A, (0,))
    node.upper = upper
    node.save_outputs(factor)
    return cholesky_ex_result(factor, info_t)


cholesky_ex_result = namedtuple("linalg_cholesky_ex", ["L", "info"])


def _no_out(op, out):
    if out is not None:
        raise NotImplementedError(f"{op}: out= is not supported")


def linalg_cholesky(A, *, upper=False, out=None):  # noqa: N803
    """The Cholesky factor of each symmetric positive-definite matrix of ``A``: ``L``
    lower triangular with ``A = L L^T`` (``upper=True``: ``U = L^T``). A
    ``LinAlgError`` (a RuntimeError) names the first matrix that is not
    positive-definite. Only the lower triangle of ``A`` is read; the gradient is
    symmetric (PyTorch's)."""
    _no_out("linalg.cholesky", out)
    _matrices("linalg.cholesky", A)
    factor, info = cholesky_ex(A, upper=upper)
    _raise_not_pd("linalg.cholesky", info._data)
    return factor


@export(torch=True, method=True)
def cholesky(input, upper=False, *, out=None):  # noqa: A002
    """``torch.cholesky``: :func:`gradcore.linalg.cholesky` with ``upper`` positional.

    >>> import gradcore as gc
    >>> gc.cholesky(gc.tensor([[4., 2.], [2., 5.]]))
    tensor([[2., 0.],
            [1., 2.]])
    """
    return linalg_cholesky(input, upper=upper, out=out)


class CholeskyInverseBackward0(_SavesOutputs):
    fresh_grads = True

    def apply(self, F, g):
        (factor,) = self.unpack(F)
        (inv,) = self.outputs(F)
        upper = self.upper

        def rule(g, factor, inv):
            common = matmul(matmul(inv, g + _mH(g)), inv)
            return (-matmul(factor, common) if upper else -matmul(common, factor),)
        return _tensor_rule(F, rule, g, factor, inv)


@export(torch=True, method=True)
def cholesky_inverse(L, upper=False, *, out=None):  # noqa: N803
    """The inverse of ``A = L L^T`` from its Cholesky factor ``L`` (``upper``:
    ``A = U^T U``), batched. Reads the factor's triangle only; its gradient is
    PyTorch's, ``-(A^-1 (G + G^T) A^-1) L``."""
    _no_out("cholesky_inverse", out)
    _matrices("cholesky_inverse", L)
    ld = L._data
    m = math_of(ld)
    tri = m.triu(ld) if upper else m.tril(ld)
    prod = tri.swapaxes(-1, -2) @ tri if upper else tri @ tri.swapaxes(-1, -2)
    inv = _inv_array(prod, "cholesky_inverse")
    if not (mode.enabled and L._rg):
        return wrap(inv)
    t = record(inv, CholeskyInverseBackward0, L)
    node = t.grad_fn
    node.upper = upper
    node.save(L)
    node.save_outputs(t)
    return t


@export(torch=True, method=True)
def cholesky_solve(B, L, upper=False, *, out=None):  # noqa: N803
    """``X`` with ``A X = B``, ``A = L L^T`` given by its Cholesky factor ``L``
    (``upper``: ``A = U^T U``); batch dimensions broadcast. Computed as
    ``cholesky_inverse(L) @ B`` (its gradients are PyTorch's)."""
    _no_out("cholesky_solve", out)
    for name, t in (("b", B), ("A", L)):
        if not isinstance(t, Tensor):
            raise TypeError(f"cholesky_solve(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
        if t.ndim < 2:
            raise RuntimeError(f"{name} should have at least 2 dimensions, but has "
                               f"{t.ndim} dimensions instead")
    if B.dtype != L.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{dtypes.torch_name(B.dtype)} and A of type "
                           f"{dtypes.torch_name(L.dtype)} instead.")
    if L.shape[-1] != L.shape[-2] or L.shape[-1] != B.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
                           f"{L.shape[-2]} by {L.shape[-1]} but each b matrix is "
                           f"{B.shape[-2]} by {B.shape[-1]}")
    return matmul(cholesky_inverse(L, upper), B)


# -- solve_triangular --
def _triangular_arrays(a, b, upper, left, unitriangular):
    m = math_of(a)
    tri = m.triu(a) if upper else m.tril(a)
    if unitriangular:
        n = a.shape[-1]
        eye = m.eye(n, dtype=a.dtype)
        tri = tri * (1 - eye) + eye
    if not left:  # X A = B: A^T X^T = B^T
        tri, b = tri.swapaxes(-1, -2), b.swapaxes(-1, -2)
    batch = np.broadcast_shapes(tri.shape[:-2], b.shape[:-2])
    tri = m.broadcast_to(tri, batch + tri.shape[-2:])
    b = m.broadcast_to(b, batch + b.shape[-2:])
    try:
        x = m.linalg.solve(tri, b)
    except np.linalg.LinAlgError:
        raise LinAlgError("linalg.solve_triangular: The solver failed because the input "
                          "matrix is singular (a zero on its diagonal).") from None
    x = x.astype(a.dtype, copy=False)
    return m.ascontiguousarray(x.swapaxes(-1, -2)) if not left else x


class LinalgSolveTriangularBackward0(_SavesOutputs):
    fresh_grads = True

    def apply(self, F, g):
        (a,) = self.unpack(F)
        (x,) = self.outputs(F)
        upper, left, unit = self.upper, self.left, self.unitriangular
        need_a, need_b = self.needs(0), self.needs(1)

        def rule(g, a, x):
            gb = solve_triangular(_mH(a), g, upper=not upper, left=left,
                                  unitriangular=unit)
            ga = None
            if need_a:
                ga = -matmul(gb, _mH(x)) if left else -matmul(_mH(x), gb)
                ga = triu(ga, int(unit)) if upper else tril(ga, -int(unit))
            return ga, (gb if need_b else None)
        return _tensor_rule(F, rule, g, a, x)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):  # noqa: N803
    """``X`` with ``A @ X = B`` (``left``; else ``X @ A = B``) for triangular ``A``
    (``upper`` says which triangle is read; ``unitriangular``: its diagonal taken as
    ones), batch dimensions broadcast. Differentiable in both (PyTorch's formulas)."""
    _no_out("linalg.solve_triangular", out)
    if not isinstance(B, Tensor):
        raise TypeError(f"linalg_solve_triangular(): argument 'B' (position 2) must be "
                        f"Tensor, not {type(B).__name__}")
    _matrices("linalg.solve_triangular", A)
    if B.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least "
                           "2 dimensions.")
    if A.dtype != B.dtype:
        raise RuntimeError(f"linalg.solve_triangular: Expected A and B to have the same "
                           f"dtype, but found A of type {dtypes.torch_name(A.dtype)} and B "
                           f"of type {dtypes.torch_name(B.dtype)} instead")
    check_same_device(A._data, B._data, "linalg.solve_triangular")
    n, rows = A.shape[-1], B.shape[-2] if left else B.shape[-1]
    if n != rows:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the "
                           f"equation {eq} ({A.shape[-2]}x{n} and {B.shape[-2]}x"
                           f"{B.shape[-1]})")
    x = _triangular_arrays(A._data, B._data, upper, left, unitriangular)
    if not (mode.enabled and (A._rg or B._rg)):
        return wrap(x)
    t = record(x, LinalgSolveTriangularBackward0, A, B)
    node = t.grad_fn
    node.upper, node.left, node.unitriangular = bool(upper), bool(left), bool(unitriangular)
    node.shapes = (tuple(A.shape), tuple(B.shape))  # batch dimensions may broadcast
    node.save(A)
    node.save_outputs(t)
    return t


triangular_solve_result = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])


@export(torch=True, method=True)
def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *,  # noqa: N803
                     out=None):
    """``torch.triangular_solve``: ``(X, A.clone())`` with ``A X = b`` (``transpose``:
    ``A^T X = b``), ``A`` upper triangular (or lower, ``upper=False``)."""
    _no_out("triangular_solve", out)
    coefficient = _mH(A) if transpose else A
    x = solve_triangular(coefficient, b, upper=bool(upper) != bool(transpose),
                         unitriangular=unitriangular)
    return triangular_solve_result(x, A.clone())


# -- qr --
qr_result = namedtuple("qr", ["Q", "R"])
linalg_qr_result = namedtuple("linalg_qr", ["Q", "R"])


class LinalgQrBackward0(_SavesOutputs):
    fresh_grads = True
    n_outputs = 2  # Q, R

    def apply(self, F, grads):
        if self.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not "
                               "computed when mode='r'. Please use linalg.qr(A, "
                               "mode='reduced') if you are going to differentiate through "
                               "linalg.qr.")
        (a,) = self.unpack(F)
        q, r = self.outputs(F)
        if self.mode == "complete" and a.shape[-2] > a.shape[-1]:
            raise RuntimeError("The QR decomposition is not differentiable when "
                               "mode='complete' and nrows > ncols.")
        return _tensor_rule(F, lambda gq, gr, a, q, r: (_qr_backward(gq, gr, a, q, r),),
                            grads[0], grads[1], a, q, r)


def _qr_backward(gq, gr, a, q, r):
    """PyTorch's linalg_qr_backward (arXiv:2009.10071, 4.3): for ``m >= n``,
    ``gA = (gQ + Q copyltu(M)) R^-H`` with ``M = R gR^H - gQ^H Q``; a wide ``A = Q [U | V]``
    differentiates its square part with ``gQ + A[:, m:] gV^H`` and sends ``Q gV`` to
    the rest."""
    m, n = a.shape[-2], a.shape[-1]
    if gq is None:
        gq = q * 0
    if gr is None:
        gr = r * 0
    if m < n:
        rest = a[..., :, m:]
        gv = gr[..., :, m:]
        gq = gq + matmul(rest, _mH(gv))
        square = _qr_square_backward(gq, gr[..., :, :m], q, r[..., :, :m])
        return cat([square, matmul(q, gv)], -1)
    return _qr_square_backward(gq, gr, q, r)


def _qr_square_backward(gq, gr, q, r):
    m_ = matmul(r, _mH(gr)) - matmul(_mH(gq), q)
    lower = tril(m_, -1)
    copyltu = lower + _mH(lower) + diag_embed(diagonal(m_, 0, -2, -1))
    b = gq + matmul(q, copyltu)
    return solve_triangular(_mH(r), b, upper=False, left=False)


def linalg_qr(A, mode="reduced", *, out=None):  # noqa: N803
    """``(Q, R)``: ``A = Q R`` with orthonormal columns in ``Q`` and ``R`` upper
    triangular, for each matrix of ``A`` (``(*, m, n)``, ``k = min(m, n)``):
    ``mode='reduced'`` gives ``(*, m, k)`` and ``(*, k, n)``, ``'complete'`` ``(*, m, m)``
    and ``(*, m, n)``, ``'r'`` only ``R`` (``Q`` empty; not differentiable).
    Differentiable as PyTorch's (``'complete'`` only where ``m <= n``)."""
    _no_out("linalg.qr", out)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    _matrices("linalg.qr", A, square=False)
    ad = A._data
    m = math_of(ad)
    q, r = m.linalg.qr(ad, mode="reduced" if mode == "r" else mode)
    q, r = q.astype(ad.dtype, copy=False), r.astype(ad.dtype, copy=False)
    if mode == "r":
        q = m.zeros((0,), dtype=ad.dtype)
    if not (_grad_mode.enabled and A._rg):
        return linalg_qr_result(wrap(q), wrap(r))
    node, (qt, rt) = _outputs(LinalgQrBackward0, (q, r), A, (1,) if mode == "r" else (0, 1))
    node.mode = mode
    node.save(A)
    if mode != "r":
        node.save_outputs(qt, rt)
    return linalg_qr_result(qt, rt)


@export(torch=True, method=True)
def qr(input, some=True, *, out=None):  # noqa: A002
    """``torch.qr``: :func:`gradcore.linalg.qr` with ``some=True`` the reduced and
    ``some=False`` the complete decomposition."""
    q, r = linalg_qr(input, "reduced" if some else "complete", out=out)
    return qr_result(q, r)


# -- eigh --
linalg_eigh_result = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])


class LinalgEighBackward0(_SavesOutputs):
    fresh_grads = True
    n_outputs = 2  # eigenvalues, eigenvectors

    def apply(self, F, grads):
        vals, vecs = self.outputs(F)
        return _tensor_rule(F, lambda gl, gv, vals, vecs: (_eigh_backward(gl, gv, vals, vecs),),
                            grads[0], grads[1], vals, vecs)


def _eigh_backward(gl, gv, vals, vecs):
    """PyTorch's linalg_eig_backward for a symmetric input:
    ``gA = V (diag(gL) + skew(V^H gV) / E) V^H``, ``E_ij = L_j - L_i``."""
    if gv is None:
        inner = diag_embed(gl)
    else:
        vhgv = matmul(_mH(vecs), gv)
        vhgv = (vhgv - _mH(vhgv)) * 0.5
        gaps = unsqueeze(vals, -2) - unsqueeze(vals, -1)
        eye = _eye_like(vhgv)
        inner = vhgv / (gaps + eye)
        if gl is not None:
            inner = inner + diag_embed(gl)
    return matmul(matmul(vecs, inner), _mH(vecs))


def linalg_eigh(A, UPLO="L", *, out=None):  # noqa: N803
    """``(eigenvalues, eigenvectors)`` of each symmetric matrix of ``A``: the
    eigenvalues in ascending order, the eigenvectors as columns (each up to its sign).
    Only the triangle ``UPLO`` (``'L'`` or ``'U'``) is read. Differentiable where the
    eigenvalues are distinct (through functions that do not depend on the signs)."""
    _no_out("linalg.eigh", out)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    _matrices("linalg.eigh", A)
    ad = A._data
    vals, vecs = math_of(ad).linalg.eigh(ad, UPLO=UPLO)
    vals, vecs = vals.astype(ad.dtype, copy=False), vecs.astype(ad.dtype, copy=False)
    if not (_grad_mode.enabled and A._rg):
        return linalg_eigh_result(wrap(vals), wrap(vecs))
    node, (vt, wt) = _outputs(LinalgEighBackward0, (vals, vecs), A, (0, 1))
    node.save_outputs(vt, wt)
    return linalg_eigh_result(vt, wt)


# -- svd --
linalg_svd_result = namedtuple("linalg_svd", ["U", "S", "Vh"])
svd_result = namedtuple("svd", ["U", "S", "V"])


class LinalgSvdBackward0(_SavesOutputs):
    fresh_grads = True
    n_outputs = 3  # U, S, Vh

    def apply(self, F, grads):
        u, s, vh = self.outputs(F)
        full = self.full_matrices
        return _tensor_rule(F, lambda gu, gs, gvh, u, s, vh:
                            (_svd_backward(gu, gs, gvh, u, s, vh, full),), *grads, u, s, vh)


def _svd_backward(gu, gs, gvh, u, s, vh, full_matrices):
    """PyTorch's svd_backward (full matrices: only their first ``k`` columns, as
    PyTorch's). ``gA = U [sym-free terms / E + diag(gS)] V^H`` plus, for a tall (wide)
    ``A``, the part of ``gU`` (``gV``) outside the span of ``U`` (``V``)."""
    k = s.shape[-1]
    if full_matrices:
        u, vh = u[..., :, :k], vh[..., :k, :]
        gu = None if gu is None else gu[..., :, :k]
        gvh = None if gvh is None else gvh[..., :k, :]
    m, n = u.shape[-2], vh.shape[-1]
    if gu is None and gvh is None:
        if gs is None:
            return None
        return matmul(u, unsqueeze(gs, -1) * vh) if m >= n else \
            matmul(u * unsqueeze(gs, -2), vh)
    s2 = s * s
    eye = _eye_like(u, k)
    gaps = unsqueeze(s2, -2) - unsqueeze(s2, -1) + eye  # E, its diagonal 1
    sk, sj = unsqueeze(s, -1), unsqueeze(s, -2)
    uhgu = vhgv = None
    if gu is not None:
        uhgu = matmul(_mH(u), gu)
        uhgu = uhgu - _mH(uhgu)
    if gvh is not None:
        vhgv = matmul(vh, _mH(gvh))
        vhgv = vhgv - _mH(vhgv)
    if uhgu is not None and vhgv is not None:
        ga = (uhgu * sj + sk * vhgv) / gaps
    elif uhgu is not None:
        ga = uhgu / gaps * sj
    else:
        ga = sk * vhgv / gaps
    if gs is not None:
        ga = ga + diag_embed(gs)
    if m > n and gu is not None:
        ga = matmul(u, ga)
        gu_sinv = gu / sj
        ga = ga + gu_sinv - matmul(u, matmul(_mH(u), gu_sinv))
        return matmul(ga, vh)
    if m < n and gvh is not None:
        ga = matmul(ga, vh)
        sinv_gvh = gvh / sk
        ga = ga + sinv_gvh - matmul(matmul(sinv_gvh, _mH(vh)), vh)
        return matmul(u, ga)
    return matmul(u, matmul(ga, vh)) if m >= n else matmul(matmul(u, ga), vh)


def _svd_arrays(ad, full_matrices):
    u, s, vh = math_of(ad).linalg.svd(ad, full_matrices=full_matrices)
    return (u.astype(ad.dtype, copy=False), s.astype(ad.dtype, copy=False),
            vh.astype(ad.dtype, copy=False))


def linalg_svd(A, full_matrices=True, *, driver=None, out=None):  # noqa: N803
    """``(U, S, Vh)`` with ``A = U diag(S) Vh`` for each matrix of ``A`` (``(*, m, n)``,
    ``k = min(m, n)``): singular values ``S`` in descending order; ``U`` ``(*, m, m)`` and
    ``Vh`` ``(*, n, n)`` (``full_matrices=False``: ``(*, m, k)`` and ``(*, k, n)``), each
    singular vector up to its sign. Differentiable where the singular values are
    distinct and non-zero (through functions that do not depend on the signs)."""
    _no_out("linalg.svd", out)
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported "
                           "on CUDA inputs with cuSOLVER backend.")
    _matrices("linalg.svd", A, square=False)
    u, s, vh = _svd_arrays(A._data, full_matrices)
    if not (_grad_mode.enabled and A._rg):
        return linalg_svd_result(wrap(u), wrap(s), wrap(vh))
    node, outs = _outputs(LinalgSvdBackward0, (u, s, vh), A, (0, 1, 2))
    node.full_matrices = bool(full_matrices)
    node.save_outputs(*outs)
    return linalg_svd_result(*outs)


def svdvals(A, *, driver=None, out=None):  # noqa: N803
    """The singular values of each matrix of ``A``, in descending order.
    Differentiable (``U diag(gS) Vh``)."""
    _no_out("linalg.svdvals", out)
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported "
                           "on CUDA inputs with cuSOLVER backend.")
    _matrices("linalg.svd", A, square=False)
    ad = A._data
    if not (_grad_mode.enabled and A._rg):
        s = math_of(ad).linalg.svd(ad, compute_uv=False)
        return wrap(s.astype(ad.dtype, copy=False))
    return linalg_svd(A, full_matrices=False).S


@export(torch=True, method=True)
def svd(input, some=True, compute_uv=True, *, out=None):  # noqa: A002
    """``torch.svd``: ``(U, S, V)`` with ``A = U diag(S) V^T`` (``V``, not ``Vh``);
    ``some=True`` the reduced decomposition. ``compute_uv=False``: ``U`` and ``V``
    zero-filled, ``(*, m, m)`` and ``(*, n, n)``."""
    _no_out("svd", out)
    if not compute_uv:
        s = svdvals(input)
        m = math_of(input._data)
        shape = tuple(input.shape)
        return svd_result(wrap(m.zeros(shape[:-1] + shape[-2:-1], dtype=input._data.dtype)), s,
                          wrap(m.zeros(shape[:-2] + shape[-1:] * 2, dtype=input._data.dtype)))
    u, s, vh = linalg_svd(input, full_matrices=not some)
    return svd_result(u, s, _mH(vh))


# -- matrix_exp --
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
           1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,
           33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _expm_arrays(a):
    """``exp(a)`` of each matrix: the [13/13] Padé approximant after scaling by
    ``2^-s`` (the batch's largest 1-norm at most theta_13), then ``s`` squarings
    (Higham 2005, as SciPy's and PyTorch's)."""
    m = math_of(a)
    n = a.shape[-1]
    if a.size == 0:
        return a.copy()
    norm1 = float(to_host(m.asarray(m.abs(a).sum(-2).max())))
    s = builtins.max(0, int(np.ceil(np.log2(norm1 / _THETA13)))) if norm1 > 0 else 0
    a = a / (2.0 ** s)
    b = _PADE13
    eye = m.eye(n, dtype=a.dtype)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 +
             b[3] * a2 + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + \
        b[0] * eye
    r = m.linalg.solve(v - u, v + u)
    for _ in range(s):
        r = r @ r
    return r.astype(a.dtype, copy=False)


class LinalgMatrixExpBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (a,) = self.unpack(F)
        return _tensor_rule(F, lambda g, a: (_matrix_exp_backward(g, a),), g, a)


def _matrix_exp_backward(g, a):
    """PyTorch's: the upper right block of ``exp([[A^H, G], [0, A^H]])``."""
    n = a.shape[-1]
    at = _mH(a)
    zeros = at * 0
    big = cat([cat([at, g], -1), cat([zeros, at], -1)], -2)
    return matrix_exp(big)[..., :n, n:].contiguous()


@export(torch=True, method=True)
def matrix_exp(A):  # noqa: N803
    """The matrix exponential ``sum_k A^k / k!`` of each square matrix of ``A``.
    Differentiable to any order (PyTorch's block-matrix formula).

    >>> import gradcore as gc
    >>> gc.matrix_exp(gc.tensor([[0., 1.], [0., 0.]]))
    tensor([[1., 1.],
            [0., 1.]])
    """
    _matrices("linalg.matrix_exp", A)
    out = _expm_arrays(A._data)
    if not (_grad_mode.enabled and A._rg):
        return wrap(out)
    t = record(out, LinalgMatrixExpBackward0, A)
    t.grad_fn.save(A)
    return t


# -- lu --
lu_factor_ex_result = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
lu_factor_result = namedtuple("linalg_lu_factor", ["LU", "pivots"])
lu_unpack_result = namedtuple("lu_unpack", ["P", "L", "U"])


def _lu_arrays(a):
    """``(LU, pivots, info)`` of each matrix of ``a`` (``..., m, n``): LAPACK getrf's
    partial pivoting (the first of the largest absolute values of a column, a zero
    column left in place), unit lower factor below the diagonal, ``U`` on and above it;
    pivots 1-based int32; info 0 or the position of the first zero on ``U``'s diagonal.
    One pass per column, over the whole batch at once, on the device's array module."""
    m = math_of(a)
    rows, cols = a.shape[-2:]
    k = builtins.min(rows, cols)
    batch = a.shape[:-2]
    lu = m.array(a.reshape((-1, rows, cols)), dtype=a.dtype, copy=True)
    nb = lu.shape[0]
    every = m.arange(nb)
    pivots = m.empty((nb, k), dtype=np.int32)
    info = m.zeros((nb,), dtype=np.int32)
    for j in range(k):
        p = m.argmax(m.abs(lu[:, j:, j]), axis=-1) + j if nb else m.zeros((0,), dtype=np.int64)
        pivots[:, j] = p + 1
        row_j = lu[every, j, :].copy()
        lu[every, j, :] = lu[every, p, :]
        lu[every, p, :] = row_j
        d = lu[:, j, j]
        zero = d == 0
        info = m.where((info == 0) & zero, np.int32(j + 1), info).astype(np.int32)
        if j + 1 < rows:
            lu[:, j + 1:, j] /= m.where(zero, a.dtype.type(1), d)[:, None]
            if j + 1 < cols:
                lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j:j + 1] * lu[:, j:j + 1, j + 1:]
    return (lu.reshape(a.shape), pivots.reshape(batch + (k,)), info.reshape(batch))


def _raise_singular_lu(op, info):
    _raise_at_first_info(info, lambda where, i: RuntimeError(
        f"{op}: {where}U[{i},{i}] is zero and using it on lu_solve would result in a "
        f"division by zero. If you still want to perform the factorization, consider "
        f"calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"))


def _permutation_arrays(pivots, rows, dtype):
    """The permutation matrices ``P`` (``A = P L U``) of LAPACK's 1-based ``pivots``
    (row ``j`` swapped with row ``pivots[j]``, in order), ``rows`` by ``rows``."""
    m = math_of(pivots)
    batch = pivots.shape[:-1]
    piv = pivots.reshape((-1, pivots.shape[-1])).astype(np.int64) - 1
    nb = piv.shape[0]
    perm = m.broadcast_to(m.arange(rows), (nb, rows)).copy()
    every = m.arange(nb)
    for j in range(piv.shape[-1]):
        p = piv[:, j]
        at_j = perm[:, j].copy()
        perm[:, j] = perm[every, p]
        perm[every, p] = at_j
    # row i of P^T A is row perm[i] of A: P[perm[i], i] = 1
    eye = m.eye(rows, dtype=dtype)
    p_t = eye[perm]  # (nb, rows, rows): P^T
    return m.ascontiguousarray(p_t.swapaxes(-1, -2)).reshape(batch + (rows, rows))


def _lu_backward(g, lu, pivots):
    """PyTorch's ``linalg_lu_backward`` for the packed factor ``LU`` (``A = P L U``,
    ``gL`` the strictly lower part of ``g``, ``gU`` the upper part): square, wide
    (``m < n``) and tall (``m > n``) cases."""
    rows, cols = lu.shape[-2:]
    k = builtins.min(rows, cols)
    perm, low, up = lu_unpack(lu, wrap(pivots))
    g_low = tril(g[..., :, :k], -1)
    g_up = triu(g[..., :k, :])
    if rows == cols:
        ga = tril(matmul(_mH(low), g_low), -1) + triu(matmul(g_up, _mH(up)))
        ga = solve_triangular(_mH(up), ga, upper=False, left=False)
        ga = solve_triangular(_mH(low), ga, upper=True, left=True, unitriangular=True)
    elif rows < cols:  # wide
        u1 = up[..., :, :k]
        ga = matmul(_mH(low), g_low) - matmul(g_up, _mH(up))
        ga = solve_triangular(_mH(u1), tril(ga, -1), upper=False, left=False)
        ga = cat([ga + triu(g_up[..., :, :k]), g_up[..., :, k:]], dim=-1)
        ga = solve_triangular(_mH(low), ga, upper=True, left=True, unitriangular=True)
    else:  # tall
        l1 = low[..., :k, :]
        ga = matmul(g_up, _mH(up)) - matmul(_mH(low), g_low)
        ga = solve_triangular(_mH(l1), triu(ga), upper=True, left=True, unitriangular=True)
        ga = cat([ga + tril(g_low[..., :k, :], -1), g_low[..., k:, :]], dim=-2)
        ga = solve_triangular(_mH(up), ga, upper=False, left=False)
    return matmul(perm.to(ga.dtype), ga)


class LinalgLuFactorExBackward0(_SavesOutputs):
    fresh_grads = True
    n_outputs = 3  # LU, pivots, info

    def apply(self, F, grads):
        g = grads[0]
        (lu,) = self.outputs(F)[:1]
        pivots = self.pivots
        return _tensor_rule(F, lambda g, lu: (_lu_backward(g, lu, pivots),), g, lu)


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):  # noqa: N803
    """``(LU, pivots, info)``: the LU factorization with partial pivoting of each
    matrix of ``A`` (``..., m, n``), packed as LAPACK's getrf leaves it (``L``'s unit
    diagonal implied), ``pivots`` 1-based int32 (row ``i`` swapped with row
    ``pivots[i]``), ``info`` 0 or the first ``i`` with ``U[i, i] == 0``
    (``check_errors=True`` raises then). Differentiable in ``A`` (PyTorch's
    ``linalg_lu_backward``)."""
    _no_out("linalg.lu_factor_ex", out)
    _matrices("torch.linalg.lu_factor_ex", A, square=False)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on "
                           "the CPU")
    lu, pivots, info = _lu_arrays(A._data)
    if check_errors:
        _raise_singular_lu("torch.linalg.lu_factor_ex", info)
    if not (mode.enabled and A._rg):
        return lu_factor_ex_result(wrap(lu), wrap(pivots), wrap(info))
    node, (lu_t, piv_t, info_t) = _outputs(LinalgLuFactorExBackward0, (lu, pivots, info),
                                           A, (0,))
    node.pivots = pivots
    node.save_outputs(lu_t)
    return lu_factor_ex_result(lu_t, piv_t, info_t)


def lu_factor(A, *, pivot=True, out=None):  # noqa: N803
    """``(LU, pivots)`` of :func:`lu_factor_ex`; a RuntimeError names the first matrix
    whose ``U`` has a zero on its diagonal, as PyTorch's."""
    _no_out("linalg.lu_factor", out)
    _matrices("torch.linalg.lu_factor", A, square=False)
    lu, pivots, info = lu_factor_ex(A, pivot=pivot)
    _raise_singular_lu("torch.linalg.lu_factor", info._data)
    return lu_factor_result(lu, pivots)


def _check_pivots(op, pivots):
    if not isinstance(pivots, Tensor) or pivots._data.dtype != np.int32:
        raise RuntimeError(f"{op}: LU_pivots is expected to be a contiguous tensor of "
                           f"torch.int32 dtype.\nNote: this function is intended to be used "
                           f"with the output produced by torch.linalg.lu_factor")


@export(torch=True)
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):  # noqa: N803
    """``(P, L, U)`` with ``A = P L U`` from the packed factor and pivots of
    :func:`gradcore.linalg.lu_factor`; ``L`` and ``U`` differentiable in ``LU_data``.
    ``unpack_data=False`` / ``unpack_pivots=False`` leave ``L, U`` / ``P`` empty.

    >>> import gradcore as gc
    >>> LU, piv = gc.linalg.lu_factor(gc.tensor([[1., 2.], [3., 4.]]))
    >>> P, L, U = gc.lu_unpack(LU, piv)
    >>> P @ L @ U
    tensor([[1., 2.],
            [3., 4.]])
    """
    _no_out("lu_unpack", out)
    _check_pivots("torch.lu_unpack", LU_pivots)
    _matrices("torch.lu_unpack", LU_data, square=False)
    rows, cols = LU_data.shape[-2:]
    k = builtins.min(rows, cols)
    d = LU_data._data
    m = math_of(d)
    empty = wrap(m.empty((0,), dtype=d.dtype))
    if unpack_data:
        low = tril(LU_data[..., :, :k], -1) + _eye_like(LU_data, rows, k)
        up = triu(LU_data[..., :k, :])
    else:
        low = up = empty
    if unpack_pivots:
        perm = wrap(_permutation_arrays(LU_pivots._data, rows, d.dtype))
    else:
        perm = empty
    return lu_unpack_result(perm, low, up)


def _lu_solve_tensors(LU, pivots, B, left=True, adjoint=False):  # noqa: N803
    """``X`` with ``A X = B`` (``left``; else ``X A = B``; ``adjoint``: ``A^T`` for
    ``A``), ``A = P L U`` given packed: triangular solves of differentiable ops, so the
    gradients in ``LU`` and ``B`` are PyTorch's."""
    perm, low, up = lu_unpack(LU, pivots)
    perm = perm.to(B.dtype)
    if left and not adjoint:  # A X = B: X = U^-1 L^-1 P^T B
        y = solve_triangular(low, matmul(_mH(perm), B), upper=False, unitriangular=True)
        return solve_triangular(up, y, upper=True)
    if left:  # A^T X = B: U^T L^T P^T X = B
        y = solve_triangular(_mH(up), B, upper=False)
        return matmul(perm, solve_triangular(_mH(low), y, upper=True, unitriangular=True))
    if not adjoint:  # X P L U = B
        y = solve_triangular(up, B, upper=True, left=False)
        return matmul(solve_triangular(low, y, upper=False, left=False, unitriangular=True),
                      _mH(perm))
    # X A^T = B: X U^T L^T P^T = B
    y = matmul(B, perm)
    y = solve_triangular(_mH(low), y, upper=True, left=False, unitriangular=True)
    return solve_triangular(_mH(up), y, upper=False, left=False)


def linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):  # noqa: N803
    """``X`` with ``A X = B`` for ``A`` given by :func:`gradcore.linalg.lu_factor`
    (``left=False``: ``X A = B``; ``adjoint=True``: ``A^T`` in place of ``A``); batch
    dimensions broadcast; differentiable in ``LU`` and ``B``."""
    _no_out("linalg.lu_solve", out)
    _check_pivots("linalg.lu_solve", pivots)
    _matrices("linalg.lu_solve", LU)
    if not isinstance(B, Tensor):
        raise TypeError(f"linalg_lu_solve(): argument 'B' (position 3) must be Tensor, not "
                        f"{type(B).__name__}")
    if B.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 "
                           "dimensions.")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the "
                           f"equation {eq} ({LU.shape[-2]}x{n} and {B.shape[-2]}x"
                           f"{B.shape[-1]})")
    if LU.dtype != B.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but "
                           f"found LU of type {dtypes.torch_name(LU.dtype)} and B of type "
                           f"{dtypes.torch_name(B.dtype)} instead")
    return _lu_solve_tensors(LU, pivots, B, left, adjoint)


@export(torch=True, method=True)
def lu_solve(b, LU_data, LU_pivots, *, out=None):  # noqa: N803
    """``torch.lu_solve`` (deprecated in PyTorch for
    :func:`gradcore.linalg.lu_solve`): ``X`` with ``A X = b``, ``A`` given by
    :func:`gradcore.lu`."""
    return linalg_lu_solve(LU_data, LU_pivots, b, out=out)


@export(torch=True, method=True)
def lu(A, pivot=True, get_infos=False, out=None):  # noqa: N803
    """``torch.lu`` (deprecated in PyTorch for :func:`gradcore.linalg.lu_factor`):
    ``(LU, pivots)``, and ``infos`` with ``get_infos=True``; a singular matrix factors
    without an error, as PyTorch's."""
    _no_out("lu", out)
    factor, pivots, info = lu_factor_ex(A, pivot=pivot)
    return (factor, pivots, info) if get_infos else (factor, pivots)
