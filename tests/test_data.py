"""``gc.utils.data`` (issue 14, item 1): datasets, samplers, ``default_collate`` and the
``DataLoader``, compared with ``torch.utils.data`` wherever the result does not depend on
the random stream (lengths, batch shapes, the batches of an unshuffled loader, collated
structures and dtypes, the errors and their messages), and checked for the structure of
PyTorch's shuffling where it does (a new order each epoch, fixed by a seed)."""

from __future__ import annotations

import collections
import sys
import warnings

import numpy as np
import pytest

import gradcore as gc
from gradcore.utils.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    StackDataset,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    default_convert,
    get_worker_info,
    random_split,
)

from conftest import host, needs_torch

Point = collections.namedtuple("Point", "x y")


def _plain(obj):
    """A batch as plain Python: tensors of either library as (dtype name, shape, values)."""
    if hasattr(obj, "dtype") and hasattr(obj, "shape") and not isinstance(obj, np.ndarray):
        values = obj.detach().cpu().numpy() if hasattr(obj, "detach") else host(obj)
        return ("tensor", str(obj.dtype).split(".")[-1], tuple(obj.shape), values.tolist())
    if isinstance(obj, dict):
        return (type(obj).__name__, {k: _plain(v) for k, v in obj.items()})
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return (type(obj).__name__, tuple(_plain(v) for v in obj))
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [_plain(v) for v in obj])
    return obj


def _both(make):
    """``make(module)`` for gradcore and torch: ``make(gc)`` gets gc.utils.data."""
    import torch
    return make(gc, gc.utils.data), make(torch, torch.utils.data)


def _raises_alike(make):
    import torch
    with pytest.raises(Exception) as expected:
        make(torch, torch.utils.data)
    with pytest.raises(Exception) as got:
        make(gc, gc.utils.data)
    assert type(got.value) is type(expected.value), (got.value, expected.value)
    assert str(got.value) == str(expected.value)


# ---- the package -----------------------------------------------------------------------------
def test_reachable_as_in_pytorch():
    import gradcore.utils.data as data
    assert gc.utils.data is data and data.DataLoader is DataLoader
    from gradcore.utils.data.dataloader import default_collate as from_dataloader
    from gradcore.utils.data.dataset import Dataset as from_dataset
    from gradcore.utils.data.sampler import Sampler
    assert from_dataloader is default_collate and from_dataset is Dataset
    assert issubclass(RandomSampler, Sampler)
    assert data._utils.collate.default_collate is default_collate
    assert get_worker_info() is None


