"""The part of gradcore's namespace the distributions use, gathered from the layers
below them: the package root imports every layer (``gc.compile``, the CLI's), so the
distributions, written as ``gc.lgamma(...)`` like user code, read their ``gc`` here."""

from .. import autograd, linalg, nn
from ..autograd.grad_mode import enable_grad, no_grad
from ..creation import (
    arange,
    as_tensor,
    empty,
    eye,
    full,
    full_like,
    ones,
    ones_like,
    rand,
    tensor,
    zeros,
    zeros_like,
)
from ..dtypes import bool_ as bool  # noqa: A004
from ..dtypes import finfo, float64, get_default_dtype
from ..dtypes import int64 as long
from ..ops import (
    abs,  # noqa: A004
    atan,
    atanh,
    broadcast_shapes,
    broadcast_tensors,
    cat,
    cholesky_inverse,
    cholesky_solve,
    clamp,
    cos,
    cumsum,
    diag_embed,
    digamma,
    erf,
    erfinv,
    exp,
    expm1,
    flip,
    igamma,
    isclose,
    lgamma,
    log,
    log1p,
    log_softmax,
    logit,
    matmul,
    mvlgamma,
    rsqrt,
    sigmoid,
    softmax,
    sqrt,
    stack,
    tan,
    tanh,
    transpose,
    where,
    xlogy,
)
from ..sampling import bernoulli, multinomial, normal, poisson
from ..tensor import Tensor

__all__ = ["autograd", "linalg", "nn", "enable_grad", "no_grad", "arange", "as_tensor", "empty",
           "eye", "full", "full_like", "rand", "tensor", "zeros", "zeros_like", "ones", "ones_like",
           "atan", "cos", "cumsum", "diag_embed", "tan", "tanh", "bool", "finfo", "float64",
           "get_default_dtype", "long", "abs", "atanh",
           "broadcast_shapes", "broadcast_tensors", "cat", "cholesky_inverse", "cholesky_solve",
           "clamp", "digamma",
           "erf", "erfinv", "exp", "expm1", "flip", "igamma", "isclose", "lgamma", "log", "log1p",
           "log_softmax", "mvlgamma", "sqrt", "rsqrt", "logit", "matmul", "sigmoid", "softmax",
           "stack", "transpose",
           "where", "xlogy", "bernoulli", "multinomial", "normal", "poisson", "Tensor"]
