"""The LU family of gc.linalg (lu, lu_factor, lu_factor_ex, lu_solve, solve_ex, inv_ex),
gc.lu / gc.lu_solve / gc.lu_unpack, vander, tensorinv, tensorsolve and
householder_product against PyTorch 2.13: values, pivots (int32, 1-based), info,
errors, and gradients (gradcheck in float64, and PyTorch's)."""

from __future__ import annotations

import numpy as np
import pytest

import gradcore as gc

from conftest import host

torch = pytest.importorskip("torch", reason="the comparisons need PyTorch 2.13")

SHAPES = [(4, 4), (3, 3, 3), (3, 5), (2, 5, 3), (1, 1)]


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else host(t)


@pytest.mark.parametrize("shape", SHAPES)
def test_lu_factor_ex_matches_pytorch(shape, device):
    a = np.random.default_rng(0).standard_normal(shape)
    theirs = torch.linalg.lu_factor_ex(torch.tensor(a))
    ours = gc.linalg.lu_factor_ex(gc.tensor(a))
    np.testing.assert_allclose(_np(ours.LU), _np(theirs.LU), rtol=1e-12, atol=1e-12)
    assert ours.pivots.dtype == gc.int32 and ours.info.dtype == gc.int32
    np.testing.assert_array_equal(_np(ours.pivots), _np(theirs.pivots))
    np.testing.assert_array_equal(_np(ours.info), _np(theirs.info))
    for x, y in zip(gc.linalg.lu(gc.tensor(a)), torch.linalg.lu(torch.tensor(a))):
        np.testing.assert_allclose(_np(x), _np(y), rtol=1e-12, atol=1e-12)
    for x, y in zip(gc.lu_unpack(ours.LU, ours.pivots), torch.lu_unpack(theirs.LU,
                                                                        theirs.pivots)):
        np.testing.assert_allclose(_np(x), _np(y), rtol=1e-12, atol=1e-12)


def test_singular_matrices_give_info_or_pytorchs_errors():
    s = np.array([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 0.0], [0.0, 1.0]]])
    theirs = torch.linalg.lu_factor_ex(torch.tensor(s))
    ours = gc.linalg.lu_factor_ex(gc.tensor(s))
    np.testing.assert_array_equal(_np(ours.info), _np(theirs.info))
    np.testing.assert_array_equal(_np(ours.pivots), _np(theirs.pivots))
    np.testing.assert_allclose(_np(ours.LU), _np(theirs.LU))
    for lib_call in [
        lambda lib, x: lib.linalg.lu_factor(x),
        lambda lib, x: lib.linalg.lu_factor_ex(x[0], check_errors=True),
        lambda lib, x: lib.linalg.inv_ex(x, check_errors=True),
        lambda lib, x: lib.linalg.solve_ex(x, x, check_errors=True),
    ]:
        with pytest.raises(RuntimeError) as t:
            lib_call(torch, torch.tensor(s))
        with pytest.raises(RuntimeError) as g:
            lib_call(gc, gc.tensor(s))
        assert str(g.value) == str(t.value)
    lu, piv = gc.lu(gc.tensor(s))  # torch.lu factors a singular matrix without an error
    np.testing.assert_allclose(_np(lu), _np(theirs.LU))


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_lu_solve_matches_pytorch(left, adjoint, device):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 4, 4))
    b = rng.standard_normal((2, 4, 3) if left else (2, 3, 4))
    lu_t, piv_t = torch.linalg.lu_factor(torch.tensor(a))
    lu_g, piv_g = gc.linalg.lu_factor(gc.tensor(a))
    want = torch.linalg.lu_solve(lu_t, piv_t, torch.tensor(b), left=left, adjoint=adjoint)
    got = gc.linalg.lu_solve(lu_g, piv_g, gc.tensor(b), left=left, adjoint=adjoint)
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-10, atol=1e-12)
    if left and not adjoint:
        np.testing.assert_allclose(_np(gc.lu_solve(gc.tensor(b), lu_g, piv_g)), _np(want),
                                   rtol=1e-10, atol=1e-12)


def test_solve_ex_inv_ex_match_pytorch():
    rng = np.random.default_rng(2)
    a, v, b = rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 3)), \
        rng.standard_normal((2, 4, 3))
    for want, got in [
        (torch.linalg.solve_ex(torch.tensor(a), torch.tensor(v)),
         gc.linalg.solve_ex(gc.tensor(a), gc.tensor(v))),
        (torch.linalg.solve_ex(torch.tensor(a), torch.tensor(b), left=False),
         gc.linalg.solve_ex(gc.tensor(a), gc.tensor(b), left=False)),
        (torch.linalg.inv_ex(torch.tensor(a)), gc.linalg.inv_ex(gc.tensor(a))),
    ]:
        np.testing.assert_allclose(_np(got[0]), _np(want[0]), rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(_np(got[1]), _np(want[1]))


GRAD_CASES = {
    "lu_factor": lambda lib, a: lib.linalg.lu_factor(a)[0],
    "lu_factor_ex": lambda lib, a: lib.linalg.lu_factor_ex(a)[0],
    "lu.L": lambda lib, a: lib.linalg.lu(a)[1],
    "lu.U": lambda lib, a: lib.linalg.lu(a)[2],
    "lu.LU": lambda lib, a: lib.linalg.lu(a)[1] @ lib.linalg.lu(a)[2],
}


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3), (3, 5), (5, 3)])
@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_lu_gradients_gradcheck_and_match_pytorch(name, shape):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shape) + 2 * np.eye(*shape[-2:])
    fn = GRAD_CASES[name]
    x = gc.tensor(a, requires_grad=True)
    assert gc.autograd.gradcheck(lambda t: fn(gc, t), (x,))
    out_t = fn(torch, (xt := torch.tensor(a, requires_grad=True)))
    g = rng.standard_normal(tuple(out_t.shape))
    out_t.backward(torch.tensor(g))
    fn(gc, x).backward(gc.tensor(g))
    np.testing.assert_allclose(_np(x.grad), _np(xt.grad), rtol=1e-9, atol=1e-10)


