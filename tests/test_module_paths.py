"""The import paths PyTorch programs use (``from torch.nn.parameter import Parameter``,
``from torch.nn.modules.conv import _ConvNd``, ``torch.version.cuda``, ...) reach
gradcore's own objects when gradcore stands in for torch (``sys.modules["torch"] =
gradcore``, as dev/programs/run_as_torch.py does), and behave as PyTorch's."""

import contextlib
import importlib
import inspect
import math
import sys

import pytest

import gradcore as gc

from conftest import needs_torch


@contextlib.contextmanager
def torch_is_gradcore():
    """``sys.modules["torch"]`` is gradcore inside; afterwards sys.modules (PyTorch's
    own modules, when the tests imported them) and the module specs the alias finder
    overwrote are as they were."""
    saved = {k: v for k, v in sys.modules.items() if k == "torch" or k.startswith("torch.")}
    specs = {k: m.__spec__ for k, m in sys.modules.items()
             if k == "gradcore" or k.startswith("gradcore.")}
    for k in saved:
        del sys.modules[k]
    sys.modules["torch"] = gc
    try:
        yield
    finally:
        for k in [k for k in sys.modules if k == "torch" or k.startswith("torch.")]:
            del sys.modules[k]
        sys.modules.update(saved)
        for k, spec in specs.items():
            if k in sys.modules:
                sys.modules[k].__spec__ = spec


def via_torch(path: str):
    """The module ``torch.<path>`` imported through the alias."""
    with torch_is_gradcore():
        return importlib.import_module(f"torch.{path}")


def test_the_alias_context_restores_sys_modules():
    before = dict(sys.modules)
    with torch_is_gradcore():
        importlib.import_module("torch.nn.modules.conv")
        assert sys.modules["torch.nn.modules.conv"] is gc.nn.modules.conv
    assert sys.modules.get("torch") is before.get("torch")
    assert "torch.nn.modules.conv" not in sys.modules or \
        sys.modules["torch.nn.modules.conv"] is before["torch.nn.modules.conv"]
    assert gc.nn.modules.conv.__spec__.name == "gradcore.nn.modules.conv"


# ------------------------------------------------------------------- torch.nn's paths

# the submodules of torch.nn.modules and what each holds, public and private
SUBMODULES = {
    "module": ["Module"],
    "linear": ["Identity", "Linear", "Bilinear", "LazyLinear"],
    "conv": ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
             "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "_ConvNd",
             "_ConvTransposeNd"],
    "batchnorm": ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "_BatchNorm",
                  "_NormBase"],
    "instancenorm": ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "_InstanceNorm"],
    "normalization": ["LayerNorm", "GroupNorm", "LocalResponseNorm", "RMSNorm"],
    "loss": ["MSELoss", "CTCLoss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "L1Loss", "_Loss",
             "_WeightedLoss"],
    "activation": ["ReLU", "GELU", "Softmax", "MultiheadAttention", "PReLU", "Threshold"],
    "container": ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
                  "Container"],
    "dropout": ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
                "FeatureAlphaDropout", "_DropoutNd"],
    "sparse": ["Embedding", "EmbeddingBag"],
    "rnn": ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"],
    "pooling": ["MaxPool2d", "FractionalMaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d",
                "LPPool2d", "MaxUnpool2d", "_MaxPoolNd"],
    "padding": ["ZeroPad2d", "ConstantPad1d", "ReflectionPad2d", "ReplicationPad3d",
                "CircularPad1d", "_ConstantPadNd", "_ReflectionPadNd", "_ReplicationPadNd",
                "_CircularPadNd"],
    "pixelshuffle": ["PixelShuffle", "PixelUnshuffle"],
    "upsampling": ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"],
    "flatten": ["Flatten", "Unflatten"],
    "distance": ["PairwiseDistance", "CosineSimilarity"],
    "fold": ["Fold", "Unfold"],
    "transformer": ["Transformer", "TransformerEncoder", "TransformerDecoder",
                    "TransformerEncoderLayer", "TransformerDecoderLayer", "_get_clones"],
    "channelshuffle": ["ChannelShuffle"],
    "adaptive": ["AdaptiveLogSoftmaxWithLoss"],
}


