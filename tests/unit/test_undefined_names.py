"""No module reads a name it never binds (pyflakes' UndefinedName), benchmarks included.

The benchmarks run only on a GPU, so a name a refactor left dangling there (session 13's
``routed_inputs`` stopped yielding the router logits the numerics check reads) surfaced only on the
device; this check finds such names on any machine.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from pyflakes import checker, messages

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*ROOT.glob("benchmarks/*.py"), *ROOT.glob("moe_oracle/**/*.py")])


def undefined_names(path: Path) -> list[str]:
    """``file:line: name`` for every name ``path`` reads without binding it."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = checker.Checker(tree, filename=str(path)).messages
    return [f"{path.relative_to(ROOT)}:{m.lineno}: {m.message_args[0]}" for m in found if isinstance(m, messages.UndefinedName)]


def test_the_sources_are_found():
    assert any(p.name == "runtime_bench.py" for p in SOURCES) and len(SOURCES) > 100


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_undefined_names(path):
    assert undefined_names(path) == []


def test_the_check_sees_a_dangling_name(tmp_path):
    # a negative control: the shape of the bug it was written for
    bad = tmp_path / "bench.py"
    bad.write_text("def routed():\n    yield 1\n\ndef bench():\n    for x in routed():\n        print(x, logits)\n", encoding="utf-8")
    tree = ast.parse(bad.read_text(encoding="utf-8"))
    names = [m.message_args[0] for m in checker.Checker(tree, filename=str(bad)).messages if isinstance(m, messages.UndefinedName)]
    assert names == ["logits"]
