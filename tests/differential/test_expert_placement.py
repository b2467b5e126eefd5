"""Expert placement against each release's own code: the placement a layer keeps, and who refuses it.

vLLM's layer keeps a requested ``--expert-placement-strategy round_robin`` only with EP over
several ranks, more than one expert group, no redundant experts or EPLB, and no all2all kernels
without round-robin routing tables; otherwise it falls back to ``linear`` (P/expert_map_manager.py).
The harness asks the release's own ``ExpertMapManager`` and, where the selected experts class is a
FlashInfer MoE-EP megakernel, the release's own ``validate_flashinfer_moe_ep_layer``
(:mod:`moe_oracle.verify.vllm_late_checks`); ours derives ``expert_placement`` (core/placement.py)
and refuses through ``constraint.flashinfer_moe_ep_linear_placement``. MoonEP refuses any requested
non-linear placement at start (transcribed in :meth:`moe_oracle.verify.vllm_side.VllmSide.start_checks`:
the whole VllmConfig is not built here).

Deselected by default (marker ``differential``); needs ``$MOE_ORACLE_VLLM_ENV``.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from moe_oracle.verify.cases import Deployment
from moe_oracle.verify.run import RELEASES

from tests.differential.agreement import agree_on

pytestmark = pytest.mark.differential

MEGAKERNEL = Deployment(platform="cuda", capability=100, family="nvfp4", front_end="modelopt_nvfp4", weight_key="nvfp4_static", activation_key="nvfp4_dynamic",
                        num_experts=256, top_k=8, hidden_size=7168, intermediate_size=2048, routing_method="deepseek_v3", tp_size=4, use_ep=True,
                        moe_backend="flashinfer_moe_ep_cutedsl", packages=("flashinfer", "flashinfer_cubin"), architecture="Qwen3MoeForCausalLM",
                        expert_placement_strategy="round_robin")
KEPT = replace(MEGAKERNEL, num_expert_group=8)  # EP without DP, 8 groups: round_robin kept, the megakernel refuses
FALLBACKS = (
    replace(MEGAKERNEL, num_expert_group=None),  # no groups
    replace(MEGAKERNEL, num_expert_group=1),  # one group
    replace(KEPT, tp_size=2, dp_size=2),  # all2all kernels (allgather) without round-robin tables
    replace(KEPT, use_ep=False),  # no EP: every rank holds every expert
)
# The MXFP4 front ends, whose method layer the harness does not build, build the megakernel all the same.
MXFP4 = replace(KEPT, family="mxfp4", front_end="compressed_tensors_mxfp4", weight_key="mxfp4_static", activation_key=None, packages=("flashinfer", "flashinfer_cubin", "cutlass"))
MXFP4_DSV4 = replace(MXFP4, front_end="mxfp4", model_type="deepseek_v4", architecture="DeepseekV4ForCausalLM")
MOONEP = Deployment(platform="cuda", capability=90, family="unquantized", front_end="unquantized", tp_size=2, dp_size=2, use_ep=True, all2all_backend="moonep", packages=("moonep",),
                    expert_placement_strategy="round_robin")
CASES = (KEPT, *FALLBACKS, MXFP4, MXFP4_DSV4, replace(MXFP4, num_expert_group=None), MOONEP, replace(MOONEP, expert_placement_strategy="linear"))


@pytest.mark.parametrize("release", RELEASES)
def test_placement_deployments_agree_with_the_release(vllm_env, release):
    by_case, shown = agree_on(vllm_env, release, CASES)
    if release >= "0.32.0":  # the MoE-EP backends exist
        for case in (KEPT, MXFP4, MXFP4_DSV4):
            assert (by_case[case].vllm.status, by_case[case].vllm.stage) == ("error", "construction"), shown
            assert "linear expert placement" in by_case[case].vllm.detail, shown
        for case in FALLBACKS[:3]:
            assert by_case[case].vllm.experts == "FlashInferMoeEpExperts", shown
    if release >= "0.31.0":  # MoonEP exists
        assert (by_case[MOONEP].vllm.status, by_case[MOONEP].vllm.stage) == ("error", "config"), shown