@pytest.mark.parametrize("name", sorted(SUBMODULES))
def test_nn_modules_submodules_hold_gradcores_classes(name):
    module = via_torch(f"nn.modules.{name}")
    assert module is importlib.import_module(f"gradcore.nn.modules.{name}")
    assert getattr(gc.nn.modules, name) is module  # (an attribute after `import gradcore`)
    for attr in SUBMODULES[name]:
        obj = getattr(module, attr)
        if not attr.startswith("_"):
            assert obj is getattr(gc.nn, attr), f"{name}.{attr}"
        assert obj.__module__.startswith("gradcore."), f"{name}.{attr}"
    for attr in module.__all__:
        assert getattr(module, attr) is getattr(gc.nn, attr), f"{name}.{attr}"


@needs_torch
@pytest.mark.parametrize("name", sorted(SUBMODULES))
def test_nn_modules_submodules_lack_none_of_torchs_names_but_those_gradcore_lacks(name):
    import torch  # noqa: PLC0415

    theirs = importlib.import_module(f"torch.nn.modules.{name}")
    ours = importlib.import_module(f"gradcore.nn.modules.{name}")
    assert set(ours.__all__) <= set(theirs.__all__)
    for attr in theirs.__all__:
        assert hasattr(ours, attr) == hasattr(gc.nn, attr), f"{name}.{attr}"
    for attr in SUBMODULES[name]:  # the same names in the same places as PyTorch's
        assert hasattr(theirs, attr), f"torch.nn.modules.{name}.{attr}"
    assert torch.nn.Module is not gc.nn.Module  # (PyTorch's modules left as they were)


@needs_torch
def test_the_base_classes_are_where_pytorchs_hierarchy_has_them():
    import torch  # noqa: PLC0415

    pairs = [("batchnorm", "_NormBase"), ("batchnorm", "_BatchNorm"),
             ("instancenorm", "_InstanceNorm"), ("loss", "_Loss"), ("loss", "_WeightedLoss"),
             ("dropout", "_DropoutNd"), ("conv", "_ConvNd"), ("conv", "_ConvTransposeNd"),
             ("padding", "_ReflectionPadNd"), ("padding", "_ReplicationPadNd"),
             ("padding", "_ConstantPadNd"), ("padding", "_CircularPadNd"), ("rnn", "RNNBase")]
    for sub, base in pairs:
        theirs = getattr(importlib.import_module(f"torch.nn.modules.{sub}"), base)
        ours = getattr(importlib.import_module(f"gradcore.nn.modules.{sub}"), base)
        for name in dir(torch.nn):
            t, g = getattr(torch.nn, name), getattr(gc.nn, name, None)
            if inspect.isclass(t) and inspect.isclass(g) and not name.startswith("Lazy"):
                assert issubclass(g, ours) == issubclass(t, theirs), (name, base)


def test_losses_carry_their_reduction_and_weight_through_their_bases():
    from gradcore.nn.modules.loss import _Loss, _WeightedLoss  # noqa: PLC0415

    loss = gc.nn.CrossEntropyLoss(weight=gc.ones(3), reduction="sum")
    assert isinstance(loss, _WeightedLoss) and isinstance(loss, _Loss)
    assert loss.reduction == "sum" and "weight" in dict(loss.named_buffers())

    class Halved(_Loss):  # a program's own loss on PyTorch's base
        def forward(self, a, b):
            d = ((a - b) ** 2) / 2
            return d.sum() if self.reduction == "sum" else d.mean()

    assert Halved(reduction="sum")(gc.ones(4), gc.zeros(4)).item() == 2.0
    assert Halved()(gc.ones(4), gc.zeros(4)).item() == 0.5
    with pytest.raises(ValueError):
        gc.nn.Dropout(p=1.5)  # (_DropoutNd's check)


def test_a_program_subclasses_the_private_bases_imported_from_torch_paths():
    with torch_is_gradcore():
        from torch.nn.modules.batchnorm import _BatchNorm  # noqa: PLC0415
        from torch.nn.modules.conv import _ConvNd  # noqa: PLC0415
        from torch.nn.modules.utils import _pair  # noqa: PLC0415
    assert isinstance(gc.nn.Conv2d(1, 1, 3), _ConvNd)
    assert isinstance(gc.nn.BatchNorm1d(3), _BatchNorm)
    assert not isinstance(gc.nn.InstanceNorm1d(3), _BatchNorm)  # (as in PyTorch)
    assert _pair(3) == (3, 3) and _pair((1, 2)) == (1, 2)


