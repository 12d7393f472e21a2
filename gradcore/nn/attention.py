"""``nn.MultiheadAttention``, PyTorch's module over ``F.multi_head_attention_forward``
(PyTorch's parameter names, initialization, masks and returned weights), and
``torch.nn.attention``'s :func:`sdpa_kernel` and :class:`SDPBackend`.

>>> import gradcore as gc
>>> mha = gc.nn.MultiheadAttention(8, 2, batch_first=True)
>>> x = gc.randn(3, 5, 8)
>>> out, weights = mha(x, x, x)
>>> out.shape, weights.shape
(gradcore.Size([3, 5, 8]), gradcore.Size([3, 5, 5]))
"""

from __future__ import annotations

import contextlib
import enum

from .. import creation
from ..tensor import Parameter
from . import functional as F
from . import init
from .modules import Linear, Module

__all__ = ["MultiheadAttention", "NonDynamicallyQuantizableLinear", "SDPBackend",
           "sdpa_kernel"]


class SDPBackend(enum.Enum):
    """The kernels PyTorch may pick for ``F.scaled_dot_product_attention``
    (``torch.nn.attention.SDPBackend``). gradcore has one implementation, whichever is
    named."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_backends = [SDPBackend.MATH, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
             SDPBackend.CUDNN_ATTENTION, SDPBackend.OVERRIDEABLE]


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Context manager choosing the kernels of ``F.scaled_dot_product_attention``
    (PyTorch's ``torch.nn.attention.sdpa_kernel``): an :class:`SDPBackend` or a list of
    them, checked as PyTorch checks them. gradcore's attention has one implementation,
    the same on every device, so inside the block it computes what it computes outside:
    the choice changes neither results nor which inputs are accepted."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError(f"Backend must be an instance of SDPBackend or a list of "
                             f"SDPBackend instances, got {type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    for b in backends:
        if not isinstance(b, SDPBackend):
            raise TypeError(f"sdpa_kernel: expected SDPBackend values, got "
                            f"{type(b).__name__}")
    previous = list(_backends)
    _backends[:] = dict.fromkeys(backends)
    try:
        yield {}
    finally:
        _backends[:] = previous


class NonDynamicallyQuantizableLinear(Linear):
    """A :class:`Linear` under PyTorch's name for ``MultiheadAttention.out_proj``."""


class MultiheadAttention(Module):
    """Multi-head attention (PyTorch's ``nn.MultiheadAttention``): ``embed_dim`` split
    into ``num_heads`` heads; inputs ``(L, N, E)`` (``batch_first``: ``(N, L, E)``) or
    unbatched ``(L, E)``; ``forward`` returns the output and, with ``need_weights``, the
    attention weights averaged over the heads (``average_attn_weights``) or per head.
    ``key_padding_mask`` ``(N, S)`` and boolean ``attn_mask`` mark with ``True`` what is
    NOT attended (PyTorch's convention here, the opposite of
    ``scaled_dot_product_attention``'s); float masks are added."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        if embed_dim % num_heads:
            raise AssertionError("embed_dim must be divisible by num_heads")
        kw = dict(device=device, dtype=dtype)
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.batch_first, self.head_dim = batch_first, embed_dim // num_heads
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(creation.empty(3 * embed_dim, embed_dim, **kw))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(creation.empty(embed_dim, embed_dim, **kw))
            self.k_proj_weight = Parameter(creation.empty(embed_dim, self.kdim, **kw))
            self.v_proj_weight = Parameter(creation.empty(embed_dim, self.vdim, **kw))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(creation.empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(creation.empty(1, 1, embed_dim, **kw))
            self.bias_v = Parameter(creation.empty(1, 1, embed_dim, **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        """The attention output ``(L, N, E)`` (``(N, L, E)`` with ``batch_first``, ``(L,
        E)`` unbatched) and the attention weights ``(N, L, S)`` (per head: ``(N,
        num_heads, L, S)``) or ``None`` without ``need_weights``, through
        :func:`~gradcore.nn.functional.multi_head_attention_forward` as PyTorch."""
        is_batched = query.ndim == 3
        key_padding_mask = F._canonical_mask(
            key_padding_mask, "key_padding_mask",
            None if attn_mask is None else attn_mask.dtype, "attn_mask", query.dtype)
        attn_mask = F._canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                      check_other=False)
        if self.batch_first and is_batched:
            # (transposed once each, so that `query is key is value` still holds)
            query, key, value = F._transpose_keeping_identity(query, key, value)
        separate = {} if self._qkv_same_embed_dim else dict(
            use_separate_proj_weight=True, q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight)
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            average_attn_weights=average_attn_weights, is_causal=is_causal, **separate)
        if self.batch_first and is_batched:
            out = out.transpose(1, 0)
        return out, weights
