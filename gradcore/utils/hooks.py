"""``torch.utils.hooks``: :class:`RemovableHandle`, what the hook registrations
(``Module.register_forward_hook``, ...) return, the class ``gradcore.nn`` holds."""

from ..nn.modules import RemovableHandle

__all__ = ["RemovableHandle"]
