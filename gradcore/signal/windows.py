"""``gradcore.signal.windows``: PyTorch's ``torch.signal.windows``, SciPy's window functions.

Each takes the window length ``M`` and the keyword arguments ``sym`` (True: a
symmetric window, for filter design; False: a periodic one, for spectral analysis: the
first ``M`` points of a symmetric window of ``M + 1``), ``dtype`` (float32 or float64;
default: the default dtype), ``layout`` (``gc.strided`` only), ``device`` and
``requires_grad``, plus its own parameters. The windows are computed as PyTorch computes
them (a ``linspace`` and pointwise ops, in ``dtype``), so with ``requires_grad`` the
result is the output of those ops. Bad arguments raise PyTorch's ValueError.

>>> import gradcore as gc
>>> gc.signal.windows.hann(5)
tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from .. import creation as _creation
from .. import ops as _ops
from ..dtypes import float32, float64, get_default_dtype, strided

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _checks(name: str, M: int, dtype, layout) -> None:
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (float32, float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")


def _trivial(M, dtype, device, requires_grad):
    """The window of length 0 (empty) or 1 (a one), or None for longer ones."""
    if M == 0:
        return _creation.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    if M == 1:
        return _creation.ones((1,), dtype=dtype, device=device, requires_grad=requires_grad)
    return None


def _linspace(start, end, M, dtype, device, requires_grad):
    return _creation.linspace(start, end, M, dtype=dtype, device=device,
                              requires_grad=requires_grad)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype=None, layout=strided, device=None, requires_grad: bool = False):
    """The exponential (Poisson) window ``exp(-|n - center| / tau)``; ``center`` (only
    for ``sym=False``) defaults to the middle of the window. ``tau`` must be positive.

    >>> import gradcore as gc
    >>> gc.signal.windows.exponential(3, dtype=gc.float64)
    tensor([0.3679, 1.0000, 0.3679], dtype=gradcore.float64)
    """
    dtype = get_default_dtype() if dtype is None else dtype
    _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / tau
    k = _linspace(-center * constant, (-center + (M - 1)) * constant, M, dtype, device,
                  requires_grad)
    return _ops.exp(-_ops.abs(k))


def cosine(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
           requires_grad: bool = False):
    """The cosine (sine) window ``sin(pi (n + 0.5) / M)``, as SciPy computes it.

    >>> import gradcore as gc
    >>> gc.signal.windows.cosine(3)
    tensor([0.5000, 1.0000, 0.5000])
    """
    dtype = get_default_dtype() if dtype is None else dtype
    _checks("cosine", M, dtype, layout)
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    start = 0.5
    constant = math.pi / (M + 1 if not sym and M > 1 else M)
    k = _linspace(start * constant, (start + (M - 1)) * constant, M, dtype, device,
                  requires_grad)
    return _ops.sin(k)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None, layout=strided,
             device=None, requires_grad: bool = False):
    """The Gaussian window ``exp(-(n - (M - 1) / 2)^2 / (2 std^2))``; ``std`` must be
    positive.

    >>> import gradcore as gc
    >>> gc.signal.windows.gaussian(3)
    tensor([0.6065, 1.0000, 0.6065])
    """
    dtype = get_default_dtype() if dtype is None else dtype
    _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / (std * math.sqrt(2))
    k = _linspace(start * constant, (start + (M - 1)) * constant, M, dtype, device,
                  requires_grad)
    return _ops.exp(-(k ** 2))


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None, layout=strided,
           device=None, requires_grad: bool = False):
    """The Kaiser window ``I0(beta sqrt(1 - (2n / N - 1)^2)) / I0(beta)`` with
    ``N = M - 1`` (``sym``) or ``M``; ``beta`` must be non-negative.

    >>> import gradcore as gc
    >>> gc.signal.windows.kaiser(3, beta=1.0, dtype=gc.float64)
    tensor([0.7898, 1.0000, 0.7898], dtype=gradcore.float64)
    """
    dtype = get_default_dtype() if dtype is None else dtype
    _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    # beta in the window's dtype (PyTorch does so to avoid NaNs at the ends)
    b = _creation.tensor(beta, dtype=dtype, device=device)
    start = -b
    constant = 2.0 * b / (M if not sym else M - 1)
    end = _ops.minimum(b, start + (M - 1) * constant)
    k = _linspace(start.item(), end.item(), M, dtype, device, requires_grad)
    return _ops.i0(_ops.sqrt(b * b - _ops.pow(k, 2))) / _ops.i0(b)


def general_cosine(M, *, a: Iterable, sym: bool = True, dtype=None, layout=strided,
                   device=None, requires_grad: bool = False):
    """The general cosine window ``sum_i (-1)^i a_i cos(2 pi i n / N)`` with
    ``N = M - 1`` (``sym``) or ``M``, for the coefficients ``a`` (a list or tuple).

    >>> import gradcore as gc
    >>> gc.signal.windows.general_cosine(3, a=[0.5, 0.5])
    tensor([0., 1., 0.])
    """
    dtype = get_default_dtype() if dtype is None else dtype
    _checks("general_cosine", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    constant = 2 * math.pi / (M if not sym else M - 1)
    k = _linspace(0, (M - 1) * constant, M, dtype, device, requires_grad)
    a_i = _creation.tensor([(-1) ** i * w for i, w in enumerate(a)], device=device,
                           dtype=dtype, requires_grad=requires_grad)
    i = _creation.arange(a_i.shape[0], dtype=a_i.dtype, device=a_i.device,
                         requires_grad=a_i.requires_grad)
    return (a_i.unsqueeze(-1) * _ops.cos(i.unsqueeze(-1) * k)).sum(0)


def general_hamming(M, *, alpha: float = 0.54, sym: bool = True, dtype=None, layout=strided,
                    device=None, requires_grad: bool = False):
    """The general Hamming window ``alpha - (1 - alpha) cos(2 pi n / N)`` (``N``: as in
    :func:`general_cosine`).

    >>> import gradcore as gc
    >>> gc.signal.windows.general_hamming(3, alpha=0.6)
    tensor([0.2000, 1.0000, 0.2000])
    """
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
            requires_grad: bool = False):
    """The Hamming window ``0.54 - 0.46 cos(2 pi n / N)`` (``N``: as in
    :func:`general_cosine`).

    >>> import gradcore as gc
    >>> gc.signal.windows.hamming(3)
    tensor([0.0800, 1.0000, 0.0800])
    """
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
         requires_grad: bool = False):
    """The Hann window ``0.5 - 0.5 cos(2 pi n / N)`` (``N``: as in
    :func:`general_cosine`).

    >>> import gradcore as gc
    >>> gc.signal.windows.hann(4, sym=False)
    tensor([0.0000, 0.5000, 1.0000, 0.5000])
    """
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
             requires_grad: bool = False):
    """The Blackman window ``0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)`` (``N``:
    as in :func:`general_cosine`)."""
    dtype = get_default_dtype() if dtype is None else dtype
    _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
             requires_grad: bool = False):
    """The Bartlett (triangular) window ``1 - |2n / N - 1|`` (``N``: as in
    :func:`general_cosine`).

    >>> import gradcore as gc
    >>> gc.signal.windows.bartlett(5)
    tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    dtype = get_default_dtype() if dtype is None else dtype
    _checks("bartlett", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    start = -1
    constant = 2 / (M if not sym else M - 1)
    k = _linspace(start, start + (M - 1) * constant, M, dtype, device, requires_grad)
    return 1 - _ops.abs(k)


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
            requires_grad: bool = False):
    """The minimum 4-term Blackman-Harris window of Nuttall: :func:`general_cosine` with
    ``a = [0.3635819, 0.4891775, 0.1365995, 0.0106411]``."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)
