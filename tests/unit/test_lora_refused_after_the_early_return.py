"""The kernel an early return hands back is the one the LoRA wrapper then refuses.

The differential tier on e0df958 (vLLM 0.34.0) found two deployments, read from its replayable
output (0.34.0-unquantized-e8f8093ca36e, 0.34.0-fp8-55a93563f2b2):

- LoRA with expert parallelism over NIXL-EP on a B200: vLLM 0.34.0 P/oracle/unquantized.py
  returns TrtLlmBf16LoRAExperts (its is_supported_config does not read the all2all), and only
  then vllm/lora/layers/fused_moe.py ``_ep_check`` refuses the all2all. Our shortcut skipped the
  LoRA kernel for its after-selection failure and named TritonExperts as the refused kernel;
- LoRA with EP on a CPU that runs MoE itself: the harness compared our refused platform kernel
  as an experts class ("ok (platform)") instead of as the platform's own MoE.
"""

from __future__ import annotations

import pytest

from moe_oracle.core.decision import NoEligibleKernelError
from moe_oracle.verify.cases import Deployment
from moe_oracle.verify.ours import OurSide, config_for, environment_for

LORA_NIXL_B200 = Deployment(platform="cuda", capability=100, family="unquantized", front_end="unquantized", num_experts=256, top_k=8,
                            hidden_size=7168, intermediate_size=2048, in_dtype="float16", router_logits_dtype="bfloat16",
                            tp_size=8, use_ep=True, all2all_backend="nixl_ep", lora=True, packages=("flashinfer",), tools=("jit_nvcc", "ninja", "nvcc"))
LORA_EP_PPC64LE = Deployment(platform="cpu", arch="ppc64le", cpu_amx=False, family="fp8", front_end="compressed-tensors-fp8",
                             weight_key="fp8_static_channel", activation_key="fp8_dynamic_token", num_experts=256, top_k=8,
                             hidden_size=7168, intermediate_size=2048, tp_size=8, use_ep=True,
                             all2all_backend="flashinfer_nvlink_one_sided", lora=True)


@pytest.mark.parametrize("release", ["0.33.0", "0.34.0"])
def test_the_lora_kernel_returned_early_is_the_one_refused(release: str) -> None:
    side = OurSide(release)
    with pytest.raises(NoEligibleKernelError) as err:
        side.oracle.select(config_for(LORA_NIXL_B200, release), environment_for(LORA_NIXL_B200, release))
    decision = err.value.decision
    assert decision.refused_kernel == "flashinfer_trtllm_bf16_lora"
    # The harness runs the wrapper's _ep_check (verify/vllm_late_checks.py): the refusal is compared at
    # stage lora; under the direct front end, which builds nothing, the kernel selected before it is.
    answer = side.answer(LORA_NIXL_B200)
    assert (answer.status, answer.stage) == ("error", "lora") and "constraint.lora_ep_all2all" in answer.detail
    answer = side.answer(Deployment.from_dict({**LORA_NIXL_B200.to_dict(), "front_end": "direct"}))
    assert (answer.status, answer.experts, answer.later) == ("ok", "TrtLlmBf16LoRAExperts", "lora: constraint.lora_ep_all2all")
    # The control: the all2all the wrapper accepts leaves the same kernel selected, unrefused.
    kept = side.answer(Deployment.from_dict({**LORA_NIXL_B200.to_dict(), "all2all_backend": "allgather_reducescatter"}))
    assert (kept.status, kept.experts, kept.later) == ("ok", "TrtLlmBf16LoRAExperts", None)


def test_a_platform_moe_refused_at_load_is_refused_before_the_lora_wrapper() -> None:
    """The FP8 oracle's NONE on this CPU is refused when the method converts its weights at load
    (constraint.fp8_no_backend_at_load), which vLLM does before it wraps the layers for LoRA: the
    harness answers the construction refusal (session 19 compared it as the platform's MoE, which
    the LoRA wrapper refused later; the release's own conversion, run by the harness since, raises)."""
    answer = OurSide("0.34.0").answer(LORA_EP_PPC64LE)
    assert (answer.status, answer.stage, answer.later) == ("error", "construction", None)


# 0.34.0 differential tier on 6970f1e: LoRA with EP over MoRI EPv2 on an FP8 block layer. vLLM builds
# TritonExperts on MoriEPv2PrepareAndFinalize (post_init_setup raises: Triton expects activations
# quantized before dispatch) before the LoRA wrapper would refuse the all2all; we answered the
# prepare/finalize as built.
LORA_MORI_EPV2_FP8 = Deployment(platform="rocm", arch="gfx1201", family="fp8", front_end="fp8", weight_key="fp8_static_block128",
                                activation_key="fp8_dynamic_group128", block=(64, 64), num_experts=32, top_k=4, hidden_size=2880,
                                intermediate_size=2880, router_logits_dtype="float32", tp_size=1, dp_size=8, use_ep=True,
                                all2all_backend="mori", lora=True, env=(("VLLM_MORI_EP_V2", "1"), ("VLLM_ROCM_USE_AITER", "1")),
                                packages=("aiter", "deep_gemm", "flashinfer", "mori"), tools=("jit_nvcc", "ninja", "nvcc"), model_type="deepseek_v4")


def test_a_prepare_finalize_that_fails_when_built_raises_before_the_lora_wrapper() -> None:
    side = OurSide("0.34.0")
    answer = side.answer(LORA_MORI_EPV2_FP8)
    assert (answer.experts, answer.later) == ("TritonExperts", "lora: constraint.lora_ep_all2all")
    assert answer.prepare_finalize == "(raises) mori_epv2.unquantized_inputs"
    # Without LoRA the same kernel is selected and its build raises the same way.
    plain = side.answer(Deployment.from_dict({**LORA_MORI_EPV2_FP8.to_dict(), "lora": False}))
    assert (plain.experts, plain.later) == ("TritonExperts", None) and plain.prepare_finalize.startswith("(raises) mori_epv2.")
