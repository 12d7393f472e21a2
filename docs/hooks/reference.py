"""The API reference's entries, made from the package itself (an MkDocs hook).

Each page under ``docs/reference/`` says which namespace it documents with one marker
line, ``<!-- api: gradcore.nn -->``; :func:`on_page_markdown` replaces the marker with
the namespace's public names, sorted into sections by the rules below, as mkdocstrings
directives (``::: gradcore.nn.Linear``, rendered from the docstrings) and as table rows
that carry an anchor (``[](){#gradcore.float32}``): for values (dtypes, ``Tensor.grad``),
for second names of one object (``gc.clip`` is ``gc.clamp``), and for the Tensor methods
documented under another name (``Tensor.add`` is ``gc.add``, ``Tensor.add_`` runs it in
place). A name added to a namespace's ``__all__`` (a new layer, op or scheduler) appears
without editing a page; a name no rule claims goes to a last "Other" section.

:func:`documented` tells tests/test_api_reference.py what the pages hold, without MkDocs:
this module imports gradcore and nothing of MkDocs (griffe only inside the hooks).
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import linecache
import posixpath
import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

MARKER = re.compile(r"^<!-- api: ([\w.]+) -->$", re.M)
DIRECTIVE_BLOCK = re.compile(r"^::: ([\w.]+)\n((?:    .*\n?)*)", re.M)
ANCHOR = re.compile(r"\[\]\(\)\{#([\w.]+)\}")

# The modules of gradcore.__all__ that are parts of the implementation (their public
# names are the top level's own), not namespaces users address: no page of their own.
INTERNAL_MODULES = {"backend", "capture", "creation", "dtypes", "io", "kernels",
                    "launch_count", "ops", "sampling"}

# The page of each namespace that has one (the marker on it says the same).
PAGES = {
    "gradcore": "reference/gradcore.md",
    "gradcore.Tensor": "reference/tensor.md",
    "gradcore.nn": "reference/nn.md",
    "gradcore.nn.functional": "reference/nn.functional.md",
    "gradcore.nn.init": "reference/nn.init.md",
    "gradcore.optim": "reference/optim.md",
    "gradcore.optim.lr_scheduler": "reference/optim.lr_scheduler.md",
    "gradcore.autograd": "reference/autograd.md",
    "gradcore.autograd.functional": "reference/autograd.functional.md",
    "gradcore.autograd.graph": "reference/autograd.graph.md",
    "gradcore.autograd.forward_ad": "reference/autograd.forward_ad.md",
    "gradcore.func": "reference/func.md",
    "gradcore.utils.data": "reference/utils.data.md",
    "gradcore.utils.checkpoint": "reference/utils.checkpoint.md",
    "gradcore.amp": "reference/amp.md",
    "gradcore.distributions": "reference/distributions.md",
    "gradcore.jit": "reference/jit.md",
    "gradcore.compiler": "reference/compiler.md",
    "gradcore.cuda": "reference/cuda.md",
    "gradcore.special": "reference/special.md",
    "gradcore.fft": "reference/fft.md",
    "gradcore.testing": "reference/testing.md",
    "gradcore.nn.parameter": "reference/nn.parameter.md",
    "gradcore.utils.hooks": "reference/utils.hooks.md",
    "gradcore.utils.benchmark": "reference/utils.benchmark.md",
    "gradcore.serialization": "reference/serialization.md",
    "gradcore.version": "reference/version.md",
    "gradcore.cpu": "reference/cpu.md",
    "gradcore.mps": "reference/cpu.md",
    "gradcore.xpu": "reference/cpu.md",
    "gradcore.profiler": "reference/profiler.md",
    "gradcore.library": "reference/library.md",
    "gradcore.signal.windows": "reference/signal.windows.md",
}


@dataclass
class Directive:
    """An object that mkdocstrings renders from its docstring, as ``ident``."""
    ident: str
    target: str = ""  # where griffe finds it, when not at ident
    members: list | None = None  # the members shown: None for all (documented, public)


@dataclass
class Section:
    title: str
    directives: list[Directive] = field(default_factory=list)
    rows: list = field(default_factory=list)  # (anchor identifier or None, label, text)


# --------------------------------------------------------------------------- helpers

def resolve(identifier: str):
    """The object a dotted path names, read as griffe reads it: the longest prefix that is
    a module, then attributes (``gradcore.profile.profile`` is the class in the module
    gradcore/profile.py, which the class ``gradcore.profile`` hides as an attribute)."""
    parts = identifier.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
            break
        except ImportError:
            continue
    for part in parts[cut:]:
        obj = getattr(obj, part)
    return obj


def lookup(identifier: str):
    """The object a user's dotted name reaches: attributes from the top package down
    (``gradcore.profile`` is the class), a submodule where no attribute has the name."""
    parts = identifier.split(".")
    obj = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], 1):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            obj = importlib.import_module(".".join(parts[:i + 1]))
    return obj


def public_names(module) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    return list(names)


ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj|const):`~?\.?([^`]+)`")


def summary(doc: str | None) -> str:
    """A docstring's first paragraph on one line, for a table cell (reST roles as code,
    as docs/hooks/markup.py writes them in the entries)."""
    if not doc:
        return ""
    first = ROLE.sub(r"``\1``", inspect.cleandoc(doc).split("\n\n")[0])
    return " ".join(first.split()).replace("|", "\\|")


def _defined(obj) -> bool:
    """A function or class (documented by mkdocstrings), not a value."""
    return inspect.isroutine(obj) or inspect.isclass(obj)


@functools.cache
def attribute_docstrings(owner) -> dict[str, str]:
    """The attribute docstrings (a string literal right after ``name = ...``) of a module
    or class, read from its source: Python keeps none at run time."""
    try:
        if inspect.ismodule(owner):
            body = ast.parse(inspect.getsource(owner)).body
        else:
            file = _class_file(owner)
            first, last = _spans(file)[0][owner.__qualname__]
            source = "".join(linecache.getlines(file)[first - 1:last])
            body = ast.parse(_dedent(source)).body[0].body
    except (OSError, TypeError, KeyError, SyntaxError):
        return {}
    found = {}
    for stmt, nxt in zip(body, body[1:]):
        if (isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    found[target.id] = inspect.cleandoc(nxt.value.value)
    return found


def _class_file(cls) -> str:
    """The file that defines a class: its module's, or, for a class defined in one module
    under another's name (Tensor), the file of a function of its body."""
    for value in vars(cls).values():
        code = getattr(value, "__code__", None)
        if code is not None and value.__qualname__.startswith(cls.__qualname__ + "."):
            return code.co_filename
    return inspect.getsourcefile(cls)


