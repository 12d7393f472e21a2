"""``gradcore.func``, PyTorch's ``torch.func``: function transforms.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd`` and ``hessian``
turn a function of tensors into the function that computes its derivatives; ``vmap``
maps a function over a dimension of its inputs; ``functional_call`` runs a module with
other tensors in place of its parameters and buffers. They compose:
``vmap(grad(f))`` gives per-sample gradients, ``grad(grad(f))`` second derivatives,
``grad(lambda p: loss(functional_call(model, p, x)))`` the gradient with respect to a
dictionary of parameters.

gradcore runs these on its reverse-mode autograd engine: the derivatives are
``autograd.grad`` calls with ``create_graph=True`` (so that transforms nest),
``jacfwd`` and ``jvp`` are computed in reverse mode (same values), and ``vmap`` calls
the function once per index of the mapped dimension and stacks the results: correct,
not fast. As in PyTorch, a result is differentiable (``requires_grad``) when it depends
on tensors that require grad outside the transform.

>>> import gradcore as gc
>>> from gradcore.func import grad, vmap
>>> grad(lambda x: (x ** 3).sum())(gc.tensor([1., 2.]))
tensor([ 3., 12.])
>>> vmap(lambda row: row.sum())(gc.tensor([[1., 2.], [3., 4.]]))
tensor([3., 7.])
"""

from __future__ import annotations

import functools
from collections import OrderedDict

from . import random as _random
from .autograd.functional import grad as _autograd_grad
from .autograd.grad_mode import enable_grad
from .autograd.grad_mode import state as _mode
from .ops.shape import select as _select
from .ops.shape import stack as _stack
from .tensor import Tensor

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap",
           "functional_call", "stack_module_state"]


# ------------------------------------------------------------------------ pytrees
# Containers the transforms look into, as PyTorch's pytrees: tuples, lists, dicts and
# named tuples; anything else is a leaf. A spec is None for a leaf, else
# (kind, context, child specs).

def _flatten(tree):
    if isinstance(tree, (list, tuple, dict)):
        if isinstance(tree, dict):
            kind, context, children = type(tree), list(tree), list(tree.values())
        elif isinstance(tree, tuple) and hasattr(tree, "_fields"):
            kind, context, children = "namedtuple", type(tree), list(tree)
        else:
            kind, context, children = type(tree), None, list(tree)
        leaves, specs = [], []
        for child in children:
            sub, spec = _flatten(child)
            leaves += sub
            specs.append(spec)
        return leaves, (kind, context, specs)
    return [tree], None


def _unflatten(leaves, spec):
    it = iter(leaves)
    out = _build(it, spec)
    return out


def _build(it, spec):
    if spec is None:
        return next(it)
    kind, context, specs = spec
    children = [_build(it, s) for s in specs]
    if kind == "namedtuple":
        return context(*children)
    if issubclass(kind, dict):
        return kind(zip(context, children))
    return kind(children)


def _num_leaves(spec):
    return 1 if spec is None else sum(_num_leaves(s) for s in spec[2])


def _broadcast(prefix, spec):
    """``prefix`` (in_dims, out_dims) repeated over the leaves of ``spec`` it covers, as a
    flat list; None when its structure does not fit."""
    if spec is None:
        return None if isinstance(prefix, (list, tuple, dict)) else [prefix]
    if not isinstance(prefix, (list, tuple, dict)):
        return [prefix] * _num_leaves(spec)
    kind, context, specs = spec
    same_kind = (isinstance(prefix, dict) and isinstance(kind, type) and issubclass(kind, dict)) \
        or (isinstance(prefix, (list, tuple)) and not isinstance(prefix, dict) and
            (kind == "namedtuple" or not issubclass(kind, dict)))
    if not same_kind or len(prefix) != len(specs):
        return None
    if isinstance(prefix, dict):
        if set(prefix) != set(context):
            return None
        prefix = [prefix[k] for k in context]
    out = []
    for p, s in zip(prefix, specs):
        sub = _broadcast(p, s)
        if sub is None:
            return None
        out += sub
    return out


