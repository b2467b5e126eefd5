"""FlashInfer CUTLASS fused MoE adapter, bf16 (``flashinfer.fused_moe.cutlass_fused_moe``).

Construction converts vLLM-layout weights once: w13 ``[gate; up]`` -> w31 ``[up; gate]``
for gated activations (``_flashinfer_layout.swap_w13_to_w31``); w2 unchanged. The
kernel takes ``token_selected_experts`` ``[T, K]`` int32 global ids,
``token_final_scales`` ``[T, K]`` float32, ``fc1_expert_weights`` ``[E_local, 2I, hidden]``,
``fc2_expert_weights`` ``[E_local, hidden, I]`` and ``ep_size``/``ep_rank`` (it computes
this rank's experts from the weight count), and returns ``[T, hidden]`` bf16.

**The call path is untested**: on the H200 (SM 90) FlashInfer must JIT-build its SM90
CUTLASS MoE module on first use, and that build ran over 8 minutes without finishing
(shared/reference/README.md, 2026-11). The weight conversion is tested on CPU.

Source: FlashInfer docs of ``cutlass_fused_moe`` (2026-11); vLLM
``P/flashinfer_cutlass_moe.py`` (``FlashInferExperts``) and ``vllm/utils/flashinfer.py``
(``swap_w13_to_w31``, ``activation_to_flashinfer_type``).
"""

from __future__ import annotations

import torch

from ..runtime.activations import GPT_OSS_SWIGLU_ALPHA, GPT_OSS_SWIGLU_LIMIT
from ..runtime.errors import UnsupportedConfigError
from ..runtime.interfaces import ModularExperts, require_unquantized_bf16
from ..runtime.spec import LayerSpec
from ..runtime.weights import MoEWeights
from ..core.vocab import Activation
from ._flashinfer_call import activation_type, flashinfer_fused_moe, require_cuda_capability
from ._flashinfer_layout import swap_w13_to_w31

__all__ = ["FlashInferCutlassBf16"]

_SM = frozenset({89, 90, 100, 103, 107, 110, 120, 121})
# As vLLM's activation_to_flashinfer_type: gelu and gelu_tanh both map to Geglu; swigluoai_uninterleave is
# Swiglu with swiglu_alpha / swiglu_beta (the "+1" on up) / swiglu_limit per expert. swigluoai (interleaved)
# is refused: the table rejects it (flashinfer_cutlass_bf16.swigluoai_aliased).
_ACTIVATIONS = {
    Activation.SILU: "Swiglu",
    Activation.GELU: "Geglu",
    Activation.GELU_TANH: "Geglu",
    Activation.RELU2_NO_MUL: "Relu2",
    Activation.SWIGLUOAI_UNINTERLEAVE: "Swiglu",
}


class FlashInferCutlassBf16(ModularExperts):
    """Modular standard-format bf16 experts on FlashInfer's CUTLASS fused MoE. GPU call path untested.

    Attributes:
        fc1_expert_weights: ``[E_local, 2I | I, hidden]`` bf16, w31 order when gated.
        fc2_expert_weights: ``[E_local, hidden, I]`` bf16.

    Raises:
        UnsupportedConfigError: quantized scheme, non-bf16 model dtype, activation other than
            silu/gelu/gelu_tanh/relu2_no_mul/swigluoai_uninterleave, expert counts not divisible by ``ep_size``.
    """

    def __init__(self, spec: LayerSpec, weights: MoEWeights) -> None:
        super().__init__(spec, weights)
        name = type(self).__name__
        require_unquantized_bf16(name, spec, _ACTIVATIONS)
        if spec.num_experts % spec.ep_size:
            raise UnsupportedConfigError(name, "num_experts", spec.num_experts, f"a multiple of ep_size ({spec.ep_size})")
        w13 = weights.w13.to(torch.bfloat16)
        self.fc1_expert_weights = swap_w13_to_w31(w13) if spec.is_gated else w13.contiguous()
        self.fc2_expert_weights = weights.w2.to(torch.bfloat16).contiguous()
        self.fc1_expert_biases = None if weights.w13_bias is None else (swap_w13_to_w31(weights.w13_bias.unsqueeze(-1)).squeeze(-1) if spec.is_gated else weights.w13_bias)
        self.fc2_expert_biases = weights.w2_bias
        self.swiglu_args: dict[str, torch.Tensor] = {}
        if spec.activation is Activation.SWIGLUOAI_UNINTERLEAVE:
            n = spec.num_local_experts
            alpha = GPT_OSS_SWIGLU_ALPHA if spec.swiglu_alpha is None else spec.swiglu_alpha
            limit = GPT_OSS_SWIGLU_LIMIT if spec.swiglu_limit is None else spec.swiglu_limit
            self.swiglu_args = {
                "swiglu_alpha": torch.full((n,), alpha, dtype=torch.float32, device=w13.device),
                "swiglu_beta": torch.full((n,), 1.0, dtype=torch.float32, device=w13.device),
                "swiglu_limit": torch.full((n,), limit, dtype=torch.float32, device=w13.device),
            }

    def apply(self, hidden_states, topk_weights, topk_ids, *, a1_scale=None, expert_num_tokens=None):  # noqa: ANN001, ANN201 - untested on GPU
        name = "moe_oracle.kernels.flashinfer_cutlass:FlashInferCutlassBf16"
        require_cuda_capability(name, hidden_states, _SM)
        fm = flashinfer_fused_moe(name)
        out = fm.cutlass_fused_moe(
            input=hidden_states.to(torch.bfloat16),
            token_selected_experts=topk_ids.to(torch.int32),
            token_final_scales=topk_weights.float(),
            fc1_expert_weights=self.fc1_expert_weights,
            fc2_expert_weights=self.fc2_expert_weights,
            output_dtype=torch.bfloat16,
            quant_scales=[],
            fc1_expert_biases=self.fc1_expert_biases,
            fc2_expert_biases=self.fc2_expert_biases,
            ep_size=self.spec.ep_size,
            ep_rank=self.spec.ep_rank,
            activation_type=activation_type(fm, _ACTIVATIONS[self.spec.activation]),
            **self.swiglu_args,
        )
        return out[0] if isinstance(out, (list, tuple)) else out
