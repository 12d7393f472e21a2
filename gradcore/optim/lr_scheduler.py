"""Learning-rate schedules, with PyTorch's formulas (``torch.optim.lr_scheduler``).

A scheduler sets ``group["lr"]`` of its optimizer's parameter groups (and, for
``OneCycleLR`` and ``CyclicLR`` with ``cycle_momentum``, ``group["momentum"]`` or
``group["betas"][0]``); call its ``step()`` once per epoch (per batch for the cyclic
ones), after ``optimizer.step()``; ``ReduceLROnPlateau.step(metrics)`` takes the
monitored value. Every schedule computes its rates as PyTorch's does, operation for
operation (most from the current ``group["lr"]``, their "chainable" form), so the rates
equal PyTorch's to the last bit; ``step(epoch)`` (deprecated, as in PyTorch) uses the
closed form where PyTorch has one.

``state_dict()`` holds Python numbers, strings, lists and dicts (``gc.save`` stores it);
``load_state_dict`` restores it.

>>> import gradcore as gc
>>> opt = gc.optim.SGD([gc.nn.Parameter(gc.zeros(1))], lr=1.0)
>>> sched = gc.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
>>> lrs = []
>>> for epoch in range(5):
...     lrs.append(sched.get_last_lr()[0])
...     opt.step()
...     sched.step()
>>> lrs
[1.0, 1.0, 0.5, 0.5, 0.25]
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from functools import partial

from .. import _live
from .optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR",
           "ConstantLR", "LinearLR", "ExponentialLR", "SequentialLR", "CosineAnnealingLR",
           "ChainedScheduler", "ReduceLROnPlateau", "CyclicLR",
           "CosineAnnealingWarmRestarts", "OneCycleLR", "PolynomialLR"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being "
    "deprecated where possible. Please use `scheduler.step()` to step the "
    "scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. "
    "Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose."
)


def _format_param(name: str, optimizer: Optimizer, param) -> list:
    """``param`` as one value per parameter group (a list or tuple must have one each)."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. "
                f"{name} has {len(param)} values, param_groups has "
                f"{len(optimizer.param_groups)}.")
        return list(param)
    return [param] * len(optimizer.param_groups)


def _group_values(optimizer: Optimizer, key: str) -> list:
    return [group[key] for group in optimizer.param_groups]


def _warn_get_lr_called_within_step(scheduler: LRScheduler) -> None:
    if not scheduler._get_lr_called_within_step:
        warnings.warn("To get the last learning rate computed by the scheduler, please use "
                      "`get_last_lr()`.", UserWarning, stacklevel=3)


def _lambdas_state(state: dict, lr_lambdas: list) -> dict:
    """``lr_lambdas`` as PyTorch saves them: None for a function or lambda, the
    attributes of a callable object."""
    state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                           for fn in lr_lambdas]
    return state


def _load_lambdas(scheduler, state_dict: dict) -> None:
    lr_lambdas = state_dict.pop("lr_lambdas")
    try:
        scheduler.__dict__.update(state_dict)
    finally:
        state_dict["lr_lambdas"] = lr_lambdas  # the caller's dict is left as it was
    for fn, saved in zip(scheduler.lr_lambdas, lr_lambdas):
        if saved is not None:
            fn.__dict__.update(saved)


