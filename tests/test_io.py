"""gc.save / gc.load: safetensors checkpoints that round-trip every value type, are
written atomically, open in plain safetensors, and refuse pickles and broken files."""

import io
import json
import math
import os
import pickle
import stat
import struct

import numpy as np
import pytest
import safetensors
import safetensors.numpy

import gradcore as gc
import gradcore.io as gio

from conftest import host, needs_torch

DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]


def _tensor(dtype, shape=(2, 3), seed=0):
    rng = np.random.default_rng(seed)
    return gc.tensor(np.abs(rng.standard_normal(shape) * 50).astype(dtype))


def _same(a, b):
    """Deep equality with exact types (int is not float, tuple is not list, nan == nan)."""
    assert type(a) is type(b), (a, b)
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            assert type(k) is type(next(kk for kk in b if kk == k))
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, gc.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(host(a), host(b))
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b)
    elif isinstance(a, float):
        assert a == b and math.copysign(1, a) == math.copysign(1, b)
    else:
        assert a == b


def test_every_value_type_round_trips(tmp_path, device):
    obj = {
        "tensors": {d: _tensor(d, seed=i) for i, d in enumerate(DTYPES)},
        "scalar": gc.tensor(3.5),
        "empty": gc.zeros(0, 3),
        "ints": [0, -5, 7, 2**70, -(2**63)],
        "floats": [0.0, -0.0, 0.1, 1.0, -2.5e-310, 1e300, math.inf, -math.inf, math.nan],
        "bools": [True, False],
        "strings": ["", "a.b", "ünïcødé ✓", '{"$tensor": "x"}', "__metadata__"],
        "none": None,
        "tuple": (1, 2.0, "3", None, (4,), []),
        "empty_containers": [{}, [], ()],
        3: "int key",
        -1: {0: "nested int keys", "0": "and a string key that looks the same"},
    }
    path = tmp_path / "all.safetensors"
    gc.save(obj, path)
    back = gc.load(path)
    _same(obj, back)
    assert type(back["ints"][3]) is int and type(back["floats"][3]) is float
    assert set(back[-1]) == {0, "0"}
    assert all(t.device == gc.device("cpu") for t in back["tensors"].values())


def test_tensors_load_writable_and_independent(tmp_path):
    t = gc.arange(6.0).reshape(2, 3)
    gc.save({"t": t, "u": t.T}, tmp_path / "f")  # u: a non-contiguous view
    back = gc.load(tmp_path / "f")
    np.testing.assert_array_equal(host(back["u"]), host(t).T)
    back["t"].add_(1)  # usable as a parameter: writable, its own memory
    np.testing.assert_array_equal(host(back["t"]), host(t) + 1)
    np.testing.assert_array_equal(host(back["u"]), host(t).T)


def test_requires_grad_and_shared_tensors_survive(tmp_path):
    w = gc.nn.Parameter(gc.ones(2))
    gc.save({"a": w, "b": [w], "c": gc.ones(2)}, tmp_path / "f")
    back = gc.load(tmp_path / "f")
    assert back["a"].requires_grad and not back["c"].requires_grad
    assert back["b"][0] is back["a"]  # one tensor saved once, loaded once
    assert list(safetensors.numpy.load_file(tmp_path / "f")) in (["a", "c"], ["c", "a"])


def test_colliding_names_stay_distinct(tmp_path):
    obj = {"a.b": gc.tensor([1.0]), "a": {"b": gc.tensor([2.0])}, "__metadata__": gc.ones(1),
           "x": [gc.tensor([3.0])], "x.0": gc.tensor([4.0])}
    gc.save(obj, tmp_path / "f")
    _same(obj, gc.load(tmp_path / "f"))
    assert len(safetensors.numpy.load_file(tmp_path / "f")) == 5


def test_plain_safetensors_reads_a_gradcore_checkpoint(tmp_path):
    model = {"fc.weight": _tensor("float32"), "fc.bias": _tensor("float32", (3,))}
    w = gc.nn.Parameter(gc.ones(3))
    opt = gc.optim.Adam([w])
    w.sum().backward()
    opt.step()
    gc.save({"model": model, "optim": opt.state_dict()}, tmp_path / "f.safetensors")
    plain = safetensors.numpy.load_file(tmp_path / "f.safetensors")
    assert set(plain) == {"model.fc.weight", "model.fc.bias", "optim.state.0.exp_avg",
                          "optim.state.0.exp_avg_sq"}
    np.testing.assert_array_equal(plain["model.fc.weight"], host(model["fc.weight"]))
    with safetensors.safe_open(tmp_path / "f.safetensors", framework="np") as f:
        meta = f.metadata()
    assert set(meta) == {"gradcore"} and all(isinstance(v, str) for v in meta.values())
    assert json.loads(meta["gradcore"])["version"] == gio.FORMAT_VERSION

    # a model state dict saved alone keeps its own names: what PyTorch users expect
    gc.save(model, tmp_path / "m.safetensors")
    assert set(safetensors.numpy.load_file(tmp_path / "m.safetensors")) == set(model)


