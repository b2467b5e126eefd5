"""The state every table-kind compiler shares: where it is, what earlier kinds declared, every issue.

A compiler never raises for a table problem: it records an :class:`~moe_oracle.core.errors.InputIssue`
(file, entry id, JSON path, value, allowed values for the did-you-mean) and goes on, so that one
load reports every problem at once (:meth:`CompileContext.raise_if_issues`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from packaging.specifiers import SpecifierSet

from ..errors import InputIssue, TableError
from ..versions import EngineSpec, parse_range

if TYPE_CHECKING:
    from ..catalog import CompiledTables, ExpertsEntry, PrepareFinalizeEntry

__all__ = ["CompileContext", "INVALID"]

INVALID = object()
"""Returned by :meth:`CompileContext.engine_range` for a range that was reported as an issue."""


class CompileContext:
    """Issues, the current location, and the names earlier compilers declared.

    Attributes:
        base: the engine table set a runtime table set builds on (``None`` for an engine set).
        engine: the engine declaration (``rules/engine.yaml``, or the base's).
        env_types: declared environment variable -> ``bool`` | ``str``.
        experts, prepare_finalize: compiled entries, once their compilers ran.
        backends, kernel_ids: names rules may refer to.
    """

    def __init__(self, base: "CompiledTables | None" = None) -> None:
        self.issues: list[InputIssue] = []
        self.file: str | None = None
        self.entry: str | None = None
        self.base = base
        self.engine: EngineSpec | None = base.engine if base is not None else None
        self.env_types: dict[str, str] = dict(base.env_types) if base is not None else {}
        self.experts: tuple["ExpertsEntry", ...] = ()
        self.prepare_finalize: tuple["PrepareFinalizeEntry", ...] = ()
        self.backends: set[str] = set()
        self.kernel_ids: set[str] = set()
        # Entries left out for an error of their own, and backends no entry is left for: a rule
        # naming one is not reported again (the entry's own error is the one to fix).
        self.dropped_kernels: set[str] = set()
        self.dropped_backends: set[str] = set()
        # Rule ids of constraints the engine checks on the selected kernel only (after_selection).
        self.after_selection: set[str] = set(base.after_selection) if base is not None else set()
        # Rule ids of constraints the oracle raises on first for a backend requested by name (raised_on_request).
        self.request_gates: set[str] = set(base.request_gates) if base is not None else set()
        self._ids: dict[str, str] = {}

    # ------------------------------------------------------------------ location and issues

    def at(self, file: str | None, entry: str | None = None) -> None:
        self.file, self.entry = file, entry

    def issue(self, path: str, message: str, value: Any = None, allowed: Any = None, keyword: str = "semantic") -> None:
        self.issues.append(InputIssue(path, message, value, allowed, self.file, self.entry, keyword))

    def count(self) -> int:
        return len(self.issues)

    def raise_if_issues(self) -> None:
        """Raises:
        TableError: every issue collected so far, at once.
        """
        if self.issues:
            raise TableError(self.issues)

    # ------------------------------------------------------------------ names

    def claim(self, identifier: str, path: str) -> None:
        """Register a rule or entry id (``path``: where it is written, ``$.entries[1].id``); a
        duplicate names the file that defined it first."""
        if identifier in self._ids:
            self.issue(path, f"duplicate id, also defined in {self._ids[identifier]}", identifier)
        else:
            self._ids[identifier] = f"{self.file or '?'} at {path}"

    def drop(self, kernel: str, backend: Any) -> None:
        """Record an experts entry left out for its own error (reported where it was found)."""
        self.dropped_kernels.add(kernel)
        if isinstance(backend, str):
            self.dropped_backends.add(backend)

    def known_backend(self, name: str, path: str) -> bool:
        """Whether ``name`` is a backend; an unknown one is an issue unless only entries dropped
        for their own error declared it."""
        if name not in self.backends:
            if name in self.dropped_backends:
                return False
            self.issue(path, "rule names an unknown backend", name, sorted(self.backends))
            return False
        return True

    def known_kernel(self, name: str, path: str, what: str) -> bool:
        """Whether ``name`` is a kernel id; an unknown one is an issue unless it was dropped for its
        own error."""
        if name not in self.kernel_ids:
            if name in self.dropped_kernels:
                return False
            self.issue(path, f"{what} names an unknown kernel", name, sorted(self.kernel_ids))
            return False
        return True

    def known_env_vars(self, names: Iterable[str], path: str) -> None:
        for j, var in enumerate(names):
            if var not in self.env_types:
                self.issue(f"{path}[{j}]", "environment variable is not declared in rules/environment.yaml", var, sorted(self.env_types))

    # ------------------------------------------------------------------ versions

    def engine_range(self, raw: Any, path: str) -> SpecifierSet | None | object:
        """The ``engine:`` range of an item: ``None`` (every release), a SpecifierSet, or :data:`INVALID`."""
        spec = raw.get("engine") if isinstance(raw, dict) else None
        if spec is None:
            return None
        if self.engine is None:
            self.issue(f"{path}.engine", "an engine range needs the engine table (rules/engine.yaml, kind: engine)", spec)
            return INVALID
        unknown = [name for name in spec if name != self.engine.name]
        if unknown:
            self.issue(f"{path}.engine.{unknown[0]}", "engine range names another engine than the one rules/engine.yaml declares", unknown[0], [self.engine.name])
            return INVALID
        text = spec.get(self.engine.name)
        try:
            return parse_range(text)
        except ValueError as exc:
            self.issue(f"{path}.engine.{self.engine.name}", str(exc), text)
            return INVALID
