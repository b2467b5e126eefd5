"""Faithful by default, safe on request: known-bad rules and shortcuts, on the shipped tables."""

from __future__ import annotations

import pytest

from moe_oracle import ConfigError, Device, Environment, MoEConfig, Oracle, ParallelConfig
from moe_oracle.cli import build_parser, main
from moe_oracle.core.engine import evaluate
from moe_oracle.core.quant import scheme_by_name
from moe_oracle.core.tables import load_schemas
from moe_oracle.core.vocab import ReasonCode

B200 = Device("cuda", capability=100)
SM120 = Device("cuda", capability=120)
CPU = Device("cpu", arch="x86_64")


def layer(**kw) -> MoEConfig:
    base = dict(num_experts=128, top_k=8, hidden_size=2048, intermediate_size=1024, device=B200)
    base.update(kw)
    return MoEConfig(**base)


def known_bad(decision) -> list[tuple[str, str | None]]:
    return [(w.rule, w.safe_alternative) for w in decision.warnings if w.code == "known_bad"]


def valid(decision) -> None:
    assert list(load_schemas().for_kind("decision").iter_errors(decision.to_dict())) == []


# ------------------------------------------------------------------ known-bad rules


def test_faithful_selects_a_known_bad_kernel_with_the_safe_alternative_and_safe_rejects_it(catalog):
    # Qwen3-30B-A3B at TP8: 768 / 8 = 96 per partition, not a multiple of 128: FlashInfer CUTLASS hangs.
    config = layer(intermediate_size=768, device=Device("cuda", capability=120), parallel=ParallelConfig(tp_size=8))
    faithful = evaluate(catalog, config, Environment())
    assert faithful.kernel == "flashinfer_cutlass" and faithful.policy == "faithful"
    assert known_bad(faithful) == [("known_bad.flashinfer_cutlass_unquantized_unaligned_hang", "triton")]
    warning = next(w for w in faithful.warnings if w.code != "engine_release")  # 0.34.0 (assumed) adds its unverified warning
    assert "#51492" in warning.reference and "(hang)" in warning.message and "the safe policy selects triton" in warning.message
    safe = evaluate(catalog, config, Environment(), policy="safe")
    assert safe.kernel == "triton" and [w for w in safe.warnings if w.code != "engine_release"] == [] and safe.policy == "safe"
    assert [f.code for f in safe.candidate("flashinfer_cutlass").failures] == [ReasonCode.KNOWN_BAD]
    valid(faithful), valid(safe)


def test_upstream_demotions_are_adjustments_and_their_bugs_are_known_bad(catalog):
    # More than 992 experts rules Triton out on SM 12.0: only FlashInfer CUTLASS remains, demoted or not.
    for activation, dp, rule in (("silu", 2, "known_bad.flashinfer_cutlass_bf16_dp"), ("swigluoai", 1, "known_bad.flashinfer_cutlass_unquantized_swigluoai")):
        config = layer(num_experts=1024, device=SM120, activation=activation, parallel=ParallelConfig(dp_size=dp))
        faithful = evaluate(catalog, config, Environment())
        assert faithful.kernel == "flashinfer_cutlass", activation  # vLLM moves it back, and it still wins
        order = list(faithful.backend_order)
        assert order.index("flashinfer_cutlass") > order.index("triton") and any(d.backend == "flashinfer_cutlass" and d.position == "back" for d in faithful.demotions)
        assert known_bad(faithful) == [(rule, None)]  # nothing is eligible under the safe policy
        safe = evaluate(catalog, config, Environment(), policy="safe")
        assert safe.kernel is None and rule in {f.rule for f in safe.candidate("flashinfer_cutlass").failures}


def test_a_known_bad_rule_with_a_flashinfer_range_follows_the_release_pin(catalog):
    config = layer(quant=scheme_by_name("fp8_block"), quant_method="fp8", routing_method="renormalize")
    old_fi = evaluate(catalog, config, Environment.declared(["flashinfer-python==0.6.5"]))
    assert old_fi.kernel == "flashinfer_trtllm_fp8_monolithic"
    assert known_bad(old_fi) == [("known_bad.trtllm_fp8_monolithic_renormalize", "flashinfer_trtllm_fp8")]
    pinned = evaluate(catalog, config, Environment.declared(["vllm==0.29.0"]))  # pins flashinfer-python 0.6.18 >= 0.6.7
    assert pinned.kernel == "flashinfer_trtllm_fp8_monolithic" and known_bad(pinned) == []
    assert evaluate(catalog, config, Environment.declared(["flashinfer-python==0.6.5"]), policy="safe").kernel == "flashinfer_trtllm_fp8"


def test_the_shipped_known_bad_entries_name_real_kernels_and_references(catalog):
    ids = {kb.id for kb in catalog.known_bad}
    assert {
        "known_bad.flashinfer_cutlass_bf16_dp", "known_bad.flashinfer_cutlass_unquantized_swigluoai", "known_bad.flashinfer_cutlass_unquantized_unaligned_hang",
        "known_bad.flashinfer_cutlass_fp8_tensor_fi_nvlink", "known_bad.trtllm_fp8_monolithic_renormalize", "known_bad.flashinfer_trtllm_fp4_int4_routing_experts",
        "known_bad.flashinfer_trtllm_w4a16_sm103", "known_bad.deep_gemm_triton_padded_experts", "known_bad.vllm_cutlass_triton_padded_experts",
        "known_bad.triton_mxfp8_hidden_unaligned", "known_bad.triton_mxfp8_intermediate_unaligned",
    } <= ids
    kernels = {e.id for e in catalog.experts}
    for kb in catalog.known_bad:
        assert kb.kernels and set(kb.kernels) <= kernels and kb.check.reference and kb.effect in ("crash", "hang", "wrong_results"), kb.id


