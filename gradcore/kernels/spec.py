"""The three forms a kernel is declared in.

* :class:`Kernel`: a pointwise kernel, one expression per output in the common subset of
  C and Python, over arrays that broadcast together (:mod:`.pointwise`);
* :class:`Update`: an in-place kernel over same-shaped arrays, statements run in order
  (the optimizers' steps, :mod:`.updates`);
* :class:`RowKernel`: a kernel written by hand in CUDA C (``kernels/gradcore_rows.cuh``,
  ``kernels/gradcore_conv.cuh``) with its NumPy twin beside its declaration (:mod:`.rows`,
  :mod:`.conv`).

From a ``Kernel`` or an ``Update`` come its NumPy twin (``compile``), its differentiable
composite and its CUDA body (:mod:`.source`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Kernel", "Update", "RowKernel"]


@dataclass(frozen=True)
class Kernel:
    """A pointwise kernel: ``expr`` (or one expression per output, as a tuple) over the
    arrays ``params``, which broadcast together, and the numbers ``scalars``."""

    name: str
    params: tuple[str, ...]
    expr: str | tuple[str, ...]
    cpu: object = None  # optional faster NumPy implementation with the same meaning
    scalars: tuple[str, ...] = ()  # numbers passed by value, after the arrays
    masks: tuple[str, ...] = ()    # the params that are boolean arrays
    lets: tuple[tuple[str, str], ...] = ()  # local values (name, expression), in order
    # on array namespaces, float16 arrays computed in float32 and the results rounded to
    # the dtype of the parameter named here (PyTorch computes half ops in float32); the
    # CUDA body computes float16 in float32 anyway, and tensors are not upcast
    upcast: str | None = None

    @property
    def exprs(self) -> tuple[str, ...]:
        """One expression per output."""
        return self.expr if isinstance(self.expr, tuple) else (self.expr,)

    @property
    def arguments(self) -> tuple[str, ...]:
        return self.params + self.scalars

    def compile(self, namespace: dict):
        """The expression as a Python function of ``params`` then ``scalars`` over
        ``namespace`` (a tuple of results for several outputs)."""
        result = self.expr if isinstance(self.expr, str) else f"({', '.join(self.expr)},)"
        lines = [f"def {self.name}({', '.join(self.arguments)}):"]
        lines += [f"    {name} = {expr}" for name, expr in self.lets]
        lines.append(f"    return {result}")
        # __name__ attributes NumPy's floating-point warnings to gradcore (see __init__)
        scope = dict(namespace, __name__=__name__)
        exec(compile("\n".join(lines), f"<kernel {self.name}>", "exec"), scope)
        return scope[self.name]


@dataclass(frozen=True)
class Update:
    """An in-place kernel over same-shaped arrays: the statements ``body`` (pairs of a
    name and an expression, run in order; a name may be rebound) update the arrays named
    in ``writes``. The optimizers' per-parameter steps are written this way, one launch
    per parameter on CUDA.

    With ``device_scalars`` the kernel reads its scalars, in order, from one array of the
    compute type in device memory (the argument ``scalars``) rather than by value: a CUDA
    graph that captured it reads the values copied there before each launch."""

    name: str
    params: tuple[str, ...]
    body: tuple[tuple[str, str], ...]
    writes: tuple[str, ...]
    scalars: tuple[str, ...] = ()
    device_scalars: bool = False
    # over many tensors in one launch: a table of their arrays' addresses (a row of
    # len(params) per tensor), where each tensor's elements begin in the concatenation
    # of all (offsets, one more than tensors: the total last), a row of scalars each
    multi_tensor: bool = False

    @property
    def arguments(self) -> tuple[str, ...]:
        if self.multi_tensor:
            return ("pointers", "offsets", "scalars")
        return self.params + (("scalars",) if self.device_scalars else self.scalars)

    def compile(self, namespace: dict, skip: bool = False):
        """The update as a Python function of ``params`` then ``scalars``, writing the
        results into the arrays of ``writes`` (their dtype; it returns None). With
        ``skip``, one more argument last: where it is nonzero the arrays keep their
        values (``where``, so that the flag need not be read back from a device)."""
        lines = [f"def {self.name}({', '.join(self.arguments + (('skip',) if skip else ()))}):",
                 f"    _arrays = ({', '.join(self.writes)},)"]
        lines += [f"    {target} = {expr}" for target, expr in self.body]
        lines += [f"    _arrays[{j}][...] = " +
                  (f"where(skip != 0, _arrays[{j}], {w})" if skip else w)
                  for j, w in enumerate(self.writes)]
        scope = dict(namespace, __name__=__name__)
        exec(compile("\n".join(lines), f"<kernel {self.name}>", "exec"), scope)
        return scope[self.name]


@dataclass(frozen=True)
class RowKernel:
    """A hand-written kernel: its name, its parameters as (kind, name) pairs (kinds as in
    :func:`signature`, plus "index", a ``const long long*``, and "int", a ``long
    long``), whether its threads cooperate through shared memory and ``__syncthreads``
    (launched with fibers on the host), and the header in ``kernels/`` that holds its
    template (``source``)."""

    name: str
    params: tuple[tuple[str, str], ...]
    cooperative: bool = True
    source: str = "gradcore_rows.cuh"
