"""``torch.nn.modules.adaptive``: the adaptive softmax, bound to gradcore's own class
(the one ``gradcore.nn`` holds)."""

from ..adaptive import AdaptiveLogSoftmaxWithLoss, _ASMoutput  # noqa: F401  (re-exported)

__all__ = ["AdaptiveLogSoftmaxWithLoss"]
