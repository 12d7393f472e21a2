"""nn.utils.parametrize / parametrizations / weight_norm / spectral_norm / prune,
optim.Rprop / ASGD and optim.swa_utils against PyTorch 2.13: the same state-dict keys,
values, reprs and errors."""

import subprocess
import sys
import warnings

import numpy as np
import pytest

import gradcore as gc
from gradcore import nn
from gradcore.nn.utils import parametrizations as gP
from gradcore.nn.utils import parametrize as gparam
from gradcore.nn.utils import prune as gprune

from conftest import HAVE_TORCH, PINNED_TORCH, needs_torch

pytestmark = needs_torch
if HAVE_TORCH:
    import torch
    from torch.nn.utils import parametrizations as tP
    from torch.nn.utils import parametrize as tparam
    from torch.nn.utils import prune as tprune


def _np(t):
    return t.detach().cpu().numpy() if hasattr(t, "cpu") else np.asarray(t)


def _load_from_torch(gm, tm, strict=True):
    """gradcore module ``gm`` given torch module ``tm``'s state dict."""
    return gm.load_state_dict({k: gc.tensor(v.detach().numpy())
                               for k, v in tm.state_dict().items()}, strict=strict)


def _same_state(gm, tm, **tol):
    a, b = tm.state_dict(), gm.state_dict()
    assert list(a) == list(b)
    for k in a:
        np.testing.assert_allclose(_np(b[k]), _np(a[k]), err_msg=k, **tol)


def _raises_like(make_theirs, make_ours):
    """The same exception type and message from both (gradcore's names for torch's:
    ``gradcore.Size``)."""
    with pytest.raises(Exception) as theirs:
        make_theirs()
    with pytest.raises(type(theirs.value)) as ours:
        make_ours()
    assert str(ours.value) == str(theirs.value).replace("torch.", "gradcore.")


X = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
X5 = np.random.default_rng(7).standard_normal((3, 5)).astype(np.float32)


# ---- parametrize ----------------------------------------------------------------------
class _Sym:
    """A symmetric matrix from its upper triangle, in both libraries."""

    @staticmethod
    def make(lib):
        class Symmetric(lib.nn.Module):
            def forward(self, A):
                return A.triu() + A.triu(1).mT

            def right_inverse(self, A):
                return A.triu()
        return Symmetric()


def test_register_parametrization_swaps_the_class_and_keys_like_pytorch():
    tl, gl = torch.nn.Linear(4, 4), nn.Linear(4, 4)
    _load_from_torch(gl, tl)
    tparam.register_parametrization(tl, "weight", _Sym.make(torch))
    gparam.register_parametrization(gl, "weight", _Sym.make(gc))
    assert type(gl).__name__ == "ParametrizedLinear"
    assert gparam.type_before_parametrizations(gl) is nn.Linear
    assert gparam.is_parametrized(gl) and gparam.is_parametrized(gl, "weight")
    assert not gparam.is_parametrized(gl, "bias")
    assert isinstance(gl.parametrizations, nn.ModuleDict)
    assert isinstance(gl.parametrizations.weight, gparam.ParametrizationList)
    assert repr(gl) == repr(tl)
    _same_state(gl, tl)
    np.testing.assert_allclose(_np(gl.weight), _np(tl.weight))
    # assigning runs right_inverse
    tl.weight = torch.tensor(np.eye(4, dtype=np.float32) * 2)
    gl.weight = gc.tensor(np.eye(4, dtype=np.float32) * 2)
    _same_state(gl, tl)
    _raises_like(lambda: setattr(tl, "weight", torch.nn.Parameter(torch.ones(4, 4))),
                 lambda: setattr(gl, "weight", nn.Parameter(gc.ones(4, 4))))
    # a deep copy keeps the parametrized class
    import copy
    clone = copy.deepcopy(gl)
    assert type(clone) is type(gl) and clone.parametrizations.weight.original is not \
        gl.parametrizations.weight.original
    np.testing.assert_array_equal(_np(clone.weight), _np(gl.weight))
    # gradients reach the original
    gl(gc.tensor(X)).sum().backward()
    tl(torch.tensor(X)).sum().backward()
    np.testing.assert_allclose(_np(gl.parametrizations.weight.original.grad),
                               _np(tl.parametrizations.weight.original.grad), rtol=1e-6)