def _dedent(source: str) -> str:
    lines = source.splitlines()
    indent = len(lines[0]) - len(lines[0].lstrip())
    return "\n".join(line[indent:] for line in lines)


def value_doc(name: str, obj, owner=None) -> str:
    """What a table row says of a value: its attribute docstring where it has one (in
    ``owner``, else in the module that defines its type), else its type's summary."""
    for where in (owner, sys.modules.get(type(obj).__module__)):
        if where is not None:
            doc = attribute_docstrings(where).get(name)
            if doc:
                return summary(doc)
    import gradcore  # noqa: PLC0415

    if isinstance(obj, gradcore.DType):
        kind = ("floating point" if obj.is_floating_point else
                "boolean" if obj.name == "bool" else
                "unsigned integer" if obj.name.startswith("u") else "signed integer")
        return f"{obj.itemsize * 8}-bit {kind} (NumPy's `{obj.np}`), a `gradcore.DType`"
    return summary(type(obj).__doc__)


def _sectioned(order: list[str], claims: dict[str, Section]) -> list[Section]:
    known = [claims[t] for t in order if t in claims]
    return known + [s for t, s in claims.items() if t not in order]


def _section(claims: dict[str, Section], title: str) -> Section:
    return claims.setdefault(title, Section(title))


def _document(namespace: str, names, classify, order, module=None) -> list[Section]:
    """Directives for functions and classes (one per object: a second name of the same
    object is a row saying whose alias it is), rows for values, in classify's sections.
    A submodule with no page of its own (a new ``gradcore.nn.utils``) gets its names
    documented here, in a last section of its own."""
    module = module or lookup(namespace)
    claims: dict[str, Section] = {}
    nested: list[Section] = []
    primary: dict[int, str] = {}
    objs = {n: getattr(module, n) for n in names}
    for name, obj in objs.items():  # the name an object calls itself is its primary one
        if _defined(obj) and getattr(obj, "__name__", None) == name:
            primary.setdefault(id(obj), name)
    for name, obj in objs.items():
        section = _section(claims, classify(name, obj))
        ident = f"{namespace}.{name}"
        if inspect.ismodule(obj):
            page = PAGES.get(obj.__name__)
            if page:
                section.rows.append((ident, f"`{ident}`", f"[the module's page]({_rel(page)})"))
            else:
                section.rows.append((ident, f"`{ident}`", f"[below](#{_slug(ident)}): "
                                     + summary(obj.__doc__)))
                nested += _document(ident, public_names(obj), _one_section(ident), [])
        elif _defined(obj):
            first = primary.setdefault(id(obj), name)
            if first == name:
                section.directives.append(Directive(ident, _target(ident, obj),
                                                    MEMBERS.get(ident)))
            else:
                section.rows.append((ident, f"`{ident}`",
                                     f"alias of [`{namespace}.{first}`][{namespace}.{first}]"))
        else:
            section.rows.append((ident, f"`{ident}`", value_doc(name, obj, module)))
    return _sectioned(order, claims) + nested