def _spec_str(spec):
    """A spec as text, for errors (PyTorch prints its TreeSpec)."""
    if spec is None:
        return "*"
    kind, _, specs = spec
    name = "namedtuple" if kind == "namedtuple" else kind.__name__
    return f"{name}({', '.join(_spec_str(s) for s in specs)})"


# ------------------------------------------------------------------ differentiation

def _slice_argnums(args, argnums):
    """The arguments ``argnums`` picks (one, or a tuple), with PyTorch's errors."""
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")

    def wrap(argnum):
        if not isinstance(argnum, int):
            raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
        if 0 <= argnum < len(args):
            return argnum
        if -len(args) <= argnum < 0:
            return argnum + len(args)
        raise RuntimeError(f"Got argnum={argnum}, but only {len(args)} positional inputs")

    if isinstance(argnums, int):
        return wrap(argnums)
    argnums = tuple(wrap(a) for a in argnums)
    if len(argnums) == 0:
        raise RuntimeError("argnums must be non-empty")
    if len(set(argnums)) != len(argnums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return argnums


class _Level:
    """One call of a transform. The leaves it makes for its inputs carry it
    (``_func_level``): for the transforms it runs inside, a tensor that depends on such a
    leaf depends on an input of theirs; for itself, and once it has returned, on nothing
    that requires grad outside."""

    def __init__(self):
        self.active = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.active = False
        return False

    def leaf(self, x):
        """A new tensor object standing for ``x`` that requires grad: a differentiable
        view of ``x`` when it already requires grad (gradients still reach it), else a
        detached leaf of this level."""
        if not isinstance(x, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
        if x.requires_grad:
            return x.view_as(x)
        leaf = x.detach().requires_grad_()
        leaf._func_level = self
        return leaf

    def outside(self, leaf):
        """Whether a leaf that requires grad is an input from outside this level."""
        level = leaf.__dict__.get("_func_level")
        return level is None or (level is not self and level.active)


def _prepare(args, argnums, own):
    """``args`` with the ones ``argnums`` picks (pytrees of tensors) made differentiable;
    the picked ones (one, or a tuple), as made."""
    if argnums is None:
        picked = tuple(_map(own.leaf, a) for a in args)
        return picked, picked
    which = _slice_argnums(args, argnums)
    args = list(args)
    for i in (which,) if isinstance(which, int) else which:
        args[i] = _map(own.leaf, args[i])
    picked = args[which] if isinstance(which, int) else tuple(args[i] for i in which)
    return tuple(args), picked


def _map(fn, tree):
    leaves, spec = _flatten(tree)
    return _unflatten([fn(x) for x in leaves], spec)


def _outside(t, own):
    """Whether ``t`` depends on a tensor requiring grad that the transform did not make
    (a parameter, an outer transform's input): then its history stays."""
    if not isinstance(t, Tensor) or not t.requires_grad:
        return False
    if t.grad_fn is None:
        return own.outside(t)
    stack, seen = [t.grad_fn], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.is_sink:
            leaf = node.variable
            if leaf is not None and own.outside(leaf):
                return True
            continue
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return False


def _release(tree, own):
    """Results cut from the transform's own inputs: a tensor that depends only on them
    is detached (it would not require grad in PyTorch); others keep their history."""
    return _map(lambda t: t if not isinstance(t, Tensor) or _outside(t, own)
                else t.detach(), tree)


def _grads(outputs, inputs, grad_outputs=None, retain_graph=True):
    """``autograd.grad`` with ``create_graph=True`` over the outputs that require grad;
    zeros for the inputs they do not reach."""
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs:
        return tuple(x.new_zeros(x.shape) for x in inputs)
    with enable_grad():
        got = _autograd_grad([o for o, _ in pairs], list(inputs), [g for _, g in pairs],
                             retain_graph=retain_graph, create_graph=True, allow_unused=True)
    return tuple(x.new_zeros(x.shape) if g is None else g for g, x in zip(got, inputs))


def _name(func):
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)


def grad_and_value(func, argnums=0, has_aux=False):
    """``func`` turned into a function that returns ``(gradient, value)``: the gradient
    of its scalar output with respect to the arguments ``argnums`` picks (each a tensor
    or a pytree of tensors, and the gradient of the same structure), and the output.

    Args:
        func: a function returning a 0-d tensor (``(output, aux)`` with ``has_aux``).
        argnums: the index of the argument to differentiate, or a tuple of indices.
        has_aux: ``func`` returns ``(output, aux)``; the result is then
            ``(gradient, (value, aux))``.

    >>> import gradcore as gc
    >>> from gradcore.func import grad_and_value
    >>> grad_and_value(lambda x: (x ** 2).sum())(gc.tensor([1., 2.]))
    (tensor([2., 4.]), tensor(5.))
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with _Level() as own, enable_grad():
            args, diff = _prepare(args, argnums, own)
            output = func(*args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(output, tuple) and len(output) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should "
                                       "be a tuple: (output, aux) if has_aux is True")
                output, aux = output
            if not isinstance(output, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(output)}")
            if output.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {output.dim()} dims. Maybe "
                                   "you wanted to use the vjp or jacrev APIs instead?")
            flat, spec = _flatten(diff)
            gradient = _unflatten(_grads([output], flat), spec)
        gradient, output = _release(gradient, own), _release(output, own)
        if has_aux:
            return gradient, (output, _release(aux, own))
        return gradient, output
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """``func`` turned into a function that returns the gradient of its scalar output
    with respect to the arguments ``argnums`` picks (tensors or pytrees of tensors: the
    gradient has the same structure). Nests: ``grad(grad(f))`` is the second
    derivative.

    Args:
        func: a function returning a 0-d tensor (``(output, aux)`` with ``has_aux``).
        argnums: the index of the argument to differentiate, or a tuple of indices (the
            gradient is then a tuple).
        has_aux: ``func`` returns ``(output, aux)``; the result is then
            ``(gradient, aux)``.

    >>> import gradcore as gc
    >>> from gradcore.func import grad
    >>> grad(grad(lambda x: x ** 3))(gc.tensor(2.))
    tensor(12.)
    """
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        gradient, value = inner(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient
    return wrapper


def _vjp(func, primals, argnums, has_aux, api="vjp(f, *primals)"):
    """What ``vjp`` and ``jacrev`` share: ``(output, vjp_fn, aux, own)``, output and
    aux still attached to the graph."""
    with _Level() as own, enable_grad():
        args, diff = _prepare(primals, argnums, own)
        output = func(*args)
        aux = None
        if has_aux:
            if not (isinstance(output, tuple) and len(output) == 2):
                raise RuntimeError(f"{api}: output of function f should be a tuple: "
                                   "(output, aux) if has_aux is True")
            output, aux = output
        flat_out, out_spec = _flatten(output)
        if not flat_out:
            raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output "
                               f"(got output = {output})")
        for o in flat_out:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got "
                                   f"unsupported type {type(o)}")
            if not o.is_floating_point() and api.startswith("vjp"):
                raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or "
                                   f"complex Tensors, got Tensor with dtype {o.dtype}")
    flat_diff, diff_spec = _flatten(diff)

    def vjp_fn(cotangents, retain_graph=True, create_graph=None, _raw=False):
        if create_graph is None:
            create_graph = _mode.enabled
        flat_cot, cot_spec = _flatten(cotangents)
        if cot_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as "
                               "pytree structure of outputs to the function. cotangents: "
                               f"{_spec_str(cot_spec)}, primal output: {_spec_str(out_spec)}")
        result = _unflatten(_grads(flat_out, flat_diff, flat_cot, retain_graph), diff_spec)
        if _raw:  # (jvp differentiates this with respect to the cotangents)
            return result
        if not create_graph:
            return _map(lambda t: t.detach(), result)
        return _release(result, own)

    return output, vjp_fn, aux, own


def vjp(func, *primals, has_aux=False):
    """``func(*primals)`` and the function that takes cotangents (one per output, of the
    output's structure) to the vector-Jacobian products with respect to every primal.

    Returns ``(output, vjp_fn)``, or ``(output, vjp_fn, aux)`` with ``has_aux``;
    ``vjp_fn(cotangents)`` returns a tuple with one entry per primal.

    >>> import gradcore as gc
    >>> from gradcore.func import vjp
    >>> out, vjp_fn = vjp(lambda x: x ** 2, gc.tensor([1., 2.]))
    >>> vjp_fn(gc.tensor([1., 1.]))
    (tensor([2., 4.]),)
    """
    output, vjp_fn, aux, own = _vjp(func, primals, None, has_aux)
    output = _release(output, own)
    if has_aux:
        return output, vjp_fn, _release(aux, own)
    return output, vjp_fn


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``func(*primals)`` and its Jacobian-vector product with ``tangents`` (one per
    primal, of its shape): ``(output, jvp_out)``, or ``(output, jvp_out, aux)``.
    Computed in reverse mode by the double-vjp trick (same values as PyTorch's forward
    mode).

    >>> import gradcore as gc
    >>> from gradcore.func import jvp
    >>> jvp(lambda x: x ** 2, (gc.tensor([1., 2.]),), (gc.tensor([1., 0.]),))
    (tensor([1., 4.]), tensor([2., 0.]))
    """
    api = "jvp(f, primals, tangents)"
    if strict:
        raise RuntimeError(f"{api}: strict=True is not supported.")
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid "
                           "to call f(*primals).")
    flat_p, p_spec = _flatten(primals)
    flat_t, t_spec = _flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python "
                           "structure. For example, if primals is a tuple of 3 tensors, "
                           "tangents also must be. Got primals with structure "
                           f"{_spec_str(p_spec)} and tangents with structure "
                           f"{_spec_str(t_spec)}")
    for name, flat in (("primals", flat_p), ("tangents", flat_t)):
        if not flat:
            raise RuntimeError(f"{api}: Expected {name} to contain at least one Tensor.")
        for x in flat:
            if not isinstance(x, Tensor):
                raise RuntimeError(f"{api}: Expected {name} to only contain Tensors, got "
                                   f"{type(x)}")
    output, vjp_fn, aux, own = _vjp(func, primals, None, has_aux, api)
    flat_out, out_spec = _flatten(output)
    with enable_grad():
        # vjp is linear in its cotangents: differentiate it with respect to them
        cot = [own.leaf(o.new_zeros(o.shape)) for o in flat_out]
        flat_g, _ = _flatten(vjp_fn(_unflatten(cot, out_spec), _raw=True))
        result = _grads(flat_g, cot, flat_t)
    output, result = _release(output, own), _release(_unflatten(result, out_spec), own)
    if has_aux:
        return output, result, _release(aux, own)
    return output, result


