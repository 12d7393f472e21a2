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
import itertools

from .. import backend as _backend
from .. import distributed as _dist
from ..tensor import Tensor
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
    """Run ``module`` on one device, as PyTorch's ``nn.DataParallel`` does with one
    device: without a CUDA device it calls the module as it is (``device_ids`` empty);
    with one, it moves the module to ``cuda:<device_ids[0]>`` (``cuda:0`` by default),
    moves the inputs' tensors there and calls it. ``device_ids`` may name at most one
    device (gradcore splits no batch over several)."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel: expected a Module, got {type(module).__name__}")
        self.module = module
        self.dim = dim
        if not _backend.cuda_is_available():
            self.device_ids = []
            self.output_device = output_device
            return
        ids = _device_ids(device_ids if device_ids is not None else [0])
        if not ids:
            raise RuntimeError("no available devices were found")
        self.device_ids = ids
        self.output_device = ids[0] if output_device is None else \
            _device_ids([output_device])[0]
        self.src_device_obj = _backend.device(f"cuda:{ids[0]}")
        module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        src = self.src_device_obj
        for t in itertools.chain(self.module.parameters(), self.module.buffers()):
            if t.device != src:
                raise RuntimeError(f"module must have its parameters and buffers on device "
                                   f"{src} (device_ids[0]) but found one of them on device: "
                                   f"{t.device}")
        return self.module(*_to(inputs, src), **_to(kwargs, src))


def _to(x, dev):
    """``x`` with its tensors (in tuples, lists and dicts) moved to ``dev``: PyTorch's
    scatter over one device."""
    if isinstance(x, Tensor):
        return x.to(dev)
    if type(x) in (tuple, list):
        return type(x)(_to(v, dev) for v in x)
    if type(x) is dict:
        return {k: _to(v, dev) for k, v in x.items()}
    return x


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