def _slug(title: str) -> str:
    """The anchor of a section heading (mkdocs.yml's slugify: GitHub's)."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def _target(ident: str, obj) -> str:
    """Where griffe finds ``obj``, documented as ``ident``: ``ident`` itself, unless a
    submodule has its name (gradcore.tensor, the function, and gradcore/tensor.py); then
    the object's own path."""
    package, _, name = ident.rpartition(".")
    if not inspect.ismodule(obj) and getattr(lookup(package), "__path__", None):
        if importlib.util.find_spec(ident) is not None:
            return f"{obj.__module__}.{obj.__qualname__}"
    return ident


# The members shown of classes whose other public members are the engine's
MEMBERS = {"gradcore.autograd.Node": ["name"], "gradcore.autograd.graph.Node": ["name"]}


def _rel(page: str) -> str:
    """The link from one reference page to another (all in docs/reference/)."""
    return page.split("/", 1)[1]


def _first_match(rules, name, default):
    for title, pattern in rules:
        if re.search(pattern, name):
            return title
    return default


# ---------------------------------------------------------------- gradcore (top level)

TOP_BY_MODULE = {
    "gradcore.tensor": "Tensors",
    "gradcore._size": "Tensors",
    "gradcore.creation": "Creating tensors",
    "gradcore.random": "Random numbers",
    "gradcore.sampling": "Random numbers",
    "gradcore.dtypes": "Data types",
    "gradcore.backend": "Devices",
    "gradcore.autograd.grad_mode": "Gradient modes",
    "gradcore.io": "Saving and loading",
    "gradcore.capture": "Compiling, mixed precision and profiling",
    "gradcore.amp": "Compiling, mixed precision and profiling",
    "gradcore.profile": "Compiling, mixed precision and profiling",
    "gradcore.ops.pointwise": "Pointwise operations",
    "gradcore.ops.reduce": "Reductions, sorting and counting",
    "gradcore.ops.shape": "Shapes: views, joining and splitting",
    "gradcore.ops.index": "Indexing, gathering and scattering",
    "gradcore.ops.linalg": "Matrix products and linear algebra",
    "gradcore.ops.activation": "Activations and normalization",
    "gradcore.ops.extra": "Products, integration, differences and scatters into copies",
    "gradcore._settings": "Process-wide settings",
    "gradcore._functional": "Dropout, losses, normalizations and in-place functions",
    "gradcore.ops.copies": "Shapes: views, joining and splitting",
    "gradcore.nn.functional": "Also in gradcore.nn.functional",
    "gradcore.func": "Function transforms",
}
# names the module rule would put elsewhere (those defined in gradcore/__init__.py)
TOP_BY_NAME = {
    "inference_mode": "Gradient modes", "is_inference_mode_enabled": "Gradient modes",
    "promote_types": "Data types", "result_type": "Data types", "bfloat16": "Data types",
    "is_tensor": "Tensors", "numel": "Tensors", "clone": "Tensors", "detach": "Tensors",
    "memory_format": "Tensors", "contiguous_format": "Tensors", "preserve_format": "Tensors",
    "default_generator": "Random numbers",
    "cuda": "Devices", "accelerator": "Devices", "backends": "Devices",
    "dtype": "Data types", "layout": "Tensors", "strided": "Tensors",
    "empty_strided": "Creating tensors", "is_floating_point": "Tensors",
    "get_device": "Tensors",
    "channels_last": "Tensors", "channels_last_3d": "Tensors",
    "legacy_contiguous_format": "Tensors", "is_storage": "Tensors",
    "set_default_tensor_type": "Data types",
    "pi": "Constants", "e": "Constants", "inf": "Constants", "nan": "Constants",
    "newaxis": "Constants",
}
TOP_ORDER = ["Tensors", "Creating tensors", "Data types", "Devices", "Random numbers",
             "Gradient modes", "Function transforms", "Saving and loading",
             "Compiling, mixed precision and profiling",
             "Pointwise operations", "Reductions, sorting and counting",
             "Shapes: views, joining and splitting", "Indexing, gathering and scattering",
             "Matrix products and linear algebra",
             "Products, integration, differences and scatters into copies",
             "Activations and normalization", "Also in gradcore.nn.functional",
             "Dropout, losses, normalizations and in-place functions",
             "Process-wide settings", "Constants", "Namespaces"]


