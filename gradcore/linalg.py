"""``gradcore.linalg``: the names of ``torch.linalg`` that small-network programs use,
with PyTorch's signatures and results, composed of gradcore's differentiable ops (so
gradients of any order and both devices come with them).

Provided: ``vector_norm``, ``matrix_norm`` and ``norm`` (``'fro'``, ``'nuc'``, 1, -1,
2, -2, inf, -inf), ``inv``, ``det``, ``slogdet``, ``pinv``, ``solve``, ``matrix_power``,
``cross``, ``vecdot``, ``matmul``, ``multi_dot``, ``diagonal``; the factorizations
``cholesky``, ``cholesky_ex``, ``qr``, ``svd``, ``svdvals``, ``eigh``, ``eigvalsh`` and
what is built on them: ``lstsq``, ``solve_triangular``, ``matrix_rank``, ``cond``,
``matrix_exp``; the LU factorization ``lu``, ``lu_factor``, ``lu_factor_ex``,
``lu_solve`` and ``solve_ex``, ``inv_ex``, ``tensorinv``, ``tensorsolve``; ``vander``,
``householder_product``. gradcore has no complex tensors, so ``eig`` and ``eigvals`` (whose
results are complex) raise ``NotImplementedError``.

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

import numpy as _np

from . import dtypes as _dtypes
from . import ops as _ops
from .autograd.grad_mode import no_grad as _no_grad
from .ops import linalg as _linalg_ops
from .tensor import Tensor

_int64 = _dtypes.int64

__all__ = ["vector_norm", "matrix_norm", "norm", "inv", "det", "slogdet", "pinv", "solve",
           "matrix_power", "cross", "vecdot", "matmul", "multi_dot", "diagonal",
           "cholesky", "cholesky_ex", "qr", "svd", "svdvals", "eigh", "eigvalsh", "eig",
           "eigvals", "lstsq", "solve_triangular", "matrix_rank", "cond", "matrix_exp",
           "lu", "lu_factor", "lu_factor_ex", "lu_solve", "solve_ex", "inv_ex", "vander",
           "tensorinv", "tensorsolve", "householder_product", "LinAlgError"]

_SlogdetResult = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
_LstsqResult = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
LinAlgError = _linalg_ops.LinAlgError
# the factorizations: primitives of gradcore.ops.linalg, with their backward rules there
cholesky_ex = _linalg_ops.cholesky_ex
svdvals = _linalg_ops.svdvals
solve_triangular = _linalg_ops.solve_triangular
matrix_exp = _linalg_ops.matrix_exp
lu_factor_ex = _linalg_ops.lu_factor_ex
lu_factor = _linalg_ops.lu_factor
lu_solve = _linalg_ops.linalg_lu_solve
_LuResult = namedtuple("linalg_lu", ["P", "L", "U"])
_SolveExResult = namedtuple("linalg_solve_ex", ["result", "info"])
_InvExResult = namedtuple("linalg_inv_ex", ["inverse", "info"])


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
    (largest/smallest row sum), ``'nuc'`` (the sum of the singular values), ``2``/``-2``
    (the largest/smallest singular value)."""
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
        moved = A.movedim((d0, d1), (-2, -1))
        values = svdvals(moved)
        out = values.sum(-1) if ord == "nuc" else values.amax(-1) if ord == 2 else \
            values.amin(-1)
        if keepdim:
            for d in sorted((d0, d1)):
                out = out.unsqueeze(d)
        return out
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


def cholesky(A, *, upper=False, out=None):  # noqa: N803
    """The Cholesky factor ``L`` (``A = L L^T``; ``upper=True``: ``U = L^T``) of each
    symmetric positive-definite matrix of ``A``; a :class:`LinAlgError` names the first
    one that is not. Only the lower triangle of ``A`` is read.

    >>> import gradcore as gc
    >>> gc.linalg.cholesky(gc.tensor([[4., 2.], [2., 5.]]))
    tensor([[2., 0.],
            [1., 2.]])
    """
    return _linalg_ops.linalg_cholesky(A, upper=upper, out=out)


