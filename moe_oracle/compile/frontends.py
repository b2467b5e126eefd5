"""``kind: frontends`` (``rules/frontends.yaml``): what quantization front ends do to the keys they select with.

``rewrites`` (each with an ``engine:`` range): where ``when`` holds, the oracle is asked with another
weight and/or activation key than the checkpoint's (vLLM's quantization-method constructors map
checkpoint schemes to ``QuantKey`` constants, or route a checkpoint to another family's method).
The format is family-unquant-fp8's, whose ``blocks`` (FP8 weight-block rules) this set does not use.
"""

from __future__ import annotations

from typing import Sequence

from ..catalog import KeyRewrite
from ..quant import QUANT_KEYS
from ..tables import TableFile
from .context import INVALID, CompileContext
from .values import condition

__all__ = ["compile_frontends"]


def compile_frontends(ctx: CompileContext, files: Sequence[TableFile]) -> tuple[KeyRewrite, ...]:
    """Key rewrites, in table order (files in path order)."""
    if not files and ctx.base is not None:
        return ctx.base.rewrites
    rewrites: list[KeyRewrite] = []
    for tf in files:
        for i, raw in enumerate(tf.data.get("rewrites", [])):
            ctx.at(tf.path, raw["id"])
            ctx.claim(raw["id"])
            path = f"$.rewrites[{i}]"
            when = condition(ctx, raw["when"], f"{path}.when")
            for side in ("weight", "activation"):
                key = raw.get(side)
                if key is not None and key not in QUANT_KEYS:
                    ctx.issue(f"{path}.{side}", "unknown quant key", key, sorted(QUANT_KEYS))
            rng = ctx.engine_range(raw, path)
            if when is not None and rng is not INVALID:
                rewrites.append(KeyRewrite(raw["id"], when, raw.get("weight"), raw.get("activation"), raw["reason"], raw["reference"], rng))  # type: ignore[arg-type]
    return tuple(rewrites)
