"""gradcore.testing, gradcore.special and gradcore.fft against PyTorch 2.13: results,
dtypes, error types and messages (gradients of the differentiable ones: the rows
``special_*`` of tests/test_ops_table.py)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import numpy as np
import pytest

import gradcore as gc

from conftest import needs_torch

try:
    import torch
except ImportError:  # (the comparisons skip: needs_torch)
    torch = None


def _outcome(fn):
    """``None``, or the error's type name and message (gradcore's module names read as
    PyTorch's, and its classes' as PyTorch's Tensor)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn()
    except Exception as exc:  # noqa: BLE001
        text = str(exc).replace("gradcore.", "torch.")
        return type(exc).__name__, text
    return None


CLOSE_CASES = {
    "float32_one": lambda m: m.testing.assert_close(m.tensor([1., 2., 3.]),
                                                     m.tensor([1., 2.5, 3.])),
    "float32_within": lambda m: m.testing.assert_close(m.tensor([1., 2., 3.]),
                                                        m.tensor([1., 2. + 1e-7, 3.])),
    "float64_2d": lambda m: m.testing.assert_close(
        m.tensor([[1., 2.], [3., 4.]], dtype=m.float64),
        m.tensor([[1., 2.1], [3.3, 4.]], dtype=m.float64)),
    "float16": lambda m: m.testing.assert_close(m.tensor([1., 2.], dtype=m.float16),
                                                 m.tensor([1.001, 2.1], dtype=m.float16)),
    "int64": lambda m: m.testing.assert_close(m.tensor([1, 2, 3]), m.tensor([1, 5, 0])),
    "bool": lambda m: m.testing.assert_close(m.tensor([True, False]), m.tensor([True, True])),
    "zero_dim": lambda m: m.testing.assert_close(m.tensor(1.), m.tensor(2.)),
    "dtype": lambda m: m.testing.assert_close(m.tensor([1.]), m.tensor([1.], dtype=m.float64)),
    "dtype_unchecked": lambda m: m.testing.assert_close(
        m.tensor([1., 2.]), m.tensor([1., 2.5], dtype=m.float64), check_dtype=False),
    "shape": lambda m: m.testing.assert_close(m.tensor([1.]), m.tensor([1., 2.])),
    "nan": lambda m: m.testing.assert_close(m.tensor([1., float("nan")]),
                                             m.tensor([1., float("nan")])),
    "nan_equal": lambda m: m.testing.assert_close(
        m.tensor([1., float("nan")]), m.tensor([1., float("nan")]), equal_nan=True),
    "inf": lambda m: m.testing.assert_close(m.tensor([1., float("inf")]),
                                             m.tensor([1., -float("inf")])),
    "only_rtol": lambda m: m.testing.assert_close(m.tensor([1.]), m.tensor([1.]), rtol=0.1),
    "tolerances": lambda m: m.testing.assert_close(m.tensor([1., 2.]), m.tensor([1., 2.2]),
                                                    rtol=0.2, atol=0),
    "equality": lambda m: m.testing.assert_close(m.tensor([1., 2.]), m.tensor([1., 2.2]),
                                                  rtol=0, atol=0),
    "zero_expected": lambda m: m.testing.assert_close(m.tensor([1., 1.]), m.tensor([0., 1.])),
    "floats": lambda m: m.testing.assert_close(1.0, 1.1),
    "floats_close": lambda m: m.testing.assert_close(1.0, 1.0 + 1e-8),
    "ints": lambda m: m.testing.assert_close(1, 2),
    "int_float": lambda m: m.testing.assert_close(1, 1.0),
    "bools": lambda m: m.testing.assert_close(True, False),
    "none": lambda m: m.testing.assert_close(None, 1),
    "list": lambda m: m.testing.assert_close([1., 2.], [1., 2.5]),
    "list_length": lambda m: m.testing.assert_close([1., 2.], [1.]),
    "nested": lambda m: m.testing.assert_close(
        {"a": m.tensor([1.]), "b": [m.tensor([1., 2.])]},
        {"a": m.tensor([1.]), "b": [m.tensor([1., 3.])]}),
    "keys": lambda m: m.testing.assert_close({"a": 1, "c": 2}, {"b": 1, "c": 2}),
    "numpy": lambda m: m.testing.assert_close(np.array([1., 2.]), np.array([1., 3.])),
    "strings": lambda m: m.testing.assert_close("a", "b"),
    "msg": lambda m: m.testing.assert_close(m.tensor([1., 2.]), m.tensor([1., 3.]),
                                             msg="custom"),
    "msg_callable": lambda m: m.testing.assert_close(
        [m.tensor([1., 2.])], [m.tensor([1., 3.])], msg=lambda s: "Header\n" + s),
    "stride": lambda m: m.testing.assert_close(m.ones(2, 3), m.ones(3, 2).t(),
                                                check_stride=True),
    "parameter": lambda m: m.testing.assert_close(m.nn.Parameter(m.tensor([1.])),
                                                   m.tensor([1.])),
    "requires_grad": lambda m: m.testing.assert_close(m.tensor([1., 2.], requires_grad=True),
                                                       m.tensor([1., 3.])),
    "allclose": lambda m: m.testing.assert_allclose(m.tensor([1., 2.]), [1., 2.00001]),
    "allclose_fails": lambda m: m.testing.assert_allclose(m.tensor([1., 2.]), [1., 2.1]),
}