def test_remove_parametrizations_leaves_the_parametrized_or_the_original_value():
    for leave in (True, False):
        tl, gl = torch.nn.Linear(4, 4), nn.Linear(4, 4)
        _load_from_torch(gl, tl)
        tparam.register_parametrization(tl, "weight", _Sym.make(torch))
        gparam.register_parametrization(gl, "weight", _Sym.make(gc))
        tparam.remove_parametrizations(tl, "weight", leave_parametrized=leave)
        gparam.remove_parametrizations(gl, "weight", leave_parametrized=leave)
        assert type(gl) is nn.Linear and not hasattr(gl, "parametrizations")
        assert isinstance(gl.weight, nn.Parameter)
        _same_state(gl, tl)
    _raises_like(lambda: tparam.remove_parametrizations(torch.nn.Linear(2, 2), "weight"),
                 lambda: gparam.remove_parametrizations(nn.Linear(2, 2), "weight"))


def test_parametrizations_chain_and_cache():
    calls = []

    class Double(nn.Module):
        def forward(self, A):
            calls.append(1)
            return A * 2

    gl = nn.Linear(3, 3)
    w = _np(gl.weight).copy()
    gparam.register_parametrization(gl, "weight", Double())
    gparam.register_parametrization(gl, "weight", Double())  # applied after the first
    assert len(gl.parametrizations.weight) == 2
    np.testing.assert_allclose(_np(gl.weight), 4 * w)
    calls.clear()
    with gparam.cached():
        a, b = gl.weight, gl.weight
        assert a is b
    assert len(calls) == 2  # one evaluation of the two parametrizations
    calls.clear()
    _ = gl.weight, gl.weight
    assert len(calls) == 4


def test_register_parametrization_errors_are_pytorchs():
    def make(lib, param):
        class Bad(lib.nn.Module):
            def forward(self, A):
                return A[:1]
        return lambda: param.register_parametrization(lib.nn.Linear(3, 3), "weight", Bad())
    _raises_like(make(torch, tparam), make(gc, gparam))

    def missing(lib, param):
        class Id(lib.nn.Module):
            def forward(self, A):
                return A
        return lambda: param.register_parametrization(lib.nn.Linear(3, 3), "nope", Id())
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a "
                                         "parametrized element with name 'nope'"):
        missing(gc, gparam)()
    with pytest.raises(ValueError, match="requires one or more modules"):
        gparam.ParametrizationList([], gc.ones(2))


# ---- parametrizations.weight_norm / spectral_norm / orthogonal -------------------------
@pytest.mark.parametrize("dim", [0, 1, None, -2])
def test_weight_norm_matches_pytorch_and_loads_its_state_dict(dim):
    tc = tP.weight_norm(torch.nn.Conv2d(2, 3, 3), dim=dim)
    gcv = gP.weight_norm(nn.Conv2d(2, 3, 3), dim=dim)
    assert list(gcv.state_dict()) == list(tc.state_dict()) == [
        "bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    # a fresh weight norm splits the weight as PyTorch's: shapes of g and v
    assert [tuple(v.shape) for v in gcv.state_dict().values()] == \
        [tuple(v.shape) for v in tc.state_dict().values()]
    _load_from_torch(gcv, tc)
    np.testing.assert_allclose(_np(gcv.weight), _np(tc.weight), rtol=1e-6, atol=1e-7)
    x = np.random.default_rng(1).standard_normal((1, 2, 5, 5)).astype(np.float32)
    tc(torch.tensor(x)).square().sum().backward()
    gcv(gc.tensor(x)).square().sum().backward()
    for name in ("original0", "original1"):
        np.testing.assert_allclose(_np(getattr(gcv.parametrizations.weight, name).grad),
                                   _np(getattr(tc.parametrizations.weight, name).grad),
                                   rtol=1e-4, atol=1e-5)
    assert repr(gcv) == repr(tc)


def test_weight_norm_loads_an_old_style_state_dict():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        old = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3))
    tl = tP.weight_norm(torch.nn.Linear(4, 3))
    tl.load_state_dict(old.state_dict())
    gl = gP.weight_norm(nn.Linear(4, 3))
    sd = {k: gc.tensor(v.detach().numpy()) for k, v in old.state_dict().items()}
    gl.load_state_dict(sd)
    assert sorted(sd) == ["bias", "weight_g", "weight_v"]  # the caller's dict unchanged
    np.testing.assert_allclose(_np(gl.weight), _np(tl.weight), rtol=1e-6)


