"""``torch.nn.modules.utils``' names: the argument parsers of the layers (``_pair(3)``
is ``(3, 3)``, ``_pair((2, 3))`` is ``(2, 3)``) and
:func:`consume_prefix_in_state_dict_if_present`."""

from ..conv import _ntuple, _pair, _reverse_repeat_tuple, _single, _triple  # noqa: F401

__all__ = ["consume_prefix_in_state_dict_if_present"]

_quadruple = _ntuple(4, "_quadruple")


def consume_prefix_in_state_dict_if_present(state_dict, prefix: str) -> None:
    """Strip ``prefix`` from the keys of ``state_dict`` that start with it, in place (the
    ``"module."`` that ``DataParallel`` and ``DistributedDataParallel`` put before each
    key), and from the keys of its ``_metadata`` where it has one.

    Args:
        state_dict: a state dict, as ``Module.state_dict()`` returns.
        prefix: the prefix to remove, as ``"module."``.
    """
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            # (the metadata's keys are the modules' names: "module" for the prefix itself)
            if key and (key == prefix.replace(".", "") or key.startswith(prefix)):
                metadata[key[len(prefix):]] = metadata.pop(key)
