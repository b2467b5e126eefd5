"""Release-ranged identity of experts and prepare/finalize entries (``by_engine``).

An entry's ``activation_format``, ``upstream`` and ``adapter`` hold where no item of its
``by_engine`` list admits the release; an item such as ``{engine: {vllm: ">=0.34.0"},
activation_format: padded_standard}`` replaces them in the releases its range admits (vLLM 0.34.0
moved TritonExperts, DeepGEMM, the TRT-LLM modular classes and DeepEP v2 to ``PaddedStandard``,
P/modular_kernel.py, and split TrtLlmMxfp4ExpertsModular, P/experts/trtllm_mxfp4_moe.py).
Checked at compile time (:func:`identity_issues`), applied when a release's view is linked
(:func:`identity_for`).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from packaging.version import Version

from ..versions import admits, parse_range
from ..vocab import ActivationFormat

__all__ = ["KEY", "FIELDS", "PARSED_KEY", "identity_for", "identity_issues", "with_parsed"]

KEY = "by_engine"
PARSED_KEY = "_by_engine_parsed"
"""Where compilation keeps the parsed ranges in an entry's ``declared`` mapping, so that linking a
view (at load, on the select fast path) builds no SpecifierSet."""
FIELDS = ("activation_format", "upstream", "adapter")
"""The entry fields a ``by_engine`` item may replace."""


def identity_for(declared: Mapping[str, Any], version: Version, engine: str = "vllm") -> dict[str, Any]:
    """The fields ``declared``'s ``by_engine`` replaces in engine release ``version`` (``{}``: none;
    ``activation_format`` as an :class:`ActivationFormat`).

    >>> d = {KEY: [{"engine": {"vllm": ">=0.34.0"}, "activation_format": "padded_standard"}]}
    >>> identity_for(d, Version("0.34.0"))["activation_format"].value, identity_for(d, Version("0.33.0"))
    ('padded_standard', {})
    """
    parsed = declared.get(PARSED_KEY)
    items = parsed if parsed is not None else [(parse_range(item["engine"][engine]), item) for item in declared.get(KEY) or ()]
    for rng, item in items:
        if admits(rng, version):
            out = {k: item[k] for k in FIELDS if k in item}
            if "activation_format" in out:
                out["activation_format"] = ActivationFormat(out["activation_format"])
            return out
    return {}


def identity_issues(raw: Mapping[str, Any], releases: Iterable[Version], engine: str = "vllm") -> list[tuple[str, str, Any]]:
    """``(json path, message, value)`` for each bad item: a range that does not parse, a format
    outside the vocabulary, two items admitting one modelled release, or an item that admits none."""
    issues: list[tuple[str, str, Any]] = []
    parsed = []
    for i, item in enumerate(raw.get(KEY) or ()):
        path = f"$.{KEY}[{i}]"
        try:
            rng = parse_range((item.get("engine") or {})[engine])
        except (KeyError, ValueError) as exc:
            issues.append((f"{path}.engine", f"not a range on {engine}: {exc}", item.get("engine")))
            continue
        if "activation_format" in item:
            try:
                ActivationFormat(item["activation_format"])
            except ValueError:
                issues.append((f"{path}.activation_format", "not an activation format", item["activation_format"]))
                continue
        parsed.append((path, rng))
    releases = list(releases)
    for path, rng in parsed:
        if releases and not any(admits(rng, v) for v in releases):
            issues.append((path, "admits no modelled release", str(rng)))
    for v in releases:
        hits = [p for p, r in parsed if admits(r, v)]
        if len(hits) > 1:
            issues.append((hits[1], f"overlaps {hits[0]} at release {v}", str(v)))
    return issues


def with_parsed(raw: Mapping[str, Any], engine: str = "vllm") -> dict[str, Any]:
    """``raw`` plus its ``by_engine`` ranges parsed once (:data:`PARSED_KEY`); call after
    :func:`identity_issues` found none."""
    out = dict(raw)
    if raw.get(KEY):
        out[PARSED_KEY] = tuple((parse_range(item["engine"][engine]), item) for item in raw[KEY])
    return out
