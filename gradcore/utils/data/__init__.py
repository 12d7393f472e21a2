"""``gradcore.utils.data``: datasets, samplers and the ``DataLoader``, as
``torch.utils.data`` (``import gradcore as torch; from torch.utils.data import
DataLoader, TensorDataset`` works).

>>> import gradcore as gc
>>> from gradcore.utils.data import DataLoader, TensorDataset
>>> loader = DataLoader(TensorDataset(gc.randn(100, 3), gc.randn(100)), batch_size=32,
...                     shuffle=True)
>>> len(loader)
4
"""

from . import _utils
from .dataloader import DataLoader, default_collate, default_convert, get_worker_info
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .distributed import DistributedSampler
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
           "DistributedSampler",
           "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset",
           "Subset", "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler",
           "default_collate", "default_convert", "get_worker_info", "random_split"]
