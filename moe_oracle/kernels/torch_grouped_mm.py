"""Experts on PyTorch's grouped GEMMs: bf16 (``torch._grouped_mm``) and fp8 per-channel
(``torch._scaled_grouped_mm``), standard format.

Two implementations of the same math:

* **Triton path** (CUDA with Triton installed; the CPU tests run it under Triton's interpreter): the glue around the two
  grouped GEMMs is four small Triton kernels of :mod:`moe_oracle.kernels._triton_moe` -- an
  atomic count and a placement pass that sort the (token, k) pairs by local expert and copy each
  token's row into the expert-sorted buffer (no padding: ``offs`` are the true group ends), the
  activation (expert bias added first, float32 math, one bf16 rounding), and a combine that sums
  each token's ``K`` rows with their routing weights in float32 and writes bf16 once. Pairs of
  other ranks' experts are neither copied nor computed nor read. Nothing reads a device value on
  the host, so a call can be captured in a CUDA graph.
  For small and middling token counts the two GEMMs are instead our Triton grouped GEMM
  (:func:`~moe_oracle.kernels._triton_moe.bf16_grouped_gemm`: GEMM1 reads each token's row in
  place through the sorted token index and applies the activation to its float32 accumulators, so
  neither the gathered copy nor GEMM1's raw output is written); which path serves which token
  count, and with which tile shapes, is the table ``runtime_tables/paths/bf16_grouped.yaml``
  (:mod:`moe_oracle.kernels.path_tables`), tuned on an H200.
* **Portable path** (any other device; torch >= 2.13 runs ``_grouped_mm`` on CPU through a
  per-group loop): plain torch ops -- sort, per-expert rows padded to 16 (``_GROUP_ALIGN``), one
  bf16 buffer of static size ``T*K + E_local*15`` rows, the activation in float32, an
  ``index_add`` over the rows in float32.

Numerics (both paths): bf16 inputs, fp32 accumulation inside each GEMM, bf16 GEMM outputs, the
activation and the weighted sum in float32; four bf16 roundings in all (GEMM1 out, activation
out, GEMM2 out, final sum); three on the Triton GEMM path, whose GEMM1 applies the activation to
its float32 accumulators. The fp8 per-channel experts quantize the input per token
(``fp8_dynamic_token``) and the GEMM2 input per row, as :mod:`moe_oracle.runtime.fp8` does.

Source: PyTorch ``aten/src/ATen/native/cuda/GroupedBlas.cpp`` (bf16 CUTLASS fast path for device
major 9/10; 16-byte alignment of strides; ``_scaled_grouped_mm``: fp8 e4m3 with float32 row-wise
scales, ``scale_a [M]`` and ``scale_b [G, N]``, ``mat_b`` column-major, K and N multiples of 16,
bf16 output, SM 9.0 / 10.0) and ``GroupMMCommon.cuh`` (2d x 3d with row-major ``mat_a``: no
alignment required of the group sizes); ``torch._grouped_mm(mat_a, mat_b, offs=...)`` 2-D x 3-D
form.
"""

from __future__ import annotations

from types import ModuleType

import torch

from ..core.quant import SCHEMES
from ..runtime.activations import GPT_OSS_SWIGLU_ALPHA, GPT_OSS_SWIGLU_LIMIT, IMPLEMENTED_ACTIVATIONS, apply_activation
from ..runtime.errors import UnsupportedConfigError
from ..runtime.interfaces import ModularExperts, require_unquantized_bf16
from ..runtime.spec import LayerSpec
from ..runtime.weights import MoEWeights
from ..core.vocab import DType

__all__ = ["TorchGroupedMMExperts", "TorchScaledGroupedMMExperts", "emulated_scaled_grouped_mm", "grouped_layout", "triton_ops"]

_GROUP_ALIGN = 16


def triton_ops(device: torch.device) -> ModuleType | None:
    """:mod:`moe_oracle.kernels._triton_moe` when its kernels run on ``device`` (CUDA with Triton), else ``None``."""
    if device.type != "cuda":
        return None
    try:
        from . import _triton_moe
    except ImportError:
        return None
    return _triton_moe if _triton_moe.available(device) else None