def _jacobian(func, argnums, has_aux, api, args):
    output, vjp_fn, aux, own = _vjp(func, args, argnums, has_aux, api)
    flat_out, out_spec = _flatten(output)
    which = _slice_argnums(args, argnums)
    picked = args[which] if isinstance(which, int) else tuple(args[i] for i in which)
    flat_p, p_spec = _flatten(picked)
    rows = [[] for _ in flat_p]  # per primal, one gradient per output element
    for k, out in enumerate(flat_out):
        for j in range(out.numel()):
            basis = [o.new_zeros(o.shape) for o in flat_out]
            basis[k].view(-1)[j] = 1
            got, _ = _flatten(vjp_fn(_unflatten(basis, out_spec), create_graph=True))
            for row, g in zip(rows, got):
                row.append(g)
    # per output, the Jacobian with respect to each flat primal
    per_output = []
    start = 0
    for out in flat_out:
        n = out.numel()
        blocks = []
        for row, p in zip(rows, flat_p):
            part = row[start:start + n]
            block = _stack(part) if part else p.new_zeros((0,) + tuple(p.shape))
            blocks.append(block.reshape(tuple(out.shape) + tuple(p.shape)))
        start += n
        tree = _unflatten(blocks, p_spec)
        per_output.append(tree)
    result = _release(_unflatten(per_output, out_spec), own)
    if has_aux:
        return result, _release(aux, own)
    return result


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None,
           _preallocate_and_copy=False):
    """``func`` turned into a function that returns its Jacobian with respect to the
    arguments ``argnums`` picks, by reverse mode: for one output and one argument a
    tensor of shape ``output.shape + argument.shape``; the output's structure outside,
    the arguments' (a tuple for a tuple of ``argnums``) inside.

    Args:
        func: a function of tensors returning a tensor or a pytree of tensors.
        argnums: the index of the argument to differentiate, or a tuple of indices.
        has_aux: ``func`` returns ``(output, aux)``; the result is ``(jacobian, aux)``.
        chunk_size: accepted (gradcore computes one row at a time).

    >>> import gradcore as gc
    >>> from gradcore.func import jacrev
    >>> jacrev(lambda x: x ** 2)(gc.tensor([1., 2.]))
    tensor([[2., 0.],
            [0., 4.]])
    """
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args):
        return _jacobian(func, argnums, has_aux, "vjp(f, *primals)", args)
    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """``func`` turned into a function that returns its Jacobian with respect to the
    arguments ``argnums`` picks, with ``jacrev``'s structure and values (PyTorch computes
    it in forward mode; gradcore in reverse mode).

    Args:
        func: a function of tensors returning a tensor or a pytree of tensors.
        argnums: the index of the argument to differentiate, or a tuple of indices.
        has_aux: ``func`` returns ``(output, aux)``; the result is ``(jacobian, aux)``.
        randomness: ``"error"``, ``"different"`` or ``"same"`` (checked; gradcore
            runs ``func`` once, so its draws are simply its own).

    >>> import gradcore as gc
    >>> from gradcore.func import jacfwd
    >>> jacfwd(lambda x: x.sum() * x)(gc.tensor([1., 2.]))
    tensor([[4., 1.],
            [2., 5.]])
    """
    _check_randomness(randomness)

    @functools.wraps(func)
    def wrapper(*args):
        return _jacobian(func, argnums, has_aux, "jvp(f, primals, tangents)", args)
    return wrapper


