"""Our Triton bf16 grouped GEMM (the decode path of ``TorchGroupedMMExperts``) and its path table.

CPU: the kernel under Triton's interpreter (conftest.py sets ``TRITON_INTERPRET=1`` without CUDA),
against float32 ``torch`` math on the same bf16 operands; the experts on the forced Triton path and
on the forced ``torch._grouped_mm`` path against the float32 reference (BF16_REL_TOL); negative
controls (swapped gate/up halves, a wrong expert's weights) exceed ten times that. GPU (``gpu``):
the compiled kernel at the benchmark's real layer shapes, every range of the shipped path table.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from helpers import BF16_REL_TOL, inputs, normwise_error, small_spec, with_swapped_gate_up
from moe_oracle.kernels.path_tables import PathChoice, fp8_table_path, load_paths, parse_paths
from moe_oracle.kernels.reference import reference_moe
from moe_oracle.prepare_finalize.no_dp_ep import NoDPEPModular
from moe_oracle.runtime.kernel import FusedMoEKernel
from moe_oracle.runtime.routing import route
from moe_oracle.runtime.weights import make_random_weights, shard_experts

triton = pytest.importorskip("triton")


@pytest.fixture(scope="module")
def interpreted():
    from moe_oracle.kernels import _triton_moe as module

    if not module.INTERPRET:
        pytest.skip("Triton was imported without TRITON_INTERPRET=1 (the GPU tests below run the compiled kernel)")
    try:
        module.route_layout(torch.tensor([[0, 1]]), 0, 2, x=torch.ones(1, 8, dtype=torch.bfloat16))
    except Exception as exc:  # noqa: BLE001 - any interpreter failure means: cannot test here
        pytest.skip(f"Triton {triton.__version__}'s interpreter does not run here: {type(exc).__name__}: {exc}")
    return module


@pytest.fixture()
def ops(interpreted, monkeypatch):
    import moe_oracle.kernels.torch_grouped_mm as tgm

    monkeypatch.setattr(tgm, "triton_ops", lambda device: interpreted)
    return interpreted


def _tile(m=16, n=32, k=32, **kw):  # noqa: ANN001, ANN003, ANN202
    from moe_oracle.kernels._triton_moe import GemmTile

    return GemmTile(m, n, k, **kw)


def _expected(x, w, counts, sorted_tok, act=None, bias=None):  # noqa: ANN001, ANN202
    """float32 math of the grouped GEMM on the same bf16 operands; rows in expert order."""
    from moe_oracle.runtime.activations import apply_activation

    out, start = [], 0
    for e, c in enumerate(counts.tolist()):
        rows = x[sorted_tok[start:start + c].long()] if sorted_tok is not None else x[start:start + c]
        h = rows.float() @ w[e].float().T
        if bias is not None:
            h = h + bias[e].float()
        out.append(h if act is None else apply_activation(h, act))
        start += c
    return torch.cat(out)


@pytest.mark.parametrize(
    "act, interleaved_bias, k, tile",
    [
        ("silu", False, 64, dict(m=16, n=32, k=32)),
        ("silu", False, 96, dict(m=32, n=16, k=64)),  # K not a multiple of BLOCK_K: masked K steps
        ("swigluoai", True, 64, dict(m=16, n=16, k=32)),  # interleaved gate/up rows, bias
        ("gelu_no_mul", True, 48, dict(m=16, n=32, k=16)),
        (None, False, 80, dict(m=16, n=64, k=32, group_m=4)),  # plain GEMM (GEMM2), width not a multiple of BLOCK_N
        # weights through a tensor descriptor: a box past K (zero-filled), past the last expert's rows, interleaved (pointers)
        ("silu", False, 96, dict(m=32, n=16, k=64, tma=True)),
        (None, False, 80, dict(m=16, n=64, k=32, tma=True)),
        ("swigluoai", True, 64, dict(m=16, n=16, k=32, tma=True)),
        # each expert's rows past its last whole 32-row tile in a second launch of 16-row tiles
        ("silu", False, 64, dict(m=32, n=32, k=32, split=16)),
        (None, False, 80, dict(m=32, n=64, k=32, split=16, tma=True)),
        # a persistent grid (programs loop over the tiles; the interpreter's grid is 4 per "SM"), the warp-specialized K loop
        ("silu", False, 96, dict(m=16, n=16, k=64, persistent=1, flat=True)),
        ("swigluoai", True, 64, dict(m=32, n=16, k=32, persistent=2, split=16, ws=True)),
        (None, False, 80, dict(m=16, n=64, k=32, persistent=1, tma=True, ws=True)),
    ],
)
def test_bf16_grouped_gemm_matches_float32_math(ops, act, interleaved_bias, k, tile):
    gen = torch.Generator().manual_seed(4)
    num_local, n_w = 5, 72 if act is None else 64
    counts = torch.tensor([7, 0, 19, 1, 33], dtype=torch.int32)  # an empty expert, one of a single row
    total = int(counts.sum())
    rows = total + 6  # rows past the groups: must stay untouched
    w = (torch.randn(num_local, n_w, k, generator=gen) / k**0.5).to(torch.bfloat16)
    bias = torch.randn(num_local, n_w, generator=gen) if interleaved_bias else None
    tokens = 23
    x = torch.randn(tokens, k, generator=gen).to(torch.bfloat16)
    sorted_tok = torch.randint(0, tokens, (rows,), generator=gen, dtype=torch.int32)
    from moe_oracle.kernels._triton_moe import bf16_grouped_gemm

    out = bf16_grouped_gemm(x, w, counts, rows, _tile(**tile), sorted_tok=sorted_tok, act=act, bias=bias)
    ref = _expected(x, w, counts, sorted_tok, act, bias)
    assert out.shape == (rows, ref.shape[1]) and out.dtype == torch.bfloat16
    assert normwise_error(out[:total], ref) <= 2.0**-8  # one bf16 rounding of float32 results
    # direct rows (GEMM2's input is GEMM1's output, already in expert order)
    xd = torch.randn(total, k, generator=gen).to(torch.bfloat16)
    direct = bf16_grouped_gemm(xd, w, counts, total, _tile(**tile), act=act, bias=bias)
    assert normwise_error(direct, _expected(xd, w, counts, None, act, bias)) <= 2.0**-8


@pytest.mark.parametrize(
    "act, k, tile",
    [
        (None, 80, dict(m=16, n=64, k=32, tma_a=True)),  # boxes past an expert's rows, past the last row, past K
        (None, 64, dict(m=32, n=64, k=32, tma=True, tma_a=True, persistent=1, flat=True)),
        ("silu", 96, dict(m=32, n=16, k=64, tma_a=True)),
    ],
)
def test_bf16_grouped_gemm_reads_rows_in_order_through_a_descriptor(ops, act, k, tile):
    """tma_a: GEMM2's rows (in expert order) through a tensor descriptor give the same math; refused with sorted_tok."""
    gen = torch.Generator().manual_seed(9)
    num_local, n_w = 5, 72 if act is None else 64
    counts = torch.tensor([7, 0, 19, 1, 33], dtype=torch.int32)
    total = int(counts.sum())
    w = (torch.randn(num_local, n_w, k, generator=gen) / k**0.5).to(torch.bfloat16)
    xd = torch.randn(total + 6, k, generator=gen).to(torch.bfloat16)  # rows past the groups feed no stored output
    from moe_oracle.kernels._triton_moe import bf16_grouped_gemm

    out = bf16_grouped_gemm(xd, w, counts, total + 6, _tile(**tile), act=act)
    assert normwise_error(out[:total], _expected(xd[:total], w, counts, None, act)) <= 2.0**-8
    with pytest.raises(ValueError, match="tma_a True is not allowed with sorted_tok"):
        bf16_grouped_gemm(xd, w, counts, total, _tile(**tile), sorted_tok=torch.zeros(total, dtype=torch.int32), act=act)


