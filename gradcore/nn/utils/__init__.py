"""``gradcore.nn.utils``: helpers around modules, as ``torch.nn.utils``.

Gradient clipping (``clip_grad_norm_``, ``clip_grad_value_``, ``get_total_norm``,
``clip_grads_with_norm_``) and ``parameters_to_vector``/``vector_to_parameters``.

``rnn``: :func:`~gradcore.nn.utils.rnn.pad_sequence`,
:class:`~gradcore.nn.utils.rnn.PackedSequence` and the functions that pack and unpack
batches of sequences of different lengths for the recurrent layers.
"""

from . import clip_grad, convert_parameters, rnn
from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["rnn", "clip_grad_norm_", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_", "parameters_to_vector", "vector_to_parameters"]
