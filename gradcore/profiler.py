"""``torch.profiler``: :class:`profile` with PyTorch's arguments, ``schedule`` and
``step()``, :class:`record_function` regions, ``key_averages().table()``, built on
:class:`gradcore.profile` (the kernels a step launches and the bytes they move).

What it measures: for each ``record_function`` region (and each step, as
``ProfilerStep#N`` when a ``schedule`` is given) its calls, its wall-clock time
(``time.perf_counter``, waiting for the GPU's queue at both ends where a GPU is used)
and the launches and bytes counted inside it; for each kernel, its launches and bytes.
gradcore does not time single kernels: their time columns are empty (``None``), never
estimated, and sorting by them keeps the order. ``record_shapes``, ``profile_memory``,
``with_stack``, ``with_flops`` and ``with_modules`` are accepted and record nothing.

>>> import gradcore as gc
>>> from gradcore.profiler import profile, record_function
>>> with profile() as prof:
...     with record_function("step"):
...         (gc.ones(100) * 2).sum()
tensor(200.)
>>> [(e.key, e.count, e.launches) for e in prof.key_averages()][:1]  # (ones, *, sum)
[('step', 1, 3)]
"""

from __future__ import annotations

import contextlib
import enum
import json
import warnings
from collections.abc import Callable, Iterable

from . import backend
from .profile import profile as _counting_profile
from .utils.benchmark import timer as _clock  # (waits for the GPU's queue, then reads)

__all__ = ["profile", "record_function", "schedule", "ProfilerActivity", "ProfilerAction",
           "supported_activities", "FunctionEventAvg", "EventList"]


class ProfilerActivity(enum.Enum):
    """The activities PyTorch's profiler can trace. gradcore's count does not depend on
    them: the kernels are counted for the CPU and CUDA alike."""
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What a :func:`schedule` tells the profiler to do at a step."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set:
    """``{ProfilerActivity.CPU}``, with ``CUDA`` where a GPU can be used."""
    found = {ProfilerActivity.CPU}
    if backend.cuda_is_available():
        found.add(ProfilerActivity.CUDA)
    return found


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """PyTorch's profiling schedule: after ``skip_first`` steps, cycles of ``wait``
    steps not recorded, ``warmup`` steps not recorded, ``active`` steps recorded (the
    last of them saved: ``on_trace_ready`` runs), ``repeat`` cycles (0: no end).
    ``skip_first_wait`` drops the first cycle's wait.

    Args:
        wait: steps skipped at the start of each cycle.
        warmup: steps run unrecorded before the recorded ones.
        active: steps recorded.
        repeat: cycles (0: as many as the steps allow).
        skip_first: steps skipped before the first cycle.
        skip_first_wait: non-zero to skip the first cycle's wait.
    """
    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return (ProfilerAction.RECORD if mod_step < num_steps - 1
                else ProfilerAction.RECORD_AND_SAVE)

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), "
            f"warmup={warmup} (need >= 0), active={active} (need > 0), repeat={repeat} "
            f"(need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    return schedule_fn


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


class FunctionEventAvg:
    """One row of :meth:`profile.key_averages`: a region (``record_function`` or a
    step) or a kernel. ``count`` is its calls (a kernel's: its launches);
    ``cpu_time_total`` and ``cpu_time`` (the mean) are a region's wall-clock
    microseconds, None for a kernel (gradcore does not time kernels); ``launches``,
    ``bytes_read`` and ``bytes_written`` are what was counted inside it."""

    def __init__(self, key: str, kind: str):
        self.key = key
        self.kind = kind  # "region", or the kernel's kind ("fused", "array")
        self.count = 0
        self.cpu_time_total: float | None = 0.0 if kind == "region" else None
        self.launches = 0
        self.bytes_read = 0
        self.bytes_written = 0
        # what gradcore does not measure (PyTorch's names, read by programs' sorts)
        self.self_cpu_time_total = None
        self.device_time_total = self.cuda_time_total = None
        self.self_device_time_total = self.self_cuda_time_total = None
        self.cpu_memory_usage = self.self_cpu_memory_usage = None

    @property
    def cpu_time(self) -> float | None:
        """The mean wall-clock microseconds per call (None for a kernel)."""
        if self.cpu_time_total is None or not self.count:
            return None
        return self.cpu_time_total / self.count

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} count={self.count} "
                f"cpu_time_total={self.cpu_time_total} launches={self.launches}>")


