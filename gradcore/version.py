"""``torch.version``: gradcore's ``__version__`` and the build facts programs read.

``cuda`` is the CUDA runtime version of the CuPy that gradcore's GPU path runs on
(``"12.4"``), read from CuPy each time it is asked (CuPy is imported then, never
when gradcore is), or None where CuPy cannot be imported. ``hip`` is None (no ROCm),
``debug`` False and ``git_version`` ``"Unknown"`` (gradcore records no commit).
"""

from __future__ import annotations

import sys
import types

from . import backend

# (and __version__, which the reference names in its text: an anchor cannot spell it)
__all__ = ["debug", "cuda", "git_version", "hip"]  # noqa: F822  (cuda: a property)

__version__ = "0.1.0"
"""gradcore's version (``gradcore.__version__``)."""
cuda: str | None  # (no value here: a property of the module, read from CuPy when asked)
"""The CUDA runtime version of the CuPy gradcore runs on, as ``"12.4"``; None where CuPy
cannot be imported."""
debug = False
"""False: gradcore has no debug build."""
git_version = "Unknown"
"""The commit gradcore was built from: not recorded."""
hip = None
"""None: gradcore has no ROCm (HIP) build."""


class _Version(types.ModuleType):
    @property
    def cuda(self) -> str | None:
        """The CUDA runtime version of the CuPy gradcore runs on, as ``"12.4"``; None
        where CuPy cannot be imported (read when asked, not at import)."""
        return backend.cuda_runtime_version()


sys.modules[__name__].__class__ = _Version  # (cuda: a property of this module)
