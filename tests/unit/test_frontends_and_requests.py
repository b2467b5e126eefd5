"""Quantization front ends, per-family request maps and the other vLLM selection mechanics the
unquantized and FP8 tables use (rules/frontends.yaml, rules/aliases.yaml ``requests`` and
``engine_names``, shortcuts without ``otherwise``, ``before:`` adjustments, constraints bound to an
interface, the platform answer). Each expectation cites the vLLM release code it follows."""

from __future__ import annotations

import pytest

from moe_oracle import Device, Environment, MoEConfig, ParallelConfig
from moe_oracle.core.loading import load_catalog
from moe_oracle.core.engine import evaluate
from moe_oracle.core.errors import ConfigError
from moe_oracle.core.quant import QuantScheme, scheme_by_name

H200 = Device("cuda", capability=90)
B200 = Device("cuda", capability=100)
FP8_BLOCK = scheme_by_name("fp8_block")


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def env(release: str = "0.33.0", *extra: str, variables: tuple[tuple[str, str], ...] = ()) -> Environment:
    return Environment.declared([f"vllm=={release}", *extra], env=dict(variables))


def qwen3_30b(**kw) -> MoEConfig:
    """Qwen3-30B-A3B shapes: 128 experts, top-8, hidden 2048, intermediate 768."""
    base = dict(num_experts=128, top_k=8, hidden_size=2048, intermediate_size=768, device=H200, quant=FP8_BLOCK, quant_method="fp8", weight_block_size=(128, 128))
    base.update(kw)
    return MoEConfig(**base)


# ------------------------------------------------------------------ FP8 weight block (rules/frontends.yaml)


@pytest.mark.parametrize("release", ["0.29.0", "0.30.0", "0.31.0", "0.33.0"])
def test_fp8_block_is_refined_to_the_tp_shard(catalog, release):
    # TP8: shard 96; gcd(128, 128, 96, 2048) = 32 (vLLM 0.29.0+ P/oracle/fp8.py refine_fp8_moe_block_shape).
    d = evaluate(catalog, qwen3_30b(parallel=ParallelConfig(tp_size=8)), env(release))
    v = d.normalized.values
    assert (v["weight_block"], v["weight_block_aligned"], v["intermediate_size_per_partition"]) == ("32x32", True, 96)
    # Only TritonExperts takes a block other than 128x128.
    assert d.kernel == "triton"
    assert any(f.rule == "constraint.fp8_block_key" for f in d.candidate("deep_gemm").failures)


def test_before_refinement_the_shard_is_refused(catalog):
    # A release before 0.29.0 has no refinement: create_weights refuses the shard.
    d = evaluate(catalog, qwen3_30b(parallel=ParallelConfig(tp_size=8)), env("0.28.0"))
    assert d.normalized.values["weight_block"] == "128x128" and d.kernel is None
    assert all(any(f.rule == "constraint.fp8_block_tp_alignment" for f in c.failures) for c in d.candidates)


def test_compressed_tensors_keeps_the_128_key_and_checks_the_shard(catalog):
    # compressed-tensors passes kFp8Static128BlockSym whatever the block, and create_weights
    # validates the shard against the checkpoint's block.
    d = evaluate(catalog, qwen3_30b(quant_method="compressed-tensors", weight_block_size=(64, 64), parallel=ParallelConfig(tp_size=4)), env())
    v = d.normalized.values
    assert v["weight_block"] == "128x128" and v["weight_block_aligned"] is True  # shard 192 % 64 == 0
    bad = evaluate(catalog, qwen3_30b(quant_method="compressed-tensors", parallel=ParallelConfig(tp_size=8)), env())
    assert bad.kernel is None and bad.normalized.values["weight_block_aligned"] is False


