"""``gc.save`` / ``gc.load``: checkpoints in the safetensors format, never pickle.

A checkpoint is one safetensors file.  Its tensors are stored as safetensors tensors
named by their path in the saved object (``"fc.weight"``, ``"state.0.exp_avg"``), so
``safetensors.numpy.load_file`` (or ``safetensors.torch`` / ``safetensors.flax``) opens
a gradcore checkpoint as a flat dict of arrays.  The nesting and the Python values
(dicts with string or int keys, lists, tuples, ints, floats including inf and nan,
bools, strings, None) are JSON in the file's metadata, under the key ``"gradcore"``.
Loading parses JSON and copies bytes: nothing in a file is ever executed.

Writing is atomic: the file is written under a temporary name in the same folder
(``.NAME.HOST.PID.RANDOM.tmp``), flushed to disk, renamed over the target and the
folder synced, so a crash leaves either the old file or the new one, whole.  A save
interrupted by SIGTERM or Ctrl-C removes its temporary; one killed outright (SIGKILL,
power loss) leaves it, and the next save to the same path removes the temporaries of
writers on this host that no longer run.

Loading reads the file once, through one open handle, so a save that replaces the file
meanwhile cannot mix two checkpoints; only regular files are read (a FIFO or a device
is refused, not waited on).

>>> import os, tempfile
>>> import gradcore as gc
>>> path = os.path.join(tempfile.mkdtemp(), "ckpt.safetensors")
>>> gc.save({"w": gc.ones(2), "step": 3, "betas": (0.9, 0.999)}, path)
>>> gc.load(path)
{'w': tensor([1., 1.]), 'step': 3, 'betas': (0.9, 0.999)}
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import math
import os
import re
import secrets
import signal
import socket
import stat
import struct
import threading

import numpy as np

from .backend import device as _device
from .backend import to_host
from .creation import from_numpy
from .tensor import Tensor

__all__ = ["save", "load", "CheckpointError"]

FORMAT_VERSION = 1
_META_KEY = "gradcore"
_MAX_HEADER = 100_000_000  # safetensors' own limit on the JSON header, in bytes
_MAX_DEPTH = 100  # containers inside containers: state dicts need a handful
_CHUNK = 64 * 1024 * 1024  # bytes per write: signals are handled between writes

# safetensors dtypes gradcore stores: code, NumPy dtype (little-endian) and the rank by
# which the safetensors writer orders tensors (its Dtype enum, descending; then names)
_ST_DTYPES = [("I64", "<i8"), ("F64", "<f8"), ("F32", "<f4"), ("I32", "<i4"),
              ("F16", "<f2"), ("I16", "<i2"), ("I8", "i1"), ("U8", "u1"), ("BOOL", "?")]
_LOADS = {code: np.dtype(dt) for code, dt in _ST_DTYPES}
_CODES = {np.dtype(dt): (code, rank) for rank, (code, dt) in enumerate(_ST_DTYPES)}
_OTHER_DTYPES = {"BF16": "bfloat16", "U16": "uint16", "U32": "uint32", "U64": "uint64",
                 "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2",
                 "F8_E8M0": "float8_e8m0fnu", "F4": "float4_e2m1fn_x2",
                 "F6_E2M3": "float6_e2m3", "F6_E3M2": "float6_e3m2", "C64": "complex64"}


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
        _write_safetensors(f, arrays, metadata)
        return
    _atomic_write(os.fspath(f), arrays, metadata)


def _serialize_header(arrays, metadata):
    """The 8-byte length and JSON header the safetensors writer would produce for
    ``arrays`` (same order, same bytes), and the arrays in file order."""
    order = sorted(arrays.items(), key=lambda kv: (_CODES[kv[1].dtype][1], kv[0]))
    header: dict = {"__metadata__": metadata} if metadata else {}
    offset = 0
    for name, arr in order:
        header[name] = {"dtype": _CODES[arr.dtype][0], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
    try:
        text = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError as e:
        raise ValueError(f"gc.save: a dict key is not valid Unicode ({e.reason}: "
                         f"{e.object[e.start:e.end]!r}) and cannot name a tensor") from None
    text += b" " * (-len(text) % 8)  # as safetensors pads: tensor data 8-byte aligned
    if len(text) > _MAX_HEADER:
        raise ValueError(f"gc.save: the checkpoint's structure and Python values take "
                         f"{len(text)} bytes of JSON, more than the {_MAX_HEADER} a "
                         "safetensors header may hold (store long lists of numbers as "
                         "tensors)")
    return struct.pack("<Q", len(text)) + text, order


def _write_safetensors(fh, arrays, metadata) -> None:
    """Write the safetensors file to the binary file object ``fh`` (a seam: tests make it
    fail half-way).  Large tensors go in slices, so a signal is handled between them."""
    head, order = _serialize_header(arrays, metadata)
    _write_all(fh, memoryview(head))
    for _, arr in order:
        data = memoryview(arr.reshape(-1).view(np.uint8))  # no copy: C order, little-endian
        for start in range(0, len(data), _CHUNK):
            _write_all(fh, data[start:start + _CHUNK])


def _write_all(fh, data: memoryview) -> None:
    """``fh.write`` until all of ``data`` is written (a raw file may take part of it)."""
    while len(data):
        n = fh.write(data)
        if n is None or n >= len(data):  # None: a writer that does not count
            return
        data = data[n:]


class _Terminated(BaseException):
    """Raised in the main thread by SIGTERM while a save writes (see ``_sigterm_raises``)."""


class _sigterm_raises:
    """While a save writes in the main thread, SIGTERM raises ``_Terminated`` (when no
    handler of the program's own is installed), so the temporary can be removed before
    the process dies of the signal as it would have."""

    def __enter__(self):
        self.installed = False
        if threading.current_thread() is threading.main_thread():
            try:
                if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
                    signal.signal(signal.SIGTERM, _raise_terminated)
                    self.installed = True
            except (ValueError, OSError):  # pragma: no cover - no signals here
                pass
        return self

    def __exit__(self, *exc):
        if self.installed:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
        return False


def _raise_terminated(signum, frame):
    raise _Terminated


_HOST = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:40] or "host"
_TMP_TAIL = re.compile(r"([A-Za-z0-9-]+)\.([0-9]{1,10})\.[0-9a-f]{12}\.tmp")


def _tmp_prefix(base: str) -> str:
    """The start of this target's temporaries' names (a long name is shortened, so the
    temporary stays within the file system's 255-byte limit)."""
    if len(base.encode("utf-8", "surrogateescape")) <= 150:
        return f".{base}."
    digest = hashlib.sha1(base.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f".{base[:100]}~{digest}."


def _remove_stale_temporaries(folder: str, prefix: str) -> None:
    """Remove temporaries of earlier saves to this target that were killed mid-write:
    names of this pattern, written on this host by a process that no longer exists.
    A live writer's file (another process saving to the same path now, or this one's
    other threads) is never touched."""
    if os.name != "posix":  # os.kill(pid, 0) would not be a probe there
        return
    try:
        entries = [e.name for e in os.scandir(folder) if e.name.startswith(prefix)]
    except OSError:
        return
    me = os.getpid()
    for name in entries:
        m = _TMP_TAIL.fullmatch(name[len(prefix):])
        if not m or m.group(1) != _HOST:
            continue
        pid = int(m.group(2))
        if pid <= 0 or pid == me:
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            pass  # its writer is gone: the file is garbage
        except (OSError, OverflowError):
            continue  # alive (another user's process) or not a pid at all
        else:
            continue  # alive
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass


def _atomic_write(path, arrays, metadata) -> None:
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not path:
        raise FileNotFoundError(errno.ENOENT, "gc.save needs a file name, got an empty "
                                "path", path)
    if path.endswith(os.sep) or (os.altsep and path.endswith(os.altsep)):
        raise IsADirectoryError(errno.EISDIR, "gc.save needs a file name, and a path "
                                "ending in a separator names a folder", path)
    target = os.path.realpath(path)  # through a symlink: replace its target, keep the link
    try:
        mode = os.stat(target).st_mode
    except OSError:
        mode = None  # nothing there yet (or unreachable: the write below will say)
    if mode is not None and stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "gc.save cannot replace a folder with a "
                                "checkpoint", path)
    if mode is not None and not stat.S_ISREG(mode):
        kind = next((what for test, what in _FILE_KINDS if test(mode)), "a special file")
        raise OSError(errno.EINVAL, f"gc.save renames a new file over the old one and will "
                      f"not replace {kind} (to write into it, pass an open binary file "
                      "object)", path)
    folder, base = os.path.split(target)
    prefix = _tmp_prefix(base)
    _remove_stale_temporaries(folder, prefix)
    tmp = os.path.join(folder, f"{prefix}{_HOST}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    try:
        with _sigterm_raises():
            # O_EXCL: the name is ours alone; mode 0o600 until the file is complete
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                         | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0), 0o600)
            try:
                with open(fd, "wb") as fh:
                    _write_safetensors(fh, arrays, metadata)
                    fh.flush()
                    if hasattr(os, "fchmod"):
                        os.fchmod(fd, _new_file_mode(target))
                    os.fsync(fd)
                if not hasattr(os, "fchmod"):  # pragma: no cover - Windows
                    os.chmod(tmp, _new_file_mode(target))
                os.replace(tmp, target)
            except BaseException:
                _unlink_quietly(tmp)
                raise
            _fsync_folder(folder)
    except _Terminated:
        _unlink_quietly(tmp)  # again: the signal may have cut the first removal short
        signal.raise_signal(signal.SIGTERM)  # the default action again: the process ends
        raise
    except OSError as e:
        raise _naming(e, path, tmp) from None


def _naming(e: OSError, path: str, tmp: str) -> OSError:
    """The same error about the user's path, not the hidden temporary."""
    if e.errno is None:
        return OSError(f"gc.save could not write {path!r}: {str(e).replace(tmp, path)}")
    if e.filename is None or e.filename == tmp or (
            e.filename2 is None and e.filename == os.path.realpath(path)):
        return OSError(e.errno, f"gc.save could not write the checkpoint ({e.strerror})",
                       path)
    return e  # about another file (the folder): its own name is the right one


def _unlink_quietly(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass


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
    "inf" | "-inf" | "nan"}``, ``{"$tensor": name, "device": ..., ...}``,
    ``{"$ndarray": name}`` (a NumPy array; ``"scalar": true`` for a NumPy scalar).
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
        if isinstance(obj, (np.ndarray, np.generic)):
            return self._ndarray(obj, path)
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
            if len(path) >= _MAX_DEPTH:
                raise ValueError(f"gc.save: containers are nested more than {_MAX_DEPTH} "
                                 f"deep (at {_where(path)})")
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
                        f"(at {_where(path)}): checkpoints hold tensors, NumPy arrays and "
                        "scalars, dicts, lists, tuples, ints, floats, bools, strings and None")

    @staticmethod
    def _key(k, path):
        if isinstance(k, str):
            return str(k)
        if isinstance(k, int) and not isinstance(k, bool):
            return int(k)
        raise TypeError(f"gc.save: dict keys must be strings or ints, got "
                        f"{type(k).__name__} {k!r} at {_where(path)}")

    def _store(self, arr: np.ndarray, path) -> str:
        """Store ``arr`` under a name made from ``path`` (made unique); the name."""
        name = ".".join(str(p) for p in path) or "tensor"
        if name in self.arrays or name == "__metadata__":
            n = 2
            while f"{name}#{n}" in self.arrays:
                n += 1
            name = f"{name}#{n}"
        arr = np.require(arr, requirements="C")  # (keeps 0-d)
        self.arrays[name] = arr.astype(arr.dtype.newbyteorder("<"), copy=False)  # LE
        return name

    def _ndarray(self, obj, path):
        """A NumPy array or scalar: stored as its data (loaded back as NumPy, not as a
        tensor), in the dtypes a checkpoint holds."""
        arr = np.asarray(obj)
        if arr.dtype.newbyteorder("<") not in _CODES:
            raise TypeError(f"gc.save cannot store a NumPy {arr.dtype} array (at "
                            f"{_where(path)}): checkpoints hold bool, integer and float16/"
                            "32/64 data")
        node = {"$ndarray": self._store(arr, path)}
        if isinstance(obj, np.generic):
            node["scalar"] = True
        return node

    def _tensor(self, t: Tensor, path):
        name = self.names.get(id(t))
        if name is None:
            name = self._store(np.asarray(to_host(t._data)), path)
            self.names[id(t)] = name
            self.keep.append(t)
        node = {"$tensor": name, "device": str(t.device)}
        if t.requires_grad:
            node["requires_grad"] = True
        return node