class LRScheduler(_live.Registered):  # (registered for gc.compile)
    """Base class: subclasses compute the next rates in :meth:`get_lr` (from the current
    ``group["lr"]``) and, where PyTorch has one, ``_get_closed_form_lr`` (from
    ``base_lrs``, used by ``step(epoch)``).

    ``last_epoch=-1`` starts a schedule (recording each group's ``initial_lr``); a
    non-negative ``last_epoch`` resumes one, which needs ``initial_lr`` in every group.
    The constructor takes the first step (epoch 0).
    """

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when "
                        "resuming scheduler with last_epoch >= 0.\n"
                        "This typically happens when:\n"
                        "1. You're trying to resume training from a checkpoint but haven't "
                        "properly loaded the optimizer state\n"
                        "2. You're using last_epoch >= 0 for a fresh training run (not "
                        "recommended)")
        self.base_lrs = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """Reset the step count and take the first step (epoch 0)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        """The rates for the epoch ``self.last_epoch`` (called by :meth:`step`; to read
        the current rates, use :meth:`get_last_lr`)."""
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The rates set by the latest step, one per parameter group."""
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or, deprecated as in PyTorch, jump to ``epoch``: the
        closed form where there is one)."""
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            group["lr"] = lr
        self._last_lr = _group_values(self.optimizer, "lr")

    def state_dict(self) -> dict:
        """Every attribute but the optimizer (Python numbers, strings, lists and dicts:
        ``gc.save`` takes it)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the attributes saved by :meth:`state_dict`."""
        self.__dict__.update(state_dict)


class _LRScheduler(LRScheduler):
    """The old name of :class:`LRScheduler`, kept as PyTorch keeps it."""


class LambdaLR(LRScheduler):
    """Set each group's rate to its initial rate times ``lr_lambda(epoch)`` (one function,
    or a list with one per group).

    >>> import gradcore as gc
    >>> opt = gc.optim.SGD([gc.nn.Parameter(gc.zeros(1))], lr=1.0)
    >>> sched = gc.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 1 / (epoch + 1))
    >>> opt.step(); sched.step(); opt.step(); sched.step()
    >>> sched.get_last_lr()
    [0.3333333333333333]
    """

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1):
        self.optimizer = optimizer
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got "
                                 f"{len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict:
        """The attributes but the optimizer; of the lambdas, only callable objects'
        attributes are saved (a function or lambda is saved as None)."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        return _lambdas_state(state, self.lr_lambdas)

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the attributes and the callable objects' saved attributes."""
        _load_lambdas(self, state_dict)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        return [base_lr * lmbda(self.last_epoch)
                for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs, strict=True)]


class MultiplicativeLR(LRScheduler):
    """Multiply each group's rate by ``lr_lambda(epoch)`` at every epoch but the first
    (one function, or a list with one per group).

    >>> import gradcore as gc
    >>> opt = gc.optim.SGD([gc.nn.Parameter(gc.zeros(1))], lr=1.0)
    >>> sched = gc.optim.lr_scheduler.MultiplicativeLR(opt, lambda epoch: 0.5)
    >>> opt.step(); sched.step(); opt.step(); sched.step()
    >>> sched.get_last_lr()
    [0.25]
    """

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1):
        self.optimizer = optimizer
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got "
                                 f"{len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict:
        """The attributes but the optimizer; of the lambdas, only callable objects'
        attributes are saved (a function or lambda is saved as None)."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        return _lambdas_state(state, self.lr_lambdas)

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the attributes and the callable objects' saved attributes."""
        _load_lambdas(self, state_dict)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * lmbda(self.last_epoch)
                for lmbda, group in zip(self.lr_lambdas, self.optimizer.param_groups,
                                        strict=True)]


