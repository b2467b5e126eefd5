"""FlashInfer's TRT-LLM routing limits that vLLM does not check when it selects a monolithic kernel.

A FlashInfer TRT-LLM monolithic kernel routes inside itself from the router logits, with the
``n_group`` / ``topk_group`` / ``top_k`` / ``num_experts`` vLLM hands it; FlashInfer checks them when
vLLM's start-up profile run first routes, after the selection. Each function is a derived field
(``core/fields.py``) read by one after-selection rule of ``rules/constraints.yaml``, which names the
vLLM file and the FlashInfer checks. The checks are identical in every FlashInfer a modelled release
pins (0.6.18, 0.6.18.post1, 0.7.0.post1, 0.7.2.post1, 0.7.3 read as 0.7.4).

``num_expert_group`` None means no groups: vLLM passes ``num_expert_group or 0`` (or None, read as
0 by FlashInfer's ``value_or(0)``), and picks DeepSeekV3 routing only with groups (vLLM
fused_moe/config.py ``get_routing_method_type``), so a DeepSeekV3 layer without groups is not one
vLLM builds and these fields hold for it.
"""

from __future__ import annotations

__all__ = ["fp8_block_groups_fit", "grouped_routing_fits", "groups_at_most_one"]

_MAX_GROUPS = 8  # routingDeepSeek MaxNumGroups
_MAX_TOP_GROUPS = 4  # routingDeepSeek MaxNumTopGroups; Routing::Runner "topkGroup <= 4"
_WARP = 32  # experts per group <= WarpSize
_MAX_TOPK_GROUPED = 22  # Routing::Runner "For DeepSeek routing method, must have topK <= 22"
_MAX_EXPERTS = 512  # routingDeepSeek MaxSupportedExpertCount (NumNemotronExperts)
_KIMI_K2_EXPERTS = 384  # Fp8BlockScaleLauncher kNumKimiK2Experts: top_k <= 8 up to here, else 22


def grouped_routing_fits(num_experts: int, top_k: int, num_expert_group: int | None, topk_group: int | None) -> bool:
    """Whether FlashInfer's grouped DeepSeekV3 routing kernel takes these groups (true with at most
    one group, which FlashInfer routes ungrouped). Every TRT-LLM launcher runs it: Routing::Runner::run
    (csrc/trtllm_fused_moe_runner.cu in 0.6.18, fused_moe/trtllm_backend/trtllm_fused_moe_routing_runner.cu
    from 0.7.0) and routingDeepSeek::run (fused_moe/trtllm_backend/trtllm_fused_moe_routing_deepseek.cu).
    Groups that do not divide the experts are the field ``expert_groups_divide``'s
    (FlashInfer checks that first), so they count as fitting here.

    >>> grouped_routing_fits(256, 8, 8, 4), grouped_routing_fits(384, 8, 1, 1), grouped_routing_fits(256, 8, 8, 5)
    (True, True, False)
    >>> grouped_routing_fits(512, 8, 8, 4), grouped_routing_fits(256, 8, 16, 4), grouped_routing_fits(256, 8, 7, 4)
    (False, False, True)
    """
    groups = num_expert_group or 0
    if groups <= 1 or num_experts % groups:
        return True
    return (groups <= _MAX_GROUPS and num_experts // groups <= _WARP and (topk_group or 0) <= _MAX_TOP_GROUPS
            and top_k <= _MAX_TOPK_GROUPED and num_experts % 4 == 0 and num_experts <= _MAX_EXPERTS)


def fp8_block_groups_fit(num_experts: int, top_k: int, num_expert_group: int | None, topk_group: int | None) -> bool:
    """Whether Fp8BlockScaleLauncher::check_routing's DeepSeekV3 checks pass (FlashInfer
    csrc/trtllm_fused_moe_kernel_launcher.cu; the launcher of trtllm_fp8_block_scale_moe, which vLLM
    calls for FP8 block and MXFP8): groups and top groups given, top_k <= 8 up to 384 experts else
    22, 0 < topk_group <= 4, topk_group <= n_group, and top_k < topk_group * num_experts / n_group
    (integer division). Groups that do not divide the experts are the field
    ``expert_groups_divide``'s, as in :func:`grouped_routing_fits`.

    >>> fp8_block_groups_fit(256, 8, 8, 4), fp8_block_groups_fit(384, 8, 1, 1), fp8_block_groups_fit(512, 22, 1, 1)
    (True, True, True)
    >>> fp8_block_groups_fit(256, 10, 8, 4), fp8_block_groups_fit(256, 8, 8, 5), fp8_block_groups_fit(64, 8, 8, 1)
    (False, False, False)
    """
    if num_expert_group is None:
        return True
    groups, top = num_expert_group, topk_group or 0
    if groups == 0 or top == 0:
        return False
    if num_experts % groups:
        return True
    limit = 8 if num_experts <= _KIMI_K2_EXPERTS else _MAX_TOPK_GROUPED
    return 0 < top_k <= limit and top <= _MAX_TOP_GROUPS and top <= groups and top_k < top * num_experts // groups


def groups_at_most_one(num_expert_group: int | None, topk_group: int | None) -> bool:
    """Whether ``n_group <= 1`` and ``topk_group <= 1``, as Fp8BlockScaleLauncher::check_routing needs
    for every routing method but DeepSeekV3 (vLLM hands a grouped softmax layer's groups to it too).

    >>> groups_at_most_one(None, None), groups_at_most_one(1, 1), groups_at_most_one(8, 3)
    (True, True, False)
    """
    return (num_expert_group or 0) <= 1 and (topk_group or 0) <= 1
