"""``gc.cuda.amp``: the older spellings of ``gc.amp`` for CUDA (PyTorch's
``torch.cuda.amp``): ``from gradcore.cuda.amp import GradScaler, autocast``."""

from .. import amp as _amp

__all__ = ["autocast", "GradScaler"]


def autocast(enabled=True, dtype=None, cache_enabled=True):
    """``gc.amp.autocast("cuda", dtype=dtype, enabled=enabled)`` (float16 unless
    ``dtype`` says otherwise)."""
    return _amp.autocast("cuda", dtype=dtype or "float16", enabled=enabled)


def GradScaler(init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,  # noqa: N802
               growth_interval=2000, enabled=True):
    """``gc.amp.GradScaler("cuda", ...)`` with the same arguments."""
    return _amp.GradScaler("cuda", init_scale, growth_factor, backoff_factor,
                           growth_interval, enabled)
