"""``kind: aliases`` (``rules/aliases.yaml``): user-facing backend names and all2all spellings."""

from __future__ import annotations

from typing import Sequence

from ..catalog import All2AllAlias, BackendAlias
from ..tables import TableFile
from .context import INVALID, CompileContext

__all__ = ["compile_aliases"]


def compile_aliases(ctx: CompileContext, files: Sequence[TableFile]) -> tuple[tuple[BackendAlias, ...], tuple[All2AllAlias, ...]]:
    """(backend aliases, all2all aliases). A runtime set keeps the engine's names of the backends it has."""
    if not files:
        if ctx.base is not None:
            return ctx.base.backend_aliases, ctx.base.all2all_aliases
        return (), ()
    tf = files[0]
    backends: list[BackendAlias] = []
    for name, raw in tf.data["backends"].items():
        ctx.at(tf.path, name)
        path = f"$.backends.{name}"
        for j, b in enumerate(raw["backends"]):
            ctx.known_backend(b, f"{path}.backends[{j}]")
        if name in ctx.backends and raw["backends"][0] != name:
            # A backend id's own name may select more backends after it (vLLM maps one
            # name to several variant backends, e.g. MXFP4 flashinfer_trtllm), never others instead.
            ctx.issue(path, "an alias named after a backend id must select that backend first", name)
        rng = ctx.engine_range(raw, path)
        if rng is not INVALID:
            backends.append(BackendAlias(name, tuple(raw["backends"]), raw.get("quant_scheme"), rng))  # type: ignore[arg-type]
    ctx.at(tf.path)
    if "auto" in tf.data["backends"]:
        ctx.issue("$.backends.auto", "'auto' is reserved", "auto")
    all2all: list[All2AllAlias] = []
    for name, raw in tf.data["all2all"].items():
        ctx.at(tf.path, name)
        rng = ctx.engine_range(raw, f"$.all2all.{name}")
        if rng is not INVALID:
            all2all.append(All2AllAlias(name, raw["to"], raw["status"], raw.get("remove_after"), raw.get("note", ""), raw["reference"], rng))  # type: ignore[arg-type]
    return tuple(backends), tuple(all2all)
