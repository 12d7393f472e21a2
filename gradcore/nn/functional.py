"""``gradcore.nn.functional``: PyTorch's ``torch.nn.functional``, argument for argument.

The heavy lifting is in :mod:`gradcore.ops.activation` (primitives with their own
backward nodes); this module adds PyTorch's signatures, defaults, legacy arguments
and the composites (``cross_entropy`` with label smoothing or probability targets,
``dropout``, ``one_hot``).

>>> import gradcore as gc
>>> import gradcore.nn.functional as F
>>> logits = gc.tensor([[2.0, 0.5, -1.0]], requires_grad=True)
>>> loss = F.cross_entropy(logits, gc.tensor([0]))
>>> round(loss.item(), 4)
0.2413
>>> loss.grad_fn.name(), loss.grad_fn.next_functions[0][0].name()
('NllLossBackward0', 'LogSoftmaxBackward0')
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import creation, dtypes
from .. import random as _random_state
from ..autograd.grad_mode import autocast_blocks as _ac_blocks
from ..autograd.grad_mode import no_grad
from ..backend import check_range, math_of
from ..ops import _autocast as _ac
from ..ops import activation as _act
from ..ops import apply_inplace, searchsorted
from ..ops import cat as _cat
from ..ops import conv as _conv
from ..ops import pointwise as _pw
from ..ops import reduce as _red
from ..ops._core import Tensor, as_tensor, normalize_dim, wrap
from ..ops.activation import check_reduction

__all__ = ["linear", "relu", "gelu", "tanh", "sigmoid", "softmax", "log_softmax", "dropout",
           "layer_norm", "embedding", "mse_loss", "cross_entropy", "nll_loss",
           "binary_cross_entropy_with_logits", "one_hot", "erf", "softplus", "relu_", "silu",
           "mish", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "selu_", "celu", "celu_",
           "hardtanh", "hardtanh_", "relu6", "hardswish", "hardsigmoid", "logsigmoid", "softsign",
           "tanhshrink", "softshrink", "hardshrink", "prelu", "glu", "softmin", "l1_loss",
           "smooth_l1_loss", "huber_loss", "binary_cross_entropy", "kl_div",
           "cosine_embedding_loss", "margin_ranking_loss", "soft_margin_loss",
           "multilabel_soft_margin_loss", "pairwise_distance", "triplet_margin_loss",
           "cosine_similarity", "normalize"]


def _legacy_reduction(size_average, reduce, reduction):
    """PyTorch's deprecated ``size_average``/``reduce`` pair, as a ``reduction`` string."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else "sum" if reduce else "none"
    # (PyTorch's words, naming the reduction the pair amounts to)
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  f"reduction='{ret}' instead.", stacklevel=3)
    return ret


# ---- layers and activations ----------
def linear(input, weight, bias=None):
    """``input @ weight.T + bias``; one graph node for any leading dimensions of
    ``input``: ``AddmmBackward0`` (``MmBackward0`` without a bias) for a 2-D input, as
    PyTorch's, and ``LinearBackward0`` for the others (where PyTorch records a view of
    a 2-D product: ``ViewBackward0`` over ``AddmmBackward0``)."""
    return _act.linear(input, weight, bias)


def relu(input, inplace=False):
    """``max(input, 0)``."""
    return input.relu_() if inplace else _pw.relu(input)


def gelu(input, approximate="none"):
    """``x * Phi(x)``; ``approximate='tanh'`` is PyTorch's tanh approximation."""
    return _act.gelu(input, approximate)


