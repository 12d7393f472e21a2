"""torch.multiprocessing: shared CPU tensors across forked processes (Hogwild), spawn."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import gradcore as gc
import gradcore.multiprocessing as mp

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the fork start method (Linux's default)")


def _add_rank(rank, model, t):
    with gc.no_grad():
        model.weight.add_(rank + 1)
        t[rank] = 10.0 * (rank + 1)


def test_forked_processes_write_shared_parameters_the_parent_sees():
    model = gc.nn.Linear(3, 2)
    before = model.weight.detach().clone()
    t = gc.zeros(2).share_memory_()
    assert t.is_shared() and not gc.ones(2).is_shared()
    assert model.share_memory() is model and model.weight.is_shared()
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_add_rank, args=(r, model, t)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert all(p.exitcode == 0 for p in procs)
    np.testing.assert_allclose((model.weight.detach() - before).numpy(), np.full((2, 3), 3.0),
                               atol=1e-6)
    assert t.tolist() == [10.0, 20.0]
    # the parameter is the same object, still trainable
    model(gc.ones(4, 3)).sum().backward()
    assert model.weight.grad.shape == (2, 3)


def _exit_with(rank, code):
    sys.exit(code if rank == 1 else 0)


def test_spawn_runs_fn_with_its_index_and_reports_a_failed_process():
    mp.spawn(_exit_with, args=(0,), nprocs=2, start_method="fork")
    with pytest.raises(mp.ProcessExitedException, match="process 1 terminated with exit "
                                                         "code 3"):
        mp.spawn(_exit_with, args=(3,), nprocs=2, start_method="fork")
    ctx = mp.spawn(_exit_with, args=(0,), nprocs=1, join=False, start_method="fork")
    assert ctx.join() is True and len(ctx.pids()) == 1


def test_sharing_strategies_and_unpicklable_tensors():
    assert mp.get_sharing_strategy() == "file_descriptor"
    mp.set_sharing_strategy("file_system")
    try:
        assert mp.get_sharing_strategy() == "file_system"
    finally:
        mp.set_sharing_strategy("file_descriptor")
    with pytest.raises(ValueError, match="Invalid sharing strategy"):
        mp.set_sharing_strategy("shm")
    import pickle  # noqa: PLC0415

    with pytest.raises(TypeError, match="not picklable"):  # (only shared ones go)
        pickle.dumps(gc.ones(2))
    shared = gc.ones(2).share_memory_()
    other = pickle.loads(pickle.dumps(shared))  # by the block's name: the same memory
    other[0] = 7.0
    assert shared.tolist() == [7.0, 1.0] and other.is_shared()
    sent = gc.nn.Parameter(gc.zeros(3)).share_memory_()  # (alive while it is received)
    p = pickle.loads(pickle.dumps(sent))
    assert isinstance(p, gc.nn.Parameter) and p.requires_grad
    assert mp.Queue is not None and mp.cpu_count() >= 1


def test_spawned_processes_are_handed_shared_parameters():
    """The "spawn" start method (pytorch/examples' mnist_hogwild sets it) pickles the
    model: its shared parameters go by name, so the child's updates are the parent's."""
    model = gc.nn.Linear(3, 2).share_memory()
    before = model.weight.detach().clone()
    ctx = mp.get_context("spawn")
    t = gc.zeros(2).share_memory_()  # (kept alive here until the child has attached)
    p = ctx.Process(target=_add_rank, args=(1, model, t))
    p.start()
    p.join()
    assert p.exitcode == 0
    np.testing.assert_allclose((model.weight.detach() - before).numpy(),
                               np.full((2, 3), 2.0), atol=1e-6)
    assert t.tolist() == [0.0, 20.0]
