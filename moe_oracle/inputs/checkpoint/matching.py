"""Exclusion and target matching, exactly as vLLM 0.33.0-0.34.0 matches a routed-experts module.

Each function mirrors one engine routine and names it. All take the experts module
name as it appears in the checkpoint (``model.layers.3.mlp.experts``); vLLM maps both
the module prefix and the pattern lists through the model's ``WeightsMapper`` before
matching, which is a prefix rename, so matching in checkpoint names gives the same
answer. A match returns the pattern that decided it (for the plan's "because").

Sources (vLLM 0.33.0-0.34.0): ``Q/utils/quant_utils.py is_layer_skipped``,
``Q/utils/config_utils.py is_equal_or_regex_match / find_matching_patterns``,
``Q/compressed_tensors/utils.py find_matched_target``, ``Q/modelopt.py
ModelOptQuantConfigBase.is_layer_excluded / apply_vllm_mapper``,
``Q/quark/utils.py should_ignore_layer``, ``Q/quark/quark.py
get_layer_quant_config_from_name``, ``Q/utils/gptq_utils.py get_dynamic_override``,
``Q/moe_wna16.py is_layer_skipped_quant``.
"""

from __future__ import annotations

import re
from fnmatch import fnmatch
from typing import Any, Iterable, Literal, Mapping

__all__ = [
    "ct_find_target",
    "ct_should_ignore",
    "equal_or_regex",
    "gptq_dynamic_rule",
    "modelopt_excluded",
    "quark_layer_config",
    "quark_should_ignore",
    "substring_skipped",
    "vllm_is_layer_skipped",
]

MatchMode = Literal["exact", "substring", "suffix"]


def vllm_is_layer_skipped(prefix: str, ignored: Iterable[str], match_mode: MatchMode = "exact") -> str | None:
    """``is_layer_skipped`` for a routed-experts prefix; the deciding pattern or ``None``.

    In ``exact`` mode a prefix containing ``experts`` is skipped when an ignored name that
    itself contains ``experts`` *contains the prefix* (``model.layers.3.mlp.experts`` is
    skipped by ``model.layers.3.mlp.experts.0.gate_proj``, not by
    ``model.layers.3.mlp.shared_experts.gate_proj``).

    >>> vllm_is_layer_skipped("model.layers.3.mlp.experts", ["model.layers.3.mlp.experts.7.w1"])
    'model.layers.3.mlp.experts.7.w1'
    >>> vllm_is_layer_skipped("model.layers.3.mlp.experts", ["model.layers.3.mlp.shared_experts"]) is None
    True
    """
    names = [p for p in ignored if isinstance(p, str)]
    if match_mode == "exact":
        if "experts" in prefix:
            return next((p for p in names if "experts" in p and prefix in p), None)
        return prefix if prefix in names else None
    if match_mode == "substring":
        return next((p for p in names if p in prefix), None)
    return next((p for p in names if prefix == p or prefix.endswith(f".{p}")), None)


def substring_skipped(prefix: str, ignored: Iterable[str]) -> str | None:
    """``moe_wna16.is_layer_skipped_quant``: any listed name that is a substring of the prefix."""
    return next((p for p in ignored if isinstance(p, str) and p in prefix), None)


def equal_or_regex(value: str, target: str, *, check_contains: bool = False, use_fnmatch: bool = False) -> bool:
    """``is_equal_or_regex_match``: ``re:`` patterns use ``re.match`` (anchored at the start only).

    >>> equal_or_regex("model.layers.0.mlp.experts.0.gate_proj", "re:.*mlp\\\\.(gate|up)_proj.*")
    False
    >>> equal_or_regex("model.layers.0.mlp.shared_experts.gate_proj", "re:.*shared_experts.*")
    True
    """
    if target.startswith("re:"):
        try:
            return re.match(target[3:], value) is not None
        except re.error:
            return False
    if check_contains:
        return target.lower() in value.lower()
    return target == value or (use_fnmatch and fnmatch(value, target))


def ct_should_ignore(layer_name: str, ignore: Iterable[str]) -> str | None:
    """compressed-tensors ``should_ignore_layer`` for an unfused expert projection (no fnmatch)."""
    return next((p for p in ignore if isinstance(p, str) and equal_or_regex(layer_name, p)), None)


