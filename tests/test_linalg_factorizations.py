"""The factorizations of ``gradcore.linalg`` (cholesky, qr, svd, eigh, ...) and the ops
built on them against PyTorch: values, gradients of functions that do not depend on the
signs of singular vectors and eigenvectors (first and second order), results, node
names and error messages. Finite differences of each are in tests/test_ops_table.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gradcore as gc

from conftest import host, needs_torch

_RNG = np.random.default_rng(7)
TALL = _RNG.standard_normal((2, 5, 3))
WIDE = _RNG.standard_normal((2, 3, 5))
SQUARE = _RNG.standard_normal((2, 3, 3))
RHS = _RNG.standard_normal((2, 3, 2))


def _spd(m, x):
    return x @ x.mT + 3 * m.eye(x.shape[-1], dtype=x.dtype)


def _sym(m, x):
    return x + x.mT + m.diag_embed(m.arange(3, dtype=x.dtype) * 5)


def _svd_invariant(m, x, full):
    u, s, vh = m.linalg.svd(x, full_matrices=full)
    k = s.shape[-1]
    u, vh = u[..., :, :k], vh[..., :k, :]
    return m.cat([(u * s.unsqueeze(-2) @ vh).flatten(-2), (u ** 2).flatten(-2),
                  (vh ** 3).abs().flatten(-2), s], -1)


CASES = [
    ("cholesky", lambda m, x: m.linalg.cholesky(_spd(m, x)), [SQUARE]),
    ("cholesky_upper", lambda m, x: m.linalg.cholesky(_spd(m, x), upper=True), [SQUARE]),
    ("cholesky_ex", lambda m, x: m.linalg.cholesky_ex(_spd(m, x)).L, [SQUARE]),
    ("torch_cholesky", lambda m, x: _spd(m, x).cholesky(), [SQUARE]),
    ("cholesky_solve", lambda m, x, b: m.cholesky_solve(b, m.linalg.cholesky(_spd(m, x))),
     [SQUARE, RHS]),
    ("cholesky_inverse", lambda m, x: m.linalg.cholesky(_spd(m, x)).cholesky_inverse(),
     [SQUARE]),
    ("qr_tall", lambda m, x: m.cat([m.linalg.qr(x).Q.flatten(-2),
                                    m.linalg.qr(x).R.flatten(-2)], -1), [TALL]),
    ("qr_wide", lambda m, x: m.cat([m.linalg.qr(x).Q.flatten(-2),
                                    m.linalg.qr(x).R.flatten(-2)], -1), [WIDE]),
    ("qr_complete_wide", lambda m, x: m.linalg.qr(x, mode="complete").R, [WIDE]),
    ("torch_qr", lambda m, x: m.qr(x).Q * 2 + x.qr(some=False).Q[..., :3], [TALL[..., :3, :]]),
    ("svd_tall", lambda m, x: _svd_invariant(m, x, False), [TALL]),
    ("svd_wide", lambda m, x: _svd_invariant(m, x, False), [WIDE]),
    ("svd_full", lambda m, x: _svd_invariant(m, x, True), [WIDE]),
    ("torch_svd", lambda m, x: (lambda r: r.U.abs() @ m.diag_embed(r.S) @ r.V.mT.abs())(
        x.svd()), [TALL]),
    ("svdvals", lambda m, x: m.linalg.svdvals(x), [TALL]),
    ("eigh", lambda m, x: (lambda r: r.eigenvectors ** 2 * r.eigenvalues.unsqueeze(-2))(
        m.linalg.eigh(_sym(m, x))), [SQUARE]),
    ("eigh_upper", lambda m, x: m.linalg.eigh(_sym(m, x), UPLO="U").eigenvectors.abs(),
     [SQUARE]),
    ("eigvalsh", lambda m, x: m.linalg.eigvalsh(_sym(m, x)), [SQUARE]),
    ("solve_triangular", lambda m, a, b: m.linalg.solve_triangular(
        a + 3 * m.eye(3, dtype=a.dtype), b, upper=True), [SQUARE, RHS]),
    ("solve_triangular_broadcast", lambda m, a, b: m.linalg.solve_triangular(
        a + 3 * m.eye(3, dtype=a.dtype), b, upper=False), [SQUARE[0], RHS]),
    ("solve_triangular_right_unit", lambda m, a, b: m.linalg.solve_triangular(
        a, b, upper=False, left=False, unitriangular=True), [SQUARE, RHS.swapaxes(1, 2)]),
    ("triangular_solve", lambda m, a, b: m.triangular_solve(
        b, a + 3 * m.eye(3, dtype=a.dtype), upper=False, transpose=True).solution,
     [SQUARE, RHS]),
    ("triangular_solve_coefficient", lambda m, a, b: (lambda r: r.solution + r.cloned_coefficient
                                                      .sum((-2, -1)).unsqueeze(-1).unsqueeze(-1))(
        b.triangular_solve(a + 3 * m.eye(3, dtype=a.dtype))), [SQUARE, RHS]),
    ("lstsq", lambda m, a, b: m.linalg.lstsq(a, b).solution, [TALL, TALL[..., :2] + 1]),
    ("lstsq_wide", lambda m, a, b: m.linalg.lstsq(a, b).solution, [WIDE, RHS]),
    ("lstsq_vector", lambda m, a, b: m.linalg.lstsq(a, b).solution, [TALL, TALL[..., 0]]),
    ("lstsq_residuals", lambda m, a, b: m.linalg.lstsq(a, b, driver="gels").residuals,
     [TALL, TALL[..., :2] + 1]),
    ("matrix_exp", lambda m, x: m.linalg.matrix_exp(x), [SQUARE]),
    ("matrix_exp_large", lambda m, x: (x * 4).matrix_exp(), [SQUARE]),
    ("cond", lambda m, x: m.linalg.cond(x), [TALL]),
    ("cond_-2", lambda m, x: m.linalg.cond(x, -2), [WIDE]),
    ("matrix_norm_2", lambda m, x: m.linalg.matrix_norm(x, 2), [TALL]),
    ("matrix_norm_-2_keepdim", lambda m, x: m.linalg.matrix_norm(x, -2, dim=(0, 2),
                                                                 keepdim=True), [TALL]),
    ("norm_nuc", lambda m, x: m.linalg.norm(x[0], "nuc"), [WIDE]),
]


@needs_torch
@pytest.mark.parametrize("name, fn, arrays", CASES, ids=[c[0] for c in CASES])
def test_factorizations_are_pytorch_s(name, fn, arrays, device):
    """Values, gradients and (create_graph) second derivatives equal PyTorch's."""
    import torch

    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    gs = [gc.tensor(a, device=device, requires_grad=True) for a in arrays]
    want, got = fn(torch, *ts), fn(gc, *gs)
    np.testing.assert_allclose(host(got.detach()), want.detach().numpy(), rtol=1e-9,
                               atol=1e-11)
    w = np.random.default_rng(1).standard_normal(tuple(want.shape))
    t_grads = torch.autograd.grad([want], ts, [torch.tensor(w)], create_graph=True)
    g_grads = gc.autograd.grad([got], gs, [gc.tensor(w, device=device)], create_graph=True)
    for t, g in zip(t_grads, g_grads):
        np.testing.assert_allclose(host(g.detach()), t.detach().numpy(), rtol=1e-8,
                                   atol=1e-10)
    vs = [np.random.default_rng(2 + i).standard_normal(a.shape) for i, a in enumerate(arrays)]
    t_second = torch.autograd.grad([sum((g * torch.tensor(v)).sum()
                                        for g, v in zip(t_grads, vs))], ts)
    g_second = gc.autograd.grad([sum((g * gc.tensor(v, device=device)).sum()
                                     for g, v in zip(g_grads, vs))], gs)
    for t, g in zip(t_second, g_second):
        np.testing.assert_allclose(host(g), t.numpy(), rtol=1e-7, atol=1e-9)


