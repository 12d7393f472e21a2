"""``gradcore.distributions`` against ``torch.distributions``: log-probabilities,
moments, entropies, cdf/icdf, KL divergences and their gradients on the same parameter
and sample values; samples by their statistics (gradcore draws its own random numbers);
the reparameterized gradients; argument validation and its messages."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

import gradcore as gc
import gradcore.distributions as gd

from conftest import host, needs_torch

R = np.random.default_rng(0)
LOC = R.standard_normal(4)
SCALE = R.uniform(0.5, 2.0, 4)
PROBS = R.uniform(0.1, 0.9, 4)
WEIGHTS = R.uniform(0.1, 1.0, (3, 4))
CONC = R.uniform(0.5, 3.0, 4)
CONC_VEC = R.uniform(0.5, 3.0, (2, 3))
M = R.standard_normal((2, 3, 3))
COV = M @ M.transpose(0, 2, 1) + np.eye(3)
TRIL = np.linalg.cholesky(COV)

REAL = R.standard_normal((2, 4))
UNIT = R.uniform(0.05, 0.95, (2, 4))
POSITIVE = R.uniform(0.1, 3.0, (2, 4))
SIMPLEX = R.dirichlet(np.ones(3), (5, 2))
COUNTS = R.integers(0, 6, (2, 4)).astype(np.float64)


def _normal_squashed(D, loc, scale):
    """A tanh-squashed Gaussian policy (SAC's), through an affine transform first."""
    T = D.transforms
    return D.TransformedDistribution(D.Normal(loc, scale),
                                     [T.AffineTransform(0.5, 2.0), T.TanhTransform()])


def _logistic(D, loc, scale):
    T = D.transforms
    return D.TransformedDistribution(D.Uniform(0.0, 1.0),
                                     [T.SigmoidTransform().inv,
                                      T.AffineTransform(loc, scale)])


# name, constructor(D, *params), parameter values, values to score
CASES = [
    ("normal", lambda D, a, b: D.Normal(a, b), [LOC, SCALE], REAL),
    ("bernoulli_probs", lambda D, p: D.Bernoulli(probs=p), [PROBS], (UNIT > 0.5) * 1.0),
    ("bernoulli_logits", lambda D, x: D.Bernoulli(logits=x), [LOC], (UNIT > 0.5) * 1.0),
    ("categorical_probs", lambda D, w: D.Categorical(probs=w), [WEIGHTS],
     np.array([[0, 3, 1], [2, 2, 0]])),
    ("categorical_logits", lambda D, w: D.Categorical(logits=w), [WEIGHTS],
     np.array([[0, 3, 1], [2, 2, 0]])),
    ("one_hot_categorical", lambda D, w: D.OneHotCategorical(w), [WEIGHTS],
     np.eye(4)[[[0, 3, 1], [2, 2, 0]]]),
    ("uniform", lambda D, a, b: D.Uniform(a - 3.0, b + 2.0), [LOC, SCALE], REAL),
    ("exponential", lambda D, r: D.Exponential(r), [SCALE], POSITIVE),
    ("laplace", lambda D, a, b: D.Laplace(a, b), [LOC, SCALE], REAL),
    ("gamma", lambda D, c, r: D.Gamma(c, r), [CONC, SCALE], POSITIVE),
    ("beta", lambda D, a, b: D.Beta(a, b), [CONC, SCALE], UNIT),
    ("dirichlet", lambda D, c: D.Dirichlet(c), [CONC_VEC], SIMPLEX),
    ("poisson", lambda D, r: D.Poisson(r), [POSITIVE[0]], COUNTS),
    ("binomial", lambda D, p: D.Binomial(5, p), [PROBS], COUNTS),
    ("binomial_logits", lambda D, x: D.Binomial(gD_tensor(D, [5.0, 6.0, 5.0, 7.0]),
                                                 logits=x), [LOC], COUNTS),
    ("mvn_covariance", lambda D, a, c: D.MultivariateNormal(a, covariance_matrix=c),
     [LOC[:3], COV], R.standard_normal((4, 2, 3))),
    ("mvn_scale_tril", lambda D, a, t: D.MultivariateNormal(a, scale_tril=t.tril()),
     [LOC[:3], TRIL], R.standard_normal((4, 2, 3))),
    ("mvn_precision", lambda D, a, c: D.MultivariateNormal(a, precision_matrix=c),
     [LOC[:3], COV], R.standard_normal((4, 2, 3))),
    ("independent_normal", lambda D, a, b: D.Independent(D.Normal(a, b), 1),
     [LOC, SCALE], REAL),
    ("log_normal", lambda D, a, b: D.LogNormal(a, b), [LOC, SCALE], POSITIVE),
    ("tanh_normal", _normal_squashed, [LOC, SCALE], UNIT * 2 - 1),
    ("geometric", lambda D, p: D.Geometric(p), [PROBS], COUNTS),
    ("geometric_logits", lambda D, x: D.Geometric(logits=x), [LOC], COUNTS),
    ("cauchy", lambda D, a, b: D.Cauchy(a, b), [LOC, SCALE], REAL),
    ("half_normal", lambda D, b: D.HalfNormal(b), [SCALE], POSITIVE),
    ("gumbel", lambda D, a, b: D.Gumbel(a, b), [LOC, SCALE], REAL),
    ("chi2", lambda D, k: D.Chi2(k), [CONC], POSITIVE),
    ("student_t", lambda D, k, a, b: D.StudentT(k, a, b), [CONC + 1.5, LOC, SCALE], REAL),
    ("student_t_heavy", lambda D, k: D.StudentT(k), [np.array([0.5, 1.5, 2.5, 4.0])], REAL),
    ("mixture_normal", lambda D, w, a, b: D.MixtureSameFamily(D.Categorical(w),
                                                              D.Normal(a, b)),
     [WEIGHTS[0], LOC, SCALE], REAL[..., None]),
    ("mixture_independent", lambda D, w, a, b: D.MixtureSameFamily(
        D.Categorical(logits=w), D.Independent(D.Normal(a, b), 1)),
     [WEIGHTS, R.standard_normal((3, 4, 2)), R.uniform(0.5, 2.0, (3, 4, 2))],
     R.standard_normal((5, 3, 2))),
    ("relaxed_bernoulli", lambda D, t, p: D.RelaxedBernoulli(t, probs=p),
     [np.array(0.7), PROBS], UNIT),
    ("relaxed_one_hot", lambda D, t, w: D.RelaxedOneHotCategorical(t, logits=w),
     [np.array(0.5), WEIGHTS], R.dirichlet(np.ones(4), (2, 3))),
    ("negative_binomial", lambda D, n, p: D.NegativeBinomial(n, p), [CONC, PROBS], COUNTS),
    ("negative_binomial_logits", lambda D, n, x: D.NegativeBinomial(n, logits=x),
     [CONC, LOC], COUNTS),
    ("pareto", lambda D, s, a: D.Pareto(s, a), [SCALE * 0.1, CONC + 2], POSITIVE + 0.3),
    ("weibull", lambda D, s, k: D.Weibull(s, k), [SCALE, CONC], POSITIVE),
    ("inverse_gamma", lambda D, c, r: D.InverseGamma(c, r), [CONC + 1, SCALE], POSITIVE),
    ("one_hot_straight_through", lambda D, w: D.OneHotCategoricalStraightThrough(w),
     [WEIGHTS], np.eye(4)[[[0, 3, 1], [2, 2, 0]]]),
    ("multinomial", lambda D, w: D.Multinomial(4, w), [WEIGHTS],
     np.array([[[4, 0, 0, 0], [1, 1, 1, 1], [0, 2, 2, 0]]] * 2, dtype=np.float64)),
    ("logistic", _logistic, [LOC, SCALE], REAL),
]


def gD_tensor(D, values):  # noqa: N802
    """A float64 tensor of ``values`` in the module ``D`` belongs to."""
    mod = gc if D is gd else __import__("torch")
    return mod.tensor(values, dtype=mod.float64)


def _build(mod, D, make, params, device=None):
    kw = {"device": device} if mod is gc and device else {}
    tensors = [mod.tensor(p, dtype=mod.float64, requires_grad=True, **kw) for p in params]
    return make(D, *tensors), tensors


def _queries(mod, dist, value):
    """What each distribution is asked: name -> tensor (None where it does not tell)."""
    answers = {"log_prob": dist.log_prob(value)}
    for name in ("mean", "variance", "stddev", "mode"):
        try:
            answers[name] = getattr(dist, name)
        except NotImplementedError:
            answers[name] = None
    for name, arg in (("entropy", None), ("cdf", value), ("icdf", None)):
        try:
            if name == "icdf":
                arg = mod.full_like(value, 0.3) if value.dtype.is_floating_point else None
                if arg is None:
                    raise NotImplementedError
            answers[name] = getattr(dist, name)() if arg is None else getattr(dist, name)(arg)
        except NotImplementedError:
            answers[name] = None
    return answers


@needs_torch
@pytest.mark.parametrize("name, make, params, values", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(device, name, make, params, values):
    import torch
    import torch.distributions as td

    dist_g, params_g = _build(gc, gd, make, params, device)
    dist_t, params_t = _build(torch, td, make, params)
    is_int = values.dtype.kind == "i"
    value_g = gc.tensor(values, dtype=gc.int64 if is_int else gc.float64, device=device)
    value_t = torch.tensor(values, dtype=torch.int64 if is_int else torch.float64)
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
        np.testing.assert_allclose(host(ours[key].detach()), expected, rtol=1e-6,
                                   atol=1e-9, err_msg=key)
        # (the derivative of the incomplete gamma function in its first argument is
        # implemented by neither library)
        differentiable = not (name in ("gamma", "chi2", "inverse_gamma") and key == "cdf")
        if ours[key].requires_grad and np.isfinite(expected).all() and differentiable:
            total_g = total_g + ours[key].sum()
            total_t = total_t + theirs[key].sum()
    total_g.backward()
    total_t.backward()
    for mine, ref in zip(params_g, params_t):
        np.testing.assert_allclose(host(mine.grad), ref.grad.numpy(), rtol=1e-6, atol=1e-9)


KL_CASES = [
    ("normal_normal", lambda D, a, b: (D.Normal(a, b), D.Normal(b, a.exp())), [LOC, SCALE]),
    ("bernoulli_bernoulli", lambda D, p, q: (D.Bernoulli(p), D.Bernoulli(logits=q)),
     [PROBS, LOC]),
    ("categorical", lambda D, w, v: (D.Categorical(w), D.Categorical(logits=v)),
     [WEIGHTS, WEIGHTS[::-1].copy()]),
    ("one_hot", lambda D, w, v: (D.OneHotCategorical(w), D.OneHotCategorical(v)),
     [WEIGHTS, WEIGHTS[::-1].copy()]),
    ("beta_beta", lambda D, a, b: (D.Beta(a, b), D.Beta(b, a)), [CONC, SCALE]),
    ("gamma_gamma", lambda D, a, b: (D.Gamma(a, b), D.Gamma(b, a)), [CONC, SCALE]),
    ("dirichlet", lambda D, c: (D.Dirichlet(c), D.Dirichlet(c.flip(-1))), [CONC_VEC]),
    ("exponential", lambda D, a, b: (D.Exponential(a), D.Exponential(b)), [CONC, SCALE]),
    ("laplace", lambda D, a, b: (D.Laplace(a, b), D.Laplace(b, a.exp())), [LOC, SCALE]),
    ("poisson", lambda D, a, b: (D.Poisson(a), D.Poisson(b)), [CONC, SCALE]),
    ("binomial", lambda D, p, q: (D.Binomial(5, p), D.Binomial(5, q)), [PROBS, UNIT[0]]),
    ("uniform", lambda D, a, b: (D.Uniform(a, a + b), D.Uniform(a - 1, a + b + 1)),
     [LOC, SCALE]),
    ("mvn", lambda D, a, c: (D.MultivariateNormal(a, c), D.MultivariateNormal(
        a.flip(-1), scale_tril=c[0].tril() + 0.1 * c[0].diag().diag())), [LOC[:3], COV]),
    ("independent", lambda D, a, b: (D.Independent(D.Normal(a, b), 1),
                                     D.Independent(D.Normal(b, b), 1)), [LOC, SCALE]),
    ("log_normal", lambda D, a, b: (D.LogNormal(a, b), D.LogNormal(b, b)), [LOC, SCALE]),
    ("beta_normal", lambda D, a, b: (D.Beta(a, b), D.Normal(b, a)), [CONC, SCALE]),
    ("beta_gamma", lambda D, a, b: (D.Beta(a, b), D.Gamma(b, a)), [CONC, SCALE]),
    ("beta_exponential", lambda D, a, b: (D.Beta(a, b), D.Exponential(b)), [CONC, SCALE]),
    ("beta_uniform", lambda D, a, b: (D.Beta(a, b), D.Uniform(a - 3, b + 1)), [CONC, SCALE]),
    ("exponential_gamma", lambda D, a, b: (D.Exponential(a), D.Gamma(b, a)), [CONC, SCALE]),
    ("exponential_normal", lambda D, a, b: (D.Exponential(a), D.Normal(b, a)), [CONC, SCALE]),
    ("gamma_normal", lambda D, a, b: (D.Gamma(a, b), D.Normal(b, a)), [CONC, SCALE]),
    ("gamma_exponential", lambda D, a, b: (D.Gamma(a, b), D.Exponential(a)), [CONC, SCALE]),
    ("laplace_normal", lambda D, a, b: (D.Laplace(a, b), D.Normal(b, b)), [LOC, SCALE]),
    ("normal_laplace", lambda D, a, b: (D.Normal(a, b), D.Laplace(b, b)), [LOC, SCALE]),
    ("uniform_normal", lambda D, a, b: (D.Uniform(a, a + b), D.Normal(b, b)), [LOC, SCALE]),
    ("uniform_gamma", lambda D, a, b: (D.Uniform(a, a + b), D.Gamma(b, b)), [CONC, SCALE]),
    ("uniform_exponential", lambda D, a, b: (D.Uniform(a, a + b), D.Exponential(b)),
     [CONC, SCALE]),
    ("uniform_beta", lambda D, a, b: (D.Uniform(a * 0.1, a * 0.1 + 0.2), D.Beta(b, b)),
     [CONC, SCALE]),
    ("bernoulli_poisson", lambda D, p, r: (D.Bernoulli(p), D.Poisson(r)), [PROBS, SCALE]),
    ("normal_gamma_infinite", lambda D, a, b: (D.Normal(a, b), D.Gamma(b, b)),
     [LOC, SCALE]),
    ("geometric", lambda D, p, q: (D.Geometric(p), D.Geometric(q)), [PROBS, UNIT[0]]),
    ("half_normal", lambda D, a, b: (D.HalfNormal(a), D.HalfNormal(b)), [CONC, SCALE]),
    ("gumbel", lambda D, a, b: (D.Gumbel(a, b), D.Gumbel(b, a.exp())), [LOC, SCALE]),
    ("cauchy", lambda D, a, b: (D.Cauchy(a, b), D.Cauchy(b, a.exp())), [LOC, SCALE]),
    ("chi2_gamma", lambda D, a, b: (D.Chi2(a), D.Gamma(b, a)), [CONC, SCALE]),
    ("exponential_gumbel", lambda D, a, b: (D.Exponential(a), D.Gumbel(b, a)), [CONC, SCALE]),
    ("gamma_gumbel", lambda D, a, b: (D.Gamma(a, b), D.Gumbel(b, a)), [CONC, SCALE]),
    ("gumbel_normal", lambda D, a, b: (D.Gumbel(a, b), D.Normal(b, b)), [LOC, SCALE]),
    ("normal_gumbel", lambda D, a, b: (D.Normal(a, b), D.Gumbel(b, b)), [LOC, SCALE]),
    ("uniform_gumbel", lambda D, a, b: (D.Uniform(a, a + b), D.Gumbel(b, b)), [LOC, SCALE]),
    ("gumbel_uniform_infinite", lambda D, a, b: (D.Gumbel(a, b), D.Uniform(a, a + b)),
     [LOC, SCALE]),
    ("pareto", lambda D, s, a: (D.Pareto(s, a), D.Pareto(s * 0.5, a + 1)), [SCALE, CONC]),
    ("pareto_exponential", lambda D, s, a: (D.Pareto(s, a), D.Exponential(s)), [SCALE, CONC]),
    ("pareto_gamma", lambda D, s, a: (D.Pareto(s, a), D.Gamma(a, s)), [SCALE, CONC]),
    ("pareto_normal", lambda D, s, a: (D.Pareto(s, a + 1.5), D.Normal(s, a)), [SCALE, CONC]),
    ("uniform_pareto", lambda D, s, a: (D.Uniform(s, s + 1), D.Pareto(s * 0.5, a)),
     [SCALE, CONC]),
    ("normal_pareto_infinite", lambda D, s, a: (D.Normal(s, a), D.Pareto(s, a)),
     [SCALE, CONC]),
]


@needs_torch
@pytest.mark.parametrize("name, make, params", KL_CASES, ids=[c[0] for c in KL_CASES])
def test_kl_divergence_matches_torch(name, make, params):
    import torch
    import torch.distributions as td

    (p_g, q_g), params_g = _build(gc, gd, make, params)
    (p_t, q_t), params_t = _build(torch, td, make, params)
    ours, theirs = gd.kl_divergence(p_g, q_g), td.kl_divergence(p_t, q_t)
    np.testing.assert_allclose(host(ours.detach()), theirs.detach().numpy(), rtol=1e-6,
                               atol=1e-9)
    if np.isfinite(theirs.detach().numpy()).all():
        ours.sum().backward()
        theirs.sum().backward()
        for mine, ref in zip(params_g, params_t):
            np.testing.assert_allclose(host(mine.grad), ref.grad.numpy(), rtol=1e-6,
                                       atol=1e-9)


def test_kl_divergence_dispatch_and_registration():
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for "
                                                  "p type Poisson and q type Laplace"):
        gd.kl_divergence(gd.Poisson(1.0), gd.Laplace(0.0, 1.0))

    class MyNormal(gd.Normal):
        pass

    # a subclass uses its parents' pair until one of its own is registered
    p, q = MyNormal(0.0, 1.0), gd.Normal(1.0, 1.0)
    assert float(gd.kl_divergence(p, q)) == pytest.approx(0.5)
    gd.register_kl(MyNormal, gd.Normal)(lambda p, q: gc.tensor(7.0))
    assert float(gd.kl_divergence(p, q)) == 7.0
    assert float(gd.kl_divergence(q, p)) == pytest.approx(0.5)
    with pytest.raises(TypeError, match="Distribution subclass"):
        gd.register_kl(int, gd.Normal)


# ---------------------------------------------------------------- samples and rsample

SAMPLED = [
    ("normal", lambda: gd.Normal(gc.tensor([0.5, -1.0]), gc.tensor([1.0, 2.0]))),
    ("bernoulli", lambda: gd.Bernoulli(gc.tensor([0.2, 0.7]))),
    ("categorical", lambda: gd.Categorical(gc.tensor([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]]))),
    ("one_hot", lambda: gd.OneHotCategorical(gc.tensor([0.1, 0.2, 0.7]))),
    ("uniform", lambda: gd.Uniform(gc.tensor([0.0, -2.0]), gc.tensor([1.0, 3.0]))),
    ("exponential", lambda: gd.Exponential(gc.tensor([0.5, 2.0]))),
    ("laplace", lambda: gd.Laplace(gc.tensor([0.5, -1.0]), gc.tensor([1.0, 0.3]))),
    ("gamma", lambda: gd.Gamma(gc.tensor([0.3, 2.0, 9.0]), gc.tensor([1.0, 2.0, 0.5]))),
    ("beta", lambda: gd.Beta(gc.tensor([0.5, 2.0]), gc.tensor([1.5, 3.0]))),
    ("dirichlet", lambda: gd.Dirichlet(gc.tensor([0.5, 2.0, 1.0]))),
    ("poisson", lambda: gd.Poisson(gc.tensor([0.5, 4.0]))),
    ("binomial", lambda: gd.Binomial(gc.tensor([3.0, 10.0]), gc.tensor([0.3, 0.8]))),
    ("mvn", lambda: gd.MultivariateNormal(gc.tensor([1.0, -1.0]),
                                          gc.tensor([[2.0, 0.5], [0.5, 1.0]]))),
    ("log_normal", lambda: gd.LogNormal(gc.tensor([0.0, 0.5]), gc.tensor([0.25, 0.5]))),
    ("geometric", lambda: gd.Geometric(gc.tensor([0.3, 0.8]))),
    ("half_normal", lambda: gd.HalfNormal(gc.tensor([0.5, 2.0]))),
    ("gumbel", lambda: gd.Gumbel(gc.tensor([0.5, -1.0]), gc.tensor([1.0, 0.3]))),
    ("student_t", lambda: gd.StudentT(gc.tensor([5.0, 9.0]), 1.0, gc.tensor([1.0, 0.5]))),
    ("multinomial", lambda: gd.Multinomial(6, gc.tensor([0.2, 0.3, 0.5]))),
    ("negative_binomial", lambda: gd.NegativeBinomial(gc.tensor([2.0, 5.5]),
                                                      gc.tensor([0.3, 0.6]))),
    ("pareto", lambda: gd.Pareto(gc.tensor([1.0, 0.5]), gc.tensor([9.0, 12.0]))),
    ("weibull", lambda: gd.Weibull(gc.tensor([1.0, 2.0]), gc.tensor([0.8, 3.0]))),
    ("inverse_gamma", lambda: gd.InverseGamma(gc.tensor([5.0, 8.0]), gc.tensor([1.0, 2.0]))),
    ("mixture", lambda: gd.MixtureSameFamily(
        gd.Categorical(gc.tensor([[0.3, 0.7], [0.5, 0.5]])),
        gd.Normal(gc.tensor([[-2.0, 1.0], [0.0, 3.0]]), gc.tensor([[1.0, 0.5], [0.2, 1.0]])))),
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
    if name == "categorical":  # (its mean is NaN: compare the frequencies)
        freq = host(gc.nn.functional.one_hot(x, 3).float().mean(0))
        np.testing.assert_allclose(freq, host(dist.probs), atol=0.02)
        return
    mean, std = host(dist.mean), host(dist.stddev)
    sample_mean = host(x.double().mean(0))
    np.testing.assert_allclose(sample_mean, mean, atol=5 * std.max() / math.sqrt(n) + 1e-6)
    np.testing.assert_allclose(host(x.double().std(0)), std, rtol=0.05, atol=0.01)


def test_relaxed_samples_are_differentiable_and_in_the_support():
    logits = gc.tensor([[0.5, -1.0, 2.0]], requires_grad=True)
    relaxed = gd.RelaxedOneHotCategorical(gc.tensor(0.3), logits=logits)
    y = relaxed.rsample((100,))
    assert tuple(y.shape) == (100, 1, 3) and bool(relaxed.support.check(y).all())
    (y[..., 0]).sum().backward()
    assert float(logits.grad[0, 0]) > 0 > float(logits.grad[0, 1])
    # a low temperature gives nearly one-hot draws, the category of largest logit most
    frequencies = host(y.detach().round().mean(0))[0]
    assert frequencies.argmax() == 2 and abs(frequencies.sum() - 1) < 0.05
    probs = gc.tensor([0.2, 0.9], requires_grad=True)
    b = gd.RelaxedBernoulli(gc.tensor(0.1), probs=probs).rsample((2000,))
    assert bool(((b > 0) & (b < 1)).all())
    np.testing.assert_allclose(host((b.detach() > 0.5).float().mean(0)), [0.2, 0.9], atol=0.05)
    b.sum().backward()
    assert bool((probs.grad > 0).all())


def test_draws_are_made_on_the_parameters_device(device):
    loc = gc.tensor([0.5, -1.0], requires_grad=True)
    positive = gc.tensor([0.7, 3.0], requires_grad=True)
    weights = gc.tensor([[0.2, 0.8], [0.6, 0.4]], requires_grad=True)
    families = [gd.Normal(loc, positive), gd.Laplace(loc, positive), gd.Uniform(loc, loc + 1),
                gd.Exponential(positive), gd.Gamma(positive, 1.0), gd.Beta(positive, 2.0),
                gd.Dirichlet(weights + positive), gd.StudentT(positive + 2),
                gd.MultivariateNormal(loc, scale_tril=gc.eye(2) * positive),
                gd.RelaxedOneHotCategorical(gc.tensor(0.5), probs=weights)]
    for dist in families:
        x = dist.rsample((3,))
        assert x.device.type == gc.device(device).type, type(dist).__name__
        x.sum().backward()
    assert loc.grad.device.type == positive.grad.device.type == gc.device(device).type
    for dist in (gd.Bernoulli(weights), gd.Categorical(weights), gd.OneHotCategorical(weights),
                 gd.Poisson(positive), gd.Binomial(4, weights), gd.Geometric(weights),
                 gd.Multinomial(3, weights)):
        x = dist.sample((3,))
        assert x.device.type == gc.device(device).type, type(dist).__name__
        assert bool(dist.support.check(x).all()), type(dist).__name__


def test_sample_shapes_and_scalar_parameters():
    d = gd.Normal(0.0, 1.0)
    assert d.batch_shape == gc.Size([]) and d.sample().shape == gc.Size([])
    assert d.rsample([2, 3]).shape == gc.Size([2, 3])
    assert d.sample().dtype == gc.float32
    e = gd.Normal(gc.zeros(3), 1.0).expand([4, 3])
    assert e.batch_shape == gc.Size([4, 3]) and e.sample((2,)).shape == gc.Size([2, 4, 3])
    assert gd.Bernoulli(0.3).expand([2]).sample().shape == gc.Size([2])
    i = gd.Independent(gd.Normal(gc.zeros(2, 3), 1.0), 1).expand([5, 2])
    assert (i.batch_shape, i.event_shape) == (gc.Size([5, 2]), gc.Size([3]))
    m = gd.MultivariateNormal(gc.zeros(2), gc.eye(2)).expand([3])
    assert m.sample((4,)).shape == gc.Size([4, 3, 2])
    assert m.covariance_matrix.shape == gc.Size([3, 2, 2])


def test_rsample_of_location_scale_families_is_differentiable():
    loc = gc.tensor([0.5, -1.0], requires_grad=True)
    scale = gc.tensor([1.0, 2.0], requires_grad=True)
    for family in (gd.Normal, gd.Laplace):
        loc.grad = scale.grad = None
        x = family(loc, scale).rsample((50,))
        x.sum().backward()
        np.testing.assert_allclose(host(loc.grad), [50.0, 50.0])
        eps = (x.detach() - loc.detach()) / scale.detach()
        np.testing.assert_allclose(host(scale.grad), host(eps.sum(0)), rtol=1e-5, atol=1e-5)
    rate = gc.tensor([0.5, 2.0], requires_grad=True)
    x = gd.Exponential(rate).rsample((10,))
    x.sum().backward()  # x = e / rate: dx/drate = -x / rate
    np.testing.assert_allclose(host(rate.grad), host((-x.detach() / rate.detach()).sum(0)),
                               rtol=1e-5)
    low = gc.tensor(0.0, requires_grad=True)
    high = gc.tensor(2.0, requires_grad=True)
    u = gd.Uniform(low, high).rsample((10,))
    u.sum().backward()
    np.testing.assert_allclose(host(high.grad), host((u.detach() / 2).sum()), rtol=1e-5)
    np.testing.assert_allclose(host(low.grad + high.grad), 10.0, rtol=1e-5)


def test_rsample_of_multivariate_normal_is_differentiable():
    loc = gc.tensor([1.0, -1.0], requires_grad=True)
    tril = gc.tensor([[1.5, 0.0], [0.3, 0.7]], requires_grad=True)
    gc.manual_seed(0)
    x = gd.MultivariateNormal(loc, scale_tril=tril).rsample((5,))
    (x * gc.tensor([1.0, 2.0])).sum().backward()
    np.testing.assert_allclose(host(loc.grad), [5.0, 10.0])
    eps = gc.linalg.solve_triangular(tril.detach(), (x.detach() - loc.detach()).T,
                                     upper=False)  # (2, 5)
    expected = gc.tensor([[1.0], [2.0]]) @ eps.sum(1, keepdim=True).T
    # (the upper triangle too: scale_tril is used as given, as in PyTorch)
    np.testing.assert_allclose(host(tril.grad), host(expected), rtol=1e-5, atol=1e-5)


@needs_torch
def test_gamma_rsample_gradient_is_torchs_implicit_reparameterization():
    import torch

    alpha = gc.tensor([0.3, 0.9, 2.5, 7.0, 30.0], dtype=gc.float64, requires_grad=True)
    rate = gc.tensor([1.0, 2.0, 0.5, 1.0, 3.0], dtype=gc.float64, requires_grad=True)
    gc.manual_seed(1)
    x = gd.Gamma(alpha, rate).rsample((40,))
    x.sum().backward()
    z = x.detach() * rate.detach()  # the standard gamma draws
    dz_dalpha = torch._standard_gamma_grad(torch.tensor(host(alpha.detach())).expand(40, 5),
                                           torch.tensor(host(z)))
    expected = (dz_dalpha / torch.tensor(host(rate.detach()))).sum(0)
    np.testing.assert_allclose(host(alpha.grad), expected.numpy(), rtol=1e-10)
    np.testing.assert_allclose(host(rate.grad), host((-x.detach() / rate.detach()).sum(0)),
                               rtol=1e-10)


@needs_torch
def test_dirichlet_and_beta_rsample_gradients_are_torchs():
    import torch
    from torch.distributions.dirichlet import _Dirichlet_backward

    conc = gc.tensor([[0.3, 2.0, 7.0], [8.0, 9.0, 0.5]], dtype=gc.float64, requires_grad=True)
    weights = R.standard_normal((30, 2, 3))
    gc.manual_seed(2)
    x = gd.Dirichlet(conc).rsample((30,))
    (x * gc.tensor(weights)).sum().backward()
    expected = _Dirichlet_backward(torch.tensor(host(x.detach())),
                                   torch.tensor(host(conc.detach())).expand(30, 2, 3),
                                   torch.tensor(weights)).sum(0)
    np.testing.assert_allclose(host(conc.grad), expected.numpy(), rtol=1e-10)

    a = gc.tensor([0.5, 12.0], dtype=gc.float64, requires_grad=True)
    b = gc.tensor([2.0, 9.0], dtype=gc.float64, requires_grad=True)
    y = gd.Beta(a, b).rsample((30,))
    (y * gc.tensor(weights[:, 0, :2])).sum().backward()
    heads_tails = torch.tensor(host(gc.stack([y.detach(), 1 - y.detach()], -1)))
    grad_output = torch.stack([torch.tensor(weights[:, 0, :2]),
                               torch.zeros(30, 2, dtype=torch.float64)], -1)
    both = torch.stack([torch.tensor(host(a.detach())), torch.tensor(host(b.detach()))], -1)
    expected = _Dirichlet_backward(heads_tails, both.expand(30, 2, 2), grad_output).sum(0)
    np.testing.assert_allclose(host(a.grad), expected[:, 0].numpy(), rtol=1e-8)
    np.testing.assert_allclose(host(b.grad), expected[:, 1].numpy(), rtol=1e-8)


@pytest.mark.parametrize("family", ["gamma", "beta", "dirichlet"])
def test_implicit_reparameterization_gradients_are_unbiased(family):
    """The gradient of the mean of many rsample draws is the gradient of the mean."""
    conc = gc.tensor([0.7, 2.0, 4.0], dtype=gc.float64, requires_grad=True)
    n = 40000
    gc.manual_seed(5)
    if family == "gamma":
        draws, mean = gd.Gamma(conc, 1.0).rsample((n,)), conc
    elif family == "beta":
        other = gc.tensor([1.5, 1.0, 3.0], dtype=gc.float64)
        draws, mean = gd.Beta(conc, other).rsample((n,)), conc / (conc + other)
    else:
        draws, mean = gd.Dirichlet(conc).rsample((n,)), conc / conc.sum()
    weights = gc.tensor([1.0, -2.0, 0.5], dtype=gc.float64)
    (estimated,) = gc.autograd.grad((draws.mean(0) * weights).sum(), conc)
    (exact,) = gc.autograd.grad((mean * weights).sum(), conc)
    np.testing.assert_allclose(host(estimated), host(exact), atol=0.03)


# ---------------------------------------------------------------- validation

@needs_torch
def test_validation_errors_match_torch():
    import torch
    import torch.distributions as td

    def message(fn, mod):
        with pytest.raises(ValueError) as info:
            fn(mod, gd if mod is gc else td)
        return str(info.value)

    cases = [
        lambda m, D: D.Normal(m.tensor([0.0, 1.0]), m.tensor([1.0, -1.0])),
        lambda m, D: D.Normal(0.0, -1.0),
        lambda m, D: D.Bernoulli(m.tensor([0.5, 1.5])),
        lambda m, D: D.Bernoulli(m.tensor(0.5), logits=m.tensor(0.0)),
        lambda m, D: D.Categorical(m.tensor(0.5)),
        lambda m, D: D.Categorical(m.tensor([0.5, -0.5])),
        lambda m, D: D.Normal(0.0, 1.0).log_prob(1.0),
        lambda m, D: D.Normal(m.zeros(3), 1.0).log_prob(m.zeros(2)),
        lambda m, D: D.Exponential(1.0).log_prob(m.tensor([-1.0])),
        lambda m, D: D.Categorical(m.tensor([0.5, 0.5])).log_prob(m.tensor(2)),
        lambda m, D: D.Dirichlet(m.tensor([1.0, 1.0])).log_prob(m.tensor([0.5, 0.6])),
        lambda m, D: D.Uniform(1.0, 0.0),
        lambda m, D: D.MultivariateNormal(m.zeros(2), m.tensor([[1.0, 2.0], [2.0, 1.0]])),
        lambda m, D: D.MultivariateNormal(m.zeros(2)),
        lambda m, D: D.Independent(D.Normal(m.zeros(2), 1.0), 2),
        lambda m, D: D.Beta(m.tensor([1.0]), m.tensor([0.0])),
        lambda m, D: D.Normal(m.zeros(3), "a"),
        lambda m, D: D.MixtureSameFamily(D.Normal(0.0, 1.0), D.Normal(m.zeros(2), 1.0)),
        lambda m, D: D.MixtureSameFamily(D.Categorical(m.ones(3)), D.Normal(m.zeros(2), 1.0)),
        lambda m, D: D.Geometric(m.tensor([0.0, 0.5])),
        lambda m, D: D.Binomial(m.tensor([2.5]), m.tensor([0.5])),
    ]
    for case in cases:
        assert message(case, gc).replace("gradcore", "torch") == message(case, torch)


@needs_torch
def test_reprs_match_torchs():
    import torch
    import torch.distributions as td

    def reprs(m, D):
        return [repr(D.Normal(m.tensor([0.0]), m.tensor([1.0]))), repr(D.Normal(0.0, 2.0)),
                repr(D.Normal(m.zeros(3), 1.0)), repr(D.Bernoulli(logits=m.tensor(0.5))),
                repr(D.Categorical(m.tensor([0.5, 0.5]))), repr(D.Beta(1.0, 2.0)),
                repr(D.Independent(D.Normal(m.zeros(2), 1.0), 1)),
                repr(D.MultivariateNormal(m.zeros(2), m.eye(2)))]

    ours = [r.replace("gradcore", "torch") for r in reprs(gc, gd)]
    assert ours == reprs(torch, td)


def test_validate_args_can_be_turned_off():
    gd.Normal(0.0, -1.0, validate_args=False)  # no error
    gd.Distribution.set_default_validate_args(False)
    try:
        assert gd.Normal(0.0, -1.0).scale.item() == -1.0
    finally:
        gd.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        gd.Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        gd.Distribution.set_default_validate_args("yes")


def test_constraints_check_and_print_like_torchs():
    c = gd.constraints
    assert repr(c.positive) == "GreaterThan(lower_bound=0.0)"
    assert repr(c.unit_interval) == "Interval(lower_bound=0.0, upper_bound=1.0)"
    assert repr(c.real_vector) == "IndependentConstraint(Real(), 1)"
    assert repr(c.simplex) == "Simplex()"
    np.testing.assert_array_equal(host(c.real.check(gc.tensor([1.0, math.nan]))),
                                  [True, False])
    np.testing.assert_array_equal(
        host(c.simplex.check(gc.tensor([[0.5, 0.5], [0.5, 0.6]]))), [True, False])
    np.testing.assert_array_equal(
        host(c.integer_interval(0, 3).check(gc.tensor([0.0, 3.0, 1.5, 4.0]))),
        [True, True, False, False])
    assert bool(c.positive_definite.check(gc.eye(2)))
    assert not bool(c.positive_definite.check(-gc.eye(2)))
    assert bool(c.lower_cholesky.check(gc.tensor([[1.0, 0.0], [3.0, 2.0]])))
    assert not bool(c.lower_cholesky.check(gc.tensor([[1.0, 1.0], [0.0, 2.0]])))
    assert c.is_dependent(gd.Uniform(0.0, 1.0).arg_constraints["low"]) is False
    assert c.is_dependent(c.dependent)
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        c.dependent.check(gc.ones(1))


def test_transforms_invert_and_compose():
    t = gd.transforms
    x = gc.tensor([-0.7, 0.2, 1.5], dtype=gc.float64)
    for transform in (t.ExpTransform(), t.AffineTransform(1.0, -2.0), t.SigmoidTransform(),
                      t.TanhTransform(), t.SoftplusTransform(), t.PowerTransform(2.0),
                      t.ComposeTransform([t.AffineTransform(0.5, 3.0), t.ExpTransform()])):
        arg = x.abs() if isinstance(transform, t.PowerTransform) else x
        y = transform(arg)
        np.testing.assert_allclose(host(transform.inv(y)), host(arg), rtol=1e-7)
        # log |dy/dx| against the derivative by differences
        h = 1e-6
        slope = (transform(arg + h) - transform(arg - h)) / (2 * h)
        np.testing.assert_allclose(host(transform.log_abs_det_jacobian(arg, y)),
                                   np.log(np.abs(host(slope))), rtol=1e-5, atol=1e-6)
    cached = t.ExpTransform(cache_size=1)
    y = cached(x)
    assert cached.inv(y) is x
    assert t.ExpTransform() == t.ExpTransform() and t.ExpTransform().inv == t.ExpTransform().inv


def test_a_program_aliasing_gradcore_as_torch_imports_torch_distributions():
    code = ("import sys, gradcore\n"
            "sys.modules['torch'] = gradcore\n"
            "import torch\n"
            "import torch.distributions as D\n"
            "from torch.distributions import Normal, kl_divergence\n"
            "from torch.distributions.categorical import Categorical\n"
            "from torch.distributions import constraints\n"
            "assert D is gradcore.distributions and torch.distributions is D\n"
            "assert Categorical is gradcore.distributions.Categorical\n"
            "assert constraints.positive is gradcore.distributions.constraints.positive\n"
            "print(kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0)).item())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "0.5", out.stderr


@needs_torch
def test_utils_match_torchs():
    import torch
    import torch.distributions.utils as tu

    import gradcore.distributions.utils as gu

    m = np.arange(18.0).reshape(2, 3, 3)
    for diag in (0, -1, 1):
        vec = gu.tril_matrix_to_vec(gc.tensor(m), diag)
        np.testing.assert_array_equal(host(vec), tu.tril_matrix_to_vec(torch.tensor(m), diag))
        np.testing.assert_array_equal(host(gu.vec_to_tril_matrix(vec, diag)),
                                      tu.vec_to_tril_matrix(torch.tensor(host(vec)), diag))
    p = np.array([0.0, 0.3, 1.0])
    for binary in (True, False):
        np.testing.assert_allclose(host(gu.probs_to_logits(gc.tensor(p), binary)),
                                   tu.probs_to_logits(torch.tensor(p), binary), rtol=1e-6)
        np.testing.assert_allclose(host(gu.logits_to_probs(gc.tensor(p), binary)),
                                   tu.logits_to_probs(torch.tensor(p), binary), rtol=1e-6)
    a, b = gu.broadcast_all(gc.zeros(2, 1, dtype=gc.float64), 3)
    assert tuple(a.shape) == tuple(b.shape) == (2, 1) and b.dtype == gc.float64
    with pytest.raises(ValueError, match="Input arguments must all be instances of Number"):
        gu.broadcast_all(gc.zeros(2), "3")


@needs_torch
def test_enumerate_support_and_the_exponential_family_entropy_match_torch():
    import torch
    import torch.distributions as td

    def supports(m, D):
        w = m.tensor([[0.2, 0.8], [0.6, 0.4]], dtype=m.float64)
        found = []
        for dist in (D.Bernoulli(w[:, 0]), D.Categorical(w), D.OneHotCategorical(w),
                     D.Binomial(3, w[:, 0])):
            found += [dist.enumerate_support(), dist.enumerate_support(expand=False)]
        found.append(D.Binomial(3, w[:, 0]).entropy())
        return [t.detach().numpy() if m is torch else host(t) for t in found]

    for ours, theirs in zip(supports(gc, gd), supports(torch, td)):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    # the entropy from the natural parameters (Bregman) agrees with the closed forms
    for dist in (gd.Normal(gc.tensor([0.3, -1.0]), gc.tensor([0.5, 2.0])),
                 gd.Exponential(gc.tensor([0.5, 2.0])), gd.Gamma(gc.tensor([0.5, 2.0]), 1.5),
                 gd.Bernoulli(gc.tensor([0.3, 0.9]))):
        np.testing.assert_allclose(host(gd.ExponentialFamily.entropy(dist).detach()),
                                   host(dist.entropy()), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(host(gd.Normal(0.0, 1.0).perplexity()),
                               math.exp(0.5 + 0.5 * math.log(2 * math.pi)), rtol=1e-6)


REGISTRY_CASES = [("real", ()), ("positive", ()), ("nonnegative", ()), ("unit_interval", ()),
                  ("simplex", ()), ("real_vector", ()), ("greater_than", (1.5,)),
                  ("greater_than_eq", (-0.5,)), ("less_than", (-1.0,)),
                  ("interval", (-2.0, 3.0)), ("half_open_interval", (0.0, 1.0)),
                  ("lower_cholesky", ()), ("positive_definite", ())]


@needs_torch
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_biject_to_and_transform_to_match_torch(registry):
    import torch
    import torch.distributions as td

    r = np.random.default_rng(3)
    for name, args in REGISTRY_CASES:
        ours_c, theirs_c = getattr(gd.constraints, name), getattr(td.constraints, name)
        if args:
            ours_c, theirs_c = ours_c(*args), theirs_c(*args)
        try:
            theirs = getattr(td, registry)(theirs_c)
        except NotImplementedError:
            with pytest.raises(NotImplementedError, match="Cannot transform"):
                getattr(gd, registry)(ours_c)
            continue
        ours = getattr(gd, registry)(ours_c)
        x = r.standard_normal((2, 3, 3) if "cholesky" in name or "definite" in name
                              else (2, 3))
        y_g, y_t = ours(gc.tensor(x)), theirs(torch.tensor(x))
        np.testing.assert_allclose(host(y_g), y_t.numpy(), rtol=1e-10, err_msg=name)
        assert bool(ours_c.check(y_g).all()), name
        np.testing.assert_allclose(host(ours.inv(y_g)), theirs.inv(y_t).numpy(), rtol=1e-8,
                                   atol=1e-12, err_msg=name)
        try:
            expected = theirs.log_abs_det_jacobian(torch.tensor(x), y_t).numpy()
        except NotImplementedError:
            continue
        np.testing.assert_allclose(host(ours.log_abs_det_jacobian(gc.tensor(x), y_g)),
                                   expected, rtol=1e-10, err_msg=name)


def test_a_compiled_step_replays_unvalidated_distributions_with_fresh_draws():
    import warnings

    def step(a):
        normal = gd.Normal(a, 1.0, validate_args=False)
        categorical = gd.Categorical(logits=a, validate_args=False)
        return normal.rsample(), categorical.sample((8,)), normal.log_prob(a)

    compiled = gc.compile(step)
    a = gc.tensor([2.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no eager fallback)
        outs = [compiled(a) for _ in range(4)]
    draws = {tuple(host(x).tolist()) for x, _, _ in outs}
    assert len(draws) == 4
    np.testing.assert_allclose(host(outs[-1][2]), [-0.9189385] * 2, rtol=1e-6)
    with pytest.warns(UserWarning, match="runs eagerly"):  # (validation reads values)
        gc.compile(lambda a: gd.Normal(a, 1.0).rsample())(a)
