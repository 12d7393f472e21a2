"""``torch.nn.modules.activation``: the activation layers. The names programs import from
here, bound to gradcore's own classes (those ``gradcore.nn`` holds)."""


from ..attention import (  # noqa: F401  (re-exported)
    MultiheadAttention,
)
from . import (  # noqa: F401  (re-exported)
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    RReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softmax2d,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
)

__all__ = ["Threshold", "ReLU", "RReLU", "Hardtanh", "ReLU6", "Sigmoid", "Hardsigmoid",
           "Tanh", "SiLU", "Mish", "Hardswish", "ELU", "CELU", "SELU", "GLU", "GELU",
           "Hardshrink", "LeakyReLU", "LogSigmoid", "Softplus", "Softshrink", "PReLU",
           "Softsign", "Tanhshrink", "Softmin", "Softmax", "Softmax2d", "LogSoftmax",
           "MultiheadAttention"]