def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * input)) / beta``; ``input`` where ``beta * input > threshold``."""
    return _act.softplus(input, beta, threshold)


def tanh(input):
    """``tanh(input)``."""
    return _pw.tanh(input)


def sigmoid(input):
    """``1 / (1 + exp(-input))``."""
    return _pw.sigmoid(input)


def erf(input):
    """The error function of ``input``."""
    return _act.erf(input)


def _softmax_dim(name, ndim, dim, stacklevel):
    if dim is not None:
        return dim
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the "
                  f"call to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x) / sum(exp(x), dim)``; ``dtype`` casts the input first."""
    if _ac_blocks[0] and dtype is None:  # inside gc.autocast on CUDA: in float32
        (input,) = _ac.full(input, cpu=False)
    return _act.softmax(input, _softmax_dim("softmax", input.ndim, dim, _stacklevel), dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``x - logsumexp(x, dim)``; ``dtype`` casts the input first."""
    if _ac_blocks[0] and dtype is None:
        (input,) = _ac.full(input, cpu=False)
    return _act.log_softmax(input, _softmax_dim("log_softmax", input.ndim, dim, _stacklevel),
                            dtype)

# ---- more activations (gradcore.ops.activation; `inplace=True` writes into the input,
# recorded as the same node, as PyTorch's in-place forms are) ----------
def _maybe_inplace(fn, input, inplace, name, *args):
    if inplace:
        return apply_inplace(input, name, fn, *args)
    return fn(input, *args)


def relu_(input):
    """In-place :func:`relu`."""
    return input.relu_()


def silu(input, inplace=False):
    """``input * sigmoid(input)``.

    >>> import gradcore as gc, gradcore.nn.functional as F
    >>> F.silu(gc.tensor([-1.0, 0.0, 2.0]))
    tensor([-0.2689,  0.0000,  1.7616])
    """
    return _maybe_inplace(_act.silu, input, inplace, "silu_")


def mish(input, inplace=False):
    """``input * tanh(softplus(input))``."""
    return _maybe_inplace(_act.mish, input, inplace, "mish_")


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``input`` where positive, else ``negative_slope * input``."""
    return _maybe_inplace(_act.leaky_relu, input, inplace, "leaky_relu_", negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    """In-place :func:`leaky_relu`."""
    return leaky_relu(input, negative_slope, inplace=True)


def elu(input, alpha=1.0, inplace=False):
    """``input`` where positive, else ``alpha * (exp(input) - 1)``."""
    return _maybe_inplace(_act.elu, input, inplace, "elu_", alpha)


def elu_(input, alpha=1.0):
    """In-place :func:`elu`."""
    return elu(input, alpha, inplace=True)


def selu(input, inplace=False):
    """``scale * elu(input, alpha)``, PyTorch's self-normalizing constants."""
    return _maybe_inplace(_act.selu, input, inplace, "selu_")


def selu_(input):
    """In-place :func:`selu`."""
    return selu(input, inplace=True)


def celu(input, alpha=1.0, inplace=False):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``; ``alpha`` must not be 0."""
    return _maybe_inplace(_act.celu, input, inplace, "celu_", alpha)


def celu_(input, alpha=1.0):
    """In-place :func:`celu`."""
    return celu(input, alpha, inplace=True)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``input`` clamped to ``[min_val, max_val]``; no gradient at or beyond the bounds."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _maybe_inplace(_act.hardtanh, input, inplace, "hardtanh_", min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """In-place :func:`hardtanh`."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    """``min(max(0, input), 6)`` (``hardtanh(input, 0, 6)``)."""
    return _maybe_inplace(_act.hardtanh, input, inplace, "relu6_", 0.0, 6.0)


def hardswish(input, inplace=False):
    """``input * relu6(input + 3) / 6``."""
    return _maybe_inplace(_act.hardswish, input, inplace, "hardswish_")


def hardsigmoid(input, inplace=False):
    """``relu6(input + 3) / 6``."""
    return _maybe_inplace(_act.hardsigmoid, input, inplace, "hardsigmoid_")


def logsigmoid(input):
    """``log(sigmoid(input))``, computed without overflow."""
    return _act.logsigmoid(input)


def softsign(input):
    """``input / (1 + |input|)`` (PyTorch's composite, node for node)."""
    return _pw.div(input, _pw.add(_pw.abs(input), 1))


def tanhshrink(input):
    """``input - tanh(input)`` (PyTorch's composite, node for node)."""
    return _pw.sub(input, _pw.tanh(input))


def softshrink(input, lambd=0.5):
    """``input - lambd`` above ``lambd``, ``input + lambd`` below ``-lambd``, else 0."""
    return _act.softshrink(input, lambd)


def hardshrink(input, lambd=0.5):
    """``input`` where ``|input| > lambd``, else 0."""
    return _act.hardshrink(input, lambd)


def prelu(input, weight):
    """``input`` where positive, else ``weight * input``, with one learnable slope or one
    per channel (dimension 1)."""
    return _act.prelu(input, weight)


def glu(input, dim=-1):
    """The gated linear unit: ``a * sigmoid(b)`` for the two halves ``a``, ``b`` of
    ``input`` along ``dim``.

    >>> import gradcore as gc, gradcore.nn.functional as F
    >>> F.glu(gc.tensor([[1.0, 2.0, 0.0, 100.0]]))
    tensor([[0.5000, 2.0000]])
    """
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    axis = normalize_dim(dim, input.ndim)
    size = input.shape[axis]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {axis} is size "
                           f"{size}")
    a, b = input.split(size // 2, axis)
    return _pw.mul(a, _pw.sigmoid(b))


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``softmax(-input, dim)``; ``dtype`` casts the input first."""
    return _act.softmax(_pw.neg(input), _softmax_dim("softmin", input.ndim, dim, _stacklevel),
                        dtype)



def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the others by ``1 / (1 - p)``.

    The mask comes from gradcore's generator, so ``gc.manual_seed`` makes it
    reproducible: on the CPU from its NumPy stream, on a CUDA device from Philox
    numbers drawn there (:func:`gradcore.random.device_state`), so that nothing waits
    for the host and a compiled step draws fresh masks at every launch.  Outside
    training (or with ``p == 0``) the input is returned as is.
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0 or input.numel() == 0:
        return input
    xd = input._data
    if p == 1.0:
        noise = wrap(math_of(xd).zeros((), dtype=xd.dtype))
    elif not isinstance(xd, np.ndarray) and xd.dtype.name in ("float16", "float32", "float64"):
        m = math_of(xd)
        state = _random_state.device_state(None, input.device)._data
        mask = m.empty(xd.shape, dtype=xd.dtype)
        m.dropout_mask(mask, state, 1.0 - p, 1.0 / (1.0 - p))
        m.philox_advance(state, mask.size)
        noise = wrap(mask)
    else:
        rdt = np.float32 if xd.dtype != np.float64 else np.float64
        keep = creation.seed_generator().random(xd.shape, dtype=rdt) < (1.0 - p)
        host = keep.astype(xd.dtype)
        host *= host.dtype.type(1.0 / (1.0 - p))
        noise = wrap(host if type(xd) is np.ndarray else input.device.asarray(host))
    return input.mul_(noise) if inplace else _pw.mul(input, noise)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize over the trailing ``normalized_shape`` dimensions; one graph node."""
    if _ac_blocks[0]:
        input, weight, bias = _ac.full(input, weight, bias, cpu=False)
    return _act.layer_norm(input, normalized_shape, weight, bias, eps)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """``weight[input]``: rows of an embedding table (gradients of repeated indices
    accumulate; the ``padding_idx`` row gets none)."""
    return _act.embedding(input, weight, padding_idx, max_norm, norm_type,
                          scale_grad_by_freq, sparse)


def one_hot(tensor, num_classes=-1):
    """int64 tensor with a trailing dimension of ``num_classes`` (``-1``: the largest
    value plus one), 1 at each value's position."""
    t = tensor if isinstance(tensor, Tensor) else as_tensor(tensor)
    td = t._data
    if td.dtype.kind not in "iu":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    m = math_of(td)
    if num_classes == -1:
        if td.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(td.max()) + 1
    if td.size:
        if int(td.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(td.max()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    return wrap((td[..., None] == m.arange(num_classes)).astype(np.int64))


# ---- losses ----------
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """The squared difference, averaged (``mean``), summed or elementwise (``none``);
    ``weight`` weighs each element (the mean then divides by its sum)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if _ac_blocks[0]:
        input, target = _ac.full(input, target)
    if weight is None:
        return _act.mse_loss(input, target, reduction)
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    se = _act.mse_loss(input, target, "none") * weight
    if reduction == "none":
        return se
    return se.sum() if reduction == "sum" else se.sum() / weight.sum()


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """``-input[n, target[n]]`` (times ``weight[target[n]]``); ``mean`` divides by the
    total weight of the targets that are not ``ignore_index``; one graph node."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if _ac_blocks[0]:
        input, weight = _ac.full(input, weight)
    return _act.nll_loss(input, target, weight, ignore_index, reduction)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """``nll_loss(log_softmax(input, 1), target)``, PyTorch's formula for each option.

    ``target`` holds class indices (an integer tensor, shaped like ``input`` without its
    class dimension 1) or class probabilities (a float tensor shaped like ``input``).
    With ``label_smoothing`` ``e`` the loss is ``(1 - e) * nll + e / C * smooth``,
    ``smooth`` being the (weighted) sum of ``-log_softmax`` over the classes, reduced
    like ``nll`` (its ``mean`` divides by the same total weight).
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing}")
    if _ac_blocks[0]:  # inside gc.autocast: in float32
        input, target, weight = _ac.full(input, target, weight)
    if input.ndim == 0:
        raise RuntimeError("cross_entropy: the input must have a class dimension")
    class_dim = 0 if input.ndim == 1 else 1
    n_classes = input.shape[class_dim]
    t = target if isinstance(target, Tensor) else as_tensor(target)
    if label_smoothing == 0.0 and _rows_apply(input, t, weight):
        return _act.cross_entropy_rows(input, t, weight, ignore_index, reduction)
    if label_smoothing == 0.0 and input.ndim == 2 and t._data.dtype.kind != "f":
        # one backward step for the pair (only nll_loss reads the log-probabilities)
        return _act.cross_entropy_classes(input, t, weight, ignore_index, reduction)
    logp = _act.log_softmax(input, class_dim)
    wshape = [1] * input.ndim
    wshape[class_dim] = n_classes
    if t._data.dtype.kind == "f":
        return _soft_targets(logp, t, weight, wshape, class_dim, n_classes, reduction,
                             label_smoothing)
    nll = _act.nll_loss(logp, t, weight, ignore_index, reduction)
    if label_smoothing == 0.0:
        return nll
    ignore_mask = t == ignore_index
    if weight is not None:
        smooth = -(logp * weight.reshape(wshape)).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    smooth = smooth.masked_fill(ignore_mask, 0.0)
    if reduction == "mean":
        # the total weight of the targets kept, on the device (no reading it back)
        keep = ~ignore_mask._data
        if weight is not None:
            tsafe = math_of(keep).where(keep, t._data, 0)
            total = (weight._data[tsafe] * keep).sum()
        else:
            total = keep.sum()
        total = wrap(math_of(keep).asarray(total).astype(smooth._data.dtype))
        with np.errstate(invalid="ignore", divide="ignore"):  # every target ignored: NaN
            ret = smooth.sum() / total
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth
    return nll * (1.0 - label_smoothing) + ret * (label_smoothing / n_classes)


def _rows_apply(x, t, weight) -> bool:
    """Whether cross_entropy runs as its row formula (``softmax_xent_forward``: one
    kernel on a device with kernels, its twin elsewhere): a 2-D floating input, integer
    targets of one per row, a weight of one per class."""
    if not isinstance(x, Tensor) or x.ndim != 2:
        return False
    xd, td = x._data, t._data
    if xd.dtype.kind != "f" or td.dtype.kind not in "iu":
        return False
    if tuple(td.shape) != (xd.shape[0],) or xd.dtype.name not in ("float16", "float32",
                                                                   "float64"):
        return False
    return weight is None or (isinstance(weight, Tensor) and tuple(weight.shape) ==
                              (xd.shape[1],))


def _soft_targets(logp, t, weight, wshape, class_dim, n_classes, reduction, label_smoothing):
    """Cross entropy against class probabilities (PyTorch's formula)."""
    if tuple(t.shape) != tuple(logp.shape):
        raise RuntimeError(f"cross_entropy: expected a probability target of the input's shape "
                           f"{tuple(logp.shape)}, got {tuple(t.shape)}")
    if label_smoothing > 0.0:
        t = t * (1.0 - label_smoothing) + label_smoothing / n_classes
    prod = logp * t
    if weight is not None:
        prod = prod * weight.reshape(wshape)
    if reduction == "none":
        return -prod.sum(class_dim)
    if reduction == "sum":
        return -prod.sum()
    batch = logp.numel() // n_classes if n_classes else 0
    with np.errstate(invalid="ignore", divide="ignore"):
        return -prod.sum() / float(batch)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """Binary cross entropy of ``sigmoid(input)``, computed stably from the logits as
    ``max(x, 0) - x * y + log1p(exp(-|x|))`` (``pos_weight`` weighs the positive term);
    one graph node before the reduction."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if _ac_blocks[0]:
        input, target, weight, pos_weight = _ac.full(input, target, weight, pos_weight)
    return _act.binary_cross_entropy_with_logits(input, target, weight, reduction, pos_weight)


# ---- more losses and distances (composites of differentiable ops, PyTorch's formulas
# step for step, except binary_cross_entropy: one node) ----------
def _reduce(loss, reduction):
    """``loss`` reduced as ``reduction`` says (checked by the caller)."""
    if reduction == "none":
        return loss
    return _red.mean(loss) if reduction == "mean" else _red.sum(loss)


def _warn_size(input, target, stacklevel=4):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({tuple(target.shape)}) that is different to the "
                      f"input size ({tuple(input.shape)}). This will likely lead to incorrect "
                      f"results due to broadcasting. Please ensure they have the same size.",
                      stacklevel=stacklevel)


def _weighted(loss, weight, input, reduction, mean_over_weight):
    """``loss * weight`` reduced, for the losses whose ``weight`` has the input's shape
    (``mean`` divides by the sum of the weights, or by the count)."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = _pw.mul(loss, weight)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return _red.sum(loss)
    if reduction == "mean":
        return _pw.div(_red.sum(loss), _red.sum(weight)) if mean_over_weight else \
            _red.mean(loss)
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', "
                     f"'sum'.")


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """The absolute difference ``|input - target|``, reduced (``mean``, ``sum`` or
    ``none``); ``weight`` weighs each element (the mean then divides by its sum).

    >>> import gradcore as gc, gradcore.nn.functional as F
    >>> F.l1_loss(gc.tensor([1.0, 2.0, 4.0]), gc.tensor([1.5, 2.0, 2.0]))
    tensor(0.8333)
    """
    _warn_size(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = _pw.abs(_pw.sub(input, target))
    if weight is not None:
        return _weighted(loss, weight, input, reduction, mean_over_weight=True)
    check_reduction(reduction)
    return _reduce(loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5 * d^2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 * beta``, of
    ``d = input - target``, reduced; ``beta=0`` is :func:`l1_loss`."""
    _warn_size(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = _pw.sub(input, target)
    z = _pw.abs(d)
    if beta == 0.0:
        return _reduce(z, reduction)
    quad = _pw.div(_pw.mul(_pw.mul(d, 0.5), d), beta)
    lin = _pw.sub(z, 0.5 * beta)
    return _reduce(_pw.where(_pw.lt(z, beta), quad, lin), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5 * d^2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 * delta)``, of
    ``d = input - target``, reduced; ``weight`` weighs each element."""
    _warn_size(input, target)
    if weight is None:
        check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    d = _pw.sub(input, target)
    z = _pw.abs(d)
    quad = _pw.mul(_pw.mul(d, 0.5), d)
    lin = _pw.mul(_pw.sub(z, 0.5 * delta), delta)
    loss = _pw.where(_pw.lt(z, delta), quad, lin)
    if weight is not None:
        return _weighted(loss, weight, input, reduction, mean_over_weight=False)
    return _reduce(loss, reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """Binary cross entropy of probabilities ``input`` against targets in [0, 1]:
    ``-weight * (t * log(x) + (1 - t) * log(1 - x))``, each log clamped at -100.

    >>> import gradcore as gc, gradcore.nn.functional as F
    >>> F.binary_cross_entropy(gc.tensor([0.9, 0.2]), gc.tensor([1.0, 0.0]))
    tensor(0.1643)
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({tuple(target.shape)}) that is different to "
                         f"the input size ({tuple(input.shape)}) is deprecated. Please ensure "
                         f"they have the same size.")
    return _act.binary_cross_entropy(input, target, weight, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """The Kullback-Leibler divergence of ``target`` from ``input`` (log-probabilities):
    ``target * (log(target) - input)`` (0 where ``target`` is 0), or with
    ``log_target=True``, ``exp(target) * (target - input)``; ``batchmean`` divides the
    sum by the batch size (the KL divergence's definition), ``mean`` by the element count.
    """
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns "
                      "with the KL div math definition.'mean' will be changed to behave the "
                      "same as 'batchmean' in the next major release.", stacklevel=2)
    check_reduction("sum" if reduction == "batchmean" else reduction)
    if log_target:
        loss = _pw.mul(_pw.exp(target), _pw.sub(target, input))
    else:
        # xlogy(target, target): 0 where target is 0
        safe = target.masked_fill(_pw.eq(target, 0), 1.0)
        loss = _pw.sub(_pw.mul(target, _pw.log(safe)), _pw.mul(target, input))
    if reduction == "batchmean":
        total = _red.sum(loss)
        return _pw.div(total, input.shape[0]) if input.ndim else total
    return _reduce(loss, reduction)


def _cos_loss_check(input1, input2, target):
    if target.ndim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    want = 2 if target.ndim == 1 else 1
    if input1.ndim != want or input2.ndim != want:
        raise RuntimeError(f"{target.ndim}D target tensor expects {want}D input tensors, but "
                           f"found inputs with sizes {list(input1.shape)} and "
                           f"{list(input2.shape)}.")


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """``1 - cos(x1, x2)`` where ``target`` is 1, ``max(0, cos(x1, x2) - margin)`` where
    it is -1 (0 elsewhere), the cosine along the last dimension, reduced."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    _cos_loss_check(input1, input2, target)
    dim = target.ndim
    eps = 1e-12  # PyTorch's EPSILON
    prod_sum = _red.sum(_pw.mul(input1, input2), dim)
    mag1 = _pw.add(_red.sum(_pw.mul(input1, input1), dim), eps)
    mag2 = _pw.add(_red.sum(_pw.mul(input2, input2), dim), eps)
    cos = _pw.div(prod_sum, _pw.sqrt(_pw.mul(mag1, mag2)))
    zeros = creation.zeros_like(cos)
    pos = _pw.sub(1, cos)
    neg = _pw.clamp(_pw.sub(cos, margin), min=0)
    loss = _pw.add(_pw.where(_pw.eq(target, 1), pos, zeros),
                   _pw.where(_pw.eq(target, -1), neg, zeros))
    return _reduce(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``, reduced (``target`` is 1 where
    ``input1`` should rank higher, -1 where ``input2`` should)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same "
                           f"dimension but got sizes: input1: {tuple(input1.shape)}, input2: "
                           f"{tuple(input2.shape)}, target: {tuple(target.shape)} ")
    loss = _pw.add(_pw.mul(_pw.neg(target), _pw.sub(input1, input2)), margin)
    return _reduce(_pw.clamp(loss, min=0), reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """The two-class logistic loss ``log(1 + exp(-target * input))``, reduced (targets
    1 or -1)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    return _reduce(_pw.log1p(_pw.exp(_pw.mul(_pw.neg(input), target))), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """Per-class binary logistic losses ``-(t * logsigmoid(x) + (1 - t) *
    logsigmoid(-x))`` (times ``weight``), averaged over the classes (the last dimension),
    then reduced over the batch."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = _pw.neg(_pw.add(_pw.mul(target, _act.logsigmoid(input)),
                           _pw.mul(_pw.sub(1, target), _act.logsigmoid(_pw.neg(input)))))
    if weight is not None:
        loss = _pw.mul(loss, weight)
    class_dim = input.ndim - 1
    loss = _pw.div(_red.sum(loss, class_dim), input.shape[class_dim])
    if reduction == "none":
        return loss
    if reduction == "mean":
        return _red.mean(loss)
    if reduction == "sum":
        return _red.sum(loss)
    raise ValueError(reduction + " is not valid")


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The ``p``-norm of ``x1 - x2 + eps`` along the last dimension (of the broadcast
    shape).

    >>> import gradcore as gc, gradcore.nn.functional as F
    >>> F.pairwise_distance(gc.tensor([[0.0, 0.0]]), gc.tensor([[3.0, 4.0]]), eps=0.0)
    tensor([5.])
    """
    last = max(x1.ndim, x2.ndim) - 1
    return _red.norm(_pw.add(_pw.sub(x1, x2), eps), p, last, keepdim)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """``max(0, margin + d(a, p) - d(a, n))`` with ``d`` the :func:`pairwise_distance`
    (``swap``: ``d(a, n)`` is the smaller of it and ``d(p, n)``), reduced."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    dims = (anchor.ndim, positive.ndim, negative.ndim)
    if len(set(dims)) != 1:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {dims[0]}D, "
                           f"positive {dims[1]}D, and negative {dims[2]}D inputs")
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = _pw.minimum(dist_neg, pairwise_distance(positive, negative, p, eps))
    loss = _pw.clamp(_pw.sub(_pw.add(dist_pos, margin), dist_neg), min=0)
    return _reduce(loss, reduction)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``<x1, x2> / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim`` (of the
    broadcast shape), computed as PyTorch 2.x does: each input divided by its norm first
    (the clamp to ``eps`` is not differentiated).

    >>> import gradcore as gc, gradcore.nn.functional as F
    >>> F.cosine_similarity(gc.tensor([[1.0, 0.0]]), gc.tensor([[1.0, 1.0]]))
    tensor([0.7071])
    """
    x1 = x1 if isinstance(x1, Tensor) else as_tensor(x1)
    x2 = x2 if isinstance(x2, Tensor) else as_tensor(x2, x1)
    common = dtypes.result_type([t.dtype for t in (x1, x2) if t.ndim],
                                [t.dtype for t in (x1, x2) if not t.ndim], [])
    if not common.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{_act._torch_type(common.np)}")
    x1, x2 = x1.to(dtype=common), x2.to(dtype=common)
    shape = math_of(x1._data).broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    if tuple(x1.shape) != shape:
        x1 = x1.expand(*shape)
    if tuple(x2.shape) != shape:
        x2 = x2.expand(*shape)
    n1 = _red.norm(x1, 2, dim, True).clone()
    n2 = _red.norm(x2, 2, dim, True).clone()
    with no_grad():
        n1.clamp_(min=eps)
        n2.clamp_(min=eps)
    return _red.sum(_pw.mul(_pw.div(x1, n1), _pw.div(x2, n2)), dim)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim``; ``out`` receives the result.

    >>> import gradcore as gc, gradcore.nn.functional as F
    >>> F.normalize(gc.tensor([[3.0, 4.0]]))
    tensor([[0.6000, 0.8000]])
    """
    denom = _pw.clamp(_red.norm(input, p, dim, True), min=eps).expand_as(input)
    if out is None:
        return _pw.div(input, denom)
    with no_grad():
        out.copy_(_pw.div(input, denom))
    return out


# ---- convolutions, their windows, padding (gradcore.ops.conv) ----------
conv1d, conv2d = _conv.conv1d, _conv.conv2d
conv_transpose1d, conv_transpose2d = _conv.conv_transpose1d, _conv.conv_transpose2d
unfold, fold, pad = _conv.unfold, _conv.fold, _conv.pad
conv3d, conv_transpose3d = _conv.conv3d, _conv.conv_transpose3d
__all__ += ["conv3d", "conv_transpose3d"]
__all__ += ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "unfold", "fold", "pad"]


# ---- pooling (gradcore.ops.pool) ----------
from ..ops import pool as _pool  # noqa: E402

max_pool1d, max_pool2d = _pool.max_pool1d, _pool.max_pool2d
avg_pool1d, avg_pool2d = _pool.avg_pool1d, _pool.avg_pool2d
adaptive_avg_pool1d, adaptive_avg_pool2d = _pool.adaptive_avg_pool1d, _pool.adaptive_avg_pool2d
adaptive_max_pool1d, adaptive_max_pool2d = _pool.adaptive_max_pool1d, _pool.adaptive_max_pool2d
max_unpool1d, max_unpool2d = _pool.max_unpool1d, _pool.max_unpool2d
max_pool3d, avg_pool3d = _pool.max_pool3d, _pool.avg_pool3d
adaptive_avg_pool3d = _pool.adaptive_avg_pool3d
__all__ += ["max_unpool1d", "max_unpool2d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d"]
__all__ += ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
            "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d"]


# ---- batch and group normalization (gradcore.ops.normalization) ----------
from ..ops import normalization as _norm  # noqa: E402


def batch_norm(input, running_mean, running_var, weight=None, bias=None,  # noqa: A002
               training=False, momentum=0.1, eps=1e-5):
    """Batch normalization over ``(N, C, ...)``: each channel normalized by its mean and
    (biased) variance over the batch and the other dimensions when ``training`` (the
    running statistics, when given, then move by ``momentum`` towards them, the variance
    unbiased, in place and without gradient), by ``running_mean``/``running_var``
    otherwise; then ``weight`` and ``bias`` per channel. One node; float16 is computed
    in float32 (and takes float32 parameters and statistics).

    >>> import gradcore as gc
    >>> x = gc.tensor([[1.0, 2.0], [3.0, 6.0]])
    >>> rm, rv = gc.zeros(2), gc.ones(2)
    >>> batch_norm(x, rm, rv, training=True, eps=0.0)
    tensor([[-1., -1.],
            [ 1.,  1.]])
    >>> rm, rv
    (tensor([0.2000, 0.4000]), tensor([1.1000, 1.7000]))
    """
    if training:
        size = input.shape
        if size[0] * math.prod(size[2:]) == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {size}")
    return _norm.batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                            eps)


def instance_norm(input, running_mean=None, running_var=None, weight=None,  # noqa: A002
                  bias=None, use_input_stats=True, momentum=0.1, eps=1e-5):
    """Instance normalization over ``(N, C, ...)``: each channel of each sample normalized
    by its own mean and (biased) variance over the other dimensions when
    ``use_input_stats`` (the running statistics, when given, then move by ``momentum``
    towards the samples' average, the variance unbiased), by ``running_mean``/
    ``running_var`` otherwise; then ``weight`` and ``bias`` per channel. One node.

    >>> import gradcore as gc
    >>> instance_norm(gc.tensor([[[1.0, 3.0], [2.0, 6.0]]]), eps=0.0)
    tensor([[[-1.,  1.],
             [-1.,  1.]]])
    """
    if use_input_stats and math.prod(input.shape[2:]) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{input.shape}")
    return _norm.instance_norm(input, weight, bias, running_mean, running_var, use_input_stats,
                               momentum, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):  # noqa: A002
    """Group normalization: the channels of ``(N, C, ...)`` split into ``num_groups``
    groups, each normalized over its channels and the other dimensions, then ``weight``
    and ``bias`` per channel. One node.

    >>> import gradcore as gc
    >>> group_norm(gc.tensor([[1.0, 3.0, 0.0, 4.0]]), 2, eps=0.0)
    tensor([[-1.,  1., -1.,  1.]])
    """
    return _norm.group_norm(input, num_groups, weight, bias, eps)


__all__ += ["batch_norm", "instance_norm", "group_norm"]


# ---- channel-wise dropout ----------
def _feature_dropout(input, p, training, inplace):  # noqa: A002
    """Whole channels zeroed: one draw per ``input.shape[:2]`` (PyTorch's feature
    dropout), through :func:`dropout` of a mask of ones (so the same generator, and on a
    device the same kernel)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if not training or p == 0.0:
        return input
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    mask = dropout(creation.ones(shape, dtype=input.dtype, device=input.device), p, True)
    return input.mul_(mask) if inplace else input * mask


def dropout1d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zero whole channels of ``(N, C, L)`` or ``(C, L)`` with probability ``p``, scaling
    the others by ``1 / (1 - p)``."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D "
                           "input. Note that dropout1d exists to provide channel-wise dropout "
                           "on inputs with 1 spatial dimension, a channel dimension, and an "
                           "optional batch dimension (i.e. 2D or 3D inputs).")
    if input.ndim == 2:
        return _feature_dropout(input.unsqueeze(0), p, training, inplace).squeeze(0)
    return _feature_dropout(input, p, training, inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zero whole channels of ``(N, C, H, W)`` with probability ``p``, scaling the
    others by ``1 / (1 - p)``. A 3-D input is taken as ``(N, C, L)`` with PyTorch's
    warning; fewer dimensions warn as PyTorch does."""
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is "
                      "deprecated and will result in an error in a future release. To retain "
                      "the behavior and silence this warning, please use dropout instead. "
                      "Note that dropout2d exists to provide channel-wise dropout on inputs "
                      "with 2 spatial dimensions, a channel dimension, and an optional batch "
                      "dimension (i.e. 3D or 4D inputs).", stacklevel=2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change "
                      "in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise "
                      "dropout behavior, please switch to using dropout1d instead.",
                      stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


__all__ += ["dropout1d", "dropout2d"]


# ---- attention ----------
# the C++ names PyTorch's attention messages give dtypes ("query.dtype: double")
_C_DTYPE_NAMES = {"float16": "c10::Half", "float32": "float", "float64": "double",
                  "bool": "bool", "uint8": "unsigned char", "int8": "signed char",
                  "int16": "short int", "int32": "int", "int64": "long int"}


def _c_dtype(dt):
    return _C_DTYPE_NAMES.get(dt.name, dt.name)


def _broadcast_shapes(a, b, in_place=False):
    """The broadcast of shapes ``a`` and ``b`` (PyTorch's message when they do not);
    ``in_place``: ``b`` added into a tensor of shape ``a``, which cannot grow."""
    n = max(len(a), len(b))
    out = []
    for k in range(n, 0, -1):
        da = a[-k] if k <= len(a) else 1
        db = b[-k] if k <= len(b) else 1
        if da != db and da != 1 and db != 1:
            raise RuntimeError(f"The size of tensor a ({da}) must match the size of tensor b "
                               f"({db}) at non-singleton dimension {n - k}")
        out.append(da if db == 1 else db)
    if in_place and tuple(out) != tuple(a):
        raise RuntimeError(f"output with shape {list(a)} doesn't match the broadcast shape "
                           f"{out}")
    return tuple(out)


def _check_bmm(batch, rows, other, first, second):
    """PyTorch's message (from bmm) when ``other`` does not multiply the ``rows``-long
    last axis: its axis ``first`` (the contracted one) must match."""
    if other.shape[first] != rows:
        b = math.prod(batch)
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{b}, {rows}] but got: [{b}, {other.shape[first]}].")
    return other.shape[second]


def _check_attention_inputs(query, key, value, attn_mask, dropout_p, is_causal):
    """PyTorch's checks of ``scaled_dot_product_attention``'s arguments, in its order."""
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {_c_dtype(query.dtype)} key.dtype: "
                           f"{_c_dtype(key.dtype)} and value.dtype: {_c_dtype(value.dtype)} "
                           f"instead.")
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, "
                           f"but got query.dim: {query.ndim} key.dim: {key.ndim} and "
                           f"value.dim: {value.ndim} instead.")
    if attn_mask is not None and attn_mask.dtype not in (dtypes.bool_, dtypes.float32,
                                                         query.dtype):
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                           f"dtype, but got attn_mask.dtype: {_c_dtype(attn_mask.dtype)} and "
                           f" query.dtype: {_c_dtype(query.dtype)} instead.")
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                           "set when is_causal=True")
    if dropout_p > 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got "
                           f"{dropout_p}")
    if not query.dtype.is_floating_point:
        raise RuntimeError(f"expected scalar type Float but found "
                           f"{dtypes.torch_name(query.dtype)}")


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """``softmax(query @ key^T * scale + bias) @ value`` over the last two dimensions
    (leading ones broadcast), as ``torch.nn.functional.scaled_dot_product_attention``:
    ``scale`` defaults to ``1 / sqrt(E)``; a boolean ``attn_mask`` says which keys each
    query may attend to (``True``: attend), a float one (``query``'s dtype or float32)
    is added; ``is_causal`` masks the keys after each query (top-left aligned);
    ``dropout_p`` drops attention weights (from gradcore's generator); ``enable_gqa``
    repeats the key/value heads to the query's. A query whose mask leaves it no key gets
    zeros (and zero gradients), as PyTorch's math path gives, not NaN. Two matmuls around
    one node for the scale, mask and softmax (``SafeSoftmaxBackward0``: on a CUDA device
    one kernel launch forward and one backward); differentiable to any order.

    >>> import gradcore as gc
    >>> q = k = v = gc.eye(2).reshape(1, 2, 2)
    >>> scaled_dot_product_attention(q, k, v, is_causal=True)
    tensor([[[1.0000, 0.0000],
             [0.3302, 0.6698]]])
    """
    _check_attention_inputs(query, key, value, attn_mask, dropout_p, is_causal)
    n_q, n_k = query.shape[-2], key.shape[-2]
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    if enable_gqa and query.ndim >= 3:
        heads = query.shape[-3]
        if key.ndim < 3 or value.ndim < 3 or heads % key.shape[-3] or heads % value.shape[-3]:
            raise RuntimeError("Number of heads in key and value must divide the number of "
                               "heads in query")
        if key.shape[-3] != heads:
            key = key.repeat_interleave(heads // key.shape[-3], dim=-3)
        if value.shape[-3] != heads:
            value = value.repeat_interleave(heads // value.shape[-3], dim=-3)
    batch = _broadcast_shapes(tuple(query.shape[:-2]), tuple(key.shape[:-2]))
    _check_bmm(batch, query.shape[-1], key, -1, -2)
    scores_shape = batch + (n_q, n_k)
    if attn_mask is not None:
        _broadcast_shapes(scores_shape, tuple(attn_mask.shape), in_place=True)
    _check_bmm(_broadcast_shapes(batch, tuple(value.shape[:-2])), n_k, value, -2, -1)
    scores = query @ key.transpose(-2, -1)
    bias = None  # (in the scores' dtype: float16 under autocast, the mask too, as PyTorch)
    if attn_mask is not None:
        if attn_mask.dtype == dtypes.bool_:  # 0 where attended, -inf elsewhere
            md = attn_mask._data
            fill = np.dtype(scores._data.dtype).type
            bias = wrap(math_of(md).where(md, fill(0), fill(-np.inf)).astype(fill, copy=False))
        else:
            bias = attn_mask.to(scores.dtype)
    weights = _act.attention_softmax(scores, bias, factor, is_causal)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True)
    return weights @ value


__all__ += ["scaled_dot_product_attention", "multi_head_attention_forward"]


# ---- multi-head attention ----------
def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """PyTorch's checks of the inputs' dimensions; whether the query is batched."""
    if query.ndim == 3:
        if key.ndim != 3 or value.ndim != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be "
                                 f"3-D but found {key.ndim}-D and {value.ndim}-D tensors "
                                 f"respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be "
                                 f"`None` or 2-D but found {key_padding_mask.ndim}-D tensor "
                                 f"instead")
        if attn_mask is not None and attn_mask.ndim not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be "
                                 f"`None`, 2-D or 3-D but found {attn_mask.ndim}-D tensor "
                                 f"instead")
        return True
    if query.ndim == 2:
        if key.ndim != 2 or value.ndim != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to "
                                 f"be 2-D but found {key.ndim}-D and {value.ndim}-D tensors "
                                 f"respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to "
                                 f"be `None` or 1-D but found {key_padding_mask.ndim}-D tensor "
                                 f"instead")
        if attn_mask is not None:
            if attn_mask.ndim not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be "
                                     f"`None`, 2-D or 3-D but found {attn_mask.ndim}-D tensor "
                                     f"instead")
            expected = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.ndim == 3 and tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                     f"{attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                         f"{query.ndim}-D query tensor")


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """PyTorch's reading of an attention mask: a boolean one (``True``: not attended)
    becomes an additive float mask of ``target_type`` (``-inf`` where ``True``), a float
    one is kept; a mask of another dtype than ``other_type`` warns (PyTorch's
    deprecation)."""
    if mask is None:
        return None
    if mask.dtype != dtypes.bool_ and not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. "
                      "Use same type for both instead.", stacklevel=3)
    if mask.dtype == dtypes.bool_:
        mask = creation.zeros(tuple(mask.shape), dtype=target_type,
                              device=mask.device).masked_fill(mask, float("-inf"))
    return mask


