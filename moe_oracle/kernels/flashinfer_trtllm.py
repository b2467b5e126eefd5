"""FlashInfer TRT-LLM-gen fused MoE adapters: bf16 and DeepSeek fp8 block-scale, monolithic and modular.

=============================  ============  ===================================================
class                          interface     FlashInfer entry point
=============================  ============  ===================================================
TrtLlmBf16Monolithic           monolithic    ``flashinfer.fused_moe.trtllm_bf16_moe``
TrtLlmBf16Modular              modular       ``flashinfer.fused_moe.trtllm_bf16_routed_moe``
TrtLlmFp8BlockMonolithic       monolithic    ``flashinfer.fused_moe.trtllm_fp8_block_scale_moe``
TrtLlmFp8BlockModular          modular       ``flashinfer.fused_moe.trtllm_fp8_block_scale_routed_moe``
=============================  ============  ===================================================

Construction converts vLLM-layout weights once (CPU or GPU, tested on CPU):
intermediate zero-padded to a multiple of 128 (bf16; fp8 block weights must already be),
then the TRT-LLM layouts of :mod:`moe_oracle.kernels._flashinfer_layout`
(w13 -> w31, gated row interleave, epilogue row shuffle, BlockMajorK).

**The call path is untested**: these kernels need SM 100/103 (bf16 also 107) and
FlashInfer; no such GPU was available (the H200 is SM 90). It follows FlashInfer's
documented signatures (docs.flashinfer.ai, 2026-11) and vLLM's use of them.

Shapes: hidden states ``[T, hidden]`` bf16; router logits ``[T, num_experts]`` (float32 for
``deepseek_v3``, else bf16); routed variants take ``topk_ids``/``topk_weights`` ``[T, K]`` packed
to int32 (``pack_topk``); fp8 block variants quantize the input per token in 1x128 groups,
``hidden_states_scale`` ``[hidden / 128, T]`` float32. Outputs ``[T, hidden]`` bf16, the weighted
sum over this rank's experts (``local_expert_offset``, ``local_num_experts``).

Source: FlashInfer ``flashinfer/fused_moe/core.py`` and docs of the four entry points;
vLLM main 00f7f258 ``P/experts/trtllm_bf16_moe.py``, ``trtllm_fp8_moe.py`` (reference §2).
"""

from __future__ import annotations

import inspect

import torch

from ..core.quant import SCHEMES, UNQUANTIZED
from ..runtime import fp8
from ..runtime.errors import UnsupportedConfigError
from ..runtime.interfaces import ExpertsBase, ModularExperts, MonolithicExperts
from ..runtime.spec import LayerSpec
from ..runtime.weights import MoEWeights
from ..core.vocab import Activation, RoutingMethod
from ._flashinfer_call import activation_type, flashinfer_fused_moe, require_cuda_capability, weight_layout
from ._flashinfer_layout import pack_topk, pad_intermediate, trtllm_bf16_layout, trtllm_fp8_block_layout

__all__ = ["TrtLlmBf16Modular", "TrtLlmBf16Monolithic", "TrtLlmFp8BlockModular", "TrtLlmFp8BlockMonolithic"]

INTERMEDIATE_ALIGNMENT = 128
"""Intermediate sizes are padded to this (covers BlockMajorK's 64/128-element blocks and the 32-row shuffle)."""
_HIDDEN_ALIGNMENT = 128

_BF16_SM = frozenset({100, 103, 107})
_FP8_SM = frozenset({100, 103})
_ACTIVATIONS = {Activation.SILU: "Swiglu", Activation.RELU2_NO_MUL: "Relu2"}
# Union of the routing methods kernels/flashinfer_trtllm.yaml lists for the monolithic entries (minus simulated).
_ROUTING = frozenset(
    {RoutingMethod.DEEPSEEK_V3, RoutingMethod.LLAMA4, RoutingMethod.RENORMALIZE, RoutingMethod.RENORMALIZE_NAIVE, RoutingMethod.SIGMOID_RENORM, RoutingMethod.SIGMOID, RoutingMethod.MINIMAX2}
)


