"""Bounds on the counts a model config carries, and the configs vLLM refuses at load.

Every count read from a Hugging Face ``config.json`` (layers, MTP layers, experts, groups, sizes,
pattern lengths) is bounded before any reader loops over it: the bound is an order of magnitude
above what released models use, and the message names both. A count past it is not a model, and
reading it would cost time and memory in proportion (``num_nextn_predict_layers: 10**6`` planned a
million layers).

The impossible configs are the ones vLLM 0.29.0-0.34.0 fails on at start (its profile run routes
a dummy batch through every MoE layer):

* grouped top-k (``n_group``/``topk_group``): ``grouped_topk`` reshapes the router scores to
  ``(tokens, num_expert_group, -1)`` and takes ``topk(k=topk_group)`` over the groups (vLLM 0.29.0-0.34.0
  model_executor/layers/fused_moe/router/grouped_topk_router.py), so ``n_group`` must be >= 1, and
  ``topk_group`` must be <= ``n_group`` where the router groups (one rule with ``MoEConfig``'s:
  :func:`moe_oracle.core.config.grouping_problems`). Groups that do not divide the experts are
  routed ungrouped off CPU (``valid_grouping``) and refused on CPU, which this door does not know:
  the checkpoint reader (which knows the platform) and ``MoEConfig`` refuse them there. ``n_group:
  0`` is left to the checkpoint reader too, which knows the model class, platform and router scale
  that decide whether vLLM reads it as no grouping (``moe_oracle.inputs.checkpoint.aliases._zero_groups``);
* ``model_type`` must be a string: transformers' ``AutoConfig`` looks it up by name;
* a compressed-tensors ``targets``/``ignore`` entry ``re:PATTERN`` is compiled by ``re.match`` when
  a layer is matched against it (``is_equal_or_regex_match``, vLLM 0.33.0-0.34.0
  model_executor/layers/quantization/utils/config_utils.py): a pattern ``re`` cannot compile fails
  the load with ``re.error``.

:func:`model_config_issues` returns them all; :func:`check_model_config` raises them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from ..core.config import grouping_problems
from ..core.errors import ConfigError, InputIssue

__all__ = ["CONFIG_FILE_BOUNDS", "COUNT_BOUNDS", "Bound", "check_model_config", "model_config_issues"]


@dataclass(frozen=True)
class Bound:
    """The largest value accepted for a count, and what released models use (the why)."""

    maximum: int
    real: str


_LAYERS = Bound(256, "the deepest released decoders have 126 layers (Llama-3.1-405B), MoE models up to 94 (Qwen3-235B-A22B)")
_MTP = Bound(16, "released models carry 1 MTP layer (DeepSeek-V3/R1, GLM-4.5, Qwen3-Next, MiMo)")
_EXPERTS = Bound(16384, "released MoE models route over at most 512 experts (Qwen3-Next, Qwen3.5)")
_TOPK = Bound(1024, "released MoE models activate at most 22 experts per token")
_SIZE = Bound(1 << 18, "released models have hidden sizes up to 16384 and expert intermediate sizes up to 53248")
_GROUPS = Bound(16384, "released models group experts into at most 8 groups (DeepSeek-V3/R1)")

COUNT_BOUNDS: Mapping[str, Bound] = {
    "num_hidden_layers": _LAYERS,
    "first_k_dense_replace": _LAYERS,
    "moe_layer_freq": _LAYERS,
    "decoder_sparse_step": _LAYERS,
    "num_nextn_predict_layers": _MTP,
    "mtp_num_hidden_layers": _MTP,
    "n_routed_experts": _EXPERTS,
    "num_experts": _EXPERTS,
    "num_local_experts": _EXPERTS,
    "moe_num_experts": _EXPERTS,
    "n_shared_experts": _EXPERTS,
    "num_shared_experts": _EXPERTS,
    "num_experts_per_tok": _TOPK,
    "moe_topk": _TOPK,
    "top_k": _TOPK,
    "n_group": _GROUPS,
    "topk_group": _GROUPS,
    "hidden_size": _SIZE,
    "intermediate_size": Bound(1 << 18, _SIZE.real),
    "moe_intermediate_size": _SIZE,
    "shared_expert_intermediate_size": _SIZE,
    "moe_shared_expert_intermediate_size": _SIZE,
}
"""Count fields of a model config and their bounds (checked at the top level and in every
nested ``*_config`` object but ``quantization_config``)."""

CONFIG_FILE_BOUNDS: Mapping[str, Bound] = {
    "num_experts": _EXPERTS,
    "top_k": _TOPK,
    "hidden_size": _SIZE,
    "intermediate_size": _SIZE,
    "num_expert_group": _GROUPS,
    "topk_group": _GROUPS,
}
"""The same bounds on a ``--config`` file's ``model:`` counts (the MoEConfig fields the config.json
counts above become), so that neither door takes a count no model has; they are the maxima of
``schemas/moe_config.schema.json``'s ``model_explicit``. The Python API's MoEConfig takes any count
up to 2**40: a caller building configs in code is not an operator typing one."""

_LOOSE_TYPES = frozenset({"moe_layer_freq", "top_k"})  # a list or another meaning in some families: bounded when an integer, not typed
_LIST_BOUND = Bound(_LAYERS.maximum, _LAYERS.real)
_LIST_FIELDS = ("layer_types", "mlp_only_layers", "hybrid_override_pattern", "moe_layers", "layers_block_type")
_EXPERT_KEYS = ("n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts")


def _sections(cfg: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    yield "$.", cfg
    for key, value in cfg.items():
        if isinstance(key, str) and key.endswith("_config") and key != "quantization_config" and isinstance(value, Mapping):
            yield f"$.{key}.", value


def _count_issues(section: Mapping[str, Any], path: str, file: str | None) -> list[InputIssue]:
    out = []
    for key, bound in COUNT_BOUNDS.items():
        value = section.get(key)
        if value is not None and key not in _LOOSE_TYPES and (isinstance(value, bool) or not isinstance(value, int)):
            out.append(InputIssue(f"{path}{key}", f"must be an integer (a count; {bound.real})", value, {"type": "integer", "maximum": bound.maximum}, file, keyword="type"))
        elif isinstance(value, int) and not isinstance(value, bool) and value > bound.maximum:
            out.append(InputIssue(f"{path}{key}", f"must be at most {bound.maximum} ({bound.real})", value, {"maximum": bound.maximum}, file, keyword="maximum"))
    for key in _LIST_FIELDS:
        value = section.get(key)
        if isinstance(value, (list, str)) and len(value) > _LIST_BOUND.maximum:
            out.append(InputIssue(f"{path}{key}", f"has {len(value)} entries; at most {_LIST_BOUND.maximum} are read ({_LIST_BOUND.real})", None, {"maxItems": _LIST_BOUND.maximum}, file, keyword="maxItems"))
    return out


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _grouping_issues(section: Mapping[str, Any], path: str, file: str | None) -> list[InputIssue]:
    n_group, topk_group = _int(section.get("n_group")), _int(section.get("topk_group"))
    if n_group == 0:
        # 0 groups are no grouping where vLLM's router skips grouping, which depends on the model
        # class, the platform and the router's scale: the checkpoint reader decides
        # (moe_oracle.inputs.checkpoint.aliases._zero_groups).
        n_group = None
    experts = next((_int(section.get(k)) for k in _EXPERT_KEYS if _int(section.get(k)) is not None), None)
    keyword = {"n_group": lambda v: "minimum" if v is not None and v < 1 else "divisor", "topk_group": lambda v: "maximum"}
    return [InputIssue(f"{path}{name}", message, value, allowed, file, keyword=keyword[name](value))
            for name, message, value, allowed in grouping_problems(experts, n_group, topk_group, names=("n_group", "topk_group"))]


def _quant_documents(cfg: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The quantization documents a config carries: top level, and in a nested ``*_config``
    (``text_config.quantization_config``: Kimi-K2.5, Qwen3.5), where the readers find it too."""
    for path, section in _sections(cfg):
        q = section.get("quantization_config")
        if isinstance(q, Mapping):
            yield f"{path}quantization_config", q


