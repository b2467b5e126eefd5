"""``kind: overrides`` (``rules/overrides.yaml``): environment variables that request a backend."""

from __future__ import annotations

from typing import Sequence

from ..catalog import Override
from ..tables import TableFile
from .context import INVALID, CompileContext
from .values import condition

__all__ = ["compile_overrides"]


def compile_overrides(ctx: CompileContext, files: Sequence[TableFile]) -> tuple[Override, ...]:
    out: list[Override] = []
    for tf in files:
        for i, raw in enumerate(tf.data["overrides"]):
            ctx.at(tf.path, raw["id"])
            path = f"$.overrides[{i}]"
            ctx.claim(raw["id"], f"{path}.id")
            when = condition(ctx, raw["when"], f"{path}.when")
            ctx.known_env_vars(raw["explicit"], f"{path}.explicit")
            ctx.known_backend(raw["request"], f"{path}.request")
            rng = ctx.engine_range(raw, path)
            if when is not None and rng is not INVALID:
                out.append(Override(raw["id"], when, tuple(raw["explicit"]), raw["request"], raw["reason"], raw["reference"], rng))  # type: ignore[arg-type]
    return tuple(out)