def test_nn_parameter_and_common_types():
    p = via_torch("nn.parameter")
    assert p is gc.nn.parameter
    assert p.Parameter is gc.nn.Parameter is gc.Parameter
    assert p.UninitializedParameter is gc.nn.UninitializedParameter
    assert p.Buffer is gc.nn.Buffer
    assert p.is_lazy(gc.nn.LazyLinear(2).weight) and not p.is_lazy(gc.nn.Linear(2, 2).weight)
    c = via_torch("nn.common_types")
    assert c is gc.nn.common_types
    assert c._size_2_t == (int | tuple[int, int])
    assert c._tensor_list_t == (gc.Tensor | tuple[gc.Tensor, ...])


@needs_torch
def test_nn_modules_utils_match_torchs():
    from collections import OrderedDict  # noqa: PLC0415

    import torch.nn.modules.utils as tu  # noqa: PLC0415

    u = via_torch("nn.modules.utils")
    assert u is gc.nn.modules.utils
    for f in ("_single", "_pair", "_triple", "_quadruple"):
        for v in (2, (1, 2, 3), [4, 5]):
            assert getattr(u, f)(v) == getattr(tu, f)(v), (f, v)
    assert u._ntuple(5)(1) == tu._ntuple(5)(1)
    assert u._reverse_repeat_tuple((1, 2, 3), 2) == tu._reverse_repeat_tuple((1, 2, 3), 2)

    def state():
        d = OrderedDict([("module.a", 1), ("module.b.c", 2), ("x", 3)])
        d._metadata = OrderedDict([("", {"v": 0}), ("module", {"v": 1}),
                                   ("module.b", {"v": 2})])
        return d
    ours, theirs = state(), state()
    u.consume_prefix_in_state_dict_if_present(ours, "module.")
    tu.consume_prefix_in_state_dict_if_present(theirs, "module.")
    assert ours == theirs and ours._metadata == theirs._metadata


# ---------------------------------------------------------------- torch.utils' paths

def test_utils_hooks_is_the_handle_modules_return():
    hooks = via_torch("utils.hooks")
    assert hooks.RemovableHandle is gc.nn.RemovableHandle
    m = gc.nn.Linear(2, 2)
    seen = []
    handle = m.register_forward_hook(lambda *a: seen.append(1))
    assert isinstance(handle, hooks.RemovableHandle)
    m(gc.ones(2))
    handle.remove()
    m(gc.ones(2))
    assert seen == [1]


