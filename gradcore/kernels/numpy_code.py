"""NumPy code generated from a declaration's expressions: the one generator behind the
CPU twins of pointwise kernels (:mod:`.twin`) and the CPU updates (:mod:`.updates`).

An expression (the common subset of C and Python, parsed with :mod:`ast`) becomes a list
of operations (:func:`linearize`), one array-module call each, in Python's evaluation
order: the operations, their operands and so their results and dtypes are those of the
expression run over the array module, bit for bit. :func:`emit` writes them as calls
with ``out=`` into buffers: a result goes into the buffer that must end with it (an
output), else into the memory of an operand that dies here, else into a free scratch
buffer, else into an output's buffer whose own value comes later; a value is dead after
its last use. The front ends say what the buffers are (the caller's ``out``, a dead
saved output, the arrays an update writes, scratch arrays a slice long) and how a new
one is made.
"""

from __future__ import annotations

import ast

__all__ = ["INPLACE", "Op", "linearize", "emit"]

_BINARY = {ast.Add: ("add", "+"), ast.Sub: ("subtract", "-"), ast.Mult: ("multiply", "*"),
           ast.Div: ("true_divide", "/"), ast.Pow: ("power", "**"),
           ast.BitAnd: ("bitwise_and", "&"), ast.BitOr: ("bitwise_or", "|")}
_UNARY = {ast.USub: ("negative", "-"), ast.Invert: ("invert", "~")}
_COMPARE = {ast.Lt: ("less", "<"), ast.LtE: ("less_equal", "<="), ast.Gt: ("greater", ">"),
            ast.GtE: ("greater_equal", ">="), ast.Eq: ("equal", "=="),
            ast.NotEq: ("not_equal", "!=")}
_CALLS = {"pow": "power"}
# ufuncs whose result has the arrays' floating dtype: written with out= into a buffer;
# any other call (where, comparisons, erf, ...) makes a new array
INPLACE = frozenset({"add", "subtract", "multiply", "true_divide", "power", "negative",
                     "sqrt", "exp", "log", "sin", "cos", "tanh", "maximum"})


class Op:
    """One call: ``func`` over ``args`` (value numbers, or host source: a scalar's name,
    a constant, an expression of them); ``inplace``: it may write with ``out=``."""

    __slots__ = ("func", "args", "inplace")

    def __init__(self, func, args, inplace):
        self.func, self.args, self.inplace = func, args, inplace


def is_where(node) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "where" and len(node.args) == 3)


def _group(a: str) -> str:
    return f"({a})" if a.startswith("-") else a  # (-2) ** b


def linearize(name, statements, params, scalars, known=None):
    """The ``statements`` (pairs of a name and an expression, run in order; a name may
    be rebound) as operations over values: ``0 .. len(params) - 1`` the arrays
    ``params``, ``len(params) + i`` the result of operation ``i``, a str a number known
    on the host (formed in Python, as the expression does). ``known`` maps a ``where``
    condition's source to its value (the branch taken is the only one computed).
    Returns (the operations, the names' values)."""
    known = known or {}
    ops: list[Op] = []
    env = {p: i for i, p in enumerate(params)}
    scalars = set(scalars)

    def operation(func, args):
        ops.append(Op(func, args, func in INPLACE))
        return len(params) + len(ops) - 1

    def visit(node):
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            if node.id in scalars:
                return node.id
            raise NameError(f"{name}: {node.id!r} is not a parameter, scalar or local")
        if isinstance(node, ast.Constant):
            return repr(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            a, b = visit(node.left), visit(node.right)
            func, symbol = _BINARY[type(node.op)]
            if isinstance(a, str) and isinstance(b, str):
                return f"({_group(a)} {symbol} {_group(b)})"
            return operation(func, (a, b))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd):
            return visit(node.operand)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and \
                isinstance(node.operand, ast.Constant):  # -0.5: one constant, as Python's
            return repr(-node.operand.value)                 # compiler folds it
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            a = visit(node.operand)
            func, symbol = _UNARY[type(node.op)]
            if isinstance(a, str):
                return f"({symbol}{a})"
            return operation(func, (a,))
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and \
                type(node.ops[0]) in _COMPARE:
            a, b = visit(node.left), visit(node.comparators[0])
            func, symbol = _COMPARE[type(node.ops[0])]
            if isinstance(a, str) and isinstance(b, str):
                return f"({a} {symbol} {b})"
            return operation(func, (a, b))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                not node.keywords:
            if is_where(node) and ast.unparse(node.args[0]) in known:
                return visit(node.args[1] if known[ast.unparse(node.args[0])] else
                             node.args[2])
            args = tuple(visit(a) for a in node.args)
            if all(isinstance(a, str) for a in args):
                # a NumPy scalar (not a Python float) would change the arrays' dtype
                raise NotImplementedError(f"{name}: form {ast.unparse(node)} on the host")
            return operation(_CALLS.get(node.func.id, node.func.id), args)
        raise NotImplementedError(f"{name}: {ast.unparse(node)}")

    for target, expr in statements:
        env[target] = visit(ast.parse(expr, mode="eval").body)
    return ops, env


