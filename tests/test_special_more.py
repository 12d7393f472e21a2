"""gradcore.special's Bessel functions, orthogonal polynomials and incomplete gamma
functions against PyTorch 2.13 (whose Cephes-based ``Math.h`` they port): values over wide
ranges in float64 and float32 (the infinities, NaN, 0 and the branch points included),
dtypes, broadcasting, errors, and the gradients (only ``gammainc``'s and ``gammaincc``'s,
of ``other``: PyTorch's other results never require grad)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradcore as gc

from conftest import host, needs_torch

try:
    import torch
except ImportError:  # (the comparisons skip: needs_torch)
    torch = None
try:  # (a second reference where PyTorch's own is less accurate)
    from scipy import special as scipy_special
except ImportError:
    scipy_special = None

BESSEL = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
          "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
          "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0",
          "airy_ai"]
POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
               "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]

_rng = np.random.default_rng(0)
# every branch point of the Bessel functions (2, 5, 8, +-2.09, 8.32, 103.892, the
# overflow of I0 and I1 near 713), tiny and huge arguments, the infinities and NaN
X = np.concatenate([
    np.linspace(-30, 30, 1201), _rng.uniform(-1, 1, 100), -np.logspace(-12, 3, 60),
    np.logspace(-12, 3, 60),
    [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, 1e-5, 2.0, 5.0, -5.0, 8.0, -8.0, 2.09,
     -2.09, 8.3203353, 103.0, 104.0, 700.0, 715.0, -715.0, 1e10, 1e300]])


def _close(ours, theirs, rtol, atol, what):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, what
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, equal_nan=True,
                               err_msg=what)


@needs_torch
@pytest.mark.parametrize("name", BESSEL)
def test_bessel_float64_matches_pytorch(name):
    """To 1e-12 relative where PyTorch's float64 is that accurate: everywhere but at the
    roots of the oscillating ones (there, 1e-17 absolute)."""
    t = getattr(torch.special, name)(torch.tensor(X)).numpy()
    g = getattr(gc.special, name)(gc.tensor(X)).numpy()
    _close(g, t, 1e-12, 1e-17, name)
    assert (np.signbit(g) == np.signbit(t))[t == 0].all(), name  # (-0 for J1(-0) ...)


@needs_torch
@pytest.mark.parametrize("name", BESSEL)
def test_bessel_float32_matches_pytorch(name):
    """float32 is computed in float64 and rounded once: PyTorch's float64 values rounded,
    and PyTorch's float32 ones within their own float32 error (which grows with the
    argument of the oscillating ones' sines, and where exp underflows in float32)."""
    with np.errstate(over="ignore"):
        x32 = X.astype(np.float32)
    g = getattr(gc.special, name)(gc.tensor(x32)).numpy()
    exact = getattr(torch.special, name)(torch.tensor(x32.astype(np.float64))).numpy()
    with np.errstate(over="ignore"):
        _close(g, exact.astype(np.float32), 1e-6, 1e-37, name)
    moderate = np.abs(x32) <= 30
    t32 = getattr(torch.special, name)(torch.tensor(x32[moderate])).numpy()
    _close(g[moderate], t32, 2e-5, 3e-6, name)


@needs_torch
@pytest.mark.parametrize("name", BESSEL)
def test_bessel_dtypes_errors_and_no_graph(name):
    fn_g, fn_t = getattr(gc.special, name), getattr(torch.special, name)
    for values in ([0, 1, 3], [True, False]):  # integers and bools give float32
        g, t = fn_g(gc.tensor(values)), fn_t(torch.tensor(values))
        assert str(g.dtype) == str(t.dtype).replace("torch", "gradcore")
        _close(g.numpy(), t.numpy(), 1e-6, 0, name)
    g, t = fn_g(gc.tensor(2.5, dtype=gc.float64)), fn_t(torch.tensor(2.5, dtype=torch.float64))
    assert g.shape == () and g.item() == pytest.approx(t.item(), rel=1e-14, abs=1e-300)
    with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for '
                                                  "'Half'"):
        fn_g(gc.tensor([1.0], dtype=gc.float16))
    with pytest.raises(TypeError, match=rf"special_{name}\(\): argument 'input' "
                                        r"\(position 1\) must be Tensor, not float"):
        fn_g(1.0)
    # PyTorch defines no derivative: the result does not require grad
    x = gc.tensor([0.5, 1.5], dtype=gc.float64, requires_grad=True)
    y = fn_g(x)
    assert not y.requires_grad and y.grad_fn is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.sum().backward()


_PX = np.concatenate([np.linspace(-3, 3, 121), _rng.uniform(-1, 1, 40),
                      [0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, np.nan, 1e10, -1e10]])
_PN = np.array([-3, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 30])


