"""A pointwise kernel's CPU twin, generated from its expression.

``generate(k)`` turns a :class:`~.spec.Kernel`'s expression into NumPy ufunc calls that
write into arrays given with ``out=``: a temporary is reused as soon as the value it
held is dead, the last operation of an output writes into the caller's ``out`` when
given, and on large contiguous arrays the kernel runs a ``CHUNK`` slice at a time with
slice-sized temporaries that stay in the CPU's cache. The operations, their order and
their dtypes are the expression's, so the results are the expression's bit for bit.

The twin is ``fn(*params, *scalars, out=None)``. ``out`` (one array, or a tuple with
one entry per output) is honoured where it can be: every array argument and ``out`` of
one shape and floating dtype, the scalars Python numbers; for a kernel of several
outputs only the last output's entry is honoured (an earlier output written into an
array the later outputs still read would change them). Otherwise the twin computes the
expression and returns new arrays.

A saved output that a backward rule reads for the last time (offered by
``Node.output`` in a backward that frees saved values, see
:func:`gradcore.ops._elide.dead_argument`) is dead after the call: the twin then uses
its memory for a temporary or for the result, and allocates nothing.

Expressions with ``where``, comparisons, masks, ``sign`` or ``erf`` are not generated
(``generate`` returns None): they keep the plain expression or a hand twin.
"""

from __future__ import annotations

import ast

import numpy as np

from .numpy_code import emit, linearize

__all__ = ["generate", "expression"]

_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
# what a pointwise expression may use to be generated: the ufuncs of numpy_code.INPLACE
# over the parameters, numbers and scalars in arithmetic
_SYNTAX = (ast.Expression, ast.Name, ast.Load, ast.Constant, ast.BinOp, ast.Add, ast.Sub,
           ast.Mult, ast.Div, ast.UnaryOp, ast.USub, ast.Call)


def _operations(k):
    """The kernel's operations and each output's value (see :func:`.numpy_code.linearize`),
    or NotImplementedError where its expression uses what is not generated."""
    trees = [ast.parse(text, mode="eval") for _, text in k.lets] + \
        [ast.parse(text, mode="eval") for text in k.exprs]
    for node in (n for tree in trees for n in ast.walk(tree)):
        if not isinstance(node, _SYNTAX) or isinstance(node, ast.Constant) and \
                type(node.value) not in (int, float):
            raise NotImplementedError(ast.dump(node))
    outs = [f"_out{j}" for j in range(len(k.exprs))]
    ops, env = linearize(k.name, (*k.lets, *zip(outs, k.exprs)), k.params, k.scalars)
    outputs = [env[o] for o in outs]
    if not ops or any(not op.inplace for op in ops) or \
            any(isinstance(v, str) or v < len(k.params) for v in outputs):
        raise NotImplementedError("an output that is not computed")
    return ops, outputs


def _body(k, ops, outputs, *, dead, has_out, chunked, indent):
    """Lines that compute the outputs into buffers (see the module's docstring): the
    parameters are the names ``<p>_`` (slices when ``chunked``), the caller's output
    ``o_``, a new result array ``r<j>_`` (chunked only); returns (lines, the name of
    each output's buffer, the scratch arrays a chunked body needs, whether the dead
    parameter's memory holds a result)."""
    finals = {"o_": outputs[-1]} if has_out else {}
    donors = {} if dead is None else {f"{dead}_": k.params.index(dead)}
    results = outputs[:-1] if has_out else outputs
    scratch = []

    def new(i, result):
        if not chunked:
            return f"t{i}", [], True, True
        if result:
            return f"r{outputs.index(len(k.params) + i)}_", [], False, True
        scratch.append(f"s{len(scratch)}")
        return scratch[-1], [], False, False

    lines, home, _ = emit(ops, [f"{p}_" for p in k.params], finals=finals, donors=donors,
                          results=results, new=new, prefix="_np.", indent=indent,
                          last_operand=True)
    used_dead = any(home[len(k.params) + i] in donors for i in range(len(ops)))
    return lines, [home[v] for v in outputs], scratch, used_dead


def generate(k, chunk=None):
    """``k``'s generated CPU twin (see the module's docstring), or None where its
    expression uses what the generator does not handle. ``chunk``: run arrays of at
    least 4 * ``chunk`` elements a slice of ``chunk`` at a time (None: whole)."""
    try:
        ops, outputs = _operations(k)
    except (NotImplementedError, NameError):
        return None
    if len(ops) <= len(outputs):
        # one operation per output and no temporary to keep in cache: slices would only
        # add a call per slice (exp_backward's g * y ran 5-15% slower by slices)
        chunk = None
    return _compile(k, ops, outputs, chunk)


