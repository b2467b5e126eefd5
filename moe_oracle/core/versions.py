"""The engine release an answer is for: modelled releases, version ranges, and how a release is known.

Table facts may carry ``engine: {vllm: "<PEP 440 specifier>"}``: the releases they hold for
(absent: every release). ``rules/engine.yaml`` declares the engine, the releases the tables model
and the package versions each release pins (vLLM 0.31.0 pins flashinfer-python 0.7.0.post1).

The release is an input, resolved from the :class:`~moe_oracle.core.environment.Environment`:

* *declared* (``--package vllm==0.31.0``) or *probed* (``--probe`` reads the installed vllm);
* otherwise *assumed*: the newest modelled release, recorded as an assumption.

A known release that is a modelled one also fixes the versions it pins: when the environment
does not name flashinfer-python, the pinned version is assumed (``Source.ENGINE_PIN``). A release
outside the modelled set still gets an answer (the facts whose ranges admit it) plus a warning.
Version comparison is ``packaging``'s: nothing here compares versions by hand.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, Mapping

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from .environment import ABSENT, Environment

__all__ = ["EngineRelease", "EngineSpec", "Known", "ModelledRelease", "admits", "parse_range", "resolve_release"]


class Known(str, enum.Enum):
    """How the engine release of an answer was known."""

    DECLARED = "declared"  # --package / Environment.declared
    PROBED = "probed"  # read from the installed distribution
    ASSUMED = "assumed"  # unknown: the newest modelled release


def parse_range(text: str) -> SpecifierSet:
    """A PEP 440 specifier set (``">=0.31.0,<0.33.0"``).

    >>> admits(parse_range(">=0.31.0"), Version("0.33.1.dev0+gabc"))
    True

    Raises:
        ValueError: not a PEP 440 specifier set, or empty (an empty range would mean "every release").
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"an engine range must be a non-empty PEP 440 specifier set, got {text!r}")
    try:
        return SpecifierSet(text)
    except InvalidSpecifier as exc:
        raise ValueError(f"invalid PEP 440 specifier set {text!r}: {exc}") from None


def admits(spec: SpecifierSet | None, version: Version) -> bool:
    """Whether a fact with range ``spec`` holds for ``version`` (``None``: every version).

    Development and pre-releases are admitted by the ranges around them: a 0.33.1.dev0 build
    of main holds the facts of ``>=0.31.0``.
    """
    return spec is None or spec.contains(version, prereleases=True)


@dataclass(frozen=True)
class ModelledRelease:
    """One engine release the tables model (``rules/engine.yaml``).

    Attributes:
        version: the release.
        verified: the tables were checked against this release's code.
        date: release date (ISO), informational.
        pins: canonical package name -> version the release pins (``flashinfer-python``).
    """

    version: Version
    verified: bool
    date: str | None
    pins: Mapping[str, str]


@dataclass(frozen=True)
class EngineSpec:
    """The engine a table set models.

    Attributes:
        name: canonical package name (``vllm``); the key of every ``engine:`` range.
        display: how answers name it (``vLLM``).
        releases: modelled releases, oldest first.
        newest_packages: newest version of each pinned package the tables know (``flashinfer-python: 0.7.4``).
        reference: where the release facts come from.
    """

    name: str
    display: str
    releases: tuple[ModelledRelease, ...]
    newest_packages: Mapping[str, str] = field(default_factory=dict)
    reference: str = ""

    @property
    def newest(self) -> ModelledRelease:
        return self.releases[-1]

    @property
    def oldest(self) -> ModelledRelease:
        return self.releases[0]

    @cached_property
    def pinned_names(self) -> tuple[str, ...]:
        """Every package a release pins or whose newest version is declared (sorted)."""
        return tuple(sorted({n for r in self.releases for n in r.pins} | set(self.newest_packages)))

    @cached_property
    def known_versions(self) -> Mapping[str, tuple[str, ...]]:
        """Canonical package name -> the versions the tables know, newest first: the engine's
        modelled releases, and each pinned package's pins and newest version (what a version
        range written where one version is needed can be held to)."""
        known: dict[str, set[str]] = {self.name: {str(r.version) for r in self.releases}}
        for rel in self.releases:
            for pkg, version in rel.pins.items():
                known.setdefault(pkg, set()).add(version)
        for pkg, version in self.newest_packages.items():
            known.setdefault(pkg, set()).add(version)
        return MappingProxyType({pkg: tuple(sorted(vs, key=Version, reverse=True)) for pkg, vs in known.items()})

    def modelled(self, version: Version) -> ModelledRelease | None:
        """The modelled release ``version`` is (a local build ``0.31.0+cu130`` counts as 0.31.0)."""
        public = Version(version.public)
        for rel in self.releases:
            if rel.version == public:
                return rel
        return None

    def span(self) -> str:
        """``0.29.0–0.33.0``."""
        if len(self.releases) == 1:
            return str(self.oldest.version)
        return f"{self.oldest.version}\u2013{self.newest.version}"