class StepLR(LRScheduler):
    """Multiply the rate by ``gamma`` every ``step_size`` epochs."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size)
                for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the rate by ``gamma`` at each of the epochs ``milestones`` (by
    ``gamma ** k`` at an epoch listed ``k`` times).

    >>> import gradcore as gc
    >>> opt = gc.optim.SGD([gc.nn.Parameter(gc.zeros(1))], lr=1.0)
    >>> sched = gc.optim.lr_scheduler.MultiStepLR(opt, milestones=[2, 4], gamma=0.5)
    >>> lrs = []
    >>> for epoch in range(6):
    ...     lrs.append(sched.get_last_lr()[0])
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [1.0, 1.0, 0.5, 0.5, 0.25, 0.25]
    """

    def __init__(self, optimizer: Optimizer, milestones, gamma: float = 0.1,
                 last_epoch: int = -1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the attributes (the milestones as a ``Counter`` again, as a checkpoint
        stores them as a dict)."""
        super().load_state_dict(state_dict)
        self.milestones = Counter(self.milestones)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        if self.last_epoch not in self.milestones:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch]
                for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch)
                for base_lr in self.base_lrs]


class ConstantLR(LRScheduler):
    """Multiply the rate by ``factor`` (in ``[0, 1]``) until epoch ``total_iters``.

    >>> import gradcore as gc
    >>> opt = gc.optim.SGD([gc.nn.Parameter(gc.zeros(1))], lr=1.0)
    >>> sched = gc.optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2)
    >>> lrs = []
    >>> for epoch in range(4):
    ...     lrs.append(sched.get_last_lr()[0])
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [0.5, 0.5, 1.0, 1.0]
    """

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1):
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0:
            return [group["lr"] * self.factor for group in self.optimizer.param_groups]
        if self.last_epoch != self.total_iters:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * (1.0 / self.factor) for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * (self.factor + (self.last_epoch >= self.total_iters)
                           * (1 - self.factor))
                for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """Multiply the rate by a factor going linearly from ``start_factor`` (in ``(0, 1]``)
    to ``end_factor`` (in ``[0, 1]``) over ``total_iters`` epochs.

    >>> import gradcore as gc
    >>> opt = gc.optim.SGD([gc.nn.Parameter(gc.zeros(1))], lr=1.0)
    >>> sched = gc.optim.lr_scheduler.LinearLR(opt, start_factor=0.25, total_iters=3)
    >>> lrs = []
    >>> for epoch in range(5):
    ...     lrs.append(sched.get_last_lr()[0])
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [0.25, 0.5, 0.75, 1.0, 1.0]
    """

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and "
                             "less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in self.optimizer.param_groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * (1.0 + (self.end_factor - self.start_factor)
                               / (self.total_iters * self.start_factor
                                  + (self.last_epoch - 1)
                                  * (self.end_factor - self.start_factor)))
                for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * (self.start_factor + (self.end_factor - self.start_factor)
                           * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the rate by ``gamma`` every epoch.

    >>> import gradcore as gc
    >>> opt = gc.optim.SGD([gc.nn.Parameter(gc.zeros(1))], lr=1.0)
    >>> sched = gc.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    >>> opt.step(); sched.step(); opt.step(); sched.step()
    >>> sched.get_last_lr()
    [0.25]
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        if self._is_initial:  # (a resumed schedule does not step ahead of itself)
            return _group_values(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * self.gamma**self.last_epoch for base_lr in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the rate as ``base_lr * (1 - epoch / total_iters) ** power`` until epoch
    ``total_iters``, then keep it.

    >>> import gradcore as gc
    >>> opt = gc.optim.SGD([gc.nn.Parameter(gc.zeros(1))], lr=1.0)
    >>> sched = gc.optim.lr_scheduler.PolynomialLR(opt, total_iters=4, power=1.0)
    >>> lrs = []
    >>> for epoch in range(6):
    ...     lrs.append(sched.get_last_lr()[0])
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [1.0, 0.75, 0.5, 0.25, 0.0, 0.0]
    """

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1):
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        if self._is_initial or self.last_epoch > self.total_iters:
            return _group_values(self.optimizer, "lr")
        decay_factor = ((1.0 - self.last_epoch / self.total_iters)
                        / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [group["lr"] * decay_factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base_lr * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters)
                ** self.power
                for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial rate to ``eta_min`` over ``T_max`` epochs.

    PyTorch's recursive form: each rate is computed from the current ``group["lr"]``,
    so changes made to it from outside carry on (and the values equal PyTorch's to
    the last bit, not the closed form's).
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1):
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        groups = self.optimizer.param_groups
        if self._is_initial:
            return [group["lr"] for group in groups]
        if self._step_count == 1 and self.last_epoch > 0:
            return [self.eta_min + (base_lr - self.eta_min)
                    * (1 + math.cos(self.last_epoch * math.pi / self.T_max)) / 2
                    for base_lr in self.base_lrs]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [group["lr"] + (base_lr - self.eta_min)
                    * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base_lr, group in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * self.last_epoch / self.T_max))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
                * (group["lr"] - self.eta_min) + self.eta_min
                for group in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [self.eta_min + (base_lr - self.eta_min)
                * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


def _check_schedulers(owner: str, schedulers, optimizer) -> None:
    """What SequentialLR and ChainedScheduler ask of the schedulers they run."""
    for i, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise TypeError(f"{owner} at index {i} should have `optimizer` as its attribute.")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(f"{owner} does not support `ReduceLROnPlateau` scheduler as it "
                             "requires additional kwargs to be specified when calling "
                             f"`step`, but got one at index {i} in the given schedulers "
                             "sequence.")
        if optimizer != scheduler.optimizer:
            raise ValueError(f"{owner} expects all schedulers to belong to the same "
                             f"optimizer, but got scheduler {type(scheduler).__name__} at "
                             f"index {i} has {scheduler.optimizer}, which is different from "
                             f"{type(optimizer).__name__}.")


def _nested_state(scheduler) -> dict:
    state = {k: v for k, v in scheduler.__dict__.items() if k not in ("optimizer", "_schedulers")}
    state["_schedulers"] = [s.state_dict() for s in scheduler._schedulers]
    return state


def _load_nested(scheduler, state_dict: dict) -> None:
    saved = state_dict.pop("_schedulers")
    try:
        scheduler.__dict__.update(state_dict)
    finally:
        state_dict["_schedulers"] = saved  # the caller's dict is left as it was
    for s, state in zip(scheduler._schedulers, saved):
        s.load_state_dict(state)


class SequentialLR(LRScheduler):
    """Run ``schedulers`` one after another, switching at the epochs ``milestones``
    (one fewer than the schedulers); each starts from the group's initial rate.

    >>> import gradcore as gc
    >>> lr_scheduler = gc.optim.lr_scheduler
    >>> opt = gc.optim.SGD([gc.nn.Parameter(gc.zeros(1))], lr=1.0)
    >>> warmup = lr_scheduler.LinearLR(opt, start_factor=0.5, total_iters=2)
    >>> decay = lr_scheduler.ExponentialLR(opt, gamma=0.5)
    >>> sched = lr_scheduler.SequentialLR(opt, [warmup, decay], milestones=[2])
    >>> lrs = []
    >>> for epoch in range(5):
    ...     lrs.append(sched.get_last_lr()[0])
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [0.5, 0.75, 1.0, 0.5, 0.25]
    """

    def __init__(self, optimizer: Optimizer, schedulers, milestones, last_epoch: int = -1):
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler, but got "
                             "no scheduler.")
        _check_schedulers(type(self).__name__, schedulers, optimizer)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more "
                "than the number of milestone points, but got number of schedulers "
                f"{len(schedulers)} and the number of milestones to be equal to "
                f"{len(milestones)}")
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in self.optimizer.param_groups:  # back to the initial rates
            group["lr"] = group["initial_lr"]
        self.recursive_undo()  # undo the first step the schedulers took
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()  # only the one meant for epoch 0 takes it
        self._last_lr = schedulers[idx].get_last_lr()

    def recursive_undo(self, sched=None) -> None:
        """Undo the first step the schedulers (nested ones too) took when made."""
        scheds = self if sched is None else sched
        if hasattr(scheds, "_schedulers"):
            for s in scheds._schedulers:
                self.recursive_undo(s)
        elif hasattr(scheds, "last_epoch"):
            scheds.last_epoch -= 1

    def step(self) -> None:
        """Advance one epoch: the scheduler of this epoch steps (a scheduler starting at
        a milestone starts from its epoch 0)."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict:
        """The attributes but the optimizer, the schedulers as their state dicts."""
        return _nested_state(self)

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the attributes and every scheduler's state."""
        _load_nested(self, state_dict)


