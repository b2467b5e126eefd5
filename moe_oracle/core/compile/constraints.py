"""``kind: constraints`` (``rules/constraints.yaml``): constraints that bind every kernel (or a listed set)."""

from __future__ import annotations

from typing import Sequence

from packaging.utils import canonicalize_name

from ..catalog import GlobalConstraint
from ..tables import TableFile
from .context import INVALID, CompileContext
from .values import constraint

__all__ = ["compile_constraints"]


def compile_constraints(ctx: CompileContext, files: Sequence[TableFile]) -> tuple[GlobalConstraint, ...]:
    if not files and ctx.base is not None:
        return ctx.base.constraints  # checkpoint facts bind our runtime's kernels too
    out: list[GlobalConstraint] = []
    for tf in files:
        for i, raw in enumerate(tf.data["constraints"]):
            ctx.at(tf.path, raw["id"])
            path = f"$.constraints[{i}]"
            ctx.claim(raw["id"], f"{path}.id")
            applies = raw.get("applies_to") or {}
            for key in ("backends", "except_backends"):
                for j, b in enumerate(applies.get(key, [])):
                    ctx.known_backend(b, f"{path}.applies_to.{key}[{j}]")
            for j, k in enumerate(applies.get("except_kernels", [])):
                ctx.known_kernel(k, f"{path}.applies_to.except_kernels[{j}]", "constraint")
            for j, name in enumerate(applies.get("packages", [])):
                if canonicalize_name(name) != name:
                    ctx.issue(f"{path}.applies_to.packages[{j}]", "package names must be canonical (PEP 503)", name, [canonicalize_name(name)])
            rng = ctx.engine_range(raw, path)
            chk = constraint(ctx, raw, path, raw.get("reference", ""))
            if chk is not None and rng is not INVALID:
                out.append(GlobalConstraint(
                    chk, tuple(applies.get("backends", ())), tuple(applies.get("except_backends", ())), rng,  # type: ignore[arg-type]
                    tuple(applies.get("interfaces", ())), tuple(applies.get("except_kernels", ())), tuple(applies.get("packages", ())),
                    raw.get("checked") == "construction",
                ))
    return tuple(out)
