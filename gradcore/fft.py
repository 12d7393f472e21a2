"""``gradcore.fft``: PyTorch's ``torch.fft``, the real-valued helpers of it.

``fftfreq`` and ``rfftfreq`` (the sample frequencies of a transform) and ``fftshift`` and
``ifftshift`` (the zero frequency moved to the middle and back: a roll, differentiable)
work as in PyTorch. gradcore has no complex tensors, so the transforms themselves
(``fft``, ``ifft``, ``rfft``, ``irfft``, ``fftn``, ``hfft``, ...) raise
``NotImplementedError`` saying so.

>>> import gradcore as gc
>>> gc.fft.fftfreq(4)
tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
>>> gc.fft.fftshift(gc.arange(5))
tensor([3, 4, 0, 1, 2])
"""

from __future__ import annotations

from . import creation as _creation
from . import ops as _ops
from .dtypes import get_default_dtype as _get_default_dtype

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
           "irfft2", "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn",
           "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _check_n(n, name: str) -> int:
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"{name}(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    return n


def fftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False, layout=None,
            pin_memory=False):
    """The sample frequencies of a length-``n`` transform with sample spacing ``d``:
    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)`` (the default float dtype
    unless ``dtype`` says otherwise).

    >>> import gradcore as gc
    >>> gc.fft.fftfreq(5, d=0.5)
    tensor([ 0.0000,  0.4000,  0.8000, -0.8000, -0.4000])
    """
    n = _check_n(n, "fft_fftfreq")
    ks = [*range((n - 1) // 2 + 1), *range(-(n // 2), 0)]
    out = _creation.tensor(ks, dtype=dtype or _get_default_dtype(), device=device)
    out = out / (d * n)
    return out.requires_grad_(requires_grad) if requires_grad else out


def rfftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False):
    """The sample frequencies of :func:`rfft`'s result for a length-``n`` signal:
    ``[0, 1, ..., n // 2] / (d * n)``.

    >>> import gradcore as gc
    >>> gc.fft.rfftfreq(5)
    tensor([0.0000, 0.2000, 0.4000])
    """
    n = _check_n(n, "fft_rfftfreq")
    out = _creation.arange(n // 2 + 1, dtype=dtype or _get_default_dtype(), device=device)
    out = out / (d * n)
    return out.requires_grad_(requires_grad) if requires_grad else out


def _shift(input, dim, sign: int):  # noqa: A002
    if dim is None:
        dims = tuple(range(input.ndim))
    elif isinstance(dim, int):
        dims = (dim,)
    else:
        dims = tuple(dim)
    if not dims:
        raise RuntimeError("`shifts` required")  # (PyTorch's roll's)
    ndim = max(input.ndim, 1)
    for d in dims:
        if not -ndim <= d < ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-ndim}, {ndim - 1}], but got {d})")
    shifts = tuple(sign * (input.shape[d] // 2) for d in dims)
    return _ops.roll(input, shifts, dims)


def fftshift(input, dim=None):  # noqa: A002
    """``input`` rolled so that the zero frequency is in the middle: by ``size // 2``
    along each of ``dim`` (all dimensions when None). Differentiable.

    >>> import gradcore as gc
    >>> gc.fft.fftshift(gc.fft.fftfreq(4))
    tensor([-0.5000, -0.2500,  0.0000,  0.2500])
    """
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):  # noqa: A002
    """The inverse of :func:`fftshift`: rolled back by ``size // 2`` along each of
    ``dim`` (all dimensions when None). Differentiable."""
    return _shift(input, dim, -1)


def _complex_transform(name: str):
    def transform(input, *args, **kwargs):  # noqa: A002
        raise NotImplementedError(f"torch.fft.{name} is not available in gradcore: its "
                                  "result is complex, and gradcore has no complex tensors")
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = (f"PyTorch's ``torch.fft.{name}``: raises ``NotImplementedError`` "
                         "(its result or input is complex; gradcore has no complex tensors).")
    return transform


fft = _complex_transform("fft")
ifft = _complex_transform("ifft")
fft2 = _complex_transform("fft2")
ifft2 = _complex_transform("ifft2")
fftn = _complex_transform("fftn")
ifftn = _complex_transform("ifftn")
rfft = _complex_transform("rfft")
irfft = _complex_transform("irfft")
rfft2 = _complex_transform("rfft2")
irfft2 = _complex_transform("irfft2")
rfftn = _complex_transform("rfftn")
irfftn = _complex_transform("irfftn")
hfft = _complex_transform("hfft")
ihfft = _complex_transform("ihfft")
hfft2 = _complex_transform("hfft2")
ihfft2 = _complex_transform("ihfft2")
hfftn = _complex_transform("hfftn")
ihfftn = _complex_transform("ihfftn")