class ChainedScheduler(LRScheduler):
    """Step every one of ``schedulers`` at each step, in order (their factors compound).

    >>> import gradcore as gc
    >>> lr_scheduler = gc.optim.lr_scheduler
    >>> opt = gc.optim.SGD([gc.nn.Parameter(gc.zeros(1))], lr=1.0)
    >>> sched = lr_scheduler.ChainedScheduler([
    ...     lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2),
    ...     lr_scheduler.ExponentialLR(opt, gamma=0.5)])
    >>> lrs = []
    >>> for epoch in range(4):
    ...     lrs.append(sched.get_last_lr()[0])
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [0.5, 0.25, 0.25, 0.125]
    """

    def __init__(self, schedulers, optimizer: Optimizer | None = None):
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler to be "
                             "chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_schedulers(type(self).__name__, schedulers, optimizer)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")

    def step(self) -> None:
        """Step every scheduler, in order."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")

    def state_dict(self) -> dict:
        """The attributes but the optimizer, the schedulers as their state dicts."""
        return _nested_state(self)

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the attributes and every scheduler's state."""
        _load_nested(self, state_dict)


class ReduceLROnPlateau(LRScheduler):
    """Multiply the rate by ``factor`` when the monitored value (``step(metrics)``) has
    not improved for more than ``patience`` epochs.

    ``mode``: ``"min"`` (improving is decreasing) or ``"max"``; an improvement beats the
    best so far by ``threshold``, relative (``threshold_mode="rel"``: below ``best * (1 -
    threshold)`` in min mode) or absolute (``"abs"``: below ``best - threshold``). After a
    reduction, ``cooldown`` epochs pass before bad epochs count again; no rate goes below
    ``min_lr`` (one number, or one per group), and a change smaller than ``eps`` is not
    made.

    >>> import gradcore as gc
    >>> opt = gc.optim.SGD([gc.nn.Parameter(gc.zeros(1))], lr=1.0)
    >>> sched = gc.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1)
    >>> for loss in [1.0, 0.9, 0.9, 0.9, 0.9]:
    ...     sched.step(loss)
    >>> sched.get_last_lr()
    [0.5]
    """

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1,
                 patience: int = 10, threshold: float = 1e-4, threshold_mode: str = "rel",
                 cooldown: int = 0, min_lr=0, eps: float = 1e-8):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got "
                                 f"{len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = _group_values(self.optimizer, "lr")
        self._init_is_better(mode=mode, threshold=threshold, threshold_mode=threshold_mode)
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics, epoch=None) -> None:
        """Record one epoch's value of the monitored quantity (a number or a 0-d
        tensor) and reduce the rates if it has stopped improving."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in the cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr(epoch)
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _group_values(self.optimizer, "lr")

    def _reduce_lr(self, epoch) -> None:
        if len(self.optimizer.param_groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    "The number of param groups in the `optimizer` "
                    f"({len(self.optimizer.param_groups)}) differs from when "
                    f"`ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), usually "
                    "due to a new param group being added to the optimizer. Please modify "
                    "the `min_lrs` field to match the length of the `optimizer` param "
                    "groups.")
            self.min_lrs = [self.default_min_lr] * len(self.optimizer.param_groups)
        for i, group in enumerate(self.optimizer.param_groups):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, self.min_lrs[i])
            if old_lr - new_lr > self.eps:
                group["lr"] = new_lr

    @property
    def in_cooldown(self) -> bool:
        """Whether a reduction happened fewer than ``cooldown`` epochs ago."""
        return self.cooldown_counter > 0

    def _is_better(self, a, best) -> bool:
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min" and self.threshold_mode == "abs":
            return a < best - self.threshold
        if self.mode == "max" and self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def _init_is_better(self, mode, threshold, threshold_mode) -> None:
        if mode not in {"min", "max"}:
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in {"rel", "abs"}:
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the attributes saved by :meth:`state_dict`."""
        self.__dict__.update(state_dict)
        self._init_is_better(mode=self.mode, threshold=self.threshold,
                             threshold_mode=self.threshold_mode)