@needs_torch
@pytest.mark.parametrize("case", list(CLOSE_CASES))
def test_assert_close_matches_pytorch(case):
    """The same verdict, error type and message as PyTorch's (messages and all)."""
    assert _outcome(lambda: CLOSE_CASES[case](gc)) == _outcome(lambda: CLOSE_CASES[case](torch))


def test_assert_close_message_format():
    with pytest.raises(AssertionError) as info:
        gc.testing.assert_close(gc.tensor([1., 2., 3.]), gc.tensor([1., 4., 3.]))
    assert str(info.value) == (
        "Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\n"
        "Greatest absolute difference: 2.0 at index (1,) (up to 1e-05 allowed)\n"
        "Greatest relative difference: 0.5 at index (1,) (up to 1.3e-06 allowed)")
    with pytest.raises(TypeError, match="No comparison pair"):
        gc.testing.assert_close(np.array([1.]), gc.tensor([1.]))
    with pytest.raises(TypeError, match="No comparison pair"):
        gc.testing.assert_close(gc.nn.Parameter(gc.tensor([1.])), gc.tensor([1.]),
                                allow_subclasses=False)


def test_assert_allclose_warns():
    with pytest.warns(FutureWarning, match="assert_allclose"):
        gc.testing.assert_allclose(gc.tensor([1.]), [1.])


@pytest.mark.parametrize("dtype, low, high", [
    (gc.bool, 0, 1), (gc.uint8, 0, 9), (gc.int8, -9, 9), (gc.int16, -9, 9),
    (gc.int32, -9, 9), (gc.int64, -9, 9), (gc.float16, -9, 9), (gc.float32, -9, 9),
    (gc.float64, -9, 9)])
def test_make_tensor_default_ranges(dtype, low, high):
    t = gc.testing.make_tensor(400, dtype=dtype, device="cpu")
    assert t.dtype == dtype and t.shape == (400,) and not t.requires_grad
    values = t.numpy().astype(np.float64)
    assert values.min() >= low and values.max() <= high
    if dtype == gc.float16:  # (a draw above 8.996 rounds to 9.0 in float16, as PyTorch's:
        assert values.max() <= 9  # 400 draws reach it about one run in twelve)
    elif dtype.is_floating_point:
        assert values.max() < 9
    else:  # (400 draws reach both ends of so few integers)
        assert values.min() == low and values.max() == high


def test_make_tensor_options():
    t = gc.testing.make_tensor((3, 4), dtype=gc.float32, device="cpu", low=-1, high=1,
                               requires_grad=True)
    assert t.shape == (3, 4) and t.requires_grad and t.is_leaf
    assert bool(((t >= -1) & (t < 1)).all())
    n = gc.testing.make_tensor(3, 4, dtype=gc.float64, device="cpu", noncontiguous=True)
    assert n.shape == (3, 4) and not n.is_contiguous()
    z = gc.testing.make_tensor(200, dtype=gc.int64, device="cpu", low=0, high=2,
                               exclude_zero=True)
    assert (z.numpy() == 1).all()
    wide = gc.testing.make_tensor(50, dtype=gc.float16, device="cpu", low=-1e6, high=1e6)
    assert np.isfinite(wide.numpy()).all()
    assert gc.testing.make_tensor(dtype=gc.float32, device="cpu").shape == ()
    assert gc.testing.make_tensor([2, 2], dtype=gc.int32, device="cpu", low=2.5,
                                  high=4).numpy().min() >= 3