@pytest.mark.parametrize("make, kw", [
    (lambda lib: lib.nn.Linear(5, 4), {}),
    (lambda lib: lib.nn.Conv2d(2, 3, 3), dict(n_power_iterations=3, eps=1e-6)),
    (lambda lib: lib.nn.ConvTranspose2d(2, 3, 3), {}),  # dim 1 by default
    (lambda lib: lib.nn.Linear(5, 4), dict(dim=1)),
])
def test_spectral_norm_power_iteration_matches_pytorch(make, kw):
    tm = tP.spectral_norm(make(torch), **kw)
    gm = gP.spectral_norm(make(gc), **kw)
    assert list(gm.state_dict()) == list(tm.state_dict()) == [
        "bias", "parametrizations.weight.original", "parametrizations.weight.0._u",
        "parametrizations.weight.0._v"]
    _load_from_torch(gm, tm)  # PyTorch's random u, v
    for _ in range(3):  # training mode: a power iteration at each use
        np.testing.assert_allclose(_np(gm.weight), _np(tm.weight), rtol=1e-5, atol=1e-6)
    _same_state(gm, tm, rtol=1e-5, atol=1e-6)
    tm.eval()
    gm.eval()
    u = _np(gm.parametrizations.weight[0]._u).copy()
    np.testing.assert_allclose(_np(gm.weight), _np(tm.weight), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(_np(gm.parametrizations.weight[0]._u), u)  # not updated
    # the estimate of the largest singular value, for a weight whose two largest are 3
    # and 1 (power iteration converges as (1/3) ** (2 * steps))
    gm.train()
    dim = gm.parametrizations.weight[0].dim
    original = gm.parametrizations.weight.original
    moved = np.moveaxis(_np(original), dim, 0)
    h, n = moved.shape[0], moved[0].size
    k = min(h, n)
    rng = np.random.default_rng(8)
    U = np.linalg.qr(rng.standard_normal((h, k)))[0]
    V = np.linalg.qr(rng.standard_normal((n, k)))[0]
    mat = (U * np.r_[3.0, np.linspace(1, 0.5, k - 1)]) @ V.T
    with gc.no_grad():
        original.copy_(gc.tensor(np.moveaxis(mat.reshape(moved.shape), 0, dim)
                                 .astype(np.float32)))
    for _ in range(30):
        w = gm.weight
    mat = np.moveaxis(_np(w), dim, 0).reshape(h, -1)
    assert abs(np.linalg.svd(mat, compute_uv=False)[0] - 1) < 1e-4


def test_spectral_norm_errors_are_pytorchs():
    _raises_like(lambda: tP.spectral_norm(torch.nn.Linear(3, 3), n_power_iterations=0),
                 lambda: gP.spectral_norm(nn.Linear(3, 3), n_power_iterations=0))
    _raises_like(lambda: tP.spectral_norm(torch.nn.Linear(3, 3), dim=2),
                 lambda: gP.spectral_norm(nn.Linear(3, 3), dim=2))
    _raises_like(lambda: tP.spectral_norm(torch.nn.Linear(3, 3), "nope"),
                 lambda: gP.spectral_norm(nn.Linear(3, 3), "nope"))


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder", None])
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_orthogonal_gives_pytorchs_matrix_from_its_state(orthogonal_map, shape):
    tl = tP.orthogonal(torch.nn.Linear(shape[1], shape[0]), orthogonal_map=orthogonal_map)
    gl = gP.orthogonal(nn.Linear(shape[1], shape[0]), orthogonal_map=orthogonal_map)
    assert list(gl.state_dict()) == list(tl.state_dict()) == [
        "bias", "parametrizations.weight.original", "parametrizations.weight.0.base"]
    W = _np(gl.weight)  # orthonormal columns or rows
    G = W.T @ W if shape[0] >= shape[1] else W @ W.T
    np.testing.assert_allclose(G, np.eye(min(shape)), atol=1e-5)
    # from PyTorch's state (its base), after a step away from the start
    with torch.no_grad():
        tl.parametrizations.weight.original.add_(
            torch.tensor(np.random.default_rng(2).standard_normal(shape).astype(np.float32))
            * 0.1)
    _load_from_torch(gl, tl)
    np.testing.assert_allclose(_np(gl.weight), _np(tl.weight), rtol=1e-4, atol=1e-5)
    x = np.random.default_rng(6).standard_normal((3, shape[1])).astype(np.float32)
    tl(torch.tensor(x)).square().sum().backward()
    gl(gc.tensor(x)).square().sum().backward()
    np.testing.assert_allclose(_np(gl.parametrizations.weight.original.grad),
                               _np(tl.parametrizations.weight.original.grad),
                               rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("orthogonal_map", ["householder", "matrix_exp", "cayley"])
def test_orthogonal_on_a_batch_of_matrices_matches_pytorch(orthogonal_map):
    for use_trivialization in (True, False):
        tm = tP.orthogonal(torch.nn.Conv1d(4, 3, 3), orthogonal_map=orthogonal_map,
                           use_trivialization=use_trivialization)
        gm = gP.orthogonal(nn.Conv1d(4, 3, 3), orthogonal_map=orthogonal_map,
                           use_trivialization=use_trivialization)
        assert list(gm.state_dict()) == list(tm.state_dict())
        with torch.no_grad():
            tm.parametrizations.weight.original.mul_(0.9)
        _load_from_torch(gm, tm)
        np.testing.assert_allclose(_np(gm.weight), _np(tm.weight), rtol=1e-4, atol=1e-5)


def test_a_buffer_parametrized_and_transferred_as_pytorch():
    def double(lib):
        class Double(lib.nn.Module):
            def forward(self, x):
                return x * 2
        return Double()
    tb, gb = torch.nn.BatchNorm1d(3), nn.BatchNorm1d(3)
    tparam.register_parametrization(tb, "running_var", double(torch))
    gparam.register_parametrization(gb, "running_var", double(gc))
    assert list(gb.state_dict()) == list(tb.state_dict())
    assert "original" in gb.parametrizations.running_var._buffers
    np.testing.assert_array_equal(_np(gb.running_var), [2.0, 2.0, 2.0])
    t2, g2 = torch.nn.BatchNorm1d(3), nn.BatchNorm1d(3)
    tparam.transfer_parametrizations_and_params(tb, t2)
    gparam.transfer_parametrizations_and_params(gb, g2)
    assert list(g2.state_dict()) == list(t2.state_dict())
    assert g2.parametrizations.running_var.original is gb.parametrizations.running_var.original


def test_orthogonal_assignment_and_errors():
    gl = gP.orthogonal(nn.Linear(3, 3))
    Q = np.linalg.qr(np.random.default_rng(3).standard_normal((3, 3)))[0].astype(np.float32)
    gl.weight = gc.tensor(Q)
    np.testing.assert_allclose(_np(gl.weight), Q, atol=1e-5)
    _raises_like(lambda: tP.orthogonal(torch.nn.Linear(3, 3), orthogonal_map="qr"),
                 lambda: gP.orthogonal(nn.Linear(3, 3), orthogonal_map="qr"))
    _raises_like(lambda: tP.orthogonal(torch.nn.Linear(3, 3), "bias"),
                 lambda: gP.orthogonal(nn.Linear(3, 3), "bias"))
    # without a base: the matrix exponential and Cayley maps keep the weight as their
    # original (they have no inverse); householder stores the QR factorization
    for orthogonal_map in ("matrix_exp", "cayley", "householder"):
        for shape in ((3, 3), (4, 2)):
            tl = torch.nn.Linear(shape[1], shape[0])
            gl = nn.Linear(shape[1], shape[0])
            _load_from_torch(gl, tl)
            tP.orthogonal(tl, orthogonal_map=orthogonal_map, use_trivialization=False)
            gP.orthogonal(gl, orthogonal_map=orthogonal_map, use_trivialization=False)
            assert list(gl.state_dict()) == list(tl.state_dict())
            _same_state(gl, tl, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(_np(gl.weight), _np(tl.weight), rtol=1e-4, atol=1e-5)


# ---- the old hooks: nn.utils.weight_norm / spectral_norm ------------------------------
def test_old_weight_norm_warns_and_matches_pytorch():
    with pytest.warns(FutureWarning) as theirs:
        tl = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3))
    with pytest.warns(FutureWarning) as ours:
        gl = nn.utils.weight_norm(nn.Linear(4, 3))
    assert str(ours[0].message) == str(theirs[0].message)
    assert list(gl.state_dict()) == list(tl.state_dict()) == ["bias", "weight_g", "weight_v"]
    _load_from_torch(gl, tl)
    np.testing.assert_allclose(_np(gl(gc.tensor(X))), _np(tl(torch.tensor(X))), rtol=1e-5)
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        nn.utils.weight_norm(gl)
    torch.nn.utils.remove_weight_norm(tl)
    nn.utils.remove_weight_norm(gl)
    _same_state(gl, tl, rtol=1e-6)
    _raises_like(lambda: torch.nn.utils.remove_weight_norm(tl),
                 lambda: nn.utils.remove_weight_norm(gl))


def test_old_spectral_norm_matches_pytorch():
    tl = torch.nn.utils.spectral_norm(torch.nn.Linear(4, 3), n_power_iterations=2)
    gl = nn.utils.spectral_norm(nn.Linear(4, 3), n_power_iterations=2)
    assert list(gl.state_dict()) == list(tl.state_dict()) == [
        "bias", "weight_orig", "weight_u", "weight_v"]
    _load_from_torch(gl, tl)
    for _ in range(3):
        np.testing.assert_allclose(_np(gl(gc.tensor(X))), _np(tl(torch.tensor(X))),
                                   rtol=1e-5, atol=1e-6)
    _same_state(gl, tl, rtol=1e-5, atol=1e-6)
    torch.nn.utils.remove_spectral_norm(tl)
    nn.utils.remove_spectral_norm(gl)
    _same_state(gl, tl, rtol=1e-5, atol=1e-6)
    _raises_like(lambda: torch.nn.utils.remove_spectral_norm(tl),
                 lambda: nn.utils.remove_spectral_norm(gl))


# ---- prune ------------------------------------------------------------------------------
def _pair(shape=(6, 5), seed=1):
    w = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    tl, gl = torch.nn.Linear(shape[1], shape[0]), nn.Linear(shape[1], shape[0])
    with torch.no_grad():
        tl.weight.copy_(torch.tensor(w))
    _load_from_torch(gl, tl)
    return tl, gl


def test_deterministic_pruning_matches_pytorch_exactly():
    tl, gl = _pair()
    steps = [("l1_unstructured", dict(amount=0.3)),
             ("ln_structured", dict(amount=2, n=1, dim=0)),
             ("l1_unstructured", dict(amount=3)),
             ("ln_structured", dict(amount=0.4, n=float("inf"), dim=1))]
    for name, kw in steps:
        getattr(tprune, name)(tl, "weight", **kw)
        getattr(gprune, name)(gl, "weight", **kw)
        np.testing.assert_array_equal(_np(gl.weight_mask), _np(tl.weight_mask))
        np.testing.assert_array_equal(_np(gl.weight), _np(tl.weight))
    assert list(gl.state_dict()) == list(tl.state_dict()) == ["bias", "weight_orig",
                                                               "weight_mask"]
    hook = next(iter(gl._forward_pre_hooks.values()))
    assert isinstance(hook, gprune.PruningContainer) and len(hook) == 4
    assert [type(m).__name__ for m in hook] == ["L1Unstructured", "LnStructured",
                                                "L1Unstructured", "LnStructured"]
    np.testing.assert_allclose(_np(gl(gc.tensor(X5))), _np(tl(torch.tensor(X5))),
                               rtol=1e-5, atol=1e-6)
    # gradients reach weight_orig through the mask
    gl(gc.tensor(X5)).sum().backward()
    tl(torch.tensor(X5)).sum().backward()
    np.testing.assert_allclose(_np(gl.weight_orig.grad), _np(tl.weight_orig.grad), rtol=1e-6)
    assert gprune.is_pruned(gl) and gprune.is_pruned(nn.Sequential(gl))
    tprune.remove(tl, "weight")
    gprune.remove(gl, "weight")
    assert not gprune.is_pruned(gl)
    assert isinstance(gl.weight, nn.Parameter)
    _same_state(gl, tl)


def test_importance_scores_global_and_custom_masks_match_pytorch():
    tl, gl = _pair()
    scores = np.random.default_rng(5).standard_normal((6, 5)).astype(np.float32)
    tprune.l1_unstructured(tl, "weight", 0.5, importance_scores=torch.tensor(scores))
    gprune.l1_unstructured(gl, "weight", 0.5, importance_scores=gc.tensor(scores))
    np.testing.assert_array_equal(_np(gl.weight_mask), _np(tl.weight_mask))
    (t1, g1), (t2, g2) = _pair(seed=2), _pair((4, 5), seed=3)
    tprune.l1_unstructured(t2, "weight", 4)  # an existing mask counts
    gprune.l1_unstructured(g2, "weight", 4)
    tprune.global_unstructured([(t1, "weight"), (t2, "weight"), (t1, "bias")],
                               tprune.L1Unstructured, amount=0.4)
    gprune.global_unstructured([(g1, "weight"), (g2, "weight"), (g1, "bias")],
                               gprune.L1Unstructured, amount=0.4)
    for t, g in ((t1, g1), (t2, g2)):
        _same_state(g, t)
    mask = np.array([1, 0, 1, 1, 0, 1], np.float32)
    tprune.custom_from_mask(t1, "bias", torch.tensor(mask))
    gprune.custom_from_mask(g1, "bias", gc.tensor(mask))
    _same_state(g1, t1)
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE'):
        gprune.global_unstructured([(g1, "weight")], gprune.LnStructured, amount=1, n=2,
                                   dim=0)


def test_random_pruning_prunes_the_right_counts():
    gl = nn.Linear(5, 6)
    gprune.random_unstructured(gl, "weight", 0.4)
    assert int((gl.weight_mask == 0).sum()) == 12
    gprune.random_structured(gl, "weight", 2, dim=0)
    rows = _np(gl.weight_mask).sum(1)
    assert (rows == 0).sum() >= 2 and int((gl.weight_mask == 0).sum()) >= 12
    gprune.identity(gl, "bias")
    assert bool((gl.bias_mask == 1).all())
    m = gprune.RandomUnstructured(amount=3)
    assert int((m.prune(gc.ones(10)) == 0).sum()) == 3


@pytest.mark.parametrize("call", [
    lambda P, m: P.l1_unstructured(m, "weight", -1),
    lambda P, m: P.l1_unstructured(m, "weight", 1.5),
    lambda P, m: P.l1_unstructured(m, "weight", "a"),
    lambda P, m: P.l1_unstructured(m, "weight", 31),
    lambda P, m: P.ln_structured(m, "bias", 1, n=2, dim=0),
    lambda P, m: P.random_structured(m, "weight", 1, dim=2),
    lambda P, m: P.remove(m, "weight"),
    lambda P, m: P.global_unstructured(3, P.L1Unstructured, amount=1),
])
def test_pruning_errors_are_pytorchs(call):
    tl, gl = _pair()
    _raises_like(lambda: call(tprune, tl), lambda: call(gprune, gl))
    assert list(gl.state_dict()) == list(tl.state_dict())  # a failed prune undoes itself


# ---- optim.Rprop / ASGD -------------------------------------------------------------------
@pytest.mark.parametrize("name, kw", [
    ("Rprop", dict(lr=0.05, etas=(0.4, 1.3), step_sizes=(1e-4, 0.2))),
    ("ASGD", dict(lr=0.05, lambd=1e-3, alpha=0.6, t0=2, weight_decay=0.01)),
])
def test_rprop_and_asgd_resume_from_pytorchs_state_dict(name, kw):
    rng = np.random.default_rng(4)
    w0 = rng.standard_normal((3, 4)).astype(np.float32)
    tw = torch.nn.Parameter(torch.tensor(w0))
    topt = getattr(torch.optim, name)([tw], **kw)

    def loss(lib, w, i):
        x = lib.tensor(np.cos(np.arange(12, dtype=np.float32) * (i + 1)).reshape(3, 4))
        return (w * x).sum() + (w * w).sum() * 0.5

    def run(lib, w, opt, steps):
        for i in steps:
            opt.zero_grad()
            loss(lib, w, i).backward()
            opt.step()

    run(torch, tw, topt, range(3))
    gw = nn.Parameter(gc.tensor(tw.detach().numpy()))
    gopt = getattr(gc.optim, name)([gw], **kw)
    sd = topt.state_dict()
    gopt.load_state_dict({"state": {k: {n: (gc.tensor(v.numpy()) if v.ndim else v.item())
                                        for n, v in s.items()} for k, s in sd["state"].items()},
                          "param_groups": sd["param_groups"]})
    run(torch, tw, topt, range(3, 8))
    run(gc, gw, gopt, range(3, 8))
    np.testing.assert_allclose(_np(gw), _np(tw), rtol=2e-5, atol=2e-6)
    theirs, ours = topt.state_dict()["state"][0], gopt.state_dict()["state"][0]
    assert list(ours) == list(theirs)
    for key in theirs:
        np.testing.assert_allclose(np.asarray(_np(ours[key]) if hasattr(ours[key], "numpy")
                                              else ours[key]),
                                   _np(theirs[key]), rtol=2e-5, atol=2e-6, err_msg=key)


def test_rprop_treats_zero_and_nan_gradients_as_pytorch():
    """A zero product of gradients keeps the step size; a NaN one too (PyTorch's sign of
    NaN is 0), and a NaN gradient moves nothing but is kept as ``prev``."""
    grads = ([1.0, -1.0, 0.0, float("nan")], [1.0, 1.0, float("nan"), 2.0],
             [-1.0, 0.0, 1.0, 1.0])
    got = []
    for lib in (torch, gc):
        p = lib.nn.Parameter(lib.tensor([1.0, 2.0, 3.0, 0.5]))
        opt = lib.optim.Rprop([p], lr=0.1)
        for g in grads:
            p.grad = lib.tensor(g)
            opt.step()
        got.append([_np(p), _np(opt.state[p]["step_size"]), _np(opt.state[p]["prev"])])
    for ours, theirs in zip(got[1], got[0]):
        np.testing.assert_array_equal(ours, theirs)


# ---- optim.swa_utils ----------------------------------------------------------------------
def _net(lib):
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2))