def _top(name, obj):
    import gradcore  # noqa: PLC0415

    if name in TOP_BY_NAME:
        return TOP_BY_NAME[name]
    if inspect.ismodule(obj):
        return "Namespaces"
    if isinstance(obj, gradcore.DType):
        return "Data types"
    module = getattr(obj, "__module__", None) if _defined(obj) else None
    if module in TOP_BY_MODULE:
        return TOP_BY_MODULE[module]
    if module and module.startswith("gradcore.ops."):
        return "Operations: " + module.rsplit(".", 1)[1]
    return "Other"


def top_names() -> list[str]:
    """gradcore's public names the gradcore page documents: ``__all__`` less the modules
    of the implementation and ``Tensor`` (a page of its own)."""
    import gradcore  # noqa: PLC0415

    return [n for n in gradcore.__all__ if n not in INTERNAL_MODULES and n != "Tensor"]


def _gradcore() -> list[Section]:
    import gradcore  # noqa: PLC0415

    sections = _document("gradcore", top_names(), _top, TOP_ORDER)
    for section in sections:
        if section.title == "Tensors":
            section.rows.insert(0, (None, "`gradcore.Tensor`",
                                    "[the class's page](tensor.md): "
                                    + summary(gradcore.Tensor.__doc__)))
        # gc.cuda, gc.accelerator and gc.backends are documented (and anchored) on the
        # cuda page: here a link
        section.rows = [(None, label, f"[on the page of `gradcore.cuda`](cuda.md): {text}")
                        if i in CUDA_PAGE else (i, label, text) for i, label, text in section.rows]
    return sections


# ----------------------------------------------------------------------- gradcore.Tensor

CUDA_PAGE = ("gradcore.cuda", "gradcore.accelerator", "gradcore.backends")

INPLACE = re.compile(r"^In-place :func:`(\w+)`\.$")  # the in-place variants' docstring
TENSOR_AUTOGRAD = {"backward", "retain_grad", "register_hook", "requires_grad_", "detach",
                   "detach_"}