NODE_NAMES = [
    ("LinalgCholeskyExBackward0", lambda m, x: m.linalg.cholesky(_spd(m, x))),
    ("LinalgQrBackward0", lambda m, x: m.linalg.qr(x).R),
    ("LinalgSvdBackward0", lambda m, x: m.linalg.svd(x).S),
    ("LinalgSvdBackward0", lambda m, x: m.linalg.svdvals(x)),
    ("LinalgEighBackward0", lambda m, x: m.linalg.eigh(x).eigenvectors),
    ("LinalgEighBackward0", lambda m, x: m.linalg.eigvalsh(x)),
    ("LinalgSolveTriangularBackward0",
     lambda m, x: m.linalg.solve_triangular(x, x, upper=True)),
    ("LinalgMatrixExpBackward0", lambda m, x: m.linalg.matrix_exp(x)),
]


@needs_torch
@pytest.mark.parametrize("name, fn", NODE_NAMES, ids=[n[0] + str(i) for i, n in
                                                      enumerate(NODE_NAMES)])
def test_node_names_are_pytorch_s(name, fn):
    import torch

    x = SQUARE[0] + 3 * np.eye(3)
    want = fn(torch, torch.tensor(x, requires_grad=True)).grad_fn.name()
    assert want == name
    assert fn(gc, gc.tensor(x, requires_grad=True)).grad_fn.name() == name


