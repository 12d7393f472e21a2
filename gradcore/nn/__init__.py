"""Neural-network building blocks: modules, functional ops, initializers."""

from ..tensor import Parameter

__all__ = ["Parameter"]