@needs_torch
def test_pytorch_opens_gradcore_checkpoints_and_gradcore_opens_pytorchs(tmp_path):
    import safetensors.torch
    import torch
    model = {"fc.weight": _tensor("float32"), "fc.bias": _tensor("float64", (3,))}
    gc.save(model, tmp_path / "g.safetensors")
    theirs = safetensors.torch.load_file(tmp_path / "g.safetensors")
    for k in model:
        np.testing.assert_array_equal(theirs[k].numpy(), host(model[k]))

    tmodel = {"emb": torch.randn(4, 2), "ids": torch.arange(5), "flag": torch.tensor(True)}
    safetensors.torch.save_file(tmodel, tmp_path / "t.safetensors", metadata={"format": "pt"})
    back = gc.load(tmp_path / "t.safetensors")
    assert set(back) == set(tmodel)
    for k, t in tmodel.items():
        assert isinstance(back[k], gc.Tensor)
        np.testing.assert_array_equal(host(back[k]), t.numpy())
    assert back["ids"].dtype == gc.int64 and back["flag"].dtype == gc.bool


def test_plain_safetensors_loads_as_a_flat_dict(tmp_path):
    arrays = {"b": np.arange(3, dtype=np.int32), "a.x": np.ones((2, 2), np.float16)}
    safetensors.numpy.save_file(arrays, tmp_path / "p.safetensors")
    back = gc.load(tmp_path / "p.safetensors")
    assert set(back) == set(arrays)
    for k, a in arrays.items():
        assert back[k].dtype == gc.dtypes.to_dtype(a.dtype)
        np.testing.assert_array_equal(host(back[k]), a)


def test_file_objects(tmp_path):
    buf = io.BytesIO()
    gc.save({"t": gc.ones(2), "n": 1}, buf)
    buf.seek(0)
    _same(gc.load(buf), {"t": gc.ones(2), "n": 1})


# ---- devices -------------------------------------------------------------------------
def test_map_location_forms(tmp_path, device):
    t = gc.arange(3.0, device=device)
    gc.save({"t": t}, tmp_path / "f")
    saved_device = str(t.device)
    seen = []

    def keep_on_cpu(tensor, location):
        seen.append(location)
        return tensor

    for loc in [None, "cpu", gc.device("cpu"), {saved_device: "cpu"}, {"cuda:7": device},
                keep_on_cpu, lambda tensor, location: None,
                lambda tensor, location: "cpu"]:
        back = gc.load(tmp_path / "f", map_location=loc)["t"]
        assert back.device == gc.device("cpu"), loc
        np.testing.assert_array_equal(host(back), [0, 1, 2])
    assert seen == [saved_device]

    for loc in [device, gc.device(device), {saved_device: device},
                lambda tensor, location: tensor.to(device)]:
        back = gc.load(tmp_path / "f", map_location=loc)["t"]
        assert back.device == gc.device(device)
        np.testing.assert_array_equal(host(back), [0, 1, 2])


def test_model_and_optimizer_state_round_trip_across_devices(tmp_path, device):
    w = gc.nn.Parameter(gc.randn(3, 2, device=device))
    opt = gc.optim.SGD([w], lr=0.1, momentum=0.9)
    (w * w).sum().backward()
    opt.step()
    gc.save({"model": {"w": w}, "optim": opt.state_dict()}, tmp_path / "f")
    for target in ["cpu", device]:
        ckpt = gc.load(tmp_path / "f", map_location=target)
        w2 = gc.nn.Parameter(ckpt["model"]["w"])
        assert w2.device == gc.device(target)
        opt2 = gc.optim.SGD([w2], lr=0.5, momentum=0.1)
        opt2.load_state_dict(ckpt["optim"])
        assert opt2.param_groups[0]["lr"] == 0.1
        buf = opt2.state[w2]["momentum_buffer"]
        assert buf.device == w2.device
        np.testing.assert_array_equal(host(buf), host(opt.state[w]["momentum_buffer"]))


# ---- atomic writes ------------------------------------------------------------------
def test_a_crash_mid_write_leaves_the_old_file_whole(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.safetensors"
    gc.save({"version": 1, "w": gc.ones(1000)}, path)
    old_bytes = path.read_bytes()

    def crash(fh, arrays, metadata):
        data = safetensors.numpy.save(arrays, metadata=metadata)
        fh.write(data[: len(data) // 2])  # half the new file is on disk...
        fh.flush()
        raise OSError("disk full")        # ...when the writer dies

    monkeypatch.setattr(gio, "_write_safetensors", crash)
    with pytest.raises(OSError, match="disk full"):
        gc.save({"version": 2, "w": gc.zeros(1000)}, path)
    assert path.read_bytes() == old_bytes
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]  # no temporary left behind
    assert gc.load(path)["version"] == 1

    def interrupted(fh, arrays, metadata):
        raise KeyboardInterrupt
    monkeypatch.setattr(gio, "_write_safetensors", interrupted)
    with pytest.raises(KeyboardInterrupt):
        gc.save({"version": 3}, path)
    assert path.read_bytes() == old_bytes and os.listdir(tmp_path) == ["ckpt.safetensors"]


def test_save_syncs_the_file_then_renames_then_syncs_the_folder(tmp_path, monkeypatch):
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", os.path.isdir(f"/proc/self/fd/{fd}")
                       if os.path.exists("/proc/self/fd") else None))
        real_fsync(fd)

    def replace(src, dst):
        events.append(("replace", os.path.dirname(src) == os.path.dirname(os.fspath(dst))))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    gc.save({"w": gc.ones(3)}, tmp_path / "f")
    assert [e[0] for e in events] == ["fsync", "replace", "fsync"]
    assert events[1][1] is True  # the temporary lives in the target's folder
    if events[0][1] is not None:
        assert events[0][1] is False and events[2][1] is True  # the file, then the folder