# ---- datasets ----------------------------------------------------------------------------------
def test_dataset_base_and_addition():
    class Squares(Dataset):
        def __init__(self, n):
            self.n = n

        def __getitem__(self, i):
            return i * i

        def __len__(self):
            return self.n

    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement "
                                                  "__getitem__."):
        Dataset()[0]
    both = Squares(3) + Squares(2)
    assert isinstance(both, ConcatDataset) and [both[i] for i in range(5)] == [0, 1, 4, 0, 1]
    assert Dataset[int] is not None  # (generic, for type hints, as PyTorch's)

    class Count(IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

    chained = Count(2) + Count(3)
    assert isinstance(chained, ChainDataset) and list(chained) == [0, 1, 0, 1, 2]
    with pytest.raises(TypeError, match="has no len"):
        len(chained)  # (a stream without __len__)


def test_tensor_dataset(device):
    x, y = gc.arange(12.0).reshape(4, 3), gc.tensor([1, 0, 1, 1])
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    a, b = ds[2]
    assert host(a).tolist() == [6.0, 7.0, 8.0] and b.item() == 1
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(gc.zeros(3), gc.zeros(2))


@needs_torch
def test_concat_stack_chain_and_subset_as_pytorch():
    def make(m, d):
        cat = d.ConcatDataset([range(3), range(10, 14)])
        stack = d.StackDataset(range(3), [5, 6, 7])
        named = d.StackDataset(a=range(2), b=[8, 9])
        sub = d.Subset(range(10, 20), [4, 0, 7])
        return ([cat[i] for i in range(7)], cat[-1], cat[-7], len(cat), cat.cumulative_sizes,
                stack[1], len(stack), named[1], [sub[i] for i in range(3)], len(sub),
                sub.__getitems__([2, 0]))
    ours, theirs = _both(make)
    assert ours == theirs
    _raises_alike(lambda m, d: d.ConcatDataset([]))
    _raises_alike(lambda m, d: d.ConcatDataset([range(3)])[-4])
    _raises_alike(lambda m, d: d.StackDataset(range(2), range(3)))
    _raises_alike(lambda m, d: d.StackDataset())
    _raises_alike(lambda m, d: d.StackDataset(range(2), b=range(2)))

    class Stream(gc.utils.data.IterableDataset):
        def __iter__(self):
            return iter([1])

    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        ConcatDataset([Stream()])
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(ChainDataset([range(3)]))
    assert list(StackDataset(range(2), range(2))) == [(0, 0), (1, 1)]


def test_a_subset_redefining_getitem_must_redefine_getitems():
    class Doubled(Subset):
        def __getitem__(self, idx):
            return 2 * super().__getitem__(idx)

    with pytest.raises(NotImplementedError, match="overrides __getitem__ but not "
                                                  "__getitems__"):
        Doubled(range(5), [1, 2])


@needs_torch
@pytest.mark.parametrize("n, lengths", [
    (10, [3, 7]), (10, [0.3, 0.7]), (10, [0.33, 0.33, 0.34]), (7, [0.5, 0.5]),
    (3, [0.1, 0.9]), (100, [0.8, 0.1, 0.1]), (11, [0.25] * 4), (5, [5]),
])
def test_random_split_lengths_as_pytorch_and_disjoint(n, lengths):
    import torch
    ours = random_split(range(n), lengths, generator=gc.Generator().manual_seed(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the zero-length warning: checked below)
        theirs = torch.utils.data.random_split(range(n), lengths,
                                               generator=torch.Generator().manual_seed(0))
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    seen = [i for s in ours for i in s.indices]
    assert sorted(seen) == list(range(n))  # disjoint and covering
    assert all(isinstance(s, Subset) and s.dataset == range(n) for s in ours)


@needs_torch
def test_random_split_errors_and_warning_as_pytorch():
    _raises_alike(lambda m, d: d.random_split(range(10), [3, 3]))
    _raises_alike(lambda m, d: d.random_split(range(10), [1.5, -0.5]))
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(2), [1.0, 0.0])


def test_random_split_is_fixed_by_its_generator_or_the_default():
    def split(**kw):
        return [s.indices for s in random_split(range(50), [0.5, 0.5], **kw)]

    assert split(generator=gc.Generator().manual_seed(3)) == \
        split(generator=gc.Generator().manual_seed(3))
    assert split(generator=gc.Generator().manual_seed(3)) != \
        split(generator=gc.Generator().manual_seed(4))
    gc.manual_seed(9)
    a = split()
    gc.manual_seed(9)
    assert split() == a


# ---- samplers ---------------------------------------------------------------------------------
@needs_torch
def test_sequential_and_batch_samplers_as_pytorch():
    def make(m, d):
        seq = d.SequentialSampler(range(7))
        return (list(seq), len(seq),
                [list(d.BatchSampler(seq, bs, drop)) for bs in (1, 2, 3, 7, 8)
                 for drop in (False, True)],
                [len(d.BatchSampler(seq, bs, drop)) for bs in (1, 2, 3, 7, 8)
                 for drop in (False, True)])
    ours, theirs = _both(make)
    assert ours == theirs
    _raises_alike(lambda m, d: d.BatchSampler(range(3), 0, False))
    _raises_alike(lambda m, d: d.BatchSampler(range(3), True, False))
    _raises_alike(lambda m, d: d.BatchSampler(range(3), 2, 1))
    with pytest.raises(NotImplementedError):
        iter(gc.utils.data.Sampler())


@needs_torch
def test_random_sampler_lengths_and_errors_as_pytorch():
    def make(m, d):
        g = m.Generator().manual_seed(0)
        cases = [d.RandomSampler(range(10), generator=g),
                 d.RandomSampler(range(10), num_samples=25, generator=g),
                 d.RandomSampler(range(10), num_samples=4, generator=g),
                 d.RandomSampler(range(10), replacement=True, num_samples=70, generator=g),
                 d.RandomSampler(range(10), replacement=True, generator=g)]
        return [(len(s), len(list(s))) for s in cases]
    ours, theirs = _both(make)
    assert ours == theirs
    _raises_alike(lambda m, d: d.RandomSampler(range(3), replacement=1))
    _raises_alike(lambda m, d: d.RandomSampler(range(3), num_samples=0))
    _raises_alike(lambda m, d: d.RandomSampler(range(3), num_samples=2.0))


def test_random_sampler_orders():
    s = RandomSampler(range(20), generator=gc.Generator().manual_seed(1))
    first, second = list(s), list(s)
    assert sorted(first) == sorted(second) == list(range(20)) and first != second
    again = list(RandomSampler(range(20), generator=gc.Generator().manual_seed(1)))
    assert again == first
    # more samples than the dataset without replacement: whole permutations, then a part
    long = list(RandomSampler(range(5), num_samples=12, generator=gc.Generator()))
    assert sorted(long[:5]) == sorted(long[5:10]) == list(range(5)) and len(set(long[10:])) == 2
    with_replacement = list(RandomSampler(range(3), replacement=True, num_samples=300,
                                          generator=gc.Generator()))
    assert set(with_replacement) == {0, 1, 2} and len(with_replacement) == 300
    # without a generator: seeded by the default generator at each pass
    gc.manual_seed(2)
    a = list(RandomSampler(range(20)))
    gc.manual_seed(2)
    b = RandomSampler(range(20))
    assert list(b) == a and list(b) != a


def test_subset_random_sampler():
    s = SubsetRandomSampler([10, 20, 30, 40], generator=gc.Generator().manual_seed(0))
    order = list(s)
    assert len(s) == 4 and sorted(order) == [10, 20, 30, 40]
    orders = {tuple(s) for _ in range(30)}
    assert len(orders) > 1


@needs_torch
def test_weighted_random_sampler():
    _raises_alike(lambda m, d: d.WeightedRandomSampler([1.0, 2.0], 0))
    _raises_alike(lambda m, d: d.WeightedRandomSampler([1.0, 2.0], True))
    _raises_alike(lambda m, d: d.WeightedRandomSampler([1.0, 2.0], 2, replacement=1))
    _raises_alike(lambda m, d: d.WeightedRandomSampler([[1.0, 2.0]], 2))
    s = WeightedRandomSampler([0.0, 1.0, 3.0, 0.0], 40000, generator=gc.Generator())
    drawn = np.array(list(s))
    assert len(s) == 40000 and s.weights.dtype == gc.float64
    np.testing.assert_allclose(np.bincount(drawn, minlength=4) / 40000, [0, 0.25, 0.75, 0],
                               atol=0.01)
    distinct = list(WeightedRandomSampler([1.0, 1.0, 5.0, 0.5], 4, replacement=False))
    assert sorted(distinct) == [0, 1, 2, 3]


# ---- collation ---------------------------------------------------------------------------------
COLLATE_CASES = {
    "ints": lambda m: [0, 1, 2, 3],
    "floats": lambda m: [1.5, 2.0],
    "int-then-float": lambda m: [1, 2.5],
    "bools": lambda m: [True, False],
    "strings": lambda m: ["a", "b", "c"],
    "bytes": lambda m: [b"x", b"y"],
    "tensors": lambda m: [m.tensor([1.0, 2.0]), m.tensor([3.0, 4.0])],
    "int-tensors": lambda m: [m.tensor(1), m.tensor(2)],
    "numpy-arrays": lambda m: [np.array([1.0, 2.0], dtype=np.float32)] * 3,
    "numpy-float64": lambda m: [np.array([[1.0]]), np.array([[2.0]])],
    "numpy-ints": lambda m: [np.array([1, 2], dtype=np.int32)] * 2,
    "numpy-scalars": lambda m: [np.float32(1.0), np.float32(2.0)],
    "numpy-int-scalars": lambda m: [np.int32(1), np.int32(2)],
    "numpy-0d": lambda m: [np.array(1.0, dtype=np.float32)],
    "tuples": lambda m: [(0, 1), (2, 3)],
    "lists": lambda m: [[0, 1], [2, 3]],
    "mixed-tuple": lambda m: [(1, "a", b"x", 2.5)],
    "dicts": lambda m: [{"A": 0, "B": 1}, {"A": 100, "B": 100}],
    "nested": lambda m: [{"a": 1, "b": (1.5, m.zeros(2))}, {"a": 2, "b": (2.5, m.ones(2))}],
    "namedtuples": lambda m: [Point(0, m.zeros(2)), Point(1, m.ones(2))],
    "ordered-dict": lambda m: [collections.OrderedDict(x=1), collections.OrderedDict(x=2)],
    "samples-of-a-tensor-dataset": lambda m: [(m.zeros(3), m.tensor(1)), (m.ones(3),
                                                                         m.tensor(0))],
}


@needs_torch
@pytest.mark.parametrize("name", sorted(COLLATE_CASES))
def test_default_collate_as_pytorch(name):
    ours, theirs = _both(lambda m, d: d.default_collate(COLLATE_CASES[name](m)))
    assert _plain(ours) == _plain(theirs)


@needs_torch
@pytest.mark.parametrize("data", [
    lambda m: 3, lambda m: "abc", lambda m: np.float32(3.0), lambda m: np.array([1, 2]),
    lambda m: (1, np.array([1.0])), lambda m: [np.int64(3)], lambda m: np.array(["a"]),
    lambda m: {"a": np.zeros(2), "b": [np.ones(1), 2]}, lambda m: Point(np.array(0), 1),
    lambda m: m.zeros(2),
], ids=lambda f: "case")
def test_default_convert_as_pytorch(data):
    ours, theirs = _both(lambda m, d: d.default_convert(data(m)))
    if isinstance(ours, np.ndarray):
        assert isinstance(theirs, np.ndarray) and ours.tolist() == theirs.tolist()
    else:
        assert _plain(ours) == _plain(theirs)


@needs_torch
@pytest.mark.parametrize("batch", [
    lambda m: [[1, 2], [3]], lambda m: [object()], lambda m: [np.array(["a"])],
    lambda m: [m.ones(3), m.ones(2)],
], ids=["unequal-lists", "object", "numpy-strings", "unequal-tensors"])
def test_default_collate_errors_as_pytorch(batch):
    import torch
    with pytest.raises(Exception) as expected:
        torch.utils.data.default_collate(batch(torch))
    with pytest.raises(Exception) as got:
        default_collate(batch(gc))
    assert type(got.value) is type(expected.value)
    if not isinstance(expected.value, RuntimeError) or "stack" not in str(expected.value):
        assert str(got.value) == str(expected.value)


def test_collate_registry_can_be_extended():
    from gradcore.utils.data._utils.collate import collate, default_collate_fn_map

    class Box:
        def __init__(self, v):
            self.v = v

    def collate_boxes(batch, *, collate_fn_map=None):
        return sum(b.v for b in batch)

    table = {**default_collate_fn_map, Box: collate_boxes}
    assert collate([(Box(1), 2), (Box(3), 4)], collate_fn_map=table)[0] == 4


# ---- the DataLoader ------------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("n", [1, 7, 10, 64])
@pytest.mark.parametrize("batch_size", [1, 3, 10, 16])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("shuffle", [False, True])
def test_lengths_and_batch_shapes_as_pytorch(n, batch_size, drop_last, shuffle):
    def make(m, d):
        ds = d.TensorDataset(m.zeros(n, 2, 3), m.zeros(n, dtype=m.int64))
        loader = d.DataLoader(ds, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                              generator=m.Generator().manual_seed(0))
        shapes = [(type(b).__name__, tuple(b[0].shape), tuple(b[1].shape),
                   str(b[1].dtype).split(".")[-1]) for b in loader]
        return len(loader), shapes
    ours, theirs = _both(make)
    assert ours == theirs


@needs_torch
def test_unshuffled_batches_equal_pytorchs():
    class Records(Dataset):
        def __len__(self):
            return 11

        def __getitem__(self, i):
            return {"x": np.full(2, i, dtype=np.float32), "y": i % 3, "w": i / 2,
                    "name": f"r{i}", "pair": (i, [i, -i])}

    def make(m, d):
        loaders = [d.DataLoader(Records(), batch_size=4),
                   d.DataLoader(Records(), batch_size=4, drop_last=True),
                   d.DataLoader(Records(), batch_size=None),
                   d.DataLoader(Records(), sampler=[3, 1, 4, 1, 5], batch_size=2),
                   d.DataLoader(Records(), batch_sampler=[[0, 2], [9], [4, 5, 6]]),
                   d.DataLoader(Records(), batch_size=3, collate_fn=lambda b: len(b)),
                   d.DataLoader(range(5), batch_size=2),
                   d.DataLoader(m.arange(6.0).reshape(3, 2), batch_size=2)]
        return [(len(loader), [_plain(b) for b in loader]) for loader in loaders]
    ours, theirs = _both(make)
    assert ours == theirs


@needs_torch
@pytest.mark.parametrize("make", [
    lambda m, d: d.DataLoader(range(5), sampler=[0, 1], shuffle=True),
    lambda m, d: d.DataLoader(range(5), batch_sampler=[[0]], batch_size=2),
    lambda m, d: d.DataLoader(range(5), batch_sampler=[[0]], shuffle=True),
    lambda m, d: d.DataLoader(range(5), batch_sampler=[[0]], sampler=[0]),
    lambda m, d: d.DataLoader(range(5), batch_sampler=[[0]], drop_last=True),
    lambda m, d: d.DataLoader(range(5), batch_size=None, drop_last=True),
    lambda m, d: d.DataLoader(range(5), num_workers=-1),
    lambda m, d: d.DataLoader(range(5), timeout=-1),
    lambda m, d: d.DataLoader(range(5), prefetch_factor=2),
    lambda m, d: d.DataLoader(range(5), num_workers=2, prefetch_factor=-1),
    lambda m, d: d.DataLoader(range(5), persistent_workers=True),
    lambda m, d: d.DataLoader(range(5), multiprocessing_context="spawn"),
    lambda m, d: d.DataLoader(range(5), num_workers=2, multiprocessing_context="bogus"),
    lambda m, d: d.DataLoader(range(5), num_workers=2, multiprocessing_context=3),
    lambda m, d: d.DataLoader(d.ChainDataset([]), shuffle=True),
    lambda m, d: d.DataLoader(d.ChainDataset([]), sampler=[1]),
    lambda m, d: d.DataLoader(d.ChainDataset([]), batch_sampler=[[1]]),
    lambda m, d: setattr(d.DataLoader(range(5)), "batch_size", 3),
    lambda m, d: setattr(d.DataLoader(range(5)), "dataset", [1]),
    lambda m, d: iter(d.DataLoader(range(5), timeout=1)),
    lambda m, d: len(d.DataLoader(type("Stream", (d.IterableDataset,),
                                       {"__iter__": lambda self: iter([])})())),
    lambda m, d: d.DataLoader(range(5), batch_size=0),
    lambda m, d: d.RandomSampler(range(3), num_samples=-1),
])
def test_bad_arguments_raise_as_pytorch(make):
    _raises_alike(make)


def test_settable_attributes_and_the_loader_attributes():
    loader = DataLoader(range(10), batch_size=4, shuffle=True, drop_last=True, num_workers=2)
    assert loader.batch_size == 4 and loader.drop_last and loader.num_workers == 2
    assert isinstance(loader.sampler, RandomSampler)
    assert isinstance(loader.batch_sampler, BatchSampler)
    assert loader.prefetch_factor == 2 and loader.collate_fn is default_collate
    loader.num_workers = 0  # (not among the frozen attributes, as in PyTorch)
    plain = DataLoader(range(3), batch_size=None)
    assert plain.collate_fn is default_convert and plain.batch_sampler is None
    assert isinstance(plain.sampler, SequentialSampler)


def _epochs(loader, n=3):
    return [[host(y).tolist() for _, y in loader] for _ in range(n)]


def _ds(n=30, device=None):
    return TensorDataset(gc.arange(float(n), device=device).reshape(n, 1),
                         gc.arange(n, device=device))


def test_shuffling_takes_a_new_order_each_epoch_fixed_by_the_generator(device):
    def run(seed):
        return _epochs(DataLoader(_ds(device=device), batch_size=7, shuffle=True,
                                  generator=gc.Generator().manual_seed(seed)))

    a, b, c = run(0), run(0), run(1)
    assert a == b and a != c
    assert a[0] != a[1] != a[2]
    for epoch in a:
        assert sorted(sum(epoch, [])) == list(range(30))
        assert [len(batch) for batch in epoch] == [7, 7, 7, 7, 2]


def test_shuffling_without_a_generator_follows_manual_seed(device):
    def run():
        return _epochs(DataLoader(_ds(device=device), batch_size=8, shuffle=True))

    gc.manual_seed(5)
    a = run()
    gc.manual_seed(5)
    assert run() == a
    gc.manual_seed(6)
    assert run() != a


def test_each_epoch_draws_a_base_seed_as_pytorch_does():
    """A pass consumes the loader's generator (its base seed) even unshuffled."""
    g = gc.Generator().manual_seed(0)
    before = host(g.get_state())
    list(DataLoader(range(4), generator=g))
    assert not np.array_equal(before, host(g.get_state()))
    fresh = gc.Generator().manual_seed(0)
    fresh._stream.integers(0, 1 << 63)  # (the one draw of a pass)
    np.testing.assert_array_equal(host(fresh.get_state()), host(g.get_state()))


def test_a_pass_asks_its_sampler_for_one_iterator():
    class Counting(gc.utils.data.Sampler):
        calls = 0

        def __iter__(self):
            Counting.calls += 1
            return iter(range(4))

        def __len__(self):
            return 4

    loader = DataLoader(range(4), sampler=Counting(), batch_size=2)
    assert [b.tolist() for b in loader] == [[0, 1], [2, 3]]
    list(loader)
    assert Counting.calls == 2


@pytest.mark.parametrize("workers", [1, 3])
def test_workers_give_the_batches_of_the_main_process(workers):
    def run(**kw):
        loader = DataLoader(_ds(), batch_size=4, shuffle=True,
                            generator=gc.Generator().manual_seed(3), **kw)
        return _epochs(loader)

    calls = []
    base = run()
    assert run(num_workers=workers, worker_init_fn=calls.append, pin_memory=False,
               prefetch_factor=4, in_order=False) == base
    assert calls == []  # (no worker process: nothing to initialize)
    # persistent workers: one iterator for all epochs, which (as PyTorch's) draws no new
    # base seed after the first, so the later epochs' orders differ from the plain loader's
    persistent = run(num_workers=workers, persistent_workers=True)
    assert persistent[0] == base[0] and persistent[1:] != base[1:]
    assert all(sorted(sum(epoch, [])) == list(range(30)) for epoch in persistent)


def test_persistent_workers_keep_one_iterator():
    loader = DataLoader(range(6), batch_size=2, num_workers=2, persistent_workers=True)
    first = iter(loader)
    assert [b.tolist() for b in first] == [[0, 1], [2, 3], [4, 5]]
    assert iter(loader) is first and [b.tolist() for b in loader] == [[0, 1], [2, 3], [4, 5]]
    plain = DataLoader(range(6), batch_size=2)
    assert iter(plain) is not iter(plain)


def test_get_worker_info_is_none_while_loading():
    class Probe(Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return get_worker_info() is None

    assert [b.tolist() for b in DataLoader(Probe(), batch_size=3, num_workers=2)] == \
        [[True, True, True]]


def test_pin_memory_is_accepted():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (PyTorch's "no accelerator" warning, on a CPU box)
        batches = [host(b).tolist() for b in DataLoader(range(4), batch_size=2,
                                                         pin_memory=True)]
    assert batches == [[0, 1], [2, 3]]


class _Stream(IterableDataset):
    def __init__(self, n, declared=None):
        self.n, self.declared = n, declared

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n if self.declared is None else self.declared


@needs_torch
def test_iterable_datasets_as_pytorch():
    import torch

    def make(m, d):
        class Stream(d.IterableDataset):
            def __iter__(self):
                return iter(range(7))

            def __len__(self):
                return 7

        loaders = [d.DataLoader(Stream(), batch_size=3),
                   d.DataLoader(Stream(), batch_size=3, drop_last=True),
                   d.DataLoader(Stream(), batch_size=None),
                   d.DataLoader(Stream())]
        return [(len(loader), [_plain(b) for b in loader]) for loader in loaders]
    assert make(gc, gc.utils.data) == make(torch, torch.utils.data)


def test_iterable_dataset_longer_than_declared_warns():
    loader = DataLoader(_Stream(5, declared=2), batch_size=None)
    assert len(loader) == 2
    with pytest.warns(UserWarning, match="was reported to be 2"):
        list(loader)


# ---- batches of a TensorDataset: one index per tensor, on its device --------------------------
def test_tensor_dataset_batches_equal_the_collated_samples(device):
    x = gc.randn(23, 2, 3, device=device)
    y = gc.randint(0, 5, (23,), device=device)
    ds = TensorDataset(x, y)
    train, _ = random_split(ds, [0.7, 0.3], generator=gc.Generator().manual_seed(1))
    for dataset in (ds, train, Subset(train, [3, 1, 2])):
        order = list(range(len(dataset)))[::-1]
        loader = DataLoader(dataset, batch_size=4, sampler=order)
        for batch, start in zip(loader, range(0, len(order), 4)):
            expected = default_collate([dataset[i] for i in order[start:start + 4]])
            assert isinstance(batch, list) and len(batch) == 2
            for got, want in zip(batch, expected):
                assert got.device == want.device == x.device
                assert got.dtype == want.dtype and got.shape == want.shape
                np.testing.assert_array_equal(host(got), host(want))


def test_tensor_dataset_batches_take_one_index_per_tensor(monkeypatch):
    ds = TensorDataset(gc.randn(20, 3), gc.arange(20), gc.zeros(20, 2))
    reads = []
    real = gc.Tensor.__getitem__

    def counted(self, idx):
        reads.append(idx)
        return real(self, idx)

    monkeypatch.setattr(gc.Tensor, "__getitem__", counted)
    monkeypatch.setattr(TensorDataset, "__getitem__", lambda self, i: pytest.fail("per sample"))
    batches = list(DataLoader(ds, batch_size=8, shuffle=True))
    monkeypatch.undo()
    assert len(batches) == 3 and len(reads) == 3 * 3
    assert all(isinstance(i, gc.Tensor) and i.dtype == gc.int64 for i in reads)


def test_a_custom_dataset_or_collate_takes_the_general_path():
    class Doubling(TensorDataset):
        def __getitem__(self, i):
            return tuple(2 * t[i] for t in self.tensors)

    ds = Doubling(gc.arange(4.0))
    assert [host(b[0]).tolist() for b in DataLoader(ds, batch_size=2)] == [[0, 2], [4, 6]]
    plain = TensorDataset(gc.arange(4.0))
    sizes = DataLoader(plain, batch_size=3, collate_fn=lambda samples: len(samples))
    assert list(sizes) == [3, 1]


def test_a_gpu_dataset_is_batched_on_the_device_without_a_host_read(standin):
    ds = TensorDataset(gc.randn(100, 3, device="cuda"), gc.arange(100, device="cuda"))
    train, _ = random_split(ds, [0.8, 0.2], generator=gc.Generator().manual_seed(0))
    loader = DataLoader(train, batch_size=16, shuffle=True)
    standin.reset_syncs(log=True)
    shapes = [(tuple(x.shape), x.device.type, y.device.type) for x, y in loader]
    assert standin.host_syncs() == 0, standin.sync_log()
    assert shapes == [((16, 3), "cuda", "cuda")] * 5


def test_an_out_of_range_index_is_an_index_error():
    loader = DataLoader(TensorDataset(gc.zeros(3)), sampler=[0, 5], batch_size=2)
    with pytest.raises(IndexError, match="out of bounds"):
        list(loader)


# ---- a PyTorch program, with gradcore as torch ---------------------------------------------------
PROGRAM = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
X = torch.randn(512, 4)
true_w = torch.tensor([[1.5], [-2.0], [0.5], [3.0]])
y = X @ true_w + 0.1 * torch.randn(512, 1)
train_ds, val_ds = torch.utils.data.random_split(TensorDataset(X, y), [0.875, 0.125])
train_loader = DataLoader(train_ds, batch_size=32, shuffle=True)
val_loader = DataLoader(val_ds, batch_size=64)

model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.MSELoss()
first = None
for epoch in range(15):
    model.train()
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optimizer.step()
        first = loss.item() if first is None else first
    model.eval()
    with torch.no_grad():
        val = sum(loss_fn(model(xb), yb).item() * len(xb) for xb, yb in val_loader) / len(val_ds)
result = (len(train_loader), len(val_loader), first, val)
"""


def _run_program(module):
    names = ("", ".nn", ".nn.functional", ".optim", ".utils", ".utils.data")
    saved = {f"torch{n}": sys.modules.get(f"torch{n}") for n in names}
    try:
        for n in names:  # what `import gradcore as torch` stands for, module by module
            target = module
            for part in filter(None, n.split(".")):
                target = getattr(target, part)
            sys.modules[f"torch{n}"] = target
        namespace = {}
        exec(compile(PROGRAM, "program.py", "exec"), namespace)
        return namespace["result"]
    finally:
        for name, mod in saved.items():
            if mod is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = mod


def test_a_pytorch_training_loop_runs_with_gradcore_as_torch():
    batches, val_batches, first, val = _run_program(gc)
    assert (batches, val_batches) == (14, 1)
    assert val < 0.05 < first  # (the noise's variance is 0.01)


@needs_torch
def test_the_same_program_under_pytorch_gives_the_same_shape_of_result():
    import torch
    ours, theirs = _run_program(gc), _run_program(torch)
    assert ours[:2] == theirs[:2]
    assert ours[3] < 0.05 and theirs[3] < 0.05
