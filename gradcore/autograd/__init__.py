"""Autograd: the engine, grad modes, custom Functions and gradient checks."""

from . import anomaly_mode, forward_ad, functional, graph
from .function import Function, FunctionCtx
from .functional import backward, grad
from .grad_mode import (
                        detect_anomaly,
                        enable_grad,
                        inference_mode,
                        is_anomaly_check_nan_enabled,
                        is_anomaly_enabled,
                        is_grad_enabled,
                        no_grad,
                        set_detect_anomaly,
                        set_grad_enabled,
)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .graph import Node
from .variable import Variable

__all__ = ["Function", "FunctionCtx", "backward", "grad", "detect_anomaly", "enable_grad",
           "is_anomaly_enabled", "is_grad_enabled", "no_grad", "set_grad_enabled",
           "GradcheckError", "gradcheck", "gradgradcheck", "Node", "functional", "graph",
           "inference_mode", "set_detect_anomaly", "is_anomaly_check_nan_enabled", "Variable",
           "anomaly_mode", "forward_ad"]
