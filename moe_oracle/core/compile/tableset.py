"""Compile a table set: one small compiler per table kind, composed by one literal mapping.

:data:`COMPILERS` maps each ``kind`` to a function ``compiler(ctx, files) -> records`` (the way
jsonschema maps keywords to functions). They run in the mapping's order, because a kind may name
what an earlier kind declared: ranges need the engine, field checks the environment variables,
rules the backends and kernels of the entries. Every compiler records its problems in the shared
:class:`~.context.CompileContext`; :func:`compile_set` raises them all at once.

Two table sets exist. The engine set (``moe_oracle/kernels``, ``prepare_finalize``, ``rules``)
needs exactly one table of each kind in :data:`ENGINE_REQUIRED`. A runtime set
(``moe_oracle/runtime_tables``) holds only :data:`RUNTIME_KINDS`, needs one priority table, and
takes the engine, environment, aliases, constraints and known-bad rules of its base engine set.
"""

from __future__ import annotations

import hashlib
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

from packaging.version import InvalidVersion, Version

from ..catalog import CompiledTables
from ..errors import InputIssue, TableError
from ..tables import TableFile
from .aliases import compile_aliases
from .constraints import compile_constraints
from .context import CompileContext
from .engine import compile_engine
from .entries import compile_experts, compile_prepare_finalize
from .environment import compile_environment
from .frontends import compile_frontends
from .known_bad import compile_known_bad
from .link import link, pairing_issues, versioned_items
from .overrides import compile_overrides
from .priority import compile_priority
from .shortcuts import compile_shortcuts

__all__ = ["COMPILERS", "ENGINE_REQUIRED", "RUNTIME_KINDS", "compile_set", "versioned_items"]

Compiler = Callable[[CompileContext, Sequence[TableFile]], Any]

COMPILERS: Mapping[str, Compiler] = MappingProxyType({
    "engine": compile_engine,
    "environment": compile_environment,
    "experts": compile_experts,
    "prepare_finalize": compile_prepare_finalize,
    "constraints": compile_constraints,
    "priority": compile_priority,
    "known_bad": compile_known_bad,
    "aliases": compile_aliases,
    "overrides": compile_overrides,
    "shortcuts": compile_shortcuts,
    "frontends": compile_frontends,
})
"""Table kind -> compiler, in the order they run."""

ENGINE_REQUIRED = ("engine", "environment", "priority", "aliases")
"""Kinds an engine table set must hold exactly one table of."""

RUNTIME_KINDS = ("experts", "prepare_finalize", "priority")
"""The only kinds a runtime table set may hold (it needs exactly one priority table)."""


def _count_issues(by_kind: Mapping[str, list[TableFile]], base: CompiledTables | None) -> list[InputIssue]:
    issues = []
    if base is not None:
        for kind, files in sorted(by_kind.items()):
            if kind not in RUNTIME_KINDS:
                issues += [InputIssue("$.kind", "a runtime table set holds only experts, prepare_finalize and priority tables; the rest comes from the engine tables", kind, list(RUNTIME_KINDS), f.path, None, "kind") for f in files]
    for kind in (("priority",) if base is not None else ENGINE_REQUIRED):
        if len(by_kind.get(kind, [])) != 1:
            issues.append(InputIssue("$", f"exactly one table of kind {kind!r} is required", [f.path for f in by_kind.get(kind, [])], None, None, None, "kind"))
    return issues


def _probe_versions(compiled: CompiledTables) -> list[Version]:
    """Versions whose views are checked at load: every modelled release and every range boundary."""
    versions = {r.version for r in compiled.engine.releases}
    for rng in compiled.ranges:
        for spec in rng:
            try:
                versions.add(Version(spec.version.replace(".*", "")))
            except InvalidVersion:  # arbitrary equality (===abc)
                continue
    return sorted(versions)


def compile_set(files: Sequence[TableFile], base: CompiledTables | None = None) -> CompiledTables:
    """Compile schema-valid table files (any order: processed in sorted path order).

    Args:
        files: the tables of one set.
        base: the compiled engine set, when ``files`` are a runtime set.

    Raises:
        TableError: every semantic problem, with file, entry id and JSON path.
    """
    files = sorted(files, key=lambda f: f.path)
    by_kind: dict[str, list[TableFile]] = {}
    for tf in files:
        by_kind.setdefault(tf.kind, []).append(tf)
    counted = _count_issues(by_kind, base)
    if counted:
        raise TableError(counted)
    ctx = CompileContext(base)
    results = {kind: compiler(ctx, by_kind.get(kind, [])) for kind, compiler in COMPILERS.items()}
    ctx.at(None)
    if not results["experts"] and not ctx.issues:
        ctx.issue("$", "the table set declares no experts kernel")
    if not results["prepare_finalize"] and not ctx.issues:
        ctx.issue("$", "the table set declares no prepare/finalize")
    ctx.raise_if_issues()
    assert ctx.engine is not None

    digest = hashlib.sha256()
    if base is not None:
        digest.update(base.tables_hash.encode())
    for tf in files:
        digest.update(tf.path.encode())
        digest.update(tf.sha256.encode())
    backend_aliases, all2all_aliases, request_maps, engine_names = results["aliases"]
    rewrites, block_rules = results["frontends"]
    compiled = CompiledTables(
        view_name="engine" if base is None else "runtime",
        engine=ctx.engine,
        env_vars=results["environment"].variables,
        removed_env_vars=results["environment"].removed,
        env_types=MappingProxyType(dict(ctx.env_types)),
        experts=results["experts"],
        prepare_finalize=results["prepare_finalize"],
        constraints=results["constraints"],
        priority=results["priority"],
        known_bad=results["known_bad"],
        backend_aliases=backend_aliases,
        all2all_aliases=all2all_aliases,
        overrides=results["overrides"],
        shortcuts=results["shortcuts"],
        files=((base.files if base is not None else ()) + tuple(tf.path for tf in files)),
        tables_hash=digest.hexdigest()[:16],
        base=base,
        after_selection=frozenset(ctx.after_selection),
        request_gates=frozenset(ctx.request_gates),
        request_maps=request_maps,
        engine_names=engine_names,
        rewrites=rewrites,
        block_rules=block_rules,
        linker=link,
    )
    ranges = {rng for _, _, rng in versioned_items(compiled) if rng is not None}
    if base is not None:
        ranges |= set(base.ranges)
    compiled = _with_ranges(compiled, tuple(sorted(ranges, key=str)))
    problems: list[InputIssue] = []
    seen: set[tuple[bool, ...]] = set()
    for version in _probe_versions(compiled):
        key = compiled.key(version)
        if key in seen:
            continue  # the same ranges admit it: the same items, the same pairing
        seen.add(key)
        problems += [i for i in pairing_issues(compiled, version) if i not in problems]
    if problems:
        raise TableError(problems)
    return compiled


def _with_ranges(compiled: CompiledTables, ranges: tuple[Any, ...]) -> CompiledTables:
    from dataclasses import replace

    return replace(compiled, ranges=ranges, _views={}, _keys={}, _releases={})
