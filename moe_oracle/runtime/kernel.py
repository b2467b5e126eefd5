"""FusedMoEKernel: one prepare/finalize composed with one experts kernel.

Source: vLLM main 00f7f258 ``P/modular_kernel.py`` ``FusedMoEKernel`` (reference
catalog §1.11: a monolithic half with a modular half raises; the activation
formats must match).
"""

from __future__ import annotations

import torch

from ..core.vocab import Interface
from .errors import CompositionError
from .interfaces import ExpertsBase, InputQuant, ModularExperts, ModularPrepareFinalize, MonolithicExperts, MonolithicPrepareFinalize, PrepareFinalizeBase
from .routing import route
from .spec import LayerSpec

__all__ = ["FusedMoEKernel"]


class FusedMoEKernel:
    """A callable MoE layer: ``kernel(hidden_states, router_logits) -> output``.

    Args:
        prepare_finalize: dispatch/combine half.
        experts: experts half (holds the spec and weights).

    Raises:
        CompositionError: one half is monolithic and the other modular, their activation
            formats differ, or monolithic experts meet a prepare/finalize that does not
            carry router logits.
    """

    def __init__(self, prepare_finalize: PrepareFinalizeBase, experts: ExpertsBase) -> None:
        pf_name, ex_name = type(prepare_finalize).__name__, type(experts).__name__
        if prepare_finalize.interface is not experts.interface:
            raise CompositionError(ex_name, pf_name, "interface", experts.interface.value, prepare_finalize.interface.value)
        if prepare_finalize.activation_format is not experts.activation_format:
            raise CompositionError(ex_name, pf_name, "activation_format", experts.activation_format.value, prepare_finalize.activation_format.value)
        if experts.interface is Interface.MONOLITHIC and not prepare_finalize.carries_router_logits:
            raise CompositionError(ex_name, pf_name, "carries_router_logits", True, False)
        self.prepare_finalize = prepare_finalize
        self.experts = experts
        self.input_quant = InputQuant.for_experts(experts)

    @property
    def interface(self) -> Interface:
        return self.experts.interface

    @property
    def spec(self) -> LayerSpec:
        """The experts' layer spec (this rank's share)."""
        return self.experts.spec

    def __repr__(self) -> str:
        return f"FusedMoEKernel({self.prepare_finalize!r}, {self.experts!r})"

    def forward(
        self,
        hidden_states: torch.Tensor,
        router_logits: torch.Tensor | None = None,
        *,
        topk_weights: torch.Tensor | None = None,
        topk_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Run the layer on this rank's tokens.

        Args:
            hidden_states: ``[num_tokens, hidden]`` in the model dtype.
            router_logits: ``[num_tokens, num_experts]``; required for monolithic kernels and for
                modular ones unless ``topk_weights``/``topk_ids`` are given.
            topk_weights, topk_ids: precomputed routing ``[num_tokens, top_k]`` (float32, int64
                global ids); modular kernels only.

        Returns:
            ``[num_tokens, hidden]`` in the model dtype.

        Raises:
            ValueError: missing or contradictory routing inputs.
        """
        pf, ex = self.prepare_finalize, self.experts
        if ex.interface is Interface.MONOLITHIC:
            if router_logits is None or topk_ids is not None:
                raise ValueError("a monolithic kernel routes inside: pass router_logits and no topk_weights/topk_ids")
            assert isinstance(pf, MonolithicPrepareFinalize) and isinstance(ex, MonolithicExperts)
            prep = pf.prepare(hidden_states, router_logits, input_quant=self.input_quant)
            out = ex.apply_monolithic(prep.hidden_states, prep.router_logits, a1_scale=prep.a1_scale)
            return pf.finalize(out, prep)
        assert isinstance(pf, ModularPrepareFinalize) and isinstance(ex, ModularExperts)
        if topk_ids is None or topk_weights is None:
            if router_logits is None:
                raise ValueError("pass router_logits, or both topk_weights and topk_ids")
            topk_weights, topk_ids = route(router_logits, ex.spec.routing, correction_bias=ex.weights.correction_bias)
        prep = pf.prepare(hidden_states, topk_weights.float(), topk_ids.to(torch.int64), input_quant=self.input_quant)
        out = ex.apply(prep.hidden_states, prep.topk_weights, prep.topk_ids, a1_scale=prep.a1_scale, expert_num_tokens=prep.expert_num_tokens)
        return pf.finalize(out, prep)

    __call__ = forward
