"""optim.Adafactor, optim.Muon and optim.SparseAdam against PyTorch 2.13: the same
initial weights and gradients give the same parameters and state after N steps, state
dicts in PyTorch's layout that resume exactly, PyTorch's argument errors; and
gc.compile replays the steps (CPU) or runs them eagerly with a warning (CUDA graphs)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradcore as gc

from conftest import host, needs_torch

torch = pytest.importorskip("torch", reason="the comparisons need PyTorch 2.13")

STEPS = 12
TOL = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-12, atol=1e-13)}
SHAPES = {"Adafactor": [(5, 3), (4,), (2, 3, 4), ()], "Muon": [(4, 6), (7, 3)]}

CASES = [
    ("Adafactor", dict()),
    ("Adafactor", dict(lr=0.1, weight_decay=0.1)),
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.5, eps=(1e-3, 1e-2), d=1.5, maximize=True)),
    ("Adafactor", dict(lr=2.0, d=3.0)),  # the clipping threshold off: denominators of 1
    ("Muon", dict()),
    ("Muon", dict(lr=0.05, momentum=0.9, weight_decay=0.0)),
    ("Muon", dict(lr=0.02, nesterov=False, adjust_lr_fn="match_rms_adamw")),
    ("Muon", dict(lr=0.02, ns_steps=3, ns_coefficients=(2.0, -1.5, 0.5),
                  adjust_lr_fn="original", momentum=0.3)),
]


def _ids(case):
    name, kw = case
    return name + "(" + ",".join(f"{k}={v}" for k, v in kw.items()) + ")"


def _start(name, dtype, seed=0):
    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal(s).astype(dtype) for s in SHAPES[name]]
    grads = [[rng.standard_normal(s).astype(dtype) for s in SHAPES[name]]
             for _ in range(STEPS)]
    return weights, grads


def _steps(lib, opt, params, grads):
    for gs in grads:
        for p, g in zip(params, gs):
            p.grad = lib.tensor(g)
        opt.step()


def _np(v):
    if isinstance(v, gc.Tensor):
        return host(v)
    if isinstance(v, torch.Tensor):
        return v.detach().numpy()
    return np.asarray(v)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_steps_match_pytorch_parameters_and_state(case, dtype, device):
    name, kw = case
    weights, grads = _start(name, dtype)
    tp = [torch.nn.Parameter(torch.tensor(w)) for w in weights]
    gp = [gc.nn.Parameter(gc.tensor(w)) for w in weights]
    topt, gopt = getattr(torch.optim, name)(tp, **kw), getattr(gc.optim, name)(gp, **kw)
    _steps(torch, topt, tp, grads)
    _steps(gc, gopt, gp, grads)
    for t, g, w in zip(tp, gp, weights):
        assert host(g).dtype == np.dtype(dtype)
        assert not np.allclose(host(g), w, rtol=1e-3, atol=1e-4), "the weights did not move"
        np.testing.assert_allclose(host(g), _np(t), **TOL[dtype])
    ts, gs = topt.state_dict(), gopt.state_dict()
    assert ts["param_groups"] == gs["param_groups"]
    assert list(ts["state"]) == list(gs["state"])
    for k, theirs in ts["state"].items():
        ours = gs["state"][k]
        assert list(ours) == list(theirs)
        for key, v in theirs.items():
            assert tuple(_np(ours[key]).shape) == tuple(v.shape), key
            np.testing.assert_allclose(_np(ours[key]), _np(v), err_msg=key, **TOL[dtype])


@needs_torch
@pytest.mark.parametrize("name,kw", [("Adafactor", dict(lr=0.1, weight_decay=0.05)),
                                     ("Muon", dict(lr=0.05))])
def test_param_groups_with_their_own_options_and_missing_grads(name, kw, device):
    weights, grads = _start(name, "float64", seed=3)
    for gs in grads[::3]:
        gs[1] = None  # the second parameter has no gradient every third step
    results = []
    for lib in (torch, gc):
        ps = [lib.nn.Parameter(lib.tensor(w)) for w in weights]
        opt = getattr(lib.optim, name)([{"params": ps[:1], "lr": 0.01}, {"params": ps[1:]}],
                                       **kw)
        for gs in grads:
            for p, g in zip(ps, gs):
                p.grad = None if g is None else lib.tensor(g)
            opt.step()
        results.append([_np(p) for p in ps])
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_allclose(ours, theirs, **TOL["float64"])


@needs_torch
@pytest.mark.parametrize("name,kw", [("Adafactor", dict(lr=0.05, weight_decay=0.01)),
                                     ("Muon", dict(lr=0.02, nesterov=False))])
def test_state_dict_round_trip_resumes_exactly(name, kw, tmp_path, device):
    weights, grads = _start(name, "float32", seed=5)

    def fresh():
        ps = [gc.nn.Parameter(gc.tensor(w)) for w in weights]
        return ps, getattr(gc.optim, name)(ps, **kw)

    ps, opt = fresh()
    _steps(gc, opt, ps, grads)
    straight = [host(p).copy() for p in ps]

    ps, opt = fresh()
    _steps(gc, opt, ps, grads[:5])
    gc.save({"opt": opt.state_dict(), "params": [p.detach() for p in ps]}, tmp_path / "c.gc")
    saved = gc.load(tmp_path / "c.gc")
    ps2 = [gc.nn.Parameter(p.to(device)) for p in saved["params"]]
    opt2 = getattr(gc.optim, name)(ps2, lr=1.0)  # the loaded groups replace these options
    opt2.load_state_dict(saved["opt"])
    assert opt2.param_groups[0]["lr"] == kw["lr"]
    _steps(gc, opt2, ps2, grads[5:])
    for p, want in zip(ps2, straight):
        np.testing.assert_array_equal(host(p), want)


@needs_torch
@pytest.mark.parametrize("name,kw", [("Adafactor", dict(lr=0.05)), ("Muon", dict(lr=0.02))])
def test_resumes_from_pytorchs_state_dict(name, kw):
    weights, grads = _start(name, "float32", seed=7)
    tp = [torch.nn.Parameter(torch.tensor(w)) for w in weights]
    topt = getattr(torch.optim, name)(tp, **kw)
    _steps(torch, topt, tp, grads[:4])
    gp = [gc.nn.Parameter(gc.tensor(p.detach().numpy())) for p in tp]
    gopt = getattr(gc.optim, name)(gp, **kw)
    sd = topt.state_dict()
    gopt.load_state_dict({"state": {k: {n: gc.tensor(v.numpy()) for n, v in s.items()}
                                    for k, s in sd["state"].items()},
                          "param_groups": sd["param_groups"]})
    _steps(torch, topt, tp, grads[4:])
    _steps(gc, gopt, gp, grads[4:])
    for t, g in zip(tp, gp):
        np.testing.assert_allclose(host(g), _np(t), **TOL["float32"])
    if name == "Adafactor":  # PyTorch's float32 step counts are ints here
        assert gopt.state[gp[0]]["step"] == STEPS


def _same_error(make_torch, make_gc):
    with pytest.raises(Exception) as theirs:
        make_torch()
    with pytest.raises(type(theirs.value)) as ours:
        make_gc()
    # (a size in a message is printed as its library's: torch.Size, gradcore.Size)
    assert str(ours.value).replace("gradcore.", "torch.") == str(theirs.value)


ARGUMENT_ERRORS = [
    ("Adafactor", dict(lr=-1.0)), ("Adafactor", dict(beta2_decay=0.5)),
    ("Adafactor", dict(eps=(-1e-3, 1e-3))), ("Adafactor", dict(eps=(None, -1.0))),
    ("Adafactor", dict(d=0.5)), ("Adafactor", dict(weight_decay=-0.1)),
    ("Muon", dict(lr=-0.1)), ("Muon", dict(momentum=-0.5)), ("Muon", dict(weight_decay=-1.0)),
    ("Muon", dict(adjust_lr_fn="spectral")),
    ("SparseAdam", dict(lr=0.0)), ("SparseAdam", dict(eps=0.0)),
    ("SparseAdam", dict(betas=(1.0, 0.9))), ("SparseAdam", dict(betas=(0.9, -0.1))),
]


@needs_torch
@pytest.mark.parametrize("name,kw", ARGUMENT_ERRORS, ids=[_ids(c) for c in ARGUMENT_ERRORS])
def test_argument_errors_are_pytorchs(name, kw):
    shape = (3, 2)
    _same_error(lambda: getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(shape))],
                                                   **kw),
                lambda: getattr(gc.optim, name)([gc.nn.Parameter(gc.ones(shape))], **kw))


@needs_torch
def test_tensor_learning_rates():
    _same_error(lambda: torch.optim.Adafactor([torch.nn.Parameter(torch.ones(2))],
                                              lr=torch.ones(2)),
                lambda: gc.optim.Adafactor([gc.nn.Parameter(gc.ones(2))], lr=gc.ones(2)))
    for lib in (torch, gc):  # a one-element tensor is a learning rate
        p = lib.nn.Parameter(lib.ones(3, 2))
        opt = lib.optim.Muon([p], lr=lib.tensor(0.1))
        p.grad = lib.ones(3, 2)
        opt.step()
    np.testing.assert_allclose(_np(p), _np(opt.param_groups[0]["params"][0]))


@needs_torch
def test_muon_refuses_what_pytorchs_refuses():
    # a parameter that is not 2-D, at construction
    _same_error(lambda: torch.optim.Muon([torch.nn.Parameter(torch.ones(3))]),
                lambda: gc.optim.Muon([gc.nn.Parameter(gc.ones(3))]))
    # too many Newton-Schulz steps, and coefficients that are not three, at the step
    for kw in (dict(ns_steps=100), dict(ns_coefficients=(1.0, 2.0))):
        def make(lib, kw=kw):
            p = lib.nn.Parameter(lib.ones(3, 2))
            opt = lib.optim.Muon([p], **kw)
            p.grad = lib.ones(3, 2)
            opt.step()
        _same_error(lambda: make(torch), lambda: make(gc))


@needs_torch
def test_sparse_adam_refuses_dense_gradients_as_pytorch(device):
    def make(lib):
        p = lib.nn.Parameter(lib.ones(4))
        opt = lib.optim.SparseAdam([p], lr=0.1)
        opt.step()  # no gradient yet: nothing to do
        assert not opt.state
        p.grad = lib.ones(4)
        opt.step()
    _same_error(lambda: make(torch), lambda: make(gc))
    opt_t = torch.optim.SparseAdam([torch.nn.Parameter(torch.ones(2))])
    opt_g = gc.optim.SparseAdam([gc.nn.Parameter(gc.ones(2))])
    assert opt_g.state_dict()["param_groups"] == opt_t.state_dict()["param_groups"]


@needs_torch
def test_adafactor_takes_eps1_from_the_dtype():
    for dtype in ("float32", "float64"):
        results = []
        for lib in (torch, gc):
            p = lib.nn.Parameter(lib.tensor(np.zeros((2, 3), dtype=dtype)))
            opt = lib.optim.Adafactor([p], lr=0.5)
            p.grad = lib.tensor(np.full((2, 3), 1e-30, dtype=dtype))  # variance under eps1
            opt.step()
            results.append(_np(p))
        np.testing.assert_allclose(results[1], results[0], rtol=1e-6)
        assert np.all(results[1] < 0)


# ---- gc.compile ---------------------------------------------------------------------------
COMPILED = {"adafactor": lambda p: gc.optim.Adafactor(p, lr=0.05, weight_decay=0.01),
            "muon": lambda p: gc.optim.Muon(p, lr=0.02)}


def _compile_run(compiled, make_opt, dev="cpu", n=6):
    rng = np.random.default_rng(0)
    w = gc.nn.Parameter(gc.tensor(rng.standard_normal((5, 4)).astype(np.float32), device=dev))
    batches = [(gc.tensor(rng.standard_normal((8, 5)).astype(np.float32), device=dev),
                gc.tensor(rng.standard_normal((8, 4)).astype(np.float32), device=dev))
               for _ in range(n)]
    opt = make_opt([w])

    def step(x, y):
        opt.zero_grad()
        loss = ((gc.tanh(x @ w) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    fn = gc.compile(step) if compiled else step
    losses = [fn(x, y).item() for x, y in batches]
    state = [host(v) if isinstance(v, gc.Tensor) else np.asarray(v)
             for s in opt.state.values() for v in s.values()]
    return losses, [host(w)] + state, fn


@pytest.mark.parametrize("name", sorted(COMPILED))
def test_compiled_cpu_steps_replay_as_eager(name):
    eager = _compile_run(False, COMPILED[name])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = _compile_run(True, COMPILED[name])
    assert compiled[2].replays >= 3, "the compiled step did not replay"
    assert compiled[0] == eager[0]
    for a, b in zip(compiled[1], eager[1]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", sorted(COMPILED))
def test_compiled_cuda_steps_run_eagerly_with_a_warning(name, standin):
    # Muon forms its scalars in Python, which a launch would not repeat; Adafactor reads
    # norms on the host: refused either way, with a warning, and eager's results
    eager = _compile_run(False, COMPILED[name], dev="cuda")
    why = {"adafactor": "a read of values by the host", "muon": "the step\\(\\) of a Muon"}
    with pytest.warns(UserWarning, match=f"runs eagerly: CUDA graph capture refused {why[name]}"):
        compiled = _compile_run(True, COMPILED[name], dev="cuda")
    assert compiled[0] == eager[0]
    for a, b in zip(compiled[1], eager[1]):
        np.testing.assert_array_equal(a, b)