def test_explicit_backend_pads_the_shard_from_0_31(catalog):
    # TP4: shard 192, refined block 64. An explicit deep_gemm cannot take it: 0.31.0+ pads the
    # shard to 256 and keeps 128x128 blocks (resolve_fp8_moe_weight_block_shape); 0.30.0 refines.
    cfg = qwen3_30b(parallel=ParallelConfig(tp_size=4), moe_backend="deep_gemm", device=B200)
    new = evaluate(catalog, cfg, env("0.33.0", "deep-gemm==2.0"))
    assert (new.normalized.values["weight_block"], new.normalized.values["intermediate_size_per_partition"]) == ("128x128", 256)
    assert new.kernel == "deep_gemm"
    old = evaluate(catalog, cfg, env("0.30.0", "deep-gemm==2.0"))
    assert old.normalized.values["weight_block"] == "64x64" and old.kernel is None
    # Triton takes the refined block: no padding for an explicit triton.
    tri = evaluate(catalog, qwen3_30b(parallel=ParallelConfig(tp_size=4), moe_backend="triton"), env("0.33.0"))
    assert (tri.normalized.values["weight_block"], tri.normalized.values["intermediate_size_per_partition"]) == ("64x64", 192)


def test_padding_needs_pure_tp_and_no_bias(catalog):
    cfg = qwen3_30b(parallel=ParallelConfig(tp_size=4), moe_backend="deep_gemm", device=B200, has_bias=True)
    d = evaluate(catalog, cfg, env("0.33.0", "deep-gemm==2.0"))
    assert d.normalized.values["weight_block_pad_refused"] is True and d.kernel is None
    assert all(any(f.rule == "constraint.fp8_block_tp_padding" for f in c.failures) for c in d.candidates)


def test_an_env_forced_backend_does_not_pad(catalog):
    # The front end reads KernelConfig.moe_backend, not the DeepGEMM variables (Q/fp8.py).
    cfg = qwen3_30b(parallel=ParallelConfig(tp_size=4), device=B200)
    d = evaluate(catalog, cfg, env("0.33.0", "deep-gemm==2.0", variables=(("VLLM_USE_DEEP_GEMM", "1"),)))
    assert d.requested_by == "override.deep_gemm_env"
    assert d.normalized.values["weight_block"] == "64x64" and d.kernel is None


# ------------------------------------------------------------------ key rewrites


def test_compressed_tensors_dynamic_tensor_input_becomes_128_groups(catalog):
    cfg = qwen3_30b(quant=QuantScheme("fp8_static_tensor", "fp8_dynamic_tensor"), quant_method="compressed-tensors", weight_block_size=None)
    d = evaluate(catalog, cfg, env())
    assert d.normalized.values["activation_quant"] == "fp8_dynamic_group128"
    assert any("frontend.compressed_tensors.dynamic_tensor_input" in n for n in d.notes)


@pytest.mark.parametrize(("release", "key"), [("0.33.0", "fp8_dynamic_token"), ("0.32.0", "fp8_dynamic_tensor")])
def test_batch_invariance_asks_fp8_for_per_token_activations_from_0_33(catalog, release, key):
    cfg = qwen3_30b(quant=QuantScheme("fp8_static_tensor", "fp8_dynamic_tensor"), weight_block_size=None)
    d = evaluate(catalog, cfg, env(release, variables=(("VLLM_BATCH_INVARIANT", "1"),)))
    assert d.normalized.values["activation_quant"] == key


def test_block_rules_name_exactly_the_backends_that_take_refined_blocks(catalog):
    # Cross-check of two tables: the pad rule's refinable backends are the ones
    # constraint.fp8_block_key spares (besides the platform answer).
    compiled = catalog.source
    pad = next(r for r in compiled.block_rules if r.pad)
    key = next(g for g in compiled.constraints if g.check.rule == "constraint.fp8_block_key")
    assert set(pad.refinable) == set(key.except_backends) - {"platform"}


# ------------------------------------------------------------------ moe_backend, per family


def test_marlin_on_an_unquantized_layer_is_auto_from_0_33(catalog):
    unq = qwen3_30b(quant=scheme_by_name("unquantized"), quant_method=None, weight_block_size=None, moe_backend="marlin")
    d = evaluate(catalog, unq, env("0.33.0"))
    assert d.requested is None and d.kernel == "triton" and any("read as auto" in n for n in d.notes)
    old = evaluate(catalog, unq, env("0.32.0"))
    assert old.kernel is None and any("not a backend this layer's oracle accepts" in n for n in old.notes)


