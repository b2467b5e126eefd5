"""Compare the layers a vLLM release built with our plan's layers, field by field.

Layers are matched by (role, decoder index). Per matched layer each field of :data:`FIELDS` is
compared after both values are put in one vocabulary (:func:`_norm`). A layer vLLM built as MoE
that our plan calls dense (or the reverse) is a ``kind`` difference; a layer only one side has at
all is ``presence``. Reviewed differences are listed in ``divergences.yaml`` beside this module.
"""

from __future__ import annotations

import fnmatch
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import yaml

from ..quant_key_names import QUANT_KEY_NAMES

__all__ = ["FIELDS", "Difference", "compare_case", "load_divergences", "explain", "DIVERGENCES"]

FIELDS: tuple[str, ...] = (
    "num_experts", "num_local_experts", "top_k", "hidden_size", "intermediate_per_partition",
    "activation", "swiglu_alpha", "swiglu_beta", "swiglu_limit", "situ_beta", "situ_linear_beta",
    "routing_method", "correction_bias", "num_expert_group", "topk_group", "has_bias", "in_dtype",
    "router_logits_dtype", "has_hash_routing", "weight_key", "activation_key", "quant_method_class",
    "experts_class", "backend", "prepare_finalize",
)
"""Compared per layer (plus ``kind`` and ``presence`` per layer index)."""

DIVERGENCES = Path(__file__).with_name("divergences.yaml")

_VLLM_TO_OUR_KEY = {v: k for k, v in QUANT_KEY_NAMES.items()}


def _squash(value: Any) -> Any:
    return re.sub(r"[^a-z0-9]", "", value.lower()) if isinstance(value, str) else value


def _vllm_value(layer: dict[str, Any], field: str) -> Any:
    if field in ("weight_key", "activation_key"):
        call = layer.get("selector_call") or {}
        v = call.get(field)
        return _VLLM_TO_OUR_KEY.get(v, v)
    if field == "quant_method_class":
        return layer.get("quant_method")
    if field == "prepare_finalize":
        pf = layer.get("prepare_finalize") or {}
        return pf.get("class") or (f"error: {pf.get('error')}" if pf.get("error") else None)
    if field == "router_logits_dtype":
        return layer.get("router_logits_dtype") or layer.get("in_dtype")
    if field in ("num_expert_group", "topk_group"):
        return layer.get(field) if layer.get("num_expert_group") not in (None, 1) else None
    return layer.get(field)


def _ours_value(layer: dict[str, Any], field: str) -> Any:
    if field in ("num_expert_group", "topk_group"):
        return layer.get(field) if layer.get("num_expert_group") not in (None, 1) else None
    return layer.get(field)


def _equal(field: str, theirs: Any, ours: Any) -> bool:
    if field == "quant_method_class" and ours is None:
        return True  # our plan names the method class only in its evidence text; not stated is no claim
    if field in ("routing_method", "backend", "activation"):
        return _squash(theirs) == _squash(ours)
    if isinstance(theirs, float) or isinstance(ours, float):
        try:
            return abs(float(theirs) - float(ours)) < 1e-6
        except (TypeError, ValueError):
            return False
    return theirs == ours


@dataclass(frozen=True)
class Difference:
    """One field of one layer on which the two sides differ."""

    release: str
    case: str
    model: str
    deployment: str
    role: str
    index: int | None
    field: str
    vllm: Any
    ours: Any
    divergence: str | None = None

    def key(self) -> tuple[str, str, str, Any, Any]:
        """Equal differences over many layers collapse to one row in reports."""
        return (self.model, self.deployment, self.field, repr(self.vllm), repr(self.ours))