_TIME_KEYS = ("cpu_time_total", "cpu_time", "self_cpu_time_total", "device_time_total",
              "cuda_time_total", "self_device_time_total", "self_cuda_time_total")


class EventList(list):
    """The rows of :meth:`profile.key_averages` (a list of :class:`FunctionEventAvg`),
    with :meth:`table`."""

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """The rows as text: name, calls, wall-clock time (total and mean, regions
        only), launches and bytes. ``sort_by`` names an attribute (``"cpu_time_total"``,
        ``"count"``, ``"launches"``, ...), largest first, rows without it last.

        Args:
            sort_by: the attribute the rows are sorted by (None: as they are).
            row_limit: the most rows shown.
            max_src_column_width: accepted (no source column).
            max_name_column_width: the widest name shown.
            max_shapes_column_width: accepted (no shapes column).
            header: a line above the table.
            top_level_events_only: accepted.
            time_unit: ``"s"``, ``"ms"`` or ``"us"`` (default: chosen per value).
        """
        rows = list(self)
        if sort_by is not None:
            if not hasattr(FunctionEventAvg("", "region"), sort_by):
                raise AttributeError(f"'FunctionEventAvg' object has no attribute "
                                     f"'{sort_by}'")
            have = [e for e in rows if getattr(e, sort_by) is not None]
            rows = sorted(have, key=lambda e: getattr(e, sort_by), reverse=True) + \
                [e for e in rows if getattr(e, sort_by) is None]
        rows = rows[:row_limit] if row_limit is not None and row_limit >= 0 else rows

        def when(us):
            if us is None:
                return "-"
            unit = time_unit or ("s" if us >= 1e6 else "ms" if us >= 1e3 else "us")
            scale = {"s": 1e6, "ms": 1e3, "us": 1.0}[unit]
            return f"{us / scale:.3f}{unit}"

        head = ["Name", "# of Calls", "CPU total", "CPU time avg", "Launches", "Bytes read",
                "Bytes written"]
        body = [[e.key[:max_name_column_width], str(e.count), when(e.cpu_time_total),
                 when(e.cpu_time), str(e.launches), str(e.bytes_read), str(e.bytes_written)]
                for e in rows]
        widths = [max(len(r[i]) for r in [head] + body) for i in range(len(head))]
        rule = "  ".join("-" * w for w in widths)
        lines = [] if header is None else [header]
        lines += [rule, "  ".join(v.rjust(w) for v, w in zip(head, widths)), rule]
        lines += ["  ".join(v.rjust(w) for v, w in zip(r, widths)) for r in body]
        lines.append(rule)
        return "\n".join(lines) + "\n"


_running: list[profile] = []  # the profile recording now (one at a time)


class record_function(contextlib.ContextDecorator):  # noqa: N801  (PyTorch's name)
    """A named region of the profile: ``with record_function("forward"):`` (or as a
    decorator). Inside a recording :class:`profile`, the region's calls, wall-clock
    time and the launches and bytes counted in it become a row of ``key_averages()``;
    outside one it records nothing.

    Args:
        name: the region's name.
        args: accepted (PyTorch's extra string).
    """

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self.args = args
        self._start = None

    def __enter__(self):
        if _running and _running[-1]._inner is not None:
            self._prof = _running[-1]
            self._start = (_clock(), self._prof._inner._so_far())
        return self

    def __exit__(self, *exc):
        if self._start is not None:
            start, counted = self._start
            self._start = None
            self._prof._add_region(self.name, start, _clock(), counted)
        return False


