"""Temporary elision: let an op write its result into an operand nobody else can see.

In ``tanh(3 * x - 2)`` the tensors ``3 * x`` and ``3 * x - 2`` are temporaries: once
the next op has read them, nothing refers to them.  NumPy reuses such temporaries for
large arrays (it checks reference counts and the C call stack); this module does the
same for gradcore tensors, so that an expression allocates as little as the same
NumPy code written with in-place ufuncs.

A tensor ``t`` may be overwritten when *all* of the following hold:

* its array is a large NumPy array (page faults of fresh memory cost more than this
  check; on a GPU, CuPy's memory pool hands out a fresh array for less than the check
  costs, 7 us an op measured on an H100 machine), owns its memory, and is referenced
  by ``t`` alone (no view, no ``detach()`` twin, no node
  that saved it as an output, no NumPy array handed to the user);
* every reference to ``t`` is accounted for: the locals of the op frames between the
  caller and here, plus exactly the reference that the caller's evaluation stack holds
  for a temporary (one for a ``BINARY_OP``, none for a ``CALL``, whose arguments move
  into the callee);
* nothing else: a caller that holds ``t`` in a variable adds a reference (its local)
  that the count does not expect.

Anything else (a name, a container, a closure, a saved tensor, another thread)
holds a reference that the count does not expect, and the op allocates as usual.  The
rules depend on how CPython counts references on its stack, so elision is enabled
only on the versions it was written for (3.11 to 3.13, with the GIL);
``GRADCORE_ELIDE=0`` turns it off.
"""

from __future__ import annotations

import dis
import os
import sys

from numpy import ndarray as _ndarray

from ..autograd.grad_mode import state as _state
from ..autograd.graph import dying as _dying
from ..kernels import pointwise as _kernels

MIN_BYTES = 256 * 1024  # NumPy's own threshold for eliding temporaries

ENABLED = (
    sys.implementation.name == "cpython"
    and (3, 11) <= sys.version_info[:2] < (3, 14)
    and getattr(sys, "_is_gil_enabled", lambda: True)()
    and os.environ.get("GRADCORE_ELIDE", "1") != "0"
)

_BINARY_OP = dis.opmap.get("BINARY_OP")
_CALL = dis.opmap.get("CALL")
_CACHE = dis.opmap.get("CACHE", -1)

# Code objects of the op functions that may stand between the caller and the check;
# their locals are the only references to a temporary that elision expects.
_OP_CODES: set = set()

# How many times an op wrote into a temporary (read by the tests).
count = 0


def op_function(fn):
    """Decorator: ``fn`` is op machinery that may stand between a caller and
    :func:`reusable`; its locals' references to the operands are the expected ones.

    Only for functions that do not read an operand again after handing it to an op
    that may have overwritten it."""
    _OP_CODES.add(fn.__code__)
    return fn


def reusable(t, arr):
    """``arr``, ``t``'s array, if the op running now may write its result into it
    (counted as an elision); else None.

    Call it from an op function (:func:`op_function`) where the op's evaluation stack
    holds neither ``t`` nor ``arr``: in a condition or an assignment, not among the
    arguments of a call that has already received ``arr`` (that reference is not
    counted, and the answer would always be no)::

        out = f(xd) if xd.nbytes < MIN_BYTES or (o := reusable(x, xd)) is None \\
            else f(xd, out=o)

    (the size test first keeps small arrays at one comparison).
    """
    global count
    if not ENABLED or not isinstance(arr, _ndarray) or arr.nbytes < MIN_BYTES or \
            arr.base is not None or not _writeable(arr):
        return None
    # Count first: looking at frames' locals below adds references of its own (on
    # 3.11-3.12 a snapshot dict that lives as long as the frame, so a second check in
    # the same op sees more references and safely says no).
    n_tensor = sys.getrefcount(t)
    n_array = sys.getrefcount(arr)
    # Both are held by this frame's argument and getrefcount's argument; the array
    # also by t.__dict__.  Op frames may hold either in their locals.
    want_tensor, want_array = 2, 3
    frame = sys._getframe(1)
    while frame is not None and frame.f_code in _OP_CODES:
        for v in frame.f_locals.values():
            if v is t:
                want_tensor += 1
            elif v is arr:
                want_array += 1
        frame = frame.f_back
    if frame is None or n_array != want_array:
        return None
    opcode = _current_opcode(frame)
    if opcode == _BINARY_OP:
        want_tensor += 1  # the operand still sits on the caller's stack
    elif opcode != _CALL:  # (a CALL moved its arguments into the callee's frame)
        return None  # anything else: unknown ways of holding references
    # A caller that keeps `t` in a variable, a container, a closure or a C structure
    # holds one more reference than counted here, and the answer is no.
    if n_tensor != want_tensor:
        return None
    count += 1
    return arr


def _current_opcode(frame):
    """The instruction ``frame`` is executing (f_lasti may point into its inline cache)."""
    code = frame.f_code.co_code
    i = frame.f_lasti
    while 0 < i < len(code) and code[i] == _CACHE:
        i -= 2
    return code[i] if 0 <= i < len(code) else None


def _writeable(arr) -> bool:
    flags = getattr(arr, "flags", None)
    return flags is None or bool(getattr(flags, "writeable", True))


def note() -> None:
    global count
    count += 1


def dead_argument(*arrays) -> int:
    """The index of the argument of a kernel (``arrays``, as a generated CPU twin passes
    them) whose memory the kernel may overwrite, or -1.

    That is the saved output that a backward rule has just read for the last time:
    ``Node.output`` offered it in a backward that frees saved values, having counted
    that only the node holds it (the output tensor is gone). Here nothing else may have
    taken it since: no local of the rule (the twin's caller), and no reference besides
    the node's saved tuple and the kernel's own (its argument, ``arrays``, this frame's
    locals and getrefcount's argument). The node's version counter moves on, so a
    second read of the output raises instead of seeing the overwritten values; the
    engine drops the node's saved values right after the rule.
    """
    offer = getattr(_dying, "offer", None)
    if offer is None or not ENABLED:
        return -1
    _dying.offer = None
    ref, vc = offer
    target = ref()
    i = 0
    for a in arrays:
        if a is target:
            if not (_state.releasing and a.base is None and _writeable(a) and
                    sys.getrefcount(a) == 6):
                return -1
            for v in sys._getframe(2).f_locals.values():
                if v is a:
                    return -1
            vc[0] += 1
            return i
        i += 1
    return -1


_kernels.set_reuse(dead_argument, note, MIN_BYTES)  # the generated CPU twins reuse memory
