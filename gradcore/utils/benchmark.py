"""``torch.utils.benchmark``'s :class:`Timer`: a Python statement timed with
:mod:`timeit` (the GPU's queue waited for before each reading, as PyTorch's timer
does), the result a :class:`Measurement` with the times per run and their median, mean
and interquartile range.

>>> from gradcore.utils.benchmark import Timer
>>> m = Timer("x * 2", setup="x = torch.ones(8)").timeit(100)
>>> m.number_per_run, len(m.times)
(100, 1)
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import math
import sys
import textwrap
import timeit
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .. import backend

__all__ = ["Timer", "Measurement", "TaskSpec", "Language", "timer", "select_unit"]

_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


def timer() -> float:
    """``timeit.default_timer()``, after waiting for the work queued on the GPU (where
    one can be used), so that a reading includes the GPU's work."""
    if backend.cuda_is_available():
        backend.cuda_synchronize(None)
    return timeit.default_timer()


class Language(enum.Enum):
    """The language of a :class:`Timer`'s statement: gradcore times Python only."""
    PYTHON = 0
    CPP = 1


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """What a :class:`Timer` times (its statement, setup and labels), as its
    :class:`Measurement` reports it."""
    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label (with the sub-label), else the statement."""
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {self.sub_label}" if self.sub_label else "")
        return (f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n"
                f"{textwrap.indent(self.stmt, '  ')}")

    def setup_str(self) -> str:
        """The setup as the report shows it ("" for none)."""
        if self.setup == "pass" or not self.setup:
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """The title, description and setup, the head of a measurement's report."""
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections if s)


_TASKSPEC_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))


