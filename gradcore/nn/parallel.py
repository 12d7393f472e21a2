"""``gradcore.nn.parallel``: PyTorch's data-parallel wrappers, for one device.

:class:`DataParallel` splits a batch over several GPUs in PyTorch; gradcore runs on one
device, where PyTorch's wrapper also just calls the module: it does so here, keeping
PyTorch's ``module.`` prefix in ``state_dict`` keys so that checkpoints carry over.
:class:`DistributedDataParallel` wraps a module in the default process group of
``gradcore.distributed`` (a world of one process: gradients need no averaging).

>>> import gradcore as gc
>>> model = gc.nn.DataParallel(gc.nn.Linear(2, 3))
>>> list(model.state_dict())
['module.weight', 'module.bias']
"""

from __future__ import annotations

import contextlib

from .. import distributed as _dist
from .modules import Module

__all__ = ["DataParallel", "DistributedDataParallel"]


def _device_ids(device_ids) -> list:
    ids = []
    for d in device_ids or ():
        ids.append(d if isinstance(d, int) else getattr(d, "index", None) or 0)
    if len(ids) > 1:
        raise RuntimeError(f"DataParallel: gradcore runs on one device; device_ids={ids} "
                           "names more than one")
    return ids


class DataParallel(Module):
    """Run ``module`` on one device (PyTorch's ``nn.DataParallel`` with one device, or
    none, calls the module as it is). ``device_ids`` may name at most one device."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel: expected a Module, got {type(module).__name__}")
        self.module = module
        self.device_ids = _device_ids(device_ids)
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


class DistributedDataParallel(Module):
    """Wrap ``module`` for training in the default process group, which in gradcore is a
    world of one process (``gradcore.distributed.init_process_group`` first: as in
    PyTorch, ``ValueError`` without it). Gradients over one process need no all-reduce:
    ``forward`` calls the module; :meth:`no_sync` is accepted."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers=None, init_sync=True, process_group=None,
                 bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, **kwargs):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: expected a Module, got "
                            f"{type(module).__name__}")
        if not any(p.requires_grad for p in module.parameters()):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        _dist.get_world_size()  # ValueError when no group was made, as in PyTorch
        self.module = module
        self.device_ids = _device_ids(device_ids)
        self.output_device = output_device
        self.dim = dim
        self.find_unused_parameters = find_unused_parameters

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Skip the gradient all-reduce inside the block (there is none over one process)."""
        yield
