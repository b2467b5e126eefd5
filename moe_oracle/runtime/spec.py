"""The dimensions and algorithms one MoE layer runs with, as the runtime sees them.

A :class:`LayerSpec` is what every experts kernel and prepare/finalize is built
from: sizes (in elements), activation, routing method and its parameters, the
quantization scheme, the model dtype and this rank's slice of the experts.
:meth:`LayerSpec.from_config` derives it from a :class:`~moe_oracle.core.config.MoEConfig`
using the same rules as :mod:`moe_oracle.core.normalize` (EP size, intermediate size
per partition).

Source: vLLM main 00f7f258 ``P/config.py`` (``FusedMoEConfig``,
``FusedMoEParallelConfig``), reference catalog §1.4, §1.5, §1.8.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from ..core.config import MoEConfig
from ..core.quant import UNQUANTIZED, QuantScheme
from ..core.vocab import Activation, DType, RoutingMethod

__all__ = ["LayerSpec", "RoutingParams", "torch_dtype"]

_TORCH_DTYPES = {
    DType.BFLOAT16: torch.bfloat16,
    DType.FLOAT16: torch.float16,
    DType.FLOAT32: torch.float32,
}


def torch_dtype(dtype: DType | str) -> torch.dtype:
    """The torch dtype of a vocabulary dtype name.

    >>> torch_dtype("bfloat16")
    torch.bfloat16
    """
    return _TORCH_DTYPES[DType(dtype)]


@dataclass(frozen=True)
class RoutingParams:
    """Router algorithm and its parameters.

    Attributes:
        method: routing method (see :mod:`moe_oracle.runtime.routing` for the math of each).
        top_k: experts per token.
        num_expert_group: expert groups for grouped top-k (``deepseek_v3``); ``None`` or 1: no grouping.
        topk_group: groups kept per token (``deepseek_v3``).
        routed_scaling_factor: multiplies the final weights of ``deepseek_v3`` and ``minimax2``.
        has_correction_bias: the router adds a per-expert bias before top-k (``deepseek_v3``,
            ``minimax2``); the bias tensor itself is a weight (``MoEWeights.correction_bias``).
    """

    method: RoutingMethod
    top_k: int
    num_expert_group: int | None = None
    topk_group: int | None = None
    routed_scaling_factor: float = 1.0
    has_correction_bias: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "method", RoutingMethod(self.method))
        if self.top_k < 1:
            raise ValueError(f"RoutingParams.top_k must be >= 1, got {self.top_k}")


@dataclass(frozen=True)
class LayerSpec:
    """One MoE layer on one rank.

    Shapes follow from the fields: hidden states ``[num_tokens, hidden_size]``;
    ``w13`` ``[num_local_experts, w13_rows, hidden_size]`` with ``w13_rows = 2 *
    intermediate_size`` (gated, ``[gate; up]`` halves, or interleaved rows for
    ``swigluoai``) or ``intermediate_size`` (``*_no_mul``); ``w2``
    ``[num_local_experts, hidden_size, intermediate_size]``.

    Attributes:
        num_experts: global (logical) experts; router logits are ``[num_tokens, num_experts]``.
        hidden_size: model hidden size, elements.
        intermediate_size: expert intermediate size held by this rank (per partition), elements.
        routing: router algorithm and parameters (``routing.top_k`` is top-k).
        activation: expert activation.
        quant: (weight key, activation key) of the experts.
        dtype: model activation dtype (hidden states, outputs).
        router_logits_dtype: dtype of router logits.
        swiglu_alpha, swiglu_limit: SwiGLU-OAI scale and clamp (``None``: gpt-oss 1.702 / 7.0).
        has_bias: experts carry ``w13_bias``/``w2_bias``.
        ep_rank, ep_size: expert-parallel position; experts are placed linearly, rank ``r``
            owning ``[r * ceil(E / ep_size), ...)``.
    """

    num_experts: int
    hidden_size: int
    intermediate_size: int
    routing: RoutingParams
    activation: Activation = Activation.SILU
    quant: QuantScheme = UNQUANTIZED
    dtype: DType = DType.BFLOAT16
    router_logits_dtype: DType | None = None
    swiglu_alpha: float | None = None
    swiglu_limit: float | None = None
    has_bias: bool = False
    ep_rank: int = 0
    ep_size: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "activation", Activation(self.activation))
        object.__setattr__(self, "dtype", DType(self.dtype))
        if self.router_logits_dtype is not None:
            object.__setattr__(self, "router_logits_dtype", DType(self.router_logits_dtype))
        for name in ("num_experts", "hidden_size", "intermediate_size", "ep_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"LayerSpec.{name} must be >= 1, got {getattr(self, name)}")
        if not 0 <= self.ep_rank < self.ep_size:
            raise ValueError(f"LayerSpec.ep_rank must be in [0, {self.ep_size}), got {self.ep_rank}")
        if self.routing.top_k > self.num_experts:
            raise ValueError(f"top_k {self.routing.top_k} exceeds num_experts {self.num_experts}")

    # ---------------------------------------------------------------- derived sizes

    @property
    def top_k(self) -> int:
        return self.routing.top_k

    @property
    def is_gated(self) -> bool:
        return self.activation.is_gated

    @property
    def w13_rows(self) -> int:
        """Rows of one expert's w13: ``2 * intermediate_size`` when gated, else ``intermediate_size``."""
        return 2 * self.intermediate_size if self.is_gated else self.intermediate_size

    @property
    def experts_per_rank(self) -> int:
        """``ceil(num_experts / ep_size)``: the slot count of every rank (vLLM linear placement)."""
        return -(-self.num_experts // self.ep_size)

    @property
    def first_local_expert(self) -> int:
        """Global id of this rank's first expert."""
        return min(self.ep_rank * self.experts_per_rank, self.num_experts)

    @property
    def num_local_experts(self) -> int:
        """Experts this rank holds (the last rank may hold fewer)."""
        return max(0, min(self.experts_per_rank, self.num_experts - self.first_local_expert))

    @property
    def torch_dtype(self) -> torch.dtype:
        return torch_dtype(self.dtype)

    @property
    def torch_router_logits_dtype(self) -> torch.dtype:
        return torch_dtype(self.router_logits_dtype or self.dtype)

    def owner_of(self, expert_ids: torch.Tensor) -> torch.Tensor:
        """EP rank owning each global expert id (same shape, int64)."""
        return torch.div(expert_ids, self.experts_per_rank, rounding_mode="floor").to(torch.int64)

    def for_rank(self, ep_rank: int, ep_size: int) -> "LayerSpec":
        """This spec as rank ``ep_rank`` of ``ep_size`` expert-parallel ranks."""
        return replace(self, ep_rank=ep_rank, ep_size=ep_size)

    @classmethod
    def from_config(cls, config: MoEConfig, *, ep_rank: int = 0, ep_size: int | None = None, intermediate_size: int | None = None) -> "LayerSpec":
        """The spec of ``config`` for one rank.

        Args:
            config: the layer and deployment.
            ep_rank: this rank's expert-parallel rank.
            ep_size: expert-parallel size; default 1 (the whole layer on one rank). Pass
                ``decision.normalized.values["ep_size"]`` for the deployed split.
            intermediate_size: intermediate size per partition; default the full
                ``config.intermediate_size`` (pass ``intermediate_size_per_partition`` under TP).
        """
        routing = RoutingParams(
            method=config.routing_method,
            top_k=config.top_k,
            num_expert_group=config.num_expert_group,
            topk_group=config.topk_group,
            routed_scaling_factor=config.routed_scaling_factor,
            has_correction_bias=config.has_correction_bias,
        )
        return cls(
            num_experts=config.num_experts,
            hidden_size=config.hidden_size,
            intermediate_size=intermediate_size if intermediate_size is not None else config.intermediate_size,
            routing=routing,
            activation=config.activation,
            quant=config.quant,
            dtype=config.in_dtype,
            router_logits_dtype=config.router_logits_dtype,
            swiglu_alpha=config.swiglu_alpha,
            swiglu_limit=config.swiglu_limit,
            has_bias=config.has_bias,
            ep_rank=ep_rank,
            ep_size=ep_size if ep_size is not None else 1,
        )
