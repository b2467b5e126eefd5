"""``kind: frontends`` (``rules/frontends.yaml``): what quantization front ends do to the keys they select with.

Two item kinds, each with an ``engine:`` range:

* ``rewrites``: where ``when`` holds, the oracle is asked with another weight and/or activation
  key than the checkpoint's (activation ``none``: the oracle gets no activation key, W4A16) (vLLM's quantization-method constructors map checkpoint schemes to
  ``QuantKey`` constants, e.g. compressed-tensors' dynamic per-tensor input -> ``kFp8Dynamic128Sym``);
* ``blocks``: how the weight block the oracle sees follows from the checkpoint block, the TP shard
  and the request (``BlockRule``; computed in :func:`moe_oracle.core.normalize.apply_block_rules`).
"""

from __future__ import annotations

from typing import Sequence

from ..catalog import BlockRule, KeyRewrite
from ..fields import NONE
from ..quant import QUANT_KEYS
from ..tables import TableFile
from .context import INVALID, CompileContext
from .values import condition

__all__ = ["compile_frontends"]


def compile_frontends(ctx: CompileContext, files: Sequence[TableFile]) -> tuple[tuple[KeyRewrite, ...], tuple[BlockRule, ...]]:
    """(key rewrites, block rules), each in table order (files in path order)."""
    if not files and ctx.base is not None:
        return ctx.base.rewrites, ctx.base.block_rules
    rewrites: list[KeyRewrite] = []
    blocks: list[BlockRule] = []
    for tf in files:
        for i, raw in enumerate(tf.data.get("rewrites", [])):
            ctx.at(tf.path, raw["id"])
            path = f"$.rewrites[{i}]"
            ctx.claim(raw["id"], f"{path}.id")
            when = condition(ctx, raw["when"], f"{path}.when")
            for side in ("weight", "activation"):
                key = raw.get(side)
                allowed = set(QUANT_KEYS) | ({NONE} if side == "activation" else set())
                if key is not None and key not in allowed:
                    ctx.issue(f"{path}.{side}", "unknown quant key", key, sorted(allowed))
            rng = ctx.engine_range(raw, path)
            if when is not None and rng is not INVALID:
                rewrites.append(KeyRewrite(raw["id"], when, raw.get("weight"), raw.get("activation"), raw["reason"], raw["reference"], rng,  # type: ignore[arg-type]
                                           quant_method=raw.get("quant_method"), source_selection=bool(raw.get("source_selection", False)),
                                           source_late=frozenset(raw.get("source_late", ()))))
        for i, raw in enumerate(tf.data.get("blocks", [])):
            ctx.at(tf.path, raw["id"])
            path = f"$.blocks[{i}]"
            ctx.claim(raw["id"], f"{path}.id")
            when = condition(ctx, raw["when"], f"{path}.when")
            for j, b in enumerate(raw.get("refinable", ())):
                ctx.known_backend(b, f"{path}.refinable[{j}]")
            key_block = raw.get("key_block")
            if raw.get("online") and not key_block:
                ctx.issue(f"{path}.online", "an online block rule needs key_block (the block the method quantizes the weights to)", True, None)
            rng = ctx.engine_range(raw, path)
            if when is not None and rng is not INVALID:
                blocks.append(BlockRule(
                    raw["id"], when, bool(raw.get("refine", False)), int(raw.get("min_block", 1)), bool(raw.get("pad", False)),
                    tuple(raw.get("refinable", ())), tuple(key_block) if key_block else None, raw["reference"], rng,  # type: ignore[arg-type]
                    online=bool(raw.get("online", False)),
                ))
    return tuple(rewrites), tuple(blocks)
