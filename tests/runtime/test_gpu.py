"""GPU tests (marker ``gpu``; skipped without CUDA): our experts' compiled kernels and the runtime on a GPU.

Tolerances: BF16_REL_TOL (normwise, 6 * 2**-8; helpers.py) for the bf16 and fp8-block kernels
against the float32 reference computed on the same device; for the per-channel fp8 experts, whose
GEMM1 (torch._scaled_grouped_mm) writes bf16 that is then requantized to fp8, FP8_REQUANT_RMS_TOL
on the RMS metric (helpers.py derives it); negative controls must exceed the tolerance tenfold, on
the same metric; 1e-4 absolute for the float32 reference on CUDA
against CPU (different GEMM algorithms and summation orders; TF32 is off: torch's default for
matmul). Model shapes: examples/models (qwen3-30b-a3b: 128 experts top-8, hidden 2048, intermediate
768; mixtral-8x7b: 8 top-2, 4096, 14336; gpt-oss-20b dims: 32 top-4, 2880, 2880, swigluoai, no
bias; gpt-oss-120b dims: 128 top-4 with biases; a DeepSeek-V3 EP8 shard: 32 experts top-8, 7168,
2048; Llama-4-Maverick fp8: 5120, 8192, top-1, here with 16 of its 128 experts).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from helpers import BF16_REL_TOL, FP8_REQUANT_RMS_TOL, inputs, normwise_error, rms_error, small_spec, with_swapped_gate_up
from moe_oracle import Device, MoEConfig, Oracle
from moe_oracle.kernels.reference import reference_moe
from moe_oracle.kernels.torch_grouped_mm import TorchGroupedMMExperts, TorchScaledGroupedMMExperts
from moe_oracle.kernels.triton_fp8_block import TritonFP8BlockExperts
from moe_oracle.prepare_finalize.no_dp_ep import NoDPEPModular
from moe_oracle.core.quant import SCHEMES
from moe_oracle.runtime.kernel import FusedMoEKernel
from moe_oracle.runtime.runner import run_layer
from moe_oracle.runtime.routing import route
from moe_oracle.runtime.weights import make_random_weights, shard_experts

pytestmark = pytest.mark.gpu

MODEL_SHAPES = [
    pytest.param(dict(num_experts=8, top_k=2, hidden=64, intermediate=32), 33, id="tiny"),
    pytest.param(dict(num_experts=128, top_k=8, hidden=2048, intermediate=768), 256, id="qwen3-30b-a3b"),
    pytest.param(dict(num_experts=8, top_k=2, hidden=4096, intermediate=14336), 64, id="mixtral-8x7b"),
    pytest.param(dict(num_experts=32, top_k=4, hidden=2880, intermediate=2880, activation="swigluoai"), 128, id="gpt-oss-20b-dims"),
    pytest.param(dict(num_experts=128, top_k=4, hidden=2880, intermediate=2880, activation="swigluoai", has_bias=True), 256, id="gpt-oss-120b-dims-bias"),
    pytest.param(dict(num_experts=32, top_k=8, hidden=7168, intermediate=2048), 200, id="deepseek-v3-ep8-shard"),
]


def _on_cuda(spec, tokens, seed=1):  # noqa: ANN001, ANN202
    w = make_random_weights(spec, seed=seed, device="cuda", generator_device="cuda")
    x, logits = inputs(spec, tokens, seed=2)
    return w, x.cuda(), logits.cuda()


@pytest.mark.parametrize("path", ["triton", "portable"])
@pytest.mark.parametrize("shape, tokens", MODEL_SHAPES)
def test_grouped_mm_cuda_matches_reference(shape, tokens, path):
    spec = small_spec(dtype="bfloat16", **shape)
    w, x, logits = _on_cuda(spec, tokens)
    experts = TorchGroupedMMExperts(spec, w, use_triton=path == "triton")
    assert (experts._ops is not None) == (path == "triton")
    out = FusedMoEKernel(NoDPEPModular(spec), experts)(x, logits)
    assert out.is_cuda and out.dtype == torch.bfloat16
    err = normwise_error(out, reference_moe(x, logits, w, spec))
    print(f"grouped_mm {path} cuda {shape} T={tokens}: normwise error {err:.2e}")
    assert err <= BF16_REL_TOL


@pytest.mark.parametrize("path", ["triton", "portable"])
def test_grouped_mm_cuda_negative_controls(path):
    spec = small_spec(dtype="bfloat16", num_experts=32, top_k=4, hidden=1024, intermediate=512)
    w, x, logits = _on_cuda(spec, 128)
    ref = reference_moe(x, logits, w, spec)
    triton = path == "triton"
    swapped = FusedMoEKernel(NoDPEPModular(spec), TorchGroupedMMExperts(spec, with_swapped_gate_up(w, spec), use_triton=triton))(x, logits)
    wrong_spec = replace(spec, routing=replace(spec.routing, method="default"))
    wrong_route = FusedMoEKernel(NoDPEPModular(wrong_spec), TorchGroupedMMExperts(wrong_spec, w, use_triton=triton))(x, logits)
    assert normwise_error(swapped, ref) > 10 * BF16_REL_TOL
    assert normwise_error(wrong_route, ref) > 10 * BF16_REL_TOL


def test_grouped_mm_triton_path_on_an_expert_parallel_rank():
    full = small_spec(dtype="bfloat16", num_experts=64, top_k=6, hidden=2048, intermediate=1408)
    w, x, logits = _on_cuda(full, 300)
    topk_w, topk_ids = route(logits, full.routing)
    parts = [TorchGroupedMMExperts(full.for_rank(r, 4), shard_experts(w, full.for_rank(r, 4))).apply(x, topk_w, topk_ids).float() for r in range(4)]
    assert normwise_error(sum(parts), reference_moe(x, logits, w, full)) <= BF16_REL_TOL


def _graph_replay_error(experts, spec, tokens, metric=normwise_error):  # noqa: ANN001, ANN202
    """Capture ``experts.apply`` in a CUDA graph, replay it on new inputs, compare with the reference."""
    w = experts.weights
    x1, l1 = inputs(spec, tokens, seed=5)
    x2, l2 = inputs(spec, tokens, seed=6)
    x, logits = x1.cuda(), l1.cuda()
    tw, ti = route(logits, spec.routing)
    static = [x, tw.float().contiguous(), ti.contiguous()]
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        experts.apply(*static)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = experts.apply(*static)
    l2 = l2.cuda()
    tw2, ti2 = route(l2, spec.routing)
    static[0].copy_(x2.cuda())
    static[1].copy_(tw2.float())
    static[2].copy_(ti2)
    graph.replay()
    torch.cuda.synchronize()
    err = metric(out, reference_moe(x2.cuda(), l2, w, spec))
    print(f"{type(experts).__name__} graph replay on new inputs: {metric.__name__} {err:.2e}")
    return err


def test_triton_paths_replay_from_a_cuda_graph():
    spec = small_spec(dtype="bfloat16", num_experts=32, top_k=4, hidden=1024, intermediate=512, activation="swigluoai", has_bias=True)
    w = make_random_weights(spec, seed=1, device="cuda", generator_device="cuda")
    assert _graph_replay_error(TorchGroupedMMExperts(spec, w), spec, 96) <= BF16_REL_TOL
    spec = small_spec(dtype="bfloat16", num_experts=32, top_k=4, hidden=1024, intermediate=512, quant=SCHEMES["fp8_block"])
    w = make_random_weights(spec, seed=1, device="cuda", generator_device="cuda")
    assert _graph_replay_error(TritonFP8BlockExperts(spec, w), spec, 96) <= BF16_REL_TOL
    spec = small_spec(dtype="bfloat16", num_experts=32, top_k=4, hidden=1024, intermediate=512, quant=SCHEMES["fp8_channel_token"])
    w = make_random_weights(spec, seed=1, device="cuda", generator_device="cuda")
    assert _graph_replay_error(TorchScaledGroupedMMExperts(spec, w), spec, 96, rms_error) <= FP8_REQUANT_RMS_TOL


FP8_BLOCK_SHAPES = [
    pytest.param(dict(num_experts=32, top_k=8, hidden=7168, intermediate=2048), 200, id="deepseek-v3-ep8-shard"),
    pytest.param(dict(num_experts=32, top_k=8, hidden=7168, intermediate=2048), 3, id="deepseek-v3-ep8-shard-3-tokens"),
    pytest.param(dict(num_experts=128, top_k=8, hidden=2048, intermediate=768), 256, id="qwen3-30b-a3b-fp8"),
    pytest.param(dict(num_experts=128, top_k=8, hidden=2048, intermediate=768), 4096, id="qwen3-30b-a3b-fp8-4096-tokens"),
]


@pytest.mark.parametrize("shape, tokens", FP8_BLOCK_SHAPES)
def test_fp8_block_cuda_matches_reference(shape, tokens):
    spec = small_spec(dtype="bfloat16", quant=SCHEMES["fp8_block"], **shape)
    w, x, logits = _on_cuda(spec, tokens)
    out = FusedMoEKernel(NoDPEPModular(spec), TritonFP8BlockExperts(spec, w))(x, logits)
    assert out.dtype == torch.bfloat16
    err = normwise_error(out, reference_moe(x, logits, w, spec))
    print(f"fp8 block cuda {shape} T={tokens}: normwise error {err:.2e}")
    assert err <= BF16_REL_TOL


@pytest.mark.parametrize("shape_index", range(4))
def test_every_range_of_the_shipped_fp8_tile_table_runs_right_on_gpu(shape_index):
    """Each tuned layer of ``runtime_tables/paths/fp8_block.yaml`` at its real sizes, at one token
    count inside each of its ranges (the largest just past the last limit), against the float32 reference."""
    from moe_oracle.kernels.path_tables import fp8_table_path, load_paths

    table = load_paths(str(fp8_table_path()))
    if shape_index >= len(table.shapes):
        pytest.skip(f"the fp8 table tunes {len(table.shapes)} layers")
    shape = table.shapes[shape_index]
    e, h, i, k = shape.key
    spec = small_spec(num_experts=e, top_k=k, hidden=h, intermediate=i, dtype="bfloat16", quant=SCHEMES["fp8_block"])
    w = make_random_weights(spec, seed=5, device="cuda", generator_device="cuda")
    experts = TritonFP8BlockExperts(spec, w)
    limits = [int(r.limit) for r in shape.ranges if r.limit]
    for tokens in sorted({16, *limits, (limits[-1] + 1) if limits else 4096}):
        x, logits = inputs(spec, tokens, seed=tokens)
        x, logits = x.cuda(), logits.cuda()
        out = FusedMoEKernel(NoDPEPModular(spec), experts)(x, logits)
        assert torch.isfinite(out).all()
        err = normwise_error(out, reference_moe(x, logits, w, spec))
        assert err <= BF16_REL_TOL, (shape.name, tokens, experts.configs_for(tokens), err)


def test_fp8_block_cuda_negative_controls():
    spec = small_spec(dtype="bfloat16", quant=SCHEMES["fp8_block"], num_experts=32, top_k=4, hidden=1024, intermediate=512)
    w, x, logits = _on_cuda(spec, 128)
    ref = reference_moe(x, logits, w, spec)
    swapped = FusedMoEKernel(NoDPEPModular(spec), TritonFP8BlockExperts(spec, with_swapped_gate_up(w, spec)))(x, logits)
    wrong_spec = replace(spec, routing=replace(spec.routing, method="default"))
    wrong_route = FusedMoEKernel(NoDPEPModular(wrong_spec), TritonFP8BlockExperts(wrong_spec, w))(x, logits)
    assert normwise_error(swapped, ref) > 10 * BF16_REL_TOL
    assert normwise_error(wrong_route, ref) > 10 * BF16_REL_TOL


@pytest.mark.parametrize("tokens", [5, 64, 1024])
def test_fp8_channel_cuda_matches_reference(tokens):
    """Llama-4-Maverick FP8 dims (16 of its 128 experts, top-1) through torch._scaled_grouped_mm."""
    spec = small_spec(dtype="bfloat16", quant=SCHEMES["fp8_channel_token"], num_experts=16, top_k=1, hidden=5120, intermediate=8192)
    w, x, logits = _on_cuda(spec, tokens)
    out = FusedMoEKernel(NoDPEPModular(spec), TorchScaledGroupedMMExperts(spec, w))(x, logits)
    ref = reference_moe(x, logits, w, spec)
    err = rms_error(out, ref)
    print(f"fp8 channel cuda T={tokens}: RMS error {err:.2e}, normwise {normwise_error(out, ref):.2e}, "
          f"normwise vs the reference rounding GEMM1's output to bf16 {normwise_error(out, reference_moe(x, logits, w, spec, gemm1_dtype=torch.bfloat16)):.2e}")
    assert err <= FP8_REQUANT_RMS_TOL


def test_fp8_channel_cuda_negative_controls():
    spec = small_spec(dtype="bfloat16", quant=SCHEMES["fp8_channel_token"], num_experts=32, top_k=4, hidden=1024, intermediate=512)
    w, x, logits = _on_cuda(spec, 128)
    ref = reference_moe(x, logits, w, spec)
    good = FusedMoEKernel(NoDPEPModular(spec), TorchScaledGroupedMMExperts(spec, w))(x, logits)
    swapped = FusedMoEKernel(NoDPEPModular(spec), TorchScaledGroupedMMExperts(spec, with_swapped_gate_up(w, spec)))(x, logits)
    wrong_spec = replace(spec, routing=replace(spec.routing, method="default"))
    wrong_route = FusedMoEKernel(NoDPEPModular(wrong_spec), TorchScaledGroupedMMExperts(wrong_spec, w))(x, logits)
    print(f"fp8 channel RMS errors: right {rms_error(good, ref):.2e}, swapped gate/up {rms_error(swapped, ref):.2e}, wrong routing {rms_error(wrong_route, ref):.2e}")
    assert rms_error(good, ref) <= FP8_REQUANT_RMS_TOL
    assert rms_error(swapped, ref) > 10 * FP8_REQUANT_RMS_TOL
    assert rms_error(wrong_route, ref) > 10 * FP8_REQUANT_RMS_TOL


@pytest.mark.parametrize("scheme, backend, kernel", [("fp8_block", "triton_fp8_block", "triton_fp8_block"), ("fp8_channel_token", "torch_grouped_mm", "torch_grouped_mm_fp8_channel")])
def test_run_layer_on_cuda_with_our_fp8_kernels(scheme, backend, kernel):
    config = MoEConfig(
        num_experts=32, top_k=8, hidden_size=2048, intermediate_size=768, device=Device("cuda", capability=90),
        routing_method="renormalize", in_dtype="bfloat16", quant=SCHEMES[scheme], moe_backend=backend,
    )
    decision = Oracle.default(view="runtime").select(config)
    assert decision.kernel == kernel
    report = run_layer(config, decision, tokens=256, layers=2, device="cuda", progress=False)
    print(report.describe())
    # run_layer reports the normwise (max) error against the plain float32 reference. The block path
    # stays within BF16_REL_TOL; the per-channel path's requantized bf16 GEMM1 output costs up to
    # FP8_REQUANT_RMS_TOL in RMS (helpers.py), about twice that in max-norm, so here it only has to be
    # far below what a wrong kernel gives (>= 0.3, the negative controls).
    assert report.max_rel_error <= (BF16_REL_TOL if scheme == "fp8_block" else 0.1) and report.tflops > 0


def test_tma_a_and_16_warp_tiles_compiled_match_the_reference():
    """The compiled tile options of issue 23's fourth sweep, each pair overriding the tables, at Qwen3-30B-A3B sizes and
    2,048 tokens (128 rows per expert): fp8 GEMM1 with 16 warps, fp8 and bf16 GEMM2 with the activation rows through
    a tensor descriptor (tma_a); against the float32 reference."""
    from moe_oracle.kernels._triton_moe import BlockConfig, GemmTile
    from moe_oracle.kernels.path_tables import PathChoice

    F = BlockConfig
    spec = small_spec(num_experts=128, top_k=8, hidden=2048, intermediate=768, dtype="bfloat16", quant=SCHEMES["fp8_block"])
    w, x, logits = _on_cuda(spec, 2048)
    ref = reference_moe(x, logits, w, spec)
    experts = TritonFP8BlockExperts(spec, w)
    for pair in ((F(128, 8, 3, split=32), F(64, 4, 3, group_m=16, tma=True, persistent=2, flat=True, tma_a=True)),
                 (F(64, 8, 3), F(64, 4, 4, group_m=16, tma=True, tma_a=True)),
                 (F(128, 16, 3, split=64), F(128, 8, 3, block_n=256, tma=True, tma_a=True))):
        experts.configs = pair
        err = normwise_error(FusedMoEKernel(NoDPEPModular(spec), experts)(x, logits), ref)
        assert err <= BF16_REL_TOL, (pair, err)
    bspec = small_spec(num_experts=128, top_k=8, hidden=2048, intermediate=768, dtype="bfloat16")
    bw, bx, blogits = _on_cuda(bspec, 2048)
    bexperts = TorchGroupedMMExperts(bspec, bw)
    bexperts.force_path = PathChoice("triton", GemmTile(128, 128, 64, 8, 4, tma=True), GemmTile(128, 256, 64, 8, 4, 4, tma=True, tma_a=True))
    err = normwise_error(FusedMoEKernel(NoDPEPModular(bspec), bexperts)(bx, blogits), reference_moe(bx, blogits, bw, bspec))
    assert err <= BF16_REL_TOL, err