def qr(A, mode="reduced", *, out=None):  # noqa: N803
    """``(Q, R)`` with ``A = Q R``: ``mode`` ``'reduced'`` (``Q`` ``(*, m, k)``),
    ``'complete'`` (``Q`` ``(*, m, m)``) or ``'r'`` (``Q`` empty), ``k = min(m, n)``."""
    return _linalg_ops.linalg_qr(A, mode, out=out)


def svd(A, full_matrices=True, *, driver=None, out=None):  # noqa: N803
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``, ``S`` descending; ``full_matrices=False``
    gives the reduced ``U`` and ``Vh`` (``k = min(m, n)`` columns / rows)."""
    return _linalg_ops.linalg_svd(A, full_matrices, driver=driver, out=out)


def eigh(A, UPLO="L", *, out=None):  # noqa: N803
    """``(eigenvalues, eigenvectors)`` of each symmetric matrix of ``A`` (its ``UPLO``
    triangle read), the eigenvalues ascending.

    >>> import gradcore as gc
    >>> gc.linalg.eigh(gc.tensor([[2., 0.], [0., 1.]])).eigenvalues
    tensor([1., 2.])
    """
    return _linalg_ops.linalg_eigh(A, UPLO, out=out)


def eigvalsh(A, UPLO="L", *, out=None):  # noqa: N803
    """The eigenvalues of each symmetric matrix of ``A``, ascending."""
    return _linalg_ops.linalg_eigh(A, UPLO, out=out).eigenvalues


def eig(A, *, out=None):  # noqa: N803
    """Not available: the eigenvalues and eigenvectors of a general real matrix are
    complex, and gradcore has no complex tensors (``eigh`` serves symmetric ones)."""
    raise NotImplementedError("linalg.eig: the eigenvalues and eigenvectors of a general "
                              "matrix are complex, and gradcore has no complex tensors; "
                              "for a symmetric matrix use linalg.eigh")


def eigvals(A, *, out=None):  # noqa: N803
    """Not available: complex results (see :func:`eig`; ``eigvalsh`` serves symmetric
    matrices)."""
    raise NotImplementedError("linalg.eigvals: the eigenvalues of a general matrix are "
                              "complex, and gradcore has no complex tensors; for a symmetric "
                              "matrix use linalg.eigvalsh")


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A, B, rcond=None, *, driver=None):  # noqa: N803
    """``(solution, residuals, rank, singular_values)`` of the least-squares problems
    ``min ||A X - B||`` (``B`` a matrix batch, or a vector batch), batch dimensions
    broadcast; the solution has minimal norm where ``A`` is rank-deficient. As PyTorch's,
    the ``driver`` (default ``'gelsy'`` on the CPU, ``'gels'``, the only one, on CUDA)
    decides what else is computed: ``rank`` for ``'gelsy'``, ``'gelsd'``, ``'gelss'``;
    ``singular_values`` for ``'gelsd'``, ``'gelss'``; ``residuals`` (the squared
    residual of each column) for all but ``'gelsy'``, when ``m > n`` and every matrix has
    full rank; the others are empty. ``rcond``: singular values below ``rcond`` times the
    largest count as zero (default: the dtype's eps times ``max(m, n)``). Solved through
    the pseudo-inverse, so the gradients are PyTorch's."""
    A, B = _tensor(A, "lstsq"), _tensor(B, "lstsq")
    cuda = A.device.type == "cuda"
    if driver is None:
        driver = "gels" if cuda else "gelsy"
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of "
                           "(gels, gelsy, gelsd, gelss)")
    if cuda and driver != "gels":
        raise RuntimeError("torch.linalg.lstsq: `driver` other than `gels` is not supported "
                           "on CUDA")
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if B.ndim < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    if A.dtype != B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input's dtype {_dtypes.torch_name(A.dtype)} and "
                           f"other's dtype {_dtypes.torch_name(B.dtype)}")
    if not A.dtype.is_floating_point:
        raise RuntimeError("This function doesn't handle types other than float and double")
    m, n = A.shape[-2], A.shape[-1]
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector:
        if B.shape[-1] != m:
            raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match "
                               "other.size(-1)")
        B = B.unsqueeze(-1)
    elif B.shape[-2] != m:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    eps = float(_np.finfo(_np.dtype(str(A.dtype).split(".")[-1])).eps)
    if rcond is None:
        rcond = eps * max(m, n)
    solution = _ops.matmul(_ops.pinverse(A, rcond), B)
    empty = A.new_empty((0,))
    residuals, rank, singular_values = empty, A.new_empty((0,), dtype=_int64), empty
    values = None
    if driver != "gels":
        with _no_grad():
            values = svdvals(A)
            top = values.amax(-1, keepdim=True) if min(m, n) else values.sum(-1, keepdim=True)
            rank = (values > top * rcond).sum(-1)
    if driver in ("gelsd", "gelss"):
        singular_values = values
    if driver != "gelsy" and m > n:
        full = rank if driver != "gels" else None
        if full is None:
            with _no_grad():
                full = (svdvals(A) > 0).sum(-1)
        if bool((full == n).all()):
            residuals = ((_ops.matmul(A, solution) - B) ** 2).sum(-2)
            if vector:
                residuals = residuals.squeeze(-1)
    if vector:
        solution = solution.squeeze(-1)
    return _LstsqResult(solution, residuals, rank, singular_values)


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):  # noqa: N803
    """The number of singular values of each matrix of ``A`` above ``max(atol, rtol *
    largest)`` (``hermitian``: of the absolute eigenvalues of a symmetric matrix). Without
    ``atol`` and ``rtol``, ``rtol`` is the dtype's eps times ``max(m, n)``; with ``atol``
    alone (above 0), ``rtol`` is 0; ``tol`` is an ``atol`` (PyTorch's older argument)."""
    A = _tensor(A, "matrix_rank")
    if out is not None:
        raise NotImplementedError("linalg.matrix_rank: out= is not supported")
    if tol is not None:
        atol = tol
    _floating(A, "matrix_rank")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_rank: The input tensor input must have at least 2 "
                           "dimensions.")
    m, n = A.shape[-2], A.shape[-1]
    eps = float(_np.finfo(_np.dtype(str(A.dtype).split(".")[-1])).eps)
    with _no_grad():
        values = eigvalsh(A).abs() if hermitian else svdvals(A)
        if not min(m, n):
            return values.sum(-1).to(_int64)
        top = values.amax(-1, keepdim=True)
        atol_t = _as_tensor(0.0 if atol is None else atol, values)
        if rtol is None:  # 0 where atol is above 0, else eps * max(m, n)
            rtol_t = _ops.where(atol_t > 0, 0.0, eps * max(m, n)) if atol is not None else \
                _as_tensor(eps * max(m, n), values)
        else:
            rtol_t = _as_tensor(rtol, values)
        limit = _ops.maximum(atol_t, top * rtol_t)
        return (values > limit).sum(-1)