def compare_case(release: str, case: dict[str, Any], vllm: dict[str, Any], ours: dict[str, Any]) -> tuple[Counter, Counter, list[Difference]]:
    """(compared per field, agreeing per field, differences) for one built case."""
    compared: Counter = Counter()
    agree: Counter = Counter()
    diffs: list[Difference] = []
    dep = case["deployment"]["name"]
    # vLLM names MTP layers either after the target's layers (DeepSeek: model.layers.61) or from 0
    # in their own module (Qwen3.5 / Nemotron-H: mtp.layers.0); our plan numbers them after the
    # target's layers. A draft index below the target's layer count is shifted by that count.
    n_target = vllm.get("num_hidden_layers") or 0

    def _key(L: dict[str, Any]) -> tuple[str, Any]:
        idx = L["index"]
        if L["role"] == "draft" and isinstance(idx, int) and idx < n_target:
            idx += n_target
        return (L["role"], idx)

    theirs = {_key(L): L for L in vllm["layers"]}
    mine = {(L["role"], L["index"]): L for L in ours["layers"]}
    dense = {(d["role"], d["index"]): d for d in ours["dense"]}
    roles = {r for r, _ in theirs} | {r for r, _ in mine}
    # Draft layers are compared only where vLLM built the draft.
    if vllm.get("draft_status") != "ok":
        mine = {k: v for k, v in mine.items() if k[0] != "draft"}
    for key in sorted(set(theirs) | set(mine), key=lambda k: (k[0], k[1] if k[1] is not None else -1)):
        role, index = key
        compared["kind"] += 1
        if key not in theirs:
            what = "dense" if role == "target" and vllm.get("num_hidden_layers") and index is not None and index < vllm["num_hidden_layers"] else "absent"
            diffs.append(Difference(release, case["id"], case["model"], dep, role, index, "kind", what, "moe"))
            continue
        if key not in mine:
            d = dense.get(key)
            diffs.append(Difference(release, case["id"], case["model"], dep, role, index, "kind", "moe", d["kind"] if d else "absent"))
            continue
        agree["kind"] += 1
        for field in FIELDS:
            a, b = _vllm_value(theirs[key], field), _ours_value(mine[key], field)
            compared[field] += 1
            if _equal(field, a, b):
                agree[field] += 1
            else:
                diffs.append(Difference(release, case["id"], case["model"], dep, role, index, field, a, b))
    del roles
    return compared, agree, diffs


def load_divergences(path: Path = DIVERGENCES) -> list[dict[str, Any]]:
    """The reviewed divergences: each ``{id, field, model, deployment, release, role, vllm, ours, cause, reason}``
    (globs; ``vllm``/``ours`` match the values' ``repr`` as globs, default ``*``).

    Raises:
        ValueError: an entry without ``id``, ``field``, ``cause`` or ``reason``, or a cause other
            than ``ours`` / ``vllm`` / ``harness``.
    """
    doc = yaml.safe_load(path.read_text()) or {}
    entries = doc.get("divergences") or []
    for e in entries:
        for k in ("id", "field", "cause", "reason"):
            if not e.get(k):
                raise ValueError(f"{path}: divergence {e.get('id', '?')!r} lacks {k!r}")
        if e["cause"] not in ("ours", "vllm", "harness"):
            raise ValueError(f"{path}: divergence {e['id']!r}: cause {e['cause']!r} is not one of ours, vllm, harness")
    return entries


def explain(diff: Difference, entries: Iterable[dict[str, Any]]) -> str | None:
    """The id of the first reviewed divergence that covers ``diff``, else ``None``."""
    for e in entries:
        if not fnmatch.fnmatch(diff.field, e["field"]):
            continue
        if not fnmatch.fnmatch(diff.model, e.get("model", "*")):
            continue
        if not fnmatch.fnmatch(diff.deployment, e.get("deployment", "*")):
            continue
        if not fnmatch.fnmatch(diff.release, e.get("release", "*")):
            continue
        if not fnmatch.fnmatch(diff.role, e.get("role", "*")):
            continue
        if not fnmatch.fnmatch(repr(diff.vllm), e.get("vllm", "*")) or not fnmatch.fnmatch(repr(diff.ours), e.get("ours", "*")):
            continue
        return e["id"]
    return None


def summarize(rows: list[Difference]) -> dict[tuple, list[Difference]]:
    out: dict[tuple, list[Difference]] = defaultdict(list)
    for d in rows:
        out[d.key()].append(d)
    return out
