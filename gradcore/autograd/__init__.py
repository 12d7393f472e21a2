"""Autograd: the engine, grad modes, custom Functions and gradient checks."""

from . import forward_ad, functional, graph
from .function import Function, FunctionCtx
from .functional import backward, grad
from .grad_mode import (
                        detect_anomaly,
                        enable_grad,
                        is_anomaly_enabled,
                        is_grad_enabled,
                        no_grad,
                        set_grad_enabled,
)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .graph import Node

__all__ = ["Function", "FunctionCtx", "backward", "grad", "detect_anomaly", "enable_grad",
           "is_anomaly_enabled", "is_grad_enabled", "no_grad", "set_grad_enabled",
           "GradcheckError", "gradcheck", "gradgradcheck", "Node", "forward_ad", "functional",
           "graph"]