def grouped_layout(keys: torch.Tensor, num_groups: int, align: int = _GROUP_ALIGN) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """Where each (token, k) pair lands in the padded grouped buffer of the portable path, without a host sync.

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
    the weighted sum over this rank's experts. On CUDA with Triton installed the Triton path runs
    (module docstring); ``use_triton=False`` forces the portable path (benchmarks compare them).

    Raises:
        UnsupportedConfigError: a quantized scheme, a model dtype other than bf16, or an activation
            without reference math.
    """

    def __init__(self, spec: LayerSpec, weights: MoEWeights, *, use_triton: bool = True) -> None:
        super().__init__(spec, weights)
        name = type(self).__name__
        require_unquantized_bf16(name, spec, IMPLEMENTED_ACTIVATIONS)
        if not hasattr(torch, "_grouped_mm"):
            raise UnsupportedConfigError(name, "torch", torch.__version__, ">=2.9 (torch._grouped_mm)")
        self._w13 = weights.w13.to(torch.bfloat16).contiguous()  # [E, w13_rows, hidden] (the Triton GEMM's layout)
        self._w2 = weights.w2.to(torch.bfloat16).contiguous()  # [E, hidden, intermediate]
        self._w13_t = self._w13.transpose(-2, -1)  # [E, hidden, w13_rows], column-major view (torch._grouped_mm)
        self._w2_t = self._w2.transpose(-2, -1)  # [E, intermediate, hidden]
        self._bias13 = None if weights.w13_bias is None else weights.w13_bias.float().contiguous()
        self._bias2 = None if weights.w2_bias is None else weights.w2_bias.float().contiguous()
        # Bias tables with one extra zero row for buffer rows no expert owns (padding, other ranks' pairs).
        self._b13 = None if self._bias13 is None else torch.cat([self._bias13, self._bias13.new_zeros(1, spec.w13_rows)])
        self._b2 = None if self._bias2 is None else torch.cat([self._bias2, self._bias2.new_zeros(1, spec.hidden_size)])
        self._ops = triton_ops(weights.device) if use_triton else None
        self.paths = None
        """The path table (:func:`moe_oracle.kernels.path_tables.load_paths`) when the Triton kernels run here."""
        if self._ops is not None:
            from .path_tables import load_paths

            self.paths = load_paths()
        self.force_path: object = None
        """A :class:`~moe_oracle.kernels.path_tables.PathChoice` that overrides the table (benchmarks and tuning only)."""

    def apply(self, hidden_states, topk_weights, topk_ids, *, a1_scale=None, expert_num_tokens=None):  # noqa: ANN001, ANN201 - see ModularExperts.apply
        if a1_scale is not None:
            raise ValueError(f"{type(self).__name__} takes unquantized bf16 inputs")
        tokens = topk_ids.shape[0]
        if self.spec.num_local_experts == 0 or tokens == 0:
            return torch.zeros(tokens, self.spec.hidden_size, dtype=torch.bfloat16, device=hidden_states.device)
        if self._ops is not None:
            return self._apply_triton(hidden_states, topk_weights, topk_ids)
        return self._apply_portable(hidden_states, topk_weights, topk_ids)

    def path_for(self, tokens: int):  # noqa: ANN201 - PathChoice
        """The path serving a call of ``tokens`` tokens (``force_path``, else the table's choice)."""
        if self.force_path is not None:
            return self.force_path
        spec = self.spec
        return self.paths.choose(spec.num_local_experts, spec.hidden_size, spec.intermediate_size, spec.top_k, tokens)

    def _apply_triton(self, hidden_states: torch.Tensor, topk_weights: torch.Tensor, topk_ids: torch.Tensor) -> torch.Tensor:
        ops, spec = self._ops, self.spec
        x = hidden_states.to(torch.bfloat16).contiguous()
        choice = self.path_for(topk_ids.shape[0])
        if choice.path == "triton":
            # Our grouped GEMMs: indices only (GEMM1 reads each token's row in place), the activation
            # in GEMM1's epilogue, GEMM2 on GEMM1's expert-ordered rows, then the weighted combine.
            layout = ops.route_layout(topk_ids, spec.first_local_expert, spec.num_local_experts)
            a = ops.bf16_grouped_gemm(
                x, self._w13, layout.counts, layout.rows, choice.gemm1, sorted_tok=layout.sorted_tok,
                act=spec.activation, bias=self._bias13, swiglu_alpha=_alpha(spec), swiglu_limit=_limit(spec),
            )
            y = ops.bf16_grouped_gemm(a, self._w2, layout.counts, layout.rows, choice.gemm2)
            return ops.combine(y, layout, topk_weights, topk_ids, spec.first_local_expert, bias=self._bias2)
        layout = ops.route_layout(topk_ids, spec.first_local_expert, spec.num_local_experts, x=x)
        h = torch._grouped_mm(layout.buf, self._w13_t, offs=layout.offs)  # [rows, w13_rows]; rows past offs[-1] not computed
        a, _ = ops.activation(h, spec.activation, layout.offs, bias=self._bias13, swiglu_alpha=_alpha(spec), swiglu_limit=_limit(spec))
        y = torch._grouped_mm(a, self._w2_t, offs=layout.offs)  # [rows, hidden]
        return ops.combine(y, layout, topk_weights, topk_ids, spec.first_local_expert, bias=self._bias2)

    def _apply_portable(self, hidden_states: torch.Tensor, topk_weights: torch.Tensor, topk_ids: torch.Tensor) -> torch.Tensor:
        spec = self.spec
        tokens, top_k = topk_ids.shape
        local_n = spec.num_local_experts
        out = torch.zeros(tokens, spec.hidden_size, dtype=torch.float32, device=hidden_states.device)
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