def test_bf16_grouped_gemm_leaves_rows_past_the_groups_and_refuses_other_dtypes(ops):
    from moe_oracle.kernels._triton_moe import bf16_grouped_gemm

    w = torch.randn(2, 32, 32).to(torch.bfloat16)
    counts = torch.tensor([3, 2], dtype=torch.int32)
    x = torch.randn(5, 32).to(torch.bfloat16)
    out = bf16_grouped_gemm(x, w, counts, 5, _tile())
    assert normwise_error(out, _expected(x, w, counts, None)) <= 2.0**-8
    with pytest.raises(ValueError, match="bf16 a and w"):
        bf16_grouped_gemm(x.float(), w, counts, 5, _tile())
    with pytest.raises(ValueError, match="K=32"):
        bf16_grouped_gemm(torch.randn(5, 16).to(torch.bfloat16), w, counts, 5, _tile())


def _experts(spec, w, path):  # noqa: ANN001, ANN202
    from moe_oracle.kernels.torch_grouped_mm import TorchGroupedMMExperts

    experts = TorchGroupedMMExperts(spec, w)
    experts.force_path = PathChoice("triton", _tile(16, 32, 32), _tile(16, 32, 32)) if path == "triton" else PathChoice("torch_grouped_mm")
    return experts


@pytest.mark.parametrize("path", ["triton", "torch_grouped_mm"])
@pytest.mark.parametrize("activation, bias", [("silu", False), ("swigluoai", True), ("relu2_no_mul", False)])
def test_both_paths_match_the_reference(ops, path, activation, bias):
    if path == "torch_grouped_mm" and not hasattr(torch, "_grouped_mm"):
        pytest.skip("torch without _grouped_mm")
    spec = small_spec(num_experts=8, top_k=2, hidden=64, intermediate=32, activation=activation, dtype="bfloat16", has_bias=bias)
    w = make_random_weights(spec, seed=1)
    x, logits = inputs(spec, 29, seed=2)
    try:
        out = FusedMoEKernel(NoDPEPModular(spec), _experts(spec, w, path))(x, logits)
    except (RuntimeError, NotImplementedError) as exc:
        if path == "torch_grouped_mm":
            pytest.skip(f"torch._grouped_mm does not run on CPU here: {exc}")
        raise
    assert normwise_error(out, reference_moe(x, logits, w, spec)) <= BF16_REL_TOL


