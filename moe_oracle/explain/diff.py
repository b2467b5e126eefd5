"""What changes in the kernel choice between two environments, and which facts change it.

``moe-oracle diff --from vllm==0.31.0 --to vllm==0.33.0`` (or two environment files, or two GPUs)
selects every layer group of a model under both sides and, for each group whose answer changes,
names the old and new kernel and the facts responsible:

* ``entry``: a kernel exists in one release's tables and not in the other's (its engine range);
* ``check``: a check that rejects the new winner on the old side, or the old winner on the new
  side, and holds on the other side (the rule id, its engine range and reference, and the value
  it read on each side);
* ``order``: the priority order or an adjustment that fired differs (rule ids and ranges);
* ``shortcut`` / ``request``: an early return or a backend request applies on one side only.

Each side's answer names its release (``Decision.release``). Nothing here reads the host.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..core.catalog import Catalog
from ..core.config import MoEConfig
from ..core.decision import Decision
from ..core.engine import evaluate
from ..core.environment import Environment
from ..core.records import jsonable

__all__ = ["Cause", "Diff", "GroupDiff", "Side", "diff_groups"]


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a label (``vllm==0.31.0``, ``gpu H200``, a file name) and its inputs."""

    label: str
    config: MoEConfig
    environment: Environment


@dataclass(frozen=True)
class Cause:
    """One fact that differs between the two sides and bears on the changed answer.

    Attributes:
        kind: ``entry`` | ``check`` | ``order`` | ``shortcut`` | ``request``.
        rule: rule or kernel id.
        detail: human text; never parsed.
        range: the fact's engine range (``">=0.31.0"``), ``None`` when it holds for every release.
        reference: upstream source of the fact.
        before, after: what the fact said on each side (the value read, the order, ...).
    """

    kind: str
    rule: str
    detail: str
    range: str | None = None
    reference: str = ""
    before: Any = None
    after: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "rule": self.rule, "detail": self.detail, "range": self.range, "reference": self.reference, "before": jsonable(self.before), "after": jsonable(self.after)}


def _winner(decision: Decision) -> dict[str, Any] | None:
    sel = decision.selected
    if sel is None:
        return None
    entry = decision.rows[decision.winner].entry  # type: ignore[index]
    return {"kernel": sel.kernel, "backend": sel.backend, "experts": entry.upstream, "interface": sel.interface.value, "prepare_finalize": sel.prepare_finalize}


@dataclass(frozen=True)
class GroupDiff:
    """One layer group under both sides."""

    layers: str
    before: Decision
    after: Decision
    causes: tuple[Cause, ...] = ()

    @property
    def changed(self) -> bool:
        return (self.before.kernel, self.before.prepare_finalize) != (self.after.kernel, self.after.prepare_finalize)

    def to_dict(self) -> dict[str, Any]:
        return {
            "layers": self.layers,
            "changed": self.changed,
            "before": {"release": self.before.answered_for, "selected": _winner(self.before)},
            "after": {"release": self.after.answered_for, "selected": _winner(self.after)},
            "causes": [c.to_dict() for c in self.causes],
        }


@dataclass(frozen=True)
class Diff:
    """Every layer group of one model under two sides."""

    before: str
    after: str
    groups: tuple[GroupDiff, ...] = field(default=())

    @property
    def changed(self) -> tuple[GroupDiff, ...]:
        return tuple(g for g in self.groups if g.changed)

    def to_dict(self) -> dict[str, Any]:
        return {"from": self.before, "to": self.after, "groups": [g.to_dict() for g in self.groups], "changed": len(self.changed)}

    def render_text(self) -> str:
        lines = [f"diff: {self.before} -> {self.after}: {len(self.changed)} of {len(self.groups)} layer group(s) change"]
        for g in self.groups:
            b, a = _winner(g.before), _winner(g.after)
            if not g.changed:
                lines.append(f"  {g.layers}: unchanged: {_label(b)}")
                continue
            lines.append(f"  {g.layers}: {_label(b)}  ->  {_label(a)}")
            lines.append(f"    before: {g.before.answered_for}; after: {g.after.answered_for}")
            for c in g.causes:
                rng = f" [vLLM {c.range}]" if c.range else ""
                ref = f" ({c.reference})" if c.reference else ""
                lines.append(f"    - {c.kind} {c.rule}{rng}: {c.detail}{ref}")
            if not g.causes:
                lines.append("    - no single fact differs: the inputs differ (see explain on each side)")
        return "\n".join(lines)


def _label(w: Mapping[str, Any] | None) -> str:
    if w is None:
        return "nothing eligible"
    return f"{w['kernel']} ({w['experts']}) + {w['prepare_finalize']}"


