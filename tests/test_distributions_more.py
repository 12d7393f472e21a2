"""The distributions added after the first set (ContinuousBernoulli, FisherSnedecor,
GeneralizedPareto, HalfCauchy, Kumaraswamy, LogisticNormal, VonMises) and their KL pairs,
against ``torch.distributions``: log-probabilities, moments, entropies, cdf/icdf and
their gradients at the same values; reparameterized samples and their gradients; samples'
support and moments; argument validation; support; expand."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gradcore as gc
import gradcore.distributions as gd

from conftest import host, needs_torch

R = np.random.default_rng(7)
LOC = R.standard_normal(4)
SCALE = R.uniform(0.5, 2.0, 4)
CONC = R.uniform(0.5, 3.0, 4)
PROBS = np.array([0.1, 0.4995, 0.7, 0.95])  # (one inside the Taylor region around 0.5)
REAL = R.standard_normal((2, 4))
UNIT = R.uniform(0.05, 0.95, (2, 4))
POSITIVE = R.uniform(0.1, 3.0, (2, 4))
SIMPLEX = R.dirichlet(np.ones(3), (5, 2))
_M = R.standard_normal((2, 3, 3))
WISHART_COV = _M @ _M.transpose(0, 2, 1) + np.eye(3)
_V = R.standard_normal((4, 2, 3, 5))
WISHART_VALUES = _V @ _V.transpose(0, 1, 3, 2) + 0.1 * np.eye(3)

# name, constructor(D, *params), parameter values, values to score
CASES = [
    ("half_cauchy", lambda D, s: D.HalfCauchy(s), [SCALE], POSITIVE),
    ("kumaraswamy", lambda D, a, b: D.Kumaraswamy(a, b), [CONC, SCALE], UNIT),
    ("fisher_snedecor", lambda D, a, b: D.FisherSnedecor(a + 4, b + 4), [CONC, SCALE],
     POSITIVE),
    ("fisher_snedecor_small", lambda D, a, b: D.FisherSnedecor(a, b), [CONC, SCALE],
     POSITIVE),
    # (float32: PyTorch's GeneralizedPareto compares float64 parameters with a float32
    # zero in log_prob, and fails)
    ("generalized_pareto", lambda D, a, s, c: D.GeneralizedPareto(a, s, c),
     [LOC, SCALE, np.array([0.3, -0.2, 0.0, 0.8])], LOC + POSITIVE * 0.2, "float32"),
    ("continuous_bernoulli", lambda D, p: D.ContinuousBernoulli(p), [PROBS], UNIT),
    ("continuous_bernoulli_logits", lambda D, x: D.ContinuousBernoulli(logits=x),
     [np.array([-2.0, 0.001, 0.5, 3.0])], UNIT),
    ("logistic_normal", lambda D, a, s: D.LogisticNormal(a, s), [LOC[:2], SCALE[:2]],
     SIMPLEX),
    ("von_mises", lambda D, a, k: D.VonMises(a, k), [LOC, CONC * 2], REAL * 2),
    ("lowrank_mvn", lambda D, a, w, d: D.LowRankMultivariateNormal(a, w, d),
     [LOC[:3], R.standard_normal((2, 3, 2)), SCALE[:3]], R.standard_normal((4, 2, 3))),
    ("wishart_covariance", lambda D, df, c: D.Wishart(df, covariance_matrix=c),
     [np.array([3.5, 6.0]), WISHART_COV], WISHART_VALUES),
    ("wishart_precision", lambda D, df, c: D.Wishart(df, precision_matrix=c),
     [np.array([3.5, 6.0]), WISHART_COV], WISHART_VALUES),
    ("wishart_scale_tril", lambda D, df, t: D.Wishart(df, scale_tril=t.tril()),
     [np.array([2.5, 6.0]), np.linalg.cholesky(WISHART_COV)], WISHART_VALUES),
    ("lowrank_mvn_batch_loc", lambda D, a, w, d: D.LowRankMultivariateNormal(a, w, d),
     [R.standard_normal((2, 3)), R.standard_normal((3, 1)), SCALE[:3]],
     R.standard_normal((4, 2, 3))),
]


def _build(mod, D, make, params, device=None, dtype="float64"):
    kw = {"device": device} if mod is gc and device else {}
    tensors = [mod.tensor(p, dtype=getattr(mod, dtype), requires_grad=True, **kw)
               for p in params]
    return make(D, *tensors), tensors


def _queries(mod, dist, value):
    """What each distribution is asked: name -> tensor (None where it does not tell)."""
    answers = {"log_prob": dist.log_prob(value)}
    for name in ("mean", "variance", "stddev", "mode"):
        try:
            answers[name] = getattr(dist, name)
        except NotImplementedError:
            answers[name] = None
    for name, arg in (("entropy", None), ("cdf", value), ("icdf", mod.full_like(value, 0.3))):
        try:
            answers[name] = getattr(dist, name)() if arg is None else getattr(dist, name)(arg)
        except NotImplementedError:
            answers[name] = None
    return answers


@needs_torch
@pytest.mark.parametrize("name, make, params, values, dtype", [(*c, "float64")[:5] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(device, name, make, params, values, dtype):
    import torch
    import torch.distributions as td

    dist_g, params_g = _build(gc, gd, make, params, device, dtype)
    dist_t, params_t = _build(torch, td, make, params, dtype=dtype)
    value_g = gc.tensor(values, dtype=getattr(gc, dtype), device=device)
    value_t = torch.tensor(values, dtype=getattr(torch, dtype))
    rtol = 1e-6 if dtype == "float64" else 1e-5
    assert tuple(dist_g.batch_shape) == tuple(dist_t.batch_shape)
    assert tuple(dist_g.event_shape) == tuple(dist_t.event_shape)
    assert dist_g.has_rsample == dist_t.has_rsample
    ours, theirs = _queries(gc, dist_g, value_g), _queries(torch, dist_t, value_t)
    total_g, total_t = 0, 0
    for key in ours:
        assert (ours[key] is None) == (theirs[key] is None), f"{key}: {ours[key]}"
        if ours[key] is None:
            continue
        expected = theirs[key].detach().numpy()
        np.testing.assert_allclose(host(ours[key].detach()), expected, rtol=rtol,
                                   atol=1e-9 if dtype == "float64" else 1e-6, err_msg=key)
        assert ours[key].requires_grad == theirs[key].requires_grad, key
        if ours[key].requires_grad and np.isfinite(expected).all():
            total_g = total_g + ours[key].sum()
            total_t = total_t + theirs[key].sum()
    total_g.backward()
    total_t.backward()
    for mine, ref in zip(params_g, params_t):
        np.testing.assert_allclose(host(mine.grad), ref.grad.numpy(), rtol=rtol,
                                   atol=1e-9 if dtype == "float64" else 1e-5)


def _lowrank_and_full(D, a, w, d):
    """A low-rank normal and a full one given by its Cholesky factor."""
    mod = gc if D is gd else __import__("torch")
    tril = mod.linalg.cholesky(w[0] @ w[0].mT + d.diag() * 2)
    return D.LowRankMultivariateNormal(a, w, d), D.MultivariateNormal(a.flip(-1),
                                                                      scale_tril=tril)


KL_CASES = [
    ("cb_cb", lambda D, p, q: (D.ContinuousBernoulli(p), D.ContinuousBernoulli(q)),
     [PROBS, PROBS[::-1].copy()]),
    ("beta_cb", lambda D, a, p: (D.Beta(a, a + 1), D.ContinuousBernoulli(p)), [CONC, PROBS]),
    ("cb_exponential", lambda D, p, r: (D.ContinuousBernoulli(p), D.Exponential(r)),
     [PROBS, SCALE]),
    ("cb_normal", lambda D, p, a: (D.ContinuousBernoulli(p), D.Normal(a, a.exp())),
     [PROBS, LOC]),
    ("cb_uniform", lambda D, p, a: (D.ContinuousBernoulli(p), D.Uniform(a - 2, a + 2)),
     [PROBS, np.array([0.5, 0.5, 2.5, 0.5])]),
    ("uniform_cb", lambda D, a, p: (D.Uniform(a, a + 0.3), D.ContinuousBernoulli(p)),
     [np.array([0.1, 0.2, 0.8, -0.1]), PROBS]),
    ("cb_pareto_infinite", lambda D, p, s: (D.ContinuousBernoulli(p), D.Pareto(s, s)),
     [PROBS, SCALE]),
    ("normal_cb_infinite", lambda D, a, p: (D.Normal(a, 1.0), D.ContinuousBernoulli(p)),
     [LOC, PROBS]),
    ("gamma_cb_infinite", lambda D, a, p: (D.Gamma(a, 1.0), D.ContinuousBernoulli(p)),
     [CONC, PROBS]),
    ("exponential_cb_infinite", lambda D, a, p: (D.Exponential(a), D.ContinuousBernoulli(p)),
     [CONC, PROBS]),
    ("gumbel_cb_infinite", lambda D, a, p: (D.Gumbel(a, 1.0), D.ContinuousBernoulli(p)),
     [LOC, PROBS]),
    ("laplace_cb_infinite", lambda D, a, p: (D.Laplace(a, 1.0), D.ContinuousBernoulli(p)),
     [LOC, PROBS]),
    ("pareto_cb_infinite", lambda D, a, p: (D.Pareto(a, 1.0), D.ContinuousBernoulli(p)),
     [SCALE, PROBS]),
    ("lowrank_lowrank", lambda D, a, w, d: (D.LowRankMultivariateNormal(a, w, d),
                                            D.LowRankMultivariateNormal(a.flip(-1), w.flip(-2),
                                                                        d + 1)),
     [LOC[:3], R.standard_normal((2, 3, 2)), SCALE[:3]]),
    ("mvn_lowrank", lambda D, a, w, d: (D.MultivariateNormal(a.flip(-1), w @ w.mT + d.diag()),
                                        D.LowRankMultivariateNormal(a, w, d)),
     [LOC[:3], R.standard_normal((2, 3, 2)), SCALE[:3]]),
    ("lowrank_mvn", _lowrank_and_full, [LOC[:3], R.standard_normal((2, 3, 2)), SCALE[:3]]),
    ("half_cauchy_transformed", lambda D, a, b: (D.HalfCauchy(a), D.HalfCauchy(b)),
     [SCALE, CONC]),
]


@needs_torch
@pytest.mark.parametrize("name, make, params", KL_CASES, ids=[c[0] for c in KL_CASES])
def test_kl_divergence_matches_torch(name, make, params):
    import torch
    import torch.distributions as td

    (p_g, q_g), params_g = _build(gc, gd, make, params)
    (p_t, q_t), params_t = _build(torch, td, make, params)
    try:
        theirs = td.kl_divergence(p_t, q_t)
    except NotImplementedError:
        with pytest.raises(NotImplementedError, match="No KL"):
            gd.kl_divergence(p_g, q_g)
        return
    ours = gd.kl_divergence(p_g, q_g)
    np.testing.assert_allclose(host(ours.detach()), theirs.detach().numpy(), rtol=1e-6,
                               atol=1e-9)
    if np.isfinite(theirs.detach().numpy()).all():
        ours.sum().backward()
        theirs.sum().backward()
        for mine, ref in zip(params_g, params_t):
            np.testing.assert_allclose(host(mine.grad), ref.grad.numpy(), rtol=1e-6,
                                       atol=1e-9)


SAMPLED = [
    ("half_cauchy", lambda: gd.HalfCauchy(gc.tensor([0.5, 2.0]))),
    ("kumaraswamy", lambda: gd.Kumaraswamy(gc.tensor([0.5, 2.0]), gc.tensor([1.5, 3.0]))),
    ("fisher_snedecor", lambda: gd.FisherSnedecor(gc.tensor([6.0, 12.0]),
                                                  gc.tensor([15.0, 20.0]))),
    ("generalized_pareto", lambda: gd.GeneralizedPareto(gc.tensor([0.0, 1.0]),
                                                        gc.tensor([1.0, 0.5]),
                                                        gc.tensor([-0.3, 0.1]))),
    ("continuous_bernoulli", lambda: gd.ContinuousBernoulli(gc.tensor([0.2, 0.5, 0.9]))),
    ("logistic_normal", lambda: gd.LogisticNormal(gc.tensor([0.3, -0.5]),
                                                  gc.tensor([0.5, 1.0]))),
    ("von_mises", lambda: gd.VonMises(gc.tensor([0.5, -2.0, 3.0]),
                                      gc.tensor([4.0, 0.5, 20.0]))),
    ("lowrank_mvn", lambda: gd.LowRankMultivariateNormal(
        gc.tensor([1.0, -1.0, 0.5]), gc.tensor([[1.0, 0.5], [0.0, -1.0], [0.3, 0.2]]),
        gc.tensor([0.5, 1.0, 2.0]))),
]


@pytest.mark.parametrize("name, make", SAMPLED, ids=[c[0] for c in SAMPLED])
def test_samples_have_the_distributions_shape_support_and_moments(name, make):
    dist = make()
    n = 20000
    gc.manual_seed(3)
    x = dist.sample((n,))
    gc.manual_seed(3)
    assert bool((dist.sample((n,)) == x).all()), "a seed repeats the draws"
    assert tuple(x.shape) == (n, *dist.batch_shape, *dist.event_shape)
    assert not x.requires_grad
    assert bool(dist.support.check(x).all())
    if name == "half_cauchy":  # (no moments: the median is the scale)
        np.testing.assert_allclose(host(x.double().median(0).values), [0.5, 2.0], rtol=0.05)
        return
    if name == "von_mises":  # (circular moments)
        c, s = host(x.double().cos().mean(0)), host(x.double().sin().mean(0))
        np.testing.assert_allclose(np.arctan2(s, c), host(dist.mean), atol=0.05)
        np.testing.assert_allclose(1 - np.hypot(c, s), host(dist.variance), atol=0.02)
        return
    if name == "logistic_normal":
        x = x[..., 0]
        np.testing.assert_allclose(host(x.double().mean(0)), host(dist.sample((n,))[..., 0]
                                                                  .double().mean(0)), atol=0.01)
        return
    mean, std = host(dist.mean), host(dist.stddev)
    np.testing.assert_allclose(host(x.double().mean(0)), mean,
                               atol=5 * std.max() / math.sqrt(n) + 1e-6)
    np.testing.assert_allclose(host(x.double().std(0)), std, rtol=0.06, atol=0.01)


def test_rsample_is_differentiable():
    """Reparameterized draws carry gradients to every parameter (and VonMises has none,
    as in PyTorch)."""
    a = gc.tensor([0.7, 2.0], dtype=gc.float64, requires_grad=True)
    b = gc.tensor([1.5, 3.0], dtype=gc.float64, requires_grad=True)
    c = gc.tensor([0.2, -0.1], dtype=gc.float64, requires_grad=True)
    families = [gd.HalfCauchy(a), gd.Kumaraswamy(a, b), gd.FisherSnedecor(a, b),
                gd.GeneralizedPareto(c, a, c), gd.ContinuousBernoulli(a / 3),
                gd.LogisticNormal(c, a)]
    for dist in families:
        a.grad = b.grad = c.grad = None
        x = dist.rsample((5,))
        assert x.requires_grad, type(dist).__name__
        x.sum().backward()
        assert a.grad is not None and bool(gc.isfinite(a.grad).all()), type(dist).__name__
    # the Kumaraswamy draw (1 - (1 - u)^(1/b))^(1/a), differentiated by hand
    gc.manual_seed(1)
    x = gd.Kumaraswamy(a, b).rsample()
    a.grad = None
    x.sum().backward()
    expected = -x.detach() * x.detach().log() / a.detach()
    np.testing.assert_allclose(host(a.grad), host(expected), rtol=1e-10)
    assert not gd.VonMises(c, a).has_rsample
    with pytest.raises(NotImplementedError):
        gd.VonMises(c, a).rsample()


@needs_torch
def test_argument_validation_and_support_match_torch():
    import torch.distributions as td

    bad = [
        ("HalfCauchy", (-1.0,), {}),
        ("Kumaraswamy", (1.0, 0.0), {}),
        ("FisherSnedecor", (0.0, 1.0), {}),
        ("GeneralizedPareto", (0.0, -1.0, 0.5), {}),
        ("VonMises", (0.0, -1.0), {}),
        ("LogisticNormal", (0.0, -1.0), {}),
        ("ContinuousBernoulli", (), {"probs": 1.5, "validate_args": True}),
    ]
    import torch
    for name, args, kwargs in bad:
        with pytest.raises(ValueError) as theirs:
            getattr(td, name)(*[torch.tensor(v) for v in args], **kwargs)
        with pytest.raises(ValueError) as ours:
            getattr(gd, name)(*[gc.tensor(v) for v in args], **kwargs)
        assert str(ours.value).split("(")[0] == str(theirs.value).split("(")[0], name
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        gd.ContinuousBernoulli()
    for args, message in (((gc.tensor(0.0), gc.ones(1, 1), gc.ones(1)), "loc must be at "
                           "least one-dimensional"),
                          ((gc.zeros(2), gc.ones(2), gc.ones(2)), "cov_factor must be at "
                           "least two-dimensional"),
                          ((gc.zeros(2), gc.ones(3, 1), gc.ones(2)), "cov_factor must be a "
                           "batch of matrices with shape 2 x m"),
                          ((gc.zeros(2), gc.ones(2, 1), gc.ones(3)), "cov_diag must be a "
                           "batch of vectors"),
                          ((gc.zeros(2), gc.ones(2, 1) * 0.1, -gc.ones(2)),
                           "Expected parameter cov_diag"),
                          ((gc.zeros(3, 2), gc.ones(2, 2, 1), gc.ones(2)),
                           "Incompatible batch shapes")):
        with pytest.raises(ValueError, match=message):
            gd.LowRankMultivariateNormal(*args)
        with pytest.raises(ValueError, match=message):
            td.LowRankMultivariateNormal(*[torch.tensor(host(a)) for a in args])
    # values outside the support are refused by log_prob
    for dist, value in ((gd.HalfCauchy(1.0), -1.0), (gd.Kumaraswamy(1.0, 2.0), 1.5),
                        (gd.FisherSnedecor(2.0, 3.0), -0.5),
                        (gd.GeneralizedPareto(0.0, 1.0, -0.5), 2.5),
                        (gd.ContinuousBernoulli(0.3), 1.2)):
        with pytest.raises(ValueError, match="to be within the support"):
            dist.log_prob(gc.tensor(value))
    gp = gd.GeneralizedPareto(gc.tensor([0.0, 1.0]), 1.0, gc.tensor([-0.5, 0.5]))
    assert host(gp.support.check(gc.tensor([1.9, 100.0]))).tolist() == [True, True]
    assert host(gp.support.check(gc.tensor([2.1, 0.5]))).tolist() == [False, False]
    assert gd.LogisticNormal(0.0, 1.0).support is gd.constraints.simplex
    assert gd.HalfCauchy(1.0).support is gd.constraints.nonnegative


@needs_torch
@pytest.mark.parametrize("name, make, params, values, dtype", [(*c, "float64")[:5] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_expand_matches_torch(name, make, params, values, dtype):
    import torch
    import torch.distributions as td

    dist_g, _ = _build(gc, gd, make, params, dtype=dtype)
    dist_t, _ = _build(torch, td, make, params, dtype=dtype)
    values = values.astype(dtype)
    shape = (3, *dist_t.batch_shape)
    eg, et = dist_g.expand(shape), dist_t.expand(shape)
    assert type(eg) is type(dist_g)
    assert tuple(eg.batch_shape) == tuple(et.batch_shape) == shape
    assert tuple(eg.event_shape) == tuple(et.event_shape)
    v = np.broadcast_to(values.reshape(-1, *dist_t.event_shape)[0],
                        (*shape, *dist_t.event_shape)).copy()
    np.testing.assert_allclose(host(eg.log_prob(gc.tensor(v)).detach()),
                               et.log_prob(torch.tensor(v)).detach().numpy(), rtol=1e-5)
    assert tuple(eg.sample((2,)).shape) == tuple(et.sample((2,)).shape)


# ---------------------------------------------------------------- the new transforms

def _new_transforms(D, mod):
    T = D.transforms
    return {
        "corr_cholesky": T.CorrCholeskyTransform(),
        "reshape": T.ReshapeTransform((6,), (2, 3)),
        "cat": T.CatTransform([T.ExpTransform(), T.identity_transform, T.SigmoidTransform()],
                              dim=1, lengths=[2, 3, 1]),
        "cat_event": T.CatTransform([T.IndependentTransform(T.ExpTransform(), 1),
                                     T.SigmoidTransform()], dim=-1, lengths=[3, 3]),
        "stack": T.StackTransform([T.ExpTransform(), T.TanhTransform()] * 3, dim=1),
        "cdf": T.CumulativeDistributionTransform(D.Normal(mod.tensor(0.5, dtype=mod.float64),
                                                          2.0)),
    }


@needs_torch
@pytest.mark.parametrize("name", ["corr_cholesky", "reshape", "cat", "cat_event", "stack",
                                  "cdf"])
def test_transforms_match_torch(name):
    """Values, log-Jacobians, inverses, shapes and gradients as PyTorch's."""
    import torch
    import torch.distributions as td

    x = R.standard_normal((4, 6))
    tt, tg = _new_transforms(td, torch)[name], _new_transforms(gd, gc)[name]
    xt = torch.tensor(x, requires_grad=True)
    xg = gc.tensor(x, dtype=gc.float64, requires_grad=True)
    yt, yg = tt(xt), tg(xg)
    np.testing.assert_allclose(host(yg.detach()), yt.detach().numpy(), rtol=1e-12)
    lt, lg = tt.log_abs_det_jacobian(xt, yt), tg.log_abs_det_jacobian(xg, yg)
    np.testing.assert_allclose(host(lg.detach()), lt.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(host(tg.inv(yg.detach())), tt.inv(yt.detach()).numpy(),
                               rtol=1e-8, atol=1e-12)
    (yt.sum() + lt.sum()).backward()
    (yg.sum() + lg.sum()).backward()
    np.testing.assert_allclose(host(xg.grad), xt.grad.numpy(), rtol=1e-10)
    assert tuple(tg.forward_shape((4, 6))) == tuple(tt.forward_shape((4, 6)))
    assert tuple(tg.inverse_shape(tuple(yt.shape))) == tuple(tt.inverse_shape(yt.shape))
    assert tg.bijective == tt.bijective
    assert tg.domain.event_dim == tt.domain.event_dim
    assert tg.codomain.event_dim == tt.codomain.event_dim
    if name != "cat_event":  # (PyTorch's cat constraint cannot join mixed event dims)
        assert bool(tg.codomain.check(yg.detach()).all())
    cached = tg.with_cache(1)
    y = cached(xg)
    assert cached.inv(y) is xg


def test_transform_errors_and_registry():
    T = gd.transforms
    with pytest.raises(ValueError, match="different numbers of elements"):
        T.ReshapeTransform((2, 3), (5,))
    with pytest.raises(ValueError, match=r"Shape mismatch: expected \(5,\) but got"):
        T.ReshapeTransform((6,), (2, 3)).forward_shape((4, 5))
    with pytest.raises(ValueError, match="not a flattened lower-diagonal number"):
        T.CorrCholeskyTransform().forward_shape((4,))
    with pytest.raises(ValueError, match="Input is not square"):
        T.CorrCholeskyTransform().inverse_shape((3, 4))
    with pytest.raises(AssertionError, match="must equal length 3"):
        T.CatTransform([T.ExpTransform()], dim=0, lengths=[3])(gc.ones(4))
    with pytest.raises(AssertionError, match="must equal len\\(transforms\\) 2"):
        T.StackTransform([T.ExpTransform()] * 2)(gc.ones(3, 2))
    with pytest.raises(AssertionError, match="must be Transform instances"):
        T.StackTransform([1])
    # biject_to and transform_to know the correlation factors, cat and stack
    C = gd.constraints
    assert isinstance(gd.biject_to(C.corr_cholesky), T.CorrCholeskyTransform)
    cat = gd.transform_to(C.cat([C.positive, C.real], 0, [1, 2]))
    assert isinstance(cat, T.CatTransform) and cat.lengths == [1, 2]
    y = cat(gc.tensor([-3.0, -1.0, 2.0]))
    assert host(y).tolist() == pytest.approx([math.exp(-3.0), -1.0, 2.0])
    stack = gd.biject_to(C.stack([C.unit_interval, C.positive], 1))
    y = stack(gc.tensor([[0.0, 0.0]]))
    assert host(y)[0].tolist() == pytest.approx([0.5, 1.0])
    # the correlation factor's constraint: unit rows, positive diagonal, lower-triangular
    L = T.CorrCholeskyTransform()(gc.tensor(R.standard_normal((5, 10))))
    assert host(C.corr_cholesky.check(L)).all()
    assert not bool(C.corr_cholesky.check(L * 1.1).any())



# ---------------------------------------------------------------- LKJCholesky

@needs_torch
def test_lkj_cholesky_matches_torch():
    """log_prob and its gradient at PyTorch's draws; batch and event shapes; expand."""
    import torch
    import torch.distributions as td

    conc = np.array([0.5, 1.0, 3.0])
    cg = gc.tensor(conc, dtype=gc.float64, requires_grad=True)
    ct = torch.tensor(conc, dtype=torch.float64, requires_grad=True)
    g, t = gd.LKJCholesky(4, cg), td.LKJCholesky(4, ct)
    assert (tuple(g.batch_shape), tuple(g.event_shape)) == (tuple(t.batch_shape),
                                                            tuple(t.event_shape))
    torch.manual_seed(0)
    L = t.sample((5,))
    lg, lt = g.log_prob(gc.tensor(L.numpy())), t.log_prob(L)
    np.testing.assert_allclose(host(lg.detach()), lt.detach().numpy(), rtol=1e-12)
    lg.sum().backward()
    lt.sum().backward()
    np.testing.assert_allclose(host(cg.grad), ct.grad.numpy(), rtol=1e-10)
    eg, et = g.expand((2, 3)), t.expand((2, 3))
    assert tuple(eg.batch_shape) == tuple(et.batch_shape)
    np.testing.assert_allclose(host(eg.log_prob(gc.tensor(L[:2].numpy())).detach()),
                               et.log_prob(L[:2]).detach().numpy(), rtol=1e-12)
    assert not g.has_rsample
    with pytest.raises(ValueError, match="Expected dim to be an integer greater than or "
                                         "equal to 2. Found dim=1."):
        gd.LKJCholesky(1)
    with pytest.raises(ValueError, match="Expected parameter concentration"):
        gd.LKJCholesky(3, gc.tensor(-1.0))
    with pytest.raises(ValueError, match="to be within the support"):
        gd.LKJCholesky(2).log_prob(gc.tensor([[1.0, 0.0], [0.5, 1.0]]))


@needs_torch
def test_lkj_cholesky_samples(device):
    """Draws are correlation factors distributed as PyTorch's (its onion-method variant):
    every correlation's variance as in PyTorch's draws, the first one's the LKJ marginal
    ``1 / (2 eta + d - 1)``."""
    import torch
    import torch.distributions as td

    conc = np.array([0.5, 1.0, 3.0])
    d = gd.LKJCholesky(4, gc.tensor(conc, device=device))
    gc.manual_seed(0)
    L = d.sample((20000,))
    assert tuple(L.shape) == (20000, 3, 4, 4) and L.device.type == gc.device(device).type
    assert bool(d.support.check(L).all())
    corr = (L @ L.mT).double()
    np.testing.assert_allclose(host(corr.diagonal(dim1=-2, dim2=-1)), 1.0, rtol=1e-6)
    torch.manual_seed(0)
    theirs = td.LKJCholesky(4, torch.tensor(conc)).sample((20000,)).double()
    theirs = theirs @ theirs.mT
    for i, j in ((1, 0), (2, 0), (2, 1), (3, 0), (3, 2)):
        np.testing.assert_allclose(host(corr[..., i, j].var(0)),
                                   theirs[..., i, j].var(0).numpy(), rtol=0.08)
        np.testing.assert_allclose(host(corr[..., i, j].mean(0)), 0.0, atol=0.02)
    np.testing.assert_allclose(host(corr[..., 1, 0].var(0)), 1 / (2 * conc + 3), rtol=0.05)



# ---------------------------------------------------------------- Wishart

@needs_torch
def test_wishart_entropy_matches_the_exponential_family_form():
    """The closed-form entropy equals the one from the natural parameters (Bregman), as
    PyTorch's, and both are PyTorch's."""
    import torch
    import torch.distributions as td

    g = gd.Wishart(gc.tensor([3.5, 6.0], dtype=gc.float64),
                   covariance_matrix=gc.tensor(WISHART_COV, dtype=gc.float64))
    t = td.Wishart(torch.tensor([3.5, 6.0], dtype=torch.float64),
                   covariance_matrix=torch.tensor(WISHART_COV))
    np.testing.assert_allclose(host(gd.ExponentialFamily.entropy(g).detach()),
                               host(g.entropy()), rtol=1e-10)
    np.testing.assert_allclose(host(gd.ExponentialFamily.entropy(g).detach()),
                               td.ExponentialFamily.entropy(t).detach().numpy(), rtol=1e-10)


def test_wishart_samples_and_rsample():
    df = gc.tensor([4.0, 9.0], dtype=gc.float64, requires_grad=True)
    cov = gc.tensor(WISHART_COV, dtype=gc.float64, requires_grad=True)
    d = gd.Wishart(df, covariance_matrix=cov)
    gc.manual_seed(2)
    x = d.rsample((20000,))
    assert tuple(x.shape) == (20000, 2, 3, 3) and bool(d.support.check(x.detach()).all())
    mean, var = host(d.mean.detach()), host(d.variance.detach())
    np.testing.assert_allclose(host(x.detach().mean(0)), mean,
                               atol=6 * np.sqrt(var.max() / 20000))
    np.testing.assert_allclose(host(x.detach().var(0)), var, rtol=0.1)
    # the reparameterized draw: d E[trace(X)] / d df = trace(cov), and in cov the df
    x.diagonal(dim1=-2, dim2=-1).sum().backward()
    np.testing.assert_allclose(host(df.grad) / 20000, np.trace(WISHART_COV, axis1=1, axis2=2),
                               rtol=0.05)
    np.testing.assert_allclose(host(cov.grad) / 20000,
                               np.eye(3) * host(df.detach())[:, None, None], rtol=0.05,
                               atol=0.1)


@needs_torch
def test_wishart_arguments_match_torch():
    import torch
    import torch.distributions as td

    for mod, D in ((gc, gd), (torch, td)):
        with pytest.raises(AssertionError, match="Exactly one of covariance_matrix"):
            D.Wishart(mod.tensor(3.0))
        with pytest.raises(ValueError, match="scale_tril must be at least two-dimensional"):
            D.Wishart(mod.tensor(3.0), covariance_matrix=mod.ones(3))
        with pytest.raises(ValueError, match=r"Value of df=1.5 expected to be greater than "
                                             r"ndim - 1 = 2."):
            D.Wishart(1.5, covariance_matrix=mod.eye(3))
        with pytest.warns(UserWarning, match="Low df values detected"):
            D.Wishart(2.5, covariance_matrix=mod.eye(3))
        with pytest.raises(ValueError, match="Expected parameter covariance_matrix"):
            D.Wishart(4.0, covariance_matrix=-mod.eye(3))
        with pytest.raises(ValueError, match="to be within the support"):
            D.Wishart(4.0, covariance_matrix=mod.eye(3)).log_prob(-mod.eye(3))
    g = gd.Wishart(4.0, covariance_matrix=gc.eye(3))
    assert g.batch_shape == gc.Size([]) and g.event_shape == gc.Size([3, 3])
