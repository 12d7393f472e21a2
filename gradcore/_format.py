"""PyTorch's tensor printing rules (``torch/_tensor_str.py``), for ``repr(tensor)``."""

from __future__ import annotations

import math

import numpy as np

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80
SCI_MODE = None  # True or False: forced on or off (gc.set_printoptions sets these five)


class _Formatter:
    def __init__(self, values: np.ndarray, floating: bool):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(_plain(v)))
            return
        vals = flat.astype(np.float64)
        nz = vals[np.isfinite(vals) & (vals != 0)]
        if nz.size == 0:
            return
        absv = np.abs(nz)
        lo, hi = absv.min(), absv.max()
        self.int_mode = bool(np.all(nz == np.ceil(nz)))
        self.sci_mode = (hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4) if SCI_MODE is None \
            else bool(SCI_MODE)
        if self.sci_mode:
            self.max_width = max(len(f"{v:.{PRECISION}e}") for v in nz.tolist())
        elif self.int_mode:
            self.max_width = max(len(f"{v:.0f}") + 1 for v in nz.tolist())
        else:
            self.max_width = max(len(f"{v:.{PRECISION}f}") for v in nz.tolist())

    def format(self, value) -> str:
        if self.floating:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{PRECISION}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{PRECISION}f}"
        else:
            ret = _plain(value)
        return (self.max_width - len(ret)) * " " + ret


def _plain(v) -> str:
    return str(v)


def _summarized(a: np.ndarray) -> np.ndarray:
    if a.ndim == 0:
        return a
    if a.shape[0] > 2 * EDGEITEMS:
        a = np.concatenate([a[:EDGEITEMS], a[-EDGEITEMS:]])
    return np.stack([_summarized(x) for x in a]) if a.ndim > 1 else a


def _vector_str(a, indent, summarize, fmt):
    element_length = fmt.max_width + 2
    per_line = max(1, int(math.floor((LINEWIDTH - indent) / element_length)))
    if summarize and a.shape[0] > 2 * EDGEITEMS:
        data = ([fmt.format(v) for v in a[:EDGEITEMS].tolist()] + [" ..."]
                + [fmt.format(v) for v in a[-EDGEITEMS:].tolist()])
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str(a, indent, summarize, fmt):
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, fmt)
    if summarize and a.shape[0] > 2 * EDGEITEMS:
        slices = ([_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(EDGEITEMS)]
                  + ["..."]
                  + [_tensor_str(a[i], indent + 1, summarize, fmt)
                     for i in range(a.shape[0] - EDGEITEMS, a.shape[0])])
    else:
        slices = [_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _add_suffixes(text, suffixes, indent):
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(values: np.ndarray, dtype, device, grad_fn, requires_grad) -> str:
    """``values`` is a host array; the other arguments describe the tensor."""
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    if device.type != "cpu":  # PyTorch names the index: device='cuda:0'
        suffixes.append(f"device='{device.type}:{device.index or 0}'")
    if values.size == 0:
        if values.ndim != 1:
            suffixes.append(f"size={tuple(values.shape)}")
        if dtype.name != "float32":
            suffixes.append(f"dtype={dtype!r}")
        body = "[]"
    else:
        if dtype.name not in ("float32", "int64", "bool"):
            suffixes.append(f"dtype={dtype!r}")
        if values.dtype == np.float16:
            values = values.astype(np.float32)
        summarize = values.size > THRESHOLD
        fmt = _Formatter(_summarized(values) if summarize else values, dtype.is_floating_point)
        body = _tensor_str(values, indent, summarize, fmt)
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{grad_fn.name()}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
