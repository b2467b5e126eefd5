"""The releases the differential harness drives, read from the engine table (``rules/engine.yaml``).

One source for the harness's release list, each release's FlashInfer pin and the documented
substitute of a pin the package index does not serve, so registering a release is one edit of
``rules/engine.yaml`` (:func:`register_release` makes it; ``python -m moe_oracle.verify.new_release``
calls that). Read with ``yaml.safe_load`` (no table compilation: the worker imports this early).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

import yaml
from packaging.version import Version

from ..core._resources import package_dir

__all__ = ["ENGINE_TABLE", "Release", "harness_releases", "register_release", "read_releases"]

ENGINE_TABLE = package_dir() / "rules" / "engine.yaml"


@dataclass(frozen=True)
class Release:
    """One release of ``rules/engine.yaml``.

    Attributes:
        version: ``0.34.0``.
        verified: the tables were checked against it.
        flashinfer_pin: the flashinfer-python version its wheel pins (``None``: not recorded).
        flashinfer_substitute: ``(installed version, why)`` where the index does not serve the pin.
    """

    version: str
    verified: bool
    flashinfer_pin: str | None
    flashinfer_substitute: tuple[str, str] | None


def read_releases(path: Path = ENGINE_TABLE) -> tuple[Release, ...]:
    """The releases of the engine table, oldest first.

    Raises:
        ValueError: the file has no ``releases`` list, or a release without ``version``.
    """
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    raw = doc.get("releases")
    if not isinstance(raw, list):
        raise ValueError(f"{path}: releases: expected a list of releases")
    out = []
    for i, r in enumerate(raw):
        if "version" not in r:
            raise ValueError(f"{path}: releases[{i}]: no version")
        sub = ((r.get("substitutes") or {}).get("flashinfer-python")) or None
        out.append(Release(str(r["version"]), bool(r.get("verified", False)), (r.get("pins") or {}).get("flashinfer-python"),
                           (str(sub["version"]), " ".join(str(sub["why"]).split())) if sub else None))
    return tuple(sorted(out, key=lambda r: Version(r.version)))


def harness_releases(path: Path = ENGINE_TABLE) -> tuple[str, ...]:
    """The versions the harness drives: every release of the engine table, oldest first."""
    return tuple(r.version for r in read_releases(path))


def flashinfer_pins(path: Path = ENGINE_TABLE) -> Mapping[str, str]:
    return MappingProxyType({r.version: r.flashinfer_pin for r in read_releases(path) if r.flashinfer_pin})


def flashinfer_substitutes(path: Path = ENGINE_TABLE) -> Mapping[str, tuple[str, str]]:
    """Pinned version -> (installed version, why)."""
    return MappingProxyType({r.flashinfer_pin: r.flashinfer_substitute for r in read_releases(path) if r.flashinfer_pin and r.flashinfer_substitute})


_VERSION = re.compile(r"^\d+\.\d+\.\d+$")


def register_release(version: str, *, date: str | None, flashinfer_pin: str | None, substitute: tuple[str, str] | None = None, path: Path = ENGINE_TABLE) -> bool:
    """Append ``version`` to the engine table's ``releases`` (``verified: false``), keeping the
    file's comments and layout; returns False when it is already listed.

    Raises:
        ValueError: ``version`` is not ``X.Y.Z``, or is not newer than every listed release (insert
            an older one by hand), or the file has no ``packages:`` block to insert before.
    """
    if not _VERSION.match(version):
        raise ValueError(f"version: {version!r} is not X.Y.Z")
    listed = read_releases(path)
    if any(r.version == version for r in listed):
        return False
    if listed and Version(version) < Version(listed[-1].version):
        raise ValueError(f"version: {version} is older than {listed[-1].version}; register it by hand in {path}")
    text = path.read_text(encoding="utf-8")
    lines = [f'  - version: "{version}"\n']
    if date:
        lines.append(f'    date: "{date}"\n')
    lines.append("    verified: false\n")
    if flashinfer_pin:
        lines.append(f'    pins: {{flashinfer-python: "{flashinfer_pin}"}}\n')
    if substitute:
        why = substitute[1].replace("\n", " ")
        lines += ["    substitutes:\n", "      flashinfer-python:\n", f'        version: "{substitute[0]}"\n', f"        why: >-\n          {why}\n"]
    marker = "\npackages:"
    at = text.find(marker)
    if at < 0:
        raise ValueError(f"{path}: no top-level 'packages:' block after releases")
    new = text[: at + 1] + "".join(lines) + text[at + 1 :]
    doc: Any = yaml.safe_load(new)
    if str(doc["releases"][-1]["version"]) != version:
        raise ValueError(f"{path}: the release list is not the block before 'packages:'; register {version} by hand")
    path.write_text(new, encoding="utf-8")
    return True
