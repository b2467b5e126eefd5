"""The reviewed list of deliberate differences between our answer and a vLLM release's.

``moe_oracle/verify/divergences.yaml`` (read with ``tables.safe_load``: ``yaml.safe_load`` refusing duplicate keys; validated against
``schemas/divergences.schema.json``) lists each difference we keep on purpose: which
releases, which deployments (``when``), what each side answers, why, the rule of ours
that decides it and an upstream reference. A disagreement that no entry explains fails
the differential CI tier.

``when`` keys are :class:`~moe_oracle.verify.cases.Deployment` fields (a list of
allowed values), ``env.<VAR>`` (allowed raw values; ``null`` = unset) and
``package.<name>`` (``true``/``false``: present or not). ``vllm`` and ``ours`` match
fields of each side's :class:`~moe_oracle.verify.cases.Answer`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from ..core._resources import package_dir
from ..core.errors import InputIssue, TableError
from ..core.tables import load_schemas, safe_load, validate_document
from .cases import Answer, Deployment

__all__ = ["Divergence", "load_divergences", "match_divergence", "DEFAULT_PATH"]

DEFAULT_PATH = package_dir() / "verify" / "divergences.yaml"


@dataclass(frozen=True)
class Divergence:
    """One reviewed, deliberate difference."""

    id: str
    releases: SpecifierSet
    when: Mapping[str, tuple[Any, ...]]
    vllm: Mapping[str, Any]
    ours: Mapping[str, Any]
    reason: str
    rule: str
    reference: str

    def matches(self, release: str, dep: Deployment, theirs: Answer, mine: Answer) -> bool:
        if Version(release) not in self.releases:
            return False
        env = dep.env_map
        for key, allowed in self.when.items():
            if key.startswith("env."):
                value: Any = env.get(key[4:])
            elif key.startswith("package."):
                value = key[8:] in dep.packages
            else:
                value = getattr(dep, key)
                if isinstance(value, tuple):
                    value = list(value)
            if value not in allowed:
                return False
        for side, want in ((theirs, self.vllm), (mine, self.ours)):
            for key, value in want.items():
                if getattr(side, key) != value:
                    return False
        return True


def load_divergences(path: Path | None = None) -> tuple[Divergence, ...]:
    """Read and validate the divergence list.

    Raises:
        TableError: unreadable, not YAML, schema-invalid, duplicate ids or unknown ``when`` keys.
    """
    path = path or DEFAULT_PATH
    display = str(path)
    try:
        doc = safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise TableError([InputIssue("$", f"cannot read divergences: {exc}", None, None, display)]) from None
    schema = load_schemas().for_kind("divergences")
    issues = validate_document(schema, doc, display)
    if issues:
        raise TableError(issues)
    fields = set(Deployment.__dataclass_fields__)
    out: list[Divergence] = []
    seen: set[str] = set()
    problems: list[InputIssue] = []
    for i, raw in enumerate(doc["divergences"]):
        if raw["id"] in seen:
            problems.append(InputIssue(f"$.divergences[{i}].id", "duplicate divergence id", raw["id"], None, display))
        seen.add(raw["id"])
        for key in raw.get("when", {}):
            if not (key in fields or key.startswith(("env.", "package."))):
                problems.append(InputIssue(f"$.divergences[{i}].when.{key}", "unknown deployment field", key, sorted(fields) + ["env.<VAR>", "package.<name>"], display))
        out.append(
            Divergence(
                id=raw["id"],
                releases=SpecifierSet(raw.get("releases", "")),
                when={k: tuple(v) for k, v in raw.get("when", {}).items()},
                vllm=dict(raw.get("vllm", {})),
                ours=dict(raw.get("ours", {})),
                reason=raw["reason"],
                rule=raw["rule"],
                reference=raw["reference"],
            )
        )
    if problems:
        raise TableError(problems)
    return tuple(out)


def match_divergence(divergences: Sequence[Divergence], release: str, dep: Deployment, theirs: Answer, mine: Answer) -> Divergence | None:
    """The first reviewed divergence that explains this disagreement, if any."""
    for div in divergences:
        if div.matches(release, dep, theirs, mine):
            return div
    return None