def _compare_polynomial(name, x, n, rtol, atol, **kwargs):
    """Ours and PyTorch's, to ``rtol`` and ``atol`` times the largest finite magnitude
    of the degree's values on [-3, 3] (a long recurrence's rounding is relative to that,
    and PyTorch's fused multiply-adds round differently from NumPy's steps)."""
    tx = torch.tensor(x) if isinstance(x, np.ndarray) else x
    tn = torch.tensor(n) if isinstance(n, np.ndarray) else n
    gx = gc.tensor(x) if isinstance(x, np.ndarray) else x
    gn = gc.tensor(n) if isinstance(n, np.ndarray) else n
    t = getattr(torch.special, name)(tx, tn).numpy()
    g = getattr(gc.special, name)(gx, gn, **kwargs).numpy()
    assert g.dtype == t.dtype and g.shape == t.shape, name
    with np.errstate(invalid="ignore"):
        bounded = np.where(np.isfinite(t) & (np.abs(np.broadcast_to(
            np.asarray(x, dtype=np.float64), t.shape)) <= 3), np.abs(t), 0)
    scale = np.maximum(bounded.max(axis=0, keepdims=True) if t.ndim else bounded, 1.0)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(g.astype(np.float64) - t.astype(np.float64))
        ok = (g == t) | (np.isnan(g) & np.isnan(t)) | (err <= rtol * np.abs(t) + atol * scale)
    assert ok.all(), (name, np.argwhere(~ok)[:5], g[~ok][:5], t[~ok][:5])
    return g


@needs_torch
@pytest.mark.parametrize("name", POLYNOMIALS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_polynomials_match_pytorch(name, dtype):
    """Every degree from negative ones to 30 against every argument (broadcast: a
    column of arguments, a row of degrees), as integers and as floats."""
    rtol, atol = (1e-12, 1e-14) if dtype == "float64" else (1e-5, 2e-6)
    x = _PX.astype(dtype)[:, None]
    _compare_polynomial(name, x, _PN[None, :], rtol, atol)
    _compare_polynomial(name, x, _PN[None, :].astype(dtype), rtol, atol)


@needs_torch
@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_of_high_degree(name):
    """The closed trigonometric forms (Chebyshev, above degree 6 or 8 inside (-1, 1)),
    the Hermite polynomials' NaN above 512, and long recurrences (their rounding relative
    to the values' size)."""
    x = np.concatenate([np.linspace(-1.2, 1.2, 49), [0.3, -0.7, 0.999]])[:, None]
    n = np.array([50, 100, 300, 513, 600])[None, :]
    _compare_polynomial(name, x, n, 1e-9, 1e-12)


@needs_torch
def test_polynomial_degrees_and_types():
    t_fn, g_fn = torch.special.chebyshev_polynomial_t, gc.special.chebyshev_polynomial_t
    x = np.array([0.5, 2.0, -0.3])
    # a number for n or for x; fractional degrees truncate; NaN, infinite and huge
    # degrees count as negative (0), as PyTorch's casts
    for n in (3, 2.5, True, 0):
        _compare_polynomial("chebyshev_polynomial_t", x, n, 1e-15, 0)
    for n in (np.nan, np.inf, -np.inf, 1e30, -2.5, 3.9):
        _compare_polynomial("chebyshev_polynomial_t", x, np.array([n]), 1e-15, 0)
        _compare_polynomial("hermite_polynomial_h", x, np.array([n]), 1e-15, 0)
    _compare_polynomial("legendre_polynomial_p", 0.5, np.array([0, 1, 2, 7]), 1e-7, 0)
    _compare_polynomial("laguerre_polynomial_l", np.array([0, 1, 2]), np.array([2]), 1e-7, 0)
    # the promoted dtype: float32 x and a float64 n give float64, integers float32
    for xd, nd in ((np.float32, np.float64), (np.int64, np.int64), (np.float64, np.int32),
                   (np.float32, np.int64)):
        _compare_polynomial("legendre_polynomial_p", np.array([0.25, 3]).astype(xd),
                            np.array([3, 5]).astype(nd), 1e-6, 0)
    with pytest.raises(TypeError, match=r"special_chebyshev_polynomial_t\(\) received an "
                                        r"invalid combination of arguments - got "
                                        r"\(float, int\)"):
        g_fn(0.5, 2)
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match the size "
                                           r"of tensor b \(3\) at non-singleton dimension 0"):
        g_fn(gc.ones(2), gc.ones(3))
    with pytest.raises(NotImplementedError, match="\"chebyshev_polynomial_t_cpu\" not "
                                                  "implemented for 'Half'"):
        g_fn(gc.ones(2, dtype=gc.float16), 2)
    # no derivative in PyTorch, for either argument: the result does not require grad
    xs = gc.tensor([0.5], requires_grad=True)
    ns = gc.tensor([2.0], requires_grad=True)
    y = g_fn(xs, ns)
    assert not y.requires_grad and y.grad_fn is None
    assert not t_fn(torch.tensor([0.5], requires_grad=True), 2).requires_grad