def test_saved_files_get_ordinary_permissions(tmp_path):
    umask = os.umask(0)
    os.umask(umask)
    gc.save({"a": 1}, tmp_path / "f")
    assert os.stat(tmp_path / "f").st_mode & 0o777 == 0o666 & ~umask


def test_overwrites_an_existing_checkpoint_keeping_its_mode_and_links(tmp_path):
    gc.save({"a": 1}, tmp_path / "f")
    os.chmod(tmp_path / "f", 0o640)
    gc.save({"a": 2}, str(tmp_path / "f"))
    assert gc.load(str(tmp_path / "f")) == {"a": 2}
    assert os.stat(tmp_path / "f").st_mode & 0o777 == 0o640
    os.symlink(tmp_path / "f", tmp_path / "latest")
    gc.save({"a": 3}, tmp_path / "latest")
    assert os.path.islink(tmp_path / "latest") and gc.load(tmp_path / "f") == {"a": 3}


# ---- refusals -------------------------------------------------------------------------
class _Exploit:
    def __reduce__(self):
        return (os.mkdir, (os.environ["GRADCORE_EXPLOIT_DIR"],))


def test_pickles_are_refused_and_never_executed(tmp_path, monkeypatch):
    marker = tmp_path / "pwned"
    monkeypatch.setenv("GRADCORE_EXPLOIT_DIR", str(marker))

    def no_unpickling(*args, **kwargs):
        raise AssertionError("gc.load touched pickle")
    monkeypatch.setattr(pickle, "loads", no_unpickling)
    monkeypatch.setattr(pickle, "load", no_unpickling)
    monkeypatch.setattr(pickle, "Unpickler", no_unpickling)

    for proto in range(0, pickle.HIGHEST_PROTOCOL + 1):
        path = tmp_path / f"p{proto}.pt"
        path.write_bytes(pickle.dumps({"w": _Exploit()}, protocol=proto))
        with pytest.raises(gio.CheckpointError, match="never unpickles") as err:
            gc.load(path)
        if proto >= 2:
            assert "is a Python pickle" in str(err.value)
        with pytest.raises(ValueError):  # CheckpointError is a ValueError
            gc.load(io.BytesIO(path.read_bytes()))
    assert not marker.exists()


@needs_torch
def test_torch_save_files_are_refused(tmp_path):
    import torch
    torch.save({"w": torch.ones(2)}, tmp_path / "model.pt")
    with pytest.raises(gio.CheckpointError, match="zip archive, as torch.save writes .*never "
                                                  "unpickles"):
        gc.load(tmp_path / "model.pt")


