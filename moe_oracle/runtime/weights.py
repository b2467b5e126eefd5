"""Expert weights of one MoE layer on one rank, and how to make random ones.

Layouts (vLLM's, the input of every adapter; adapters convert at build time):

* ``w13`` ``[num_local_experts, w13_rows, hidden]``: GEMM1, ``w13_rows = 2 * intermediate``
  for gated activations with ``[gate; up]`` halves (``swigluoai``: gate/up rows
  interleaved), ``intermediate`` for ``*_no_mul``;
* ``w2`` ``[num_local_experts, hidden, intermediate]``: GEMM2;
* storage dtype: the model dtype (bf16/fp16/fp32) or ``float8_e4m3fn`` with scales
  (see :mod:`moe_oracle.runtime.fp8` for their shapes).

Source: vLLM main 00f7f258 ``P/layer.py`` (w13_weight / w2_weight parameters).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

import torch

from ..core.quant import UNQUANTIZED, QuantScheme
from ..core.vocab import RoutingMethod
from . import fp8
from .spec import LayerSpec

__all__ = ["MoEWeights", "make_random_weights", "shard_experts", "shard_intermediate"]

_TENSORS = ("w13", "w2", "w13_scale", "w2_scale", "a13_scale", "a2_scale", "w13_bias", "w2_bias", "correction_bias")


@dataclass(frozen=True, eq=False)
class MoEWeights:
    """Weights of the experts one rank holds.

    Attributes:
        w13: ``[num_local_experts, w13_rows, hidden]`` GEMM1 weights.
        w2: ``[num_local_experts, hidden, intermediate]`` GEMM2 weights.
        w13_scale, w2_scale: float32 weight scales when ``quant.weight`` is set
            (``[E]``, ``[E, N]`` or ``[E, ceil(N/128), ceil(K/128)]``).
        a13_scale, a2_scale: float32 ``[1]`` static activation scales (GEMM1 / GEMM2
            inputs) when ``quant.activation`` is a static key.
        w13_bias: ``[num_local_experts, w13_rows]`` float32 or model dtype, optional.
        w2_bias: ``[num_local_experts, hidden]``, optional.
        correction_bias: ``[num_experts]`` (global) router score bias for
            ``deepseek_v3``/``minimax2``, float32, optional.
        quant: the (weight key, activation key) these tensors use.

    Raises:
        ValueError: inconsistent shapes, or a quantized scheme without weight scales.
    """

    w13: torch.Tensor
    w2: torch.Tensor
    w13_scale: torch.Tensor | None = None
    w2_scale: torch.Tensor | None = None
    a13_scale: torch.Tensor | None = None
    a2_scale: torch.Tensor | None = None
    w13_bias: torch.Tensor | None = None
    w2_bias: torch.Tensor | None = None
    correction_bias: torch.Tensor | None = None
    quant: QuantScheme = UNQUANTIZED

    def __post_init__(self) -> None:
        if self.w13.dim() != 3 or self.w2.dim() != 3:
            raise ValueError(f"w13 and w2 must be 3-D, got {tuple(self.w13.shape)} and {tuple(self.w2.shape)}")
        e, _, h = self.w13.shape
        if self.w2.shape[0] != e or self.w2.shape[1] != h:
            raise ValueError(f"w2 {tuple(self.w2.shape)} does not match w13 {tuple(self.w13.shape)}: expected [{e}, {h}, intermediate]")
        if self.quant.weight is not None and (self.w13_scale is None or self.w2_scale is None):
            raise ValueError(f"quant.weight={self.quant.weight} needs w13_scale and w2_scale")

    @property
    def num_local_experts(self) -> int:
        return self.w13.shape[0]

    @property
    def hidden_size(self) -> int:
        return self.w13.shape[2]

    @property
    def intermediate_size(self) -> int:
        return self.w2.shape[2]

    @property
    def device(self) -> torch.device:
        return self.w13.device

    def check(self, spec: LayerSpec) -> None:
        """Raise ``ValueError`` unless these weights are rank ``spec.ep_rank``'s share of ``spec``."""
        want = (spec.num_local_experts, spec.w13_rows, spec.hidden_size)
        if tuple(self.w13.shape) != want:
            raise ValueError(f"w13 shape {tuple(self.w13.shape)} does not match the layer spec: expected {want}")
        want2 = (spec.num_local_experts, spec.hidden_size, spec.intermediate_size)
        if tuple(self.w2.shape) != want2:
            raise ValueError(f"w2 shape {tuple(self.w2.shape)} does not match the layer spec: expected {want2}")
        if self.quant != spec.quant:
            raise ValueError(f"weights are quantized as {self.quant.name}, the layer spec says {spec.quant.name}")

    def expert_fp32(self, local_expert: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Dequantized float32 ``(w13 [w13_rows, hidden], w2 [hidden, intermediate])`` of one local expert."""
        key = self.quant.weight
        s13 = self.w13_scale[local_expert] if self.w13_scale is not None else None
        s2 = self.w2_scale[local_expert] if self.w2_scale is not None else None
        return fp8.dequantize_weight(self.w13[local_expert], s13, key), fp8.dequantize_weight(self.w2[local_expert], s2, key)

    def bytes_per_expert(self) -> int:
        """Bytes one expert's w13, w2, their scales and biases occupy."""
        total = 0
        for name in ("w13", "w2", "w13_scale", "w2_scale", "w13_bias", "w2_bias"):
            t = getattr(self, name)
            if t is not None and t.dim() > 0 and t.shape[0] == self.num_local_experts:
                total += t[0].numel() * t.element_size()
        return total

    def to(self, device: torch.device | str) -> "MoEWeights":
        """A copy with every tensor on ``device``."""
        return replace(self, **{n: getattr(self, n).to(device) for n in _TENSORS if getattr(self, n) is not None})


def _slice_experts(t: torch.Tensor | None, first: int, count: int, num_experts: int) -> torch.Tensor | None:
    if t is None or t.dim() == 0 or t.shape[0] != num_experts:
        return t
    return t[first : first + count].contiguous()


def shard_experts(weights: MoEWeights, spec: LayerSpec) -> MoEWeights:
    """Rank ``spec.ep_rank``'s experts out of a full layer's weights (expert parallelism).

    Args:
        weights: all ``spec.num_experts`` experts.
        spec: the per-rank spec (``ep_rank``/``ep_size`` set).

    Raises:
        ValueError: ``weights`` does not hold all experts.
    """
    if weights.num_local_experts != spec.num_experts:
        raise ValueError(f"shard_experts needs the full layer ({spec.num_experts} experts), got {weights.num_local_experts}")
    first, count = spec.first_local_expert, spec.num_local_experts
    values = {f.name: getattr(weights, f.name) for f in fields(weights)}
    for name in ("w13", "w2", "w13_scale", "w2_scale", "w13_bias", "w2_bias"):
        values[name] = _slice_experts(values[name], first, count, spec.num_experts)
    return MoEWeights(**values)


def shard_intermediate(weights: MoEWeights, *, gated: bool, tp_rank: int, tp_size: int) -> MoEWeights:
    """Tensor-parallel slice of the intermediate dimension (unquantized or per-tensor weights only).

    ``w13`` keeps ``[gate_slice; up_slice]`` (or its ``I / tp_size`` rows when not gated),
    ``w2`` keeps the matching columns. Outputs of the slices sum to the full layer's output.

    Raises:
        ValueError: intermediate size not divisible by ``tp_size``, interleaved or
            per-channel/block-quantized weights (their scales would need slicing too).
    """
    if weights.quant.weight not in (None, "fp8_static_tensor"):
        raise ValueError(f"shard_intermediate supports unquantized or per-tensor weights, not {weights.quant.weight}")
    inter = weights.intermediate_size
    if inter % tp_size:
        raise ValueError(f"intermediate size {inter} is not divisible by tp_size {tp_size}")
    part = inter // tp_size
    lo, hi = tp_rank * part, (tp_rank + 1) * part
    if gated:
        w13 = torch.cat([weights.w13[:, lo:hi], weights.w13[:, inter + lo : inter + hi]], dim=1).contiguous()
        b13 = None if weights.w13_bias is None else torch.cat([weights.w13_bias[:, lo:hi], weights.w13_bias[:, inter + lo : inter + hi]], dim=1)
    else:
        w13 = weights.w13[:, lo:hi].contiguous()
        b13 = None if weights.w13_bias is None else weights.w13_bias[:, lo:hi]
    w2_bias = None if weights.w2_bias is None else (weights.w2_bias if tp_rank == 0 else torch.zeros_like(weights.w2_bias))
    return replace(weights, w13=w13, w2=weights.w2[:, :, lo:hi].contiguous(), w13_bias=b13, w2_bias=w2_bias)


def make_random_weights(
    spec: LayerSpec,
    *,
    seed: int = 0,
    device: torch.device | str = "cpu",
    num_experts: int | None = None,
    generator_device: torch.device | str = "cpu",
) -> MoEWeights:
    """Random weights for ``spec`` scaled so that outputs are O(1) for O(1) inputs.

    ``w13 ~ N(0, 1/hidden)`` and ``w2 ~ N(0, 1/intermediate)``, so with inputs
    ``x ~ N(0, 1)`` GEMM1 outputs and expert outputs have unit variance; biases
    ``~ N(0, 0.1**2)``; the router correction bias ``~ N(0, 0.05**2)``. Weights are
    stored in ``spec.dtype``, or quantized to fp8 with ``spec.quant.weight``; static
    activation scales are calibrated on 64 ``N(0, 1)`` tokens (GEMM1 input: 8 sigma /
    448; GEMM2 input: 1.5 x observed amax / 448).

    Args:
        spec: the layer (the whole layer unless ``num_experts`` says otherwise).
        seed: generator seed.
        device: where the returned tensors live.
        num_experts: experts to make (default ``spec.num_local_experts``).
        generator_device: where the numbers are drawn. The default (CPU) gives the same
            weights on every device; drawing on the GPU (``generator_device=device``) is much
            faster for real model sizes but the values then depend on the device type.

    Returns:
        The weights, with ``quant = spec.quant``.
    """
    gdev = torch.device(generator_device)
    gen = torch.Generator(device=gdev).manual_seed(seed)
    e = spec.num_local_experts if num_experts is None else num_experts
    h, inter, rows = spec.hidden_size, spec.intermediate_size, spec.w13_rows
    dtype = spec.torch_dtype
    # Draw in float32, scale, and store each tensor before drawing the next (peak memory ~ one float32 tensor).
    w13 = (torch.randn(e, rows, h, generator=gen, device=gdev) / math.sqrt(h))
    w13_store, w13_scale = (w13.to(dtype), None) if spec.quant.weight is None else _quantize_by_experts(w13, spec.quant.weight)
    del w13
    w2 = torch.randn(e, h, inter, generator=gen, device=gdev) / math.sqrt(inter)
    w2_store, w2_scale = (w2.to(dtype), None) if spec.quant.weight is None else _quantize_by_experts(w2, spec.quant.weight)
    del w2
    b13 = torch.randn(e, rows, generator=gen, device=gdev) * 0.1 if spec.has_bias else None
    b2 = torch.randn(e, h, generator=gen, device=gdev) * 0.1 if spec.has_bias else None
    corr = None
    if spec.routing.has_correction_bias and spec.routing.method in (RoutingMethod.DEEPSEEK_V3, RoutingMethod.MINIMAX2):
        corr = torch.randn(spec.num_experts, generator=gen, device=gdev) * 0.05
    weights = MoEWeights(
        w13=w13_store, w2=w2_store, w13_scale=w13_scale, w2_scale=w2_scale,
        w13_bias=b13, w2_bias=b2, correction_bias=corr, quant=spec.quant,
    )
    if spec.quant.activation == "fp8_static_tensor":
        weights = replace(weights, a13_scale=torch.tensor([8.0 / fp8.FP8_MAX], device=gdev), a2_scale=_calibrate_a2(weights, spec, gen))
    return weights.to(device)


def _quantize_by_experts(w: torch.Tensor, key: str, chunk: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`fp8.quantize_weight` a few experts at a time (scales are per expert, so the result is
    the same); bounds the float32 temporaries to ``chunk`` experts for DeepSeek-sized layers."""
    if w.shape[0] <= chunk:
        return fp8.quantize_weight(w, key)
    parts = [fp8.quantize_weight(w[i : i + chunk], key) for i in range(0, w.shape[0], chunk)]
    return torch.cat([q for q, _ in parts]), torch.cat([s for _, s in parts])


def _calibrate_a2(weights: MoEWeights, spec: LayerSpec, gen: torch.Generator) -> torch.Tensor:
    """Static GEMM2-input scale: 1.5 x the largest activation output over 64 random tokens and all experts / 448."""
    from .activations import apply_activation

    x = torch.randn(64, spec.hidden_size, generator=gen, device=gen.device)
    amax = torch.zeros((), device=gen.device)
    for i in range(weights.num_local_experts):
        w13, _ = weights.expert_fp32(i)
        h = x @ w13.T
        if weights.w13_bias is not None:
            h = h + weights.w13_bias[i].float()
        a = apply_activation(h, spec.activation, swiglu_alpha=spec.swiglu_alpha, swiglu_limit=spec.swiglu_limit)
        amax = torch.maximum(amax, a.abs().max())
    return (amax * 1.5 / fp8.FP8_MAX).clamp(min=1e-12).reshape(1)