def _regex_issues(cfg: Mapping[str, Any], file: str | None) -> list[InputIssue]:
    where = "vLLM 0.33.0 is_equal_or_regex_match (quantization/utils/config_utils.py) compiles it with re.match when a layer is matched, and the load fails with re.error"
    places: list[tuple[str, Any]] = []
    for base, q in _quant_documents(cfg):
        places.append((f"{base}.ignore", q.get("ignore")))
        groups = q.get("config_groups")
        if isinstance(groups, Mapping):
            places += [(f"{base}.config_groups.{name}.targets", g.get("targets")) for name, g in groups.items() if isinstance(g, Mapping)]
    out = []
    for path, entries in places:
        if not isinstance(entries, list):
            continue
        for i, entry in enumerate(entries[:4096]):
            if isinstance(entry, str) and entry.startswith("re:"):
                try:
                    re.compile(entry[3:])
                except (re.error, RecursionError, OverflowError) as exc:
                    out.append(InputIssue(f"{path}[{i}]", f"is not a regular expression ({exc}): {where}", entry, None, file, keyword="pattern"))
    return out


def model_config_issues(cfg: Mapping[str, Any], file: str | None = None) -> list[InputIssue]:
    """Counts past their bound and configs vLLM refuses at load, in a parsed ``config.json``.

    Args:
        cfg: the parsed config (a JSON object).
        file: the file's path for the messages.
    """
    out: list[InputIssue] = []
    model_type = cfg.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        out.append(InputIssue("$.model_type", "must be a string: transformers' AutoConfig (which vLLM uses to read config.json) looks the model type up by name, and the load fails", model_type, None, file, keyword="type"))
    for path, section in _sections(cfg):
        out += _count_issues(section, path, file)
        out += _grouping_issues(section, path, file)
    out += _regex_issues(cfg, file)
    return out


def check_model_config(cfg: Mapping[str, Any], file: str | None = None) -> None:
    """Raise :func:`model_config_issues`' issues, if any.

    Raises:
        ConfigError: a count past its bound, or a config vLLM refuses at load.
    """
    issues = model_config_issues(cfg, file)
    if issues:
        raise ConfigError(issues)