def test_truncated_files_are_refused(tmp_path):
    path = tmp_path / "f"
    gc.save({"w": gc.ones(100), "n": 1}, path)
    data = path.read_bytes()
    for cut in [0, 5, 8, 20, len(data) // 2, len(data) - 1]:
        (tmp_path / "cut").write_bytes(data[:cut])
        with pytest.raises(gio.CheckpointError, match="truncated"):
            gc.load(tmp_path / "cut")


def test_garbage_and_malformed_files_are_refused(tmp_path):
    cases = {
        "random": (np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes(),
                   "not a safetensors file"),
        "text": (b"hello, this is not a checkpoint at all\n" * 10, "not a safetensors file"),
        "npy": (_npy_bytes(), "NumPy .npy file"),
        "bad json": (struct.pack("<Q", 10) + b"{not json!" + b"\0" * 8,
                     "header is not safetensors JSON"),
    }
    tree = json.dumps({"version": 1, "tree": {"$mystery": 1}})
    cases["bad tree"] = (safetensors.numpy.save({}, metadata={"gradcore": tree}),
                         "metadata is malformed")
    tree = json.dumps({"version": 1, "tree": {"$tensor": "missing"}})
    cases["missing tensor"] = (safetensors.numpy.save({}, metadata={"gradcore": tree}),
                               "'missing' named in its metadata is not in the file")
    cases["newer"] = (safetensors.numpy.save({}, metadata={"gradcore": json.dumps(
        {"version": 99, "tree": None})}), "format 99.*upgrade gradcore")
    cases["not json metadata"] = (safetensors.numpy.save({}, metadata={"gradcore": "{"}),
                                  "gradcore metadata is not valid")
    for data, message in cases.values():
        (tmp_path / "f").write_bytes(data)
        with pytest.raises(gio.CheckpointError, match=message):
            gc.load(tmp_path / "f")


def _npy_bytes():
    buf = io.BytesIO()
    np.save(buf, np.ones(3))
    return buf.getvalue()


def test_unsupported_values_are_refused_on_save(tmp_path):
    cases = [({"a": {1, 2}}, TypeError, r"builtins.set \(at \['a'\]\)"),
             ({"a": [np.array([None])]}, TypeError, r"NumPy object array \(at \['a'\]\[0\]\)"),
             ({1.5: 1}, TypeError, "dict keys must be strings or ints, got float"),
             ({True: 1}, TypeError, "dict keys must be strings or ints, got bool"),
             ({"a": b"bytes"}, TypeError, "builtins.bytes")]
    loop = []
    loop.append(loop)
    cases.append(({"loop": loop}, ValueError, "contains itself"))
    for obj, error, message in cases:
        with pytest.raises(error, match=message):
            gc.save(obj, tmp_path / "f")
    assert not os.listdir(tmp_path)  # nothing written, not even a temporary


# ---- issue 11: what the structure decides, one read, killed saves, odd paths ---------
def _header_length(data: bytes) -> int:
    return struct.unpack("<Q", data[:8])[0]


def test_every_header_length_round_trips(tmp_path):
    """The safetensors structure decides, not a signature in the length's bytes: a
    header of 640 bytes begins the file with 80 02, as a pickle does (issue 11, item 1)."""
    path = tmp_path / "f.safetensors"
    path.write_bytes(b"")
    fd = os.open(path, os.O_WRONLY)

    def put(data):  # the file now holds these bytes (faster than a new file each time)
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))

    def saved(pad):
        buf = io.BytesIO()
        obj = {"w": gc.arange(3.0), "note": "x" * pad}
        gc.save(obj, buf)
        return obj, buf.getvalue()

    try:
        # what gc.save writes: headers padded to 8 bytes; a string of the right length
        # gives every multiple of 8 up to 5,000
        shortest = _header_length(saved(0)[1])
        seen = set()
        for n in range(shortest, 5001, 8):
            obj, data = saved(n - shortest)
            seen.add(_header_length(data))
            put(data)
            _same(gc.load(path), obj)
        assert seen == set(range(shortest, 5001, 8)) and shortest < 200
        assert {640, 896, 1152, 1408} <= seen  # 80 02, 80 03, 80 04, 80 05: pickle-like
        # any header length at all (other writers need not pad): spaces after the JSON
        w = np.arange(3, dtype=np.float32)
        full = json.dumps({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}})
        for n in range(1, 5001):
            text = full if n >= len(full) else "{}" if n >= 2 else "{"
            put(struct.pack("<Q", n) + text.ljust(n).encode()
                + (w.tobytes() if text is full else b""))
            if n == 1:
                with pytest.raises(gio.CheckpointError, match="header is not safetensors "
                                                              "JSON"):
                    gc.load(path)
                continue
            back = gc.load(path)
            if text is full:
                assert host(back["w"]).tolist() == [0.0, 1.0, 2.0]  # unaligned data too
            else:
                assert back == {}
    finally:
        os.close(fd)