@pytest.mark.parametrize("variant", ["swa", "ema_multi", "ema_avg_buffers", "swa_multi"])
def test_averaged_model_matches_pytorch(variant):
    def options(lib):
        u = lib.optim.swa_utils
        return {"swa": {}, "ema_multi": dict(multi_avg_fn=u.get_ema_multi_avg_fn(0.9)),
                "ema_avg_buffers": dict(avg_fn=u.get_ema_avg_fn(0.8), use_buffers=True),
                "swa_multi": dict(multi_avg_fn=u.get_swa_multi_avg_fn())}[variant]
    tm, gm = _net(torch), _net(gc)
    _load_from_torch(gm, tm)
    ts = torch.optim.swa_utils.AveragedModel(tm, **options(torch))
    gs = gc.optim.swa_utils.AveragedModel(gm, **options(gc))
    topt, gopt = torch.optim.SGD(tm.parameters(), lr=0.01), gc.optim.SGD(gm.parameters(), lr=0.01)
    x = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)
    for i in range(4):
        topt.zero_grad()
        gopt.zero_grad()
        tm(torch.tensor(x * (1 + 0.1 * i))).pow(2).sum().backward()
        gm(gc.tensor(x * (1 + 0.1 * i))).pow(2).sum().backward()
        topt.step()
        gopt.step()
        ts.update_parameters(tm)
        gs.update_parameters(gm)
    assert gs.n_averaged.dtype == gc.int64 and gs.n_averaged.item() == 4
    _same_state(gs, ts, rtol=1e-5, atol=1e-6)
    if PINNED_TORCH:  # (BatchNorm prints bias= from PyTorch 2.12 on)
        assert repr(gs) == repr(ts)
    torch.optim.swa_utils.update_bn([(torch.tensor(x), 0), (torch.tensor(2 * x), 1)], ts)
    gc.optim.swa_utils.update_bn([(gc.tensor(x), 0), (gc.tensor(2 * x), 1)], gs)
    _same_state(gs, ts, rtol=1e-5, atol=1e-6)
    assert gs.training and gs.module[1].momentum == 0.1
    np.testing.assert_allclose(_np(gs(gc.tensor(x))), _np(ts(torch.tensor(x))), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("kw", [dict(swa_lr=0.05, anneal_epochs=3),
                                dict(swa_lr=[0.1, 0.2], anneal_epochs=0,
                                     anneal_strategy="linear"),
                                dict(swa_lr=0.3, anneal_epochs=5, anneal_strategy="linear")])
def test_swalr_rates_and_state_match_pytorch(kw):
    def run(lib):
        p, q = lib.nn.Parameter(lib.zeros(1)), lib.nn.Parameter(lib.zeros(1))
        opt = lib.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.5}], lr=1.0)
        sched = lib.optim.swa_utils.SWALR(opt, **kw)
        rates = [sched.get_last_lr()]
        for _ in range(7):
            opt.step()
            sched.step()
            rates.append(sched.get_last_lr())
        return rates, sched.state_dict(), opt.param_groups[0]["swa_lr"]
    ours, theirs = run(gc), run(torch)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
    assert sorted(ours[1]) == sorted(theirs[1]) and ours[2] == theirs[2]
    assert ours[1]["_anneal_strategy"] == theirs[1]["_anneal_strategy"]