def _ranges(catalog: Catalog) -> dict[str, tuple[str | None, str]]:
    """rule or item id -> (engine range text, kind) for every ranged item of the table set."""
    from ..core.compile import versioned_items

    out: dict[str, tuple[str | None, str]] = {}
    if catalog.source is None:
        return out
    for kind, ident, rng in versioned_items(catalog.source):
        key = ident.split(":", 1)[1] if kind == "constraint" else ident
        out[key] = (str(rng) if rng is not None else None, kind)
    return out


def _failures(decision: Decision, kernel: str) -> dict[str, Any]:
    """rule -> Failure for ``kernel``'s candidate in ``decision`` (empty when it is not a candidate)."""
    try:
        cand = decision.candidate(kernel)
    except KeyError:
        return {}
    return {f.rule: f for f in cand.failures}


def _explain(before: Decision, after: Decision, ranges: Mapping[str, tuple[str | None, str]]) -> tuple[Cause, ...]:
    causes: list[Cause] = []
    kb, ka = before.kernel, after.kernel
    ids_before = {r.entry.id for r in before.rows}
    ids_after = {r.entry.id for r in after.rows}
    for kernel, rows, absent, where in ((ka, after.rows, ids_before, "the new side"), (kb, before.rows, ids_after, "the old side")):
        if kernel is not None and kernel not in absent:
            entry = next(r.entry for r in rows if r.entry.id == kernel)
            rng, _ = ranges.get(kernel, (None, "experts"))
            causes.append(Cause("entry", kernel, f"{entry.upstream} is a kernel of {where} only", rng, entry.reference))
    # Checks: what rejected the new winner before, and what rejects the old winner after.
    for kernel, rejected_in, passes_in, when in ((ka, before, after, "before"), (kb, after, before, "after")):
        if kernel is None:
            continue
        failed = _failures(rejected_in, kernel)
        still = _failures(passes_in, kernel)
        for rule, f in failed.items():
            if rule in still:
                continue
            rng, _ = ranges.get(rule, (None, "constraint"))
            other = passes_in.normalized.values.get(f.field)
            where = "the old side" if when == "before" else "the new side"
            causes.append(Cause("check", rule, f"rejects {kernel} on {where}: {f.code.value} {f.field}={f.observed!r}, allowed {f.allowed!r}; {f.hint}", rng, f.reference, f.observed if when == "before" else other, other if when == "before" else f.observed))
    if before.order_rule != after.order_rule:
        causes.append(Cause("order", after.order_rule or "-", f"priority order {before.order_rule} -> {after.order_rule}", ranges.get(after.order_rule or "", (None, ""))[0], "", before.order_rule, after.order_rule))
    dem_b = {(d.rule, d.backend) for d in before.demotions}
    dem_a = {(d.rule, d.backend) for d in after.demotions}
    for rule, backend in sorted(dem_a ^ dem_b):
        side = "after only" if (rule, backend) in dem_a else "before only"
        causes.append(Cause("order", rule, f"adjustment moves {backend} ({side})", ranges.get(rule, (None, ""))[0], "", (rule, backend) in dem_b, (rule, backend) in dem_a))
    if before.shortcut != after.shortcut:
        rule = after.shortcut or before.shortcut or "-"
        causes.append(Cause("shortcut", rule, f"early return {before.shortcut} -> {after.shortcut}", ranges.get(rule, (None, ""))[0], "", before.shortcut, after.shortcut))
    if before.requested != after.requested:
        causes.append(Cause("request", after.requested_by or before.requested_by or "moe_backend", f"requested backends {before.requested} -> {after.requested}", None, "", before.requested, after.requested))
    return tuple(causes)


def diff_groups(catalog: Catalog, groups: Sequence[tuple[str, Side, Side]], *, policy: str = "faithful") -> Diff:
    """Select each group under both sides and explain every change.

    Args:
        catalog: the engine tables (each side's release view is taken from its environment).
        groups: ``(layers label, before side, after side)`` per layer group.
        policy: ``faithful`` or ``safe``, for both sides.
    """
    ranges = _ranges(catalog)
    out = []
    for layers, b, a in groups:
        before = evaluate(catalog, b.config, b.environment, policy=policy)
        after = evaluate(catalog, a.config, a.environment, policy=policy)
        g = GroupDiff(layers, before, after)
        if g.changed:
            g = GroupDiff(layers, before, after, _explain(before, after, ranges))
        out.append(g)
    label_b = groups[0][1].label if groups else ""
    label_a = groups[0][2].label if groups else ""
    return Diff(label_b, label_a, tuple(out))
