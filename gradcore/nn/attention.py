"""``nn.MultiheadAttention``, PyTorch's module over ``F.scaled_dot_product_attention``'s
arithmetic (PyTorch's parameter names, initialization, masks and returned weights).

>>> import gradcore as gc
>>> mha = gc.nn.MultiheadAttention(8, 2, batch_first=True)
>>> x = gc.randn(3, 5, 8)
>>> out, weights = mha(x, x, x)
>>> out.shape, weights.shape
(gradcore.Size([3, 5, 8]), gradcore.Size([3, 5, 5]))
"""

from __future__ import annotations

import math

from .. import creation, dtypes
from ..tensor import Parameter
from . import functional as F
from . import init
from .modules import Linear, Module

__all__ = ["MultiheadAttention", "NonDynamicallyQuantizableLinear"]


class NonDynamicallyQuantizableLinear(Linear):
    """A :class:`Linear` under PyTorch's name for ``MultiheadAttention.out_proj``."""


def _merge_masks(attn_mask, key_padding_mask, n, heads, l, s, dtype):
    """The additive bias ``(N, H, L, S)`` (or broadcastable) of PyTorch's two masks:
    ``True`` in a boolean mask means *not* attended (``-inf``), a float mask is added."""
    bias = None
    for mask, shape in ((attn_mask, None), (key_padding_mask, (n, 1, 1, s))):
        if mask is None:
            continue
        if mask.dtype == dtypes.bool_:
            m = creation.zeros(tuple(mask.shape), dtype=dtype, device=mask.device)
            m = m.masked_fill(mask, float("-inf"))
        else:
            m = mask.to(dtype)
        if shape is not None:
            m = m.reshape(shape)
        elif m.ndim == 3:  # (N * H, L, S)
            m = m.reshape(n, heads, l, s)
        bias = m if bias is None else bias + m
    return bias


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
        batched = query.ndim == 3
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        l, n, e = query.shape
        if e != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but "
                                 f"got {e}")
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use "
                               "the Transformer module method `generate_square_subsequent_mask`"
                               " to create this mask.")
        b = self.in_proj_bias
        bq, bk, bv = (None, None, None) if b is None else b.chunk(3)
        if self._qkv_same_embed_dim:
            wq, wk, wv = self.in_proj_weight.chunk(3)
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        q, k, v = F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)
        if self.bias_k is not None:
            k = creation_cat(k, self.bias_k.expand(1, n, e))
            v = creation_cat(v, self.bias_v.expand(1, n, e))
            attn_mask = _pad_last(attn_mask)
            key_padding_mask = _pad_last(key_padding_mask)
        if self.add_zero_attn:
            k = creation_cat(k, creation.zeros((1, n, e), dtype=k.dtype, device=k.device))
            v = creation_cat(v, creation.zeros((1, n, e), dtype=v.dtype, device=v.device))
            attn_mask = _pad_last(attn_mask)
            key_padding_mask = _pad_last(key_padding_mask)
        s, h, d = k.shape[0], self.num_heads, self.head_dim
        # (L, N, E) -> (N, H, L, D)
        q = q.reshape(l, n, h, d).permute(1, 2, 0, 3)
        k = k.reshape(s, n, h, d).permute(1, 2, 0, 3)
        v = v.reshape(s, n, h, d).permute(1, 2, 0, 3)
        bias = _merge_masks(attn_mask, key_padding_mask, n, h, l, s, q.dtype)
        scores = (q * math.sqrt(1.0 / d)) @ k.transpose(-2, -1)
        if bias is not None:
            scores = scores + bias
        weights = F.softmax(scores, dim=-1)
        if self.dropout > 0.0 and self.training:
            weights = F.dropout(weights, self.dropout, training=True)
        out = (weights @ v).permute(2, 0, 1, 3).reshape(l, n, e)
        out = self.out_proj(out)
        if self.batch_first and batched:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(1)
        if not need_weights:
            return out, None
        w = weights.mean(1) if average_attn_weights else weights  # (after dropout, as PyTorch)
        return out, (w if batched else w.squeeze(0))


def creation_cat(a, b):
    """``a`` and ``b`` joined along the sequence (first) axis."""
    from ..ops import cat  # noqa: PLC0415  (the ops layer, below nn)

    return cat([a, b], 0)


def _pad_last(mask):
    """A mask with one more key column (not masked), as PyTorch pads for added keys."""
    if mask is None:
        return None
    return F.pad(mask, (0, 1))
