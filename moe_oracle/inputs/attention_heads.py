"""A tensor-parallel size that does not divide the model's attention heads: refused at start.

vLLM 0.29.0-0.34.0 ``ModelConfig.verify_with_parallel_config`` (vllm/config/model.py, called from
``VllmConfig.__post_init__`` before any layer is built) raises "Total number of attention heads (H)
must be divisible by tensor parallel size (T)." with H = ``model_arch_config.total_num_attention_heads``:
the text config's ``num_attention_heads`` (vllm/transformers_utils/model_arch_config_convertor.py
``get_total_num_attention_heads``, 0 where absent, which every size divides). The check comes before
the expert-parallel one (:mod:`.ep_refusal`) and before any model class's own (:mod:`.model_start_refusals`).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..core.errors import InputIssue
from .ep_refusal import text_config

__all__ = ["HEAD_KEYS", "attention_heads_refusal", "engine_attention_heads"]

HEAD_KEYS: Mapping[str | None, str] = {"dbrx": "n_heads", "falcon": "n_head", "RefinedWeb": "n_head", "RefinedWebModel": "n_head"}
"""model_type -> the config.json key its transformers config class maps ``num_attention_heads`` to
(``attribute_map`` of ``DbrxConfig`` / ``FalconConfig``); every other model type writes
``num_attention_heads`` itself."""


def engine_attention_heads(cfg: Mapping[str, Any]) -> int:
    """The attention-head count vLLM's model config reads from ``cfg`` (a parsed ``config.json``); 0: none.

    >>> engine_attention_heads({"num_attention_heads": 32}), engine_attention_heads({"model_type": "dbrx", "n_heads": 48}), engine_attention_heads({})
    (32, 48, 0)
    """
    text = text_config(cfg)
    key = HEAD_KEYS.get(text.get("model_type") if isinstance(text.get("model_type"), str) else None, "num_attention_heads")
    value = text.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def attention_heads_refusal(heads: int, tp_size: int, where: str, who: str, file: str | None = None) -> InputIssue | None:
    """The refusal of ``tp_size`` for a model with ``heads`` attention heads (``None`` where it
    divides them, or the model has none); ``where`` names the input that set the size (``--tp``,
    ``--serve --tensor-parallel-size``, ``$.parallel.tp_size``), ``who`` the release (``vLLM 0.34.0``).

    >>> attention_heads_refusal(128, 3, "--tp", "vLLM 0.34.0").allowed
    [1, 2, 4, 8, 16, 32, 64, 128]
    >>> attention_heads_refusal(128, 8, "--tp", "vLLM 0.34.0") is None
    True
    """
    if heads <= 0 or heads % tp_size == 0:
        return None
    divisors = [d for d in range(1, heads + 1) if heads % d == 0] if heads <= 1 << 16 else None
    return InputIssue(where, f"{who} refuses this model at start: \"Total number of attention heads ({heads}) must be divisible by tensor parallel size ({tp_size}).\" "
                      "(vllm/config/model.py ModelConfig.verify_with_parallel_config, before any layer is built): use a tensor-parallel size that divides "
                      f"the {heads} heads", tp_size, divisors, file, keyword="engine_refuses")
