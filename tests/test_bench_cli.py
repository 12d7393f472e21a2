"""``gradcore bench``: every suite at tiny sizes, its table, JSON, plot and options; and
``gradcore`` alone (its usage)."""

import contextlib
import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest

import gradcore as gc
from gradcore import benchmark, cli

TINY = {"mlp": "8,16", "pointwise": "16,64", "broadcast": "8,32", "step": "8,16", "conv": "8"}
HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
REASON = "no CUDA device found (the driver reports 0 GPUs)"


def cuda_unusable(monkeypatch, reason=REASON):
    """CUDA unusable for ``reason`` until the test ends, whatever this machine has (a GPU,
    the stand-in or neither): the probe's answer is replaced and what it cached forgotten."""
    monkeypatch.setattr(gc.backend, "_probe_cuda", lambda: (None, reason))
    monkeypatch.setattr(gc.backend, "_cuda_maths", {})
    for dev in list(gc.backend._devices.values()):
        if dev.type == "cuda":
            monkeypatch.setattr(dev, "_math", None)
    assert not gc.cuda.is_available() and gc.cuda.unavailable_reason() == reason


def _bench(tmp_path, suite, *extra, devices="cpu"):
    """Run ``gradcore bench`` on tiny sizes (``devices=None``: the default devices)."""
    path = tmp_path / f"{suite}.json"
    argv = ["bench", "--suite", suite, "--sizes", TINY.get(suite, "8,16"), "--repeat", "2",
            "--json", str(path), "--no-progress", *extra]
    if devices is not None:
        argv += ["--devices", devices]
    assert cli.main(argv) == 0
    return path


def _rows(out, suite):
    return [line.split() for line in out.splitlines() if line.startswith(suite + " ")]


@pytest.mark.parametrize("suite", ["mlp", "pointwise", "broadcast", "step", "conv"])
def test_each_suite_prints_a_table_and_writes_json(suite, tmp_path, capsys):
    path = _bench(tmp_path, suite, devices=None)  # the default: the CPU, and a usable GPU
    out = capsys.readouterr().out
    gpu = gc.cuda.is_available()  # a real GPU: make gpu-test on a lent machine
    if not gpu:
        assert "no GPU found" in out and gc.cuda.unavailable_reason() in out
    assert re.search(r"suite\s+size\s+CPU\s+GPU\s+GPU speedup", out)
    rows = _rows(out, suite)
    sizes = [int(s) for s in TINY[suite].split(",")]
    assert [int(r[1]) for r in rows] == sizes
    for r in rows:
        assert r[3] in ("us", "ms", "s")   # a CPU time with its unit
    if gpu:
        assert re.search(rf"crossover {suite}: (GPU never wins|GPU wins from size \d+)", out)
    else:
        assert f"crossover {suite}: no GPU" in out
    assert f"wrote {path}" in out

    doc = json.loads(path.read_text())
    for key in ("cpu_model", "cpu_cores", "numpy_version", "blas", "python_version", "date",
                "gpu"):
        assert key in doc["machine"]
    assert doc["machine"]["cpu_cores"] >= 1 and doc["machine"]["blas"]
    results = [r for r in doc["results"] if r["impl"] == "gradcore"]
    devices = ["cpu", "cuda"] if gpu else ["cpu"]
    assert sorted((r["size"], r["device"]) for r in results) == \
        sorted((s, d) for s in sizes for d in devices)
    assert all(r["median_s"] > 0 and len(r["times_s"]) == 2 for r in results)
    if not gpu:
        assert doc["crossover"] == {suite: None}


def test_the_cuda_path_with_the_standin(standin, tmp_path, capsys):
    """With a (stand-in) GPU the table has GPU times, a speedup and a crossover line."""
    path = _bench(tmp_path, "broadcast", devices="cpu,cuda")
    out = capsys.readouterr().out
    assert "no GPU found" not in out
    for r in _rows(out, "broadcast"):
        assert r[-1].endswith("x")                 # the speedup column
    assert re.search(r"crossover broadcast: (GPU never wins|GPU wins from size \d+)", out)
    doc = json.loads(path.read_text())
    assert sorted({r["device"] for r in doc["results"]}) == ["cpu", "cuda"]
    assert len(doc["results"]) == 4
    assert doc["machine"]["gpu"]["name"] == "CuPy stand-in (NumPy)"