@needs_torch
@pytest.mark.parametrize("n", [1, 7, 10, 12])
@pytest.mark.parametrize("replicas", [1, 3, 4, 20])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_gives_torchs_indices(n, replicas, drop_last):
    from torch.utils.data.distributed import DistributedSampler as Theirs  # noqa: PLC0415

    Ours = via_torch("utils.data.distributed").DistributedSampler
    assert Ours is gc.utils.data.DistributedSampler
    data = list(range(n))
    if drop_last and n < replicas:  # (PyTorch's arithmetic: no index for anyone)
        assert len(Ours(data, replicas, 0, drop_last=True)) == \
            len(Theirs(data, replicas, 0, drop_last=True))
        return
    for rank in range(replicas):
        ours = Ours(data, replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = Theirs(data, replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
        assert (ours.num_samples, ours.total_size) == (theirs.num_samples, theirs.total_size)
        # shuffled: PyTorch's padding and split of gradcore's permutation (the random
        # streams differ), so the ranks together hold each index as PyTorch's do
        shuffled = [list(Ours(data, replicas, r, seed=5, drop_last=drop_last))
                    for r in range(replicas)]
        plain = [list(Theirs(data, replicas, r, shuffle=False, drop_last=drop_last))
                 for r in range(replicas)]
        assert sorted(map(len, shuffled)) == sorted(map(len, plain))
        counts = [sum(x.count(i) for x in shuffled) for i in range(n)]
        assert sorted(counts) == sorted(sum(x.count(i) for x in plain) for i in range(n))


def test_distributed_sampler_shuffles_by_seed_and_epoch():
    from gradcore.utils.data.distributed import DistributedSampler  # noqa: PLC0415

    s = DistributedSampler(range(50), num_replicas=2, rank=1, seed=3)
    first = list(s)
    g = gc.Generator()
    g.manual_seed(3)
    assert first == gc.randperm(50, generator=g).tolist()[1::2]
    assert list(s) == first  # the same order until the epoch changes
    s.set_epoch(1)
    g.manual_seed(4)
    assert list(s) == gc.randperm(50, generator=g).tolist()[1::2] != first
    assert list(DistributedSampler(range(50), 2, 1, seed=3)) == first


def test_distributed_sampler_asks_the_process_group_as_pytorchs():
    from gradcore.utils.data import DistributedSampler  # noqa: PLC0415

    assert not gc.distributed.is_initialized()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(4))
    gc.distributed.init_process_group("gloo")
    try:
        s = DistributedSampler(range(4), shuffle=False)
        assert (s.num_replicas, s.rank, list(s)) == (1, 0, [0, 1, 2, 3])
    finally:
        gc.distributed.destroy_process_group()
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval "
                                         r"\[0, 1\]"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    loader = gc.utils.data.DataLoader(gc.utils.data.TensorDataset(gc.arange(6)),
                                      batch_size=2, sampler=DistributedSampler(
                                          range(6), 2, 0, shuffle=False))
    assert [b[0].tolist() for b in loader] == [[0, 2], [4]]


def test_benchmark_timer_measures():
    bench = via_torch("utils.benchmark")
    assert bench is gc.utils.benchmark
    calls = []
    t = bench.Timer("f()", setup="calls.clear()", globals={"f": lambda: calls.append(1),
                                                          "calls": calls},
                    label="append", sub_label="one", description="d")
    m = t.timeit(50)
    assert isinstance(m, bench.Measurement) and m.number_per_run == 50
    assert len(calls) == 50  # (the warm-up's runs cleared by setup, then 50 timed)
    assert len(m.times) == 1 and m.times[0] == m.raw_times[0] / 50
    assert m.mean == m.median == m.times[0] > 0 and m.iqr == 0
    assert m.title == "append: one" and m.label == "append" and m.stmt == "f()"
    assert "append: one" in repr(m) and "50 runs" in repr(m)

    # a statement that sleeps 2 ms: the times say so
    slow = bench.Timer("time.sleep(0.002)", setup="import time").blocked_autorange(
        min_run_time=0.05)
    assert len(slow.times) >= 1 and slow.number_per_run >= 1
    assert 0.002 <= slow.median < 0.05 and 0.002 <= slow.mean < 0.05
    assert sum(slow.raw_times) >= 0.05
    t = bench.Timer("torch.ones(3) * 2")  # (torch is gradcore in the statement's globals)
    m = t.adaptive_autorange(min_run_time=0.01, max_run_time=0.2)
    assert len(m.times) >= 1 and m.median > 0
    merged = bench.Measurement.merge([m, m])
    assert len(merged) == 1 and merged[0].times == m.times + m.times
    with pytest.raises(ValueError, match="only a `str` stmt"):
        bench.Timer(lambda: None)


@needs_torch
def test_benchmark_measurement_statistics_match_torchs():
    from torch.utils.benchmark.utils.common import Measurement as Theirs  # noqa: PLC0415
    from torch.utils.benchmark.utils.common import TaskSpec as TheirSpec  # noqa: PLC0415

    from gradcore.utils.benchmark import Measurement, TaskSpec  # noqa: PLC0415

    raw = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]
    ours = Measurement(10, raw, TaskSpec("x", "pass", label="L"))
    theirs = Theirs(10, raw, TheirSpec("x", "pass", label="L"))
    for attr in ("times", "median", "mean", "iqr", "has_warnings", "title"):
        a, b = getattr(ours, attr), getattr(theirs, attr)
        assert a == pytest.approx(b), attr
    assert repr(ours).splitlines()[1:] == repr(theirs).splitlines()[1:]


# --------------------------------------------------------- torch's top-level modules

def test_version():
    v = via_torch("version")
    assert v is gc.version and v.__version__ == gc.__version__
    assert v.hip is None and v.debug is False and isinstance(v.git_version, str)
    cuda = v.cuda
    assert cuda is None or (isinstance(cuda, str) and cuda.count(".") == 1)
    if cuda is not None:  # (read from CuPy, which the backend imports)
        major, minor = map(int, cuda.split("."))
        assert major >= 10


