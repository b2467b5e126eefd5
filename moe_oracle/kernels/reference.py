"""Reference experts in plain torch: the ground truth of every numerical test.

Weights are dequantized to float32 expert by expert (fp8 per-tensor, per-channel,
128x128 block), every GEMM and activation runs in float32, and activation
quantization is *simulated* (quantize, dequantize) where the scheme has an
activation key: on the GEMM1 input (unless the prepare step already quantized it)
and on the GEMM2 input. Per-tensor dynamic scales are taken over all rows of the
call, as a fused kernel's intermediate buffer would be. Any device, any model
dtype (bf16/fp16/fp32); outputs are cast to the model dtype.

Classes (``adapter`` strings of ``kernels/reference.yaml``):

* :class:`ReferenceExperts`: modular, standard format;
* :class:`ReferenceBatchedExperts`: modular, batched format ``[E_local, M, hidden]``;
* :class:`ReferenceMonolithicExperts`: monolithic, routes inside with
  :func:`moe_oracle.runtime.routing.route`.

:func:`reference_moe` is the whole layer (route, experts, weighted sum) in float32.

Source: math of vLLM main 00f7f258 ``fused_experts`` / ``torch_moe`` test helper;
layouts of ``P/layer.py``; activations and routing: see their modules.
"""

from __future__ import annotations

import torch

from ..runtime import fp8
from ..runtime.activations import IMPLEMENTED_ACTIVATIONS, apply_activation
from ..runtime.errors import UnsupportedConfigError
from ..runtime.interfaces import ModularExperts, MonolithicExperts
from ..runtime.routing import IMPLEMENTED_ROUTING, route
from ..runtime.spec import LayerSpec
from ..runtime.weights import MoEWeights
from ..core.vocab import ActivationFormat

__all__ = ["ReferenceBatchedExperts", "ReferenceExperts", "ReferenceMonolithicExperts", "reference_experts", "reference_moe"]


def _check_supported(component: str, spec: LayerSpec) -> None:
    if spec.activation not in IMPLEMENTED_ACTIVATIONS:
        raise UnsupportedConfigError(component, "activation", spec.activation.value, sorted(a.value for a in IMPLEMENTED_ACTIVATIONS))
    if spec.quant.weight is not None and spec.quant.weight not in fp8.WEIGHT_KEYS:
        raise UnsupportedConfigError(component, "quant.weight", spec.quant.weight, sorted(fp8.WEIGHT_KEYS))
    if spec.quant.activation is not None and spec.quant.activation not in fp8.ACTIVATION_KEYS:
        raise UnsupportedConfigError(component, "quant.activation", spec.quant.activation, sorted(fp8.ACTIVATION_KEYS))


def _input_fp32(hidden_states: torch.Tensor, a1_scale: torch.Tensor | None, spec: LayerSpec, weights: MoEWeights, activation_quant: bool) -> torch.Tensor:
    """What GEMM1 sees: dequantized prepared input, or the simulated quantization of the raw input."""
    if a1_scale is not None:
        return fp8.dequantize_activation(hidden_states, a1_scale)
    if activation_quant and spec.quant.activation is not None:
        return fp8.fake_quantize_activation(hidden_states.reshape(-1, hidden_states.shape[-1]), spec.quant.activation, weights.a13_scale).reshape(hidden_states.shape)
    return hidden_states.float()


