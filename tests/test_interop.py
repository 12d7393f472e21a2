"""Interop: DLPack without copies (NumPy, PyTorch), __array__, from_numpy."""

import numpy as np
import pytest

import gradcore as gc

from conftest import host, needs_torch


def test_numpy_dlpack_shares_memory():
    t = gc.tensor([1.0, 2.0, 3.0])
    a = np.from_dlpack(t)
    a[0] = 10.0
    assert t.tolist() == [10.0, 2.0, 3.0]
    back = gc.from_dlpack(np.arange(4.0))
    assert back.dtype == gc.float64 and back.tolist() == [0.0, 1.0, 2.0, 3.0]


@needs_torch
def test_torch_dlpack_both_ways_share_memory():
    import torch

    t = gc.tensor([1.0, 2.0])
    tt = torch.from_dlpack(t)
    tt[1] = 5.0
    assert t.tolist() == [1.0, 5.0]
    src = torch.arange(3, dtype=torch.float32)
    g = gc.from_dlpack(src)
    src[0] = 7.0
    assert g.tolist() == [7.0, 1.0, 2.0]


def test_array_protocol_refuses_tensors_that_require_grad():
    t = gc.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="detach"):
        np.asarray(t)
    with pytest.raises(RuntimeError, match="detach"):
        t.numpy()
    np.testing.assert_array_equal(np.asarray(t.detach()), [1.0, 2.0])


def test_from_numpy_shares_memory_and_keeps_dtype():
    a = np.arange(3, dtype=np.int32)
    t = gc.from_numpy(a)
    a[0] = 9
    assert t.dtype == gc.int32 and t.tolist() == [9, 1, 2]


def test_numpy_operands_mix_with_tensors(device):
    t = gc.tensor([1.0, 2.0], requires_grad=True)
    out = np.array([3.0, 4.0], dtype=np.float32) * t   # NumPy defers to Tensor
    assert isinstance(out, gc.Tensor)
    out.sum().backward()
    np.testing.assert_array_equal(host(t.grad), [3.0, 4.0])