def test_triton_path_negative_controls_and_expert_parallel_ranks(ops):
    spec = small_spec(num_experts=8, top_k=4, hidden=64, intermediate=32, dtype="bfloat16")
    w = make_random_weights(spec, seed=3)
    x, logits = inputs(spec, 21, seed=4)
    ref = reference_moe(x, logits, w, spec)
    swapped = FusedMoEKernel(NoDPEPModular(spec), _experts(spec, with_swapped_gate_up(w, spec), "triton"))(x, logits)
    assert normwise_error(swapped, ref) > 10 * BF16_REL_TOL
    rolled = replace(w, w2=torch.roll(w.w2, 1, dims=0))  # each expert's down projection taken from its neighbour
    assert normwise_error(FusedMoEKernel(NoDPEPModular(spec), _experts(spec, rolled, "triton"))(x, logits), ref) > 10 * BF16_REL_TOL
    topk_w, topk_ids = route(logits, spec.routing)
    parts = [_experts(spec.for_rank(r, 2), shard_experts(w, spec.for_rank(r, 2)), "triton").apply(x, topk_w, topk_ids).float() for r in range(2)]
    assert normwise_error(parts[0] + parts[1], ref) <= BF16_REL_TOL
    assert normwise_error(parts[0], ref) > 10 * BF16_REL_TOL


# ----------------------------------------------------------------------------- the path table


def _doc(**over):  # noqa: ANN003, ANN202
    tile = {"m": 16, "n": 64, "k": 128}
    doc = {
        "kind": "runtime_paths",
        "experts": "torch_grouped_mm",
        "shapes": [{"name": "mixtral", "num_experts": 8, "hidden_size": 4096, "intermediate_size": 14336, "top_k": 2,
                    "ranges": [{"max_tokens": 256, "path": "triton", "gemm1": tile, "gemm2": tile}, {"path": "torch_grouped_mm"}]}],
        "default": [{"max_rows_per_expert": 8, "path": "triton", "gemm1": tile, "gemm2": dict(tile, m=32)}, {"path": "torch_grouped_mm"}],
    }
    doc.update(over)
    return doc


def test_path_table_chooses_by_tokens_for_tuned_shapes_and_by_rows_per_expert_otherwise():
    table = parse_paths(_doc(), "t.yaml")
    assert table.choose(8, 4096, 14336, 2, 256).path == "triton"
    assert table.choose(8, 4096, 14336, 2, 257).path == "torch_grouped_mm"
    assert table.shape_name(8, 4096, 14336, 2) == "mixtral" and table.shape_name(8, 4096, 1024, 2) is None
    # another layer: 32 tokens x top-2 over 8 experts = 8 rows per expert -> triton; 33 tokens -> torch
    assert table.choose(8, 4096, 1024, 2, 32).gemm2.block_m == 32
    assert table.choose(8, 4096, 1024, 2, 33).path == "torch_grouped_mm"


