"""``gradcore.utils.tensorboard``: :class:`SummaryWriter`, as ``torch.utils.tensorboard``.

Writes TensorBoard event files with the ``tensorboard`` package's own writer and
protocol buffers (``pip install tensorboard``; as in PyTorch, importing this module
without it raises ``ModuleNotFoundError``). Scalars, groups of scalars, histograms and
text, which training scripts log; view them with ``tensorboard --logdir runs``.

>>> import tempfile, gradcore as gc
>>> from gradcore.utils.tensorboard import SummaryWriter
>>> with SummaryWriter(tempfile.mkdtemp()) as w:
...     for step in range(3):
...         w.add_scalar("loss", gc.tensor(1.0 / (step + 1)), step)
"""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime

import numpy as np
import tensorboard  # noqa: F401  (as in PyTorch: without the package, the import fails)
from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData
from tensorboard.summary.writer.event_file_writer import EventFileWriter

__all__ = ["SummaryWriter"]


def _numpy(value) -> np.ndarray:
    """A tensor (any device), an array or a number as a NumPy array."""
    if hasattr(value, "detach") and hasattr(value, "numpy"):
        return np.asarray(value.detach().cpu().numpy())
    return np.asarray(value)


def _default_bins() -> list[float]:
    # TensorBoard's exponential buckets: +-1e-12 growing by 10% to 1e20, and zero
    v, pos = 1e-12, []
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return [-b for b in reversed(pos)] + [0] + pos


_BINS = _default_bins()


def _histogram(values: np.ndarray, bins, max_bins) -> HistogramProto:
    values = values.reshape(-1).astype(np.float64)
    if values.size == 0:
        raise ValueError("The input has no element.")
    counts, limits = np.histogram(values, bins=_BINS if bins == "tensorflow" else bins)
    if max_bins is not None and len(counts) > max_bins:
        step = len(counts) // max_bins
        counts = np.pad(counts, (0, -len(counts) % step)).reshape(-1, step).sum(axis=-1)
        limits = np.concatenate([limits[:-1:step], limits[-1:]])
    # keep the bins from the first with a count to the last, plus an empty one on the
    # left: TensorBoard reads only each bin's right limit
    nonzero = np.flatnonzero(counts)
    first, last = (nonzero[0], nonzero[-1]) if nonzero.size else (0, len(counts) - 1)
    counts = np.concatenate([[0], counts[:last + 1]]) if first == 0 else \
        counts[first - 1:last + 1]
    limits = limits[first:last + 2]
    return HistogramProto(min=values.min(), max=values.max(), num=values.size,
                          sum=values.sum(), sum_squares=values.dot(values),
                          bucket_limit=limits.tolist(), bucket=counts.tolist())


class SummaryWriter:
    """Log to TensorBoard event files in ``log_dir`` (default ``runs/<date>_<host>
    <comment>``, as PyTorch names it).

    Args: ``log_dir``, ``comment`` (appended to the default folder's name),
    ``purge_step`` (a restarted run: TensorBoard drops the events from that step on),
    ``max_queue`` (events held before a write), ``flush_secs`` (how often the queue is
    written), ``filename_suffix``. Use as a context manager or call :meth:`close`.
    """

    def __init__(self, log_dir=None, comment: str = "", purge_step=None, max_queue: int = 10,
                 flush_secs: int = 120, filename_suffix: str = ""):
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue, self.flush_secs = max_queue, flush_secs
        self.filename_suffix = filename_suffix
        self._writers: dict[str, EventFileWriter] = {}
        self._writer(self.log_dir)

    def _writer(self, logdir: str) -> EventFileWriter:
        w = self._writers.get(logdir)
        if w is None:
            w = self._writers[logdir] = EventFileWriter(
                logdir, self.max_queue, self.flush_secs, self.filename_suffix)
            if self.purge_step is not None:  # (TensorBoard: a restart from this step)
                w.add_event(Event(step=self.purge_step, file_version="brain.Event:2"))
                w.add_event(Event(step=self.purge_step, session_log=_session_start()))
                self.purge_step = None
        return w

    def get_logdir(self) -> str:
        """The folder the event files are written to."""
        return self.log_dir

    def _add(self, summary: Summary, step, walltime, logdir=None) -> None:
        event = Event(summary=summary, wall_time=time.time() if walltime is None else walltime)
        if step is not None:
            event.step = int(step)
        self._writer(logdir or self.log_dir).add_event(event)

    def add_scalar(self, tag: str, scalar_value, global_step=None, walltime=None,
                   new_style: bool = False, double_precision: bool = False) -> None:
        """Log one number (a Python number or a one-element tensor or array) under
        ``tag`` at step ``global_step``."""
        self._add(_scalar(tag, scalar_value, new_style, double_precision), global_step,
                  walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step=None,
                    walltime=None) -> None:
        """Log several numbers on one chart: each key of ``tag_scalar_dict`` is written to
        its own folder ``<log_dir>/<main_tag>_<key>`` under the tag ``main_tag``."""
        walltime = time.time() if walltime is None else walltime
        for tag, value in tag_scalar_dict.items():
            logdir = os.path.join(self.log_dir, f"{main_tag.replace('/', '_')}_{tag}")
            self._add(_scalar(main_tag, value, False, False), global_step, walltime, logdir)

    def add_histogram(self, tag: str, values, global_step=None, bins="tensorflow",
                      walltime=None, max_bins=None) -> None:
        """Log the distribution of ``values`` (a tensor or array). ``bins``:
        ``"tensorflow"`` (TensorBoard's exponential buckets) or anything
        ``numpy.histogram`` accepts (``"auto"``, ``"fd"``, a count, edges)."""
        hist = _histogram(_numpy(values), bins, max_bins)
        self._add(Summary(value=[Summary.Value(tag=tag, histo=hist)]), global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step=None, walltime=None) -> None:
        """Log a string (shown as Markdown) under ``tag``."""
        meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
            plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
        tensor = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf_8")],
                             tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
        value = Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=tensor)
        self._add(Summary(value=[value]), global_step, walltime)

    def flush(self) -> None:
        """Write what is queued to disk."""
        for w in self._writers.values():
            w.flush()

    def close(self) -> None:
        """Flush and close every event file (a later call writes a new one)."""
        for w in self._writers.values():
            w.flush()
            w.close()
        self._writers = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _session_start():
    from tensorboard.compat.proto.event_pb2 import SessionLog  # noqa: PLC0415
    return SessionLog(status=SessionLog.START)


def _scalar(tag: str, value, new_style: bool, double_precision: bool) -> Summary:
    arr = _numpy(value).squeeze()
    if arr.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). Was given "
                             f"size: {arr.size} and {arr.ndim} dimensions.")
    number = float(arr)
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=number)])
    proto = (TensorProto(double_val=[number], dtype="DT_DOUBLE") if double_precision
             else TensorProto(float_val=[number], dtype="DT_FLOAT"))
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=tag, tensor=proto, metadata=meta)])
