"""``gc.profile()``: the device kernels a step launches and the bytes they move.

Inside ``with gc.profile() as prof:`` every kernel launch that gradcore would issue on a
CUDA device is counted, with the bytes it reads and writes, and set beside the minimum
for the same step: each buffer read once and written once.  The count does not depend
on having a GPU (it is the same on the CPU), and it shows where a step launches more
than it must.

>>> import gradcore as gc
>>> x = gc.ones(1000, device="cpu")
>>> w = gc.ones(1000, device="cpu", requires_grad=True)
>>> with gc.profile() as prof:
...     (x * w).sum().backward()
>>> prof.launches, prof.bytes, prof.min_bytes
(3, 24008, 20008)
>>> [(k.name, k.launches) for k in prof.key_averages()]
[('multiply', 2), ('sum', 1)]

**What counts as a launch.** One of gradcore's fused kernels (a name of the kernel
registry, :func:`gradcore.kernels.declarations`, read when the profile starts) is
one launch, whatever its NumPy twin does inside; its bytes are its array arguments read
and its results (or, for an update, the arrays it updates) written.  Every other
array-module call that writes device memory is one launch: ufuncs and their
reductions, ``matmul``, ``where``, copies and casts, creation that fills memory
(``zeros``, ``ones_like``, ``full``), indexing with index arrays and index
assignment.  Views (reshape of a contiguous array, transpose, basic indexing,
``broadcast_to``), ``empty`` and host-to-device copies (``asarray`` of host data) are
not launches.  A broadcast input is read at its own size.  Ops that prefer a fused
kernel on a device that has them (``math.device_kernels``) take that path while
profiling, so the count is that of a CUDA device with gradcore's kernels (except where
an op checks values on the host on the CPU only: ``nll_loss``'s targets, ``embedding``'s
indices; those checks are counted on the CPU).

**How.** Nothing in the ops or the engine knows about profiling: on entry the profile
installs counters on the array namespaces and array classes in use, and on exit (also
after an exception) removes them (:mod:`gradcore.launch_count`). CuPy's own arrays (a
compiled type) cannot be instrumented: a profile does not count on a real GPU, where
the count is the CPU's.

A call made inside a counted call (the NumPy twin of a fused kernel, ``mean``'s sum
and division) is not counted again.  Only the thread that entered the profile counts;
one profile runs at a time.
"""

from __future__ import annotations

from . import backend, launch_count
from .launch_count import KernelStats, StepStats, _format_bytes, _mean, _number, _order

__all__ = ["profile", "KernelStats", "StepStats", "can_count"]


