"""The main job: ``gradcore train`` (and ``gradcore compare``), run in-process."""

import re

import pytest

import gradcore as gc
from gradcore import cli

pytest.importorskip("sklearn", reason="gradcore train needs scikit-learn (the examples extra)")


def _accuracies(out):
    return [float(a) for a in re.findall(r"test accuracy\s+([\d.]+)%", out)]


def test_default_training_reaches_97_percent(capsys):
    assert cli.main(["train", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "on cpu" in out
    final = float(re.search(r"final test accuracy ([\d.]+)%", out).group(1))
    assert final >= 97.0
    assert len(_accuracies(out)) == 31   # one line per epoch, and the final one


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


def test_unusable_cuda_is_one_line(capsys):
    if gc.cuda.is_available():
        pytest.skip("a GPU is usable here")
    assert cli.main(["train", "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "CuPy" in err


def test_save_writes_a_checkpoint_that_loads(tmp_path, capsys):
    path = tmp_path / "digits.safetensors"
    assert cli.main(["train", "--epochs", "1", "--no-progress", "--save", str(path)]) == 0
    ckpt = gc.load(str(path))
    model = cli.build_model(64, ckpt["hidden"], 10)
    model.load_state_dict(ckpt["model"])
    assert ckpt["epoch"] == 1 and "state" in ckpt["optimizer"]


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


def test_training_on_the_cuda_path_matches_the_cpu(capsys):
    """gradcore train on the CUDA code path (the CuPy stand-in, gradcore's kernels on):
    the same losses and accuracies as on the CPU to the printed digits, and the host
    waits for the device only to print each epoch's figures."""
    from conftest import cuda_standin

    args = ["train", "--epochs", "2", "--no-progress", "--seed", "3"]

    def figures(out):
        return re.findall(r"epoch\s+\d+\s+train loss [\d.]+\s+test loss [\d.]+\s+test "
                          r"accuracy [\d.]+%", out)

    with cuda_standin() as standin:
        standin.reset_syncs()
        assert cli.main([*args, "--device", "cuda"]) == 0
        syncs = standin.host_syncs()
    cuda = figures(capsys.readouterr().out)
    assert cli.main([*args, "--device", "cpu"]) == 0
    assert cuda == figures(capsys.readouterr().out) and len(cuda) == 2
    # a few per epoch (its printed figures and one read of the range checks its index ops
    # and targets left: backend.check_range), none per step
    assert syncs <= 12, syncs
