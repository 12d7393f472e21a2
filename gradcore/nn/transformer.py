"""PyTorch's transformer modules: ``TransformerEncoderLayer``, ``TransformerEncoder``,
``TransformerDecoderLayer``, ``TransformerDecoder`` and ``Transformer``, with its
constructor arguments, submodule names (a PyTorch state_dict loads), masks and
forward arithmetic, built on :class:`~gradcore.nn.MultiheadAttention`, ``Linear``,
``LayerNorm`` and ``Dropout``.

>>> import gradcore as gc
>>> layer = gc.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16,
...                                       batch_first=True)
>>> encoder = gc.nn.TransformerEncoder(layer, num_layers=2)
>>> encoder(gc.randn(3, 5, 8)).shape
gradcore.Size([3, 5, 8])
"""

from __future__ import annotations

import copy
import warnings

from .. import creation
from ..autograd.grad_mode import autocast_blocks as _ac_blocks
from ..autograd.grad_mode import is_grad_enabled
from ..autograd.grad_mode import state as _grad_state
from . import functional as F
from .attention import MultiheadAttention
from .init import xavier_uniform_
from .modules import GELU, Dropout, LayerNorm, Linear, Module, ModuleList, ReLU

__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoder",
           "TransformerEncoderLayer", "TransformerDecoderLayer"]


def _generate_square_subsequent_mask(sz, device=None, dtype=None):
    """``(sz, sz)``: ``-inf`` above the diagonal, zeros on and below it."""
    return creation.full((sz, sz), float("-inf"), dtype=dtype, device=device).triu(1)


def _get_seq_len(src, batch_first):
    if src.ndim == 2:
        return src.shape[0]
    return src.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask, is_causal=None, size=None):
    """PyTorch's reading of an ``is_causal`` hint: ``True`` stays, ``None`` with a mask
    becomes whether the mask is the square subsequent mask (read on the host, as
    PyTorch reads it)."""
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.shape[-2]
        causal = _generate_square_subsequent_mask(sz, device=mask.device, dtype=mask.dtype)
        if tuple(mask.shape) == tuple(causal.shape):
            make_causal = bool((mask == causal).all())
        else:
            make_causal = False
    return make_causal


def _get_clones(module, n):
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _get_activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _autocast_on_cuda():
    return bool(_ac_blocks[0]) and bool(_grad_state.autocast) and \
        "cuda" in _grad_state.autocast


