"""``kind: environment`` (``rules/environment.yaml``): the closed list of environment variables."""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from ..normalize import EnvVarSpec
from ..tables import TableFile
from .context import INVALID, CompileContext

__all__ = ["compile_environment"]


def compile_environment(ctx: CompileContext, files: Sequence[TableFile]) -> tuple[EnvVarSpec, ...]:
    """Every variable with its type, default and engine range; sets ``ctx.env_types``."""
    if not files:
        return ctx.base.env_vars if ctx.base is not None else ()
    tf = files[0]
    out: list[EnvVarSpec] = []
    for i, var in enumerate(tf.data["variables"]):
        ctx.at(tf.path, var["name"])
        if var["name"] in ctx.env_types:
            ctx.issue(f"$.variables[{i}].name", "duplicate environment variable", var["name"])
        expected = bool if var["type"] == "bool" else str
        if not isinstance(var["default"], expected):
            ctx.issue(f"$.variables[{i}].default", f"default must be a {var['type']}", var["default"])
        rng = ctx.engine_range(var, f"$.variables[{i}]")
        ctx.env_types[var["name"]] = var["type"]
        spec = EnvVarSpec(var["name"], var["type"], var["default"], var["doc"])
        out.append(replace(spec, engine=None if rng is INVALID else rng))
    return tuple(out)