@pytest.mark.parametrize(
    "over, message",
    [
        (dict(kind="experts"), "kind = 'experts' is not allowed; runtime_paths"),
        (dict(extra=1), "key = 'extra'"),
        (dict(default=[{"path": "cutlass"}]), "path = 'cutlass' is not allowed; one of triton, torch_grouped_mm"),
        (dict(default=[{"max_rows_per_expert": 8, "path": "torch_grouped_mm"}]), "left out on the last range"),
        (dict(default=[{"path": "torch_grouped_mm"}, {"path": "torch_grouped_mm"}]), "given on every range but the last"),
        (dict(default=[{"path": "triton", "gemm1": {"m": 16, "n": 48, "k": 64}, "gemm2": {"m": 16, "n": 64, "k": 64}}]), "block_n: 48 is not allowed"),
        (dict(default=[{"path": "triton", "gemm1": {"m": 16, "n": 64}, "gemm2": {"m": 16, "n": 64, "k": 64}}]), "gemm1"),
        (dict(default=[{"path": "torch_grouped_mm", "gemm1": {"m": 16, "n": 64, "k": 64}}]), "only on path triton"),
        (dict(default=[{"max_rows_per_expert": 8, "path": "torch_grouped_mm"}, {"max_rows_per_expert": 4, "path": "torch_grouped_mm"}, {"path": "torch_grouped_mm"}]), "larger than the previous"),
    ],
)
def test_path_table_errors_name_the_field_the_value_and_what_is_allowed(over, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("[", r"\[")):
        parse_paths(_doc(**over), "t.yaml")


def _fp8_doc(**over):  # noqa: ANN003, ANN202
    doc = {
        "kind": "runtime_paths",
        "experts": "triton_fp8_block",
        "shapes": [{"name": "ds", "num_experts": 32, "hidden_size": 7168, "intermediate_size": 2048, "top_k": 8,
                    "ranges": [{"max_tokens": 64, "path": "triton", "gemm1": {"m": 16, "n": 128}, "gemm2": {"m": 16, "n": 128}},
                               {"path": "triton", "gemm1": {"m": 64, "n": 128, "warps": 8, "stages": 3, "tma": True},
                                "gemm2": {"m": 64, "n": 256, "warps": 8, "stages": 4, "group_m": 16, "tma": True}}]}],
    }
    doc.update(over)
    return doc


def test_fp8_tile_table_gives_block_configs_and_leaves_other_layers_to_the_kernel():
    from moe_oracle.kernels._triton_moe import BlockConfig

    table = parse_paths(_fp8_doc(), "f.yaml")
    small, large = table.choose(32, 7168, 2048, 8, 64), table.choose(32, 7168, 2048, 8, 65)
    assert small.gemm1 == BlockConfig(16, 4, 3) and small.path == "triton"
    assert large.gemm1 == BlockConfig(64, 8, 3, tma=True) and large.gemm2 == BlockConfig(64, 8, 4, group_m=16, block_n=256, tma=True)
    assert table.choose(32, 7168, 1024, 8, 64) is None  # no default ranges: the kernel's block_config
    assert load_paths(str(fp8_table_path())).experts == "triton_fp8_block"


@pytest.mark.parametrize(
    "gemm2, message",
    [
        ({"m": 64, "n": 128, "k": 64}, "k is 128"),
        ({"m": 64, "n": 192}, "block_n: 192 is not allowed; 128 or 256"),
        ({"m": 64, "n": 128, "tma": "yes"}, "tma: 'yes' is not allowed; true or false"),
        ({"m": 48, "n": 128}, "block_m: 48 is not allowed"),
        ({"m": 64, "n": 128, "split": 64}, "split: 64 is not allowed; 0 or a power of two >= 16 below block_m"),
        ({"m": 64, "n": 128, "split": 24}, "split: 24 is not allowed"),
        ({"m": 64, "n": 128, "persistent": 9}, "persistent: 9 is not allowed; 0"),
        ({"m": 64, "n": 128, "ws": 1}, "ws: 1 is not allowed; true or false"),
        ({"m": 64, "n": 128, "persistent": 1, "split": 32, "flat": True}, "flat: True is not allowed with persistent=1, split=32"),
        ({"m": 64, "n": 128, "split": 32, "tma_a": True}, "tma_a: True is not allowed with split=32"),
        ({"m": 64, "n": 128, "tma_a": "yes"}, "tma_a: 'yes' is not allowed; true or false"),
        ({"m": 64, "n": 128, "stages": "3"}, "num_stages: '3' is not allowed; 1 to 8"),
        ({"m": 64, "n": 128, "group_m": True}, "group_m: True is not allowed; 1 to 256"),
        ({"m": 64, "n": 128, "warps": 3}, "num_warps: 3 is not allowed; one of 1, 2, 4, 8, 16"),
        ({"m": 64, "n": 128, "warps": True}, "num_warps: True is not allowed; one of 1, 2, 4, 8, 16"),
    ],
)
def test_fp8_tile_table_errors_name_the_field_the_value_and_what_is_allowed(gemm2, message):
    doc = _fp8_doc()
    doc["shapes"][0]["ranges"][1]["gemm2"] = gemm2
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        parse_paths(doc, "f.yaml")
    gemm1_tma_a = _fp8_doc()
    gemm1_tma_a["shapes"][0]["ranges"][1]["gemm1"] = {"m": 64, "n": 128, "tma_a": True}
    with pytest.raises(ValueError, match="gemm1.tma_a = True is not allowed; false or absent"):
        parse_paths(gemm1_tma_a, "f.yaml")
    with pytest.raises(ValueError, match="path = 'torch_grouped_mm' is not allowed; one of triton"):
        parse_paths(_fp8_doc(default=[{"path": "torch_grouped_mm"}]), "f.yaml")
    with pytest.raises(ValueError, match="experts = 'cutlass' is not allowed"):
        parse_paths(_fp8_doc(experts="cutlass"), "f.yaml")