MAKE_ERRORS = {
    "requires_grad_int": dict(dtype="int64", requires_grad=True),
    "low_high": dict(dtype="float32", low=3, high=2),
    "nan": dict(dtype="float32", low=float("nan")),
    "outside": dict(dtype="uint8", low=300, high=400),
    "exclusive": dict(dtype="float32", noncontiguous=True, memory_format="contiguous_format"),
}


@needs_torch
@pytest.mark.parametrize("case", list(MAKE_ERRORS))
def test_make_tensor_errors_match_pytorch(case):
    def call(m):
        kwargs = dict(MAKE_ERRORS[case])
        kwargs["dtype"] = getattr(m, kwargs["dtype"])
        if "memory_format" in kwargs:
            kwargs["memory_format"] = getattr(m, kwargs["memory_format"])
        m.testing.make_tensor(2, device="cpu", **kwargs)
    expected = _outcome(lambda: call(torch))
    assert expected is not None and _outcome(lambda: call(gc)) == expected


# ---------------------------------------------------------------------------- special

X = np.array([-40., -5., -1.5, -0.3, 0., 0.4, 1., 3., 10., 50., np.inf, -np.inf, np.nan])
P = np.array([0., 1e-300, 1e-10, 0.02, 0.5, 0.9, 1., 1.5, np.nan])
UNARY = ["erf", "erfc", "erfcx", "expit", "exp2", "expm1", "log1p", "sinc", "round", "entr",
         "ndtr", "log_ndtr", "i0", "i0e", "i1", "i1e", "gammaln", "digamma", "psi"]


def _check(name, *args, rtol=None, **kwargs):
    t = getattr(torch.special, name)(*[torch.tensor(a) if isinstance(a, np.ndarray) else a
                                       for a in args], **kwargs)
    g = getattr(gc.special, name)(*[gc.tensor(a) if isinstance(a, np.ndarray) else a
                                    for a in args], **kwargs)
    assert str(g.dtype).split(".")[1] == str(t.dtype).split(".")[1], name
    if rtol is None:
        rtol = 1e-12 if t.dtype == torch.float64 else 1e-6
    np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=rtol, atol=0, err_msg=name)


@needs_torch
@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_special_unary_matches_pytorch(name, dtype):
    _check(name, X.astype(dtype))


@needs_torch
def test_special_others_match_pytorch():
    _check("erfinv", np.array([-1, -0.5, 0, 0.99, 1, 2.]))
    _check("ndtri", P)
    _check("ndtri", P.astype(np.float32))
    _check("logit", np.array([0., 0.2, 1.]), 1e-3)
    _check("logit", np.array([0., 0.2, 1.]))
    _check("xlogy", np.array([0., 2, 0, 1]), np.array([0., 3, np.nan, 1]))
    _check("xlog1py", np.array([0., 2, 0, 1]), np.array([-1., 3, np.nan, 1]))
    _check("xlog1py", np.array([1, 2]), 3)
    _check("xlog1py", 2.0, np.array([1., 2]))
    _check("zeta", np.array([2., 3, 1, 0.5, 2, 2]), np.array([1., 2, 1, 1, -1, -1.5]))
    _check("zeta", 2.0, np.array([1., 2, 3, 1e9, np.inf]))
    _check("zeta", np.array([2, 3]), np.array([1, 2]))
    _check("polygamma", 2, np.array([0.5, 2, 5]))
    _check("multigammaln", np.array([2.5, 3]), 2)
    rng = np.random.default_rng(0)
    _check("softmax", rng.normal(size=(3, 4)), 1)
    _check("log_softmax", rng.normal(size=(3, 4)), 0)
    _check("logsumexp", rng.normal(size=(3, 4)), 1)
    _check("logsumexp", rng.normal(size=(3, 4)), (0, 1), keepdim=True)
    for name in ["entr", "erfcx", "i0e", "i1e", "ndtr", "ndtri", "log_ndtr"]:
        _check(name, np.array([0, 1, 2]))  # integers: float32


