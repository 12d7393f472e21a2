"""Batches of sequences of different lengths, as ``torch.nn.utils.rnn``.

:func:`pad_sequence` stacks sequences into one padded tensor. A
:class:`PackedSequence` holds the same batch without the padding: the time steps one
after the other, each with only the sequences still running (``batch_sizes[t]`` of
them, longest first). :func:`pack_padded_sequence` and :func:`pad_packed_sequence`
convert between the two, and the recurrent layers (``nn.RNN``, ``nn.LSTM``,
``nn.GRU``) take a ``PackedSequence`` as input: each sequence stops at its own length,
so its final hidden state is the one after its last real step, not after the padding.

Every function here is differentiable in the sequences' values (one gather or one
concatenation, whatever the number of sequences). Lengths and ``batch_sizes`` live on
the CPU, as in PyTorch.

>>> import gradcore as gc
>>> from gradcore.nn.utils.rnn import pad_sequence, pack_padded_sequence
>>> padded = pad_sequence([gc.ones(3), gc.ones(1)], batch_first=True)
>>> padded
tensor([[1., 1., 1.],
        [1., 0., 0.]])
>>> pack_padded_sequence(padded, [3, 1], batch_first=True).batch_sizes
tensor([2, 1, 1])
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from ... import dtypes
from ...autograd.grad_mode import no_grad
from ...creation import arange, as_tensor, full, tensor, zeros_like
from ...ops import index as _index
from ...ops import reduce as _reduce
from ...ops import shape as _shape
from ...tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]


class PackedSequence_(NamedTuple):  # noqa: N801  (PyTorch's name)
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(PackedSequence_):
    """A batch of sequences of different lengths without their padding.

    ``data`` holds the time steps one after the other, each with the sequences still
    running at that step (``batch_sizes[t]`` rows, in order of decreasing length);
    ``batch_sizes`` is an int64 tensor on the CPU; ``sorted_indices`` (when the batch was
    sorted by :func:`pack_padded_sequence` with ``enforce_sorted=False``) says which
    original sequence each position holds, ``unsorted_indices`` is its inverse. Made by
    :func:`pack_padded_sequence` or :func:`pack_sequence`, not by hand; the recurrent
    layers take and return it.

    >>> import gradcore as gc
    >>> from gradcore.nn.utils.rnn import pack_sequence
    >>> packed = pack_sequence([gc.tensor([1., 2., 3.]), gc.tensor([4.])])
    >>> packed.data, packed.batch_sizes
    (tensor([1., 4., 2., 3.]), tensor([2, 1, 1]))
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        return super().__new__(cls, *_packed_sequence_init_args(
            data, batch_sizes, sorted_indices, unsorted_indices))

    def to(self, *args, **kwargs):
        """The same sequence with ``data`` moved or cast as ``Tensor.to`` would (the
        indices follow ``data``'s device; ``batch_sizes`` stays on the CPU)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        sorted_indices = _bind(self.sorted_indices, lambda t: t.to(data.device))
        unsorted_indices = _bind(self.unsorted_indices, lambda t: t.to(data.device))
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def cuda(self, device=None, non_blocking=False):
        """The sequence on a CUDA device (``device``: an index or a device; the current
        one by default)."""
        if device is None:
            device = "cuda"
        elif isinstance(device, int):
            device = f"cuda:{device}"
        return self.to(device)

    def cpu(self):
        """The sequence on the CPU."""
        return self.to("cpu")

    def double(self):
        """``data`` as float64."""
        return self.to(dtype=dtypes.float64)

    def float(self):  # noqa: A003
        """``data`` as float32."""
        return self.to(dtype=dtypes.float32)

    def half(self):
        """``data`` as float16."""
        return self.to(dtype=dtypes.float16)

    def long(self):
        """``data`` as int64."""
        return self.to(dtype=dtypes.int64)

    def int(self):  # noqa: A003
        """``data`` as int32."""
        return self.to(dtype=dtypes.int32)

    @property
    def is_cuda(self) -> bool:
        """Whether ``data`` is on a CUDA device."""
        return self.data.device.type == "cuda"

    def is_pinned(self) -> bool:
        """False: gradcore has no pinned host memory."""
        return False


def _bind(optional, fn):
    return None if optional is None else fn(optional)


def _packed_sequence_init_args(data, batch_sizes=None, sorted_indices=None,
                               unsorted_indices=None):
    if unsorted_indices is None:
        unsorted_indices = invert_permutation(sorted_indices)
    if batch_sizes is not None:
        if batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should "
                "never be created manually. They should be instantiated by functions like "
                "pack_sequence and pack_padded_sequences in nn.utils.rnn. "
                "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return data, batch_sizes, sorted_indices, unsorted_indices
    if not (isinstance(data, (list, tuple)) and len(data) == 2):
        raise AssertionError("Expected data to be a list or tuple of length 2")
    return data[0], data[1], sorted_indices, unsorted_indices


def invert_permutation(permutation):
    """The inverse of the permutation ``permutation`` (a 1-D integer tensor), or None.

    >>> import gradcore as gc
    >>> from gradcore.nn.utils.rnn import invert_permutation
    >>> invert_permutation(gc.tensor([2, 0, 1]))
    tensor([1, 2, 0])
    """
    if permutation is None:
        return None
    with no_grad():
        output = zeros_like(permutation)
        output[permutation] = arange(permutation.numel(), dtype=permutation.dtype,
                                     device=permutation.device)
    return output


def _lengths_list(lengths, who):
    """``lengths`` (a CPU int64 tensor after PyTorch's conversion) as Python ints."""
    if lengths.ndim != 1 or lengths.device.type != "cpu" or lengths.dtype != dtypes.int64:
        raise RuntimeError(f"'{who}' argument should be a 1D CPU int64 tensor, but got "
                           f"{lengths.ndim}D {lengths.device} {_type_word(lengths.dtype)} "
                           "tensor")
    return [int(n) for n in lengths.tolist()]


def _type_word(dtype):
    return {"int64": "Long", "int32": "Int", "float32": "Float", "float64": "Double",
            "float16": "Half", "bool": "Bool"}.get(str(dtype).rsplit(".", 1)[-1], str(dtype))


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):  # noqa: A002
    """Pack a padded batch of sequences of lengths ``lengths``.

    Args:
        input: ``(T, B, *)``, or ``(B, T, *)`` with ``batch_first=True``: sequence ``b``
            in ``[:lengths[b], b]``, padding after it.
        lengths: the length of each sequence (a list or a CPU tensor), each at least 1.
        batch_first: the layout of ``input``.
        enforce_sorted: the lengths must be in decreasing order (PyTorch's default);
            with ``False`` the batch is sorted here and the order kept in
            ``sorted_indices`` so that unpacking restores it.

    Returns a :class:`PackedSequence`; its ``data`` is differentiable in ``input``.

    >>> import gradcore as gc
    >>> from gradcore.nn.utils.rnn import pack_padded_sequence
    >>> x = gc.tensor([[1., 2.], [3., 0.]])     # (T=2, B=2): lengths 2 and 1
    >>> pack_padded_sequence(x, [2, 1]).data
    tensor([1., 2., 3.])
    """
    if not isinstance(lengths, Tensor):
        lengths = as_tensor(lengths, dtype=dtypes.int64, device="cpu")
    else:
        lengths = lengths.to(dtype=dtypes.int64)
    if enforce_sorted:
        sorted_indices = None
    else:
        lengths, sorted_indices = _reduce.sort(lengths, descending=True)
        sorted_indices = sorted_indices.to(input.device)
        input = _index.index_select(input, 0 if batch_first else 1, sorted_indices)
    data, batch_sizes = _pack_padded(input, lengths, batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def _pack_padded(input, lengths, batch_first):  # noqa: A002
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    sizes = _lengths_list(lengths, "lengths")
    shape = tuple(input.shape)
    steps, batch = (shape[1], shape[0]) if batch_first else (shape[0], shape[1])
    if len(sizes) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(sizes)} (batch_size={batch})")
    if sizes[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if any(a < b for a, b in zip(sizes, sizes[1:])):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
            "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
            "pack_sequence to sidestep this requirement if you do not need ONNX "
            "exportability.")
    if sizes[0] > steps:
        raise RuntimeError(f"pack_padded_sequence: a sequence of length {sizes[0]} does not "
                           f"fit in the padded input's {steps} time steps")
    n = np.asarray(sizes)
    batch_sizes = [int((n > t).sum()) for t in range(sizes[0])]
    # the row of each packed element in input viewed as (T * B, *) or (B * T, *)
    rows = [(b * steps + t) if batch_first else (t * batch + b)
            for t, bs in enumerate(batch_sizes) for b in range(bs)]
    flat = input.reshape((steps * batch,) + shape[2:])
    data = _index.index_select(flat, 0, tensor(rows, dtype=dtypes.int64, device=input.device))
    return data, tensor(batch_sizes, dtype=dtypes.int64, device="cpu")


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The padded batch of a :class:`PackedSequence`, and the length of each sequence.

    Returns ``(padded, lengths)``: ``padded`` is ``(T, B, *)`` (``(B, T, *)`` with
    ``batch_first=True``), ``padding_value`` after each sequence's end, in the batch's
    original order; ``T`` is the longest length, or ``total_length`` when given (at
    least that); ``lengths`` an int64 CPU tensor. Differentiable in ``sequence.data``.

    >>> import gradcore as gc
    >>> from gradcore.nn.utils.rnn import pack_sequence, pad_packed_sequence
    >>> packed = pack_sequence([gc.tensor([1., 2.]), gc.tensor([3., 4., 5.])],
    ...                        enforce_sorted=False)
    >>> pad_packed_sequence(packed, batch_first=True, padding_value=-1.0)
    (tensor([[ 1.,  2., -1.],
            [ 3.,  4.,  5.]]), tensor([2, 3]))
    """
    sizes = _lengths_list(sequence.batch_sizes, "batch_sizes")
    max_seq_length = len(sizes)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{max_seq_length}")
        max_seq_length = total_length
    data = sequence.data
    batch = sizes[0]
    trailing = tuple(data.shape[1:])
    # each padded position reads its packed row, or the padding row appended at the end
    pad_row = len(data)
    index = np.full((max_seq_length, batch), pad_row, dtype=np.int64)
    start = 0
    for t, bs in enumerate(sizes):
        index[t, :bs] = np.arange(start, start + bs)
        start += bs
    if batch_first:
        index = index.T
    pad = full((1,) + trailing, padding_value, dtype=data.dtype, device=data.device)
    rows = _shape.cat([data, pad], 0)
    flat = _index.index_select(rows, 0, tensor(np.ascontiguousarray(index).reshape(-1),
                                               device=data.device))
    padded = flat.reshape(index.shape + trailing)
    n = np.asarray(sizes)
    lengths = tensor([int((n > b).sum()) for b in range(batch)], dtype=dtypes.int64,
                     device="cpu")
    unsorted_indices = sequence.unsorted_indices
    if unsorted_indices is not None:
        padded = _index.index_select(padded, 0 if batch_first else 1, unsorted_indices)
        lengths = _index.index_select(lengths, 0, unsorted_indices.cpu())
    return padded, lengths


def _copy_shape_error(dst, src):
    """PyTorch's message for copying a tensor of shape ``src`` into one of ``dst``."""
    nd = max(len(dst), len(src))
    a = (1,) * (nd - len(dst)) + tuple(dst)
    b = (1,) * (nd - len(src)) + tuple(src)
    for i in range(nd - 1, -1, -1):
        if a[i] != b[i] and b[i] != 1:
            return RuntimeError(f"The size of tensor a ({a[i]}) must match the size of tensor "
                                f"b ({b[i]}) at non-singleton dimension {i}")
    return None


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of different lengths into one tensor, padded with
    ``padding_value``.

    Args:
        sequences: tensors of shapes ``(L_i, *)`` (the same ``*``), any iterable of them.
        batch_first: the output is ``(B, T, *)`` instead of ``(T, B, *)``, with ``T``
            the longest length.
        padding_value: the value of the padding (cast to the first sequence's dtype).
        padding_side: ``'right'`` (after each sequence) or ``'left'``.

    The result has the first sequence's dtype and device and is differentiable in
    every sequence.

    >>> import gradcore as gc
    >>> from gradcore.nn.utils.rnn import pad_sequence
    >>> pad_sequence([gc.tensor([1., 2.]), gc.tensor([3.])], padding_value=-1.0)
    tensor([[ 1.,  3.],
            [ 2., -1.]])
    >>> pad_sequence([gc.tensor([1., 2.]), gc.tensor([3.])], True, padding_side="left")
    tensor([[1., 2.],
            [0., 3.]])
    """
    if not isinstance(sequences, Iterable):
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg "
                           f"of type: {type(sequences)}")
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError("Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    first = sequences[0]
    for i, seq in enumerate(sequences):
        if not isinstance(seq, Tensor):
            raise TypeError(f"pad_sequence(): expected a sequence of Tensors, but element "
                            f"{i} is {type(seq).__name__}")
        if seq.ndim == 0:
            raise RuntimeError(f"pad_sequence(): sequence {i} is a 0-d tensor; each sequence "
                               "needs a time dimension")
    trailing = tuple(first.shape[1:])
    longest = max(int(s.shape[0]) for s in sequences)
    dtype, device = first.dtype, first.device
    padded = []
    for seq in sequences:
        n = int(seq.shape[0])
        target = (n,) + trailing
        if tuple(seq.shape) != target:
            err = _copy_shape_error(target, tuple(seq.shape))
            if err is not None:
                raise err
            seq = _shape.broadcast_to(seq, target)  # (copied as PyTorch's copy_ broadcasts)
        if seq.dtype != dtype:
            seq = seq.to(dtype=dtype)
        if n < longest:
            pad = full((longest - n,) + trailing, padding_value, dtype=dtype, device=device)
            seq = _shape.cat([seq, pad] if padding_side == "right" else [pad, seq], 0)
        padded.append(seq)
    return _shape.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences of a padded batch: sequence ``b`` is its first
    ``lengths[b]`` steps. (PyTorch's transposes ``padded_sequences`` in place when
    ``batch_first=False``; this one leaves it as it is.)

    >>> import gradcore as gc
    >>> from gradcore.nn.utils.rnn import unpad_sequence
    >>> unpad_sequence(gc.tensor([[1., 3.], [2., 0.]]), gc.tensor([2, 1]))
    [tensor([1., 2.]), tensor([3.])]
    """
    if not batch_first:
        padded_sequences = _shape.transpose(padded_sequences, 0, 1)
    sizes = lengths.tolist() if isinstance(lengths, Tensor) else list(lengths)
    if len(sizes) != padded_sequences.shape[0]:
        raise ValueError(f"unpad_sequence: {len(sizes)} lengths for a batch of "
                         f"{padded_sequences.shape[0]} sequences")
    return [seq[:int(n)] for seq, n in zip(padded_sequences, sizes)]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of sequences of shapes ``(L_i, *)``: :func:`pad_sequence` then
    :func:`pack_padded_sequence` (``enforce_sorted``: the sequences come longest first).

    >>> import gradcore as gc
    >>> from gradcore.nn.utils.rnn import pack_sequence
    >>> pack_sequence([gc.tensor([1., 2.]), gc.tensor([3.])]).batch_sizes
    tensor([2, 1])
    """
    lengths = as_tensor([int(v.shape[0]) for v in sequences], dtype=dtypes.int64,
                        device="cpu")
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences of a :class:`PackedSequence`, in their original order.

    >>> import gradcore as gc
    >>> from gradcore.nn.utils.rnn import pack_sequence, unpack_sequence
    >>> unpack_sequence(pack_sequence([gc.tensor([1.]), gc.tensor([2., 3.])], False))
    [tensor([1.]), tensor([2., 3.])]
    """
    padded_sequences, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded_sequences, lengths, batch_first=True)