def cond(A, p=None, *, out=None):  # noqa: N803
    """The condition number of each matrix of ``A`` in the ``p`` norm: ``None``/``2``
    the largest over the smallest singular value (``-2`` the inverse), any matrix;
    ``'fro'``, ``'nuc'``, ``1``, ``-1``, ``inf``, ``-inf``: ``norm(A) * norm(A^-1)``, square
    invertible matrices."""
    A = _tensor(A, "cond")
    if out is not None:
        raise NotImplementedError("linalg.cond: out= is not supported")
    _floating(A, "cond")
    if A.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor A must have at least 2 dimensions.")
    if p is None or p in (2, -2):
        values = svdvals(A)
        big, small = values.amax(-1), values.amin(-1)
        return small / big if p == -2 else big / small
    if p not in ("fro", "nuc", 1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, "
                           f"but they are {A.shape[-2]} by {A.shape[-1]} matrices")
    return matrix_norm(A, p) * matrix_norm(_ops.inverse(A), p)


def _as_tensor(value, like):
    """A tolerance as a tensor that broadcasts against ``like``'s ``(*batch, 1)``: a
    number, or a tensor of the batch's shape."""
    if isinstance(value, Tensor):
        return value.to(like.dtype).unsqueeze(-1)
    return like[..., :1] * 0 + float(value)


