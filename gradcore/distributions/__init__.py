"""Probability distributions, as ``torch.distributions``: parameterized distributions
that sample (``sample``; ``rsample`` differentiably, by reparameterization), score
values (``log_prob``, ``cdf``, ``icdf``), and know their ``mean``, ``variance``,
``entropy`` and KL divergences (``kl_divergence``), for VAEs, policy gradients and
Bayesian models.

Samples come from gradcore's random generator: ``gc.manual_seed`` repeats them (the
values are not PyTorch's; log-probabilities, moments, entropies, divergences and
gradients at the same values are).

>>> import gradcore as gc
>>> from gradcore.distributions import Normal, kl_divergence
>>> p, q = Normal(0.0, 1.0), Normal(1.0, 1.0)
>>> kl_divergence(p, q)
tensor(0.5000)
"""

from . import constraints, transforms
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .chi2 import Chi2
from .constraint_registry import biject_to, transform_to
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution, ExponentialFamily
from .exponential import Exponential
from .fishersnedecor import FisherSnedecor
from .gamma import Gamma
from .generalized_pareto import GeneralizedPareto
from .geometric import Geometric
from .gumbel import Gumbel
from .half_cauchy import HalfCauchy
from .half_normal import HalfNormal
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import kl_divergence, register_kl
from .kumaraswamy import Kumaraswamy
from .laplace import Laplace
from .lkj_cholesky import LKJCholesky
from .log_normal import LogNormal
from .logistic_normal import LogisticNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multinomial import Multinomial
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .pareto import Pareto
from .poisson import Poisson
from .relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from .relaxed_categorical import ExpRelaxedCategorical, RelaxedOneHotCategorical
from .studentT import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import (
    AbsTransform,
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
)
from .uniform import Uniform
from .von_mises import VonMises
from .weibull import Weibull
from .wishart import Wishart

identity_transform = transforms.identity_transform
"""The identity map (a composition of no transforms)."""

__all__ = ["ContinuousBernoulli", "FisherSnedecor", "GeneralizedPareto", "HalfCauchy",
           "Kumaraswamy", "LKJCholesky", "LogisticNormal", "LowRankMultivariateNormal",
           "VonMises", "Wishart",
           "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "Dirichlet",
           "Distribution", "Exponential", "ExponentialFamily", "Gamma", "Geometric", "Gumbel",
           "HalfNormal", "Independent", "InverseGamma", "Laplace", "LogNormal", "MixtureSameFamily",
           "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical",
           "OneHotCategoricalStraightThrough", "Pareto", "Poisson",
           "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT",
           "TransformedDistribution", "Uniform", "Weibull", "kl_divergence", "register_kl",
           "biject_to", "transform_to", "AbsTransform", "AffineTransform", "CatTransform",
           "ComposeTransform", "CorrCholeskyTransform", "CumulativeDistributionTransform",
           "ReshapeTransform", "StackTransform",
           "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
           "PositiveDefiniteTransform", "PowerTransform", "SigmoidTransform",
           "SoftmaxTransform", "SoftplusTransform", "StickBreakingTransform", "TanhTransform",
           "Transform", "identity_transform", "constraints", "transforms"]
