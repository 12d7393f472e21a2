"""The registry of custom ops (``gradcore.library.custom_op``): ``gc.ops.<namespace>.<name>``.

PyTorch reaches a custom op ``"mylib::mysin"`` as ``torch.ops.mylib.mysin`` (an
``OpOverloadPacket``, whose one overload is ``.default``). ``gradcore.library`` fills
:data:`OPS` when an op is defined; ``gradcore.ops``'s module ``__getattr__`` answers a
namespace that holds ops with an :class:`OpNamespace`. Only names ``gradcore.ops`` does
not have itself reach a namespace (its families and ops keep their meaning).
"""

from __future__ import annotations

# "namespace::name" -> the op's OpOverloadPacket (a redefinition replaces it, as in PyTorch)
OPS: dict[str, OpOverloadPacket] = {}


class OpOverload:
    """``gc.ops.<namespace>.<name>.default``: the op's one overload, callable."""

    def __init__(self, packet: OpOverloadPacket):
        self._packet = packet
        self._namespace, self._opname = packet._namespace, packet._opname
        self._overloadname = "default"

    @property
    def _op(self):
        return self._packet._op

    @property
    def _schema(self):
        return self._packet._op._schema

    def name(self) -> str:
        """The qualified name, ``"mylib::mysin"``."""
        return f"{self._namespace}::{self._opname}"

    def __call__(self, *args, **kwargs):
        return self._packet._op._dispatch(args, kwargs)

    def __repr__(self):
        return f"{self._namespace}.{self._opname}.default"

    __str__ = __repr__


class OpOverloadPacket:
    """``gc.ops.<namespace>.<name>``: calls the custom op; ``.default`` is its overload."""

    def __init__(self, namespace: str, name: str, op):
        self._namespace, self._opname, self._op = namespace, name, op
        self.default = OpOverload(self)

    @property
    def _qualified_op_name(self) -> str:
        return f"{self._namespace}::{self._opname}"

    def overloads(self) -> list[str]:
        """The names of the overloads: ``["default"]``."""
        return ["default"]

    def __call__(self, *args, **kwargs):
        return self._op._dispatch(args, kwargs)

    def __repr__(self):
        return f"{self._namespace}.{self._opname}"

    __str__ = __repr__


class OpNamespace:
    """``gc.ops.<namespace>``: the custom ops defined in one namespace, as attributes."""

    def __init__(self, namespace: str):
        self.name = namespace

    def __getattr__(self, name: str):
        packet = OPS.get(f"{self.name}::{name}")
        if packet is None:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute "
                                 f"'{name}'")
        return packet

    def __dir__(self):
        prefix = self.name + "::"
        return sorted(q[len(prefix):] for q in OPS if q.startswith(prefix))

    def __repr__(self):
        return f"<module 'gradcore.ops.{self.name}' from 'gradcore.ops'>"


def register(namespace: str, name: str, op) -> OpOverloadPacket:
    """Make ``op`` (a ``CustomOpDef``) ``gc.ops.<namespace>.<name>``."""
    packet = OPS[f"{namespace}::{name}"] = OpOverloadPacket(namespace, name, op)
    return packet


def namespace(name: str) -> OpNamespace | None:
    """The namespace ``name`` when some custom op was defined in it, else None."""
    prefix = name + "::"
    return OpNamespace(name) if any(q.startswith(prefix) for q in OPS) else None
