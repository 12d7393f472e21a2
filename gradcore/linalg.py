"""``gradcore.linalg``: the names of ``torch.linalg`` that small-network programs use,
with PyTorch's signatures and results, composed of gradcore's differentiable ops (so
gradients of any order and both devices come with them).

Provided: ``vector_norm``, ``matrix_norm`` (``'fro'``, 1, -1, inf, -inf), ``norm``,
``inv``, ``det``, ``slogdet``, ``pinv``, ``solve``, ``matrix_power``, ``cross``,
``vecdot``, ``matmul``, ``multi_dot``, ``diagonal``. Not provided (no factorization
kernels yet): ``svd``, ``qr``, ``eigh``, ``cholesky``, ``lstsq`` and the norms that need
singular values (``'nuc'``, 2, -2).

>>> import gradcore as gc
>>> gc.linalg.vector_norm(gc.tensor([3.0, 4.0]))
tensor(5.)
>>> gc.linalg.inv(gc.tensor([[2.0, 0.0], [0.0, 4.0]]))
tensor([[0.5000, 0.0000],
        [0.0000, 0.2500]])
"""

from __future__ import annotations

import math
from collections import namedtuple

from . import ops as _ops
from .tensor import Tensor

__all__ = ["vector_norm", "matrix_norm", "norm", "inv", "det", "slogdet", "pinv", "solve",
           "matrix_power", "cross", "vecdot", "matmul", "multi_dot", "diagonal"]

_SlogdetResult = namedtuple("linalg_slogdet", ["sign", "logabsdet"])


def _tensor(x, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"linalg.{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    return x


def _floating(x, op: str):
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.{op}: Expected a floating point or complex tensor as "
                           f"input. Got {str(x.dtype).split('.')[-1].capitalize()}")


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """The vector ``ord``-norm of ``x`` over ``dim`` (all elements when None): ``2`` (the
    default), ``1``, ``inf`` (largest absolute value), ``-inf`` (smallest), ``0`` (the
    number of non-zeros) or any other real ``p``: ``sum(|x|^p)^(1/p)``. ``dtype``: the
    input cast first."""
    x = _tensor(x, "vector_norm")
    _floating(x, "vector_norm")
    if dtype is not None:
        x = x.to(dtype)
    dims = dim
    if isinstance(dims, int):
        dims = (dims,)
    kw = dict(keepdim=keepdim) if dims is not None else {}
    over = (lambda t, f: getattr(t, f)(dim=dims, **kw)) if dims is not None else \
        (lambda t, f: getattr(t, f)())
    ord = float(ord)
    if ord == 2:
        return _ops.norm(x, 2, dims, keepdim)
    a = x.abs()
    if ord == math.inf:
        return over(a, "amax")
    if ord == -math.inf:
        return over(a, "amin")
    if ord == 0:
        return over((x != 0).to(x.dtype), "sum")
    if ord == 1:
        return over(a, "sum")
    return over(a ** ord, "sum") ** (1.0 / ord)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):  # noqa: A002, N803
    """The matrix ``ord``-norm over the two dimensions ``dim``: ``'fro'`` (Frobenius),
    ``1``/``-1`` (largest/smallest column sum of absolute values), ``inf``/``-inf``
    (largest/smallest row sum). ``'nuc'``, ``2`` and ``-2`` need singular values, which
    gradcore does not compute (NotImplementedError)."""
    A = _tensor(A, "matrix_norm")
    _floating(A, "matrix_norm")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    if dtype is not None:
        A = A.to(dtype)
    d0, d1 = (d % A.ndim for d in dim)
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        raise NotImplementedError(f"linalg.matrix_norm: ord={ord!r} needs singular values, "
                                  f"which gradcore does not compute")
    if ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    a = A.abs()
    summed, reduced = (d0, d1) if abs(ord) == 1 else (d1, d0)
    sums = a.sum(dim=summed, keepdim=True)
    out = sums.amax(dim=reduced, keepdim=True) if ord > 0 else \
        sums.amin(dim=reduced, keepdim=True)
    return out if keepdim else out.squeeze((d0, d1))


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: A002, N803
    """``vector_norm`` or ``matrix_norm`` as PyTorch picks: ``dim`` an int (or ``ord``
    None with ``dim`` None: the whole input flattened, 2-norm) is a vector norm, ``dim``
    a pair (or a 2-D input with ``ord`` given) a matrix norm."""
    A = _tensor(A, "norm")
    if dim is not None and not isinstance(dim, int) and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, tuple(dim), keepdim, dtype=dtype)
    if dim is None and ord is not None:
        if A.ndim == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
        if A.ndim != 1:
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input "
                               f"must be 1D or 2D. Got {A.ndim}D.")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def inv(A):  # noqa: N803
    """The inverse of each square matrix of ``A`` (``(*, n, n)``)."""
    return _ops.inverse(_tensor(A, "inv"))


