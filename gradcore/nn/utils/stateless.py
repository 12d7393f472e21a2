"""``torch.nn.utils.stateless``: the deprecated home of ``functional_call``."""

from __future__ import annotations

import warnings

__all__ = ["functional_call"]


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """:func:`gradcore.func.functional_call` by its deprecated path (PyTorch's, with its
    ``FutureWarning``)."""
    from ...func import functional_call as _functional_call  # noqa: PLC0415

    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)
