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

__all__ = ["generate", "expression"]

_UNARY = {"exp", "log", "sqrt", "sin", "cos", "tanh"}
_BINARY = {"maximum": "maximum", "pow": "power"}
_OPS = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "true_divide"}
_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


class _Unsupported(Exception):
    pass


def _linearize(k):
    """The kernel as a list of operations ``(ufunc, operands, result)`` over values
    ``("p", name)`` (an array parameter), ``("s", name)`` (a scalar), ``("c", text)``
    (a constant) or ``("t", i)`` (the result of operation i), and each output's value."""
    ops = []
    env = {p: ("p", p) for p in k.params}
    env.update({s: ("s", s) for s in k.scalars})

    def visit(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and \
                not isinstance(node.value, bool):
            return ("c", repr(node.value))
        if isinstance(node, ast.Name):
            if node.id not in env:
                raise _Unsupported(node.id)
            return env[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = visit(node.operand)
            if v[0] == "c":  # -0.5: one constant, as Python's compiler folds it
                return ("c", repr(-float(v[1]) if "." in v[1] or "e" in v[1]
                                  else -int(v[1])))
            return emit("negative", [v])
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return emit(_OPS[type(node.op)], [visit(node.left), visit(node.right)])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                not node.keywords:
            name = node.func.id
            if name in _UNARY and len(node.args) == 1:
                return emit(name, [visit(node.args[0])])
            if name in _BINARY and len(node.args) == 2:
                return emit(_BINARY[name], [visit(a) for a in node.args])
        raise _Unsupported(ast.dump(node))

    def emit(ufunc, operands):
        ops.append((ufunc, operands, ("t", len(ops))))
        return ops[-1][2]

    for name, text in k.lets:
        env[name] = visit(ast.parse(text, mode="eval").body)
    outputs = [visit(ast.parse(text, mode="eval").body) for text in k.exprs]
    return ops, outputs


def _is_array(v, arrays):
    return v[0] == "p" or (v[0] == "t" and v in arrays)


def _body(k, ops, outputs, *, dead, has_out, chunked, indent):
    """Lines that compute the outputs into buffers (see the module's docstring): the
    parameters are the names ``<p>_`` (slices when ``chunked``), the caller's output
    ``o_``, a new result array ``r<j>_`` (chunked only); returns (lines, the name of
    each output's buffer, the scratch arrays a chunked body needs)."""
    arrays = set()  # values that are arrays (a constant expression stays a number)
    last = {}
    for i, (_, operands, result) in enumerate(ops):
        if any(_is_array(v, arrays) for v in operands):
            arrays.add(result)
        for v in operands:
            last[v] = i
    for v in outputs:
        last[v] = len(ops)  # the outputs live to the end
    final = {v: j for j, v in enumerate(outputs) if v[0] == "t"}
    n_out = len(outputs)
    buffer = {}
    free = []          # buffers whose values are dead
    scratch = []       # chunk-sized arrays a chunked body allocates before its loop
    lines = []
    pad = " " * indent

    def name(v):
        if v[0] == "p":
            return f"{v[1]}_"
        if v[0] in "sc":
            return v[1]
        return buffer[v] if v in arrays else f"v{v[1]}"

    for i, (ufunc, operands, result) in enumerate(ops):
        args = ", ".join(name(v) for v in operands)
        for v in dict.fromkeys(operands):  # values read for the last time here
            if last.get(v) == i:
                if v[0] == "t" and v in arrays and v not in final:
                    free.append(buffer[v])
                elif v[0] == "p" and v[1] == dead:
                    free.append(f"{v[1]}_")
        if result not in arrays:  # numbers only
            lines.append(f"{pad}v{i} = _np.{ufunc}({args})")
            continue
        j = final.get(result)
        full = [b for b in free if b.endswith("_")] if chunked else free
        if j is not None and j == n_out - 1 and has_out:
            target = "o_"
        elif j is not None:
            if full:  # a dead parameter (or, over whole arrays, a dead temporary)
                target = full[-1]
                free.remove(target)
            elif chunked:
                target = f"r{j}_"
            else:
                target = None
        elif free:
            target = free.pop()
        elif chunked:
            target = f"s{len(scratch)}"
            scratch.append(target)
        else:
            target = f"t{i}"
            lines.append(f"{pad}{target} = _np.{ufunc}({args})")
            buffer[result] = target
            continue
        if target is None:
            target = f"t{i}"
            lines.append(f"{pad}{target} = _np.{ufunc}({args})")
        else:
            lines.append(f"{pad}_np.{ufunc}({args}, out={target})")
        buffer[result] = target
    results = []
    for v in outputs:
        if v in buffer:
            results.append(buffer[v])
        else:  # an output that is a parameter or a number: a new array of it
            results.append(None)
            if chunked:
                raise _Unsupported("an output that is not computed")
    used_dead = any(b == f"{dead}_" for b in buffer.values())
    return lines, results, scratch, used_dead


def generate(k, chunk=None):
    """``k``'s generated CPU twin (see the module's docstring), or None where its
    expression uses what the generator does not handle. ``chunk``: run arrays of at
    least 4 * ``chunk`` elements a slice of ``chunk`` at a time (None: whole)."""
    try:
        ops, outputs = _linearize(k)
        if not ops or any(v[0] != "t" for v in outputs):
            raise _Unsupported("an output that is not computed")
        return _compile(k, ops, outputs, chunk)
    except _Unsupported:
        return None


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