def _compile(k, ops, outputs, chunk):
    params, scalars = k.params, k.scalars
    n_out = len(outputs)
    first = params[0]
    sig = ", ".join(k.arguments)
    src = [f"def {k.name}({sig}, out=None):"]
    same = " and ".join([f"type({p}) is _nd" for p in params] +
                        [f"{p}.shape == {first}.shape and {p}.dtype is {first}.dtype"
                         for p in params[1:]] +
                        [f"type({s}) in _numbers" for s in scalars] +
                        [f"{first}.ndim and {first}.dtype in _floats"])
    src.append(f"    if not ({same}):")
    src.append(f"        return _expression({sig})")
    if n_out == 1:
        src.append("    o_ = out")
    else:
        src.append(f"    o_ = None if out is None else out[{n_out - 1}]")
    src.append(f"    if o_ is not None and o_ is not {first} and not (type(o_) is _nd and "
               f"o_.shape == {first}.shape and o_.dtype is {first}.dtype):")
    src.append("        o_ = None  # (the namespace honours out= where it can)")
    variants = [(None, -1)] + [(p, i) for i, p in enumerate(params)]

    def whole(dead, has_out, indent):
        lines, results, _, used = _body(k, ops, outputs, dead=dead, has_out=has_out,
                                        chunked=False, indent=indent)
        pad = " " * indent
        out = [f"{pad}{p}_ = {p}" for p in params]
        if used:
            out.append(f"{pad}_note()  # a dead saved output's memory is reused")
        out += lines
        rs = ", ".join(results)
        out.append(f"{pad}return {rs if n_out == 1 else '(' + rs + ',)'}")
        return out

    def sliced(dead, has_out, indent):
        lines, results, scratch, used = _body(k, ops, outputs, dead=dead,
                                              has_out=has_out, chunked=True,
                                              indent=indent + 8)
        pad = " " * indent
        out = [f"{pad}n = {first}.size"]
        if used:
            out.append(f"{pad}_note()  # a dead saved output's memory is reused")
        flat = {p: f"{p}.reshape(-1)" for p in params}
        out += [f"{pad}{p}_f = {flat[p]}" for p in params]
        if has_out:
            out.append(f"{pad}o_f = o_.reshape(-1)")
        news = sorted({r for r in results if r.startswith("r")})
        out += [f"{pad}{r}full = _np.empty({first}.shape, {first}.dtype)" for r in news]
        out += [f"{pad}{r}f = {r}full.reshape(-1)" for r in news]
        out += [f"{pad}{s}f = _np.empty({chunk}, {first}.dtype)" for s in scratch]
        out.append(f"{pad}for i in range(0, n, {chunk}):")
        out.append(f"{pad}    m = min({chunk}, n - i)")
        out += [f"{pad}    {p}_ = {p}_f[i:i + m]" for p in params]
        if has_out:
            out.append(f"{pad}    o_ = o_f[i:i + m]")
        out += [f"{pad}    {r} = {r}f[i:i + m]" for r in news]
        out += [f"{pad}    {s} = {s}f[:m]" for s in scratch]
        out.append(f"{pad}    if True:")
        out += lines
        full = []
        for r in results:
            if r == "o_":
                full.append("out" if n_out == 1 else f"out[{n_out - 1}]")
            elif r.startswith("r"):
                full.append(f"{r}full")
            else:  # a dead parameter's memory
                full.append(r[:-1])
        rs = ", ".join(full)
        out.append(f"{pad}return {rs if n_out == 1 else '(' + rs + ',)'}")
        return out

    # small arrays first: whole, and no saved output to take
    src.append(f"    if {first}.nbytes < _min_bytes:")
    src.append("        if o_ is not None:")
    src += whole(None, True, 12)
    src += whole(None, False, 8)
    src.append(f"    dead = _dead_argument({', '.join(params)})")
    for dead, i in variants:
        src.append(f"    if dead == {i}:")
        for has_out in (True, False):
            src.append(f"        if {'o_ is not None' if has_out else 'True'}:")
            if chunk is not None:
                src.append(f"            if {first}.size >= {4 * chunk} and " + " and ".join(
                    [f"{p}.flags.c_contiguous" for p in params] +
                    (["o_.flags.c_contiguous"] if has_out else [])) + ":")
                src += sliced(dead, has_out, 16)
            src += whole(dead, has_out, 12)
    src.append("    raise AssertionError('unreachable')")
    return src


def build(k, names, chunk=None, *, dead_argument, note, min_bytes):
    """The twin as a function (see :func:`generate`), over the expression functions
    ``names`` for its fallback."""
    src = generate(k, chunk)
    if src is None:
        return None
    scope = {"_np": np, "_nd": np.ndarray, "_floats": _FLOATS, "_numbers": (float, int),
             "_expression": expression(k, names), "_dead_argument": dead_argument,
             "_note": note, "_min_bytes": min_bytes,
             # __name__ attributes NumPy's floating-point warnings to gradcore
             "__name__": __name__}
    exec(compile("\n".join(src), f"<twin {k.name}>", "exec"), scope)
    fn = scope[k.name]
    fn.source = "\n".join(src)
    return fn


def expression(k, names):
    """``k``'s expression as a function over ``names`` taking ``out=`` and ignoring it
    (the array namespace may return new arrays; tensors, in a differentiable backward,
    have no ``out``)."""
    fn = k.compile(names)

    def run(*args, out=None):
        return fn(*args)

    run.__name__ = k.name
    run.expression = fn
    return run
