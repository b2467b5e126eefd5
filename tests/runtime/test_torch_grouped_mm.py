"""TorchGroupedMMExperts (torch._grouped_mm, bf16) against the float32 reference, on CPU.

torch >= 2.13 runs ``_grouped_mm`` on CPU through its per-group fallback, so the adapter's
sorting, padding, offsets and weighting are checked here; the CUDA fast path is in test_gpu.py.

Tolerance: BF16_REL_TOL (normwise, 6 * 2**-8 = 2.3e-2; reasoning in helpers.py). The negative
tests assert that a swapped gate/up and a wrong routing method each exceed it by at least 10x.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from helpers import BF16_REL_TOL, inputs, normwise_error, small_spec, with_swapped_gate_up
from moe_oracle.kernels.reference import reference_moe
from moe_oracle.kernels.torch_grouped_mm import TorchGroupedMMExperts, grouped_layout
from moe_oracle.prepare_finalize.no_dp_ep import NoDPEPModular
from moe_oracle.core.quant import SCHEMES
from moe_oracle.runtime.errors import UnsupportedConfigError
from moe_oracle.runtime.kernel import FusedMoEKernel
from moe_oracle.runtime.weights import make_random_weights

SHAPES = [(8, 2, 64, 32, 33), (16, 4, 256, 128, 64)]  # experts, top_k, hidden, intermediate, tokens


def _kernel(spec, weights):  # noqa: ANN001, ANN202
    return FusedMoEKernel(NoDPEPModular(spec), TorchGroupedMMExperts(spec, weights))


@pytest.mark.parametrize("activation", ["silu", "gelu", "swigluoai", "swigluoai_uninterleave", "relu2", "relu2_no_mul", "gelu_tanh_no_mul"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "E{}k{}H{}I{}T{}".format(*s))
def test_grouped_mm_matches_reference(activation, shape):
    e, k, h, i, t = shape
    spec = small_spec(num_experts=e, top_k=k, hidden=h, intermediate=i, activation=activation, dtype="bfloat16")
    w = make_random_weights(spec, seed=1)
    x, logits = inputs(spec, t, seed=2)
    out = _kernel(spec, w)(x, logits)
    assert out.dtype == torch.bfloat16 and out.shape == (t, h)
    assert normwise_error(out, reference_moe(x, logits, w, spec)) <= BF16_REL_TOL


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "E{}k{}H{}I{}T{}".format(*s))
def test_tolerance_catches_swapped_gate_up(shape):
    e, k, h, i, t = shape
    spec = small_spec(num_experts=e, top_k=k, hidden=h, intermediate=i, activation="silu", dtype="bfloat16")
    w = make_random_weights(spec, seed=1)
    x, logits = inputs(spec, t, seed=2)
    wrong = _kernel(spec, with_swapped_gate_up(w, spec))(x, logits)
    assert normwise_error(wrong, reference_moe(x, logits, w, spec)) > 10 * BF16_REL_TOL


@pytest.mark.parametrize("wrong_method", ["default", "sigmoid_renorm", "topk"])
def test_tolerance_catches_a_wrong_routing_method(wrong_method):
    spec = small_spec(num_experts=16, top_k=4, hidden=256, intermediate=128, method="renormalize", dtype="bfloat16")
    w = make_random_weights(spec, seed=1)
    x, logits = inputs(spec, 64, seed=2)
    wrong_spec = replace(spec, routing=replace(spec.routing, method=wrong_method))
    wrong = _kernel(wrong_spec, w)(x, logits)
    assert normwise_error(wrong, reference_moe(x, logits, w, spec)) > 10 * BF16_REL_TOL


def test_expert_biases_gpt_oss_style():
    """gpt-oss: swigluoai (interleaved, limit 7) with w13 and w2 biases, on an EP rank (bias rows by local expert)."""
    spec = small_spec(num_experts=8, top_k=4, hidden=128, intermediate=64, activation="swigluoai", dtype="bfloat16", has_bias=True, swiglu_limit=7.0)
    w = make_random_weights(spec, seed=8)
    x, logits = inputs(spec, 24, seed=9)
    assert normwise_error(_kernel(spec, w)(x, logits), reference_moe(x, logits, w, spec)) <= BF16_REL_TOL
    from moe_oracle.runtime.routing import route
    from moe_oracle.runtime.weights import shard_experts

    topk_w, topk_ids = route(logits, spec.routing)
    total = sum(TorchGroupedMMExperts(spec.for_rank(r, 2), shard_experts(w, spec.for_rank(r, 2))).apply(x, topk_w, topk_ids).float() for r in range(2))
    assert normwise_error(total, reference_moe(x, logits, w, spec)) <= BF16_REL_TOL
    no_bias = _kernel(spec, replace(w, w13_bias=None, w2_bias=None))(x, logits)
    assert normwise_error(no_bias, reference_moe(x, logits, w, spec)) > 2 * BF16_REL_TOL  # the biases matter here


def test_expert_parallel_rank_skips_other_ranks_experts():
    spec = small_spec(num_experts=8, dtype="bfloat16", hidden=64, intermediate=32)
    w = make_random_weights(spec, seed=3)
    x, logits = inputs(spec, 16)
    from moe_oracle.runtime.routing import route
    from moe_oracle.runtime.weights import shard_experts

    topk_w, topk_ids = route(logits, spec.routing)
    total = sum(TorchGroupedMMExperts(spec.for_rank(r, 2), shard_experts(w, spec.for_rank(r, 2))).apply(x, topk_w, topk_ids).float() for r in range(2))
    assert normwise_error(total, reference_moe(x, logits, w, spec)) <= BF16_REL_TOL


def test_tokens_routed_nowhere_local_give_zeros():
    spec = small_spec(num_experts=8, dtype="bfloat16", hidden=64, intermediate=32).for_rank(1, 2)
    from moe_oracle.runtime.weights import shard_experts

    w = shard_experts(make_random_weights(small_spec(num_experts=8, dtype="bfloat16", hidden=64, intermediate=32)), spec)
    ids = torch.tensor([[0, 1], [2, 3]])  # all on rank 0
    out = TorchGroupedMMExperts(spec, w).apply(torch.randn(2, 64).bfloat16(), torch.ones(2, 2), ids)
    assert torch.equal(out, torch.zeros(2, 64, dtype=torch.bfloat16))


def test_grouped_layout_pads_each_expert_to_16_rows():
    # keys: experts 0, 0, 0, 2, 3, 3 and one pair of another rank (key 4 = num_groups)
    order, dest, offs, rows = grouped_layout(torch.tensor([4, 0, 0, 3, 0, 2, 3]), 4)
    assert order.tolist() == [1, 2, 4, 5, 3, 6, 0]
    assert offs.tolist() == [16, 16, 32, 48] and rows == 7 + 4 * 15
    assert dest.tolist() == [0, 1, 2, 16, 32, 33, 48]  # the foreign pair lands after the last group


def test_refuses_what_it_cannot_run():
    with pytest.raises(UnsupportedConfigError) as err:
        spec = small_spec(dtype="float16")
        TorchGroupedMMExperts(spec, make_random_weights(spec))
    assert err.value.field == "in_dtype"
    with pytest.raises(UnsupportedConfigError) as err:
        spec = small_spec(dtype="bfloat16", quant=SCHEMES["fp8_w16"])
        TorchGroupedMMExperts(spec, make_random_weights(spec))
    assert err.value.field == "quant"
