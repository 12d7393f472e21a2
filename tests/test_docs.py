"""The examples in docstrings and in README.md run and print what they say."""

import doctest
import importlib
import pathlib
import pkgutil
import re

import pytest

import gradcore

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODULES = sorted(m.name for m in pkgutil.walk_packages(gradcore.__path__, "gradcore.")
                 if not m.name.endswith("__main__"))  # importing it runs the command


@pytest.mark.parametrize("name", ["gradcore"] + MODULES)
def test_docstring_examples(name):
    if name == "gradcore.utils.tensorboard":
        pytest.importorskip("tensorboard", reason="SummaryWriter needs the tensorboard package")
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_readme_quick_start_runs(capsys):
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "README.md has no python example"
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "tensor([[ 6., 15., 24., 33.]," in out
    assert "tensor([6.])" in out


def test_guide_examples_run_in_order(capsys):
    """docs/guide.md: its python blocks form one session and run as written."""
    text = (ROOT / "docs" / "guide.md").read_text()
    namespace = {}
    for block in re.findall(r"```python\n(.*?)```", text, flags=re.S):
        exec(compile(block, "docs/guide.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "Sequential(" in out and "300 True" in out
    assert "\n18\n" in out  # the compiled step: two recordings, then replays
    assert "gradcore.Size([16, 4]) 0.0" in out  # the distributions example


def test_compile_page_example_runs(capsys):
    """docs/compile.md: its example runs and replays as it says."""
    text = (ROOT / "docs" / "compile.md").read_text()
    namespace = {}
    for block in re.findall(r"```python\n(.*?)```", text, flags=re.S):
        exec(compile(block, "docs/compile.md", "exec"), namespace)
    assert capsys.readouterr().out.splitlines()[-1] == "8"
