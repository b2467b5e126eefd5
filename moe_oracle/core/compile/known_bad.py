"""``kind: known_bad`` (``rules/known_bad.yaml``): conditions under which named kernels crash, hang or compute wrong results."""

from __future__ import annotations

from typing import Sequence

from ..checks import Check
from ..catalog import KnownBad
from ..predicates import compile_value_spec
from ..tables import TableFile
from ..vocab import ReasonCode
from .context import INVALID, CompileContext
from .values import condition

__all__ = ["compile_known_bad"]


def compile_known_bad(ctx: CompileContext, files: Sequence[TableFile]) -> tuple[KnownBad, ...]:
    """Each entry becomes one deny check (fails when ``when`` and the package ranges all hold)."""
    if not files and ctx.base is not None:
        return ctx.base.known_bad  # a kernel our runtime implements has the engine kernel's bugs
    out: list[KnownBad] = []
    for tf in files:
        for i, raw in enumerate(tf.data["entries"]):
            ctx.at(tf.path, raw["id"])
            path = f"$.entries[{i}]"
            ctx.claim(raw["id"], f"{path}.id")
            for j, k in enumerate(raw["kernels"]):
                ctx.known_kernel(k, f"{path}.kernels[{j}]", "known-bad entry")
            cond = condition(ctx, raw["when"], f"{path}.when")
            pkg_preds = []
            for name, spec in (raw.get("packages") or {}).items():
                try:
                    pkg_preds.append(compile_value_spec(f"packages.{name}", {"present": True, "version": spec}))
                except ValueError as exc:
                    ctx.issue(f"{path}.packages.{name}", str(exc), spec)
            rng = ctx.engine_range(raw, path)
            if cond is None or rng is INVALID:
                continue
            full = cond + tuple(pkg_preds)
            chk = Check(raw["id"], ",".join(p.field for p in full), None, full, True, ReasonCode.KNOWN_BAD, raw["hint"], raw["reference"])
            out.append(KnownBad(raw["id"], tuple(raw["kernels"]), chk, raw.get("effect", ""), raw.get("replaces", ""), rng))  # type: ignore[arg-type]
    return tuple(out)
