"""PyTorch's ``*_copy`` forms of the view ops (``torch.transpose_copy``, ...: the view's
elements in new memory, as the functionalized programs of ``torch.export`` call them),
and the ``unsafe_*`` splits. Each is its view op followed by a copy, differentiable as
the pair (the view's backward, then ``CloneBackward0``)."""

from __future__ import annotations

import builtins

from . import device as _device_ops
from . import linalg, shape
from ._core import normalize_dim
from ._export import export


def _copy(t):
    return _device_ops.clone(t)


def _copies(ts):
    return tuple(_device_ops.clone(t) for t in ts)


@export(torch=True)
def view_copy(input, size):  # noqa: A002
    """``input.view(size)`` in new memory."""
    return _copy(shape.view(input, size))


@export(torch=True)
def permute_copy(input, dims):  # noqa: A002
    """``input.permute(dims)`` in new memory."""
    return _copy(shape.permute(input, dims))


@export(torch=True)
def transpose_copy(input, dim0, dim1):  # noqa: A002
    """``input.transpose(dim0, dim1)`` in new memory."""
    return _copy(shape.transpose(input, dim0, dim1))


@export(torch=True)
def t_copy(input):  # noqa: A002
    """``input.t()`` in new memory."""
    return _copy(shape.t(input))


@export(torch=True)
def expand_copy(input, size, *, implicit=False):  # noqa: A002
    """``input.expand(size)`` in new memory (every element written out)."""
    return _copy(shape.expand(input, size))


@export(torch=True)
def squeeze_copy(input, dim=None):  # noqa: A002
    """``input.squeeze(dim)`` in new memory."""
    return _copy(shape.squeeze(input, dim))


@export(torch=True)
def unsqueeze_copy(input, dim):  # noqa: A002
    """``input.unsqueeze(dim)`` in new memory."""
    return _copy(shape.unsqueeze(input, dim))


@export(torch=True)
def diagonal_copy(input, offset=0, dim1=0, dim2=1):  # noqa: A002
    """``input.diagonal(offset, dim1, dim2)`` in new memory."""
    return _copy(linalg.diagonal(input, offset, dim1, dim2))


@export(torch=True)
def select_copy(input, dim, index):  # noqa: A002
    """``input.select(dim, index)`` in new memory."""
    return _copy(shape.select(input, dim, index))


@export(torch=True)
def slice_copy(input, dim=0, start=None, end=None, step=1):  # noqa: A002
    """``input[..., start:end:step, ...]`` along ``dim``, in new memory (``step``
    positive, as PyTorch's)."""
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    if not input.ndim:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    axis = normalize_dim(dim, input.ndim, "slice_copy")
    return _copy(input[(slice(None),) * axis + (slice(start, end, step),)])


@export(torch=True)
def split_copy(input, split_size, dim=0):  # noqa: A002
    """``input.split(split_size, dim)``, each piece in new memory (a tuple)."""
    return _copies(shape.split(input, split_size, dim))


@export(torch=True)
def split_with_sizes_copy(input, split_sizes, dim=0):  # noqa: A002
    """``input.split_with_sizes(split_sizes, dim)``, each piece in new memory (a tuple)."""
    return _copies(shape.split_with_sizes(input, split_sizes, dim))


@export(torch=True)
def unbind_copy(input, dim=0):  # noqa: A002
    """``input.unbind(dim)``, each slice in new memory (a tuple)."""
    return _copies(shape.unbind(input, dim))


@export(torch=True)
def unfold_copy(input, dimension, size, step):  # noqa: A002
    """``input.unfold(dimension, size, step)`` in new memory."""
    return _copy(shape.unfold(input, dimension, size, step))


@export(torch=True)
def detach_copy(input):  # noqa: A002
    """``input.detach()`` in new memory (outside the graph)."""
    return _copy(input.detach())


@export(torch=True)
def alias_copy(input):  # noqa: A002
    """A copy of ``input`` in new memory (the copy form of PyTorch's ``alias``, a view
    of the whole tensor); differentiable."""
    return _copy(input)


@export(torch=True)
def as_strided_copy(input, size, stride, storage_offset=None):  # noqa: A002
    """``input.as_strided(size, stride, storage_offset)`` in new memory."""
    return _copy(shape.as_strided(input, size, stride, storage_offset))


@export(torch=True, method=True)
def unsafe_chunk(input, chunks, dim=0):  # noqa: A002
    """:func:`chunk` (PyTorch's form whose pieces autograd does not guard against in-place
    writes; gradcore's pieces are :func:`chunk`'s)."""
    return shape.chunk(input, chunks, dim)


@export(torch=True, method=True)
def unsafe_split(input, split_size, dim=0):  # noqa: A002
    """:func:`split` into pieces of ``split_size`` (PyTorch's unguarded form)."""
    if not isinstance(split_size, int) or isinstance(split_size, builtins.bool):
        raise TypeError(f"unsafe_split(): argument 'split_size' must be int, not "
                        f"{type(split_size).__name__}")
    return shape.split(input, split_size, dim)


@export(torch=True, method=True)
def unsafe_split_with_sizes(input, split_sizes, dim=0):  # noqa: A002
    """:func:`split_with_sizes` (PyTorch's unguarded form)."""
    return shape.split_with_sizes(input, split_sizes, dim)