def _run_grouped(
    xs: torch.Tensor, counts: list[int], weights: MoEWeights, spec: LayerSpec, activation_quant: bool, gemm1_dtype: torch.dtype | None = None
) -> torch.Tensor:
    """Unweighted expert outputs for rows grouped by local expert.

    Args:
        xs: ``[N, hidden]`` float32 rows, sorted so that expert ``l`` owns ``counts[l]`` consecutive rows.
        counts: rows per local expert.
        gemm1_dtype: round GEMM1's output (before the bias) to this dtype, as kernels that store it do.

    Returns:
        ``[N, hidden]`` float32.
    """
    n = xs.shape[0]
    acts = torch.empty(n, spec.intermediate_size, dtype=torch.float32, device=xs.device)
    start = 0
    cache: dict[int, torch.Tensor] = {}
    for expert, count in enumerate(counts):
        if count:
            w13, w2 = weights.expert_fp32(expert)
            cache[expert] = w2
            h = xs[start : start + count] @ w13.T
            if gemm1_dtype is not None:
                h = h.to(gemm1_dtype).float()
            if weights.w13_bias is not None:
                h = h + weights.w13_bias[expert].float()
            acts[start : start + count] = apply_activation(h, spec.activation, swiglu_alpha=spec.swiglu_alpha, swiglu_limit=spec.swiglu_limit)
        start += count
    if activation_quant and spec.quant.activation is not None and n:
        acts = fp8.fake_quantize_activation(acts, spec.quant.activation, weights.a2_scale)
    ys = torch.empty(n, spec.hidden_size, dtype=torch.float32, device=xs.device)
    start = 0
    for expert, count in enumerate(counts):
        if count:
            y = acts[start : start + count] @ cache[expert].T
            if weights.w2_bias is not None:
                y = y + weights.w2_bias[expert].float()
            ys[start : start + count] = y
        start += count
    return ys


