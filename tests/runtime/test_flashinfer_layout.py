"""FlashInfer weight layouts, checked on CPU against written definitions (the GPU call paths are untested).

Every conversion is a pure index permutation, so it is checked on integer "tag" tensors whose
entries name their own source position, against expectations built element by element from
the definitions in moe_oracle/kernels/_flashinfer_layout.py's docstring (restated in each test).
Numerical check: undoing the layouts and running the float32 reference on the recovered (padded)
weights reproduces the original layer to FP32_ATOL.
"""

from __future__ import annotations

import pytest
import torch

from helpers import FP32_ATOL, inputs, small_spec
from moe_oracle.kernels import _flashinfer_layout as L
from moe_oracle.kernels.flashinfer_cutlass import FlashInferCutlassBf16
from moe_oracle.kernels.flashinfer_trtllm import TrtLlmBf16Modular, TrtLlmBf16Monolithic, TrtLlmFp8BlockModular, TrtLlmFp8BlockMonolithic
from moe_oracle.kernels.reference import reference_moe
from moe_oracle.core.quant import SCHEMES
from moe_oracle.runtime.errors import UnsupportedConfigError
from moe_oracle.runtime.weights import MoEWeights, make_random_weights


def tags(e: int, rows: int, cols: int) -> torch.Tensor:
    """tags[e, r, c] = its own linear index, int64."""
    return torch.arange(e * rows * cols, dtype=torch.int64).view(e, rows, cols)


def shuffle_dest(s: int, block: int) -> int:
    """Definition: within a block of B rows, source row s moves to 8 * (s % (B/8)) + s // (B/8)."""
    q = block // 8
    return 8 * (s % q) + s // q


def test_swap_w13_to_w31_definition():
    w = tags(2, 6, 3)  # I = 3
    out = L.swap_w13_to_w31(w)
    for e in range(2):
        for r in range(6):
            assert torch.equal(out[e, r], w[e, (r + 3) % 6])  # row r of w31 is row r+I (mod 2I) of w13


def test_gated_interleave_definition():
    order = L.gated_interleave_order(8)
    for j in range(4):
        assert order[2 * j] == j and order[2 * j + 1] == 4 + j


@pytest.mark.parametrize("tile, block", [(128, 32), (64, 16)])
def test_epilogue_shuffle_definition(tile, block):
    rows = 3 * block
    order = L.epilogue_shuffle_order(rows, tile)  # order[new] = old
    expected = torch.empty(rows, dtype=torch.int64)
    for b in range(3):
        for s in range(block):
            expected[b * block + shuffle_dest(s, block)] = b * block + s
    assert torch.equal(order, expected)
    with pytest.raises(ValueError):
        L.epilogue_shuffle_order(block + 8, tile)


def test_block_major_k_definition_and_inverse():
    w = tags(2, 5, 12)
    out = L.block_major_k(w, 4)
    assert out.shape == (2, 3, 5, 4)
    for e in range(2):
        for b in range(3):
            for m in range(5):
                for j in range(4):
                    assert out[e, b, m, j] == w[e, m, b * 4 + j]
    assert torch.equal(L.from_block_major_k(out), w)
    with pytest.raises(ValueError):
        L.block_major_k(w, 5)


def test_pad_intermediate_places_gate_and_up_separately():
    w13 = tags(1, 6, 2) + 1  # I = 3, no zeros
    w2 = tags(1, 2, 3) + 1
    p13, p2, padded = L.pad_intermediate(w13, w2, multiple=4, gated=True)
    assert padded == 4 and p13.shape == (1, 8, 2) and p2.shape == (1, 2, 4)
    assert torch.equal(p13[0, :3], w13[0, :3]) and torch.equal(p13[0, 4:7], w13[0, 3:])
    assert (p13[0, 3] == 0).all() and (p13[0, 7] == 0).all() and (p2[0, :, 3] == 0).all()
    same = L.pad_intermediate(w13, w2, multiple=3, gated=True)
    assert same[0] is w13 and same[2] == 3


def _expected_trtllm_bf16_row(n: int, rows: int, gated: bool) -> int:
    """Source row in w13 of result row n: shuffle (tile 128, B = 32), then interleave, then w31 swap."""
    block = 32
    b, d = divmod(n, block)
    s = next(s for s in range(block) if shuffle_dest(s, block) == d)
    r = b * block + s  # row of the interleaved matrix
    if not gated:
        return r
    half = rows // 2
    r31 = r // 2 if r % 2 == 0 else half + r // 2  # interleave: even rows from the first half, odd from the second
    return (r31 + half) % rows  # w31 row -> w13 row


