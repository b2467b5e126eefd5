"""Experts on PyTorch's grouped GEMM (``torch._grouped_mm``), bf16, standard format.

Per call: the (token, k) pairs are sorted by local expert (pairs of other ranks'
experts last); each expert's rows are padded to a multiple of 16 (``_GROUP_ALIGN``;
padding rows are zero and their outputs dropped) and gathered into one bf16 buffer
of static size ``T*K + E_local*15`` rows (no host synchronization, so a call can be
captured in a CUDA graph); one grouped GEMM with ``w13`` (``[E, 2I, hidden]``, passed as the
transposed view ``[E, hidden, 2I]``) and per-expert end offsets ``offs`` (int32,
cumulative padded rows), the activation in float32 (cast to bf16), one grouped
GEMM with ``w2``; expert biases (gpt-oss), when present, are added in float32 after
each GEMM; then the rows are weighted by ``topk_weights`` and summed per
token in float32, and the result is cast to bf16.

Numerics: bf16 inputs, fp32 accumulation inside each GEMM, bf16 GEMM outputs.
On CUDA SM 90/100 the CUTLASS grouped GEMM runs; elsewhere (including torch >= 2.13
on CPU) PyTorch falls back to a per-group loop, so the numerics are testable on CPU.

Source: PyTorch ``aten/src/ATen/native/cuda/GroupedBlas.cpp`` (bf16 fast path for
device major 9/10; 16-byte alignment of strides), ``torch._grouped_mm(mat_a, mat_b,
offs=...)`` 2-D x 3-D form; padding to 16 rows as torchtitan does for its MoE.
"""

from __future__ import annotations

import torch

from ..runtime.activations import IMPLEMENTED_ACTIVATIONS, apply_activation
from ..runtime.errors import UnsupportedConfigError
from ..runtime.interfaces import ModularExperts, require_unquantized_bf16
from ..runtime.spec import LayerSpec
from ..runtime.weights import MoEWeights

__all__ = ["TorchGroupedMMExperts", "grouped_layout"]

_GROUP_ALIGN = 16


def grouped_layout(keys: torch.Tensor, num_groups: int, align: int = _GROUP_ALIGN) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """Where each (token, k) pair lands in the padded grouped buffer, computed without a host sync.

    Args:
        keys: ``[N]`` int64 local expert of each pair; ``num_groups`` marks "not on this rank"
            (such pairs are placed after the last group, where no GEMM reads or writes).
        num_groups: local experts.
        align: rows per group are rounded up to a multiple of this.

    Returns:
        ``(order [N] pair index sorted by key, dest [N] buffer row of each sorted pair,
        offs [num_groups] int32 cumulative padded group ends, rows)`` where ``rows = N +
        num_groups * (align - 1)`` is a static upper bound of the buffer (no device value read).

    >>> order, dest, offs, rows = grouped_layout(torch.tensor([2, 0, 3, 0]), 3, align=4)
    >>> order.tolist(), dest.tolist(), offs.tolist(), rows
    ([1, 3, 0, 2], [0, 1, 4, 8], [4, 4, 8], 13)
    """
    n = keys.numel()
    order = torch.argsort(keys, stable=True)
    sorted_keys = keys[order]
    counts = torch.zeros(num_groups + 1, dtype=torch.int64, device=keys.device).scatter_add_(0, keys, torch.ones_like(keys))
    padded = (counts + align - 1) // align * align
    padded[num_groups] = counts[num_groups]
    ends = torch.cumsum(padded, 0)
    starts = torch.cumsum(counts, 0) - counts
    dest = (ends - padded)[sorted_keys] + torch.arange(n, device=keys.device) - starts[sorted_keys]
    return order, dest, ends[:num_groups].to(torch.int32), n + num_groups * (align - 1)


class TorchGroupedMMExperts(ModularExperts):
    """Modular standard-format experts on ``torch._grouped_mm`` (bf16, unquantized).

    ``apply(hidden [T, hidden] bf16, topk_weights [T, K] fp32, topk_ids [T, K] int64) -> [T, hidden] bf16``:
    the weighted sum over this rank's experts.

    Raises:
        UnsupportedConfigError: a quantized scheme, a model dtype other than bf16, or an activation
            without reference math.
    """

    def __init__(self, spec: LayerSpec, weights: MoEWeights) -> None:
        super().__init__(spec, weights)
        name = type(self).__name__
        require_unquantized_bf16(name, spec, IMPLEMENTED_ACTIVATIONS)
        if not hasattr(torch, "_grouped_mm"):
            raise UnsupportedConfigError(name, "torch", torch.__version__, ">=2.9 (torch._grouped_mm)")
        self._w13_t = weights.w13.to(torch.bfloat16).transpose(-2, -1)  # [E, hidden, w13_rows], column-major view
        self._w2_t = weights.w2.to(torch.bfloat16).transpose(-2, -1)  # [E, intermediate, hidden]
        # Bias tables with one extra zero row for buffer rows no expert owns (padding, other ranks' pairs).
        self._b13 = None if weights.w13_bias is None else torch.cat([weights.w13_bias.float(), weights.w13_bias.new_zeros(1, spec.w13_rows).float()])
        self._b2 = None if weights.w2_bias is None else torch.cat([weights.w2_bias.float(), weights.w2_bias.new_zeros(1, spec.hidden_size).float()])

    def apply(self, hidden_states, topk_weights, topk_ids, *, a1_scale=None, expert_num_tokens=None):  # noqa: ANN001, ANN201 - see ModularExperts.apply
        if a1_scale is not None:
            raise ValueError("TorchGroupedMMExperts takes unquantized bf16 inputs")
        spec = self.spec
        tokens, top_k = topk_ids.shape
        local_n = spec.num_local_experts
        out = torch.zeros(tokens, spec.hidden_size, dtype=torch.float32, device=hidden_states.device)
        if local_n == 0 or tokens == 0:
            return out.to(torch.bfloat16)
        # No host synchronization below (static buffer sizes), so the call can be captured in a CUDA graph.
        local = topk_ids.reshape(-1).to(torch.int64) - spec.first_local_expert
        valid = (local >= 0) & (local < local_n)
        order, dest, offs, rows = grouped_layout(torch.where(valid, local, local_n), local_n)
        tok = torch.div(order, top_k, rounding_mode="floor")
        buf = torch.zeros(rows, spec.hidden_size, dtype=torch.bfloat16, device=hidden_states.device)
        buf[dest] = hidden_states[tok].to(torch.bfloat16)
        h = torch._grouped_mm(buf, self._w13_t, offs=offs).float()  # [rows, w13_rows]; rows past offs[-1] are not computed
        row_expert = None
        if self._b13 is not None or self._b2 is not None:
            row_expert = torch.full((rows,), local_n, dtype=torch.int64, device=buf.device)
            row_expert[dest] = torch.where(valid[order], local[order], local_n)
        if self._b13 is not None:
            h = h + self._b13[row_expert]
        a = apply_activation(h, spec.activation, swiglu_alpha=spec.swiglu_alpha, swiglu_limit=spec.swiglu_limit).to(torch.bfloat16)
        y = torch._grouped_mm(a, self._w2_t, offs=offs)  # [rows, hidden]
        y = y[dest].float() if self._b2 is None else y[dest].float() + self._b2[row_expert[dest]]
        weighted = y * topk_weights.reshape(-1)[order].float().unsqueeze(-1)
        out.index_add_(0, tok, torch.where(valid[order].unsqueeze(-1), weighted, 0.0))  # where, not *0: unused rows may hold NaN
        return out.to(torch.bfloat16)