@needs_torch
def test_special_gradients_match_pytorch():
    """The grads where PyTorch's rule has its own edges (entr at 0 and below, i1e at 0)
    and zeta's: of ``other`` only."""
    for name, values in [("entr", [0.0, 0.3, 2.0, -1.0]), ("i1e", [0.0, 0.3, -2.0, 5.0]),
                         ("i0e", [0.0, 0.3, -2.0]), ("erfcx", [0.0, -3.0, 40.0]),
                         ("ndtri", [0.3, 0.02, 0.97]), ("log_ndtr", [-40.0, 0.5, 40.0])]:
        tx = torch.tensor(values, dtype=torch.float64, requires_grad=True)
        gx = gc.tensor(values, dtype=gc.float64, requires_grad=True)
        getattr(torch.special, name)(tx).sum().backward()
        getattr(gc.special, name)(gx).sum().backward()
        np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), rtol=1e-12, err_msg=name)
    q = gc.tensor([1.0, 2.5], dtype=gc.float64, requires_grad=True)
    gc.special.zeta(gc.tensor([2.0, 3.0], dtype=gc.float64), q).sum().backward()
    tq = torch.tensor([1.0, 2.5], dtype=torch.float64, requires_grad=True)
    torch.special.zeta(torch.tensor([2.0, 3.0], dtype=torch.float64), tq).sum().backward()
    np.testing.assert_allclose(q.grad.numpy(), tq.grad.numpy(), rtol=1e-12)
    x = gc.tensor([2.0, 3.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match="the derivative for 'zeta' is not "):
        gc.special.zeta(x, 1.0).sum().backward()


def test_special_names():
    assert gc.special.psi is gc.special.digamma
    y = gc.special.expit(gc.tensor([0.0], requires_grad=True))
    assert y.grad_fn.name() == "SigmoidBackward0"
    assert gc.special.erfcx(gc.tensor([1.0], requires_grad=True)).grad_fn.name() == \
        "SpecialErfcxBackward0"
    with pytest.raises(TypeError, match="must be Tensor"):
        gc.special.zeta(2.0, 1.0)


# -------------------------------------------------------------------------------- fft

@needs_torch
@pytest.mark.parametrize("n, d", [(0, 1.0), (1, 1.0), (4, 1.0), (5, 0.5), (6, 2)])
def test_fftfreq_matches_pytorch(n, d):
    for name in ("fftfreq", "rfftfreq"):
        t = getattr(torch.fft, name)(n, d)
        g = getattr(gc.fft, name)(n, d)
        assert g.dtype == gc.float32 and tuple(g.shape) == tuple(t.shape)
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-7)
    g = gc.fft.fftfreq(4, dtype=gc.float64, requires_grad=True)
    assert g.dtype == gc.float64 and g.requires_grad


@needs_torch
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), -1, (), 2])
def test_fftshift_matches_pytorch(dim):
    x = np.arange(30.0).reshape(5, 6)
    for name in ("fftshift", "ifftshift"):
        expected = _outcome(lambda: getattr(torch.fft, name)(torch.tensor(x), dim))
        assert _outcome(lambda: getattr(gc.fft, name)(gc.tensor(x), dim)) == expected
        if expected is None:
            np.testing.assert_array_equal(getattr(gc.fft, name)(gc.tensor(x), dim).numpy(),
                                          getattr(torch.fft, name)(torch.tensor(x), dim))


def test_fftshift_is_differentiable_and_transforms_refuse():
    t = gc.ones(4, requires_grad=True)
    (gc.fft.fftshift(t) * gc.arange(4.0)).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [2.0, 3.0, 0.0, 1.0])
    back = gc.fft.ifftshift(gc.fft.fftshift(gc.arange(7.0)))
    np.testing.assert_array_equal(back.numpy(), np.arange(7.0))
    for name in ("fft", "ifft", "rfft", "irfft", "fftn", "rfft2", "hfft"):
        with pytest.raises(NotImplementedError, match=f"torch.fft.{name} .*no complex"):
            getattr(gc.fft, name)(gc.ones(4))


# ------------------------------------------------------------------------ the aliases

def test_modules_import_under_gradcore_and_torch_alias():
    for name in ("gradcore.testing", "gradcore.special", "gradcore.fft"):
        assert importlib.import_module(name) is getattr(gc, name.split(".")[1])
    code = ("import sys, gradcore; sys.modules['torch'] = gradcore\n"
            "from torch.testing import assert_close, make_tensor\n"
            "import torch.special, torch.fft\n"
            "import torch\n"
            "assert_close(torch.special.expit(torch.tensor([0.0])), torch.tensor([0.5]))\n"
            "assert torch.fft.fftshift is gradcore.fft.fftshift\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == "ok", out.stderr
