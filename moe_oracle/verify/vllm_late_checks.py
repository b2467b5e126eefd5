"""Checks a release makes on a layer after it selected the experts class, run with the release's own
code (worker side only): the FlashInfer MoE-EP megakernels' placement check and the MoE LoRA
wrapper's parallel checks.

Both read the expert placement the layer keeps: vLLM builds each MoE layer's ``ExpertMapManager``
from ``--expert-placement-strategy`` (P/layer.py), which keeps ``round_robin`` or falls back to
``linear`` (P/expert_map_manager.py ``determine_expert_placement_strategy`` and
``_determine_placement_strategy``: EP over several ranks, several expert groups, no redundant
experts or EPLB, all2all kernels only with round-robin routing tables). The harness builds the
release's own manager and calls the release's own checks on namespaces holding what they read;
nothing here decides.

Imports vLLM: only the verification worker imports this module.
"""

from __future__ import annotations

import importlib
import types
from typing import Any

from .cases import Deployment

__all__ = ["check_lora_wrapper", "check_megakernel_placement", "kept_placement"]

P = "vllm.model_executor.layers.fused_moe"


def kept_placement(dep: Deployment, moe: Any) -> str:
    """The placement the release's ``ExpertMapManager`` keeps for rank 0 of ``dep``'s layer.

    ``moe``: the release's ``FusedMoEConfig`` for the layer (global experts, its rank-0
    ``FusedMoEParallelConfig``). Built on the CPU (the manager's maps are small index tensors);
    ``max_num_batched_tokens`` sizes only the AITER shared-experts buffer, which is not built here.
    """
    manager = importlib.import_module(f"{P}.expert_map_manager").ExpertMapManager(
        max_num_batched_tokens=8192,
        top_k=dep.top_k,
        global_num_experts=moe.num_experts,
        num_redundant_experts=dep.num_redundant_experts,
        num_expert_group=dep.num_expert_group,
        moe_parallel_config=moe.moe_parallel_config,
        placement_strategy=dep.expert_placement_strategy,
        enable_eplb=dep.enable_eplb,
    )
    return str(manager.placement_strategy)


def check_megakernel_placement(dep: Deployment, moe: Any, experts: type) -> None:
    """The FlashInfer MoE-EP megakernels' placement check, as building the selected experts class
    runs it (vLLM 0.32.0-0.34.0 P/experts/flashinfer_moe_ep.py
    ``FlashInferMoeEpExperts.process_weights_after_loading`` -> P/flashinfer_moe_ep.py
    ``validate_flashinfer_moe_ep_layer``, which reads ``layer.expert_map_manager.placement_strategy``),
    on the placement :func:`kept_placement` finds. A no-op for other experts classes and for
    releases without the check.

    Raises:
        ValueError: the release refuses the kept placement.
    """
    try:
        validate = importlib.import_module(f"{P}.flashinfer_moe_ep").validate_flashinfer_moe_ep_layer
        megakernel = importlib.import_module(f"{P}.experts.flashinfer_moe_ep").FlashInferMoeEpExperts
    except (ModuleNotFoundError, AttributeError):
        return
    if not issubclass(experts, megakernel):
        return
    kept = kept_placement(dep, moe)
    validate(types.SimpleNamespace(expert_map_manager=types.SimpleNamespace(placement_strategy=kept), moe_config=moe))


def check_lora_wrapper(dep: Deployment, moe: Any) -> None:
    """The parallel checks of the MoE LoRA wrapper, which the model runner builds around every MoE
    layer once the model is loaded (vLLM 0.29.0-0.34.0 vllm/lora/layers/fused_moe.py
    ``FusedMoEWithLoRA.__init__`` calls ``_ep_check`` first): under EP, 0.34.0's linear placement
    (``base_layer.expert_placement_strategy``, the placement :func:`kept_placement` finds), then the
    ``allgather_reducescatter`` all2all and no sequence parallelism (assertions). The release's own
    ``_ep_check`` runs on a namespace with the layer's ``FusedMoEConfig``; the rest of the
    constructor (the monolithic and ``supports_lora`` assertions, which selection already enforces
    through ``is_supported_config``, and the modular-kernel requirement, which needs the kernel
    built from loaded weights) is not run.

    Raises:
        ValueError, AssertionError: the release refuses the layer under LoRA.
    """
    wrapper = importlib.import_module("vllm.lora.layers.fused_moe").FusedMoEWithLoRA
    base_layer = types.SimpleNamespace(expert_placement_strategy=kept_placement(dep, moe))
    wrapper._ep_check(types.SimpleNamespace(use_ep=bool(moe.moe_parallel_config.use_ep), moe_config=moe, base_layer=base_layer))
