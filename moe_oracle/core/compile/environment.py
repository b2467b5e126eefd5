"""``kind: environment`` (``rules/environment.yaml``): the closed list of environment variables
the engine reads (with how it parses each) and the variables it no longer reads."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from ..envvars import EnvVarSpec, RemovedEnvVar, removed_from_tables
from ..tables import TableFile
from .context import INVALID, CompileContext

__all__ = ["EnvironmentTables", "compile_environment"]


@dataclass(frozen=True)
class EnvironmentTables:
    """The variables read (with parse kind and engine range) and the removed ones."""

    variables: tuple[EnvVarSpec, ...]
    removed: tuple[RemovedEnvVar, ...]


def compile_environment(ctx: CompileContext, files: Sequence[TableFile]) -> EnvironmentTables:
    """Every variable with its type, parse kind, default and engine range; sets ``ctx.env_types``."""
    if not files:
        if ctx.base is not None:
            return EnvironmentTables(ctx.base.env_vars, ctx.base.removed_env_vars)
        return EnvironmentTables((), ())
    tf = files[0]
    out: list[EnvVarSpec] = []
    for i, var in enumerate(tf.data["variables"]):
        ctx.at(tf.path, var["name"])
        if var["name"] in ctx.env_types:
            ctx.issue(f"$.variables[{i}].name", "duplicate environment variable", var["name"])
        expected = bool if var["type"] == "bool" else str
        if not isinstance(var["default"], expected):
            ctx.issue(f"$.variables[{i}].default", f"default must be a {var['type']}", var["default"])
        parse = var.get("parse")
        if parse is not None and (var["type"] == "str" and parse not in ("str", "lower") or var["type"] == "bool" and parse in ("str", "lower")):
            ctx.issue(f"$.variables[{i}].parse", f"a {var['type']} variable cannot be parsed as {parse}", parse)
            parse = None
        rng = ctx.engine_range(var, f"$.variables[{i}]")
        ctx.env_types[var["name"]] = var["type"]
        choices = tuple(var.get("choices") or ())
        if choices and var["type"] != "str":
            ctx.issue(f"$.variables[{i}].choices", "only a str variable has choices", list(choices))
            choices = ()
        spec = EnvVarSpec(var["name"], var["type"], var["default"], var["doc"], parse, choices=choices)
        out.append(replace(spec, engine=None if rng is INVALID else rng))
    removed = removed_from_tables(tf.data.get("removed") or ())
    for i, gone in enumerate(removed):
        if gone.name in ctx.env_types:
            ctx.at(tf.path, gone.name)
            ctx.issue(f"$.removed[{i}].name", "a removed variable cannot also be read", gone.name)
    return EnvironmentTables(tuple(out), removed)
