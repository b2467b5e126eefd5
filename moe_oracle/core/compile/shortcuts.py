"""``kind: shortcuts`` (``rules/shortcuts.yaml``): engine paths that return a kernel before checking it."""

from __future__ import annotations

from typing import Sequence

from ..catalog import Shortcut
from ..tables import TableFile
from .context import INVALID, CompileContext
from .values import condition

__all__ = ["compile_shortcuts"]


def compile_shortcuts(ctx: CompileContext, files: Sequence[TableFile]) -> tuple[Shortcut, ...]:
    out: list[Shortcut] = []
    for tf in files:
        for i, raw in enumerate(tf.data["shortcuts"]):
            ctx.at(tf.path, raw["id"])
            path = f"$.shortcuts[{i}]"
            ctx.claim(raw["id"], f"{path}.id")
            when = condition(ctx, raw["when"], f"{path}.when")
            ok = all([ctx.known_kernel(k, f"{path}.try[{j}]", "shortcut") for j, k in enumerate(raw["try"])])
            otherwise = raw.get("otherwise")
            if otherwise is None and not raw["try"]:
                ctx.issue(f"{path}.try", "a shortcut without `otherwise` needs kernels to try", raw["try"])
                ok = False
            if otherwise is not None:
                ok = ctx.known_kernel(otherwise, f"{path}.otherwise", "shortcut") and ok
            if otherwise is not None and otherwise in raw["try"]:
                ctx.issue(f"{path}.otherwise", "the unchecked kernel is also tried with checks", raw["otherwise"])
                ok = False
            selected = tuple(raw.get("selected", ()))
            ok = all([ctx.known_kernel(k, f"{path}.selected[{j}]", "shortcut") for j, k in enumerate(selected)]) and ok
            if selected and otherwise is None:
                ctx.issue(f"{path}.otherwise", "a shortcut after selection (selected) needs the kernel it returns", None)
                ok = False
            if selected and raw["try"]:
                ctx.issue(f"{path}.try", "a shortcut after selection (selected) tries no kernel", raw["try"])
                ok = False
            if otherwise is not None and otherwise in selected:
                ctx.issue(f"{path}.otherwise", "a kernel cannot stand in for itself", otherwise)
                ok = False
            rng = ctx.engine_range(raw, path)
            if when is not None and ok and rng is not INVALID:
                out.append(Shortcut(raw["id"], when, tuple(raw["try"]), otherwise, raw["label"], raw["reason"], raw["reference"], rng, selected))  # type: ignore[arg-type]
    return tuple(out)
