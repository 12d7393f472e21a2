"""``gradcore.optim.swa_utils``: stochastic weight averaging and exponential moving
averages of a model's weights, as ``torch.optim.swa_utils``.

:class:`AveragedModel` keeps a copy of a model whose parameters (and, with
``use_buffers``, buffers) are the running average of the model's (an equal-weight
average by default, or an exponential one with :func:`get_ema_multi_avg_fn`);
:class:`SWALR` anneals each group's rate to a constant ``swa_lr``; :func:`update_bn`
recomputes the batch-norm statistics of the averaged weights.

>>> import gradcore as gc
>>> model = gc.nn.Linear(1, 1, bias=False)
>>> swa = gc.optim.swa_utils.AveragedModel(model)
>>> for w in (1.0, 2.0, 6.0):
...     with gc.no_grad():
...         _ = model.weight.fill_(w)
...     swa.update_parameters(model)
>>> swa.module.weight.item(), swa.n_averaged.item()
(3.0, 3)
"""

from __future__ import annotations

import itertools
import math
import warnings
from copy import deepcopy

from .. import creation as _creation
from .. import dtypes as _dtypes
from ..autograd.grad_mode import no_grad
from ..nn.modules import Module
from ..nn.normalization import _BatchNorm
from .lr_scheduler import LRScheduler, _format_param

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def _floating(t) -> bool:
    return t.dtype.is_floating_point or t.dtype.is_complex