def _in_projection_packed(q, k, v, w, b=None):
    """The query, key and value projections by one packed ``(3E, E)`` weight; one matmul
    where query, key and value are the same tensor (self-attention), as PyTorch."""
    e = q.shape[-1]
    if k is v:
        if q is k:
            proj = linear(q, w, b).unflatten(-1, (3, e))
            return proj[..., 0, :], proj[..., 1, :], proj[..., 2, :]
        w_q, w_kv = w.split([e, 2 * e])
        b_q, b_kv = (None, None) if b is None else b.split([e, 2 * e])
        kv = linear(k, w_kv, b_kv).unflatten(-1, (2, e))
        return linear(q, w_q, b_q), kv[..., 0, :], kv[..., 1, :]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    """Three projections by separate weights (PyTorch's shape checks)."""
    eq, ek, ev = q.shape[-1], k.shape[-1], v.shape[-1]
    for what, w, shape in (("query", w_q, (eq, eq)), ("key", w_k, (eq, ek)),
                           ("value", w_v, (eq, ev))):
        if tuple(w.shape) != shape:
            raise AssertionError(f"expecting {what} weights shape of {shape}, but got "
                                 f"{w.shape}")
    for what, bias in (("query", b_q), ("key", b_k), ("value", b_v)):
        if bias is not None and tuple(bias.shape) != (eq,):
            raise AssertionError(f"expecting {what} bias shape of {(eq,)}, but got "
                                 f"{bias.shape}")
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """The computation of :class:`gradcore.nn.MultiheadAttention` from its weights
    (PyTorch's ``F.multi_head_attention_forward``, argument for argument): ``query``
    ``(L, N, E)``, ``key``/``value`` ``(S, N, E_k/E_v)`` or unbatched ``(L, E)``;
    ``key_padding_mask`` ``(N, S)`` and ``attn_mask`` ``(L, S)`` or ``(N * num_heads, L,
    S)`` mark with ``True`` what is *not* attended, float masks are added; ``static_k``/
    ``static_v`` ``(N * num_heads, S, E / num_heads)`` replace the projected keys/values.
    Returns the output and, with ``need_weights``, the attention weights (averaged over
    the heads with ``average_attn_weights``), else ``None``. Without ``need_weights`` the
    attention is :func:`scaled_dot_product_attention`'s (a query with no key left gets
    zeros); with it, a plain softmax (NaN there, as PyTorch).

    >>> import gradcore as gc
    >>> mha = gc.nn.MultiheadAttention(4, 2)
    >>> x = gc.randn(3, 1, 4)
    >>> out, w = multi_head_attention_forward(
    ...     x, x, x, 4, 2, mha.in_proj_weight, mha.in_proj_bias, None, None, False, 0.0,
    ...     mha.out_proj.weight, mha.out_proj.bias)
    >>> out.shape, w.shape
    (gradcore.Size([3, 1, 4]), gradcore.Size([1, 3, 3]))
    """
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = _unsqueeze_keeping_identity(query, key, value, 1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       None if attn_mask is None else attn_mask.dtype,
                                       "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # (the hint alone: scaled_dot_product_attention's is_causal)
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    check_other=False)
        if key_padding_mask is not None:
            is_causal = False  # (the merged mask is not causal any more)
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match "
                                 f"value's {value.shape[:2]}")
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")

    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight "
                                     f"is None")
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight,
                                 v_proj_weight, b_q, b_k, b_v)

    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.ndim == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")

    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = _cat([k, bias_k.repeat(1, bsz, 1)], 0)
        v = _cat([v, bias_v.repeat(1, bsz, 1)], 0)
        attn_mask = None if attn_mask is None else pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else pad(key_padding_mask, (0, 1))
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")

    # (L, N, E) -> (N * H, L, D)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = _heads_first(k, static_k, "static_k", bsz * num_heads, head_dim)
    v = _heads_first(v, static_v, "static_v", bsz * num_heads, head_dim)
    if add_zero_attn:
        zeros = (bsz * num_heads, 1, head_dim)
        k = _cat([k, creation.zeros(zeros, dtype=k.dtype, device=k.device)], 1)
        v = _cat([v, creation.zeros(zeros, dtype=v.dtype, device=v.device)], 1)
        attn_mask = None if attn_mask is None else pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else pad(key_padding_mask, (0, 1))
    src_len = k.shape[1]

    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        key_padding_mask = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(
            -1, num_heads, -1, -1).reshape(bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0

    if need_weights:
        q_scaled = q * math.sqrt(1.0 / float(head_dim))
        if is_causal and attn_mask is None:
            raise AssertionError("FIXME: is_causal not implemented for need_weights")
        weights = q_scaled @ k.transpose(-2, -1)
        if attn_mask is not None:
            weights = attn_mask + weights
        weights = softmax(weights, dim=-1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = (weights @ v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights

    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.ndim == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if not is_batched:
        out = out.squeeze(1)
    return out, None


def _unsqueeze_keeping_identity(query, key, value, dim):
    """``query``, ``key`` and ``value`` unsqueezed at ``dim``, one new tensor for each
    distinct one (the projections take one matmul for self-attention: ``q is k is v``)."""
    return _keeping_identity(lambda t: t.unsqueeze(dim), query, key, value)


def _transpose_keeping_identity(query, key, value):
    """``query``, ``key`` and ``value`` with their first two axes swapped, keeping which
    of them are the same tensor (``MultiheadAttention`` with ``batch_first``)."""
    return _keeping_identity(lambda t: t.transpose(1, 0), query, key, value)


def _keeping_identity(fn, query, key, value):
    new_query = fn(query)
    new_key = new_query if key is query else fn(key)
    new_value = new_key if value is key else new_query if value is query else fn(value)
    return new_query, new_key, new_value


def _heads_first(x, static, name, batch_heads, head_dim):
    """Projected keys or values ``(S, N, E)`` as ``(N * H, S, D)``, or ``static`` (checked)
    in their place."""
    if static is None:
        return x.reshape(x.shape[0], batch_heads, head_dim).transpose(0, 1)
    if static.shape[0] != batch_heads:
        raise AssertionError(f"expecting {name}.size(0) of {batch_heads}, but got "
                             f"{static.shape[0]}")
    if static.shape[2] != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got "
                             f"{static.shape[2]}")
    return static



# ---- resampling ----------
_INTERPOLATING = ("linear", "bilinear", "bicubic", "trilinear")


def _source_scale(n_in, n_out, align_corners, scale):
    """PyTorch's ``area_pixel_compute_scale``: input pixels per output pixel."""
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else n_in / n_out


_CUBIC_A = -0.75  # PyTorch's bicubic coefficient


def _cubic_weights(t):
    """The four weights of PyTorch's cubic convolution (A = -0.75) at fraction ``t``,
    for the neighbours at offsets -1, 0, 1, 2."""
    a = _CUBIC_A

    def near(u):  # |u| <= 1
        return ((a + 2) * u - (a + 3)) * u * u + 1

    def far(u):  # 1 < |u| < 2
        return ((a * u - 5 * a) * u + 8 * a) * u - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _resample_axis(x, axis, n_out, mode, align_corners, scale):
    """``x`` resampled along ``axis`` to ``n_out`` points: nearest or nearest-exact (a
    gather), linear (two gathers, weighted) or cubic (four): differentiable through
    index_select. As PyTorch's CPU kernels: an axis kept at its size is left as it is
    (whatever ``scale`` says), nearest doubling an axis takes ``i // 2``, and the nearest
    sources are ``floor(i * s)`` (nearest-exact: ``floor((i + 0.5) * s)``) computed in
    float32."""
    n_in = x.shape[axis]
    if n_out == n_in:
        return x
    m = math_of(x._data)
    s = _source_scale(n_in, n_out, align_corners, scale)
    dst = np.arange(n_out, dtype=np.float64)
    if mode in ("nearest", "nearest-exact"):
        if mode == "nearest" and n_out == 2 * n_in:
            src = np.arange(n_out, dtype=np.int64) // 2
        else:
            at = dst.astype(np.float32) + np.float32(0.5 if mode == "nearest-exact" else 0)
            src = np.floor(at * np.float32(s)).astype(np.int64)
            src = np.minimum(src, n_in - 1)
        return x.index_select(axis, wrap(m.asarray(src)))
    cubic = mode == "bicubic"
    if align_corners:
        pos = dst * s
    else:  # (cubic: no clamping at 0, as PyTorch)
        pos = (dst + 0.5) * s - 0.5
        if not cubic:
            pos = np.maximum(pos, 0.0)
    shape = [1] * x.ndim
    shape[axis] = n_out
    if cubic:
        i0 = np.floor(pos).astype(np.int64)
        t = pos - i0
        out = None
        for k, w in zip(range(-1, 3), _cubic_weights(t)):
            src = np.clip(i0 + k, 0, n_in - 1)
            term = x.index_select(axis, wrap(m.asarray(src))) * \
                wrap(m.asarray(w.astype(x._data.dtype).reshape(shape)))
            out = term if out is None else out + term
        return out
    i0 = np.minimum(np.floor(pos).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    lam = (pos - i0).astype(x._data.dtype)
    w1 = wrap(m.asarray(lam.reshape(shape)))
    w0 = wrap(m.asarray((1 - lam).reshape(shape)))
    return (x.index_select(axis, wrap(m.asarray(i0))) * w0 +
            x.index_select(axis, wrap(m.asarray(i1))) * w1)


_INTERPOLATE_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area",
                      "nearest-exact")


def interpolate(input, size=None, scale_factor=None, mode="nearest",  # noqa: A002
                align_corners=None, recompute_scale_factor=None, antialias=False):
    """Resample the spatial dimensions of ``(N, C, L)``, ``(N, C, H, W)`` or
    ``(N, C, D, H, W)`` to ``size`` or by ``scale_factor``: ``mode`` ``'nearest'``
    (PyTorch's: the source pixel ``floor(i * scale)``), ``'nearest-exact'``
    (``floor((i + 0.5) * scale)``), ``'linear'`` (3-D), ``'bilinear'`` (4-D),
    ``'bicubic'`` (4-D, PyTorch's cubic convolution, A = -0.75), ``'trilinear'`` (5-D)
    with ``align_corners`` as PyTorch, or ``'area'`` (adaptive average pooling).
    Differentiable (gathers and weighted sums, the last axis first as PyTorch's kernels
    sum)."""
    if mode not in _INTERPOLATE_MODES:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
            f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
            f"nearest-exact (got {mode})")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if mode in ("nearest", "area", "nearest-exact") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating "
                         "modes: linear | bilinear | bicubic | trilinear")
    dims = input.ndim - 2
    need = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}.get(mode)
    if need is not None and dims != need:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs "
                                  f"{need + 2}D input")
    if dims not in (1, 2, 3):
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
            f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
            f"nearest-exact (got {mode})")
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined" if size is not None
                         else "either size or scale_factor should be defined")
    if size is not None:
        sizes = tuple(size) if isinstance(size, (tuple, list)) else (size,) * dims
        scales = (None,) * dims
    else:
        scales = tuple(scale_factor) if isinstance(scale_factor, (tuple, list)) else \
            (scale_factor,) * dims
        sizes = tuple(int(math.floor(n * float(f))) for n, f in zip(input.shape[2:], scales))
        if recompute_scale_factor:
            scales = (None,) * dims
    if len(sizes) != dims:
        raise ValueError(f"Input and output must have the same number of spatial dimensions, "
                         f"but got input with spatial dimensions of {list(input.shape[2:])} "
                         f"and output size of {list(sizes)}.")
    if mode == "area":
        if dims == 3:
            raise NotImplementedError("interpolate: mode 'area' of a 5-D input is not "
                                      "supported (3-D and 4-D)")
        pool = adaptive_avg_pool1d if dims == 1 else adaptive_avg_pool2d
        return pool(input, tuple(int(n) for n in sizes) if dims == 2 else int(sizes[0]))
    y = input
    for i in reversed(range(dims)):  # (the last axis first, as PyTorch's kernels sum)
        y = _resample_axis(y, 2 + i, int(sizes[i]), mode, bool(align_corners), scales[i])
    return input.clone() if y is input else y


