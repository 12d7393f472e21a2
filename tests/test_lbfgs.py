"""optim.LBFGS against PyTorch's: the same iterates, line search or not."""

import numpy as np
import pytest

import gradcore as gc

from conftest import host, needs_torch


def _problem(m, seed=0, dtype="float64", **where):
    """A small tanh network fitted to a curve: (parameters, closure maker)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((16, 3))
    y = np.sin(x.sum(1, keepdims=True))
    w1, b1 = rng.standard_normal((3, 5)) * 0.5, rng.standard_normal(5) * 0.1
    w2 = rng.standard_normal((5, 1)) * 0.5
    dt = getattr(m, dtype)
    params = [m.tensor(a, dtype=dt, requires_grad=True, **where) for a in (w1, b1, w2)]
    xs, ys = m.tensor(x, dtype=dt, **where), m.tensor(y, dtype=dt, **where)

    def closure_for(opt):
        def closure():
            opt.zero_grad()
            loss = ((m.tanh(xs @ params[0] + params[1]) @ params[2] - ys) ** 2).mean()
            loss.backward()
            return loss
        return closure
    return params, closure_for


@needs_torch
@pytest.mark.parametrize("kw", [dict(), dict(line_search_fn="strong_wolfe"),
                                dict(history_size=3, max_iter=7, lr=0.5),
                                dict(line_search_fn="strong_wolfe", history_size=2,
                                     tolerance_change=1e-5)])
def test_iterates_are_pytorch_s(kw):
    import torch

    results = []
    for m in gc, torch:
        params, closure_for = _problem(m)
        opt = m.optim.LBFGS(params, **kw)
        losses = [opt.step(closure_for(opt)).item() for _ in range(4)]
        state = opt.state[params[0]]
        results.append((losses, [p.detach().cpu().numpy() if m is torch else host(p.detach())
                                 for p in params], state["func_evals"], state["n_iter"]))
    (gl, gp, gevals, giter), (tl, tp, tevals, titer) = results
    np.testing.assert_allclose(gl, tl, rtol=1e-6)  # (reductions sum in other orders)
    for a, b in zip(gp, tp):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    assert (gevals, giter) == (tevals, titer)


def test_converges_and_checks_its_arguments(device):
    params, closure_for = _problem(gc, device=device)
    opt = gc.optim.LBFGS(params, line_search_fn="strong_wolfe", max_iter=50)
    closure = closure_for(opt)
    first = float(opt.step(closure))
    assert float(opt.step(closure)) < first / 10
    with pytest.raises(TypeError, match="closure"):
        opt.step()  # (required, as in PyTorch)
    with pytest.raises(RuntimeError, match="needs a closure"):
        opt.step(None)
    with pytest.raises(RuntimeError, match="only 'strong_wolfe'"):
        gc.optim.LBFGS(params, line_search_fn="armijo").step(closure)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        gc.optim.LBFGS(params, lr=-1)
    with pytest.raises(ValueError, match="parameter groups"):
        gc.optim.LBFGS([{"params": params[:1]}, {"params": params[1:]}])
