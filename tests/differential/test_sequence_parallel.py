"""Sequence-parallel MoE against each release's own code: TP 2, DP 4 with expert parallelism.

Where the model class passes ``is_sequence_parallel=parallel_config.use_sequence_parallel_moe``
(DeepSeek-V3, Qwen3-MoE), the harness asks the release's own ``ParallelConfig`` whether
``use_sequence_parallel_moe`` holds and builds ``FusedMoEParallelConfig`` with ``sp_size = tp_size``
as ``make_parallel_config`` does (:meth:`moe_oracle.verify.vllm_side.VllmSide.parallel_config`);
our side derives ``ParallelConfig.sequence_parallel`` from the release's all2all list. The QA
report's deployment (DeepSeek-R1 FP8 block on B200, TP 2, DP 4, EP, allgather) selected
``TrtLlmFp8ExpertsMonolithic``, which vLLM refuses under sequence parallelism
(P/experts/trtllm_fp8_moe.py ``_supports_parallel_config``). A Mixtral class passes nothing, so
the monolithic kernel stays; TP 1 has no sequence parallelism whatever the class.

Deselected by default (marker ``differential``); needs ``$MOE_ORACLE_VLLM_ENV``.
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from moe_oracle.verify.cases import Deployment
from moe_oracle.verify.run import RELEASES, verify

pytestmark = pytest.mark.differential

_FP8_BLOCK = dict(platform="cuda", capability=100, family="fp8", front_end="fp8", weight_key="fp8_static_block128", activation_key="fp8_dynamic_group128",
                  block=(128, 128), tp_size=2, dp_size=4, use_ep=True, packages=("flashinfer", "flashinfer_cubin"), tools=("ninja",))
DEEPSEEK = Deployment(**_FP8_BLOCK, num_experts=256, top_k=8, hidden_size=7168, intermediate_size=2048, routing_method="deepseek_v3",
                      model_type="deepseek_v3", architecture="DeepseekV3ForCausalLM", sequence_parallel_model=True)
DEEPSEEK_DEEPEP = replace(DEEPSEEK, all2all_backend="deepep_high_throughput", packages=("deep_ep", "flashinfer", "flashinfer_cubin"))
QWEN3 = Deployment(**_FP8_BLOCK, num_experts=128, top_k=8, hidden_size=2048, intermediate_size=768, routing_method="renormalize",
                   model_type="qwen3_moe", architecture="Qwen3MoeForCausalLM", sequence_parallel_model=True)
MIXTRAL = replace(QWEN3, model_type="mixtral", architecture="MixtralForCausalLM", sequence_parallel_model=False)
QWEN3_TP1 = replace(QWEN3, tp_size=1, dp_size=8)
CASES = (DEEPSEEK, DEEPSEEK_DEEPEP, QWEN3, MIXTRAL, QWEN3_TP1)
MONOLITHIC = "TrtLlmFp8ExpertsMonolithic"


@pytest.mark.parametrize("release", RELEASES)
def test_sequence_parallel_deployments_agree_with_the_release(vllm_env, release):
    rel = verify(vllm_env, [release], list(CASES), jobs=max(1, min(2, os.cpu_count() or 1))).releases[0]
    shown = "\n".join(f"  {r.case.to_dict()}: vLLM {r.vllm.status} {r.vllm.experts or r.vllm.detail[:160]} {r.vllm.prepare_finalize} | ours {r.ours.status} {r.ours.experts or r.ours.detail[:160]} {r.ours.prepare_finalize}"
                      for r in rel.records)
    assert not rel.unexplained, f"vLLM {release}: disagreements:\n{shown}"
    assert rel.summary()["prepare_finalize"]["unreviewed"] == 0, shown
    by_case = {r.case: r for r in rel.records}
    for case in (DEEPSEEK, QWEN3):  # sequence parallel: vLLM refuses the monolithic kernel, and so do we
        assert by_case[case].vllm.status == "ok" and by_case[case].vllm.experts != MONOLITHIC, shown
        assert "Monolithic" not in (by_case[case].vllm.prepare_finalize or ""), shown
    for case in (MIXTRAL, QWEN3_TP1):  # no sequence parallelism: the monolithic kernel is vLLM's choice
        assert by_case[case].vllm.experts == MONOLITHIC, shown
