"""gradcore.signal.windows compared with torch.signal.windows."""

import numpy as np
import pytest

import gradcore as gc

from conftest import host, needs_torch

W = gc.signal.windows
CASES = [("bartlett", {}), ("blackman", {}), ("cosine", {}), ("exponential", {}),
         ("exponential", {"tau": 2.5}), ("gaussian", {}), ("gaussian", {"std": 0.7}),
         ("general_cosine", {"a": [0.46, 0.23, 0.31]}), ("general_hamming", {}),
         ("general_hamming", {"alpha": 0.6}), ("hamming", {}), ("hann", {}), ("kaiser", {}),
         ("kaiser", {"beta": 0.9}), ("kaiser", {"beta": 0.0}), ("nuttall", {})]


@needs_torch
@pytest.mark.parametrize("name,params", CASES)
def test_values_match_torch(name, params):
    import torch

    for M in (0, 1, 2, 5, 10, 33):
        for sym in (True, False):
            for gdt, tdt in ((gc.float32, torch.float32), (gc.float64, torch.float64)):
                got = getattr(W, name)(M, sym=sym, dtype=gdt, **params)
                want = getattr(torch.signal.windows, name)(M, sym=sym, dtype=tdt, **params)
                assert got.dtype == gdt and tuple(got.shape) == tuple(want.shape)
                tol = 1e-6 if gdt == gc.float32 else 1e-13
                np.testing.assert_allclose(host(got), want.numpy(), rtol=tol, atol=tol,
                                           err_msg=f"{name}({M}, sym={sym}, {gdt})")


@needs_torch
def test_exponential_center_and_default_dtype():
    import torch

    got = W.exponential(7, center=1.5, sym=False, tau=0.5)
    want = torch.signal.windows.exponential(7, center=1.5, sym=False, tau=0.5)
    np.testing.assert_allclose(host(got), want.numpy(), rtol=1e-6)
    assert W.hann(4).dtype == gc.float32
    gc.set_default_dtype(gc.float64)
    try:
        assert W.hann(4).dtype == gc.float64
    finally:
        gc.set_default_dtype(gc.float32)


@pytest.mark.parametrize("call,message", [
    # (hann is general_cosine underneath, and says so, as in PyTorch)
    (lambda: W.hann(-1), "general_cosine requires non-negative window length, got M=-1"),
    (lambda: W.kaiser(3, dtype=gc.int64), "kaiser expects float32 or float64 dtypes, got: "
                                          "gradcore.int64"),
    (lambda: W.gaussian(3, std=0.0), "Standard deviation must be positive, got: 0.0 instead."),
    (lambda: W.exponential(3, tau=-1.0), "Tau must be positive, got: -1.0 instead."),
    (lambda: W.exponential(3, center=1.0), "Center must be None for symmetric windows"),
    (lambda: W.kaiser(3, beta=-1.0), "beta must be non-negative, got: -1.0 instead."),
    (lambda: W.general_cosine(3, a=[]), "Coefficients cannot be empty"),
])
def test_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_errors_match_torch_types():
    with pytest.raises(TypeError, match="Coefficients must be a list/tuple"):
        W.general_cosine(3, a=3)
    with pytest.raises(TypeError):
        W.hann(3, True)  # (sym is keyword-only)
    with pytest.raises(ValueError, match="is implemented for strided tensors only"):
        W.hann(3, layout="sparse")


def test_device_and_requires_grad(device):
    w = W.hamming(6, device=device, dtype=gc.float64, requires_grad=True)
    assert w.device == gc.device(device) and w.requires_grad
    np.testing.assert_allclose(host(w.detach()), np.hamming(6), rtol=1e-12, atol=1e-15)
    k = W.kaiser(5, device=device)
    assert k.device == gc.device(device)
    np.testing.assert_allclose(host(k), np.kaiser(5, 12.0), rtol=1e-5)
    assert W.bartlett(1, device=device, requires_grad=True).requires_grad
    np.testing.assert_allclose(host(W.blackman(8, sym=False, dtype=gc.float64, device=device)),
                               np.blackman(9)[:-1], atol=1e-15)
