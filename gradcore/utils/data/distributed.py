"""``torch.utils.data.distributed``: :class:`DistributedSampler`, which gives each
process of a distributed run its own share of a dataset's indices.

>>> from gradcore.utils.data.distributed import DistributedSampler
>>> list(DistributedSampler(range(10), num_replicas=3, rank=1, shuffle=False))
[1, 4, 7, 0]
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TypeVar

from ... import creation
from ... import distributed as _dist
from ...random import Generator
from .sampler import Sampler

__all__ = ["DistributedSampler"]

T_co = TypeVar("T_co", covariant=True)


class DistributedSampler(Sampler[T_co]):
    """The indices of ``dataset`` that process ``rank`` of ``num_replicas`` reads: every
    ``num_replicas``-th index of the (shuffled) order, starting at ``rank``, as
    PyTorch's. Without ``drop_last`` the order is padded with its own first indices to a
    multiple of ``num_replicas`` (each process reads ``ceil(len / num_replicas)``);
    with it, the tail that does not divide evenly is dropped.

    With ``shuffle``, each pass takes ``gc.randperm(len(dataset))`` drawn by a generator
    seeded with ``seed + epoch``: the same order in every process, a new one after
    :meth:`set_epoch`. (gradcore's random streams are not PyTorch's: the permutation
    for a seed differs from PyTorch's; without ``shuffle`` the indices are the same.)

    ``num_replicas`` and ``rank`` default to ``gradcore.distributed.get_world_size()``
    and ``get_rank()``: 1 and 0 once ``init_process_group`` has made gradcore's
    one-process group, PyTorch's ``ValueError`` (the default process group has not been
    initialized) before.

    Args:
        dataset: a sized dataset.
        num_replicas: the number of processes (default: the process group's size).
        rank: this process's rank in ``[0, num_replicas)`` (default: the group's).
        shuffle: shuffle the indices (default True).
        seed: the shuffle's seed, the same in every process (default 0).
        drop_last: drop the tail that does not divide evenly instead of padding.
    """

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        # (PyTorch first asks dist.is_available(); gradcore's is False, it has no
        # communication backend, yet its one-process group answers the two questions)
        if num_replicas is None:
            num_replicas = _dist.get_world_size()
        if rank is None:
            rank = _dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas)
                                         / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[T_co]:
        if self.shuffle:
            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = creation.randperm(len(self.dataset), generator=g, device="cpu").tolist()
        else:
            indices = list(range(len(self.dataset)))
        if not self.drop_last:  # padded with the first indices to divide evenly
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:  # the tail dropped
            indices = indices[:self.total_size]
        if len(indices) != self.total_size:
            raise AssertionError(f"Number of indices ({len(indices)}) does not match "
                                 f"total_size ({self.total_size})")
        indices = indices[self.rank:self.total_size:self.num_replicas]
        if len(indices) != self.num_samples:
            raise AssertionError(f"Number of subsampled indices ({len(indices)}) does not "
                                 f"match num_samples ({self.num_samples})")
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch: with ``shuffle``, the next pass's order is the permutation of
        seed ``seed + epoch`` (call it before each epoch's ``DataLoader`` iteration, or
        every epoch repeats the same order).

        Args:
            epoch: the epoch's number.
        """
        self.epoch = epoch