def test_step_suite_is_also_timed_compiled(tmp_path, capsys):
    path = _bench(tmp_path, "step")
    out = capsys.readouterr().out
    assert re.search(r"GPU speedup\s+CPU compiled\s+compiled speedup", out)
    compiled = [r for r in json.loads(path.read_text())["results"] if r["impl"] == "compiled"]
    assert sorted(r["size"] for r in compiled) == [int(s) for s in TINY["step"].split(",")]
    assert all(r["device"] == "cpu" and r["median_s"] > 0 for r in compiled)
    _bench(tmp_path, "step", "--no-compile")
    out = capsys.readouterr().out
    assert "compiled" not in out
    _bench(tmp_path, "mlp")  # a backward alone is not a whole step: no compiled column
    assert "compiled" not in capsys.readouterr().out


def test_crossover_reads_the_largest_sizes():
    def res(dev, times):
        return [{"suite": "s", "size": n, "impl": "gradcore", "device": dev, "median_s": t}
                for n, t in times.items()]

    cpu = res("cpu", {1: 1.0, 2: 2.0, 4: 4.0, 8: 8.0})
    assert benchmark.crossover(cpu + res("cuda", {1: 2.0, 2: 1.0, 4: 5.0, 8: 3.0}), "s") == 8
    assert benchmark.crossover(cpu + res("cuda", {1: 2.0, 2: 1.0, 4: 1.0, 8: 1.0}), "s") == 2
    assert benchmark.crossover(cpu + res("cuda", {1: 9, 2: 9, 4: 9, 8: 9}), "s") == \
        "GPU never wins"
    assert benchmark.crossover(cpu, "s") is None


def test_compare_torch(tmp_path, capsys):
    path = _bench(tmp_path, "mlp", "--compare-torch")
    out = capsys.readouterr().out
    if not HAS_TORCH:
        assert "PyTorch is not installed" in out
        pytest.skip("PyTorch is not installed: only the message is checked")
    assert re.search(r"torch CPU\s+CPU vs torch", out) and "torch GPU" not in out
    # suite, size, CPU (2), GPU "-", speedup "-", torch CPU (2), gradcore / torch
    assert all(len(r) == 9 and r[-1].endswith("x") for r in _rows(out, "mlp"))
    torch_results = [r for r in json.loads(path.read_text())["results"] if r["impl"] == "torch"]
    assert [r["size"] for r in torch_results] == [8, 16]
    assert all(r["median_s"] > 0 for r in torch_results)


def test_table_sets_torch_beside_gradcore_on_each_device():
    """With torch figures on both devices, each device's column pair reads gradcore's
    median over torch's on that device."""
    def res(impl, dev, t):
        return {"suite": "mlp", "size": 64, "impl": impl, "device": dev, "median_s": t}

    results = [res("gradcore", "cpu", 4e-3), res("gradcore", "cuda:0", 1e-3),
               res("torch", "cpu", 2e-3), res("torch", "cuda:0", 0.5e-3)]
    table = benchmark.format_table(results, [benchmark.SUITES["mlp"]])
    assert re.search(r"torch CPU\s+CPU vs torch\s+torch GPU\s+GPU vs torch", table)
    row = _rows(table, "mlp")[0]
    assert row[6:] == ["4.00x", "2.00", "ms", "2.00x", "500.0", "us", "2.00x"]


