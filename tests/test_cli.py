"""The main job: ``gradcore train`` (and ``gradcore compare``), run in-process."""

import importlib.util
import re
import sys
import types
import warnings

import pytest
from test_bench_cli import REASON, cuda_unusable

import gradcore as gc
from gradcore import cli

# the tests that train; those of options and devices fail before the data is read
needs_sklearn = pytest.mark.skipif(importlib.util.find_spec("sklearn") is None,
                                   reason="gradcore train needs scikit-learn (the examples extra)")


def _accuracies(out):
    return [float(a) for a in re.findall(r"test accuracy\s+([\d.]+)%", out)]


@needs_sklearn
def test_default_training_reaches_97_percent(capsys):
    assert cli.main(["train", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "on cpu" in out
    final = float(re.search(r"final test accuracy ([\d.]+)%", out).group(1))
    assert final >= 97.0
    assert len(_accuracies(out)) == 31   # one line per epoch, and the final one


@needs_sklearn
@needs_sklearn
def test_compiled_training_prints_what_eager_training_prints(capsys):
    """train compiles its step on the CPU by default: losses and accuracies are the
    eager ones, digit for digit (only the rates differ)."""
    args = ["train", "--epochs", "3", "--seed", "2", "--no-progress", "--hidden", "32"]
    outputs = []
    for extra in ([], ["--no-compile"]):
        assert cli.main(args + extra) == 0
        out = capsys.readouterr().out
        outputs.append([line.split("(")[0] for line in out.splitlines()
                        if line.startswith(("epoch", "final"))])
    assert outputs[0] == outputs[1] and len(outputs[0]) == 4


def test_same_seed_same_result_on_the_cpu(capsys):
    args = ["train", "--epochs", "3", "--seed", "5", "--no-progress", "--hidden", "32"]
    cli.main(args)
    first = re.sub(r"\([\d,.]+ (samples/s|s on cpu)\)", "", capsys.readouterr().out)
    cli.main(args)
    second = re.sub(r"\([\d,.]+ (samples/s|s on cpu)\)", "", capsys.readouterr().out)
    assert first == second


@pytest.mark.parametrize("argv, message", [
    (["train", "--epochs", "0"], "--epochs"),
    (["train", "--lr", "-1"], "--lr"),
    (["train", "--hidden", "12,x"], "--hidden"),
    (["train", "--optimizer", "lbfgs"], "--optimizer"),
    (["train", "--device", "tpu"], "tpu"),
    (["frobnicate"], "frobnicate"),
])
def test_bad_options_give_one_line(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_unusable_cuda_is_one_line(capsys, monkeypatch):
    cuda_unusable(monkeypatch)
    assert cli.main(["train", "--device", "cuda"]) == 2
    assert capsys.readouterr().err == ("gradcore train: --device cuda: CUDA was requested but "
                                       f"cannot be used: {REASON}\n")


def test_a_gpu_beyond_those_there_are_is_one_line(standin, capsys):
    assert cli.main(["train", "--device", "cuda:1"]) == 2
    assert capsys.readouterr().err == ("gradcore train: --device cuda:1: cuda:1 requested but "
                                       "only 1 CUDA device(s) exist\n")


@pytest.mark.parametrize("value, why", [
    ("cuda", f"CUDA was requested but cannot be used: {REASON}"),
    ("tpu", "unknown device 'tpu': expected 'cpu', 'cuda' or 'cuda:N'"),
])
def test_an_unusable_gradcore_device_is_named(value, why, capsys, monkeypatch):
    """Without --device, train runs on GRADCORE_DEVICE's device: when that cannot be
    used, the error names the variable and its value (it blamed "--device None")."""
    cuda_unusable(monkeypatch)
    monkeypatch.setenv("GRADCORE_DEVICE", value)
    gc.set_default_device(None)  # re-read GRADCORE_DEVICE (the fixtures restore it)
    assert cli.main(["train", "--no-progress"]) == 2
    assert capsys.readouterr().err == \
        f"gradcore train: GRADCORE_DEVICE={value} (or pass --device): {why}\n"


@needs_sklearn
def test_device_option_overrides_an_unusable_gradcore_device(capsys, monkeypatch):
    """--device cpu trains on the CPU whatever GRADCORE_DEVICE says: the model is made on
    the device asked for, not on the default one and then moved."""
    cuda_unusable(monkeypatch)
    monkeypatch.setenv("GRADCORE_DEVICE", "cuda")
    gc.set_default_device(None)
    assert cli.main(["train", "--device", "cpu", "--epochs", "1", "--hidden", "16",
                     "--no-progress"]) == 0
    assert "final test accuracy" in capsys.readouterr().out


def test_compare_ignores_an_unusable_gradcore_device(capsys, monkeypatch):
    cuda_unusable(monkeypatch)
    monkeypatch.setenv("GRADCORE_DEVICE", "cuda")
    gc.set_default_device(None)
    assert cli.main(["compare", "--batch-size", "8", "--width", "16", "--repeat", "1"]) == 0
    assert f"no GPU found ({REASON})" in capsys.readouterr().out


class _Bar:
    """A stand-in for tqdm's bar: records that one was made."""
    made = []

    def __init__(self, **kwargs):
        _Bar.made.append(kwargs)

    def set_postfix(self, **kwargs):
        pass

    def update(self, n):
        pass

    def close(self):
        pass


@needs_sklearn
def test_progress_bar_only_when_stderr_is_a_terminal(capsys, monkeypatch):
    """A bar's carriage-return fragments belong on a terminal, not in a log or a pipe."""
    monkeypatch.setitem(sys.modules, "tqdm", types.SimpleNamespace(tqdm=_Bar))
    monkeypatch.setattr(_Bar, "made", [])
    args = ["train", "--epochs", "2", "--hidden", "16"]
    assert cli.main(args) == 0  # stderr is pytest's capture: not a terminal
    captured = capsys.readouterr()
    assert _Bar.made == [] and captured.err == ""
    assert len(_accuracies(captured.out)) == 3  # the epoch lines say what the bar would
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert cli.main(args) == 0
    assert [bar["desc"] for bar in _Bar.made] == ["epoch 1/2", "epoch 2/2"]
    assert cli.main([*args, "--no-progress"]) == 0
    assert len(_Bar.made) == 2


@needs_sklearn
def test_save_writes_a_checkpoint_that_loads(tmp_path, capsys):
    path = tmp_path / "digits.safetensors"
    assert cli.main(["train", "--epochs", "1", "--no-progress", "--save", str(path)]) == 0
    ckpt = gc.load(str(path))
    model = cli.build_model(64, ckpt["hidden"], 10)
    model.load_state_dict(ckpt["model"])
    assert ckpt["epoch"] == 1 and "state" in ckpt["optimizer"]


@needs_sklearn
def test_ctrl_c_stops_cleanly_and_saves_first(tmp_path, capsys, monkeypatch):
    path = tmp_path / "interrupted.safetensors"
    steps = {"n": 0}
    real_step = gc.optim.Adam.step

    def step_then_interrupt(self, *a, **k):
        steps["n"] += 1
        if steps["n"] == 60:
            raise KeyboardInterrupt
        return real_step(self, *a, **k)

    monkeypatch.setattr(gc.optim.Adam, "step", step_then_interrupt)
    assert cli.main(["train", "--no-progress", "--save", str(path)]) == 130
    captured = capsys.readouterr()
    assert "interrupted in epoch 2" in captured.err
    assert gc.load(str(path))["epoch"] == 2


def test_compare_says_when_there_is_no_gpu(capsys):
    assert cli.main(["compare", "--batch-size", "8", "--width", "16", "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    assert "CPU" in out
    if not gc.cuda.is_available():
        assert "no GPU found" in out


@needs_sklearn
def test_training_on_the_cuda_path_matches_the_cpu(capsys):
    """gradcore train on the CUDA code path (the CuPy stand-in, gradcore's kernels on):
    the same losses and accuracies as on the CPU to the printed digits, and the host
    waits for the device only to print each epoch's figures."""
    from conftest import cuda_standin

    args = ["train", "--epochs", "2", "--no-progress", "--seed", "3"]

    def figures(out):
        return re.findall(r"epoch\s+\d+\s+train loss [\d.]+\s+test loss [\d.]+\s+test "
                          r"accuracy [\d.]+%", out)

    steps, real_compile = [], gc.compile

    def compiling(fn):  # (the compiled step, kept to count its captures and replays)
        steps.append(real_compile(fn))
        return steps[-1]

    with cuda_standin() as standin, pytest.MonkeyPatch.context() as mp, \
            warnings.catch_warnings():
        warnings.simplefilter("error")  # (a step that ran eagerly would say so)
        mp.setattr(cli.gc, "compile", compiling)
        standin.reset_syncs()
        assert cli.main([*args, "--device", "cuda"]) == 0
        syncs = standin.host_syncs()
    cuda = figures(capsys.readouterr().out)
    assert cli.main([*args, "--device", "cpu"]) == 0
    assert cuda == figures(capsys.readouterr().out) and len(cuda) == 2
    # a few per epoch (its printed figures and one read of the range checks its index ops
    # and targets left: backend.check_range), none per step
    assert syncs <= 12, syncs
    # batches of 32 (44 an epoch): eager, captured twice, then replayed, never captured
    # again (on the H200, captures that kept disagreeing made the compiled run four
    # times slower than eager); the last batch of each epoch (30): eager, then captured
    (step,) = steps
    assert (step.recordings, step.replays) == (2 + 1, 2 * 44 - 3)


@needs_sklearn
def test_the_cnn_learns_the_digits_compiled_as_eager(capsys):
    """--model cnn (conv, batch norm, ReLU, max pool, twice; linear): the compiled step
    prints what the eager one does, and four epochs pass 95% held out."""
    args = ["train", "--model", "cnn", "--epochs", "4", "--no-progress"]
    outputs = []
    for extra in ([], ["--no-compile"]):
        assert cli.main(args + extra) == 0
        out = capsys.readouterr().out
        assert "training a CNN" in out
        outputs.append([line.split("(")[0] for line in out.splitlines()
                        if line.startswith(("epoch", "final"))])
    assert outputs[0] == outputs[1]
    assert float(re.search(r"final test accuracy ([\d.]+)%", out).group(1)) > 95
