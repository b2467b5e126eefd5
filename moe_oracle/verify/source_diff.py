"""Per-function diff of two vLLM source trees (static: ``ast``, nothing is imported).

For the modules that decide MoE selection — the fused-MoE package (``P/``), the quantization
package (``Q/``), the config package, the platforms and a few utilities (:data:`SCOPES`) — lists
the files added and removed between two release trees and, inside files present in both, every
function or method (qualified: ``Class.method``, ``outer.<locals>.inner``) whose body changed,
appeared or disappeared. A module's top-level statements other than definitions (assignments,
enum members of a class body, imports) form one pseudo-function ``<module>`` per file and
``Class.<body>`` per class, so a changed literal list or a new enum member shows up too.

"Changed" compares ``ast.dump`` of the definition without positions, so reformatting,
comments and line moves are not changes; docstrings are left out of the comparison.

    python -m moe_oracle.verify.source_diff OLD_TREE NEW_TREE [--json]

(``OLD_TREE`` / ``NEW_TREE``: directories that contain ``vllm/``, e.g. ``$MOE_ORACLE_VLLM_ENV/src/0.33.0``.)
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

from ..inputs.paths import user_path  # a path flag expands a leading ~ as every moe-oracle path does

__all__ = ["SCOPES", "FunctionChange", "TreeDiff", "diff_trees", "functions_of", "main"]

SCOPES: tuple[str, ...] = (
    "vllm/model_executor/layers/fused_moe/",
    "vllm/model_executor/layers/quantization/",
    "vllm/config/",
    "vllm/platforms/",
    "vllm/envs.py",
    "vllm/utils/flashinfer.py",
    "vllm/utils/import_utils.py",
    "vllm/utils/deep_gemm.py",
    "vllm/utils/b12x.py",
    "vllm/distributed/eplb/",
)
"""Path prefixes (relative to a tree) of the selection, quantization, config and platform modules."""


@dataclass(frozen=True)
class FunctionChange:
    """One function whose definition differs between the trees.

    Attributes:
        path: the file, relative to the tree (``vllm/...py``).
        name: qualified name (``Class.method``; ``<module>`` / ``Class.<body>`` for the
            non-definition statements).
        kind: ``changed`` | ``added`` | ``removed``.
        old_lines, new_lines: ``(first, last)`` line numbers in each tree (``None`` when absent).
    """

    path: str
    name: str
    kind: str
    old_lines: tuple[int, int] | None
    new_lines: tuple[int, int] | None

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "name": self.name, "kind": self.kind, "old_lines": self.old_lines, "new_lines": self.new_lines}


@dataclass
class TreeDiff:
    """What changed between two trees inside :data:`SCOPES`."""

    old: str
    new: str
    added_files: list[str] = field(default_factory=list)
    removed_files: list[str] = field(default_factory=list)
    functions: list[FunctionChange] = field(default_factory=list)
    unparsable: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "old": self.old,
            "new": self.new,
            "added_files": self.added_files,
            "removed_files": self.removed_files,
            "functions": [f.to_dict() for f in self.functions],
            "unparsable": self.unparsable,
        }

    def by_file(self) -> dict[str, list[FunctionChange]]:
        out: dict[str, list[FunctionChange]] = {}
        for f in self.functions:
            out.setdefault(f.path, []).append(f)
        return out

    def render(self) -> str:
        lines = [f"vLLM source diff {self.old} -> {self.new}: {len(self.functions)} functions changed/added/removed in {len(self.by_file())} files; "
                 f"{len(self.added_files)} files added, {len(self.removed_files)} removed"]
        for p in self.added_files:
            lines.append(f"  + {p}")
        for p in self.removed_files:
            lines.append(f"  - {p}")
        for path, changes in sorted(self.by_file().items()):
            lines.append(f"  {path}")
            for c in changes:
                mark = {"changed": "~", "added": "+", "removed": "-"}[c.kind]
                where = c.new_lines or c.old_lines
                lines.append(f"    {mark} {c.name}  (line {where[0]})" if where else f"    {mark} {c.name}")
        return "\n".join(lines)


def _strip_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        return body[1:]
    return body


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _walk(body: Sequence[ast.stmt], prefix: str, owner: str) -> Iterator[tuple[str, str, tuple[int, int]]]:
    """Yield ``(qualified name, dump, (first, last line))`` for each definition under ``body``
    and one entry for the remaining statements of the block (``owner``)."""
    rest: list[ast.stmt] = []
    for node in _strip_docstring(list(body)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + node.name
            inner = [n for n in node.body if isinstance(n, _DEFS)]
            outer = [n for n in node.body if not isinstance(n, _DEFS)]
            shell = ast.FunctionDef(name=node.name, args=node.args, body=_strip_docstring(outer), decorator_list=node.decorator_list, returns=node.returns, type_params=getattr(node, "type_params", []))
            yield name, ast.dump(shell, include_attributes=False), (node.lineno, node.end_lineno or node.lineno)
            yield from _walk(inner, f"{name}.<locals>.", "")
        elif isinstance(node, ast.ClassDef):
            name = prefix + node.name
            yield from _walk(node.body, f"{name}.", f"{name}.<body>")
            header = ast.ClassDef(name=node.name, bases=node.bases, keywords=node.keywords, body=[], decorator_list=node.decorator_list, type_params=getattr(node, "type_params", []))
            yield f"{name}.<bases>", ast.dump(header, include_attributes=False), (node.lineno, node.lineno)
        else:
            rest.append(node)
    if owner and rest:
        dump = "\n".join(ast.dump(n, include_attributes=False) for n in rest)
        yield owner, dump, (rest[0].lineno, rest[-1].end_lineno or rest[-1].lineno)


def functions_of(source: str) -> dict[str, tuple[str, tuple[int, int]]]:
    """Qualified name -> (AST dump, line span) of every definition in ``source``.

    Raises:
        SyntaxError: the source does not parse.

    >>> sorted(functions_of("X = 1\\nclass A:\\n    y = 2\\n    def f(self):\\n        return 1\\n"))
    ['<module>', 'A.<bases>', 'A.<body>', 'A.f']
    """
    tree = ast.parse(source)
    out: dict[str, tuple[str, tuple[int, int]]] = {}
    for name, dump, span in _walk(tree.body, "", "<module>"):
        if name in out:  # a redefinition (e.g. under `if TYPE_CHECKING`): keep both, numbered
            k = 2
            while f"{name}#{k}" in out:
                k += 1
            name = f"{name}#{k}"
        out[name] = (dump, span)
    return out


def _files(tree: Path, scopes: Sequence[str]) -> set[str]:
    out = set()
    for scope in scopes:
        p = tree / scope
        if p.is_file():
            out.add(scope)
        elif p.is_dir():
            out.update(str(f.relative_to(tree)) for f in p.rglob("*.py"))
    return out


def diff_trees(old: Path, new: Path, scopes: Sequence[str] = SCOPES) -> TreeDiff:
    """Compare the :data:`SCOPES` modules of two release trees (each a directory holding ``vllm/``).

    Raises:
        FileNotFoundError: a tree has no ``vllm/`` directory.
    """
    for t in (old, new):
        if not (t / "vllm").is_dir():
            raise FileNotFoundError(f"{t} has no vllm/ directory (expected a release tree such as $MOE_ORACLE_VLLM_ENV/src/0.33.0)")
    a, b = _files(old, scopes), _files(new, scopes)
    result = TreeDiff(old.name, new.name, sorted(b - a), sorted(a - b))
    for path in sorted(a & b):
        try:
            fa = functions_of((old / path).read_text(encoding="utf-8"))
            fb = functions_of((new / path).read_text(encoding="utf-8"))
        except SyntaxError:
            result.unparsable.append(path)
            continue
        for name in sorted(set(fa) | set(fb), key=lambda n: (fb.get(n, fa.get(n))[1][0], n)):
            if name not in fa:
                result.functions.append(FunctionChange(path, name, "added", None, fb[name][1]))
            elif name not in fb:
                result.functions.append(FunctionChange(path, name, "removed", fa[name][1], None))
            elif fa[name][0] != fb[name][0]:
                result.functions.append(FunctionChange(path, name, "changed", fa[name][1], fb[name][1]))
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m moe_oracle.verify.source_diff", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", type=user_path, help="older release tree (holds vllm/)")
    parser.add_argument("new", type=user_path, help="newer release tree (holds vllm/)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    try:
        d = diff_trees(args.old, args.new)
    except FileNotFoundError as exc:
        print(f"source_diff: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(d.to_dict(), indent=1) if args.json else d.render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