def emit(ops, homes, *, finals=(), donors=(), results=(), new, prefix="", indent=4,
         last_operand=False):
    """The operations as lines of calls writing with ``out=`` into buffers.

    ``homes``: each parameter's variable; ``finals``: {buffer: the value it must end
    with} (written straight into it; a buffer not also in ``donors`` is free before);
    ``donors``: {buffer: the parameter it holds}, whose memory is free once that value is
    dead (and, for a buffer of ``finals``, only for values dead before its own value is
    made); ``results``: values without a buffer that must outlive the operations (into
    a donor, or a buffer ``new(i, True)`` makes); ``new(i, result)`` names a new buffer
    for operation ``i``: (name, lines before the call, whether the call makes it and
    whether it may hold a result). Of several operands that die at a call, the first
    (``last_operand``: the last) gives its memory to the result (the two front ends'
    choices before they shared this code, kept so that their code did not change).
    Returns (the lines, each value's variable, the
    scratch buffers made)."""
    n_params = len(homes)
    end = len(ops)
    last = {}  # value -> the last operation that reads it (end: it lives to the end)
    for i, op in enumerate(ops):
        for a in op.args:
            if not isinstance(a, str):
                last[a] = i
    for v in [*finals.values(), *results]:
        if not isinstance(v, str):
            last[v] = end
    # a buffer of finals may hold another value until its final value is made
    until = {b: (v - n_params if not isinstance(v, str) and v >= n_params else end - 1)
             for b, v in finals.items()}
    home = dict(enumerate(homes))  # value -> the variable holding it
    holder = dict(donors)          # a reusable buffer -> the value it holds
    whole = set(donors)            # buffers that may hold a result
    scratch: list[str] = []
    lines = []
    pad = " " * indent

    def operand(a):
        return a if isinstance(a, str) else home[a]

    for i, op in enumerate(ops):
        v = n_params + i
        args = ", ".join(operand(a) for a in op.args)
        if not op.inplace:
            home[v] = f"_new{i}"
            lines.append(f"{pad}_new{i} = {prefix}{op.func}({args})")
            continue
        result = v in results

        def free(buf):
            return last.get(holder.get(buf), -1) <= i

        def fits(buf):
            return (buf not in until or last.get(v, -1) <= until[buf]) and \
                (not result or buf in whole)

        choice = next((b for b, w in finals.items() if w == v and free(b)), None)
        if choice is None:  # in place over an operand that dies here
            choice = next((home[a] for a in (op.args[::-1] if last_operand else op.args)
                           if not isinstance(a, str) and
                           last[a] == i and home[a] in holder and fits(home[a])), None)
        if choice is None:
            choice = next((s for s in scratch if free(s) and fits(s)), None)
        if choice is None:
            choice = next((b for b in donors if free(b) and fits(b)), None)
        if choice is None:
            choice, before, made, full = new(i, result)
            lines += [pad + line for line in before]
            scratch.append(choice)
            if full:
                whole.add(choice)
            if made:
                lines.append(f"{pad}{choice} = {prefix}{op.func}({args})")
        else:
            made = False
        if not made:
            lines.append(f"{pad}{prefix}{op.func}({args}, out={choice})")
        holder[choice] = v
        home[v] = choice
    return lines, home, scratch
