"""``gc.save`` / ``gc.load``: checkpoints in the safetensors format, never pickle.

A checkpoint is one safetensors file.  Its tensors are stored as safetensors tensors
named by their path in the saved object (``"fc.weight"``, ``"state.0.exp_avg"``), so
``safetensors.numpy.load_file`` (or ``safetensors.torch`` / ``safetensors.flax``) opens
a gradcore checkpoint as a flat dict of arrays.  The nesting and the Python values
(dicts with string or int keys, lists, tuples, ints, floats including inf and nan,
bools, strings, None) are JSON in the file's metadata, under the key ``"gradcore"``.
Loading parses JSON and copies bytes: nothing in a file is ever executed.

Writing is atomic: the file is written under a temporary name in the same folder,
flushed to disk, renamed over the target and the folder synced, so a crash leaves
either the old file or the new one, whole.

>>> import os, tempfile
>>> import gradcore as gc
>>> path = os.path.join(tempfile.mkdtemp(), "ckpt.safetensors")
>>> gc.save({"w": gc.ones(2), "step": 3, "betas": (0.9, 0.999)}, path)
>>> gc.load(path)
{'w': tensor([1., 1.]), 'step': 3, 'betas': (0.9, 0.999)}
"""

from __future__ import annotations

import json
import math
import os
import secrets
import struct

import numpy as np
import safetensors
import safetensors.numpy

from .backend import device as _device
from .backend import to_host
from .creation import from_numpy
from .tensor import Tensor

__all__ = ["save", "load", "CheckpointError"]

FORMAT_VERSION = 1
_META_KEY = "gradcore"
_MAX_HEADER = 100 * 1024 * 1024  # safetensors' own limit on the JSON header


class CheckpointError(ValueError):
    """A file that ``gc.load`` refuses: not safetensors, truncated, or malformed."""


# --------------------------------------------------------------------------------------
# save
# --------------------------------------------------------------------------------------
def save(obj, f) -> None:
    """Write ``obj`` (a state dict: nested dicts, lists, tuples of tensors and Python
    values) to ``f``, a path (written atomically) or a binary file object."""
    arrays: dict[str, np.ndarray] = {}
    tree = _Encoder(arrays).encode(obj)
    metadata = {_META_KEY: json.dumps({"version": FORMAT_VERSION, "tree": tree},
                                      allow_nan=False, separators=(",", ":"))}
    if hasattr(f, "write"):
        f.write(safetensors.numpy.save(arrays, metadata=metadata))
        return
    _atomic_write(os.fspath(f), arrays, metadata)


def _write_safetensors(arrays, path, metadata) -> None:
    """Write the safetensors file (a seam: tests make it fail half-way)."""
    safetensors.numpy.save_file(arrays, path, metadata=metadata)


def _atomic_write(path: str, arrays, metadata) -> None:
    path = os.path.realpath(path)  # through a symlink: replace its target, keep the link
    folder = os.path.dirname(path)
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
    # O_EXCL: the name is ours alone (the safetensors writer then rewrites the file)
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    try:
        _write_safetensors(arrays, tmp, metadata)
        os.chmod(tmp, _new_file_mode(path))
        with open(tmp, "rb+") as fh:
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_folder(folder)