class CyclicLR(LRScheduler):
    """Cycle the rate between ``base_lr`` and ``max_lr`` (numbers, or one per group):
    ``step_size_up`` steps up, ``step_size_down`` (default: as many) down; call
    ``step()`` after every batch.

    ``mode``: ``"triangular"`` (constant amplitude), ``"triangular2"`` (halved each
    cycle) or ``"exp_range"`` (times ``gamma ** iterations``), unless ``scale_fn``
    (evaluated on the cycle number or, with ``scale_mode="iterations"``, the iteration)
    is given. With ``cycle_momentum`` (default), the momentum (SGD's ``momentum``,
    Adam-like optimizers' ``betas[0]``) cycles the other way between ``max_momentum``
    and ``base_momentum``.

    >>> import gradcore as gc
    >>> opt = gc.optim.SGD([gc.nn.Parameter(gc.zeros(1))], lr=1.0, momentum=0.9)
    >>> sched = gc.optim.lr_scheduler.CyclicLR(opt, base_lr=0.1, max_lr=0.5,
    ...                                        step_size_up=2)
    >>> lrs = []
    >>> for batch in range(5):
    ...     lrs.append(round(sched.get_last_lr()[0], 6))
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [0.1, 0.3, 0.5, 0.3, 0.1]
    """

    def __init__(self, optimizer: Optimizer, base_lr, max_lr, step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn=None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum: float = 0.8,
                 max_momentum: float = 0.9, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        base_lrs = _format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups, strict=True):
                group["lr"] = lr
        self.max_lrs = _format_param("max_lr", optimizer, max_lr)
        step_size_up = float(step_size_up)
        step_size_down = float(step_size_down) if step_size_down is not None else step_size_up
        self.total_size = step_size_up + step_size_down
        self.step_ratio = step_size_up / self.total_size
        if mode not in ["triangular", "triangular2", "exp_range"] and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with "
                                 "`cycle_momentum` option enabled")
            self.use_beta1 = "betas" in self.optimizer.defaults
            self.base_momentums = _format_param("base_momentum", optimizer, base_momentum)
            self.max_momentums = _format_param("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for m_momentum, b_momentum, group in zip(
                        self.max_momentums, self.base_momentums, optimizer.param_groups,
                        strict=True):
                    _set_momentum(group, m_momentum, self.use_beta1)
                    group["max_momentum"] = m_momentum
                    group["base_momentum"] = b_momentum
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref = self._triangular_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref = self._triangular2_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "exp_range":
            self._scale_fn_ref = partial(self._exp_range_scale_fn, self.gamma)
            self.scale_mode = "iterations"

    def scale_fn(self, x) -> float:
        """The amplitude's scale at ``x`` (the cycle number or the iteration)."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return self._scale_fn_ref(x)

    @staticmethod
    def _triangular_scale_fn(x: float) -> float:
        return 1.0

    @staticmethod
    def _triangular2_scale_fn(x: float) -> float:
        return 1 / (2.0 ** (x - 1))

    @staticmethod
    def _exp_range_scale_fn(gamma: float, x: float) -> float:
        return gamma**x

    def get_lr(self) -> list[float]:
        """The rates of this batch; with ``cycle_momentum``, also sets the momentum."""
        _warn_get_lr_called_within_step(self)
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        at = cycle if self.scale_mode == "cycle" else self.last_epoch
        lrs = []
        for base_lr, max_lr in zip(self.base_lrs, self.max_lrs, strict=True):
            base_height = (max_lr - base_lr) * scale_factor
            lrs.append(base_lr + base_height * self.scale_fn(at))
        if self.cycle_momentum:
            momentums = []
            for base_momentum, max_momentum in zip(self.base_momentums, self.max_momentums,
                                                   strict=True):
                base_height = (max_momentum - base_momentum) * scale_factor
                momentums.append(max_momentum - base_height * self.scale_fn(at))
            for group, momentum in zip(self.optimizer.param_groups, momentums, strict=True):
                _set_momentum(group, momentum, self.use_beta1)
        return lrs

    def state_dict(self) -> dict:
        """The attributes but the optimizer and the scale function (a custom one is
        saved as its attributes when it is a callable object, as None otherwise)."""
        state = super().state_dict()
        state.pop("_scale_fn_ref", None)
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None
        if fn is not None and not isinstance(fn, types.FunctionType):
            state["_scale_fn_custom"] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the attributes (and a custom callable object's attributes)."""
        fn = state_dict.pop("_scale_fn_custom")
        try:
            super().load_state_dict(state_dict)
        finally:
            state_dict["_scale_fn_custom"] = fn  # the caller's dict is left as it was
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