def select_unit(t: float) -> tuple[str, float]:
    """The unit (``"ns"``, ``"us"``, ``"ms"`` or ``"s"``) a time of ``t`` seconds reads
    best in, and its size in seconds."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(math.log10(t) // 3), "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[unit]


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """The result of a :class:`Timer`: ``raw_times`` (seconds per block of
    ``number_per_run`` runs), ``times`` (seconds per run), their ``median``, ``mean``
    and ``iqr`` (quantiles interpolated linearly, as ``torch.quantile``), and the
    timed task's ``task_spec`` (``stmt``, ``label``, ... read through as attributes)."""
    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None  # (the caller's own)

    def __post_init__(self) -> None:
        self._sorted_times: tuple[float, ...] = ()
        self._warnings: tuple[str, ...] = ()
        self._median = self._mean = self._p25 = self._p75 = -1.0

    def __getattr__(self, name: str) -> Any:
        if name in _TASKSPEC_FIELDS:
            return getattr(self.task_spec, name)
        return super().__getattribute__(name)

    @property
    def times(self) -> list[float]:
        """Seconds per run, one entry per block."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        """The median of :attr:`times`."""
        self._lazy_init()
        return self._median

    @property
    def mean(self) -> float:
        """The mean of :attr:`times`."""
        self._lazy_init()
        return self._mean

    @property
    def iqr(self) -> float:
        """The interquartile range of :attr:`times` (75th less 25th percentile)."""
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def has_warnings(self) -> bool:
        """Whether the times spread widely (an interquartile range over 10% of the
        median)."""
        self._lazy_init()
        return bool(self._warnings)

    def _lazy_init(self) -> None:
        if self.raw_times and not self._sorted_times:
            self._sorted_times = tuple(sorted(self.times))
            times = np.asarray(self._sorted_times, dtype=np.float64)
            self._median = float(np.quantile(times, 0.5))
            self._mean = float(times.mean())
            self._p25 = float(np.quantile(times, 0.25))
            self._p75 = float(np.quantile(times, 0.75))

            def add_warning(msg: str) -> None:
                rel_iqr = self.iqr / self.median * 100
                self._warnings += (f"  WARNING: Interquartile range is {rel_iqr:.1f}% "
                                   f"of the median measurement.\n           {msg}",)

            if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
                add_warning("This suggests significant environmental influence.")
            elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
                add_warning("This could indicate system fluctuation.")

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        """Whether the interquartile range is under ``threshold`` times the median.

        Args:
            threshold: the largest ratio of the interquartile range to the median.
        """
        return self.iqr / self.median < threshold

    @property
    def title(self) -> str:
        """The task's title (its label, else its statement)."""
        return self.task_spec.title

    @property
    def env(self) -> str:
        """The task's ``env`` label, ``"Unspecified env"`` without one."""
        return "Unspecified env" if self.task_spec.env is None else self.task_spec.env

    @property
    def as_row_name(self) -> str:
        """The sub-label, else the statement."""
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        self._lazy_init()
        n = len(self._sorted_times)
        unit, scale = select_unit(self._median)
        lines = [object.__repr__(self), self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{self._median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({self._p25 / scale:.2f} "
                         f"to {self._p75 / scale:.2f})")
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {self.num_threads} thread"
                     f"{'s' if self.num_threads > 1 else ''}")
        lines.extend(self._warnings)
        return "\n".join(lines).strip()

    @staticmethod
    def merge(measurements: Iterable[Measurement]) -> list[Measurement]:
        """The measurements of each task merged into one, its times per run together
        (``number_per_run`` 1, no metadata).

        Args:
            measurements: measurements, of one task or several.
        """
        grouped: dict[TaskSpec, list[float]] = collections.defaultdict(list)
        for m in measurements:
            grouped[m.task_spec].extend(m.times)
        return [Measurement(number_per_run=1, raw_times=times, task_spec=spec)
                for spec, times in grouped.items()]


class Timer:
    """Time the Python statement ``stmt`` (run after ``setup``, with ``globals`` as its
    namespace, ``torch`` bound to gradcore unless given) with :mod:`timeit`, as
    PyTorch's ``torch.utils.benchmark.Timer``. Every method returns a
    :class:`Measurement`.

    Args:
        stmt: the statement timed.
        setup: run once before the timing.
        global_setup: C++ only in PyTorch: must be empty.
        timer: the clock (default :func:`timer`: waits for the GPU, then reads
            ``timeit.default_timer``).
        globals: the namespace ``stmt`` and ``setup`` run in.
        label: the measurement's title.
        sub_label: a second title.
        description: a line shown under the title.
        env: a label of the environment.
        num_threads: reported with the measurement; gradcore's CPU work runs in
            NumPy, whose thread pool is not resized (``set_num_threads`` records only).
        language: ``"python"``: gradcore has no C++ timer.
    """

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = timer, globals: dict[str, Any] | None = None,  # noqa: A002
                 label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None,
                 num_threads: int = 1, language: Language | str = Language.PYTHON) -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language in (Language.CPP, "cpp", "c++"):
            raise ValueError("gradcore's Timer times Python statements only (no C++ timer)")
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError(f"Invalid language `{language}`.")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely "
                             "this code can simply be moved to `setup`.")
        self._globals = dict(globals or {})
        self._globals.setdefault("torch", sys.modules[__name__.split(".")[0]])
        stmt = textwrap.dedent(stmt)
        stmt = (stmt[1:] if stmt and stmt[0] == "\n" else stmt).rstrip()
        setup = textwrap.dedent(setup)
        setup = (setup[1:] if setup and setup[0] == "\n" else setup).rstrip()
        self._timer = timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup,
                                   label=label, sub_label=sub_label, description=description,
                                   env=env, num_threads=num_threads)

    def _timeit(self, number: int) -> float:
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> Measurement:
        """Run ``stmt`` ``number`` times (after a warm-up of ``number // 100``): one
        block, as ``timeit.Timer.timeit``.

        Args:
            number: the runs timed.
        """
        self._timeit(number=max(int(number // 100), 2))
        return Measurement(number_per_run=number, raw_times=[self._timeit(number=number)],
                           task_spec=self._task_spec)

    def _estimate_block_size(self, min_run_time: float) -> int:
        overhead = float(np.median([self._timeit(0) for _ in range(5)]))
        number = 1
        while True:
            time_taken = self._timeit(number)
            if overhead / time_taken <= 1e-4 and time_taken >= min_run_time / 1000:
                break
            if time_taken > min_run_time or number * 10 > 2147483647:
                break
            number *= 10
        return number

    def _measurement_loop(self, number, stop_hook, min_run_time, max_run_time=None,
                          callback=None) -> list[float]:
        total_time, can_stop, times = 0.0, False, []
        while total_time < min_run_time or not can_stop:
            spent = self._timeit(number)
            times.append(spent)
            total_time += spent
            if callback:
                callback(number, spent)
            can_stop = stop_hook(times)
            if max_run_time and total_time > max_run_time:
                break
        return times

    def blocked_autorange(self, callback: Callable[[int, float], Any] | None = None,
                          min_run_time: float = 0.2) -> Measurement:
        """Blocks of runs timed until ``min_run_time`` seconds are spent; the block size
        is the first power of ten whose block makes the clock's own cost under 0.01%
        (and lasts at least ``min_run_time / 1000``).

        Args:
            callback: called with ``(number, seconds)`` after each block.
            min_run_time: the seconds to spend timing.
        """
        number = self._estimate_block_size(min_run_time)
        times = self._measurement_loop(number, lambda times: True, min_run_time,
                                       callback=callback)
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0,
                           callback: Callable[[int, float], Any] | None = None) -> Measurement:
        """Like :meth:`blocked_autorange`, but goes on until the interquartile range of
        more than three blocks is under ``threshold`` times their median, or
        ``max_run_time`` seconds are spent.

        Args:
            threshold: the ratio of interquartile range to median to reach.
            min_run_time: the seconds to spend before the ratio is checked.
            max_run_time: the seconds after which it stops regardless.
            callback: called with ``(number, seconds)`` after each block.
        """
        number = self._estimate_block_size(min_run_time=0.05)

        def stop_hook(times: list[float]) -> bool:
            return len(times) > 3 and Measurement(
                number_per_run=number, raw_times=times,
                task_spec=self._task_spec).meets_confidence(threshold=threshold)
        times = self._measurement_loop(number, stop_hook, min_run_time, max_run_time,
                                       callback=callback)
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)
