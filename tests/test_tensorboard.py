"""gradcore.utils.tensorboard.SummaryWriter: event files TensorBoard reads, as PyTorch's."""

import numpy as np
import pytest

import gradcore as gc

pytest.importorskip("tensorboard", reason="SummaryWriter needs the tensorboard package")
from tensorboard.backend.event_processing.event_accumulator import (  # noqa: E402
    EventAccumulator,
)

from gradcore.utils.tensorboard import SummaryWriter  # noqa: E402

from conftest import needs_torch  # noqa: E402


def _load(path):
    acc = EventAccumulator(str(path), size_guidance={"histograms": 0, "scalars": 0,
                                                     "tensors": 0})
    acc.Reload()
    return acc


def test_scalars_histograms_and_text_are_read_back(tmp_path):
    values = np.linspace(-2, 3, 101, dtype=np.float32)
    with SummaryWriter(tmp_path) as w:
        assert w.get_logdir() == str(tmp_path)
        for step in range(3):
            w.add_scalar("train/loss", gc.tensor(1.0 / (step + 1)), step)
        w.add_scalar("lr", 0.5, 7, new_style=True)
        w.add_histogram("weights", gc.tensor(values), 2)
        w.add_text("note", "hello", 0)
        w.add_scalars("run", {"a": 1.0, "b": gc.tensor([2.0])}, 4)
    acc = _load(tmp_path)
    assert [(e.step, round(e.value, 6)) for e in acc.Scalars("train/loss")] == \
        [(0, 1.0), (1, 0.5), (2, 0.333333)]
    (lr,) = acc.Tensors("lr")
    assert lr.step == 7 and lr.tensor_proto.float_val == [0.5]
    (h,) = acc.Histograms("weights")
    assert h.step == 2 and h.histogram_value.num == 101
    assert h.histogram_value.min == pytest.approx(-2)
    assert sum(h.histogram_value.bucket) == 101
    (text,) = acc.Tensors("note/text_summary")
    assert text.tensor_proto.string_val == [b"hello"]
    for key, value in (("a", 1.0), ("b", 2.0)):
        (e,) = _load(tmp_path / f"run_{key}").Scalars("run")
        assert (e.step, e.value) == (4, value)


def test_bad_values_are_refused(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(AssertionError, match="one element"):
            w.add_scalar("x", gc.ones(3))
        with pytest.raises(ValueError, match="no element"):
            w.add_histogram("h", gc.ones(0))


@needs_torch
@pytest.mark.parametrize("bins", ["tensorflow", "auto", 7])
def test_histogram_buckets_are_pytorch_s(tmp_path, bins):
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    x = np.random.default_rng(0).standard_normal(500)
    with SummaryWriter(tmp_path / "g") as w:
        w.add_histogram("h", gc.tensor(x), 1, bins=bins, max_bins=20)
    with TorchWriter(tmp_path / "t") as w:
        w.add_histogram("h", x, 1, bins=bins, max_bins=20)
    (g,), (t,) = (_load(tmp_path / d).Histograms("h") for d in "gt")
    assert g.histogram_value == t.histogram_value