def lu(A, *, pivot=True, out=None):  # noqa: N803
    """``(P, L, U)`` with ``A = P L U`` for each matrix of ``A`` (``..., m, n``): ``P``
    a permutation, ``L`` unit lower triangular ``m x k``, ``U`` upper triangular ``k x
    n``, ``k = min(m, n)``; partial pivoting as LAPACK's. A singular matrix factors (a
    zero on ``U``'s diagonal). Differentiable (PyTorch's ``linalg_lu_backward``).

    >>> import gradcore as gc
    >>> P, L, U = gc.linalg.lu(gc.tensor([[1., 2.], [3., 4.]]))
    >>> L
    tensor([[1.0000, 0.0000],
            [0.3333, 1.0000]])
    """
    if out is not None:
        raise NotImplementedError("linalg.lu: out= is not supported")
    _linalg_ops._matrices("torch.linalg.lu", A, square=False)
    factor, pivots, _info = lu_factor_ex(A, pivot=pivot)
    return _LuResult(*_ops.lu_unpack(factor, pivots))


def _as_matrix_rhs(A, B):  # noqa: N803
    """``B`` as a batch of matrices for ``A X = B`` and whether it was a vector batch
    (PyTorch's rule: a 1-D ``B``, or one of ``A``'s shape less its last dimension)."""
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    return (B.unsqueeze(-1), True) if vector else (B, False)


def solve_ex(A, B, *, left=True, check_errors=False, out=None):  # noqa: N803
    """``(result, info)``: :func:`solve` through the LU factorization, with LAPACK's
    ``info`` (0, or the first zero on ``U``'s diagonal); ``check_errors=True`` raises
    PyTorch's :class:`LinAlgError` for a singular ``A``. Unlike PyTorch's (infinities or
    NaNs in the result), a singular ``A`` without ``check_errors`` raises too, from the
    triangular solve. Differentiable in ``A`` and ``B``."""
    if out is not None:
        raise NotImplementedError("linalg.solve_ex: out= is not supported")
    A, B = _tensor(A, "solve_ex"), _tensor(B, "solve_ex")
    _linalg_ops._matrices("linalg.solve", A)
    factor, pivots, info = lu_factor_ex(A)
    if check_errors:
        _linalg_ops._raise_at_first_info(info._data, lambda where, _: LinAlgError(
            f"torch.linalg.solve_ex: {where}The solver failed because the input matrix is "
            "singular."))
    if left:
        rhs, vector = _as_matrix_rhs(A, B)
        x = lu_solve(factor, pivots, rhs)
        return _SolveExResult(x.squeeze(-1) if vector else x, info)
    return _SolveExResult(lu_solve(factor, pivots, B, left=False), info)


def inv_ex(A, *, check_errors=False, out=None):  # noqa: N803
    """``(inverse, info)``: :func:`inv` through the LU factorization, with LAPACK's
    ``info`` (0, or the first zero on ``U``'s diagonal); ``check_errors=True`` raises
    PyTorch's :class:`LinAlgError` naming it. Unlike PyTorch's (infinities or NaNs), a
    singular matrix without ``check_errors`` raises too, from the triangular solve.
    Differentiable."""
    if out is not None:
        raise NotImplementedError("linalg.inv_ex: out= is not supported")
    A = _tensor(A, "inv_ex")
    _linalg_ops._matrices("linalg.inv_ex", A)
    factor, pivots, info = lu_factor_ex(A)
    if check_errors:
        _linalg_ops._raise_at_first_info(info._data, lambda where, i: LinAlgError(
            f"linalg.inv_ex: {where}The diagonal element {i} is zero, the inversion could "
            "not be completed because the input matrix is singular."))
    eye = _linalg_ops._eye_like(A)
    return _InvExResult(lu_solve(factor, pivots, eye.expand(*A.shape)), info)


