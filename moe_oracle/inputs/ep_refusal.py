"""Expert parallelism on a model whose config vLLM finds no experts in: refused at start.

vLLM 0.29.0-0.34.0 ``ModelConfig.verify_with_parallel_config`` calls
``_verify_with_expert_parallelism`` whenever ``--enable-expert-parallel`` is given, and it raises
"Number of experts in the model must be greater than 0 when expert parallelism is enabled" unless
the text config has a top-level expert count: the first of :data:`ENGINE_NUM_EXPERTS_KEYS` present
(``transformers_utils/model_arch_config_convertor.py`` ``get_num_experts``; 0.33.0+ lists them as
``CONFIG_FIELD_ALIASES["num_experts"]``), else the largest ``n_routed_experts`` of its ``moe``
``block_configs``. DBRX keeps its count in ``ffn_config.moe_num_experts``, so vLLM refuses DBRX
with expert parallelism although it builds its MoE layers without it.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..core.errors import InputIssue

__all__ = ["ENGINE_NUM_EXPERTS_KEYS", "TEXT_CONFIG_KEYS", "engine_num_experts", "ep_refusal", "ep_without_experts", "text_config"]

ENGINE_NUM_EXPERTS_KEYS: tuple[str, ...] = ("num_experts", "moe_num_experts", "n_routed_experts", "num_local_experts")
"""The top-level keys vLLM reads the model's expert count from, in its order."""


TEXT_CONFIG_KEYS: tuple[tuple[str, str | None], ...] = (("text_config", None), ("thinker_config", "text_config"), ("language_config", None), ("llm_config", None))
"""Where a config.json holds the text config vLLM reads (``hf_text_config``), in the order the
checkpoint reader looks (``moe_oracle.inputs.checkpoint.model._text_config``): DeepSeek-VL2's
``DeepseekVLV2Config`` builds its ``text_config`` from ``language_config``, and vLLM 0.29.0-0.34.0
``transformers_utils/config.py`` ``_maybe_remap_hf_config_attrs`` copies ``llm_config`` to
``text_config`` (InternVL chat)."""


def text_config(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    """vLLM's ``hf_text_config`` of a parsed ``config.json``: the text sub-config of a multimodal
    or omni model (its own keys only, :data:`TEXT_CONFIG_KEYS`), else the config itself."""
    for outer, inner in TEXT_CONFIG_KEYS:
        sub = cfg.get(outer)
        if isinstance(sub, dict):
            sub = sub.get(inner) if inner else sub
            if isinstance(sub, dict):
                return sub
    return cfg


def engine_num_experts(cfg: Mapping[str, Any]) -> int:
    """The expert count vLLM's model config reads from ``cfg`` (a parsed ``config.json``); 0: none.

    >>> engine_num_experts({"num_local_experts": 8}), engine_num_experts({"ffn_config": {"moe_num_experts": 16}})
    (8, 0)
    """
    text = text_config(cfg)
    for key in ENGINE_NUM_EXPERTS_KEYS:
        if key in text and text[key] is not None:
            value = text[key]
            value = value[0] if isinstance(value, list) and value else value
            return value if isinstance(value, int) and not isinstance(value, bool) else 0
    blocks = text.get("block_configs")
    counts = [b.get("n_routed_experts", 0) for b in blocks if isinstance(b, dict) and b.get("block_type") == "moe"] if isinstance(blocks, list) else []
    return max((c for c in counts if isinstance(c, int)), default=0)


def ep_refusal(where: str, who: str, file: str | None = None) -> InputIssue:
    """The refusal of expert parallelism on a model vLLM finds no experts in; ``where`` names the
    input that turned it on (:func:`moe_oracle.core.refusals.where_given`: ``--ep``,
    ``--serve --enable-expert-parallel``, ``$.parallel.use_ep``), ``who`` the release (``vLLM 0.33.0``)."""
    return InputIssue(where, f"{who} refuses expert parallelism for this model at start: its model config reads the expert count from a top-level "
                      f"{' / '.join(ENGINE_NUM_EXPERTS_KEYS)} of the text config and finds none (\"Number of experts in the model must be greater than 0 when expert "
                      "parallelism is enabled\", vllm/config/model.py _verify_with_expert_parallelism); serve it without expert parallelism", True, None, file, keyword="engine_refuses")


def ep_without_experts(cfg: Mapping[str, Any], use_ep: bool, where: str, who: str, file: str | None = None) -> InputIssue | None:
    """:func:`ep_refusal` when ``use_ep`` and vLLM finds no experts in ``cfg``, else ``None``."""
    return ep_refusal(where, who, file) if use_ep and engine_num_experts(cfg) == 0 else None