def test_path_table_refuses_a_shape_twice_and_a_bad_size():
    doc = _doc()
    doc["shapes"] = doc["shapes"] * 2
    with pytest.raises(ValueError, match="each .* once"):
        parse_paths(doc, "t.yaml")
    doc = _doc()
    doc["shapes"][0]["top_k"] = 0
    with pytest.raises(ValueError, match="top_k = 0 is not allowed; a positive integer"):
        parse_paths(doc, "t.yaml")


def test_shipped_path_table_loads_and_covers_every_token_count():
    table = load_paths()
    for shape in table.shapes:
        e, h, i, k = shape.key
        for tokens in (1, 16, 100, 2048, 10**6):
            assert table.choose(e, h, i, k, tokens).path in ("triton", "torch_grouped_mm")
    assert table.choose(3, 64, 32, 1, 10**6).path in ("triton", "torch_grouped_mm")


# ----------------------------------------------------------------------------- GPU: compiled, real shapes


@pytest.mark.gpu
@pytest.mark.parametrize("shape_index", range(8))
def test_every_range_of_the_shipped_table_runs_right_on_gpu(shape_index):
    """Each tuned shape of the table at its real sizes, one token count inside each of its ranges:
    the path the table names and the other path, both against the float32 reference."""
    from moe_oracle.kernels.torch_grouped_mm import TorchGroupedMMExperts

    table = load_paths()
    if shape_index >= len(table.shapes):
        pytest.skip(f"the table tunes {len(table.shapes)} shapes")
    shape = table.shapes[shape_index]
    e, h, i, k = shape.key
    spec = small_spec(num_experts=e, top_k=k, hidden=h, intermediate=i, dtype="bfloat16")
    w = make_random_weights(spec, seed=5, device="cuda", generator_device="cuda")
    experts = TorchGroupedMMExperts(spec, w)
    counts = sorted({16, 4096} | {min(int(r.limit), 4096) for r in shape.ranges if r.limit})  # one count inside each range
    for tokens in counts:
        x, logits = inputs(spec, tokens, seed=tokens)
        x, logits = x.cuda(), logits.cuda()
        ref = reference_moe(x, logits, w, spec)
        for choice in (table.choose(e, h, i, k, tokens), PathChoice("torch_grouped_mm")):
            experts.force_path = choice
            out = FusedMoEKernel(NoDPEPModular(spec), experts)(x, logits)
            assert torch.isfinite(out).all()
            err = normwise_error(out, ref)
            assert err <= BF16_REL_TOL, (shape.name, tokens, choice, err)
    experts.force_path = None


@pytest.mark.gpu
def test_compiled_gemm_writes_only_real_rows_on_gpu():
    from moe_oracle.kernels._triton_moe import bf16_grouped_gemm

    gen = torch.Generator(device="cuda").manual_seed(1)
    w = (torch.randn(6, 256, 512, device="cuda", generator=gen) / 512**0.5).to(torch.bfloat16)
    counts = torch.tensor([0, 129, 1, 64, 0, 300], dtype=torch.int32, device="cuda")
    total = int(counts.sum())
    x = torch.randn(1000, 512, device="cuda", generator=gen).to(torch.bfloat16)
    tok = torch.randint(0, 1000, (total + 40,), device="cuda", generator=gen, dtype=torch.int32)
    for tile in (_tile(16, 64, 128, num_stages=4), _tile(64, 128, 64, num_warps=8, group_m=8), _tile(128, 64, 64, num_warps=8)):
        out = bf16_grouped_gemm(x, w, counts, total + 40, tile, sorted_tok=tok, act="silu")
        ref = _expected(x, w, counts.cpu(), tok, "silu")
        assert normwise_error(out[:total], ref) <= 2.0**-8, tile
