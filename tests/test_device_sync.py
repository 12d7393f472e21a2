"""No host round trip in a training step (issue 4, item 1), on whatever CUDA device the
suite runs on: the CuPy stand-in (which counts every synchronization) in CI, a real GPU
under ``make gpu-test`` (with ``cupyx.allow_synchronize(False)``, which makes any
synchronization raise)."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import gradcore as gc
import gradcore.nn.functional as F

TEST_DEVICES = ("cuda-standin", "cuda")  # the CPU has no device to wait for


@contextlib.contextmanager
def synchronization_forbidden(device):
    xp = gc.device(device).xp
    if getattr(xp, "__name__", "") == "cupy_standin":
        xp.reset_syncs(log=True)
        yield
        assert xp.host_syncs() == 0, xp.sync_log()
    else:
        import cupyx  # noqa: PLC0415  (a real GPU: CuPy is installed)

        with cupyx.allow_synchronize(False):
            yield


def _model(device):
    gc.manual_seed(0)
    nn = gc.nn
    return nn.Sequential(nn.Linear(20, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 32),
                         nn.Tanh(), nn.Dropout(0.1), nn.Linear(32, 5)).to(device)


@pytest.mark.parametrize("opt_name, loss_name", [
    ("SGD", "cross_entropy"), ("Adam", "cross_entropy_smoothed"), ("AdamW", "mse"),
])
def test_a_training_step_never_synchronizes(device, opt_name, loss_name):
    model = _model(device)
    opt = {"SGD": lambda p: gc.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
           "Adam": lambda p: gc.optim.Adam(p, lr=1e-2, amsgrad=True),
           "AdamW": lambda p: gc.optim.AdamW(p, lr=1e-2)}[opt_name](model.parameters())
    rng = np.random.default_rng(0)
    x = gc.tensor(rng.standard_normal((16, 20)), dtype=gc.float32, device=device)
    labels = rng.integers(0, 5, 16)
    labels[3] = -100  # an ignored target
    t = gc.tensor(labels, device=device)
    y = gc.tensor(rng.standard_normal((16, 5)), dtype=gc.float32, device=device)

    def step():
        out = model(x)
        if loss_name == "mse":
            loss = F.mse_loss(out, y)
        else:
            loss = F.cross_entropy(out, t, label_smoothing=0.1 if "smoothed" in loss_name
                                   else 0.0)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    first = step().item()  # compiles the kernels, fills the memory pool
    with synchronization_forbidden(device):
        for _ in range(3):
            loss = step()
    last = loss.item()  # reading the loss is where the host waits
    assert np.isfinite(first) and np.isfinite(last)


# ops whose output shape depends on the values: CuPy reads the count back too
SYNC_NEEDED = {"getitem_mask": "a boolean mask's output size is the number of its trues",
               "masked_select": "its output size is the number of the mask's trues",
               "masked_select_broadcast": "its output size is the number of the mask's trues",
               "repeat_interleave_counts": "its output size is the sum of the counts "
                                           "(PyTorch reads it too, unless output_size=)",
               "mode": "its counts (bincount) are as long as the largest value, read back",
               "quantile": "q is checked to lie in [0, 1] on the host, as PyTorch checks it",
               "nanquantile_midpoint": "q is checked to lie in [0, 1] on the host, as "
                                       "PyTorch checks it",
               # iterative formulas run over whole arrays, not yet as CUDA kernels
               "polygamma": "polygamma with n >= 2 reads the least input back (below -9 "
                            "its series takes one step per unit)",
               "special_zeta": "the Hurwitz zeta reads the least q back (below 9 its "
                               "series takes one step per unit), as polygamma does",
               "igamma_igammac": "the series and continued fraction read back whether "
                                 "every element has converged, every 32 steps",
               # as PyTorch's: an error that depends on the values
               "linalg.cholesky": "a matrix that is not positive-definite raises: the "
                                  "factorization's status is read back (PyTorch's too)",
               "cholesky_upper": "a matrix that is not positive-definite raises: the "
                                 "factorization's status is read back (PyTorch's too)",
               "gaussian_nll_loss": "a negative variance raises ValueError: PyTorch reads "
                                    "var < 0 back too",
               "linalg.lstsq": "residuals are returned only when every matrix has full "
                               "rank: an output whose shape depends on the values",
               "linalg.matrix_exp": "the number of squarings comes from the largest norm, "
                                    "read back (not yet chosen on the device)"}


def _op_params():
    from test_ops_table import OPS  # noqa: PLC0415

    return [pytest.param(op, id=op.name, marks=pytest.mark.skip(reason=SYNC_NEEDED[op.name]))
            if op.name in SYNC_NEEDED else pytest.param(op, id=op.name) for op in OPS]


@pytest.mark.parametrize("op", _op_params())
def test_every_op_of_the_table_stays_on_the_device(device, op):
    """Forward and backward of each op of tests/test_ops_table.py in float32 on the
    CUDA device, without a host synchronization."""
    from test_ops_table import _inputs  # noqa: PLC0415

    if op.shapes == "unary":
        shapes = [(3, 4)]
    elif op.shapes == "binary":
        shapes = [(3, 4), (4,)]
    else:
        first = op.shapes[0]
        shapes = list(first) if isinstance(first[0], tuple) else [first]
    arrays = _inputs(op, shapes, seed=3)
    xs = [gc.tensor(a, dtype=gc.float32, device=device, requires_grad=True) for a in arrays]
    op.fn(gc, *xs).sum().backward()  # a first run: compiles kernels, fills the pool
    for x in xs:
        x.grad = None
    with synchronization_forbidden(device):
        out = op.fn(gc, *xs)
        out.backward(gc.ones_like(out))
    assert any(x.grad is not None for x in xs)


# ---- out-of-range indices: checked on the device, raised at the next read --------------
def test_an_index_out_of_range_is_raised_at_the_next_read(device):
    """CuPy wraps an out-of-range integer-array index around; gradcore finds it on the
    device without waiting and raises the op's error when a value is next read back."""
    x = gc.arange(6.0, device=device).reshape(2, 3)
    bad, good = gc.tensor([0, 2], device=device), gc.tensor([1, 0], device=device)
    with synchronization_forbidden(device):
        y = x[bad]                                  # queued: no wait here
        z = x[good] * 2
    with pytest.raises(IndexError, match=r"index 2 is out of bounds for dimension 0 with "
                                         r"size 2 \(a tensor of shape \(2, 3\)\)"):
        z.tolist()                                  # any read reports it, once
    assert y.shape == (2, 3)
    assert z.tolist() == [[6.0, 8.0, 10.0], [0.0, 2.0, 4.0]]  # the device stays usable


