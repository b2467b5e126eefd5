"""``kind: experts`` and ``kind: prepare_finalize``: one entry per implementation, compiled into checks.

An entry states its identity, requirements (platforms with exact capability sets, packages with
PEP 440 ranges, environment variables), ``supports`` (one value spec per field), ``features`` and
``constraints``; each becomes a :class:`~moe_oracle.core.checks.Check`. In a runtime table set an entry
may ``implements: <engine entry id>``: it takes that entry's backend, interface, activation format
and upstream class, inherits its checks when linked (:mod:`.link`) and adds its own limits.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping, Sequence

from ..checks import Check
from ..catalog import ExpertsEntry, PrepareFinalizeEntry, _Entry
from ..fields import FIELDS, field_spec
from ..predicates import compile_value_spec
from ..tables import TableFile
from ..vocab import ActivationFormat, Interface
from .context import INVALID, CompileContext
from .formats import identity_issues, with_parsed
from .values import predicate, ranged_constraints, requirement_checks

__all__ = ["compile_experts", "compile_prepare_finalize"]

_FEATURE_FIELDS = {"lora": "lora", "batch_invariant": "batch_invariant", "eplb": "enable_eplb"}


def _target(ctx: CompileContext, raw: Mapping[str, Any], index: int, pool: Sequence[_Entry], what: str) -> _Entry | None:
    """The engine entry ``raw`` implements (``None``: standalone, or reported)."""
    name = raw.get("implements")
    if name is None:
        return None
    if ctx.base is None:
        ctx.issue(f"$.entries[{index}].implements", f"only runtime tables implement {what} entries of the engine tables", name)
        return None
    for entry in pool:
        if entry.id == name:
            return entry
    ctx.issue(f"$.entries[{index}].implements", f"implements an unknown engine {what} entry", name, sorted(e.id for e in pool))
    return None


def _format_issues(ctx: CompileContext, raw: Mapping[str, Any], path: str) -> None:
    releases = [r.version for r in ctx.engine.releases] if ctx.engine is not None else []
    for where, message, value in identity_issues(raw, releases, ctx.engine.name if ctx.engine is not None else "vllm"):
        ctx.issue(path + where[1:], message, value)


def _own_checks(ctx: CompileContext, eid: str, raw: Mapping[str, Any], reference: str, path: str, what: str) -> tuple[list[Check], list[Any]]:
    checks = requirement_checks(ctx, eid, raw, reference, path, what)
    for fieldname, spec in (raw.get("supports") or {}).items():
        p = predicate(ctx, fieldname, spec, f"{path}.supports.{fieldname}")
        if p is None:
            continue
        checks.append(Check(f"{eid}.supports.{fieldname}", fieldname, p, (), False, field_spec(fieldname).code, f"{what} supports {fieldname} {p.describe()}", reference))
    for feature, supported in (raw.get("features") or {}).items():
        if not supported:
            fieldname = _FEATURE_FIELDS[feature]
            checks.append(Check(f"{eid}.features.{feature}", fieldname, compile_value_spec(fieldname, [False]), (), False, FIELDS[fieldname].code, f"{what} does not support {feature}", reference))
    ranges: list[Any] = [None] * len(checks)
    extra, extra_ranges = ranged_constraints(ctx, raw.get("constraints"), path, reference)
    return checks + extra, ranges + extra_ranges


def compile_experts(ctx: CompileContext, files: Sequence[TableFile]) -> tuple[ExpertsEntry, ...]:
    """Every experts entry, in sorted file order then entry order."""
    base_pool: Sequence[_Entry] = ctx.base.experts if ctx.base is not None else ()
    base_ids = {e.id for e in base_pool}
    out: list[ExpertsEntry] = []
    families: dict[str, str] = {}
    for tf in files:
        family = tf.data["family"]
        if family in families:
            ctx.at(tf.path)
            ctx.issue("$.family", f"one file per family: also the family of {families[family]} (the family ranks a backend's kernels, so two files of one family would be ranked by their file names)", family)
        families.setdefault(family, tf.path)
        for i, raw in enumerate(tf.data["entries"]):
            eid = raw["id"]
            ctx.at(tf.path, eid)
            path = f"$.entries[{i}]"
            ctx.claim(eid, f"{path}.id")
            if eid in base_ids:
                ctx.issue(f"{path}.id", "a runtime entry id may not repeat an engine kernel id (a Decision must name its view unambiguously)", eid)
            n = ctx.count()
            target = _target(ctx, raw, i, base_pool, "experts")
            reference = raw.get("reference", tf.data["reference"])
            what = target.upstream if target is not None else raw.get("upstream", eid)
            rng = ctx.engine_range(raw, path)
            _format_issues(ctx, raw, path)
            checks, ranges = _own_checks(ctx, eid, raw, reference, path, f"{eid} ({what})" if target is not None else what)
            if raw.get("checked_after_selection"):
                # Taken unasked, checked when built: only the quant scheme decides whether it is taken.
                ctx.after_selection.update(c.rule for c in checks if c.rule != f"{eid}.supports.quant_scheme")
            if ctx.count() != n or rng is INVALID or (raw.get("implements") and target is None):
                ctx.drop(eid, raw.get("backend"))
                continue
            src: Any = target if target is not None else raw
            out.append(
                ExpertsEntry(
                    id=eid,
                    backend=src.backend if target is not None else raw["backend"],
                    interface=src.interface if target is not None else Interface(raw["interface"]),
                    activation_format=src.activation_format if target is not None else ActivationFormat(raw["activation_format"]),
                    adapter=raw["adapter"],
                    provider=raw["provider"],
                    runtime=raw["runtime"],
                    upstream=what,
                    reference=reference,
                    file=tf.path,
                    notes=raw.get("notes", ""),
                    declared=MappingProxyType(with_parsed(raw, ctx.engine.name if ctx.engine is not None else "vllm")),
                    checks=tuple(checks),
                    engine=rng,  # type: ignore[arg-type]
                    implements=target.id if target is not None else None,
                    check_engine=tuple(ranges),
                    family=family,
                )
            )
    ctx.experts = tuple(out)
    ctx.backends = {e.backend for e in out}
    ctx.dropped_backends -= ctx.backends
    ctx.kernel_ids = {e.id for e in out} | ({e.id for e in base_pool} if ctx.base is not None else set())
    return ctx.experts


def compile_prepare_finalize(ctx: CompileContext, files: Sequence[TableFile]) -> tuple[PrepareFinalizeEntry, ...]:
    """Every prepare/finalize entry: the dispatch kinds it serves, interface, format, requirements."""
    base_pool: Sequence[_Entry] = ctx.base.prepare_finalize if ctx.base is not None else ()
    out: list[PrepareFinalizeEntry] = []
    for tf in files:
        for i, raw in enumerate(tf.data["entries"]):
            pid = raw["id"]
            ctx.at(tf.path, pid)
            path = f"$.entries[{i}]"
            ctx.claim(pid, f"{path}.id")
            n = ctx.count()
            target = _target(ctx, raw, i, base_pool, "prepare/finalize")
            reference = raw.get("reference", tf.data["reference"])
            what = target.upstream if target is not None else raw["upstream"]
            rng = ctx.engine_range(raw, path)
            _format_issues(ctx, raw, path)
            checks, ranges = _own_checks(ctx, pid, raw, reference, path, what)
            if ctx.count() != n or rng is INVALID or (raw.get("implements") and target is None):
                continue
            t: Any = target
            out.append(
                PrepareFinalizeEntry(
                    id=pid,
                    dispatch=t.dispatch if target is not None else frozenset(raw["dispatch"]),
                    interface=t.interface if target is not None else Interface(raw["interface"]),
                    activation_format=t.activation_format if target is not None else ActivationFormat(raw["activation_format"]),
                    carries_router_logits=t.carries_router_logits if target is not None else raw["carries_router_logits"],
                    adapter=raw["adapter"],
                    provider=raw["provider"],
                    runtime=raw["runtime"],
                    upstream=what,
                    reference=reference,
                    file=tf.path,
                    declared=MappingProxyType(with_parsed(raw, ctx.engine.name if ctx.engine is not None else "vllm")),
                    checks=tuple(checks),
                    engine=rng,  # type: ignore[arg-type]
                    implements=target.id if target is not None else None,
                    check_engine=tuple(ranges),
                )
            )
    ctx.prepare_finalize = tuple(out)
    return ctx.prepare_finalize
