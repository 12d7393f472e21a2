"""``autograd.grad`` and ``backward(inputs=...)``: gradients of chosen inputs only; and
PyTorch's ``torch.autograd.functional``: ``jacobian``, ``hessian``, ``vjp``, ``jvp``,
``hvp`` and ``vhp`` of a function of one tensor or a tuple of tensors, computed with
reverse-mode autograd (``jvp`` and ``hvp`` by the double-backward trick, as PyTorch's
own implementation of them does).

>>> import gradcore as gc
>>> from gradcore.autograd.functional import jacobian
>>> jacobian(lambda x: x ** 2, gc.tensor([1., 2.]))
tensor([[2., 0.],
        [0., 4.]])
"""

from __future__ import annotations

import warnings

from ..backend import math_of
from . import graph as _graph
from .grad_mode import enable_grad, set_grad_enabled
from .grad_mode import state as _mode
from .graph import grad_lock, run_backward
from .tensor_base import (
    Tensor,
    _wrap,
    fresh_history,
    from_data,
    user_requires_grad,
    zeros_like,
)

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _as_list(x):
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _root_grads(outputs, grad_outputs, create_graph):
    """The gradients that start a backward pass: arrays, or tensors for create_graph.

    A missing one is ones (scalar outputs only); a given one must match its output's
    shape and device.
    """
    grads = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if not user_requires_grad(out):
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               "a grad_fn")
        if g is None:
            if out._data.size != 1:
                raise RuntimeError(f"grad can be implicitly created only for scalar outputs, "
                                   f"got a tensor of shape {tuple(out.shape)}")
            arr = math_of(out._data).ones_like(out._data)
            grads.append(_wrap(arr) if create_graph else arr)
            continue
        if not isinstance(g, Tensor):
            g = from_data(g, dtype=out.dtype, device=out.device)
        if tuple(g.shape) != tuple(out.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                               f"{tuple(g.shape)} and output[{i}] has a shape of "
                               f"{tuple(out.shape)}.")
        if g.device != out.device:
            raise RuntimeError(f"grad_output[{i}] is on {g.device} but output[{i}] is on "
                               f"{out.device}")
        if g.dtype != out.dtype:  # PyTorch casts the root gradient to its output's dtype
            g = g.to(out.dtype)
        grads.append(g if create_graph else g._data)
    return grads


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False,
         materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs`` (nothing goes to ``.grad``).

    ``inputs`` may be a dict of named tensors: the gradients come back in a dict with
    the same keys. ``is_grads_batched=True`` takes each ``grad_outputs`` tensor's first
    dimension as a batch of vectors and gives each gradient that batch dimension (one
    backward per vector, as PyTorch's vmap gives). ``only_inputs`` is PyTorch's
    deprecated argument: ignored, with its warning when False.

    >>> import gradcore as gc
    >>> x = gc.tensor([1., 2.], requires_grad=True)
    >>> (g,) = gc.autograd.grad((x * x).sum(), x)
    >>> g
    tensor([2., 4.])
    """
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to "
                      "True). To accumulate gradient for other parts of the graph, please "
                      "use torch.autograd.backward.", FutureWarning, stacklevel=2)
    if isinstance(inputs, dict):
        result = grad(outputs, tuple(inputs.values()), grad_outputs, retain_graph,
                      create_graph, True, allow_unused, is_grads_batched,
                      materialize_grads)
        return dict(zip(inputs.keys(), result))
    if is_grads_batched:
        return _grad_batched(outputs, inputs, grad_outputs, retain_graph, create_graph,
                             allow_unused, materialize_grads)
    single_input = isinstance(inputs, Tensor)
    outputs, inputs = _as_list(outputs), _as_list(inputs)
    grad_outputs = _as_list(grad_outputs) or [None] * len(outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad requires one grad_output per output: got "
                           f"{len(grad_outputs)} for {len(outputs)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    if allow_unused is None:
        allow_unused = materialize_grads
    _fresh_views(outputs, inputs)
    for i, t in enumerate(inputs):
        if not t._rg:
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not require "
                               "grad")
    roots = [(o.grad_fn if o.grad_fn is not None else o._accumulator(), o._out_nr)
             for o in outputs]
    capture = {}
    keys = []
    for t in inputs:
        key = (t.grad_fn, t._out_nr) if t.grad_fn is not None else (t._accumulator(), 0)
        keys.append(key)
        capture.setdefault(key, len(capture))
    captured = run_backward(roots, _root_grads(outputs, grad_outputs, create_graph),
                            retain_graph=retain_graph, create_graph=create_graph,
                            capture=capture, accumulate=False)
    result = []
    for i, (t, key) in enumerate(zip(inputs, keys)):
        g = captured[capture[key]]
        if g is None:
            if materialize_grads:
                result.append(zeros_like(t))
                continue
            if not allow_unused:
                raise RuntimeError(f"One of the differentiated Tensors (input {i}) appears to "
                                   "not have been used in the graph. Set allow_unused=True if "
                                   "this is the desired behavior.")
            result.append(None)
            continue
        if not isinstance(g, Tensor):
            g = _wrap(g)
        if g.shape != t.shape:
            g = _wrap(math_of(g._data).sum_to(g._data, t.shape)) if not create_graph else g
        result.append(g if create_graph else g.detach())
    return tuple(result) if not single_input or len(result) != 1 else (result[0],)


def _grad_batched(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                  materialize_grads):
    """``grad`` with ``is_grads_batched``: one backward per row of the grad_outputs,
    the gradients stacked along a new first dimension."""
    rows = _as_list(grad_outputs)
    if not rows or any(g is None for g in rows):
        raise RuntimeError("If `is_grads_batched=True`, every element of grad_outputs "
                           "must be a Tensor with a batch dimension")
    n = rows[0].shape[0] if rows[0].dim() else None
    if n is None or any(g.dim() == 0 or g.shape[0] != n for g in rows):
        raise RuntimeError("If `is_grads_batched=True`, we interpret the first dimension "
                           "of each grad_output as the batch dimension; they must all be "
                           f"present and equal, got shapes {[tuple(g.shape) for g in rows]}")
    per_row = [grad(outputs, inputs, [g[i] for g in rows],
                    retain_graph=True if i < n - 1 else retain_graph,
                    create_graph=create_graph, allow_unused=allow_unused,
                    materialize_grads=materialize_grads) for i in range(n)]
    return tuple(None if col[0] is None else _stack(col) for col in zip(*per_row))


def _fresh_views(*groups):
    """Views among these tensors whose base changed in place get their history rebased
    first (``tensor_base.fresh_history``), as PyTorch's grad_fn of a view is."""
    for group in groups:
        for t in group:
            if t._base is not None:
                fresh_history(t)


def backward_to_inputs(output, root_grad, inputs, retain_graph, create_graph):
    """``output.backward(inputs=...)``: accumulate into the listed tensors' ``.grad`` only."""
    inputs = _as_list(inputs)
    grads = grad([output], inputs, [root_grad if isinstance(root_grad, Tensor) or
                                    root_grad is None else _wrap(root_grad)],
                 retain_graph=retain_graph, create_graph=create_graph, allow_unused=True)
    for t, g in zip(inputs, grads):
        if g is None:
            continue
        with grad_lock(t):
            old = t.__dict__.get("grad")  # not t.grad: no warning for a non-leaf input
            t.grad = g if old is None else old + g


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Backpropagate from several outputs at once (``gc.autograd.backward``)."""
    tensors = _as_list(tensors)
    grad_tensors = _as_list(grad_tensors) or [None] * len(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        for t, g in zip(tensors, grad_tensors):
            t.backward(g, retain_graph=True, create_graph=create_graph, inputs=inputs)
        return
    _fresh_views(tensors)
    roots = [(t.grad_fn if t.grad_fn is not None else t._accumulator(), t._out_nr)
             for t in tensors]
    run_backward(roots, _root_grads(tensors, grad_tensors, create_graph),
                 retain_graph=retain_graph, create_graph=create_graph)


# ------------------------------------------------------- torch.autograd.functional

def _as_tuple(inp, arg_name=None, fn_name=None):
    """``(was it a tuple, the tensors as a tuple)``; with names, each element is checked
    to be a tensor (PyTorch's TypeError otherwise)."""
    if arg_name is None and fn_name is None:
        return inp if isinstance(inp, tuple) else tuple(inp) if isinstance(inp, list) \
            else (inp,)
    is_tuple = isinstance(inp, tuple)
    if not is_tuple:
        inp = (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            where = f"value at index {i}" if is_tuple else f"given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but the {where} has type {type(el)}.")
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    """Undo ``_as_tuple``: ``to_unpack`` is one flag, or two (outputs, inputs) for the
    nested results of ``jacobian`` and ``hessian``."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    """New tensor objects for the inputs (so that the function's own captures of the
    same tensors are told apart): differentiable views with ``create_graph`` when they
    require grad, detached copies otherwise."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph):
    """The results without history unless ``create_graph`` asked for it."""
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but "
                               f"got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but "
                               f"got {el_v.size()}.")


_STRICT_GRAD = {
    "hessian": ("The hessian of the user-provided function with respect to input {i} is "
                "independent of the input. This is not allowed in strict mode. You should "
                "ensure that your function is thrice differentiable and that the hessian "
                "depends on the inputs."),
    "jacobian": ("While computing the hessian, found that the jacobian of the user-provided "
                 "function with respect to input {i} is independent of the input. This is not "
                 "allowed in strict mode. You should ensure that your function is twice "
                 "differentiable and that the jacobian depends on the inputs (this would be "
                 "violated by a linear function for example)."),
    "grad_inputs": ("The gradient with respect to input {i} is independent of the inputs of "
                    "the user-provided function. This is not allowed in strict mode."),
    "outputs": ("Output {i} of the user-provided function does not require gradients. The "
                "outputs must be computed in a differentiable manner from the input when "
                "running in strict mode."),
}


def _check_requires_grad(inputs, input_type, strict):
    """strict mode: raise where a result does not depend on the inputs."""
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:  # (grad_inputs only)
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if not inp.requires_grad:
            raise RuntimeError(_STRICT_GRAD[input_type].format(i=i))


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False,
                   retain_graph=None):
    """``autograd.grad`` over the outputs that require grad (None for every input when
    none does), unused inputs giving None."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return grad([o for o, _ in pairs], list(inputs), [g for _, g in pairs],
                retain_graph=retain_graph, create_graph=create_graph, allow_unused=True)


_ZERO_FILL = {
    "back": ("The output of the user-provided function is independent of input {i}. This is "
             "not allowed in strict mode."),
    "back_trick": ("The gradient with respect to the input is independent of entry {i} in the "
                   "grad_outputs when using the double backward trick to compute forward mode "
                   "gradients. This is not allowed in strict mode."),
    "double_back": ("The jacobian of the user-provided function is independent of input {i}. "
                    "This is not allowed in strict mode."),
    "double_back_trick": ("The hessian of the user-provided function is independent of entry "
                          "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                          "prevents from using the double backward trick to replace forward "
                          "mode AD."),
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    """None gradients as zeros of their reference's shape (errors in strict mode)."""
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_ZERO_FILL[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               "create_graph=True.")
        res.append(g)
    return tuple(res)


