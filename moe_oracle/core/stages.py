"""Where in vLLM's start-up a table rule's check is made, read from the vLLM code its reference cites.

A refusal happens at one of :data:`STAGES`, in the order vLLM gets there: ``config`` (the
``ParallelConfig`` / ``KernelConfig`` / ``VllmConfig`` validation), ``layer`` (the MoE layer
factory, ``FusedMoEConfig``, and the routed-experts EPLB gate), ``selection`` (the quantization
method's constructor or the family's oracle), ``construction`` (``create_weights``, the
selected experts class), ``lora`` (the LoRA wrapper of every MoE layer, ``FusedMoEWithLoRA`` in
vllm/lora/layers/fused_moe.py, which the model runner builds once the model is loaded, so after every
kernel) and ``profile_run`` (the first forward vLLM runs at start-up, where a
kernel library such as FlashInfer checks the arguments it is called with). The differential harness (``moe_oracle/verify/ours.py``) places our
refusals with it, and the dead end (:mod:`moe_oracle.core.blocking`) says at which stage vLLM
raises a refusal that binds every kernel.
"""

from __future__ import annotations

__all__ = ["STAGES", "before_selection", "eplb_gate", "rule_stage"]

STAGES: tuple[str, ...] = ("config", "layer", "selection", "construction", "lora", "profile_run")
"""Where a refusal happens, in the order vLLM gets there."""


def eplb_gate(reference: str) -> bool:
    """Whether ``reference`` cites the routed-experts EPLB gate (``supports_eplb``), which runs
    after the quantization method has selected its kernel (vLLM P/routed_experts.py).

    >>> eplb_gate("vLLM 0.33.0 Q/auto_gptq.py (supports_eplb False); P/routed_experts.py EPLB gate")
    True
    """
    return "supports_eplb" in reference or "EPLB gate" in reference


def rule_stage(reference: str) -> str:
    """The stage (:data:`STAGES`) of the vLLM code a rule's ``reference`` cites first:
    ``vllm/config/*.py`` is ``config``; ``create_weights`` and ``process_weights_after_loading`` (where
    a method builds its kernel, e.g. 0.34.0 LUT-B's ``make_lut_b_moe_kernel``) are ``construction``; the layer factory
    (``P/layer.py``, ``P/config.py FusedMoEConfig``) and the routed-experts EPLB gate
    (``supports_eplb``) are ``layer``; a reference that starts by naming the start-up profile run
    (the kernel's first forward) is ``profile_run``; the LoRA layers (``vllm/lora/``, built after
    the model is loaded) are ``lora``; anything else (a quantization method's constructor, its
    config, the family's oracle) is ``selection``.

    >>> rule_stage("vLLM 0.29.0-0.33.0 Q/moe_wna16.py MoeWNA16Method.create_weights")
    'construction'
    >>> rule_stage("vLLM 0.31.0-0.33.0 vllm/config/vllm.py VllmConfig.__post_init__")
    'config'
    >>> rule_stage("vLLM 0.29.0-0.34.0 start-up profile run, P/experts/trtllm_bf16_moe.py")
    'profile_run'
    >>> rule_stage("vLLM 0.29.0-0.34.0 vllm/lora/layers/fused_moe.py FusedMoEWithLoRA._ep_check")
    'lora'
    """
    first = reference.split(";")[0]
    if "start-up profile run" in first:
        return "profile_run"
    if "vllm/lora/" in first:
        return "lora"
    if "vllm/config/" in first:
        return "config"
    if "create_weights" in first or "validate_fp8_block_shape" in first or "process_weights_after_loading" in first:
        return "construction"
    if "P/layer.py" in first or "P/config.py FusedMoEConfig" in first or "supports_eplb" in first or "EPLB gate" in reference:
        return "layer"
    return "selection"


def before_selection(reference: str) -> bool:
    """Whether vLLM makes a check that binds every kernel (``Catalog.layer_rules``), citing
    ``reference``, before it selects any kernel: at start, in the layer factory or in the family's
    oracle; not in ``create_weights`` (construction) and not the EPLB gate that runs on the
    method that selected (:func:`eplb_gate`), not in the LoRA wrapper (``lora``) and not when the
    selected kernel first runs (``profile_run``).

    >>> before_selection("vLLM 0.34.0 P/oracle/unquantized.py select_unquantized_moe_backend")
    True
    >>> before_selection("vLLM 0.29.0-0.33.0 Q/fp8.py Fp8MoEMethod.create_weights")
    False
    """
    return rule_stage(reference) not in ("construction", "lora", "profile_run") and not eplb_gate(reference)