TENSOR_ORDER = ["Attributes", "Autograd", "Conversion, copies, devices and dtypes",
                "Random fills", "In-place operations", "Other methods",
                "Operations (the functions of gradcore as methods)"]


METHOD_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType,
                types.WrapperDescriptorType, staticmethod, classmethod)


def tensor_names() -> list[str]:
    import gradcore  # noqa: PLC0415

    return [n for n in dir(gradcore.Tensor) if not n.startswith("_")]


def _tensor() -> list[Section]:
    import gradcore  # noqa: PLC0415

    cls = gradcore.Tensor
    claims: dict[str, Section] = {}
    attribute_docs = attribute_docstrings(cls)
    for name in tensor_names():
        ident = f"gradcore.Tensor.{name}"
        static = inspect.getattr_static(cls, name)
        method = getattr(cls, name)
        if isinstance(static, property):
            _section(claims, "Attributes").directives.append(Directive(ident))
        elif not isinstance(static, METHOD_TYPES):  # grad, grad_fn: attributes
            _section(claims, "Attributes").rows.append(
                (ident, f"`Tensor.{name}`", summary(attribute_docs.get(name, ""))))
        elif name in TENSOR_AUTOGRAD:
            _section(claims, "Autograd").directives.append(Directive(ident))
        elif _same_as_top(name, method):
            _section(claims, "Operations (the functions of gradcore as methods)").rows.append(
                (ident, f"`Tensor.{name}`",
                 f"[`gradcore.{name}`][gradcore.{name}]: {summary(method.__doc__)}"))
        elif (inplace := INPLACE.match(method.__doc__ or "")) is not None:
            # add_ runs add: documented where add is
            base = inplace.group(1)
            where = f"gradcore.{base}" if base in gradcore.__all__ else f"gradcore.Tensor.{base}"
            _section(claims, "In-place operations").rows.append(
                (ident, f"`Tensor.{name}`", f"[`{where}`][{where}] in place"))
        else:
            module = getattr(method, "__module__", "") or ""
            if module == "gradcore.sampling":
                title = "Random fills"
            elif name.endswith("_"):
                title = "In-place operations"
            elif module.startswith("gradcore.ops.") and module != "gradcore.ops._core":
                title = "Other methods"
            else:
                title = "Conversion, copies, devices and dtypes"
            _section(claims, title).directives.append(Directive(ident))
    return _sectioned(TENSOR_ORDER, claims)


def _same_as_top(name: str, method) -> bool:
    """``Tensor.<name>`` is the function ``gradcore.<name>`` (perhaps wrapped by its
    argument check): documented once, on the gradcore page."""
    import gradcore  # noqa: PLC0415

    top = getattr(gradcore, name, None)
    return top is not None and name in gradcore.__all__ and inspect.unwrap(top) is method


# ---------------------------------------------------------------------------- gradcore.nn

# (section, pattern on the class name): the first that matches claims it; a class no
# rule claims is an activation when nn.functional has its function (ReLU: relu)
NN_RULES = [
    ("Base classes", r"^(Module|Parameter|Buffer)$"),
    ("Containers", r"^(Sequential|ModuleList|ModuleDict|ParameterList|ParameterDict)$"),
    ("Linear and embedding layers",
     r"^(Identity|Linear|Bilinear|LazyLinear|Embedding|EmbeddingBag)$"),
    ("Convolution", r"^(Conv|LazyConv)|^(Fold|Unfold)$"),
    ("Pooling", r"Pool"),
    ("Normalization", r"Norm"),
    ("Recurrent layers", r"^(RNN|LSTM|GRU)"),
    ("Attention and transformers", r"Attention|Transformer"),
    ("Dropout", r"Dropout"),
    ("Losses", r"Loss$"),
    ("Distances", r"Distance$|Similarity$"),
    ("Shapes, padding and resampling",
     r"^(Flatten|Unflatten|Upsample|PixelShuffle|PixelUnshuffle|ChannelShuffle)|Pad\dd$"),
    ("Hooks", r"Handle$"),
    ("Data parallelism", r"Parallel$"),
]
NN_ORDER = ["Base classes", "Containers", "Linear and embedding layers", "Activations",
            "Convolution", "Pooling", "Normalization", "Recurrent layers",
            "Attention and transformers", "Dropout", "Shapes, padding and resampling",
            "Losses", "Distances", "Data parallelism", "Hooks", "Other layers", "Namespaces"]


