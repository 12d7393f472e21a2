"""gradcore's kernels, each declared once, and the registry the array namespaces read.

An op's backward calls ``F.tanh_backward(g, y)``; ``F`` is an array namespace
(:class:`gradcore.backend.ArrayMath`), which has no such attribute of its own. The first
time a namespace is asked for a kernel's name, it asks :func:`implementation` here and
keeps the answer:

* on a CUDA device with gradcore's kernels (``math.device_kernels``), one launch of the
  generated or hand-written CUDA kernel (:mod:`.device`);
* on the CPU, the kernel's NumPy twin: generated from the expression (:mod:`.twin`), or
  a faster twin with the same meaning written beside it (``cpu=`` in :mod:`.pointwise`);
* on a CUDA device without them (``GRADCORE_CUDA_KERNELS=0``, or after the compiler
  failed: :func:`.device.fall_back` flips ``math.use_device_kernels(False)``), the same
  expressions over CuPy's ufuncs.

Where each name is declared:

* :mod:`.pointwise`: pointwise kernels (``tanh_backward``, ``gelu_forward``, ...; each
  takes ``out=``), their in-place forms (``tanh_backward_``);
* :mod:`.rows`: row kernels (softmax, cross-entropy, layer_norm, ``mul_sum_rows``) and
  ``mul_sum_to``'s one-pass form on a device;
* :mod:`.updates`: the optimizers' updates (``sgd_update``, ``adam_update``) and their
  single-kernel steps (``sgd_step``, ``adam_step``, ...).

The other modules are machinery: :mod:`.spec` (the declaration forms), :mod:`.source`
(CUDA C generation and the calling convention), :mod:`.host` (the host build the tests
run kernels through) and :mod:`.device` (launches). See docs/kernels.md.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import backend
from . import device, pointwise, rows, twin, updates

__all__ = ["NAMES", "implementation", "declarations"]


def _pointwise(math, name):
    # every pointwise kernel takes out= (an array to write the result into where it can)
    k = pointwise.KERNELS[name]
    if math.device_kernels:
        return device.pointwise(math, k)
    if math.xp is np:
        return pointwise.cpu_twin(name)
    return twin.expression(k, pointwise.namespace_names(math))


def _inplace(math, name):
    if math.xp is np:
        return pointwise.INPLACE_CPU[name]
    kernel = getattr(math, name[:-1])
    return lambda g, *args: kernel(g, *args, out=g)  # one launch, into g where it fits


def _row(math, name):
    if math.device_kernels:
        return device.rows(math, name)
    return functools.partial(rows.TWINS[name], math.xp)


def _mul_sum_to(math, name):
    generic = math.mul_sum_to_any
    if math.device_kernels:
        return device.rows(math, name, generic)
    return generic


def _update_step(math, name):
    k = updates.UPDATE_KERNELS[name]
    if math.device_kernels:
        return device.update(math, k)
    # the declaration as in-place array code, by slices on the CPU (a slice is a launch
    # more on a device)
    return updates.inplace_step(k, updates.array_names(math), sliced=math.xp is np)


def _update(math, name):
    if math.device_kernels:
        return device.optimizer_update(math, name)
    return functools.partial(updates.ENTRIES[name], math)  # math.<step> (above)


_PROVIDERS = {
    **dict.fromkeys(pointwise.KERNELS, _pointwise),
    **dict.fromkeys(pointwise.INPLACE_CPU, _inplace),
    **dict.fromkeys(rows.TWINS, _row),
    "mul_sum_to": _mul_sum_to,
    **dict.fromkeys(updates.UPDATE_KERNELS, _update_step),
    **dict.fromkeys(updates.ENTRIES, _update),
}

NAMES = frozenset(_PROVIDERS)  # every name the registry answers


def declarations() -> dict:
    """Each kernel's declaration by name (a ``Kernel`` or ``Update``, or the NumPy
    function of an update or a row kernel), from the tables as they are now: what
    :mod:`gradcore.profile` counts as one launch."""
    return {**pointwise.INPLACE_CPU, **rows.TWINS, **updates.UPDATES,
            **updates.UPDATE_KERNELS, **pointwise.KERNELS}


def implementation(math, name: str):
    """Kernel ``name`` as a function on the array namespace ``math``."""
    return _PROVIDERS[name](math, name)


backend.register_kernels(implementation, NAMES)
