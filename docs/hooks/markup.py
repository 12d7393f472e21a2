"""A griffe extension: gradcore's docstrings, written for ``help()`` and doctest, as
Markdown for the reference pages.

Four things differ: doctest examples (``>>>`` lines, which Markdown would read as
quotes) become ``pycon`` code blocks; reST roles (``:class:`Tensor```) become code; a
paragraph ending in ``::`` introduces an indented literal block, which becomes a code
block; a default that is a private marker object (``low=<object object at 0x7f...>``)
shows as ``...``. Everything else in the docstrings (``code``, lists, ``Args:`` sections) is
Markdown or Google style already. Loaded by mkdocstrings (mkdocs.yml's
``extensions``), only when the site is built.
"""

from __future__ import annotations

import re

import griffe

MARKER_OBJECT = re.compile(r"^<object object at 0x[0-9a-f]+>$")
ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj|const):`~?\.?([^`]+)`")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def to_markdown(text: str) -> str:
    text = ROLE.sub(lambda m: f"``{m.group(1)}``", text)
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith(">>>"):  # a doctest block: up to the next blank line
            pad = line[:_indent(line)]
            out += ["", pad + "```pycon"]
            while i < len(lines) and lines[i].strip():
                out.append(lines[i])
                i += 1
            out += [pad + "```", ""]
            continue
        if line.rstrip().endswith("::") and line.strip() != "::":
            out.append(line.rstrip()[:-1])  # "as follows::" reads "as follows:"
            i += 1
            block = []
            while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > _indent(line)):
                block.append(lines[i])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            body = [b for b in block if b.strip()]
            if body:
                cut = min(_indent(b) for b in body)
                pad = line[:_indent(line)]
                out += ["", pad + "```"] + [pad + b[cut:] for b in block if b.strip() or b]
                out += [pad + "```", ""]
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


class DocstringMarkup(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = to_markdown(obj.docstring.value)

    def on_function_instance(self, *, func: griffe.Function, **kwargs) -> None:
        for parameter in func.parameters:
            if parameter.default is not None and MARKER_OBJECT.match(str(parameter.default)):
                parameter.default = "..."