def test_names_valid_for_one_family_only(catalog):
    # batched_triton is an unquantized name, not an FP8 one (P/oracle/fp8.py map_fp8_backend).
    d = evaluate(catalog, qwen3_30b(moe_backend="batched_triton"), env())
    assert d.kernel is None
    # cutlass is an FP8 name (vLLM CUTLASS), not an unquantized one.
    unq = qwen3_30b(quant=scheme_by_name("unquantized"), quant_method=None, weight_block_size=None, moe_backend="cutlass")
    assert evaluate(catalog, unq, env()).kernel is None


def test_batched_triton_request_forces_the_batched_format(catalog):
    # vLLM peeks the batched format for moe_backend=batched_triton even without a batched all2all
    # (P/oracle/unquantized.py) and selects BatchedTritonExperts; the only batched prepare/finalize
    # without an all2all is XPU's local one (P/all2all_utils.py), so on CUDA building the kernel
    # raises: the engine selects it, then refuses the layer (tests/unit/test_batched_request_refusal.py).
    unq = qwen3_30b(quant=scheme_by_name("unquantized"), quant_method=None, weight_block_size=None, moe_backend="batched_triton")
    d = evaluate(catalog, unq, env())
    assert d.kernel is None and d.refused_kernel == "triton_batched" and d.normalized.values["activation_format"] == "batched_experts"
    assert not [w for w in d.warnings if w.code == "unchecked"]
    assert evaluate(catalog, unq, env(), policy="safe").kernel is None
    from dataclasses import replace

    xpu = evaluate(catalog, replace(unq, device=Device("xpu", arch="xe2")), env(), policy="safe")
    assert xpu.kernel == "triton_batched" and xpu.prepare_finalize == "batched_local_xpu"


def test_names_the_release_does_not_accept_are_refused(catalog):
    # KernelConfig.moe_backend is a Literal: xpu is a backend of ours but not a vLLM name.
    with pytest.raises(ConfigError, match="KernelConfig.moe_backend"):
        evaluate(catalog, qwen3_30b(moe_backend="xpu"), env())
    # rdna3 is a vLLM 0.30.0+ name: 0.29.0 refuses it.
    with pytest.raises(ConfigError):
        evaluate(catalog, qwen3_30b(moe_backend="rdna3"), env("0.29.0"))


# ------------------------------------------------------------------ early returns and gates


def test_moonep_is_forced_and_raises_when_it_cannot_serve(catalog):
    par = ParallelConfig(dp_size=4, use_ep=True, all2all_backend="moonep")
    unq = dict(quant=scheme_by_name("unquantized"), quant_method=None, weight_block_size=None, parallel=par)
    ok = evaluate(catalog, qwen3_30b(**unq, moe_backend="triton"), env())
    assert ok.kernel == "moonep_experts" and ok.shortcut == "shortcut.moonep"
    bad = evaluate(catalog, qwen3_30b(**unq, activation="gelu"), env())
    assert bad.kernel is None and bad.shortcut == "shortcut.moonep"
    # Before 0.31.0 vLLM has no moonep all2all: the flag is refused.
    assert evaluate(catalog, qwen3_30b(**unq), env("0.30.0")).kernel is None


def test_humming_moves_ahead_of_marlin_on_sm90_from_0_32(catalog):
    cfg = qwen3_30b(quant=QuantScheme("fp8_static_tensor", "fp8_dynamic_tensor"), weight_block_size=None)
    new = evaluate(catalog, cfg, env("0.32.0")).backend_order
    old = evaluate(catalog, cfg, env("0.31.0")).backend_order
    assert new.index("humming") == new.index("marlin") - 1
    assert old.index("humming") > old.index("marlin")