def get_ema_multi_avg_fn(decay=0.999):
    """An exponential moving average over lists of tensors, in place:
    ``ema = lerp(ema, current, 1 - decay)`` (for :class:`AveragedModel`'s
    ``multi_avg_fn``)."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         "[0,1] range.")

    def ema_update(ema_param_list, current_param_list, _) -> None:
        with no_grad():
            if _floating(ema_param_list[0]):
                for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                    p_ema.lerp_(p_model, 1 - decay)
            else:
                for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """The equal-weight running average over lists of tensors, in place:
    ``avg = lerp(avg, current, 1 / (num_averaged + 1))`` (for :class:`AveragedModel`'s
    ``multi_avg_fn``)."""

    def swa_update(averaged_param_list, current_param_list, num_averaged) -> None:
        with no_grad():
            if _floating(averaged_param_list[0]):
                weight = 1 / (num_averaged + 1)
                for p_avg, p_model in zip(averaged_param_list, current_param_list,
                                          strict=True):
                    p_avg.lerp_(p_model, weight)
            else:
                for p_avg, p_model in zip(averaged_param_list, current_param_list,
                                          strict=True):
                    diff = p_model - p_avg
                    p_avg.copy_(p_avg + diff / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """An exponential moving average of one tensor: returns ``decay * ema + (1 - decay) *
    current`` (for :class:`AveragedModel`'s ``avg_fn``)."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         "[0,1] range.")

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """The equal-weight running average of one tensor: returns ``avg + (current - avg) /
    (num_averaged + 1)`` (:class:`AveragedModel`'s default)."""

    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A deep copy of ``model`` (moved to ``device`` if given) holding the running
    average of its parameters, updated by :meth:`update_parameters`; calling it runs
    the copy.

    ``avg_fn(averaged, current, num_averaged)`` returns one tensor's new average;
    ``multi_avg_fn(averaged_list, current_list, num_averaged)`` updates lists in place
    (give at most one); by default the equal-weight average (SWA). ``use_buffers``
    averages the buffers too (else they are copied from ``model`` at each update). The
    buffer ``n_averaged`` (int64) counts the updates; the first copies the weights.
    """

    def __init__(self, model: Module, device=None, avg_fn=None, multi_avg_fn=None,
                 use_buffers=False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged",
                             _creation.tensor(0, dtype=_dtypes.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Average ``model``'s current parameters (and buffers, with ``use_buffers``) into
        this copy's; the first call copies them."""
        self_param = (itertools.chain(self.module.parameters(), self.module.buffers())
                      if self.use_buffers else self.parameters())
        model_param = (itertools.chain(model.parameters(), model.buffers())
                       if self.use_buffers else model.parameters())
        self_param_detached, model_param_detached = [], []
        copy_param = bool(self.n_averaged == 0)
        with no_grad():
            for p_averaged, p_model in zip(self_param, model_param):
                p_model_ = p_model.detach().to(p_averaged.device)
                self_param_detached.append(p_averaged.detach())
                model_param_detached.append(p_model_)
                if copy_param:
                    p_averaged.detach().copy_(p_model_)
            if self.n_averaged > 0:
                if self.multi_avg_fn is not None or self.avg_fn is None:
                    groups: dict = {}  # by device and dtype, as PyTorch groups them
                    for a, m in zip(self_param_detached, model_param_detached):
                        key = (str(a.device), a.dtype)
                        groups.setdefault(key, ([], []))
                        groups[key][0].append(a)
                        groups[key][1].append(m)
                    for (device, _), (self_params, model_params) in groups.items():
                        n_averaged = self.n_averaged.to(device)
                        if self.multi_avg_fn:
                            self.multi_avg_fn(self_params, model_params, n_averaged)
                        else:  # (PyTorch's CPU form: its CUDA form lerps, as multi's)
                            avg_fn = get_swa_avg_fn()
                            for p_averaged, p_model in zip(self_params, model_params,
                                                           strict=True):
                                p_averaged.copy_(avg_fn(p_averaged, p_model, n_averaged))
                else:
                    for p_averaged, p_model in zip(self_param_detached, model_param_detached,
                                                   strict=True):
                        n_averaged = self.n_averaged.to(p_averaged.device)
                        p_averaged.detach().copy_(
                            self.avg_fn(p_averaged.detach(), p_model, n_averaged))
            if not self.use_buffers:
                for b_swa, b_model in zip(self.module.buffers(), model.buffers(),
                                          strict=True):
                    b_swa.detach().copy_(b_model.detach().to(b_swa.device))
            self.n_averaged += 1


def update_bn(loader, model: Module, device=None) -> None:
    """Recompute the running statistics of ``model``'s batch-norm layers with one pass
    over ``loader`` (batches, or tuples/lists whose first item is the input, moved to
    ``device`` if given): the statistics are reset and averaged over all batches
    (``momentum=None``), then each layer's momentum and the model's mode restored."""
    with no_grad():
        momenta = {}
        for module in model.modules():
            if isinstance(module, _BatchNorm):
                module.reset_running_stats()
                momenta[module] = module.momentum
        if not momenta:
            return
        was_training = model.training
        model.train()
        for module in momenta:
            module.momentum = None
        for input in loader:  # noqa: A001 (PyTorch's name)
            if isinstance(input, (list, tuple)):
                input = input[0]  # noqa: A001
            if device is not None:
                input = input.to(device)  # noqa: A001
            model(input)
        for bn_module in momenta:
            bn_module.momentum = momenta[bn_module]
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's rate from its current value to ``swa_lr`` (one value, or one
    per group) over ``anneal_epochs`` epochs, by ``anneal_strategy`` ``"cos"`` or
    ``"linear"``, then keep it there: PyTorch's ``SWALR``.

    >>> import gradcore as gc
    >>> opt = gc.optim.SGD([gc.nn.Parameter(gc.zeros(1))], lr=1.0)
    >>> sched = gc.optim.swa_utils.SWALR(opt, swa_lr=0.5, anneal_epochs=2,
    ...                                   anneal_strategy="linear")
    >>> [round(lr, 4) for lr in sched.get_last_lr()]
    [1.0]
    >>> for _ in range(3):
    ...     opt.step(); sched.step()
    >>> sched.get_last_lr()
    [0.5]
    """

    def __init__(self, optimizer, swa_lr: float, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1) -> None:
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for swa_lr, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = swa_lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please "
                          "use `get_last_lr()`.", UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs, strict=True)]

    def _set_anneal_func(self, anneal_strategy) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = (self._cosine_anneal if anneal_strategy == "cos"
                            else self._linear_anneal)

    def state_dict(self) -> dict:
        """Every attribute but the optimizer and the annealing function (PyTorch's)."""
        return {key: value for key, value in self.__dict__.items()
                if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the attributes saved by :meth:`state_dict`."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
