"""The host build of the CUDA kernels: the very source a GPU compiles, built with the
host C++ compiler (``kernels/host_emulation.h`` stands in for CUDA's index variables,
shared memory and ``__syncthreads``), so that the tests run every kernel on the CPU
against its NumPy twin without a GPU (:func:`run_host`, :func:`launch_host`)."""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from .source import (
    _ARRAY_KINDS,
    DTYPES,
    GENERATED,
    HELPERS,
    _entry_name,
    all_kernels,
    check_arguments,
    entry,
    host_entry_source,
    kernel_arguments,
    kernel_count,
    kernels_dir,
    signature,
)
from .spec import Update

__all__ = ["build_host_library", "host_library", "host_supports", "launch_host", "run_host"]



def _cxx() -> str:
    return os.environ.get("CXX") or "g++"


# -ffp-contract=off: no fused multiply-adds, so the host build rounds every operation
# as NumPy does (the tests compare some kernels bit for bit; GPUs do contract).
HOST_FLAGS = ("-O2", "-shared", "-fPIC", "-std=c++17", "-ffp-contract=off",
              "-DGRADCORE_HOST_BUILD")
_LIB_NAME = "libgradcore_kernels_host.so"


def _cache_root() -> Path:
    env = os.environ.get("GRADCORE_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "gradcore"


def build_host_library(cache_dir: str | os.PathLike | None = None) -> Path:
    """Compile ``kernels/pointwise_backward.cu`` for the host, once, and return the path.

    The library lands in ``<cache>/host-kernels/<key>/`` where the cache is
    ``cache_dir``, ``$GRADCORE_CACHE_DIR`` or ``~/.cache/gradcore`` and the key hashes
    the kernel sources, the generated entry file, the compiler and its flags: an
    unchanged build is reused, a changed one gets a new folder.
    """
    cxx = _cxx()
    if shutil.which(cxx) is None:
        raise RuntimeError(f"no host C++ compiler {cxx!r} (set CXX) to build the kernels")
    src_dir = kernels_dir()
    entry = host_entry_source()
    h = hashlib.sha256()
    for name in (GENERATED, *HELPERS):
        h.update(name.encode() + b"\0" + (src_dir / name).read_bytes() + b"\0")
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout
    h.update(entry.encode() + b"\0" + cxx.encode() + b"\0" + version.encode() + b"\0")
    h.update(" ".join(HOST_FLAGS).encode())
    root = Path(cache_dir) if cache_dir is not None else _cache_root()
    out_dir = root / "host-kernels" / h.hexdigest()[:20]
    lib = out_dir / _LIB_NAME
    if lib.is_file():
        return lib
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        entry_path = Path(tmp) / "host_entry.cpp"
        entry_path.write_text(entry)
        tmp_lib = Path(tmp) / _LIB_NAME
        cmd = [cxx, *HOST_FLAGS, f"-I{src_dir}", "-x", "c++", str(src_dir / GENERATED),
               str(entry_path), "-o", str(tmp_lib)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"host build of the CUDA kernels failed:\n{' '.join(cmd)}\n"
                               f"{proc.stderr}")
        os.replace(tmp_lib, lib)  # atomic: concurrent builders never see half a file
    return lib


_LIBS: dict[str, ctypes.CDLL] = {}
# the library's path by a key that is cheap to form (the cache folder, the compiler, the
# sources' sizes and times, the number of kernels): every launch of the CuPy stand-in asks
# for the library, and build_host_library's hashing, generated entry source and
# `--version` subprocess cost 14 ms a launch
_BUILT: dict[tuple, str] = {}


@functools.lru_cache(maxsize=8)
def _source_paths(folder: str) -> tuple[str, ...]:
    return tuple(os.path.join(folder, name) for name in (GENERATED, *HELPERS))


def _quick_key(cache_dir) -> tuple:
    # strings and os.stat: pathlib's joins cost more than the stats themselves
    folder = str(kernels_dir())
    stats = tuple((st.st_mtime_ns, st.st_size) for st in map(os.stat, _source_paths(folder)))
    root = str(cache_dir) if cache_dir is not None else \
        os.environ.get("GRADCORE_CACHE_DIR") or os.path.expanduser("~")  # (_cache_root's)
    return (root, _cxx(), folder, stats, kernel_count())


def host_library(cache_dir: str | os.PathLike | None = None) -> ctypes.CDLL:
    """The host build of the kernels, loaded with ctypes (built on first use; later calls
    with the same sources find it by a dict lookup)."""
    key = _quick_key(cache_dir)
    path = _BUILT.get(key)
    if path is None:
        path = _BUILT[key] = str(build_host_library(cache_dir))
    lib = _LIBS.get(path)
    if lib is None:
        lib = _LIBS[path] = ctypes.CDLL(path)
    return lib


def host_supports(dtype: str, lib: ctypes.CDLL | None = None) -> bool:
    """Whether the host build has the kernels of ``dtype`` (float16 needs _Float16)."""
    lib = host_library() if lib is None else lib
    name = _entry_name(next(iter(all_kernels().values())), dtype) + "_launch"
    return hasattr(lib, name)


def _launch_shape(n: int) -> tuple[int, int]:
    """A grid and block that do not divide ``n``: tails and grid-stride loops run."""
    block = next((b for b in (96, 80, 112, 72) if n % b), 96)
    grid = max(1, min(7, -(-n // block)))
    while grid > 1 and n % (grid * block) == 0:
        grid -= 1
    return grid, block



_CTYPE_OF = {"float": ctypes.c_float, "double": ctypes.c_double}


def launch_host(name: str, values, grid: int, block: int,
                lib: ctypes.CDLL | None = None) -> None:
    """Launch entry point ``name`` of the host build over ``grid`` x ``block`` threads
    with ``values`` (checked by :func:`check_arguments`)."""
    check_arguments(name, values)
    k, dtype = entry(name)
    lib = host_library() if lib is None else lib
    try:
        fn = getattr(lib, f"{name}_launch")
    except AttributeError:
        raise RuntimeError(f"the host build has no {name}: the compiler lacks _Float16, "
                           "or kernels/pointwise_backward.cu is stale (run "
                           "`python -m gradcore.kernels --write`)") from None
    compute = DTYPES[dtype][1]
    holders = []
    for (kind, _), v in zip(signature(k), values):
        if kind in _ARRAY_KINDS:
            holders.append(ctypes.c_void_p(v.ctypes.data))
        elif kind == "scalar":
            holders.append(_CTYPE_OF[compute](float(v)))
        else:
            holders.append(ctypes.c_longlong(int(v)))
    args = (ctypes.c_void_p * len(holders))(*[ctypes.addressof(h) for h in holders])
    if fn.argtypes is None:  # (once per entry point: the library keeps its functions)
        fn.restype = None
        fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_int]
    fn(args, int(grid), int(block))



def run_host(name: str, *args, grid: int | None = None, block: int | None = None,
             out=None, lib: ctypes.CDLL | None = None):
    """Run kernel ``name`` through the host build on NumPy arrays (any layout) and
    numbers (its scalars).

    A pointwise kernel returns its output (a tuple for several); an update writes into
    its arrays and returns None.
    """
    k = all_kernels()[name]
    if len(args) != len(k.arguments):
        raise TypeError(f"{name} takes {len(k.arguments)} arguments "
                        f"({', '.join(k.arguments)}), got {len(args)}")
    entry_name, values, outs, n = kernel_arguments(k, args, np, out)
    if n:
        if grid is None or block is None:
            g, b = _launch_shape(n)
            grid = g if grid is None else grid
            block = b if block is None else block
        launch_host(entry_name, values, grid, block, lib)
    if isinstance(k, Update):
        return None
    return outs[0] if len(outs) == 1 else outs
