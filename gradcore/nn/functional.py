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

import warnings

import numpy as np

from .. import creation
from ..autograd.grad_mode import autocast_blocks as _ac_blocks
from ..backend import math_of
from ..ops import _autocast as _ac
from ..ops import activation as _act
from ..ops import pointwise as _pw
from ..ops._core import Tensor, as_tensor, wrap
from ..ops.activation import check_reduction

__all__ = ["linear", "relu", "gelu", "tanh", "sigmoid", "softmax", "log_softmax", "dropout",
           "layer_norm", "embedding", "mse_loss", "cross_entropy", "nll_loss",
           "binary_cross_entropy_with_logits", "one_hot", "erf", "softplus"]


def _legacy_reduction(size_average, reduce, reduction):
    """PyTorch's deprecated ``size_average``/``reduce`` pair, as a ``reduction`` string."""
    if size_average is None and reduce is None:
        return reduction
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  "reduction='mean' (or 'sum', 'none') instead.", stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


# ---- layers and activations ----------
def linear(input, weight, bias=None):
    """``input @ weight.T + bias``; one graph node (``AddmmBackward0``) for any
    leading dimensions of ``input``."""
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
    return _pw.tanh(input)


def sigmoid(input):
    return _pw.sigmoid(input)


def erf(input):
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


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the others by ``1 / (1 - p)``.

    The mask comes from gradcore's generator, so ``gc.manual_seed`` makes it
    reproducible.  Outside training (or with ``p == 0``) the input is returned as is.
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0 or input.numel() == 0:
        return input
    xd = input._data
    if p == 1.0:
        noise = wrap(math_of(xd).zeros((), dtype=xd.dtype))
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
