"""The two halves of a fused MoE kernel: experts and prepare/finalize.

Every adapter named by a table's ``adapter: module:Class`` (provider ``moe_oracle``)
derives from one of the four bases here and has the uniform constructor that
:func:`moe_oracle.runtime.build.make_kernel` calls:

* experts: ``Cls(spec: LayerSpec, weights: MoEWeights)``;
* prepare/finalize: ``Cls(spec: LayerSpec, *, process_group=None, max_tokens_per_expert=None)``.

Data flow (vLLM's modular kernel, reference catalog §1.11 and §4.1):

* modular: router -> ``prepare(hidden, topk_weights, topk_ids)`` (quantize, dispatch) ->
  ``experts.apply(...)`` -> ``finalize(expert_output, prep)`` (combine, reduce);
* monolithic: ``prepare(hidden, router_logits)`` (dispatch hidden states *and* router
  logits) -> ``experts.apply_monolithic(hidden, router_logits)`` (routing inside) ->
  ``finalize(expert_output, prep)``.

Shapes: hidden states ``[num_tokens, hidden]`` in the model dtype (or fp8 with
``a1_scale`` when the prepare step quantized them); ``topk_weights`` ``[num_tokens,
top_k]`` float32; ``topk_ids`` ``[num_tokens, top_k]`` int64 *global* expert ids;
router logits ``[num_tokens, num_experts]``; batched format ``[num_local_experts,
max_tokens_per_expert, hidden]`` with ``expert_num_tokens`` ``[num_local_experts]`` int32.

Output conventions: standard-format experts return ``[num_tokens, hidden]`` in the
model dtype: the top-k-weighted sum over the experts *this rank holds* (ids of other
ranks' experts contribute nothing), so a finalize only sums partial outputs across
ranks. Batched-format experts return ``[num_local_experts, max_tokens_per_expert,
hidden]`` *unweighted*; the batched finalize applies the weights (as DeepEP
low-latency combine does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from ..core.quant import UNQUANTIZED
from ..core.vocab import Activation, ActivationFormat, DType, Interface
from . import fp8
from .errors import UnsupportedConfigError
from .spec import LayerSpec
from .weights import MoEWeights

__all__ = [
    "ExpertsBase",
    "require_unquantized_bf16",
    "InputQuant",
    "ModularExperts",
    "ModularPrepareFinalize",
    "MonolithicExperts",
    "MonolithicPrepareFinalize",
    "PrepareFinalizeBase",
    "PrepareResult",
]


@dataclass(frozen=True, eq=False)
class InputQuant:
    """How the prepare step quantizes the experts' input (GEMM1 activations).

    Attributes:
        key: activation quant key (``fp8_dynamic_group128`` ...), ``None``: dispatch in the model dtype.
        static_scale: ``[1]`` float32 for static keys.
    """

    key: str | None = None
    static_scale: torch.Tensor | None = None

    @property
    def row_local(self) -> bool:
        """Scales are per token (per-token or per-group): quantizing before or after a dispatch is the same."""
        return self.key in ("fp8_dynamic_token", "fp8_dynamic_group128")

    def apply(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(x_fp8, scale)`` or ``(x, None)`` when no quantization is asked for."""
        if self.key is None:
            return x, None
        return fp8.quantize_activation(x, self.key, self.static_scale)

    @classmethod
    def for_experts(cls, experts: "ExpertsBase") -> "InputQuant":
        """Quantize in prepare iff the scheme has an activation key and the experts do not defer it."""
        key = experts.spec.quant.activation
        if key is None or experts.expects_unquantized_inputs:
            return cls()
        return cls(key, experts.weights.a13_scale)


@dataclass(frozen=True, eq=False)
class PrepareResult:
    """What prepare hands to the experts and, through ``handle``, to finalize.

    Attributes:
        hidden_states: standard ``[T', hidden]`` or batched ``[E_local, M, hidden]``; the model
            dtype, or float8_e4m3fn when ``a1_scale`` is set.
        a1_scale: activation scale (``[1]``, ``[T', 1]``, ``[T', G]``; batched ``[E_local, M, 1|G]``).
        topk_weights: ``[T', top_k]`` float32 (modular standard).
        topk_ids: ``[T', top_k]`` int64 global ids (modular standard).
        expert_num_tokens: ``[E_local]`` int32 valid rows per expert (batched).
        router_logits: ``[T', num_experts]`` (monolithic).
        handle: the prepare/finalize's own state for finalize (token order, split sizes ...).
    """

    hidden_states: torch.Tensor
    a1_scale: torch.Tensor | None = None
    topk_weights: torch.Tensor | None = None
    topk_ids: torch.Tensor | None = None
    expert_num_tokens: torch.Tensor | None = None
    router_logits: torch.Tensor | None = None
    handle: Any = None