def reference_experts(
    x: torch.Tensor,
    topk_weights: torch.Tensor,
    topk_ids: torch.Tensor,
    weights: MoEWeights,
    spec: LayerSpec,
    *,
    activation_quant: bool = True,
    gemm1_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """Float32 top-k-weighted sum over the experts this rank holds.

    Args:
        x: ``[T, hidden]`` float32 GEMM1 input (already dequantized).
        topk_weights: ``[T, K]`` float32.
        topk_ids: ``[T, K]`` global expert ids; ids outside ``spec``'s local range are skipped.
        weights, spec: this rank's experts.
        activation_quant: simulate GEMM2-input quantization when the scheme has an activation key.
        gemm1_dtype: ``None`` (GEMM1's output stays float32) or a dtype GEMM1's output is rounded to
            before the bias and activation (``torch.bfloat16``: kernels whose GEMM1 writes bf16 and
            requantizes it to fp8, e.g. ``torch._scaled_grouped_mm`` experts).

    Returns:
        ``[T, hidden]`` float32.
    """
    first, local_n = spec.first_local_expert, spec.num_local_experts
    local = topk_ids.to(torch.int64) - first
    valid = (local >= 0) & (local < local_n)
    tok, kk = valid.nonzero(as_tuple=True)
    experts = local[tok, kk]
    order = torch.argsort(experts, stable=True)
    tok, kk, experts = tok[order], kk[order], experts[order]
    counts = torch.bincount(experts, minlength=local_n).tolist() if experts.numel() else [0] * local_n
    ys = _run_grouped(x[tok], counts, weights, spec, activation_quant, gemm1_dtype)
    ys = ys * topk_weights[tok, kk].float().unsqueeze(-1)
    out = torch.zeros(x.shape[0], spec.hidden_size, dtype=torch.float32, device=x.device)
    return out.index_add_(0, tok, ys)


def reference_moe(
    hidden_states: torch.Tensor,
    router_logits: torch.Tensor,
    weights: MoEWeights,
    spec: LayerSpec,
    *,
    activation_quant: bool = True,
    gemm1_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """The whole MoE layer in float32: route, run the experts, weighted sum.

    Args:
        hidden_states: ``[T, hidden]`` any float dtype (upcast to float32).
        router_logits: ``[T, num_experts]``.
        weights: all experts of ``spec`` (``ep_size`` 1), or this rank's share.
        spec: the layer.
        activation_quant: simulate activation quantization of w8a8 schemes (``False``:
            the float32 result of the dequantized weights alone).
        gemm1_dtype: round GEMM1's output to this dtype (see :func:`reference_experts`).

    Returns:
        ``[T, hidden]`` float32.
    """
    _check_supported("reference_moe", spec)
    topk_weights, topk_ids = route(router_logits, spec.routing, correction_bias=weights.correction_bias)
    x = _input_fp32(hidden_states, None, spec, weights, activation_quant)
    return reference_experts(x, topk_weights, topk_ids, weights, spec, activation_quant=activation_quant, gemm1_dtype=gemm1_dtype)


class ReferenceExperts(ModularExperts):
    """Modular, standard-format reference experts (any device and dtype; fp8 by dequantization).

    ``apply(hidden [T, hidden], topk_weights [T, K], topk_ids [T, K]) -> [T, hidden]`` in the model
    dtype: the weighted sum over this rank's experts. Accepts fp8 inputs with ``a1_scale`` from
    the prepare step (``expects_unquantized_inputs = False``).

    Raises:
        UnsupportedConfigError: an activation or quant key without reference math.
    """

    expects_unquantized_inputs = False

    def __init__(self, spec: LayerSpec, weights: MoEWeights) -> None:
        super().__init__(spec, weights)
        _check_supported(type(self).__name__, spec)

    def apply(self, hidden_states, topk_weights, topk_ids, *, a1_scale=None, expert_num_tokens=None):  # noqa: ANN001, ANN201 - see ModularExperts.apply
        if topk_weights is None or topk_ids is None:
            raise ValueError("ReferenceExperts.apply needs topk_weights and topk_ids")
        x = _input_fp32(hidden_states, a1_scale, self.spec, self.weights, True)
        return reference_experts(x, topk_weights, topk_ids, self.weights, self.spec).to(self.spec.torch_dtype)


class ReferenceBatchedExperts(ModularExperts):
    """Modular, batched-format reference experts.

    ``apply(hidden [E_local, M, hidden], None, None, expert_num_tokens=[E_local]) ->
    [E_local, M, hidden]`` unweighted, rows at or beyond ``expert_num_tokens[e]`` zero. Accepts fp8
    inputs with ``a1_scale`` ``[E_local, M, 1|G]``.
    """

    activation_format = ActivationFormat.BATCHED_EXPERTS
    expects_unquantized_inputs = False

    def __init__(self, spec: LayerSpec, weights: MoEWeights) -> None:
        super().__init__(spec, weights)
        _check_supported(type(self).__name__, spec)

    def apply(self, hidden_states, topk_weights, topk_ids, *, a1_scale=None, expert_num_tokens=None):  # noqa: ANN001, ANN201 - see ModularExperts.apply
        if expert_num_tokens is None:
            raise ValueError("ReferenceBatchedExperts.apply needs expert_num_tokens")
        local_n, m, hidden = hidden_states.shape
        if local_n != self.spec.num_local_experts:
            raise ValueError(f"batched input has {local_n} experts, this rank holds {self.spec.num_local_experts}")
        counts = [int(c) for c in expert_num_tokens.tolist()]
        valid = torch.arange(m, device=hidden_states.device).unsqueeze(0) < expert_num_tokens.to(hidden_states.device).unsqueeze(1)
        rows = hidden_states[valid]  # [N, hidden], expert-major order
        scale = None if a1_scale is None else (a1_scale if a1_scale.numel() == 1 else a1_scale[valid])
        x = _input_fp32(rows, scale, self.spec, self.weights, True)
        ys = _run_grouped(x, counts, self.weights, self.spec, True)
        out = torch.zeros(local_n, m, hidden, dtype=self.spec.torch_dtype, device=hidden_states.device)
        out[valid] = ys.to(self.spec.torch_dtype)
        return out


class ReferenceMonolithicExperts(MonolithicExperts):
    """Monolithic reference experts: routes with :func:`~moe_oracle.runtime.routing.route`, then
    runs :class:`ReferenceExperts`' math. ``[T, hidden]``, ``[T, num_experts]`` -> ``[T, hidden]``.

    Raises:
        UnsupportedConfigError: a routing method without defined math.
    """

    expects_unquantized_inputs = False

    def __init__(self, spec: LayerSpec, weights: MoEWeights) -> None:
        super().__init__(spec, weights)
        _check_supported(type(self).__name__, spec)
        if spec.routing.method not in IMPLEMENTED_ROUTING:
            raise UnsupportedConfigError(type(self).__name__, "routing_method", spec.routing.method.value, sorted(m.value for m in IMPLEMENTED_ROUTING))

    def apply_monolithic(self, hidden_states, router_logits, *, a1_scale=None):  # noqa: ANN001, ANN201 - see MonolithicExperts.apply_monolithic
        topk_weights, topk_ids = route(router_logits, self.spec.routing, correction_bias=self.weights.correction_bias)
        x = _input_fp32(hidden_states, a1_scale, self.spec, self.weights, True)
        return reference_experts(x, topk_weights, topk_ids, self.weights, self.spec).to(self.spec.torch_dtype)
