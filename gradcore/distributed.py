"""``gradcore.distributed``: the one-process part of ``torch.distributed``.

gradcore trains in one process on one device; it has no communication backend (no
NCCL, Gloo or MPI), so :func:`is_available` is ``False``. Programs written for
``torch.distributed`` still import and run as one process: :func:`init_process_group`
accepts a world of one (``world_size=1``, ``rank=0``, from the arguments or from the
``WORLD_SIZE``/``RANK`` variables a launcher sets), the collectives over a group of one
leave their tensors as they are (a sum, mean, minimum or maximum over one rank is the
tensor itself), and ``nn.parallel.DistributedDataParallel`` wraps a module in that
world. A world of more than one process is refused with an error saying so.

>>> import gradcore.distributed as dist
>>> dist.is_available(), dist.is_initialized()
(False, False)
>>> dist.init_process_group("gloo", world_size=1, rank=0)
>>> dist.get_rank(), dist.get_world_size(), dist.get_backend()
(0, 1, 'gloo')
>>> dist.destroy_process_group()
"""

from __future__ import annotations

import enum
import os

__all__ = ["is_available", "is_initialized", "init_process_group", "destroy_process_group",
           "get_rank", "get_world_size", "get_backend", "barrier", "all_reduce", "reduce",
           "broadcast", "all_gather", "all_gather_into_tensor", "ReduceOp",
           "is_nccl_available", "is_gloo_available", "is_mpi_available",
           "is_torchelastic_launched"]

_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to "
                    "call init_process_group.")
_BACKENDS = ("gloo", "nccl", "mpi", "ucc", "cpu:gloo,cuda:nccl")


class ReduceOp(enum.Enum):
    """The reductions of :func:`all_reduce` and :func:`reduce` (PyTorch's names)."""
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"


class _World:
    backend: str | None = None


_world = _World()


def is_available() -> bool:
    """``False``: gradcore has no communication backend (one process, one device)."""
    return False


def is_nccl_available() -> bool:
    """``False``: gradcore has no NCCL backend."""
    return False


def is_gloo_available() -> bool:
    """``False``: gradcore has no Gloo backend."""
    return False


def is_mpi_available() -> bool:
    """``False``: gradcore has no MPI backend."""
    return False


def is_torchelastic_launched() -> bool:
    """Whether a launcher (``torchrun``) started this process: ``TORCHELASTIC_RUN_ID`` is
    set, as PyTorch checks."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def is_initialized() -> bool:
    """Whether :func:`init_process_group` has made the default (one-process) group."""
    return _world.backend is not None


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout=None, world_size: int = -1, rank: int = -1, store=None,
                       group_name: str = "", pg_options=None, device_id=None) -> None:
    """Make the default process group: in gradcore, a world of one process.

    ``world_size`` and ``rank`` come from the arguments, else from ``WORLD_SIZE`` and
    ``RANK`` (which launchers set), else 1 and 0. A world of more than one process
    raises ``RuntimeError``: gradcore has no backend to communicate between processes.
    """
    if _world.backend is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if backend is not None and not isinstance(backend, str):
        raise TypeError(f"init_process_group: backend must be a string, got {backend!r}")
    size = world_size if world_size != -1 else int(os.environ.get("WORLD_SIZE", "1"))
    me = rank if rank != -1 else int(os.environ.get("RANK", "0"))
    if size != 1 or me != 0:
        raise RuntimeError(
            f"init_process_group: gradcore runs in one process (world_size=1, rank=0); "
            f"asked for world_size={size}, rank={me}: it has no backend (NCCL, Gloo, MPI) "
            "to communicate between processes")
    _world.backend = (backend or "gloo").lower()


def destroy_process_group(group=None) -> None:
    """Destroy the default group (``group=None``); a no-op when none was made, as in
    PyTorch when called twice is an error, here harmless."""
    _world.backend = None


def _check(op: str) -> None:
    if _world.backend is None:
        raise ValueError(_NOT_INITIALIZED)


def get_rank(group=None) -> int:
    """This process's rank: 0 (``ValueError`` before :func:`init_process_group`)."""
    _check("get_rank")
    return 0


def get_world_size(group=None) -> int:
    """The number of processes: 1 (``ValueError`` before :func:`init_process_group`)."""
    _check("get_world_size")
    return 1


def get_backend(group=None) -> str:
    """The backend named to :func:`init_process_group` (``"gloo"`` by default)."""
    _check("get_backend")
    return _world.backend


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Wait for every process of the group: with one, return at once."""
    _check("barrier")
    return _Work() if async_op else None


class _Work:
    """What ``async_op=True`` returns: already complete."""

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True


def _collective(op: str, tensor, async_op: bool):
    _check(op)
    from .tensor import Tensor  # noqa: PLC0415  (a layer below: only for the type check)
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(tensor).__name__}")
    return _Work() if async_op else None


def all_reduce(tensor, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``tensor`` over every process, in place: over one, it is unchanged."""
    if not isinstance(op, ReduceOp):
        raise TypeError(f"all_reduce: op must be a ReduceOp, got {op!r}")
    return _collective("all_reduce", tensor, async_op)


def reduce(tensor, dst: int = 0, op: ReduceOp = ReduceOp.SUM, group=None,
           async_op: bool = False):
    """Reduce ``tensor`` onto rank ``dst`` (0, the only one): unchanged."""
    if dst != 0:
        raise ValueError(f"reduce: dst={dst} is not a rank of a world of one process")
    return _collective("reduce", tensor, async_op)


def broadcast(tensor, src: int = 0, group=None, async_op: bool = False):
    """Send ``tensor`` from rank ``src`` (0, the only one) to all: unchanged."""
    if src != 0:
        raise ValueError(f"broadcast: src={src} is not a rank of a world of one process")
    return _collective("broadcast", tensor, async_op)


def all_gather(tensor_list: list, tensor, group=None, async_op: bool = False):
    """Gather ``tensor`` from every process into ``tensor_list`` (of one tensor)."""
    work = _collective("all_gather", tensor, async_op)
    if len(tensor_list) != 1:
        raise ValueError(f"all_gather: tensor_list must hold world_size (1) tensors, got "
                         f"{len(tensor_list)}")
    tensor_list[0].copy_(tensor)
    return work


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """Gather ``input_tensor`` from every process into ``output_tensor``: a copy."""
    work = _collective("all_gather_into_tensor", input_tensor, async_op)
    if output_tensor.numel() != input_tensor.numel():
        raise ValueError(f"all_gather_into_tensor: the output holds {output_tensor.numel()} "
                         f"values, world_size (1) times the input's {input_tensor.numel()} "
                         "are needed")
    output_tensor.copy_(input_tensor.reshape(output_tensor.shape))
    return work