def test_serialization_safe_globals():
    s = via_torch("serialization")
    assert s is gc.serialization and s.save is gc.save and s.load is gc.load

    class Mine:
        pass

    s.clear_safe_globals()
    s.add_safe_globals([Mine, (math.sqrt, "math.sqrt")])
    assert set(s.get_safe_globals()) == {Mine, (math.sqrt, "math.sqrt")}
    s.clear_safe_globals()
    with s.safe_globals([Mine]):
        assert s.get_safe_globals() == [Mine]
    assert s.get_safe_globals() == []


def test_serialization_load_needs_no_allow_list(tmp_path):
    s = gc.serialization
    path = tmp_path / "ckpt.safetensors"
    gc.save({"w": gc.ones(2), "step": 3}, path)
    s.clear_safe_globals()
    assert s.load(path, weights_only=True)["step"] == 3
    (tmp_path / "p.pt").write_bytes(b"\x80\x04K\x01.")  # a pickle: refused, whatever
    with s.safe_globals([int]), pytest.raises(Exception, match="pickle"):  # the list says
        s.load(tmp_path / "p.pt")


def test_device_modules():
    cpu, mps, xpu = via_torch("cpu"), via_torch("mps"), via_torch("xpu")
    assert (cpu, mps, xpu) == (gc.cpu, gc.mps, gc.xpu)
    assert cpu.is_available() and cpu.device_count() == 1 and cpu.current_device() == "cpu"
    cpu.synchronize()
    with cpu.amp.autocast(dtype=gc.float16):
        y = gc.nn.functional.linear(gc.ones(2, 3), gc.ones(4, 3))
    assert y.dtype == gc.float16
    with pytest.raises(TypeError, match="bfloat16"):  # (PyTorch's default on the CPU)
        cpu.amp.autocast()
    assert not mps.is_available() and mps.device_count() == 0
    assert not xpu.is_available() and xpu.device_count() == 0
    with pytest.raises(RuntimeError, match="without MPS backend"):
        mps.synchronize()
    with pytest.raises(AssertionError, match="not compiled with XPU"):
        xpu.current_device()
    # what a program's device choice reads
    device = ("cuda" if gc.cuda.is_available() else "mps" if mps.is_available() else "cpu")
    assert device in ("cuda", "cpu")


# ------------------------------------------------------------------- torch.profiler

def _train_steps(prof, n, x, w):
    from gradcore.profiler import record_function  # noqa: PLC0415

    for _ in range(n):
        with record_function("forward"):
            loss = (x * w).sum()
        with record_function("backward"):
            loss.backward()
        prof.step()


def test_profiler_regions_count_what_gc_profile_counts():
    P = via_torch("profiler")
    assert P is gc.profiler
    x, w = gc.ones(1000), gc.ones(1000, requires_grad=True)
    (x * w).sum().backward()  # (w.grad made: each backward below adds into it)
    with gc.profile() as counted:  # the same work under gradcore's own profile
        (x * w).sum().backward()
    with P.profile(activities=[P.ProfilerActivity.CPU]) as prof:
        _train_steps(prof, 3, x, w)
    rows = {e.key: e for e in prof.key_averages()}
    fwd, bwd = rows["forward"], rows["backward"]
    assert fwd.count == bwd.count == 3
    assert (fwd.launches + bwd.launches) / 3 == counted.launches
    assert (fwd.bytes_read + fwd.bytes_written + bwd.bytes_read + bwd.bytes_written) / 3 == \
        counted.bytes
    assert fwd.cpu_time_total > 0 and fwd.cpu_time == pytest.approx(fwd.cpu_time_total / 3)
    per_kernel = {k.name: k.launches for k in counted.key_averages()}
    for name, launches in per_kernel.items():  # kernels: counted, never timed
        assert rows[name].launches == 3 * launches and rows[name].cpu_time_total is None
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=3)
    lines = table.strip().splitlines()
    assert "Name" in lines[1] and len(lines) == 3 + 3 + 1
    assert lines[3].split()[0] in ("forward", "backward")  # timed regions sort first
    with pytest.raises(AttributeError):
        prof.key_averages().table(sort_by="no_such_column")