class Transformer(Module):
    """PyTorch's ``nn.Transformer``: a :class:`TransformerEncoder` of
    ``num_encoder_layers`` layers and a :class:`TransformerDecoder` of
    ``num_decoder_layers`` layers, each closed by a ``LayerNorm`` (or
    ``custom_encoder``/``custom_decoder``), their weight matrices initialized with
    ``xavier_uniform_``. ``forward(src, tgt, ...)`` encodes ``src`` and decodes ``tgt``
    against it; ``(S, N, E)``/``(T, N, E)`` (``batch_first``: ``(N, S, E)``) or unbatched.

    >>> import gradcore as gc
    >>> model = gc.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1,
    ...                           num_decoder_layers=1, dim_feedforward=16, batch_first=True)
    >>> tgt_mask = gc.nn.Transformer.generate_square_subsequent_mask(4)
    >>> model(gc.randn(3, 6, 8), gc.randn(3, 4, 8), tgt_mask=tgt_mask).shape
    gradcore.Size([3, 4, 8])
    """

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation=F.relu, custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False,
                 norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        factory = dict(device=device, dtype=dtype)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            encoder_layer = TransformerEncoderLayer(
                d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                batch_first, norm_first, bias, **factory)
            encoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            self.encoder = TransformerEncoder(encoder_layer, num_encoder_layers, encoder_norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            decoder_layer = TransformerDecoderLayer(
                d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                batch_first, norm_first, bias, **factory)
            decoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            self.decoder = TransformerDecoder(decoder_layer, num_decoder_layers, decoder_norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        """The decoder's output for ``tgt`` ``(T, N, E)`` (``(N, T, E)`` with
        ``batch_first``) over the encoding of ``src``. The ``*_mask`` arguments are
        ``attn_mask`` of the self-attention (``src_mask``, ``tgt_mask``) or of the
        decoder's attention to the memory (``memory_mask``); the ``*_key_padding_mask``
        arguments ``(N, S)`` mark padded positions with ``True``; ``*_is_causal`` are
        hints that the mask is causal (``None``: detected from the mask)."""
        is_batched = src.ndim == 3
        batch_axis = 0 if self.batch_first else 1
        if is_batched and src.shape[batch_axis] != tgt.shape[batch_axis]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """A causal mask for a sequence of ``sz``: ``(sz, sz)``, ``-inf`` above the
        diagonal (the later positions) and zeros elsewhere.

        >>> import gradcore as gc
        >>> gc.nn.Transformer.generate_square_subsequent_mask(3)
        tensor([[0., -inf, -inf],
                [0., 0., -inf],
                [0., 0., 0.]])
        """
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self):
        for p in self.parameters():
            if p.ndim > 1:
                xavier_uniform_(p)


class TransformerEncoder(Module):
    """PyTorch's ``nn.TransformerEncoder``: ``num_layers`` copies of ``encoder_layer``
    (``layers``) applied in turn, then ``norm`` when given. ``enable_nested_tensor`` and
    ``mask_check`` are PyTorch's: in evaluation mode, without gradients, with
    ``batch_first`` layers and a ``src_key_padding_mask`` (padding at the ends, checked
    when ``mask_check``), PyTorch runs its nested-tensor path, whose output is zero at
    the padded positions (before ``norm``); gradcore gives the same output there.
    Constructing one whose layer rules that path out warns as PyTorch does."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why_not = _why_no_nested_tensor(encoder_layer)
        if enable_nested_tensor and why_not:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False "
                          f"because {why_not}", stacklevel=2)
            self.use_nested_tensor = False

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        """``src`` ``(S, N, E)`` (``(N, S, E)`` with ``batch_first``, or unbatched ``(S,
        E)``) through the layers: ``mask`` is the self-attention's ``attn_mask``,
        ``src_key_padding_mask`` ``(N, S)`` marks padded positions with ``True``,
        ``is_causal`` says ``mask`` is causal (``None``: compared with the causal mask)."""
        src_key_padding_mask = F._canonical_mask(
            src_key_padding_mask, "src_key_padding_mask",
            None if mask is None else mask.dtype, "mask", src.dtype)
        mask = F._canonical_mask(mask, "mask", None, "", src.dtype, check_other=False)
        first_layer = self.layers[0]
        batch_first = first_layer.self_attn.batch_first
        padded = self._nested_padding(src, mask, src_key_padding_mask, first_layer)
        output = src
        is_causal = _detect_is_causal_mask(mask, is_causal, _get_seq_len(src, batch_first))
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=is_causal,
                           src_key_padding_mask=src_key_padding_mask if padded is None
                           else padded)
        if padded is not None:  # (PyTorch's nested tensor, padded back with zeros)
            output = output.masked_fill(padded.unsqueeze(-1), 0.0)
        if self.norm is not None:
            output = self.norm(output)
        return output

    def _nested_padding(self, src, mask, key_padding_mask, first_layer):
        """The padded positions ``(N, S)`` where PyTorch would take its nested-tensor
        path (its conditions, in its order), else ``None``. Each sequence keeps its first
        ``S - padded`` positions, as PyTorch's nested tensor does."""
        if (not self.use_nested_tensor or first_layer.training or src.ndim != 3
                or key_padding_mask is None):
            return None
        padded = key_padding_mask != 0  # (PyTorch's logical_not of the additive mask)
        positions = creation.arange(src.shape[1], device=src.device)
        lengths = padded.logical_not().sum(-1, keepdim=True)
        kept = positions < lengths
        if getattr(self, "mask_check", True) and not bool((kept == padded.logical_not()).all()):
            return None  # (not left aligned)
        if mask is not None or _autocast_on_cuda():
            return None
        tensors = [src, *first_layer.parameters()]
        if is_grad_enabled() and any(t.requires_grad for t in tensors):
            return None
        return kept.logical_not()


def _why_no_nested_tensor(encoder_layer):
    """Why PyTorch's TransformerEncoder cannot take its nested-tensor path with this layer
    ('' when it can)."""
    name = "encoder_layer"
    if not isinstance(encoder_layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    if encoder_layer.norm_first:
        return f"{name}.norm_first was True"
    if not encoder_layer.self_attn.batch_first:
        return (f"{name}.self_attn.batch_first was not True(use batch_first for better "
                "inference performance)")
    if not encoder_layer.self_attn._qkv_same_embed_dim:
        return f"{name}.self_attn._qkv_same_embed_dim was not True"
    if encoder_layer.self_attn.in_proj_bias is None:
        return f"{name}.self_attn was passed bias=False"
    if not encoder_layer.activation_relu_or_gelu:
        return f"{name}.activation_relu_or_gelu was not True"
    if encoder_layer.norm1.eps != encoder_layer.norm2.eps:
        return f"{name}.norm1.eps was not equal to {name}.norm2.eps"
    if encoder_layer.self_attn.num_heads % 2 == 1:
        return f"{name}.self_attn.num_heads is odd"
    return ""


class TransformerDecoder(Module):
    """PyTorch's ``nn.TransformerDecoder``: ``num_layers`` copies of ``decoder_layer``
    (``layers``) applied in turn against the same ``memory``, then ``norm`` when
    given."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        """``tgt`` ``(T, N, E)`` (``(N, T, E)`` with ``batch_first``) through the layers,
        each attending to ``memory`` (the encoder's output); the masks as
        :meth:`TransformerDecoderLayer.forward`'s, ``tgt_is_causal=None`` detected from
        ``tgt_mask``."""
        output = tgt
        seq_len = _get_seq_len(tgt, self.layers[0].self_attn.batch_first)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask,
                           tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerEncoderLayer(Module):
    """PyTorch's ``nn.TransformerEncoderLayer``: self-attention (``self_attn``) then a
    feed-forward block (``linear1``, ``activation``, ``dropout``, ``linear2``), each
    added to its input and normalized (``norm1``, ``norm2``) after the addition, or before
    the block with ``norm_first``; ``dropout1``/``dropout2`` drop each block's output.
    ``activation``: ``"relu"``, ``"gelu"`` or a callable (a module is registered as a
    submodule, as in PyTorch)."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        factory = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        # (PyTorch's flag for its fused path: 1 relu, 2 gelu, 0 another function)
        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        """``src`` ``(S, N, E)`` (``(N, S, E)`` with ``batch_first``, or unbatched) through
        the layer: ``src_mask`` is the self-attention's ``attn_mask`` (``(S, S)`` or ``(N *
        nhead, S, S)``; boolean ``True`` or ``-inf``: not attended),
        ``src_key_padding_mask`` ``(N, S)`` marks padded positions with ``True``,
        ``is_causal`` says ``src_mask`` is the causal mask."""
        src_key_padding_mask = F._canonical_mask(
            src_key_padding_mask, "src_key_padding_mask",
            None if src_mask is None else src_mask.dtype, "src_mask", src.dtype)
        src_mask = F._canonical_mask(src_mask, "src_mask", None, "", src.dtype,
                                     check_other=False)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask,
                                   is_causal=is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask,
                                              is_causal=is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerDecoderLayer(Module):
    """PyTorch's ``nn.TransformerDecoderLayer``: self-attention (``self_attn``), attention
    to the encoder's output (``multihead_attn``), then a feed-forward block (``linear1``,
    ``activation``, ``dropout``, ``linear2``), each added to its input and normalized
    (``norm1``, ``norm2``, ``norm3``) after the addition, or before the block with
    ``norm_first``; ``dropout1``/``dropout2``/``dropout3`` drop each block's output."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        factory = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            batch_first=batch_first, bias=bias, **factory)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                 batch_first=batch_first, bias=bias,
                                                 **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        if isinstance(activation, str):
            self.activation = _get_activation_fn(activation)
        else:
            self.activation = activation

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        """``tgt`` ``(T, N, E)`` (``(N, T, E)`` with ``batch_first``) through the layer
        against ``memory`` ``(S, N, E)``: ``tgt_mask`` ``(T, T)`` and ``memory_mask`` ``(T,
        S)`` are the two attentions' ``attn_mask``, ``tgt_key_padding_mask`` ``(N, T)``
        and ``memory_key_padding_mask`` ``(N, S)`` mark padded positions with ``True``;
        ``tgt_is_causal``/``memory_is_causal`` say the masks are causal."""
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask,
                                   tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask,
                                              tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask,
                                               memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)