__all__ += ["interpolate"]


# ---- thresholds, random slopes, bilinear maps, RMS and local response normalization ------
def threshold(input, threshold, value, inplace=False):  # noqa: A002
    """``input`` where ``input > threshold``, else ``value``; one ``ThresholdBackward0``
    node (no gradient where ``input <= threshold``).

    >>> import gradcore as gc, gradcore.nn.functional as F
    >>> F.threshold(gc.tensor([-1.0, 0.5, 2.0]), 0.5, 9.0)
    tensor([9., 9., 2.])
    """
    return _maybe_inplace(_act.threshold, input, inplace, "threshold_", threshold, value)


def threshold_(input, threshold, value):  # noqa: A002
    """In-place :func:`threshold`."""
    return apply_inplace(input, "threshold_", _act.threshold, threshold, value)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):  # noqa: A002
    """Randomized leaky ReLU: in training ``input * a`` where ``input <= 0``, with ``a``
    drawn uniformly from ``[lower, upper)`` for each element (gradcore's generator);
    outside training the leaky ReLU of slope ``(lower + upper) / 2``."""
    return _rrelu(input, lower, upper, training, inplace, None)


def _rrelu(input, lower, upper, training, inplace, generator):  # noqa: A002
    """:func:`rrelu` drawing its slopes from ``generator`` (None: the default one), for
    ``gc.rrelu(..., generator=)``."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"rrelu_with_noise_out_{input.device.type}" not implemented '
                                  f"for '{_act._torch_type(input._data.dtype)}'")
    # a slope per element, uniform in [lower, upper), used where input <= 0
    with no_grad():
        slopes = creation.empty(tuple(input.shape), dtype=input.dtype,
                                device=input.device).uniform_(lower, upper,
                                                              generator=generator)
        noise = _pw.where(_pw.le(input, 0), slopes, creation.ones_like(slopes))
    return input.mul_(noise) if inplace else _pw.mul(input, noise)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):  # noqa: A002
    """In-place :func:`rrelu`."""
    return rrelu(input, lower, upper, training, inplace=True)


def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``
    over matching leading dimensions.

    >>> import gradcore as gc, gradcore.nn.functional as F
    >>> F.bilinear(gc.tensor([[1.0, 2.0]]), gc.tensor([[3.0]]), gc.ones(1, 2, 1))
    tensor([[9.]])
    """
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and "
                           f"{input2.ndim}")
    for i in range(input1.ndim - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: "
                               f"got {input1.shape[i]} and {input2.shape[i]}")
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be three-dimensional, but got "
                           f"{weight.ndim} dimensions")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {weight.shape[2]}")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias.shape[-1] if bias.ndim else 1} but expected "
                           f"{weight.shape[0]}")
    n_out, n1, n2 = weight.shape
    lead = tuple(input1.shape[:-1])
    # (x1 @ W laid out (i, o * j)), then the products with x2 summed over j
    w = weight.permute(1, 0, 2).reshape(n1, n_out * n2)
    t = _pw.mul(input1.reshape(-1, n1).matmul(w).reshape(*lead, n_out, n2),
                input2.unsqueeze(-2))
    y = _red.sum(t, -1)
    return y if bias is None else _pw.add(y, bias)