def _stack(tensors):
    """``gc.stack(tensors)``, differentiably, through the ops' namespace (the engine's
    layer imports no op)."""
    return _graph._tm.concatenate([t.unsqueeze(0) for t in tensors], 0)


def _product(outputs, outputs_tuple, result, result_tuple, create_graph):
    """``(func_output, product)`` as vjp, jvp, vhp and hvp return them: detached unless
    ``create_graph``, each a tuple where what it stands for was given as one."""
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), outputs_tuple),
            _tuple_postprocess(_grad_postprocess(result, create_graph), result_tuple))


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """The vector-Jacobian product ``v^T J`` of ``func`` at ``inputs``, with
    ``func(inputs)``: returns ``(func_output, vjp)``.

    Args:
        func: a function of the tensors ``inputs`` returning a tensor or a tuple of
            tensors.
        inputs: a tensor or a tuple of tensors.
        v: the vector, one tensor per output of ``func``, of its shape; may be None when
            ``func`` returns a single element.
        create_graph: make the results differentiable.
        strict: raise when an output does not depend on an input (zeros otherwise).

    >>> import gradcore as gc
    >>> from gradcore.autograd.functional import vjp
    >>> vjp(lambda x: x ** 2, gc.tensor([1., 2.]), gc.tensor([1., 1.]))
    (tensor([1., 4.]), tensor([2., 4.]))
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "vjp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].nelement() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function "
                               "returns a single Tensor with a single element.")
    with set_grad_enabled(True if create_graph else _mode.enabled):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    return _product(outputs, is_outputs_tuple, result, is_inputs_tuple, create_graph)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """The Jacobian-vector product ``J v`` of ``func`` at ``inputs``, with
    ``func(inputs)``: returns ``(func_output, jvp)``. Computed with two backward passes
    (the double-backward trick), as PyTorch's ``jvp`` is.

    Args:
        func: a function of the tensors ``inputs`` returning a tensor or a tuple of
            tensors.
        inputs: a tensor or a tuple of tensors.
        v: the vector, one tensor per input, of its shape; may be None when the input is
            a single element.
        create_graph: make the results differentiable.
        strict: raise when an output does not depend on an input (zeros otherwise).

    >>> import gradcore as gc
    >>> from gradcore.autograd.functional import jvp
    >>> jvp(lambda x: x ** 2, gc.tensor([1., 2.]), gc.tensor([1., 1.]))
    (tensor([1., 4.]), tensor([2., 4.]))
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, inputs, is_inputs_tuple)
        elif len(inputs) != 1 or inputs[0].nelement() != 1:
            raise RuntimeError("The vector v can only be None if the input to the "
                               "user-provided function is a single Tensor with a single "
                               "element.")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "jvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        # backward is linear in grad_outputs: their value does not matter (zeros)
        grad_outputs = tuple(zeros_like(out).requires_grad_() for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with set_grad_enabled(True if create_graph else _mode.enabled):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    return _product(outputs, is_outputs_tuple, result, is_outputs_tuple, create_graph)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for one input and one output a tensor of
    shape ``output.shape + input.shape``; a tuple per output (of tuples per input) when
    ``func`` returns (takes) a tuple.

    gradcore computes it one backward pass per output element whatever the arguments
    say: ``vectorize=True`` and ``strategy="forward-mode"`` give the same values (with
    PyTorch's errors for the combinations it refuses).

    Args:
        func: a function of the tensors ``inputs`` returning a tensor or a tuple of
            tensors.
        inputs: a tensor or a tuple of tensors.
        create_graph: make the Jacobian differentiable.
        strict: raise when an output does not depend on an input (zeros otherwise).
        vectorize: accepted (PyTorch batches the backward passes with vmap).
        strategy: ``"reverse-mode"`` or ``"forward-mode"`` (which needs
            ``vectorize=True``).

    >>> import gradcore as gc
    >>> from gradcore.autograd.functional import jacobian
    >>> jacobian(lambda x, y: x * y, (gc.tensor([1., 2.]), gc.tensor([3., 4.])))[1]
    tensor([[1., 0.],
            [0., 2.]])
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                             'Hint: If your function has more outputs than inputs, '
                             '"forward-mode" tends to be more performant. Otherwise, prefer to '
                             'use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either '
                'set `create_graph=False` or `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError(
                "torch.autograd.functional.jacobian: `strict=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either '
                'set `strict=False` or `strategy="reverse-mode"`.')
        if not vectorize:
            _as_tuple(inputs, "inputs", "jacobian")
            raise NotImplementedError("Computing Jacobian using forward-AD or "
                                      "forward-over-reverse Hessian isonly implemented for "
                                      "`vectorize=True`.")
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if vectorize and strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                               "`vectorized=True` are not supported together. Please either "
                               "set `strict=False` or `vectorize=False`.")
        result = []
        for i, out in enumerate(outputs):
            rows = tuple([] for _ in inputs)
            flat = out.reshape(-1)
            for j in range(out.nelement()):
                vj = _autograd_grad((flat[j],), inputs, retain_graph=True,
                                    create_graph=create_graph)
                for k, (row, g, inp) in enumerate(zip(rows, vj, inputs)):
                    if g is not None:
                        if strict and create_graph and not g.requires_grad:
                            raise RuntimeError(
                                "The jacobian of the user-provided function is independent "
                                f"of input {i}. This is not allowed in strict mode when "
                                "create_graph=True.")
                        row.append(g)
                    else:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent "
                                f"of input {k}. This is not allowed in strict mode.")
                        row.append(zeros_like(inp))
            result.append(tuple(
                (_stack(row) if row else zeros_like(inp).reshape((0,) + tuple(inp.shape)))
                .reshape(tuple(out.shape) + tuple(inp.shape))
                for row, inp in zip(rows, inputs)))
        result = _grad_postprocess(tuple(result), create_graph)
        if strategy == "forward-mode":  # PyTorch's forward mode nests lists
            result = [list(per_output) for per_output in result]
        return _tuple_postprocess(result, (is_outputs_tuple, is_inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of the scalar function ``func`` at ``inputs``: for one input a tensor
    of shape ``input.shape + input.shape``; for a tuple of inputs a tuple of tuples, the
    block ``[i][j]`` of shape ``inputs[i].shape + inputs[j].shape``.

    Args:
        func: a function of the tensors ``inputs`` returning a tensor of one element.
        inputs: a tensor or a tuple of tensors.
        create_graph: make the Hessian differentiable.
        strict: raise when the result does not depend on an input (zeros otherwise).
        vectorize: accepted (same values).
        outer_jacobian_strategy: ``"reverse-mode"`` or ``"forward-mode"``, as
            ``jacobian``'s ``strategy``.

    >>> import gradcore as gc
    >>> from gradcore.autograd.functional import hessian
    >>> hessian(lambda x: (x ** 3).sum(), gc.tensor([1., 2.]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function",
                                        "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_function_grad(name, func, inputs, v, create_graph, strict):
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    if v is not None:
        _, v = _as_tuple(v, "v", name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, inputs, is_inputs_tuple)
    elif len(inputs) != 1 or inputs[0].nelement() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided "
                           "function is a single Tensor with a single element.")
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                          name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    if is_outputs_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {name} should "
                           "contain a single element")
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict=strict)
    return is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """The vector-Hessian product ``v^T H`` of the scalar function ``func`` at
    ``inputs``, with ``func(inputs)``: returns ``(func_output, vhp)``.

    Args:
        func: a function of the tensors ``inputs`` returning a tensor of one element.
        inputs: a tensor or a tuple of tensors.
        v: the vector, one tensor per input, of its shape; may be None when the input is
            a single element.
        create_graph: make the results differentiable.
        strict: raise when the result does not depend on an input (zeros otherwise).

    >>> import gradcore as gc
    >>> from gradcore.autograd.functional import vhp
    >>> vhp(lambda x: (x ** 3).sum(), gc.tensor([1., 2.]), gc.tensor([1., 1.]))
    (tensor(9.), tensor([ 6., 12.]))
    """
    with enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _scalar_function_grad(
            "vhp", func, inputs, v, create_graph, strict)
    with set_grad_enabled(True if create_graph else _mode.enabled):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    return _product(outputs, is_outputs_tuple, result, is_inputs_tuple, create_graph)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """The Hessian-vector product ``H v`` of the scalar function ``func`` at ``inputs``,
    with ``func(inputs)``: returns ``(func_output, hvp)``. Computed by the
    double-backward trick, as PyTorch's ``hvp`` is.

    Args:
        func: a function of the tensors ``inputs`` returning a tensor of one element.
        inputs: a tensor or a tuple of tensors.
        v: the vector, one tensor per input, of its shape; may be None when the input is
            a single element.
        create_graph: make the results differentiable.
        strict: raise when the result does not depend on an input (zeros otherwise).

    >>> import gradcore as gc
    >>> from gradcore.autograd.functional import hvp
    >>> hvp(lambda x: (x ** 3).sum(), gc.tensor([1., 2.]), gc.tensor([1., 1.]))
    (tensor(9.), tensor([ 6., 12.]))
    """
    with enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _scalar_function_grad(
            "hvp", func, inputs, v, create_graph, strict)
        grad_jac = tuple(zeros_like(inp).requires_grad_() for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with set_grad_enabled(True if create_graph else _mode.enabled):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    return _product(outputs, is_outputs_tuple, result, is_inputs_tuple, create_graph)
