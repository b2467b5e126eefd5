"""``kind: priority`` (``rules/priority.yaml``): orders per context, adjustments, opt-in-only backends."""

from __future__ import annotations

from typing import Sequence

from ..catalog import Adjustment, OptIn, PriorityOrder, PriorityTables
from ..tables import TableFile
from .context import INVALID, CompileContext
from .values import condition

__all__ = ["compile_priority"]


def compile_priority(ctx: CompileContext, files: Sequence[TableFile]) -> PriorityTables:
    """Backend references are checked against the backends of this table set."""
    if not files:
        return PriorityTables()
    tf = files[0]
    data = tf.data
    orders: list[PriorityOrder] = []
    for i, raw in enumerate(data["orders"]):
        ctx.at(tf.path, raw["id"])
        path = f"$.orders[{i}]"
        ctx.claim(raw["id"], f"{path}.id")
        when = condition(ctx, raw["when"], f"{path}.when")
        for j, b in enumerate(raw["backends"]):
            ctx.known_backend(b, f"{path}.backends[{j}]")
        rng = ctx.engine_range(raw, path)
        if when is not None and rng is not INVALID:
            orders.append(PriorityOrder(raw["id"], when, tuple(raw["backends"]), raw["reference"], raw.get("notes", ""), engine=rng))  # type: ignore[arg-type]
    ctx.at(tf.path)
    fallback = tuple(data.get("fallback") or ())
    for j, b in enumerate(fallback):
        ctx.known_backend(b, f"$.fallback[{j}]")
    adjustments: list[Adjustment] = []
    for i, raw in enumerate(data.get("adjustments", [])):
        ctx.at(tf.path, raw["id"])
        path = f"$.adjustments[{i}]"
        ctx.claim(raw["id"], f"{path}.id")
        when = condition(ctx, raw["when"], f"{path}.when")
        for j, b in enumerate(raw["move"]):
            ctx.known_backend(b, f"{path}.move[{j}]")
        if ":" in raw["to"]:
            anchor = raw["to"].split(":", 1)[1]
            ctx.known_backend(anchor, f"{path}.to")
            if anchor in raw["move"]:
                ctx.issue(f"{path}.to", "an adjustment cannot move a backend next to itself", raw["to"])
        rng = ctx.engine_range(raw, path)
        if when is not None and rng is not INVALID:
            adjustments.append(Adjustment(raw["id"], when, tuple(raw["move"]), raw["to"], raw["kind"], raw["reason"], raw["reference"], rng))  # type: ignore[arg-type]
    opt_in: list[OptIn] = []
    for i, raw in enumerate(data.get("opt_in_only", [])):
        ctx.at(tf.path, raw["id"])
        path = f"$.opt_in_only[{i}]"
        ctx.claim(raw["id"], f"{path}.id")
        when = condition(ctx, raw.get("when"), f"{path}.when")
        ctx.known_backend(raw["backend"], f"{path}.backend")
        rng = ctx.engine_range(raw, path)
        if when is not None and rng is not INVALID:
            opt_in.append(OptIn(raw["id"], raw["backend"], when, raw["reason"], raw["reference"], engine=rng))  # type: ignore[arg-type]
    return PriorityTables(tuple(orders), tuple(adjustments), tuple(opt_in), fallback)
