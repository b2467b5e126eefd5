"""All-gather before the experts, reduce-scatter after (DP + EP, or DP without EP).

Every rank gathers the tokens (and top-k ids/weights, or router logits for the
monolithic variant) of all ranks in the group, in the model dtype, then quantizes
after the gather when the experts do not defer it. The experts compute each
rank's *partial* output for all gathered tokens: its experts (EP) or its slice of
the intermediate dimension (TP). Finalize sums the partials over ranks and keeps
this rank's tokens (reduce-scatter). Each rank must therefore hold a disjoint
share of the layer; a full copy on every rank would be counted ``world`` times.

Token counts may differ between ranks. Works with gloo (CPU) and NCCL (GPU); with
no process group it is the single-rank passthrough.

Source: vLLM main 00f7f258 ``P/prepare_finalize/naive_dp_ep.py``
(``MoEPrepareAndFinalizeNaiveDPEPModular`` / ``...Monolithic``), reference catalog §4.2-4.3.
"""

from __future__ import annotations

from typing import Any

import torch

from ..runtime.comm import all_gather_varlen, group_info, reduce_scatter_varlen
from ..runtime.interfaces import InputQuant, ModularPrepareFinalize, MonolithicPrepareFinalize, PrepareResult
from ..runtime.spec import LayerSpec

__all__ = ["NaiveDPEPModular", "NaiveDPEPMonolithic"]


def _check_group(name: str, spec: LayerSpec, group: Any) -> None:
    _, world = group_info(group)
    if spec.ep_size not in (1, world):
        raise ValueError(f"{name}: the layer spec has ep_size={spec.ep_size} but the process group has {world} ranks")


class _GatherScatter:
    """What both variants share: the group-size check and the reduce-scatter finalize.

    ``finalize``: ``[sum T, hidden]`` partial -> ``[T_r, hidden]`` summed over ranks.
    """

    def __init__(self, spec: LayerSpec, *, process_group: Any = None, max_tokens_per_expert: int | None = None) -> None:
        super().__init__(spec, process_group=process_group, max_tokens_per_expert=max_tokens_per_expert)  # type: ignore[call-arg]
        _check_group(type(self).__name__, spec, process_group)

    def finalize(self, expert_output: torch.Tensor, prep: PrepareResult) -> torch.Tensor:
        return reduce_scatter_varlen(expert_output, prep.handle, self.process_group)  # type: ignore[attr-defined]


class NaiveDPEPModular(_GatherScatter, ModularPrepareFinalize):
    """All-gather / reduce-scatter for modular experts.

    ``prepare``: ``[T_r, hidden]``, ``[T_r, K]`` x2 -> ``[sum T, hidden]``, ``[sum T, K]`` x2.
    ``finalize``: ``[sum T, hidden]`` partial -> ``[T_r, hidden]`` summed over ranks.

    Raises:
        ValueError: ``spec.ep_size`` is neither 1 nor the group size.
    """

    def prepare(self, hidden_states: torch.Tensor, topk_weights: torch.Tensor, topk_ids: torch.Tensor, *, input_quant: InputQuant) -> PrepareResult:
        g = self.process_group
        x, sizes = all_gather_varlen(hidden_states, g)
        w, _ = all_gather_varlen(topk_weights, g)
        ids, _ = all_gather_varlen(topk_ids, g)
        xq, scale = input_quant.apply(x)
        return PrepareResult(xq, scale, w, ids, handle=sizes)


class NaiveDPEPMonolithic(_GatherScatter, MonolithicPrepareFinalize):
    """All-gather / reduce-scatter for monolithic experts; router logits are gathered too.

    ``prepare``: ``[T_r, hidden]``, ``[T_r, num_experts]`` -> ``[sum T, hidden]``, ``[sum T, num_experts]``.
    ``finalize``: ``[sum T, hidden]`` partial -> ``[T_r, hidden]`` summed over ranks.

    Raises:
        ValueError: ``spec.ep_size`` is neither 1 nor the group size.
    """

    def prepare(self, hidden_states: torch.Tensor, router_logits: torch.Tensor, *, input_quant: InputQuant) -> PrepareResult:
        g = self.process_group
        x, sizes = all_gather_varlen(hidden_states, g)
        logits, _ = all_gather_varlen(router_logits, g)
        xq, scale = input_quant.apply(x)
        return PrepareResult(xq, scale, router_logits=logits, handle=sizes)