@dataclass(frozen=True)
class EngineRelease:
    """The engine release one answer is for, and how it was known.

    Attributes:
        engine: canonical package name (``vllm``).
        display: ``vLLM``.
        version: the release (``0.31.0``; for an assumed release, the newest modelled).
        known: declared, probed or assumed.
        basis: why (``newest modelled``; ``vllm is not installed``).
        modelled: the release is one the tables model.
        stand_in: the modelled release whose facts stand in where the ranges say nothing new
            (the release itself when it is modelled).
        warnings: the release, or a declared pinned package, is outside what the tables model.
        assumed_packages: package -> version assumed from the release's pins (undeclared only).
    """

    engine: str
    display: str
    version: str
    known: Known
    basis: str
    modelled: bool
    stand_in: str
    warnings: tuple[str, ...] = ()
    assumed_packages: Mapping[str, str] = field(default_factory=dict)

    @property
    def parsed(self) -> Version:
        return Version(self.version)

    def label(self) -> str:
        """``vLLM 0.31.0 (declared)``, ``vLLM 0.33.0 (assumed: newest modelled)``."""
        how = self.known.value if not self.basis else f"{self.known.value}: {self.basis}"
        return f"{self.display} {self.version} ({how})"

    def facts_named(self) -> str:
        """The words a fact of this answer names its release with: ``vLLM 0.31.0``; for an
        unmodelled release, the modelled one whose facts stand in (``vLLM 0.29.0 (standing in
        for 0.28.0)``)."""
        if self.modelled:
            return f"{self.display} {self.stand_in}"
        return f"{self.display} {self.stand_in} (standing in for {self.version})"

    def package_notes(self) -> tuple[str, ...]:
        """``flashinfer-python 0.7.0.post1 (assumed: pinned by vLLM 0.31.0)`` per assumed package."""
        return tuple(f"{name} {ver} (assumed: pinned by {self.display} {self.version})" for name, ver in sorted(self.assumed_packages.items()))

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.engine,
            "display": self.display,
            "version": self.version,
            "known": self.known.value,
            "basis": self.basis,
            "modelled": self.modelled,
            "stand_in": self.stand_in,
            "label": self.label(),
            "assumed_packages": dict(sorted(self.assumed_packages.items())),
            "warnings": list(self.warnings),
        }


def _outside(spec: EngineSpec, version: Version, how: str) -> tuple[str, str]:
    """(stand-in release, warning) for a version the tables do not model."""
    span = f"answers are for {spec.display} {spec.span()}"
    if version > spec.newest.version:
        stand_in = spec.newest
    elif version < spec.oldest.version:
        stand_in = spec.oldest
    else:
        stand_in = max((r for r in spec.releases if r.version <= version), key=lambda r: r.version)
        span = f"{spec.display} {version} is not a modelled release ({', '.join(str(r.version) for r in spec.releases)})"
        return str(stand_in.version), f"{span}; facts of {stand_in.version} that are not known to have changed are assumed"
    return str(stand_in.version), f"{span}; {how} {version}: facts of {stand_in.version} that are not known to have changed are assumed"