def test_table_sets_the_compiled_step_beside_pytorch_s_cuda_graph():
    """A GPU's whole-step figures: gradcore eager and compiled, PyTorch eager, and
    PyTorch's hand-captured CUDA graph, with gradcore compiled over torch's graph."""
    def res(impl, dev, t):
        return {"suite": "step", "size": 512, "impl": impl, "device": dev, "median_s": t}

    results = [res("gradcore", "cuda:0", 2e-3), res("compiled", "cuda:0", 0.25e-3),
               res("torch", "cuda:0", 1.6e-3), res("torch graph", "cuda:0", 0.2e-3)]
    table = benchmark.format_table(results, [benchmark.SUITES["step"]])
    assert re.search(r"GPU compiled\s+GPU compiled speedup\s+torch GPU\s+GPU vs torch\s+"
                     r"torch GPU graph\s+GPU compiled vs torch graph", table)
    row = _rows(table, "step")[0]
    assert row[-9:] == ["250.0", "us", "8.00x", "1.60", "ms", "1.25x", "200.0", "us", "1.25x"]


def test_torch_cuda_graph_keeps_the_step_alive_and_replays_it():
    """The replay function of PyTorch's graph holds the step (whose static tensors the
    graph reads: freed, their memory would be handed to other tensors) and replays."""
    calls = []

    class FakeGraph:
        def replay(self):
            calls.append("replay")

    class FakeCuda:
        Stream = lambda self=None: type("S", (), {"wait_stream": lambda s, o: None})()  # noqa: E731
        CUDAGraph = FakeGraph

        @staticmethod
        def current_stream():
            return type("S", (), {"wait_stream": lambda s, o: None})()

        @staticmethod
        def stream(s):
            return contextlib.nullcontext()

        @staticmethod
        def graph(g):
            return contextlib.nullcontext()

    fake_torch = type("T", (), {"cuda": FakeCuda})

    def step(_):
        calls.append("step")

    replay = benchmark._torch_cuda_graph(fake_torch, step)
    assert calls == ["step"] * 4  # three warm-ups, then the capture
    assert step in (replay.__defaults__ or ())
    replay(None)
    assert calls[-1] == "replay"


@pytest.mark.skipif(not HAS_MATPLOTLIB, reason="matplotlib is not installed (the plot extra): "
                    "test_plot_without_matplotlib_stops_before_the_sweep covers that")
def test_plot(tmp_path, capsys):
    png = tmp_path / "bench.png"
    _bench(tmp_path, "pointwise", "--plot", str(png))
    assert f"wrote {png}" in capsys.readouterr().out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _no_sweep(*args, **kwargs):
    raise AssertionError("the sweep ran")


