"""``torch.nn.modules.transformer``: the transformer layers. The names programs import from
here, bound to gradcore's own classes (those ``gradcore.nn`` holds)."""


from ..transformer import (  # noqa: F401  (re-exported)
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
    _detect_is_causal_mask,
    _generate_square_subsequent_mask,
    _get_activation_fn,
    _get_clones,
    _get_seq_len,
)

__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoder",
           "TransformerEncoderLayer", "TransformerDecoderLayer"]
