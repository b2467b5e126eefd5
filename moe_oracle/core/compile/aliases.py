"""``kind: aliases`` (``rules/aliases.yaml``): user-facing backend names and all2all spellings."""

from __future__ import annotations

from typing import Any, Sequence

from ..catalog import All2AllAlias, BackendAlias, RequestMap
from ..tables import TableFile
from ..vocab import ActivationFormat
from .context import INVALID, CompileContext
from .values import condition

__all__ = ["compile_aliases"]


def compile_aliases(ctx: CompileContext, files: Sequence[TableFile]) -> tuple[tuple[BackendAlias, ...], tuple[All2AllAlias, ...], tuple[RequestMap, ...], tuple[tuple[frozenset[str], Any], ...]]:
    """(backend aliases, all2all aliases, per-family request maps, engine names). A runtime set keeps the engine's."""
    if not files:
        if ctx.base is not None:
            return ctx.base.backend_aliases, ctx.base.all2all_aliases, ctx.base.request_maps, ctx.base.engine_names
        return (), (), (), ()
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
            backends.append(BackendAlias(name, tuple(raw["backends"]), raw.get("quant_scheme"), rng, raw.get("all2all")))  # type: ignore[arg-type]
    ctx.at(tf.path)
    if "auto" in tf.data["backends"]:
        ctx.issue("$.backends.auto", "'auto' is reserved", "auto")
    all2all: list[All2AllAlias] = []
    for name, raw in tf.data["all2all"].items():
        ctx.at(tf.path, name)
        rng = ctx.engine_range(raw, f"$.all2all.{name}")
        if rng is not INVALID:
            all2all.append(All2AllAlias(name, raw["to"], raw["status"], raw.get("remove_after"), raw.get("note", ""), raw["reference"], rng))  # type: ignore[arg-type]
    return tuple(backends), tuple(all2all), _request_maps(ctx, tf), _engine_names(ctx, tf)


def _engine_names(ctx: CompileContext, tf: TableFile) -> tuple[tuple[frozenset[str], Any], ...]:
    out: list[tuple[frozenset[str], Any]] = []
    for i, raw in enumerate(tf.data.get("engine_names", [])):
        ctx.at(tf.path, raw["id"])
        ctx.claim(raw["id"], f"$.engine_names[{i}].id")
        rng = ctx.engine_range(raw, f"$.engine_names[{i}]")
        if "auto" not in raw["names"]:
            ctx.issue(f"$.engine_names[{i}].names", "the engine's names must include 'auto'", raw["names"])
        if rng is not INVALID:
            out.append((frozenset(raw["names"]), rng))
    return tuple(out)


def _request_maps(ctx: CompileContext, tf: TableFile) -> tuple[RequestMap, ...]:
    out: list[RequestMap] = []
    backend_of = {e.id: e.backend for e in ctx.experts}
    for i, raw in enumerate(tf.data.get("requests", [])):
        ctx.at(tf.path, raw["id"])
        path = f"$.requests[{i}]"
        ctx.claim(raw["id"], f"{path}.id")
        when = condition(ctx, raw["when"], f"{path}.when")
        names: dict[str, tuple[str, ...]] = {}
        formats: dict[str, str] = {}
        kernels: dict[str, tuple[str, ...]] = {}
        for name, target in raw["names"].items():
            spec = target if isinstance(target, dict) else {"backends": target}
            if "kernels" in spec:
                known = [k for j, k in enumerate(spec["kernels"]) if ctx.known_kernel(k, f"{path}.names.{name}.kernels[{j}]", "request map")]
                kernels[name] = tuple(known)
                names[name] = tuple(dict.fromkeys(backend_of[k] for k in known if k in backend_of))
                continue
            for j, b in enumerate(spec["backends"]):
                ctx.known_backend(b, f"{path}.names.{name}.backends[{j}]")
            names[name] = tuple(spec["backends"])
            if "activation_format" in spec:
                formats[name] = ActivationFormat(spec["activation_format"]).value
        auto = tuple(raw.get("auto", ()))
        both = sorted(set(auto) & set(names))
        if both:
            ctx.issue(f"{path}.auto", "a name cannot both request backends and mean auto", both)
        if "auto" in names:
            ctx.issue(f"{path}.names.auto", "'auto' is reserved", "auto")
        rng = ctx.engine_range(raw, path)
        if when is not None and rng is not INVALID:
            asks = ActivationFormat(raw["asks_format"]).value if "asks_format" in raw else None
            out.append(RequestMap(raw["id"], when, names, auto, formats, raw["reference"], rng, kernels, asks))  # type: ignore[arg-type]
    return tuple(out)