def _set_momentum(group: dict, momentum: float, use_beta1: bool) -> None:
    if use_beta1:
        group["betas"] = (momentum, *group["betas"][1:])
    else:
        group["momentum"] = momentum


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from the initial rate to ``eta_min`` over ``T_i`` epochs, then a
    restart; ``T_0`` is the first period and each next one is ``T_mult`` times longer.

    ``step(epoch)`` takes fractional epochs (``step(epoch + i / iters)`` within an
    epoch), as PyTorch's.

    >>> import gradcore as gc
    >>> opt = gc.optim.SGD([gc.nn.Parameter(gc.zeros(1))], lr=1.0)
    >>> sched = gc.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2)
    >>> lrs = []
    >>> for epoch in range(5):
    ...     lrs.append(round(sched.get_last_lr()[0], 6))
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [1.0, 0.5, 1.0, 0.5, 1.0]
    """

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1):
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type "
                             f"{type(eta_min)}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        return [self.eta_min + (base_lr - self.eta_min)
                * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base_lr in self.base_lrs]

    def step(self, epoch=None) -> None:
        """Advance one epoch, or go to ``epoch`` (fractional epochs allowed; no
        deprecation here, as in PyTorch)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** (n)
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            group["lr"] = lr
        self._last_lr = _group_values(self.optimizer, "lr")


