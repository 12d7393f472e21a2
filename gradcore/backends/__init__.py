"""``gc.backends``, as ``torch.backends``: what programs test or set on PyTorch's
backends (``import torch.backends.cudnn as cudnn; cudnn.benchmark = True``). gradcore
has no cuDNN and no MPS (``is_available()`` is False); the flags are accepted and read
nowhere.

Modules:
    cudnn: ``benchmark``, ``deterministic``, ``enabled``, ``allow_tf32`` (settable),
        ``is_available()`` (False), ``version()`` (None).
    mps: ``is_available()`` and ``is_built()``, both False.
    cuda: ``matmul.allow_tf32`` and ``matmul.allow_fp16_reduced_precision_reduction``
        (settable), ``is_built()`` (whether CUDA can be used).
    mkldnn: ``enabled`` (settable), ``is_available()`` (False).
    openmp: ``is_available()`` (False).

>>> import gradcore as gc
>>> gc.backends.cudnn.is_available(), gc.backends.mps.is_available()
(False, False)
"""

from . import cuda, cudnn, mkldnn, mps, openmp

__all__ = ["cuda", "cudnn", "mkldnn", "mps", "openmp"]