SOLVE_GRADS = {
    "lu_solve": lambda lib, a, b: lib.linalg.lu_solve(*lib.linalg.lu_factor(a), b),
    "lu_solve_adjoint_right": lambda lib, a, b: lib.linalg.lu_solve(
        *lib.linalg.lu_factor(a), b.mT, left=False, adjoint=True),
    "solve_ex": lambda lib, a, b: lib.linalg.solve_ex(a, b)[0],
    "inv_ex": lambda lib, a, b: lib.linalg.inv_ex(a)[0] @ b,
    "tensorsolve": lambda lib, a, b: lib.linalg.tensorsolve(a.reshape(3, 3), b[:, 0]),
    "tensorinv": lambda lib, a, b: lib.linalg.tensorinv(a.reshape(3, 3), ind=1) @ b,
}


@pytest.mark.parametrize("name", sorted(SOLVE_GRADS))
def test_solve_gradients_gradcheck_and_match_pytorch(name):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((3, 2))
    fn = SOLVE_GRADS[name]
    xa, xb = gc.tensor(a, requires_grad=True), gc.tensor(b, requires_grad=True)
    assert gc.autograd.gradcheck(lambda s, t: fn(gc, s, t), (xa, xb))
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    out = fn(torch, ta, tb)
    g = rng.standard_normal(tuple(out.shape))
    out.backward(torch.tensor(g))
    fn(gc, xa, xb).backward(gc.tensor(g))
    np.testing.assert_allclose(_np(xa.grad), _np(ta.grad), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(_np(xb.grad), _np(tb.grad), rtol=1e-9, atol=1e-10)


def test_vander_tensorinv_tensorsolve_householder_match_pytorch(device):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3))
    for n in (None, 2, 4):
        np.testing.assert_allclose(_np(gc.linalg.vander(gc.tensor(x), N=n)),
                                   _np(torch.linalg.vander(torch.tensor(x), N=n)), rtol=1e-12)
    ints = [1, 2, 3]
    assert gc.linalg.vander(gc.tensor(ints)).tolist() == torch.linalg.vander(
        torch.tensor(ints)).tolist()
    a = rng.standard_normal((2, 3, 6))
    np.testing.assert_allclose(_np(gc.linalg.tensorinv(gc.tensor(a))),
                               _np(torch.linalg.tensorinv(torch.tensor(a))), rtol=1e-9)
    b = rng.standard_normal((2, 3))
    a2 = rng.standard_normal((6, 2, 3))
    np.testing.assert_allclose(
        _np(gc.linalg.tensorsolve(gc.tensor(a2), gc.tensor(b), dims=(0,))),
        _np(torch.linalg.tensorsolve(torch.tensor(a2), torch.tensor(b), dims=(0,))),
        rtol=1e-9, atol=1e-12)
    h, tau = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 2))
    np.testing.assert_allclose(
        _np(gc.linalg.householder_product(gc.tensor(h), gc.tensor(tau))),
        _np(torch.linalg.householder_product(torch.tensor(h), torch.tensor(tau))),
        rtol=1e-12, atol=1e-12)


def test_householder_product_and_vander_gradients():
    rng = np.random.default_rng(6)
    h = gc.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    tau = gc.tensor(rng.standard_normal(3), requires_grad=True)
    assert gc.autograd.gradcheck(gc.linalg.householder_product, (h, tau))
    th = torch.tensor(h.detach().numpy(), requires_grad=True)
    tt = torch.tensor(tau.detach().numpy(), requires_grad=True)
    torch.linalg.householder_product(th, tt).sum().backward()
    gc.linalg.householder_product(h, tau).sum().backward()
    np.testing.assert_allclose(_np(h.grad), _np(th.grad), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(_np(tau.grad), _np(tt.grad), rtol=1e-9, atol=1e-12)
    x = gc.tensor(rng.standard_normal(4), requires_grad=True)
    assert gc.autograd.gradcheck(lambda t: gc.linalg.vander(t, N=5), (x,))


ERRORS = [
    lambda lib: lib.linalg.lu_factor(lib.ones(2, 2), pivot=False),
    lambda lib: lib.linalg.tensorinv(lib.ones(2, 3), ind=1),
    lambda lib: lib.linalg.tensorinv(lib.ones(2, 2), ind=0),
    lambda lib: lib.linalg.vander(lib.tensor(1.0)),
    lambda lib: lib.linalg.lu_solve(lib.eye(2), lib.ones(2, dtype=lib.int32),
                                    lib.ones(3, 1)),
    lambda lib: lib.lu_unpack(lib.eye(2), lib.ones(2)),
    lambda lib: lib.linalg.householder_product(lib.ones(2, 3), lib.ones(1)),
    lambda lib: lib.linalg.householder_product(lib.ones(3, 2), lib.ones(3)),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_are_pytorchs(k):
    with pytest.raises(RuntimeError) as t:
        ERRORS[k](torch)
    with pytest.raises(RuntimeError) as g:
        ERRORS[k](gc)
    assert str(g.value) == str(t.value)
