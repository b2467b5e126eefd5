"""Shared builders and tolerances of the runtime tests (imported by tests and by spawned workers)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import torch

from moe_oracle.core.quant import UNQUANTIZED, QuantScheme
from moe_oracle.runtime.spec import LayerSpec, RoutingParams

# fp32 pipelines against the fp32 reference: both compute the same sums in float32, only the
# summation order differs (index_add vs per-token loops, partial sums across ranks), which moves
# results by a few ulps of O(1) values (~1e-7 each). 1e-5 leaves 100x margin and is ~1e5 times
# smaller than the O(1) change a wrong routing or a swapped gate/up causes.
FP32_ATOL = 1e-5

# bf16 kernels against the fp32 reference, normwise: max|out - ref| / max|ref|. The inputs and
# weights are the same bf16 values on both sides; the kernel rounds to bf16 (unit roundoff
# u = 2**-8) four times (GEMM1 out, activation out, GEMM2 out, final sum): 4u to first order,
# plus 50% for propagation through the activation's slope -> 6u = 2.34e-2. Observed on CPU:
# <= 0.0075 (about 2u) over 21 shape/activation cases. "Far tighter than atol 0.1": with outputs
# of max ~2.5 this is an absolute error of ~0.06 at worst, and the negative tests in
# test_torch_grouped_mm.py show a swapped gate/up or a wrong routing method gives >= 0.3 (13x the tolerance).
BF16_REL_TOL = 6 * 2.0**-8


# fp8 experts that round GEMM1's output to bf16 and requantize the activation to fp8 (the
# per-channel experts: torch._scaled_grouped_mm writes only bf16), against the fp32 reference,
# whose GEMM1 output stays fp32. Rounding to bf16 moves a value by a relative |d| of mean <= 2**-9
# (u/2, u = 2**-8); the activation amplifies that at most c <= 2.5 times (relu2: 2; silu*mul:
# 1.28 + 1); one e4m3 step is q <= 2**-3 of a value. A value crosses an fp8 rounding boundary with
# probability |d|/q and then moves by q, so the mean squared requantization difference is
# E|d| * q <= 2.5 * 2**-9 * 2**-3 of the value squared: an RMS relative difference <= 0.025 per
# GEMM2 input, unchanged by GEMM2's sums of independent differences; the four bf16 roundings add
# about 0.003. Measured on the RMS metric (rms_error), where this difference lives; its max-norm
# excursions reach ~2x the RMS. On CPU, where GEMM1 runs in exact fp32, the recipe itself is checked
# to BF16_REL_TOL against the reference that rounds GEMM1's output the same way (test_triton_kernels.py).
FP8_REQUANT_RMS_TOL = 2.0**-5


def rms_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """``rms(out - ref) / rms(ref)`` in float32."""
    diff = out.float() - ref.float()
    return float(diff.pow(2).mean().sqrt() / ref.float().pow(2).mean().sqrt())


def normwise_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """``max|out - ref| / max|ref|`` in float32."""
    return float((out.float() - ref.float()).abs().max() / ref.float().abs().max())


def small_spec(
    *,
    num_experts: int = 8,
    top_k: int = 2,
    hidden: int = 32,
    intermediate: int = 16,
    activation: str = "silu",
    method: str = "renormalize",
    dtype: str = "float32",
    quant: QuantScheme = UNQUANTIZED,
    **kwargs: Any,
) -> LayerSpec:
    routing_kwargs = {k: kwargs.pop(k) for k in ("num_expert_group", "topk_group", "routed_scaling_factor", "has_correction_bias") if k in kwargs}
    return LayerSpec(
        num_experts=num_experts,
        hidden_size=hidden,
        intermediate_size=intermediate,
        routing=RoutingParams(method, top_k, **routing_kwargs),
        activation=activation,
        quant=quant,
        dtype=dtype,
        **kwargs,
    )


def inputs(spec: LayerSpec, tokens: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``(hidden [T, H] in spec.dtype, router logits [T, E] float32)`` from a fixed seed."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(tokens, spec.hidden_size, generator=gen).to(spec.torch_dtype)
    logits = torch.randn(tokens, spec.num_experts, generator=gen)
    return x, logits


@dataclass(frozen=True)
class FakeEntry:
    id: str
    adapter: str
    declared: Any = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class FakeRow:
    entry: FakeEntry
    pf: FakeEntry | None


@dataclass(frozen=True)
class FakeNormalized:
    values: Any


@dataclass(frozen=True, eq=False)
class FakeDecision:
    """The parts of moe_oracle.core.decision.Decision that the runtime reads, for pairs no table selects on CPU."""

    rows: tuple[FakeRow, ...]
    winner: int | None
    config: Any = None
    normalized: FakeNormalized = field(default_factory=lambda: FakeNormalized(MappingProxyType({})))

    @property
    def kernel(self) -> str | None:
        return self.rows[self.winner].entry.id if self.winner is not None else None

    @property
    def prepare_finalize(self) -> str | None:
        return self.rows[self.winner].pf.id if self.winner is not None and self.rows[self.winner].pf else None

    def summary(self) -> str:
        return f"{len(self.rows)} candidates"

    def fingerprint(self) -> str:
        return f"fake-{self.kernel}-{self.prepare_finalize}"


def fake_decision(experts_adapter: str, pf_adapter: str, *, kernel: str = "k", pf: str = "pf", packages: tuple[str, ...] = ()) -> FakeDecision:
    declared = MappingProxyType({"packages": {p: "" for p in packages}}) if packages else MappingProxyType({})
    return FakeDecision(rows=(FakeRow(FakeEntry(kernel, experts_adapter, declared), FakeEntry(pf, pf_adapter)),), winner=0)


def with_swapped_gate_up(weights, spec: LayerSpec):  # noqa: ANN001, ANN201
    """The same experts with the two halves of w13 exchanged (the classic layout bug)."""
    half = spec.intermediate_size
    w13 = torch.cat([weights.w13[:, half:], weights.w13[:, :half]], dim=1)
    return replace(weights, w13=w13)
