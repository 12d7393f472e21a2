"""Collating samples into batches: ``default_collate`` and ``default_convert``, as
``torch.utils.data._utils.collate`` (the same registry, ``default_collate_fn_map``, that
user code may extend, and ``collate(batch, collate_fn_map=...)``).

>>> import gradcore as gc
>>> from gradcore.utils.data import default_collate
>>> default_collate([(1, 2.5, "a"), (3, 4.5, "b")])
[tensor([1, 3]), tensor([2.5000, 4.5000], dtype=gradcore.float64), ('a', 'b')]
"""

from __future__ import annotations

import collections
import copy
import re
from collections.abc import Callable

import numpy as np

from .... import creation, dtypes
from ....ops import stack
from ....tensor import Tensor

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map",
           "collate_tensor_fn", "collate_numpy_array_fn", "collate_numpy_scalar_fn",
           "collate_float_fn", "collate_int_fn", "collate_str_fn"]

# NumPy dtypes of strings and objects, which make no tensor
np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
    "found {}")


def default_convert(data):
    """Each NumPy array (or NumPy scalar) in ``data`` as a tensor, through tuples (which
    become lists), named tuples, lists and mappings; anything else unchanged. The collate
    function of ``DataLoader(batch_size=None)``.

    >>> import numpy as np
    >>> from gradcore.utils.data import default_convert
    >>> default_convert((1, np.array([1.0, 2.0])))
    [1, tensor([1., 2.], dtype=gradcore.float64)]
    """
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and \
                np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return creation.as_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a named tuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # (a list, as PyTorch's)
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate(batch, *, collate_fn_map: dict | None = None):
    """Collate a list of samples by the type of its first element: ``collate_fn_map``
    maps element types to the functions that collate them (tried exactly, then by
    ``isinstance`` in order); mappings, named tuples and sequences are collated field by
    field. A type nothing handles raises PyTorch's TypeError."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                              for key in elem})
                return clone
            return elem_type({key: collate([d[key] for d in batch],
                                           collate_fn_map=collate_fn_map) for key in elem})
        except TypeError:
            return {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                    for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a named tuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map)
                           for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(samples, collate_fn_map=collate_fn_map)
                    for samples in transposed]  # (a list, as PyTorch's)
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                return clone
            return elem_type([collate(samples, collate_fn_map=collate_fn_map)
                              for samples in transposed])
        except TypeError:
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    """Tensors stacked along a new first dimension."""
    return stack(list(batch), 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    """NumPy arrays as tensors (their dtypes kept), then stacked."""
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([creation.as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    """NumPy scalars as one tensor of their dtype."""
    return creation.as_tensor(np.asarray(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    """Python floats as a float64 tensor (as PyTorch's collate makes them)."""
    return creation.tensor(batch, dtype=dtypes.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    """Python ints as an int64 tensor (bools as a bool tensor)."""
    return creation.tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    """Strings and bytes stay as they are: the batch itself."""
    return batch


default_collate_fn_map: dict[type | tuple[type, ...], Callable] = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """Merge a list of samples into a batch, as ``torch.utils.data.default_collate``:
    tensors are stacked along a new first dimension; NumPy arrays and scalars become
    tensors of their dtype; Python ints an int64 tensor, floats a float64 tensor, bools a
    bool tensor; strings and bytes stay a list of them; mappings, named tuples, tuples
    (which become lists) and lists are collated field by field.

    >>> import gradcore as gc
    >>> from gradcore.utils.data import default_collate
    >>> default_collate([{"x": gc.zeros(2), "y": 1}, {"x": gc.ones(2), "y": 0}])
    {'x': tensor([[0., 0.],
            [1., 1.]]), 'y': tensor([1, 0])}
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
