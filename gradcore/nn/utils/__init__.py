"""``gradcore.nn.utils``: helpers around modules, as ``torch.nn.utils``.

Gradient clipping (``clip_grad_norm_``, ``clip_grad_value_``, ``get_total_norm``,
``clip_grads_with_norm_``) and ``parameters_to_vector``/``vector_to_parameters``.

``rnn``: :func:`~gradcore.nn.utils.rnn.pad_sequence`,
:class:`~gradcore.nn.utils.rnn.PackedSequence` and the functions that pack and unpack
batches of sequences of different lengths for the recurrent layers.

``parametrize`` and ``parametrizations``: tensors of a module computed from others
(:func:`~gradcore.nn.utils.parametrize.register_parametrization`; weight norm, spectral
norm, orthogonal); ``weight_norm``/``remove_weight_norm`` and
``spectral_norm``/``remove_spectral_norm``: their older forms by forward pre-hooks.

``fuse_conv_bn_eval`` and ``fuse_linear_bn_eval``: an evaluation-mode batch norm folded
into the layer before it; ``skip_init``; ``stateless.functional_call`` (the deprecated
path of :func:`gradcore.func.functional_call`); ``convert_conv2d_weight_memory_format``
and ``convert_conv3d_weight_memory_format``: convolution weights laid out channels-last.

``prune``: masks on parameters (``weight_orig`` times ``weight_mask``), by magnitude,
at random or given.
"""

from . import (
    clip_grad,
    convert_parameters,
    fusion,
    memory_format,
    parametrizations,
    parametrize,
    prune,
    rnn,
    stateless,
)
from .clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from .init import skip_init
from .memory_format import (
    convert_conv2d_weight_memory_format,
    convert_conv3d_weight_memory_format,
)
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["rnn", "parametrize", "parametrizations", "prune", "clip_grad_norm_",
           "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_",
           "parameters_to_vector", "vector_to_parameters", "weight_norm",
           "remove_weight_norm", "spectral_norm", "remove_spectral_norm", "clip_grad_norm",
           "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights", "skip_init", "stateless",
           "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]