def _normalized_dims(input, normalized_shape, op):
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else \
        tuple(int(n) for n in normalized_shape)
    if not ns:
        raise RuntimeError(f"Expected normalized_shape to be at least 1-dimensional, i.e., "
                           f"containing at least one element, but got normalized_shape = "
                           f"{list(ns)}")
    if input.ndim < len(ns) or tuple(input.shape[input.ndim - len(ns):]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*{', '.join(str(n) for n in ns)}], but got input of size"
                           f"{list(input.shape)}")
    return ns, tuple(range(input.ndim - len(ns), input.ndim))


def rms_norm(input, normalized_shape, weight=None, eps=None):  # noqa: A002
    """Root mean square normalization over the trailing ``normalized_shape`` dimensions:
    ``input / sqrt(mean(input^2) + eps) * weight``; ``eps=None`` is the machine epsilon
    of the input's dtype (``finfo(dtype).eps``). float16 is computed in float32.

    >>> import gradcore as gc, gradcore.nn.functional as F
    >>> F.rms_norm(gc.tensor([[3.0, 4.0]]), (2,), eps=0.0)
    tensor([[0.8485, 1.1314]])
    """
    ns, dims = _normalized_dims(input, normalized_shape, "rms_norm")
    if weight is not None and tuple(weight.shape) != ns:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but "
                           f"got weight of shape {list(weight.shape)} and normalized_shape = "
                           f"{list(ns)}")
    if eps is None:
        eps = float(np.finfo(input._data.dtype).eps) if input.dtype.is_floating_point else \
            float(np.finfo(np.float32).eps)
    up = input.float() if input.dtype == dtypes.float16 else input
    y = _pw.mul(up, _pw.rsqrt(_pw.add(_red.mean(_pw.mul(up, up), dims, True), eps)))
    y = y.to(dtype=input.dtype)
    return y if weight is None else _pw.mul(y, weight)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):  # noqa: A002
    """Each element divided by ``(k + alpha / size * sum of squares)^beta``, the sum over
    the ``size`` neighbouring channels (dimension 1, zeros past the ends), as PyTorch
    composes it (a padded average pool of the squares)."""
    dim = input.ndim
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          "
                         f"input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = _pw.mul(input, input)
    if dim == 3:
        div = pad(div.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = tuple(input.shape)
        div = div.reshape(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1).reshape(sizes)
    div = _pw.pow(_pw.add(_pw.mul(div, alpha), k), beta)
    return _pw.div(input, div)


__all__ += ["threshold", "threshold_", "rrelu", "rrelu_", "bilinear", "rms_norm",
            "local_response_norm"]


# ---- rearranging channels: pixel shuffles (one node each: ops/shape.py), channel shuffle
from ..ops.shape import pixel_shuffle, pixel_unshuffle  # noqa: E402


def channel_shuffle(input, groups):  # noqa: A002
    """The channels (dimension 1) of ``(N, C, *)`` as ``groups`` groups, interleaved:
    channel ``g * (C // groups) + i`` moves to ``i * groups + g``.

    >>> import gradcore as gc, gradcore.nn.functional as F
    >>> F.channel_shuffle(gc.arange(4.0).reshape(1, 4, 1), 2).flatten()
    tensor([0., 2., 1., 3.])
    """
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    g = int(groups)
    if g <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value "
                           f"of groups:{g}")
    n, c, *rest = input.shape
    if c % g:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {g} groups.")
    x = input.reshape(n, g, c // g, *rest).transpose(1, 2)
    return x.reshape(n, c, *rest)


__all__ += ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle"]


# ---- more losses: Gaussian and Poisson likelihoods, hinge and margin losses ----------
def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):  # noqa: A002
    """The Gaussian negative log likelihood ``0.5 * (log(var) + (input - target)^2 / var)``
    (plus ``0.5 * log(2 pi)`` when ``full``), ``var`` clamped to ``eps`` without gradient
    from the clamp. ``var`` has the input's shape, or one dimension less, or one
    dimension of size 1 (one variance shared), or is a number.

    >>> import gradcore as gc, gradcore.nn.functional as F
    >>> F.gaussian_nll_loss(gc.tensor([1.0, 2.0]), gc.tensor([1.0, 4.0]), gc.tensor([1.0, 2.0]))
    tensor(0.6733)
    """
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = _pw.mul(creation.ones_like(input), float(var))
    elif bool(_red.any(_pw.lt(var, 0))):
        raise ValueError("var has negative entry/entries")
    vshape, ishape = tuple(var.shape), tuple(input.shape)
    if vshape != ishape:
        if ishape[:-1] == vshape:
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and
                  sum(y for x, y in zip(ishape, vshape) if x != y) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    loss = _pw.mul(_pw.add(_pw.log(var), _pw.div(_pw.pow(_pw.sub(input, target), 2), var)), 0.5)
    if full:
        loss = _pw.add(loss, 0.5 * math.log(2 * math.pi))
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None,  # noqa: A002
                     eps=1e-8, reduce=None, reduction="mean"):
    """The Poisson negative log likelihood: ``exp(input) - target * input`` when
    ``log_input``, else ``input - target * log(input + eps)``; ``full`` adds Stirling's
    ``target * log(target) - target + 0.5 * log(2 pi target)`` where ``target > 1``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = _pw.sub(_pw.exp(input), _pw.mul(target, input))
    else:
        loss = _pw.sub(input, _pw.mul(target, _pw.log(_pw.add(input, eps))))
    if full:
        stirling = _pw.add(_pw.sub(_pw.mul(target, _pw.log(target)), target),
                           _pw.mul(_pw.log(_pw.mul(target, 2 * math.pi)), 0.5))
        loss = _pw.add(loss, stirling.masked_fill(_pw.le(target, 1), 0))
    return _reduce(loss, reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,  # noqa: A002
                         reduction="mean"):
    """``input`` where ``target`` is 1, ``max(0, margin - input)`` where it is -1 (both
    terms where it is neither, as PyTorch computes it), reduced."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    zeros = creation.zeros_like(input)
    margin_clamp = _pw.clamp(_pw.sub(margin, input), min=0)
    loss = _pw.add(_pw.where(_pw.ne(target, 1), margin_clamp, zeros),
                   _pw.where(_pw.ne(target, -1), input, zeros))
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,  # noqa: A002
                      reduce=None, reduction="mean"):
    """The multi-class hinge loss of ``(N, C)`` (or ``(C,)``) scores and class indices:
    ``sum_{i != y} max(0, margin - x[y] + x[i])^p / C`` per sample (``p`` 1 or 2;
    ``weight[y]`` weighs each term), reduced over the batch."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    check_reduction(reduction)
    nd = input.ndim
    if nd > 2 or input.numel() == 0 and not (nd == 2 and input.shape[0] == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    nframe = 1 if nd <= 1 else input.shape[0]
    c = 1 if nd == 0 else input.shape[-1]
    if target.ndim > 1 or target.numel() != nframe:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal "
                           f"to the number of input samples (batch size). Expected target "
                           f"size [{nframe}], but got {list(target.shape)}. Input has shape "
                           f"{list(input.shape)}.")
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"inconsistent weight size, expected {c} but got "
                           f"{list(weight.shape)}")
    t = target.reshape(-1)
    # (on a device, an index out of range is reported at the next read)
    check_range(t._data, 0, c, lambda _v: RuntimeError("target out of range"))
    x = input.reshape(nframe, c)
    idx = t.reshape(-1, 1)
    z = _pw.clamp(_pw.add(_pw.sub(margin, x.gather(1, idx)), x), min=0)
    if p == 2:
        z = _pw.mul(z, z)
    if weight is not None:
        z = _pw.mul(z, weight.index_select(0, t).unsqueeze(1))
    own = _pw.eq(idx, creation.arange(c, device=input.device))
    loss = _pw.div(_red.sum(z.masked_fill(own, 0), 1), c)
    if reduction == "none":
        return loss if target.ndim else loss.reshape(())
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None,  # noqa: A002
                           reduction="mean"):
    """The multi-label hinge loss: per sample, ``target`` lists its classes (up to the
    first -1), and the loss is ``sum_{j listed} sum_{i not listed} max(0, 1 - (x[j] -
    x[i])) / C``, reduced over the batch."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    nd = input.ndim
    if nd > 2 or input.numel() == 0 and not (nd == 2 and input.shape[0] == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of "
                           f"size: {list(input.shape)}")
    nframe = 1 if nd <= 1 else input.shape[0]
    c = 1 if nd == 0 else input.shape[-1]
    t = target.reshape(nframe, c)
    check_range(t._data, -1, c, lambda _v: RuntimeError("argument #2 'target' is out of "
                                                         "range"))
    with no_grad():  # how often each class is listed (up to the first -1), on the device
        upto = _pw.ge(t, 0).to(dtype=input.dtype).cumprod(1)
        listed = creation.zeros((nframe, c), dtype=input.dtype, device=input.device)
        listed = listed.scatter_add(1, _pw.clamp(t, min=0), upto)
        other = _pw.eq(listed, 0).to(dtype=input.dtype)
        pairs = _pw.mul(listed.unsqueeze(2), other.unsqueeze(1))
    x = input.reshape(nframe, c)
    hinge = _pw.clamp(_pw.add(_pw.sub(1, x.unsqueeze(2)), x.unsqueeze(1)), min=0)
    loss = _pw.div(_red.sum(_pw.mul(hinge, pairs), (1, 2)), c)
    if reduction == "none":
        return loss if nd == 2 else loss.reshape(())
    return _reduce(loss, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """``max(0, margin + d(a, p) - d(a, n))`` reduced, ``d`` a function of two tensors
    (default :func:`pairwise_distance`); ``swap`` takes ``min(d(a, n), d(p, n))``."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    dims = (anchor.ndim, positive.ndim, negative.ndim)
    if len(set(dims)) != 1:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {dims[0]}D, "
                           f"positive {dims[1]}D, and negative {dims[2]}D inputs")
    if distance_function is None:
        distance_function = pairwise_distance
    dist_pos = distance_function(anchor, positive)
    dist_neg = distance_function(anchor, negative)
    if swap:
        dist_neg = _pw.minimum(dist_neg, distance_function(positive, negative))
    loss = _pw.clamp(_pw.sub(_pw.add(dist_pos, margin), dist_neg), min=0)
    return _reduce(loss, reduction)


__all__ += ["gaussian_nll_loss", "poisson_nll_loss", "hinge_embedding_loss",
            "multi_margin_loss", "multilabel_margin_loss", "triplet_margin_with_distance_loss"]


# ---- alpha and 3-D channel dropout ----------
_SELU_NEG_SAT = 1.7580993408473766  # -SELU's negative saturation: scale * alpha


def _alpha_dropout(input, p, training, inplace, feature):  # noqa: A002
    """PyTorch's alpha dropout: dropped elements (whole channels when ``feature``) set to
    SELU's negative saturation, then an affine map keeping mean 0 and variance 1:
    ``a * (x * keep + alpha' * (1 - keep))`` written as PyTorch computes it,
    ``x * keep * a + (keep - 1) * alpha * a + alpha * a * p``."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p == 0.0 or not training or input.numel() == 0:
        return input
    if feature and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 1.0:
        zeros = creation.zeros_like(input)
        return input.mul_(zeros) if inplace else _pw.mul(input, zeros)
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2) if feature else \
        tuple(input.shape)
    keep = creation.empty(shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)
    a = 1.0 / math.sqrt((_SELU_NEG_SAT ** 2 * p + 1) * (1 - p))
    b = _pw.add(_pw.mul(_pw.sub(keep, 1), _SELU_NEG_SAT * a), _SELU_NEG_SAT * a * p)
    noise = _pw.mul(keep, a)
    if inplace:
        return input.mul_(noise).add_(b)
    return _pw.add(_pw.mul(input, noise), b)


def alpha_dropout(input, p=0.5, training=False, inplace=False):  # noqa: A002
    """Dropout for SELU networks: each element dropped with probability ``p`` to SELU's
    negative saturation, then scaled and shifted to keep a zero mean and unit variance.
    ``training`` is False by default, as in PyTorch."""
    return _alpha_dropout(input, p, training, inplace, feature=False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):  # noqa: A002
    """:func:`alpha_dropout` of whole channels (one draw per ``input.shape[:2]``)."""
    return _alpha_dropout(input, p, training, inplace, feature=True)


def dropout3d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zero whole channels of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` with probability
    ``p``, scaling the others by ``1 / (1 - p)``; other ranks warn as PyTorch does."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is "
                      "deprecated and will result in an error in a future release. To retain "
                      "the behavior and silence this warning, please use dropout instead. "
                      "Note that dropout3d exists to provide channel-wise dropout on inputs "
                      "with 3 spatial dimensions, a channel dimension, and an optional batch "
                      "dimension (i.e. 4D or 5D inputs).", stacklevel=2)
    if input.ndim == 5:
        return _feature_dropout(input, p, training, inplace)
    result = _feature_dropout(input.unsqueeze(0), p, training, inplace)
    return input if inplace else result.squeeze(0)


__all__ += ["alpha_dropout", "feature_alpha_dropout", "dropout3d"]


# ---- power-average pools, 3-D adaptive max pool and unpool, the *_with_indices names ------
adaptive_max_pool3d, max_unpool3d = _pool.adaptive_max_pool3d, _pool.max_unpool3d


def _lp_pool(nd, pool, input, norm_type, kernel_size, stride, ceil_mode):  # noqa: A002
    if norm_type == float("inf"):
        return _max_pool_of(nd)(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return _pw.neg(_max_pool_of(nd)(_pw.neg(input.abs()), kernel_size, stride, 0, 1,
                                    ceil_mode))
    k = (kernel_size,) * nd if isinstance(kernel_size, int) else tuple(kernel_size)
    if stride is not None:
        out = pool(_pw.pow(input, norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = pool(_pw.pow(input, norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return _pw.pow(_pw.mul(_pw.mul(_pw.sign(out), _pw.relu(_pw.abs(out))), math.prod(k)),
                   1.0 / norm_type)


def _max_pool_of(nd):
    return {1: max_pool1d, 2: max_pool2d, 3: max_pool3d}[nd]


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    """Power-average pooling over ``(N, C, L)``: ``(sum of x^p over each window)^(1/p)``
    (``p = norm_type``; ``inf`` is max pooling of ``|x|``), computed as PyTorch does from
    an average pool (no padding)."""
    return _lp_pool(1, avg_pool1d, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    """:func:`lp_pool1d` over ``(N, C, H, W)``: ``kernel_size`` and ``stride`` an int or
    a pair."""
    return _lp_pool(2, avg_pool2d, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    """:func:`lp_pool1d` over ``(N, C, D, H, W)``: ``kernel_size`` and ``stride`` an int
    or a triple."""
    return _lp_pool(3, avg_pool3d, input, norm_type, kernel_size, stride, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
                            ceil_mode=False, return_indices=False):
    """:func:`max_pool1d` returning ``(values, indices)`` whatever ``return_indices``."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
                            ceil_mode=False, return_indices=False):
    """:func:`max_pool2d` returning ``(values, indices)`` whatever ``return_indices``."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
                            ceil_mode=False, return_indices=False):
    """:func:`max_pool3d` returning ``(values, indices)`` whatever ``return_indices``."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):  # noqa: A002
    """:func:`adaptive_max_pool1d` returning ``(values, indices)``."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):  # noqa: A002
    """:func:`adaptive_max_pool2d` returning ``(values, indices)``."""
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):  # noqa: A002
    """:func:`adaptive_max_pool3d` returning ``(values, indices)``."""
    return adaptive_max_pool3d(input, output_size, True)


__all__ += ["lp_pool1d", "lp_pool2d", "lp_pool3d", "adaptive_max_pool3d", "max_unpool3d",
            "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
            "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
            "adaptive_max_pool3d_with_indices"]


# ---- sampling and distances: gumbel_softmax, pdist ----------
def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """A sample of the Gumbel-softmax distribution: ``softmax((logits + g) / tau, dim)``
    with ``g`` standard Gumbel noise from gradcore's generator; ``hard`` returns the
    one-hot of its maximum, differentiated as the soft sample (straight-through). ``eps``
    is deprecated and unused (a warning when given)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    with no_grad():
        gumbels = _pw.neg(_pw.log(creation.empty_like(logits).exponential_()))
    y_soft = softmax(_pw.div(_pw.add(logits, gumbels), tau), dim)
    if not hard:
        return y_soft
    index = _red.max(y_soft, dim, keepdim=True)[1]
    y_hard = creation.zeros_like(logits).scatter_(dim, index, 1.0)
    return _pw.add(_pw.sub(y_hard, y_soft.detach()), y_soft)


def pdist(input, p=2):  # noqa: A002
    """The ``p``-norm distances between the rows of an ``(N, M)`` input, each pair
    ``i < j`` once, in row-major order: ``N * (N - 1) / 2`` values.

    >>> import gradcore as gc, gradcore.nn.functional as F
    >>> F.pdist(gc.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]]))
    tensor([5.0000, 1.0000, 4.2426])
    """
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    m = math_of(input._data)
    if i.size == 0:
        return creation.zeros(0, dtype=input.dtype, device=input.device)
    diff = _pw.sub(input.index_select(0, wrap(m.asarray(i))),
                   input.index_select(0, wrap(m.asarray(j))))
    return _red.norm(diff, p, 1)


__all__ += ["gumbel_softmax", "pdist"]


# ---- deprecated spellings of interpolate ----------
def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):  # noqa: A002
    """Deprecated: :func:`interpolate` (with PyTorch's warning)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):  # noqa: A002
    """Deprecated: :func:`interpolate` with ``mode='nearest'`` (with PyTorch's warning)."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):  # noqa: A002
    """Deprecated: :func:`interpolate` with ``mode='bilinear'`` and
    ``align_corners=True`` (with PyTorch's warning)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


__all__ += ["upsample", "upsample_nearest", "upsample_bilinear"]


# ---- bags of embeddings ----------
def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,  # noqa: A002
                  scale_grad_by_freq=False, mode="mean", sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of embedding rows without the rows in between: a
    2-D ``input`` is one bag per row; a 1-D one is cut into bags at ``offsets`` (their
    starts; with ``include_last_offset`` the last one is the end). ``per_sample_weights``
    weighs each row (``mode='sum'`` only); entries equal to ``padding_idx`` are left out
    (and not counted in the mean); an empty bag gives zeros.

    >>> import gradcore as gc, gradcore.nn.functional as F
    >>> w = gc.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> F.embedding_bag(gc.tensor([0, 1, 2]), w, gc.tensor([0, 2]), mode="sum")
    tensor([[4., 6.],
            [5., 6.]])
    """
    if weight.dtype == dtypes.int64 and input.dtype.is_floating_point:
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) "
                         f"is not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is "
                             f"treated is a mini-batch of fixed length sequences. However, "
                             f"found offsets of type {type(offsets)}")
        starts = np.arange(0, input.numel(), input.shape[1]) if input.shape[1] else \
            np.zeros(input.shape[0], np.int64)
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        starts = None
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    elif mode not in ("sum", "mean"):
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' "
                                  f"(got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    if input._data.dtype.kind not in "iu":
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got "
                           f"torch.{_act._torch_type(input._data.dtype)}Tensor instead "
                           f"(while checking arguments for embedding_bag)")
    num = weight.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, "
                               f"{-num} through {num - 1}, but got {padding_idx}")
        padding_idx %= num
    # on the device: each entry's bag found by a search of the bags' starts, the sums by
    # an index add (an extra last bag takes what no bag holds), nothing read back
    k = input.numel()
    dev = weight.device
    if starts is None:
        offs = offsets.reshape(-1).to(dtype=dtypes.int64)
        n_off = offs.numel()
        if n_off:  # (checked with the other index checks: at the next read on a device)
            check_range(offs._data[:1], 0, 1, lambda v: RuntimeError(
                f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to "
                f"start from position 0. However, got {v}"))
        if include_last_offset:
            if n_off == 0:
                raise RuntimeError("include_last_offset: number of offsets should be at "
                                   "least 1")
            bounds = offs
        else:
            bounds = _cat([offs, creation.full((1,), k, dtype=dtypes.int64, device=dev)], 0)
    else:
        bounds = wrap(math_of(weight._data).asarray(np.append(starts, k).astype(np.int64)))
    n_bags = bounds.numel() - 1
    check_range(input._data, 0, num, lambda v: IndexError(
        f"embedding_bag: index {v} is out of range for {num} embeddings"))
    with no_grad():
        pos = creation.arange(k, device=dev)
        bag = _pw.sub(searchsorted(bounds[:-1].contiguous(), pos, right=True), 1) \
            if n_bags else creation.full((k,), -1, dtype=dtypes.int64, device=dev)
        safe = bag.clamp(min=0)
        valid = _pw.logical_and(_pw.ge(bag, 0), _pw.lt(pos, bounds[1:].index_select(0, safe)
                                                       if n_bags else pos))
        if padding_idx is not None:
            valid = _pw.logical_and(valid, _pw.ne(input, padding_idx))
        bag = _pw.where(valid, bag, n_bags)  # (the extra bag)
    rows = embedding(input, weight, max_norm=max_norm, norm_type=norm_type,
                     scale_grad_by_freq=scale_grad_by_freq)
    if per_sample_weights is not None:
        rows = _pw.mul(rows, per_sample_weights.unsqueeze(1))
    d = weight.shape[1]
    out = creation.zeros((n_bags + 1, d), dtype=rows.dtype, device=dev)
    if mode == "max":
        out = out.scatter_reduce(0, bag.unsqueeze(1).expand(k, d), rows, "amax",
                                 include_self=False)
        return out[:n_bags]
    total = out.index_add(0, bag, rows)[:n_bags]
    if mode == "sum":
        return total
    with no_grad():
        counts = creation.zeros((n_bags + 1,), dtype=rows.dtype, device=dev).index_add(
            0, bag, creation.ones((k,), dtype=rows.dtype, device=dev))[:n_bags]
        scale = _pw.reciprocal(counts.clamp(min=1)).unsqueeze(1)
    return _pw.mul(total, scale)


__all__ += ["embedding_bag"]


# ---- spatial transformers: affine_grid, grid_sample ----------
_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the "
                  "old behavior is desired. See the documentation of grid_sample for details.")


def _linspace_from_neg_one(n, align_corners, dtype):
    """PyTorch's ``linspace(-1, 1, n)`` (its CPU kernel: the first half stepped from -1,
    the second back from 1), times ``(n - 1) / n`` unless ``align_corners``."""
    if n <= 1:
        return np.zeros(max(n, 1), dtype)
    step = 2.0 / (n - 1)
    i = np.arange(n)
    r = np.where(i < n // 2, -1.0 + step * i, 1.0 - step * (n - 1 - i)).astype(dtype)
    if not align_corners:
        r = r * dtype.type(n - 1) / dtype.type(n)
    return r


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of a batch of affine maps: for ``size`` ``(N, C, H, W)`` and
    ``theta`` ``(N, 2, 3)``, ``(N, H, W, 2)`` normalized ``(x, y)`` source coordinates
    (``(N, C, D, H, W)`` and ``(N, 3, 4)`` give ``(N, D, H, W, 3)``), the output's
    pixel centres (``align_corners=False``) or corners mapped through ``theta``; for
    :func:`grid_sample`. Differentiable in ``theta``."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) == 4:
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{size}. Got {theta.shape}.")
        spatial = tuple(size[-2:])
    elif len(size) == 5:
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{size}. Got {theta.shape}.")
        spatial = tuple(size[-3:])
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    dt = theta._data.dtype
    nd = len(spatial)
    base = np.ones(spatial + (nd + 1,), dt)
    for k in range(nd):  # x along the last axis, then y, then z
        axis = nd - 1 - k
        shape = [1] * nd
        shape[axis] = spatial[axis]
        base[..., k] = _linspace_from_neg_one(spatial[axis], align_corners, dt).reshape(shape)
    m = math_of(theta._data)
    n = size[0]
    b = wrap(m.asarray(np.broadcast_to(base.reshape(1, -1, nd + 1),
                                       (n, base.size // (nd + 1), nd + 1)).copy()))
    return b.bmm(theta.transpose(1, 2)).reshape(n, *spatial, nd)


def _reflect(c, twice_low, twice_high):
    """PyTorch's ``reflect_coordinates``: ``c`` folded into ``[low, high]``."""
    if twice_low == twice_high:
        return _pw.mul(c, 0)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    c = _pw.abs(_pw.sub(c, low))
    extra = c.fmod(span)
    with no_grad():
        even = _pw.eq(_pw.remainder(_pw.floor(_pw.div(c, span)), 2), 0)
    return _pw.where(even, _pw.add(extra, low), _pw.add(_pw.sub(span, extra), low))


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros",  # noqa: A002
                align_corners=None):
    """``input`` ``(N, C, H, W)`` (or ``(N, C, D, H, W)``) sampled at ``grid``'s
    normalized ``(x, y)`` (``(x, y, z)``) points, ``(N, H_out, W_out, 2)``: ``mode``
    ``'bilinear'`` (trilinear for 5-D) or ``'nearest'`` (half to even, as PyTorch
    rounds); ``padding_mode`` ``'zeros'``, ``'border'`` or ``'reflection'`` for points
    outside; ``align_corners`` as in :func:`affine_grid`. Differentiable in ``input``
    and, for bilinear, in ``grid`` (gathers and weighted sums)."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    nd = input.ndim - 2
    if grid.shape[-1] != nd:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nd} in last "
                           f"dimension, but got grid with sizes {list(grid.shape)}")
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise RuntimeError(f"grid_sampler(): expected {input.ndim}D input and grid with same "
                           f"number of dimensions, but got input with sizes "
                           f"{list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {_act._torch_type(input._data.dtype)} but "
                           f"found {_act._torch_type(grid._data.dtype)}")
    if mode == "bicubic":
        raise NotImplementedError("grid_sample: mode 'bicubic' is not supported (bilinear "
                                  "and nearest are)")
    n, c = input.shape[:2]
    sizes = tuple(input.shape[2:])
    out_sp = tuple(grid.shape[1:-1])
    coords = []  # per spatial axis of the input (grid's last entry is the first axis)
    for axis in range(nd):
        size = sizes[axis]
        g = grid[..., nd - 1 - axis]
        if align_corners:
            x = _pw.mul(_pw.div(_pw.add(g, 1), 2), size - 1)
        else:
            x = _pw.div(_pw.sub(_pw.mul(_pw.add(g, 1), size), 1), 2)
        if padding_mode == "reflection":
            x = _reflect(x, 0, 2 * (size - 1)) if align_corners else \
                _reflect(x, -1, 2 * size - 1)
        if padding_mode != "zeros":
            x = _pw.clamp(x, 0, size - 1)
        coords.append(x)
    strides = [math.prod(sizes[a + 1:]) for a in range(nd)]
    flat = input.reshape(n, c, -1)

    def gather(idx):  # the values at integer positions (a list per axis), 0 outside
        with no_grad():
            inside = None
            place = None
            for a, i in enumerate(idx):
                ok = _pw.logical_and(_pw.ge(i, 0), _pw.lt(i, sizes[a]))
                inside = ok if inside is None else _pw.logical_and(inside, ok)
                term = _pw.mul(_pw.clamp(i, 0, sizes[a] - 1), strides[a])
                place = term if place is None else _pw.add(place, term)
            place = place.to(dtype=dtypes.int64).reshape(n, 1, -1).expand(n, c, -1)
        return flat.gather(2, place).reshape(n, c, *out_sp), inside

    if mode == "nearest":
        with no_grad():
            idx = [_pw.round(x) for x in coords]
        vals, inside = gather(idx)
        return vals.masked_fill(_pw.logical_not(inside).unsqueeze(1), 0)
    with no_grad():
        lows = [_pw.floor(x) for x in coords]
    out = None
    for corner in np.ndindex(*(2,) * nd):  # (nw, ne, sw, se: PyTorch's order of the sum)
        idx = [_pw.add(lo, k) for lo, k in zip(lows, corner)]
        weight = None
        for x, lo, k in zip(coords, lows, corner):
            w = _pw.sub(x, lo) if k else _pw.sub(_pw.add(lo, 1), x)
            weight = w if weight is None else _pw.mul(weight, w)
        vals, inside = gather(idx)
        term = _pw.mul(vals, weight.masked_fill(_pw.logical_not(inside), 0).unsqueeze(1))
        out = term if out is None else _pw.add(out, term)
    return out


__all__ += ["affine_grid", "grid_sample"]


# ---- the CTC loss (gradcore.ops.ctc) ----------
from ..ops import ctc as _ctc  # noqa: E402


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0,  # noqa: A002
             reduction="mean", zero_infinity=False):
    """The connectionist temporal classification loss of ``log_probs`` ``(T, N, C)``
    (or ``(T, C)`` unbatched; log-probabilities over ``C`` classes, the class ``blank``
    among them) against ``targets``: padded ``(N, S)`` or concatenated ``(sum of
    target_lengths,)``. ``input_lengths`` and ``target_lengths`` are tensors ``(N,)``
    (0-d unbatched) or tuples of ints. ``reduction='mean'`` divides each sample's loss
    by its target length (at least 1) and averages; ``zero_infinity`` sets infinite
    losses (inputs too short for their targets) and their gradients to zero. The
    gradient with respect to ``log_probs`` is PyTorch's (alpha-beta, ``exp(log_probs)``
    minus the alignments' share at each class).

    >>> import gradcore as gc, gradcore.nn.functional as F
    >>> lp = gc.tensor([[0.5, 0.5], [0.5, 0.5]]).log().unsqueeze(1)
    >>> F.ctc_loss(lp, gc.tensor([[1]]), (2,), (1,), reduction="sum")
    tensor(0.2877)
    """
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _ctc.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                         {"none": 0, "mean": 1, "sum": 2}[reduction], zero_infinity)


__all__ += ["ctc_loss"]


# ---- fractional max pools (gradcore.ops.pool) ----------
def _n_tuple(value, nd):
    return tuple(value) if isinstance(value, (list, tuple)) else (value,) * nd


def _fractional(nd, input, kernel_size, output_size, output_ratio, return_indices,  # noqa: A002
                _random_samples):
    """``fractional_max_pool{nd}d``: the sizes and samples made whole, then pooled."""
    op = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if nd == 2 and len(output_ratio) > 2:
            raise ValueError(f"{op} requires output_ratio to either be a single Int or tuple "
                             f"of Ints.")
        ratio = _n_tuple(output_ratio, nd)
        output_size = [int(input.size(d - nd) * ratio[d]) for d in range(nd)]
    if _random_samples is None:
        n_batch = 1 if input.dim() == nd + 1 else input.size(0)
        _random_samples = creation.rand(n_batch, input.size(-nd - 1), nd, dtype=input.dtype,
                                        device=input.device)
    return getattr(_pool, op)(input, _n_tuple(kernel_size, nd), _n_tuple(output_size, nd),
                              _random_samples, return_indices)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None,  # noqa: A002
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """:func:`fractional_max_pool2d` returning ``(values, indices)`` whatever
    ``return_indices``."""
    return _fractional(2, input, kernel_size, output_size, output_ratio, True,
                       _random_samples)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                          return_indices=False, _random_samples=None):
    """Fractional max pooling (Graham, 2014) of ``(N, C, H, W)`` or ``(C, H, W)``: the
    maximum of ``kernel_size`` windows (an int or a pair) at pseudo-random steps, to
    ``output_size`` (an int or a pair) or ``output_ratio`` times the input's size. The
    steps come from ``_random_samples`` ``(N, C, 2)`` in ``[0, 1)`` (PyTorch's
    intervals: the same samples give PyTorch's result), drawn with :func:`gradcore.rand`
    when not given. ``return_indices`` also returns each maximum's index into its
    flattened plane (for :func:`max_unpool2d`).

    >>> import gradcore as gc, gradcore.nn.functional as F
    >>> x = gc.arange(25.).reshape(1, 1, 5, 5)
    >>> F.fractional_max_pool2d(x, 2, output_size=2, _random_samples=gc.full((1, 1, 2), 0.5))
    tensor([[[[ 6.,  9.],
              [21., 24.]]]])
    """
    return _fractional(2, input, kernel_size, output_size, output_ratio, return_indices,
                       _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None,  # noqa: A002
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """:func:`fractional_max_pool3d` returning ``(values, indices)`` whatever
    ``return_indices``."""
    return _fractional(3, input, kernel_size, output_size, output_ratio, True,
                       _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                          return_indices=False, _random_samples=None):
    """:func:`fractional_max_pool2d` of ``(N, C, D, H, W)`` or ``(C, D, H, W)``:
    ``kernel_size``, ``output_size`` and ``output_ratio`` ints or triples,
    ``_random_samples`` ``(N, C, 3)``; indices into each flattened volume."""
    return _fractional(3, input, kernel_size, output_size, output_ratio, return_indices,
                       _random_samples)


__all__ += ["fractional_max_pool2d", "fractional_max_pool3d",
            "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices"]
