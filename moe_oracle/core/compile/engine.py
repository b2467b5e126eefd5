"""``kind: engine`` (``rules/engine.yaml``): the engine, the releases the tables model, their pins."""

from __future__ import annotations

from types import MappingProxyType
from typing import Sequence

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ..tables import TableFile
from ..versions import EngineSpec, ModelledRelease
from .context import CompileContext

__all__ = ["compile_engine"]


def _version(ctx: CompileContext, text: object, path: str) -> Version | None:
    try:
        return Version(str(text))
    except InvalidVersion:
        ctx.issue(path, "not a PEP 440 version", text)
        return None


def _package(ctx: CompileContext, name: str, path: str) -> bool:
    if canonicalize_name(name) != name:
        ctx.issue(path, "package names must be canonical (PEP 503)", name, [canonicalize_name(name)])
        return False
    return True


def compile_engine(ctx: CompileContext, files: Sequence[TableFile]) -> EngineSpec | None:
    """The engine declaration; sets ``ctx.engine`` for the ``engine:`` ranges of later kinds."""
    if not files:
        return ctx.engine  # a runtime table set uses its base's
    tf = files[0]
    ctx.at(tf.path, tf.data["name"])
    doc = tf.data
    name = doc["name"]
    _package(ctx, name, "$.name")
    releases: list[ModelledRelease] = []
    seen: set[Version] = set()
    for i, raw in enumerate(doc["releases"]):
        version = _version(ctx, raw["version"], f"$.releases[{i}].version")
        if version is None:
            continue
        if version in seen:
            ctx.issue(f"$.releases[{i}].version", "release listed twice", raw["version"])
            continue
        seen.add(version)
        pins: dict[str, str] = {}
        for pkg, pinned in (raw.get("pins") or {}).items():
            if _package(ctx, pkg, f"$.releases[{i}].pins.{pkg}") and _version(ctx, pinned, f"$.releases[{i}].pins.{pkg}") is not None:
                pins[pkg] = str(pinned)
        releases.append(ModelledRelease(version, bool(raw.get("verified", False)), raw.get("date"), MappingProxyType(pins)))
    releases.sort(key=lambda r: r.version)
    newest: dict[str, str] = {}
    for pkg, raw in (doc.get("packages") or {}).items():
        path = f"$.packages.{pkg}.newest"
        if not _package(ctx, pkg, f"$.packages.{pkg}"):
            continue
        v = _version(ctx, raw["newest"], path)
        if v is None:
            continue
        older = [r for r in releases if pkg in r.pins and Version(r.pins[pkg]) > v]
        if older:
            ctx.issue(path, f"older than what release {older[0].version} pins ({older[0].pins[pkg]})", raw["newest"])
            continue
        newest[pkg] = str(raw["newest"])
    if not releases:
        ctx.issue("$.releases", "no valid release: the tables must model at least one")
        return None
    spec = EngineSpec(name, doc["display"], tuple(releases), MappingProxyType(newest), doc.get("reference", ""))
    ctx.engine = spec
    return spec
