"""``DataLoader``: batches of a dataset, as ``torch.utils.data.DataLoader``.

Everything runs in the calling process. ``num_workers > 0`` is accepted and gives the
batches ``num_workers=0`` gives, in the same order (which for a map-style dataset are
the batches PyTorch's workers give too); no worker exists, so ``worker_init_fn`` is
never called and :func:`get_worker_info` is always None. ``pin_memory`` is accepted
(gradcore's host memory is not pinned).

The randomness is PyTorch's in structure: each pass (``iter(loader)``) draws a base seed
from ``generator`` (or from the default generator), and ``shuffle=True`` takes a new
permutation per pass from ``generator``, or from a generator seeded by a draw of the
default generator; so ``gc.manual_seed(s)`` (or ``generator=gc.Generator().manual_seed(s)``)
fixes the order of every epoch, and epochs differ.

A batch of a ``TensorDataset`` (or of a ``Subset`` of one, as ``random_split`` makes)
with the default collate is gathered by indexing each tensor once with the batch's
indices, on the tensor's device: a dataset held on a GPU is batched there, with no read
per sample and no trip through the host.

>>> import gradcore as gc
>>> from gradcore.utils.data import DataLoader, TensorDataset
>>> ds = TensorDataset(gc.arange(10.0).reshape(5, 2), gc.arange(5))
>>> [tuple(y.tolist()) for x, y in DataLoader(ds, batch_size=2)]
[(0, 1), (2, 3), (4,)]
"""

from __future__ import annotations

import math
import multiprocessing
import warnings
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

import numpy as np

from ... import _random, backend, creation, dtypes
from ._utils.collate import default_collate, default_convert
from .dataset import Dataset, IterableDataset, Subset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]

T_co = TypeVar("T_co", covariant=True)


def get_worker_info():
    """Information about the data-loading worker running this code: always None in
    gradcore, whose loading runs in the calling process (PyTorch's answer outside a
    worker)."""
    return None


class _DatasetKind:
    Map = 0
    Iterable = 1


class _InfiniteConstantSampler(Sampler):
    """None, forever: the sampler of an IterableDataset (its samples are not indexed)."""

    def __iter__(self):
        while True:
            yield None


# ---- fetching a batch ------------------------------------------------------------------
def _is_index(i) -> bool:
    return type(i) is int or isinstance(i, np.integer)


def _tensor_gatherer(dataset):
    """A function gathering a batch of ``dataset`` by indexing its tensors once each
    (the batch ``default_collate`` of its samples would give), when ``dataset`` is a
    ``TensorDataset`` behind zero or more ``Subset`` s, none of which redefines how a
    sample is read; else None."""
    subsets = []
    while type(dataset).__getitem__ is Subset.__getitem__ and \
            type(dataset).__getitems__ is Subset.__getitems__:
        subsets.append(dataset)
        dataset = dataset.dataset
    if type(dataset).__getitem__ is not TensorDataset.__getitem__ or \
            getattr(type(dataset), "__getitems__", None) is not None:
        return None

    def gather(batch):
        if not batch or not all(_is_index(i) for i in batch):
            return None
        for sub in subsets:
            batch = [sub.indices[i] for i in batch]
            if not all(_is_index(i) for i in batch):
                return None
        on_device = {}
        out = []
        for t in dataset.tensors:
            idx = on_device.get(t.device)
            if idx is None:
                idx = on_device[t.device] = creation.tensor(batch, dtype=dtypes.int64,
                                                            device=t.device)
            out.append(t[idx])
        return out
    return gather


class _MapDatasetFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self._gather = _tensor_gatherer(dataset) \
            if auto_collation and collate_fn is default_collate else None

    def fetch(self, possibly_batched_index):
        if self.auto_collation:
            if self._gather is not None:
                batch = self._gather(possibly_batched_index)
                if batch is not None:
                    return batch
            if hasattr(self.dataset, "__getitems__") and self.dataset.__getitems__:
                data = self.dataset.__getitems__(possibly_batched_index)
            else:
                data = [self.dataset[idx] for idx in possibly_batched_index]
        else:
            data = self.dataset[possibly_batched_index]
        return self.collate_fn(data)


