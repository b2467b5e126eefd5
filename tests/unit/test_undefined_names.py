"""No module reads a name it never binds (pyflakes' UndefinedName), benchmarks included; no
module of the package writes an f-string without a placeholder (pyflakes'
FStringMissingPlaceholders: "f-string is missing placeholders"); and no module, benchmarks
included, imports a name it never uses or binds a local it never reads (pyflakes' UnusedImport,
UnusedVariable).

The benchmarks run only on a GPU, so a name a refactor left dangling there (session 13's
``routed_inputs`` stopped yielding the router logits the numerics check reads) surfaced only on the
device; this check finds such names on any machine. An ``f`` before a string with no ``{...}`` is
harmless at run time but usually means a value was meant to be interpolated and was not. An
unused import is an edit's leftover (it also costs start-up time and can hide a layer crossing);
pyflakes does not read ``# noqa``, so none is honoured here: a re-export is listed in ``__all__``,
and an import made only to learn whether a module imports is ``importlib.import_module``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from pyflakes import checker, messages

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*ROOT.glob("benchmarks/*.py"), *ROOT.glob("moe_oracle/**/*.py")])
PACKAGE = [p for p in SOURCES if p.is_relative_to(ROOT / "moe_oracle")]


def _messages(path: Path) -> list[messages.Message]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return checker.Checker(tree, filename=str(path)).messages


def undefined_names(path: Path) -> list[str]:
    """``file:line: name`` for every name ``path`` reads without binding it."""
    return [f"{path.relative_to(ROOT)}:{m.lineno}: {m.message_args[0]}" for m in _messages(path) if isinstance(m, messages.UndefinedName)]


def placeholderless_fstrings(path: Path) -> list[str]:
    """``file:line:col`` for every f-string in ``path`` that has no placeholder."""
    return [f"{path.relative_to(ROOT)}:{m.lineno}:{m.col + 1}" for m in _messages(path) if isinstance(m, messages.FStringMissingPlaceholders)]


def test_the_sources_are_found():
    assert any(p.name == "runtime_bench.py" for p in SOURCES) and len(SOURCES) > 100
    assert len(PACKAGE) > 100 and not any(p.name == "runtime_bench.py" for p in PACKAGE)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_undefined_names(path):
    assert undefined_names(path) == []


def test_the_check_sees_a_dangling_name(tmp_path):
    # a negative control: the shape of the bug it was written for
    bad = tmp_path / "bench.py"
    bad.write_text("def routed():\n    yield 1\n\ndef bench():\n    for x in routed():\n        print(x, logits)\n", encoding="utf-8")
    names = [m.message_args[0] for m in _messages(bad) if isinstance(m, messages.UndefinedName)]
    assert names == ["logits"]


@pytest.mark.parametrize("path", PACKAGE, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_fstring_without_placeholders(path):
    assert placeholderless_fstrings(path) == []


def test_the_check_sees_an_fstring_without_placeholders(tmp_path):
    # a negative control: the shape it was written for (an f-string in a concatenation whose
    # neighbour carries the placeholder), beside one that does interpolate and must pass
    bad = tmp_path / "mod.py"
    bad.write_text('def issue(n, guess):\n    return (f"line {n}", f"a bare name" + (f"; did you mean {guess!r}?" if guess else ""))\n', encoding="utf-8")
    found = [(m.lineno, m.col) for m in _messages(bad) if isinstance(m, messages.FStringMissingPlaceholders)]
    assert found == [(2, 25)]  # the second string only


def _unused(path: Path) -> list[messages.Message]:
    return [m for m in _messages(path) if isinstance(m, (messages.UnusedImport, messages.UnusedVariable))]


def unused_names(path: Path) -> list[str]:
    """``file:line: message`` for every import ``path`` never uses and every local it never reads."""
    return [f"{path.relative_to(ROOT)}:{m.lineno}: {m.message % m.message_args}" for m in _unused(path)]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_unused_imports_or_locals(path):
    assert unused_names(path) == []


def test_the_check_sees_unused_imports_and_locals(tmp_path):
    # a negative control: a module-level import and a function-level one left behind by an edit
    # (explain/matrix.py had both), a local bound and never read (benchmarks/sweep.py's ``sw``),
    # an import marked ``# noqa`` (not honoured); beside a re-export in __all__, an import read
    # in the body and a probe through importlib, which must pass
    bad = tmp_path / "mod.py"
    bad.write_text(
        "import importlib\n"
        "import os  # noqa: F401\n"
        "from typing import Any, Mapping\n"
        "from json import dumps as _dumps\n"
        "__all__ = ['Mapping', 'view']\n"
        "def view(x: Any) -> str:\n"
        "    from re import compile, escape\n"
        "    unused = escape(str(x))\n"
        "    importlib.import_module('json')\n"
        "    return _dumps(x)\n",
        encoding="utf-8",
    )
    found = sorted((m.lineno, type(m).__name__, m.message_args[0]) for m in _unused(bad))
    assert found == [(2, "UnusedImport", "os"), (7, "UnusedImport", "re.compile"), (8, "UnusedVariable", "unused")]