def hessian(func, argnums=0):
    """``func`` turned into a function that returns its Hessian with respect to the
    arguments ``argnums`` picks: ``jacfwd(jacrev(func, argnums), argnums)``.

    >>> import gradcore as gc
    >>> from gradcore.func import hessian
    >>> hessian(lambda x: (x ** 3).sum())(gc.tensor([1., 2.]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    return jacfwd(jacrev(func, argnums), argnums)


# ---------------------------------------------------------------------------- vmap

def _check_randomness(randomness):
    if randomness not in ("error", "different", "same"):
        raise RuntimeError("Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` mapped over a dimension of its inputs: each tensor argument is taken
    apart along its ``in_dims`` entry (None: passed whole to every call), ``func`` runs
    on each index of that dimension, and its outputs are stacked along ``out_dims``.
    Nests (``vmap(vmap(f))``) and composes with ``grad`` (``vmap(grad(f))``: per-sample
    gradients).

    gradcore calls ``func`` once per index and stacks: the results are PyTorch's, the
    speed that of a Python loop.

    Args:
        func: a function of tensors (and other values) returning a tensor or a pytree
            of tensors.
        in_dims: an int or None for every argument, or a tuple (nested as the
            arguments are) of them.
        out_dims: an int (or None for an output that is the same for every index), or
            a tuple of them for the outputs.
        randomness: ``"error"`` (random draws inside ``func`` raise), ``"different"``
            (each index draws anew) or ``"same"`` (every index sees the same draws).
        chunk_size: accepted (None or a positive int).

    >>> import gradcore as gc
    >>> from gradcore.func import vmap
    >>> vmap(lambda a, b: a @ b)(gc.ones(3, 2, 4), gc.ones(3, 4)).shape
    gradcore.Size([3, 2])
    """
    _check_randomness(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return _vmap_call(func, in_dims, out_dims, randomness, args, kwargs)
    return wrapped


def _vmap_call(func, in_dims, out_dims, randomness, args, kwargs):
    name = _name(func)
    if not isinstance(out_dims, int):
        for d in _flatten(out_dims)[0]:
            if not (d is None or isinstance(d, int)):
                raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be "
                                 "an int, None or a python collection of ints representing "
                                 "where in the outputs the vmapped dimension should appear.")
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` "
                         "to be int or a (potentially nested) tuple matching the structure "
                         f"of inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add "
                         "inputs, or you are trying to vmap over a function with no inputs. "
                         "The latter is unsupported.")
    flat_args, args_spec = _flatten(args)
    flat_dims = _broadcast(in_dims, args_spec)
    where = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"
    if flat_dims is None:
        raise ValueError(f"{where}: in_dims is not compatible with the structure of `inputs`. "
                         f"in_dims has structure {_spec_str(_flatten(in_dims)[1])} but "
                         f"inputs has structure {_spec_str(args_spec)}.")
    for i, (arg, d) in enumerate(zip(flat_args, flat_dims)):
        if d is not None and not isinstance(d, int):
            raise ValueError(f"{where}: Got in_dim={d} for an input but in_dim must be either "
                             "an integer dimension or None.")
        if isinstance(d, int) and not isinstance(arg, Tensor):
            raise ValueError(f"{where}: Got in_dim={d} for an input but the input is of type "
                             f"{type(arg)}. We cannot vmap over non-Tensor arguments, please "
                             "use None as the respective in_dim")
        if d is not None and not -arg.dim() <= d < arg.dim():
            raise ValueError(f"{where}: Got in_dim={d} for some input, but that input is a "
                             f"Tensor of dimensionality {arg.dim()} so expected in_dim to "
                             f"satisfy -{arg.dim()} <= in_dim < {arg.dim()}.")
        if d is not None and d < 0:
            flat_dims[i] = d % arg.dim()
    sizes = [arg.shape[d] for arg, d in zip(flat_args, flat_dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    results = []
    state = _random.get_rng_state() if randomness != "different" else None
    for i in range(sizes[0]):
        if randomness == "same":
            _random.set_rng_state(state)
        sample = [a if d is None else _select(a, d, i) for a, d in zip(flat_args, flat_dims)]
        results.append(func(*_unflatten(sample, args_spec), **kwargs))
        if randomness == "error" and not _random.get_rng_state().equal(state):
            raise RuntimeError("vmap: called random operation while in randomness error mode. "
                               "Please either use the 'same' or 'different' randomness flags "
                               "on vmap or perform the randomness operation out of vmap")
    return _stack_outputs(results, out_dims, name)


def _stack_outputs(results, out_dims, name):
    flat0, out_spec = _flatten(results[0])
    if isinstance(results[0], Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            flat_dims = [out_dims]
        elif isinstance(out_dims, tuple) and len(out_dims) == 1:
            flat_dims = list(out_dims)
        else:
            flat_dims = None
    else:
        flat_dims = _broadcast(out_dims, out_spec)
    if flat_dims is None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                         "compatible with the structure of `outputs`. out_dims has structure "
                         f"{_spec_str(_flatten(out_dims)[1])} but outputs has structure "
                         f"{_spec_str(out_spec)}.")
    per_leaf = [list(col) for col in zip(*(_flatten(r)[0] for r in results))] if results \
        else [[] for _ in flat0]
    out = []
    for values, d in zip(per_leaf, flat_dims):
        first = values[0]
        if d is None:
            if isinstance(first, Tensor) and any(not v.equal(first) for v in values[1:]):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor "
                                 "when out_dim is None")
            out.append(first)
            continue
        if not isinstance(first, Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                             f"{type(first)}. Did you mean to set out_dims= to None for "
                             "output?")
        out.append(_stack(values, d))
    return _unflatten(out, out_spec)


# ----------------------------------------------------------------- functional_call

_MISSING = object()


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with the tensors of ``parameter_and_buffer_dicts``
    (names as ``named_parameters()`` and ``named_buffers()`` give them) in place of the
    module's own for the call; the module is as before afterwards. The parameters and
    buffers not named stay the module's.

    Args:
        module: the module to call.
        parameter_and_buffer_dicts: a dict of name to tensor, or a list or tuple of dicts
            (no name in two of them).
        args: the positional arguments: a tuple, or one argument.
        kwargs: the keyword arguments.
        tie_weights: a tensor the module holds under several names (tied weights) is
            replaced under all of them by the value given for one.
        strict: raise unless the names given are exactly the module's.

    >>> import gradcore as gc
    >>> from gradcore.func import functional_call
    >>> lin = gc.nn.Linear(2, 1)
    >>> params = {"weight": gc.ones(1, 2), "bias": gc.zeros(1)}
    >>> functional_call(lin, params, (gc.tensor([[1., 2.]]),))
    tensor([[3.]])
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        values = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (list, tuple)):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be "
                             "dictionaries")
        counts = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             "functional call is ambiguous")
        values = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple "
                         f"of dicts, but got {type(parameter_and_buffer_dicts)}")
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    if tie_weights:
        values = _untie(module, values)
    if strict:
        _check_keys(module, values)
    originals = {}
    try:
        for name, tensor in values.items():
            originals[name] = _swap(module, name, tensor)
        return module(*args, **kwargs)
    finally:
        for name, tensor in reversed(list(originals.items())):
            _swap(module, name, tensor)


def _named_tensors(module):
    named = OrderedDict(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    return named


def _untie(module, values):
    """The values given for tied tensors copied to every name of the tensor."""
    names_of = {}
    for name, tensor in _named_tensors(module).items():
        names_of.setdefault(id(tensor), set()).add(name)
    tied = {n: names for names in names_of.values() if len(names) > 1 for n in names}
    given = [n for n in values if n in tied]
    for name in given:
        names = tied[name]
        if len(names.intersection(given)) > 1 and \
                len({id(values[n]) for n in names if n in values}) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, "
                             "which are tied. Consider using tie_weights=False")
    untied = dict(values)
    for name in given:
        for other in tied[name]:
            untied[other] = values[name]
    return untied


def _check_keys(module, values):
    known = set(_named_tensors(module))
    missing = sorted(known - set(values))
    unexpected = sorted(set(values) - known)
    msgs = []
    if unexpected:
        msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if msgs:
        raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
            module._get_name(), "\n\t".join(msgs)))


def _swap(module, name, tensor):
    """Put ``tensor`` (or nothing, for _MISSING) at the dotted ``name``; return what was
    there."""
    *path, last = name.split(".")
    for part in path:
        module = getattr(module, part)
    if tensor is not _MISSING and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    for store in (module._parameters, module._buffers):
        if last in store:
            old = store[last]
            if tensor is _MISSING:
                del store[last]
            else:
                store[last] = tensor
            return old
    old = getattr(module, last, _MISSING)
    if old is not _MISSING and not isinstance(old, Tensor):
        raise TypeError(f"attribute `{last}`: {old} is not an instance of torch.Tensor")
    if tensor is not _MISSING:
        object.__setattr__(module, last, tensor)
    elif last in module.__dict__:
        object.__delattr__(module, last)
    return old


def stack_module_state(models) -> tuple[dict, dict]:
    """The parameters and the buffers of ``models`` (modules of one class, all in
    training or all in eval mode), each stacked along a new first dimension: two dicts
    by name, for ``vmap`` over an ensemble with :func:`functional_call`. The stacked
    parameters are new leaves that require grad where the models' do.

    >>> import gradcore as gc
    >>> params, buffers = gc.func.stack_module_state([gc.nn.Linear(3, 2) for _ in range(4)])
    >>> params["weight"].shape
    gradcore.Size([4, 2, 3])
    """
    models = list(models)
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(tensors, name):
        grads = [t.requires_grad for t in tensors]
        if any(grads) and not all(grads):
            raise RuntimeError(f"Expected {name} from each model to have the same "
                               f".requires_grad")
        out = _stack(list(tensors))
        if all(grads):
            out = out.detach().requires_grad_()
        return out

    all_params = [dict(m.named_parameters()) for m in models]
    params = {k: stacked(tuple(p[k] for p in all_params), k) for k in all_params[0]}
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: stacked(tuple(b[k] for b in all_buffers), k) for k in all_buffers[0]}
    return params, buffers