class _IterableDatasetFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, possibly_batched_index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in possibly_batched_index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if len(data) == 0 or (self.drop_last and len(data) < len(possibly_batched_index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


class _DataLoaderIter:
    """One pass over a DataLoader (PyTorch's single-process iterator)."""

    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._collate_fn = loader.collate_fn
        if loader.pin_memory and not backend.cuda_is_available():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.", stacklevel=3)
        # (the sampler's iterator, then the base seed: PyTorch's order, so that the
        # generators advance as they do there)
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = int(_random.stream(loader.generator, "cpu", "DataLoader")
                              .integers(0, 1 << 63))
        self._start(loader)

    def _reset(self, loader) -> None:
        """A new pass of a persistent iterator (no new base seed, as in PyTorch)."""
        self._sampler_iter = iter(self._index_sampler)
        self._start(loader)

    def _start(self, loader) -> None:
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        fetcher = _MapDatasetFetcher if self._dataset_kind == _DatasetKind.Map else \
            _IterableDatasetFetcher
        self._dataset_fetcher = fetcher(self._dataset, self._auto_collation,
                                        self._collate_fn, self._drop_last)

    def __iter__(self):
        return self

    def __next__(self) -> Any:
        index = next(self._sampler_iter)  # (may raise StopIteration)
        data = self._dataset_fetcher.fetch(index)
        self._num_yielded += 1
        if self._dataset_kind == _DatasetKind.Iterable and \
                self._IterableDataset_len_called is not None and \
                self._num_yielded > self._IterableDataset_len_called:
            warnings.warn(f"Length of IterableDataset {self._dataset} was reported to be "
                          f"{self._IterableDataset_len_called}(when accessing "
                          f"len(dataloader)), but {self._num_yielded} samples have been "
                          f"fetched. ", stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{type(self).__name__} cannot be pickled")


class DataLoader(Generic[T_co]):
    """Iterate over ``dataset`` in batches, as ``torch.utils.data.DataLoader``.

    Args:
        dataset: a map-style :class:`Dataset` (``__getitem__``, ``__len__``) or an
            :class:`IterableDataset`.
        batch_size: samples per batch (default 1); None turns batching off (each item
            is a sample, converted by ``default_convert``).
        shuffle: a new random order each epoch (map-style datasets).
        sampler: the order of indices (a :class:`Sampler` or any iterable); not with
            ``shuffle``.
        batch_sampler: lists of indices, one per batch; not with ``batch_size``,
            ``shuffle``, ``sampler`` or ``drop_last``.
        num_workers: accepted; loading runs in the calling process whatever it is (the
            batches are the same).
        collate_fn: merges a list of samples into a batch (default
            :func:`default_collate`).
        pin_memory: accepted (no pinned memory).
        drop_last: drop the last batch when it is short.
        generator: the ``gc.Generator`` that shuffling and each epoch's base seed draw
            from (default: the default generator).

    ``timeout``, ``worker_init_fn``, ``multiprocessing_context``, ``prefetch_factor``,
    ``persistent_workers``, ``pin_memory_device`` and ``in_order`` are checked as PyTorch
    checks them; with no worker process they change nothing (``persistent_workers``
    keeps one iterator across epochs, as PyTorch does).

    ``len(loader)`` is the number of batches.

    >>> import gradcore as gc
    >>> ds = TensorDataset(gc.zeros(10, 3), gc.zeros(10))
    >>> loader = DataLoader(ds, batch_size=4, shuffle=True, drop_last=True)
    >>> len(loader), [tuple(x.shape) for x, _ in loader]
    (2, [(4, 3), (4, 3)])
    """

    def __init__(self, dataset: Dataset[T_co], batch_size: int | None = 1,
                 shuffle: bool | None = None, sampler: Sampler | Iterable | None = None,
                 batch_sampler: Sampler | Iterable | None = None, num_workers: int = 0,
                 collate_fn: Callable | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable | None = None, multiprocessing_context=None,
                 generator=None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, pin_memory_device: str = "",
                 in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 "
                             "to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"sampler option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._IterableDataset_len_called = None
        self._iterator = None
        object.__setattr__(self, "_initialized", True)

    @property
    def multiprocessing_context(self):
        """The multiprocessing context for workers (None; settable only with
        ``num_workers > 0``, as in PyTorch)."""
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context) -> None:
        if context is not None:
            if self.num_workers == 0:
                raise ValueError(f"multiprocessing_context can only be used with multi-process "
                                 f"loading (num_workers > 0), but got "
                                 f"num_workers={self.num_workers}")
            if isinstance(context, str):
                methods = multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError(f"multiprocessing_context option should specify a valid "
                                     f"start method in {methods!r}, but got "
                                     f"multiprocessing_context={context!r}")
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError(f"multiprocessing_context option should be a valid context "
                                f"object or a string specifying the start method, but got "
                                f"multiprocessing_context={context}")
        self.__multiprocessing_context = context

    def __setattr__(self, attr, val) -> None:
        if getattr(self, "_initialized", False) and attr in (
                "batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    def _get_iterator(self) -> _DataLoaderIter:
        if self.num_workers == 0 and self.timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        return _DataLoaderIter(self)

    def __iter__(self) -> _DataLoaderIter:
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        if self._dataset_kind == _DatasetKind.Iterable:
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else \
                    math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)