class profile:  # noqa: N801  (PyTorch's name: a context manager)
    """PyTorch's ``torch.profiler.profile``, counting with :class:`gradcore.profile`.

    With no ``schedule`` every step is recorded; with one, ``step()`` moves through its
    actions, a recording window runs over the RECORD steps and ``on_trace_ready(prof)``
    is called when one ends (at RECORD_AND_SAVE, or at exit). ``key_averages()`` gives
    the last window's rows (see the module's text for what is measured), and
    ``export_chrome_trace(path)`` its regions as a Chrome trace.

    Args:
        activities: ``ProfilerActivity`` values (the count covers CPU and CUDA alike).
        schedule: a function of the step number returning a ``ProfilerAction``.
        on_trace_ready: called with the profile when a recording window ends.
        record_shapes: accepted, not recorded.
        profile_memory: accepted, not recorded.
        with_stack: accepted, not recorded.
        with_flops: accepted, not recorded.
        with_modules: accepted, not recorded.
        experimental_config: accepted.
        execution_trace_observer: accepted.
        acc_events: accepted.
        use_cuda: accepted (PyTorch's older spelling of ``activities``).
        custom_trace_id_callback: accepted.
        post_processing_timeout_s: accepted.
    """

    def __init__(self, *, activities: Iterable | None = None, schedule: Callable | None = None,
                 on_trace_ready: Callable | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False,
                 experimental_config=None, execution_trace_observer=None,
                 acc_events: bool = False, use_cuda: bool | None = None,
                 custom_trace_id_callback=None, post_processing_timeout_s=None) -> None:
        for a in activities or ():
            if not isinstance(a, (ProfilerActivity, dict)):
                raise TypeError(f"activities must be ProfilerActivity values, got {a!r}")
        self.activities = set(activities) if activities else supported_activities()
        self.record_steps = schedule is not None
        self.schedule = schedule or _always_record
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._inner = None  # the counting profile of the window being recorded
        self._rows: dict = {}
        self._trace: list = []
        self._events = EventList()
        self._step_start = None

    # -- the recording window ------------------------------------------------------
    @staticmethod
    def _records(action) -> bool:
        return action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)

    def _open(self) -> None:
        self._rows, self._trace = {}, []
        self._inner = _counting_profile().__enter__()
        _running.append(self)
        self._begin_step()

    def _close(self, save: bool) -> None:
        self._end_step()
        inner, self._inner = self._inner, None
        _running.remove(self)
        inner.__exit__(None, None, None)
        for st in inner.steps:  # the kernels' totals over the window's steps
            for k in st.kernels:
                row = self._rows.setdefault(("kernel", k.name),
                                            FunctionEventAvg(k.name, k.kind))
                row.count += k.launches
                row.launches += k.launches
                row.bytes_read += k.bytes_read
                row.bytes_written += k.bytes_written
        self._events = EventList(self._rows.values())
        if save and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _begin_step(self) -> None:
        if self.record_steps and self._inner is not None:
            self._step_start = (_clock(), self._inner._so_far())

    def _end_step(self) -> None:
        if self._step_start is not None:
            start, counted = self._step_start
            self._step_start = None
            self._add_region(f"ProfilerStep#{self.step_num}", start, _clock(), counted)

    def _add_region(self, name, start, end, counted) -> None:
        if self._inner is None:
            return
        now = self._inner._so_far()
        row = self._rows.setdefault(("region", name), FunctionEventAvg(name, "region"))
        row.count += 1
        row.cpu_time_total += (end - start) * 1e6
        row.launches += now[0] - counted[0]
        row.bytes_read += now[1] - counted[1]
        row.bytes_written += now[2] - counted[2]
        self._trace.append((name, start, end))

    # -- PyTorch's interface ------------------------------------------------------------
    def start(self) -> None:
        """Begin (``__enter__`` calls it): recording starts if step 0 is recorded."""
        if self._records(self.current_action):
            self._open()

    def stop(self) -> None:
        """End (``__exit__`` calls it): a window being recorded ends and is saved."""
        if self._inner is not None:
            self._close(save=True)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def step(self) -> None:
        """Mark the start of the next step: the schedule's action for it starts, goes
        on with, or ends (and saves) the recording window."""
        prev = self.current_action
        action = self.schedule(self.step_num + 1)
        if self._inner is not None:
            if prev == ProfilerAction.RECORD_AND_SAVE or not self._records(action):
                self._close(save=True)
            else:
                self._end_step()  # (named by the step it ends)
                self._inner.step()
        self.step_num += 1
        self.current_action = action
        if self._inner is not None:
            self._begin_step()
        elif self._records(action):
            self._open()

    def key_averages(self, group_by_input_shape: bool = False,
                     group_by_stack_n: int = 0) -> EventList:
        """The last recording window's rows: the regions (``record_function`` and the
        steps) in the order they first ended, then the kernels, in the order they were counted.

        Args:
            group_by_input_shape: accepted (shapes are not recorded).
            group_by_stack_n: accepted (stacks are not recorded).
        """
        return EventList(self._events if self._inner is None else self._rows.values())

    def events(self) -> EventList:
        """The same rows as :meth:`key_averages` (gradcore keeps no per-call events)."""
        return self.key_averages()

    def export_chrome_trace(self, path: str) -> None:
        """Write the last window's regions as a Chrome trace (``chrome://tracing``,
        Perfetto): one complete event per region call, in microseconds.

        Args:
            path: the JSON file to write.
        """
        events = [{"name": name, "ph": "X", "ts": start * 1e6, "dur": (end - start) * 1e6,
                   "pid": 0, "tid": 0, "cat": "user_annotation"}
                  for name, start, end in self._trace]
        with open(path, "w") as fh:
            json.dump({"traceEvents": events}, fh)