def _squash(name: str) -> str:
    return name.rstrip("_").replace("_", "").lower()


def _nn_section(name, obj):
    import gradcore.nn.functional as F  # noqa: PLC0415

    if inspect.ismodule(obj):
        return "Namespaces"
    title = _first_match(NN_RULES, name, None)
    if title:
        return title
    if _squash(name) in {_squash(f) for f in F.__all__}:
        return "Activations"
    return "Other layers"


F_RULES = [
    ("Linear and embedding", r"^(linear|bilinear|embedding|embedding_bag|one_hot)$"),
    ("Convolution", r"^conv|^(fold|unfold)$"),
    ("Pooling", r"pool"),
    ("Normalization", r"norm"),
    ("Dropout", r"dropout"),
    ("Attention", r"attention"),
    ("Losses", r"loss$|^(cross_entropy|kl_div|binary_cross_entropy\w*)$"),
    ("Distances", r"distance$|similarity$"),
    ("Padding and resampling",
     r"^(pad|interpolate|upsample\w*|grid_sample|affine_grid|pixel_(un)?shuffle)$"),
]
F_ORDER = ["Linear and embedding", "Activations", "Convolution", "Pooling", "Normalization",
           "Dropout", "Attention", "Padding and resampling", "Losses", "Distances", "Other"]


def _f_section(name, obj):
    import gradcore.nn as nn  # noqa: PLC0415

    title = _first_match(F_RULES, name, None)
    if title:
        return title
    activations = {_squash(n) for n in nn.__all__
                   if _nn_section(n, getattr(nn, n)) == "Activations"}
    return "Activations" if _squash(name) in activations else "Other"


# ------------------------------------------------------------------------- the others

def _one_section(title):
    return lambda name, obj: title


def _base_first(namespace):
    """'Base classes' for the classes that two or more of the namespace's other classes
    derive from (Optimizer, LRScheduler, Dataset, Sampler)."""
    module = lookup(namespace)
    classes = [getattr(module, n) for n in public_names(module)]
    classes = [c for c in classes if inspect.isclass(c)]

    def classify(name, obj):
        if inspect.ismodule(obj):
            return "Namespaces"
        if inspect.isclass(obj) and sum(c is not obj and issubclass(c, obj) for c in classes) > 1:
            return "Base classes"
        return None
    return classify


def _with_base(namespace, rules, default):
    base = _base_first(namespace)

    def classify(name, obj):
        return base(name, obj) or _first_match(rules, name, default)
    return classify


AUTOGRAD_RULES = [
    ("Custom functions", r"Function"),
    ("Gradient modes", r"grad_enabled|no_grad|enable_grad"),
    ("Checking gradients", r"check|Gradcheck|anomaly"),
    ("The graph", r"^Node$"),
]
DATA_RULES = [
    ("Datasets", r"Dataset$|^Subset$|^random_split$"),
    ("Samplers", r"Sampler$"),
]


def sections(namespace: str) -> list[Section]:
    """The sections of the page that documents ``namespace``."""
    if namespace == "gradcore":
        return _gradcore()
    if namespace == "gradcore.Tensor":
        return _tensor()
    module = lookup(namespace)
    names = public_names(module)
    if namespace == "gradcore.nn":
        return _document(namespace, names, _nn_section, NN_ORDER)
    if namespace == "gradcore.nn.functional":
        return _document(namespace, names, _f_section, F_ORDER)
    if namespace == "gradcore.nn.init":
        return _document(namespace, names, _one_section("Initializers"), [])
    if namespace in ("gradcore.optim", "gradcore.optim.lr_scheduler"):
        title = "Optimizers" if namespace == "gradcore.optim" else "Schedulers"
        return _document(namespace, names, _with_base(namespace, [], title),
                         ["Base classes", title, "Namespaces"])
    if namespace == "gradcore.autograd":
        return _document(namespace, names, _with_base(namespace, AUTOGRAD_RULES, "Gradients"),
                         ["Gradients", "Gradient modes", "Custom functions",
                          "Checking gradients", "The graph"])
    if namespace == "gradcore.utils.data":
        return _document(namespace, names, _with_base(namespace, DATA_RULES, "Loading"),
                         ["Loading", "Base classes", "Datasets", "Samplers"])
    return _document(namespace, names, _one_section("Contents"), [])