def test_swa_errors_are_pytorchs():
    for kw in (dict(anneal_strategy="exp"), dict(anneal_epochs=-1), dict(anneal_epochs=1.0)):
        if "anneal_strategy" in kw and not PINNED_TORCH:
            continue  # (PyTorch 2.11 words it "must by one of", 2.13 "must be one of")
        _raises_like(
            lambda: torch.optim.swa_utils.SWALR(
                torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0), 0.1, **kw),
            lambda: gc.optim.swa_utils.SWALR(
                gc.optim.SGD([nn.Parameter(gc.zeros(1))], lr=1.0), 0.1, **kw))
    _raises_like(lambda: torch.optim.swa_utils.get_ema_avg_fn(1.5),
                 lambda: gc.optim.swa_utils.get_ema_avg_fn(1.5))
    _raises_like(lambda: torch.optim.swa_utils.get_ema_multi_avg_fn(-0.1),
                 lambda: gc.optim.swa_utils.get_ema_multi_avg_fn(-0.1))
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        gc.optim.swa_utils.AveragedModel(nn.Linear(1, 1), avg_fn=lambda *a: a[0],
                                         multi_avg_fn=lambda *a: None)


# ---- import torch.nn.utils.parametrize with gradcore as torch ----------------------------
def test_a_program_aliasing_gradcore_as_torch_imports_the_new_modules():
    code = (
        "import sys, gradcore\n"
        "sys.modules['torch'] = gradcore\n"
        "import torch.nn.utils.parametrize as P\n"
        "import torch.nn.utils.parametrizations as Q\n"
        "import torch.nn.utils.prune as R\n"
        "from torch.optim.swa_utils import AveragedModel, SWALR\n"
        "from torch.optim import Rprop, ASGD\n"
        "import torch\n"
        "m = Q.weight_norm(torch.nn.Linear(2, 2))\n"
        "assert P.is_parametrized(m) and P is gradcore.nn.utils.parametrize\n"
        "assert R is gradcore.nn.utils.prune and AveragedModel.__module__ == "
        "'gradcore.optim.swa_utils'\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == "ok", out.stderr