# ---- torch.autograd.profiler ----------------------------------------------------------
# PyTorch's older profiler API, a module of the engine's package there. gradcore's
# autograd is a layer below the profiler, so it cannot import this module: this module
# makes `gradcore.autograd.profiler` itself (registered as a submodule of autograd, the
# same objects as here), and the package root imports this module.

class _AutogradProfile(profile):
    """``torch.autograd.profiler.profile``: ``with profile() as prof:`` records the block
    (unless ``enabled=False``) as :class:`profile` does without a schedule;
    ``prof.table()`` is ``prof.key_averages().table()``."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device=None,
                 record_shapes: bool = False, with_flops: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False, use_kineto: bool = False, use_cpu: bool = True,
                 experimental_config=None, acc_events: bool = False,
                 custom_trace_id_callback=None, post_processing_timeout_s=None,
                 activity_filters=None):
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, with_flops=with_flops,
                         with_modules=with_modules)
        self.enabled = enabled

    def __enter__(self):
        if self.enabled:
            self.start()
        return self

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False) -> str:
        """``self.key_averages().table(...)`` with the same arguments."""
        return self.key_averages().table(sort_by, row_limit, max_src_column_width,
                                         max_name_column_width, max_shapes_column_width,
                                         header, top_level_events_only)


def _register_autograd_profiler() -> None:
    import sys  # noqa: PLC0415
    import types  # noqa: PLC0415

    from . import autograd  # noqa: PLC0415  (a layer below: this is no upward import)

    name = autograd.__name__ + ".profiler"
    module = types.ModuleType(name, "``torch.autograd.profiler``: PyTorch's older profiler "
                              "API over :mod:`gradcore.profiler` (``profile``, "
                              "``record_function``).")
    _AutogradProfile.__name__ = _AutogradProfile.__qualname__ = "profile"
    _AutogradProfile.__module__ = name
    module.profile = _AutogradProfile
    module.record_function = record_function
    module.EventList = EventList
    module.FunctionEventAvg = FunctionEventAvg
    module.__all__ = ["profile", "record_function", "EventList", "FunctionEventAvg"]
    sys.modules[name] = module
    autograd.profiler = module


_register_autograd_profiler()