class profile:  # noqa: N801  (a context manager, like torch.profiler.profile)
    """Count the kernels the code inside the ``with`` block launches, and their bytes.

    ``step()`` marks the end of a training step.  After the block: ``steps`` (one
    :class:`StepStats` per step; the block is one step when none is marked),
    ``launches``, ``bytes`` (read + written), ``bytes_read``, ``bytes_written`` and
    ``min_bytes`` over all steps, ``key_averages()`` (per step, by kernel) and
    ``table()``.
    """

    def __init__(self):
        self._steps: list[StepStats] = []
        self._session = None

    def __enter__(self):
        self._steps = []
        self._session = launch_count.start()
        return self

    def __exit__(self, *exc):
        session = self._session
        if session is None:
            return False
        self._session = None
        launch_count.stop(session)
        if session.step.kernels or not self._steps:
            self._steps.append(session.step.stats())
        return False

    def step(self) -> None:
        """End the current step (as ``torch.profiler.profile.step``)."""
        session = self._session
        if session is None:
            raise RuntimeError("profile.step() outside the profile's `with` block")
        self._steps.append(session.step.stats())
        launch_count.new_step(session)

    def _so_far(self) -> tuple[int, int, int]:
        """(launches, bytes read, bytes written) counted so far, the running step
        included (``gradcore.profiler``'s regions take differences of it)."""
        done = self._steps
        launches = sum(s.launches for s in done)
        read = sum(s.bytes_read for s in done)
        written = sum(s.bytes_written for s in done)
        if self._session is not None:
            for _, n, r, w in self._session.step.kernels.values():
                launches, read, written = launches + n, read + r, written + w
        return launches, read, written

    # -- what was counted --------------------------------------------------------------
    @property
    def steps(self) -> list[StepStats]:
        """One ``StepStats`` per step (the block is one step when none is marked)."""
        return list(self._steps)

    @property
    def launches(self) -> int:
        """The kernels launched, over all steps."""
        return sum(s.launches for s in self._steps)

    @property
    def bytes_read(self) -> int:
        """The bytes the kernels read, over all steps."""
        return sum(s.bytes_read for s in self._steps)

    @property
    def bytes_written(self) -> int:
        """The bytes the kernels wrote, over all steps."""
        return sum(s.bytes_written for s in self._steps)

    @property
    def bytes(self) -> int:
        """``bytes_read + bytes_written``."""
        return self.bytes_read + self.bytes_written

    @property
    def min_bytes(self) -> int:
        """The fewest bytes the steps could move: every buffer they touch read once (if
        read) and written once (if written)."""
        return sum(s.min_bytes for s in self._steps)

    def key_averages(self) -> list[KernelStats]:
        """Launches and bytes per step of each kernel, most bytes first."""
        n = max(len(self._steps), 1)
        total: dict[str, list] = {}
        for s in self._steps:
            for k in s.kernels:
                t = total.setdefault(k.name, [k.kind, 0, 0, 0])
                t[1] += k.launches
                t[2] += k.bytes_read
                t[3] += k.bytes_written
        rows = [KernelStats(name, kind, _mean(c, n), _mean(r, n), _mean(w, n))
                for name, (kind, c, r, w) in total.items()]
        return sorted(rows, key=_order)

    def table(self, row_limit: int | None = None) -> str:
        """The count as text: a summary line, then one row per kernel (per step)."""
        n = max(len(self._steps), 1)
        launches, moved, minimum = self.launches / n, self.bytes / n, self.min_bytes / n
        fused_launches = sum(k.launches for k in self.key_averages() if k.kind == "fused")
        ratio = f"{moved / minimum:.2f}x the minimum" if minimum else "no minimum"
        per = "one step" if n == 1 else f"per step (mean of {n} steps)"
        lines = [f"{per}: {_number(launches)} launches ({_number(fused_launches)} fused), "
                 f"{_format_bytes(moved)} moved (read {_format_bytes(self.bytes_read / n)}, "
                 f"written {_format_bytes(self.bytes_written / n)}); minimum "
                 f"{_format_bytes(minimum)} (each buffer read once and written once): "
                 f"{ratio}"]
        rows = self.key_averages()
        if row_limit is not None:
            rows = rows[:row_limit]
        header = ["kernel", "kind", "launches", "read", "written", "total"]
        body = [[k.name, k.kind, _number(k.launches), _format_bytes(k.bytes_read),
                 _format_bytes(k.bytes_written), _format_bytes(k.bytes)] for k in rows]
        body.append(["total", "", _number(launches), _format_bytes(self.bytes_read / n),
                     _format_bytes(self.bytes_written / n), _format_bytes(moved)])
        widths = [max(len(r[i]) for r in [header] + body) for i in range(len(header))]

        def line(r):
            return "  ".join(v.ljust(w) if i < 2 else v.rjust(w)
                             for i, (v, w) in enumerate(zip(r, widths))).rstrip()

        lines += ["", line(header), line(["-" * w for w in widths])]
        lines += [line(r) for r in body[:-1]]
        lines += [line(["-" * w for w in widths]), line(body[-1])]
        if self._session is None and _uncounted_note():
            lines.append(_uncounted_note())
        return "\n".join(lines)

    def __repr__(self):
        return (f"<gradcore.profile: {len(self._steps)} step(s), {self.launches} launches, "
                f"{self.bytes} bytes, minimum {self.min_bytes}>")


def can_count(device) -> bool:
    """Whether a profile counts what runs on ``device`` (the CPU, or a CUDA device whose
    arrays are a Python class, as the tests' CuPy stand-in; not CuPy's own arrays)."""
    dev = backend.device(device)
    return dev.type == "cpu" or launch_count.patchable(dev.math.ndarray)


def _uncounted_note() -> str:
    skipped = launch_count._skipped_devices
    if not skipped:
        return ""
    return (f"not counted: {', '.join(skipped)} (CuPy's arrays cannot be "
            "instrumented; the count is the same on the CPU)")

