"""``gradcore.nn.utils.parametrizations``: PyTorch's ready-made parametrizations
(``torch.nn.utils.parametrizations``), each registered with
:func:`~gradcore.nn.utils.parametrize.register_parametrization`:

* :func:`weight_norm`: the weight as magnitude times direction (``original0`` the
  magnitude ``g``, ``original1`` the direction ``v``);
* :func:`spectral_norm`: the weight divided by its largest singular value, estimated by
  power iteration (buffers ``_u`` and ``_v``);
* :func:`orthogonal`: an orthogonal matrix (or one with orthonormal columns or rows)
  made from a free one by the matrix exponential, the Cayley map or Householder
  reflections.
"""

from __future__ import annotations

from enum import Enum, auto

from ... import creation as _creation
from ... import dtypes as _dtypes
from ...autograd.grad_mode import no_grad
from ...ops import linalg as _la
from ...ops import pointwise as _pw
from ...ops import shape as _shape
from ...tensor import Tensor
from .. import functional as F
from ..modules import Module
from . import parametrize
from .weight_norm import _norm_except_dim, _weight_norm

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# ---- orthogonal ----------------------------------------------------------------------
def _is_orthogonal(Q, eps=None):
    n, k = Q.size(-2), Q.size(-1)
    Id = _creation.eye(k, dtype=Q.dtype, device=Q.device)
    eps = 10.0 * n * _dtypes.finfo(Q.dtype).eps
    return bool(_pw.allclose(Q.mH @ Q, Id, atol=eps))


def _make_orthogonal(A):
    """The ``Q`` of ``A``'s QR decomposition with ``R``'s diagonal made positive (the
    unique one), as PyTorch's ``geqrf`` then ``householder_product`` give."""
    from ...linalg import qr
    Q, R = qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _geqrf(A):
    """``torch.geqrf``: LAPACK's QR factorization as it stores it, ``R`` on and above
    the diagonal, the Householder vectors below it, and their scales ``tau`` (NumPy's
    ``qr(mode="raw")``, on the host; for assignments, not differentiated)."""
    import numpy as np

    from ... import backend
    a = np.asarray(backend.to_host(A.detach()._data))
    pairs = [np.linalg.qr(m, mode="raw") for m in a.reshape(-1, *a.shape[-2:])]
    h = np.stack([p[0].T for p in pairs]).reshape(a.shape)   # (raw: transposed)
    tau = np.stack([p[1] for p in pairs]).reshape(*a.shape[:-2], -1)
    return (_creation.tensor(h.astype(a.dtype), device=A.device),
            _creation.tensor(tau.astype(a.dtype), device=A.device))


def _householder_product(A, tau):
    """``torch.linalg.householder_product``: the first ``k`` columns of the product of
    the reflections ``I - tau_i v_i v_i^T``, ``v_i`` the ``i``-th column of ``A`` below
    the diagonal with a 1 on it (composed of differentiable operations)."""
    n, k = A.size(-2), A.size(-1)
    eye = _creation.eye(n, dtype=A.dtype, device=A.device)
    rows = _creation.arange(n, device=A.device)
    Q = eye.expand(*A.shape[:-2], n, n)
    for i in range(k):
        v = A[..., :, i] * (rows > i) + (rows == i).to(A.dtype)  # (*, n)
        H = eye - tau[..., i, None, None] * (v.unsqueeze(-1) * v.unsqueeze(-2))
        Q = Q @ H
    return Q[..., :k]


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    base: Tensor

    def __init__(self, weight, orthogonal_map: _OrthMaps, *,
                 use_trivialization=True) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = _shape.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)],
                               dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _la.matrix_exp(A)
            else:
                from ...linalg import solve
                Id = _creation.eye(n, dtype=A.dtype, device=A.device)
                Q = solve(Id - 0.5 * A, Id + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError("Expected a matrix or batch of matrices of shape "
                                 f"{self.shape}. Got a tensor of shape {Q.shape}.")
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the "
                        "Cayley parametrizations when use_trivialization=False.")
                A, tau = _geqrf(Q)
                A.diagonal(dim1=-2, dim2=-1).sign_()
                A.diagonal(dim1=-2, dim2=-1)[tau == 0.0] *= -1
                return A.mT if transpose else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                N = _creation.randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype,
                                    device=Q.device)
                Q = _make_orthogonal(_shape.cat([Q, N], dim=-1))
            self.base = Q
            neg_Id = _creation.zeros_like(Q_init)
            neg_Id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_Id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Make ``module.<name>`` (a matrix, or a batch of them) orthogonal: orthonormal
    columns (tall), rows (wide), or both (square), as PyTorch's
    ``parametrizations.orthogonal``.

    ``orthogonal_map``: ``"matrix_exp"`` (square matrices' default), ``"cayley"`` or
    ``"householder"`` (the others' default). With ``use_trivialization`` (the default)
    the parametrization keeps a ``base`` buffer (the matrix at registration, made
    orthogonal) and maps from there; assigning an orthogonal matrix to ``module.<name>``
    sets it.

    >>> import gradcore as gc
    >>> from gradcore import nn
    >>> layer = nn.utils.parametrizations.orthogonal(nn.Linear(3, 3))
    >>> bool(gc.allclose(layer.weight @ layer.weight.T, gc.eye(3), atol=1e-5))
    True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = ("matrix_exp" if weight.size(-2) == weight.size(-1)
                          or weight.is_complex() else "householder")
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# ---- weight_norm ---------------------------------------------------------------------
class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return _norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int = 0):
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` (the norm over every
    dimension but ``dim``; ``dim=None``: over all), as PyTorch's
    ``parametrizations.weight_norm``: ``parametrizations.<name>.original0`` holds ``g``,
    ``original1`` holds ``v``. A state dict of the old :func:`gradcore.nn.utils.weight_norm`
    (``<name>_g``, ``<name>_v``) loads too.

    >>> from gradcore import nn
    >>> layer = nn.utils.parametrizations.weight_norm(nn.Linear(3, 2))
    >>> sorted(layer.state_dict())
    ['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys,
                                 unexpected_keys, error_msgs) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


# ---- spectral_norm -------------------------------------------------------------------
class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim())
                                                if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations: int) -> None:
        with no_grad():
            for _ in range(n_power_iterations):
                self._u = F.normalize(_la.mv(weight_mat, self._v), dim=0, eps=self.eps,
                                      out=self._u)
                self._v = F.normalize(_la.mv(weight_mat.H, self._u), dim=0, eps=self.eps,
                                      out=self._v)

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = _la.vdot(u, _la.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its spectral norm, as PyTorch's
    ``parametrizations.spectral_norm``: the largest singular value of the weight as a
    matrix (``dim`` first: 1 for the transposed convolutions, else 0 by default),
    estimated by ``n_power_iterations`` steps of power iteration at each use in training
    mode (15 at registration); the estimates are buffers
    ``parametrizations.<name>.0._u`` and ``._v``, which evaluation mode uses as they
    are.

    >>> from gradcore import nn
    >>> layer = nn.utils.parametrizations.spectral_norm(nn.Linear(4, 3))
    >>> sorted(layer.state_dict())  # doctest: +NORMALIZE_WHITESPACE
    ['bias', 'parametrizations.weight.0._u', 'parametrizations.weight.0._v',
     'parametrizations.weight.original']
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d,
                                       ConvTranspose3d)) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
