"""``torch.backends.cuda``: ``matmul``'s precision flags (settable, read nowhere) and
``is_built()``."""

from __future__ import annotations

from .. import backend

__all__ = ["matmul", "is_built"]


class _Matmul:
    """``torch.backends.cuda.matmul``: the flags programs set for PyTorch's GEMMs."""

    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    def __repr__(self):
        return "<gradcore.backends.cuda.matmul>"


matmul = _Matmul()


def is_built() -> bool:
    """Whether CUDA can be used (gradcore builds its kernels at run time)."""
    return backend.cuda_is_available()
