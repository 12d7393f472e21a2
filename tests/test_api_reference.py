"""The API reference (docs/reference/, built by `make docs`): every public name has a
docstring and an entry on a reference page.

The pages list their names through docs/hooks/reference.py, which MkDocs runs as a hook;
these checks read the pages and that hook's rules without MkDocs. Where MkDocs is
installed (the `docs` extra), the last test builds the site as `make docs` does, with
warnings as errors, and checks that the built pages hold what the static checks say.
"""

import importlib.util
import inspect
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import gradcore as gc

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _load_hook():
    spec = importlib.util.spec_from_file_location("gradcore_docs_reference",
                                                  DOCS / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


ref = _load_hook()

# the namespaces that have a reference page, with their public names
MODULE_NAMESPACES = ["gradcore.nn", "gradcore.nn.functional", "gradcore.nn.init",
                     "gradcore.optim", "gradcore.optim.lr_scheduler", "gradcore.autograd",
                     "gradcore.autograd.functional", "gradcore.autograd.graph",
                     "gradcore.autograd.forward_ad", "gradcore.func",
                     "gradcore.utils.data", "gradcore.utils.checkpoint", "gradcore.amp",
                     "gradcore.jit", "gradcore.compiler", "gradcore.special", "gradcore.fft",
                     "gradcore.testing", "gradcore.distributions", "gradcore.nn.parameter",
                     "gradcore.utils.hooks", "gradcore.utils.benchmark", "gradcore.serialization",
                     "gradcore.version", "gradcore.cpu", "gradcore.mps", "gradcore.xpu",
                     "gradcore.profiler", "gradcore.library", "gradcore.signal.windows"]
NAMESPACES = ["gradcore", "gradcore.Tensor", *MODULE_NAMESPACES, "gradcore.cuda",
              "gradcore.accelerator"]


def public(namespace: str) -> list[str]:
    """The public names of a namespace, as full identifiers."""
    if namespace == "gradcore":
        names = [*ref.top_names(), "Tensor"]
    elif namespace == "gradcore.Tensor":
        names = ref.tensor_names()
    elif namespace == "gradcore.accelerator":
        names = [n for n in dir(ref.lookup(namespace)) if not n.startswith("_")]
    else:
        names = ref.public_names(ref.lookup(namespace))
    found = [f"{namespace}.{n}" for n in names]
    for identifier in list(found):  # a submodule without a page is documented on this one
        obj = ref.lookup(identifier)
        if inspect.ismodule(obj) and obj.__name__ not in ref.PAGES and \
                identifier.rsplit(".", 1)[1] not in ref.INTERNAL_MODULES:
            found += public(identifier)
    return found


def _documented() -> dict[str, str]:
    names = {}
    for page in ref.PAGES.values():
        names.update(ref.documented((DOCS / page).read_text()))
    return names


DOCUMENTED = _documented()  # name -> the id of its entry on the site


def test_each_reference_page_is_in_the_nav_and_names_its_namespace():
    config = (ROOT / "mkdocs.yml").read_text()
    nav = set(re.findall(r"^\s+- (?:[\w. ]+: )?(reference/[\w.]+\.md)$", config, re.M))
    for namespace, page in ref.PAGES.items():
        assert page in nav, f"{page} is not in mkdocs.yml's nav"
        text = (DOCS / page).read_text()
        assert f"<!-- api: {namespace} -->" in text, page
    assert "docs/hooks/reference.py" in config  # the hook that expands the markers


def test_the_implementation_modules_left_out_are_modules_of_gradcore_all():
    """A module of gradcore.__all__ is documented on a page of its own, or on the
    gradcore page with its names (a new ``gradcore.distributed``), unless it is one of
    INTERNAL_MODULES, whose names are the top level's: that list names no other."""
    for name in ref.INTERNAL_MODULES:
        assert name in gc.__all__ and inspect.ismodule(getattr(gc, name)), name


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_every_public_name_is_on_a_reference_page(namespace):
    missing = [name for name in public(namespace) if name not in DOCUMENTED]
    assert not missing, (f"not on any reference page: {missing} (docs/hooks/reference.py "
                         "lists a namespace's names on its page)")


# ------------------------------------------------------------------------- docstrings

def _docstring(identifier: str) -> str | None:
    """What the reference shows of a name: the docstring of a function, class, property
    or module; for a value (gc.float32, Tensor.grad_fn), its attribute docstring or, for
    an instance of a gradcore class, that class's."""
    owner_path, _, name = identifier.rpartition(".")
    owner = ref.lookup(owner_path)
    static = inspect.getattr_static(owner, name)
    if isinstance(static, (staticmethod, classmethod)):
        static = static.__func__
    if isinstance(static, property):
        return static.__doc__
    if inspect.isroutine(static) or inspect.isclass(static) or inspect.ismodule(static):
        return static.__doc__
    value = getattr(owner, name)
    if inspect.ismodule(owner) or inspect.isclass(owner):
        doc = ref.attribute_docstrings(owner).get(name)
        if doc:
            return doc
    if inspect.isroutine(value) or inspect.isclass(value):  # (bound from elsewhere)
        return value.__doc__
    if type(value).__module__.startswith("gradcore"):
        return type(value).__doc__
    return None


def _args_documented(doc: str) -> list[str]:
    """The parameter names a Google-style ``Args:`` section lists."""
    names = []
    for section in re.finditer(r"^( *)(?:Args|Arguments|Parameters):\n((?:\1 {4}.*\n|\s*\n)*)",
                               doc + "\n", re.M):
        indent = len(section.group(1)) + 4
        for line in section.group(2).splitlines():
            found = re.match(rf"^ {{{indent}}}(\*{{0,2}}\w+)(?: \([^)]*\))?:", line)
            if found:
                names.append(found.group(1).lstrip("*"))
    return names


def _parameters(obj) -> set[str] | None:
    try:
        return set(inspect.signature(obj).parameters)
    except (TypeError, ValueError):
        return None


def _problem(identifier: str) -> str | None:
    doc = _docstring(identifier)
    if not doc or not doc.strip():
        return "no docstring"
    obj = ref.lookup(identifier)
    params = _parameters(obj) if callable(obj) else None
    if params is not None and not any(p in params for p in ("args", "kwargs")):
        unknown = [a for a in _args_documented(inspect.cleandoc(doc)) if a not in params]
        if unknown:
            return f"Args: names {unknown}, which the signature {sorted(params)} lacks"
    return None


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_every_public_name_has_a_docstring(namespace):
    problems = {name: p for name in public(namespace) if (p := _problem(name))}
    assert not problems, "\n".join(f"{k}: {v}" for k, v in problems.items())


def _classes():
    """The classes documented by the reference (Tensor's members are checked above)."""
    seen = {}
    for namespace in NAMESPACES[:1] + MODULE_NAMESPACES:
        for identifier in public(namespace):
            obj = ref.lookup(identifier)
            if inspect.isclass(obj) and obj.__module__.startswith("gradcore") \
                    and obj is not gc.Tensor:
                seen.setdefault(obj, identifier)
    return sorted(seen.items(), key=lambda item: item[1])


def _member_problems(cls, identifier):
    listed = ref.MEMBERS.get(identifier)
    problems = []
    for name, value in vars(cls).items():
        if name.startswith("_") or (listed is not None and name not in listed):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            doc = value.__doc__
        elif isinstance(value, types.FunctionType):
            # an override documented where it is declared (Module.forward) is fine
            doc = inspect.getdoc(getattr(cls, name))
        else:
            continue  # plain attributes: the class's docstring tells of them
        if not doc or not doc.strip():
            problems.append(f"{identifier}.{name}")
    return problems


def test_the_methods_and_properties_of_the_classes_have_docstrings():
    problems = [p for cls, identifier in _classes() for p in _member_problems(cls, identifier)]
    assert not problems, f"members without a docstring: {problems}"


def test_args_sections_name_the_signatures_parameters():
    """The reading of ``Args:`` above (a documented argument that does not exist is
    what griffe warns about in the build)."""
    def f(a, b=1, *, c=None):
        """Sum.

        Args:
            a: one.
            b (int): two,
                on two lines.
            d: not a parameter.
        """
    assert _args_documented(inspect.cleandoc(f.__doc__)) == ["a", "b", "d"]


def test_the_home_pages_example_prints_what_it_says(capsys):
    text = (DOCS / "index.md").read_text()
    (block,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    exec(compile(block, "docs/index.md", "exec"), {})
    assert capsys.readouterr().out == "tensor([6.])\n"
    assert "# tensor([6.])" in block


# --------------------------------------------------------------------------- the build

def _mkdocs_plugins_missing():
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(module.split(".")[0]) is None or \
                importlib.util.find_spec(module) is None:
            return module
    return None


@pytest.mark.skipif(_mkdocs_plugins_missing() is not None,
                    reason="MkDocs and its plugins are not installed (pip install -e '.[docs]')")
def test_the_site_builds_strictly_and_holds_every_name(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get(
        "PYTHONPATH", "")]), NO_MKDOCS_2_WARNING="1")
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                            "--site-dir", str(tmp_path / "site")], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout + build.stderr
    html = "".join(p.read_text() for p in (tmp_path / "site" / "reference").rglob("*.html"))
    anchors = set(re.findall(r'id="([\w.]+)"', html))
    absent = sorted(name for name, anchor in DOCUMENTED.items() if anchor not in anchors)
    assert not absent, f"names the pages should document but the site lacks: {absent}"