def _alpha(spec: LayerSpec) -> float:
    return GPT_OSS_SWIGLU_ALPHA if spec.swiglu_alpha is None else spec.swiglu_alpha


def _limit(spec: LayerSpec) -> float:
    return GPT_OSS_SWIGLU_LIMIT if spec.swiglu_limit is None else spec.swiglu_limit


def _scaled_grouped_mm(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    """``torch._scaled_grouped_mm`` (row-wise float32 scales, bf16 out); one name the CPU tests can replace."""
    return torch._scaled_grouped_mm(a, b, scale_a, scale_b, offs=offs, out_dtype=torch.bfloat16)


def emulated_scaled_grouped_mm(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    """:func:`_scaled_grouped_mm`'s math on any device (``torch._scaled_grouped_mm`` is CUDA only), what
    the CPU tests and ``benchmarks/runtime_bench.py --dry-run`` put in its place: per group ``g`` (rows
    ``offs[g-1]:offs[g]``), ``(a * scale_a[:, None]) @ (b[g] * scale_b[g][None, :])`` in float32, bf16 out.

    ``a [rows, K]`` fp8, ``b [G, K, N]`` fp8, ``scale_a [rows]``, ``scale_b [G, N]`` float32, ``offs [G]`` int32 group ends.
    """
    out = torch.empty(a.shape[0], b.shape[2], dtype=torch.bfloat16, device=a.device)
    start = 0
    for group, end in enumerate(offs.tolist()):
        out[start:end] = ((a[start:end].float() * scale_a[start:end, None]) @ (b[group].float() * scale_b[group][None, :])).to(torch.bfloat16)
        start = end
    return out


FP8_CHANNEL_SCHEME = SCHEMES["fp8_channel_token"]


class TorchScaledGroupedMMExperts(ModularExperts):
    """Modular standard-format fp8 experts on ``torch._scaled_grouped_mm``: per-channel fp8 weights
    (``fp8_static_channel``) x per-token dynamic fp8 activations (``fp8_dynamic_token``), bf16 model.

    Per call: quantize the input per token (Triton), sort and copy the fp8 rows and their scales
    into the expert-sorted buffer, GEMM1 with ``scale_a`` = row scales and ``scale_b`` =
    ``w13_scale [E, w13_rows]``, the activation with per-row fp8 quantization of its output, GEMM2
    with ``w2_scale [E, hidden]``, the weighted combine. Same layout kernels as
    :class:`TorchGroupedMMExperts`. ``apply`` as there; it quantizes itself
    (``expects_unquantized_inputs``).

    Raises:
        UnsupportedConfigError: a scheme other than ``fp8_channel_token``, a model dtype other than
            bf16, an activation the Triton activation kernel lacks, weights on a device where the
            Triton kernels cannot run (not CUDA), or torch without ``_scaled_grouped_mm``.
    """

    def __init__(self, spec: LayerSpec, weights: MoEWeights) -> None:
        super().__init__(spec, weights)
        name = type(self).__name__
        if spec.quant != FP8_CHANNEL_SCHEME:
            raise UnsupportedConfigError(name, "quant", spec.quant.name, [FP8_CHANNEL_SCHEME.name])
        if spec.dtype is not DType.BFLOAT16:
            raise UnsupportedConfigError(name, "in_dtype", spec.dtype.value, ["bfloat16"])
        self._ops = triton_ops(weights.device)
        if self._ops is None:
            raise UnsupportedConfigError(name, "device", weights.device.type, ["cuda (with triton)"])
        if spec.activation not in self._ops.SUPPORTED_ACTIVATIONS:
            raise UnsupportedConfigError(name, "activation", spec.activation.value, sorted(a.value for a in self._ops.SUPPORTED_ACTIVATIONS))
        if not hasattr(torch, "_scaled_grouped_mm"):
            raise UnsupportedConfigError(name, "torch", torch.__version__, ">=2.9 (torch._scaled_grouped_mm)")
        for field, size in (("hidden_size", spec.hidden_size), ("w13_rows", spec.w13_rows)):
            if size % 16:
                raise UnsupportedConfigError(name, field, size, "a multiple of 16 (torch._scaled_grouped_mm)")
        self._w13_t = weights.w13.transpose(-2, -1)  # [E, hidden, w13_rows] column-major view
        self._w2_t = weights.w2.transpose(-2, -1)  # [E, intermediate, hidden]
        self._s13 = weights.w13_scale.float().contiguous()  # [E, w13_rows]
        self._s2 = weights.w2_scale.float().contiguous()  # [E, hidden]
        self._bias13 = None if weights.w13_bias is None else weights.w13_bias.float().contiguous()
        self._bias2 = None if weights.w2_bias is None else weights.w2_bias.float().contiguous()

    def apply(self, hidden_states, topk_weights, topk_ids, *, a1_scale=None, expert_num_tokens=None):  # noqa: ANN001, ANN201 - see ModularExperts.apply
        if a1_scale is not None:
            raise ValueError(f"{type(self).__name__} quantizes its own input: pass bf16 hidden states")
        ops, spec = self._ops, self.spec
        tokens = topk_ids.shape[0]
        if spec.num_local_experts == 0 or tokens == 0:
            return torch.zeros(tokens, spec.hidden_size, dtype=torch.bfloat16, device=hidden_states.device)
        xq, xs = ops.quantize_rows(hidden_states.to(torch.bfloat16).contiguous(), None)  # [T, H] fp8, [T, 1]
        layout = ops.route_layout(topk_ids, spec.first_local_expert, spec.num_local_experts, x=xq, x_scale=xs)
        h = _scaled_grouped_mm(layout.buf, self._w13_t, layout.buf_scale.view(-1), self._s13, layout.offs)
        a, a_scale = ops.activation(h, spec.activation, layout.offs, bias=self._bias13, swiglu_alpha=_alpha(spec), swiglu_limit=_limit(spec), quant="token")
        y = _scaled_grouped_mm(a, self._w2_t, a_scale, self._s2, layout.offs)
        return ops.combine(y, layout, topk_weights, topk_ids, spec.first_local_expert, bias=self._bias2)
