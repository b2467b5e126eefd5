"""The package's layers, read from its imports (docs/architecture.md, "Layers").

Every ``import`` of a ``moe_oracle`` module counts, wherever it is written: at module level or inside a
function. Two laws:

* a module imports only modules of its own layer or of a layer it builds on (``ALLOWED``), type-only
  imports (under ``if TYPE_CHECKING:``) included;
* the import graph over modules has no cycle. A type-only import is never executed, so it is left
  out of this graph (a record may name the type of the record that holds it).

A package's ``__init__`` counts as a module: ``from .x import y`` inside ``pkg/__init__.py`` is an
edge from ``pkg`` to ``pkg.x``, and ``from pkg import name`` (a name, not a submodule) is an edge to
``pkg``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import moe_oracle

PACKAGE = Path(moe_oracle.__file__).resolve().parent

# layer -> the layers its modules may import (its own included)
ALLOWED: dict[str, frozenset[str]] = {
    "core": frozenset({"core"}),
    "inputs": frozenset({"core", "inputs"}),
    "explain": frozenset({"core", "inputs", "explain"}),
    "runtime": frozenset({"core", "inputs", "runtime"}),
    "verify": frozenset({"core", "inputs", "explain", "verify"}),
    "tools": frozenset({"core", "inputs", "explain", "tools"}),
    "cli": frozenset({"core", "inputs", "explain", "tools", "runtime", "verify", "cli"}),
    "root": frozenset({"core", "inputs", "explain", "tools", "runtime", "verify", "cli", "root"}),
}

# the folders that make up each layer (kernels/ and prepare_finalize/ hold the runtime's adapters
# beside their tables)
FOLDER_LAYER = {
    "core": "core",
    "inputs": "inputs",
    "explain": "explain",
    "tools": "tools",
    "cli": "cli",
    "runtime": "runtime",
    "kernels": "runtime",
    "prepare_finalize": "runtime",
    "verify": "verify",
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["moe_oracle", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in ("__main__",) or parts[1] not in FOLDER_LAYER:
        return "root"
    return FOLDER_LAYER[parts[1]]


def _known(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _type_only_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for sub in node.body:
                for inner in ast.walk(sub):
                    if isinstance(inner, (ast.Import, ast.ImportFrom)):
                        lines.add(inner.lineno)
    return lines


def imports_of(module: str, *, type_only: bool = True) -> set[tuple[str, int]]:
    """(imported moe_oracle module, line) for every import statement in ``module``'s source
    (``type_only=False``: leave out those under ``if TYPE_CHECKING:``)."""
    path = MODULES[module]
    is_pkg = path.name == "__init__.py"
    out: set[tuple[str, int]] = set()
    tree = ast.parse(path.read_text(), str(path))
    skip = set() if type_only else _type_only_lines(tree)
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target != "moe_oracle" and not target.startswith("moe_oracle."):
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found = sub if sub in MODULES else _known(target)
                if found and found != module:
                    out.add((found, node.lineno))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("moe_oracle"):
                    found = _known(alias.name)
                    if found and found != module:
                        out.add((found, node.lineno))
    return out


GRAPH = {m: imports_of(m) for m in MODULES}
RUNTIME_GRAPH = {m: imports_of(m, type_only=False) for m in MODULES}


def test_every_folder_has_a_layer():
    folders = {p.relative_to(PACKAGE).parts[0] for p in PACKAGE.rglob("*.py") if len(p.relative_to(PACKAGE).parts) > 1}
    assert folders <= set(FOLDER_LAYER), f"folders without a layer: {sorted(folders - set(FOLDER_LAYER))}"


def test_no_module_imports_a_layer_above_its_own():
    bad = []
    for module, edges in GRAPH.items():
        mine = layer_of(module)
        for target, line in edges:
            if layer_of(target) not in ALLOWED[mine]:
                bad.append(f"{MODULES[module].relative_to(PACKAGE.parent)}:{line} ({mine}) imports {target} ({layer_of(target)})")
    assert not bad, "imports that climb a layer:\n" + "\n".join(sorted(bad))


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w, _ in RUNTIME_GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(RUNTIME_GRAPH):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_counting_imports_inside_functions():
    cycles = _cycles()
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_law_can_fail():
    """The checker sees a lazy upward import and a cycle when they are there (on a copy of the graph)."""
    global RUNTIME_GRAPH
    saved = RUNTIME_GRAPH
    try:
        RUNTIME_GRAPH = {**saved, "moe_oracle.core.engine": saved["moe_oracle.core.engine"] | {("moe_oracle.explain.whynot", 1)}}
        assert any("moe_oracle.core.engine" in c for c in _cycles())
        assert layer_of("moe_oracle.explain.whynot") not in ALLOWED[layer_of("moe_oracle.core.engine")]
    finally:
        RUNTIME_GRAPH = saved


MAX_MODULE_LINES = 600
"""Issue 22: a module does one job; past ~600 lines it is split by job (no module is generated data)."""


def test_no_module_is_over_the_size_law():
    sizes = {str(p.relative_to(PACKAGE)): len(p.read_text(encoding="utf-8").splitlines()) for p in PACKAGE.rglob("*.py")}
    over = {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES}
    assert sizes and not over, f"modules over {MAX_MODULE_LINES} lines (split them by job): {over}"
