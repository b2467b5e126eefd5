"""The Triton path of our experts on CPU, through Triton's interpreter (``TRITON_INTERPRET=1``).

conftest.py sets ``TRITON_INTERPRET=1`` on machines without CUDA before Triton is imported, and
the fixture ``ops`` hands the interpreted kernels of :mod:`moe_oracle.kernels._triton_moe` to the
adapters (which take no Triton path on CPU by themselves), so they run their Triton path on CPU
tensors: the same kernels as on CUDA, with two differences stated in that module: float32 -> bf16 / e4m3 casts round on the float32 bits (the interpreter's own conversions
truncate or lose a carry), and ``torch._scaled_grouped_mm`` (CUDA only) is replaced by a float32
emulation for the per-channel fp8 experts. test_gpu.py runs the compiled kernels and the real
scaled grouped GEMM.

Tolerances: BF16_REL_TOL (helpers.py) against the float32 reference. The per-channel fp8 experts
round GEMM1's output to bf16 before requantizing the activation to fp8 (torch._scaled_grouped_mm
writes only bf16); the emulated GEMM here is exact float32, so their recipe is checked to
BF16_REL_TOL against the reference that rounds GEMM1's output the same way, and their distance from
the plain reference to FP8_REQUANT_RMS_TOL on the RMS metric (helpers.py derives it). Negative
controls (swapped gate/up, wrong routing method) must exceed ten times the tolerance.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from helpers import BF16_REL_TOL, FP8_REQUANT_RMS_TOL, inputs, normwise_error, rms_error, small_spec, with_swapped_gate_up
from moe_oracle.kernels.reference import reference_moe
from moe_oracle.prepare_finalize.no_dp_ep import NoDPEPModular
from moe_oracle.core.quant import SCHEMES
from moe_oracle.runtime import fp8
from moe_oracle.runtime.errors import UnsupportedConfigError
from moe_oracle.runtime.kernel import FusedMoEKernel
from moe_oracle.runtime.routing import route
from moe_oracle.runtime.weights import make_random_weights, shard_experts

triton = pytest.importorskip("triton")


@pytest.fixture(scope="module")
def interpreted():
    """The kernels module, imported under the interpreter (conftest.py sets TRITON_INTERPRET=1 on
    machines without CUDA before anything imports Triton)."""
    from moe_oracle.kernels import _triton_moe as module

    if not module.INTERPRET:
        pytest.skip("Triton was imported without TRITON_INTERPRET=1 (a CUDA machine runs test_gpu.py instead)")
    try:  # Triton 3.6's interpreter fails on loops with numpy >= 2.4 (int() of 1-element arrays)
        module.route_layout(torch.tensor([[0, 1]]), 0, 2, x=torch.ones(1, 8, dtype=torch.bfloat16))
    except Exception as exc:  # noqa: BLE001 - any interpreter failure means: cannot test here
        import numpy

        pytest.skip(f"Triton {triton.__version__}'s interpreter does not run here (numpy {numpy.__version__}): {type(exc).__name__}: {exc}")
    return module


@pytest.fixture()
def ops(interpreted, monkeypatch):
    """Hand the interpreted kernels to the adapters (on CPU they would take no Triton path)."""
    import moe_oracle.kernels.torch_grouped_mm as tgm
    import moe_oracle.kernels.triton_fp8_block as tfb

    monkeypatch.setattr(tgm, "triton_ops", lambda device: interpreted)
    monkeypatch.setattr(tfb, "triton_ops", lambda device: interpreted)
    return interpreted


# ----------------------------------------------------------------------------- building blocks


def test_fp8_and_bf16_casts_round_to_nearest_even(ops):
    x = torch.cat([torch.randn(4096) * 50, torch.tensor([0.0, 447.0, 449.0, -1000.0, 31.99, 2.0**-10, 17.0, 18.0, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-9])])
    q, s = ops.quantize_rows(x.view(1, -1), None)
    assert torch.equal(q.float(), fp8.quantize_activation(x.view(1, -1), "fp8_dynamic_token")[0].float())
    h = torch.randn(64, 256)
    a, _ = ops.activation(h.to(torch.bfloat16), "relu2_no_mul", torch.tensor([64], dtype=torch.int32))
    ref = torch.relu(h.to(torch.bfloat16).float()).square().to(torch.bfloat16)
    assert torch.equal(a, ref)


@pytest.mark.parametrize("group", [None, 128])
def test_quantize_rows_equals_the_reference_quantization(ops, group):
    x = (torch.randn(37, 384) * torch.logspace(-3, 2, 37).unsqueeze(1)).to(torch.bfloat16)
    x[5] = 0.0  # an all-zero row: scale floored at 1e-12
    q, s = ops.quantize_rows(x, group)
    rq, rs = fp8.quantize_activation(x, "fp8_dynamic_group128" if group else "fp8_dynamic_token")
    assert torch.equal(s, rs)
    assert torch.equal(q.float(), rq.float())


def test_layout_sorts_pairs_by_local_expert(ops):
    ids = torch.tensor([[5, 2], [3, 0], [2, 7], [4, 2], [6, 3]])  # rank 1 of 2 holds experts 4..7
    x = torch.arange(5 * 16, dtype=torch.float32).view(5, 16).to(torch.bfloat16)
    lay = ops.route_layout(ids, 4, 4, x=x)
    assert lay.counts.tolist() == [1, 1, 1, 1] and lay.offs.tolist() == [1, 2, 3, 4]
    row = lay.pair_row.view(5, 2)
    foreign = ids < 4
    assert (row[foreign] == -1).all()
    mine = row[~foreign]
    assert sorted(mine.tolist()) == [0, 1, 2, 3]
    expert_of_row = {int(r): int(e) for r, e in zip(row[~foreign], ids[~foreign])}
    assert [expert_of_row[r] for r in range(4)] == [4, 5, 6, 7]  # rows in expert order
    tok = torch.arange(5).unsqueeze(1).expand(5, 2)
    for r, t in zip(row[~foreign].tolist(), tok[~foreign].tolist()):
        assert lay.sorted_tok[r] == t and torch.equal(lay.buf[r], x[t])


def test_layout_with_many_pairs_per_expert_and_padding(ops):
    gen = torch.Generator().manual_seed(3)
    ids = torch.randint(0, 6, (300, 3), generator=gen)
    lay = ops.route_layout(ids, 0, 6, align=16)
    counts = torch.bincount(ids.view(-1), minlength=6)
    assert lay.counts.tolist() == counts.tolist()
    padded = (counts + 15) // 16 * 16
    assert lay.offs.tolist() == torch.cumsum(padded, 0).tolist()
    starts = torch.cumsum(padded, 0) - padded
    rows = lay.pair_row.long()
    assert len(set(rows.tolist())) == rows.numel()  # every pair its own row
    e = ids.view(-1)
    assert ((rows >= starts[e]) & (rows < starts[e] + counts[e])).all()  # inside its expert's group


# ----------------------------------------------------------------------------- bf16 experts (torch._grouped_mm)


def _grouped(spec, w, **kw):  # noqa: ANN001, ANN003, ANN202
    from moe_oracle.kernels.torch_grouped_mm import TorchGroupedMMExperts

    return TorchGroupedMMExperts(spec, w, **kw)


@pytest.mark.parametrize(
    "activation, bias",
    [("silu", False), ("silu", True), ("gelu", False), ("gelu_tanh", True), ("relu2", False), ("swigluoai", True), ("swigluoai_uninterleave", False), ("silu_no_mul", True), ("relu2_no_mul", False)],
)
def test_grouped_mm_triton_path_matches_reference(ops, activation, bias):
    spec = small_spec(num_experts=8, top_k=2, hidden=64, intermediate=32, activation=activation, dtype="bfloat16", has_bias=bias)
    w = make_random_weights(spec, seed=1)
    x, logits = inputs(spec, 33, seed=2)
    experts = _grouped(spec, w)
    assert experts._ops is ops  # the Triton path, not the portable one
    out = FusedMoEKernel(NoDPEPModular(spec), experts)(x, logits)
    assert out.dtype == torch.bfloat16 and out.shape == (33, 64)
    assert normwise_error(out, reference_moe(x, logits, w, spec)) <= BF16_REL_TOL


def test_grouped_mm_triton_path_negative_controls(ops):
    spec = small_spec(num_experts=16, top_k=4, hidden=128, intermediate=64, dtype="bfloat16")
    w = make_random_weights(spec, seed=1)
    x, logits = inputs(spec, 40, seed=2)
    ref = reference_moe(x, logits, w, spec)
    swapped = FusedMoEKernel(NoDPEPModular(spec), _grouped(spec, with_swapped_gate_up(w, spec)))(x, logits)
    wrong_spec = replace(spec, routing=replace(spec.routing, method="default"))
    wrong_route = FusedMoEKernel(NoDPEPModular(wrong_spec), _grouped(wrong_spec, w))(x, logits)
    assert normwise_error(swapped, ref) > 10 * BF16_REL_TOL
    assert normwise_error(wrong_route, ref) > 10 * BF16_REL_TOL


def test_grouped_mm_triton_path_on_expert_parallel_ranks(ops):
    """gpt-oss style (interleaved swigluoai, biases) split over 2 ranks: each rank sums only its experts."""
    spec = small_spec(num_experts=8, top_k=4, hidden=128, intermediate=64, activation="swigluoai", dtype="bfloat16", has_bias=True)
    w = make_random_weights(spec, seed=8)
    x, logits = inputs(spec, 24, seed=9)
    topk_w, topk_ids = route(logits, spec.routing)
    parts = [_grouped(spec.for_rank(r, 2), shard_experts(w, spec.for_rank(r, 2))).apply(x, topk_w, topk_ids).float() for r in range(2)]
    assert normwise_error(parts[0] + parts[1], reference_moe(x, logits, w, spec)) <= BF16_REL_TOL
    assert normwise_error(parts[0], reference_moe(x, logits, w, spec)) > 10 * BF16_REL_TOL  # a rank alone is not the layer


def test_grouped_mm_triton_path_gives_zeros_for_tokens_routed_elsewhere(ops):
    full = small_spec(num_experts=8, dtype="bfloat16", hidden=64, intermediate=32)
    spec = full.for_rank(1, 2)
    w = shard_experts(make_random_weights(full), spec)
    out = _grouped(spec, w).apply(torch.randn(2, 64).bfloat16(), torch.ones(2, 2), torch.tensor([[0, 1], [2, 3]]))
    assert torch.equal(out, torch.zeros(2, 64, dtype=torch.bfloat16))


# ----------------------------------------------------------------------------- fp8 experts


FP8_CASES = [("silu", 40), ("gelu", 17), ("swigluoai_uninterleave", 40), ("relu2_no_mul", 33)]


@pytest.mark.parametrize("activation, tokens", FP8_CASES)
def test_fp8_block_experts_match_reference(ops, activation, tokens):
    from moe_oracle.kernels.triton_fp8_block import TritonFP8BlockExperts

    spec = small_spec(num_experts=8, top_k=2, hidden=256, intermediate=128, activation=activation, dtype="bfloat16", quant=SCHEMES["fp8_block"])
    w = make_random_weights(spec, seed=1)
    x, logits = inputs(spec, tokens, seed=2)
    out = FusedMoEKernel(NoDPEPModular(spec), TritonFP8BlockExperts(spec, w))(x, logits)
    assert out.dtype == torch.bfloat16
    assert normwise_error(out, reference_moe(x, logits, w, spec)) <= BF16_REL_TOL


def _block_scaled(a, a_scale, w, w_scale, counts):  # noqa: ANN001, ANN202
    """float32 math of the block-scaled grouped GEMM: rows in expert order, scales broadcast over their 128-blocks."""
    out, start = [], 0
    for e, c in enumerate(counts.tolist()):
        rows = a[start:start + c].float() * a_scale[start:start + c].repeat_interleave(128, 1)
        out.append(rows @ (w[e].float() * w_scale[e].repeat_interleave(128, 0).repeat_interleave(128, 1)).T)
        start += c
    return torch.cat(out)


def test_fp8_block_gemm_tile_options_give_the_same_math(ops):
    """Every tile option (BLOCK_N 256 with a weight-scale vector per K step, weights through a tensor
    descriptor, GROUP_M, small last tiles, a persistent grid, the warp-specialized loop, activation
    rows through a descriptor) against float32 math on the same fp8 operands and scales."""
    gen = torch.Generator().manual_seed(6)
    num_local, n, k = 3, 256, 256
    counts = torch.tensor([5, 0, 37], dtype=torch.int32)
    rows = int(counts.sum())
    w13 = (torch.randn(num_local, 2 * n, k, generator=gen) / 16).to(torch.float8_e4m3fn)
    s13 = torch.rand(num_local, 2 * n // 128, k // 128, generator=gen) + 0.5
    w2 = (torch.randn(num_local, k, n, generator=gen) / 16).to(torch.float8_e4m3fn)
    s2 = torch.rand(num_local, k // 128, n // 128, generator=gen) + 0.5
    xq, xs = ops.quantize_rows(torch.randn(rows, k, generator=gen).to(torch.bfloat16), 128)
    h = _block_scaled(xq, xs, w13, s13, counts)
    act = torch.nn.functional.silu(h[:, :n]) * h[:, n:]
    plain = _block_scaled(xq, xs, w2, s2, counts)
    for cfg in (ops.BlockConfig(16, 4, 3), ops.BlockConfig(16, 4, 3, tma=True), ops.BlockConfig(32, 4, 3, group_m=2, tma=True),
                ops.BlockConfig(32, 4, 3, split=16), ops.BlockConfig(16, 4, 3, persistent=1, flat=True), ops.BlockConfig(32, 4, 3, persistent=2, split=16, ws=True),
                ops.BlockConfig(16, 4, 3, tma_a=True)):
        out, scale = ops.fp8_block_gemm(xq, xs, w13, s13, counts, rows, act="silu", quant_out=True, config=cfg)
        assert normwise_error(out.float() * scale.repeat_interleave(128, 1), act) <= 2.0**-4, cfg  # e4m3 output
    for cfg in (ops.BlockConfig(16, 4, 3), ops.BlockConfig(16, 4, 3, block_n=256), ops.BlockConfig(32, 4, 3, block_n=256, tma=True), ops.BlockConfig(16, 4, 3, tma=True),
                ops.BlockConfig(32, 4, 3, block_n=256, split=16, tma=True), ops.BlockConfig(16, 4, 3, persistent=1, tma=True, flat=True),
                ops.BlockConfig(32, 4, 3, block_n=256, persistent=3, ws=True), ops.BlockConfig(16, 4, 3, tma_a=True),
                ops.BlockConfig(32, 4, 3, block_n=256, tma=True, tma_a=True, persistent=1, flat=True)):
        out, _ = ops.fp8_block_gemm(xq, xs, w2, s2, counts, rows, config=cfg)
        assert normwise_error(out, plain) <= 2.0**-8, cfg  # one bf16 rounding
    with pytest.raises(ValueError, match="tma_a True is not allowed with sorted_tok"):
        ops.fp8_block_gemm(xq, xs, w2, s2, counts, rows, sorted_tok=torch.zeros(rows, dtype=torch.int32), config=ops.BlockConfig(16, 4, 3, tma_a=True))
    with pytest.raises(ValueError, match="block_n 256 needs a plain GEMM"):
        ops.fp8_block_gemm(xq, xs, w13, s13, counts, rows, act="silu", quant_out=True, config=ops.BlockConfig(16, 4, 3, block_n=256))


def test_fp8_block_experts_take_their_tiles_from_the_table(ops):
    from moe_oracle.kernels.path_tables import parse_paths
    from moe_oracle.kernels.triton_fp8_block import TritonFP8BlockExperts

    spec = small_spec(num_experts=8, top_k=2, hidden=256, intermediate=256, dtype="bfloat16", quant=SCHEMES["fp8_block"])
    w = make_random_weights(spec, seed=1)
    x, logits = inputs(spec, 24, seed=2)
    experts = TritonFP8BlockExperts(spec, w)
    assert experts.configs_for(24) == (None, None)  # the shipped table tunes other layers
    tile = {"m": 16, "n": 256, "warps": 4, "stages": 3, "tma": True}
    experts.paths = parse_paths({"kind": "runtime_paths", "experts": "triton_fp8_block", "shapes": [
        {"name": "t", "num_experts": 8, "hidden_size": 256, "intermediate_size": 256, "top_k": 2,
         "ranges": [{"path": "triton", "gemm1": dict(tile, n=128), "gemm2": tile}]}]}, "t.yaml")
    assert experts.configs_for(24)[1] == ops.BlockConfig(16, 4, 3, block_n=256, tma=True)
    out = FusedMoEKernel(NoDPEPModular(spec), experts)(x, logits)
    assert normwise_error(out, reference_moe(x, logits, w, spec)) <= BF16_REL_TOL


def test_fp8_block_negative_controls_and_expert_parallel(ops):
    from moe_oracle.kernels.triton_fp8_block import TritonFP8BlockExperts

    spec = small_spec(num_experts=8, top_k=2, hidden=256, intermediate=128, dtype="bfloat16", quant=SCHEMES["fp8_block"])
    w = make_random_weights(spec, seed=3)
    x, logits = inputs(spec, 32, seed=4)
    ref = reference_moe(x, logits, w, spec)
    swapped = FusedMoEKernel(NoDPEPModular(spec), TritonFP8BlockExperts(spec, with_swapped_gate_up(w, spec)))(x, logits)
    wrong_spec = replace(spec, routing=replace(spec.routing, method="default"))
    wrong_route = FusedMoEKernel(NoDPEPModular(wrong_spec), TritonFP8BlockExperts(wrong_spec, w))(x, logits)
    assert normwise_error(swapped, ref) > 10 * BF16_REL_TOL
    assert normwise_error(wrong_route, ref) > 10 * BF16_REL_TOL
    topk_w, topk_ids = route(logits, spec.routing)
    total = sum(TritonFP8BlockExperts(spec.for_rank(r, 2), shard_experts(w, spec.for_rank(r, 2))).apply(x, topk_w, topk_ids).float() for r in range(2))
    assert normwise_error(total, ref) <= BF16_REL_TOL


def test_fp8_block_refuses_what_it_cannot_run(ops):
    from moe_oracle.kernels.triton_fp8_block import TritonFP8BlockExperts

    cases = [
        (dict(quant=SCHEMES["fp8_channel_token"]), "quant"),
        (dict(quant=SCHEMES["fp8_block"], has_bias=True), "has_bias"),
        (dict(quant=SCHEMES["fp8_block"], activation="swigluoai"), "activation"),
        (dict(quant=SCHEMES["fp8_block"], intermediate=192), "intermediate_size_per_partition"),
        (dict(quant=SCHEMES["fp8_block"], dtype="float16"), "in_dtype"),
    ]
    for kw, field in cases:
        spec = small_spec(**{"hidden": 256, "intermediate": 128, "dtype": "bfloat16", **kw})
        with pytest.raises(UnsupportedConfigError) as err:
            TritonFP8BlockExperts(spec, make_random_weights(spec))
        assert err.value.field == field, kw


@pytest.mark.parametrize("activation, tokens", FP8_CASES + [("swigluoai", 24)])
def test_fp8_channel_experts_match_reference(ops, monkeypatch, activation, tokens):
    import moe_oracle.kernels.torch_grouped_mm as tgm

    monkeypatch.setattr(tgm, "_scaled_grouped_mm", tgm.emulated_scaled_grouped_mm)
    spec = small_spec(num_experts=8, top_k=2, hidden=256, intermediate=128, activation=activation, dtype="bfloat16", quant=SCHEMES["fp8_channel_token"])
    w = make_random_weights(spec, seed=1)
    x, logits = inputs(spec, tokens, seed=2)
    out = FusedMoEKernel(NoDPEPModular(spec), tgm.TorchScaledGroupedMMExperts(spec, w))(x, logits)
    assert normwise_error(out, reference_moe(x, logits, w, spec, gemm1_dtype=torch.bfloat16)) <= BF16_REL_TOL
    assert rms_error(out, reference_moe(x, logits, w, spec)) <= FP8_REQUANT_RMS_TOL


def test_fp8_channel_negative_controls(ops, monkeypatch):
    import moe_oracle.kernels.torch_grouped_mm as tgm

    monkeypatch.setattr(tgm, "_scaled_grouped_mm", tgm.emulated_scaled_grouped_mm)
    spec = small_spec(num_experts=8, top_k=2, hidden=256, intermediate=128, dtype="bfloat16", quant=SCHEMES["fp8_channel_token"])
    w = make_random_weights(spec, seed=3)
    x, logits = inputs(spec, 32, seed=4)
    ref = reference_moe(x, logits, w, spec, gemm1_dtype=torch.bfloat16)
    swapped = FusedMoEKernel(NoDPEPModular(spec), tgm.TorchScaledGroupedMMExperts(spec, with_swapped_gate_up(w, spec)))(x, logits)
    wrong_spec = replace(spec, routing=replace(spec.routing, method="default"))
    wrong_route = FusedMoEKernel(NoDPEPModular(wrong_spec), tgm.TorchScaledGroupedMMExperts(wrong_spec, w))(x, logits)
    assert normwise_error(swapped, ref) > 10 * BF16_REL_TOL
    assert normwise_error(wrong_route, ref) > 10 * BF16_REL_TOL


def test_fp8_experts_refuse_a_device_without_their_kernels():
    """Without the interpreter, CPU weights have no Triton path: a clear error, not a silent fallback."""
    import moe_oracle.kernels.torch_grouped_mm as tgm
    from moe_oracle.kernels.triton_fp8_block import TritonFP8BlockExperts

    assert tgm.triton_ops(torch.device("cpu")) is None
    for cls, scheme in ((TritonFP8BlockExperts, "fp8_block"), (tgm.TorchScaledGroupedMMExperts, "fp8_channel_token")):
        spec = small_spec(hidden=256, intermediate=128, dtype="bfloat16", quant=SCHEMES[scheme])
        with pytest.raises(UnsupportedConfigError) as err:
            cls(spec, make_random_weights(spec))
        assert err.value.field == "device"
