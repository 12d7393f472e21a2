"""Neural-network building blocks: modules, functional ops, initializers.

``gradcore.nn`` mirrors ``torch.nn``: :class:`Module` and its layers and losses,
:class:`Parameter`, ``gradcore.nn.functional`` (PyTorch's ``F``) and
``gradcore.nn.init``.
"""

from ..tensor import Parameter
from . import functional, init
from .modules import (
    GELU,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    LayerNorm,
    Linear,
    LogSoftmax,
    Module,
    ModuleList,
    MSELoss,
    NLLLoss,
    ReLU,
    Sequential,
    Sigmoid,
    Softmax,
    Softplus,
    Tanh,
)

__all__ = ["Parameter", "functional", "init", "Module", "Sequential", "ModuleList", "Linear",
           "Embedding", "LayerNorm", "Dropout", "ReLU", "Tanh", "Sigmoid", "GELU", "Softplus",
           "Softmax", "LogSoftmax", "Flatten", "Identity", "MSELoss", "CrossEntropyLoss",
           "NLLLoss", "BCEWithLogitsLoss"]
