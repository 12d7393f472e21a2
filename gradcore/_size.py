"""``gc.Size``: the type of ``Tensor.shape`` and ``Tensor.size()``, PyTorch's ``torch.Size``.

A leaf: a tuple of ints that also answers ``numel()``; slicing it and adding tuples to it
give a ``Size`` again, as in PyTorch.
"""

from __future__ import annotations

__all__ = ["Size"]


class Size(tuple):
    """A tensor's shape: a tuple of ints with ``numel()``.

    >>> import gradcore as gc
    >>> s = gc.zeros(2, 3).shape
    >>> s, s.numel(), s[1:], s == (2, 3)
    (gradcore.Size([2, 3]), 6, gradcore.Size([3]), True)
    """

    __slots__ = ()

    def numel(self) -> int:
        """The number of elements of a tensor of this shape (1 for ``()``)."""
        n = 1
        for d in self:
            n *= d
        return n

    def __getitem__(self, key):
        item = tuple.__getitem__(self, key)
        return Size(item) if isinstance(key, slice) else item

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __mul__(self, n):
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__

    def __repr__(self):
        return f"gradcore.Size({list(self)!r})"

    __str__ = __repr__

    def __reduce__(self):
        return (Size, (tuple(self),))