def _new_file_mode(path: str) -> int:
    """The permissions for the new file: the old file's, else what the umask allows."""
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        pass
    try:
        with open("/proc/self/status") as fh:  # Linux: read the umask without changing it
            for line in fh:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except OSError:
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def _fsync_folder(folder: str) -> None:
    """Make the rename itself durable (POSIX; Windows cannot open folders)."""
    if os.name == "nt":  # pragma: no cover
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _Encoder:
    """Turns an object into a JSON tree, collecting its tensors as named arrays.

    Tree nodes: JSON null, true/false, numbers (ints without a point, floats with one,
    as Python's ``json`` writes them) and strings stand for themselves; lists are
    arrays; everything else is an object with one ``$`` tag: ``{"$dict": [[key,
    node], ...]}`` (keys are strings or ints), ``{"$tuple": [...]}``, ``{"$float":
    "inf" | "-inf" | "nan"}``, ``{"$tensor": name, "device": ..., ...}``.
    """

    def __init__(self, arrays: dict):
        self.arrays = arrays
        self.names: dict[int, str] = {}   # id(tensor) -> its array's name (shared once)
        self.keep: list = []              # keeps those ids alive while encoding
        self.open: set[int] = set()       # containers being encoded (cycle check)

    def encode(self, obj, path=()):
        if obj is None or isinstance(obj, bool):
            return obj
        if isinstance(obj, Tensor):
            return self._tensor(obj, path)
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            if math.isfinite(obj):
                return float(obj)
            return {"$float": "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")}
        if isinstance(obj, str):
            return str(obj)
        if isinstance(obj, (dict, list, tuple)):
            if id(obj) in self.open:
                raise ValueError(f"gc.save: the object contains itself at {_where(path)}")
            self.open.add(id(obj))
            try:
                if isinstance(obj, dict):
                    return {"$dict": [[self._key(k, path), self.encode(v, path + (k,))]
                                      for k, v in obj.items()]}
                items = [self.encode(v, path + (i,)) for i, v in enumerate(obj)]
                return items if isinstance(obj, list) else {"$tuple": items}
            finally:
                self.open.discard(id(obj))
        raise TypeError(f"gc.save cannot store a {type(obj).__module__}.{type(obj).__name__} "
                        f"(at {_where(path)}): checkpoints hold tensors, dicts, lists, tuples, "
                        "ints, floats, bools, strings and None")

    @staticmethod
    def _key(k, path):
        if isinstance(k, str):
            return str(k)
        if isinstance(k, int) and not isinstance(k, bool):
            return int(k)
        raise TypeError(f"gc.save: dict keys must be strings or ints, got "
                        f"{type(k).__name__} {k!r} at {_where(path)}")

    def _tensor(self, t: Tensor, path):
        name = self.names.get(id(t))
        if name is None:
            name = ".".join(str(p) for p in path) or "tensor"
            if name in self.arrays or name == "__metadata__":
                n = 2
                while f"{name}#{n}" in self.arrays:
                    n += 1
                name = f"{name}#{n}"
            arr = np.require(np.asarray(to_host(t._data)), requirements="C")  # keeps 0-d
            if arr.dtype.byteorder == ">":
                arr = arr.astype(arr.dtype.newbyteorder("<"))
            self.arrays[name] = arr
            self.names[id(t)] = name
            self.keep.append(t)
        node = {"$tensor": name, "device": str(t.device)}
        if t.requires_grad:
            node["requires_grad"] = True
        return node


def _where(path) -> str:
    return "the top level" if not path else "[" + "][".join(repr(p) for p in path) + "]"


# --------------------------------------------------------------------------------------
# load
# --------------------------------------------------------------------------------------
def load(f, map_location=None):
    """Read a checkpoint written by :func:`save` (or any safetensors file).

    ``f`` is a path or a binary file object.  Tensors load onto the CPU unless
    ``map_location`` says otherwise: a device (``"cuda:0"``, ``gc.device(...)``), a dict
    from saved device to device (``{"cuda:0": "cpu"}``; devices it does not name go to
    the CPU), or a callable ``fn(tensor, saved_device)`` returning the tensor to use (or
    a device, or ``None`` to keep the CPU tensor), as PyTorch's common uses.  A plain
    safetensors file (no gradcore metadata) loads as a flat dict of tensors.

    Pickles (``torch.save`` or ``pickle`` output) are refused, never unpickled.
    """
    name = repr(os.fspath(f)) if not hasattr(f, "read") else "the file object"
    if hasattr(f, "read"):
        data = f.read()
        header = _read_header(data[:8], lambda n: data[8:8 + n], len(data), name)
        arrays = _safetensors_call(lambda: safetensors.numpy.load(bytes(data)), name)
    else:
        path = os.fspath(f)
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(8)
            header = _read_header(head, fh.read, size, name)
        arrays = _safetensors_call(lambda: safetensors.numpy.load_file(path), name)

    meta = header.get("__metadata__") or {}
    place = _placement(map_location)
    if _META_KEY not in meta:  # a plain safetensors file: its tensors, by name
        return {k: place(_as_tensor(a), "cpu") for k, a in arrays.items()}
    try:
        doc = json.loads(meta[_META_KEY])
        version = doc["version"]
        tree = doc["tree"]
    except (ValueError, KeyError, TypeError, RecursionError) as e:
        raise CheckpointError(f"{name}: its gradcore metadata is not valid ({e})") from None
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise CheckpointError(f"{name} was written in gradcore checkpoint format "
                              f"{version!r}; this gradcore reads format {FORMAT_VERSION} "
                              "(upgrade gradcore)")
    return _Decoder(arrays, place, name).decode(tree)