def test_the_first_failed_check_is_raised(device):
    x = gc.zeros(4, 5, device=device)
    x[gc.tensor([1], device=device)]                          # fine
    x[:, gc.tensor([5], device=device)]                       # dimension 1
    F.embedding(gc.tensor([9], device=device), x)             # later, also bad
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 1 with "
                                         "size 5"):
        x.sum().item()
    x.sum().item()  # the later failure went with the first: one read reports one error


def test_pending_checks_are_read_before_they_pile_up(device):
    """Without reads (a long loop on the device), the checks are read every
    ``PENDING_CHECKS_LIMIT`` ops: the list stays short, and a bad index is not lost."""
    limit = gc.backend.PENDING_CHECKS_LIMIT
    x, idx = gc.zeros(3, device=device), gc.tensor([2, 0], device=device)
    xp = gc.device(device).xp
    standin = getattr(xp, "__name__", "") == "cupy_standin"
    if standin:
        xp.reset_syncs()
    for _ in range(limit - 1):
        x[idx]
    assert len(gc.backend._pending_checks) == limit - 1
    if standin:
        assert xp.host_syncs() == 0
    x[idx]
    assert not gc.backend._pending_checks
    if standin:
        assert xp.host_syncs() == 1                 # one read for all of them
    for _ in range(limit - 1):
        x[idx]
    with pytest.raises(IndexError, match="index 3 is out of bounds"):
        x[gc.tensor([3], device=device)]            # the limit: read, and raised, here
