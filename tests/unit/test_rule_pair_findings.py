"""Table errors the rule-pair search found (issue 25, moe_oracle/verify/rule_pairs.py): each
deployment is the edited half of a pair the search made; vLLM's answer, quoted in each test, is
the release's own, recorded from the differential run of 2026-12-04."""

from __future__ import annotations

from dataclasses import replace

import pytest

from moe_oracle.verify.cases import Deployment
from moe_oracle.verify.ours import OurSide

# Block FP8 on H100 with --moe-backend deep_gemm and VLLM_MOE_USE_DEEP_GEMM=0. vLLM 0.29.0 (and
# 0.30.0-0.34.0 likewise) selected TritonOrDeepGemmExperts: select_fp8_moe_backend returns an
# explicit moe_backend before it reads VLLM_MOE_USE_DEEP_GEMM. We answered "nothing eligible".
DEEP_GEMM_REQUESTED = Deployment(
    platform="cuda", capability=90, family="fp8", front_end="fp8", weight_key="fp8_static_block128", activation_key="fp8_dynamic_group128",
    block=(128, 128), num_experts=128, top_k=8, hidden_size=2048, intermediate_size=512, in_dtype="bfloat16", activation="silu",
    routing_method="topk", tp_size=1, dp_size=1, moe_backend="deep_gemm", env=(("VLLM_MOE_USE_DEEP_GEMM", "0"),),
    packages=("deep_gemm", "flashinfer", "flashinfer_cubin"), model_type="deepseek_v3",
    # vLLM 0.34.0 is_deep_gemm_supported() needs the nvcc DeepGEMM's JIT runs; the recorded run found
    # the harness machine's own (/usr/local/cuda) before the harness stood the lookup in from the tools.
    tools=("jit_nvcc", "ninja", "nvcc"),
)

# The same layer under DeepEP low-latency (two DP ranks): vLLM 0.30.0 and 0.34.0 selected
# BatchedDeepGemmExperts.
DEEP_GEMM_REQUESTED_BATCHED = replace(DEEP_GEMM_REQUESTED, dp_size=2, use_ep=True, all2all_backend="deepep_low_latency",
                                      packages=("deep_ep", "deep_gemm", "flashinfer", "flashinfer_cubin"))


@pytest.mark.parametrize("release", ["0.29.0", "0.33.0", "0.34.0"])
@pytest.mark.parametrize(("dep", "experts"), [(DEEP_GEMM_REQUESTED, "TritonOrDeepGemmExperts"), (DEEP_GEMM_REQUESTED_BATCHED, "BatchedDeepGemmExperts")])
def test_moe_use_deep_gemm_off_leaves_an_explicit_deep_gemm_request(release, dep, experts):
    side = OurSide(release)
    assert (side.answer(dep).status, side.answer(dep).experts) == ("ok", experts)
    # Under auto the variable still takes DeepGEMM out of the FP8 oracle's choice.
    auto = side.answer(replace(dep, moe_backend="auto"))
    assert auto.status == "ok" and auto.experts != experts


# A hash-routed compressed-tensors W4A8-FP8 layer on an Arm CPU: vLLM 0.29.0 selected
# CPUExpertsInt4 (CPU_INT4). The hash-routing check of FusedMoEExperts.is_supported_config
# exists from 0.31.0 only; we refused the kernel in every release.
CPU_W4A8_HASH_ROUTED = Deployment(
    platform="cpu", arch="aarch64", family="w4a8_fp8", front_end="ct_w4a8_fp8", weight_key="int4_static", activation_key="fp8_dynamic_token",
    num_experts=256, top_k=8, hidden_size=3072, intermediate_size=1536, in_dtype="bfloat16", router_logits_dtype="bfloat16", has_bias=True,
    activation="swigluoai", routing_method="renormalize", tp_size=1, dp_size=1, model_type="qwen3_5_moe_text", has_hash_routing=True,
    weight_group_size=32,
)


@pytest.mark.parametrize(("release", "selected"), [("0.29.0", True), ("0.30.0", True), ("0.31.0", False), ("0.34.0", False)])
def test_cpu_int4_hash_routing_is_refused_from_0_31_only(release, selected):
    answer = OurSide(release).answer(CPU_W4A8_HASH_ROUTED)
    assert (answer.status == "ok" and answer.experts == "CPUExpertsInt4") is selected, answer


# Compressed-tensors MXFP8 on an L40S (SM 8.9), batch invariance on, VLLM_HUMMING_MOE_GEMM_TYPE=
# grouped_masked: vLLM 0.29.0 selected HummingIndexedExperts (its get_humming_moe_gemm_type reads
# any value but grouped / grouped_contiguous as indexed); 0.30.0 on reads grouped_masked as the
# batched GEMM, which needs a batched all2all. We had [indexed, auto] for every release.
HUMMING_MASKED_ENV = Deployment(
    platform="cuda", capability=89, family="mxfp8", front_end="ct_mxfp8", weight_key="mxfp8_static", activation_key="mxfp8_dynamic",
    num_experts=512, top_k=10, hidden_size=4096, intermediate_size=160, in_dtype="float16", activation="silu", routing_method="topk",
    tp_size=4, env=(("VLLM_BATCH_INVARIANT", "1"), ("VLLM_HUMMING_MOE_GEMM_TYPE", "grouped_masked")), packages=("flashinfer", "humming", "triton_kernels"),
)


@pytest.mark.parametrize(("release", "indexed"), [("0.29.0", True), ("0.30.0", False), ("0.34.0", False)])
def test_humming_gemm_type_grouped_masked_is_indexed_on_0_29_only(release, indexed):
    side = OurSide(release)
    assert (side.answer(HUMMING_MASKED_ENV).detail == "humming_indexed") is indexed
    grouped = replace(HUMMING_MASKED_ENV, env=(("VLLM_BATCH_INVARIANT", "1"), ("VLLM_HUMMING_MOE_GEMM_TYPE", "grouped")))
    assert side.answer(grouped).detail == "humming_grouped"