class _TrtLlm(ExpertsBase):
    """Shared checks, weight conversion and call arguments."""

    _entry: str = ""
    _sm: frozenset[int] = _BF16_SM

    def _check(self, spec: LayerSpec, weights: MoEWeights) -> None:
        name = type(self).__name__
        if spec.activation not in _ACTIVATIONS:
            raise UnsupportedConfigError(name, "activation", spec.activation.value, sorted(a.value for a in _ACTIVATIONS))
        if spec.hidden_size % _HIDDEN_ALIGNMENT:
            raise UnsupportedConfigError(name, "hidden_size", spec.hidden_size, f"a multiple of {_HIDDEN_ALIGNMENT}")
        if weights.w13_bias is not None or weights.w2_bias is not None:
            raise UnsupportedConfigError(name, "has_bias", True, [False])
        if spec.num_experts > 2048:
            raise UnsupportedConfigError(name, "num_experts", spec.num_experts, "<= 2048 (TRT-LLM routing)")

    def _call_args(self, module) -> dict:  # noqa: ANN001 - flashinfer.fused_moe module
        spec, r = self.spec, self.spec.routing
        return {
            "num_experts": spec.num_experts,
            "top_k": spec.top_k,
            "n_group": r.num_expert_group,
            "topk_group": r.topk_group,
            "intermediate_size": self.padded_intermediate,
            "local_expert_offset": spec.first_local_expert,
            "local_num_experts": spec.num_local_experts,
            "routed_scaling_factor": r.routed_scaling_factor,
            "routing_method_type": r.method.flashinfer_id,
            "use_shuffled_weight": True,
            "weight_layout": weight_layout(module, "BlockMajorK"),
        }

    def _with_activation(self, fn, kwargs: dict, module) -> dict:  # noqa: ANN001
        act = _ACTIVATIONS[self.spec.activation]
        if "activation_type" in inspect.signature(fn).parameters:
            kwargs["activation_type"] = activation_type(module, act)
        elif act != "Swiglu":
            raise UnsupportedConfigError(type(self).__name__, "activation", self.spec.activation.value, "silu only with this FlashInfer version (no activation_type argument)")
        return kwargs

    def _routing_inputs(self, router_logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        logits = router_logits.float() if self.spec.routing.method is RoutingMethod.DEEPSEEK_V3 else router_logits.to(torch.bfloat16)
        bias = self.weights.correction_bias
        return logits, (None if bias is None else bias.to(device=router_logits.device, dtype=torch.bfloat16))

    @staticmethod
    def _first(out):  # noqa: ANN001, ANN205 - some FlashInfer versions return [output]
        return out[0] if isinstance(out, (list, tuple)) else out


class _RoutesInside:
    """Monolithic TRT-LLM kernels route inside: the routing method must be one they implement."""

    def __init__(self, spec: LayerSpec, weights: MoEWeights) -> None:
        super().__init__(spec, weights)  # type: ignore[call-arg]
        if spec.routing.method not in _ROUTING:
            raise UnsupportedConfigError(type(self).__name__, "routing_method", spec.routing.method.value, sorted(m.value for m in _ROUTING))


class _Bf16(_TrtLlm):
    _sm = _BF16_SM

    def __init__(self, spec: LayerSpec, weights: MoEWeights) -> None:
        super().__init__(spec, weights)
        self._check(spec, weights)
        if spec.quant != UNQUANTIZED:
            raise UnsupportedConfigError(type(self).__name__, "quant", spec.quant.name, ["unquantized"])
        w13, w2, self.padded_intermediate = pad_intermediate(weights.w13.to(torch.bfloat16), weights.w2.to(torch.bfloat16), multiple=INTERMEDIATE_ALIGNMENT, gated=spec.is_gated)
        self.gemm1_weights, self.gemm2_weights = trtllm_bf16_layout(w13, w2, gated=spec.is_gated)


class TrtLlmBf16Monolithic(_RoutesInside, _Bf16, MonolithicExperts):
    """TRT-LLM bf16 MoE with routing inside (``trtllm_bf16_moe``). GPU call path untested (needs SM 100).

    Attributes:
        gemm1_weights: ``[E_local, hidden/64, 2*I_pad, 64]`` bf16 (BlockMajorK, w31, interleaved, shuffled).
        gemm2_weights: ``[E_local, I_pad/64, hidden, 64]`` bf16.
        padded_intermediate: ``I_pad``.

    Raises:
        UnsupportedConfigError: activation other than silu/relu2_no_mul, hidden not a multiple of 128,
            biases, > 2048 experts, a routing method TRT-LLM does not implement, a quantized scheme.
    """

    def apply_monolithic(self, hidden_states, router_logits, *, a1_scale=None):  # noqa: ANN001, ANN201 - untested on GPU
        name = "moe_oracle.kernels.flashinfer_trtllm:TrtLlmBf16Monolithic"
        require_cuda_capability(name, hidden_states, self._sm)
        fm = flashinfer_fused_moe(name)
        logits, bias = self._routing_inputs(router_logits)
        kwargs = self._with_activation(fm.trtllm_bf16_moe, self._call_args(fm), fm)
        out = fm.trtllm_bf16_moe(routing_logits=logits, routing_bias=bias, hidden_states=hidden_states.to(torch.bfloat16), gemm1_weights=self.gemm1_weights, gemm2_weights=self.gemm2_weights, **kwargs)
        return self._first(out)


class TrtLlmBf16Modular(_Bf16, ModularExperts):
    """TRT-LLM bf16 MoE on precomputed routing (``trtllm_bf16_routed_moe``). GPU call path untested.

    Weights as :class:`TrtLlmBf16Monolithic`; ``topk_ids``/``topk_weights`` are packed with ``pack_topk``.
    """

    def apply(self, hidden_states, topk_weights, topk_ids, *, a1_scale=None, expert_num_tokens=None):  # noqa: ANN001, ANN201 - untested on GPU
        name = "moe_oracle.kernels.flashinfer_trtllm:TrtLlmBf16Modular"
        require_cuda_capability(name, hidden_states, self._sm)
        fm = flashinfer_fused_moe(name)
        kwargs = self._with_activation(fm.trtllm_bf16_routed_moe, self._call_args(fm), fm)
        out = fm.trtllm_bf16_routed_moe(topk_ids=pack_topk(topk_ids, topk_weights), hidden_states=hidden_states.to(torch.bfloat16), gemm1_weights=self.gemm1_weights, gemm2_weights=self.gemm2_weights, **kwargs)
        return self._first(out)


class _Fp8Block(_TrtLlm):
    _sm = _FP8_SM

    def __init__(self, spec: LayerSpec, weights: MoEWeights) -> None:
        super().__init__(spec, weights)
        self._check(spec, weights)
        if spec.quant != SCHEMES["fp8_block"]:
            raise UnsupportedConfigError(type(self).__name__, "quant", spec.quant.name, ["fp8_block"])
        if spec.intermediate_size % INTERMEDIATE_ALIGNMENT:
            raise UnsupportedConfigError(type(self).__name__, "intermediate_size", spec.intermediate_size, "a multiple of 128 (block scales cannot be re-tiled)")
        assert weights.w13_scale is not None and weights.w2_scale is not None
        self.padded_intermediate = spec.intermediate_size
        self.gemm1_weights, self.gemm1_scales, self.gemm2_weights, self.gemm2_scales = trtllm_fp8_block_layout(
            weights.w13, weights.w13_scale.float(), weights.w2, weights.w2_scale.float(), gated=spec.is_gated
        )

    def _quantized_input(self, hidden_states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        xq, scale = fp8.quantize_activation(hidden_states, "fp8_dynamic_group128")
        return xq, scale.t().contiguous()  # [hidden/128, T]


class TrtLlmFp8BlockMonolithic(_RoutesInside, _Fp8Block, MonolithicExperts):
    """TRT-LLM fp8 block-scale (DeepSeek 128x128) MoE with routing inside. GPU call path untested (needs SM 100/103).

    Attributes:
        gemm1_weights: ``[E_local, hidden/128, 2I, 128]`` fp8 (BlockMajorK, w31, shuffled with tile 64).
        gemm1_scales: ``[E_local, 2I/128, hidden/128]`` float32 (w31 order).
        gemm2_weights: ``[E_local, I/128, hidden, 128]`` fp8; gemm2_scales ``[E_local, hidden/128, I/128]``.

    Raises:
        UnsupportedConfigError: scheme other than fp8_block, intermediate not a multiple of 128, and
            the checks of the bf16 variant.
    """

    def apply_monolithic(self, hidden_states, router_logits, *, a1_scale=None):  # noqa: ANN001, ANN201 - untested on GPU
        name = "moe_oracle.kernels.flashinfer_trtllm:TrtLlmFp8BlockMonolithic"
        require_cuda_capability(name, hidden_states, self._sm)
        fm = flashinfer_fused_moe(name)
        logits, bias = self._routing_inputs(router_logits)
        xq, xs = self._quantized_input(hidden_states)
        kwargs = self._with_activation(fm.trtllm_fp8_block_scale_moe, self._call_args(fm), fm)
        out = fm.trtllm_fp8_block_scale_moe(
            routing_logits=logits, routing_bias=bias, hidden_states=xq, hidden_states_scale=xs,
            gemm1_weights=self.gemm1_weights, gemm1_weights_scale=self.gemm1_scales,
            gemm2_weights=self.gemm2_weights, gemm2_weights_scale=self.gemm2_scales, **kwargs,
        )
        return self._first(out).to(self.spec.torch_dtype)


class TrtLlmFp8BlockModular(_Fp8Block, ModularExperts):
    """TRT-LLM fp8 block-scale MoE on precomputed routing (``trtllm_fp8_block_scale_routed_moe``). GPU call path untested."""

    def apply(self, hidden_states, topk_weights, topk_ids, *, a1_scale=None, expert_num_tokens=None):  # noqa: ANN001, ANN201 - untested on GPU
        name = "moe_oracle.kernels.flashinfer_trtllm:TrtLlmFp8BlockModular"
        require_cuda_capability(name, hidden_states, self._sm)
        fm = flashinfer_fused_moe(name)
        xq, xs = self._quantized_input(hidden_states)
        kwargs = self._with_activation(fm.trtllm_fp8_block_scale_routed_moe, self._call_args(fm), fm)
        out = fm.trtllm_fp8_block_scale_routed_moe(
            topk_ids=pack_topk(topk_ids, topk_weights), routing_bias=None, hidden_states=xq, hidden_states_scale=xs,
            gemm1_weights=self.gemm1_weights, gemm1_weights_scale=self.gemm1_scales,
            gemm2_weights=self.gemm2_weights, gemm2_weights_scale=self.gemm2_scales, **kwargs,
        )
        return self._first(out).to(self.spec.torch_dtype)