# ------------------------------------------------------------------------------ rendering

def render(namespace: str) -> str:
    """The Markdown that replaces a page's marker."""
    out = []
    for section in sections(namespace):
        out += [f"## {section.title}", ""]
        for d in section.directives:
            options = []
            if d.target and d.target != d.ident:  # (an anchor for the name shown)
                out += [f"[](){{#{d.ident}}}", ""]
                options += [f"heading: {d.ident}", f"toc_label: {d.ident}"]
            if d.members is not None:
                options.append(f"members: [{', '.join(d.members)}]")
            out.append(f"::: {d.target or d.ident}")
            if options:
                out += ["    options:"] + [f"      {o}" for o in options]
            out.append("")
        if section.rows:
            out += ["| name | |", "| --- | --- |"]
            out += [f"| {f'[](){{#{ident}}}' if ident else ''}{label} | {text} |"
                    for ident, label, text in section.rows]
            out.append("")
    return "\n".join(out)


def expand(markdown: str) -> str:
    return MARKER.sub(lambda m: render(m.group(1)), markdown)


def documented_members(cls) -> list[str]:
    """The members mkdocstrings shows of a class (mkdocs.yml's options): the public ones
    defined in the class itself that have a docstring."""
    shown = []
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        doc = value.fget.__doc__ if isinstance(value, property) else (
            value.__doc__ if inspect.isroutine(value) or inspect.isclass(value) else None)
        if doc and doc.strip():
            shown.append(name)
    return shown


def _option(options: str, key: str) -> str | None:
    found = re.search(rf"^\s+{key}: (.*)$", options, re.M)
    return found.group(1).strip() if found else None


def documented(markdown: str) -> dict[str, str]:
    """The names a page documents, its marker expanded, each with the anchor (the HTML
    id) of its entry in the built page: each directive's object (shown under its
    ``heading`` where it has one) with its class's members shown, and each anchored row.
    """
    text = expand(markdown)
    names = {anchor: anchor for anchor in ANCHOR.findall(text)}
    for found in DIRECTIVE_BLOCK.finditer(text):
        target, options = found.group(1), found.group(2)
        shown = _option(options, "heading") or target
        names.setdefault(shown, target)
        members = _option(options, "members")
        obj = resolve(target)
        if inspect.isclass(obj) and members != "false":
            listed = None if members is None else [m.strip() for m in
                                                   members.strip("[]").split(",")]
            names.update((f"{shown}.{m}", f"{target}.{m}") for m in documented_members(obj)
                         if listed is None or m in listed)
    return names


# Links from the users' pages to files outside docs/ (development records in dev/): the
# site has no such pages, so they become the file's path in the repository.
RELATIVE_LINK = re.compile(r"\[([^\]]+)\]\(((?:\.\./)+[^)#\s]*)(#[^)\s]*)?\)")


def outside_links_as_paths(markdown: str, page_path: str) -> str:
    """``[text](../dev/x.md)`` on the page at ``page_path`` (relative to docs/) becomes
    ``text (`dev/x.md` in the repository)`` when the link leaves docs/."""
    def replace(match):
        text, link = match.group(1), match.group(2)
        target = posixpath.normpath(posixpath.join("docs", posixpath.dirname(page_path), link))
        if target.startswith("docs/"):
            return match.group(0)
        if text.strip("`").rstrip("/") == target:  # the link shows the path already
            return text
        return f"{text} (`{target}` in the repository)"
    return RELATIVE_LINK.sub(replace, markdown)