def test_profiler_outside_a_profile_records_nothing():
    from gradcore.profiler import record_function  # noqa: PLC0415

    @record_function("decorated")
    def f():
        return gc.ones(2) + 1
    assert f().tolist() == [2.0, 2.0]
    with gc.profiler.profile() as prof:
        f()
    assert [e.key for e in prof.key_averages()][0] == "decorated"


@needs_torch
def test_profiler_schedule_is_torchs():
    import warnings  # noqa: PLC0415

    import torch.profiler as tp  # noqa: PLC0415

    for kw in [dict(wait=1, warmup=1, active=2), dict(wait=0, warmup=2, active=1, repeat=2),
               dict(wait=2, warmup=1, active=3, skip_first=3),
               dict(wait=5, warmup=1, active=1, skip_first=2, skip_first_wait=1)]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours, theirs = gc.profiler.schedule(**kw), tp.schedule(**kw)
        assert [ours(i).name for i in range(40)] == [theirs(i).name for i in range(40)], kw
    with pytest.raises(AssertionError, match="Invalid profiler schedule"):
        gc.profiler.schedule(wait=0, warmup=0, active=0)


def test_profiler_schedule_windows_and_on_trace_ready(tmp_path):
    P = gc.profiler
    x, w = gc.ones(10), gc.ones(10, requires_grad=True)
    saved = []
    with P.profile(schedule=P.schedule(wait=1, warmup=1, active=2, repeat=1),
                   on_trace_ready=lambda p: saved.append(p.key_averages())) as prof:
        _train_steps(prof, 6, x, w)
    assert len(saved) == 1  # one cycle: steps 2 and 3 recorded, saved on leaving step 3
    keys = {e.key: e for e in saved[0]}
    assert {"ProfilerStep#2", "ProfilerStep#3"} <= set(keys)
    assert "ProfilerStep#1" not in keys and "ProfilerStep#4" not in keys
    assert keys["forward"].count == 2 and keys["ProfilerStep#2"].count == 1
    assert keys["ProfilerStep#2"].launches == keys["forward"].launches / 2 + \
        keys["backward"].launches / 2
    prof.export_chrome_trace(str(tmp_path / "trace.json"))
    import json  # noqa: PLC0415

    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    assert sorted({e["name"] for e in events}) == ["ProfilerStep#2", "ProfilerStep#3",
                                                   "backward", "forward"]
    assert all(e["dur"] >= 0 for e in events)


def test_autograd_profiler_is_the_older_spelling():
    ap = via_torch("autograd.profiler")
    assert ap is gc.autograd.profiler and ap.record_function is gc.profiler.record_function
    with ap.profile() as prof:
        with ap.record_function("region"):
            gc.ones(3) + 1
    rows = {e.key: e for e in prof.key_averages()}
    assert rows["region"].count == 1 and rows["region"].launches == 2  # (ones, add)
    assert prof.table(sort_by="count") == prof.key_averages().table(sort_by="count")
    with ap.profile(enabled=False) as off:
        gc.ones(2)
    assert list(off.key_averages()) == []


# -------------------------------------------------------------------- torch._dynamo

def test_dynamo_reset_makes_compiled_functions_record_again():
    dynamo = via_torch("_dynamo")
    assert dynamo is gc._dynamo and dynamo.disable is gc.compiler.disable
    f = gc.compile(lambda x: x * 2 + 1)
    x = gc.ones(4)
    for _ in range(4):
        assert f(x).tolist() == [3.0] * 4
    recorded, replayed = f.recordings, f.replays
    assert replayed > 0
    for _ in range(4):
        f(x)
    assert f.recordings == recorded  # (replays only, until reset)
    dynamo.reset()
    for _ in range(4):
        assert f(x).tolist() == [3.0] * 4
    assert f.recordings == 2 * recorded and f.replays == 2 * replayed + 4


def test_dynamo_config():
    config = gc._dynamo.config
    before = gc.capture.cache_size_limit
    try:
        config.cache_size_limit = 1
        assert gc.capture.cache_size_limit == 1 == config.cache_size_limit
        f = gc.compile(lambda x: x + 1)
        f(gc.ones(2))
        with pytest.warns(UserWarning, match="compiled for 1 signatures"):
            f(gc.ones(3))  # a second signature runs eagerly
    finally:
        config.cache_size_limit = before
    config.suppress_errors = True  # (what gradcore's compile does anyway: kept)
    assert gc._dynamo.config.suppress_errors is True
    config.suppress_errors = False
