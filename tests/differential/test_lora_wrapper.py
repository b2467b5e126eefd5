"""The MoE LoRA wrapper's parallel checks against each release's own code.

With LoRA the model runner wraps every MoE layer in ``FusedMoEWithLoRA`` once the model is loaded;
its constructor's ``_ep_check`` refuses, under expert parallelism, an all2all backend other than
``allgather_reducescatter`` and sequence-parallel MoE (0.29.0-0.34.0), and from 0.34.0 first a
layer that keeps round_robin placement. The harness runs the release's own ``_ep_check``
(:func:`moe_oracle.verify.vllm_late_checks.check_lora_wrapper`); ours refuses at stage ``lora``
(``constraint.lora_ep_*``). Before, neither side's answer for these layers was compared.

Deselected by default (marker ``differential``); needs ``$MOE_ORACLE_VLLM_ENV``.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from moe_oracle.verify.cases import Deployment
from moe_oracle.verify.run import RELEASES

from tests.differential.agreement import agree_on

pytestmark = pytest.mark.differential

LORA_EP = Deployment(platform="cuda", capability=90, family="unquantized", front_end="unquantized", num_experts=256, top_k=8, hidden_size=7168,
                     intermediate_size=2048, routing_method="deepseek_v3", tp_size=4, use_ep=True, lora=True, model_type="deepseek_v3",
                     architecture="DeepseekV3ForCausalLM")
SEQUENCE_PARALLEL = replace(LORA_EP, tp_size=2, dp_size=2, sequence_parallel_model=True)  # EP + TP 2 + DP 2, allgather: SP MoE
ROUND_ROBIN = replace(LORA_EP, expert_placement_strategy="round_robin", num_expert_group=8)  # kept: EP without DP, 8 groups
FALLEN_BACK = replace(ROUND_ROBIN, num_expert_group=None)  # no groups: linear
CASES = (LORA_EP, SEQUENCE_PARALLEL, ROUND_ROBIN, FALLEN_BACK)


@pytest.mark.parametrize("release", RELEASES)
def test_lora_wrapper_refusals_agree_with_the_release(vllm_env, release):
    by_case, shown = agree_on(vllm_env, release, CASES)
    assert by_case[LORA_EP].vllm.status == "ok", shown
    assert (by_case[SEQUENCE_PARALLEL].vllm.status, by_case[SEQUENCE_PARALLEL].vllm.stage) == ("error", "lora"), shown
    assert by_case[FALLEN_BACK].vllm.status == "ok", shown
    kept = (by_case[ROUND_ROBIN].vllm.status, by_case[ROUND_ROBIN].vllm.stage)
    assert kept == (("error", "lora") if release >= "0.34.0" else ("ok", None)), shown