def test_hash_routing_and_decomposed_routes_gate_monolithic_kernels(catalog):
    unq = dict(quant=scheme_by_name("unquantized"), quant_method=None, weight_block_size=None, device=B200, routing_method="renormalize")
    plain = evaluate(catalog, qwen3_30b(**unq), env("0.33.0", "flashinfer-python"))
    assert plain.kernel == "flashinfer_trtllm_bf16_monolithic"
    hashed = evaluate(catalog, qwen3_30b(**unq, has_hash_routing=True), env("0.33.0", "flashinfer-python"))
    assert hashed.kernel != "flashinfer_trtllm_bf16_monolithic"
    assert any(f.rule == "constraint.hash_routing_monolithic.opt_in" for f in hashed.candidate("flashinfer_trtllm_bf16_monolithic").failures)
    assert evaluate(catalog, qwen3_30b(**unq, has_hash_routing=True), env("0.30.0", "flashinfer-python")).kernel == "flashinfer_trtllm_bf16_monolithic"
    decomposed = evaluate(catalog, qwen3_30b(**unq, require_decomposed=True), env("0.33.0", "flashinfer-python"))
    assert decomposed.kernel != "flashinfer_trtllm_bf16_monolithic"


def test_mori_needs_aiter_fused_moe(catalog):
    par = ParallelConfig(dp_size=4, use_ep=True, all2all_backend="mori_high_throughput")
    cfg = qwen3_30b(quant=scheme_by_name("unquantized"), quant_method=None, weight_block_size=None, parallel=par, device=Device("rocm", arch="gfx942"))
    on = (("VLLM_ROCM_USE_AITER", "1"),)
    assert evaluate(catalog, cfg, env("0.33.0", "aiter", "mori", variables=on)).kernel is not None
    d = evaluate(catalog, cfg, Environment.declared(["vllm==0.33.0", "mori"], absent=["aiter"], env=dict(on)))
    assert d.kernel is None and any(f.rule == "constraint.mori_needs_aiter.package" for f in d.candidates[0].failures)


def test_the_platform_runs_moe_itself(catalog):
    tpu = evaluate(catalog, qwen3_30b(quant=scheme_by_name("unquantized"), quant_method=None, weight_block_size=None, device=Device("tpu"), moe_backend="triton"), env())
    assert tpu.kernel == "platform_moe" and tpu.shortcut == "shortcut.platform_moe"
    # The FP8 oracle returns NONE off CUDA and ROCm when no kernel of its list fits, and the
    # in-tree FP8 method then raises when it converts its weights at load ...
    cpu = evaluate(catalog, qwen3_30b(device=Device("cpu", arch="aarch64")), env())
    assert cpu.kernel is None and cpu.refused is not None and cpu.rows[cpu.refused].entry.id == "platform_moe"
    assert "constraint.fp8_no_backend_at_load" in {c.rule for c in cpu.rows[cpu.refused].failures}
    # ... but raises for an explicit request, and on CUDA.
    assert evaluate(catalog, qwen3_30b(device=Device("cpu", arch="aarch64"), moe_backend="triton"), env()).kernel is None
    assert evaluate(catalog, qwen3_30b(device=Device("cuda", capability=75), moe_backend="deep_gemm"), env()).kernel is None


def test_request_name_is_a_name_the_engine_accepts(catalog):
    from moe_oracle.core.requests import request_name

    assert request_name(catalog, "vllm_cutlass") == "cutlass"
    assert request_name(catalog, "batched_deep_gemm") == "deep_gemm"
    # vLLM reaches its CPU and XPU kernels only through the priority lists.
    assert request_name(catalog, "cpu") == "auto" and request_name(catalog, "xpu") == "auto"


def test_the_doors_accept_every_name_a_modelled_release_accepts(catalog):
    # vLLM 0.33.0 KernelConfig.moe_backend accepts deep_gemm_mega_moe and flydsl, which no oracle
    # maps for these layers: the name requests nothing (vLLM raises at selection), it is not bad input.
    from moe_oracle.core.requests import resolve_request
    from moe_oracle.core.errors import ConfigError

    assert resolve_request(catalog, "deep_gemm_mega_moe") == () and resolve_request(catalog, "flydsl") == ()
    # 0.29.0's name for the CuTe-DSL MoE-EP backend is still a name (0.32.0 renamed it).
    assert resolve_request(catalog, "flashinfer_moe_ep_mega_cutedsl") == ()
    with pytest.raises(ConfigError, match="unknown MoE backend"):
        resolve_request(catalog, "no_such_backend")
    d = evaluate(catalog, qwen3_30b(device=Device("cuda", capability=90), moe_backend="flydsl"), env())
    assert d.kernel is None and d.requested == ()
