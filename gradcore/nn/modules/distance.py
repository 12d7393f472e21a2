"""``torch.nn.modules.distance``: the distances. The names programs import from here, bound
to gradcore's own classes (those ``gradcore.nn`` holds)."""


from . import (  # noqa: F401  (re-exported)
    CosineSimilarity,
    PairwiseDistance,
)

__all__ = ["PairwiseDistance", "CosineSimilarity"]