def test_a_model_checkpoint_with_a_pickle_like_header_loads(tmp_path):
    """The guide's checkpoint (a small MLP, SGD, the step), with a run name of the
    length that makes its header 640, 896, 1152 or 1408 bytes: the file begins 80 02 to
    80 05, as a pickle does."""
    model = gc.nn.Sequential(gc.nn.Linear(2, 512), gc.nn.ReLU(), gc.nn.Linear(512, 2))
    opt = gc.optim.SGD(model.parameters(), lr=0.1)
    ckpt = {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 300,
            "run": ""}
    buf = io.BytesIO()
    gc.save(ckpt, buf)
    shortest = _header_length(buf.getvalue())
    ckpt["run"] = "r" * (next(n for n in (640, 896, 1152, 1408) if n >= shortest) - shortest)
    path = tmp_path / "ckpt.safetensors"
    gc.save(ckpt, path)
    assert path.read_bytes()[:2] in (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
    back = gc.load(path)
    _same(back, dict(ckpt, model=dict(ckpt["model"])))  # state dicts load as dicts
    again = gc.nn.Sequential(gc.nn.Linear(2, 512), gc.nn.ReLU(), gc.nn.Linear(512, 2))
    again.load_state_dict(back["model"])


def test_a_save_landing_mid_load_cannot_mix_two_checkpoints(tmp_path, monkeypatch):
    """gc.load reads through one handle: a save that replaces the file after the header
    was read does not give the old metadata with the new tensors (issue 11, item 2)."""
    path = tmp_path / "ckpt.safetensors"
    old = {"step": 1, "w": gc.ones(4), "b": gc.zeros(2)}
    new = {"step": 2, "w": gc.full((4,), 7.0), "b": gc.full((2,), 7.0)}
    gc.save(old, path)
    real_loads = json.loads
    calls = []

    def loads(text, *args, **kwargs):
        if not calls:  # the safetensors header has just been read: now another process
            calls.append(text)  # finishes its save
            gc.save(new, path)
        return real_loads(text, *args, **kwargs)

    monkeypatch.setattr(json, "loads", loads)
    back = gc.load(path)
    monkeypatch.undo()
    assert calls
    _same(back, old)
    _same(gc.load(path), new)


def test_load_refuses_what_is_not_a_regular_file(tmp_path):
    """A FIFO would block forever; devices and folders are no checkpoints (item 4)."""
    import threading
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    outcome = []

    def load():
        try:
            gc.load(fifo)
        except BaseException as e:  # noqa: BLE001 - reported below
            outcome.append(e)

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # it hangs: unblock it with a writer that closes at once
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(10)
        raise AssertionError("gc.load of a FIFO waited for a writer")
    assert isinstance(outcome[0], gio.CheckpointError), outcome
    assert "named pipe (FIFO), not a regular file" in str(outcome[0])
    assert repr(str(fifo)) in str(outcome[0])

    with pytest.raises(gio.CheckpointError, match="'/dev/null' is a character device, "
                                                  "not a regular file"):
        gc.load("/dev/null")
    with pytest.raises(IsADirectoryError) as err:
        gc.load(tmp_path)
    assert os.fspath(err.value.filename) == str(tmp_path)


def _crafted(tree, arrays=None, metadata=None):
    meta = {"gradcore": json.dumps({"version": 1, "tree": tree})}
    return safetensors.numpy.save(arrays or {}, metadata=metadata or meta)


def test_crafted_metadata_gives_checkpoint_errors_naming_the_file(tmp_path):
    """Deep or mistyped structure: CheckpointError naming the file, never a bare
    RecursionError or TypeError (item 5)."""
    deep_lists = "[" * 600 + "]" * 600  # JSON parses it; a recursive walk would not
    deep_tuples = {"$tuple": []}
    for _ in range(400):
        deep_tuples = {"$tuple": [deep_tuples]}
    w = {"w": np.ones(2, np.float32), "i": np.arange(2)}
    cases = [
        (safetensors.numpy.save({}, metadata={"gradcore": '{"version": 1, "tree": '
                                              + deep_lists + "}"}), "nested more than 100"),
        (safetensors.numpy.save({}, metadata={"gradcore": "[" * 100000}), "not valid"),
        (_crafted(deep_tuples), "nested more than 100 deep"),
        (_crafted({"$dict": 5}), r"\$dict holds a int"),
        (_crafted({"$dict": [["a", 1, 2]]}), "bad dict entry"),
        (_crafted({"$dict": [[["a"], 1]]}), "bad dict entry"),
        (_crafted({"$dict": [["a", 1], ["a", 2]]}), "'a' appears twice"),
        (_crafted({"$tuple": 3}), r"\$tuple holds a int"),
        (_crafted({"$float": []}), "bad float"),
        (_crafted({"$tensor": ["w"]}, w), "a tensor named by a list"),
        (_crafted({"$tensor": "w", "device": 7}, w), "saved device 7"),
        (_crafted({"$tensor": "w", "device": "banana"}, w), "saved device 'banana'"),
        (_crafted({"$tensor": "w", "requires_grad": "yes"}, w), "requires_grad 'yes'"),
        (_crafted({"$tensor": "i", "requires_grad": True}, w), "only Tensors of floating"),
        (_crafted({"$tensor": "w", "$tuple": []}, w), "expected one of"),
        (safetensors.numpy.save({}, metadata={"gradcore": "[1]"}), "not valid"),
        (safetensors.numpy.save({}, metadata={"gradcore": json.dumps(
            {"version": True, "tree": None})}), "not valid"),
    ]
    for data, message in cases:
        (tmp_path / "f").write_bytes(data)
        with pytest.raises(gio.CheckpointError, match=message) as err:
            gc.load(tmp_path / "f")
        assert repr(str(tmp_path / "f")) in str(err.value)
        with open(tmp_path / "f", "rb") as fh, pytest.raises(gio.CheckpointError) as err:
            gc.load(fh)  # an open file is named too
        assert repr(str(tmp_path / "f")) in str(err.value)


def _hand_made(header: dict, data: bytes = b"") -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def test_malformed_safetensors_headers_are_refused_as_the_library_refuses_them(tmp_path):
    t = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    cases = {
        "list": (json.dumps([1]).encode(), "does not begin with a header length and a "
                                           "JSON header"),
        "not utf-8": (b'{"\xff": 1}', "header is not safetensors JSON"),
        "entry": (_hand_made({"w": [1]})[8:], "described by a list"),
        "shape": (_hand_made({"w": dict(t, shape=[-2])})[8:], "has shape"),
        "bool shape": (_hand_made({"w": dict(t, shape=[True, 2])})[8:], "has shape"),
        "offsets": (_hand_made({"w": dict(t, data_offsets=["0", 8])})[8:], "data_offsets"),
        "size": (_hand_made({"w": dict(t, shape=[3])})[8:], "needs 12 bytes"),
        "gap": (_hand_made({"w": dict(t, data_offsets=[4, 12])})[8:], "tile the data"),
        "metadata": (_hand_made({"__metadata__": {"gradcore": 5}})[8:], "metadata is not"),
    }
    for text, message in cases.values():
        data = struct.pack("<Q", len(text)) + text + b"\0" * 8
        (tmp_path / "f").write_bytes(data)
        with pytest.raises(gio.CheckpointError, match=message):
            gc.load(tmp_path / "f")
        with pytest.raises(safetensors.SafetensorError):  # the library refuses them too
            safetensors.numpy.load(data)
    # a name twice: ambiguous (the library keeps one of them; gradcore refuses)
    text = b'{"w": ' + json.dumps(t).encode() + b', "w": ' + json.dumps(t).encode() + b"}"
    (tmp_path / "f").write_bytes(struct.pack("<Q", len(text)) + text + b"\0" * 8)
    with pytest.raises(gio.CheckpointError, match="'w' appears twice"):
        gc.load(tmp_path / "f")
    # bytes after the data the header describes: refused, as the library does
    data = safetensors.numpy.save({"w": np.ones(2, np.float32)}) + b"\0" * 8
    (tmp_path / "f").write_bytes(data)
    with pytest.raises(gio.CheckpointError, match="8 bytes follow the 8 bytes of tensor"):
        gc.load(tmp_path / "f")
    with pytest.raises(safetensors.SafetensorError):
        safetensors.numpy.load(data)


def test_headers_over_the_safetensors_limit_are_refused_on_both_sides(tmp_path,
                                                                       monkeypatch):
    monkeypatch.setattr(gio, "_MAX_HEADER", 1000)  # the library's is 100,000,000 bytes
    gc.save({"note": "x" * 800}, tmp_path / "f")
    with pytest.raises(ValueError, match="more than the 1000 a safetensors header may hold"):
        gc.save({"note": "x" * 1000}, tmp_path / "f")
    assert gc.load(tmp_path / "f") == {"note": "x" * 800}
    text = json.dumps({"__metadata__": {"n": "x" * 1000}}).encode()
    (tmp_path / "f").write_bytes(struct.pack("<Q", len(text)) + text)
    with pytest.raises(gio.CheckpointError, match=f"its safetensors header is {len(text)} "
                                                  "bytes long, more than the 1000"):
        gc.load(tmp_path / "f")


def test_unsupported_dtypes_name_the_file_tensor_and_dtype(tmp_path):
    path = tmp_path / "u.safetensors"
    safetensors.numpy.save_file({"ids": np.arange(3, dtype=np.uint16)}, path)
    with pytest.raises(gio.CheckpointError, match=r"u.safetensors'.*tensor 'ids' has dtype "
                                                  r"'U16' \(uint16\), which gradcore does "
                                                  "not support"):
        gc.load(path)
    path.write_bytes(_hand_made({"h": {"dtype": "BF16", "shape": [2],
                                       "data_offsets": [0, 4]}}, b"\0" * 4))
    with pytest.raises(gio.CheckpointError, match=r"tensor 'h' has dtype 'BF16' \(bfloat16\)"):
        gc.load(path)
    for shape in [[2**64, 0], [1] * 65]:  # no array has 65 dimensions, or 2**64 rows
        path.write_bytes(_hand_made({"x": {"dtype": "F32", "shape": shape,
                                           "data_offsets": [0, 4 * math.prod(shape)]}},
                                    b"\0" * 4 * math.prod(shape)))
        with pytest.raises(gio.CheckpointError, match="tensor 'x' has shape .* no array can "
                                                      "hold"):
            gc.load(path)
    path.write_bytes(_hand_made({"q": {"dtype": "Q7", "shape": [2],
                                       "data_offsets": [0, 4]}}, b"\0" * 4))
    with pytest.raises(gio.CheckpointError, match="tensor 'q' has dtype 'Q7', an unknown"):
        gc.load(path)


def test_save_refuses_paths_that_name_no_file_and_names_the_users_path(tmp_path, monkeypatch):
    """Item 5: "" and "x.st/" are no file names (as open() says); errors name the path
    the user gave, never the hidden temporary."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    with pytest.raises(FileNotFoundError) as err:
        gc.save({"a": 1}, "")
    assert err.value.filename == ""
    with pytest.raises(IsADirectoryError) as err:
        gc.save({"a": 1}, "x.st/")
    assert err.value.filename == "x.st/"
    with pytest.raises(IsADirectoryError) as err:
        gc.save({"a": 1}, ".")
    assert err.value.filename == "."
    assert os.listdir(tmp_path) == ["work"] and os.listdir(work) == []
    os.mkfifo("pipe")  # a save replaces files; it must not turn a FIFO or a device
    with pytest.raises(OSError, match="will not replace a named pipe") as err:  # into one
        gc.save({"a": 1}, "pipe")
    assert err.value.filename == "pipe" and stat.S_ISFIFO(os.stat("pipe").st_mode)
    os.unlink("pipe")
    gc.save({"a": 1}, "x.st")
    with pytest.raises(NotADirectoryError):  # as open("x.st/") and torch.load say
        gc.load("x.st/")
    assert gc.load("x.st") == {"a": 1}

    with pytest.raises(FileNotFoundError) as err:
        gc.save({"a": 1}, "missing/f")
    assert err.value.filename == "missing/f" and ".tmp" not in str(err.value)

    def full(fh, arrays, metadata):
        fh.write(b"\0" * 10)
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(gio, "_write_safetensors", full)
    with pytest.raises(OSError, match="No space left") as err:
        gc.save({"a": 2}, "x.st")
    assert err.value.errno == 28 and err.value.filename == "x.st"
    assert ".tmp" not in str(err.value)
    assert os.listdir(work) == ["x.st"]


def test_deep_objects_are_refused_on_save_with_a_clear_error(tmp_path):
    obj = []
    for _ in range(150):
        obj = [obj]
    with pytest.raises(ValueError, match=r"nested more than 100 deep \(at \[0\]\[0\]\[0\]"
                                         r"\[\.\.\.\]"):
        gc.save(obj, tmp_path / "f")
    assert not os.listdir(tmp_path)
    ok = {}
    for i in range(99):  # 100 containers, the most a checkpoint holds
        ok = {"a": ok} if i % 2 else (ok,)
    gc.save(ok, tmp_path / "f")
    assert gc.load(tmp_path / "f") == ok
    with pytest.raises(ValueError, match="nested more than 100 deep"):
        gc.save([ok], tmp_path / "f")


def test_our_writer_writes_what_the_safetensors_library_writes(tmp_path):
    arrays = {d: _tensor(d, seed=i).numpy() for i, d in enumerate(DTYPES)}
    arrays.update({"é": np.ones(0, np.float32), 'a\n\x01"\\': np.array(3.0),
                   "b": np.ones((2, 1, 3), np.int8)})
    for meta in [None, {"gradcore": 'x"y\\z é'}]:
        buf = io.BytesIO()
        gio._write_safetensors(buf, arrays, meta)
        assert buf.getvalue() == safetensors.numpy.save(arrays, metadata=meta)


_KILLABLE_SAVE = """
import os, sys, time
import gradcore as gc, gradcore.io as gio
real = gio._write_safetensors
def slow(fh, arrays, metadata):
    fh.write(b"\\0" * 100000)   # part of the checkpoint is on disk...
    fh.flush()
    print("writing", flush=True)
    time.sleep(60)             # ...when the signal comes
    real(fh, arrays, metadata)
gio._write_safetensors = slow
try:
    gc.save({"w": gc.ones(10)}, sys.argv[1])
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def _start_killable_save(tmp_path, path):
    """A process saving to ``path`` that stops half-way; returns it and its temporary."""
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(gio.__file__)), os.environ.get("PYTHONPATH", "")]))
    before = set(os.listdir(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", _KILLABLE_SAVE, str(path)], env=env,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "writing\n"
    (temp,) = set(os.listdir(tmp_path)) - before
    assert temp.startswith(f".{path.name}.") and temp.endswith(".tmp")
    return proc, temp


needs_posix = pytest.mark.skipif(os.name != "posix", reason="POSIX signals and pids")


@needs_posix
def test_a_save_killed_by_sigterm_removes_its_temporary(tmp_path):
    """Item 3: SIGTERM mid-save: the temporary goes, the old file stays, and the process
    still dies of SIGTERM."""
    import signal
    path = tmp_path / "ckpt.safetensors"
    gc.save({"old": 1}, path)
    proc, _ = _start_killable_save(tmp_path, path)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == -signal.SIGTERM
    assert os.listdir(tmp_path) == [path.name]
    assert gc.load(path) == {"old": 1}

    proc, _ = _start_killable_save(tmp_path, path)  # Ctrl-C: KeyboardInterrupt
    proc.send_signal(signal.SIGINT)
    assert proc.stdout.read() == "interrupted\n" and proc.wait(30) == 0
    assert os.listdir(tmp_path) == [path.name]


@needs_posix
def test_the_next_save_removes_temporaries_of_killed_writers_only(tmp_path):
    """Item 3: SIGKILL leaves a temporary; the next save to the same path removes it, but
    never a live writer's (another process saving now), another host's, another
    target's or a file of another pattern."""
    import signal
    path = tmp_path / "ckpt.safetensors"
    proc, stale = _start_killable_save(tmp_path, path)
    proc.kill()
    proc.wait(30)
    assert stale in os.listdir(tmp_path)  # SIGKILL: nothing could clean up
    dead = proc.pid
    others = {f".{path.name}.some-other-host.{dead}.0123456789ab.tmp",
              f".{path.name}.{dead}.tmp",
              f".{path.name}.{gio._HOST}.{dead}.0123456789ab.tmp.keep",
              f".other.safetensors.{gio._HOST}.{dead}.0123456789ab.tmp"}
    for name in others:
        (tmp_path / name).write_bytes(b"x")
    live, live_tmp = _start_killable_save(tmp_path, path)  # the next save: still writing
    try:
        assert stale not in os.listdir(tmp_path)
        gc.save({"new": 2}, path)  # while the other process writes
        assert set(os.listdir(tmp_path)) == others | {live_tmp, path.name}
        assert gc.load(path) == {"new": 2}
    finally:
        live.send_signal(signal.SIGTERM)
        live.wait(30)
    assert set(os.listdir(tmp_path)) == others | {path.name}


def test_damaged_checkpoints_raise_only_checkpoint_errors():
    """Item 5's promise, sampled: bytes flipped, cut or replaced anywhere in a checkpoint
    (header, metadata, data) give a CheckpointError or a checkpoint, nothing else."""
    import random
    obj = {"model": {"w": gc.randn(3, 4), "b": gc.zeros(4, dtype=gc.int64)},
           "opt": {"state": {0: {"step": 3, "m": (gc.ones(2), 1.5)}}, "lr": [0.1, math.inf]},
           "flag": True}
    buf = io.BytesIO()
    gc.save(obj, buf)
    good = buf.getvalue()
    n = _header_length(good)
    rng = random.Random(0)
    outcomes = {"refused": 0, "loaded": 0}
    for _ in range(1500):
        data = bytearray(good)
        how = rng.randrange(3)
        if how == 0:
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(8 + n)] = rng.randrange(256)
        elif how == 1:
            data = data[:rng.randrange(len(data))]
        else:  # a JSON character swapped in or out; the length kept consistent
            at = rng.randrange(8, 8 + n)
            data[at:at + 1] = rng.choice([b"{", b"}", b"[", b"]", b'"', b",", b"1", b"-", b"",
                                          b"null", b"true", b":", b"\\"])
            data[:8] = struct.pack("<Q", n + len(data) - len(good))
        try:
            gc.load(io.BytesIO(bytes(data)))
            outcomes["loaded"] += 1
        except gio.CheckpointError:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 1000 and outcomes["loaded"] > 0

    # well-formed JSON, wrong structure: random trees of tags and values
    def tree(depth=0):
        atoms = [None, True, 1, -2**70, 1.5, "x", "", [], {}, "inf", "w", "i", "cuda:0"]
        if depth > 4 or rng.random() < 0.3:
            return rng.choice(atoms)
        if rng.random() < 0.2:
            return [tree(depth + 1) for _ in range(rng.randrange(3))]
        keys = ["$dict", "$tuple", "$float", "$tensor", "device", "requires_grad"]
        node = {rng.choice(keys): tree(depth + 1) for _ in range(rng.randint(1, 3))}
        if rng.random() < 0.3:
            node = {"$dict": [[rng.choice(["a", 1, True, None, []]), tree(depth + 1)]
                              for _ in range(2)]}
        if rng.random() < 0.2:
            node = {"$tensor": rng.choice(["w", "i", "zz", 3]),
                    "device": rng.choice(["cpu", "cuda:1", 3, "x", None]),
                    "requires_grad": rng.choice([True, False, 1, "y"])}
        return node

    arrays = {"w": np.ones(2, np.float32), "i": np.arange(2)}
    outcomes = {"refused": 0, "loaded": 0}
    for _ in range(800):
        doc = {"version": rng.choice([1, 1, 1, 0, True, "1", 2]), "tree": tree()}
        data = safetensors.numpy.save(arrays, metadata={"gradcore": json.dumps(doc)})
        try:
            gc.load(io.BytesIO(data))
            outcomes["loaded"] += 1
        except gio.CheckpointError:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 500 and outcomes["loaded"] > 0


def test_load_takes_pytorchs_keywords(tmp_path):
    """torch.load(path, map_location=..., weights_only=True) as public programs write it:
    the keywords are accepted; a pickle is refused whatever weights_only says."""
    path = tmp_path / "ck.st"
    gc.save({"w": gc.ones(2)}, path)
    for kwargs in ({"weights_only": True}, {"weights_only": False}, {"mmap": True},
                   {"map_location": "cpu", "weights_only": True},
                   {"pickle_module": None, "encoding": "latin1"}):
        assert gc.load(path, **kwargs)["w"].tolist() == [1.0, 1.0]
    bad = tmp_path / "ck.pt"
    bad.write_bytes(pickle.dumps({"w": [1.0]}))
    with pytest.raises(gc.io.CheckpointError):
        gc.load(bad, weights_only=False)


def test_numpy_arrays_and_scalars_round_trip_as_numpy(tmp_path):
    """PyTorch pickles NumPy values (and 2.6+ refuses them on a weights-only load);
    gradcore stores their data and gives them back as NumPy, type and dtype kept."""
    path = tmp_path / "np.safetensors"
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)[:, ::2]  # not contiguous
    obj = {"a": arr, "f": np.float64(1.5), "i": np.int16(-3), "b": np.bool_(True),
           "z": np.zeros((0, 2), np.int64), "t": gc.ones(2)}
    gc.save(obj, path)
    back = gc.load(path)
    np.testing.assert_array_equal(back["a"], arr)
    assert type(back["a"]) is np.ndarray and back["a"].dtype == np.float32
    for key in "fib":
        assert type(back[key]) is type(obj[key]) and back[key] == obj[key]
    assert back["z"].shape == (0, 2) and isinstance(back["t"], gc.Tensor)
    back["a"][0, 0] = 7  # writable, its own copy
    with pytest.raises(TypeError, match=r"NumPy <U1 array \(at \['s'\]\)"):
        gc.save({"s": np.array(["x"])}, path)
    with pytest.raises(TypeError, match="complex128"):
        gc.save([np.ones(2, np.complex128)], path)
