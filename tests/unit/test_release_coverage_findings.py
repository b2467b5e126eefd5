"""Table and translation errors the per-release coverage-guided draws found (issue 25: the guided
draws of tests/differential/test_vllm_releases.py, extended from the newest release to every
release on 2026-12-04). Each deployment is one the guided sampler made; vLLM's answer, quoted in
each test, is the release's own, recorded from the run."""

from __future__ import annotations

from dataclasses import replace

import pytest

from moe_oracle.verify.backend_names import vllm_backend_name
from moe_oracle.verify.cases import Deployment
from moe_oracle.verify.ours import OurSide

# vLLM 0.30.0 guided draw (seed 2): compressed-tensors WNA16, int4 group 32 with zero points, Humming
# batched under DeepEP low-latency. vLLM selected HUMMING, then create_weights raised KeyError('Flashinfer').
CT_WNA16_ZP_HUMMING = Deployment(
    platform="cuda", capability=103, family="wna16", front_end="ct_wna16", weight_key="int4_static_g32_asym", activation_key=None,
    num_experts=128, top_k=4, hidden_size=2880, intermediate_size=2880, in_dtype="float16", activation="situ", routing_method="topk",
    situ_beta=4.0, situ_linear_beta=25.0, tp_size=1, dp_size=4, use_ep=True, all2all_backend="deepep_low_latency",
    env=(("VLLM_CPU_INT4_W4A8", "1"), ("VLLM_HUMMING_MOE_GEMM_TYPE", "grouped_masked")),
    packages=("aiter", "deep_ep", "flashinfer", "flashinfer_cubin", "humming", "moonep", "triton_kernels"), tools=("jit_nvcc", "ninja", "nvcc"),
    weight_group_size=32, zero_point=True,
)


# The same layer on one GPU, Humming requested: vLLM 0.29.0 reads grouped_masked as indexed, so
# its batched class never passes; the indexed class meets the same create_weights.
CT_WNA16_ZP_HUMMING_TP = replace(CT_WNA16_ZP_HUMMING, use_ep=False, dp_size=1, all2all_backend="allgather_reducescatter", env=(), moe_backend="humming", packages=("humming",))


@pytest.mark.parametrize(("release", "dep", "kernel"), [
    ("0.29.0", CT_WNA16_ZP_HUMMING_TP, "humming_indexed"),
    ("0.30.0", CT_WNA16_ZP_HUMMING_TP, "humming_indexed"),
    ("0.30.0", CT_WNA16_ZP_HUMMING, "humming_batched"),
])
def test_zero_point_ct_wna16_on_humming_is_refused_when_built_before_0_31(release, dep, kernel):
    # vLLM 0.29.0-0.30.0 compressed_tensors_moe_wna16.py get_weight_shape: HUMMING keeps the weights
    # untransposed (backend_key "Flashinfer"), and the w13_zp / w2_zp shapes have no such layout.
    side = OurSide(release)
    answer = side.answer(dep)
    assert (answer.status, answer.stage) == ("error", "construction"), answer
    row = next(r for r in side.decide(dep).rows if r.entry.id == kernel)
    assert [c.rule for c in row.failures] == ["constraint.ct_wna16_zero_point_humming_v0_29"]
    symmetric = side.answer(replace(dep, weight_key="int4_static_g32", zero_point=False))
    assert (symmetric.status, symmetric.detail) == ("ok", kernel)


@pytest.mark.parametrize("dep", [CT_WNA16_ZP_HUMMING, CT_WNA16_ZP_HUMMING_TP])
def test_zero_point_ct_wna16_on_humming_builds_from_0_31(dep):
    # vLLM 0.31.0 keeps one N-first layout for every backend, zero points included.
    answer = OurSide("0.31.0").answer(dep)
    assert (answer.status, answer.experts) == ("ok", "BatchedHummingGroupedExperts" if dep.use_ep else "HummingIndexedExperts")


def test_aiter_w4a16_reports_the_0_29_backend_member():
    # vLLM 0.29.0 P/oracle/mxfp4.py: AITER_MXFP4_BF16 -> [AiterExperts, AiterW4A16ExpertsMonolithic];
    # AITER_TRITON_MXFP4_BF16 is new in 0.30.0 (the run reported AITER_MXFP4_BF16 for the class).
    assert vllm_backend_name("mxfp4", "aiter_triton_mxfp4_bf16", "aiter_w4a16_monolithic", release="0.29.0") == "AITER_MXFP4_BF16"
    assert vllm_backend_name("mxfp4", "aiter_triton_mxfp4_bf16", "aiter_w4a16_monolithic", release="0.30.0") == "AITER_TRITON_MXFP4_BF16"