def test_plot_without_matplotlib_stops_before_the_sweep(tmp_path, capsys, monkeypatch):
    """--plot without matplotlib: one line, exit status 2, before any timing (not the whole
    sweep, then nothing written and status 0); --json is not written either."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    monkeypatch.setattr(benchmark, "run", _no_sweep)
    assert benchmark.plot_unavailable_reason().startswith(benchmark.PLOT_MISSING)
    png, path = tmp_path / "bench.png", tmp_path / "bench.json"
    assert cli.main(["bench", "--suite", "pointwise", "--sizes", "16", "--devices", "cpu",
                     "--json", str(path), "--plot", str(png)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith(f"gradcore bench: {benchmark.PLOT_MISSING} (")
    assert "matplotlib" in captured.err and "gradcore[plot]" in captured.err
    assert not png.exists() and not path.exists()


def test_plot_failing_after_the_sweep_is_an_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(benchmark, "plot_unavailable_reason", lambda: None)
    monkeypatch.setattr(benchmark, "plot", lambda *args: False)
    png = tmp_path / "bench.png"
    assert cli.main(["bench", "--suite", "broadcast", "--sizes", "8", "--devices", "cpu",
                     "--repeat", "1", "--no-progress", "--plot", str(png)]) == 1
    captured = capsys.readouterr()
    assert captured.err == f"gradcore bench: {benchmark.PLOT_MISSING}\n"
    assert "wrote" not in captured.out


@pytest.mark.parametrize("devices", ["cuda", "cuda:0", "cpu,cuda"])
@pytest.mark.parametrize("profile", [[], ["--profile"]])
def test_devices_named_but_unusable_is_an_error(devices, profile, capsys, monkeypatch):
    """A GPU named with --devices that cannot be used: one line naming it and why, exit
    status 2, nothing timed (not the CPU alone, quietly, with status 0)."""
    cuda_unusable(monkeypatch)
    monkeypatch.setattr(benchmark, "run", _no_sweep)
    monkeypatch.setattr(benchmark, "profile_suite", _no_sweep)
    assert cli.main(["bench", "--suite", "broadcast", "--sizes", "8", "--devices", devices,
                     *profile]) == 2
    captured = capsys.readouterr()
    name = devices.split(",")[-1]
    assert captured.out == ""
    assert captured.err == (f"gradcore bench: --devices {name}: CUDA was requested but "
                            f"cannot be used: {REASON}\n")


def test_default_devices_without_a_gpu_time_the_cpu(capsys, monkeypatch):
    """Without --devices, no usable GPU is no error: one line says why, the CPU is timed."""
    cuda_unusable(monkeypatch)
    assert cli.main(["bench", "--suite", "broadcast", "--sizes", "8", "--repeat", "1",
                     "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"no GPU found ({REASON}): running the CPU side only\n")
    assert [r[:2] for r in _rows(out, "broadcast")] == [["broadcast", "8"]]


def test_devices_beyond_the_gpus_there_are(standin, capsys, monkeypatch):
    monkeypatch.setattr(benchmark, "run", _no_sweep)
    assert cli.main(["bench", "--devices", "cpu,cuda:1"]) == 2
    assert capsys.readouterr().err == ("gradcore bench: --devices cuda:1: cuda:1 requested "
                                       "but only 1 CUDA device(s) exist\n")


def test_devices_name_one_device_once(standin, tmp_path, capsys):
    path = _bench(tmp_path, "broadcast", devices="cuda,cpu,cuda:0")
    doc = json.loads(path.read_text())
    assert doc["settings"]["devices"] == ["cuda", "cpu"]
    assert sorted(r["device"] for r in doc["results"]) == ["cpu", "cpu", "cuda", "cuda"]


def test_bench_ignores_an_unusable_gradcore_device(tmp_path, capsys, monkeypatch):
    """GRADCORE_DEVICE picks the default device, which bench does not time: an unusable
    one does not stop a CPU sweep (the models are made on the devices timed)."""
    cuda_unusable(monkeypatch)
    monkeypatch.setenv("GRADCORE_DEVICE", "cuda")
    gc.set_default_device(None)  # re-read GRADCORE_DEVICE (the fixtures restore it)
    for suite in ("mlp", "step"):
        path = _bench(tmp_path, suite, devices="cpu")
        assert {r["device"] for r in json.loads(path.read_text())["results"]} == {"cpu"}


def test_no_command_prints_the_usage(capsys):
    """``gradcore`` alone: the usage and what each command does, on stderr, exit status 2
    (argparse's status for a missing argument), nothing on stdout."""
    assert cli.main([]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("usage: gradcore [-h] {train,compare,bench} ...\n")
    for command in ("train", "compare", "bench"):
        assert re.search(rf"^\s+{command}\s+\S", captured.err, flags=re.M), command


def test_python_dash_m_gradcore_alone_prints_the_usage():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    out = subprocess.run([sys.executable, "-m", "gradcore"], capture_output=True, text=True,
                         timeout=120, cwd=root, env=env)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("usage: gradcore") and "bench" in out.stderr


def test_progress_lines(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "tqdm", None)  # force the plain lines
    assert cli.main(["bench", "--suite", "broadcast", "--sizes", "8,16", "--devices", "cpu",
                     "--repeat", "2"]) == 0
    err = capsys.readouterr().err
    assert re.findall(r"^\[\d/2\] broadcast \d+ cpu: ", err, flags=re.M) and \
        len(err.strip().splitlines()) == 2


@pytest.mark.parametrize("argv, message", [
    (["bench", "--suite", "resnet"], "--suite"),
    (["bench", "--sizes", "0"], "--sizes"),
    (["bench", "--sizes", "a,b"], "--sizes"),
    (["bench", "--devices", "tpu"], "tpu"),
    (["bench", "--devices", ","], "--devices"),
    (["bench", "--repeat", "0"], "--repeat"),
])
def test_bad_options_give_one_line(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err
