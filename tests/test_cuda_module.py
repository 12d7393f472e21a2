"""``gc.cuda`` as a module (PyTorch's ``torch.cuda``): streams, events, memory
statistics, NVTX, the legacy CUDA tensor types. Without a GPU (CUDA unusable) against
PyTorch's CPU build; with one through the CuPy stand-in (tests/cupy_standin)."""

import sys
import warnings

import numpy as np
import pytest

import gradcore as gc
from gradcore.backend import CudaUnavailableError

from conftest import host, needs_torch


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(gc.backend, "_probe_cuda", lambda: (None, "no GPU here"))


def test_torch_cuda_is_a_module_its_submodules_import(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", gc)
    for name in ("torch.cuda", "torch.cuda.amp", "torch.cuda.nvtx"):  # (PyTorch's own)
        monkeypatch.delitem(sys.modules, name, raising=False)
    import torch.cuda.amp  # noqa: PLC0415
    from torch.cuda.amp import GradScaler, autocast  # noqa: PLC0415
    from torch.cuda.nvtx import range_push  # noqa: F401, PLC0415

    assert torch.cuda is gc.cuda and torch.cuda.amp is gc.cuda.amp
    assert autocast is gc.cuda.amp.autocast and GradScaler is gc.cuda.amp.GradScaler
    assert gc.OutOfMemoryError is gc.cuda.OutOfMemoryError
    assert issubclass(gc.OutOfMemoryError, RuntimeError)


@needs_torch
def test_without_a_gpu_as_pytorchs_cpu_build(no_gpu):
    import torch  # noqa: PLC0415

    for name in ("memory_allocated", "memory_reserved", "max_memory_allocated",
                 "max_memory_reserved"):
        assert getattr(gc.cuda, name)() == getattr(torch.cuda, name)() == 0, name
    with pytest.warns(FutureWarning, match="renamed to `torch.cuda.memory_reserved`"):
        assert gc.cuda.memory_cached() == 0
    assert gc.cuda.memory_stats() == torch.cuda.memory_stats() == {}
    assert gc.cuda.is_initialized() is torch.cuda.is_initialized() is False
    assert gc.cuda.get_arch_list() == torch.cuda.get_arch_list() == []
    assert gc.cuda.get_gencode_flags() == torch.cuda.get_gencode_flags() == ""
    assert gc.cuda.get_rng_state_all() == torch.cuda.get_rng_state_all() == []
    assert gc.cuda.default_generators == torch.cuda.default_generators == ()
    gc.cuda.set_rng_state_all([])
    with gc.cuda.stream(None):  # (a no-op in PyTorch's CPU build too)
        pass
    gc.cuda.set_stream(None)
    # what PyTorch's CPU build refuses, refused with the reason there is no GPU
    for call in (gc.cuda.Event, gc.cuda.Stream, gc.cuda.current_stream,
                 gc.cuda.default_stream, gc.cuda.init, gc.cuda.mem_get_info,
                 gc.cuda.memory_summary, gc.cuda.reset_peak_memory_stats,
                 gc.cuda.is_current_stream_capturing, lambda: gc.cuda.nvtx.range_push("a"),
                 gc.cuda.nvtx.range_pop, lambda: gc.cuda.nvtx.mark("a"),
                 lambda: gc.cuda.FloatTensor([1.0]), lambda: gc.cuda.LongTensor(2)):
        with pytest.raises(CudaUnavailableError, match="no GPU here"):
            call()
    with pytest.raises(RuntimeError):  # (PyTorch's: "Tried to instantiate dummy base class")
        torch.cuda.Event()
    with pytest.raises(CudaUnavailableError, match="no GPU here"), \
            gc.cuda.nvtx.range("step {}", 1):
        pass


def test_events_time_and_order_streams(standin):
    start, end = gc.cuda.Event(enable_timing=True), gc.cuda.Event(enable_timing=True)
    assert start.query() and start.device is None  # never recorded: nothing to wait for
    start.synchronize()
    with pytest.raises(ValueError, match="must be recorded"):
        start.elapsed_time(end)
    start.record()
    x = gc.ones(256, 256, device="cuda")
    (x @ x).sum()
    end.record()
    end.synchronize()
    assert end.query() and start.device == gc.device("cuda:0")
    ms = start.elapsed_time(end)
    assert isinstance(ms, float) and ms >= 0.0
    untimed = gc.cuda.Event()
    untimed.record()
    with pytest.raises(ValueError, match="enable_timing=True"):
        start.elapsed_time(untimed)
    with pytest.raises(ValueError, match="Timing must be disabled"):  # CuPy's (CUDA's) rule
        gc.cuda.Event(enable_timing=True, interprocess=True)
    assert gc.cuda.Event(interprocess=True).query()


def test_streams_current_default_and_context(standin):
    default = gc.cuda.default_stream()
    assert gc.cuda.current_stream() == default and default.cuda_stream == 0
    s = gc.cuda.Stream(priority=-1)
    assert s != default and s.device == gc.device("cuda:0") and s.priority == -1
    assert s.query() and "gradcore.cuda.Stream" in repr(s)
    x = gc.arange(6.0, device="cuda")
    s.wait_stream(gc.cuda.current_stream())  # (x was written on the default stream)
    with gc.cuda.stream(s):
        assert gc.cuda.current_stream() == s
        assert standin.cuda.get_current_stream() is s._stream  # gradcore's launches go there
        y = (x * 2).exp().sum()
    assert gc.cuda.current_stream() == default
    done = s.record_event()
    gc.cuda.current_stream().wait_event(done)
    assert host(y) == pytest.approx(np.exp(2 * np.arange(6.0)).sum(), rel=1e-6)
    with s:  # (a stream is a context manager too)
        assert gc.cuda.current_stream() == s
    gc.cuda.set_stream(s)
    assert gc.cuda.current_stream() == s
    gc.cuda.set_stream(default)
    s.synchronize()
    with pytest.raises(TypeError, match="gradcore.cuda.Stream"):
        gc.cuda.set_stream(standin.cuda.Stream())


def test_work_on_a_side_stream_not_ordered_is_caught(standin):
    """The stand-in checks the ordering across streams: reading on a side stream what
    the default stream wrote, without waiting for it, is a race there as on a GPU."""
    x = gc.arange(4.0, device="cuda") + 1
    s = gc.cuda.Stream()
    with pytest.raises(RuntimeError, match="not ordered after"), gc.cuda.stream(s):
        (x * 2).sum()


def test_capture_knows_it_captures(standin):
    assert gc.cuda.is_current_stream_capturing() is False
    seen = []
    w = gc.ones(3, device="cuda", requires_grad=True)

    @gc.compile
    def step(x):
        seen.append(gc.cuda.is_current_stream_capturing())
        loss = (w * x).sum()
        loss.backward()
        return loss

    x = gc.ones(3, device="cuda")
    for _ in range(3):
        step(x)
    assert seen[0] is False and True in seen  # eager first, then under the graph's capture
    assert gc.cuda.is_current_stream_capturing() is False


def test_memory_peaks_follow_allocations(standin):
    gc.cuda.empty_cache()
    gc.cuda.init()
    assert gc.cuda.is_initialized()
    base = gc.cuda.memory_allocated()
    gc.cuda.reset_peak_memory_stats()
    assert gc.cuda.max_memory_allocated() == base
    big = gc.zeros(1 << 20, device="cuda")  # 4 MiB
    peak = gc.cuda.max_memory_allocated()
    assert peak >= base + 4 * 2 ** 20
    del big
    assert gc.cuda.memory_allocated() < peak  # freed, the peak stays
    assert gc.cuda.max_memory_allocated(0) == peak == gc.cuda.max_memory_allocated("cuda:0")
    stats = gc.cuda.memory_stats()
    assert stats["allocated_bytes.all.peak"] == peak
    assert stats["allocated_bytes.all.current"] == gc.cuda.memory_allocated()
    assert stats["reserved_bytes.all.current"] == gc.cuda.memory_reserved()
    assert stats["reserved_bytes.all.peak"] == gc.cuda.max_memory_reserved() >= peak
    assert stats["allocation.all.allocated"] >= 1 and stats["num_ooms"] == 0
    assert list(stats) == sorted(stats)
    with pytest.warns(FutureWarning, match="resets /all/ peak"):
        gc.cuda.reset_max_memory_allocated()
    assert gc.cuda.max_memory_allocated() == gc.cuda.memory_allocated()
    summary = gc.cuda.memory_summary()
    assert "device ID 0" in summary and "Allocated memory" in summary
    assert "GPU reserved memory" in summary
    with pytest.warns(FutureWarning):
        assert gc.cuda.max_memory_cached() == gc.cuda.max_memory_reserved()
    free, total = gc.cuda.mem_get_info()
    assert total == gc.cuda.get_device_properties().total_memory
    assert free <= total - gc.cuda.memory_reserved()  # (other pools take memory too)


def test_out_of_memory_is_gradcores(standin):
    pool = standin.get_default_memory_pool()
    gc.cuda.init()
    pool.set_limit(size=pool.total_bytes() + 2 ** 20)
    try:
        with pytest.raises(gc.OutOfMemoryError, match="Out of memory allocating"):
            gc.zeros(1 << 22, device="cuda")  # 16 MiB
    finally:
        pool.set_limit(size=0)
    assert gc.cuda.memory_stats()["num_ooms"] == 1
    gc.zeros(1 << 22, device="cuda")  # (without the limit it fits)


def test_nvtx_ranges(standin):
    log = standin.cuda.nvtx.log
    log.clear()
    assert gc.cuda.nvtx.range_push("outer") == 0
    assert gc.cuda.nvtx.range_push("inner") == 1
    gc.cuda.nvtx.mark("here")
    assert gc.cuda.nvtx.range_pop() == 1 and gc.cuda.nvtx.range_pop() == 0
    assert gc.cuda.nvtx.range_pop() == -1  # (none open: NVTX's answer)
    with gc.cuda.nvtx.range("step {}", 3):
        pass
    assert log == [("push", "outer"), ("push", "inner"), ("mark", "here"), ("pop", None),
                   ("pop", None), ("push", "step 3"), ("pop", None)]


def test_device_queries_on_the_standin(standin):
    assert gc.cuda.get_arch_list() == ["sm_90"]
    assert gc.cuda.get_gencode_flags() == "-gencode compute=compute_90,code=sm_90"
    states = gc.cuda.get_rng_state_all()
    assert len(states) == gc.cuda.device_count() == 1
    assert gc.cuda.default_generators == (gc.default_generator,)
    a = gc.rand(3, device="cuda")
    gc.cuda.set_rng_state_all(states)
    assert np.array_equal(host(gc.rand(3, device="cuda")), host(a))


def test_cuda_tensor_types(standin):
    t = gc.cuda.FloatTensor([1.0, 2.0])
    assert t.device == gc.device("cuda:0") and t.dtype == gc.float32
    assert isinstance(t, gc.cuda.FloatTensor) and not isinstance(t, gc.FloatTensor)
    assert not isinstance(gc.ones(2), gc.cuda.FloatTensor)
    z = gc.cuda.LongTensor(2, 3)
    assert z.shape == (2, 3) and z.dtype == gc.int64 and z.device.type == "cuda"
    assert gc.cuda.BoolTensor([True]).dtype == gc.bool and gc.cuda.HalfTensor(1).dtype == \
        gc.float16
    assert t.type() == "torch.cuda.FloatTensor"
    assert gc.ones(2).type(gc.cuda.DoubleTensor).device.type == "cuda"
    assert t.type(gc.DoubleTensor).device.type == "cpu"
    assert repr(gc.cuda.IntTensor) == "<class 'gradcore.cuda.IntTensor'>"
    with pytest.raises(RuntimeError, match="expects device type: cuda but device type: "
                                           "cpu"):
        gc.cuda.FloatTensor(2, device="cpu")


@needs_torch
def test_cuda_tensor_types_match_pytorchs():
    import torch  # noqa: PLC0415

    for name in ("FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor",
                 "BoolTensor", "ByteTensor", "CharTensor", "ShortTensor"):
        ours, theirs = getattr(gc.cuda, name), getattr(torch.cuda, name)
        assert ours.is_cuda and theirs.is_cuda and str(ours.dtype).split(".")[1] == \
            str(theirs.dtype).split(".")[1], name


def test_the_old_amp_spellings(standin):
    # (deprecated, as in PyTorch 2.13, and enabled: CUDA is usable, no "Disabling")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scaler = gc.cuda.amp.GradScaler(init_scale=4.0)
    assert [w.category for w in caught] == [FutureWarning]
    assert scaler.get_scale() == 4.0 and scaler.is_enabled()
    with pytest.warns(FutureWarning), gc.cuda.amp.autocast():
        y = gc.ones(2, 2, device="cuda") @ gc.ones(2, 2, device="cuda")
    assert y.dtype == gc.float16
