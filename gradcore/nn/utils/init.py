"""``torch.nn.utils.skip_init``: a module made without its initialization's cost."""

from __future__ import annotations

import inspect

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` whose parameters and buffers PyTorch leaves
    uninitialized (their values unspecified). gradcore has no meta device to build on,
    so here the module is made as usual: its values are its class's initial ones. The
    class must take a ``device`` argument, as PyTorch requires."""
    from ..modules import Module  # noqa: PLC0415  (gradcore.nn imports nn.utils)

    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs.setdefault("device", "cpu")
    return module_cls(*args, **kwargs)
