"""Refusals the differential harness's vLLM side cannot reach, and the LoRA kernel built on a
batched all2all.

CI on 1aec2c9 (the differential tier, vLLM 0.29.0-0.34.0) found 56 disagreements of three kinds,
each a deployment read from that run's replayable output:

- a TRT-LLM monolithic kernel that FlashInfer refuses at vLLM's start-up profile run (Llama4
  routing with top_k > 1): vLLM's selection code answers the kernel, the harness never runs it,
  and ours refused the layer. Those rules now cite the ``profile_run`` stage, and the harness
  compares what the engine selected before it (``Answer.later``);
- ``--moe-backend batched_triton`` without a batched all2all under the ``direct`` front end, which
  builds no quantization method, so no kernel: the same, at ``construction``;
- LoRA on an unquantized layer with DeepEP low-latency in vLLM 0.33.0: the oracle returns
  TritonExperts unchecked, and building it on the batched P/F asserts (vLLM raised at
  construction; we answered TritonExperts). 0.34.0 refuses the layout at selection.
"""

from __future__ import annotations

import pytest

from moe_oracle.core.blocking import blockers
from moe_oracle.core.decision import NoEligibleKernelError
from moe_oracle.core.stages import rule_stage
from moe_oracle.verify.cases import Deployment
from moe_oracle.verify.ours import OurSide, config_for, environment_for

# 0.29.0-unquantized-140084ce957d: a B200, Llama4 routing, top-8 (FlashInfer's Llama4 routing is top-1).
LLAMA4_TOP8 = Deployment(platform="cuda", capability=100, family="unquantized", front_end="direct", num_experts=128, top_k=8,
                         hidden_size=4096, intermediate_size=1536, in_dtype="bfloat16", has_bias=True, routing_method="llama4",
                         tp_size=8, use_ep=True, all2all_backend="allgather_reducescatter", packages=("flashinfer", "flashinfer_cubin"))
# 0.29.0-unquantized-7f6549e790c7: batched_triton requested on an L40S without any all2all.
BATCHED_NO_ALL2ALL = Deployment(platform="cuda", capability=89, family="unquantized", front_end="direct", num_experts=8, top_k=2,
                                tp_size=4, moe_backend="batched_triton")
# 0.33.0-unquantized-85234c357cf8, reduced: LoRA, DP 4 x TP 2 with EP over DeepEP low-latency.
LORA_DEEPEP_LL = Deployment(platform="cuda", capability=90, family="unquantized", front_end="unquantized", num_experts=64, top_k=8,
                            tp_size=2, dp_size=4, use_ep=True, all2all_backend="deepep_low_latency", lora=True, packages=("deep_ep",))


@pytest.mark.parametrize("release", ["0.29.0", "0.34.0"])
def test_a_profile_run_refusal_is_compared_as_the_selection_before_it(release: str) -> None:
    side = OurSide(release)
    with pytest.raises(NoEligibleKernelError) as err:
        side.oracle.select(*_inputs(LLAMA4_TOP8, release))
    decision = err.value.decision
    assert side.stage(decision) == "profile_run"
    assert [b.raised_at for b in blockers(decision)] == ["profile_run"]
    answer = side.answer(LLAMA4_TOP8)
    assert (answer.status, answer.experts, answer.backend) == ("ok", "TrtLlmBf16ExpertsMonolithic", "FLASHINFER_TRTLLM")
    assert answer.later == "profile_run: constraint.trtllm_llama4_top_1"
    top1 = side.answer(Deployment.from_dict({**LLAMA4_TOP8.to_dict(), "top_k": 1}))
    assert (top1.status, top1.experts, top1.later) == ("ok", "TrtLlmBf16ExpertsMonolithic", None)


def test_a_construction_refusal_is_one_only_where_the_front_end_builds_the_kernel() -> None:
    side = OurSide("0.29.0")
    direct = side.answer(BATCHED_NO_ALL2ALL)
    assert (direct.status, direct.experts, direct.later) == ("ok", "BatchedTritonExperts", "construction: triton_batched.standard_prepare_finalize")
    built = side.answer(Deployment.from_dict({**BATCHED_NO_ALL2ALL.to_dict(), "front_end": "unquantized"}))
    assert (built.status, built.stage, built.later) == ("error", "construction", None)


@pytest.mark.parametrize("release", ["0.29.0", "0.33.0"])
def test_lora_on_a_batched_all2all_is_refused_when_vllm_builds_triton(release: str) -> None:
    answer = OurSide(release).answer(LORA_DEEPEP_LL)
    assert (answer.status, answer.stage) == ("error", "construction"), answer
    # A standard all2all builds Triton; the LoRA wrapper then refuses any all2all but allgather_reducescatter
    # under EP (stage lora, which the harness compares since it runs the wrapper's _ep_check).
    standard = OurSide(release).answer(Deployment.from_dict({**LORA_DEEPEP_LL.to_dict(), "all2all_backend": "deepep_high_throughput"}))
    assert (standard.status, standard.stage) == ("error", "lora") and "constraint.lora_ep_all2all" in standard.detail, standard


def test_lora_on_a_batched_all2all_is_refused_at_selection_from_0_34() -> None:
    answer = OurSide("0.34.0").answer(LORA_DEEPEP_LL)
    assert (answer.status, answer.stage) == ("error", "selection"), answer


def test_the_profile_run_stage_is_read_from_the_reference() -> None:
    assert rule_stage("vLLM 0.29.0-0.34.0 start-up profile run, P/experts/trtllm_bf16_moe.py") == "profile_run"
    assert rule_stage("vLLM 0.29.0-0.34.0 P/experts/trtllm_bf16_moe.py; FlashInfer start-up profile run") == "selection"


def _inputs(dep: Deployment, release: str):
    return config_for(dep, release), environment_for(dep, release)