def test_results_are_named_tuples_with_pytorch_s_fields():
    x = gc.tensor(SQUARE[0] @ SQUARE[0].T + 3 * np.eye(3))
    for result, name, fields in [
            (gc.linalg.cholesky_ex(x), "linalg_cholesky_ex", ("L", "info")),
            (gc.linalg.qr(x), "linalg_qr", ("Q", "R")),
            (gc.qr(x), "qr", ("Q", "R")),
            (gc.linalg.svd(x), "linalg_svd", ("U", "S", "Vh")),
            (gc.svd(x), "svd", ("U", "S", "V")),
            (gc.linalg.eigh(x), "linalg_eigh", ("eigenvalues", "eigenvectors")),
            (gc.linalg.lstsq(x, x), "linalg_lstsq",
             ("solution", "residuals", "rank", "singular_values")),
            (gc.triangular_solve(x, x), "triangular_solve",
             ("solution", "cloned_coefficient"))]:
        assert type(result).__name__ == name
        assert result._fields == fields
    assert gc.linalg.cholesky_ex(x).info.dtype == gc.int32


def test_shapes_and_dtypes():
    tall = gc.tensor(TALL, dtype=gc.float32)
    u, s, vh = gc.linalg.svd(tall)
    assert (u.shape, s.shape, vh.shape) == ((2, 5, 5), (2, 3), (2, 3, 3))
    assert u.dtype == s.dtype == vh.dtype == gc.float32
    q, r = gc.linalg.qr(tall, mode="complete")
    assert (q.shape, r.shape) == ((2, 5, 5), (2, 5, 3))
    q, r = gc.linalg.qr(tall, mode="r")
    assert (q.shape, r.shape) == ((0,), (2, 3, 3))
    u, s, v = gc.svd(tall, compute_uv=False)
    assert (u.shape, s.shape, v.shape) == ((2, 5, 5), (2, 3), (2, 3, 3))
    assert not host(u).any() and not host(v).any()
    u, s, v = gc.svd(tall, some=False)
    assert (u.shape, v.shape) == ((2, 5, 5), (2, 3, 3))
    np.testing.assert_allclose(host(gc.linalg.matrix_exp(gc.zeros(2, 3, 3))),
                               np.broadcast_to(np.eye(3), (2, 3, 3)))