def vander(x, *, N=None):  # noqa: N803
    """The Vandermonde matrix of ``x`` (``..., n``): columns ``x^0, x^1, ..., x^(N-1)``
    (``N`` defaults to ``n``), built by cumulative products (differentiable).

    >>> import gradcore as gc
    >>> gc.linalg.vander(gc.tensor([1, 2, 3]))
    tensor([[1, 1, 1],
            [1, 2, 4],
            [1, 3, 9]])
    """
    x = _tensor(x, "vander")
    n = (x.shape[-1] if x.ndim else 1) if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    ones = x.new_ones((*x.shape, 1))
    powers = x.unsqueeze(-1).expand(*x.shape, n - 1).cumprod(-1)
    return _ops.cat([ones, powers], dim=-1)


def tensorinv(A, ind=2, *, out=None):  # noqa: N803
    """The inverse of ``A`` read as a linear map from its last ``A.ndim - ind``
    dimensions to its first ``ind``: shape ``A.shape[ind:] + A.shape[:ind]``, with
    ``tensordot(tensorinv(A, ind), A, ind)`` the identity."""
    if out is not None:
        raise NotImplementedError("linalg.tensorinv: out= is not supported")
    A = _tensor(A, "tensorinv")
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) "
                           f"== prod(self.shape[:ind]), but got {cols} != {rows}")
    return inv(A.reshape(rows, cols)).reshape(*A.shape[ind:], *A.shape[:ind])


def tensorsolve(A, B, dims=None, *, out=None):  # noqa: N803
    """``X`` with ``tensordot(A, X, X.ndim) == B``: ``X`` of shape ``A.shape[B.ndim:]``;
    ``dims``: dimensions of ``A`` moved to the end first."""
    if out is not None:
        raise NotImplementedError("linalg.tensorsolve: out= is not supported")
    A, B = _tensor(A, "tensorsolve"), _tensor(B, "tensorsolve")
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        order = [d for d in range(A.ndim) if d not in dims] + list(dims)
        A = A.permute(*order)
    result_shape = tuple(A.shape[B.ndim:])
    n = math.prod(result_shape)
    if B.numel() != n or tuple(A.shape[:B.ndim]) != tuple(B.shape):
        raise RuntimeError(f"Expected self to satisfy the requirement "
                           f"prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), "
                           f"but got {n} != {math.prod(A.shape[:B.ndim])}")
    return solve(A.reshape(B.numel(), n), B.reshape(B.numel())).reshape(*result_shape)


def householder_product(A, tau, *, out=None):  # noqa: N803
    """The first ``n`` columns of ``H_1 H_2 ... H_k`` for ``A`` (``..., m, n``) and
    ``tau`` (``..., k``): ``H_i = I - tau_i v_i v_i^T``, ``v_i`` column ``i`` of ``A``
    below the diagonal with a 1 on it (LAPACK's orgqr: ``Q`` from ``geqrf``'s output).
    Composed of differentiable ops, so its gradients are those of the product."""
    if out is not None:
        raise NotImplementedError("linalg.householder_product: out= is not supported")
    A, tau = _tensor(A, "householder_product"), _tensor(tau, "householder_product")
    op = "torch.linalg.householder_product"
    if A.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    if tau.ndim < 1:
        raise RuntimeError(f"{op}: tau must have at least 1 dimension.")
    if tau.ndim != A.ndim - 1:
        raise RuntimeError(f"{op}: Expected tau to have one dimension less than input, but "
                           f"got tau.ndim equal to {tau.ndim} and input.ndim is equal to "
                           f"{A.ndim}")
    m, n = A.shape[-2:]
    k = tau.shape[-1]
    if m < n:
        raise RuntimeError(f"{op}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if n < k:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{op}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if A.dtype != tau.dtype:
        raise RuntimeError(f"{op}: tau dtype {tau.dtype} does not match input dtype "
                           f"{A.dtype}")
    eye = _linalg_ops._eye_like(A, m, n)
    v_all = _ops.tril(A, -1) + eye  # (..., m, n): the reflectors' vectors
    q = eye.expand(*A.shape[:-2], m, n)
    for i in reversed(range(k)):  # Q = H_i Q, last reflector first
        v = v_all[..., :, i:i + 1]
        t = tau[..., i:i + 1].unsqueeze(-1)
        q = q - t * _ops.matmul(v, _ops.matmul(v.mT, q))
    return q