class ExpertsBase:
    """Base of every experts adapter: holds the spec and the (converted) weights.

    Class attributes:
        interface: modular or monolithic.
        activation_format: standard or batched_experts.
        expects_unquantized_inputs: ``True``: the prepare step dispatches the model dtype
            and the experts quantize (vLLM ``expects_unquantized_inputs``).
    """

    interface: ClassVar[Interface]
    activation_format: ClassVar[ActivationFormat] = ActivationFormat.STANDARD
    expects_unquantized_inputs: ClassVar[bool] = True

    def __init__(self, spec: LayerSpec, weights: MoEWeights) -> None:
        weights.check(spec)
        self.spec = spec
        self.weights = weights

    def __repr__(self) -> str:
        s = self.spec
        return f"{type(self).__name__}(experts {s.num_local_experts}/{s.num_experts}, hidden {s.hidden_size}, intermediate {s.intermediate_size}, {s.activation.value}, {s.quant.name})"


class ModularExperts(ExpertsBase):
    """Experts that take top-k ids and weights from a separate router."""

    interface = Interface.MODULAR

    def apply(
        self,
        hidden_states: torch.Tensor,
        topk_weights: torch.Tensor | None,
        topk_ids: torch.Tensor | None,
        *,
        a1_scale: torch.Tensor | None = None,
        expert_num_tokens: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Run the experts on prepared inputs (see the module docstring for shapes and outputs)."""
        raise NotImplementedError


class MonolithicExperts(ExpertsBase):
    """Experts that route inside: router logits in, reduced output out."""

    interface = Interface.MONOLITHIC

    def apply_monolithic(self, hidden_states: torch.Tensor, router_logits: torch.Tensor, *, a1_scale: torch.Tensor | None = None) -> torch.Tensor:
        """``[T, hidden]`` -> ``[T, hidden]``: route with ``spec.routing`` and sum this rank's experts."""
        raise NotImplementedError


class PrepareFinalizeBase:
    """Base of every prepare/finalize adapter.

    Class attributes:
        interface, activation_format: what it pairs with.
        carries_router_logits: dispatches router logits (needed by monolithic experts).

    Args:
        spec: this rank's layer spec.
        process_group: the ``torch.distributed`` group of the dispatching ranks; ``None``
            means the default group when one is initialized, else a single rank.
        max_tokens_per_expert: fixed batched-format capacity (batched P/Fs only).
    """

    interface: ClassVar[Interface]
    activation_format: ClassVar[ActivationFormat] = ActivationFormat.STANDARD
    carries_router_logits: ClassVar[bool] = False

    def __init__(self, spec: LayerSpec, *, process_group: Any = None, max_tokens_per_expert: int | None = None) -> None:
        self.spec = spec
        self.process_group = process_group
        self.max_tokens_per_expert = max_tokens_per_expert

    def __repr__(self) -> str:
        return f"{type(self).__name__}(ep_rank {self.spec.ep_rank}/{self.spec.ep_size})"


class ModularPrepareFinalize(PrepareFinalizeBase):
    interface = Interface.MODULAR

    def prepare(self, hidden_states: torch.Tensor, topk_weights: torch.Tensor, topk_ids: torch.Tensor, *, input_quant: InputQuant) -> PrepareResult:
        """Quantize (per ``input_quant``) and dispatch this rank's tokens ``[T, hidden]``."""
        raise NotImplementedError

    def finalize(self, expert_output: torch.Tensor, prep: PrepareResult) -> torch.Tensor:
        """Combine the experts' output into this rank's ``[T, hidden]`` result (model dtype)."""
        raise NotImplementedError


class MonolithicPrepareFinalize(PrepareFinalizeBase):
    interface = Interface.MONOLITHIC
    carries_router_logits = True

    def prepare(self, hidden_states: torch.Tensor, router_logits: torch.Tensor, *, input_quant: InputQuant) -> PrepareResult:
        """Quantize and dispatch hidden states ``[T, hidden]`` and router logits ``[T, num_experts]``."""
        raise NotImplementedError

    def finalize(self, expert_output: torch.Tensor, prep: PrepareResult) -> torch.Tensor:
        raise NotImplementedError


def require_unquantized_bf16(adapter: str, spec: LayerSpec, activations: "frozenset[Activation] | set[Activation]") -> None:
    """Raise unless ``spec`` is an unquantized bf16 layer with one of ``activations`` (bf16-only kernels).

    Raises:
        UnsupportedConfigError: naming ``adapter``, the field, the value and what is allowed.
    """
    if spec.quant != UNQUANTIZED:
        raise UnsupportedConfigError(adapter, "quant", spec.quant.name, ["unquantized"])
    if spec.dtype is not DType.BFLOAT16:
        raise UnsupportedConfigError(adapter, "in_dtype", spec.dtype.value, ["bfloat16"])
    if spec.activation not in activations:
        raise UnsupportedConfigError(adapter, "activation", spec.activation.value, sorted(a.value for a in activations))
