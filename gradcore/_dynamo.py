"""``torch._dynamo``: the few names programs use around ``torch.compile``, over
:func:`gradcore.compile`.

``reset()`` makes every compiled function record again; ``config.cache_size_limit``
is gc.compile's own limit on the signatures a function keeps (``gc.capture.
cache_size_limit``); ``disable`` is :func:`gradcore.compiler.disable` (the function as
it is: a call to it inside a compiled step is recorded with the step).
``config.suppress_errors`` is kept and read by nothing: gradcore's compile never fails
a call (what it cannot record runs eagerly, with a warning, unless
``fullgraph=True``), which is what ``suppress_errors = True`` asks of PyTorch's.
"""

from __future__ import annotations

from . import capture as _capture
from .compiler import disable

__all__ = ["config", "reset", "disable"]


class _Config:
    """``torch._dynamo.config``: ``cache_size_limit`` (gc.compile's, live) and
    ``suppress_errors`` (kept; see the module's text)."""

    suppress_errors = False

    @property
    def cache_size_limit(self) -> int:
        """The signatures a compiled function keeps recordings for; past it, new ones
        run eagerly (``gc.capture.cache_size_limit``)."""
        return _capture.cache_size_limit

    @cache_size_limit.setter
    def cache_size_limit(self, value: int) -> None:
        _capture.cache_size_limit = value


config = _Config()


def reset() -> None:
    """Forget what every compiled function recorded: their next calls record again."""
    _capture.reset()