def det(A):  # noqa: N803
    """The determinant of each square matrix of ``A``."""
    return _ops.det(_tensor(A, "det"))


def slogdet(A):  # noqa: N803
    """``(sign, logabsdet)`` of each square matrix's determinant."""
    sign, logabsdet = _ops.slogdet(_tensor(A, "slogdet"))
    return _SlogdetResult(sign, logabsdet)


def pinv(A, *, atol=None, rtol=None, hermitian=False):  # noqa: N803
    """The pseudo-inverse of each matrix of ``A`` (``rtol`` as ``torch.pinverse``'s
    ``rcond``; ``atol`` and ``hermitian`` are not supported)."""
    if atol is not None or hermitian:
        raise NotImplementedError("linalg.pinv: atol= and hermitian=True are not supported")
    return _ops.pinverse(_tensor(A, "pinv"), *(() if rtol is None else (rtol,)))


def solve(A, B, *, left=True):  # noqa: N803
    """``X`` with ``A @ X = B`` (``left``; else ``X @ A = B``), each ``A`` square;
    ``B`` a matrix batch or (``left``) a vector batch. Computed through the inverse:
    fine for the small, well-conditioned systems gradcore is for."""
    A, B = _tensor(A, "solve"), _tensor(B, "solve")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.solve: A must be batches of square matrices, but they "
                           f"are {A.shape[-2] if A.ndim > 1 else 1} by {A.shape[-1]} "
                           f"matrices")
    inverse = _ops.inverse(A)
    if not left:
        return _ops.matmul(B, inverse)
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector:
        return _ops.matmul(inverse, B.unsqueeze(-1)).squeeze(-1)
    return _ops.matmul(inverse, B)


def matrix_power(A, n):  # noqa: N803
    """``A`` multiplied by itself ``n`` times (``n < 0``: of its inverse; 0: identity)."""
    return _ops.matrix_power(_tensor(A, "matrix_power"), n)


def cross(x, y, *, dim=-1):
    """The cross product of 3-vectors along ``dim`` (default the last)."""
    return _ops.cross(x, y, dim=dim)


def vecdot(x, y, *, dim=-1):
    """The dot product of vectors along ``dim``, with broadcasting."""
    return (x * y).sum(dim=dim)


def matmul(input, other):  # noqa: A002
    """``torch.matmul``."""
    return _ops.matmul(input, other)


def multi_dot(tensors):
    """The product of a chain of matrices (the first may be a vector, as may the last),
    multiplied left to right."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got "
                           f"{len(tensors)}")
    first_vec, last_vec = tensors[0].ndim == 1, tensors[-1].ndim == 1
    out = tensors[0].unsqueeze(0) if first_vec else tensors[0]
    for t in tensors[1:]:
        out = _ops.matmul(out, t.unsqueeze(-1) if t is tensors[-1] and last_vec else t)
    if last_vec:
        out = out.squeeze(-1)
    return out.squeeze(0) if first_vec else out


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):  # noqa: N803
    """The diagonals of the matrices of ``A`` (``torch.diagonal`` with the last two
    dimensions by default)."""
    return _ops.diagonal(A, offset, dim1, dim2)
