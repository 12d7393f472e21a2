"""``gradcore.nn.utils``: helpers around modules, as ``torch.nn.utils``.

``rnn``: :func:`~gradcore.nn.utils.rnn.pad_sequence`,
:class:`~gradcore.nn.utils.rnn.PackedSequence` and the functions that pack and unpack
batches of sequences of different lengths for the recurrent layers.
"""

from . import rnn

__all__ = ["rnn"]