@pytest.mark.parametrize(("dep", "kernel", "cls"), [
    (Deployment(platform="cpu", arch="x86_64", cpu_amx=True, family="wna16", front_end="gptq", weight_key="int4_static", activation_key=None,
                num_experts=128, top_k=8, hidden_size=4096, intermediate_size=1536, weight_group_size=128), "cpu_int4", "CPUExpertsInt4"),
    (Deployment(platform="cpu", arch="aarch64", family="int8", front_end="experts_int8", weight_key="int8_static_channel", activation_key="int8_dynamic_token",
                num_experts=128, top_k=8, hidden_size=4096, intermediate_size=1536), "cpu_arm_int8", "ArmCPUExpertsInt8"),
    (Deployment(platform="cpu", arch="x86_64", cpu_amx=False, family="int8", front_end="experts_int8", weight_key="int8_static_channel", activation_key="int8_dynamic_token",
                num_experts=128, top_k=8, hidden_size=4096, intermediate_size=1536, packages=("zentorch",)), "cpu_zen_int8", "ZenCPUExpertsInt8"),
])
def test_cpu_int_experts_are_monolithic_in_0_29_and_modular_after(dep, kernel, cls):
    # vLLM 0.29.0 P/experts/cpu_moe.py: CPUExpertsInt4, ArmCPUExpertsInt8 and ZenCPUExpertsInt8 are
    # FusedMoEExpertsMonolithic (vLLM built MoEPrepareAndFinalizeNoDPEPMonolithic for them in the
    # guided draws); 0.30.0 made them FusedMoEExpertsModular.
    old, new = OurSide("0.29.0").answer(dep), OurSide("0.30.0").answer(dep)
    assert (old.experts, old.detail, old.prepare_finalize) == (cls, f"{kernel}_monolithic", "MoEPrepareAndFinalizeNoDPEPMonolithic"), old
    assert (new.experts, new.detail, new.prepare_finalize) == (cls, kernel, "MoEPrepareAndFinalizeNoDPEPModular"), new


# vLLM 0.33.0 guided draw (seed 5): compressed-tensors FP8 with 64x64 weight blocks, HPC requested,
# FlashInfer one-sided all2all. vLLM selected HPCExperts, then its one-sided layout raised
# NotImplementedError ("... DeepSeek Blockwise FP8 (E4M3 with FP32 1x128 scales) ... block_shape=[64, 64]").
ONE_SIDED_BLOCK64 = Deployment(
    platform="cuda", capability=90, family="fp8", front_end="compressed-tensors-fp8", weight_key="fp8_static_block128", activation_key="fp8_dynamic_group128",
    block=(64, 64), num_experts=256, top_k=8, hidden_size=7168, intermediate_size=2048, router_logits_dtype="float32", activation="silu",
    routing_method="deepseek_v3", tp_size=2, dp_size=2, use_ep=True, all2all_backend="flashinfer_nvlink_one_sided", moe_backend="hpc",
    packages=("flashinfer", "flashinfer_cubin", "hpc", "moonep", "triton_kernels"), tools=("jit_nvcc", "ninja"), model_type="deepseek_v3",
)


@pytest.mark.parametrize("release", ["0.29.0", "0.33.0", "0.34.0"])
def test_one_sided_flashinfer_dispatch_carries_only_128_blocks(release):
    # vLLM 0.29.0-0.34.0 P/all2all_utils.py flashinfer_one_sided_dispatch_layout: block fp8 only with
    # block_shape == [128, 128] (replayed against 0.29.0 and 0.33.0: 64x64 raises, 128x128 builds).
    side = OurSide(release)
    assert side.answer(ONE_SIDED_BLOCK64).prepare_finalize == "(raises) flashinfer_nvlink_one_sided.payload_block"
    assert side.answer(replace(ONE_SIDED_BLOCK64, block=(128, 128))).prepare_finalize == "FlashInferNVLinkOneSidedPrepareAndFinalize"


# The mutation run's targeted draw (vLLM 0.33.0, 2026-12-04): compressed-tensors FP8 per-tensor on
# SM 10.7. vLLM selected TrtLlmFp8ExpertsMonolithic (FLASHINFER_TRTLLM): its
# _supports_current_device asks is_device_capability_family(100), the whole SM 10.x family; our
# table had listed SM 10.0 and 10.3 only and answered FlashInfer CUTLASS.
CT_FP8_TENSOR_SM107 = Deployment(
    platform="cuda", capability=107, family="fp8", front_end="compressed-tensors-fp8", weight_key="fp8_static_tensor", activation_key="fp8_static_tensor",
    num_experts=40, top_k=8, hidden_size=1536, intermediate_size=512, in_dtype="bfloat16", router_logits_dtype="float32", activation="silu",
    routing_method="renormalize", tp_size=2, env=(("VLLM_USE_DEEP_GEMM", "0"),),
    packages=("aiter", "cutlass", "deep_gemm", "flashinfer", "flashinfer_cubin", "triton_kernels", "zentorch"), tools=("ninja", "nvcc"), model_type="deepseek_v4",
)


@pytest.mark.parametrize("release", ["0.29.0", "0.33.0", "0.34.0"])
def test_trtllm_fp8_is_taken_on_the_whole_sm10_family(release):
    answer = OurSide(release).answer(CT_FP8_TENSOR_SM107)
    assert (answer.status, answer.experts, answer.backend) == ("ok", "TrtLlmFp8ExpertsMonolithic", "FLASHINFER_TRTLLM"), answer
