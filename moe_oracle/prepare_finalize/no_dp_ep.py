"""No data or expert parallelism: one rank holds every token and every expert.

Prepare quantizes the input when the experts do not defer it (scheme with an
activation key), and passes tokens (and router logits, monolithic) through;
finalize returns the experts' output unchanged (it is already the weighted sum).

Source: vLLM main 00f7f258 ``P/prepare_finalize/no_dp_ep.py``
(``MoEPrepareAndFinalizeNoDPEPModular`` / ``...Monolithic``), reference catalog §4.2.
"""

from __future__ import annotations

from typing import Any

import torch

from ..runtime.interfaces import InputQuant, ModularPrepareFinalize, MonolithicPrepareFinalize, PrepareResult
from ..runtime.spec import LayerSpec

__all__ = ["NoDPEPModular", "NoDPEPMonolithic"]


def _check_single(name: str, spec: LayerSpec) -> None:
    if spec.ep_size != 1:
        raise ValueError(f"{name} serves a single rank, but the layer spec has ep_size={spec.ep_size}; use naive_dp_ep or an all2all prepare/finalize")


class NoDPEPModular(ModularPrepareFinalize):
    """Passthrough for modular experts: ``[T, hidden]`` in, ``[T, hidden]`` out.

    Raises:
        ValueError: ``spec.ep_size != 1``.
    """

    def __init__(self, spec: LayerSpec, *, process_group: Any = None, max_tokens_per_expert: int | None = None) -> None:
        super().__init__(spec, process_group=process_group, max_tokens_per_expert=max_tokens_per_expert)
        _check_single(type(self).__name__, spec)

    def prepare(self, hidden_states: torch.Tensor, topk_weights: torch.Tensor, topk_ids: torch.Tensor, *, input_quant: InputQuant) -> PrepareResult:
        x, scale = input_quant.apply(hidden_states)
        return PrepareResult(x, scale, topk_weights, topk_ids)

    def finalize(self, expert_output: torch.Tensor, prep: PrepareResult) -> torch.Tensor:
        return expert_output


class NoDPEPMonolithic(MonolithicPrepareFinalize):
    """Passthrough for monolithic experts: hidden states and router logits pass unchanged.

    Raises:
        ValueError: ``spec.ep_size != 1``.
    """

    def __init__(self, spec: LayerSpec, *, process_group: Any = None, max_tokens_per_expert: int | None = None) -> None:
        super().__init__(spec, process_group=process_group, max_tokens_per_expert=max_tokens_per_expert)
        _check_single(type(self).__name__, spec)

    def prepare(self, hidden_states: torch.Tensor, router_logits: torch.Tensor, *, input_quant: InputQuant) -> PrepareResult:
        x, scale = input_quant.apply(hidden_states)
        return PrepareResult(x, scale, router_logits=router_logits)

    def finalize(self, expert_output: torch.Tensor, prep: PrepareResult) -> torch.Tensor:
        return expert_output