class OneCycleLR(LRScheduler):
    """The 1cycle policy: the rate rises from ``max_lr / div_factor`` to ``max_lr`` over
    the first ``pct_start`` of ``total_steps`` (or ``epochs * steps_per_epoch``) steps,
    then falls to ``initial_lr / final_div_factor`` (with ``three_phase``: back to the
    initial rate symmetrically, then down to the minimum); ``anneal_strategy`` ``"cos"``
    or ``"linear"``. With ``cycle_momentum`` (default), the momentum (SGD's
    ``momentum``, Adam-like optimizers' ``betas[0]``) goes the other way between
    ``max_momentum`` and ``base_momentum``. Call ``step()`` after every batch; stepping
    past ``total_steps`` is an error.

    >>> import gradcore as gc
    >>> opt = gc.optim.SGD([gc.nn.Parameter(gc.zeros(1))], lr=1.0, momentum=0.9)
    >>> sched = gc.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=5,
    ...                                          anneal_strategy="linear", pct_start=0.4)
    >>> lrs = []
    >>> for batch in range(5):
    ...     lrs.append(round(sched.get_last_lr()[0], 6))
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [0.04, 1.0, 0.666668, 0.333336, 4e-06]
    """

    def __init__(self, optimizer: Optimizer, max_lr, total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None,
                 pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got "
                                 f"{steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND "
                             "steps_per_epoch)")
        if three_phase:
            self._schedule_phases = [
                dict(end_step=float(pct_start * self.total_steps) - 1,
                     start_lr="initial_lr", end_lr="max_lr",
                     start_momentum="max_momentum", end_momentum="base_momentum"),
                dict(end_step=float(2 * pct_start * self.total_steps) - 2,
                     start_lr="max_lr", end_lr="initial_lr",
                     start_momentum="base_momentum", end_momentum="max_momentum"),
                dict(end_step=self.total_steps - 1,
                     start_lr="initial_lr", end_lr="min_lr",
                     start_momentum="max_momentum", end_momentum="max_momentum"),
            ]
        else:
            self._schedule_phases = [
                dict(end_step=float(pct_start * self.total_steps) - 1,
                     start_lr="initial_lr", end_lr="max_lr",
                     start_momentum="max_momentum", end_momentum="base_momentum"),
                dict(end_step=self.total_steps - 1,
                     start_lr="max_lr", end_lr="min_lr",
                     start_momentum="base_momentum", end_momentum="max_momentum"),
            ]
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        max_lrs = _format_param("max_lr", self.optimizer, max_lr)
        if last_epoch == -1:
            for idx, group in enumerate(self.optimizer.param_groups):
                group["initial_lr"] = max_lrs[idx] / div_factor
                group["max_lr"] = max_lrs[idx]
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if self.cycle_momentum:
            if "momentum" not in self.optimizer.defaults and \
                    "betas" not in self.optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with "
                                 "`cycle_momentum` option enabled")
            self.use_beta1 = "betas" in self.optimizer.defaults
            max_momentums = _format_param("max_momentum", optimizer, max_momentum)
            base_momentums = _format_param("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for m_momentum, b_momentum, group in zip(max_momentums, base_momentums,
                                                         optimizer.param_groups, strict=True):
                    _set_momentum(group, m_momentum, self.use_beta1)
                    group["max_momentum"] = m_momentum
                    group["base_momentum"] = b_momentum
        super().__init__(optimizer, last_epoch)

    def _anneal_func(self, start, end, pct):
        if self._anneal_func_type == "cos":
            return self._annealing_cos(start, end, pct)
        if self._anneal_func_type == "linear":
            return self._annealing_linear(start, end, pct)
        raise ValueError(f"Unknown _anneal_func_type: {self._anneal_func_type}")

    @staticmethod
    def _annealing_cos(start, end, pct):
        """Cosine anneal from ``start`` to ``end`` as ``pct`` goes from 0.0 to 1.0."""
        cos_out = math.cos(math.pi * pct) + 1
        return end + (start - end) / 2.0 * cos_out

    @staticmethod
    def _annealing_linear(start, end, pct):
        """Linearly anneal from ``start`` to ``end`` as ``pct`` goes from 0.0 to 1.0."""
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        """The rates of this step; with ``cycle_momentum``, also sets the momentum."""
        _warn_get_lr_called_within_step(self)
        lrs = []
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(f"Tried to step {step_num} times. The specified number of total "
                             f"steps is {self.total_steps}")
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    computed_lr = self._anneal_func(group[phase["start_lr"]],
                                                    group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        computed_momentum = self._anneal_func(
                            group[phase["start_momentum"]], group[phase["end_momentum"]], pct)
                    break
                start_step = phase["end_step"]
            lrs.append(computed_lr)
            if self.cycle_momentum:
                _set_momentum(group, computed_momentum, self.use_beta1)
        return lrs