@needs_torch
def test_lstsq_results_by_driver_are_pytorch_s():
    import torch

    deficient = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    for a, b in [(TALL, TALL[..., :2] + 1), (WIDE, RHS), (deficient, np.ones((3, 2)))]:
        for driver in (None, "gelsy", "gelsd", "gelss", "gels"):
            if driver == "gels" and a is deficient:
                continue  # (gels assumes full rank)
            want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
            got = gc.linalg.lstsq(gc.tensor(a), gc.tensor(b), driver=driver)
            for g, t in zip(got, want):
                assert g.dtype == getattr(gc, str(t.dtype).split(".")[-1])
                np.testing.assert_allclose(host(g), t.numpy(), rtol=1e-9, atol=1e-10)


@needs_torch
def test_matrix_rank_and_cond_are_pytorch_s():
    import torch

    low = np.concatenate([TALL[..., :2], TALL[..., :1] * 2], -1)  # rank 2
    for a in (TALL, low, np.zeros((3, 3)), SQUARE @ SQUARE.swapaxes(1, 2)):
        for kwargs in ({}, {"atol": 1.0}, {"rtol": 0.5}, {"atol": 0.1, "rtol": 0.2},
                       {"hermitian": True}):
            if kwargs.get("hermitian") and a.shape[-1] != a.shape[-2]:
                continue
            want = torch.linalg.matrix_rank(torch.tensor(a), **kwargs)
            got = gc.linalg.matrix_rank(gc.tensor(a), **kwargs)
            assert got.dtype == gc.int64
            np.testing.assert_array_equal(host(got), want.numpy())
    tolerance = np.array([0.5, 0.0])  # one per matrix; rtol 0 only where it is above 0
    np.testing.assert_array_equal(
        host(gc.linalg.matrix_rank(gc.tensor(low), atol=gc.tensor(tolerance))),
        torch.linalg.matrix_rank(torch.tensor(low), atol=torch.tensor(tolerance)).numpy())
    x = SQUARE + 3 * np.eye(3)
    for p in (None, 2, -2, "fro", "nuc", 1, -1, math.inf, -math.inf):
        t, g = torch.tensor(x, requires_grad=True), gc.tensor(x, requires_grad=True)
        want, got = torch.linalg.cond(t, p), gc.linalg.cond(g, p)
        np.testing.assert_allclose(host(got.detach()), want.detach().numpy(), rtol=1e-10)
        if p not in (None, 2, -2, "nuc"):
            continue  # (PyTorch's backward fails there: it changes a saved inverse in place)
        want.sum().backward()
        got.sum().backward()
        np.testing.assert_allclose(host(g.grad), t.grad.numpy(), rtol=1e-9, atol=1e-12)


@needs_torch
def test_cholesky_ex_of_matrices_not_positive_definite_is_pytorch_s():
    import torch

    bad = np.stack([np.eye(3), -np.eye(3), np.diag([1.0, -2.0, 3.0]),
                    np.array([[4.0, 2.0, 1.0], [2.0, 1.0, 0.5], [1.0, 0.5, 3.0]])])
    want = torch.linalg.cholesky_ex(torch.tensor(bad))
    got = gc.linalg.cholesky_ex(gc.tensor(bad))
    np.testing.assert_array_equal(host(got.info), want.info.numpy())
    np.testing.assert_allclose(host(got.L), want.L.numpy())