# ------------------------------------------------------------------------- MkDocs hooks

def on_config(config, **kwargs):
    _teach_griffe_gradcore_modules()
    _find_lines_once_per_file()
    return config


def on_page_markdown(markdown, page=None, config=None, files=None, **kwargs):
    return outside_links_as_paths(expand(markdown), page.file.src_uri)


def _teach_griffe_gradcore_modules():
    """Two things griffe (mkdocstrings' reader of the package) would get wrong.

    It takes ``a._b`` and ``a.b`` for one module (a private module re-exported under its
    public name): gradcore.random and gradcore._random are two, and inspecting the first
    would merge the second into it, so paths under gradcore are compared as they are.
    And it documents a function found in a namespace but defined in another module as an
    alias of the function's defining module and qualified name: gradcore binds functions
    onto classes (Tensor's methods come from the ops' modules, and Tensor itself is
    defined in gradcore.autograd.tensor_base as ``gradcore.tensor.Tensor``) and makes
    functions with factories (``<locals>`` in their names: the in-place methods, the
    ``*_like`` creators), which such an alias cannot reach or reaches in a circle. A
    class's members and factory-made functions are documented where they are found.
    """
    from griffe._internal.agents.nodes import runtime  # noqa: PLC0415

    if getattr(runtime, "_gradcore_taught", False):
        return
    runtime._gradcore_taught = True
    same = runtime._same_components

    def exact_for_gradcore(a: str, b: str) -> bool:
        if a.split(".")[0] == "gradcore" or b.split(".")[0] == "gradcore":
            return a == b
        return same(a, b)

    runtime._same_components = exact_for_gradcore
    target_of = runtime.ObjectNode.__dict__["alias_target_path"].func

    def alias_target_path(node):
        path = target_of(node)
        if path and ("<locals>" in path or (node.parent is not None and node.parent.is_class)):
            return None
        return path

    patched = functools.cached_property(alias_target_path)
    patched.__set_name__(runtime.ObjectNode, "alias_target_path")
    runtime.ObjectNode.alias_target_path = patched


def _find_lines_once_per_file():
    """griffe asks ``inspect.getsourcelines`` where each class and function is, which
    tokenizes the code again at every call (and, before Python 3.13, parses and walks a
    class's whole file): most of the build's time. This answers from one parse of each
    file."""
    from griffe._internal.agents import inspector  # noqa: PLC0415

    slow = inspector.getsourcelines
    if getattr(slow, "gradcore", False):
        return
    spans: dict[str, tuple[dict, dict]] = {}

    def getsourcelines(obj):
        code = getattr(inspect.unwrap(obj), "__code__", None) if inspect.isroutine(obj) \
            else None
        file = code.co_filename if code is not None else None
        if file is None and inspect.isclass(obj):
            try:
                file = inspect.getsourcefile(obj)
            except TypeError:
                file = None
        if file and Path(file).is_file():
            if file not in spans:
                spans[file] = _spans(file)
            classes, functions = spans[file]
            span = (functions.get(code.co_firstlineno) if code is not None
                    else classes.get(obj.__qualname__))
            if span:
                return linecache.getlines(file)[span[0] - 1:span[1]], span[0]
        return slow(obj)

    getsourcelines.gradcore = True
    inspector.getsourcelines = getsourcelines


def _spans(file: str) -> tuple[dict, dict]:
    """The (first, last) lines of a file's classes, by qualified name, and of its
    functions, by first line (a decorator's, as ``co_firstlineno``)."""
    classes, functions = {}, {}

    def walk(body, prefix):
        for node in body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                if isinstance(node, ast.ClassDef):
                    classes.setdefault(prefix + node.name, (first, node.end_lineno))
                    walk(node.body, f"{prefix}{node.name}.")
                else:
                    functions[first] = (first, node.end_lineno)
                    walk(node.body, f"{prefix}{node.name}.<locals>.")

    try:
        walk(ast.parse(Path(file).read_text()).body, "")
    except (OSError, SyntaxError, ValueError):
        pass
    return classes, functions
