"""``gradcore.onnx``: the names of ``torch.onnx`` that programs import.

gradcore has no ONNX exporter: programs that ``import torch.onnx`` (pytorch/examples'
word language model does, and exports only when asked) run, and :func:`export` says
plainly that it cannot export.

>>> import gradcore.onnx
>>> gradcore.onnx.is_in_onnx_export()
False
"""

from __future__ import annotations

__all__ = ["export", "is_in_onnx_export"]


def export(model, args=(), f=None, *rest, **kwargs):
    """Not available: gradcore cannot write ONNX graphs (``NotImplementedError``). Save
    the weights with ``gc.save(model.state_dict(), path)`` and export them from
    PyTorch, which loads that file."""
    raise NotImplementedError("gradcore cannot export ONNX models (torch.onnx.export): save "
                              "the state_dict with gradcore.save and export it from PyTorch")


def is_in_onnx_export() -> bool:
    """Whether an ONNX export is running: never, in gradcore."""
    return False