# ------------------------------------------------------------------ shortcuts

# The LoRA shortcut that returns Triton unchecked is vLLM 0.29.0-0.33.0's (0.34.0 checks Triton and
# refuses a non-Standard layout: shortcut.unquantized_lora.checked); these tests pin 0.33.0.
V033 = Environment.declared(["vllm==0.33.0"])


def test_lora_shortcut_returns_trtllm_lora_when_it_passes(catalog):
    d = evaluate(catalog, layer(lora=True), V033)
    assert (d.kernel, d.shortcut, d.warnings) == ("flashinfer_trtllm_bf16_lora", "shortcut.unquantized_lora", ())
    assert d.to_dict()["selected_by"] == "shortcut" and d.candidates[0].kernel == "flashinfer_trtllm_bf16_lora"
    valid(d)


def test_lora_shortcut_returns_triton_when_trtllm_lora_fails_its_alignment(catalog):
    d = evaluate(catalog, layer(lora=True, intermediate_size=768, parallel=ParallelConfig(tp_size=8)), V033)
    assert (d.kernel, d.shortcut) == ("triton", "shortcut.unquantized_lora")
    first = d.candidates[0]
    assert first.kernel == "flashinfer_trtllm_bf16_lora" and {f.rule for f in first.failures} == {"flashinfer_trtllm_bf16_lora.intermediate_alignment"}
    assert d.warnings == ()  # Triton passes its own checks here


def test_lora_shortcut_returns_triton_unchecked_with_one_warning_per_failing_check(catalog):
    d = evaluate(catalog, layer(lora=True, device=CPU, in_dtype="bfloat16"), V033)
    assert (d.kernel, d.shortcut) == ("triton", "shortcut.unquantized_lora") and d.selected.failures == ()
    unchecked = [w for w in d.warnings if w.code == "unchecked"]
    assert [w.failure.rule for w in unchecked] == ["triton.platform"]
    assert unchecked[0].failure.code is ReasonCode.PLATFORM_UNSUPPORTED and unchecked[0].safe_alternative is None
    assert unchecked[0].message.startswith("vLLM returns TritonExperts for LoRA on an unquantized layer before checking it: platform_unsupported")
    assert "unquantized.py" in unchecked[0].reference
    valid(d)
    safe = evaluate(catalog, layer(lora=True, device=CPU, in_dtype="bfloat16"), V033, policy="safe")
    assert safe.shortcut is None and safe.kernel is None and "triton.platform" in {f.rule for f in safe.candidate("triton").failures}


def test_lora_shortcut_runs_before_moe_backend_is_read(catalog):
    d = evaluate(catalog, layer(lora=True, moe_backend="flashinfer_cutlass"), Environment())
    assert d.kernel == "flashinfer_trtllm_bf16_lora" and d.requested[0] == "flashinfer_cutlass"
    assert any("moe_backend=flashinfer_cutlass is not read" in n for n in d.notes)
    safe = evaluate(catalog, layer(lora=True, moe_backend="flashinfer_cutlass"), Environment(), policy="safe")
    assert safe.kernel is None and ReasonCode.LORA_UNSUPPORTED in {f.code for f in safe.candidate("flashinfer_cutlass").failures}


def test_shortcut_does_not_fire_without_lora_quantized_or_on_tpu(catalog):
    for config in (layer(), layer(lora=True, quant=scheme_by_name("fp8_block"), quant_method="fp8")):
        assert evaluate(catalog, config, Environment()).shortcut is None
    # On TPU the platform's own MoE answers first (vLLM returns before the LoRA branch).
    tpu = evaluate(catalog, layer(lora=True, device=Device("tpu")), Environment())
    assert tpu.shortcut == "shortcut.platform_moe" and tpu.kernel == "platform_moe"


# ------------------------------------------------------------------ API and CLI


def test_oracle_policy_default_override_and_memo(catalog):
    config = layer(intermediate_size=768, device=SM120, parallel=ParallelConfig(tp_size=8))
    faithful, safe = Oracle(catalog), Oracle.default(policy="safe")
    assert faithful.select(config).kernel == "flashinfer_cutlass" and safe.select(config).kernel == "triton"
    assert faithful.select(config, policy="safe").kernel == "triton" and faithful.select(config).kernel == "flashinfer_cutlass"
    assert faithful.select(config, policy="safe") is faithful.select(config, policy="safe")
    with pytest.raises(ConfigError):
        Oracle(catalog, policy="careful")
    with pytest.raises(ConfigError):
        faithful.select(config, policy="careful")


def test_cli_policy_flag_changes_the_answer_and_is_documented(capsys):
    argv = ["select", "--model", "qwen3-30b-a3b", "--gpu", "RTX_PRO_6000", "--tp", "8"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out.startswith("flashinfer_cutlass [flashinfer_cutlass, modular] + no_dp_ep_modular for vLLM 0.34.0 (assumed: newest modelled)")
    assert "warning: flashinfer_cutlass is known bad here (hang)" in err
    assert main([*argv, "--policy", "safe"]) == 0
    out, _ = capsys.readouterr()
    assert out.startswith("triton [triton, modular] + no_dp_ep_modular for vLLM 0.34.0 (assumed: newest modelled); safe policy")
    help_text = build_parser()._subparsers._group_actions[0].choices["select"].format_help()
    assert "--policy {faithful,safe}" in help_text and "policy:" in help_text and "--policy safe rejects known-bad kernels" in help_text
    with pytest.raises(SystemExit):
        main([*argv, "--policy", "careful"])
