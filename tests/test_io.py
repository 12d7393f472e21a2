"""gc.save / gc.load: safetensors checkpoints that round-trip every value type, are
written atomically, open in plain safetensors, and refuse pickles and broken files."""

import io
import json
import math
import os
import pickle
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

    def crash(arrays, tmp, metadata):
        data = safetensors.numpy.save(arrays, metadata=metadata)
        with open(tmp, "wb") as fh:
            fh.write(data[: len(data) // 2])  # half the new file is on disk...
        raise OSError("disk full")           # ...when the writer dies

    monkeypatch.setattr(gio, "_write_safetensors", crash)
    with pytest.raises(OSError, match="disk full"):
        gc.save({"version": 2, "w": gc.zeros(1000)}, path)
    assert path.read_bytes() == old_bytes
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]  # no temporary left behind
    assert gc.load(path)["version"] == 1

    def interrupted(arrays, tmp, metadata):
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
             ({"a": [np.int64(3)]}, TypeError, r"numpy.int64 \(at \['a'\]\[0\]\)"),
             ({"a": np.ones(2)}, TypeError, "numpy.ndarray"),
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