@pytest.mark.parametrize("gated", [True, False])
def test_trtllm_bf16_layout_definition(gated):
    e, inter, hidden = 2, 64, 128
    rows = 2 * inter if gated else inter
    w13, w2 = tags(e, rows, hidden), tags(e, hidden, inter)
    g1, g2 = L.trtllm_bf16_layout(w13, w2, gated=gated)
    assert g1.shape == (e, hidden // 64, rows, 64) and g2.shape == (e, inter // 64, hidden, 64)
    for n in range(rows):
        src = _expected_trtllm_bf16_row(n, rows, gated)
        for b in range(hidden // 64):
            assert torch.equal(g1[:, b, n, :], w13[:, src, b * 64 : (b + 1) * 64])
    for n in range(hidden):  # w2: shuffle only
        blk, d = divmod(n, 32)
        src = blk * 32 + next(s for s in range(32) if shuffle_dest(s, 32) == d)
        assert torch.equal(g2[:, 0, n, :], w2[:, src, :64])


def test_trtllm_bf16_layout_moves_bf16_values_like_tags():
    e, inter, hidden = 2, 64, 128
    w13 = torch.randn(e, 2 * inter, hidden).bfloat16()
    w2 = torch.randn(e, hidden, inter).bfloat16()
    g1, g2 = L.trtllm_bf16_layout(w13, w2, gated=True)
    t1, t2 = L.trtllm_bf16_layout(tags(e, 2 * inter, hidden), tags(e, hidden, inter), gated=True)
    assert g1.dtype == torch.bfloat16 and g2.shape == (e, inter // 64, hidden, 64)
    assert torch.equal(g1, w13.flatten()[t1]) and torch.equal(g2, w2.flatten()[t2])


def test_trtllm_fp8_block_layout_definition():
    e, inter, hidden = 1, 128, 256
    spec = small_spec(num_experts=e, top_k=1, hidden=hidden, intermediate=inter, quant=SCHEMES["fp8_block"])
    w = make_random_weights(spec, seed=0)
    g1, s1, g2, s2 = L.trtllm_fp8_block_layout(w.w13, w.w13_scale, w.w2, w.w2_scale, gated=True)
    assert g1.dtype == torch.float8_e4m3fn and g1.shape == (e, hidden // 128, 2 * inter, 128) and g2.shape == (e, inter // 128, hidden, 128)
    # scales: only the w31 swap (halves of the 2I/128 block rows); w2 scales unchanged
    assert torch.equal(s1[0, 0], w.w13_scale[0, 1]) and torch.equal(s1[0, 1], w.w13_scale[0, 0]) and torch.equal(s2, w.w2_scale)
    # weights: result row n of block b is w31 row shuffle-source(n) (tile 64 -> B = 16), columns b*128..b*128+127
    w13b = w.w13.view(torch.uint8)
    for n in range(2 * inter):
        blk, d = divmod(n, 16)
        src31 = blk * 16 + next(s for s in range(16) if shuffle_dest(s, 16) == d)
        src13 = (src31 + inter) % (2 * inter)
        for b in range(hidden // 128):
            assert torch.equal(g1.view(torch.uint8)[0, b, n], w13b[0, src13, b * 128 : (b + 1) * 128])


def test_pack_topk_hand_values():
    # bf16(0.75) = 0x3F40, bf16(-0.25) = 0xBE80: (5 << 16) | 0x3F40 = 343872, (2 << 16) | 0xBE80 = 179840
    packed = L.pack_topk(torch.tensor([[5, 2]]), torch.tensor([[0.75, -0.25]]))
    assert packed.dtype == torch.int32 and packed.tolist() == [[343872, 179840]]
    ids, weights = L.unpack_topk(packed)
    assert ids.tolist() == [[5, 2]] and weights.tolist() == [[0.75, -0.25]]
    with pytest.raises(ValueError):
        L.pack_topk(torch.tensor([[40000]]), torch.ones(1, 1))


def _undo_bf16(adapter, spec) -> MoEWeights:  # noqa: ANN001
    """Recover vLLM-layout (padded) weights from an adapter's TRT-LLM bf16 weights by inverting the documented orders."""
    g1 = L.from_block_major_k(adapter.gemm1_weights)
    g2 = L.from_block_major_k(adapter.gemm2_weights)
    rows = g1.shape[1]
    order = L.epilogue_shuffle_order(rows, 128)
    if spec.is_gated:
        order = L.gated_interleave_order(rows)[order]
    w13 = torch.empty_like(g1)
    w13[:, order] = g1
    if spec.is_gated:
        w13 = L.swap_w13_to_w31(w13)  # the swap is its own inverse
    w2 = torch.empty_like(g2)
    w2[:, L.epilogue_shuffle_order(g2.shape[1], 128)] = g2
    return MoEWeights(w13=w13, w2=w2)


@pytest.mark.parametrize("cls", [TrtLlmBf16Monolithic, TrtLlmBf16Modular])
@pytest.mark.parametrize("activation", ["silu", "relu2_no_mul"])
def test_trtllm_bf16_adapter_weights_compute_the_same_layer(cls, activation):
    spec = small_spec(num_experts=4, top_k=2, hidden=128, intermediate=96, activation=activation, dtype="bfloat16")
    w = make_random_weights(spec, seed=4)
    adapter = cls(spec, w)
    assert adapter.padded_intermediate == 128
    assert adapter.gemm1_weights.shape == (4, 2, spec.w13_rows // 96 * 128, 64)
    recovered = _undo_bf16(adapter, spec)
    x, logits = inputs(spec, 10)
    padded_spec = small_spec(num_experts=4, top_k=2, hidden=128, intermediate=128, activation=activation, dtype="bfloat16")
    assert torch.allclose(reference_moe(x, logits, recovered, padded_spec), reference_moe(x, logits, w, spec), atol=FP32_ATOL)


@pytest.mark.parametrize("cls", [TrtLlmFp8BlockMonolithic, TrtLlmFp8BlockModular])
def test_trtllm_fp8_block_adapter_builds_on_cpu(cls):
    spec = small_spec(num_experts=2, top_k=1, hidden=256, intermediate=128, quant=SCHEMES["fp8_block"], dtype="bfloat16", method="renormalize")
    adapter = cls(spec, make_random_weights(spec))
    assert adapter.gemm1_weights.shape == (2, 2, 256, 128) and adapter.gemm2_weights.shape == (2, 1, 256, 128)
    assert adapter.gemm1_scales.shape == (2, 2, 2) and adapter.gemm2_scales.shape == (2, 2, 1)


def test_cutlass_adapter_swaps_to_w31():
    spec = small_spec(num_experts=2, top_k=1, hidden=64, intermediate=32, dtype="bfloat16")
    w = make_random_weights(spec)
    adapter = FlashInferCutlassBf16(spec, w)
    assert torch.equal(adapter.fc1_expert_weights[:, :32], w.w13[:, 32:]) and torch.equal(adapter.fc1_expert_weights[:, 32:], w.w13[:, :32])
    assert torch.equal(adapter.fc2_expert_weights, w.w2)


def test_gpu_only_call_paths_fail_loudly_on_cpu():
    spec = small_spec(num_experts=4, top_k=2, hidden=128, intermediate=128, dtype="bfloat16")
    w = make_random_weights(spec)
    x, logits = inputs(spec, 3)
    with pytest.raises(RuntimeError, match="CUDA"):
        TrtLlmBf16Monolithic(spec, w).apply_monolithic(x, logits)
    with pytest.raises(RuntimeError, match="CUDA"):
        FlashInferCutlassBf16(spec, w).apply(x, torch.ones(3, 2), torch.zeros(3, 2, dtype=torch.int64))


def test_trtllm_adapters_refuse_unsupported_layers():
    spec = small_spec(hidden=128, intermediate=128, activation="gelu", dtype="bfloat16")
    with pytest.raises(UnsupportedConfigError) as err:
        TrtLlmBf16Modular(spec, make_random_weights(spec))
    assert err.value.field == "activation"
    spec = small_spec(hidden=96, intermediate=128, dtype="bfloat16")
    with pytest.raises(UnsupportedConfigError) as err:
        TrtLlmBf16Modular(spec, make_random_weights(spec))
    assert err.value.field == "hidden_size"
    spec = small_spec(hidden=256, intermediate=192, quant=SCHEMES["fp8_block"], dtype="bfloat16")
    with pytest.raises(UnsupportedConfigError) as err:
        TrtLlmFp8BlockModular(spec, make_random_weights(spec))
    assert err.value.field == "intermediate_size"
    spec = small_spec(hidden=128, intermediate=128, method="default", dtype="bfloat16")
    with pytest.raises(UnsupportedConfigError) as err:
        TrtLlmBf16Monolithic(spec, make_random_weights(spec))
    assert err.value.field == "routing_method"


def test_cutlass_adapter_activation_arguments():
    spec = small_spec(num_experts=2, top_k=1, hidden=64, intermediate=32, dtype="bfloat16", activation="swigluoai_uninterleave", swiglu_limit=7.0)
    adapter = FlashInferCutlassBf16(spec, make_random_weights(spec))
    assert set(adapter.swiglu_args) == {"swiglu_alpha", "swiglu_beta", "swiglu_limit"}
    assert adapter.swiglu_args["swiglu_alpha"].tolist() == pytest.approx([1.702, 1.702])
    assert adapter.swiglu_args["swiglu_beta"].tolist() == [1.0, 1.0] and adapter.swiglu_args["swiglu_limit"].tolist() == [7.0, 7.0]
    spec = small_spec(num_experts=2, top_k=1, hidden=64, intermediate=32, dtype="bfloat16", activation="swigluoai")
    with pytest.raises(UnsupportedConfigError) as err:
        FlashInferCutlassBf16(spec, make_random_weights(spec))
    assert err.value.field == "activation"
