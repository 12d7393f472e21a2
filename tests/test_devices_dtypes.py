"""The device and dtype names programs use (issue 14 item 3): gc.Size, Tensor.type and
new_*, the default dtype, finfo/iinfo and promotion queries, inference_mode,
gc.accelerator, gc.backends and gc.cuda's functions (on the CuPy stand-in)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import gradcore as gc

from conftest import needs_torch


def test_shape_is_a_size():
    x = gc.zeros(2, 3, 4)
    s = x.shape
    assert isinstance(s, gc.Size) and isinstance(s, tuple)
    assert s == (2, 3, 4) and s.numel() == 24 and gc.Size([]).numel() == 1
    assert x.size() == s and type(x.size()) is gc.Size and x.size(1) == 3
    assert type(s[1:]) is gc.Size and s[1:] == (3, 4) and type(s[0]) is int
    assert type(s + (5,)) is gc.Size and type((1,) + s) is gc.Size
    assert repr(s) == "gradcore.Size([2, 3, 4])"
    assert pickle.loads(pickle.dumps(s)) == s
    assert gc.zeros(*s).shape == s and gc.zeros(s).shape == s


@needs_torch
def test_size_behaves_as_torchs():
    import torch
    for shape in [(), (3,), (2, 0, 4)]:
        a, b = gc.zeros(shape).shape, torch.zeros(shape).shape
        assert a == b and a.numel() == b.numel() and tuple(a[1:]) == tuple(b[1:])


def test_tensor_type_names_and_casts():
    x = gc.ones(2)
    assert x.type() == "torch.FloatTensor"
    assert x.long().type() == "torch.LongTensor" and x.bool().type() == "torch.BoolTensor"
    assert x.type(gc.float64).dtype == gc.float64
    assert x.type("torch.IntTensor").dtype == gc.int32
    assert x.type(gc.float32) is not None


@needs_torch
def test_new_factories_match_torch():
    import torch
    for lib in (gc, torch):
        x = lib.ones(2, 3, dtype=lib.float64)
        made = [x.new_zeros(2, 2), x.new_ones((3,)), x.new_full((2,), 7),
                x.new_empty(4), x.new_tensor([1, 2]), x.new_zeros(2, dtype=lib.int64),
                x.new_ones(1, requires_grad=True)]
        if lib is gc:
            mine = made
        else:
            theirs = made
    for a, b in zip(mine, theirs):
        assert tuple(a.shape) == tuple(b.shape)
        assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1]
        assert a.requires_grad == b.requires_grad
    for a, b in zip(mine[:3] + mine[4:], theirs[:3] + theirs[4:]):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    with pytest.raises(RuntimeError, match="negative dimension"):
        gc.ones(1).new_zeros(-1)


def test_bytes_and_addresses():
    x = gc.ones(3, dtype=gc.float64)
    assert x.nbytes == 24 and x.itemsize == 8 and x.element_size() == 8
    assert x.get_device() == -1 and x.data_ptr() == x.numpy().ctypes.data
    assert x[1:].data_ptr() == x.data_ptr() + 8


def test_default_dtype_reaches_every_new_float_tensor():
    assert gc.get_default_dtype() == gc.float32
    try:
        gc.set_default_dtype(gc.float64)
        assert gc.get_default_dtype() == gc.float64
        assert gc.tensor([1.5]).dtype == gc.float64 and gc.zeros(2).dtype == gc.float64
        assert gc.randn(2).dtype == gc.float64 and gc.arange(0.0, 1.0, 0.5).dtype == gc.float64
        assert gc.nn.Linear(2, 2).weight.dtype == gc.float64
        assert (gc.arange(3) * 1.5).dtype == gc.float64
        assert gc.tensor([1, 2]).dtype == gc.int64
    finally:
        gc.set_default_dtype(gc.float32)
    with pytest.raises(TypeError, match="floating-point"):
        gc.set_default_dtype(gc.int64)


@needs_torch
def test_finfo_iinfo_and_promotion_match_torch():
    import torch
    for name in ("float16", "float32", "float64"):
        a, b = gc.finfo(getattr(gc, name)), torch.finfo(getattr(torch, name))
        assert (a.bits, a.eps, a.max, a.min, a.tiny, a.resolution) == \
            (b.bits, b.eps, b.max, b.min, b.tiny, b.resolution)
    for name in ("int8", "uint8", "int16", "int32", "int64"):
        a, b = gc.iinfo(getattr(gc, name)), torch.iinfo(getattr(torch, name))
        assert (a.bits, a.max, a.min) == (b.bits, b.max, b.min)
    with pytest.raises(TypeError):
        gc.finfo(gc.int32)
    with pytest.raises(TypeError):
        gc.iinfo(gc.float32)
    names = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
             "float64"]
    for x in names:
        for y in names:
            mine = gc.promote_types(getattr(gc, x), getattr(gc, y))
            assert mine.name == str(torch.promote_types(getattr(torch, x),
                                                        getattr(torch, y))).split(".")[1]
            assert gc.can_cast(getattr(gc, x), getattr(gc, y)) == \
                torch.can_cast(getattr(torch, x), getattr(torch, y))
    for a, b in [((gc.ones(2, dtype=gc.int64), 1.5), (torch.ones(2, dtype=torch.int64), 1.5)),
                 ((gc.ones(2, dtype=gc.float16), gc.tensor(1.0, dtype=gc.float64)),
                  (torch.ones(2, dtype=torch.float16), torch.tensor(1.0, dtype=torch.float64))),
                 ((gc.ones(2, dtype=gc.int32), 2), (torch.ones(2, dtype=torch.int32), 2))]:
        assert gc.result_type(*a).name == str(torch.result_type(*b)).split(".")[1]


def test_inference_mode():
    x = gc.ones(2, requires_grad=True)
    with gc.inference_mode():
        assert not (x * 2).requires_grad and gc.is_inference_mode_enabled()
    assert gc.is_grad_enabled() and not gc.is_inference_mode_enabled()
    with gc.inference_mode(False):
        assert (x * 2).requires_grad

    @gc.inference_mode()
    def f():
        return (x * 2).requires_grad

    assert f() is False and gc.is_grad_enabled()


def test_accelerator_and_backends_without_a_gpu(monkeypatch):
    monkeypatch.setattr(gc.backend, "_probe_cuda", lambda: (None, "no GPU here"))
    assert gc.accelerator.is_available() is False
    assert gc.accelerator.current_accelerator() is None
    assert gc.accelerator.device_count() == 0
    assert gc.backends.mps.is_available() is False and gc.backends.cudnn.is_available() is False
    # programs set these for PyTorch: accepted (and put back after the test)
    monkeypatch.setattr(gc.backends.cudnn, "benchmark", True)
    monkeypatch.setattr(gc.backends.cuda.matmul, "allow_tf32", True)
    assert gc.backends.cuda.matmul.allow_tf32 is True
    with pytest.raises(RuntimeError, match="no GPU here"):
        gc.cuda.synchronize()
    with pytest.raises(RuntimeError, match="no GPU here"):
        gc.cuda.get_device_name()
    gc.cuda.empty_cache()  # nothing to free: no error, as in PyTorch


def test_cuda_functions_on_the_standin(standin):
    assert gc.accelerator.is_available() and gc.accelerator.current_accelerator() == \
        gc.device("cuda")
    gc.cuda.synchronize()
    gc.cuda.synchronize("cuda:0")
    assert gc.cuda.current_device() == 0 and gc.accelerator.current_device_index() == 0
    assert gc.cuda.get_device_name(0) == "CuPy stand-in (NumPy)"
    assert gc.cuda.get_device_capability() == (9, 0)
    assert gc.cuda.get_device_properties(0).major == 9
    gc.cuda.set_device(0)
    assert gc.cuda.memory_allocated() >= 0 and gc.cuda.memory_reserved() >= 0
    gc.cuda.empty_cache()
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        gc.cuda.synchronize(3)
    with pytest.raises(ValueError, match="Expected a cuda device"):
        gc.cuda.synchronize("cpu")
    x = gc.ones(2, device="cuda")
    assert x.get_device() == 0 and x.type() == "torch.cuda.FloatTensor"
    assert x.new_zeros(3).device == x.device


def test_backends_are_modules_a_program_imports():
    # `import torch.backends.cudnn as cudnn` (pytorch/examples' dcgan) needs modules
    import importlib

    cudnn = importlib.import_module("gradcore.backends.cudnn")
    assert cudnn is gc.backends.cudnn and cudnn.is_available() is False
    cudnn.benchmark = True
    assert gc.backends.cudnn.benchmark is True
    cudnn.benchmark = False
    mps = importlib.import_module("gradcore.backends.mps")
    assert mps.is_built() is False
    assert gc.backends.cuda.matmul.allow_fp16_reduced_precision_reduction is True
    assert gc.backends.mkldnn.is_available() is False and gc.backends.openmp.is_available() is False


def test_device_is_pytorchs_class():
    """gc.device is the class (isinstance(x, torch.device) in programs), made as
    torch.device is made; each place has one Device."""
    d = gc.device("cuda", 1)
    assert isinstance(d, gc.device) and isinstance(gc.ones(1).device, gc.device)
    assert d is gc.device("cuda:1") is gc.device(type="cuda", index=1) and d.index == 1
    assert gc.device(gc.device("cpu")) is gc.device("cpu") == "cpu"
    assert pickle.loads(pickle.dumps(d)) is d
    with pytest.raises(RuntimeError, match="must not include an index because index was "
                                           "passed explicitly: cuda:0"):
        gc.device("cuda:0", 1)
    with pytest.raises(RuntimeError, match="Invalid device string: 'cuda:x'"):
        gc.device("cuda:x")
    with pytest.raises(RuntimeError, match="device type at start of device string: tpu"):
        gc.device("tpu")
    with pytest.raises(RuntimeError, match="gradcore has no 'mps' device"):
        gc.device("mps")
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        gc.device(None)
    if not gc.cuda.is_available():
        with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
            gc.device(0)


def test_device_as_a_context_sets_the_default_device():
    before = gc.get_default_device()
    with gc.device("cpu") as d:
        assert d == "cpu" and gc.get_default_device() == "cpu"
        assert gc.zeros(2).device == "cpu"
    assert gc.get_default_device() is before


def test_device_as_a_context_on_cuda(standin):
    with gc.device("cuda"):
        assert gc.zeros(2).device.type == "cuda"
        with gc.device("cpu"):
            assert gc.ones(1).device == "cpu"
        assert gc.randn(3).device.type == "cuda"
    assert gc.get_default_device().type == "cpu" or gc.zeros(2).device.type == "cuda"