def ct_find_target(layer_name: str, module_class: str, targets: Iterable[str]) -> str | None:
    """compressed-tensors ``find_matched_target``: the layer name first, then the module class.

    Targets are tried in the order given; the layer name is matched exactly or by ``re:``,
    the class name (``RoutedExperts``) case-insensitively by containment.
    """
    targets = [t for t in targets if isinstance(t, str)]
    for target in targets:
        if equal_or_regex(layer_name, target):
            return target
    for target in targets:
        if equal_or_regex(module_class, target, check_contains=True):
            return target
    return None


def _modelopt_mapped(patterns: Iterable[str]) -> dict[str, str]:
    """``apply_vllm_mapper``: ``path*`` (not ``path.*``) becomes ``path`` and ``path.*``.

    Returns rewritten pattern -> the entry as the checkpoint wrote it.
    """
    out: dict[str, str] = {}
    for p in patterns:
        if not isinstance(p, str):
            continue
        if len(p) >= 2 and p[-1] == "*" and p[-2] != ".":
            out.setdefault(p[:-1], p)
            out.setdefault(p[:-1] + ".*", p)
        else:
            out.setdefault(p, p)
    return out


def modelopt_excluded(prefix: str, exclude: Iterable[str]) -> str | None:
    """``ModelOptQuantConfigBase.is_layer_excluded`` after ``apply_vllm_mapper``.

    Three passes, as the engine runs them: ``is_layer_skipped`` (exact), substring of the
    prefix (also with a leading ``language_model.`` removed), then ``fnmatch``. Returns the
    entry as the checkpoint wrote it (``mtp*``, which the engine matched as ``mtp``).

    >>> modelopt_excluded("mtp.layers.0.mlp.experts", ["mtp*"])
    'mtp*'
    >>> modelopt_excluded("model.layers.0.mlp.experts", ["model.layers.0.mlp.shared_expert*"]) is None
    True
    """
    mapped = _modelopt_mapped(exclude)
    if not mapped:
        return None
    patterns = list(mapped)
    hit = vllm_is_layer_skipped(prefix, patterns)
    if hit is not None:
        return mapped[hit]
    for p in patterns:
        if p != prefix and (p in prefix or (prefix.startswith("language_model.") and p in prefix.removeprefix("language_model."))):
            return mapped[p]
    return next((mapped[p] for p in patterns if fnmatch(prefix, p)), None)


def quark_should_ignore(prefix: str, exclude: Iterable[str]) -> str | None:
    """Quark ``should_ignore_layer(check_children=True)`` for a routed-experts prefix.

    A non-regex entry naming the prefix or any child of it ignores the whole layer (MoE
    layers are all-or-nothing); otherwise exact or ``re:`` match.
    """
    names = [p for p in exclude if isinstance(p, str)]
    hit = next((p for p in names if not p.startswith("re:") and (p == prefix or p.startswith(prefix + "."))), None)
    if hit is not None:
        return hit
    return next((p for p in names if equal_or_regex(prefix, p)), None)


def quark_layer_config(prefix: str, layer_quant_config: Mapping[str, Any]) -> tuple[str, Any] | None:
    """Quark ``get_layer_quant_config_from_name``: ``*`` patterns by fnmatch, other keys when
    the prefix is a *substring of the key* (the engine's order: first hit wins)."""
    for pattern, cfg in layer_quant_config.items():
        if not isinstance(pattern, str):
            continue
        matches = fnmatch(prefix, pattern) if "*" in pattern else prefix in pattern
        if matches:
            return pattern, cfg
    return None


def gptq_dynamic_rule(prefix: str, dynamic: Mapping[str, Any]) -> tuple[str, Any] | None:
    """GPTQModel ``dynamic`` rules (``get_dynamic_override``): first ``re.match`` wins.

    Returns ``(pattern, False)`` for a ``-:`` (skip) rule, ``(pattern, overrides)`` for a
    positive rule, ``None`` when no rule matches.
    """
    for pattern, overrides in dynamic.items():
        if not isinstance(pattern, str):
            continue
        regex = pattern[2:] if pattern.startswith(("-:", "+:")) else pattern
        try:
            hit = re.match(regex, prefix) is not None
        except re.error:
            continue
        if hit:
            return (pattern, False) if pattern.startswith("-:") else (pattern, overrides)
    return None