def _read_header(head: bytes, read, size: int, name: str) -> dict:
    """Check that a file is a whole safetensors file and return its JSON header."""
    refuse = (" gradcore loads only safetensors files (written by gc.save or the "
              "safetensors package) and never unpickles anything.")
    if head[:4] == b"PK\x03\x04":
        raise CheckpointError(f"{name} is a zip archive, as torch.save writes (a pickle "
                              "inside), not a gradcore checkpoint." + refuse)
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        raise CheckpointError(f"{name} is a Python pickle, not a gradcore checkpoint."
                              + refuse)
    if head[:6] == b"\x93NUMPY":
        raise CheckpointError(f"{name} is a NumPy .npy file, not a gradcore checkpoint."
                              + refuse)
    if len(head) < 8:
        raise CheckpointError(f"{name} is not a safetensors file: it is only {size} bytes "
                              "long (empty or truncated)." + refuse)
    (n,) = struct.unpack("<Q", head)
    if n == 0 or n > _MAX_HEADER:
        raise CheckpointError(f"{name} is not a safetensors file (its first 8 bytes do not "
                              "give a plausible header length)." + refuse)
    text = read(n)
    if n > size - 8:
        if text[:1] == b"{":
            raise CheckpointError(f"{name} is truncated: its header alone needs {n + 8} "
                                  f"bytes but the file has {size}")
        raise CheckpointError(f"{name} is not a safetensors file." + refuse)
    try:
        header = json.loads(text)
        if not isinstance(header, dict):
            raise ValueError("not a JSON object")
        ends = [entry["data_offsets"][1] for k, entry in header.items()
                if k != "__metadata__"]
        if not all(isinstance(e, int) for e in ends):
            raise ValueError("bad data offsets")
    except (ValueError, KeyError, TypeError, IndexError):
        raise CheckpointError(f"{name} is not a safetensors file (its header is not "
                              "safetensors JSON)." + refuse) from None
    have = size - 8 - n
    need = max(ends, default=0)
    if need > have:
        raise CheckpointError(f"{name} is truncated: its header describes {need} bytes of "
                              f"tensor data but only {have} follow")
    if not isinstance(header.get("__metadata__", {}), dict):
        raise CheckpointError(f"{name}: its safetensors metadata is not a JSON object")
    return header


def _safetensors_call(fn, name):
    try:
        return fn()
    except Exception as e:  # SafetensorError and friends: say which file
        raise CheckpointError(f"{name} could not be read as safetensors: {e}") from None


def _as_tensor(arr: np.ndarray) -> Tensor:
    return from_numpy(np.require(arr, requirements=("W",)))


def _placement(map_location):
    """``place(cpu_tensor, saved_device_str) -> tensor`` for a ``map_location``."""
    if map_location is None:
        return lambda t, saved: t
    if callable(map_location):
        def place(t, saved):
            out = map_location(t, saved)
            if out is None:
                return t
            if isinstance(out, Tensor):
                return out
            return _move(t, out)
        return place
    if isinstance(map_location, dict):
        table = {_device(k): v for k, v in map_location.items()}

        def place(t, saved):
            target = table.get(_device(saved))
            return t if target is None else _move(t, target)
        return place
    target = _device(map_location)
    return lambda t, saved: _move(t, target)


def _move(t: Tensor, where) -> Tensor:
    dev = _device(where)
    return t if dev == t.device else t.to(dev)


class _Decoder:
    def __init__(self, arrays: dict, place, name: str):
        self.arrays = arrays
        self.place = place
        self.name = name
        self.tensors: dict[str, Tensor] = {}  # one tensor per stored array (sharing kept)

    def bad(self, what):
        return CheckpointError(f"{self.name}: its gradcore metadata is malformed ({what})")

    def decode(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self.decode(v) for v in node]
        if not isinstance(node, dict):
            raise self.bad(f"unexpected {type(node).__name__}")
        if "$dict" in node:
            out = {}
            for pair in node["$dict"]:
                if not (isinstance(pair, list) and len(pair) == 2
                        and isinstance(pair[0], (str, int)) and not isinstance(pair[0], bool)):
                    raise self.bad(f"bad dict entry {pair!r:.80}")
                out[pair[0]] = self.decode(pair[1])
            return out
        if "$tuple" in node:
            if not isinstance(node["$tuple"], list):
                raise self.bad("bad tuple")
            return tuple(self.decode(v) for v in node["$tuple"])
        if "$float" in node:
            text = node["$float"]
            if text not in ("inf", "-inf", "nan"):
                raise self.bad(f"bad float {text!r:.40}")
            return float(text)
        if "$tensor" in node:
            return self._tensor(node)
        raise self.bad(f"unknown node with keys {sorted(node)[:5]}")

    def _tensor(self, node):
        key = node["$tensor"]
        t = self.tensors.get(key)
        if t is not None:
            return t
        arr = self.arrays.get(key)
        if arr is None:
            raise CheckpointError(f"{self.name}: the tensor {key!r} named in its metadata is "
                                  "not in the file")
        t = self.place(_as_tensor(arr), str(node.get("device", "cpu")))
        if node.get("requires_grad"):
            t.requires_grad_(True)
        self.tensors[key] = t
        return t
