"""Expert-parallel all-to-all dispatch and combine over ``torch.distributed.all_to_all_single``.

Experts are placed linearly: rank ``r`` owns global experts
``[r * ceil(E / world), (r + 1) * ceil(E / world))`` (``LayerSpec.owner_of``), and the
layer spec's ``ep_size`` must equal the group size.

* :class:`AllToAllModular` (standard format, the DeepEP high-throughput / DeepEP-v2
  contract): each token travels once to every rank that owns at least one of its
  top-k experts, with its full top-k ids and weights; the experts there return the
  weighted sum over their own experts; combine sends the partial sums back and adds
  them per token.
* :class:`BatchedAllToAllModular` (batched format, the DeepEP low-latency contract):
  each (token, k) pair travels to the owner of expert ``topk_ids[t, k]`` and lands in
  ``[num_local_experts, max_tokens_per_expert, hidden]`` with ``expert_num_tokens``;
  the experts return unweighted rows; combine sends them back, multiplies by
  ``topk_weights[t, k]`` and adds them per token.

Quantization before dispatch happens only for per-token and per-group activation
keys, whose scales travel with their rows (as DeepEP dispatches fp8 only for
block/per-token schemes). Per-tensor keys dispatch the model dtype and quantize on
the receiving rank: a *dynamic* per-tensor scale then covers the received rows
only, so results differ slightly from a single-rank run (static scales do not).

With no process group (a single rank) both still run: the batched variant then is
vLLM's local ``BatchedPrepareAndFinalize`` reorganisation.

Source: vLLM main 00f7f258 ``P/prepare_finalize/deepep_ht.py``, ``deepep_ll.py``,
``batched.py`` (reference catalog §4.2); ``torch.distributed.all_to_all_single``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..runtime.comm import all_reduce_max, all_to_all_varlen, group_info
from ..runtime.interfaces import InputQuant, ModularPrepareFinalize, PrepareResult
from ..runtime.spec import LayerSpec
from ..core.vocab import ActivationFormat

__all__ = ["AllToAllModular", "BatchedAllToAllModular"]


def _check_group(name: str, spec: LayerSpec, group: Any) -> int:
    _, world = group_info(group)
    if spec.ep_size != world:
        raise ValueError(f"{name}: the layer spec has ep_size={spec.ep_size} but the process group has {world} ranks; experts are dispatched by owner rank")
    return world


def _send_hidden(hidden_states: torch.Tensor, send_tokens: torch.Tensor, send_counts: list[int], group: Any, input_quant: InputQuant) -> tuple[torch.Tensor, torch.Tensor | None, list[int]]:
    """All-to-all rows ``send_tokens`` of ``hidden_states`` ``[T, hidden]``.

    Quantized before the exchange when the scheme's scales are row-local (the scales travel with
    their rows), after it otherwise (per-tensor scales need the received rows).

    Returns:
        (received rows, their scales or ``None``, received row count per source rank).
    """
    x, scale = input_quant.apply(hidden_states) if input_quant.row_local else (hidden_states, None)
    recv_x, recv_counts = all_to_all_varlen(x[send_tokens], send_counts, group)
    recv_scale = None
    if scale is not None:
        recv_scale, _ = all_to_all_varlen(scale[send_tokens], send_counts, group, recv_counts=recv_counts)
    elif input_quant.key is not None:
        recv_x, recv_scale = input_quant.apply(recv_x)
    return recv_x, recv_scale, recv_counts


@dataclass(frozen=True, eq=False)
class _StandardHandle:
    send_tokens: torch.Tensor  # [S] token index of each sent row, ordered by destination rank
    send_counts: list[int]
    recv_counts: list[int]
    num_tokens: int


class AllToAllModular(ModularPrepareFinalize):
    """Standard-format all-to-all dispatch/combine (DeepEP-HT contract).

    ``prepare``: ``[T, hidden]``, ``[T, K]`` x2 -> ``[R, hidden]``, ``[R, K]`` x2 where ``R`` is the
    number of (token, rank) pairs received. ``finalize``: ``[R, hidden]`` partials -> ``[T, hidden]``.

    Raises:
        ValueError: ``spec.ep_size`` differs from the group size.
    """

    def __init__(self, spec: LayerSpec, *, process_group: Any = None, max_tokens_per_expert: int | None = None) -> None:
        super().__init__(spec, process_group=process_group, max_tokens_per_expert=max_tokens_per_expert)
        self.world = _check_group(type(self).__name__, spec, process_group)

    def prepare(self, hidden_states: torch.Tensor, topk_weights: torch.Tensor, topk_ids: torch.Tensor, *, input_quant: InputQuant) -> PrepareResult:
        g, world, device = self.process_group, self.world, hidden_states.device
        tokens = hidden_states.shape[0]
        owners = self.spec.owner_of(topk_ids)  # [T, K]
        ranks = torch.arange(world, device=device)
        wants = (owners.unsqueeze(-1) == ranks).any(dim=1)  # [T, world]
        dest, send_tokens = wants.T.nonzero(as_tuple=True)  # ordered by destination, then token
        send_counts = torch.bincount(dest, minlength=world).tolist()
        recv_x, recv_scale, recv_counts = _send_hidden(hidden_states, send_tokens, send_counts, g, input_quant)
        recv_w, _ = all_to_all_varlen(topk_weights[send_tokens], send_counts, g, recv_counts=recv_counts)
        recv_ids, _ = all_to_all_varlen(topk_ids[send_tokens], send_counts, g, recv_counts=recv_counts)
        handle = _StandardHandle(send_tokens, send_counts, recv_counts, tokens)
        return PrepareResult(recv_x, recv_scale, recv_w, recv_ids, handle=handle)

    def finalize(self, expert_output: torch.Tensor, prep: PrepareResult) -> torch.Tensor:
        h: _StandardHandle = prep.handle
        back, _ = all_to_all_varlen(expert_output, h.recv_counts, self.process_group, recv_counts=h.send_counts)
        out = torch.zeros(h.num_tokens, expert_output.shape[-1], dtype=torch.float32, device=expert_output.device)
        out.index_add_(0, h.send_tokens, back.float())
        return out.to(expert_output.dtype)


@dataclass(frozen=True, eq=False)
class _BatchedHandle:
    send_pairs: torch.Tensor  # [S] flat (token * K + k) index of each sent row, ordered by destination rank
    send_counts: list[int]
    recv_counts: list[int]
    recv_expert: torch.Tensor  # [R] local expert of each received row
    recv_slot: torch.Tensor  # [R] its row in that expert's batch
    send_weights: torch.Tensor  # [S] float32 top-k weight of each sent pair
    num_tokens: int
    top_k: int


class BatchedAllToAllModular(ModularPrepareFinalize):
    """Batched-format all-to-all (DeepEP-LL contract): produces ``[num_local_experts, M, hidden]``.

    ``M`` (max tokens per expert) is ``max_tokens_per_expert`` when given (a fixed capacity,
    as CUDA graphs need), else the largest per-expert count over all ranks of this call.

    ``prepare``: ``[T, hidden]``, ``[T, K]`` x2 -> hidden ``[E_local, M, hidden]``,
    ``expert_num_tokens`` ``[E_local]`` int32 (``topk_*`` are ``None``).
    ``finalize``: unweighted ``[E_local, M, hidden]`` -> ``[T, hidden]`` weighted sum.

    Raises:
        ValueError: ``spec.ep_size`` differs from the group size, or an expert receives more
            than a fixed ``max_tokens_per_expert`` rows.
    """

    activation_format = ActivationFormat.BATCHED_EXPERTS

    def __init__(self, spec: LayerSpec, *, process_group: Any = None, max_tokens_per_expert: int | None = None) -> None:
        super().__init__(spec, process_group=process_group, max_tokens_per_expert=max_tokens_per_expert)
        self.world = _check_group(type(self).__name__, spec, process_group)
        if max_tokens_per_expert is not None and max_tokens_per_expert < 1:
            raise ValueError(f"max_tokens_per_expert must be >= 1, got {max_tokens_per_expert}")

    def prepare(self, hidden_states: torch.Tensor, topk_weights: torch.Tensor, topk_ids: torch.Tensor, *, input_quant: InputQuant) -> PrepareResult:
        g, world, spec, device = self.process_group, self.world, self.spec, hidden_states.device
        tokens, top_k = topk_ids.shape
        flat_ids = topk_ids.reshape(-1)
        owners = spec.owner_of(flat_ids)
        send_pairs = torch.argsort(owners, stable=True)
        send_counts = torch.bincount(owners, minlength=world).tolist()
        send_tokens = torch.div(send_pairs, top_k, rounding_mode="floor")
        recv_x, recv_scale, recv_counts = _send_hidden(hidden_states, send_tokens, send_counts, g, input_quant)
        recv_ids, _ = all_to_all_varlen(flat_ids[send_pairs], send_counts, g, recv_counts=recv_counts)

        local_n = spec.num_local_experts
        local = recv_ids - spec.first_local_expert
        order = torch.argsort(local, stable=True)
        counts = torch.bincount(local, minlength=local_n) if local.numel() else torch.zeros(local_n, dtype=torch.int64, device=device)
        starts = torch.cumsum(counts, 0) - counts
        slot = torch.empty_like(local)
        slot[order] = torch.arange(local.numel(), device=device) - starts[local[order]]
        longest = int(counts.max().item()) if local_n else 0
        if self.max_tokens_per_expert is not None:
            if longest > self.max_tokens_per_expert:
                raise ValueError(f"an expert received {longest} rows, more than max_tokens_per_expert={self.max_tokens_per_expert}")
            capacity = self.max_tokens_per_expert
        else:
            capacity = max(1, all_reduce_max(longest, device, g))
        wire = recv_x.view(torch.uint8) if recv_x.dtype == torch.float8_e4m3fn else recv_x  # index_put has no fp8 kernel on every device
        batch = torch.zeros((local_n, capacity) + tuple(wire.shape[1:]), dtype=wire.dtype, device=device)
        batch[local, slot] = wire
        batch = batch.view(recv_x.dtype)
        batch_scale = None
        if recv_scale is not None:
            if recv_scale.numel() == 1:
                batch_scale = recv_scale
            else:
                batch_scale = torch.ones((local_n, capacity) + tuple(recv_scale.shape[1:]), dtype=recv_scale.dtype, device=device)
                batch_scale[local, slot] = recv_scale
        handle = _BatchedHandle(send_pairs, send_counts, recv_counts, local, slot, topk_weights.reshape(-1)[send_pairs].float(), tokens, top_k)
        return PrepareResult(batch, batch_scale, expert_num_tokens=counts.to(torch.int32), handle=handle)

    def finalize(self, expert_output: torch.Tensor, prep: PrepareResult) -> torch.Tensor:
        h: _BatchedHandle = prep.handle
        rows = expert_output[h.recv_expert, h.recv_slot]
        back, _ = all_to_all_varlen(rows, h.recv_counts, self.process_group, recv_counts=h.send_counts)
        out = torch.zeros(h.num_tokens, expert_output.shape[-1], dtype=torch.float32, device=expert_output.device)
        tokens = torch.div(h.send_pairs, h.top_k, rounding_mode="floor")
        out.index_add_(0, tokens, back.float() * h.send_weights.unsqueeze(-1))
        return out.to(expert_output.dtype)
