"""``torch.nn.modules.sparse``: the embeddings. The names programs import from here, bound
to gradcore's own classes (those ``gradcore.nn`` holds)."""


from . import (  # noqa: F401  (re-exported)
    Embedding,
    EmbeddingBag,
)

__all__ = ["Embedding", "EmbeddingBag"]