@needs_torch
def test_gammainc_gammaincc_match_pytorch():
    a = np.array([0.5, 1.0, 2.0, 10.0, 30.0, 0.0, 1.0, -1.0, np.inf, 3.0, np.nan])
    x = np.array([0.1, 1.0, 0.5, 12.0, 0.5, 1.0, 0.0, 1.0, 2.0, np.inf, 1.0])
    for name in ("gammainc", "gammaincc"):
        for dtype in (np.float64, np.float32):
            t = getattr(torch.special, name)(torch.tensor(a.astype(dtype)),
                                             torch.tensor(x.astype(dtype))).numpy()
            g = getattr(gc.special, name)(gc.tensor(a.astype(dtype)),
                                          gc.tensor(x.astype(dtype))).numpy()
            _close(g, t, 1e-12 if dtype == np.float64 else 1e-5, 1e-37, name)
        # large a near x: PyTorch's asymptotic series there is good to 1e-9 only, ours to
        # the last digits (SciPy's Cephes is the reference)
        t = getattr(torch.special, name)(torch.tensor([100.0, 500.0], dtype=torch.float64),
                                         torch.tensor([90.0, 510.0], dtype=torch.float64))
        g = getattr(gc.special, name)(gc.tensor([100.0, 500.0], dtype=gc.float64),
                                      gc.tensor([90.0, 510.0], dtype=gc.float64))
        _close(g.numpy(), t.numpy(), 1e-8, 0, name)
        if scipy_special is not None:
            _close(g.numpy(), getattr(scipy_special, name)([100.0, 500.0], [90.0, 510.0]),
                   1e-13, 0, name)
        # broadcast: a row of shapes against a column of arguments
        t = getattr(torch.special, name)(torch.tensor([[1.0, 2.5, 7.0]], dtype=torch.float64),
                                         torch.tensor([[0.3], [4.0]], dtype=torch.float64))
        g = getattr(gc.special, name)(gc.tensor([[1.0, 2.5, 7.0]], dtype=gc.float64),
                                      gc.tensor([[0.3], [4.0]], dtype=gc.float64))
        _close(g.numpy(), t.numpy(), 1e-12, 0, name)
        with pytest.raises(TypeError, match=rf"special_{name}\(\): argument 'other' "
                                            r"\(position 2\) must be Tensor, not float"):
            getattr(gc.special, name)(gc.tensor([1.0]), 1.0)
        kernel = "igamma" if name == "gammainc" else "igammac"
        with pytest.raises(NotImplementedError, match=f"\"{kernel}_cpu\" not implemented for "
                                                      "'Long'"):
            getattr(gc.special, name)(gc.tensor([1]), gc.tensor([1]))


@needs_torch
@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_gammainc_gradients(name):
    """The gradient of ``other`` as PyTorch's (and gradcheck's), none of ``input``."""
    a = [0.5, 2.0, 7.5]
    xs = [0.3, 1.7, 9.0]
    gx = gc.tensor(xs, dtype=gc.float64, requires_grad=True)
    tx = torch.tensor(xs, dtype=torch.float64, requires_grad=True)
    getattr(gc.special, name)(gc.tensor(a, dtype=gc.float64), gx).sum().backward()
    getattr(torch.special, name)(torch.tensor(a, dtype=torch.float64), tx).sum().backward()
    np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    fn = getattr(gc.special, name)
    assert gc.autograd.gradcheck(lambda v: fn(gc.tensor(a, dtype=gc.float64), v),
                                 (gc.tensor(xs, dtype=gc.float64, requires_grad=True),))
    ga = gc.tensor(a, dtype=gc.float64, requires_grad=True)
    with pytest.raises(NotImplementedError, match="the derivative for 'igamma"):
        fn(ga, gc.tensor(xs, dtype=gc.float64)).sum().backward()


@needs_torch
def test_on_device(device):
    """The same array code on every device (the CUDA path on the CuPy stand-in)."""
    x = np.array([-3.0, -0.5, 0.0, 0.7, 2.0, 6.0, 12.0, np.inf, np.nan])
    for name in BESSEL:
        g = getattr(gc.special, name)(gc.tensor(x, device=device))
        assert g.device.type == gc.device(device).type
        t = getattr(torch.special, name)(torch.tensor(x)).numpy()
        _close(host(g), t, 1e-12, 1e-17, name)
    n = np.array([[0], [1], [3], [9], [-1]])
    for name in POLYNOMIALS:
        g = getattr(gc.special, name)(gc.tensor(x, device=device), gc.tensor(n, device=device))
        assert g.device.type == gc.device(device).type
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = getattr(torch.special, name)(torch.tensor(x), torch.tensor(n)).numpy()
        _close(host(g), t, 1e-12, 1e-12, name)
    g = gc.special.gammainc(gc.tensor([2.0], device=device), gc.tensor([1.5], device=device))
    assert host(g)[0] == pytest.approx(
        torch.special.gammainc(torch.tensor([2.0]), torch.tensor([1.5])).item(), rel=1e-6)
