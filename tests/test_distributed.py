"""gradcore.distributed (a world of one process) and nn.parallel's wrappers."""

import numpy as np
import pytest

import gradcore as gc
import gradcore.distributed as dist

from conftest import host, needs_torch


@pytest.fixture
def world():
    dist.init_process_group("gloo", world_size=1, rank=0)
    yield
    dist.destroy_process_group()


def test_not_initialized_raises_as_pytorch():
    assert not dist.is_available() and not dist.is_initialized()
    msg = "Default process group has not been initialized"
    for call in (dist.get_rank, dist.get_world_size, dist.barrier,
                 lambda: dist.all_reduce(gc.ones(2))):
        with pytest.raises(ValueError, match=msg):
            call()
    with pytest.raises(ValueError, match=msg):
        gc.nn.parallel.DistributedDataParallel(gc.nn.Linear(2, 2))


def test_a_world_of_one_process(world):
    assert dist.is_initialized()
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "gloo")
    t = gc.tensor([1.0, 2.0])
    for op in dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MAX:
        assert dist.all_reduce(t, op=op) is None
    assert dist.all_reduce(t, async_op=True).wait()
    dist.broadcast(t, src=0)
    out = [gc.zeros(2)]
    dist.all_gather(out, t)
    np.testing.assert_array_equal(host(out[0]), [1.0, 2.0])
    np.testing.assert_array_equal(host(t), [1.0, 2.0])
    with pytest.raises(ValueError, match="twice"):
        dist.init_process_group("gloo", world_size=1, rank=0)
    with pytest.raises(TypeError, match="ReduceOp"):
        dist.all_reduce(t, op="sum")


def test_more_than_one_process_is_refused(monkeypatch):
    with pytest.raises(RuntimeError, match="one process.*world_size=2"):
        dist.init_process_group("nccl", world_size=2, rank=0)
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    with pytest.raises(RuntimeError, match="world_size=4, rank=3"):
        dist.init_process_group()
    assert not dist.is_initialized()


def test_ddp_trains_as_the_module_does(world):
    gc.manual_seed(0)
    model = gc.nn.Linear(3, 2)
    ddp = gc.nn.parallel.DistributedDataParallel(model)
    x = gc.randn(4, 3)
    with ddp.no_sync():
        ddp(x).sum().backward()
    assert ddp.module is model and model.weight.grad is not None
    assert list(ddp.state_dict()) == ["module.weight", "module.bias"]
    with pytest.raises(RuntimeError, match="doesn't have any parameter"):
        gc.nn.parallel.DistributedDataParallel(gc.nn.ReLU())


@needs_torch
def test_data_parallel_is_pytorch_s_on_one_device():
    import torch

    g = gc.nn.DataParallel(gc.nn.Linear(2, 3))
    t = torch.nn.DataParallel(torch.nn.Linear(2, 3))
    assert repr(g) == repr(t)
    assert list(g.state_dict()) == list(t.state_dict())
    # (with a GPU, PyTorch's DataParallel moves the module, and so its state and output,
    # to cuda:0: read back with force=True)
    g.load_state_dict({k: gc.tensor(v.numpy(force=True)) for k, v in t.state_dict().items()})
    x = np.arange(4.0, dtype=np.float32).reshape(2, 2)
    np.testing.assert_allclose(host(g(gc.tensor(x)).detach()),
                               t(torch.tensor(x)).detach().numpy(force=True), rtol=1e-6)
    if not gc.cuda.is_available():  # without a GPU, PyTorch's ignores device_ids
        assert gc.nn.DataParallel(gc.nn.Linear(2, 3), device_ids=[0, 1]).device_ids == []


def test_data_parallel_moves_the_module_and_inputs_to_the_gpu(standin):
    """With a CUDA device, PyTorch's one-device DataParallel moves the module to cuda:0
    (or device_ids[0]) and the inputs' tensors with it; parameters moved elsewhere after
    are refused, naming the device."""
    lin = gc.nn.Linear(2, 3)
    dp = gc.nn.DataParallel(lin)
    assert dp.device_ids == [0] and dp.output_device == 0
    assert lin.weight.device == gc.device("cuda:0")
    x = gc.arange(4.0).reshape(2, 2)  # on the CPU: moved, as PyTorch's scatter does
    out = dp(x)
    assert out.device == gc.device("cuda:0")
    np.testing.assert_allclose(host(out.detach()), host(lin(x.cuda()).detach()))
    out.sum().backward()
    assert lin.weight.grad.device == gc.device("cuda:0")
    with pytest.raises(RuntimeError, match="one device"):
        gc.nn.DataParallel(gc.nn.Linear(2, 3), device_ids=[0, 1])
    dp2 = gc.nn.DataParallel(gc.nn.Linear(2, 3), device_ids=[gc.device("cuda:0")])
    assert dp2.device_ids == [0]
    dp2.module.to("cpu")
    with pytest.raises(RuntimeError, match=r"on device cuda:0 \(device_ids\[0\]\) but found "
                                           r"one of them on device: cpu"):
        dp2(gc.ones(1, 2))
