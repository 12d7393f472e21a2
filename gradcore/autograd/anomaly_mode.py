"""PyTorch's ``torch.autograd.anomaly_mode``: the anomaly-detection switches
(:class:`detect_anomaly`, :class:`set_detect_anomaly`), which ``gradcore.autograd``
holds too."""

from .grad_mode import detect_anomaly, set_detect_anomaly

__all__ = ["detect_anomaly", "set_detect_anomaly"]