def resolve_release(spec: EngineSpec, env: Environment) -> EngineRelease:
    """The engine release ``env`` declares, probes, or leaves to assume.

    >>> from packaging.version import Version
    >>> s = EngineSpec("vllm", "vLLM", (ModelledRelease(Version("0.31.0"), True, None, {"flashinfer-python": "0.7.0.post1"}),))
    >>> r = resolve_release(s, Environment.declared(["vllm==0.31.0"]))
    >>> r.label(), dict(r.assumed_packages)
    ('vLLM 0.31.0 (declared)', {'flashinfer-python': '0.7.0.post1'})
    """
    value = env.package_canonical(spec.name)
    newest = spec.newest
    if value is None or value is ABSENT:
        basis = "newest modelled" if value is None else f"newest modelled; {spec.name} is not installed"
        return EngineRelease(spec.name, spec.display, str(newest.version), Known.ASSUMED, basis, True, str(newest.version), _unverified(spec, newest) + _package_warnings(spec, env))
    version = Version(value)
    known = Known.PROBED if env.probed else Known.DECLARED
    rel = spec.modelled(version)
    warnings: list[str] = []
    assumed: dict[str, str] = {}
    if rel is None:
        stand_in, warning = _outside(spec, version, "this machine has" if known is Known.PROBED else "you declared")
        warnings.append(warning)
    else:
        stand_in = str(rel.version)
        warnings += _unverified(spec, rel)
        for name, pinned in rel.pins.items():
            if env.package_canonical(name) is None:
                assumed[name] = pinned
    warnings += _package_warnings(spec, env, rel)
    return EngineRelease(spec.name, spec.display, str(version), known, "", rel is not None, stand_in, tuple(warnings), MappingProxyType(assumed))


def _unverified(spec: EngineSpec, rel: ModelledRelease) -> tuple[str, ...]:
    """The warning for a modelled release registered ``verified: false`` (``rules/engine.yaml``:
    its facts are encoded but the differential tiers have not yet reached their thresholds on it).

    >>> _unverified(EngineSpec("vllm", "vLLM", ()), ModelledRelease(Version("0.34.0"), False, None, {}))
    ('vLLM 0.34.0 is modelled but not verified (rules/engine.yaml verified: false): its facts are encoded from its source, but the differential checks against its code have not yet passed; treat the answer with care',)
    """
    if rel.verified:
        return ()
    return (f"{spec.display} {rel.version} is modelled but not verified (rules/engine.yaml verified: false): its facts are encoded from its source, but the differential checks against its code have not yet passed; treat the answer with care",)


def _package_warnings(spec: EngineSpec, env: Environment, release: "ModelledRelease | None" = None) -> tuple[str, ...]:
    """Warnings for a declared pinned package (``flashinfer-python``) the tables do not model.

    The modelled versions of a package are those the releases pin plus the newest declared
    (``rules/engine.yaml``). A newer version, an older one, or one between them that no release
    pins is warned about as an unmodelled engine release is; so is a modelled version that is not
    the one ``release`` pins (vLLM's wheel requires its pin: the two were not released together).
    """
    out = []
    for name, newest in spec.newest_packages.items():
        value = env.package_canonical(name)
        if not isinstance(value, str):
            continue
        version = Version(value)
        modelled = sorted({Version(r.pins[name]) for r in spec.releases if name in r.pins} | {Version(newest)})
        if version > Version(newest):
            out.append(f"{name} {value} is newer than the newest the tables know ({newest}); its facts are assumed unchanged since {newest}")
        elif version < modelled[0]:
            out.append(f"{name} {value} is older than any version the tables model ({', '.join(map(str, modelled))}); its facts are those of {modelled[0]}, assumed unchanged back to {value}")
        elif version not in modelled:
            below = max(v for v in modelled if v <= version)
            out.append(f"{name} {value} is not a modelled version ({', '.join(map(str, modelled))}); facts of {below} that are not known to have changed are assumed")
        elif release is not None and name in release.pins and version != Version(release.pins[name]):
            out.append(f"{spec.display} {release.version} pins {name}=={release.pins[name]}; you declared {value}: the answer uses the facts whose {name} ranges admit {value}, a pairing vLLM did not ship")
    return tuple(out)