def _where(path) -> str:
    if not path:
        return "the top level"
    parts = [repr(p) for p in path]
    if len(parts) > 8:
        parts = parts[:3] + ["..."] + parts[-3:]
    return "[" + "][".join(parts) + "]"


# --------------------------------------------------------------------------------------
# load
# --------------------------------------------------------------------------------------
_REFUSE = (" gradcore loads only safetensors files (written by gc.save or the "
           "safetensors package) and never unpickles anything.")


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Read a checkpoint written by :func:`save` (or any safetensors file).

    PyTorch's signature: ``weights_only`` is always true here (gradcore never unpickles,
    whatever it is given), and ``pickle_module``, ``mmap`` and the pickle arguments are
    accepted and change nothing.

    ``f`` is a path or a binary file object.  Tensors load onto the CPU unless
    ``map_location`` says otherwise: a device (``"cuda:0"``, ``gc.device(...)``), a dict
    from saved device to device (``{"cuda:0": "cpu"}``; devices it does not name go to
    the CPU), or a callable ``fn(tensor, saved_device)`` returning the tensor to use (or
    a device, or ``None`` to keep the CPU tensor), as PyTorch's common uses.  A plain
    safetensors file (no gradcore metadata) loads as a flat dict of tensors.

    A path must name a regular file, read once through one handle.  Pickles
    (``torch.save`` or ``pickle`` output) are refused, never unpickled; so are
    truncated and malformed files (:class:`CheckpointError`, naming the file).
    """
    place = _placement(map_location)
    if hasattr(f, "read"):
        given = getattr(f, "name", None)
        name = repr(given) if isinstance(given, (str, bytes)) else "the file object"
        data = f.read()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"gc.load needs a binary file object (opened with 'rb'); its "
                            f"read() returned {type(data).__name__}")
        data = bytes(data)
        header, arrays = _read_safetensors(io.BytesIO(data), len(data), name)
    else:
        path = os.fspath(f)
        name = repr(path)
        with _open_regular(path, name) as fh:
            header, arrays = _read_safetensors(fh, os.fstat(fh.fileno()).st_size, name)

    meta = header.get("__metadata__") or {}
    if _META_KEY not in meta:  # a plain safetensors file: its tensors, by name
        return {k: place(_as_tensor(arrays[k]), "cpu") for k in sorted(arrays)}
    try:
        doc = json.loads(meta[_META_KEY])
        if not isinstance(doc, dict):
            raise ValueError(f"a JSON {type(doc).__name__}, not an object")
        version = doc["version"]
        tree = doc["tree"]
    except (ValueError, KeyError, RecursionError) as e:
        reason = "nested too deeply" if isinstance(e, RecursionError) else e
        raise CheckpointError(f"{name}: its gradcore metadata is not valid "
                              f"({reason})") from None
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise CheckpointError(f"{name}: its gradcore metadata is not valid (format "
                              f"version {version!r:.40})")
    if version > FORMAT_VERSION:
        raise CheckpointError(f"{name} was written in gradcore checkpoint format "
                              f"{version!r}; this gradcore reads format {FORMAT_VERSION} "
                              "(upgrade gradcore)")
    return _Decoder(arrays, place, name).decode(tree, 0)


_FILE_KINDS = [(stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")]


def _check_regular(st, path, name) -> None:
    if stat.S_ISREG(st.st_mode):
        return
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "gc.load reads a checkpoint file, not a "
                                "folder", path)
    kind = next((what for test, what in _FILE_KINDS if test(st.st_mode)), "a special file")
    raise CheckpointError(f"{name} is {kind}, not a regular file: gc.load reads "
                          "checkpoints from regular files only (to read a stream, pass "
                          "an open binary file object)")


def _open_regular(path, name):
    """Open a regular file for reading; anything else is refused without waiting on it
    (opening a FIFO for reading would block until a writer came)."""
    _check_regular(os.stat(path), path, name)  # devices are refused before any open
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                 | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        _check_regular(os.fstat(fd), path, name)  # what was opened, if it was swapped
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return open(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise


def _read_exact(fh, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        b = fh.read(n - got)
        if not b:
            break
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def _read_safetensors(fh, size: int, name: str):
    """Read a whole safetensors file from ``fh`` (``size`` bytes): its header, then its
    tensors into arrays of their own.  The structure decides; a file that is not
    safetensors is then explained by its signature (pickle, zip, .npy) if it has one."""
    head = _read_exact(fh, 8)
    if len(head) == 8:
        (n,) = struct.unpack("<Q", head)
        first = _read_exact(fh, 1)
        begins = first == b"{" if first else size == 8  # as safetensors headers do (or
        if begins and 0 < n <= _MAX_HEADER:             # the file was cut right there)
            if n > size - 8:
                raise CheckpointError(f"{name} is truncated: its header alone needs "
                                      f"{n + 8} bytes but the file has {size}")
            header, entries = _parse_header(first + _read_exact(fh, n - 1),
                                            size - 8 - n, name)
            return header, _read_tensors(fh, entries, name)
        if begins and _MAX_HEADER < n <= size - 8:
            raise CheckpointError(f"{name}: its safetensors header is {n} bytes long, more "
                                  f"than the {_MAX_HEADER} the format allows")
    raise CheckpointError(_not_safetensors(head, size, name))


def _not_safetensors(head: bytes, size: int, name: str) -> str:
    if head[:4] == b"PK\x03\x04":
        return (f"{name} is a zip archive, as torch.save writes (a pickle inside), not a "
                "gradcore checkpoint." + _REFUSE)
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return f"{name} is a Python pickle, not a gradcore checkpoint." + _REFUSE
    if head[:6] == b"\x93NUMPY":
        return f"{name} is a NumPy .npy file, not a gradcore checkpoint." + _REFUSE
    if size < 8:
        return (f"{name} is not a safetensors file: it is only {size} bytes long (empty or "
                "truncated)." + _REFUSE)
    return (f"{name} is not a safetensors file (it does not begin with a header length "
            "and a JSON header)." + _REFUSE)


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"the key {k!r:.60} appears twice")
        out[k] = v
    return out


def _parse_header(text: bytes, have: int, name: str):
    """Validate a safetensors header as the safetensors library does (JSON object;
    string metadata; known dtypes; shapes matching byte ranges that tile the data
    exactly) and return it with its tensors ``(name, dtype, shape, start, end)`` in
    file order."""
    def bad(why):
        return CheckpointError(f"{name} is not a safetensors file (its header is not "
                               f"safetensors JSON: {why})." + _REFUSE)
    try:
        header = json.loads(text.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except RecursionError:
        raise bad("nested too deeply") from None
    except ValueError as e:  # UnicodeDecodeError and JSONDecodeError included
        raise bad(e) from None
    if not isinstance(header, dict):
        raise bad(f"a JSON {type(header).__name__}, not an object")
    meta = header.get("__metadata__")
    if meta is not None and not (isinstance(meta, dict)
                                 and all(isinstance(v, str) for v in meta.values())):
        raise CheckpointError(f"{name}: its safetensors metadata is not a JSON object of "
                              "strings")
    entries = []
    for key, info in header.items():
        if key == "__metadata__":
            continue
        if not isinstance(info, dict):
            raise bad(f"tensor {key!r:.80} is described by a {type(info).__name__}")
        code, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if not isinstance(code, str):
            raise bad(f"tensor {key!r:.80} has no dtype string")
        if not (isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape)):
            raise bad(f"tensor {key!r:.80} has shape {shape!r:.80}")
        if not (isinstance(offsets, list) and len(offsets) == 2
                and all(type(o) is int for o in offsets) and 0 <= offsets[0] <= offsets[1]):
            raise bad(f"tensor {key!r:.80} has data_offsets {offsets!r:.80}")
        dtype = _LOADS.get(code)
        if dtype is None:
            known = f" ({_OTHER_DTYPES[code]})" if code in _OTHER_DTYPES else ""
            what = "which gradcore does not support" if known else "an unknown dtype"
            raise CheckpointError(f"{name}: tensor {key!r:.80} has dtype {code!r:.20}"
                                  f"{known}, {what} (it loads "
                                  f"{', '.join(_LOADS)})")
        nbytes = math.prod(shape) * dtype.itemsize
        if offsets[1] - offsets[0] != nbytes:
            raise bad(f"tensor {key!r:.80} of shape {tuple(shape)} and dtype {code} needs "
                      f"{nbytes} bytes, its data_offsets {offsets} give "
                      f"{offsets[1] - offsets[0]}")
        entries.append((key, dtype, tuple(shape), offsets[0], offsets[1]))
    entries.sort(key=lambda e: (e[3], e[4]))
    end = 0
    for key, _, _, start, stop in entries:
        if start != end:
            raise bad(f"tensor {key!r:.80} starts at byte {start} of the data, where "
                      f"{end} was expected (tensors must tile the data)")
        end = stop
    if end > have:
        raise CheckpointError(f"{name} is truncated: its header describes {end} bytes of "
                              f"tensor data but only {have} follow")
    if end < have:
        raise bad(f"{have - end} bytes follow the {end} bytes of tensor data its header "
                  "describes")
    return header, entries


def _read_tensors(fh, entries, name) -> dict:
    """Each tensor into a fresh array of its own (aligned, writable), in file order."""
    arrays = {}
    for key, dtype, shape, start, stop in entries:
        try:
            arr = np.empty(shape, dtype)
        except ValueError as e:  # a 65th dimension, or sizes no array can index
            raise CheckpointError(f"{name}: tensor {key!r:.80} has shape {shape!r:.80}, "
                                  f"which no array can hold ({e})") from None
        if stop > start:
            view = memoryview(arr.reshape(-1).view(np.uint8))
            got = 0
            while got < stop - start:
                k = fh.readinto(view[got:])
                if not k:
                    raise CheckpointError(f"{name} is truncated: it ended in the data of "
                                          f"tensor {key!r:.80}")
                got += k
        if not dtype.isnative:
            arr = arr.astype(dtype.newbyteorder("="))
        arrays[key] = arr
    return arrays


def _as_tensor(arr: np.ndarray) -> Tensor:
    return from_numpy(np.require(arr, requirements=("W",)))


def _placement(map_location):
    """``place(cpu_tensor, saved_device) -> tensor`` for a ``map_location``."""
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


_TAGS = ("$dict", "$tuple", "$float", "$tensor", "$ndarray")


class _Decoder:
    """Rebuilds the saved object from the JSON tree, checking every node's type (a
    crafted tree gets a ``CheckpointError`` saying what is wrong where, never a bare
    ``TypeError``) and its depth (no ``RecursionError``)."""

    def __init__(self, arrays: dict, place, name: str):
        self.arrays = arrays
        self.place = place
        self.name = name
        self.tensors: dict[str, Tensor] = {}  # one tensor per stored array (sharing kept)

    def bad(self, what):
        return CheckpointError(f"{self.name}: its gradcore metadata is malformed ({what})")

    def decode(self, node, depth):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if depth >= _MAX_DEPTH:
            raise self.bad(f"containers nested more than {_MAX_DEPTH} deep")
        if isinstance(node, list):
            return [self.decode(v, depth + 1) for v in node]
        if not isinstance(node, dict):  # pragma: no cover - JSON has no other types
            raise self.bad(f"unexpected {type(node).__name__}")
        tags = [k for k in _TAGS if k in node]
        if len(tags) != 1:
            raise self.bad(f"a node with keys {sorted(node)[:5]!r:.80}: expected one of "
                           f"{', '.join(_TAGS)}")
        tag = tags[0]
        value = node[tag]
        if tag == "$dict":
            if not isinstance(value, list):
                raise self.bad(f"$dict holds a {type(value).__name__}, not a list of pairs")
            out = {}
            for pair in value:
                if not (isinstance(pair, list) and len(pair) == 2
                        and isinstance(pair[0], (str, int)) and not isinstance(pair[0], bool)):
                    raise self.bad(f"bad dict entry {pair!r:.80}")
                if pair[0] in out:
                    raise self.bad(f"dict key {pair[0]!r:.80} appears twice")
                out[pair[0]] = self.decode(pair[1], depth + 1)
            return out
        if tag == "$tuple":
            if not isinstance(value, list):
                raise self.bad(f"$tuple holds a {type(value).__name__}, not a list")
            return tuple(self.decode(v, depth + 1) for v in value)
        if tag == "$float":
            if value not in ("inf", "-inf", "nan"):
                raise self.bad(f"bad float {value!r:.40}")
            return float(value)
        if tag == "$ndarray":
            return self._ndarray(node, value)
        return self._tensor(node, value)

    def _ndarray(self, node, key):
        if not isinstance(key, str):
            raise self.bad(f"an array named by a {type(key).__name__}, not a string")
        arr = self.arrays.get(key)
        if arr is None:
            raise CheckpointError(f"{self.name}: the array {key!r} named in its metadata is "
                                  "not in the file")
        scalar = node.get("scalar", False)
        if not isinstance(scalar, bool) or (scalar and arr.ndim):
            raise self.bad(f"array {key!r:.80} has scalar {scalar!r:.40} with shape "
                           f"{arr.shape}")
        arr = arr.astype(arr.dtype.newbyteorder("="))  # (a copy of its own, native order)
        return arr[()] if scalar else arr

    def _tensor(self, node, key):
        if not isinstance(key, str):
            raise self.bad(f"a tensor named by a {type(key).__name__}, not a string")
        t = self.tensors.get(key)
        if t is not None:
            return t
        arr = self.arrays.get(key)
        if arr is None:
            raise CheckpointError(f"{self.name}: the tensor {key!r} named in its metadata is "
                                  "not in the file")
        saved = node.get("device", "cpu")
        requires_grad = node.get("requires_grad", False)
        try:
            if not isinstance(saved, str):
                raise ValueError(f"a {type(saved).__name__}")
            _device(saved)
        except ValueError as e:
            raise self.bad(f"tensor {key!r:.80} has saved device {saved!r:.40} ({e})") from None
        if not isinstance(requires_grad, bool):
            raise self.bad(f"tensor {key!r:.80} has requires_grad {requires_grad!r:.40}")
        t = self.place(_as_tensor(arr), saved)
        if requires_grad:
            try:
                t.requires_grad_(True)
            except RuntimeError as e:
                raise self.bad(f"tensor {key!r:.80}: {e}") from None
        self.tensors[key] = t
        return t
