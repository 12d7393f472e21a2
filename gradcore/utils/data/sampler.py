"""Samplers, as ``torch.utils.data.sampler``: the orders in which a ``DataLoader`` reads
a map-style dataset's indices (``SequentialSampler``, ``RandomSampler``,
``SubsetRandomSampler``, ``WeightedRandomSampler``) and ``BatchSampler``, which groups
them into batches.

Random samplers draw from their ``generator`` (a ``gc.Generator``) or, without one,
from a fresh generator seeded by a draw of the default generator at each pass, as
PyTorch's do: ``gc.manual_seed`` fixes every epoch's order, and each epoch differs.

>>> from gradcore.utils.data import BatchSampler, SequentialSampler
>>> list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False))
[[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Generic, TypeVar

from ... import _random, creation, dtypes, sampling
from ...random import Generator

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]

T_co = TypeVar("T_co", covariant=True)


def _fresh_generator() -> Generator:
    """A generator seeded by a draw of the default generator (PyTorch's RandomSampler
    draws ``torch.empty((), dtype=torch.int64).random_()`` for its seed)."""
    seed = int(_random.stream(None).integers(0, 1 << 63))
    return Generator().manual_seed(seed)


class Sampler(Generic[T_co]):
    """The base class of samplers: subclasses define ``__iter__`` (indices, or lists of
    indices for a batch sampler) and, where they can, ``__len__``."""

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """``0, 1, ..., len(data_source) - 1``, in order."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """The indices of ``data_source`` in a random order: a new permutation each pass
    (without replacement), or ``num_samples`` indices drawn with replacement.

    Args:
        data_source: a sized dataset.
        replacement: draw with replacement (default False).
        num_samples: how many indices a pass yields (default ``len(data_source)``;
            without replacement, more than that takes further permutations).
        generator: a ``gc.Generator`` (default: seeded from the default generator at
            each pass).
    """

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: int | None = None, generator=None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got "
                            f"replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        """The number of indices a pass draws: ``num_samples`` as given, else the
        dataset's length."""
        # (the dataset's size may change between passes)
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        generator = _fresh_generator() if self.generator is None else self.generator
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from creation.randint(high=n, size=(32,), generator=generator,
                                            device="cpu").tolist()
            yield from creation.randint(high=n, size=(self.num_samples % 32,),
                                        generator=generator, device="cpu").tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from creation.randperm(n, generator=generator, device="cpu").tolist()
            yield from creation.randperm(n, generator=generator,
                                         device="cpu").tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given ``indices`` in a random order (a new one each pass)."""

    def __init__(self, indices: Sequence[int], generator=None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in creation.randperm(len(self.indices), generator=self.generator,
                                   device="cpu").tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices of ``[0, len(weights))`` drawn with probabilities
    proportional to ``weights`` (with replacement by default; without, an index is drawn
    at most once per pass).

    >>> import gradcore as gc
    >>> s = WeightedRandomSampler([0.0, 1.0, 0.0], 4, generator=gc.Generator())
    >>> list(s)
    [1, 1, 1, 1]
    """

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator=None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or \
                num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        weights_tensor = creation.as_tensor(weights, dtype=dtypes.float64, device="cpu")
        if len(weights_tensor.shape) != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        drawn = sampling.multinomial(self.weights, self.num_samples, self.replacement,
                                     generator=self.generator)
        yield from iter(drawn.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list]):
    """The indices of ``sampler`` in lists of ``batch_size`` (the last one shorter, or
    dropped with ``drop_last=True``)."""

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int,
                 drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got "
                             f"drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list]:
        sampler_iter = iter(self.sampler)
        if self.drop_last:
            args = [sampler_iter] * self.batch_size  # (one iterator, batch_size times)
            for batch in zip(*args):
                yield [*batch]
        else:
            batch = [*itertools.islice(sampler_iter, self.batch_size)]
            while batch:
                yield batch
                batch = [*itertools.islice(sampler_iter, self.batch_size)]

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
