"""``torch.version``: gradcore's ``__version__`` and the build facts programs read.

``cuda`` is the CUDA runtime version of the CuPy that gradcore's GPU path runs on
(``"12.4"``), read the first time it is asked (CuPy is imported then, never when
gradcore is), or None where CuPy cannot be imported. ``hip`` is None (no ROCm),
``debug`` False and ``git_version`` ``"Unknown"`` (gradcore records no commit).
"""

from __future__ import annotations

from . import backend

__all__ = ["__version__", "debug", "cuda", "git_version", "hip"]  # noqa: F822  (cuda: __getattr__)

__version__ = "0.1.0"
debug = False
"""False: gradcore has no debug build."""
git_version = "Unknown"
"""The commit gradcore was built from: not recorded."""
hip = None
"""None: gradcore has no ROCm (HIP) build."""


def __getattr__(name):
    if name == "cuda":
        return backend.cuda_runtime_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
