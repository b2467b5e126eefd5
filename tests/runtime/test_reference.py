"""The reference experts against an independent per-token loop, and against each other.

Tolerance: FP32_ATOL = 1e-5 (see helpers.py): both sides compute in float32 and differ only in
summation order. The per-token loop below is written from the definition (out[t] = sum_k
w[t,k] * (W2[e] act(W13[e] x[t] + b13) + b2)), not from the code under test.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from helpers import FP32_ATOL, inputs, small_spec
from moe_oracle.kernels.reference import ReferenceBatchedExperts, ReferenceExperts, ReferenceMonolithicExperts, reference_moe
from moe_oracle.prepare_finalize.all_to_all import BatchedAllToAllModular
from moe_oracle.prepare_finalize.no_dp_ep import NoDPEPModular, NoDPEPMonolithic
from moe_oracle.core.quant import SCHEMES
from moe_oracle.runtime import fp8
from moe_oracle.runtime.errors import UnsupportedConfigError
from moe_oracle.runtime.kernel import FusedMoEKernel
from moe_oracle.runtime.routing import IMPLEMENTED_ROUTING, route
from moe_oracle.runtime.weights import MoEWeights, make_random_weights, shard_experts, shard_intermediate


def _act(h: torch.Tensor, activation: str) -> torch.Tensor:
    """Activations written out again from their definitions (independent of the code under test)."""
    half = h.shape[-1] // 2
    if activation == "silu":
        return h[..., :half] * torch.sigmoid(h[..., :half]) * h[..., half:]
    if activation == "gelu":
        g = h[..., :half]
        return 0.5 * g * (1 + torch.erf(g / 2**0.5)) * h[..., half:]
    if activation == "relu2_no_mul":
        return torch.clamp(h, min=0) ** 2
    if activation == "swigluoai":
        g, u = h[..., 0::2].clamp(max=7.0), h[..., 1::2].clamp(-7.0, 7.0)
        return (u + 1) * g * torch.sigmoid(1.702 * g)
    raise AssertionError(activation)


def _per_token_loop(x, topk_w, topk_ids, weights: MoEWeights, activation: str) -> torch.Tensor:
    out = torch.zeros(x.shape[0], weights.hidden_size)
    for t in range(x.shape[0]):
        for j in range(topk_ids.shape[1]):
            e = int(topk_ids[t, j])
            h = weights.w13[e].float() @ x[t].float()
            if weights.w13_bias is not None:
                h = h + weights.w13_bias[e].float()
            y = weights.w2[e].float() @ _act(h, activation)
            if weights.w2_bias is not None:
                y = y + weights.w2_bias[e].float()
            out[t] += topk_w[t, j] * y
    return out


@pytest.mark.parametrize(
    "activation, has_bias",
    [("silu", False), ("gelu", False), ("relu2_no_mul", False), ("swigluoai", True)],
)
def test_reference_experts_match_per_token_loop(activation, has_bias):
    spec = small_spec(activation=activation, has_bias=has_bias)
    w = make_random_weights(spec, seed=1)
    x, logits = inputs(spec, 9)
    topk_w, topk_ids = route(logits, spec.routing)
    kernel = FusedMoEKernel(NoDPEPModular(spec), ReferenceExperts(spec, w))
    out = kernel(x, logits)
    assert out.shape == (9, spec.hidden_size) and out.dtype == torch.float32
    assert torch.allclose(out, _per_token_loop(x, topk_w, topk_ids, w, activation), atol=FP32_ATOL)


def test_random_weights_give_order_one_outputs():
    spec = small_spec(hidden=256, intermediate=128, top_k=2)
    x, logits = inputs(spec, 64)
    out = reference_moe(x, logits, make_random_weights(spec), spec)
    assert 0.2 < out.std().item() < 5.0


def test_batched_format_equals_standard_format():
    spec = small_spec()
    w = make_random_weights(spec, seed=2)
    x, logits = inputs(spec, 11)
    standard = FusedMoEKernel(NoDPEPModular(spec), ReferenceExperts(spec, w))(x, logits)
    batched_kernel = FusedMoEKernel(BatchedAllToAllModular(spec), ReferenceBatchedExperts(spec, w))
    assert torch.allclose(batched_kernel(x, logits), standard, atol=FP32_ATOL)
    # a fixed capacity (CUDA-graph style) gives the same result and rejects overflow
    fixed = FusedMoEKernel(BatchedAllToAllModular(spec, max_tokens_per_expert=32), ReferenceBatchedExperts(spec, w))
    assert torch.allclose(fixed(x, logits), standard, atol=FP32_ATOL)
    tight = FusedMoEKernel(BatchedAllToAllModular(spec, max_tokens_per_expert=1), ReferenceBatchedExperts(spec, w))
    with pytest.raises(ValueError, match="max_tokens_per_expert"):
        tight(x, logits)


def test_batched_prepare_produces_the_batched_layout():
    spec = small_spec(num_experts=4, top_k=1)
    pf = BatchedAllToAllModular(spec)
    x = torch.arange(5 * spec.hidden_size, dtype=torch.float32).view(5, spec.hidden_size)
    ids = torch.tensor([[2], [0], [2], [3], [2]])
    from moe_oracle.runtime.interfaces import InputQuant

    prep = pf.prepare(x, torch.ones(5, 1), ids, input_quant=InputQuant())
    assert prep.hidden_states.shape == (4, 3, spec.hidden_size)  # [num_local_experts, max tokens per expert, hidden]
    assert prep.expert_num_tokens.tolist() == [1, 0, 3, 1]
    assert torch.equal(prep.hidden_states[2, :3], x[[0, 2, 4]])  # expert 2 got tokens 0, 2, 4 in order
    assert torch.equal(prep.hidden_states[0, 0], x[1]) and torch.equal(prep.hidden_states[3, 0], x[3])


@pytest.mark.parametrize("method", sorted(m.value for m in IMPLEMENTED_ROUTING))
def test_monolithic_equals_modular_for_every_routing_method(method):
    extra = {"num_expert_group": 4, "topk_group": 2, "routed_scaling_factor": 2.5, "has_correction_bias": True} if method in ("deepseek_v3", "minimax2") else {}
    spec = small_spec(method=method, top_k=1 if method == "llama4" else 2, **extra)
    w = make_random_weights(spec, seed=3)
    assert (w.correction_bias is not None) == bool(extra)
    x, logits = inputs(spec, 7)
    mono = FusedMoEKernel(NoDPEPMonolithic(spec), ReferenceMonolithicExperts(spec, w))(x, logits)
    modular = FusedMoEKernel(NoDPEPModular(spec), ReferenceExperts(spec, w))(x, logits)
    assert torch.allclose(mono, modular, atol=FP32_ATOL)
    assert torch.allclose(mono, reference_moe(x, logits, w, spec), atol=FP32_ATOL)


def test_expert_parallel_shards_sum_to_the_layer():
    spec = small_spec(num_experts=8)
    w = make_random_weights(spec, seed=4)
    x, logits = inputs(spec, 6)
    topk_w, topk_ids = route(logits, spec.routing)
    total = torch.zeros(6, spec.hidden_size)
    for rank in range(3):  # 8 experts over 3 ranks: 3, 3, 2
        rspec = spec.for_rank(rank, 3)
        shard = shard_experts(w, rspec)
        assert shard.num_local_experts == [3, 3, 2][rank]
        total += ReferenceExperts(rspec, shard).apply(x, topk_w, topk_ids)
    assert torch.allclose(total, reference_moe(x, logits, w, spec), atol=FP32_ATOL)


@pytest.mark.parametrize("activation", ["silu", "relu2_no_mul"])
def test_tensor_parallel_intermediate_slices_sum_to_the_layer(activation):
    spec = small_spec(activation=activation, intermediate=16, has_bias=True)
    w = make_random_weights(spec, seed=5)
    x, logits = inputs(spec, 6)
    topk_w, topk_ids = route(logits, spec.routing)
    total = torch.zeros(6, spec.hidden_size)
    for rank in range(2):
        part = shard_intermediate(w, gated=spec.is_gated, tp_rank=rank, tp_size=2)
        total += ReferenceExperts(replace(spec, intermediate_size=8), part).apply(x, topk_w, topk_ids)
    assert torch.allclose(total, reference_moe(x, logits, w, spec), atol=FP32_ATOL)


@pytest.mark.parametrize("scheme", ["fp8_w16", "fp8_channel_w16", "fp8_block_w16"])
def test_fp8_weight_only_equals_dequantized_weights(scheme):
    spec = small_spec(quant=SCHEMES[scheme], hidden=160, intermediate=136)  # partial 128-blocks
    w = make_random_weights(spec, seed=6)
    assert w.w13.dtype == torch.float8_e4m3fn
    dequant = MoEWeights(
        w13=fp8.dequantize_weight(w.w13, w.w13_scale, w.quant.weight),
        w2=fp8.dequantize_weight(w.w2, w.w2_scale, w.quant.weight),
    )
    x, logits = inputs(spec, 5)
    out = FusedMoEKernel(NoDPEPModular(spec), ReferenceExperts(spec, w))(x, logits)
    assert torch.allclose(out, reference_moe(x, logits, dequant, replace(spec, quant=SCHEMES["unquantized"])), atol=FP32_ATOL)


@pytest.mark.parametrize("scheme", ["fp8_tensor_static", "fp8_tensor_dynamic", "fp8_tensor_token", "fp8_channel_token", "fp8_block"])
def test_w8a8_quantizing_in_prepare_equals_simulated_reference(scheme):
    """The P/F quantizes the input (ReferenceExperts do not defer it); the result equals the reference
    that simulates the same quantization, and differs (by fp8 noise, < 10%) from the unquantized-activation result."""
    spec = small_spec(quant=SCHEMES[scheme], hidden=192, intermediate=64)  # two 128-groups, the second partial
    w = make_random_weights(spec, seed=7)
    x, logits = inputs(spec, 8)
    kernel = FusedMoEKernel(NoDPEPModular(spec), ReferenceExperts(spec, w))
    assert kernel.input_quant.key == SCHEMES[scheme].activation
    out = kernel(x, logits)
    assert torch.allclose(out, reference_moe(x, logits, w, spec), atol=FP32_ATOL)
    no_act_quant = reference_moe(x, logits, w, spec, activation_quant=False)
    diff = (out - no_act_quant).abs().max() / no_act_quant.abs().max()
    assert 0 < diff < 0.1


def test_unsupported_schemes_and_activations_are_refused():
    spec = small_spec(quant=SCHEMES["mxfp8"])
    w = make_random_weights(small_spec(), seed=0)
    with pytest.raises(UnsupportedConfigError) as err:
        ReferenceExperts(spec, replace(w, quant=spec.quant, w13_scale=torch.ones(8), w2_scale=torch.ones(8)))
    assert err.value.field == "quant.weight"
    spec = small_spec(activation="situ")
    with pytest.raises(UnsupportedConfigError):
        ReferenceExperts(spec, make_random_weights(spec))


def test_weights_must_match_the_spec():
    spec = small_spec()
    with pytest.raises(ValueError, match="w13 shape"):
        ReferenceExperts(replace(spec, hidden_size=64), make_random_weights(spec))