@needs_torch
def test_errors_are_pytorch_s():
    import torch

    spd = SQUARE[0] @ SQUARE[0].T + np.eye(3)
    cases = [
        lambda m: m.linalg.cholesky(m.ones(3, 4, dtype=m.float64)),
        lambda m: m.linalg.cholesky(m.ones(3, dtype=m.float64)),
        lambda m: m.linalg.cholesky(-m.eye(3, dtype=m.float64)),
        lambda m: m.linalg.cholesky(m.stack([m.eye(3), m.diag(m.tensor([1.0, 1.0, -1.0]))])),
        lambda m: m.linalg.cholesky_ex(-m.eye(2), check_errors=True),
        lambda m: m.linalg.cholesky(m.eye(3, dtype=m.int64)),
        lambda m: m.linalg.qr(m.ones(3), mode="reduced"),
        lambda m: m.linalg.qr(m.ones(3, 3), mode="full"),
        lambda m: m.linalg.svd(m.ones(3)),
        lambda m: m.linalg.svdvals(m.ones(3, 3, dtype=m.int64)),
        lambda m: m.linalg.eigh(m.ones(3, 4)),
        lambda m: m.linalg.eigh(m.tensor(spd), UPLO="X"),
        lambda m: m.linalg.eigvalsh(m.ones(2, 3)),
        lambda m: m.linalg.solve_triangular(m.ones(3, 3), m.ones(3), upper=True),
        lambda m: m.linalg.solve_triangular(m.ones(3, 4), m.ones(3, 2), upper=True),
        lambda m: m.linalg.solve_triangular(m.ones(3, 3), m.ones(2, 2), upper=True),
        lambda m: m.linalg.solve_triangular(m.ones(3, 3), m.ones(3, 2), upper=True,
                                            left=False),
        lambda m: m.linalg.matrix_exp(m.ones(2, 3)),
        lambda m: m.linalg.lstsq(m.ones(4, 3), m.ones(3, 2)),
        lambda m: m.linalg.lstsq(m.ones(4, 3), m.ones(3)),
        lambda m: m.linalg.lstsq(m.ones(4, 3), m.ones(4, 2, dtype=m.float64)),
        lambda m: m.linalg.lstsq(m.ones(4, 3), m.ones(4, 2), driver="lu"),
        lambda m: m.linalg.cond(m.ones(3, 4), "fro"),
        lambda m: m.linalg.matrix_norm(m.ones(3, 4), 3),
    ]
    for case in cases:
        with pytest.raises(Exception) as want:
            case(torch)
        kind = gc.linalg.LinAlgError if isinstance(want.value, torch.linalg.LinAlgError) \
            else type(want.value)
        with pytest.raises(kind) as got:
            case(gc)
        assert str(got.value) == str(want.value).split("\n")[0], str(got.value)


@needs_torch
def test_backward_errors_are_pytorch_s():
    import torch

    for mode, shape in (("r", (3, 3)), ("complete", (4, 3))):
        for m in (torch, gc):
            x = m.ones(shape, dtype=m.float64) + m.eye(*shape, dtype=m.float64)
            x.requires_grad_(True)
            r = m.linalg.qr(x, mode=mode).R
            with pytest.raises(RuntimeError) as err:
                r.sum().backward()
            if m is torch:
                message = str(err.value)
            else:
                assert str(err.value) == message


def test_eig_needs_complex_tensors():
    for op in (gc.linalg.eig, gc.linalg.eigvals):
        with pytest.raises(NotImplementedError, match=op.__name__ + ".*complex"):
            op(gc.eye(3))
    with pytest.raises(NotImplementedError, match="Half"):
        gc.linalg.cholesky(gc.eye(2, dtype=gc.float16))


def test_saved_outputs_are_freed_and_checked():
    x = gc.tensor(SQUARE[0], requires_grad=True)
    u, s, vh = gc.linalg.svd(x)
    loss = (s * s).sum() + u.sum() * 0
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
    q, r = gc.linalg.qr(x)
    loss = (q * 2).sum()
    q.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_tensor_methods_and_top_level_names():
    for name in ("cholesky", "cholesky_solve", "cholesky_inverse", "qr", "svd",
                 "triangular_solve", "matrix_exp"):
        assert callable(getattr(gc, name)) and callable(getattr(gc.Tensor, name)), name
    assert gc.linalg.LinAlgError is gc.ops.linalg.LinAlgError
    assert issubclass(gc.linalg.LinAlgError, RuntimeError)
